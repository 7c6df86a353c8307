"""Skinning recorded into an app's command buffer (:meth:`vkdqs.Skinner.record`).

The app records a frame; :class:`SkinRecorder` records into it the skinning dispatch of one pose
and the copies of its positions and normals into the app's buffers. The pose is read from a
slot of a ring of ``frames_in_flight`` bone slots that vkdqs owns (host-visible ``dynamic``
memory, written when ``record`` is called), the dispatch writes a ring slot of vkdqs's own
output (``gpu`` memory), and ``vkCmdCopyBuffer`` moves it into the app's buffers at its offsets
as tightly packed ``(N, 3)`` float32 rows (``stride=12``) or 16-byte rows (``stride=16``, the
fourth float left as it is).

A Skinner's passes (classic Delta Mush's smoothing; :mod:`vkdqs.engine.passes`) are recorded
around the dispatch on the ring's slot (a :class:`~vkdqs.engine.passes.PassTarget` with
``ring=True``), each through descriptor sets of its own for the ring, so that a batch of
``skin()`` never rewrites a set an app's pending command buffer uses; their rows are copied.

Where positions and normals are rows (tight or vec4) in one app buffer with
``STORAGE_TEXEL_BUFFER`` usage, the dispatch writes them there through a storage texel view (the
direct path: no copy; ``OUTPUT_STRIDE`` 4 for vec4 rows).

The synchronization contract (docs/vulkan-app.md): vkdqs's commands are a compute dispatch
(``COMPUTE_SHADER``: uniform and texel reads, shader writes to its own output), then a barrier,
then transfer writes to the app's ranges, then (unless ``dst_stage=None``) a barrier from
``TRANSFER``/``TRANSFER_WRITE`` to the app's stage and access. The first barrier's source stages
include the app's stage, so a read of the same range by an earlier draw or dispatch (the last
frame's vertex input) is ordered before the copy overwrites it. The app promises that the
command buffer of a slot has completed (its fence waited) before it records
``frames_in_flight`` more frames with the same Skinner: the slot's bones are rewritten then.

vkdqs checks that promise where the GPU can tell it: each recording ends with a
``vkCmdFillBuffer`` of its sequence number into a small host-readable mark of its slot (and a
barrier to ``HOST``), so when a slot comes round again the mark shows whether the command
buffer that last used it has run. One that has not (not yet completed, or never submitted) is
refused before anything is written or recorded; :meth:`SkinRecorder.forget` is for an app that
threw away command buffers it recorded without submitting them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import shader_interface as si
from ..bones import PackedPose
from ..errors import InputError, LimitError
from ..gpu import Buffer, BufferView, memory_barrier
from ..gpu.app_buffer import AppBuffer, destination
from ..gpu.calls import align, vk
from .chunks import DispatchSets
from .passes import PassTarget

if TYPE_CHECKING:
    from .passes import SkinPass
    from .programs import SkinProgram
    from .skinner import Skinner

__all__ = ["DST_STAGES", "SkinRecorder"]

#: ``dst_stage`` names: the pipeline stage and access of the app's first use of the outputs,
#: which the barrier vkdqs records after its copies makes them visible to.
DST_STAGES: dict[str, tuple[int, int]] = {
    "vertex_input": (
        vk.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT,
        vk.VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT,
    ),
    "vertex_shader": (vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT, vk.VK_ACCESS_SHADER_READ_BIT),
    "compute": (vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_ACCESS_SHADER_READ_BIT),
    "transfer": (vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT),
}

_TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
_STORAGE_TEXEL = vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
_REGION = np.dtype([("src", "<u8"), ("dst", "<u8"), ("size", "<u8")])  # VkBufferCopy


def _rings(skin_pass: object) -> bool:
    """Whether a pass records for the ring (:class:`vkdqs.engine.passes.SkinPass`)."""
    return getattr(skin_pass, "records_ring", False) is True


class SkinRecorder:
    """A Skinner's ring for :meth:`Skinner.record`: ``frames`` bone slots, as many output
    poses, and a descriptor set per pipeline over them. Owned by the Skinner."""

    def __init__(self, skinner: Skinner) -> None:
        s, dev = skinner, skinner.device
        if s.path != "compute":
            raise InputError("record() needs path='compute' (the vertex path draws)")
        frames = s.frames_in_flight
        if isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= 16:
            raise InputError(f"frames_in_flight must be an int in [1, 16], got {frames!r}")
        label = f"{s.label} record ring x{frames}"
        self.skinner = skinner
        self.frames = frames
        self.frame = 0
        self.bones = s.own(
            Buffer(dev, frames * s.slot_bytes, vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, label=label)
        )
        self.label = label
        #: the ring's own output (positions, then normals, of every slot), made by the first
        #: recording that copies (an app whose recordings all take the direct path has none)
        self._out: tuple[Buffer, BufferView | None, BufferView | None] | None = None
        #: the dispatches' descriptor sets over the ring's output (made with it)
        self._ring_sets: DispatchSets | None = None
        # each slot's box (record(bounds=True)) and, after them, each slot's mark (the
        # sequence number of the recording that last used it, written by the GPU): a few bytes,
        # read by the host
        self._marks = frames * si.BOX_STRIDE
        self.boxes = s.own(
            Buffer(
                dev,
                self._marks + 4 * frames,
                vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                label=f"{label} boxes",
                memory="readback",
            )
        )
        #: the sequence number (1, 2, ...) of each slot's last recording; 0: none yet
        self.issued = [0] * frames
        #: id(AppBuffer) -> (the dispatches' sets over its storage texel view, the AppBuffer):
        #: the direct path's outputs
        self._views: dict[int, tuple[DispatchSets, AppBuffer]] = {}
        #: whether each slot's last recording reduced its box
        self.boxed = [False] * frames
        #: (n, stride, source offset, destination offset) -> VkBufferCopy[] of one row each
        self._regions: dict[tuple[int, int, int, int], Any] = {}

    def _output(self) -> tuple[Buffer, BufferView | None, BufferView | None]:
        """The ring's output buffer (``gpu`` memory, the copies' source), its r32f view and
        its rgba32f view (the bounds pass's, after passes); no views where a slot's output
        does not fit one (the dispatches then write it through views of its chunks)."""
        if self._out is None:
            s = self.skinner
            size = align(self.frames * s.vertex_count * 24, 16)  # whole rgba32f texels
            usage = (
                _STORAGE_TEXEL
                | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
                | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
            )
            label = f"{self.label} output"
            out = s.own(Buffer(s.device, size, usage, label=label, memory="gpu"))
            view = texels = None
            if size // 4 <= s.device.info.max_texel_buffer_elements:  # one view holds the ring
                view = s.own(BufferView(s.device, out, int(si.COMPUTE_OUT_FORMAT), label=label))
                fmt = int(si.BOUNDS_TEXEL_FORMAT)
                texels = s.own(BufferView(s.device, out, fmt, label=f"{label} positions"))
            self._out = (out, view, texels)
            self._ring_sets = DispatchSets(
                s,
                self.bones,
                self.boxes,
                whole=view,
                buffer=out,
                label=f"{label} sets",
            )
        return self._out

    def _target(self, output: int, slot: int) -> PassTarget:
        """The ring as the passes around the dispatch see it: slot ``slot`` of ``frames``."""
        _, view, texels = self._output()
        if view is None or texels is None:
            raise LimitError(
                f"record() cannot record {self.skinner.method!r}'s passes here: they read the "
                f"ring's output through one texel view, and its {self.frames} slots of "
                f"{self.skinner.vertex_count} vertices exceed this device's "
                f"maxTexelBufferElements ({self.skinner.device.info.max_texel_buffer_elements}); "
                "use a smaller frames_in_flight"
            )
        n = self.skinner.vertex_count
        return PassTarget(self.frames, n, output, view, texels, self.boxes, ring=True, only=slot)

    def _passes(self) -> tuple[tuple[SkinPass, ...], tuple[SkinPass, ...]]:
        """The Skinner's passes before and after the skinning, each one that records for the
        ring (a pass that does not say so is refused)."""
        s = self.skinner
        before, after = s.passes(after=False), s.passes(after=True)
        alien = sorted({type(p).__name__ for p in (*before, *after) if not _rings(p)})
        if alien:
            raise InputError(
                f"record() cannot record {s.method!r}'s passes {alien}: a pass records "
                "into an app's command buffer only where it says records_ring "
                "(vkdqs.engine.passes.SkinPass)"
            )
        return before, after

    def _check_done(self, slot: int) -> None:
        """Refuse to reuse ``slot`` while the command buffer that last used it has not run
        (its mark is not that recording's sequence number)."""
        seq = self.issued[slot]
        if not seq:
            return
        mark = int(self.boxes.read(np.uint32, 1, offset=self._marks + 4 * slot)[0])
        if mark != seq:
            raise InputError(
                f"record(): ring slot {slot} is still in flight: the command buffer of "
                f"recording {seq} (of this Skinner) has not completed, and "
                f"frames_in_flight={self.frames} recordings later its pose would be "
                "overwritten; wait for that command buffer's fence first (or set a larger "
                "frames_in_flight before the first record(); for command buffers thrown away "
                "unsubmitted, Skinner.forget_recordings())"
            )

    def forget(self) -> None:
        """Take every slot as free: for an app that threw away recorded command buffers
        without submitting them (after waiting for the ones it did submit)."""
        self.issued = [0] * self.frames

    def _direct(self, positions: object, normals: object, stride: int) -> bool:
        """Whether the dispatch writes straight into the app's buffer: positions and normals
        rows (tight or vec4) in one AppBuffer with ``STORAGE_TEXEL_BUFFER`` usage, of at most
        ``maxTexelBufferElements`` floats."""
        pair = isinstance(positions, tuple) and isinstance(normals, tuple)
        if not pair or len(positions) != 2 or len(normals) != 2:
            return False
        buffer = positions[0]
        if not isinstance(buffer, AppBuffer) or normals[0] is not buffer:
            return False
        limit = self.skinner.device.info.max_texel_buffer_elements
        return bool(buffer.usage & _STORAGE_TEXEL) and buffer.size // 4 <= limit

    def _direct_sets(self, buffer: AppBuffer) -> DispatchSets:
        """The dispatches' sets over the storage texel view (r32f) of the app's buffer the
        direct path writes."""
        texels = buffer.size // 4
        got = self._views.get(id(buffer))
        if got is None:
            s = self.skinner
            fmt = int(si.COMPUTE_OUT_FORMAT)
            view = s.own(BufferView(s.device, buffer, fmt, label=buffer.label, size=4 * texels))
            sets = DispatchSets(s, self.bones, self.boxes, whole=view, label=buffer.label)
            self._views[id(buffer)] = (sets, buffer)  # the AppBuffer kept: its id stays its own
            return sets
        return got[0]

    def record(
        self,
        cmd: Any,
        packed: PackedPose,
        morphs: np.ndarray | None,
        positions: object,
        normals: object,
        stride: int,
        dst_stage: str | None,
        bounds: bool = False,
    ) -> int:
        """Record one pose (a batch of one, with its MorphBlock or None) into ``cmd``; the
        ring slot it used."""
        s, n = self.skinner, self.skinner.vertex_count
        if s.frames_in_flight != self.frames:
            raise InputError(
                f"frames_in_flight cannot change after the first record() ({self.frames})"
            )
        if stride not in (12, 16):
            raise InputError(f"stride must be 12 or 16 (bytes a row), got {stride!r}")
        if dst_stage is not None and dst_stage not in DST_STAGES:
            raise InputError(
                f"dst_stage must be one of {sorted(DST_STAGES)} or None, got {dst_stage!r}"
            )
        active = morphs is not None and bool(morphs["header"][:, 0].any())
        before, after = self._passes()
        # after passes (Delta Mush), the box is the bounds pass's, from the vertices they wrote
        output = si.OUTPUT_VERTICES | (si.OUTPUT_BOX if bounds and not after else 0)
        # passes work on the ring's own output: those rows are copied
        direct = not (before or after) and self._direct(positions, normals, stride)
        # the direct path writes the app's rows at their stride; copies come from tight rows
        program = s.program(packed.variant, active, output, stride // 4 if direct else 3)
        slot_row = s.slot_rows(packed, morphs, 0, 1)
        dev = s.device
        nbytes = stride * (n - 1) + 12
        usage = _STORAGE_TEXEL if direct else vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        targets = [destination(dev, positions, "positions", nbytes, usage, 4)]
        if normals is not None:
            targets.append(destination(dev, normals, "normals", nbytes, usage, 4))
        view = self._direct_sets(targets[0][0]) if direct else None
        slot = self.frame % self.frames
        self._check_done(slot)
        seq = self.frame % 0xFFFFFFFF + 1  # a uint32 the GPU writes, never 0
        self.bones.write(slot_row, offset=slot * s.slot_bytes)
        self._record_commands(
            cmd, program, slot, targets, view, stride, dst_stage, bounds, (before, after)
        )
        # the slot's mark, once everything before it has run, for the host (_check_done)
        mark = self._marks + 4 * slot
        vk.vkCmdFillBuffer(cmd, self.boxes.handle, mark, 4, seq)
        memory_barrier(
            cmd,
            _TRANSFER,
            vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            vk.VK_ACCESS_HOST_READ_BIT,
        )
        # counted once recorded (a failure half-way leaves the slot as it was)
        self.frame += 1
        self.issued[slot] = seq
        return slot

    def _record_commands(
        self,
        cmd: Any,
        program: SkinProgram,
        slot: int,
        targets: list[tuple[Any, int]],
        view: DispatchSets | None,
        stride: int,
        dst_stage: str | None,
        bounds: bool,
        passes: tuple[tuple[SkinPass, ...], tuple[SkinPass, ...]],
    ) -> None:
        """Record the slot's dispatch, the Skinner's passes around it (on the ring's output)
        and the commands around them (see the module docstring)."""
        s, n = self.skinner, self.skinner.vertex_count
        stage, access = DST_STAGES[dst_stage or "vertex_input"]
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        if bounds:  # the slot's box keys start at 0 (atomicMax folds into them)
            vk.vkCmdFillBuffer(cmd, self.boxes.handle, slot * si.BOX_STRIDE, si.BOX_STRIDE, 0)
        if bounds or view is not None:
            # the fill before the dispatch; on the direct path also the app's earlier reads of
            # its buffer (this stage) before the dispatch overwrites it
            memory_barrier(
                cmd,
                (_TRANSFER if bounds else 0) | (stage if view is not None else 0),
                compute,
                vk.VK_ACCESS_TRANSFER_WRITE_BIT if bounds else 0,
                vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
            )
        self.boxed[slot] = bounds
        parts = s.dispatch_parts(program)
        if view is not None:  # the shader writes the app's rows: no copy
            at = (targets[0][1] // 4, targets[1][1] // 4)
            view.record(cmd, parts, slot, self.frames, at=at)
            host = vk.VK_PIPELINE_STAGE_HOST_BIT if bounds else 0
            if dst_stage is not None or bounds:
                memory_barrier(
                    cmd,
                    compute,
                    (stage if dst_stage is not None else 0) | host,
                    vk.VK_ACCESS_SHADER_WRITE_BIT,
                    (access if dst_stage is not None else 0)
                    | (vk.VK_ACCESS_HOST_READ_BIT if bounds else 0),
                )
            return
        before, after = passes
        target = self._target(program.output, slot) if before or after else None
        for skin_pass in before:
            skin_pass.record(cmd, target)
        self._output()
        assert self._ring_sets is not None
        self._ring_sets.record(cmd, parts, slot, self.frames)
        for skin_pass in after:
            skin_pass.record(cmd, target)
        if bounds and after:  # the box of what the passes wrote (its own barrier first)
            s.bounds_pass().record(cmd, target)
        # the shader's writes before the copies read them; the app's earlier reads of its
        # ranges (this stage) before the copies overwrite them
        # (and the box's writes before the host reads it, once the app's fence has signalled)
        memory_barrier(
            cmd,
            compute | stage,
            _TRANSFER | vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_TRANSFER_READ_BIT
            | vk.VK_ACCESS_TRANSFER_WRITE_BIT
            | vk.VK_ACCESS_HOST_READ_BIT,
        )
        sources = (slot * n * 12, (self.frames + slot) * n * 12)  # positions, normals
        out = self._output()[0].handle
        for (buffer, offset), src in zip(targets, sources, strict=False):
            count, regions = self._copy_regions(n, stride, src, offset)
            vk.vkCmdCopyBuffer(cmd, out, buffer.handle, count, regions)
        if dst_stage is not None:
            memory_barrier(cmd, _TRANSFER, stage, vk.VK_ACCESS_TRANSFER_WRITE_BIT, access)

    def box(self, slot: int) -> np.ndarray:
        """The (2, 3) box slot ``slot``'s recording reduced (its command buffer completed)."""
        if not (isinstance(slot, int) and 0 <= slot < self.frames) or not self.boxed[slot]:
            raise InputError(f"ring slot {slot!r} was not recorded with bounds=True")
        keys = self.boxes.read(np.uint32, si.BOX_STRIDE // 4, offset=slot * si.BOX_STRIDE)
        return si.decode_boxes(keys)[0]

    def _copy_regions(self, n: int, stride: int, src: int, dst: int) -> tuple[int, Any]:
        """``VkBufferCopy`` regions: one for tight rows, one a row for 16-byte rows (built
        with numpy once per destination and kept)."""
        if stride == 12:
            return 1, [vk.VkBufferCopy(srcOffset=src, dstOffset=dst, size=12 * n)]
        key = (n, stride, src, dst)
        regions = self._regions.get(key)
        if regions is None:
            regions = vk.ffi.new("VkBufferCopy[]", n)
            view = np.frombuffer(vk.ffi.buffer(regions), _REGION)
            rows = np.arange(n, dtype=np.uint64)
            view["src"] = src + 12 * rows
            view["dst"] = dst + stride * rows
            view["size"] = 12
            self._regions[key] = regions
        return n, regions
