"""Render targets: where the renderer's frames go. One protocol, two implementations.

* :class:`OffscreenTarget`: colour + depth images; every frame is copied into a host buffer and
  :meth:`OffscreenTarget.read` returns it as an ``(H, W, 4)`` uint8 numpy array (RGBA, sRGB).
* :class:`SwapchainTarget`: a ``VkSurfaceKHR`` (e.g. from ``glfw.create_window_surface``) and its
  swapchain, re-created on resize, ``VK_ERROR_OUT_OF_DATE_KHR``/``VK_SUBOPTIMAL_KHR``, and
  skipped while the window is minimized (0x0).

The renderer talks to a target only through: ``render_pass``, ``extent``, ``samples``,
``acquire(frame)``, ``framebuffer(index)``, ``record_after_pass(cmd, index)``,
``wait_semaphores(frame)``, ``signal_semaphores(index)`` and ``present(frame, index)``. It does not
know which kind it draws into.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import vulkan as vk

from .device import Device, DeviceObject, ResourceOwner
from .errors import InputError, VkdqsError
from .images import Image, create_view, pick_depth_format
from .memory import Buffer
from .vkcall import vk_errors


class FrameSync(Protocol):
    """What a target needs from one of the renderer's frames in flight."""

    index: int  # the frame slot
    image_available: Any  # VkSemaphore the acquire signals


class RenderTarget(Protocol):
    """The interface the renderer draws through; Offscreen- and SwapchainTarget implement it."""

    render_pass: DeviceObject
    extent: tuple[int, int]
    samples: int

    def acquire(self, frame: FrameSync) -> int | None:
        """Index of the framebuffer to draw into, or None when no frame can be drawn now."""

    def framebuffer(self, index: int) -> Any: ...

    def wait_semaphores(self, frame: FrameSync) -> list: ...

    def signal_semaphores(self, index: int) -> list: ...

    def record_after_pass(self, cmd: Any, index: int) -> None:
        """Commands after the render pass (e.g. copy the image out)."""

    def present(self, frame: FrameSync, index: int) -> bool: ...


_SAMPLE_BITS = {
    1: vk.VK_SAMPLE_COUNT_1_BIT,
    2: vk.VK_SAMPLE_COUNT_2_BIT,
    4: vk.VK_SAMPLE_COUNT_4_BIT,
    8: vk.VK_SAMPLE_COUNT_8_BIT,
}


def create_render_pass(
    device: Device,
    color_format: int,
    depth_format: int,
    samples: int,
    final_layout: int,
    label: str,
) -> DeviceObject:
    """Colour (+ resolve when ``samples > 1``) and depth; the colour ends in ``final_layout``."""
    msaa = samples > 1
    sample_bit = _SAMPLE_BITS[samples]
    color = vk.VkAttachmentDescription(
        format=color_format,
        samples=sample_bit,
        loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR,
        storeOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE if msaa else vk.VK_ATTACHMENT_STORE_OP_STORE,
        stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
        initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
        finalLayout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL if msaa else final_layout,
    )
    depth = vk.VkAttachmentDescription(
        format=depth_format,
        samples=sample_bit,
        loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR,
        storeOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
        stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
        initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
        finalLayout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
    )
    attachments = [color, depth]
    color_ref = vk.VkAttachmentReference(0, vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
    depth_ref = vk.VkAttachmentReference(1, vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
    resolve_refs = None
    if msaa:
        attachments.append(
            vk.VkAttachmentDescription(
                format=color_format,
                samples=vk.VK_SAMPLE_COUNT_1_BIT,
                loadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE,
                stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
                initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
                finalLayout=final_layout,
            )
        )
        resolve_refs = [vk.VkAttachmentReference(2, vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)]
    subpass = vk.VkSubpassDescription(
        pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS,
        colorAttachmentCount=1,
        pColorAttachments=[color_ref],
        pResolveAttachments=resolve_refs,
        pDepthStencilAttachment=depth_ref,
    )
    stages = (
        vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT
        | vk.VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT
        | vk.VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT
    )
    access = (
        vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT
    )
    # The attachments may still be written by the previous frame, or read by its copy/present.
    into = vk.VkSubpassDependency(
        srcSubpass=vk.VK_SUBPASS_EXTERNAL,
        dstSubpass=0,
        srcStageMask=stages | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
        dstStageMask=stages,
        srcAccessMask=access,
        dstAccessMask=access,
    )
    out = vk.VkSubpassDependency(
        srcSubpass=0,
        dstSubpass=vk.VK_SUBPASS_EXTERNAL,
        srcStageMask=vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
        dstStageMask=vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
        srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT,
    )
    info = vk.VkRenderPassCreateInfo(
        attachmentCount=len(attachments),
        pAttachments=attachments,
        subpassCount=1,
        pSubpasses=[subpass],
        dependencyCount=2,
        pDependencies=[into, out],
    )
    with vk_errors(f"creating render pass {label!r}"):
        handle = vk.vkCreateRenderPass(device.handle, info, None)
    return device.own("render pass", handle, label, vk.vkDestroyRenderPass)


def create_framebuffer(
    device: Device,
    render_pass: DeviceObject,
    views: Sequence[Any],
    width: int,
    height: int,
    label: str,
) -> DeviceObject:
    info = vk.VkFramebufferCreateInfo(
        renderPass=render_pass.handle,
        attachmentCount=len(views),
        pAttachments=views,
        width=width,
        height=height,
        layers=1,
    )
    with vk_errors(f"creating framebuffer {label!r}"):
        handle = vk.vkCreateFramebuffer(device.handle, info, None)
    return device.own("framebuffer", handle, label, vk.vkDestroyFramebuffer)


def record_copy_to_host(cmd: Any, image: Any, buffer: Buffer, width: int, height: int) -> None:
    """Copy a colour image (in TRANSFER_SRC_OPTIMAL) into a host buffer, visible to the host
    once the submission's fence has signalled."""
    region = vk.VkBufferImageCopy(
        bufferOffset=0,
        bufferRowLength=0,
        bufferImageHeight=0,
        imageSubresource=vk.VkImageSubresourceLayers(vk.VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1),
        imageOffset=vk.VkOffset3D(0, 0, 0),
        imageExtent=vk.VkExtent3D(width, height, 1),
    )
    layout = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
    vk.vkCmdCopyImageToBuffer(cmd, image, layout, buffer.handle, 1, [region])
    barrier = vk.VkMemoryBarrier(
        srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT
    )
    stages = (vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT)
    vk.vkCmdPipelineBarrier(cmd, *stages, 0, 1, [barrier], 0, None, 0, None)


def check_samples(device: Device, samples: int) -> None:
    if samples not in _SAMPLE_BITS:
        raise InputError(f"samples must be 1, 2, 4 or 8, got {samples!r}")
    limits = vk.vkGetPhysicalDeviceProperties(device.physical_device).limits
    supported = limits.framebufferColorSampleCounts & limits.framebufferDepthSampleCounts
    if not supported & _SAMPLE_BITS[samples]:
        raise InputError(f"{samples}x MSAA is not supported by {device.info.name!r}")


class _TargetBase(ResourceOwner):
    """Shared bookkeeping: the objects a target owns, destroyed together by ``close()``."""

    def _release(self, objs: Sequence[DeviceObject]) -> None:
        for obj in objs:
            self._drop(obj)

    def _depth_and_msaa(
        self, width: int, height: int, samples: int, label: str
    ) -> tuple[Image, Image | None]:
        """The depth attachment and, with MSAA, the multisampled colour attachment."""
        sample_bit = _SAMPLE_BITS[samples]
        depth = self._keep(
            Image(
                self.device,
                width,
                height,
                self.depth_format,
                vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                vk.VK_IMAGE_ASPECT_DEPTH_BIT,
                samples=sample_bit,
                label=f"{label} depth",
            )
        )
        if samples == 1:
            return depth, None
        msaa = self._keep(
            Image(
                self.device,
                width,
                height,
                self.color_format,
                vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSIENT_ATTACHMENT_BIT,
                vk.VK_IMAGE_ASPECT_COLOR_BIT,
                samples=sample_bit,
                label=f"{label} msaa",
            )
        )
        return depth, msaa


class OffscreenTarget(_TargetBase):
    """Renders into images and reads each frame back as an ``(H, W, 4)`` uint8 array.

    One colour image and readback buffer per frame in flight, so frame N+1 can be recorded while
    frame N is still being copied out.
    """

    color_format = vk.VK_FORMAT_R8G8B8A8_SRGB

    def __init__(
        self,
        device: Device,
        width: int,
        height: int,
        *,
        samples: int = 1,
        frames_in_flight: int = 2,
    ) -> None:
        super().__init__(device)
        for name, value in (("width", width), ("height", height)):
            if not isinstance(value, (int, np.integer)) or value < 1 or value > 16384:
                raise InputError(f"offscreen {name} must be an int in [1, 16384], got {value!r}")
        check_samples(device, samples)
        self.extent = (int(width), int(height))
        self.samples = samples
        self.depth_format = pick_depth_format(device)
        self.render_pass = self._keep(
            create_render_pass(
                device,
                self.color_format,
                self.depth_format,
                samples,
                vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                "offscreen",
            )
        )
        w, h = self.extent
        color_usage = vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
        self._resolved: list[Image] = []
        self._framebuffers: list[DeviceObject] = []
        self._readback: list[Buffer] = []
        color_aspect = vk.VK_IMAGE_ASPECT_COLOR_BIT
        for i in range(frames_in_flight):
            depth, msaa = self._depth_and_msaa(w, h, samples, f"offscreen {i}")
            resolved = self._keep(
                Image(
                    device,
                    w,
                    h,
                    self.color_format,
                    color_usage,
                    color_aspect,
                    label=f"offscreen color {i}",
                )
            )
            views = [msaa.view, depth.view, resolved.view] if msaa else [resolved.view, depth.view]
            self._resolved.append(resolved)
            self._framebuffers.append(
                self._keep(
                    create_framebuffer(device, self.render_pass, views, w, h, f"offscreen {i}")
                )
            )
            self._readback.append(
                self._keep(
                    device.create_buffer(
                        w * h * 4,
                        vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                        label=f"offscreen readback {i}",
                        readback=True,
                    )
                )
            )

    # -- the target protocol -------------------------------------------------------------

    def acquire(self, frame: FrameSync) -> int | None:
        self._check_open()
        return frame.index

    def framebuffer(self, index: int) -> Any:
        return self._framebuffers[index].handle

    def wait_semaphores(self, frame: FrameSync) -> list:
        return []

    def signal_semaphores(self, index: int) -> list:
        return []

    def record_after_pass(self, cmd: Any, index: int) -> None:
        """Copy the finished colour image into this frame's readback buffer."""
        w, h = self.extent
        record_copy_to_host(cmd, self._resolved[index].handle, self._readback[index], w, h)

    def present(self, frame: FrameSync, index: int) -> bool:
        return True

    # -- offscreen only ------------------------------------------------------------------

    def read(self, index: int) -> np.ndarray:
        """The pixels of the frame rendered into slot ``index`` (the caller waited for it)."""
        self._check_open()
        w, h = self.extent
        return self._readback[index].read(np.uint8, w * h * 4).reshape(h, w, 4)


class SwapchainTarget(_TargetBase):
    """A window surface's swapchain; re-created on resize, out-of-date and suboptimal.

    Parameters
    ----------
    device : Device
        Made with the instance extensions the window system needs and ``VK_KHR_swapchain``.
    surface : VkSurfaceKHR
        Owned by this target from now on (destroyed by ``close()``).
    framebuffer_size : callable
        Returns the window's current framebuffer size ``(width, height)``; ``(0, 0)`` while
        minimized.
    present_mode : {"fifo", "mailbox", "immediate"}
        ``"fifo"`` (vsync) is always available; the others fall back to it when unsupported.
    """

    def __init__(
        self,
        device: Device,
        surface: Any,
        framebuffer_size: Callable[[], tuple],
        *,
        present_mode: str = "fifo",
        samples: int = 1,
    ) -> None:
        super().__init__(device)
        modes = {
            "fifo": vk.VK_PRESENT_MODE_FIFO_KHR,
            "mailbox": vk.VK_PRESENT_MODE_MAILBOX_KHR,
            "immediate": vk.VK_PRESENT_MODE_IMMEDIATE_KHR,
        }
        if present_mode not in modes:
            raise InputError(f"present_mode must be one of {list(modes)}, got {present_mode!r}")
        check_samples(device, samples)
        instance = device.instance
        destroy_surface = vk.vkGetInstanceProcAddr(instance, "vkDestroySurfaceKHR")
        # The surface and each swapchain are Device children like everything else, so that
        # Device.close() destroys them in order (swapchain, then surface, before the instance).
        self._surface = self._keep(
            DeviceObject(
                device, surface, "window surface", lambda: destroy_surface(instance, surface, None)
            )
        )
        self._surface.kind = "surface"
        self.surface = surface
        self._fn = {
            name: vk.vkGetInstanceProcAddr(instance, name)
            for name in (
                "vkGetPhysicalDeviceSurfaceSupportKHR",
                "vkGetPhysicalDeviceSurfaceCapabilitiesKHR",
                "vkGetPhysicalDeviceSurfaceFormatsKHR",
                "vkGetPhysicalDeviceSurfacePresentModesKHR",
            )
        }
        self._fn.update(
            {
                name: vk.vkGetDeviceProcAddr(device.handle, name)
                for name in (
                    "vkCreateSwapchainKHR",
                    "vkDestroySwapchainKHR",
                    "vkGetSwapchainImagesKHR",
                    "vkAcquireNextImageKHR",
                    "vkQueuePresentKHR",
                )
            }
        )
        pd = device.physical_device
        if not self._fn["vkGetPhysicalDeviceSurfaceSupportKHR"](pd, device.queue_family, surface):
            self.close()
            raise VkdqsError(f"{device.info.name!r} cannot present to this surface")
        formats = self._fn["vkGetPhysicalDeviceSurfaceFormatsKHR"](pd, surface)
        preferred = [
            (vk.VK_FORMAT_B8G8R8A8_SRGB, vk.VK_COLOR_SPACE_SRGB_NONLINEAR_KHR),
            (vk.VK_FORMAT_R8G8B8A8_SRGB, vk.VK_COLOR_SPACE_SRGB_NONLINEAR_KHR),
        ]
        available = [(f.format, f.colorSpace) for f in formats]
        chosen = next((f for f in preferred if f in available), available[0])
        self.color_format, self._color_space = chosen
        supported = self._fn["vkGetPhysicalDeviceSurfacePresentModesKHR"](pd, surface)
        wanted = modes[present_mode]
        self.present_mode = present_mode if wanted in supported else "fifo"
        self._present_mode = wanted if wanted in supported else vk.VK_PRESENT_MODE_FIFO_KHR
        self.samples = samples
        self.depth_format = pick_depth_format(device)
        self.render_pass = self._keep(
            create_render_pass(
                device,
                self.color_format,
                self.depth_format,
                samples,
                vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                "swapchain",
            )
        )
        self._framebuffer_size = framebuffer_size
        self._swapchain = None
        self._swapchain_obj: DeviceObject | None = None
        self._images: list = []
        self._per_image: list[DeviceObject] = []
        self._render_finished: list = []
        self.extent = (0, 0)
        self.recreations = 0
        self._capture = False
        self._capture_buffer: Buffer | None = None
        self._create_swapchain()

    def _create_swapchain(self) -> bool:
        """(Re)create the swapchain for the window's current size; False while minimized."""
        device = self.device
        vk_device = device.handle
        caps = self._fn["vkGetPhysicalDeviceSurfaceCapabilitiesKHR"](
            device.physical_device, self.surface
        )
        width, height = self._framebuffer_size()
        if width == 0 or height == 0:
            return False  # minimized
        if caps.currentExtent.width != 0xFFFFFFFF:
            width, height = caps.currentExtent.width, caps.currentExtent.height
        width = max(caps.minImageExtent.width, min(caps.maxImageExtent.width, width))
        height = max(caps.minImageExtent.height, min(caps.maxImageExtent.height, height))
        if width == 0 or height == 0:
            return False
        device.wait_idle()
        self._destroy_swapchain_children()
        count = caps.minImageCount + 1
        if caps.maxImageCount:
            count = min(count, caps.maxImageCount)
        info = vk.VkSwapchainCreateInfoKHR(
            surface=self.surface,
            minImageCount=count,
            imageFormat=self.color_format,
            imageColorSpace=self._color_space,
            imageExtent=vk.VkExtent2D(width, height),
            imageArrayLayers=1,
            imageUsage=vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
            imageSharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
            preTransform=caps.currentTransform,
            compositeAlpha=vk.VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR,
            presentMode=self._present_mode,
            clipped=vk.VK_TRUE,
            oldSwapchain=self._swapchain,
        )
        with vk_errors(f"creating a {width}x{height} swapchain"):
            swapchain = self._fn["vkCreateSwapchainKHR"](vk_device, info, None)
        if self._swapchain_obj is not None:
            self._release([self._swapchain_obj])
        self._swapchain = swapchain
        self._swapchain_obj = self._keep(
            device.own(
                "swapchain",
                swapchain,
                f"swapchain {width}x{height}",
                self._fn["vkDestroySwapchainKHR"],
            )
        )
        self._images = list(self._fn["vkGetSwapchainImagesKHR"](vk_device, swapchain))
        self.extent = (width, height)
        color_aspect = vk.VK_IMAGE_ASPECT_COLOR_BIT
        depth, msaa = self._depth_and_msaa(width, height, self.samples, "swapchain")
        self._per_image = [depth] if msaa is None else [depth, msaa]
        self._framebuffers = []
        self._render_finished = []
        for i, image in enumerate(self._images):
            view = create_view(vk_device, image, self.color_format, color_aspect, "swapchain")
            self._per_image.append(
                self._keep(device.own("image view", view, f"swapchain {i}", vk.vkDestroyImageView))
            )
            views = [msaa.view, depth.view, view] if msaa else [view, depth.view]
            fb = self._keep(
                create_framebuffer(device, self.render_pass, views, width, height, f"swapchain {i}")
            )
            self._per_image.append(fb)
            self._framebuffers.append(fb)
            with vk_errors("creating a semaphore"):
                sem = vk.vkCreateSemaphore(vk_device, vk.VkSemaphoreCreateInfo(), None)
            self._per_image.append(
                self._keep(
                    device.own("semaphore", sem, f"render finished {i}", vk.vkDestroySemaphore)
                )
            )
            self._render_finished.append(sem)
        self.images_in_flight: list = [None] * len(self._images)
        self.recreations += 1
        return True

    def _destroy_swapchain_children(self) -> None:
        self._release(self._per_image)
        self._per_image = []

    def _recreate(self) -> bool:
        return self._create_swapchain()

    # -- the target protocol -------------------------------------------------------------

    def acquire(self, frame: FrameSync) -> int | None:
        """Index of the next swapchain image, or None when no frame can be drawn now."""
        self._check_open()
        size = tuple(self._framebuffer_size())
        if 0 in size:
            return None  # minimized: nothing to draw into
        if size != self.extent and not self._recreate():
            return None
        try:
            index = self._fn["vkAcquireNextImageKHR"](
                self.device.handle, self._swapchain, 2**64 - 1, frame.image_available, None
            )
        except vk.VkErrorOutOfDateKhr:
            self._recreate()
            return None
        except vk.VkSuboptimalKhr:
            # The binding raises on SUBOPTIMAL although an image was acquired and the semaphore
            # will be signalled; drain it with an empty submission, then rebuild.
            self._drain(frame.image_available)
            self._recreate()
            return None
        return index

    def _drain(self, semaphore: Any) -> None:
        stage = vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
        submit = vk.VkSubmitInfo(
            waitSemaphoreCount=1, pWaitSemaphores=[semaphore], pWaitDstStageMask=[stage]
        )
        vk.vkQueueSubmit(self.device.queue, 1, [submit], None)
        self.device.wait_idle()

    def framebuffer(self, index: int) -> Any:
        return self._framebuffers[index].handle

    def wait_semaphores(self, frame: FrameSync) -> list:
        return [frame.image_available]

    def signal_semaphores(self, index: int) -> list:
        return [self._render_finished[index]]

    # -- screenshots of the window -------------------------------------------------------

    def request_capture(self) -> None:
        """Copy the next rendered swapchain image into a host buffer (see :meth:`read_capture`)."""
        self._check_open()
        w, h = self.extent
        if self._capture_buffer is None or self._capture_buffer.size != w * h * 4:
            if self._capture_buffer is not None:
                self._release([self._capture_buffer])
            self._capture_buffer = self._keep(
                self.device.create_buffer(
                    w * h * 4,
                    vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                    label="window capture",
                    readback=True,
                )
            )
        self._capture = True

    def state_key(self) -> tuple:
        """What the renderer's recorded command buffers depend on besides the scene."""
        return (self._capture, self.recreations)

    def record_after_pass(self, cmd: Any, index: int) -> None:
        if not self._capture:
            return
        image = self._images[index]
        w, h = self.extent
        subresource = vk.VkImageSubresourceRange(vk.VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1)

        def transition(old: int, new: int, src_access: int, dst_access: int) -> None:
            barrier = vk.VkImageMemoryBarrier(
                srcAccessMask=src_access,
                dstAccessMask=dst_access,
                oldLayout=old,
                newLayout=new,
                srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                image=image,
                subresourceRange=subresource,
            )
            vk.vkCmdPipelineBarrier(
                cmd,
                vk.VK_PIPELINE_STAGE_TRANSFER_BIT
                | vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                0,
                0,
                None,
                0,
                None,
                1,
                [barrier],
            )

        transition(
            vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
            vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
            vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            vk.VK_ACCESS_TRANSFER_READ_BIT,
        )
        record_copy_to_host(cmd, image, self._capture_buffer, w, h)
        transition(
            vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
            vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
            vk.VK_ACCESS_TRANSFER_READ_BIT,
            0,
        )
        self._capture = False  # one frame only; the renderer re-records the next one

    def read_capture(self) -> np.ndarray:
        """The captured frame as ``(H, W, 4)`` uint8 RGBA (after the renderer waited for it)."""
        self._check_open()
        if self._capture_buffer is None:
            raise InputError("read_capture() without request_capture()")
        w, h = self.extent
        img = self._capture_buffer.read(np.uint8, w * h * 4).reshape(h, w, 4)
        if self.color_format in (vk.VK_FORMAT_B8G8R8A8_SRGB, vk.VK_FORMAT_B8G8R8A8_UNORM):
            img = img[..., [2, 1, 0, 3]]
        return np.ascontiguousarray(img)

    def present(self, frame: FrameSync, index: int) -> bool:
        info = vk.VkPresentInfoKHR(
            waitSemaphoreCount=1,
            pWaitSemaphores=[self._render_finished[index]],
            swapchainCount=1,
            pSwapchains=[self._swapchain],
            pImageIndices=[index],
        )
        try:
            self._fn["vkQueuePresentKHR"](self.device.queue, info)
        except (vk.VkErrorOutOfDateKhr, vk.VkSuboptimalKhr):
            self._recreate()
            return False
        return True
