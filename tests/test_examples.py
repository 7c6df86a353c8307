"""Every example runs headless (``--offscreen``) and does what its docstring says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
