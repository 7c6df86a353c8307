"""The window path under a virtual X server (Xvfb), which the tests start themselves.

With VKDQS_REQUIRE_DEVICE=1 (CI) a missing Xvfb fails instead of skipping.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import validation_available
from .gltf_fixtures import make_rig


def test_window_lifecycle(xvfb):
    from vkdqs.app.overlay import text_px
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.app.stills import Decorations
    from vkdqs.app.viewer import Viewer
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    viewer = Viewer(size=(480, 360), samples=1, validation=validation_available())
    glfw = viewer.glfw
    try:
        viewer.run(max_frames=120)
        assert viewer.frames == 120
        assert viewer.target.extent == (480, 360)

        for size in ((640, 400), (320, 500)):
            glfw.set_window_size(viewer.window, *size)
            for _ in range(10):
                viewer.step()
            assert viewer.target.extent == size
        assert viewer.target.recreations == 3

        # Minimize and restore. Without a window manager X11 may ignore iconify, so the
        # zero-sized framebuffer of a minimized window is also simulated at the target.
        glfw.iconify_window(viewer.window)
        for _ in range(5):
            viewer.step()
        glfw.restore_window(viewer.window)
        real_size = viewer.target._framebuffer_size
        viewer.target._framebuffer_size = lambda: (0, 0)
        assert viewer.renderer.render() is None
        assert viewer.renderer.render() is None
        viewer.target._framebuffer_size = real_size
        frames = viewer.frames
        for _ in range(5):
            viewer.step()
        assert viewer.frames == frames + 5

        # keys drive the scene
        viewer.handle_key(glfw.KEY_SPACE)
        assert not viewer.playing
        viewer.handle_key(glfw.KEY_2)
        assert viewer.scene.methods == "lbs"
        viewer.handle_key(glfw.KEY_3)
        viewer.handle_key(glfw.KEY_RIGHT)
        viewer.drag("orbit", 30.0, 10.0)

        # The window's pixels equal an offscreen render of the same frame, floor grid and
        # labels included.
        viewer.scene.set_twist(150.0)
        shot = viewer.screenshot()
        w, h = viewer.target.extent
        assert shot.shape == (h, w, 4)
        device = viewer.device
        with OffscreenTarget(device, w, h) as target, Renderer(device, target) as renderer:
            scene = CandyWrapperScene(renderer)
            scene.set_twist(150.0)
            renderer.camera = viewer.renderer.camera
            Decorations(scene).update()
            offscreen = renderer.render_image()
            renderer.set_overlay(None)
            renderer.instances[-1].visible = False  # the grid
            bare = renderer.render_image()
        diff = np.abs(shot[..., :3].astype(int) - offscreen[..., :3].astype(int))
        assert diff.max() <= 1, f"window and offscreen differ by up to {diff.max()}"
        assert len(np.unique(shot[..., 0])) > 10  # a real picture, not a cleared frame
        # the labels and the grid are in the window's frame: the caption's corner and the two
        # copies' labels (white text) and grid lines below the copies
        changed = np.abs(shot[..., :3].astype(int) - bare[..., :3].astype(int)).max(axis=2) > 40
        px = text_px(h)
        assert changed[: 2 * px, : w // 2].sum() > 50, "no caption in the top-left corner"
        assert (shot[: 2 * px, : w // 2, :3].min(axis=2) > 200).sum() > 20  # white text
        assert changed[h // 2 :].sum() > 500, "no labels or grid in the lower half"

        # A capture requested, then the window grows before the frame is drawn: the copy is
        # sized for the frame it copies (the validation layer reports a copy past a buffer)
        viewer.target.request_capture()
        glfw.set_window_size(viewer.window, w + 96, h + 64)
        while viewer.renderer.render() is None:
            glfw.poll_events()
        viewer.renderer.wait()
        grown = viewer.target.read_capture()
        assert grown.shape == (viewer.target.extent[1], viewer.target.extent[0], 4)
        assert grown.shape[1] > w and len(np.unique(grown[..., 0])) > 10
        assert device.messages == []

        viewer.renderer.close()
        viewer.target.close()
        assert device.live_objects() == 0, device.live_object_labels()
        assert device.messages == []
    finally:
        viewer.close()


def test_viewer_shows_any_set_of_methods(xvfb, capsys):
    from vkdqs.app.viewer import HELP, METHOD_CYCLE, Viewer
    from vkdqs.methods import shown as shown_methods

    assert "5 CoR" in HELP and "M/shift+M" in HELP
    assert "8 DDM, 9 Delta Mush, 3 both" in HELP  # every shown method's key, in order
    viewer = Viewer(size=(480, 240), samples=1, validation=validation_available())
    glfw, scene = viewer.glfw, viewer.scene
    try:
        assert viewer.window_title.startswith("vkdqs: LBS (left) | DQS (right), twist")

        def shown() -> list[str]:
            """Visible copies, left to right, each checked to lie inside the image."""
            w, h = viewer.target.extent
            visible = {m: i for m, i in scene.instances.items() if i.visible}
            xs = {m: i.model[0, 3] for m, i in visible.items()}
            centres = np.array([i.model[:3, 3] for i in visible.values()])
            px = viewer.renderer.camera.project(centres, w, h)
            assert (px[:, 0] > 0).all() and (px[:, 0] < w).all(), px
            return sorted(visible, key=xs.get)

        for key, methods, copies in (
            (glfw.KEY_4, "blend", ["blend"]),
            (glfw.KEY_5, "cor", ["cor"]),
            (glfw.KEY_6, "dqs_blender", ["dqs_blender"]),
            (glfw.KEY_8, "ddm", ["ddm"]),  # drawn by its vertex shader
            (glfw.KEY_9, "delta_mush", ["delta_mush"]),  # drawn by "compute, then draw"
            (glfw.KEY_7, "all", [m.name for m in shown_methods()]),
            (glfw.KEY_1, "dqs", ["dqs"]),
        ):
            viewer.handle_key(key)
            assert scene.methods == methods
            assert shown() == copies
            viewer.step()
        viewer.handle_key(glfw.KEY_7)
        assert viewer.window_title.startswith(
            "vkdqs: LBS | DQS | LBS/DQS blend | CoR | DQS (Blender) | DDM | Delta Mush | "
            "Velocity (DQS) (left to right), twist"
        )
        # M walks the cycle forward, shift+M back, and wraps around.
        seen = []
        for _ in METHOD_CYCLE:
            viewer.handle_key(glfw.KEY_M)
            seen.append(scene.methods)
        assert seen == list(METHOD_CYCLE)
        viewer.handle_key(glfw.KEY_M, glfw.MOD_SHIFT)
        assert scene.methods == "both" and shown() == ["lbs", "dqs"]
        # A set outside the cycle: named left to right, and M goes on from its start.
        assert viewer.show("lbs,dqs,cor")
        assert shown() == ["lbs", "dqs", "cor"]
        assert viewer.window_title.startswith("vkdqs: LBS | DQS | CoR (left to right), twist")
        viewer.handle_key(glfw.KEY_M)
        assert scene.methods == "lbs"
        out = capsys.readouterr().out
        assert "showing: CoR, twist" in out and "showing: LBS, twist" in out
        # all eight drawn: the pixels around each copy's centre (its joint) are not background
        viewer.handle_key(glfw.KEY_7)
        scene.set_twist(90.0)
        shot = viewer.screenshot()[..., :3].astype(int)
        h, w = shot.shape[:2]
        background = shot[0, 0]
        centres = np.array([i.model @ [1.0, 0.0, 0.0, 1.0] for i in scene.instances.values()])
        pixels = viewer.renderer.camera.project(centres[:, :3], w, h)
        for m, (x, y) in zip(scene.instances, pixels, strict=True):
            patch = shot[int(y) - 2 : int(y) + 3, int(x) - 2 : int(x) + 3]
            assert (np.abs(patch - background).sum(axis=-1) > 30).all(), m
        assert viewer.device.messages == []
    finally:
        viewer.close()


def test_viewer_crowd(xvfb, capsys):
    from vkdqs.app.viewer import Viewer

    with Viewer(size=(320, 240), samples=1, validation=validation_available(), crowd=16) as viewer:
        viewer.run(max_frames=5)
        assert viewer.frames == 5
        assert "crowd of 16" in viewer.scene.label()
        viewer.handle_key(viewer.glfw.KEY_1)
        assert viewer.scene.methods == "dqs"
        shot = viewer.screenshot()
        assert (shot[..., :3] != shot[0, 0, :3]).any(axis=-1).sum() > 100
        assert viewer.renderer._overlay is not None  # the grids' labels
        # the cycle shows every crowd method
        seen = {viewer.cycle_methods() for _ in range(8)}
        assert {"blend", "cor", "dqs_blender", "all"} <= seen
        # key 9 (classic Delta Mush) says why crowds do not draw it; all names it as left out
        # (DDM's crowds draw: tests/test_ddm_render.py)
        capsys.readouterr()
        viewer.handle_key(viewer.glfw.KEY_9)
        assert viewer.scene.methods != "delta_mush"
        out = capsys.readouterr().out
        assert "cannot show DELTA_MUSH" in out and "its own smoothing passes" in out
        viewer.handle_key(viewer.glfw.KEY_7)
        out = capsys.readouterr().out
        assert "left out ddm" not in out
        assert "left out delta_mush: Delta Mush does not draw crowds: a crowd draws" in out
        viewer.run(max_frames=2)


def test_window_frames_are_timed(xvfb):
    """GPU timing on a swapchain: several command buffers per frame slot (one per image) share
    the slot's queries; with and without a capture copy after the pass."""
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.app.viewer import Viewer
    from vkdqs.engine.renderer import Renderer

    with Viewer(size=(320, 240), samples=1, validation=validation_available()) as viewer:
        viewer.renderer.close()
        renderer = Renderer(viewer.device, viewer.target, gpu_timing=True)
        viewer.renderer = renderer
        CandyWrapperScene(renderer).set_twist(90.0)
        renderer.frame_scene()
        assert renderer.gpu_ms is None
        rendered = sum(renderer.render() is not None for _ in range(8))
        renderer.wait()
        assert rendered == 8 and renderer.gpu_ms is not None and renderer.gpu_ms > 0
        shot = viewer.screenshot()  # a capture copy inside the timed span
        assert (shot[..., :3] != shot[0, 0, :3]).any(axis=-1).sum() > 100
        assert renderer.gpu_ms is not None and renderer.gpu_ms > 0
        assert viewer.device.messages == []


def test_viewer_labels_the_diff_and_the_bone_heat_map(xvfb, tmp_path):
    """D shows the |DQS - LBS| copy with its colour bar; B the bone heat map with a 0..1 bar
    and the bone's name (the 0..1 bar drawn, the name the label uses)."""
    from vkdqs.app.overlay import bar_box, colorbar
    from vkdqs.app.viewer import Viewer

    from .gltf_fixtures import make_rig

    path = tmp_path / "rig.glb"
    make_rig(scaled=False).save(path)
    viewer = Viewer(path, size=(480, 320), samples=1, validation=validation_available())
    glfw = viewer.glfw
    try:
        w, h = viewer.target.extent
        x0, y0, x1, y1 = bar_box(w, h)
        bar = colorbar(x1 - x0, y1 - y0)[..., :3].astype(int)

        def bar_shown(shot):
            return np.abs(shot[y0:y1, x0:x1, :3].astype(int) - bar).max() <= 1

        viewer.handle_key(glfw.KEY_SPACE)  # pause
        viewer.scene.set_time(0.5)
        assert not bar_shown(viewer.screenshot())
        viewer.handle_key(glfw.KEY_D)
        assert viewer.scene.methods == "diff" and "|DQS - LBS|" in viewer.window_title
        shot = viewer.screenshot()
        assert bar_shown(shot)
        top, largest = viewer.scene.diff_range
        assert 0 < top <= largest
        viewer.handle_key(glfw.KEY_3)
        viewer.handle_key(glfw.KEY_B)
        viewer.handle_key(glfw.KEY_RIGHT_BRACKET)
        assert viewer.renderer.debug_bone == 2
        assert viewer.scene.bone_name(2) == "bone 2 'j2|joint'"
        assert bar_shown(viewer.screenshot())
        viewer.handle_key(glfw.KEY_B)
        assert not bar_shown(viewer.screenshot())
    finally:
        viewer.close()


def test_a_swapchain_clamped_by_the_surface_is_not_rebuilt_every_frame(xvfb):
    """When the window's framebuffer size is not what the surface allows (the swapchain's extent
    is clamped to it), frames keep the swapchain: it is rebuilt when the window changes."""
    from vkdqs.app.viewer import Viewer

    viewer = Viewer(size=(200, 150), samples=1, validation=validation_available())
    try:
        viewer.run(max_frames=2)
        target = viewer.target
        real = target._framebuffer_size
        w, h = real()
        target._framebuffer_size = lambda: (w + 7, h + 5)  # the surface still says (w, h)
        before = target.recreations
        for _ in range(6):
            viewer.step()
        assert target.recreations == before + 1
        assert target.extent == (w, h)
        target._framebuffer_size = real
        viewer.step()
        assert target.recreations == before + 2  # the window "changed" back
        assert viewer.device.messages == []
    finally:
        viewer.close()


def test_screenshots_are_written_safely(xvfb, tmp_path, monkeypatch, capsys):
    """S writes vkdqs-screenshot-<n>.png as every vkdqs file is written: a link planted at that
    name is replaced, not followed; the model shown is never overwritten; a screenshot that
    cannot be written is a message, and the viewer goes on."""
    from vkdqs import OutputError
    from vkdqs.app.viewer import Viewer
    from vkdqs.images import read_png

    model = tmp_path / "rig.glb"
    make_rig(scaled=False).save(model)
    target = tmp_path / "precious"
    target.write_bytes(b"do not touch\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vkdqs-screenshot-1.png").symlink_to(target)
    (tmp_path / "vkdqs-screenshot-2.png").mkdir()
    viewer = Viewer(model, size=(96, 64), samples=1, validation=validation_available())
    try:
        viewer.step()
        viewer.handle_key(viewer.glfw.KEY_S)
        viewer.handle_key(viewer.glfw.KEY_S)
        out = capsys.readouterr().out
        assert "screenshot: vkdqs-screenshot-1.png" in out
        assert "screenshot not saved: vkdqs-screenshot-2.png: is a folder" in out
        shot = tmp_path / "vkdqs-screenshot-1.png"
        assert not shot.is_symlink() and read_png(shot).shape == (64, 96, 4)
        assert target.read_bytes() == b"do not touch\n"
        with pytest.raises(OutputError, match="same file as the input"):
            viewer.save_screenshot(model)
        viewer.step()  # still running
    finally:
        viewer.close()
    assert model.read_bytes()[:4] == b"glTF"
