"""A minimal PNG writer and reader (8-bit RGBA or RGB, no dependencies beyond zlib), and
:class:`PngImage`, which shows an image array in Jupyter."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from .errors import InputError


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an ``(H, W, 4)`` or ``(H, W, 3)`` uint8 image."""
    img = np.asarray(image)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] not in (3, 4):
        raise InputError(f"image must be (H, W, 3|4) uint8, got {img.shape} {img.dtype}")
    h, w, c = img.shape
    raw = np.empty((h, 1 + w * c), np.uint8)
    raw[:, 0] = 0  # filter type "None" on every row
    raw[:, 1:] = img.reshape(h, w * c)

    def chunk(tag: bytes, data: bytes) -> bytes:
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    color_type = 6 if c == 4 else 2
    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + chunk(b"IEND", b"")
    )


def write_png(path: str | Path, image: np.ndarray) -> Path:
    """Write ``image`` to ``path`` as PNG; returns the path."""
    path = Path(path)
    path.write_bytes(encode_png(image))
    return path


def read_png(path: str | Path) -> np.ndarray:
    """Read back a PNG written by :func:`write_png` (no interlace, filter 0 only)."""
    return decode_png(Path(path).read_bytes(), str(path))


def decode_png(data: bytes, name: str = "PNG data") -> np.ndarray:
    """Decode PNG bytes made by :func:`encode_png` (8-bit RGB/RGBA, no interlace, filter 0 only)
    into an ``(H, W, 3|4)`` uint8 array; ``name`` is used in error messages."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise InputError(f"{name}: not a PNG file")
    pos, idat, w, h, channels = 8, b"", 0, 0, 4
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        tag = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if tag == b"IHDR":
            w, h, depth, color_type = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color_type not in (2, 6):
                raise InputError(f"{name}: only 8-bit RGB/RGBA PNGs are supported")
            channels = 4 if color_type == 6 else 3
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * channels)
    if np.any(raw[:, 0] != 0):
        raise InputError(f"{name}: only PNG filter type 0 is supported")
    return raw[:, 1:].reshape(h, w, channels).copy()


class PngImage:
    """An ``(H, W, 3|4)`` uint8 image that Jupyter (IPython) displays as a PNG.

    ``Renderer.render_image()`` returns a plain numpy array; wrap it to see it in a notebook::

        PngImage(renderer.render_image())  # the last expression of a cell shows the picture

    The array is kept as given (``.array``, or ``np.asarray(image)``); :meth:`save` writes it.
    """

    def __init__(self, array: np.ndarray) -> None:
        img = np.asarray(array)
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] not in (3, 4):
            raise InputError(f"image must be (H, W, 3|4) uint8, got {img.shape} {img.dtype}")
        self.array = img

    def __array__(self, dtype: object = None, copy: bool | None = None) -> np.ndarray:
        if dtype is None:
            return self.array if copy is not True else self.array.copy()
        return self.array.astype(dtype)

    def __repr__(self) -> str:
        h, w, c = self.array.shape
        return f"PngImage({w}x{h}, {'RGBA' if c == 4 else 'RGB'})"

    def _repr_png_(self) -> bytes:
        """Jupyter's hook: the image as PNG bytes."""
        return encode_png(self.array)

    def save(self, path: str | Path) -> Path:
        """Write the image to ``path`` as PNG; returns the path."""
        return write_png(path, self.array)
