"""Images: a 2D VkImage with its own memory and one view (colour or depth attachments), and
views of images owned elsewhere (a swapchain's)."""

from __future__ import annotations

from typing import Any

import vulkan as vk

from ..errors import CapabilityError
from .calls import vk_errors
from .device import Device
from .objects import DeviceObject


class Image(DeviceObject):
    """A 2D device-local image and a view of it (``.view``), owned by the Device."""

    kind = "image"

    def __init__(
        self,
        device: Device,
        width: int,
        height: int,
        fmt: int,
        usage: int,
        aspect: int,
        *,
        samples: int = vk.VK_SAMPLE_COUNT_1_BIT,
        label: str,
    ) -> None:
        vk_device = device.handle
        info = vk.VkImageCreateInfo(
            imageType=vk.VK_IMAGE_TYPE_2D,
            format=fmt,
            extent=vk.VkExtent3D(width, height, 1),
            mipLevels=1,
            arrayLayers=1,
            samples=samples,
            tiling=vk.VK_IMAGE_TILING_OPTIMAL,
            usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
            initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
        )
        doing = f"creating image {label!r} ({width}x{height})"
        with vk_errors(doing):
            image = vk.vkCreateImage(vk_device, info, None)
        memory = view = None
        try:
            req = vk.vkGetImageMemoryRequirements(vk_device, image)
            type_index = device.memory_type_index(
                req.memoryTypeBits, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            )
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=type_index)
            with vk_errors(f"allocating memory for {doing}"):
                memory = vk.vkAllocateMemory(vk_device, alloc, None)
                vk.vkBindImageMemory(vk_device, image, memory, 0)
            view = _create_view(vk_device, image, fmt, aspect, label)
        except BaseException:
            if memory is not None:
                vk.vkFreeMemory(vk_device, memory, None)
            vk.vkDestroyImage(vk_device, image, None)
            raise
        self.view = view
        self.format = fmt
        self.width, self.height = width, height

        def destroyer() -> None:
            vk.vkDestroyImageView(vk_device, view, None)
            vk.vkDestroyImage(vk_device, image, None)
            vk.vkFreeMemory(vk_device, memory, None)

        super().__init__(device, image, label, destroyer)


class ImageView(DeviceObject):
    """A 2D view of a whole single-level image that something else owns (a swapchain image)."""

    kind = "image view"

    def __init__(self, device: Device, image: Any, fmt: int, aspect: int, *, label: str) -> None:
        vk_device = device.handle
        view = _create_view(vk_device, image, fmt, aspect, label)
        super().__init__(device, view, label, lambda: vk.vkDestroyImageView(vk_device, view, None))


def _create_view(vk_device: Any, image: Any, fmt: int, aspect: int, label: str) -> Any:
    info = vk.VkImageViewCreateInfo(
        image=image,
        viewType=vk.VK_IMAGE_VIEW_TYPE_2D,
        format=fmt,
        components=vk.VkComponentMapping(
            vk.VK_COMPONENT_SWIZZLE_IDENTITY,
            vk.VK_COMPONENT_SWIZZLE_IDENTITY,
            vk.VK_COMPONENT_SWIZZLE_IDENTITY,
            vk.VK_COMPONENT_SWIZZLE_IDENTITY,
        ),
        subresourceRange=vk.VkImageSubresourceRange(
            aspectMask=aspect, baseMipLevel=0, levelCount=1, baseArrayLayer=0, layerCount=1
        ),
    )
    with vk_errors(f"creating a view of image {label!r}"):
        return vk.vkCreateImageView(vk_device, info, None)


def pick_depth_format(device: Device) -> int:
    """The first depth format usable as an optimal-tiling depth attachment."""
    for fmt in (vk.VK_FORMAT_D32_SFLOAT, vk.VK_FORMAT_X8_D24_UNORM_PACK32, vk.VK_FORMAT_D16_UNORM):
        props = vk.vkGetPhysicalDeviceFormatProperties(device.physical_device, fmt)
        if props.optimalTilingFeatures & vk.VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT:
            return fmt
    raise CapabilityError(
        f"{device.info.name!r} has no depth attachment format (D32, X8_D24 or D16)"
    )
