"""The label overlay on the GPU: a host-composed RGBA8 image (:mod:`vkdqs.app.overlay`) blended over
a frame by the renderer, for stills and the window alike.

The image travels as a uniform texel buffer (one R8G8B8A8_UNORM texel per pixel), one per frame
in flight, written through persistently mapped memory when the frame's slot is free; a
full-screen triangle (``overlay.vert``) reads it pixel by pixel (``overlay.frag``, its own set
layout and pipeline layout, apart from the mesh pipelines) and blends it "over" the frame at the
end of the render pass. No image layouts, samplers or copies are involved, which keeps it to the
objects vkdqs already has.
"""

from __future__ import annotations

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


def check_overlay(image: Any, max_texels: int) -> np.ndarray:
    """``image`` as a C-contiguous ``(H, W, 4)`` uint8 array (sRGB colour, straight alpha)."""
    arr = np.asarray(image)
    if arr.ndim != 3 or arr.shape[2] != 4 or arr.dtype != np.uint8 or 0 in arr.shape:
        raise InputError(
            f"the overlay must be an (H, W, 4) uint8 RGBA image, got {arr.dtype} {arr.shape}"
        )
    if arr.shape[0] * arr.shape[1] > max_texels:
        raise InputError(
            f"the overlay has {arr.shape[0] * arr.shape[1]} pixels; this device's texel buffers "
            f"hold {max_texels} (maxTexelBufferElements): render a smaller image, or one without "
            "labels (vkdqs render --no-labels)"
        )
    return np.ascontiguousarray(arr)


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
        pool = renderer.own(DescriptorPool(dev, si.OVERLAY_BINDINGS, sets=frames, label="overlay"))
        self.sets = [pool.allocate(self.set_layout) for _ in range(frames)]
        self.buffers: list[Buffer | None] = [None] * frames
        self.views: list[BufferView | None] = [None] * frames
        #: per frame slot: the overlay version its buffer holds
        self.written = [-1] * frames
        #: bumped when a slot's buffer is re-made (its descriptor changes: re-record)
        self.generation = 0

    def write(self, slot: int, image: np.ndarray, version: int) -> None:
        """Put ``image`` into ``slot``'s buffer (that slot's frame has finished)."""
        if self.written[slot] == version:
            return
        r = self._renderer
        buf = self.buffers[slot]
        if buf is None or buf.size < image.nbytes:
            r.device.wait_idle()  # command buffers of other images may still use the set
            if buf is not None:
                r.release(self.views[slot])
                r.release(buf)
            usage = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
            buf = r.own(Buffer(r.device, image.nbytes, usage, label=f"overlay {slot}"))
            view = r.own(
                BufferView(r.device, buf, int(si.OVERLAY_TEXEL_FORMAT), label=f"overlay {slot}")
            )
            binding = si.OVERLAY_BINDINGS[0]
            write_descriptors(r.device, self.sets[slot], [TexelWrite(binding, view)])
            self.buffers[slot], self.views[slot] = buf, view
            self.generation += 1
        buf.write(image.reshape(-1))
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
        vk.vkCmdBindDescriptorSets(
            cmd, graphics, self.layout.handle, 0, 1, [self.sets[slot]], 0, None
        )
        push = np.array(size, dtype=np.int32)
        push_constants(cmd, self.layout.handle, si.Stage.FRAGMENT, push)
        vk.vkCmdDraw(cmd, 3, 1, 0, 0)
