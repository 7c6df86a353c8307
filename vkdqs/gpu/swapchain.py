"""A window surface and its swapchains (``VK_KHR_surface`` / ``VK_KHR_swapchain``).

The binding reaches extension functions through ``vkGet*ProcAddr``; :class:`Surface` looks them
up once. Presenting goes through the Device's queue lock like every other queue operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import vulkan as vk

from ..errors import CapabilityError
from .calls import vk_errors
from .device import Device
from .images import ImageView
from .objects import DeviceObject

_INSTANCE_FUNCTIONS = (
    "vkDestroySurfaceKHR",
    "vkGetPhysicalDeviceSurfaceSupportKHR",
    "vkGetPhysicalDeviceSurfaceCapabilitiesKHR",
    "vkGetPhysicalDeviceSurfaceFormatsKHR",
    "vkGetPhysicalDeviceSurfacePresentModesKHR",
)
_DEVICE_FUNCTIONS = (
    "vkCreateSwapchainKHR",
    "vkDestroySwapchainKHR",
    "vkGetSwapchainImagesKHR",
    "vkAcquireNextImageKHR",
    "vkQueuePresentKHR",
)


class Surface(DeviceObject):
    """A ``VkSurfaceKHR`` (e.g. from ``glfw.create_window_surface``), owned from now on."""

    kind = "surface"

    def __init__(self, device: Device, surface: Any, *, label: str = "window surface") -> None:
        instance = device.instance
        fn = {name: vk.vkGetInstanceProcAddr(instance, name) for name in _INSTANCE_FUNCTIONS}
        fn.update({name: vk.vkGetDeviceProcAddr(device.handle, name) for name in _DEVICE_FUNCTIONS})
        self.fn = fn
        destroy = fn["vkDestroySurfaceKHR"]
        super().__init__(device, surface, label, lambda: destroy(instance, surface, None))
        pd = device.physical_device
        if not fn["vkGetPhysicalDeviceSurfaceSupportKHR"](pd, device.queue_family, surface):
            self.destroy()
            raise CapabilityError(f"{device.info.name!r} cannot present to this surface")

    def formats(self) -> list[tuple[int, int]]:
        """The (VkFormat, VkColorSpaceKHR) pairs the surface supports."""
        fmts = self.fn["vkGetPhysicalDeviceSurfaceFormatsKHR"](
            self.device.physical_device, self.handle
        )
        return [(f.format, f.colorSpace) for f in fmts]

    def present_modes(self) -> list[int]:
        """The ``VkPresentModeKHR`` values the surface supports (FIFO always among them)."""
        return list(
            self.fn["vkGetPhysicalDeviceSurfacePresentModesKHR"](
                self.device.physical_device, self.handle
            )
        )

    def capabilities(self) -> Any:
        """The surface's ``VkSurfaceCapabilitiesKHR`` now: current extent (it follows the
        window), extent limits, image counts and transform."""
        return self.fn["vkGetPhysicalDeviceSurfaceCapabilitiesKHR"](
            self.device.physical_device, self.handle
        )


@dataclass(frozen=True)
class SwapchainDesc:
    """What a swapchain is made with; a new one is made whenever this changes."""

    width: int
    height: int
    color_format: int
    color_space: int
    present_mode: int


class Swapchain(DeviceObject):
    """A swapchain of ``surface`` and its images (:func:`image_views` makes their views)."""

    kind = "swapchain"

    def __init__(
        self, device: Device, surface: Surface, desc: SwapchainDesc, old: Swapchain | None = None
    ) -> None:
        vk_device = device.handle
        caps = surface.capabilities()
        count = caps.minImageCount + 1
        if caps.maxImageCount:
            count = min(count, caps.maxImageCount)
        info = vk.VkSwapchainCreateInfoKHR(
            surface=surface.handle,
            minImageCount=count,
            imageFormat=desc.color_format,
            imageColorSpace=desc.color_space,
            imageExtent=vk.VkExtent2D(desc.width, desc.height),
            imageArrayLayers=1,
            imageUsage=vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
            imageSharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
            preTransform=caps.currentTransform,
            compositeAlpha=vk.VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR,
            presentMode=desc.present_mode,
            clipped=vk.VK_TRUE,
            oldSwapchain=old.handle if old is not None else None,
        )
        fn = surface.fn
        label = f"swapchain {desc.width}x{desc.height}"
        with vk_errors(f"creating a {desc.width}x{desc.height} swapchain"):
            handle = fn["vkCreateSwapchainKHR"](vk_device, info, None)
        destroy = fn["vkDestroySwapchainKHR"]
        super().__init__(device, handle, label, lambda: destroy(vk_device, handle, None))
        self.desc = desc
        self._fn = fn
        self.images = list(fn["vkGetSwapchainImagesKHR"](vk_device, handle))

    def acquire(self, semaphore: Any) -> int:
        """The next image's index; raises the binding's ``VkErrorOutOfDateKhr`` or
        ``VkSuboptimalKhr`` for the caller to re-create the swapchain."""
        return self._fn["vkAcquireNextImageKHR"](
            self.device.handle, self.handle, 2**64 - 1, semaphore, None
        )

    def present(self, index: int, wait: Any) -> None:
        """Queue image ``index`` for presentation after ``wait`` (under the queue lock)."""
        info = vk.VkPresentInfoKHR(
            waitSemaphoreCount=1,
            pWaitSemaphores=[wait],
            swapchainCount=1,
            pSwapchains=[self.handle],
            pImageIndices=[index],
        )
        with self.device.queue() as queue:
            self._fn["vkQueuePresentKHR"](queue, info)


def image_views(device: Device, swapchain: Swapchain) -> list[ImageView]:
    """A colour view of each of the swapchain's images (owned by the caller)."""
    fmt = swapchain.desc.color_format
    aspect = vk.VK_IMAGE_ASPECT_COLOR_BIT
    return [
        ImageView(device, image, fmt, aspect, label=f"swapchain {i}")
        for i, image in enumerate(swapchain.images)
    ]
