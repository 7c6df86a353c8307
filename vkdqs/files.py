"""The one way vkdqs writes a file: bakes, their USD textures, PNG stills, screenshots, figures.

A file is written under an unpredictable temporary name in its destination folder, created
exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``, through :func:`tempfile.mkstemp`), so a link or
file planted there in advance is never followed or reused; it is flushed and fsynced, given the
permission bits the old file had (a new file: ``0o666`` less the umask), and renamed over the
output (:func:`os.replace`), so the output is either the old file or the complete new one. On any
error, or an interrupt, the temporary is removed and the old output is left as it was.

An output is refused, before anything is written (:class:`~vkdqs.OutputError`), when it is a
folder, not a regular file (a device such as ``/dev/null``, a FIFO, a socket), in a folder that
does not exist, or one of the ``inputs`` the caller names (the model a bake reads: the same file,
also through a symbolic or hard link). An output that is a symbolic link is replaced by the new
file; the link's target is never written.

Writing errors become one-line :class:`~vkdqs.OutputError` messages (also ``OSError``, with the
``errno``): a full disk (``ENOSPC``), a quota (``EDQUOT``), the file-size limit (``EFBIG``; the
command line ignores ``SIGXFSZ`` so that such a write fails instead of killing it), no permission
(``EACCES``, ``EPERM``, ``EROFS``).

:func:`atomic_output` gives the temporary as an open binary file; :func:`atomic_path` gives a
path, for writers that open the file themselves (usd-core), inside a private folder
(mode 0700) made exclusively next to the output; :func:`write_bytes` writes bytes;
:class:`AtomicFile` is what they are made of, for writers that keep a file open across calls.

A log that grows a line at a time (a batch bake's manifest) is :class:`AppendLog`: opened with
``O_APPEND | O_NOFOLLOW`` (never through a link), each line written whole by one ``os.write`` and
fsynced, so a process killed at any moment leaves complete lines and at most one torn last line,
which :func:`read_lines` leaves out and the next :class:`AppendLog` ends with a line break first.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .errors import OutputError

__all__ = [
    "AppendLog",
    "AtomicFile",
    "atomic_output",
    "atomic_path",
    "check_output",
    "output_error",
    "write_bytes",
]

PathLike = str | os.PathLike

#: What each writing error means, as the one-line message says it.
_REASONS = {
    errno.ENOSPC: "no space left on the disk",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file would pass the file-size limit (ulimit -f) or the file system's largest",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
}
#: Characters of the output's name kept in its temporary's name (NAME_MAX is 255 bytes).
_NAME_CHARS = 48
#: Bytes :meth:`AtomicFile.write` writes between two starts of writeback.
WRITEBACK_BYTES = 64 * 2**20


def output_error(exc: OSError, path: PathLike, *, existed: bool) -> OutputError:
    """The one-line :class:`~vkdqs.OutputError` for ``exc``, an error writing ``path`` (whose
    old file ``existed`` or not): why, and that the old file is unchanged."""
    if isinstance(exc, OutputError):
        return exc
    reason = _REASONS.get(exc.errno or 0) or (exc.strerror or str(exc) or type(exc).__name__)
    kept = "the old file is unchanged" if existed else "nothing was written"
    error = OutputError(f"{os.fsdecode(path)}: cannot write it: {reason}; {kept}")
    error.errno, error.filename = exc.errno, os.fsdecode(path)
    return error


def _refuse(path: Path, why: str, code: int) -> OutputError:
    error = OutputError(f"{path}: {why}")
    error.errno, error.filename = code, str(path)
    return error


def check_output(path: PathLike, inputs: Iterable[PathLike | None] = ()) -> Path:
    """``path`` as a Path when vkdqs may write it, else an :class:`~vkdqs.OutputError`.

    Refused: a folder; an existing file that is not a regular file (a device, FIFO or socket:
    writing one by renaming would replace it); a path in a folder that does not exist; one of
    ``inputs`` (the same file: equal device and inode, also through a symbolic or hard link, or
    the same real path). Nothing is created.
    """
    path = Path(path)
    try:
        st: os.stat_result | None = os.stat(path)  # through a link: a link to the input is it
    except OSError:  # missing, or a dangling link (replaced, never followed)
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise _refuse(path, "is a folder; name a file to write", errno.EISDIR)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _refuse(
            path,
            "is not a regular file (a device, pipe or socket); vkdqs writes a file under a "
            "temporary name and renames it over the output, so name a file",
            errno.EINVAL,
        )
    real = os.path.realpath(path)
    for source in inputs:
        if source is None:
            continue
        try:
            src = os.stat(source)
        except OSError:
            src = None
        same = st is not None and src is not None and os.path.samestat(st, src)
        if same or real == os.path.realpath(source):
            raise _refuse(
                path,
                f"is the same file as the input {os.fsdecode(source)}; writing it would replace "
                "what is being read: name another file",
                errno.EEXIST,
            )
    parent = path.parent
    if not parent.is_dir():
        raise _refuse(
            path, f"the folder {str(parent)!r} does not exist; create it first", errno.ENOENT
        )
    return path


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:  # a few dozen lines
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore
    os.umask(mask)
    return mask


def _mode(path: Path) -> int:
    """The permission bits the new file gets: the old regular file's, else 0o666 less umask."""
    try:
        st = os.lstat(path)  # the link itself: a link's target is not looked at
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode) & 0o777
    except OSError:
        pass
    return 0o666 & ~_umask()


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: not every file system can)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicFile:
    """``path`` being written under a temporary name beside it, until :meth:`commit` renames it
    over ``path`` or :meth:`discard` removes it.

    Parameters
    ----------
    path : str or PathLike
        The output; checked by :func:`check_output` against ``inputs``.
    inputs : iterable of paths
        Files the caller reads (e.g. the model a bake reads): the output must not be one of them.
    want_path : bool
        False (default): :attr:`file` is the temporary, open for binary reading and writing
        (made by :func:`tempfile.mkstemp`). True: no file is opened; :attr:`temporary` is
        ``<private folder>/<name of path>`` for a writer that creates the file itself (its
        extension kept, as usd-core picks the format by it), in a folder of mode 0700 made by
        :func:`tempfile.mkdtemp` next to the output, so nobody else can put a link there.

    Attributes
    ----------
    path : Path
    temporary : Path
    file : binary file or None
    existed : bool
        Whether ``path`` existed (the messages say the old file is unchanged).

    Raises
    ------
    OutputError
        The output is refused, or the temporary cannot be made (e.g. no permission).
    """

    def __init__(
        self,
        path: PathLike,
        *,
        inputs: Iterable[PathLike | None] = (),
        want_path: bool = False,
    ) -> None:
        self.path = check_output(path, inputs)
        self.existed = os.path.lexists(self.path)
        self.file: IO[bytes] | None = None
        self._folder: Path | None = None
        self._done = False
        self._flushed = self._unflushed = 0  # bytes handed to the disk; written since
        self._mode = _mode(self.path)
        prefix = f".{self.path.name[:_NAME_CHARS]}."
        parent = self.path.parent
        try:
            if want_path:
                self._folder = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=parent))
                self.temporary = self._folder / self.path.name
            else:
                fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=parent)
                self.temporary = Path(name)
                try:
                    os.fchmod(fd, self._mode)
                    self.file = os.fdopen(fd, "w+b")
                except BaseException:
                    os.close(fd)
                    raise
        except OSError as exc:
            self.discard()
            raise output_error(exc, self.path, existed=self.existed) from None
        except BaseException:
            self.discard()
            raise

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` to :attr:`file`, starting writeback (:meth:`written`) every
        :data:`WRITEBACK_BYTES`; returns the bytes written."""
        assert self.file is not None
        n = self.file.write(data)
        self._unflushed += n
        if self._unflushed >= WRITEBACK_BYTES:
            self.written()
        return n

    def written(self) -> None:
        """Start writing what :attr:`file` holds so far to the disk, in the background, so
        that :meth:`commit`'s fsync has little left to wait for (a large bake's fsync would
        otherwise wait for the whole file: Linux starts writeback only at 10 % of memory).

        ``posix_fadvise(POSIX_FADV_DONTNEED)`` on the range written since the last call: Linux
        starts its writeback and drops the pages from the cache once written, as the output is
        not read back. A no-op where that is not available."""
        self._unflushed = 0
        if self.file is None or not hasattr(os, "posix_fadvise"):
            return
        self.file.flush()
        end = self.file.tell()
        if end > self._flushed:
            try:
                os.posix_fadvise(
                    self.file.fileno(), self._flushed, end - self._flushed, os.POSIX_FADV_DONTNEED
                )
            except OSError:
                return
            self._flushed = end

    def commit(self) -> Path:
        """Flush and fsync the temporary, rename it over :attr:`path`; returns the path.

        Raises :class:`~vkdqs.OutputError` (and removes the temporary) when that fails.
        """
        try:
            if self.file is not None:
                self.file.flush()
                os.fsync(self.file.fileno())
                self.file.close()
            else:
                flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                fd = os.open(self.temporary, flags)  # in our private folder: ours
                try:
                    os.fchmod(fd, self._mode)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            os.replace(self.temporary, self.path)
            self._done = True
        except OSError as exc:
            self.discard()
            raise output_error(exc, self.path, existed=self.existed) from None
        except BaseException:
            self.discard()
            raise
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        _fsync_folder(self.path.parent)
        return self.path

    def discard(self) -> None:
        """Close and remove the temporary (and the private folder); the output is untouched.
        Safe to call more than once, and after :meth:`commit`."""
        if self.file is not None:
            try:
                self.file.close()
            except OSError:  # e.g. the disk is full: the buffered bytes cannot be flushed
                pass
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        elif not self._done and getattr(self, "temporary", None) is not None:
            try:
                os.unlink(self.temporary)
            except OSError:
                pass
        self._done = True

    def error(self, exc: OSError) -> OutputError:
        """:func:`output_error` for ``exc``, an error while writing this file."""
        return output_error(exc, self.path, existed=self.existed)


@contextmanager
def atomic_output(path: PathLike, *, inputs: Iterable[PathLike | None] = ()) -> Iterator[IO[bytes]]:
    """Write ``path`` through a binary file, the temporary that replaces it when complete.

    ::

        with atomic_output("walk.glb", inputs=[model]) as f:
            f.write(data)

    The file is the temporary (:class:`AtomicFile`); when the block ends it is fsynced and
    renamed over ``path``. An exception in the block removes it and leaves ``path`` as it was;
    an ``OSError`` there (writing failed) becomes an :class:`~vkdqs.OutputError` naming ``path``.
    """
    out = AtomicFile(path, inputs=inputs)
    assert out.file is not None
    with _committed(out):
        yield out.file


@contextmanager
def atomic_path(path: PathLike, *, inputs: Iterable[PathLike | None] = ()) -> Iterator[Path]:
    """A path for a writer that creates the file itself (usd-core's ``Export``).

    ::

        with atomic_path("walk.usdc") as tmp:
            layer.Export(str(tmp))

    ``tmp`` has ``path``'s name, in a private folder (mode 0700) made next to ``path``; when the
    block ends the file there is fsynced and renamed over ``path`` and the folder removed. An
    exception in the block removes both and leaves ``path`` as it was (an ``OSError`` becomes an
    :class:`~vkdqs.OutputError`).
    """
    out = AtomicFile(path, inputs=inputs, want_path=True)
    with _committed(out):
        yield out.temporary


@contextmanager
def _committed(out: AtomicFile) -> Iterator[None]:
    """Commit ``out`` when the block ends; discard it on any exception (an ``OSError``, a
    failed write, as an :class:`~vkdqs.OutputError` naming the output)."""
    try:
        yield
    except OSError as exc:
        out.discard()
        raise out.error(exc) from None
    except BaseException:
        out.discard()
        raise
    out.commit()


def write_bytes(path: PathLike, data: bytes, *, inputs: Iterable[PathLike | None] = ()) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_output`; returns ``path`` as a Path."""
    with atomic_output(path, inputs=inputs) as f:
        f.write(data)
    return Path(path)


def _open_regular(path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open`` that never follows a link at ``path`` and refuses what is not a regular
    file (an OutputError); returns the descriptor."""
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(
                path, "is a symbolic link; vkdqs does not write through one", exc.errno
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refuse(path, "is not a regular file; name a file", errno.EINVAL)
    return fd


def read_lines(path: PathLike) -> list[bytes]:
    """The complete lines of a log :class:`AppendLog` writes (without their line breaks); a
    last line without one (torn by a process killed while writing it) is left out. A missing
    file has none. Raises :class:`~vkdqs.OutputError` for a link or a file that is not regular."""
    path = Path(path)
    try:
        fd = _open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    return data.split(b"\n")[:-1]


class AppendLog:
    """A file that grows a line at a time, each line durable once :meth:`append` returns.

    Opened (created when missing, with ``0o666`` less the umask) with ``O_APPEND | O_NOFOLLOW``:
    a link planted at ``path`` is refused, not followed; so is a file that is not regular. An
    exclusive ``flock`` is taken on it: a second writer (another run on the same folder) gets
    an :class:`~vkdqs.OutputError` saying so. A torn last line (no line break: the writer was
    killed mid-write) is ended with a line break first, so it stays one unreadable line that
    :func:`read_lines` ignores instead of spoiling the next.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        try:
            self.fd: int | None = _open_regular(
                self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666
            )
        except OutputError:
            raise
        except OSError as exc:
            raise output_error(exc, self.path, existed=os.path.lexists(self.path)) from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self.close()
            raise _refuse(
                self.path, "is in use by another vkdqs run; wait for it to finish", exc.errno or 0
            ) from None
        try:
            size = os.fstat(self.fd).st_size
            if size and os.pread(self.fd, 1, size - 1) != b"\n":
                self._write(b"\n")
        except BaseException:
            self.close()
            raise

    def _write(self, data: bytes) -> None:
        assert self.fd is not None
        try:
            n = os.write(self.fd, data)
            if n != len(data):  # a full disk: what got there is a torn line
                raise OSError(errno.ENOSPC, "short write")
            os.fsync(self.fd)
        except OSError as exc:
            raise output_error(exc, self.path, existed=True) from None

    def append(self, line: bytes) -> None:
        """Write ``line`` (without a line break, which is added; it must not hold one) with one
        ``os.write`` and fsync it."""
        if b"\n" in line:
            raise ValueError("a line of an AppendLog cannot hold a line break")
        self._write(line + b"\n")

    def close(self) -> None:
        """Close the file (releasing the lock); safe to call more than once."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> AppendLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
