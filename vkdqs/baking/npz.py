"""The ``.npz`` writer: an uncompressed zip of ``.npy`` entries, streamed batch by batch
(positions straight into their zip entry, normals through a temporary file appended at the end),
so memory stays bounded by one batch."""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import NDArray

from ..files import AtomicFile
from .surface import Surface, material_summary
from .writers import COPY_CHUNK, as_bytes


def _npy_header(f: IO[bytes], shape: tuple[int, ...], descr: str = "<f4") -> None:
    np.lib.format.write_array_header_2_0(
        f, {"descr": descr, "fortran_order": False, "shape": shape}
    )


class NpzWriter:
    """An uncompressed .npz written frame batch by frame batch."""

    def __init__(
        self,
        path: Path,
        times: NDArray,
        faces: NDArray,
        rest_positions: NDArray,
        rest_normals: NDArray,
        fps: float,
        surface: Surface,
        inputs: Sequence[Path] = (),
    ) -> None:
        self.path = path
        self.out = AtomicFile(path, inputs=inputs)
        self.normals: IO[bytes] | None = None
        self.boxes: list[NDArray] = []
        try:
            self.zip = zipfile.ZipFile(self.out.file, "w", zipfile.ZIP_STORED, allowZip64=True)
        except BaseException:
            self.out.discard()
            raise
        textures, texture_of = surface.textures()
        arrays: list[tuple[str, NDArray]] = [
            ("times", np.asarray(times, np.float64)),
            ("faces", faces),
            (
                "groups",
                np.array(
                    [[*g[:4], -1 if g.material is None else g.material] for g in surface.groups],
                    np.int64,
                ).reshape(-1, 5),
            ),
            (
                "materials",
                np.array(
                    json.dumps(
                        [
                            material_summary(m, t)
                            for m, t in zip(surface.materials, texture_of, strict=True)
                        ]
                    )
                ),
            ),
        ]
        arrays += [
            (k, a) for k, a in (("uvs", surface.uvs), ("colors", surface.colors)) if a is not None
        ]
        arrays += [(f"texture_{i}", t) for i, t in enumerate(textures)]
        try:
            for name, arr in arrays:
                with self.zip.open(f"{name}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, np.asarray(arr, order="C"))
            shape = (len(times), len(rest_positions), 3)
            self.positions = self.zip.open("positions.npy", "w", force_zip64=True)
            _npy_header(self.positions, shape)
            self.normals = tempfile.TemporaryFile(dir=path.parent)
            _npy_header(self.normals, shape)
        except BaseException:
            self.abort()
            raise

    def write(self, positions: NDArray, normals: NDArray, boxes: NDArray) -> None:
        """Append a batch of frames: positions into the archive, normals to their scratch file,
        boxes kept for the ``boxes`` entry."""
        self.boxes.append(np.asarray(boxes, np.float32))
        self.positions.write(as_bytes(positions))
        assert self.normals is not None
        self.normals.write(as_bytes(normals))
        self.out.written()  # to the disk while the next batch is skinned: commit waits less

    def finish(self) -> None:
        """Append the normals and the surface entries, then put the archive in place."""
        self.positions.close()
        assert self.normals is not None
        self.normals.seek(0)
        with self.zip.open("normals.npy", "w", force_zip64=True) as f:
            for chunk in iter(lambda: self.normals.read(COPY_CHUNK), b""):
                f.write(chunk)
                self.out.written()
        self.normals.close()
        boxes = np.concatenate(self.boxes) if self.boxes else np.zeros((0, 2, 3), np.float32)
        with self.zip.open("boxes.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, boxes)
        self.zip.close()
        self.out.commit()

    def abort(self) -> None:
        """Close what is open and remove the temporary; an old file is left as it was."""
        # each may fail again (a full disk): only clean up. The open entry first, so that the
        # zip can close (and not try again when it is collected).
        for close in (getattr(self, "positions", None), self.normals, self.zip):
            try:
                if close is not None:
                    close.close()
            except Exception:
                pass
        self.out.discard()
