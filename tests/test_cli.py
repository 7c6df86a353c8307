"""The command line: demo table, headless PNG rendering."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import methods as registry
from vkdqs.app import cli
from vkdqs.images import read_png


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
    methods = tuple(m.name for m in registry.shown())  # the columns, left to right
    assert methods[:2] == ("lbs", "dqs")
    assert {"cor", "blend", "dqs_blender", "ddm", "delta_mush"} <= set(methods)
    radius = dict(zip(methods, map(float, rows[2].split("|")[1].split()), strict=True))
    volume = dict(zip(methods, map(float, rows[2].split("|")[2].split()), strict=True))
    assert radius["dqs"] >= 0.95 and radius["lbs"] <= 0.2
    assert radius["cor"] >= 0.95 and radius["lbs"] < radius["blend"] < radius["dqs"]
    assert abs(radius["dqs_blender"] - radius["dqs"]) < 1e-3  # equal on rigid bones
    # DDM smooths the twist: thicker than LBS, far thinner than DQS (its column prints 0.347)
    assert radius["lbs"] < radius["ddm"] < 0.5
    # Delta Mush over LBS likewise smooths the pinch into a neck (its column prints 0.2)
    assert radius["lbs"] < radius["delta_mush"] < 0.5
    # 170 degrees: LBS loses a quarter of the volume; DQS and CoR keep it
    assert abs(volume["dqs"] - 1) < 0.01 and abs(volume["cor"] - 1) < 0.01
    assert volume["lbs"] < 0.8 and volume["lbs"] < volume["blend"] < volume["dqs"]
    # neither mush gives the volume back: the wrapper has no rest detail to restore
    assert volume["ddm"] < 0.8 and abs(volume["delta_mush"] - volume["lbs"]) < 0.02
    rest = rows[0].split("|")[1].split() + rows[0].split("|")[2].split()
    assert rest == ["1.000"] * (2 * len(methods))
    errors = out.split("max |error|")[1].splitlines()[1]
    values = dict(item.strip().rsplit(" ", 1) for item in errors.split(","))
    assert set(values) == {registry.label(m) for m in methods} | {"CoR centers"}
    assert all(float(v) < 1e-5 for v in values.values()), values


def test_demo_on_the_vertex_path_skins_the_mushes_by_compute(device, capsys):
    """The mushes have no vertex shader: ``demo --path vertex`` skins them on the compute path
    (as the renderer draws them) and says so, every column within its float64 reference."""
    assert cli.main(["demo", "--step", "170", "--no-window", "--path", "vertex"]) == 0
    out = capsys.readouterr().out
    mushes = [m.label for m in registry.shown() if "vertex" not in m.paths]
    assert mushes == ["Delta Mush", "Velocity (DQS)"]  # DDM has vertex shaders
    said = "(Delta Mush, Velocity (DQS): skinned on the compute path; they have no vertex shader)"
    assert said in out
    errors = out.split("max |error|")[1].splitlines()[1]
    values = dict(item.strip().rsplit(" ", 1) for item in errors.split(","))
    assert set(values) == {m.label for m in registry.shown()} | {"CoR centers"}
    assert all(float(v) < 1e-5 for v in values.values()), values


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


def test_render_bends_the_candy_wrapper(tmp_path, device, capsys):
    out = tmp_path / "bent.png"
    args = ["render", "--out", str(out), "--size", "200x120", "--samples", "1", "--twist", "0"]
    assert cli.main([*args, "--bend", "135", "--method", "lbs,dqs,cor"]) == 0
    assert "LBS | DQS | CoR (left to right), twist 0°, bend 135°" in capsys.readouterr().out
    bent = read_png(out)
    assert cli.main(args) == 0
    assert np.abs(bent.astype(int) - read_png(out).astype(int)).max() > 50  # not the straight one


def test_render_rejects_a_bend_it_cannot_draw(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["render", "--bend", "400"])
    assert "the bend must be within -180...180 degrees" in capsys.readouterr().err
    model = tmp_path / "model.glb"
    model.write_bytes(b"")
    assert cli.main(["render", str(model), "--bend", "90", "--out", str(tmp_path / "x.png")]) == 1
    assert "--bend bends the candy wrapper" in capsys.readouterr().err


def test_view_takes_a_crowd_size(capsys):
    args = cli.build_parser().parse_args(["view", "--crowd", "64"])
    assert args.crowd == 64
    for bad in ("0", "lots", "100000"):
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(["view", "--crowd", bad])
    assert "--crowd must be" in capsys.readouterr().err
