"""The README stays short and its example runs; the guide's usage example runs as written (given
arrays for the names it leaves to you)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

from vkdqs import dq, procedural

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
USING = ROOT / "docs" / "using.md"


def _block_after(path: Path, heading: str) -> str:
    text = path.read_text()
    section = text[text.index(heading) :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 200


def test_readme_example_runs_and_prints_what_it_says(device):
    code = _block_after(README, "## A ten-line example")
    assert len(code.strip().splitlines()) <= 10
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    printed = out.getvalue().splitlines()
    assert printed == ["lbs: narrowest ring 0.044", "dqs: narrowest ring 0.500"]
    for line in printed:
        assert f"`{line}`" in README.read_text()  # the README quotes what it prints


def test_using_page_example_runs(device):
    tube = procedural.tube(2000, bone_count=8)
    namespace = {
        "positions": tube.positions,
        "normals": tube.normals,
        "joints": tube.joints,
        "weights": tube.weights,
        "rigid_4x4_per_bone": procedural.bone_chain_pose(8, 40.0),
    }
    exec(compile(_block_after(USING, "# Using the API"), "docs/using.md", "exec"), namespace)
    np.testing.assert_allclose(namespace["positions"], namespace["ref_p"], atol=1e-4)
    assert namespace["many_p"].shape == (2, 2000, 3)
    np.testing.assert_allclose(namespace["morphed_p"], namespace["ref_morphed_p"], atol=1e-4)
    assert np.abs(namespace["morphed_p"] - namespace["ref_p"]).max() > 0.01  # it moved
    assert np.allclose(namespace["bones"], dq.from_matrices(namespace["rigid_4x4_per_bone"]))


def test_install_comes_before_the_developer_targets():
    text = README.read_text()
    install = text[text.index("## Install") : text.index("## Developing")]
    assert text.index("## Install") < text.index("make demo")
    assert "make test" in text[text.index("## Developing") :]
    assert "pip install ." in install and "vkdqs-*.whl" in install
    assert "libvulkan1 mesa-vulkan-drivers" in install  # the runtime system requirement
    for tool in ("glslc", "vulkan-validationlayers", "make"):
        assert tool not in install.split("## Developing")[0].split("```")[1], tool
    # the same order on the site: installing needs none of the developer tools
    page = (ROOT / "docs" / "install.md").read_text()
    assert "libvulkan1 mesa-vulkan-drivers" in page and "pip install ." in page
    for tool in ("glslc", "vulkan-validationlayers", "make "):
        assert tool not in page.split("```")[1], tool
