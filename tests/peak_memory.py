"""A process's peak resident memory, for the tests that bound what a load costs.

Linux keeps ``ru_maxrss`` across ``exec``: a child process started by pytest begins with
pytest's peak, so a child's load that stays below it measured as nothing. ``VmHWM`` (the peak
of this process's own memory map, in ``/proc/self/status``) starts afresh at ``exec``, and
writing 5 to ``/proc/self/clear_refs`` resets it to the current size, which lets a test bound
one call inside a long-running process too.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

__all__ = ["peak_bytes", "reset_peak"]


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_bytes() -> int:
    """This process's peak resident memory (``VmHWM``; ``ru_maxrss`` where there is none)."""
    kib = _status_kib("VmHWM")
    if kib is not None:
        return 1024 * kib
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def reset_peak() -> bool:
    """Reset the peak to the current size (Linux); False where it cannot be."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None
