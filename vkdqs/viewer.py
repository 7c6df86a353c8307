"""The windowed viewer: GLFW window, input, camera and frame loop (the only module using glfw).

With no model it shows the embedded default: the candy-wrapper cylinder twisting back and forth
0...180 degrees, LBS on the left and DQS on the right.

Keys: space pause/play, left/right scrub the twist, 1 DQS, 2 LBS, 3 both, W wireframe,
B bone-weight view ([ and ] change the bone), S screenshot PNG, R reset camera, H or F1 help,
Esc quit. Mouse: left-drag orbit, right-drag or shift-drag pan, wheel zoom.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import vulkan as vk

from .device import Device
from .errors import VkdqsError, VulkanError
from .png import write_png
from .renderer import Renderer
from .scenes import CandyWrapperScene
from .targets import SwapchainTarget

HELP = __doc__.split("\n\n", 2)[2]


def _glfw():
    try:
        import glfw
    except ImportError as exc:  # the optional `viewer` extra
        raise VkdqsError("the viewer needs glfw: pip install 'vkdqs[viewer]'") from exc
    return glfw


class Viewer:
    """A window showing a scene, driven by :meth:`step` or :meth:`run`.

    Parameters
    ----------
    size : (width, height)
    present_mode : {"fifo", "mailbox", "immediate"}
        ``"fifo"`` (vsync) by default.
    samples : int
        MSAA samples of the window's framebuffer.
    validation : bool, optional
        As for :class:`~vkdqs.device.Device`.
    period : float
        Seconds for one back-and-forth of the twist animation.
    """

    def __init__(
        self,
        *,
        size: tuple[int, int] = (1280, 720),
        present_mode: str = "fifo",
        samples: int = 4,
        validation: bool | None = None,
        period: float = 4.0,
        title: str = "vkdqs",
    ) -> None:
        glfw = self.glfw = _glfw()
        if not glfw.init():
            raise VkdqsError(
                "GLFW could not open the display (is DISPLAY set?); try `vkdqs render`"
            )
        self.device = self.target = self.renderer = None
        self.window = None
        try:
            if not glfw.vulkan_supported():
                raise VkdqsError("GLFW found no Vulkan loader")
            glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)
            self.window = glfw.create_window(size[0], size[1], title, None, None)
            if not self.window:
                raise VkdqsError("GLFW could not create a window")
            self.device = Device(
                validation=validation,
                instance_extensions=glfw.get_required_instance_extensions(),
                device_extensions=[vk.VK_KHR_SWAPCHAIN_EXTENSION_NAME],
            )
            surface = vk.ffi.new("VkSurfaceKHR*")
            result = glfw.create_window_surface(self.device.instance, self.window, None, surface)
            if result != vk.VK_SUCCESS:
                raise VulkanError(f"glfwCreateWindowSurface returned {result}")
            self.target = SwapchainTarget(
                self.device,
                surface[0],
                lambda: glfw.get_framebuffer_size(self.window),
                present_mode=present_mode,
                samples=samples,
            )
            self.renderer = Renderer(self.device, self.target)
            self.scene = CandyWrapperScene(self.renderer)
        except BaseException:
            self.close()
            raise
        self.title = title
        self.period = period
        self.playing = True
        self.phase = 0.0  # animation time in seconds
        self.frames = 0
        self._frame_times: list[float] = []
        self._last = time.perf_counter()
        self._drag: tuple[str, float, float] | None = None
        self._screenshots = 0
        self.should_close = False
        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_mouse_button_callback(self.window, self._on_button)
        glfw.set_cursor_pos_callback(self.window, self._on_cursor)
        glfw.set_scroll_callback(self.window, self._on_scroll)
        self.scene.set_twist(0.0)

    # -- input ----------------------------------------------------------------------------

    def _on_key(self, window, key, scancode, action, mods) -> None:
        if action not in (self.glfw.PRESS, self.glfw.REPEAT):
            return
        self.handle_key(key, mods)

    def handle_key(self, key: int, mods: int = 0) -> None:
        glfw, scene, renderer = self.glfw, self.scene, self.renderer
        if key == glfw.KEY_ESCAPE:
            self.should_close = True
        elif key == glfw.KEY_SPACE:
            self.playing = not self.playing
        elif key in (glfw.KEY_LEFT, glfw.KEY_RIGHT):
            self.playing = False
            step = -5.0 if key == glfw.KEY_LEFT else 5.0
            scene.set_twist(float(np.clip(scene.twist + step, 0.0, 180.0)))
            self.phase = self.period * math.acos(1.0 - scene.twist / 90.0) / (2.0 * math.pi)
        elif key == glfw.KEY_1:
            scene.show("dqs")
        elif key == glfw.KEY_2:
            scene.show("lbs")
        elif key == glfw.KEY_3:
            scene.show("both")
        elif key == glfw.KEY_W:
            if self.device.info.fill_mode_non_solid:
                renderer.wireframe = not renderer.wireframe
            else:
                print("wireframe: this device lacks fillModeNonSolid")
        elif key == glfw.KEY_B:
            renderer.debug_bone = None if renderer.debug_bone is not None else 1
        elif key in (glfw.KEY_LEFT_BRACKET, glfw.KEY_RIGHT_BRACKET):
            if renderer.debug_bone is not None:
                step = -1 if key == glfw.KEY_LEFT_BRACKET else 1
                renderer.debug_bone = int(np.clip(renderer.debug_bone + step, 0, 1))
        elif key == glfw.KEY_S:
            path = self.save_screenshot()
            print(f"screenshot: {path}")
        elif key == glfw.KEY_R:
            renderer.camera.reset()
        elif key in (glfw.KEY_H, glfw.KEY_F1):
            print(HELP)

    def _on_button(self, window, button, action, mods) -> None:
        glfw = self.glfw
        if action == glfw.RELEASE:
            self._drag = None
            return
        x, y = glfw.get_cursor_pos(window)
        pan = button == glfw.MOUSE_BUTTON_RIGHT or (mods & glfw.MOD_SHIFT)
        self._drag = ("pan" if pan else "orbit", x, y)

    def _on_cursor(self, window, x, y) -> None:
        if self._drag is None:
            return
        mode, x0, y0 = self._drag
        self._drag = (mode, x, y)
        self.drag(mode, x - x0, y - y0)

    def drag(self, mode: str, dx: float, dy: float) -> None:
        """Orbit (radians per 100 px: 1) or pan (by the window's height) by a mouse motion."""
        height = max(self.target.extent[1], 1)
        if mode == "orbit":
            self.renderer.camera.orbit(-dx * 0.01, dy * 0.01)
        else:
            self.renderer.camera.pan(dx / height, dy / height)

    def _on_scroll(self, window, dx, dy) -> None:
        self.renderer.camera.zoom(0.9**dy)

    # -- frames ---------------------------------------------------------------------------

    def minimized(self) -> bool:
        glfw = self.glfw
        w, h = glfw.get_framebuffer_size(self.window)
        return bool(glfw.get_window_attrib(self.window, glfw.ICONIFIED)) or w == 0 or h == 0

    def step(self) -> bool:
        """Process events and draw one frame; False once the window should close."""
        glfw = self.glfw
        glfw.poll_events()
        now = time.perf_counter()
        dt, self._last = now - self._last, now
        if glfw.window_should_close(self.window) or self.should_close:
            return False
        if self.minimized():
            glfw.wait_events_timeout(0.05)
            return True
        if self.playing:
            self.phase += dt
            self.scene.set_twist(90.0 - 90.0 * math.cos(2.0 * math.pi * self.phase / self.period))
        if self.renderer.render() is not None:
            self.frames += 1
            self._frame_times.append(dt)
            if len(self._frame_times) >= 30:
                ms = 1e3 * float(np.median(self._frame_times))
                self._frame_times.clear()
                glfw.set_window_title(
                    self.window,
                    f"{self.title}: {self.scene.label()}: {1e3 / ms:.0f} fps, {ms:.1f} ms",
                )
        return True

    def run(self, max_frames: int | None = None) -> None:
        while self.step():
            if max_frames is not None and self.frames >= max_frames:
                break

    def screenshot(self) -> np.ndarray:
        """Render one frame and return the window's image as ``(H, W, 4)`` uint8 RGBA."""
        self.target.request_capture()
        while self.renderer.render() is None:
            self.glfw.poll_events()
        self.renderer.wait()
        return self.target.read_capture()

    def save_screenshot(self, path: str | Path | None = None) -> Path:
        self._screenshots += 1
        path = Path(path or f"vkdqs-screenshot-{self._screenshots}.png")
        return write_png(path, self.screenshot())

    def close(self) -> None:
        """Destroy everything: renderer, swapchain, surface, device, window. Safe to call twice."""
        for obj in (self.renderer, self.target, self.device):
            if obj is not None:
                obj.close()
        if self.window is not None:
            self.glfw.destroy_window(self.window)
            self.window = None
        self.glfw.terminate()

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
