"""``direct_delta_mush()``: Direct Delta Mush's precomputation, its smoothing on the GPU.

The smoothing of every bone's ``w u uᵀ`` and weight (:mod:`vkdqs.methods.ddm.reference`) is the
expensive part: ``p`` implicit steps, ``x = f(D⁻¹ L) b`` with ``f(x) = (1 + s x)⁻ᵖ``. ``D⁻¹ L`` is
similar to the positive semidefinite ``D^-½ L D^-½``, so its spectrum lies in ``[0, 1 + r]``,
``r = max_i Σ_k |W_ik| / D_i`` (1 where no cotangent weight W is negative); on it ``f`` is
smooth (its pole, at ``-1/s``, is outside), so a Chebyshev expansion of ``f`` converges
geometrically (:func:`chebyshev_terms`). ``ddm_smooth.comp`` adds one term per pass (one sparse
product, ``T_(k+1) = 2 A T_k - T_(k-1)``): about 60 passes for p=20, λ=3, where 20 steps of
(accelerated) Jacobi sweeps need over 600. The expansion stops where
the rest of its coefficients bound the error by :data:`TOLERANCE` of the values' scale (in the
D-weighted norm, in which ``D⁻¹ L`` is self-adjoint, times the ratio of the norms). The bones go
through in chunks that fit :data:`TEXEL_BUDGET`, with one more column, the sum over all bones,
whose smoothing gives each vertex's ``p_i`` (smoothing is linear); after each chunk the host
keeps each vertex's ``max_bones`` strongest bones and at the end assembles Ω
(:func:`vkdqs.methods.ddm.reference.omega_from_smoothed`).

Each pass is one sparse product, so term ``T_k`` of a bone's column is exactly zero more than
``k`` edges from the vertices that bone weighs on: the host counts those hops (:func:`_reach`,
a breadth-first search a bone) and the passes run on a list of work items, (vertex, column)
pairs in order of hops, term ``k`` on those within ``k`` hops only. The rest of the values
stay zero, so the result is the dense computation's, bit for bit, at a fraction of its work
where bones weigh on small parts of the mesh (a 100k-vertex tube with 64 bones: about a tenth).

The smoothing runs about the centre of the mesh's bounding box, and the result is stored about
each vertex's own rest position (``DirectDeltaMush.origin``, see
:func:`vkdqs.methods.ddm.reference.reframe`): Ω's entries are products of coordinates, and ``Q̄ - q
pᵀ`` a difference of them, which float32 keeps accurate only for coordinates near the origin.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import sys
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ... import shader_interface as si
from ...dq import _as_array
from ...errors import InputError, LimitError
from ...geometry import weld as weld_positions
from ...gpu import (
    Buffer,
    BufferView,
    CommandBuffer,
    ComputePass,
    Device,
    PipelineCache,
    ResourceOwner,
    memory_barrier,
)
from ...gpu.calls import vk
from ...mesh import SkinnedMesh
from .reference import (
    DEFAULT_MAX_BONES,
    DEFAULTS,
    UPPER,
    DirectDeltaMush,
    _check_parameters,
    _dense_weights,
    _faces,
    _integer,
    _positions,
    cotangent_laplacian,
    omega_from_smoothed,
    precompute_reference,
    reframe,
    truncate,
)

__all__ = [
    "MAX_TERMS",
    "TEXEL_BUDGET",
    "TOLERANCE",
    "chebyshev_terms",
    "direct_delta_mush",
    "mesh_ddm",
]

SHADER = "ddm_smooth.comp"
#: Bound on the truncated expansion's error, relative to the largest value.
TOLERANCE = 1e-7
log = logging.getLogger("vkdqs")

#: The longest expansion computed (p=50, λ=10 needs 153 terms).
MAX_TERMS = 2048
#: Passes per submission (so a progress bar can follow a long run).
PASSES_PER_SUBMIT = 16
#: rgba32f texels of one of the four smoothing buffers (64 MiB): bones per chunk follow.
TEXEL_BUDGET = 1 << 22
_TEXELS_PER_BONE = 3  # 10 values of w u uᵀ, the weight, a pad


def chebyshev_terms(
    iterations: int, step: float, spread: float, norm_ratio: float = 1.0, terms: int | None = None
) -> NDArray[np.float64]:
    """Coefficients of the Chebyshev expansion of ``p`` smoothing steps, cut where it is exact
    enough.

    ``f(x) = (1 + s x)⁻ᵖ`` on the spectrum ``[0, 1 + r]`` of ``D⁻¹ L``, mapped to ``[-1, 1]``
    (``x = (1 + r)(y + 1)/2``): ``f ≈ Σ_k c_k T_k(y)``. The terms after the last kept one
    bound the error on the spectrum by the sum of their ``|c_k|``, kept at most half of
    ``TOLERANCE / norm_ratio`` (``norm_ratio = sqrt(Σ_i D_i / min_i D_i)`` bounds the max norm
    by the D-weighted norm, in which the operator is self-adjoint). The coefficients are those
    of the lowest-degree interpolant (64, 128, ... up to :data:`MAX_TERMS`) that has converged
    (its last coefficients far below the bound) and matches ``f`` within half the bound on a
    grid that is dense near 0, where ``f`` falls fastest.

    Parameters
    ----------
    iterations : int
        p.
    step : float
        s (λ or κ).
    spread : float
        r, at least 1.
    norm_ratio : float
    terms : int, optional
        Return exactly this many coefficients (another step size's count; zeros past the
        interpolant's degree), else as many as the bound needs.

    Returns
    -------
    ndarray of float64
        ``c_0, c_1, ...``.
    """
    from numpy.polynomial import chebyshev

    p, s, r = int(iterations), float(step), float(spread)

    def f(y: NDArray) -> NDArray:
        return (1.0 + s * (1.0 + r) * (y + 1.0) / 2.0) ** -float(p)

    bound = TOLERANCE / norm_ratio
    # Where to check the expansion: evenly over the spectrum, and geometrically near 0, where
    # f falls fastest (an interpolant's nodes can miss a narrow peak there).
    x = np.concatenate([np.geomspace(1e-12, 1.0 + r, 4000), np.linspace(0.0, 1.0 + r, 4001)])
    y = 2.0 * x / (1.0 + r) - 1.0
    exact = f(y)
    degree = 64
    while True:  # the lowest degree whose interpolant has converged far below the bound
        coefficients = chebyshev.chebinterpolate(f, degree)
        converged = (
            np.abs(coefficients[-8:]).sum() < 1e-3 * bound
            and np.abs(chebyshev.chebval(y, coefficients) - exact).max() < 0.5 * bound
        )
        if converged or degree >= MAX_TERMS:
            break
        degree *= 2
    if terms is not None:
        return np.pad(coefficients, (0, max(terms - len(coefficients), 0)))[:terms]
    tail = np.cumsum(np.abs(coefficients)[::-1])[::-1]  # tail[k] = sum of |c_j|, j >= k
    enough = np.flatnonzero(tail <= 0.5 * bound)
    if not converged or not enough.size:
        raise LimitError(
            f"direct delta mush: p={p}, step {s} need more than {MAX_TERMS} terms of the "
            "smoothing's expansion; use vkdqs.methods.ddm.reference.precompute_reference"
        )
    return coefficients[: max(int(enough[0]), 1)]


class _SmoothingJob(ResourceOwner):
    """The CSR texels, three rotating term buffers and the sum, the pipeline, its sets."""

    def __init__(self, device: Device, rows: NDArray, entries: NDArray, texels: int) -> None:
        super().__init__(device)
        try:
            self._create(rows, entries, texels)
        except BaseException:
            self.close()
            raise

    def _create(self, rows: NDArray, entries: NDArray, texels: int) -> None:
        # texels // 3: one item a column of a vertex, at most
        dev, label = self.device, "direct delta mush"
        limit = dev.info.max_texel_buffer_elements
        for name, count in (("rows", len(rows)), ("entries", len(entries)), ("values", texels)):
            if count > limit:
                raise LimitError(
                    f"{label}: {count} {name} texels exceed this device's "
                    f"maxTexelBufferElements ({limit})"
                )
        uniform = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        storage = vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
        sint, sfloat = int(si.Format.R32G32B32A32_SINT), int(si.DDM_OUT_FORMAT)
        self.csr = []
        for name, arr in (("rows", rows), ("entries", entries)):
            buf = self.own(
                Buffer(dev, max(arr.nbytes, 16), uniform, label=f"{label} {name}", memory="static")
            )
            buf.write(arr)
            self.csr.append(self.own(BufferView(dev, buf, sint, label=f"{label} {name}")))
        items = self.own(
            Buffer(
                dev,
                max(texels // _TEXELS_PER_BONE, 1) * 4,
                uniform,
                label=f"{label} items",
            )
        )
        self.items = items
        self.item_view = self.own(
            BufferView(dev, items, int(si.Format.R32_UINT), label=f"{label} items")
        )
        self.values, self.reads, self.writes = [], [], []
        for i in range(4):
            buf = self.own(
                Buffer(dev, texels * 16, uniform | storage, label=f"{label} {i}", memory="readback")
            )
            self.values.append(buf)
            self.reads.append(self.own(BufferView(dev, buf, sfloat, label=f"{label} {i} read")))
            self.writes.append(self.own(BufferView(dev, buf, sfloat, label=f"{label} {i} write")))
        self._pipelines = PipelineCache(self)
        # (current, previous, next) of buffers 0..2: at most 3 * 3 sets are ever used
        self.compute = ComputePass(
            self, self._pipelines, SHADER, si.DDM_BINDINGS, si.DDM_PUSH_BYTES, sets=9, label=label
        )
        self.sets: dict[tuple[int, int, int], int] = {}
        self.pipeline = self.compute.pipeline(((si.LOCAL_SIZE_ID, si.LOCAL_SIZE),))
        self.cmd = self.own(CommandBuffer(dev, label=label))

    def _set(self, current: int, previous: int, out: int) -> int:
        """The index of the set that reads ``current`` and ``previous`` and writes ``out``."""
        key = (current, previous, out)
        if key not in self.sets:
            self.sets[key] = len(self.sets)
            views = {
                si.DDM_ROWS: self.csr[0],
                si.DDM_NEIGHBOURS: self.csr[1],
                si.DDM_CURRENT: self.reads[current],
                si.DDM_PREVIOUS: self.reads[previous],
                si.DDM_NEXT: self.writes[out],
                si.DDM_SUM: self.writes[3],
                si.DDM_ITEMS: self.item_view,
            }
            self.compute.write(views, self.sets[key])
        return self.sets[key]

    def expand(
        self, within: NDArray, columns: int, spread: float, coefficients: NDArray, progress: Any
    ) -> None:
        """Add the terms ``1..`` of the expansion (``coefficients``: ``[K, 2]``, for λ and κ)
        to the sum in buffer 3, from ``T_0`` in buffer 0: term k at the first ``within[k]``
        work items (those ``k`` hops from their column's nonzero values, where ``T_k`` can be
        nonzero; buffers 1 and 2 zero elsewhere)."""
        limits = self.device.info.max_compute_work_group_count
        push = np.zeros(8, np.uint32)
        push[1] = columns
        push[4:6].view(np.float32)[:] = ((1.0 - spread) / (1.0 + spread), 2.0 / (1.0 + spread))
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        written = vk.VK_ACCESS_SHADER_WRITE_BIT
        read_write = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        previous = current = 0
        terms = list(range(1, len(coefficients)))
        for first in range(0, len(terms), PASSES_PER_SUBMIT):
            cmd: Any = self.cmd.begin(one_time=True)
            self.compute.begin(cmd)
            for k in terms[first : first + PASSES_PER_SUBMIT]:
                out = min({0, 1, 2} - {current, previous})
                items = int(within[k])
                groups = math.ceil(items / si.LOCAL_SIZE)
                gx = max(min(groups, limits[0]), 1)
                gy = math.ceil(groups / gx)
                if gy > limits[1]:
                    raise LimitError(f"direct delta mush: {items} invocations are too many")
                push[0], push[2] = items, gx * si.LOCAL_SIZE
                push[3] = k == 1
                push[6:8].view(np.float32)[:] = coefficients[k]
                dset = self._set(current, previous, out)
                self.compute.dispatch(
                    cmd, self.pipeline, gx * si.LOCAL_SIZE, si.LOCAL_SIZE, push, dset, rows=gy
                )
                # the next pass reads this one's term and adds to the sum
                memory_barrier(cmd, compute, compute, written, read_write)
                previous, current = current, out
            host = vk.VK_PIPELINE_STAGE_HOST_BIT
            memory_barrier(cmd, compute, host, written, vk.VK_ACCESS_HOST_READ_BIT)
            self.cmd.end()
            self.cmd.submit_and_wait()
            if progress is not None:
                progress.update(len(terms[first : first + PASSES_PER_SUBMIT]))

    def close(self) -> None:
        with self._lock:
            super().close()
            if hasattr(self, "_pipelines"):
                self._pipelines.clear()


def _inputs(mesh: SkinnedMesh | tuple, bone_count: int | None) -> tuple:
    """(positions float64, faces, joints, weights, bone_count) of a mesh or a 4-tuple."""
    if isinstance(mesh, SkinnedMesh):
        if mesh.indices is None:
            raise InputError("direct_delta_mush needs a mesh with triangles (indices)")
        arrays = (mesh.positions, mesh.indices, mesh.joints, mesh.weights)
    elif isinstance(mesh, tuple) and len(mesh) == 4:
        arrays = mesh
    else:
        raise InputError(
            "direct_delta_mush takes a SkinnedMesh or (positions, faces, joints, weights), got "
            f"{type(mesh).__name__}"
        )
    positions = _positions(arrays[0])
    joints = _as_array(arrays[2], "joints")
    if joints.dtype == bool or not np.issubdtype(joints.dtype, np.integer):
        raise InputError(f"joints must be an integer array, got {joints.dtype}")
    if joints.size and joints.min() < 0:
        raise InputError(f"joints must be >= 0, got {joints.min()}")
    if bone_count is None:
        bone_count = int(joints.max()) + 1 if joints.size else 1
    bone_count = _integer(bone_count, "bone_count", 1)
    return positions, arrays[1], joints, arrays[3], bone_count


def _csr_texels(positions: NDArray, faces: ArrayLike) -> tuple[NDArray, NDArray, float, float]:
    """The rows and entries texels of ``D⁻¹ W``, ``max_i Σ_k |W_ik| / D_i`` and
    ``sqrt(Σ_i D_i / min_i D_i)`` over the rows with ``D_i != 0``."""
    indptr, indices, weights, diagonal = cotangent_laplacian(positions, faces)
    n = diagonal.size
    row = np.repeat(np.arange(n), np.diff(indptr))
    usable = diagonal != 0
    normalized = np.divide(
        weights, diagonal[row], out=np.zeros_like(weights), where=usable[row]
    ).astype(np.float32)
    rows = np.zeros((n, 4), np.int32)
    rows[:, 0] = indptr[:-1]
    rows[:, 1] = np.where(usable, np.diff(indptr), 0)
    entries = np.zeros((max(len(indices), 1), 4), np.int32)
    entries[: len(indices), 0] = indices
    entries[: len(indices), 1] = normalized.view(np.int32)
    spread = np.bincount(row, weights=np.abs(normalized), minlength=n)
    if (diagonal < 0).any():
        raise LimitError(
            "direct delta mush: a vertex's cotangent weights sum to a negative number "
            "(degenerate triangles); use vkdqs.methods.ddm.reference.precompute_reference"
        )
    d = diagonal[usable]
    ratio = math.sqrt(d.sum() / d.min()) if d.size else 1.0
    return rows, entries, max(float(spread.max(initial=0.0)), 1.0), ratio


def _reach(rows: NDArray, entries: NDArray, seeds: NDArray, hops: int) -> NDArray:
    """How many sparse products (the rows and entries texels: the neighbours each row reads)
    carry each column's nonzero values (``seeds``, ``[V, C]`` bool) to each vertex: ``[V, C]``
    hop counts (``scipy.sparse.csgraph.dijkstra``, nearest seed, cut at ``hops``; ``hops + 1``
    beyond). Term ``T_k`` of the expansion is exactly zero where the count exceeds ``k``."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = seeds.shape[0]
    starts, counts = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
    ends = np.cumsum(counts)
    flat = np.arange(ends[-1] if n else 0) - np.repeat(ends - counts - starts, counts)
    graph = csr_matrix(
        (np.ones(flat.size), entries[flat, 0], np.concatenate([[0], ends])), shape=(n, n)
    )
    out = np.where(seeds, 0, hops + 1).astype(np.int32)
    for c in range(seeds.shape[1]):  # one search per column (bone), in C
        sources = np.flatnonzero(seeds[:, c])
        if hops and 0 < sources.size < n:
            far = dijkstra(graph, indices=sources, min_only=True, limit=hops, unweighted=True)
            out[:, c] = np.where(np.isfinite(far), far, hops + 1)
    return out


def _keep_strongest(values: NDArray, bones: NDArray, alpha: float, keep: int) -> tuple:
    """The ``keep`` strongest of each vertex's smoothed columns (``[V, M, 11]``: 10 values of
    Ψ, then w'), by ``|Ω[9]| = |(1 - α) Ψ[9] + α w'|`` as
    :func:`vkdqs.methods.ddm.reference.truncate` ranks."""
    if values.shape[1] == 0:  # a chunk of the sum alone (one column a chunk: a big mesh)
        return values, bones
    strength = np.abs((1.0 - alpha) * values[:, :, 9] + alpha * values[:, :, 10])
    order = np.argsort(-strength, axis=1, kind="stable")[:, :keep]
    n, m = values.shape[:2]
    rows = (order + m * np.arange(n)[:, None]).ravel()  # whole rows: faster than take_along_axis
    return values.reshape(n * m, -1)[rows].reshape(n, -1, values.shape[2]), bones.reshape(-1)[
        rows
    ].reshape(n, -1)


def _chunks(bone_count: int, vertices: int, limit: int = TEXEL_BUDGET) -> list[list[int]]:
    """Bones per submission, their values within ``limit`` texels (the device's
    maxTexelBufferElements) where one bone's fit; chunk 0 also carries the sum over all bones
    (index -1)."""
    budget = min(TEXEL_BUDGET, limit)
    per = max(1, budget // (_TEXELS_PER_BONE * max(vertices, 1)))
    columns = [-1, *range(bone_count)]
    return [columns[i : i + per] for i in range(0, len(columns), per)]


def direct_delta_mush(
    mesh: SkinnedMesh | tuple,
    *,
    bone_count: int | None = None,
    iterations: int = DEFAULTS["iterations"],
    rotation_step: float = DEFAULTS["rotation_step"],
    translation_step: float = DEFAULTS["translation_step"],
    alpha: float = DEFAULTS["alpha"],
    max_bones: int = DEFAULT_MAX_BONES,
    device: Device | None = None,
    progress: bool = False,
    weld: bool = True,
) -> DirectDeltaMush:
    """Direct Delta Mush (Le & Lewis 2019, variant 0) precomputed on the GPU.

    Computes what :func:`vkdqs.methods.ddm.reference.precompute_reference` followed by
    :func:`vkdqs.methods.ddm.reference.truncate` computes, with the smoothing on the GPU (a float32
    Chebyshev expansion, on the values each bone's weights can reach; the module docstring says
    how).

    Parameters
    ----------
    mesh : SkinnedMesh or tuple
        With triangles; or ``(positions [V, 3], faces [T, 3], joints [V, K], weights [V, K])``.
    bone_count : int, keyword-only, optional
        B; by default one more than the largest joint index.
    iterations, rotation_step, translation_step, alpha : keyword-only
        p, λ, κ and α (:data:`vkdqs.methods.ddm.reference.DEFAULTS`).
    max_bones : int, keyword-only
        Bones kept per vertex (the strongest, by smoothed weight), 8 by default.
    device : Device, optional
        Run on this device; by default one is opened for the call.
    progress : bool, keyword-only
        Show a tqdm bar on stderr over the smoothing steps.
    weld : bool, keyword-only
        Smooth over the welded vertices, as :func:`vkdqs.methods.ddm.reference.precompute_reference`
        does (its ``weld``): the vertices at exactly the same position (a seam's copies) are one
        node, with its first vertex's weights, and every copy gets its node's Ω, bones and origin.

    Returns
    -------
    DirectDeltaMush
    """
    positions, faces, joints, weights, bones = _inputs(mesh, bone_count)
    _check_parameters(iterations, rotation_step, translation_step, alpha)
    _integer(max_bones, "max_bones", 1)
    params = _Parameters(
        bones, int(iterations), float(rotation_step), float(translation_step), float(alpha)
    )
    keep = min(int(max_bones), bones)
    with contextlib.ExitStack() as stack:
        if device is None:
            device = stack.enter_context(Device())
        n = positions.shape[0]
        unique, inverse, first = weld_positions(positions) if weld else (positions, None, None)
        if inverse is None or len(unique) == n:
            return _precompute(positions, faces, joints, weights, params, keep, device, progress)
        # the nodes' Ω (each with its first vertex's weights), given to each of their vertices
        node = _precompute(
            unique,
            inverse[_faces(faces, n)],
            np.asarray(joints)[first],
            np.asarray(weights)[first],
            params,
            keep,
            device,
            progress,
        )
        return dataclasses.replace(
            node, omega=node.omega[inverse], bones=node.bones[inverse], origin=positions
        )


class _Parameters(NamedTuple):
    """The smoothing parameters of a precomputation (``DirectDeltaMush``'s fields)."""

    bone_count: int
    iterations: int
    rotation_step: float
    translation_step: float
    alpha: float


def _precompute(
    positions: NDArray,
    faces: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    params: _Parameters,
    keep: int,
    device: Device,
    progress: bool,
) -> DirectDeltaMush:
    """The passes of :func:`direct_delta_mush` over a mesh as given (no welding)."""
    bones, iterations, rotation_step, translation_step, alpha = params
    n = positions.shape[0]
    w = _dense_weights(joints, weights, n, bones)
    if n == 0:  # nothing to smooth (no buffer can be empty): the reference's empty Ω
        empty = np.zeros((0, keep, 10), np.float32)
        return DirectDeltaMush(empty, np.zeros((0, keep), np.uint32), positions, *params)
    rows, entries, spread, ratio = _csr_texels(positions, faces)
    limit = device.info.max_texel_buffer_elements
    if max(len(rows), len(entries), n * _TEXELS_PER_BONE) > limit:
        # the graph (or one bone's values) does not fit a texel view of this device: the same
        # precomputation on the host, in float64
        log.info(
            "vkdqs: Direct Delta Mush's smoothing of %d vertices exceeds %r's "
            "maxTexelBufferElements (%d): precomputed on the host",
            n,
            device.info.name,
            limit,
        )
        return _on_host(positions, faces, joints, weights, params, keep)
    steps = (rotation_step, translation_step)
    if iterations:
        rotation = chebyshev_terms(iterations, rotation_step, spread, ratio)
        translation = chebyshev_terms(iterations, translation_step, spread, ratio)
        count = max(len(rotation), len(translation))
        coefficients = np.stack(
            [chebyshev_terms(iterations, s, spread, ratio, terms=count) for s in steps], axis=1
        )
    else:
        coefficients = np.ones((1, 2))  # f = 1

    origin = 0.5 * (positions.min(axis=0) + positions.max(axis=0)) if n else np.zeros(3)
    hom = np.concatenate([positions - origin, np.ones((n, 1))], axis=1)
    uu = (hom[:, :, None] * hom[:, None, :])[:, UPPER[0], UPPER[1]]
    chunks = _chunks(bones, n, limit)
    kept_values = np.zeros((n, 0, 11))
    kept_bones = np.zeros((n, 0), np.int64)
    total = np.zeros((n, 10))
    bar = None
    if progress and len(coefficients) > 1:
        from tqdm import tqdm

        bar = tqdm(
            total=len(chunks) * (len(coefficients) - 1), unit="pass", desc="DDM", file=sys.stderr
        )
    # c_0 of each lane of a column's three texels (10 values at λ, the weight and pad at κ)
    lanes = np.array([0] * 10 + [1, 1])
    try:
        with _SmoothingJob(device, rows, entries, n * _TEXELS_PER_BONE * len(chunks[0])) as job:
            for columns in chunks:
                col_w = np.stack([w.sum(axis=1) if c < 0 else w[:, c] for c in columns], axis=1)
                values = np.zeros((n, len(columns), 12), np.float32)
                values[:, :, :10] = col_w[:, :, None] * uu[:, None, :]
                values[:, :, 10] = col_w
                # only the values the passes can reach are computed, the rest stay zero: the
                # items in order of hops, term k computed at the first within[k]
                hops = _reach(rows, entries, col_w != 0, len(coefficients) - 1).ravel()
                items = np.flatnonzero(hops < len(coefficients))
                items = items[np.argsort(hops[items], kind="stable")]
                within = np.searchsorted(hops[items], np.arange(len(coefficients)), side="right")
                if items.size:
                    job.items.write(items.astype(np.uint32))
                job.values[0].write(values)
                zeros = np.zeros_like(values)
                job.values[1].write(zeros)
                job.values[2].write(zeros)
                job.values[3].write(values * coefficients[0, lanes].astype(np.float32))
                job.expand(within, len(columns), spread, coefficients, bar)
                job.values[3].read_into(values)
                smoothed = values[:, :, :11].astype(np.float64)
                ids = np.asarray(columns)
                if ids[0] < 0:
                    total = smoothed[:, 0, :10]
                    smoothed, ids = smoothed[:, 1:], ids[1:]
                kept_values, kept_bones = _keep_strongest(
                    np.concatenate([kept_values, smoothed], axis=1),
                    np.concatenate([kept_bones, np.broadcast_to(ids, (n, ids.size))], axis=1),
                    alpha,
                    keep,
                )
    finally:
        if bar is not None:
            bar.close()
    omega = omega_from_smoothed(kept_values[:, :, :10], kept_values[:, :, 10], alpha, total=total)
    omega = reframe(omega, positions - origin)  # about each vertex, in float64
    return DirectDeltaMush(
        omega=omega.astype(np.float32),
        bones=kept_bones.astype(np.uint32),
        origin=positions,
        **params._asdict(),
    )


def _on_host(
    positions: NDArray,
    faces: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    params: _Parameters,
    keep: int,
) -> DirectDeltaMush:
    """What :func:`_precompute` computes, by the float64 reference (dense: V x B x 10)."""
    full = precompute_reference(
        positions,
        faces,
        joints,
        weights,
        params.bone_count,
        iterations=params.iterations,
        rotation_step=params.rotation_step,
        translation_step=params.translation_step,
        alpha=params.alpha,
        weld=False,  # the caller welded
    )
    omega, kept = truncate(full, keep)
    return DirectDeltaMush(
        omega=reframe(omega, positions).astype(np.float32),
        bones=kept.astype(np.uint32),
        origin=positions,
        **params._asdict(),
    )


def mesh_ddm(mesh: SkinnedMesh, bone_count: int, *, device: Device) -> DirectDeltaMush:
    """``mesh``'s Direct Delta Mush precomputation for ``bone_count`` bones with the default
    parameters (:data:`vkdqs.methods.ddm.reference.DEFAULTS`,
    :data:`vkdqs.methods.ddm.reference.DEFAULT_MAX_BONES` bones a vertex), computed on ``device``
    the first time and kept on the mesh, keyed by its parameters: what ``Skinner(method="ddm")``
    skins with when it is given none, so every entry point that takes a model file (bake, its
    batches) smooths each of its meshes once (the parts of a scene share their mesh's geometry)."""
    key = (int(bone_count), DEFAULT_MAX_BONES, *sorted(DEFAULTS.items()))
    cache = mesh.__dict__.setdefault("_ddm", {})
    if key not in cache:
        cache[key] = direct_delta_mush(mesh, bone_count=int(bone_count), device=device)
    return cache[key]
