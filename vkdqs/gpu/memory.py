"""Buffers: a VkBuffer, its own VkDeviceMemory, and a persistent host mapping.

Every buffer vkdqs makes is host-visible and stays mapped for its whole life (the usual Vulkan
practice for buffers the CPU writes every frame or reads back every call). The mapping is never
handed out: :meth:`Buffer.write` copies numpy data in and :meth:`Buffer.read` copies data out, so
no numpy array can outlive the memory it views.

Memory-type choice prefers DEVICE_LOCAL as well (always true on lavapipe and other unified-memory
devices) and, for readback buffers, HOST_CACHED, which makes CPU reads of GPU results fast.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import vulkan as vk

from ..errors import InputError
from .calls import vk_errors
from .device import Device
from .objects import DeviceObject

_HOST = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT


class Buffer(DeviceObject):
    """A persistently mapped, host-visible buffer of ``size`` bytes for ``usage``
    (``VkBufferUsageFlags``); ``readback=True`` prefers host-cached memory."""

    kind = "buffer"

    def __init__(
        self, device: Device, size: int, usage: int, *, label: str, readback: bool = False
    ) -> None:
        if size <= 0:
            raise InputError(f"buffer {label!r}: size must be > 0, got {size}")
        vk_device = device.handle
        doing = f"creating buffer {label!r} ({size} bytes)"
        info = vk.VkBufferCreateInfo(
            size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE
        )
        with vk_errors(doing):
            buffer = vk.vkCreateBuffer(vk_device, info, None)
        memory = None
        try:
            req = vk.vkGetBufferMemoryRequirements(vk_device, buffer)
            preferred = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            if readback:
                preferred |= vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
            type_index = device.memory_type_index(req.memoryTypeBits, _HOST, preferred)
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=type_index)
            with vk_errors(f"allocating memory for {doing}"):
                memory = vk.vkAllocateMemory(vk_device, alloc, None)
                vk.vkBindBufferMemory(vk_device, buffer, memory, 0)
                mapped = vk.vkMapMemory(vk_device, memory, 0, size, 0)
        except BaseException:
            if memory is not None:
                vk.vkFreeMemory(vk_device, memory, None)
            vk.vkDestroyBuffer(vk_device, buffer, None)
            raise
        self.size = size
        # A uint8 view of the whole mapping; private, and dropped by destroy(). Every access
        # checks `handle` first, so no access reaches unmapped memory.
        self._bytes: np.ndarray | None = np.frombuffer(mapped, dtype=np.uint8)

        def destroyer() -> None:
            vk.vkUnmapMemory(vk_device, memory)
            vk.vkDestroyBuffer(vk_device, buffer, None)
            vk.vkFreeMemory(vk_device, memory, None)

        super().__init__(device, buffer, label, destroyer)

    def destroy(self) -> None:
        """Drop the view of the mapping, then unmap and destroy the buffer and its memory now.

        Safe to call twice.
        """
        self._bytes = None
        super().destroy()

    def _view(self, offset: int, nbytes: int) -> np.ndarray:
        _ = self.handle  # raises ObjectDestroyedError after destroy()
        if offset < 0 or offset + nbytes > self.size:
            raise InputError(
                f"buffer {self.label!r}: range [{offset}, {offset + nbytes}) outside its "
                f"{self.size} bytes"
            )
        assert self._bytes is not None
        return self._bytes[offset : offset + nbytes]

    def write(self, data: np.ndarray, offset: int = 0) -> None:
        """Copy a C-contiguous array's bytes into the buffer at ``offset``."""
        src = np.ascontiguousarray(data)
        self._view(offset, src.nbytes)[:] = src.reshape(-1).view(np.uint8)

    def read(self, dtype: Any, count: int, offset: int = 0) -> np.ndarray:
        """A copy of ``count`` items of ``dtype`` starting at byte ``offset``."""
        dtype = np.dtype(dtype)
        raw = self._view(offset, dtype.itemsize * count)
        return raw.view(dtype).copy()

    def read_into(self, out: np.ndarray, offset: int = 0) -> None:
        """Copy ``out.nbytes`` bytes starting at byte ``offset`` into ``out`` (any array,
        contiguous or not), as items of its dtype in C order: no intermediate copy."""
        raw = self._view(offset, out.nbytes)
        out[...] = raw.view(out.dtype).reshape(out.shape)


class BufferView(DeviceObject):
    """A texel view of a whole buffer in ``fmt`` (``VkFormat``)."""

    kind = "buffer view"

    def __init__(self, device: Device, buffer: Buffer, fmt: int, *, label: str) -> None:
        vk_device = device.handle
        info = vk.VkBufferViewCreateInfo(
            buffer=buffer.handle, format=fmt, offset=0, range=buffer.size
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
) -> tuple[Buffer, BufferView]:
    """A buffer filled with ``data`` and a texel view of it in ``fmt`` (``VkFormat``): what a
    shader's ``samplerBuffer`` binding reads. The caller owns both."""
    buffer = Buffer(device, data.nbytes, usage, label=label)
    try:
        buffer.write(data)
        view = BufferView(device, buffer, fmt, label=label)
    except BaseException:
        buffer.destroy()
        raise
    return buffer, view
