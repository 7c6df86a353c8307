"""``direct_delta_mush()``: Direct Delta Mush's precomputation, its smoothing on the GPU.

The smoothing of every bone's ``w u uᵀ`` and weight (:mod:`vkdqs.ddm`) is the expensive part:
``p`` implicit steps, each a sparse solve of ``(I + s D⁻¹ L) x = b``. ``ddm_smooth.comp`` solves
it by Chebyshev-accelerated Jacobi sweeps (the Jacobi update ``y = (b + s D⁻¹ W x) / (1 + s)``,
W the cotangent weights; :func:`chebyshev_sweeps`), warm-started at ``b``: the Jacobi matrix
``s/(1+s) D⁻¹ W`` is self-adjoint in the D-weighted inner product, with its spectrum within
``±ρ``, ``ρ = s/(1+s) max_i Σ_k |W_ik| / D_i`` (``s/(1+s)`` where no cotangent weight is
negative), and the number of sweeps makes the iteration's error at most :data:`TOLERANCE` of
the values' scale after all ``p`` steps (about half the sweeps plain Jacobi needs at
``ρ = 0.75``, fewer still for larger steps). The bones go through in
chunks that fit :data:`TEXEL_BUDGET` (one submission per step, so a progress bar can follow),
with one more column, the sum over all bones, whose smoothing gives each vertex's ``p_i``
(smoothing is linear); after each chunk the host keeps each vertex's ``max_bones`` strongest
bones and at the end assembles Ω (:func:`vkdqs.ddm.omega_from_smoothed`).

Everything runs about the centre of the mesh's bounding box (``DirectDeltaMush.origin``, see
:func:`vkdqs.ddm.reframe`): Ω's entries are products of coordinates, and ``Q̄ - q pᵀ`` a
difference of them, which float32 keeps accurate only for coordinates near the origin.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import shader_interface as si
from .ddm import (
    DEFAULT_MAX_BONES,
    DEFAULTS,
    UPPER,
    DirectDeltaMush,
    _check_parameters,
    _dense_weights,
    cotangent_laplacian,
    omega_from_smoothed,
)
from .dq import _as_float
from .errors import InputError, LimitError
from .gpu import (
    Buffer,
    BufferView,
    CommandBuffer,
    ComputePipelineDesc,
    DescriptorPool,
    DescriptorSetLayout,
    Device,
    PipelineCache,
    PipelineLayout,
    ResourceOwner,
    TexelWrite,
    write_descriptors,
)
from .gpu.calls import vk
from .mesh import SkinnedMesh

__all__ = [
    "TEXEL_BUDGET",
    "TOLERANCE",
    "chebyshev_sweeps",
    "chebyshev_weights",
    "direct_delta_mush",
]

SHADER = "ddm_smooth.comp"
#: Bound on the iteration's error after all steps, relative to the largest value.
TOLERANCE = 1e-7
#: rgba32f texels of one of the four smoothing buffers (64 MiB): bones per chunk follow.
TEXEL_BUDGET = 1 << 22
_TEXELS_PER_BONE = 3  # 10 values of w u uᵀ, the weight, a pad


def _check_contraction(rho: float) -> None:
    if not 0 <= rho < 1:
        raise LimitError(
            f"the Jacobi iteration does not contract (bound {rho:.3f} >= 1): the mesh has "
            "negative cotangent weights (obtuse triangles) that outweigh the positive ones; "
            "use vkdqs.ddm.precompute_reference"
        )


def chebyshev_sweeps(
    rho: float, iterations: int, norm_ratio: float = 1.0, tolerance: float = TOLERANCE
) -> int:
    """Sweeps per step so that ``iterations`` steps leave an error below ``tolerance``.

    After m sweeps the error in the D-weighted norm is at most ``1 / T_m(1/ρ)`` (``T_m`` the
    Chebyshev polynomial) of the warm start's, ``b``'s distance to the solution (at most twice
    the values' scale); ``norm_ratio = sqrt(Σ_i D_i / min_i D_i)`` bounds the max norm by the
    D-norm; the steps do not amplify earlier errors (each averages), so the errors add up.

    Parameters
    ----------
    rho : float
        Bound on the Jacobi matrix's spectral radius, in ``[0, 1)``.
    iterations : int
        Smoothing steps p.
    norm_ratio : float
    tolerance : float

    Returns
    -------
    int
    """
    _check_contraction(rho)
    if rho == 0:
        return 1
    need = 2.0 * max(iterations, 1) * norm_ratio / tolerance
    return max(1, math.ceil(math.acosh(need) / math.acosh(1.0 / rho)))


def chebyshev_weights(rho: float, sweeps: int) -> NDArray[np.float64]:
    """The relaxation weights ω of sweeps 1.. (Golub & Varga's semi-iterative method):
    ``ω_1 = 1``, ``ω_2 = 1 / (1 - ρ²/2)``, ``ω_{m+1} = 1 / (1 - ρ² ω_m / 4)``."""
    _check_contraction(rho)
    out = np.ones(sweeps)
    for m in range(1, sweeps):
        out[m] = (
            1.0 / (1.0 - 0.5 * rho * rho) if m == 1 else 1.0 / (1.0 - 0.25 * rho**2 * out[m - 1])
        )
    return out


class _SmoothingJob(ResourceOwner):
    """The CSR texels, four rotating value buffers, the pipeline and its descriptor sets."""

    def __init__(self, device: Device, rows: NDArray, entries: NDArray, texels: int) -> None:
        super().__init__(device)
        try:
            self._create(rows, entries, texels)
        except BaseException:
            self.close()
            raise

    def _create(self, rows: NDArray, entries: NDArray, texels: int) -> None:
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
            buf = self.own(Buffer(dev, max(arr.nbytes, 16), uniform, label=f"{label} {name}"))
            buf.write(arr)
            self.csr.append(self.own(BufferView(dev, buf, sint, label=f"{label} {name}")))
        self.values, self.reads, self.writes = [], [], []
        for i in range(4):
            buf = self.own(
                Buffer(dev, texels * 16, uniform | storage, label=f"{label} {i}", readback=True)
            )
            self.values.append(buf)
            self.reads.append(self.own(BufferView(dev, buf, sfloat, label=f"{label} {i} read")))
            self.writes.append(self.own(BufferView(dev, buf, sfloat, label=f"{label} {i} write")))
        self.bindings = {b.binding: b for b in si.DDM_BINDINGS}
        self.set_layout = self.own(DescriptorSetLayout(dev, si.DDM_BINDINGS, label=label))
        self.layout = self.own(
            PipelineLayout(dev, [self.set_layout], si.DDM_PUSH_BYTES, si.Stage.COMPUTE, label=label)
        )
        # (rhs, current, previous, next): at most 4 * 3 * 3 of them are ever used
        self.pool = self.own(DescriptorPool(dev, si.DDM_BINDINGS, sets=36, label=label))
        self.sets: dict[tuple[int, int, int, int], Any] = {}
        self._pipelines = PipelineCache(self)
        desc = ComputePipelineDesc(SHADER, ((si.LOCAL_SIZE_ID, si.LOCAL_SIZE),))
        self.pipeline = self._pipelines.compute(desc, self.layout)
        self.cmd = self.own(CommandBuffer(dev, label=label))

    def _set(self, rhs: int, current: int, previous: int, out: int) -> Any:
        key = (rhs, current, previous, out)
        if key not in self.sets:
            s = self.pool.allocate(self.set_layout)
            b = self.bindings
            write_descriptors(
                self.device,
                s,
                [
                    TexelWrite(b[si.DDM_ROWS], self.csr[0]),
                    TexelWrite(b[si.DDM_NEIGHBOURS], self.csr[1]),
                    TexelWrite(b[si.DDM_RHS], self.reads[rhs]),
                    TexelWrite(b[si.DDM_CURRENT], self.reads[current]),
                    TexelWrite(b[si.DDM_PREVIOUS], self.reads[previous]),
                    TexelWrite(b[si.DDM_NEXT], self.writes[out]),
                ],
            )
            self.sets[key] = s
        return self.sets[key]

    def step(self, rhs: int, vertices: int, columns: int, steps: tuple, omegas: NDArray) -> int:
        """Record and run one smoothing step's sweeps (``omegas``: ``[sweeps, 2]``, the
        Chebyshev weights of λ and κ); returns the buffer holding the result."""
        invocations = vertices * columns
        groups = math.ceil(invocations / si.LOCAL_SIZE)
        gx = min(groups, self.device.info.max_compute_work_group_count[0])
        gy = math.ceil(groups / gx)
        if gy > self.device.info.max_compute_work_group_count[1]:
            raise LimitError(f"direct delta mush: {invocations} invocations are too many")
        push = np.zeros(7, np.uint32)
        push[:3] = (vertices, columns, gx * si.LOCAL_SIZE)
        push[3:5].view(np.float32)[:] = steps
        cmd: Any = self.cmd.begin(one_time=True)
        point = vk.VK_PIPELINE_BIND_POINT_COMPUTE
        vk.vkCmdBindPipeline(cmd, point, self.pipeline.handle)
        shader = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT
        )
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        previous = current = rhs  # the warm start x_0 = b (omega_1 = 1 ignores x_-1)
        for omega in omegas:
            out = min({0, 1, 2, 3} - {rhs, current, previous})
            s = self._set(rhs, current, previous, out)
            push[5:7].view(np.float32)[:] = omega
            vk.vkCmdPushConstants(
                cmd, self.layout.handle, si.Stage.COMPUTE, 0, push.nbytes, vk.ffi.from_buffer(push)
            )
            vk.vkCmdBindDescriptorSets(cmd, point, self.layout.handle, 0, 1, [s], 0, None)
            vk.vkCmdDispatch(cmd, gx, gy, 1)
            # the next sweep reads what this one wrote
            vk.vkCmdPipelineBarrier(cmd, compute, compute, 0, 1, [shader], 0, None, 0, None)
            previous, current = current, out
        host = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT
        )
        vk.vkCmdPipelineBarrier(
            cmd, compute, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, [host], 0, None, 0, None
        )
        self.cmd.end()
        self.cmd.submit_and_wait()
        return current

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
    positions = _as_float(arrays[0], "positions")
    if positions.ndim != 2 or positions.shape[1] != 3:
        raise InputError(f"positions must have shape (V, 3), got shape {positions.shape}")
    joints = np.asarray(arrays[2])
    if bone_count is None:
        bone_count = int(joints.max()) + 1 if joints.size else 1
    if int(bone_count) != bone_count or bone_count < 1:
        raise InputError(f"bone_count must be an integer >= 1, got {bone_count}")
    return positions, arrays[1], arrays[2], arrays[3], int(bone_count)


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
            "(degenerate triangles); use vkdqs.ddm.precompute_reference"
        )
    d = diagonal[usable]
    ratio = math.sqrt(d.sum() / d.min()) if d.size else 1.0
    return rows, entries, float(spread.max(initial=0.0)), ratio


def _keep_strongest(values: NDArray, bones: NDArray, alpha: float, keep: int) -> tuple:
    """The ``keep`` strongest of each vertex's smoothed columns (``[V, M, 11]``: 10 values of
    Ψ, then w'), by ``|Ω[9]| = |(1 - α) Ψ[9] + α w'|`` as :func:`vkdqs.ddm.truncate` ranks."""
    strength = np.abs((1.0 - alpha) * values[:, :, 9] + alpha * values[:, :, 10])
    order = np.argsort(-strength, axis=1, kind="stable")[:, :keep]
    return np.take_along_axis(values, order[:, :, None], axis=1), np.take_along_axis(
        bones, order, axis=1
    )


def _chunks(bone_count: int, vertices: int) -> list[list[int]]:
    """Bones per submission; chunk 0 also carries the sum over all bones (index -1)."""
    per = max(1, TEXEL_BUDGET // (_TEXELS_PER_BONE * max(vertices, 1)))
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
) -> DirectDeltaMush:
    """Direct Delta Mush (Le & Lewis 2019, variant 0) precomputed on the GPU.

    Computes what :func:`vkdqs.ddm.precompute_reference` followed by
    :func:`vkdqs.ddm.truncate` computes, with the smoothing on the GPU (float32 Jacobi sweeps;
    the module docstring says how many).

    Parameters
    ----------
    mesh : SkinnedMesh or tuple
        With triangles; or ``(positions [V, 3], faces [T, 3], joints [V, K], weights [V, K])``.
    bone_count : int, keyword-only, optional
        B; by default one more than the largest joint index.
    iterations, rotation_step, translation_step, alpha : keyword-only
        p, λ, κ and α (:data:`vkdqs.ddm.DEFAULTS`).
    max_bones : int, keyword-only
        Bones kept per vertex (the strongest, by smoothed weight), 8 by default.
    device : Device, optional
        Run on this device; by default one is opened for the call.
    progress : bool, keyword-only
        Show a tqdm bar on stderr over the smoothing steps.

    Returns
    -------
    DirectDeltaMush
    """
    positions, faces, joints, weights, bones = _inputs(mesh, bone_count)
    _check_parameters(iterations, rotation_step, translation_step, alpha)
    if int(max_bones) != max_bones or max_bones < 1:
        raise InputError(f"max_bones must be an integer >= 1, got {max_bones}")
    if device is None:
        with Device() as own:
            return direct_delta_mush(
                (positions, faces, joints, weights),
                bone_count=bones,
                iterations=iterations,
                rotation_step=rotation_step,
                translation_step=translation_step,
                alpha=alpha,
                max_bones=max_bones,
                device=own,
                progress=progress,
            )
    n = positions.shape[0]
    w = _dense_weights(joints, weights, n, bones)
    rows, entries, spread, ratio = _csr_texels(positions, faces)
    rhos = [step / (1.0 + step) * spread for step in (rotation_step, translation_step)]
    sweeps = chebyshev_sweeps(max(rhos), int(iterations), ratio)
    omegas = np.stack([chebyshev_weights(rho, sweeps) for rho in rhos], axis=1)

    origin = 0.5 * (positions.min(axis=0) + positions.max(axis=0)) if n else np.zeros(3)
    hom = np.concatenate([positions - origin, np.ones((n, 1))], axis=1)
    uu = (hom[:, :, None] * hom[:, None, :])[:, UPPER[0], UPPER[1]]
    chunks = _chunks(bones, n)
    keep = min(int(max_bones), bones)
    kept_values = np.zeros((n, 0, 11))
    kept_bones = np.zeros((n, 0), np.int64)
    total = np.zeros((n, 10))
    bar = None
    if progress and iterations:
        from tqdm import tqdm

        bar = tqdm(total=len(chunks) * int(iterations), unit="step", desc="DDM", file=sys.stderr)
    texels = _TEXELS_PER_BONE * max(len(c) for c in chunks)
    try:
        with _SmoothingJob(device, rows, entries, n * texels) as job:
            for columns in chunks:
                col_w = np.stack([w.sum(axis=1) if c < 0 else w[:, c] for c in columns], axis=1)
                values = np.zeros((n, len(columns), 12), np.float32)
                values[:, :, :10] = col_w[:, :, None] * uu[:, None, :]
                values[:, :, 10] = col_w
                job.values[0].write(values)
                current = 0
                for _ in range(int(iterations)):
                    current = job.step(
                        current, n, len(columns), (rotation_step, translation_step), omegas
                    )
                    if bar is not None:
                        bar.update()
                job.values[current].read_into(values)
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
    return DirectDeltaMush(
        omega=omega.astype(np.float32),
        bones=kept_bones.astype(np.uint32),
        origin=origin,
        bone_count=bones,
        iterations=int(iterations),
        rotation_step=float(rotation_step),
        translation_step=float(translation_step),
        alpha=float(alpha),
    )
