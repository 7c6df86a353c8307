"""Decoding glTF images (PNG, JPEG, WebP) with Pillow into RGBA8 arrays, cost checked first.

An image is untrusted: its header is read first (Pillow reads the size without decoding the
pixels), ``width * height * 4`` bytes are charged to the loader's ``max_bytes`` before anything
is decoded, and sides past :data:`MAX_IMAGE_SIDE` are refused, so a small file that claims a huge
image (a decompression bomb) costs nothing. Decoded images larger than
:data:`vkdqs.material.MAX_TEXTURE_SIDE` are shrunk to fit. Anything Pillow cannot decode is an
:class:`ImageProblem`, which the material reader turns into a warning and an untextured draw.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from vkdqs.material import MAX_TEXTURE_SIDE

#: Image formats vkdqs decodes (Pillow format names) and the MIME types glTF gives them.
FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}
#: What Pillow may report for an image it opened as one of FORMATS (a multi-picture JPEG).
_ALSO = {"MPO": "image/jpeg"}
#: Largest side of an image vkdqs decodes at all (larger ones are refused before decoding).
MAX_IMAGE_SIDE = 16384


class ImageProblem(Exception):
    """An image cannot be decoded (bad bytes, an unsupported format, too large); the message
    says why. Never escapes vkdqs.gltf: it becomes a warning."""


def decode_image(
    data: bytes | bytearray | memoryview,
    mime_type: str | None,
    charge: Callable[[int, str], None],
) -> NDArray[np.uint8]:
    """``(H, W, 4)`` uint8 RGBA pixels of a PNG, JPEG or WebP image (sRGB as stored).

    ``charge(nbytes, what)`` is called with the decoded size before decoding (it raises when the
    file's budget is spent). Raises :class:`ImageProblem` for anything Pillow cannot decode.
    """
    from PIL import Image

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
        # the decoded pixels and the RGBA copy (and, shrunk, the smaller copy)
        charge(2 * width * height * 4, f"decoding a {width}x{height} image")
        try:
            rgba = img.convert("RGBA")
            if max(width, height) > MAX_TEXTURE_SIDE:
                rgba.thumbnail((MAX_TEXTURE_SIDE, MAX_TEXTURE_SIDE), Image.Resampling.BOX)
            out = np.asarray(rgba, dtype=np.uint8)
        except Exception as exc:  # truncated or corrupt pixel data
            raise ImageProblem(f"cannot decode its pixels ({exc})") from None
    out = np.ascontiguousarray(out)
    out.flags.writeable = False  # shared by every material using the image
    return out
