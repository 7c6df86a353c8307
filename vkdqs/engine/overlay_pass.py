"""The label overlay on the GPU: a host-composed RGBA8 image (:mod:`vkdqs.app.overlay`) blended over
a frame by the renderer, for stills and the window alike.

The image travels as a uniform texel buffer (one R8G8B8A8_UNORM texel per pixel), one per frame
in flight, written through persistently mapped memory when the frame's slot is free; a
full-screen triangle (``overlay.vert``) reads it pixel by pixel (``overlay.frag``, its own set
layout and pipeline layout, apart from the mesh pipelines) and blends it "over" the frame at the
end of the render pass. No image layouts, samplers or copies are involved, which keeps it to the
objects vkdqs already has.

A texel view holds at most ``maxTexelBufferElements`` pixels (65536 on a device at the Vulkan
minimum: a 960x540 frame has 518400), so the image is drawn in parts (:func:`overlay_parts`):
bands of whole rows, each a view of its own at a 256-byte aligned offset of the slot's buffer
(256 is the largest minTexelBufferOffsetAlignment the specification allows) and its own
descriptor set, drawn with a scissor over its rows. Where the image fits one view (every
desktop GPU, lavapipe) that is one part, one draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import shader_interface as si
from ..errors import InputError
from ..gpu import (
    Buffer,
    BufferView,
    DescriptorPool,
    DescriptorSetLayout,
    GraphicsPipelineDesc,
    PipelineLayout,
    TexelWrite,
    push_constants,
    write_descriptors,
)
from ..gpu.calls import vk

if TYPE_CHECKING:
    from .renderer import Renderer


#: Bytes the parts' views start at multiples of (the specification's largest
#: minTexelBufferOffsetAlignment).
PART_ALIGNMENT = 256


def overlay_parts(width: int, height: int, max_texels: int) -> tuple[int, list[int]]:
    """How an image of ``width`` x ``height`` pixels is drawn from views of at most
    ``max_texels`` texels: (rows a part, each part's first row)."""
    rows = min(height, max_texels // width)
    return rows, list(range(0, height, rows))


def check_overlay(image: Any, max_texels: int) -> np.ndarray:
    """``image`` as a C-contiguous ``(H, W, 4)`` uint8 array (sRGB colour, straight alpha)."""
    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] != 4 or arr.dtype != np.uint8 or 0 in arr.shape:
        raise InputError(
            f"the overlay must be an (H, W, 4) uint8 RGBA image, got {arr.dtype} {arr.shape}"
        )
    if arr.shape[1] > max_texels:
        raise InputError(
            f"the overlay is {arr.shape[1]} pixels wide; this device's texel buffers hold "
            f"{max_texels} (maxTexelBufferElements), less than one row: render a narrower image, "
            "or one without labels (vkdqs render --no-labels)"
        )
    return np.ascontiguousarray(arr)


@dataclass
class _Slot:
    """A frame slot's overlay: one buffer of bands of ``rows`` rows of ``width`` pixels,
    ``stride`` bytes apart, a texel view and a descriptor set a band (from its own pool)."""

    buffer: Buffer
    views: list[BufferView]
    pool: DescriptorPool
    sets: list[Any]
    stride: int
    width: int
    rows: int


class OverlayPass:
    """The overlay's Vulkan objects, made by and kept in ``renderer`` (destroyed with it)."""

    def __init__(self, renderer: Renderer, frames: int) -> None:
        dev = renderer.device
        self._renderer = renderer
        self.set_layout = renderer.own(
            DescriptorSetLayout(dev, si.OVERLAY_BINDINGS, label="overlay")
        )
        self.layout = renderer.own(
            PipelineLayout(
                dev, [self.set_layout], si.OVERLAY_PUSH_BYTES, si.Stage.FRAGMENT, label="overlay"
            )
        )
        #: per frame slot: its buffer and parts (None until the first write)
        self.slots: list[_Slot | None] = [None] * frames
        #: per frame slot: the overlay version its buffer holds
        self.written = [-1] * frames
        #: bumped when a slot's buffer is re-made (its descriptors change: re-record)
        self.generation = 0

    @property
    def part_objects(self) -> int:
        """The Vulkan objects its slots hold now (a buffer, a pool and a view a part each): as
        many as the image's size needs parts, so a soak of a resized window counts them
        apart."""
        return sum(2 + len(made.views) for made in self.slots if made is not None)

    def _make_slot(self, slot: int, width: int, rows: int, parts: int) -> _Slot:
        """``slot``'s buffer of ``parts`` bands of ``rows`` rows, a view and a set each."""
        r, label = self._renderer, f"overlay {slot}"
        old = self.slots[slot]
        if old is not None:
            r.device.wait_idle()  # command buffers of other images may still use the sets
            for obj in (*old.views, old.pool, old.buffer):
                r.release(obj)
        stride = -(-rows * width * 4 // PART_ALIGNMENT) * PART_ALIGNMENT
        usage = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        buf = r.own(Buffer(r.device, stride * parts, usage, label=label))
        fmt, binding = int(si.OVERLAY_TEXEL_FORMAT), si.OVERLAY_BINDINGS[0]
        views = [
            r.own(BufferView(r.device, buf, fmt, label=label, size=rows * width * 4, offset=k))
            for k in range(0, stride * parts, stride)
        ]
        pool = r.own(DescriptorPool(r.device, si.OVERLAY_BINDINGS, sets=parts, label=label))
        sets = [pool.allocate(self.set_layout) for _ in views]
        for dset, view in zip(sets, views, strict=True):
            write_descriptors(r.device, dset, [TexelWrite(binding, view)])
        self.generation += 1
        made = _Slot(buf, views, pool, sets, stride, width, rows)
        self.slots[slot] = made
        return made

    def write(self, slot: int, image: np.ndarray, version: int) -> None:
        """Put ``image`` into ``slot``'s buffer (that slot's frame has finished)."""
        if self.written[slot] == version:
            return
        height, width = image.shape[:2]
        rows, firsts = overlay_parts(
            width, height, self._renderer.device.info.max_texel_buffer_elements
        )
        made = self.slots[slot]
        if made is None or (made.width, made.rows, len(made.views)) != (width, rows, len(firsts)):
            made = self._make_slot(slot, width, rows, len(firsts))
        for k, first in enumerate(firsts):  # over parts: one for most devices
            made.buffer.write(image[first : first + rows], offset=k * made.stride)
        self.written[slot] = version

    def record(self, cmd: Any, slot: int, size: tuple[int, int], samples: int) -> None:
        """Blend the overlay over what the render pass drew (inside the pass)."""
        r = self._renderer
        desc = GraphicsPipelineDesc(
            vertex_shader="overlay.vert",
            fragment_shader="overlay.frag",
            vertex_inputs=(),
            cull_back=False,
            samples=samples,
            depth_test=False,
            blend=True,
        )
        pipe = r.pipelines.graphics(desc, self.layout, r.target.render_pass).handle
        graphics = vk.VK_PIPELINE_BIND_POINT_GRAPHICS
        vk.vkCmdBindPipeline(cmd, graphics, pipe)
        made = self.slots[slot]
        assert made is not None, "write() before record()"
        width, rows, parts = made.width, made.rows, len(made.sets)
        for k, dset in enumerate(made.sets):  # over parts: one for most devices
            first = k * rows
            vk.vkCmdBindDescriptorSets(cmd, graphics, self.layout.handle, 0, 1, [dset], 0, None)
            push = np.array([size[0], size[1], first, rows], dtype=np.int32)
            push_constants(cmd, self.layout.handle, si.Stage.FRAGMENT, push)
            if parts > 1:  # the part's rows (the overlay is the render pass's last draw)
                band = vk.VkRect2D(vk.VkOffset2D(0, first), vk.VkExtent2D(width, rows))
                vk.vkCmdSetScissor(cmd, 0, 1, [band])
            vk.vkCmdDraw(cmd, 3, 1, 0, 0)
