"""Vertex chunks: the compute path's dispatches over a mesh whose texel buffers are larger
than one texel view may be.

A texel view holds at most ``maxTexelBufferElements`` texels: 65536 on a device that has only
what the Vulkan specification requires, 2^27 or more on desktop GPUs. Where a mesh's inputs (a
texel a vertex; Direct Delta Mush's Ω twenty) or one pose's output (three floats a vertex for
the positions, three for the normals) exceed it, the Skinner dispatches the mesh chunk by
chunk: each chunk is whole workgroups (a multiple of :data:`CHUNK_VERTICES`) and reads views
that start at its first vertex (skin.comp's ``vertex_first``). Where one view holds a pose's
whole output, it is bound as both outputs and the bases step by the chunk's first vertex;
where it does not, each (pose, chunk) has a positions view and a normals view, starting at the
256-byte boundary below its first float (the largest minTexelBufferOffsetAlignment the
specification allows), and the bases are what lies between. A mesh and output that fit are one
chunk with the whole views: the dispatches, sets and bits of a device with large limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import shader_interface as si
from ..errors import LimitError
from ..gpu import (
    BufferView,
    BufferWrite,
    DescriptorPool,
    TexelWrite,
    push_constants,
    write_descriptors,
)
from ..gpu.calls import vk
from ..gpu.compute_pass import split_groups

if TYPE_CHECKING:
    from ..gpu import Buffer
    from ..gpu.objects import ResourceOwner
    from .programs import SkinProgram
    from .skinner import Skinner

__all__ = [
    "CHUNK_VERTICES",
    "TEXEL_OFFSET_ALIGNMENT",
    "DispatchSets",
    "chunk_views",
    "vertex_chunks",
]

#: A chunk is a multiple of this many vertices (except the last): whole workgroups of the
#: skinning dispatch and of the one that reduces a box (LOCAL_SIZE * BOX_STEPS vertices each).
CHUNK_VERTICES = si.LOCAL_SIZE * si.BOX_STEPS
#: Bytes: where a view may start (the largest minTexelBufferOffsetAlignment the Vulkan
#: specification allows; any device's divides it).
TEXEL_OFFSET_ALIGNMENT = 256
#: Floats of one (pose, chunk) output view beyond its rows: the distance from the aligned start.
_SLACK = TEXEL_OFFSET_ALIGNMENT // 4


def whole_fits(inputs: tuple[si.MeshInput, ...], n: int, limit: int) -> bool:
    """Whether every input of ``n`` vertices fits one view of ``limit`` texels."""
    return all(n * m.texels + m.extra_texels <= limit for m in inputs)


def vertex_chunks(
    inputs: tuple[si.MeshInput, ...], n: int, limit: int, split_output: bool
) -> tuple[tuple[int, int], ...]:
    """The (first vertex, count) chunks of a mesh of ``n`` vertices with these ``inputs``
    on a device whose texel views hold ``limit`` texels; ``split_output``: a pose's output is
    written through (pose, chunk) views, which must hold a chunk's three floats a vertex too.
    One chunk where everything fits; a one-line LimitError where not even
    :data:`CHUNK_VERTICES` vertices do."""
    fits = whole_fits(inputs, n, limit) and (not split_output or 3 * n + _SLACK <= limit)
    if fits or n == 0:
        return ((0, n),)
    per_vertex = max((m.texels for m in inputs), default=1)
    size = min(limit // per_vertex, (limit - _SLACK) // 3) // CHUNK_VERTICES * CHUNK_VERTICES
    if size < CHUNK_VERTICES:
        raise LimitError(
            f"a compute dispatch reads {per_vertex} texels a vertex in chunks of "
            f"{CHUNK_VERTICES} vertices, more than this device's maxTexelBufferElements "
            f"({limit}) holds"
        )
    return tuple((first, min(size, n - first)) for first in range(0, n, size))


def chunk_views(
    owner: ResourceOwner,
    inputs: tuple[si.MeshInput, ...],
    buffers: dict[str, Buffer],
    chunks: tuple[tuple[int, int], ...],
    compute: bool,
    label: str,
) -> list[dict[str, BufferView]]:
    """Each chunk's texel views of the mesh's ``buffers`` (by input name; one chunk: views of
    the whole buffers), owned by ``owner``: on the compute path every input, on the vertex
    path those it reads as texels (Direct Delta Mush's). The packed rows' unread bindings view
    the rows' buffer."""
    dev = owner.device
    rows = {m.name: si.row_bytes(int(m.texel_format)) * m.texels for m in inputs}
    out: list[dict[str, BufferView]] = []
    for c, (first, count) in enumerate(chunks):
        views: dict[str, BufferView] = {}
        for m in inputs:
            if not (compute or m.location < 0):
                continue
            buf, fmt, name = buffers[m.alias or m.name], int(m.texel_format), f"{label} {m.name}"
            if len(chunks) == 1:
                views[m.name] = owner.own(BufferView(dev, buf, fmt, label=name))
                continue
            step = rows[m.alias or m.name]
            view = BufferView(
                dev, buf, fmt, label=f"{name} {c}", offset=first * step, size=count * step
            )
            views[m.name] = owner.own(view)
        out.append(views)
    return out


class DispatchSets:
    """The descriptor sets and output bases of the skinning dispatches into one output: a
    batch's buffers, the record ring's, or an app's buffer (its ``whole`` view).

    ``whole``: an r32f view of the whole output, bound as both outputs; None where a pose's
    output does not fit one view (each (pose, chunk) then gets a positions and a normals view
    of ``buffer``). A batch of P poses (at most the buffer's capacity) is laid out as P poses'
    positions then their normals, 3 floats a vertex. The Skinner owns every object
    made here; :meth:`close` releases them."""

    def __init__(
        self,
        skinner: Skinner,
        bones: Buffer,
        boxes: Buffer,
        *,
        whole: BufferView | None,
        buffer: Buffer | None = None,
        label: str,
    ) -> None:
        if whole is None and buffer is None:
            raise ValueError("DispatchSets needs the whole view or the buffer")
        self.skinner, self.bones, self.boxes = skinner, bones, boxes
        self.whole, self.buffer, self.label = whole, buffer, label
        self._sets: dict[tuple, Any] = {}
        self._views: dict[tuple[int, int, int], tuple[BufferView, BufferView, int, int]] = {}
        self._objects: list[Any] = []

    @property
    def chunked_inputs(self) -> bool:
        """Whether the Skinner dispatches in more than one chunk (a set per chunk)."""
        return len(self.skinner.chunks) > 1

    def _window(self, poses: int, p: int, c: int) -> tuple[BufferView, BufferView, int, int]:
        """Pose ``p``'s chunk ``c`` in a batch of ``poses``: its positions and normals views
        and bases (floats)."""
        got = self._views.get((poses, p, c))
        if got is None:
            s, n = self.skinner, self.skinner.vertex_count
            assert self.buffer is not None
            first, count = s.chunks[c]
            fmt = int(si.COMPUTE_OUT_FORMAT)
            made = []
            for start in ((p * n + first) * 3, ((poses + p) * n + first) * 3):
                offset = 4 * start // TEXEL_OFFSET_ALIGNMENT * TEXEL_OFFSET_ALIGNMENT
                base = start - offset // 4
                size = 4 * (base + 3 * count)
                view = s.own(
                    BufferView(
                        s.device,
                        self.buffer,
                        fmt,
                        label=f"{self.label} {p}/{c}",
                        offset=offset,
                        size=size,
                    )
                )
                self._objects.append(view)
                made.append((view, base))
            got = (made[0][0], made[1][0], made[0][1], made[1][1])
            self._views[(poses, p, c)] = got
        return got

    def bases(
        self, poses: int, p: int, c: int, stride: int, at: tuple[int, int] | None = None
    ) -> tuple[int, int]:
        """skin.comp's position_base and normal_base for pose ``p``'s chunk ``c`` in a batch
        of ``poses``: ``at`` (or pose ``p``'s place in the batch layout) moved to the chunk's
        first row, in the whole view; the distance from the views' starts, in (pose, chunk)
        views."""
        if self.whole is None:
            _, _, pb, nb = self._window(poses, p, c)
            return pb, nb
        n, first = self.skinner.vertex_count, self.skinner.chunks[c][0]
        pb, nb = at or (p * n * 3, (poses + p) * n * 3)
        return pb + stride * first, nb + stride * first

    def set(self, program: SkinProgram, poses: int, p: int, c: int) -> Any:
        """``program``'s descriptor set for pose ``p``'s chunk ``c`` in a batch of ``poses``."""
        key = (
            program.key,
            c if self.chunked_inputs else None,
            (poses, p) if self.whole is None else None,
        )
        dset = self._sets.get(key)
        if dset is None:
            s = self.skinner
            bindings = program.bindings.values()
            pool = s.own(DescriptorPool(s.device, bindings, sets=1, label=self.label))
            self._objects.append(pool)
            dset = pool.allocate(program.set_layout)
            if self.whole is None:
                positions, normals = self._window(poses, p, c)[:2]
            else:
                positions = normals = self.whole
            writes: list[BufferWrite | TexelWrite] = list(program.chunk_writes(c))
            writes += s.descriptor_writes(program, self.bones, positions, normals, self.boxes)
            write_descriptors(s.device, dset, writes)
            self._sets[key] = dset
        return dset

    def record(
        self,
        cmd: Any,
        parts: list[tuple[SkinProgram, tuple[tuple[int, int], ...]]],
        p: int,
        poses: int,
        *,
        bind: bool = True,
        at: tuple[int, int] | None = None,
    ) -> None:
        """Record pose ``p``'s dispatches (:meth:`vkdqs.Skinner.dispatch_parts`), chunk by
        chunk, reading slot ``p`` and writing pose ``p`` of a batch of ``poses``; ``bind``:
        bind the pipeline (always, where parts alternate); ``at``: where the positions and
        normals go in the whole view (floats; default: pose ``p``'s place in the batch)."""
        s, bind_point = self.skinner, vk.VK_PIPELINE_BIND_POINT_COMPUTE
        n, limit = s.vertex_count, s.device.info.max_compute_work_group_count[0]
        box, diag2 = p * si.BOX_STRIDE // 4, s.diag2.view(np.uint32)
        for c, (first, count) in enumerate(s.chunks):
            for prog, runs in parts:
                if (bind and c == 0) or len(parts) > 1:
                    vk.vkCmdBindPipeline(cmd, bind_point, prog.pipeline.handle)
                s.bind_pose(cmd, prog, bind_point, p, self.set(prog, poses, p, c))
                pb, nb = self.bases(poses, p, c, prog.stride, at)
                push = np.array([n, pb, nb, box, diag2, first], np.uint32)
                push_constants(cmd, prog.layout.handle, si.Stage.COMPUTE, push)
                group = si.LOCAL_SIZE * (si.BOX_STEPS if prog.output & si.OUTPUT_BOX else 1)
                lo, hi = first // group, -(-(first + count) // group)
                for a, k in runs:  # the runs' workgroups in this chunk
                    a, end = max(a, lo), min(a + k, hi)
                    for base, groups in split_groups(a, end - a, limit):
                        vk.vkCmdDispatchBase(cmd, base, 0, 0, groups, 1, 1)

    def close(self) -> None:
        """Release the views, pools and sets made here (the GPU no longer uses them)."""
        for obj in reversed(self._objects):
            self.skinner.release(obj)
        self._objects.clear()
        self._sets.clear()
        self._views.clear()
