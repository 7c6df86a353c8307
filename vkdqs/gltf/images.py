"""Decoding glTF images (PNG, JPEG, WebP) with Pillow into RGBA8 arrays, cost checked first.

An image is untrusted: its header is read first (Pillow reads the size without decoding the
pixels), what decoding it peaks at (:data:`DECODE_BYTES_PER_PIXEL` bytes a pixel) is charged to
the loader's ``max_bytes`` before anything is decoded, and sides past :data:`MAX_IMAGE_SIDE` are
refused, so a small file that claims a huge image (a decompression bomb) costs nothing. Decoded
images larger than :data:`vkdqs.material.MAX_TEXTURE_SIDE` are shrunk to fit. Anything Pillow
cannot decode is an :class:`ImageProblem`, which the material reader turns into a warning and an
untextured draw.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from vkdqs.material import MAX_TEXTURE_SIDE

if TYPE_CHECKING:
    from PIL import Image

#: Image formats vkdqs decodes (Pillow format names) and the MIME types glTF gives them.
FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}
#: What Pillow may report for an image it opened as one of FORMATS (a multi-picture JPEG).
_ALSO = {"MPO": "image/jpeg"}
#: Largest side of an image vkdqs decodes at all (larger ones are refused before decoding).
MAX_IMAGE_SIDE = 16384


class ImageProblem(Exception):
    """An image cannot be decoded (bad bytes, an unsupported format, too large); the message
    says why. Never escapes vkdqs.gltf: it becomes a warning."""


#: What decoding costs at its peak, in bytes per pixel of the image: the decoder's own buffers
#: (libwebp keeps two canvases and hands over a copy of the frame; libjpeg its coefficients),
#: Pillow's decoded image, its RGBA copy and the array (measured at 9 for PNG and JPEG, 18 for
#: WebP, by tests/test_gltf_bounds.py), charged with a margin.
DECODE_BYTES_PER_PIXEL = 24
#: ... and this many more when a side is over :data:`vkdqs.material.MAX_TEXTURE_SIDE` and the
#: image is shrunk (Pillow resizes RGBA through a premultiplied copy; measured at 5).
SHRINK_BYTES_PER_PIXEL = 8
#: Rows copied from Pillow's image into the array at a time (bounds that copy's temporaries).
_BAND_ROWS = 256


def decode_image(
    data: bytes | bytearray | memoryview,
    mime_type: str | None,
    charge: Callable[[int, str], None],
) -> NDArray[np.uint8]:
    """``(H, W, 4)`` uint8 RGBA pixels of a PNG, JPEG or WebP image (sRGB as stored).

    ``charge(nbytes, what)`` is called with what decoding will cost at its peak (the encoded
    bytes' copy, then :data:`DECODE_BYTES_PER_PIXEL` per pixel of the size read from the header,
    :data:`SHRINK_BYTES_PER_PIXEL` more for an image shrunk to fit) before anything is
    allocated (it raises when the file's budget is spent). Raises :class:`ImageProblem` for
    anything Pillow cannot decode.
    """
    from PIL import Image

    charge(len(data), "the encoded image")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(bytes(data)), formats=list(FORMATS))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageProblem(f"refused as a decompression bomb: {exc}") from None
    except Exception as exc:  # Pillow raises many types for bad bytes
        raise ImageProblem(f"not a PNG, JPEG or WebP image Pillow can read ({exc})") from None
    with img:
        width, height = img.size
        kind = img.format or ""
        if mime_type is not None and FORMATS.get(kind, _ALSO.get(kind)) != mime_type:
            raise ImageProblem(f"mimeType {mime_type!r} but the data is {img.format}")
        if not (1 <= width <= MAX_IMAGE_SIDE and 1 <= height <= MAX_IMAGE_SIDE):
            raise ImageProblem(
                f"{width}x{height} pixels: vkdqs decodes sides of 1 to {MAX_IMAGE_SIDE}"
            )
        per_pixel = DECODE_BYTES_PER_PIXEL
        if max(width, height) > MAX_TEXTURE_SIDE:
            per_pixel += SHRINK_BYTES_PER_PIXEL
        charge(per_pixel * width * height, f"decoding a {width}x{height} image")
        try:
            img.load()
            # One full-size copy at a time: the decoded image is dropped once converted, the
            # RGBA image once copied into the array (in bands of rows).
            rgba = img if img.mode == "RGBA" else img.convert("RGBA")
            if rgba is not img:
                img.close()
            if max(width, height) > MAX_TEXTURE_SIDE:
                rgba.thumbnail((MAX_TEXTURE_SIDE, MAX_TEXTURE_SIDE), Image.Resampling.BOX)
            out = _rgba_array(rgba)
            rgba.close()
        except Exception as exc:  # truncated or corrupt pixel data
            raise ImageProblem(f"cannot decode its pixels ({exc})") from None
    out.flags.writeable = False  # shared by every material using the image
    return out


def _rgba_array(rgba: Image.Image) -> NDArray[np.uint8]:
    """An RGBA image's pixels as a new ``(H, W, 4)`` array, copied a band of rows at a time
    (``np.asarray`` of the whole image would hold two more copies of it meanwhile)."""
    width, height = rgba.size
    out = np.empty((height, width, 4), dtype=np.uint8)
    for y in range(0, height, _BAND_ROWS):  # over bands of rows, not pixels
        band = rgba.crop((0, y, width, min(y + _BAND_ROWS, height)))
        out[y : y + band.height] = np.asarray(band)
    return out
