"""Decoding glTF images (PNG, JPEG, WebP) with Pillow into RGBA8 arrays, cost checked first.

An image is untrusted: its header is read first (Pillow reads the size without decoding the
pixels), images of more than twice Pillow's ``Image.MAX_IMAGE_PIXELS`` (Pillow's own rule: about
179 M pixels by default) or sides past :data:`MAX_IMAGE_SIDE` are refused, and what decoding
peaks at (:data:`PEAK_BYTES_PER_PIXEL`, measured) is checked against the loader's bound before
anything is decoded, only the decoded RGBA8 array staying charged; so a small file that claims
a huge image (a decompression bomb) costs nothing, and real characters' textures (several
4096x4096, one 8192x8192) load under the default bound. Decoded
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


#: What decoding holds at its peak, in bytes per pixel of the image, the kept RGBA8 array (4)
#: included: the decoder's own buffers (libjpeg's coefficients for a progressive file; libwebp
#: keeps two canvases and hands over a copy of the frame), Pillow's decoded image, its RGBA copy
#: and the array, copied in bands. Resident peaks of 4096x4096 images measured with Pillow 11:
#: PNG 8.7 (grey, palette, 16-bit, RGB, RGBA alike), baseline JPEG 8.7, progressive 4:4:4 JPEG
#: 10.0, WebP 16.9 (lossy) and 18.1 (lossless); tests/test_gltf_bounds.py checks each stays
#: under what is charged.
PEAK_BYTES_PER_PIXEL = {"PNG": 10, "JPEG": 12, "WEBP": 20}
#: ... and this many more when a side is over :data:`vkdqs.material.MAX_TEXTURE_SIDE` and the
#: image is shrunk (Pillow resizes RGBA through a premultiplied copy: 11.0 in all at 8192x8192
#: PNG and JPEG, of which 1 a source pixel is kept).
SHRINK_BYTES_PER_PIXEL = 4
#: Bytes a pixel of the decoded image keeps (RGBA8).
KEPT_BYTES_PER_PIXEL = 4
#: Rows copied from Pillow's image into the array at a time (bounds that copy's temporaries).
_BAND_ROWS = 256


def max_image_pixels() -> int | None:
    """The most pixels an image may have: twice Pillow's ``Image.MAX_IMAGE_PIXELS`` (past it
    Pillow itself refuses an image as a decompression bomb; between the two it only warns), as
    the user set it; None where they turned Pillow's check off."""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    return None if limit is None else 2 * int(limit)


def check_pixels(width: int, height: int) -> None:
    """ImageProblem for an image past :data:`MAX_IMAGE_SIDE` or :func:`max_image_pixels`."""
    if not (1 <= width <= MAX_IMAGE_SIDE and 1 <= height <= MAX_IMAGE_SIDE):
        raise ImageProblem(f"{width}x{height} pixels: vkdqs decodes sides of 1 to {MAX_IMAGE_SIDE}")
    most = max_image_pixels()
    if most is not None and width * height > most:
        raise ImageProblem(
            f"refused as a decompression bomb: {width}x{height} is {width * height} pixels, "
            f"past twice PIL.Image.MAX_IMAGE_PIXELS ({most})"
        )


def _kept_side(width: int, height: int) -> tuple[int, int]:
    """The size an image is kept at: shrunk as Pillow's thumbnail() does to fit
    :data:`vkdqs.material.MAX_TEXTURE_SIDE` (a bound above it is enough for charging)."""
    scale = min(1.0, MAX_TEXTURE_SIDE / max(width, height))
    return min(width, int(width * scale) + 1), min(height, int(height * scale) + 1)


def decode_image(
    data: bytes | bytearray | memoryview,
    mime_type: str | None,
    charge: Callable[[int, str], None],
    charge_peak: Callable[[int, int, str], None] | None = None,
) -> NDArray[np.uint8]:
    """``(H, W, 4)`` uint8 RGBA pixels of a PNG, JPEG or WebP image (sRGB as stored).

    ``charge(nbytes, what)`` is called with the encoded bytes' copy, then ``charge_peak(kept,
    peak, what)`` with what decoding keeps (the RGBA8 array) and holds at its peak
    (:data:`PEAK_BYTES_PER_PIXEL` per pixel of the size read from the header,
    :data:`SHRINK_BYTES_PER_PIXEL` more for an image shrunk to fit), before anything is
    allocated (each raises when the file's budget is spent). Raises :class:`ImageProblem` for
    anything Pillow cannot decode and for images past Pillow's pixel rule
    (:func:`max_image_pixels`).
    """
    from PIL import Image

    if charge_peak is None:  # one charge, everything kept: the strictest reading
        charge_peak = lambda kept, peak, what: charge(max(kept, peak), what)  # noqa: E731
    charge(len(data), "the encoded image")
    try:
        with warnings.catch_warnings():
            # between MAX_IMAGE_PIXELS and twice it Pillow warns: check_pixels() decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(bytes(data)), formats=list(FORMATS))
    except Image.DecompressionBombError as exc:
        raise ImageProblem(f"refused as a decompression bomb: {exc}") from None
    except Exception as exc:  # Pillow raises many types for bad bytes
        raise ImageProblem(f"not a PNG, JPEG or WebP image Pillow can read ({exc})") from None
    with img:
        width, height = img.size
        kind = img.format or ""
        if mime_type is not None and FORMATS.get(kind, _ALSO.get(kind)) != mime_type:
            raise ImageProblem(f"mimeType {mime_type!r} but the data is {img.format}")
        check_pixels(width, height)
        per_pixel = PEAK_BYTES_PER_PIXEL[kind if kind in FORMATS else "JPEG"]  # MPO: JPEG
        if max(width, height) > MAX_TEXTURE_SIDE:
            per_pixel += SHRINK_BYTES_PER_PIXEL
        kw, kh = _kept_side(width, height)
        kept = KEPT_BYTES_PER_PIXEL * kw * kh
        charge_peak(kept, per_pixel * width * height, f"decoding a {width}x{height} image")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
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
