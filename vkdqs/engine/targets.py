"""Render targets: where the renderer's frames go. One protocol, two implementations.

* :class:`OffscreenTarget`: colour + depth images; every frame is copied into a host buffer and
  :meth:`OffscreenTarget.read` returns it as an ``(H, W, 4)`` uint8 numpy array (RGBA, sRGB).
* :class:`SwapchainTarget`: a ``VkSurfaceKHR`` (e.g. from ``glfw.create_window_surface``) and its
  swapchain, re-created on resize, ``VK_ERROR_OUT_OF_DATE_KHR``/``VK_SUBOPTIMAL_KHR``, and
  skipped while the window is minimized (0x0).

The renderer talks to a target only through :class:`RenderTarget`; it does not know which kind
it draws into.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from .. import shader_interface as si
from ..errors import InputError
from ..gpu import (
    Buffer,
    Device,
    Framebuffer,
    Image,
    RenderPass,
    RenderPassDesc,
    ResourceOwner,
    Semaphore,
    Surface,
    Swapchain,
    SwapchainDesc,
    memory_barrier,
    pick_depth_format,
)
from ..gpu.calls import vk
from ..gpu.swapchain import image_views


class FrameSync(Protocol):
    """What a target needs from one of the renderer's frames in flight."""

    index: int  # the frame slot
    image_available: Any  # VkSemaphore the acquire signals


class RenderTarget(Protocol):
    """The interface the renderer draws through; Offscreen- and SwapchainTarget implement it."""

    device: Device
    render_pass: RenderPass
    extent: tuple[int, int]
    samples: int
    #: ``read(index)`` returns the frame drawn into framebuffer ``index`` (offscreen targets).
    readable: bool

    def acquire(self, frame: FrameSync) -> int | None:
        """Index of the framebuffer to draw into, or None when no frame can be drawn now."""

    def framebuffer(self, index: int) -> Any:
        """The ``VkFramebuffer`` over image ``index`` (as :meth:`acquire` returned it), on
        :attr:`render_pass`: the renderer begins the frame's render pass on it."""

    def frame_using(self, index: int, frame: FrameSync) -> FrameSync | None:
        """Record that ``frame`` now draws into framebuffer ``index``; return the frame that
        used it before (the renderer waits for that one), if another."""

    def wait_semaphores(self, frame: FrameSync) -> list:
        """The semaphores the frame's submission waits on before it writes colour (e.g. the one
        :meth:`acquire` had signalled); empty when there is nothing to wait for."""

    def signal_semaphores(self, index: int) -> list:
        """The semaphores the frame's submission signals when it has drawn into image
        ``index`` (what :meth:`present` waits on); empty when nothing waits for them."""

    def record_after_pass(self, cmd: Any, index: int) -> None:
        """Commands after the render pass (e.g. copy the image out)."""

    def present(self, frame: FrameSync, index: int) -> bool:
        """Hand on image ``index`` once the frame is submitted; False when it could not be
        shown (the renderer goes on to the next frame either way)."""

    def state_key(self) -> tuple:
        """What recorded command buffers depend on besides the scene (changes force a
        re-record)."""

    def read(self, index: int) -> np.ndarray:
        """The frame drawn into framebuffer ``index`` as ``(H, W, 4)`` uint8 RGBA, after the
        renderer waited for it; targets that are not :attr:`readable` raise InputError."""

    @property
    def closed(self) -> bool:
        """Whether the target (or its Device) is closed: the renderer then refuses to draw."""

    @property
    def lock(self) -> Any:
        """Held while a frame is drawn into the target (one renderer at a time)."""


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
    stages = (vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT)
    memory_barrier(cmd, *stages, vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_ACCESS_HOST_READ_BIT)


def _record_layout_change(cmd: Any, image: Any, old: int, new: int, src: int, dst: int) -> None:
    """A colour image's layout transition around a transfer."""
    barrier = vk.VkImageMemoryBarrier(
        srcAccessMask=src,
        dstAccessMask=dst,
        oldLayout=old,
        newLayout=new,
        srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
        dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
        image=image,
        subresourceRange=vk.VkImageSubresourceRange(vk.VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1),
    )
    src_stages = (
        vk.VK_PIPELINE_STAGE_TRANSFER_BIT | vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT
    )
    vk.vkCmdPipelineBarrier(
        cmd, src_stages, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, None, 0, None, 1, [barrier]
    )


def check_samples(device: Device, samples: object) -> int:
    """``samples`` as an int if the device renders with that many, else InputError."""
    if isinstance(samples, bool) or samples not in si.SAMPLE_COUNTS:
        raise InputError(f"samples must be 1, 2, 4 or 8, got {samples!r}")
    assert isinstance(samples, int)
    if not device.info.framebuffer_sample_counts & si.sample_bit(samples):
        raise InputError(f"{samples}x MSAA is not supported by {device.info.name!r}")
    return samples


class _TargetBase(ResourceOwner):
    """What both targets share: a render pass, depth (+ MSAA) attachments, framebuffers."""

    color_format: int
    readable = False

    def _make_render_pass(self, final_layout: int, label: str) -> None:
        self.depth_format = pick_depth_format(self.device)
        desc = RenderPassDesc(self.color_format, self.depth_format, self.samples, final_layout)
        self.render_pass = self.own(RenderPass(self.device, desc, label=label))

    def _framebuffer_over(self, color_view: Any, w: int, h: int, label: str) -> Framebuffer:
        """Depth (and MSAA colour) attachments of their own plus a framebuffer over them and
        ``color_view`` (the single-sample image the frame ends in)."""
        dev, samples = self.device, self.samples
        depth = self.own(
            Image(
                dev,
                w,
                h,
                self.depth_format,
                vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                vk.VK_IMAGE_ASPECT_DEPTH_BIT,
                samples=si.sample_bit(samples),
                label=f"{label} depth",
            )
        )
        views = [color_view, depth.view]
        if samples > 1:
            usage = (
                vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSIENT_ATTACHMENT_BIT
            )
            msaa = self.own(
                Image(
                    dev,
                    w,
                    h,
                    self.color_format,
                    usage,
                    vk.VK_IMAGE_ASPECT_COLOR_BIT,
                    samples=si.sample_bit(samples),
                    label=f"{label} msaa",
                )
            )
            views = [msaa.view, depth.view, color_view]
        return self.own(Framebuffer(dev, self.render_pass, views, w, h, label=label))

    def read(self, index: int) -> np.ndarray:
        raise InputError(
            f"{type(self).__name__} cannot be read back; render into an OffscreenTarget"
        )


class OffscreenTarget(_TargetBase):
    """Renders into images and reads each frame back as an ``(H, W, 4)`` uint8 array.

    One colour image and readback buffer per frame in flight, so frame N+1 can be recorded while
    frame N is still being copied out.
    """

    color_format = int(si.OFFSCREEN_COLOR_FORMAT)
    readable = True

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
            ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            if not ok or value < 1 or value > 16384:
                raise InputError(f"offscreen {name} must be an int in [1, 16384], got {value!r}")
        self.samples = check_samples(device, samples)
        self.extent = (int(width), int(height))
        self._make_render_pass(vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, "offscreen")
        w, h = self.extent
        usage = vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
        aspect = vk.VK_IMAGE_ASPECT_COLOR_BIT
        self._resolved: list[Image] = []
        self._framebuffers: list[Framebuffer] = []
        self._readback: list[Buffer] = []
        for i in range(frames_in_flight):
            color = self.own(
                Image(device, w, h, self.color_format, usage, aspect, label=f"offscreen color {i}")
            )
            self._resolved.append(color)
            self._framebuffers.append(self._framebuffer_over(color.view, w, h, f"offscreen {i}"))
            self._readback.append(
                self.own(
                    Buffer(
                        device,
                        w * h * 4,
                        vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                        label=f"offscreen readback {i}",
                        memory="readback",
                    )
                )
            )

    # -- the target protocol -------------------------------------------------------------

    def acquire(self, frame: FrameSync) -> int | None:
        """Framebuffer ``frame.index``: each frame slot has its own image, always free. Raises
        InputError when the renderer has more frames in flight than this target has images."""
        self._check_open()
        if frame.index >= len(self._framebuffers):
            raise InputError(
                f"the renderer has more frames in flight than this target has images "
                f"({len(self._framebuffers)}); make both with the same frames_in_flight"
            )
        return frame.index

    def framebuffer(self, index: int) -> Any:
        """The ``VkFramebuffer`` over colour image ``index`` and its depth (and MSAA) images."""
        return self._framebuffers[index].handle

    def frame_using(self, index: int, frame: FrameSync) -> FrameSync | None:
        """None: framebuffer ``index`` only serves frame slot ``index``, whose fence the
        renderer has already waited for."""
        return None  # framebuffer i is only ever used by frame slot i

    def wait_semaphores(self, frame: FrameSync) -> list:
        """No semaphores: no image is acquired from a presentation engine."""
        return []

    def signal_semaphores(self, index: int) -> list:
        """No semaphores: nothing is presented; the frame's fence says when to :meth:`read`."""
        return []

    def record_after_pass(self, cmd: Any, index: int) -> None:
        """Copy the finished colour image into this frame's readback buffer."""
        w, h = self.extent
        record_copy_to_host(cmd, self._resolved[index].handle, self._readback[index], w, h)

    def present(self, frame: FrameSync, index: int) -> bool:
        """Nothing to present (the frame stays for :meth:`read`); always True."""
        return True

    def state_key(self) -> tuple:
        """Empty: the commands this target adds to a frame never change."""
        return ()

    def read(self, index: int) -> np.ndarray:
        """The pixels of the frame rendered into slot ``index`` (the caller waited for it)."""
        self._check_open()
        w, h = self.extent
        return self._readback[index].read(np.uint8, w * h * 4).reshape(h, w, 4)


_PRESENT_MODES = {
    "fifo": vk.VK_PRESENT_MODE_FIFO_KHR,
    "mailbox": vk.VK_PRESENT_MODE_MAILBOX_KHR,
    "immediate": vk.VK_PRESENT_MODE_IMMEDIATE_KHR,
}


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
        if present_mode not in _PRESENT_MODES:
            raise InputError(
                f"present_mode must be one of {list(_PRESENT_MODES)}, got {present_mode!r}"
            )
        self.samples = check_samples(device, samples)
        # The surface and each swapchain are Device children like everything else, so that
        # Device.close() destroys them in order (swapchain, then surface, before the instance).
        self._surface = self.own(Surface(device, surface))
        self.surface = surface
        available = self._surface.formats()
        preferred = [
            (int(f), vk.VK_COLOR_SPACE_SRGB_NONLINEAR_KHR) for f in si.SWAPCHAIN_COLOR_FORMATS
        ]
        self.color_format, self._color_space = next(
            (f for f in preferred if f in available), available[0]
        )
        wanted = _PRESENT_MODES[present_mode]
        supported = wanted in self._surface.present_modes()
        self.present_mode = present_mode if supported else "fifo"
        self._present_mode = wanted if supported else vk.VK_PRESENT_MODE_FIFO_KHR
        self._make_render_pass(vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, "swapchain")
        self._framebuffer_size = framebuffer_size
        self._swapchain: Swapchain | None = None
        self._per_image: list = []
        self._framebuffers: list[Framebuffer] = []
        self._render_finished: list[Semaphore] = []
        self.images_in_flight: list[FrameSync | None] = []
        self.extent = (0, 0)
        self.recreations = 0
        self._capture = False
        self._capture_buffer: Buffer | None = None
        #: the size of the last captured frame (read_capture reads that many pixels)
        self._capture_extent: tuple[int, int] | None = None
        self._create_swapchain()

    def _wanted_extent(self) -> tuple[int, int] | None:
        """The swapchain size for the window now, or None while it is minimized."""
        width, height = self._framebuffer_size()
        if width == 0 or height == 0:
            return None
        caps = self._surface.capabilities()
        if caps.currentExtent.width != 0xFFFFFFFF:
            width, height = caps.currentExtent.width, caps.currentExtent.height
        width = max(caps.minImageExtent.width, min(caps.maxImageExtent.width, width))
        height = max(caps.minImageExtent.height, min(caps.maxImageExtent.height, height))
        return None if width == 0 or height == 0 else (width, height)

    def _create_swapchain(self) -> bool:
        """(Re)create the swapchain for the window's current size; False while minimized."""
        #: the window's framebuffer size the swapchain was made for (its extent may differ:
        #: clamped to the surface's limits), so acquire() rebuilds only when the window changed
        self._made_for = tuple(self._framebuffer_size())
        extent = self._wanted_extent()
        if extent is None:
            return False
        device = self.device
        device.wait_idle()
        for obj in self._per_image:
            self.release(obj)
        desc = SwapchainDesc(*extent, self.color_format, self._color_space, self._present_mode)
        old = self._swapchain
        self._swapchain = self.own(Swapchain(device, self._surface, desc, old))
        if old is not None:
            self.release(old)
        self.extent = extent
        self._create_per_image()
        self.recreations += 1
        return True

    def _create_per_image(self) -> None:
        """A view, framebuffer (with depth/MSAA) and render-finished semaphore per image."""
        assert self._swapchain is not None
        w, h = self.extent
        first = len(self._objects)
        views = [self.own(v) for v in image_views(self.device, self._swapchain)]
        self._framebuffers = [
            self._framebuffer_over(v.handle, w, h, f"swapchain {i}") for i, v in enumerate(views)
        ]
        self._render_finished = [
            self.own(Semaphore(self.device, label=f"render finished {i}"))
            for i in range(len(views))
        ]
        self._per_image = self._objects[first:]
        self.images_in_flight = [None] * len(views)

    # -- the target protocol -------------------------------------------------------------

    def acquire(self, frame: FrameSync) -> int | None:
        """Index of the next swapchain image, or None when no frame can be drawn now."""
        self._check_open()
        size = tuple(self._framebuffer_size())
        if 0 in size:
            return None  # minimized: nothing to draw into
        if size != self._made_for and not self._create_swapchain():
            return None
        assert self._swapchain is not None
        try:
            return self._swapchain.acquire(frame.image_available)
        except vk.VkErrorOutOfDateKhr:
            self._create_swapchain()
            return None
        except vk.VkSuboptimalKhr:
            # The binding raises on SUBOPTIMAL although an image was acquired and the semaphore
            # will be signalled; drain it with an empty submission, then rebuild.
            self._drain(frame.image_available)
            self._create_swapchain()
            return None

    def _drain(self, semaphore: Any) -> None:
        stage = vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
        submit = vk.VkSubmitInfo(
            waitSemaphoreCount=1, pWaitSemaphores=[semaphore], pWaitDstStageMask=[stage]
        )
        self.device.submit([submit], None, "draining a suboptimal acquire")
        self.device.wait_idle()

    def framebuffer(self, index: int) -> Any:
        """The ``VkFramebuffer`` over swapchain image ``index`` (made again with each
        swapchain)."""
        return self._framebuffers[index].handle

    def frame_using(self, index: int, frame: FrameSync) -> FrameSync | None:
        """Record that ``frame`` draws into image ``index`` now; return the frame that drew
        into it last if that is another one (the swapchain may hand out an image whose
        frame is still in flight: the renderer waits for that frame first)."""
        other, self.images_in_flight[index] = self.images_in_flight[index], frame
        return other if other is not frame else None

    def wait_semaphores(self, frame: FrameSync) -> list:
        """``frame.image_available``, which the swapchain signals once the image acquired by
        :meth:`acquire` may be drawn into."""
        return [frame.image_available]

    def signal_semaphores(self, index: int) -> list:
        """Image ``index``'s render-finished semaphore, which :meth:`present` waits on."""
        return [self._render_finished[index].handle]

    def present(self, frame: FrameSync, index: int) -> bool:
        """Queue image ``index`` for presentation once its frame has finished drawing; False
        when the swapchain was out of date or suboptimal and has been made again."""
        assert self._swapchain is not None
        try:
            self._swapchain.present(index, self._render_finished[index].handle)
        except (vk.VkErrorOutOfDateKhr, vk.VkSuboptimalKhr):
            self._create_swapchain()
            return False
        return True

    def state_key(self) -> tuple:
        """(capture pending, swapchain re-creations): a capture adds a copy to the next frame's
        commands, and a new swapchain brings new framebuffers."""
        return (self._capture, self.recreations)

    # -- screenshots of the window -------------------------------------------------------

    def request_capture(self) -> None:
        """Copy the next rendered swapchain image into a host buffer (see :meth:`read_capture`)."""
        self._check_open()
        self._capture = True

    def _capture_buffer_for(self, w: int, h: int) -> Buffer:
        """A host buffer for a ``w`` x ``h`` capture: sized when the copy is recorded, so a
        swapchain rebuilt (the window resized) between the request and the frame is captured
        whole, never copied past the buffer's end."""
        if self._capture_buffer is None or self._capture_buffer.size < w * h * 4:
            if self._capture_buffer is not None:
                self.device.wait_idle()  # an earlier capture's frame may still write it
                self.release(self._capture_buffer)
            usage = vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            self._capture_buffer = self.own(
                Buffer(self.device, w * h * 4, usage, label="window capture", memory="readback")
            )
        return self._capture_buffer

    def record_after_pass(self, cmd: Any, index: int) -> None:
        """After :meth:`request_capture`, copy image ``index`` into the capture buffer (out of
        PRESENT_SRC and back), for the next frame only; otherwise nothing."""
        if not self._capture:
            return
        assert self._swapchain is not None
        w, h = self.extent
        buffer = self._capture_buffer_for(w, h)
        self._capture_extent = (w, h)
        image = self._swapchain.images[index]
        present, src = vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
        read = vk.VK_ACCESS_TRANSFER_READ_BIT
        _record_layout_change(
            cmd, image, present, src, vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, read
        )
        record_copy_to_host(cmd, image, buffer, w, h)
        _record_layout_change(cmd, image, src, present, read, 0)
        self._capture = False  # one frame only; the renderer re-records the next one

    def read_capture(self) -> np.ndarray:
        """The captured frame as ``(H, W, 4)`` uint8 RGBA (after the renderer waited for it)."""
        self._check_open()
        if self._capture_buffer is None or self._capture_extent is None:
            raise InputError("read_capture() before a frame was captured (request_capture())")
        w, h = self._capture_extent
        img = self._capture_buffer.read(np.uint8, w * h * 4).reshape(h, w, 4)
        if self.color_format in (vk.VK_FORMAT_B8G8R8A8_SRGB, vk.VK_FORMAT_B8G8R8A8_UNORM):
            img = img[..., [2, 1, 0, 3]]
        return np.ascontiguousarray(img)
