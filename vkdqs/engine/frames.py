"""The renderer's per-frame-in-flight resources (:class:`Frame`) and where each instance's blocks
sit in a frame's uniform buffer (:class:`Slot`, :func:`layout_slots`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import shader_interface as si
from ..gpu import Buffer, BufferView, BufferWrite, Fence, ResourceOwner, Semaphore, TexelWrite
from ..gpu.calls import align
from .drawables import Instance, _bone_bucket

if TYPE_CHECKING:
    from .crowd import Crowd

INSTANCE_BLOCK = si.INSTANCE_BLOCK


class Frame:
    """Per-frame-in-flight resources."""

    def __init__(self, owner: ResourceOwner, index: int) -> None:
        dev = owner.device
        self.index = index
        self.fence = owner.own(Fence(dev, label=f"frame {index}", signaled=True))
        self.available = owner.own(Semaphore(dev, label=f"image available {index}"))
        self.image_available = self.available.handle
        self.uniforms: Buffer | None = None
        self.sets: list[Any] = []
        #: a submitted frame whose timestamps (queries 2 * index, 2 * index + 1) are unread
        self.timing_pending = False
        #: the crowds (and their copy counts) this slot's last frame drew, until counted
        self.crowds_drawn: list[tuple[Crowd, int]] = []


@dataclass(frozen=True)
class Slot:
    """Where one instance's blocks sit in a frame's uniform buffer (byte offsets, sizes)."""

    bones_at: int
    bones_size: int
    scales_at: int
    scales_size: int
    block_at: int
    morph_at: int

    def writes(
        self, uniforms: Buffer, morph_view: BufferView, texels: dict[str, BufferView]
    ) -> list[BufferWrite | TexelWrite]:
        """The set's descriptors; ``texels``: the mesh's texels of the instance's needs' arrays
        (Direct Delta Mush's; empty for the others, whose shaders do not read those
        bindings)."""
        b = {x.binding: x for x in si.RENDER_BINDINGS}
        return [
            BufferWrite(b[si.BONES], uniforms, self.bones_at, self.bones_size),
            BufferWrite(b[si.INSTANCE], uniforms, self.block_at, INSTANCE_BLOCK.itemsize),
            BufferWrite(b[si.BONE_SCALES], uniforms, self.scales_at, self.scales_size),
            BufferWrite(b[si.MORPH_WEIGHTS], uniforms, self.morph_at, si.MORPH_BLOCK.itemsize),
            TexelWrite(b[si.MORPH_DELTAS], morph_view),
            *(TexelWrite(b[m.binding], texels[m.name]) for m in si.NEED_INPUTS if m.name in texels),
        ]


def layout_slots(instances: list[Instance], alignment: int) -> tuple[list[Slot], int]:
    """Each instance's blocks, aligned for dynamic offsets; and the bytes they take."""
    slots, offset = [], 0
    for inst in instances:
        bucket = _bone_bucket(inst.bone_count)
        bones_size = bucket * si.bone_stride(inst.method)
        scales_size = bucket * si.SCALE_STRIDE
        bones_at = offset
        scales_at = align(bones_at + bones_size, alignment)
        block_at = align(scales_at + scales_size, alignment)
        morph_at = align(block_at + INSTANCE_BLOCK.itemsize, alignment)
        offset = align(morph_at + si.MORPH_BLOCK.itemsize, alignment)
        slots.append(Slot(bones_at, bones_size, scales_at, scales_size, block_at, morph_at))
    return slots, offset
