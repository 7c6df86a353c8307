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
    result = _run_example(tmp_path, name)
    assert result.returncode == 0, result.stderr
    assert expect in result.stdout
    assert "Validation" not in result.stderr
    if output:
        assert (tmp_path / output).stat().st_size > 1000


def _run_example(tmp_path, name, extra_env=None):
    """Run ``examples/NAME --offscreen`` in ``tmp_path`` without a display."""
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--offscreen"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _load_example(name: str):
    import importlib.util

    sys.path.insert(0, str(EXAMPLES))  # embed_shader imports embed_compute, as when run
    try:
        spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), EXAMPLES / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # defines only: main() runs under __main__
    finally:
        sys.path.remove(str(EXAMPLES))
    return module


def _run_validated(tmp_path, name):
    """Run an embedding example with the validation layer and synchronization validation
    forced on by the Vulkan loader (the app itself asks for neither): no message allowed."""
    from .conftest import validation_available

    layers = {}
    if validation_available():
        layers["VK_INSTANCE_LAYERS"] = "VK_LAYER_KHRONOS_validation"
        layers["VK_LAYER_ENABLES"] = "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
    result = _run_example(tmp_path, name, layers)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Validation" not in output and "SYNC-HAZARD" not in output, output
    return result.stdout


def _renderer_coverage(device, ex, boxes):
    """The pixels vkdqs's Renderer covers drawing the example's last pose with its camera."""
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    with (
        OffscreenTarget(device, ex.WIDTH, ex.HEIGHT, samples=1) as target,
        Renderer(device, target, clear_color=(0.0, 0.0, 0.0, 1.0)) as renderer,
    ):
        rm = renderer.add_mesh(ex.character(), label="tube")
        last = ex.pose(ex.FRAMES - 1)
        renderer.add_instance(rm, bone_count=ex.BONES, method="dqs", bones=last)
        renderer.camera = ex.framing(boxes)
        want = renderer.render_image()
    return np.any(want[:, :, :3] != 0, axis=2)


def _assert_same_coverage(path, expected):
    """The app clears to 0.9 grey; its shading is its own, so only coverage is compared: it
    differs only along edges, where two vertex shaders may round a clip position differently
    (at most 1 % of the covered pixels)."""
    from vkdqs.images import read_png

    covered = np.any(read_png(path)[:, :, :3] != 230, axis=2)
    assert expected.sum() > 2000  # the tube is in view
    differ = int((covered != expected).sum())
    assert differ <= 0.01 * expected.sum(), (differ, int(expected.sum()))


def test_embed_compute_skins_into_the_apps_buffers_and_draws_what_the_renderer_draws(
    tmp_path, device
):
    """examples/embed_compute.py (the app in the plain vulkan binding, Skinner.record into its
    vertex buffers): its buffer holds Skinner.skin's bits, its image the Renderer's coverage."""
    from vkdqs import Skinner

    out = _run_validated(tmp_path, "embed_compute.py")
    assert "max |app's vertex buffer - Skinner.skin| = 0.0e+00" in out
    assert "wrote embed-compute.png after 8 frames" in out
    ex = _load_example("embed_compute.py")
    with Skinner(device, ex.character(), bone_count=ex.BONES) as skinner:
        boxes = np.stack([skinner.bounds(ex.pose(f)) for f in range(ex.FRAMES)])
    _assert_same_coverage(tmp_path / "embed-compute.png", _renderer_coverage(device, ex, boxes))


def test_embed_shader_draws_with_vkdqs_vertex_shader_what_the_renderer_draws(tmp_path, device):
    """examples/embed_shader.py (vkdqs's skin_dqs.vert in the app's pipeline, built from
    vkdqs.shaders' interface): the Renderer's coverage for the same pose and camera."""
    out = _run_validated(tmp_path, "embed_shader.py")
    assert "wrote embed-shader.png after 8 frames, drawn by skin_dqs.vert" in out
    ex = _load_example("embed_shader.py")
    coverage = _renderer_coverage(device, ex, ex.reference_boxes())
    _assert_same_coverage(tmp_path / "embed-shader.png", coverage)


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
