"""Morph targets on the engine's side: a mesh's deltas packed once for the shaders, the weight
blocks of a pose, and the workgroup runs of a compute dispatch that hold morphed vertices."""

from __future__ import annotations

import math

import numpy as np

from .. import shader_interface as si
from ..errors import LimitError
from ..mesh import SkinnedMesh


def morph_blocks(packing: si.MorphPacking, weights: np.ndarray) -> np.ndarray:
    """(P,) MORPH_BLOCK records for validated (P, M) float32 ``weights`` of a mesh packed as
    ``packing`` (:func:`morph_packing`, which checked M)."""
    return si.morph_blocks(weights, packing)


#: Gaps between morphed vertex runs shorter than this many vertices are dispatched with the
#: morph code anyway (a dispatch costs about what the morph code costs on that many vertices).
MORPH_RUN_GAP = 8192
#: The most morphed runs a pose dispatches separately (more are merged into one).
MAX_MORPH_RUNS = 8


def morph_workgroup_runs(
    packing: si.MorphPacking, local_size: int
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """The (first workgroup, workgroup count) runs of a compute dispatch that hold vertices
    with a non-zero morph delta (sparse layout; the dense one: all), gaps under
    MORPH_RUN_GAP vertices merged, at most MAX_MORPH_RUNS; and the runs between them."""
    n = packing.vertex_count
    groups = max(1, math.ceil(n / local_size))
    if not packing.sparse:
        return ((0, groups),), ()
    counts = packing.texels[: packing.first_entry].reshape(-1, 2)[:n, 1]
    moved = np.zeros(groups * local_size, bool)
    moved[:n] = counts > 0
    moved = moved.reshape(groups, local_size).any(axis=1)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], moved.astype(np.int8), [0]])))
    starts, stops = edges[0::2], edges[1::2]
    if len(starts) == 0:
        return (), ((0, groups),)
    split = starts[1:] - stops[:-1] >= MORPH_RUN_GAP / local_size
    starts = np.concatenate([starts[:1], starts[1:][split]])
    stops = np.concatenate([stops[:-1][split], stops[-1:]])
    if len(starts) > MAX_MORPH_RUNS:
        starts, stops = starts[:1], stops[-1:]
    gaps = zip(np.concatenate([[0], stops]), np.concatenate([starts, [groups]]), strict=True)
    morphed = tuple((int(a), int(b - a)) for a, b in zip(starts, stops, strict=True))
    plain = tuple((int(a), int(b - a)) for a, b in gaps if b > a)
    return morphed, plain


def morph_packing(mesh: SkinnedMesh) -> si.MorphPacking:
    """``mesh``'s morph deltas packed for the shaders (:func:`vkdqs.shader_interface.pack_morphs`:
    sparse or dense, chosen by how many deltas are non-zero), computed once per mesh and kept
    on it; raises :class:`LimitError` past MAX_MORPH_TARGETS targets."""
    cached = mesh.__dict__.get("_morph_packing")
    if cached is not None:
        return cached
    m = mesh.morph_target_count
    if m > si.MAX_MORPH_TARGETS:
        raise LimitError(
            f"the mesh has {m} morph targets; vkdqs applies at most {si.MAX_MORPH_TARGETS} "
            "(the weights of all of them go in one uniform block)"
        )
    packing = si.pack_morphs(mesh.morph_positions, mesh.morph_normals)
    mesh.__dict__["_morph_packing"] = packing
    return packing
