"""What the file formats share: the writer protocol the driver feeds batch by batch, the
temporary name a file is written under until it is complete, and the raw bytes of an array."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from .surface import Surface

#: Bytes copied at a time from a temporary file into the output.
COPY_CHUNK = 16 * 2**20


class Writer(Protocol):
    """One output file: ``write`` each batch of frames in order, then ``finish`` (the file
    appears complete) or, on any error, ``abort`` (nothing is left behind)."""

    def write(self, positions: NDArray, normals: NDArray) -> None: ...

    def finish(self) -> None: ...

    def abort(self) -> None: ...


#: A writer's constructor: (path, times, faces, rest positions, rest normals, fps, surface).
Opener = Callable[[Path, NDArray, NDArray, NDArray, NDArray, float, Surface], Writer]


def partial_path(path: Path) -> Path:
    """A temporary name next to ``path`` with the same extension (USD picks its format by it)."""
    return path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")


def as_bytes(a: NDArray, dtype: str = "<f4") -> memoryview:
    """The bytes of ``a`` as ``dtype`` (a copy only when it is not already that, C-ordered)."""
    return memoryview(np.ascontiguousarray(a, dtype=dtype)).cast("B")
