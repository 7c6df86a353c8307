"""The command line in hostile surroundings, run as a user would (a shell, a subprocess): standard
output and error closed (``>&-``, ``2>&-``, both), a C locale (with Python's UTF-8 mode, and
without: ``PYTHONUTF8=0``) printing a model's non-ASCII names, and a reader that stops after one
byte (``| head -c 1``), for every subcommand: never a traceback, and an exit status that says what
happened (a command whose work is printing exits 1 when its output was dropped; one whose work is
a file exits 0 with the file written).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from vkdqs.images import read_png

from .gltf_fixtures import make_rig

#: Names of the model's mesh, skin and first animation.
HIP, FOOT, WALK = "Hüfte", "足", "🦴 walk"
CLOSED = "vkdqs: error: standard output is closed; nothing was printed\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("streams")
    rig = make_rig(scaled=False)
    doc = rig.document
    doc["meshes"][0]["name"], doc["skins"][0]["name"] = HIP, FOOT
    doc["animations"][0]["name"] = WALK
    rig.save(folder / "m.glb")
    return folder


#: (arguments, whether it opens a Vulkan device, what it makes: "print", a file name, or None)
COMMANDS = {
    "info": (["info", "m.glb"], False, "print"),
    "render": (
        ["render", "m.glb", "--out", f"{HIP}.png", "--size", "32x24", "--samples", "1"],
        True,
        f"{HIP}.png",
    ),
    "bake": (["bake", "m.glb", "--out", f"{FOOT}.npz", "--fps", "10"], True, f"{FOOT}.npz"),
    "bake-error": (["bake", "nope.glb", "--out", "x.npz"], False, None),
    "view-usage": (["view", "--size", f"{FOOT}x1"], False, None),
    "demo-help": (["demo", "--help"], False, "print"),
}
#: The usual status of each command.
STATUS = {"bake-error": 1, "view-usage": 2}

#: (shell script running "$@", extra environment)
CONDITIONS = {
    "stdout-closed": ('exec "$@" >&-', {}),
    "stderr-closed": ('exec "$@" 2>&-', {}),
    "both-closed": ('exec "$@" >&- 2>&-', {}),
    "c-locale": ('exec "$@"', {"LC_ALL": "C"}),
    "c-locale-no-utf8-mode": ('exec "$@"', {"LC_ALL": "C", "PYTHONUTF8": "0"}),
    "full-pipe": ('"$@" | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}', {}),
}


def _environment(extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE", "PYTHONIOENCODING")
    }
    env.pop("PYTHONUTF8", None)
    env["LANG"] = "C.UTF-8"
    return {**env, **extra}


CASES = [
    pytest.param(
        command, condition, marks=[pytest.mark.gpu] if gpu else [], id=f"{command}-{condition}"
    )
    for command, (_args, gpu, _makes) in COMMANDS.items()
    for condition in CONDITIONS
]


@pytest.mark.parametrize(("command", "condition"), CASES)
def test_no_traceback_and_a_status_that_says_what_happened(folder, tmp_path, command, condition):
    args, _gpu, makes = COMMANDS[command]
    script, extra = CONDITIONS[condition]
    for name in os.listdir(folder):  # each case starts from the model alone
        if name != "m.glb":
            os.unlink(folder / name)
    result = subprocess.run(
        ["bash", "-c", script, "bash", sys.executable, "-m", "vkdqs", *args],
        capture_output=True,
        cwd=folder,
        env=_environment(extra),
        timeout=180,
    )
    out, err = result.stdout, result.stderr.decode("utf-8", "backslashreplace")
    assert b"Traceback" not in result.stdout and "Traceback" not in err, err
    status = STATUS.get(command, 0)
    stdout_closed = condition in ("stdout-closed", "both-closed")
    if makes == "print" and stdout_closed:
        status = 1
    if condition == "full-pipe" and makes == "print" and result.returncode == 141:
        status = 141  # the reader went away before everything was written
    assert result.returncode == status, err
    if condition in ("stderr-closed", "both-closed"):
        assert err == ""
    elif makes == "print" and stdout_closed:
        assert err == CLOSED
    elif command == "bake-error":
        assert err.count("\n") == 1 and err.startswith("vkdqs: error: ")
    elif command == "view-usage":
        assert err.startswith("usage: vkdqs view") and "vkdqs view: error: argument --size" in err
    else:
        assert err == ""
    if stdout_closed or condition == "full-pipe":
        assert out == b""
    if makes not in (None, "print"):  # the file is written, and nothing else got into it
        path = os.fsencode(folder) + b"/" + makes.encode()  # the name's bytes, as the shell gave
        assert os.path.isfile(path)
        if makes.endswith(".png"):
            assert read_png(os.fsdecode(path)).shape == (24, 32, 4)
        else:
            with np.load(os.fsdecode(path)) as z:
                assert z["positions"].shape == (11, 43, 3)
    if condition == "c-locale-no-utf8-mode":  # ASCII output: names escaped, file names as given
        if command == "info":
            for escaped in (b"H\\xfcfte", b"\\u8db3", b"\\U0001f9b4 walk"):
                assert escaped in out
        elif command == "render":
            assert out.startswith(b"wrote " + HIP.encode() + b".png (32x24, ")
            assert b"\\U0001f9b4 walk" in out
        elif command == "bake":
            assert out.startswith(
                b"wrote " + FOOT.encode() + b".npz: 11 frames ('\\U0001f9b4 walk'"
            )
    elif condition == "c-locale" and command == "info":  # Python's UTF-8 mode: as they are
        for name in (HIP, FOOT, WALK):
            assert name.encode() in out


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_standard_output_that_fails_is_one_line(folder):
    """Standard output on a full disk (/dev/full): info says so, status 1."""
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [sys.executable, "-m", "vkdqs", "info", "m.glb"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=folder,
            timeout=120,
        )
    assert result.returncode == 1
    assert result.stderr == "vkdqs: error: standard output: No space left on device\n"
