"""Where a glTF file may read from: its own folder, regular files only, a bounded number of bytes.

A model file is untrusted input. A buffer or image ``uri`` is either a base64 ``data:`` URI or a
relative reference to a file inside the folder of the model (percent-decoded, as the glTF
specification says). Everything else is refused with a :class:`GltfError` naming the JSON path:
``..`` segments (also percent-encoded), absolute paths and drive letters, any other scheme
(``file:``, ``http:``), and symlinks that resolve outside the folder. Files are opened without
blocking and read only when they are regular files (not FIFOs, devices or directories), and never
past the length the caller asks for.

:func:`resolve_uri` and :func:`read_regular_file` are the only way vkdqs.gltf turns a URI into
bytes; a texture loader must use them too.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
import stat
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from vkdqs.gltf.errors import GltfError, _show

# O_NONBLOCK: opening a FIFO nobody writes to must not wait. O_NOFOLLOW (resolved paths only): the
# last component cannot be swapped for a symlink between resolving and opening.
_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_OPEN |= getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SEPARATORS = re.compile(r"[/\\]" if os.name == "nt" else r"/")


def _fail(name: str, json_path: str, msg: str) -> NoReturn:
    where = ": ".join(p for p in (name, json_path) if p)
    raise GltfError(f"{where}: {msg}" if where else msg)


def is_data_uri(uri: str) -> bool:
    """Whether ``uri`` is a ``data:`` URI (the scheme is case-insensitive)."""
    return uri[:5].lower() == "data:"


def decode_data_uri(uri: str, json_path: str, *, name: str = "") -> bytes:
    """The bytes of a base64 ``data:`` URI; GltfError for any other data URI or bad base64."""
    header, comma, payload = uri.partition(",")
    if not comma or not header.lower().endswith(";base64"):
        _fail(name, json_path, "only base64 data: URIs are supported")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        _fail(name, json_path, f"invalid base64 data: {exc}")


def data_uri_size(uri: str) -> int:
    """Upper bound of the decoded size of a base64 ``data:`` URI, without decoding it."""
    return (len(uri) - uri.find(",") - 1) * 3 // 4


def _inside(base: str, path: str) -> bool:
    try:
        return os.path.commonpath([base, path]) == base
    except ValueError:  # different drives on Windows
        return False


def resolve_uri(base_dir: str | Path, uri: str, json_path: str, *, name: str = "") -> Path:
    """The file a relative glTF ``uri`` names inside ``base_dir``, symlinks resolved.

    The file need not exist (an unread image may be missing). GltfError, naming ``name`` (the
    model file) and ``json_path``, for a data: URI, another scheme, an absolute path, a ``..``
    segment, a NUL byte, or a path that resolves outside ``base_dir``.
    """
    if is_data_uri(uri):
        _fail(name, json_path, "a data: URI does not name a file")
    if not uri:
        _fail(name, json_path, "is empty")
    try:
        uri.encode("utf-8")
    except UnicodeEncodeError as exc:  # JSON's "\ud800": a lone surrogate, no file name
        _fail(name, json_path, f"{_show(uri)} is not valid Unicode ({exc.reason} at {exc.start})")
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError as exc:
        _fail(name, json_path, f"invalid URI {_show(uri)}: {exc}")
    if parts.scheme or parts.netloc:
        _fail(
            name,
            json_path,
            f"{_show(uri)}: only relative file URIs and data: URIs are supported "
            "(a model reads files in its own folder only)",
        )
    raw = urllib.parse.unquote_to_bytes(uri)
    if b"\0" in raw:
        _fail(name, json_path, f"{_show(uri)} contains a NUL byte")
    rel = os.fsdecode(raw)
    if os.path.isabs(rel) or os.path.splitdrive(rel)[0] or rel[:1] in ("/", "\\"):
        _fail(name, json_path, f"{_show(uri)} is an absolute path; only relative URIs are read")
    if ".." in _SEPARATORS.split(rel):
        _fail(name, json_path, f"{_show(uri)} has a '..' segment; a model reads its own folder")
    base = _realpath(base_dir, name, json_path)
    target = _realpath(os.path.join(base, rel), name, json_path, _show(uri))
    if not _inside(base, target):
        _fail(name, json_path, f"{_show(uri)} resolves outside the model's folder (a symlink)")
    return Path(target)


def _realpath(path: str | Path, name: str, json_path: str, what: str = "") -> str:
    """``os.path.realpath``, a GltfError naming ``what`` (default: the path) when the path
    changes under it (a file swapped for a symlink between its ``lstat`` and ``readlink`` makes
    it raise OSError)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        what = what or _show(str(path))
        _fail(name, json_path, f"cannot resolve {what}: {reason} (was it changed while read?)")


def _opened_path(fd: int) -> str | None:
    """The path the kernel gives for an open file descriptor (Linux), else None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


@contextmanager
def open_regular_file(
    path: str | Path,
    json_path: str = "",
    *,
    name: str = "",
    inside: str | Path | None = None,
    what: str = "",
) -> Iterator[tuple[io.FileIO, int]]:
    """Open a regular file for reading; yields ``(file, size)`` and closes it.

    The file is opened without blocking (a FIFO with no writer does not wait) and refused unless
    ``fstat`` on the open descriptor says it is a regular file, so a FIFO, a device
    (``/dev/zero``), a socket or a directory is never read. With ``inside`` (the folder given to
    :func:`resolve_uri`), the path must not be a symlink when opened and, where the kernel tells
    (Linux ``/proc/self/fd``), the opened file must lie in that folder, so a folder swapped for a
    symlink after resolving is caught too. ``what`` names the file in messages (default: path).
    """
    what = what or str(path)
    flags = _OPEN | (_NOFOLLOW if inside is not None else 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        _fail(name, json_path, f"cannot read {what}: {reason}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _fail(name, json_path, f"{what} is not a regular file; it is not read")
        if inside is not None:
            opened = _opened_path(fd)
            if opened is not None and not _inside(_realpath(inside, name, json_path), opened):
                _fail(name, json_path, f"{what} resolves outside the model's folder")
        f = io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f, st.st_size


def read_at_most(f: io.FileIO, length: int, json_path: str = "", *, name: str = "") -> bytearray:
    """Up to ``length`` bytes from ``f`` (fewer at end of file), read into one buffer."""
    data = bytearray(max(0, length))
    view = memoryview(data)
    got = 0
    try:
        while got < len(data):
            n = f.readinto(view[got:])
            if not n:
                break
            got += n
    except OSError as exc:
        _fail(name, json_path, f"cannot read the file: {exc.strerror or exc}")
    finally:
        view.release()
    del data[got:]
    return data


def read_regular_file(
    path: str | Path,
    length: int,
    json_path: str = "",
    *,
    name: str = "",
    inside: str | Path | None = None,
    what: str = "",
) -> tuple[bytearray, int]:
    """At most ``length`` bytes of a regular file (see :func:`open_regular_file`), and its size.

    Never reads more than ``length`` bytes nor more than the file held when opened.
    """
    with open_regular_file(path, json_path, name=name, inside=inside, what=what) as (f, size):
        return read_at_most(f, min(length, size), json_path, name=name), size
