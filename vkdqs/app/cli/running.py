"""How a ``vkdqs`` command runs: its errors as one line on standard error and an exit status,
standard output and error that may be closed or fail, and signals that stop it cleanly.

:func:`_run` calls the subcommand's function: the errors a user can cause (the input, the output,
the system: :class:`vkdqs.errors.VkdqsError`, OSError, MemoryError, Ctrl-C, SIGTERM) become one
line, ``vkdqs: error: ...``, never a traceback; a warning is one line too, and numpy's
floating-point warnings are hidden. :func:`_standard_streams` makes printing safe when a stream
is closed or fails, or cannot encode a name (the locale); :func:`_stop_on_signals` turns
SIGTERM, SIGHUP and SIGINT into exceptions that unwind the command. :func:`_load` and
:func:`_need_vulkan` are the first steps the commands share.
"""

from __future__ import annotations

import codecs
import errno
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...gltf import GltfScene

from ...errors import InputError, VkdqsError


def _load(model: Path, max_bytes: int | None) -> GltfScene:
    from ...gltf import load_gltf

    return load_gltf(model, max_bytes=max_bytes)  # None: the default, which grows with the file


def _need_vulkan() -> None:
    """Import the Vulkan plumbing first: without a Vulkan loader this raises a CapabilityError
    naming the package to install (not the binding's OSError)."""
    from ... import gpu  # noqa: F401


def _lost_output(lost: OSError) -> int:
    """The status (and line) of a printing command whose standard output was lost: 141 when
    the reader went away (``| head -1``, quietly, as cat), 1 when it is closed or failed."""
    if lost.errno == errno.EPIPE:
        return 141  # 128 + SIGPIPE, what a shell reports for a process killed by it
    if lost.errno == errno.EBADF:
        _say("vkdqs: error: standard output is closed; nothing was printed")
    else:
        _say(f"vkdqs: error: standard output: {lost.strerror or lost}")
    return 1


def _run(args: dict[str, Any]) -> int:
    """Call the subcommand's function; errors become one line on standard error and a status."""
    func = args.pop("func")
    if isinstance(args.get("device"), str) and args["device"].isdigit():
        args["device"] = int(args["device"])
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            # numpy's floating-point warnings ("overflow encountered in matmul") describe its
            # arithmetic, not the model: vkdqs's own checks say what is wrong in one line
            warnings.filterwarnings("ignore", _NUMPY_FLOAT_WARNINGS, RuntimeWarning)
            return func(**args)
    except VkdqsError as exc:
        message = str(exc)
        if isinstance(exc, InputError):  # about the model file: name it
            message = _with_file(message, args.get("model"))
        _say(f"vkdqs: error: {message}")
        return 1
    except OSError as exc:  # e.g. the PNG cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        _say(f"vkdqs: error: {where}{exc.strerror or exc}")
        return 1
    except MemoryError:
        _say("vkdqs: error: out of memory; try a smaller --size or model")
        return 1
    except KeyboardInterrupt:
        _say("vkdqs: interrupted")
        return 130
    except _Stopped as exc:
        _say(f"vkdqs: stopped by {signal.Signals(exc.signum).name}")
        return 128 + exc.signum


def _say(line: str) -> None:
    """Print ``line`` to standard error (dropped when that is closed or fails)."""
    print(line, file=sys.stderr, flush=True)


#: The messages of numpy's floating-point error warnings (np.errstate's "warn").
_NUMPY_FLOAT_WARNINGS = r"(overflow|underflow|invalid value|divide by zero) encountered in "


def _show_warning(
    message: Warning | str, category: type[Warning], *_: object, **__: object
) -> None:
    """A warning from vkdqs (e.g. a glTF image it cannot use) as one line, without the source
    line Python shows."""
    _say(f"vkdqs: warning: {message}")


class _Output:
    """Standard output or error for the command's duration: writes go to the real stream until
    it fails (a reader gone, a full disk) or when it was closed from the start (None); from then
    on they are dropped, and :attr:`lost` says why (an OSError: EPIPE, EBADF for closed, ...).

    A failed stream gets /dev/null on its descriptor, so what it still buffers is flushed there
    at exit without an error, and C libraries printing to it write nowhere."""

    def __init__(self, stream: Any, fd: int) -> None:
        self.stream, self.fd = stream, fd
        self.lost: OSError | None = None

    def _fail(self, exc: OSError) -> None:
        if self.lost is None:
            self.lost = exc
        self.stream = None
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self.fd)
            finally:
                os.close(null)
        except OSError:
            pass

    def write(self, text: str) -> int:
        if self.stream is None:
            if text and self.lost is None:
                self.lost = OSError(errno.EBADF, "standard stream closed")
            return len(text)
        try:
            return self.stream.write(text)
        except (OSError, ValueError) as exc:  # ValueError: the stream object was closed
            self._fail(exc if isinstance(exc, OSError) else OSError(errno.EBADF, str(exc)))
            return len(text)

    def flush(self) -> None:
        if self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self._fail(exc if isinstance(exc, OSError) else OSError(errno.EBADF, str(exc)))

    def isatty(self) -> bool:
        try:
            return self.stream is not None and self.stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self.stream is None:
            raise OSError(errno.EBADF, "standard stream closed")
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self.stream, "errors", None) or "backslashreplace"

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # anything else a caller may ask a stream
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)


def _escape_text(exc: UnicodeError) -> tuple[str | bytes, int]:
    """An encoding error handler: the escaped bytes of a file name (``os.fsdecode``'s lone
    surrogates) as those bytes, like ``surrogateescape``, anything else the encoding cannot
    hold as a backslash escape (``Hüfte`` as ``H\\xfcfte`` under ``LC_ALL=C``)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    c = exc.object[exc.start]
    if "\udc80" <= c <= "\udcff":
        return bytes([ord(c) - 0xDC00]), exc.start + 1
    o = ord(c)
    escape = f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
    return escape, exc.start + 1


codecs.register_error("vkdqs.escape", _escape_text)


@contextmanager
def _standard_streams() -> Iterator[_Output]:
    """Make standard output and error safe to print to for the command's duration.

    A descriptor 0, 1 or 2 that is closed gets /dev/null, so no file the command opens takes
    its number (the Vulkan loader or a driver printing to "stdout" would write into it).
    ``sys.stdout`` and ``sys.stderr`` become :class:`_Output` objects, which drop what cannot be
    written. Text the stream's encoding cannot hold is escaped, not fatal: a file name that is
    not UTF-8 under a strict UTF-8 locale with backslashes, a node name under ``LC_ALL=C`` too
    (the bytes of a file name stay as they are where the locale keeps them, as
    ``surrogateescape`` does). Yields standard output's :class:`_Output` (its ``lost``); the
    streams are put back afterwards.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:  # closed when vkdqs started
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            else:
                os.set_inheritable(fd, True)
    saved = {"stdout": sys.stdout, "stderr": sys.stderr}
    outputs = {}
    for fd, (name, stream) in enumerate(saved.items(), start=1):
        if getattr(stream, "errors", None) in ("strict", "surrogateescape") and hasattr(
            stream, "reconfigure"
        ):
            keep_bytes = stream.errors == "surrogateescape"
            stream.reconfigure(errors="vkdqs.escape" if keep_bytes else "backslashreplace")
        outputs[name] = _Output(stream, fd)
        setattr(sys, name, outputs[name])
    try:
        yield outputs["stdout"]
    finally:
        for name, stream in saved.items():
            setattr(sys, name, stream)


class _Stopped(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds the command like Ctrl-C, so that every ``finally``
    (the temporary file of a bake, the Vulkan device) cleans up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM, SIGHUP and SIGINT into exceptions (:class:`_Stopped`, KeyboardInterrupt)
    for the command's duration, and ignore SIGXFSZ (a write past ``ulimit -f`` then fails with
    EFBIG instead of killing the process); the previous handlers are put back afterwards. A
    signal that whoever started vkdqs ignores (``nohup``) stays ignored; a second signal while
    the first unwinds is ignored, so the cleanup finishes. Only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if stopping:
            return
        stopping.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise _Stopped(signum)

    previous: dict[int, Any] = {}
    try:
        for name in ("SIGTERM", "SIGHUP", "SIGINT"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) != signal.SIG_IGN:
                previous[signum] = signal.signal(signum, stop)
        if hasattr(signal, "SIGXFSZ"):
            previous[signal.SIGXFSZ] = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _with_file(message: str, model: Path | list[Path] | None) -> str:
    """The message, naming the model file (the one of a bake's list) when it does not already."""
    if isinstance(model, list):
        model = model[0] if len(model) == 1 else None
    if model is None or model.name in message:
        return message
    return f"{model}: {message}"
