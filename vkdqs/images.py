"""PNG files of 8-bit RGB or RGBA image arrays, through Pillow (lossless both ways), and
:class:`PngImage`, which shows an image array in Jupyter."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from .errors import InputError
from .files import write_bytes

__all__ = ["PngImage", "decode_png", "encode_png", "read_png", "write_png"]


def _image(image: np.ndarray) -> np.ndarray:
    """``image`` as an array, or an InputError unless it is ``(H, W, 3|4)`` uint8."""
    img = np.asarray(image)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] not in (3, 4):
        raise InputError(f"image must be (H, W, 3|4) uint8, got {img.shape} {img.dtype}")
    return img


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an ``(H, W, 4)`` or ``(H, W, 3)`` uint8 image (RGBA or RGB)."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(_image(image))).save(out, "PNG")
    return out.getvalue()


def decode_png(data: bytes, name: str = "PNG data") -> np.ndarray:
    """The ``(H, W, 3|4)`` uint8 pixels of an RGB or RGBA PNG; ``name`` is used in errors."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as img:
            img.load()
            if img.mode not in ("RGB", "RGBA"):
                raise InputError(f"{name}: only 8-bit RGB/RGBA PNGs are supported, not {img.mode}")
            return np.array(img, np.uint8)
    except InputError:
        raise
    except Exception as exc:  # Pillow raises many types for bad bytes
        raise InputError(f"{name}: not a PNG file Pillow can read ({exc})") from None


def read_png(path: str | Path) -> np.ndarray:
    """The pixels of the PNG file ``path`` (see :func:`decode_png`)."""
    return decode_png(Path(path).read_bytes(), str(path))


def write_png(path: str | Path, image: np.ndarray, *, inputs: tuple = ()) -> Path:
    """Write ``image`` to ``path`` as PNG (whatever its extension); returns the path.

    Written as every vkdqs file is (:mod:`vkdqs.files`): under a temporary name beside ``path``,
    then renamed over it, never through a link; ``path`` must not be one of ``inputs`` (e.g. the
    model drawn). Raises :class:`~vkdqs.OutputError` when it cannot be written.
    """
    return write_bytes(path, encode_png(image), inputs=inputs)


class PngImage:
    """An ``(H, W, 3|4)`` uint8 image that Jupyter (IPython) displays as a PNG.

    ``Renderer.render_image()`` returns a plain numpy array; wrap it to see it in a notebook::

        PngImage(renderer.render_image())  # the last expression of a cell shows the picture

    The array is kept as given (``.array``, or ``np.asarray(image)``); :meth:`save` writes it.
    """

    def __init__(self, array: np.ndarray) -> None:
        self.array = _image(array)

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
        """Write the image to ``path`` as PNG (:func:`write_png`); returns the path."""
        return write_png(path, self.array)
