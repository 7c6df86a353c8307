"""Bakes written safely (docs/security.md, "Files vkdqs writes"): no link planted at a
predictable name is followed, the model is never the output, a folder is refused, an interrupted
bake leaves no temporary and the old output intact, and a full disk or the file-size limit is one
line with the old output kept, for .npz, .glb and .usda.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import vkdqs
from vkdqs import OutputError, files

from .gltf_fixtures_material import CHECKER, textured_rig

OLD = b"the old output\n"
FORMATS = [".npz", ".glb", ".usda"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The textured rig (one texture: a USD bake writes ``<stem>_texture0.png``)."""
    path = tmp_path_factory.mktemp("model") / "rig.glb"
    textured_rig(CHECKER).save(path)
    return path


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _cli(*args, env=None, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "vkdqs", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


@pytest.mark.parametrize("suffix", FORMATS)
def test_links_planted_at_every_predictable_name_are_not_followed(model, device, tmp_path, suffix):
    out_dir, elsewhere = tmp_path / "bakes", tmp_path / "elsewhere"
    out_dir.mkdir()
    elsewhere.mkdir()
    out = out_dir / f"walk{suffix}"
    predictable = [out, out_dir / f".walk.partial-{os.getpid()}{suffix}"]  # the old temporary
    if suffix == ".usda":
        predictable.append(out_dir / "walk_texture0.png")
    for i, name in enumerate(predictable):
        target = elsewhere / f"target{i}"
        target.write_bytes(b"do not touch\n")
        name.symlink_to(target)
    vkdqs.bake_to_file(model, out, fps=10, device=device)
    assert [p.read_bytes() for p in sorted(elsewhere.iterdir())] == [b"do not touch\n"] * len(
        predictable
    )
    assert not out.is_symlink() and out.stat().st_size > 1000
    assert predictable[1].is_symlink()  # the old name is not used at all
    for texture in predictable[2:]:
        assert not texture.is_symlink() and texture.read_bytes().startswith(b"\x89PNG")
    assert _names(out_dir) == sorted(p.name for p in predictable)


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "loaded scene"])
def test_the_model_is_never_the_output(model, tmp_path, how):
    """Refused before anything is loaded or baked: no device is opened."""
    source = tmp_path / "rig.glb"
    source.write_bytes(model.read_bytes())
    out, scene = source, source
    if how == "symlink":
        out = tmp_path / "out.glb"
        out.symlink_to(source)
    elif how == "hard link":
        out = tmp_path / "out.glb"
        os.link(source, out)
    elif how == "loaded scene":
        scene = vkdqs.load_gltf(source)
    with pytest.raises(OutputError, match=r"same file as the input .*rig\.glb") as info:
        vkdqs.bake_to_file(scene, out)
    assert info.value.errno == errno.EEXIST and "\n" not in str(info.value)
    assert source.read_bytes() == model.read_bytes()


@pytest.mark.parametrize("command", ["bake", "render"])
def test_cli_refuses_the_model_as_output(model, tmp_path, command):
    source = tmp_path / "m.glb"
    source.write_bytes(model.read_bytes())
    link = tmp_path / "link.glb"
    link.symlink_to(source)
    for out in (source, link):
        result = _cli(command, source, "--out", out)
        assert result.returncode == 1
        assert result.stderr == (
            f"vkdqs: error: {out}: is the same file as the input {source}; writing it would "
            "replace what is being read: name another file\n"
        )
        assert result.stdout == ""
    assert source.read_bytes() == model.read_bytes() and link.is_symlink()


def test_save_onto_a_folder_or_the_model_is_refused(model, device, tmp_path):
    b = vkdqs.bake(model, fps=5, device=device)
    folder = tmp_path / "walk.npz"
    folder.mkdir()
    with pytest.raises(OutputError, match=r"walk\.npz: is a folder; name a file to write"):
        b.save(folder)
    with pytest.raises(OutputError, match="same file as the input"):
        b.save(tmp_path / "rig.glb", inputs=[tmp_path / "rig.glb"])
    with pytest.raises(OutputError, match="does not exist; create it first"):
        b.save(tmp_path / "no" / "walk.glb")
    assert _names(tmp_path) == ["walk.npz"] and not list(folder.iterdir())


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize(
    ("where", "code", "reason"),
    [("fsync", errno.ENOSPC, "no space left on the disk"), ("replace", errno.EDQUOT, "quota")],
)
def test_a_full_disk_keeps_the_old_output(
    model, device, tmp_path, monkeypatch, suffix, where, code, reason
):
    out = tmp_path / f"walk{suffix}"
    out.write_bytes(OLD)

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(files.os, where, fail)
    with pytest.raises(OutputError) as info:
        vkdqs.bake_to_file(model, out, fps=10, device=device)
    text = str(info.value)
    name, why = text.split(": cannot write it: ")
    if name == str(out):
        assert why.endswith("; the old file is unchanged")
    else:  # USD writes its texture first
        assert name == str(tmp_path / "walk_texture0.png") and suffix == ".usda"
    assert reason in why and "\n" not in text
    monkeypatch.undo()
    assert out.read_bytes() == OLD and _names(tmp_path) == [out.name]


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (32768, 32768))


@pytest.mark.gpu
@pytest.mark.parametrize("suffix", FORMATS)
def test_the_file_size_limit_is_one_line_from_the_cli(model, tmp_path, suffix):
    """A write past ``ulimit -f`` fails with EFBIG (the command line ignores SIGXFSZ, which
    would kill it): one line, no usd-core diagnostics, the old output kept, no temporary."""
    out = tmp_path / f"walk{suffix}"
    out.write_bytes(OLD)
    result = _cli(
        "bake",
        model,
        "--fps",
        "200",
        "--out",
        out,
        env={"PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=_limit_file_size,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"vkdqs: error: {out}: cannot write it: the file would pass the file-size limit "
        "(ulimit -f) or the file system's largest; the old file is unchanged\n"
    )
    assert out.read_bytes() == OLD and _names(tmp_path) == [out.name]


@pytest.mark.gpu
def test_no_permission_is_one_line_from_the_cli(model, tmp_path):
    if os.geteuid() == 0:  # root ignores permission bits: sysfs refuses new files even to root
        out = Path("/sys/walk.npz")
    else:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        out = folder / "walk.npz"
    result = _cli("bake", model, "--out", out)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"vkdqs: error: {out}: cannot write it: ")
    assert any(r in line for r in ("permission denied", "not permitted", "read-only"))


#: The command line, its writer slowed (two frames a batch, 50 ms a batch) so that a signal
#: lands mid-bake; it touches argv[1] once the first batch is written.
_SLOW_BAKE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from vkdqs.baking import driver
    mark = Path(sys.argv.pop(1))
    driver.BATCH_BYTES = 24 * 64 * 2
    opener = driver._open_writer

    def slow_writer(*args):
        writer = opener(*args)
        write = writer.write

        def slowly(p, n, boxes):
            write(p, n, boxes)
            mark.touch()
            time.sleep(0.05)

        writer.write = slowly
        return writer

    driver._open_writer = slow_writer
    from vkdqs.app import cli
    sys.exit(cli.main(sys.argv[1:]))
    """
)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("suffix", "name"),
    [
        (".npz", "SIGTERM"),
        (".npz", "SIGHUP"),
        (".npz", "SIGINT"),
        (".glb", "SIGTERM"),
        (".usda", "SIGTERM"),
    ],
)
def test_a_signal_during_a_bake_leaves_no_temporary(model, tmp_path, suffix, name):
    folder, marks = tmp_path / "out", tmp_path / "marks"
    folder.mkdir()
    marks.mkdir()
    out = folder / f"walk{suffix}"
    out.write_bytes(OLD)
    mark = marks / "writing"
    args = [model, "--fps", "300", "--quiet", "--out", out]  # 301 frames: over 7 s slowed
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_BAKE, mark, "bake", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert mark.exists(), proc.communicate()[1]
        during = _names(folder)
        proc.send_signal(getattr(signal, name))
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    signum = getattr(signal, name)
    assert proc.returncode == 128 + signum, stderr
    message = "vkdqs: interrupted" if name == "SIGINT" else f"vkdqs: stopped by {name}"
    # the last line (a .glb of 301 frames warns first that WebGL2 viewers may not show it)
    assert stderr.endswith(message + "\n") and stdout == "" and "Traceback" not in stderr
    if suffix == ".npz":  # written as it goes: its temporary was there
        assert len(during) == 2 and during[0].startswith(".walk.npz.")
    assert _names(folder) == [out.name] and out.read_bytes() == OLD


def test_signal_handlers_while_a_command_runs():
    """Whoever started vkdqs ignored SIGHUP (``nohup``): the command line leaves it so. SIGXFSZ
    is ignored while a command runs (CPython ignores it at start-up already; an embedding
    program may not), and every handler is put back afterwards."""
    code = textwrap.dedent(
        """
        import signal, sys
        from vkdqs.app import cli
        from vkdqs.app.cli import info
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        names = ("SIGHUP", "SIGXFSZ", "SIGTERM")
        seen = []
        info.info = lambda **kw: seen.append([signal.getsignal(getattr(signal, n)) for n in names])
        cli.main(["info", "x.glb"])
        (hup, xfsz, term), = seen
        assert (hup, xfsz) == (signal.SIG_IGN, signal.SIG_IGN) and callable(term), seen
        after = [signal.getsignal(getattr(signal, n)) for n in names]
        assert after == [signal.SIG_IGN, signal.SIG_DFL, signal.SIG_DFL], after
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_usd_textures_are_refused_when_they_would_replace_the_model(model, device, tmp_path):
    """A USD bake's texture sidecar named like the model is refused before baking, too."""
    source = tmp_path / "walk_texture0.png"
    source.write_bytes(b"the model's own image\n")
    with pytest.raises(OutputError, match="same file as the input"):
        vkdqs.bake(model, fps=5, device=device).save(tmp_path / "walk.usda", inputs=[source])
    assert source.read_bytes() == b"the model's own image\n" and _names(tmp_path) == [source.name]


def test_a_bake_in_another_folder_of_the_same_name_is_fine(model, device, tmp_path):
    """Only the file itself is the input: a same-named file elsewhere is written."""
    (tmp_path / "rig.glb").write_bytes(OLD)
    vkdqs.bake_to_file(model, tmp_path / "rig.glb", fps=5, device=device)
    assert (tmp_path / "rig.glb").read_bytes()[:4] == b"glTF"
