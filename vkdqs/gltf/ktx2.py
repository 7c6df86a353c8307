"""Decoding ``KHR_texture_basisu`` images: KTX 2 files with a Basis Universal payload (ETC1S or
UASTC), transcoded to RGBA8 with ``opengl_basisu`` (the ``vkdqs[compression]`` extra).

An image is untrusted, as in :mod:`vkdqs.gltf.images`: the KTX 2 header is parsed first, sides
past :data:`~vkdqs.gltf.images.MAX_IMAGE_SIDE` and images past Pillow's pixel rule
(:func:`~vkdqs.gltf.images.max_image_pixels`) are refused, and the transcode's peak (its RGBA8
output and one copy, 8 bytes a pixel) is checked against the loader's bound before anything is
transcoded, the kept RGBA8 array staying charged. Measured on a 4096x4096 texture
(tests/test_gltf_image_budget.py): a resident peak of 64 MiB (ETC1S) and 80 MiB (UASTC)
against the 128 MiB charged. Only the first mip level of the first face
and layer is used: vkdqs makes its own mips. Anything the transcoder cannot read is an
:class:`~vkdqs.gltf.images.ImageProblem` (a warning and an untextured draw); so is a missing
transcoder, naming the extra to install.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vkdqs.gltf.images import (
    KEPT_BYTES_PER_PIXEL,
    SHRINK_BYTES_PER_PIXEL,
    ImageProblem,
    _kept_side,
    check_pixels,
)
from vkdqs.material import MAX_TEXTURE_SIDE

#: The MIME type glTF gives KTX 2 images.
MIME_TYPE = "image/ktx2"
#: The first bytes of every KTX 2 file.
MAGIC = b"\xabKTX 20\xbb\r\n\x1a\n"
HINT = "KTX2 (KHR_texture_basisu) images need opengl_basisu: pip install 'vkdqs[compression]'"


def available() -> bool:
    """Whether the KTX 2 transcoder is installed."""
    try:
        _transcoder()
    except ImageProblem:
        return False
    return True


def _transcoder() -> Any:
    try:
        import opengl_basisu
    except ImportError:
        raise ImageProblem(HINT) from None
    return opengl_basisu


def decode_ktx2(
    data: bytes | bytearray | memoryview,
    charge: Callable[[int, str], None],
    charge_peak: Callable[[int, int, str], None] | None = None,
) -> NDArray[np.uint8]:
    """``(H, W, 4)`` uint8 RGBA pixels of a KTX 2 (Basis Universal) image, top row first, as
    stored (sRGB for base colour textures).

    ``charge_peak(kept, peak, what)`` is called with the kept and peak sizes before
    transcoding (``charge(peak, what)`` without it). Raises
    :class:`ImageProblem` for anything the transcoder cannot read, an image too large, or no
    transcoder installed.
    """
    basisu = _transcoder()
    raw = bytes(data)
    if not raw.startswith(MAGIC):
        raise ImageProblem("not a KTX 2 file (its first bytes are not the KTX 2 identifier)")
    try:
        texture = basisu.open(raw)
        width, height = int(texture.width), int(texture.height)
    except Exception as exc:  # the transcoder raises its own types for bad files
        raise ImageProblem(
            f"a KTX 2 file the Basis Universal transcoder cannot read ({exc})"
        ) from None
    check_pixels(width, height)
    shrink = max(width, height) > MAX_TEXTURE_SIDE
    # the transcoder's RGBA8 output and, for a y-flipped file or one shrunk to fit, one copy
    peak = 2 * 4 * width * height + (SHRINK_BYTES_PER_PIXEL * width * height if shrink else 0)
    kw, kh = _kept_side(width, height)
    what = f"transcoding a {width}x{height} KTX 2 image"
    if charge_peak is None:
        charge(peak, what)
    else:
        charge_peak(KEPT_BYTES_PER_PIXEL * kw * kh, peak, what)
    try:
        image = texture.transcode("rgba8")
        pixels = np.asarray(image.data, dtype=np.uint8).reshape(height, width, 4)
    except Exception as exc:  # truncated or corrupt payload
        raise ImageProblem(f"cannot transcode its pixels ({exc})") from None
    if getattr(texture, "y_flipped", False):
        pixels = pixels[::-1]
    if shrink:
        from PIL import Image

        shrunk = Image.fromarray(pixels, "RGBA")
        shrunk.thumbnail((MAX_TEXTURE_SIDE, MAX_TEXTURE_SIDE), Image.Resampling.BOX)
        pixels = np.asarray(shrunk, dtype=np.uint8)
    out = np.ascontiguousarray(pixels)
    out.flags.writeable = False  # shared by every material using the image
    return out
