"""Every example runs headless (``--offscreen``) and does what its docstring says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# Each example opens a Vulkan device in its own process.
pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    ("name", "expect", "output"),
    [
        ("viewer.py", "wrote viewer-offscreen.png", "viewer-offscreen.png"),
        ("embed_renderer.py", "wrote embed-offscreen.png after 30 frames", "embed-offscreen.png"),
        ("skin_to_numpy.py", "pose 2: max |GPU - float64 reference|", None),
    ],
)
def test_example_runs_offscreen(tmp_path, name, expect, output):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--offscreen"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert expect in result.stdout
    assert "Validation" not in result.stderr
    if output:
        assert (tmp_path / output).stat().st_size > 1000


def _load_example(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), EXAMPLES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines only: main() runs under __main__
    return module


def test_embed_compute_skins_into_the_apps_buffers_and_draws_what_the_renderer_draws(
    tmp_path, device
):
    """The app written in the plain vulkan binding (examples/embed_compute.py), run with the
    validation layer and synchronization validation forced on by the loader: no message, its
    vertex buffer holds Skinner.skin's bits, and its own pipeline covers the pixels vkdqs's
    Renderer covers for the same pose and camera (shading differs: the app's shaders are its
    own; coverage differs only along edges, where the two vertex shaders may round a clip
    position differently: at most 1 % of the covered pixels)."""
    from vkdqs import Skinner
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.images import read_png

    from .conftest import validation_available

    env = dict(os.environ)
    env.pop("DISPLAY", None)
    if validation_available():
        env["VK_INSTANCE_LAYERS"] = "VK_LAYER_KHRONOS_validation"
        env["VK_LAYER_ENABLES"] = "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "embed_compute.py"), "--offscreen"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "max |app's vertex buffer - Skinner.skin| = 0.0e+00" in result.stdout
    assert "wrote embed-compute.png after 8 frames" in result.stdout
    assert "Validation" not in output and "SYNC-HAZARD" not in output, output
    drawn = read_png(tmp_path / "embed-compute.png")
    ex = _load_example("embed_compute.py")
    mesh, last = ex.character(), ex.pose(ex.FRAMES - 1)
    with Skinner(device, mesh, bone_count=ex.BONES) as skinner:
        boxes = np.stack([skinner.bounds(ex.pose(f)) for f in range(ex.FRAMES)])
    with (
        OffscreenTarget(device, ex.WIDTH, ex.HEIGHT, samples=1) as target,
        Renderer(device, target, clear_color=(0.0, 0.0, 0.0, 1.0)) as renderer,
    ):
        rm = renderer.add_mesh(mesh, label="tube")
        renderer.add_instance(rm, bone_count=ex.BONES, method="dqs", bones=last)
        renderer.camera = ex.framing(boxes)
        want = renderer.render_image()
    covered = np.any(drawn[:, :, :3] != 230, axis=2)  # the app clears to 0.9 grey
    expected = np.any(want[:, :, :3] != 0, axis=2)
    assert expected.sum() > 2000  # the tube is in view
    differ = int((covered != expected).sum())
    assert differ <= 0.01 * expected.sum(), (differ, int(expected.sum()))


@pytest.mark.parametrize("name", ["lit.vert", "lit.frag"])
def test_the_example_apps_spirv_is_its_glsl(tmp_path, name):
    """examples/shaders/*.spv are glslc's output for the GLSL beside them (the app's own
    shaders, built as build_shaders.py builds vkdqs's: optimized, Vulkan 1.1)."""
    import shutil

    if shutil.which("glslc") is None:
        pytest.skip("glslc is not installed (apt-get install glslc)")
    source = EXAMPLES / "shaders" / name
    out = tmp_path / f"{name}.spv"
    subprocess.run(
        ["glslc", "-O", "--target-env=vulkan1.1", "-o", str(out), str(source)], check=True
    )
    assert out.read_bytes() == (EXAMPLES / "shaders" / f"{name}.spv").read_bytes()
