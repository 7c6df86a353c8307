"""Morph targets: the layouts of their deltas' texel buffer, the MorphBlock of their
weights, and the packing of both."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .vulkan_types import Format

# Morph targets are applied before skinning by morph_vertex() (shaders/glsl/include/morph.glsl)
# in skin.comp and every skin.vert variant (crowds are not morphed). The deltas of a mesh's M
# targets sit in one rgba32f texel buffer (binding MORPH_DELTAS) in one of two layouts, chosen
# per mesh by :func:`pack_morphs` (S = 2 texels per delta record with position and normal
# deltas, else 1):
#
# * sparse, vertex-major (CSR; the usual case: a face shape moves the face, not the body): the
#   first ceil(N / 2) texels hold each vertex's range (first entry, entry count), two vertices a
#   texel (xy, zw); then the entries, vertex by vertex, in target order, only the (target,
#   vertex) pairs whose position or normal delta is non-zero: entry e at texel
#   ``header.z + e * S``, (position delta xyz, target) then (normal delta xyz, 0). Integers are
#   stored as exact floats (< 2**24 entries; a mesh with more is stored dense). A vertex costs
#   one range fetch plus S fetches per non-zero entry, whatever the pose; weights of every
#   target sit in the MorphBlock, so an inactive target's entry adds 0. A morphing pose runs
#   the morph code only on the runs of vertices with entries (Skinner; a loop's body runs at
#   least once on lavapipe, so a vertex without entries would still pay S fetches).
# * dense, target-major (chosen when more than half of the (target, vertex) pairs are non-zero,
#   where the sparse entries would save no memory and a pose with few active targets would pay
#   for all of them): target t's delta of vertex v at texel (t * N + v) * S (its normal delta at
#   the next texel); the MorphBlock lists the active targets, four at a time (padding -1), so a
#   pose costs its active targets.
#
# A mesh without targets binds a one-texel buffer, and a pose without active targets runs the
# pipeline specialized with MORPH_TARGETS = 0 (no morph code). Per pose (or instance) the
# MorphBlock (binding MORPH_WEIGHTS) holds the weights of all targets, so a mesh has at most
# MAX_MORPH_TARGETS targets (LimitError), any number of them active.


#: The most morph targets a mesh may have (the MorphBlock holds all their weights).
MAX_MORPH_TARGETS = 1024
#: Targets per ivec4 / vec4 of the MorphBlock.
MORPH_GROUP = 4
_GROUPS = MAX_MORPH_TARGETS // MORPH_GROUP
#: ``MORPH_TARGETS`` bits: position deltas, normal deltas, the sparse (CSR) layout.
MORPH_POSITIONS, MORPH_NORMALS, MORPH_SPARSE = 1, 2, 4
#: The most entries the sparse layout indexes (integers stored exactly as float32).
MAX_MORPH_ENTRIES = 2**24
#: std140 ``MorphBlock`` of ``include/morph.glsl``.
MORPH_BLOCK = np.dtype(
    [
        # x: active targets (dense: groups of MORPH_GROUP), y: vertices N, z: texel of the first
        # sparse entry, w: texels per delta record (S)
        ("header", "<i4", 4),
        ("active", "<i4", (_GROUPS, 4)),  # dense: the active targets in order, then -1
        ("weights", "<f4", (_GROUPS, 4)),  # the weight of target t at [t // 4, t % 4]
    ]
)
assert MORPH_BLOCK.itemsize == 16 + 2 * 16 * _GROUPS
MORPH_TEXEL_FORMAT = Format.R32G32B32A32_SFLOAT


@dataclass(frozen=True)
class MorphPacking:
    """A mesh's morph deltas as the MORPH_DELTAS buffer holds them (:func:`pack_morphs`)."""

    texels: np.ndarray  #: (rows, 4) float32
    vertex_count: int
    target_count: int  #: M (0: the one-texel buffer of a mesh without targets)
    has_positions: bool
    has_normals: bool
    sparse: bool  #: the CSR layout (else dense, target-major)
    entries: int  #: non-zero (target, vertex) pairs (sparse: stored entries)

    @property
    def stride(self) -> int:
        """Texels per delta record (S)."""
        return int(self.has_positions) + int(self.has_normals)

    @property
    def first_entry(self) -> int:
        """Texel of sparse entry 0 (after the ranges); 0 for the dense layout."""
        return (self.vertex_count + 1) // 2 if self.sparse else 0


def pack_morphs(
    morph_positions: np.ndarray | None,
    morph_normals: np.ndarray | None,
    sparse: bool | None = None,
) -> MorphPacking:
    """The MORPH_DELTAS texels of (M, N, 3) float32 deltas (either may be None): sparse (CSR)
    unless more than half of the (target, vertex) pairs have a non-zero delta or there are
    MAX_MORPH_ENTRIES of them (``sparse`` forces a layout; ValueError when the sparse one cannot
    index them). Vectorized: memory and time in proportion to M * N once, the buffer to the
    non-zero entries (sparse)."""
    parts = [d for d in (morph_positions, morph_normals) if d is not None]
    has_p, has_n = morph_positions is not None, morph_normals is not None
    if not parts:
        return MorphPacking(np.zeros((1, 4), np.float32), 0, 0, False, False, False, 0)
    m, n = parts[0].shape[:2]
    nonzero = np.zeros((n, m), bool)  # vertex-major, so nonzero() lists entries in CSR order
    for d in parts:
        nonzero |= (d != 0).any(axis=2).T
    entries = int(np.count_nonzero(nonzero))
    if sparse is None:
        sparse = 2 * entries <= m * n and entries < MAX_MORPH_ENTRIES
    s = len(parts)
    if not sparse:
        out = np.zeros((m, n, s, 4), np.float32)
        for k, d in enumerate(parts):
            out[:, :, k, :3] = d
        return MorphPacking(out.reshape(-1, 4), n, m, has_p, has_n, False, entries)
    if entries >= MAX_MORPH_ENTRIES:
        raise ValueError(
            f"{entries} non-zero morph deltas, more than the {MAX_MORPH_ENTRIES - 1} the sparse "
            "layout indexes"
        )
    vertex, target = np.nonzero(nonzero)
    counts = np.count_nonzero(nonzero, axis=1)
    ranges = np.zeros((n + n % 2, 2), np.float32)
    ranges[:n, 0] = np.cumsum(counts) - counts
    ranges[:n, 1] = counts
    body = np.zeros((entries, s, 4), np.float32)
    for k, d in enumerate(parts):
        body[:, k, :3] = d[target, vertex]
    body[:, 0, 3] = target
    texels = np.concatenate([ranges.reshape(-1, 4), body.reshape(-1, 4)])
    return MorphPacking(texels, n, m, has_p, has_n, True, entries)


def morph_spec(packing: MorphPacking, active: bool) -> int:
    """The ``MORPH_TARGETS`` specialization value: the kinds of deltas applied and the layout
    (0 when no target is active, or no delta is non-zero: the morph code compiled away)."""
    if not active or packing.entries == 0:
        return 0
    return (
        MORPH_POSITIONS * packing.has_positions
        | MORPH_NORMALS * packing.has_normals
        | MORPH_SPARSE * packing.sparse
    )


def morph_blocks(weights: np.ndarray, packing: MorphPacking) -> np.ndarray:
    """(P,) MORPH_BLOCK records for (P, M) ``weights`` (M at most MAX_MORPH_TARGETS, checked by
    the caller): every target's weight, and (dense layout) the non-zero ones in target order,
    padded with -1."""
    p, m = weights.shape
    active = weights != 0
    counts = active.sum(axis=1)
    blocks = np.zeros(p, MORPH_BLOCK)
    header = blocks["header"]
    header[:, 0] = (counts + MORPH_GROUP - 1) // MORPH_GROUP if not packing.sparse else counts
    header[:, 1] = packing.vertex_count
    header[:, 2] = packing.first_entry
    header[:, 3] = packing.stride
    flat = np.zeros((p, MAX_MORPH_TARGETS), np.float32)
    flat[:, :m] = weights
    blocks["weights"] = flat.reshape(p, _GROUPS, MORPH_GROUP)
    if not packing.sparse:
        # the non-zero targets first, each pose's in target order
        order = np.argsort(~active, axis=1, kind="stable")
        ids = np.full((p, MAX_MORPH_TARGETS), -1, np.int32)
        ids[:, :m] = np.where(np.take_along_axis(active, order, axis=1), order, -1)
        blocks["active"] = ids.reshape(p, _GROUPS, MORPH_GROUP)
    return blocks
