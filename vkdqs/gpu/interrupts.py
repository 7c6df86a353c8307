"""Ctrl-C deferred over GPU work that must not be cut in half.

Python raises ``KeyboardInterrupt`` in the main thread between any two bytecodes, so without
care it can land between a ``vkQueueSubmit`` and the wait on its fence (the next submission then
reuses a command buffer the GPU is still running, or a signalled fence), between ``begin`` and
``end`` of a command buffer that is marked recorded, or half-way through swapping a Skinner's
buffers and descriptor sets. :func:`deferred_interrupts` makes such a block atomic with respect
to SIGINT: the signal is recorded, not acted on, and the previous handler (by default, raising
``KeyboardInterrupt``) runs once the block has ended, with every object consistent again. It
lasts as long as the block (at most one submission's GPU time, as before, since a wait in C
cannot be interrupted anyway).

Only SIGINT is deferred, and only in the main thread, where Python runs signal handlers (a
block in another thread is never interrupted). Nested blocks defer to the outermost one.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_depth = 0  # main thread only


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Run the block with SIGINT recorded instead of handled; handle it after the block."""
    global _depth
    if threading.current_thread() is not threading.main_thread() or _depth:
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN, SIG_DFL (the process ends) or a C handler: nothing to do
        yield
        return
    pending: list[tuple[int, FrameType | None]] = []

    def record(signum: int, frame: FrameType | None) -> None:
        pending.append((signum, frame))

    signal.signal(signal.SIGINT, record)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        signal.signal(signal.SIGINT, previous)
        if pending:
            previous(*pending[0])  # default_int_handler raises KeyboardInterrupt here
