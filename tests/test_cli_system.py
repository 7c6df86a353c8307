"""The command line as an installed tool: ``--version``, help that shows every default, and one
clear line (no traceback) when the system lacks Vulkan: no driver, or no loader library at all.
The system cases run in subprocesses, as a user would meet them."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

import vkdqs
from vkdqs.app import cli


def _run(code_or_args: list[str], env: dict[str, str] | None = None, cwd=None):
    return subprocess.run(
        [sys.executable, *code_or_args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"vkdqs {vkdqs.__version__}\n"
    result = _run(["-m", "vkdqs", "--version"])
    assert result.returncode == 0 and result.stdout.strip() == f"vkdqs {vkdqs.__version__}"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("command", ["demo", "view", "render", "info"])
def test_every_option_has_help_that_shows_its_default(command):
    p = _subparsers()[command]
    formatter = p._get_formatter()
    for action in p._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = action.option_strings[0] if action.option_strings else action.dest
        assert action.help and len(action.help) > 10, f"{command} {name} has no help"
        if action.nargs == 0 or action.required:  # a flag (off unless given), a required MODEL
            continue
        text = formatter._get_help_string(action)
        assert "(default" in text, f"{command} {name}: {text!r} does not show its default"


def test_help_shows_defaults_as_typed(capsys):
    with pytest.raises(SystemExit):
        cli.main(["render", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for text in ("(default: 960x540)", "(default: frame.png)", "(default: 4)"):
        assert text in out
    assert "(default: grows with the file" in out  # --max-bytes, described in words
    # defaults given as text are parsed like the command line's values
    args = cli.build_parser().parse_args(["render"])
    assert args.size == (960, 540) and args.max_bytes is None and args.out.name == "frame.png"


@pytest.mark.parametrize("variable", ["VK_ICD_FILENAMES", "VK_DRIVER_FILES"])
def test_no_vulkan_driver_is_one_line_saying_what_to_install(tmp_path, variable):
    env = {"VK_ICD_FILENAMES": "", "VK_DRIVER_FILES": "", variable: "/nonexistent.json"}
    result = _run(["-m", "vkdqs", "render", "--out", str(tmp_path / "x.png")], env, tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    ours = [line for line in result.stderr.splitlines() if line.startswith("vkdqs")]
    assert ours == [result.stderr.splitlines()[-1]]  # the loader may print its own lines first
    (line,) = ours
    assert line.startswith("vkdqs: error: no Vulkan driver found: install one")
    assert "apt-get install mesa-vulkan-drivers" in line
    assert f"{variable}='/nonexistent.json' is set" in line
    assert not (tmp_path / "x.png").exists()


#: Makes ``import vulkan`` fail as the binding does when libvulkan.so.1 is missing, then runs
#: the command line (or the code in argv[1]).
_NO_LOADER = """
import importlib.abc, sys

class NoLoader(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "vulkan" or name.startswith("vulkan."):
            raise OSError("Cannot find Vulkan SDK version. Please ensure that it is installed")

sys.meta_path.insert(0, NoLoader())
sys.modules.pop("vulkan", None)
if sys.argv[1] == "--code":
    exec(sys.argv[2])
else:
    from vkdqs.app import cli
    sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "args",
    [["render", "--out", "x.png"], ["demo", "--no-window"], ["view"]],
    ids=["render", "demo", "view"],
)
def test_no_vulkan_loader_is_one_line_naming_the_package(tmp_path, args):
    result = _run(["-c", _NO_LOADER, *args], cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "vkdqs: error: the Vulkan loader (libvulkan.so.1) is not installed: install it and a "
        "Vulkan driver (Debian/Ubuntu: apt-get install libvulkan1 mesa-vulkan-drivers)"
    ]
    assert result.stdout == ""


def test_no_vulkan_loader_in_the_library_is_a_capability_error(tmp_path):
    code = (
        "import vkdqs\n"
        "for name in ('Device', 'Skinner', 'Renderer', 'OffscreenTarget'):\n"
        "    try:\n"
        "        getattr(vkdqs, name)\n"
        "    except vkdqs.CapabilityError as exc:\n"
        "        assert 'apt-get install libvulkan1' in str(exc), exc\n"
        "        assert isinstance(exc.__cause__, OSError)\n"
        "    else:\n"
        "        raise AssertionError(name)\n"
        "import importlib\n"
        "for module in ('engine.skinner', 'engine.renderer', 'engine.targets', 'engine.crowd',\n"
        "               'methods.cor.gpu', 'engine.overlay_pass', 'gpu.device'):\n"
        "    # direct imports of the GPU layers say the same\n"
        "    try:\n"
        "        importlib.import_module('vkdqs.' + module)\n"
        "    except vkdqs.CapabilityError as exc:\n"
        "        assert 'apt-get install libvulkan1' in str(exc), (module, exc)\n"
        "    else:\n"
        "        raise AssertionError(module)\n"
        "import vkdqs.dq, vkdqs.gltf, vkdqs.mesh  # the numpy layer needs no loader\n"
    )
    result = _run(["-c", _NO_LOADER, "--code", code], cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_info_needs_no_vulkan_loader(tmp_path):
    from .gltf_fixtures import make_rig

    make_rig(scaled=False).save(tmp_path / "rig.glb")
    result = _run(["-c", _NO_LOADER, "info", "rig.glb"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("rig.glb: 12 nodes")


def test_a_closed_output_pipe_stops_quietly(tmp_path):
    """`vkdqs info model.glb | head -1`: the reader goes away, vkdqs stops without a message
    or a traceback (status 141, as for a process a SIGPIPE ended)."""
    from .gltf_fixtures import make_rig

    make_rig(scaled=False).save(tmp_path / "rig.glb")
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: every write fails with EPIPE
    try:
        result = subprocess.run(
            [sys.executable, "-m", "vkdqs", "info", "rig.glb"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 141
    assert result.stderr == ""
