"""Images: a 2D VkImage in device-local memory (placed by the allocator) and one view (colour
or depth attachments), views of images owned elsewhere (a swapchain's), sampled sRGB textures
with their mip chains, and samplers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import vulkan as vk

from ..errors import CapabilityError, InputError
from .calls import vk_errors
from .device import Device
from .objects import DeviceObject

if TYPE_CHECKING:
    from ..material import Sampler as MaterialSampler


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
        doing = f"creating image {label!r} ({width}x{height})"
        image, memory = _create_image(device, width, height, fmt, usage, 1, samples, doing)
        try:
            view = _create_view(vk_device, image, fmt, aspect, label)
        except BaseException:
            memory.free()
            vk.vkDestroyImage(vk_device, image, None)
            raise
        self.view = view
        self.format = fmt
        self.width, self.height = width, height

        def destroyer() -> None:
            vk.vkDestroyImageView(vk_device, view, None)
            vk.vkDestroyImage(vk_device, image, None)
            memory.free()

        super().__init__(device, image, label, destroyer)


class ImageView(DeviceObject):
    """A 2D view of a whole single-level image that something else owns (a swapchain image)."""

    kind = "image view"

    def __init__(self, device: Device, image: Any, fmt: int, aspect: int, *, label: str) -> None:
        vk_device = device.handle
        view = _create_view(vk_device, image, fmt, aspect, label)
        super().__init__(device, view, label, lambda: vk.vkDestroyImageView(vk_device, view, None))


def _create_image(
    device: Device,
    width: int,
    height: int,
    fmt: int,
    usage: int,
    levels: int,
    samples: int,
    doing: str,
) -> tuple[Any, Any]:
    """A 2D optimal-tiling image in device-local memory: ``(image, allocation)``, both freed again
    if allocating or binding fails (``doing`` names it in errors)."""
    vk_device = device.handle
    info = vk.VkImageCreateInfo(
        imageType=vk.VK_IMAGE_TYPE_2D,
        format=fmt,
        extent=vk.VkExtent3D(width, height, 1),
        mipLevels=levels,
        arrayLayers=1,
        samples=samples,
        tiling=vk.VK_IMAGE_TILING_OPTIMAL,
        usage=usage,
        sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
        initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
    )
    with vk_errors(doing):
        image = vk.vkCreateImage(vk_device, info, None)
    memory = None
    try:
        req = vk.vkGetImageMemoryRequirements(vk_device, image)
        memory = device.allocator.allocate(req, "gpu", kind="image", label=doing)
        with vk_errors(f"binding memory for {doing}"):
            vk.vkBindImageMemory(vk_device, image, memory.memory, memory.offset)
    except BaseException:
        if memory is not None:
            memory.free()
        vk.vkDestroyImage(vk_device, image, None)
        raise
    return image, memory


def _create_view(
    vk_device: Any, image: Any, fmt: int, aspect: int, label: str, levels: int = 1
) -> Any:
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
            aspectMask=aspect, baseMipLevel=0, levelCount=levels, baseArrayLayer=0, layerCount=1
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


# -- textures and samplers ----------------------------------------------------------------------

_SRGB = vk.VK_FORMAT_R8G8B8A8_SRGB
_FILTERS = {"nearest": vk.VK_FILTER_NEAREST, "linear": vk.VK_FILTER_LINEAR}
_MIPMAP_MODES = {
    "nearest": vk.VK_SAMPLER_MIPMAP_MODE_NEAREST,
    "linear": vk.VK_SAMPLER_MIPMAP_MODE_LINEAR,
}
_WRAPS = {
    "repeat": vk.VK_SAMPLER_ADDRESS_MODE_REPEAT,
    "clamp": vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
    "mirror": vk.VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT,
}


def mip_count(width: int, height: int) -> int:
    """Levels of a full mip chain: down to 1x1."""
    return max(width, height).bit_length()


def can_blit_mips(device: Device, fmt: int = _SRGB) -> bool:
    """Whether ``fmt`` (optimal tiling) can be a linear-filtered blit source and destination, so
    the mip chain can be made on the GPU with ``vkCmdBlitImage`` (lavapipe: yes)."""
    props = vk.vkGetPhysicalDeviceFormatProperties(device.physical_device, fmt)
    need = (
        vk.VK_FORMAT_FEATURE_BLIT_SRC_BIT
        | vk.VK_FORMAT_FEATURE_BLIT_DST_BIT
        | vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT
    )
    return (props.optimalTilingFeatures & need) == need


def host_mips(rgba: np.ndarray) -> list[np.ndarray]:
    """The mip chain of an sRGB RGBA8 image made on the CPU (2x2 box filter in linear light;
    an odd side keeps its last row/column), level 0 first. For devices that cannot blit."""
    from ..material import linear_to_srgb, srgb_to_linear

    levels = [rgba]
    lin = np.concatenate([srgb_to_linear(rgba[..., :3] / 255.0), rgba[..., 3:] / 255.0], axis=2)
    while max(lin.shape[:2]) > 1:
        h, w = lin.shape[:2]
        lin = lin[: max(h - h % 2, 1), : max(w - w % 2, 1)]
        if h > 1:
            lin = 0.5 * (lin[0::2] + lin[1::2])
        if w > 1:
            lin = 0.5 * (lin[:, 0::2] + lin[:, 1::2])
        rgb = linear_to_srgb(lin[..., :3])
        level = np.concatenate([rgb, lin[..., 3:]], axis=2)
        levels.append(np.clip(np.round(level * 255.0), 0, 255).astype(np.uint8))
    return levels


def _barrier(
    cmd: Any, image: Any, level: int, count: int, old: int, new: int, src: int, dst: int
) -> None:
    access = {
        vk.VK_IMAGE_LAYOUT_UNDEFINED: 0,
        vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL: vk.VK_ACCESS_TRANSFER_WRITE_BIT,
        vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL: vk.VK_ACCESS_TRANSFER_READ_BIT,
        vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL: vk.VK_ACCESS_SHADER_READ_BIT,
    }
    b = vk.VkImageMemoryBarrier(
        srcAccessMask=access[old],
        dstAccessMask=access[new],
        oldLayout=old,
        newLayout=new,
        srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
        dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
        image=image,
        subresourceRange=vk.VkImageSubresourceRange(
            aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT,
            baseMipLevel=level,
            levelCount=count,
            baseArrayLayer=0,
            layerCount=1,
        ),
    )
    vk.vkCmdPipelineBarrier(cmd, src, dst, 0, 0, None, 0, None, 1, [b])


class Texture(DeviceObject):
    """A sampled 2D sRGB texture (``R8G8B8A8_SRGB``) with a full mip chain, uploaded from an
    ``(H, W, 4)`` uint8 RGBA array; ``.view`` covers every level.

    ``mips="gpu"`` makes the chain with linear-filtered ``vkCmdBlitImage`` (the format must
    allow it, see :func:`can_blit_mips`), ``"host"`` with :func:`host_mips`, ``"auto"`` (default)
    the GPU when it can.
    """

    kind = "texture"

    def __init__(self, device: Device, rgba: np.ndarray, *, label: str, mips: str = "auto") -> None:
        from .commands import CommandBuffer
        from .memory.buffer import Buffer
        from .memory.transfer import defer_recording

        rgba = np.ascontiguousarray(rgba, dtype=np.uint8)
        if rgba.ndim != 3 or rgba.shape[2] != 4:
            raise InputError(f"texture {label!r}: need (H, W, 4) uint8, got {rgba.shape}")
        if mips not in ("auto", "gpu", "host"):
            raise InputError(f"mips must be 'auto', 'gpu' or 'host', got {mips!r}")
        height, width = rgba.shape[:2]
        blit = can_blit_mips(device)
        if mips == "gpu" and not blit:
            raise CapabilityError(f"{device.info.name!r} cannot blit R8G8B8A8_SRGB mip levels")
        on_gpu = blit and mips != "host"
        levels = mip_count(width, height)
        vk_device = device.handle
        usage = (
            vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT
            | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
            | vk.VK_IMAGE_USAGE_SAMPLED_BIT
        )
        doing = f"creating texture {label!r} ({width}x{height}, {levels} levels)"
        samples = vk.VK_SAMPLE_COUNT_1_BIT
        image, memory = _create_image(device, width, height, _SRGB, usage, levels, samples, doing)
        view = None
        try:
            color = vk.VK_IMAGE_ASPECT_COLOR_BIT
            view = _create_view(vk_device, image, _SRGB, color, f"texture {label}", levels)
            uploads = [rgba] if on_gpu else host_mips(rgba)
            offsets = np.cumsum([0] + [u.nbytes for u in uploads])
            staging = Buffer(
                device,
                int(offsets[-1]),
                vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                label=f"{label} upload",
                memory="staging",
            )
            try:
                for u, at in zip(uploads, offsets, strict=False):
                    staging.write(u, int(at))
            except BaseException:
                staging.destroy()
                raise

            def record(cmd: Any) -> None:
                self._record_upload(cmd, image, staging, uploads, offsets, levels, on_gpu)

        except BaseException:
            if view is not None:
                vk.vkDestroyImageView(vk_device, view, None)
            memory.free()
            vk.vkDestroyImage(vk_device, image, None)
            raise
        self.view = view
        self.width, self.height, self.levels = width, height, levels
        #: "gpu" (vkCmdBlitImage) or "host" (host_mips): how the mip chain was made
        self.mips = "gpu" if on_gpu else "host"

        def destroyer() -> None:
            vk.vkDestroyImageView(vk_device, view, None)
            vk.vkDestroyImage(vk_device, image, None)
            memory.free()

        super().__init__(device, image, label, destroyer)
        # within batched_uploads (a renderer's add_mesh): with the mesh's other uploads
        if defer_recording(device, record, staging, lambda: not self.destroyed):
            return
        try:
            with staging, CommandBuffer(device, label=f"{label} upload") as cb:
                record(cb.begin(one_time=True))
                cb.end()
                cb.submit_and_wait()
        except BaseException:
            self.destroy()
            raise

    @staticmethod
    def _record_upload(
        cmd: Any,
        image: Any,
        staging: Any,
        uploads: list[np.ndarray],
        offsets: np.ndarray,
        levels: int,
        on_gpu: bool,
    ) -> None:
        transfer = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        fragment = vk.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT
        undefined = vk.VK_IMAGE_LAYOUT_UNDEFINED
        dst = vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL
        src = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
        read = vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL
        top = vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
        _barrier(cmd, image, 0, levels, undefined, dst, top, transfer)
        for level, (u, at) in enumerate(zip(uploads, offsets, strict=False)):
            h, w = u.shape[:2]
            region = vk.VkBufferImageCopy(
                bufferOffset=int(at),
                bufferRowLength=0,
                bufferImageHeight=0,
                imageSubresource=vk.VkImageSubresourceLayers(
                    aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT,
                    mipLevel=level,
                    baseArrayLayer=0,
                    layerCount=1,
                ),
                imageOffset=vk.VkOffset3D(0, 0, 0),
                imageExtent=vk.VkExtent3D(w, h, 1),
            )
            vk.vkCmdCopyBufferToImage(cmd, staging.handle, image, dst, 1, [region])
        if on_gpu:
            h, w = uploads[0].shape[:2]
            for level in range(1, levels):
                # level - 1 becomes the source of level's blit
                _barrier(cmd, image, level - 1, 1, dst, src, transfer, transfer)
                nw, nh = max(w // 2, 1), max(h // 2, 1)
                layers = [
                    vk.VkImageSubresourceLayers(
                        aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT,
                        mipLevel=lv,
                        baseArrayLayer=0,
                        layerCount=1,
                    )
                    for lv in (level - 1, level)
                ]
                blit = vk.VkImageBlit(
                    srcSubresource=layers[0],
                    srcOffsets=[vk.VkOffset3D(0, 0, 0), vk.VkOffset3D(w, h, 1)],
                    dstSubresource=layers[1],
                    dstOffsets=[vk.VkOffset3D(0, 0, 0), vk.VkOffset3D(nw, nh, 1)],
                )
                vk.vkCmdBlitImage(cmd, image, src, image, dst, 1, [blit], vk.VK_FILTER_LINEAR)
                w, h = nw, nh
            # every level but the last is a transfer source now; the last a destination
            if levels > 1:
                _barrier(cmd, image, 0, levels - 1, src, read, transfer, fragment)
            _barrier(cmd, image, levels - 1, 1, dst, read, transfer, fragment)
        else:
            _barrier(cmd, image, 0, levels, dst, read, transfer, fragment)


class GpuSampler(DeviceObject):
    """A ``VkSampler`` for a :class:`vkdqs.material.Sampler` (filters, mipmap mode, wrap modes).

    A sampler without a mipmap mode samples only level 0 (``maxLod`` 0)."""

    kind = "sampler"

    def __init__(self, device: Device, desc: MaterialSampler, *, label: str) -> None:
        vk_device = device.handle
        mip = desc.mipmap
        info = vk.VkSamplerCreateInfo(
            magFilter=_FILTERS[desc.mag_filter],
            minFilter=_FILTERS[desc.min_filter],
            mipmapMode=_MIPMAP_MODES[mip or "nearest"],
            addressModeU=_WRAPS[desc.wrap_s],
            addressModeV=_WRAPS[desc.wrap_t],
            addressModeW=vk.VK_SAMPLER_ADDRESS_MODE_REPEAT,
            mipLodBias=0.0,
            anisotropyEnable=vk.VK_FALSE,
            maxAnisotropy=1.0,
            compareEnable=vk.VK_FALSE,
            compareOp=vk.VK_COMPARE_OP_ALWAYS,
            minLod=0.0,
            maxLod=vk.VK_LOD_CLAMP_NONE if mip is not None else 0.0,
            borderColor=vk.VK_BORDER_COLOR_FLOAT_OPAQUE_WHITE,
            unnormalizedCoordinates=vk.VK_FALSE,
        )
        with vk_errors(f"creating sampler {label!r}"):
            handle = vk.vkCreateSampler(vk_device, info, None)
        self.desc = desc
        super().__init__(
            device, handle, label, lambda: vk.vkDestroySampler(vk_device, handle, None)
        )
