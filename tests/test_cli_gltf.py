"""The command line on glTF files: ``vkdqs info``, ``vkdqs render MODEL``, and bad files."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from vkdqs.app import cli
from vkdqs.images import read_png

from .gltf_fixtures import make_rig


@pytest.fixture(scope="module")
def rig_glb(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_gltf") / "rig.glb"
    make_rig(scaled=False).save(path)
    return path


def test_info_names_meshes_skins_and_animations(rig_glb, capsys):
    assert cli.main(["info", str(rig_glb)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rig.glb: 12 nodes")
    for text in (
        "mesh 0 'tube': 1 primitives, 32 vertices, 56 triangles, skin 0, max 4 influences",
        "mesh 1 'prop'",
        "rigid",
        "mesh 2 'hand'",
        "skin 0 'chain': 8 joints, max 4 influences",
        "skin 1 'hand': 2 joints",
        "animation 0 'linear': 1.000 s",
        "animation 1 'step': 2.000 s",
        "animation 2 'cubic': 2.000 s",
    ):
        assert text in out


def test_info_json_and_scale(tmp_path, capsys):
    path = tmp_path / "scaled.gltf"
    make_rig(scaled=True).save(path)
    assert cli.main(["info", str(path)]) == 0
    assert "skin 0 'chain': 8 joints, max 4 influences, scaled joints" in capsys.readouterr().out
    assert cli.main(["info", "--json", str(path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [s["joints"] for s in info["skins"]] == [8, 2]
    assert info["skins"][0]["scaled_joints"] is True
    assert [a["name"] for a in info["animations"]] == ["linear", "step", "cubic"]


@pytest.mark.parametrize(
    ("options", "label"),
    [
        # 1.25 s is past the 1 s animation: drawn at its end, with a warning
        ([], "LBS (left) | DQS (right), animation 0 'linear' 1.00/1.00 s"),
        (["--method", "lbs", "--animation", "2"], "LBS, animation 2 'cubic' 1.25/2.00 s"),
        (["--method", "dqs", "--animation", "step"], "DQS, animation 1 'step' 1.25/2.00 s"),
        (["--animation", "rest"], "LBS (left) | DQS (right), rest pose"),
    ],
)
def test_render_model_writes_a_png(rig_glb, tmp_path, device, capsys, options, label):
    out = tmp_path / "frame.png"
    args = ["render", str(rig_glb), "--time", "1.25", "--out", str(out), "--size", "200x120"]
    assert cli.main([*args, "--samples", "1", *options]) == 0
    img = read_png(out)
    assert img.shape == (120, 200, 4)
    assert len(np.unique(img[..., 0])) > 5
    captured = capsys.readouterr()
    assert captured.out.strip() == f"wrote {out} (200x120, {label})"
    clamped = "1.00/1.00" in label or "rest pose" in label
    assert ("--time 1.25 s" in captured.err) == clamped


def test_candy_wrapper_render_still_works(tmp_path, device, capsys):
    out = tmp_path / "candy.png"
    assert cli.main(["render", "--out", str(out), "--size", "64x48", "--samples", "1"]) == 0
    assert "twist 170°" in capsys.readouterr().out


def _corrupt(path, tmp_path):
    bad = tmp_path / "broken.glb"
    raw = bytearray(path.read_bytes())
    raw[12:16] = (10**6).to_bytes(4, "little")  # JSON chunk length past the end of the file
    bad.write_bytes(bytes(raw))
    return bad


@pytest.mark.parametrize("command", ["info", "render", "view"])
def test_a_malformed_file_is_one_error_line(rig_glb, tmp_path, capsys, command):
    bad = _corrupt(rig_glb, tmp_path)
    assert cli.main([command, str(bad)]) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("vkdqs: error: broken.glb: ")
    assert not (tmp_path / "frame.png").exists()


@pytest.mark.gpu  # the bad animation is found after the device is open
def test_missing_file_and_bad_animation(rig_glb, tmp_path, capsys):
    assert cli.main(["info", str(tmp_path / "nothing.glb")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vkdqs: error: nothing.glb: cannot read the file")
    out = tmp_path / "x.png"
    assert cli.main(["render", str(rig_glb), "--animation", "9", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vkdqs: error: rig.glb: no animation 9 (animations: 0 'linear'")


def test_exit_status_from_the_shell(rig_glb, tmp_path):
    """Run as a program: status 1 and no traceback."""
    bad = tmp_path / "bad.gltf"
    bad.write_text('{"asset": {"version": "2.0"}, "meshes": 3}')
    result = subprocess.run(
        [sys.executable, "-m", "vkdqs", "info", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("vkdqs: error: bad.gltf: ")
    assert result.stdout == ""


def test_max_bytes_bounds_what_a_model_may_expand_to(rig_glb, capsys):
    assert cli.main(["info", "--max-bytes", "64M", str(rig_glb)]) == 0
    assert cli.main(["info", "--max-bytes", "2K", str(rig_glb)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_bytes" in err[0] and "rig.glb" in err[0], err


@pytest.mark.parametrize("value", ["0", "-5", "abc", "nan", "2E"])
def test_bad_max_bytes_is_a_usage_error(rig_glb, value):
    run = subprocess.run(
        [sys.executable, "-m", "vkdqs", "info", f"--max-bytes={value}", str(rig_glb)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert "max-bytes must be a positive size" in run.stderr
    assert "Traceback" not in run.stderr


def test_info_names_the_methods_each_skin_suits(tmp_path, capsys):
    rigid, scaled = tmp_path / "rigid.glb", tmp_path / "scaled.glb"
    make_rig(scaled=False).save(rigid)
    make_rig(scaled=True).save(scaled)
    assert cli.main(["info", str(rigid)]) == 0
    out = capsys.readouterr().out
    methods = "methods lbs, dqs, blend, cor, dqs_blender, ddm, delta_mush, velocity;"
    assert f"skin 0 'chain': 8 joints, max 4 influences; {methods}" in out
    assert cli.main(["info", "--json", str(scaled)]) == 0
    skins = json.loads(capsys.readouterr().out)["skins"]
    # blend, cor and ddm refuse scaled joint matrices; DQS (and velocity skinning over it) runs
    # two-phase; dqs_blender and Delta Mush (over LBS) take them
    suits = ["lbs", "dqs", "dqs_blender", "delta_mush", "velocity"]
    assert [s["methods"] for s in skins] == [suits] * 2


def test_the_cli_bounds_a_small_hostile_file_by_its_size(tmp_path):
    """Without --max-bytes the CLI takes the loader's default, which grows with the file: a
    202-byte file of zero-filled accessors is refused at once, naming the bound."""
    import time

    from .test_gltf_bounds import _zero_filled

    model = _zero_filled(tmp_path)
    t0 = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "vkdqs", "info", str(model)], capture_output=True, text=True
    )
    assert time.monotonic() - t0 < 30  # a hang guard; it is refused in a fraction of a second
    assert run.returncode == 1 and "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "max_bytes" in lines[0], run.stderr
