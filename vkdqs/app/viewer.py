"""The windowed viewer: GLFW window, input, camera and frame loop (the only module using glfw).

With no model it shows the embedded default: the candy-wrapper cylinder twisting back and forth
0...180 degrees, LBS on the left and DQS on the right. With a glTF model (``.gltf``/``.glb``) it
plays the model's first animation, LBS on the left and DQS on the right, framed automatically.
Any set of methods can be shown side by side; a label under each copy and the title name them,
left to right; the top-left corner shows the animation and its time, a floor grid lies under the
copies, and the heat maps (B, and ``--method diff``) get a colour bar.

The keys and the mouse are listed in :data:`HELP` (H in the window); each method's number key
is its registry entry's (:attr:`vkdqs.methods.SkinningMethod.key`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import methods as registry
from ..engine.renderer import Renderer
from ..engine.targets import SwapchainTarget
from ..errors import CapabilityError, InputError, OutputError, VulkanError
from ..gltf import GltfScene, load_gltf
from ..gpu import Device
from ..gpu.calls import vk
from ..images import write_png
from ..methods import DIFF
from .scenes import CandyWrapperScene, CrowdScene, GltfScenePlayer, ViewerScene
from .stills import Decorations

_KEYED = sorted((m for m in registry.shown() if m.key), key=lambda m: m.key or "")
#: The method set each number key shows (glfw key names): each shown method's registry key, then
#: 3 LBS | DQS, 7 all and D the diff.
METHOD_KEYS = {
    **{f"KEY_{m.key}": m.name for m in _KEYED},
    "KEY_3": "both",
    "KEY_7": "all",
    "KEY_D": DIFF,
}
#: What H prints: the keys and the mouse.
HELP = f"""Keys: space pause/play, left/right scrub (twist or animation time), N/P next/previous
animation, +/- playback speed (x2, /2),
{", ".join(f"{m.key} {m.label}" for m in _KEYED)}, 3 both (LBS | DQS), 7 all,
D |DQS - LBS| per vertex (one copy, with a colour bar),
V/shift+V velocity skinning's motion x2, /2,
M/shift+M next/previous method set (each method, both, all), W wireframe, B bone-weight view
([ and ] change the bone), S screenshot PNG, R reset camera, H or F1 help, Esc quit.
Mouse: left-drag orbit, right-drag or shift-drag pan, wheel zoom.
"""
#: Velocity skinning's velocity scales reachable with V and shift+V (doubles or halves).
MOTION_RANGE = (1.0 / 8.0, 8.0)
#: Playback speeds reachable with +/- (each key press doubles or halves).
SPEED_RANGE = (1.0 / 16.0, 16.0)
#: What M (shift+M backwards) cycles through: each method alone, then LBS | DQS, then all.
METHOD_CYCLE = (*(m.name for m in registry.shown()), "both", "all")


def _glfw():
    try:
        import glfw
    except ImportError as exc:  # the optional `viewer` extra
        raise CapabilityError("the viewer needs glfw: pip install 'vkdqs[viewer]'") from exc
    return glfw


def _utf8(text: str) -> str:
    """``text`` encodable as UTF-8, which GLFW's titles need: lone surrogates (the escaped bytes
    of a non-UTF-8 file name, ``os.fsdecode``'s surrogateescape, or ``"\\ud800"`` in a glTF
    name) become U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class Viewer:
    """A window showing a scene, driven by :meth:`step` or :meth:`run`.

    Parameters
    ----------
    model : str, Path, GltfScene or None
        A glTF file (or a loaded one) to play; None for the candy-wrapper cylinder. The file is
        loaded before the window opens, so a bad file raises :class:`~vkdqs.gltf.GltfError`
        without one.
    methods : str
        What to show first (see :func:`~vkdqs.methods.parse_methods`: ``"both"``, ``"all"``,
        ``"lbs,dqs,cor"``, ...). For a model whose joint matrices DQS cannot take, the viewer
        says so and shows LBS.
    animation : int, str or None
        The model's animation to play first (index or name); None for its rest pose.
    size : (width, height)
    present_mode : {"fifo", "mailbox", "immediate"}
        ``"fifo"`` (vsync) by default.
    samples : int
        MSAA samples of the window's framebuffer.
    validation : bool, optional
        As for :class:`~vkdqs.gpu.Device`.
    period : float
        Seconds for one back-and-forth of the twist animation.
    crowd : int, optional
        Show a grid of this many copies playing out of phase instead (a
        :class:`~vkdqs.app.scenes.CrowdScene`: the model's first skinned mesh and animation, or
        candy wrappers), drawn as crowds.

    Attributes
    ----------
    scene : CandyWrapperScene, GltfScenePlayer or CrowdScene
        Follows :class:`~vkdqs.app.scenes.ViewerScene`.
    playing : bool
    speed : float
        Playback speed (1 = real time).
    window_title : str
        The title last set: the scene's label names the copies shown, left to right.
    """

    def __init__(
        self,
        model: str | Path | GltfScene | None = None,
        *,
        methods: str = "both",
        animation: int | str | None = 0,
        size: tuple[int, int] = (1280, 720),
        present_mode: str = "fifo",
        samples: int = 4,
        validation: bool | None = None,
        period: float = 4.0,
        title: str = "vkdqs",
        crowd: int | None = None,
    ) -> None:
        gltf = model if isinstance(model, GltfScene) or model is None else load_gltf(model)
        self._inputs = () if gltf is None else (gltf.path,)  # a screenshot must not replace it
        if gltf is not None and title == "vkdqs":
            title = f"vkdqs: {gltf.path.name}"
        title = _utf8(title)
        glfw = self.glfw = _glfw()
        # GLFW's reason goes into our one-line error, not into a warning printed before it.
        reporting, glfw.ERROR_REPORTING = glfw.ERROR_REPORTING, "ignore"
        try:
            ok = glfw.init()
        finally:
            glfw.ERROR_REPORTING = reporting
        if not ok:
            _, why = glfw.get_error() if hasattr(glfw, "get_error") else (0, None)  # GLFW 3.3+
            why = why.decode("utf-8", "replace") if why else "is DISPLAY set?"
            raise CapabilityError(f"GLFW could not open the display ({why}); try `vkdqs render`")
        self.device = self.target = self.renderer = None
        self.window = None
        #: the floor grid and labels (crowds: labels only, their copies stand in a grid)
        self.decorations: Decorations | None = None
        try:
            if not glfw.vulkan_supported():
                raise CapabilityError("GLFW found no Vulkan loader")
            glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)
            self.window = glfw.create_window(size[0], size[1], title, None, None)
            if not self.window:
                raise CapabilityError("GLFW could not create a window")
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
            self.scene: ViewerScene
            if crowd is not None:
                # a grid of `crowd` copies walking out of phase, one instanced draw per method
                self.scene = (
                    CrowdScene.candy_wrapper(self.renderer, crowd, methods=methods)
                    if gltf is None
                    else CrowdScene.from_gltf(
                        self.renderer, gltf, crowd, methods=methods, animation=animation
                    )
                )
            elif gltf is None:
                self.scene = CandyWrapperScene(self.renderer, methods=methods, period=period)
            else:
                # LBS takes any affine joint matrices, so start with it and then switch.
                self.scene = GltfScenePlayer(
                    self.renderer, gltf, methods="lbs", animation=animation
                )
                self.show(methods)
                self.scene.frame_camera()
            # crowds: a label under each grid (no floor grid: the copies stand in their own)
            self.decorations = Decorations(self.scene, grid=crowd is None)
        except BaseException:
            self.close()
            raise
        self.title = title
        self.playing = True
        self.speed = 1.0
        self.frames = 0
        self._frame_times: list[float] = []
        self._last = time.perf_counter()
        self._drag: tuple[str, float, float] | None = None
        self._screenshots = 0
        self.should_close = False
        self._method_keys = {getattr(glfw, k): m for k, m in METHOD_KEYS.items()}
        self.set_title()
        self.say_left_out()
        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_mouse_button_callback(self.window, self._on_button)
        glfw.set_cursor_pos_callback(self.window, self._on_cursor)
        glfw.set_scroll_callback(self.window, self._on_scroll)
        self.scene.update(0.0)

    # -- input ----------------------------------------------------------------------------

    def _on_key(self, window: Any, key: int, scancode: int, action: int, mods: int) -> None:
        if action not in (self.glfw.PRESS, self.glfw.REPEAT):
            return
        self.handle_key(key, mods)

    def handle_key(self, key: int, mods: int = 0) -> None:
        """Act on one key press (:data:`HELP` lists them); ``mods`` the GLFW modifier bits."""
        glfw, scene, renderer = self.glfw, self.scene, self.renderer
        if key == glfw.KEY_ESCAPE:
            self.should_close = True
        elif key == glfw.KEY_SPACE:
            self.playing = not self.playing
        elif key in (glfw.KEY_LEFT, glfw.KEY_RIGHT):
            self.playing = False
            scene.scrub(-1 if key == glfw.KEY_LEFT else 1)
        elif key in (glfw.KEY_N, glfw.KEY_P):
            if scene.step_animation(1 if key == glfw.KEY_N else -1):
                print(f"animation: {scene.label()}")
        elif key in (glfw.KEY_EQUAL, glfw.KEY_KP_ADD, glfw.KEY_MINUS, glfw.KEY_KP_SUBTRACT):
            factor = 2.0 if key in (glfw.KEY_EQUAL, glfw.KEY_KP_ADD) else 0.5
            self.speed = float(np.clip(self.speed * factor, *SPEED_RANGE))
            print(f"speed: x{self.speed:g}")
        elif key in self._method_keys:
            self.show(self._method_keys[key])
        elif key == glfw.KEY_V and hasattr(scene, "motion_scale"):
            factor = 0.5 if mods & glfw.MOD_SHIFT else 2.0
            scene.motion_scale = float(np.clip(scene.motion_scale * factor, *MOTION_RANGE))
            print(f"motion: x{scene.motion_scale:g}")
            scene.update(0.0)  # re-posed with the new scale
        elif key == glfw.KEY_M:
            self.cycle_methods(-1 if mods & glfw.MOD_SHIFT else 1)
        elif key == glfw.KEY_W:
            if self.device.info.fill_mode_non_solid:
                renderer.wireframe = not renderer.wireframe
            else:
                print("wireframe: this device lacks fillModeNonSolid")
        elif key == glfw.KEY_B:
            renderer.debug_bone = None if renderer.debug_bone is not None else 1
            if renderer.debug_bone is not None:
                renderer.debug_bone = min(renderer.debug_bone, max(scene.bone_count - 1, 0))
        elif key in (glfw.KEY_LEFT_BRACKET, glfw.KEY_RIGHT_BRACKET):
            if renderer.debug_bone is not None:
                step = -1 if key == glfw.KEY_LEFT_BRACKET else 1
                top = max(scene.bone_count - 1, 0)
                renderer.debug_bone = int(np.clip(renderer.debug_bone + step, 0, top))
        elif key == glfw.KEY_S:
            try:
                path = self.save_screenshot()
            except OutputError as exc:  # e.g. a read-only folder: say so, keep viewing
                print(f"screenshot not saved: {exc}")
            else:
                print(f"screenshot: {path}")
        elif key == glfw.KEY_R:
            renderer.camera.reset()
        elif key in (glfw.KEY_H, glfw.KEY_F1):
            print(HELP)

    def show(self, methods: str) -> bool:
        """Show ``methods`` if the scene can; otherwise print why and keep what was shown.

        The camera frames the copies anew when their number changes, and the title names them.
        """
        before = len(self.scene.shown_methods)
        try:
            self.scene.show(methods)
        except InputError as exc:  # e.g. DQS and joint matrices with scale
            print(f"cannot show {methods.upper()}: {exc}")
            return False
        if len(self.scene.shown_methods) != before:
            self.scene.frame_camera()
        if hasattr(self, "title"):  # not while __init__ shows the first methods (it says them)
            self.set_title()
            self.say_left_out()
        return True

    def say_left_out(self) -> None:
        """Print the methods ``all`` left out of what is shown, with why (as ``vkdqs render``
        does): those the model's skins refuse, and in crowds the mushes."""
        for method, why in self.scene.left_out.items():
            print(f"left out {method}: {why}")

    def set_title(self, suffix: str = "") -> None:
        """Title: the viewer's title, the scene's label (the copies, left to right), ``suffix``."""
        self.window_title = _utf8(f"{self.title}: {self.scene.label()}{suffix}")
        self.glfw.set_window_title(self.window, self.window_title)

    def cycle_methods(self, direction: int = 1) -> str:
        """Show the next (+1) or previous (-1) set of :data:`METHOD_CYCLE`, skipping those the
        scene cannot show; returns what is shown."""
        current = self.scene.methods
        shown = [registry.parse_methods(m) for m in METHOD_CYCLE]
        now = registry.parse_methods(current)
        start = shown.index(now) if now in shown else (-1 if direction > 0 else len(shown))
        for k in range(1, len(METHOD_CYCLE) + 1):
            candidate = METHOD_CYCLE[(start + direction * k) % len(METHOD_CYCLE)]
            if candidate == current or self.show(candidate):
                break
        print(f"showing: {self.scene.label()}")
        return self.scene.methods

    def _on_button(self, window: Any, button: int, action: int, mods: int) -> None:
        glfw = self.glfw
        if action == glfw.RELEASE:
            self._drag = None
            return
        x, y = glfw.get_cursor_pos(window)
        pan = button == glfw.MOUSE_BUTTON_RIGHT or (mods & glfw.MOD_SHIFT)
        self._drag = ("pan" if pan else "orbit", x, y)

    def _on_cursor(self, window: Any, x: float, y: float) -> None:
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

    def _on_scroll(self, window: Any, dx: float, dy: float) -> None:
        self.renderer.camera.zoom(0.9**dy)

    # -- frames ---------------------------------------------------------------------------

    def minimized(self) -> bool:
        """Whether the window is iconified or has no drawable area (nothing is drawn then)."""
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
            self.scene.update(dt * self.speed)
        self._decorate()
        if self.renderer.render() is not None:
            self.frames += 1
            self._frame_times.append(dt)
            if len(self._frame_times) >= 30:
                ms = 1e3 * float(np.median(self._frame_times))
                self._frame_times.clear()
                speed = "" if self.speed == 1.0 else f", x{self.speed:g}"
                fps = f"{1e3 / ms:.0f} fps, {ms:.1f} ms"
                self.set_title(f"{speed}: {fps}")
        return True

    def run(self, max_frames: int | None = None) -> None:
        """Draw frames until the window closes (or after ``max_frames`` of them)."""
        while self.step():
            if max_frames is not None and self.frames >= max_frames:
                break

    def _decorate(self) -> None:
        """Bring the grid and labels up to date (unless the renderer was swapped for another)."""
        if self.decorations is not None and self.decorations.renderer is self.renderer:
            self.decorations.update()

    def screenshot(self) -> np.ndarray:
        """Render one frame and return the window's image as ``(H, W, 4)`` uint8 RGBA."""
        self.target.request_capture()
        self._decorate()
        while self.renderer.render() is None:
            self.glfw.poll_events()
        self.renderer.wait()
        return self.target.read_capture()

    def save_screenshot(self, path: str | Path | None = None) -> Path:
        """Write what the window shows to ``path`` as PNG (default:
        ``vkdqs-screenshot-<n>.png`` in the current folder), as vkdqs writes every file
        (:mod:`vkdqs.files`: never through a link, never over the model shown); returns it."""
        self._screenshots += 1
        path = Path(path or f"vkdqs-screenshot-{self._screenshots}.png")
        return write_png(path, self.screenshot(), inputs=self._inputs)

    def close(self) -> None:
        """Destroy everything: renderer, swapchain, surface, device, window. Safe to call twice."""
        close_scene = getattr(getattr(self, "scene", None), "close", None)
        if close_scene is not None and self.device is not None and not self.device.closed:
            close_scene()  # the diff copy's skinners
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
