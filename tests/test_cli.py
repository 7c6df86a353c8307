"""The command line: demo table, headless PNG rendering."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import cli
from vkdqs.png import read_png


def test_render_writes_a_png(tmp_path, device, capsys):
    out = tmp_path / "frame.png"
    assert cli.main(["render", "--out", str(out), "--size", "200x120", "--samples", "1"]) == 0
    img = read_png(out)
    assert img.shape == (120, 200, 4)
    assert len(np.unique(img[..., 0])) > 10
    assert f"wrote {out}" in capsys.readouterr().out


def test_render_rejects_a_bad_size(capsys):
    with pytest.raises(SystemExit):
        cli.main(["render", "--size", "wide"])
    assert "size must look like 640x480" in capsys.readouterr().err


def test_demo_prints_the_table(device, capsys):
    assert cli.main(["demo", "--step", "85", "--no-window"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.strip().startswith(("0 |", "85 |", "170 |"))]
    assert len(rows) == 3
    dqs_radius, lbs_radius = (float(v) for v in rows[2].split("|")[1].split())
    assert dqs_radius >= 0.95 and lbs_radius <= 0.2


def test_demo_without_a_display_renders_a_png(tmp_path, device, monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["demo", "--step", "170"]) == 0
    assert (tmp_path / "vkdqs-demo.png").exists()
    assert "wrote vkdqs-demo.png" in capsys.readouterr().out


def test_demo_with_an_unreachable_display_falls_back_to_a_png(
    tmp_path, device, monkeypatch, capsys
):
    monkeypatch.setenv("DISPLAY", ":9999")  # set, but no X server there
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["demo", "--step", "170"]) == 0
    out = capsys.readouterr().out
    assert "the viewer could not open" in out
    assert (tmp_path / "vkdqs-demo.png").exists()


def test_view_takes_a_crowd_size(capsys):
    args = cli.build_parser().parse_args(["view", "--crowd", "64"])
    assert args.crowd == 64
    for bad in ("0", "lots", "100000"):
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(["view", "--crowd", bad])
    assert "--crowd must be" in capsys.readouterr().err
