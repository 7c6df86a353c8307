"""vkdqs.files, the one writer of every file vkdqs produces (CPU only): exclusive temporaries
with unpredictable names, never a link followed, the output replaced only when complete, outputs
that are the input, a folder or a device refused, and writing errors (a full disk, a quota, the
file-size limit, no permission) as one line with the old file unchanged."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vkdqs import OutputError, files
from vkdqs.images import read_png, write_png

OLD = b"the old output\n"


def _leftovers(folder: Path, *keep: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text, text
    return text


@pytest.fixture
def outside(tmp_path):
    """A file outside the output's folder that a planted link points at."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    target = folder / "precious"
    target.write_bytes(b"do not touch\n")
    return target


def test_writes_the_file_and_nothing_else(tmp_path):
    out = tmp_path / "a.bin"
    assert files.write_bytes(out, b"new") == out
    assert out.read_bytes() == b"new"
    assert _leftovers(tmp_path) == ["a.bin"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask  # as open() would make it
    out.chmod(0o640)  # a replaced file keeps its permission bits
    files.write_bytes(out, b"newer")
    assert out.read_bytes() == b"newer" and stat.S_IMODE(out.stat().st_mode) == 0o640


def test_temporaries_are_exclusive_and_unpredictable(tmp_path):
    out = tmp_path / "walk.npz"
    a, b = files.AtomicFile(out), files.AtomicFile(out)
    try:
        assert a.temporary != b.temporary and a.temporary.parent == tmp_path
        assert a.temporary.name.startswith(".walk.npz.") and a.temporary.name.endswith(".tmp")
        assert stat.S_ISREG(os.lstat(a.temporary).st_mode)
        assert a.temporary.name != f".walk.partial-{os.getpid()}.npz"  # the old fixed name
    finally:
        a.discard()
        b.discard()
    assert _leftovers(tmp_path) == []


def test_a_link_at_the_output_is_replaced_not_followed(tmp_path, outside):
    out = tmp_path / "frame.png"
    out.symlink_to(outside)
    write_png(out, np.zeros((2, 3, 4), np.uint8))
    assert not out.is_symlink() and read_png(out).shape == (2, 3, 4)
    assert outside.read_bytes() == b"do not touch\n"
    dangling = tmp_path / "dangling.png"
    dangling.symlink_to(outside.parent / "not-yet")
    write_png(dangling, np.zeros((1, 1, 3), np.uint8))
    assert not dangling.is_symlink() and not (outside.parent / "not-yet").exists()


def test_a_link_at_the_old_predictable_name_is_left_alone(tmp_path, outside):
    out = tmp_path / "walk.npz"
    old_name = tmp_path / f".walk.partial-{os.getpid()}.npz"
    old_name.symlink_to(outside)
    files.write_bytes(out, b"bake")
    assert out.read_bytes() == b"bake"
    assert old_name.is_symlink() and outside.read_bytes() == b"do not touch\n"


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "input via a link"])
def test_the_input_is_refused(tmp_path, how):
    model = tmp_path / "model.glb"
    model.write_bytes(b"glTF model")
    out, source = model, model
    if how == "symlink":
        out = tmp_path / "out.glb"
        out.symlink_to(model)
    elif how == "hard link":
        out = tmp_path / "out.glb"
        os.link(model, out)
    elif how == "input via a link":
        source = tmp_path / "link.glb"
        source.symlink_to(model)
    with pytest.raises(OutputError, match="same file as the input") as info:
        files.write_bytes(out, b"overwritten", inputs=[source])
    assert isinstance(info.value, OSError) and info.value.errno == errno.EEXIST
    _one_line(info.value)
    assert model.read_bytes() == b"glTF model"
    # a different file of the same content is fine
    files.write_bytes(tmp_path / "other.glb", b"x", inputs=[source])


def test_folders_devices_and_missing_folders_are_refused(tmp_path):
    folder = tmp_path / "out.png"
    folder.mkdir()
    link = tmp_path / "link.png"
    link.symlink_to(folder)
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    cases = [
        (folder, "is a folder", errno.EISDIR),
        (link, "is a folder", errno.EISDIR),
        (fifo, "not a regular file", errno.EINVAL),
        (Path(os.devnull), "not a regular file", errno.EINVAL),
        (tmp_path / "no" / "x.png", "does not exist; create it first", errno.ENOENT),
    ]
    for path, message, code in cases:
        with pytest.raises(OutputError, match=message) as info:
            files.write_bytes(path, b"x")
        assert info.value.errno == code and str(path) in _one_line(info.value)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # still the device
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.png", "link.png", "out.png"]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_error_while_writing_keeps_the_old_file(tmp_path, error):
    out = tmp_path / "a.png"
    out.write_bytes(OLD)
    with pytest.raises(error):
        with files.atomic_output(out) as f:
            f.write(b"half")
            raise error("stop")
    assert out.read_bytes() == OLD and _leftovers(tmp_path) == ["a.png"]


@pytest.mark.parametrize(
    ("where", "code", "reason"),
    [
        ("fsync", errno.ENOSPC, "no space left on the disk"),
        ("replace", errno.EDQUOT, "the disk quota is exceeded"),
        ("fsync", errno.EIO, "Input/output error"),
    ],
)
def test_a_full_disk_is_one_line_and_keeps_the_old_file(tmp_path, monkeypatch, where, code, reason):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    out = tmp_path / "a.bin"
    out.write_bytes(OLD)
    monkeypatch.setattr(files.os, where, fail)
    with pytest.raises(OutputError) as info:
        files.write_bytes(out, b"new")
    assert _one_line(info.value) == f"{out}: cannot write it: {reason}; the old file is unchanged"
    assert info.value.errno == code and info.value.filename == str(out)
    assert out.read_bytes() == OLD and _leftovers(tmp_path) == ["a.bin"]
    with pytest.raises(OutputError, match="nothing was written"):
        files.write_bytes(tmp_path / "new.bin", b"new")
    assert _leftovers(tmp_path) == ["a.bin"]


#: Writes 64 KiB to argv[1] (and, with "path", through atomic_path) under a 16 KiB file-size
#: limit, SIGXFSZ ignored as the command line does; prints the error.
_LIMITED = textwrap.dedent(
    """
    import resource, signal, sys
    from vkdqs import OutputError, files
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
    try:
        if sys.argv[2] == "path":
            with files.atomic_path(sys.argv[1]) as tmp:
                with open(tmp, "wb") as f:
                    f.write(bytes(65536))
        else:
            files.write_bytes(sys.argv[1], bytes(65536))
    except OutputError as exc:
        print(exc)
    """
)


@pytest.mark.parametrize("mode", ["file", "path"])
def test_the_file_size_limit_is_one_line_and_keeps_the_old_file(tmp_path, mode):
    out = tmp_path / "big.bin"
    out.write_bytes(OLD)
    result = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(out), mode],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"{out}: cannot write it: the file would pass the file-size limit (ulimit -f) or the "
        "file system's largest; the old file is unchanged\n"
    )
    assert out.read_bytes() == OLD and _leftovers(tmp_path) == ["big.bin"]


@pytest.fixture
def unwritable(tmp_path):
    """A folder vkdqs may not create files in: read-only for a user; as root, who ignores
    permission bits, sysfs (EACCES, or EROFS where it is mounted read-only)."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        (folder / "a.png").write_bytes(OLD)
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
    else:
        yield Path("/sys")


@pytest.mark.parametrize("mode", ["file", "path"])
def test_no_permission_is_one_line(unwritable, mode):
    out = unwritable / "a.png"
    with pytest.raises(OutputError) as info:
        if mode == "file":
            write_png(out, np.zeros((1, 1, 3), np.uint8))
        else:
            with files.atomic_path(out):
                pass
    assert info.value.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
    text = _one_line(info.value)
    assert text.startswith(f"{out}: cannot write it: ")
    assert any(r in text for r in ("permission denied", "not permitted", "read-only"))
    if os.geteuid() != 0:
        assert out.read_bytes() == OLD and _leftovers(unwritable) == ["a.png"]


def test_atomic_path_is_in_a_private_folder_and_renamed(tmp_path, outside):
    out = tmp_path / "walk.usda"
    out.write_bytes(OLD)
    with files.atomic_path(out) as tmp:
        assert tmp.name == "walk.usda" and tmp.parent.parent == tmp_path
        assert stat.S_IMODE(tmp.parent.stat().st_mode) == 0o700
        assert not tmp.exists()  # the writer creates it
        tmp.write_bytes(b"#usda 1.0\n")
    assert out.read_bytes() == b"#usda 1.0\n" and _leftovers(tmp_path) == ["elsewhere", "walk.usda"]
    with pytest.raises(RuntimeError):
        with files.atomic_path(out) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("usd-core failed")
    assert out.read_bytes() == b"#usda 1.0\n" and _leftovers(tmp_path) == ["elsewhere", "walk.usda"]
    with pytest.raises(OutputError, match="cannot write it"):
        with files.atomic_path(tmp_path / "never.usda"):
            pass  # the writer wrote nothing: there is nothing to rename
    assert _leftovers(tmp_path) == ["elsewhere", "walk.usda"]


def test_the_writer_module_needs_no_numpy():
    """vkdqs.files is layer 1 (tests/test_layers.py) and imports only the standard library."""
    from .test_layers import _graph

    graph, externals = _graph()
    standard = {"__future__", "collections", "contextlib", "errno", "os", "pathlib", "shutil"}
    assert externals["files"] <= standard | {"fcntl", "stat", "tempfile", "typing"}
    assert graph["files"] == {"errors"}


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise")
def test_writeback_starts_as_the_file_grows(tmp_path, monkeypatch):
    """AtomicFile.write hands each WRITEBACK_BYTES written to the disk (posix_fadvise on the new
    range), so that commit's fsync does not wait for a whole bake at the end."""
    calls = []
    monkeypatch.setattr(files, "WRITEBACK_BYTES", 10)
    monkeypatch.setattr(
        files.os, "posix_fadvise", lambda fd, start, n, advice: calls.append((start, n, advice))
    )
    out = files.AtomicFile(tmp_path / "a.bin")
    for _ in range(5):
        out.write(b"0123456")
    out.written()
    out.written()  # nothing new: nothing to hand over
    out.commit()
    assert (tmp_path / "a.bin").read_bytes() == b"0123456" * 5
    dontneed = os.POSIX_FADV_DONTNEED
    assert calls == [(0, 14, dontneed), (14, 14, dontneed), (28, 7, dontneed)]
