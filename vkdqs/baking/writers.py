"""What the file formats share: the writer protocol the driver feeds batch by batch and the raw
bytes of an array. Every writer writes its file (and the USD writer its textures) through
:mod:`vkdqs.files`: under an unpredictable temporary name beside it, renamed when complete."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from .surface import Surface

#: Bytes copied at a time from a temporary file into the output.
COPY_CHUNK = 16 * 2**20


class Writer(Protocol):
    """One output file: ``write`` each batch of frames in order, then ``finish`` (the file
    appears complete) or, on any error, ``abort`` (nothing is left behind, the old file is as it
    was). Errors writing the file are :class:`~vkdqs.OutputError`."""

    def write(self, positions: NDArray, normals: NDArray, boxes: NDArray) -> None:
        """Take a batch of frames, ``(P, V, 3)`` float32 positions and normals, and each
        frame's exact ``(P, 2, 3)`` box (min, max) of its positions."""

    def finish(self) -> None:
        """Put the complete file in place."""

    def abort(self) -> None:
        """Give up: leave no temporary, and an old file where it was."""


#: A writer's constructor: (path, times, faces, rest positions, rest normals, fps, surface,
#: inputs: the files the bake read, which the output must not be).
Opener = Callable[
    [Path, NDArray, NDArray, NDArray, NDArray, float, Surface, Sequence[Path]], Writer
]


def as_bytes(a: NDArray, dtype: str = "<f4") -> memoryview:
    """The bytes of ``a`` as ``dtype`` (a copy only when it is not already that, C-ordered)."""
    return memoryview(np.ascontiguousarray(a, dtype=dtype)).cast("B")
