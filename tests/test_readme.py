"""The README's usage example runs as written (given arrays for the names it leaves to you)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from vkdqs import dq, procedural

README = Path(__file__).resolve().parents[1] / "README.md"


def _block_after(heading: str) -> str:
    text = README.read_text()
    section = text[text.index(heading) :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_using_it_example_runs(device):
    tube = procedural.tube(2000, bone_count=8)
    namespace = {
        "positions": tube.positions,
        "normals": tube.normals,
        "joints": tube.joints,
        "weights": tube.weights,
        "rigid_4x4_per_bone": procedural.bone_chain_pose(8, 40.0),
    }
    exec(compile(_block_after("## Using it"), "README.md", "exec"), namespace)
    np.testing.assert_allclose(namespace["positions"], namespace["ref_p"], atol=1e-4)
    assert namespace["many_p"].shape == (2, 2000, 3)
    np.testing.assert_allclose(namespace["morphed_p"], namespace["ref_morphed_p"], atol=1e-4)
    assert np.abs(namespace["morphed_p"] - namespace["ref_p"]).max() > 0.01  # it moved
    assert np.allclose(namespace["bones"], dq.from_matrices(namespace["rigid_4x4_per_bone"]))


def test_install_comes_before_the_developer_targets():
    text = README.read_text()
    install = text[text.index("## Install") : text.index("## Developing")]
    assert text.index("## Install") < text.index("make demo")
    assert "pip install ." in install and "vkdqs-*.whl" in install
    assert "libvulkan1 mesa-vulkan-drivers" in install  # the runtime system requirement
    for tool in ("glslc", "vulkan-validationlayers", "make"):
        assert tool not in install.split("## Developing")[0].split("```")[1], tool
