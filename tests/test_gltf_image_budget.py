"""The default bound takes real characters' textures and still refuses bombs before they
allocate (vkdqs.gltf.images): a decode's measured peak is checked on top of what the file holds
and only its RGBA8 array stays charged; images past twice Pillow's MAX_IMAGE_PIXELS are refused
from their header; the file's images share one total (accessors.DEFAULT_IMAGE_BYTES). The large
textures are made at test time (nothing large is committed)."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vkdqs.gltf import GltfError, GltfWarning, load_gltf
from vkdqs.gltf.accessors import DEFAULT_IMAGE_BYTES, DEFAULT_MIN_BYTES
from vkdqs.gltf.images import PEAK_BYTES_PER_PIXEL, max_image_pixels

from .peak_memory import peak_bytes, reset_peak

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20


def _encoded(fmt: str, side: int) -> bytes:
    """A ``side`` x ``side`` texture that is not flat (a smooth colour field, so it encodes
    and decodes quickly but has real pixel data)."""
    rng = np.random.default_rng(7)
    small = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    image = Image.fromarray(small).resize((side, side), Image.Resampling.BILINEAR)
    out = io.BytesIO()
    if fmt == "PNG":
        image.save(out, format="PNG", compress_level=1)
    else:
        image.save(out, format="JPEG", quality=85)
    return out.getvalue()


def _model(folder: Path, images: list[tuple[bytes, str]], name: str, basisu: bool = False) -> Path:
    """A GLB with one quad per image, each image its own bufferView (decoded once each);
    ``basisu``: the textures name their images through KHR_texture_basisu."""
    binary = b""
    views, imgs, textures, materials = [], [], [], []
    for i, (data, mime) in enumerate(images):
        views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data)})
        binary += data + b"\0" * (-len(data) % 4)
        imgs.append({"bufferView": i, "mimeType": mime})
        textures.append(
            {"extensions": {"KHR_texture_basisu": {"source": i}}} if basisu else {"source": i}
        )
        materials.append({"pbrMetallicRoughness": {"baseColorTexture": {"index": i}}})
    doc = {
        "asset": {"version": "2.0"},
        "buffers": [{"byteLength": len(binary)}],
        "bufferViews": views,
        "images": imgs,
        "textures": textures,
        "materials": materials,
    }
    if basisu:
        doc["extensionsUsed"] = doc["extensionsRequired"] = ["KHR_texture_basisu"]
    text = json.dumps(doc, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    path = folder / name
    with open(path, "wb") as f:
        f.write(struct.pack("<III", 0x46546C67, 2, 12 + 8 + len(text) + 8 + len(binary)))
        f.write(struct.pack("<II", len(text), 0x4E4F534A) + text)
        f.write(struct.pack("<II", len(binary), 0x004E4942) + binary)
    return path


def _png_header(width: int, height: int) -> bytes:
    """A PNG claiming ``width`` x ``height`` RGBA in its IHDR, with a few bytes of pixel data."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(b"\0" * 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + idat + chunk(b"IEND", b"")


_LOAD = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy
from PIL import Image, PngImagePlugin, JpegImagePlugin
from vkdqs.gltf import ktx2, load_gltf
from tests.peak_memory import peak_bytes
ktx2.available()  # the transcoder's library loaded before the baseline
before = peak_bytes()
scene = load_gltf(sys.argv[1])
peak = peak_bytes()
print(json.dumps({"rss": peak - before, "charged": scene.charged_bytes,
                  "sides": [list(m.texture.shape) for m in scene.materials]}))
"""


def _load_in_a_process(path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _LOAD, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_eight_4096_textures_load_with_the_default(tmp_path):
    """Four PNG and four JPEG 4096x4096 textures (512 MiB of RGBA8 kept): loaded with no
    option, the resident peak under what was charged (plus 16 MiB for the allocator)."""
    png, jpeg = _encoded("PNG", 4096), _encoded("JPEG", 4096)
    images = [(png, "image/png")] * 4 + [(jpeg, "image/jpeg")] * 4
    path = _model(tmp_path, images, "eight.glb")
    result = _load_in_a_process(path)
    assert result["sides"] == [[4096, 4096, 4]] * 8
    assert 8 * 4096 * 4096 * 4 <= result["charged"] <= DEFAULT_IMAGE_BYTES
    assert result["rss"] <= result["charged"] + 16 * MIB, result


def test_an_8192_texture_loads_with_the_default_shrunk_to_4096(tmp_path):
    path = _model(tmp_path, [(_encoded("JPEG", 8192), "image/jpeg")], "big.glb")
    result = _load_in_a_process(path)
    assert result["sides"] == [[4096, 4096, 4]]
    assert result["rss"] <= result["charged"] + 16 * MIB, result
    # the peak was checked, but only the kept array stays held
    scene = load_gltf(path)
    assert scene.charged_bytes >= PEAK_BYTES_PER_PIXEL["JPEG"] * 8192 * 8192


@pytest.mark.parametrize("codec", ["etc1s", "uastc"])
def test_a_4096_ktx2_texture_peaks_under_what_is_charged(tmp_path, codec):
    """A 4096x4096 KHR_texture_basisu texture (a 2 KB file of one colour: the transcode's cost
    is its output's, whatever the content) transcoded with the default bound: the resident peak
    under what was charged (plus 16 MiB for the allocator), the pixels its colour."""
    data = (ROOT / "tests" / "data" / f"flat4096_{codec}.ktx2").read_bytes()
    path = _model(tmp_path, [(data, "image/ktx2")], "ktx2.glb", basisu=True)
    result = _load_in_a_process(path)
    assert result["sides"] == [[4096, 4096, 4]]
    assert 4096 * 4096 * 4 <= result["charged"] <= DEFAULT_IMAGE_BYTES
    assert result["rss"] <= result["charged"] + 16 * MIB, result
    texture = load_gltf(path).materials[0].texture
    assert (texture == texture[0, 0]).all()  # one colour, as encoded
    # UASTC keeps it within a step; ETC1S codes a block's colour as a quantized base plus one
    # of a few intensity offsets (measured: 29 levels off in red)
    near = 2 if codec == "uastc" else 32
    assert np.abs(texture[0, 0].astype(int) - (200, 90, 40, 255)).max() <= near


def test_past_twice_pillows_pixel_rule_is_a_bomb_refused_from_its_header(tmp_path):
    most = max_image_pixels()
    assert most == 2 * Image.MAX_IMAGE_PIXELS
    side = int(most**0.5) + 1  # just past it, each side under MAX_IMAGE_SIDE
    path = _model(tmp_path, [(_png_header(side, side), "image/png")], "bomb.glb")
    assert reset_peak(), "the peak is measured from /proc/self (Linux)"
    before = peak_bytes()
    with pytest.warns(GltfWarning, match=r"images\[0\]: refused as a decompression bomb"):
        scene = load_gltf(path)
    assert scene.materials[0].texture is None
    assert peak_bytes() - before < 64 * 2**20
    # between the rule's two thresholds Pillow only warns: decoded (here: truncated data)
    side = int((1.5 * Image.MAX_IMAGE_PIXELS) ** 0.5)
    path = _model(tmp_path, [(_png_header(side, side), "image/png")], "large.glb")
    with pytest.warns(GltfWarning, match=r"images\[0\]: cannot decode its pixels"):
        load_gltf(path)


def test_the_files_images_share_one_total(tmp_path):
    """Forty headers of 8192x8192 images (each checked, each under the pixel rule): their
    peaks and kept arrays pass the file's total before the last, refused with its JSON path,
    nothing decoded."""
    header = _png_header(8192, 8192)
    path = _model(tmp_path, [(header, "image/png")] * 40, "many.glb")
    with pytest.raises(GltfError, match=r"images\[\d+\]: decoding a 8192x8192 image needs") as e:
        load_gltf(path)
    assert f"max_bytes = {DEFAULT_IMAGE_BYTES}" in str(e.value)
    # an explicit max_bytes is the one bound for everything
    with pytest.raises(GltfError, match=r"images\[0\]: decoding a 8192x8192 image needs"):
        load_gltf(path, max_bytes=DEFAULT_MIN_BYTES)


def test_images_leave_the_data_bound_to_the_data(tmp_path):
    """Textures kept under the image allowance do not use up the bound of the data the model
    brings: the bound a mesh is checked against stays the data's own."""
    from vkdqs.gltf.accessors import Budget

    budget = Budget("model.glb", None)
    budget.charge_peak(512 * MIB, 600 * MIB, "images[0]", "decoding")
    assert budget.spent == 512 * MIB and budget.high == 600 * MIB
    budget.charge(DEFAULT_MIN_BYTES - 1, "meshes[0]", "positions")  # the data's own bound
    with pytest.raises(GltfError, match="max_bytes"):
        budget.charge(2, "meshes[1]", "positions")
