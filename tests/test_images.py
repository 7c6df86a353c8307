"""PNG files through Pillow (vkdqs.images): RGB and RGBA round trips pixel for pixel, any PNG
writer's filters read back, and what is not an RGB/RGBA PNG refused with a clear error. CPU only."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from vkdqs.errors import InputError
from vkdqs.images import decode_png, encode_png, read_png, write_png


@pytest.mark.parametrize("channels", [3, 4])
def test_round_trip(tmp_path, channels):
    pixels = np.random.default_rng(channels).integers(0, 256, (9, 13, channels), dtype=np.uint8)
    assert encode_png(pixels).startswith(b"\x89PNG\r\n\x1a\n")
    np.testing.assert_array_equal(decode_png(encode_png(pixels)), pixels)
    out = write_png(tmp_path / "picture.data", pixels)  # PNG whatever the extension
    assert out == tmp_path / "picture.data"
    got = read_png(out)
    assert got.dtype == np.uint8 and got.flags.writeable
    np.testing.assert_array_equal(got, pixels)


def test_another_writers_png_reads_back():
    """Every PNG filter type (the hand-written reader only knew filter 0)."""
    ramp = np.add.outer(np.arange(32), np.arange(48)).astype(np.uint8)
    pixels = np.stack([ramp, ramp[::-1], 255 - ramp], axis=2)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG", optimize=True)
    np.testing.assert_array_equal(decode_png(out.getvalue()), pixels)


def test_what_is_not_an_rgb_png_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"^bad\.png: not a PNG file"):
        decode_png(b"GIF89a not a png", "bad.png")
    gray = io.BytesIO()
    Image.fromarray(np.zeros((2, 2), np.uint8)).save(gray, "PNG")
    (tmp_path / "gray.png").write_bytes(gray.getvalue())
    with pytest.raises(InputError, match=r"gray\.png: only 8-bit RGB/RGBA PNGs .* not L"):
        read_png(tmp_path / "gray.png")
    with pytest.raises(InputError, match=r"image must be \(H, W, 3\|4\) uint8"):
        encode_png(np.zeros((2, 2, 4), np.float32))
