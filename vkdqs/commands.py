"""Command buffers and fences, owned by the Device."""

from __future__ import annotations

from typing import Any

import vulkan as vk

from .device import Device, DeviceObject
from .vkcall import vk_errors

# Long enough for a 1M-vertex batch on a software rasterizer; a wait that runs out is an error,
# never a silent hang.
FENCE_TIMEOUT_NS = 120 * 1_000_000_000


class CommandBuffer(DeviceObject):
    """A primary command buffer from the device's pool, with its own fence (unless ``fence=False``:
    the renderer's frames in flight own their fences)."""

    kind = "command buffer"

    def __init__(self, device: Device, *, label: str, fence: bool = True):
        vk_device = device.handle
        pool = device.command_pool
        info = vk.VkCommandBufferAllocateInfo(
            commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
        )
        with vk_errors(f"allocating command buffer {label!r}"):
            cmd = vk.vkAllocateCommandBuffers(vk_device, info)[0]
        handle = None
        if fence:
            with vk_errors(f"creating the fence of {label!r}"):
                handle = vk.vkCreateFence(vk_device, vk.VkFenceCreateInfo(), None)

        def destroyer() -> None:
            if handle is not None:
                vk.vkDestroyFence(vk_device, handle, None)
            vk.vkFreeCommandBuffers(vk_device, pool, 1, [cmd])

        self.fence = handle
        super().__init__(device, cmd, label, destroyer)

    def begin(self, *, one_time: bool = False) -> Any:
        cmd = self.handle
        flags = vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT if one_time else 0
        with vk_errors(f"beginning command buffer {self.label!r}"):
            vk.vkResetCommandBuffer(cmd, 0)
            vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(flags=flags))
        return cmd

    def end(self) -> None:
        with vk_errors(f"ending command buffer {self.label!r}"):
            vk.vkEndCommandBuffer(self.handle)

    def submit_and_wait(self) -> None:
        """Submit to the device's queue and block until the GPU has finished it."""
        vk_device = self.device.handle
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[self.handle])
        with vk_errors(f"submitting {self.label!r}"):
            vk.vkQueueSubmit(self.device.queue, 1, [submit], self.fence)
        with vk_errors(f"waiting for {self.label!r} (timeout {FENCE_TIMEOUT_NS / 1e9:.0f} s)"):
            vk.vkWaitForFences(vk_device, 1, [self.fence], vk.VK_TRUE, FENCE_TIMEOUT_NS)
            vk.vkResetFences(vk_device, 1, [self.fence])
