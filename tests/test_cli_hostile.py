"""The command line given hostile input: no traceback ever reaches the user.

Every numeric option is checked by argparse (exit status 2, one ``error:`` line naming the range);
errors found later print one ``vkdqs: error: ...`` line and exit 1. The option matrix and the
no-display case run ``python -m vkdqs`` in a subprocess, as a user would.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from vkdqs.app import cli
from vkdqs.app.cli import render as render_command
from vkdqs.app.cli.demo import _step
from vkdqs.app.cli.options import _size, _time
from vkdqs.app.cli.render import _twist
from vkdqs.images import read_png

from .conftest import validation_available
from .gltf_fixtures import make_rig

NOT_UTF8 = os.fsdecode(b"model\xff.glb")  # a file name whose bytes are not UTF-8


def vkdqs(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "vkdqs", *args],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["view", "--size", "0x0"], "argument --size: each side of the size must be 1...16384"),
        (["view", "--size", "abc"], "argument --size: size must look like 640x480, got 'abc'"),
        (["view", "--size", "100000x100000"], r"1...16384 pixels, got '100000x100000'"),
        (["render", "--size", "16385x1"], "each side of the size must be 1...16384 pixels"),
        (["demo", "--step", "0"], "argument --step: the twist step must be within 0.1...170 deg"),
        (["demo", "--step", "-10"], "the twist step must be within 0.1...170 degrees, got '-10'"),
        (["demo", "--step", "nan"], "the twist step must be within 0.1...170 degrees, got 'nan'"),
        (["demo", "--step", "1e-9"], "the twist step must be within 0.1...170 degrees, got '1e-9'"),
        (["demo", "--step", "ten"], "argument --step: the twist step must be a number, got 'ten'"),
        (["render", "--twist", "inf"], "argument --twist: the twist must be within -3600...3600"),
        (["render", "--twist", "nan"], "the twist must be within -3600...3600 degrees, got 'nan'"),
        (
            ["render", "--twist", "3601"],
            "the twist must be within -3600...3600 degrees, got '3601'",
        ),
        (["render", "--time", "1e308"], "argument --time: the time must be within -1000000...1000"),
        (["render", "--time=-inf"], "the time must be within -1000000...1000000 seconds"),
        (["render", "--time", "nan"], "the time must be within -1000000...1000000 seconds"),
    ],
)
def test_bad_numeric_options_are_usage_errors(args, message):
    result = vkdqs(*args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert message in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("usage: vkdqs") and lines[-1].startswith(f"vkdqs {args[0]}: error:")
    assert result.stdout == ""


def test_numbers_at_the_limits_are_accepted():
    assert _size("16384x1") == (16384, 1) and _size("1X16384") == (1, 16384)
    assert _step("0.1") == 0.1 and _step("170") == 170.0
    assert _twist("-3600") == -3600.0 and _twist("3600") == 3600.0
    assert _time("-1e6") == -1e6 and _time("1000000") == 1e6


def test_time_and_twist_at_the_limits_render_short_labels(tmp_path, device, capsys):
    model = tmp_path / "rig.glb"
    make_rig(scaled=False).save(model)
    out = tmp_path / "frame.png"
    base = ["render", "--out", str(out), "--size", "32x24", "--samples", "1"]
    assert cli.main([*base, str(model), "--time=-1e6", "--method", "lbs"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"wrote {out} (32x24, LBS, animation 0 'linear' 0.00/1.00 s)"
    assert captured.err.strip() == (
        "vkdqs: warning: --time -1e+06 s is outside the animation (1 s long): drawn at 0 s"
    )
    assert read_png(out).shape == (24, 32, 4)
    assert cli.main([*base, "--twist", "3600"]) == 0
    assert (
        capsys.readouterr().out.strip()
        == f"wrote {out} (32x24, LBS (left) | DQS (right), twist 3600°)"
    )


def test_demo_table_ends_at_170_whatever_the_step(device, capsys):
    def angles(step):
        assert cli.main(["demo", "--step", step, "--no-window"]) == 0
        lines = capsys.readouterr().out.splitlines()
        return [float(line.split("|")[0]) for line in lines if line.strip()[:1].isdigit()]

    assert angles("60") == [0, 60, 120]
    assert angles("42.5") == [0, 42, 85, 128, 170]  # 42.5 and 127.5 print rounded to even
    small = angles("0.7")  # 0, 0.7, ... 169.4; it used to run on to 170.8, printed as 171
    assert len(small) == 243 and small[-1] == 169.0


def test_view_without_a_display_prints_one_line():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    result = vkdqs("view", "--size", "64x48", env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr
    assert result.stderr.startswith("vkdqs: error: GLFW could not open the display (")
    assert "try `vkdqs render`" in result.stderr


def test_file_names_that_are_not_utf8_print_escaped(tmp_path, device):
    """Under a strict UTF-8 stdout (a UTF-8 locale), the name used to fail printing."""
    make_rig(scaled=False).save(tmp_path / NOT_UTF8)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    info = vkdqs("info", NOT_UTF8, env=env, cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    assert info.stdout.startswith("model\\udcff.glb: 12 nodes")
    out = os.fsdecode(b"frame\xff.png")
    render = vkdqs(
        "render", NOT_UTF8, "--out", out, "--size", "32x24", "--samples", "1", env=env, cwd=tmp_path
    )
    assert render.returncode == 0, render.stderr
    assert render.stderr == ""  # no traceback, and no validation message either
    assert render.stdout.startswith("wrote frame\\udcff.png (32x24, ")
    assert read_png(tmp_path / out).shape == (24, 32, 4)


def test_viewer_title_of_a_file_name_that_is_not_utf8(tmp_path, xvfb, monkeypatch, capsys):
    from vkdqs.app.viewer import Viewer

    path = tmp_path / NOT_UTF8
    make_rig(scaled=False).save(path)
    run, titles = Viewer.run, []

    def run_briefly(viewer):
        run(viewer, max_frames=31)  # the frame-time title comes every 30 frames
        titles.append(viewer.glfw.get_window_title(viewer.window))

    monkeypatch.setattr(Viewer, "run", run_briefly)
    monkeypatch.setenv("VKDQS_VALIDATION", "1" if validation_available() else "0")
    assert cli.main(["view", str(path), "--size", "160x120", "--samples", "1"]) == 0
    assert titles and titles[0].startswith("vkdqs: model\ufffd.glb: LBS (left) | DQS (right)")
    assert "fps" in titles[0]
    assert "error" not in capsys.readouterr().err


def test_ctrl_c_exits_quietly(monkeypatch, capsys):
    def interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(render_command, "render", interrupted)
    assert cli.main(["render"]) == 130
    assert capsys.readouterr().err == "vkdqs: interrupted\n"
