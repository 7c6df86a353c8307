"""The window path under a virtual X server (Xvfb), which the tests start themselves.

With VKDQS_REQUIRE_DEVICE=1 (CI) a missing Xvfb fails instead of skipping.
"""

from __future__ import annotations

import numpy as np

from .conftest import validation_available


def test_window_lifecycle(xvfb):
    from vkdqs.renderer import Renderer
    from vkdqs.scenes import CandyWrapperScene
    from vkdqs.targets import OffscreenTarget
    from vkdqs.viewer import Viewer

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

        # The window's pixels equal an offscreen render of the same frame.
        viewer.scene.set_twist(150.0)
        shot = viewer.screenshot()
        w, h = viewer.target.extent
        assert shot.shape == (h, w, 4)
        device = viewer.device
        with OffscreenTarget(device, w, h) as target, Renderer(device, target) as renderer:
            scene = CandyWrapperScene(renderer)
            scene.set_twist(150.0)
            renderer.camera = viewer.renderer.camera
            offscreen = renderer.render_image()
        diff = np.abs(shot[..., :3].astype(int) - offscreen[..., :3].astype(int))
        assert diff.max() <= 1, f"window and offscreen differ by up to {diff.max()}"
        assert len(np.unique(shot[..., 0])) > 10  # a real picture, not a cleared frame

        viewer.renderer.close()
        viewer.target.close()
        assert device.live_objects() == 0, device.live_object_labels()
        assert device.messages == []
    finally:
        viewer.close()


def test_viewer_crowd(xvfb):
    from vkdqs.viewer import Viewer

    with Viewer(size=(320, 240), samples=1, validation=validation_available(), crowd=16) as viewer:
        viewer.run(max_frames=5)
        assert viewer.frames == 5
        assert "crowd of 16" in viewer.scene.label()
        viewer.handle_key(viewer.glfw.KEY_1)
        assert viewer.scene.methods == "dqs"
        shot = viewer.screenshot()
        assert (shot[..., :3] != shot[0, 0, :3]).any(axis=-1).sum() > 100
