"""Point of interest: embedding the vkdqs renderer in your own app.

Your app owns the window (GLFW here) and the frame loop; vkdqs owns the Vulkan objects. Build a
SkinnedMesh from your arrays, add instances, set each instance's pose every frame, call
``renderer.render()``. The renderer does not know whether it draws into a window or offscreen.

    python examples/embed_renderer.py              # a window; Esc quits
    python examples/embed_renderer.py --offscreen  # no display: 30 frames, the last one to PNG
"""

from __future__ import annotations

import sys

import numpy as np

import vkdqs
from vkdqs import dq, procedural
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget, SwapchainTarget
from vkdqs.images import write_png

BONES = 16


def build_scene(renderer: Renderer) -> list:
    # Your mesh: any (N,3) positions/normals and (N,K) joints/weights arrays; here a tube.
    mesh = procedural.tube(20_000, bone_count=BONES, influences=4, length=6.0, radius=0.4)
    rm = renderer.add_mesh(mesh, label="tube")
    instances = []
    for i, (method, color) in enumerate((("lbs", (0.6, 0.2, 0.1)), ("dqs", (0.15, 0.35, 0.6)))):
        model = np.eye(4)
        model[:3, 3] = (2.0 * i - 1.0, -3.0, 0.0)
        instances.append(
            renderer.add_instance(rm, bone_count=BONES, method=method, model=model, color=color)
        )
    renderer.frame_scene()
    renderer.camera.orbit(0.3, 0.2)
    return instances


def pose(t: float) -> np.ndarray:
    """Your animation: a bend of the bone chain, as rigid 4x4 matrices per bone."""
    return procedural.bone_chain_pose(BONES, 120.0 * np.sin(2.0 * t), length=6.0)


def update(instances: list, t: float) -> None:
    mats = pose(t)
    for inst in instances:
        inst.set_pose(dq.from_matrices(mats) if inst.method == "dqs" else mats)


def run_offscreen(frames: int = 30) -> None:
    with vkdqs.Device() as device:
        with OffscreenTarget(device, 640, 480, samples=4) as target:
            with Renderer(device, target) as renderer:
                instances = build_scene(renderer)
                for f in range(frames):
                    update(instances, f / 30.0)
                    image = renderer.render_image()
    print(f"wrote {write_png('embed-offscreen.png', image)} after {frames} frames")


def run_window() -> None:
    import glfw
    import vulkan as vk

    if not glfw.init():
        sys.exit("no display: run with --offscreen")
    glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)
    window = glfw.create_window(960, 600, "vkdqs embedded", None, None)
    device = vkdqs.Device(
        instance_extensions=glfw.get_required_instance_extensions(),
        device_extensions=[vk.VK_KHR_SWAPCHAIN_EXTENSION_NAME],
    )
    surface = vk.ffi.new("VkSurfaceKHR*")
    glfw.create_window_surface(device.instance, window, None, surface)
    target = SwapchainTarget(device, surface[0], lambda: glfw.get_framebuffer_size(window))
    renderer = Renderer(device, target)
    instances = build_scene(renderer)
    try:
        while not glfw.window_should_close(window):
            glfw.poll_events()
            if glfw.get_key(window, glfw.KEY_ESCAPE) == glfw.PRESS:
                break
            update(instances, glfw.get_time())
            renderer.render()  # None while minimized: nothing to draw
    finally:
        renderer.close()
        target.close()
        device.close()
        glfw.destroy_window(window)
        glfw.terminate()


if __name__ == "__main__":
    run_offscreen() if "--offscreen" in sys.argv[1:] else run_window()
