"""The numeric part of docs/make_figures.py (no matplotlib needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from vkdqs.app.compare import compared_methods

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "make_figures.py"


def _script():
    spec = importlib.util.spec_from_file_location("make_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figure_curves(device):
    figures = _script()
    data = figures.curves(device, np.array([0.0, 135.0, 170.0]))
    assert len(data["max_error"]) == 2 * len(compared_methods())
    assert max(data["max_error"].values()) < 1e-5
    for key in ("volume_twist", "volume_bend", "bulge_bend"):
        assert set(data[key]) == set(compared_methods())
        for m in compared_methods():
            rest = 1.0 if key.startswith("volume") else 0.0
            assert abs(data[key][m][0] - rest) < 1e-5, (key, m)
    twist, bend, bulge = data["volume_twist"], data["volume_bend"], data["bulge_bend"]
    assert abs(twist["cor"][2] - 1) < 0.01 and abs(twist["dqs"][2] - 1) < 0.01
    assert twist["lbs"][2] < 0.8 < twist["blend"][2] < 0.9
    assert bend["lbs"][1] < bend["blend"][1] < bend["cor"][1] < bend["dqs"][1]
    # at 135 degrees DQS bulges; CoR much less; LBS hardly
    assert bulge["dqs"][1] > 0.08 and bulge["cor"][1] < 0.5 * bulge["dqs"][1]
    assert bulge["lbs"][1] < 0.01
    np.testing.assert_allclose(bulge["dqs_blender"], bulge["dqs"], atol=1e-4)
