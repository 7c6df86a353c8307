"""A private Xvfb server for window tests and the window soak (one way to start it)."""

from __future__ import annotations

import os
import subprocess


def start_xvfb(exe: str) -> tuple[subprocess.Popen, str]:
    """Start ``exe`` (Xvfb) on a free display it picks itself; ``(process, ":N")``, or a
    RuntimeError (the process killed) when it reports no display."""
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [exe, "-displayfd", str(write_fd), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        display = f.readline().strip()
    if not display:
        proc.kill()
        proc.wait(timeout=10)
        raise RuntimeError("Xvfb did not start")
    return proc, f":{display}"
