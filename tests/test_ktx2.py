"""KHR_texture_basisu: KTX 2 images (Basis Universal, ETC1S and UASTC) transcoded to RGBA8.

The KTX 2 files in tests/data were written once by tests/data/make_ktx2.py (Basis Universal's
encoder) from :func:`make_ktx2.gradient`; the tests compare the decoded pixels with it, each
codec within what it keeps (UASTC: one step; ETC1S: a lossy codec, bounded on average), and go
through the loader: the KTX 2 source comes before a PNG fallback, a missing transcoder falls back
or warns naming the extra, and a broken or oversized file is a warning, never a crash.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from vkdqs.gltf import GltfWarning, ktx2, load_gltf
from vkdqs.gltf.images import ImageProblem

from .gltf_fixtures_material import encode, quad_document, write

DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(DATA))
from make_ktx2 import gradient  # noqa: E402


def ktx(codec: str) -> bytes:
    return (DATA / f"gradient_{codec}.ktx2").read_bytes()


def no_charge(nbytes: int, what: str) -> None:
    pass


@pytest.mark.parametrize(
    ("codec", "max_error", "mean_error"), [("uastc", 2, 1.0), ("etc1s", 64, 16.0)]
)
def test_both_codecs_decode_to_the_source_pixels(codec, max_error, mean_error):
    pixels = ktx2.decode_ktx2(ktx(codec), no_charge)
    assert pixels.shape == (16, 16, 4) and pixels.dtype == np.uint8
    error = np.abs(pixels.astype(int) - gradient())
    assert error.max() <= max_error and error.mean() <= mean_error, (error.max(), error.mean())
    assert (pixels[..., 3] == 255).all()
    # the rows run top to bottom, as glTF's images do: green grows downward
    assert pixels[-1, 0, 1] > pixels[0, 0, 1] + 200


def basisu_quad(*, fallback: bool) -> tuple[object, np.ndarray]:
    """A quad whose texture's KHR_texture_basisu source is the UASTC gradient; with
    ``fallback``, its plain ``source`` is a PNG of a checker (returned), else it has none."""
    checker = np.zeros((4, 4, 4), np.uint8)
    checker[::2, ::2] = (255, 255, 255, 255)
    checker[..., 3] = 255
    if fallback:
        b = quad_document(image=encode(checker))
        source = b.add(
            "images", {"bufferView": b.add_buffer_view(ktx("uastc")), "mimeType": "image/ktx2"}
        )
    else:
        b = quad_document(image=ktx("uastc"), mime="image/ktx2")
        source = b.document["textures"][0].pop("source")
    b.document["textures"][0]["extensions"] = {"KHR_texture_basisu": {"source": source}}
    b.document["extensionsUsed"] = ["KHR_texture_basisu"]
    return b, checker


def test_the_basisu_source_comes_first(tmp_path):
    b, _ = basisu_quad(fallback=True)
    scene = load_gltf(write(b, tmp_path))
    error = np.abs(scene.materials[0].texture.astype(int) - gradient())
    assert error.max() <= 2


def test_without_the_transcoder_the_fallback_or_a_warning_naming_the_extra(tmp_path, monkeypatch):
    def missing():
        raise ImageProblem(ktx2.HINT)

    monkeypatch.setattr(ktx2, "_transcoder", missing)
    b, checker = basisu_quad(fallback=True)
    scene = load_gltf(write(b, tmp_path))
    np.testing.assert_array_equal(scene.materials[0].texture, checker)  # the PNG fallback
    b, _ = basisu_quad(fallback=False)
    with pytest.warns(GltfWarning, match=r"images\[0\]: .*pip install 'vkdqs\[compression\]'"):
        scene = load_gltf(write(b, tmp_path, "no_fallback.gltf"))
    assert scene.materials[0].texture is None


def _oversized(data: bytes) -> bytes:
    """The KTX 2 file with pixelWidth (bytes 20..24 of the header) claiming 1,000,000."""
    return data[:20] + struct.pack("<I", 1_000_000) + data[24:]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (ktx("uastc")[:60], "cannot (read|transcode)"),
        (ktx("uastc")[:12] + b"\xff" * 200, "cannot (read|transcode)"),
        (b"\x89PNG not a ktx", "not a KTX 2 file"),
        (_oversized(ktx("etc1s")), "cannot (read|transcode)|1000000x16 pixels"),
    ],
)
def test_broken_ktx2_files_warn_and_draw_untextured(tmp_path, data, why):
    b = quad_document(image=data, mime="image/ktx2")
    with pytest.warns(GltfWarning, match=rf"images\[0\]: .*({why})"):
        scene = load_gltf(write(b, tmp_path))
    assert scene.materials[0].texture is None


def test_the_transcoded_size_is_charged_before_transcoding():
    charged = []
    ktx2.decode_ktx2(ktx("etc1s"), lambda n, what: charged.append((n, what)))
    assert charged == [(2 * 16 * 16 * 4, "transcoding a 16x16 KTX 2 image")]
