"""Buffers: a VkBuffer placed in the device's memory by usage class (:mod:`.classes`).

A buffer's memory class says who writes and reads it; the allocator (:mod:`.allocator`) puts it
in the type that class ranks first and that has room. Host-visible buffers stay mapped for
their whole life; :meth:`Buffer.write` and :meth:`Buffer.read` copy numpy data in and out
(flushing and invalidating memory that is not coherent), so no numpy array can outlive the
memory it views. A buffer the host cannot map (static data staged into device-local memory,
GPU-only outputs) is written and read the same way, through a staging copy
(:mod:`.transfer`) that the call waits for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import vulkan as vk

from ...errors import InputError, LimitError
from ..calls import vk_errors
from ..device import Device
from ..objects import DeviceObject
from .allocator import Allocation
from .classes import MemoryClass

#: Every buffer can be the source and destination of a copy: staging and readback copies.
_COPIES = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT


class Buffer(DeviceObject):
    """A buffer of ``size`` bytes for ``usage`` (``VkBufferUsageFlags``) in memory of class
    ``memory``: ``"dynamic"`` (written by the host each frame or call: the default),
    ``"static"`` (written once, read by the GPU), ``"readback"`` (written by the GPU, read by
    the host), ``"gpu"`` (the GPU's alone) or ``"staging"``."""

    kind = "buffer"

    def __init__(
        self,
        device: Device,
        size: int,
        usage: int,
        *,
        label: str,
        memory: MemoryClass = "dynamic",
    ) -> None:
        if size <= 0:
            raise InputError(f"buffer {label!r}: size must be > 0, got {size}")
        vk_device = device.handle
        allocator = device.allocator
        doing = f"creating buffer {label!r} ({size} bytes)"
        info = vk.VkBufferCreateInfo(
            size=size, usage=usage | _COPIES, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE
        )
        with vk_errors(doing):
            buffer = vk.vkCreateBuffer(vk_device, info, None)
        allocation: Allocation | None = None
        try:
            req = vk.vkGetBufferMemoryRequirements(vk_device, buffer)
            allocation = allocator.allocate(req, memory, kind="buffer", label=label)
            with vk_errors(f"binding memory for {doing}"):
                vk.vkBindBufferMemory(vk_device, buffer, allocation.memory, allocation.offset)
        except BaseException:
            if allocation is not None:
                allocation.free()
            vk.vkDestroyBuffer(vk_device, buffer, None)
            raise
        self.size = size
        self.memory_class = memory
        self.allocation: Allocation | None = allocation

        def destroyer() -> None:
            vk.vkDestroyBuffer(vk_device, buffer, None)
            allocation.free()

        super().__init__(device, buffer, label, destroyer)

    @property
    def host_visible(self) -> bool:
        """Whether the host maps this buffer (False: writes and reads go through staging)."""
        return self._live_allocation().host_visible

    @property
    def memory_type(self) -> int:
        """Index of the memory type the buffer is in."""
        return self._live_allocation().type_index

    def destroy(self) -> None:
        """Destroy the buffer and give its memory back now. Safe to call twice."""
        self.allocation = None
        super().destroy()

    def _live_allocation(self) -> Allocation:
        _ = self.handle  # raises ObjectDestroyedError after destroy()
        assert self.allocation is not None
        return self.allocation

    def _check_range(self, offset: int, nbytes: int) -> Allocation:
        allocation = self._live_allocation()
        if offset < 0 or offset + nbytes > self.size:
            raise InputError(
                f"buffer {self.label!r}: range [{offset}, {offset + nbytes}) outside its "
                f"{self.size} bytes"
            )
        return allocation

    def write(self, data: np.ndarray, offset: int = 0) -> None:
        """Copy a C-contiguous array's bytes into the buffer at ``offset``."""
        src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        allocation = self._check_range(offset, src.nbytes)
        if not allocation.host_visible:
            from .transfer import upload

            upload(self, src, offset)
            return
        allocation.view(offset, src.nbytes)[:] = src
        allocation.flush(offset, src.nbytes)

    def _host_bytes(self, offset: int, nbytes: int) -> np.ndarray:
        """The buffer's bytes at ``offset`` as the host sees them after the device's writes:
        a view of the mapping (invalidated first) or a staged copy."""
        allocation = self._check_range(offset, nbytes)
        if not allocation.host_visible:
            from .transfer import download

            return download(self, offset, nbytes)
        allocation.invalidate(offset, nbytes)
        return allocation.view(offset, nbytes)

    def read(self, dtype: Any, count: int, offset: int = 0) -> np.ndarray:
        """A copy of ``count`` items of ``dtype`` starting at byte ``offset``."""
        dtype = np.dtype(dtype)
        return self._host_bytes(offset, dtype.itemsize * count).view(dtype).copy()

    def read_into(self, out: np.ndarray, offset: int = 0) -> None:
        """Copy ``out.nbytes`` bytes starting at byte ``offset`` into ``out`` (any array,
        contiguous or not), as items of its dtype in C order: no intermediate copy from a
        mapped buffer."""
        raw = self._host_bytes(offset, out.nbytes)
        out[...] = raw.view(out.dtype).reshape(out.shape)


#: Bytes of one texel of the formats vkdqs views buffers in (VkFormat values).
TEXEL_BYTES = {
    vk.VK_FORMAT_R8G8B8A8_UNORM: 4,
    vk.VK_FORMAT_R8G8B8A8_UINT: 4,
    vk.VK_FORMAT_R16G16_SNORM: 4,
    vk.VK_FORMAT_R16G16B16A16_UNORM: 8,
    vk.VK_FORMAT_R16G16B16A16_SNORM: 8,
    vk.VK_FORMAT_R16G16B16A16_UINT: 8,
    vk.VK_FORMAT_R16G16B16A16_SINT: 8,
    vk.VK_FORMAT_R32_UINT: 4,
    vk.VK_FORMAT_R32_SFLOAT: 4,
    vk.VK_FORMAT_R32G32_SFLOAT: 8,
    vk.VK_FORMAT_R32G32B32A32_UINT: 16,
    vk.VK_FORMAT_R32G32B32A32_SINT: 16,
    vk.VK_FORMAT_R32G32B32A32_SFLOAT: 16,
}


class BufferView(DeviceObject):
    """A texel view in ``fmt`` (``VkFormat``) of ``size`` bytes of a buffer from byte
    ``offset`` (a multiple of the device's minTexelBufferOffsetAlignment, which is at most
    256; default: the whole buffer; a vkdqs Buffer or an app's
    :class:`~vkdqs.gpu.AppBuffer`)."""

    kind = "buffer view"

    def __init__(
        self,
        device: Device,
        buffer: Any,
        fmt: int,
        *,
        label: str,
        size: int | None = None,
        offset: int = 0,
    ) -> None:
        vk_device = device.handle
        span = buffer.size - offset if size is None else size
        # a view of more texels than the device reads is invalid (VUID-VkBufferViewCreateInfo-
        # range-00930): refused here on every device, and so under a memory profile's limit
        texels, limit = span // TEXEL_BYTES.get(fmt, 1), device.info.max_texel_buffer_elements
        if texels > limit:
            raise LimitError(
                f"buffer view {label!r} of {texels} texels exceeds this device's "
                f"maxTexelBufferElements ({limit})"
            )
        info = vk.VkBufferViewCreateInfo(
            buffer=buffer.handle, format=fmt, offset=offset, range=span
        )
        with vk_errors(f"creating buffer view {label!r}"):
            handle = vk.vkCreateBufferView(vk_device, info, None)
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyBufferView(vk_device, handle, None)
        )


def texel_buffer(
    device: Device,
    data: np.ndarray,
    fmt: int,
    *,
    label: str,
    usage: int = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT,
    memory: MemoryClass = "static",
) -> tuple[Buffer, BufferView]:
    """A buffer filled with ``data`` and a texel view of it in ``fmt`` (``VkFormat``): what a
    shader's ``samplerBuffer`` binding reads. The caller owns both."""
    buffer = Buffer(device, data.nbytes, usage, label=label, memory=memory)
    try:
        buffer.write(data)
        view = BufferView(device, buffer, fmt, label=label)
    except BaseException:
        buffer.destroy()
        raise
    return buffer, view
