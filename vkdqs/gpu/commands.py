"""Command buffers, fences and semaphores, owned by the Device.

Each :class:`CommandBuffer` has a command pool of its own: Vulkan requires a pool to be
externally synchronized while any of its buffers is recorded, so one pool per buffer lets
owners on different threads record at the same time with no shared lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import vulkan as vk

from ..errors import InputError
from .calls import vk_errors
from .device import Device
from .interrupts import deferred_interrupts
from .objects import DeviceObject


def memory_barrier(
    cmd: Any, src_stage: int, dst_stage: int, src_access: int = 0, dst_access: int = 0
) -> None:
    """Record one global barrier: ``dst_stage`` waits for ``src_stage``, and writes of
    ``src_access`` are made visible to ``dst_access`` (no access masks: an execution barrier
    alone, e.g. against a write after read)."""
    memory = (
        [vk.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)]
        if src_access or dst_access
        else None
    )
    count = 0 if memory is None else 1
    vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, count, memory, 0, None, 0, None)


def push_constants(cmd: Any, layout: Any, stages: int, values: np.ndarray) -> None:
    """Record ``values`` (a contiguous numpy array: its bytes as the shader's push-constant block
    declares them) as the push constants of ``stages`` from offset 0 of ``layout`` (a
    ``VkPipelineLayout`` handle)."""
    vk.vkCmdPushConstants(cmd, layout, stages, 0, values.nbytes, vk.ffi.from_buffer(values))


# Long enough for a 1M-vertex batch on a software rasterizer; a wait that runs out is an error,
# never a silent hang.
FENCE_TIMEOUT_NS = 120 * 1_000_000_000


class Fence(DeviceObject):
    """A fence (``signaled=True`` starts it signalled, as frames in flight need)."""

    kind = "fence"

    def __init__(self, device: Device, *, label: str, signaled: bool = False) -> None:
        vk_device = device.handle
        flags = vk.VK_FENCE_CREATE_SIGNALED_BIT if signaled else 0
        with vk_errors(f"creating fence {label!r}"):
            fence = vk.vkCreateFence(vk_device, vk.VkFenceCreateInfo(flags=flags), None)
        super().__init__(device, fence, label, lambda: vk.vkDestroyFence(vk_device, fence, None))

    def wait(self, doing: str = "") -> None:
        """Block until the fence is signalled (at most :data:`FENCE_TIMEOUT_NS`)."""
        what = doing or f"fence {self.label!r}"
        with vk_errors(f"waiting for {what} (timeout {FENCE_TIMEOUT_NS / 1e9:.0f} s)"):
            vk.vkWaitForFences(self.device.handle, 1, [self.handle], vk.VK_TRUE, FENCE_TIMEOUT_NS)

    def reset(self) -> None:
        """Make the fence unsignalled again, before a submission that signals it."""
        with vk_errors(f"resetting fence {self.label!r}"):
            vk.vkResetFences(self.device.handle, 1, [self.handle])


class Semaphore(DeviceObject):
    """A binary semaphore."""

    kind = "semaphore"

    def __init__(self, device: Device, *, label: str) -> None:
        vk_device = device.handle
        with vk_errors(f"creating semaphore {label!r}"):
            sem = vk.vkCreateSemaphore(vk_device, vk.VkSemaphoreCreateInfo(), None)
        super().__init__(device, sem, label, lambda: vk.vkDestroySemaphore(vk_device, sem, None))


class CommandBuffer(DeviceObject):
    """A primary command buffer with its own pool and, unless ``fence=False``, its own fence
    (the renderer's frames in flight own their fences)."""

    kind = "command buffer"

    def __init__(self, device: Device, *, label: str, fence: bool = True) -> None:
        vk_device = device.handle
        pool_info = vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=device.queue_family,
        )
        with vk_errors(f"creating the command pool of {label!r}"):
            pool = vk.vkCreateCommandPool(vk_device, pool_info, None)
        handle = None
        try:
            info = vk.VkCommandBufferAllocateInfo(
                commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
            )
            with vk_errors(f"allocating command buffer {label!r}"):
                cmd = vk.vkAllocateCommandBuffers(vk_device, info)[0]
            if fence:
                with vk_errors(f"creating the fence of {label!r}"):
                    handle = vk.vkCreateFence(vk_device, vk.VkFenceCreateInfo(), None)
        except BaseException:
            vk.vkDestroyCommandPool(vk_device, pool, None)  # frees its command buffers
            raise

        def destroyer() -> None:
            if handle is not None:
                vk.vkDestroyFence(vk_device, handle, None)
            vk.vkDestroyCommandPool(vk_device, pool, None)

        self.fence = handle
        super().__init__(device, cmd, label, destroyer)

    def begin(self, *, one_time: bool = False) -> Any:
        """Reset the command buffer and start recording it again.

        Parameters
        ----------
        one_time : bool
            It will be submitted once, then recorded again
            (``VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT``).

        Returns
        -------
        VkCommandBuffer
            The handle to record commands into; :meth:`end` finishes the recording.
        """
        cmd = self.handle
        flags = vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT if one_time else 0
        with vk_errors(f"beginning command buffer {self.label!r}"):
            vk.vkResetCommandBuffer(cmd, 0)
            vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(flags=flags))
        return cmd

    def end(self) -> None:
        """Finish the recording that :meth:`begin` started; the buffer can be submitted."""
        with vk_errors(f"ending command buffer {self.label!r}"):
            vk.vkEndCommandBuffer(self.handle)

    def submit_and_wait(self, then: Sequence[CommandBuffer] = ()) -> None:
        """Submit to the device's queue and block until the GPU has finished it (and ``then``:
        recorded command buffers submitted after it in the same submission, under its fence).

        Ctrl-C is deferred until the fence is waited for and reset
        (:func:`~vkdqs.gpu.interrupts.deferred_interrupts`): no submission outlives the call.
        """
        if self.fence is None:
            raise InputError(
                f"command buffer {self.label!r} was made without a fence (fence=False); its "
                "owner submits it with the fence of its frame"
            )
        vk_device = self.device.handle
        handles = [self.handle, *(c.handle for c in then)]
        submit = vk.VkSubmitInfo(commandBufferCount=len(handles), pCommandBuffers=handles)
        with deferred_interrupts():
            self.device.submit([submit], self.fence, f"submitting {self.label!r}")
            doing = f"waiting for {self.label!r} (timeout {FENCE_TIMEOUT_NS / 1e9:.0f} s)"
            with vk_errors(doing):
                vk.vkWaitForFences(vk_device, 1, [self.fence], vk.VK_TRUE, FENCE_TIMEOUT_NS)
                vk.vkResetFences(vk_device, 1, [self.fence])
