"""``centers_of_rotation()``: the per-mesh precomputation of CoR skinning, on the GPU.

The host groups the triangles' similarity terms by bone pair and merges triangles with nearly
equal weights (:func:`vkdqs.methods.cor.reference.pair_bins`); ``cor_centers.comp`` then sums, for
each vertex, the entries of its own bone pairs, in tiles of vertices (one submission each, so a
progress bar can follow a long run); the host divides
(:func:`vkdqs.methods.cor.reference.finish_centers`). On a device whose texel views cannot hold
the buffers (maxTexelBufferElements: 65536 at the Vulkan minimum), the vertices are read and
written through views of tiles and the bins through windows of entries (:class:`_CentersJob`).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ... import shader_interface as si
from ...errors import LimitError
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
from .reference import DEFAULT_RESOLUTION, DEFAULT_SIGMA, check_cor_mesh, finish_centers, pair_bins

__all__ = ["centers_of_rotation"]

SHADER = "cor_centers.comp"
#: Seconds after which a run shows its progress on stderr.
PROGRESS_AFTER = 1.5


#: What the centers' texel buffers past the per-vertex ones hold (for errors).
_CENTERS_DATA = {5: "a range of entries per bone pair", 6: "the pair bins, two texels an entry"}
#: Vertices of a tile of views start at multiples of this (256-byte aligned rgba32 views).
_TILE_ALIGN = si.LOCAL_SIZE
#: Entries of a window of pair bins start at multiples of this (2 rgba32f texels an entry).
_WINDOW_ALIGN = 8


def _pieces(total: int, size: int) -> list[tuple[int, int]]:
    return [(first, min(size, total - first)) for first in range(0, max(total, 1), size)]


class _CentersJob(ResourceOwner):
    """The buffers, pipeline and command buffer of one centers-of-rotation run.

    Where a texel view holds every buffer (maxTexelBufferElements), one set of whole views;
    where not, the vertices are viewed in tiles (:attr:`tile`: the inputs and the output from
    the tile's first vertex) and the pair bins in windows of entries, one dispatch a window
    adding its sums to the last's (the pair ranges, B x B texels, are one view)."""

    def __init__(self, device: Device, arrays: dict[int, np.ndarray], vertices: int) -> None:
        super().__init__(device)
        try:
            self._create(arrays, vertices)
        except BaseException:
            self.close()
            raise

    def _create(self, arrays: dict[int, np.ndarray], n: int) -> None:
        dev, label = self.device, "centers of rotation"
        limit = dev.info.max_texel_buffer_elements
        ranges = arrays[5].shape[0]
        if ranges > limit or limit < 4 * _TILE_ALIGN:
            raise LimitError(
                f"{label}: {ranges} texels for binding 5 ({_CENTERS_DATA[5]}) exceed this "
                f"device's maxTexelBufferElements ({limit}); compute the centers on a "
                "device with a larger limit and pass them as centers="
            )
        #: vertices a tile of views covers (all of them where whole views fit)
        self.tile = n if 4 * n <= limit else limit // 4 // _TILE_ALIGN * _TILE_ALIGN
        entries = arrays[6].shape[0] // 2
        window = entries if 2 * entries <= limit else limit // 2 // _WINDOW_ALIGN * _WINDOW_ALIGN
        #: (first entry, count) of each window of pair bins
        self.windows = _pieces(entries, max(window, 1))
        buffers: dict[int, Buffer] = {}
        for binding, _ in si.CENTERS_TEXELS:
            arr = arrays[binding]
            buf = self.own(
                Buffer(
                    dev,
                    max(arr.nbytes, 16),
                    vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT,
                    label=f"{label} {binding}",
                    memory="static",
                )
            )
            buf.write(arr)
            buffers[binding] = buf
        self.out = self.own(
            Buffer(
                dev,
                max(n, 1) * 16,
                vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT,
                label=f"{label} output",
                memory="readback",
            )
        )
        tiles = _pieces(n, max(self.tile, 1))
        self._pipelines = PipelineCache(self)
        self.compute = ComputePass(
            self,
            self._pipelines,
            SHADER,
            si.CENTERS_BINDINGS,
            si.CENTERS_PUSH_BYTES,
            sets=len(tiles) * len(self.windows),
            label=label,
        )
        formats = dict(si.CENTERS_TEXELS)
        whole = len(tiles) == 1 and len(self.windows) == 1

        def view(binding: int, buf: Buffer, fmt: int, at: int = 0, size: int = 0) -> BufferView:
            if whole or not size:
                return self.own(BufferView(dev, buf, fmt, label=f"{label} {binding}"))
            name = f"{label} {binding} @{at}"
            return self.own(BufferView(dev, buf, fmt, label=name, offset=at, size=size))

        ranges_view = view(5, buffers[5], int(formats[5]))
        for t, (first, count) in enumerate(tiles):
            at, size = 16 * first, 16 * count
            tile_views = {b: view(b, buffers[b], int(formats[b]), at, size) for b in (1, 2, 3, 4)}
            out = view(si.CENTERS_OUT, self.out, int(si.COMPUTE_OUT_FORMAT), at, size)
            for w, (entry, entries_in) in enumerate(self.windows):
                bins = view(6, buffers[6], int(formats[6]), 32 * entry, 32 * max(entries_in, 1))
                views = {**tile_views, 5: ranges_view, 6: bins, si.CENTERS_OUT: out}
                self.compute.write(views, t * len(self.windows) + w)
        self.pipeline = self.compute.pipeline(((si.LOCAL_SIZE_ID, si.LOCAL_SIZE),))
        self.cmd = self.own(CommandBuffer(dev, label=label))

    def run(self, first: int, count: int, bone_count: int, inv_sigma2: float) -> None:
        """Sum the entries of vertices ``first .. first + count`` (within one tile)."""
        tile = first // self.tile if self.tile else 0
        assert first + count <= (tile + 1) * self.tile or not self.tile
        cmd: Any = self.cmd.begin(one_time=True)
        push = np.zeros(7, np.uint32)
        # the tile's views start at its first vertex
        push[:2] = (first - tile * self.tile, count)
        push[2:3].view(np.int32)[0] = bone_count
        push[3:4].view(np.float32)[0] = inv_sigma2
        self.compute.begin(cmd)
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        for w, (entry, entries) in enumerate(self.windows):
            if w:  # the last window's sums before this one adds to them
                read_write = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                memory_barrier(cmd, compute, compute, vk.VK_ACCESS_SHADER_WRITE_BIT, read_write)
            push[4:6].view(np.int32)[:] = (entry, entry + entries)
            push[6] = w > 0
            index = tile * len(self.windows) + w
            self.compute.dispatch(cmd, self.pipeline, count, si.LOCAL_SIZE, push, index)
        memory_barrier(
            cmd,
            compute,
            vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_HOST_READ_BIT,
        )
        self.cmd.end()
        self.cmd.submit_and_wait()

    def close(self) -> None:
        with self._lock:
            super().close()
            if hasattr(self, "_pipelines"):
                self._pipelines.clear()


def _progress(done: int, total: int, started: float, final: bool = False) -> None:
    elapsed = time.perf_counter() - started
    bar = "#" * int(30 * done / total)
    end = "\n" if final else ""
    print(
        f"\rcenters of rotation [{bar:<30}] {100 * done / total:5.1f}% {elapsed:6.1f} s",
        end=end,
        file=sys.stderr,
        flush=True,
    )


def centers_of_rotation(
    mesh: SkinnedMesh,
    *,
    bone_count: int,
    sigma: float = DEFAULT_SIGMA,
    device: Device | None = None,
    resolution: int | None = DEFAULT_RESOLUTION,
    progress: bool | None = None,
    tile: int | None = None,
) -> NDArray[np.float32]:
    """Optimized centers of rotation (Le & Hodgins 2016) of every vertex, on the GPU.

    Parameters
    ----------
    mesh : SkinnedMesh
        With triangles (``indices``); the similarity is integrated over triangle areas.
    bone_count : int
        Bones of the skeleton (every joint the mesh uses is below it).
    sigma : float
        The similarity's kernel width (the paper's sigma; 0.1 by default).
    device : Device, optional
        Run on this device; by default a :class:`Device` is opened for the call.
    resolution : int or None
        Triangles whose two weights of a bone pair fall in one ``1/resolution`` grid cell are
        merged into one entry (area-weighted mean weights); None merges none (exact, slower).
        The default (4096) kept the centers within 6e-6 of the extent of the float64 reference
        on tubes of 10k and 100k vertices with noisy weights (benchmarks/bench_centers.py).
    progress : bool, optional
        Show a progress bar on stderr; by default once the run takes over 1.5 s.
    tile : int, optional
        Vertices per submission (default: about 1/40 of the mesh, at least 4096).

    Returns
    -------
    ndarray of float32, [N, 3]
        Each vertex's center of rotation; a vertex with zero similarity to every triangle (e.g.
        one influence) gets its own position.
    """
    bone_count, sigma = check_cor_mesh(mesh, bone_count, sigma)
    if device is None:
        with Device() as own:
            return centers_of_rotation(
                mesh,
                bone_count=bone_count,
                sigma=sigma,
                device=own,
                resolution=resolution,
                progress=progress,
                tile=tile,
            )
    started = time.perf_counter()
    bins = pair_bins(mesh, bone_count, resolution=resolution)
    n = mesh.vertex_count
    joints = np.zeros((n, 8), np.int32)
    weights = np.zeros((n, 8), np.float32)
    joints[:, : mesh.slots] = mesh.joints
    weights[:, : mesh.slots] = mesh.weights
    arrays = {
        1: np.ascontiguousarray(joints[:, :4]),
        2: np.ascontiguousarray(weights[:, :4]),
        3: np.ascontiguousarray(joints[:, 4:]),
        4: np.ascontiguousarray(weights[:, 4:]),
        5: bins.ranges,
        6: bins.bins.reshape(-1, 4) if bins.entry_count else np.zeros((2, 4), np.float32),
    }
    tile = int(tile) if tile else max(4096, math.ceil(n / 40))
    out = np.empty((n, 4), np.float32)
    with _CentersJob(device, arrays, n) as job:
        # submissions of at most `tile` vertices, each within one tile of views
        starts = sorted({*range(0, n, tile), *range(0, n, max(job.tile, 1))})
        for first, end in zip(starts, [*starts[1:], n], strict=True):
            count = end - first
            job.run(first, count, bone_count, 1.0 / (sigma * sigma))
            late = time.perf_counter() - started > PROGRESS_AFTER
            if progress or (progress is None and late):
                _progress(first + count, n, started, final=first + count == n)
        job.out.read_into(out)
    return finish_centers(mesh, out[:, :3], out[:, 3], bins.total_area)
