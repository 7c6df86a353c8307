"""Bounds that hold: what a glTF file costs is charged at its peak, and the default bound is safe.

* The cases of "Bounds that hold" (huge hierarchies, shared images, zero-filled accessors, a
  big PNG under a small ``max_bytes``), built here, each load in a fresh process under the
  default bound (or the given one): under 2 CPU seconds and 256 MB above the process's
  baseline, or refused with a GltfError naming the limit.
* ``max_bytes`` is a hard bound: for a spread of files the peak of the traced (numpy and Python)
  memory of a load stays under what it charged (``GltfScene.charged_bytes``, the least
  ``max_bytes`` that loads it), and for what tracemalloc cannot see (Pillow's and Draco's C
  allocations) the peak resident memory does, in a fresh process.
* The default bound: 8 bytes per byte of JSON, 32 per byte of binary data, 128 MiB to 2 GiB.
* The hierarchy's vectorized passes (:mod:`vkdqs.gltf.hierarchy`) against a walk node by node.
"""

from __future__ import annotations

import io
import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.gltf_fixtures import make_rig
from tests.gltf_fixtures_compressed import KHR, draco_file, meshopt_file
from tests.gltf_fixtures_morph import make_morph_model
from tests.test_gltf_hostile import MAX_MB, MAX_SECONDS, MAX_WALL_SECONDS, measure
from vkdqs import procedural
from vkdqs.gltf import GltfError, load_gltf
from vkdqs.gltf.accessors import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MIN_BYTES,
    default_max_bytes,
)
from vkdqs.gltf.hierarchy import ancestors, depths, global_matrices, on_path
from vkdqs.gltf.save import GltfBuilder

ROOT = Path(__file__).resolve().parents[1]
FLOAT, UNSIGNED_INT = 5126, 5125
MIB = 2**20


def _doc(**arrays) -> dict:
    return {"asset": {"version": "2.0"}, **arrays}


def _write(folder: Path, doc: dict, name: str = "model.gltf") -> Path:
    path = folder / name
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return path


def _glb(folder: Path, doc: dict, binary: bytes, name: str = "model.glb") -> Path:
    text = json.dumps(doc, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    total = 12 + 8 + len(text) + 8 + len(binary)
    path = folder / name
    with open(path, "wb") as f:
        f.write(struct.pack("<III", 0x46546C67, 2, total))
        f.write(struct.pack("<II", len(text), 0x4E4F534A) + text)
        f.write(struct.pack("<II", len(binary), 0x004E4942))
        f.write(binary)
    return path


def _png(side: int, *, noise: bool = False) -> bytes:
    if noise:
        rng = np.random.default_rng(0)
        pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
    else:
        pixels = np.zeros((side, side, 3), np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def _chain(n: int) -> list[dict]:
    return [{"children": [i + 1]} for i in range(n - 1)] + [{}]


# ------------------------------------------------------------------------------------------------
# the cases of "Bounds that hold", under the default bound
# ------------------------------------------------------------------------------------------------


def _chain_100k(folder: Path) -> Path:
    """A 2 MB file: a 100,000-deep chain with a mesh at its end, a skin whose skeleton is the
    root and an animation of the root (it took 7.6 s)."""
    n = 100_000
    keys = np.array([0, 1], "<f4").tobytes() + np.zeros((2, 3), "<f4").tobytes()
    (folder / "keys.bin").write_bytes(keys)
    nodes = _chain(n)
    nodes[-1]["mesh"] = 0
    doc = _doc(
        buffers=[{"uri": "keys.bin", "byteLength": len(keys)}],
        bufferViews=[
            {"buffer": 0, "byteLength": 8},
            {"buffer": 0, "byteOffset": 8, "byteLength": 24},
        ],
        accessors=[
            {"bufferView": 0, "componentType": FLOAT, "count": 2, "type": "SCALAR"},
            {"bufferView": 1, "componentType": FLOAT, "count": 2, "type": "VEC3"},
            {"componentType": FLOAT, "count": 3, "type": "VEC3"},
        ],
        meshes=[{"primitives": [{"attributes": {"POSITION": 2}}]}],
        nodes=nodes,
        skins=[{"joints": [n - 2, n - 3], "skeleton": 0}],
        animations=[
            {
                "samplers": [{"input": 0, "output": 1}],
                "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}],
            }
        ],
    )
    return _write(folder, doc)


def _flat_1m(folder: Path) -> Path:
    """A 3 MB file of 1,000,000 root nodes (19 s and 1.3 GB)."""
    return _write(folder, _doc(nodes=[{}] * 1_000_000))


def _chain_1m(folder: Path) -> Path:
    """A 22 MB file: a 1,000,000-deep chain (86 s and 1.8 GB)."""
    return _write(folder, _doc(nodes=_chain(1_000_000)))


def _skin_1m(folder: Path) -> Path:
    """A 75 MB GLB: 1,000,000 nodes, all joints of one skin, with inverse bind matrices
    (58 s and 2.1 GB)."""
    n = 1_000_000
    ibm = np.broadcast_to(np.eye(4, dtype="<f4"), (n, 4, 4)).tobytes()
    doc = _doc(
        buffers=[{"byteLength": len(ibm)}],
        bufferViews=[{"buffer": 0, "byteLength": len(ibm)}],
        accessors=[{"bufferView": 0, "componentType": FLOAT, "count": n, "type": "MAT4"}],
        nodes=[{}] * n,
        skins=[{"joints": list(range(n)), "inverseBindMatrices": 0}],
    )
    return _glb(folder, doc, ibm)


def _images_10k(folder: Path) -> Path:
    """10,000 images, textures and materials on one bufferView holding a 200x200 PNG: it was
    decoded 10,000 times (13.7 s and 1.08 GB before the file was refused)."""
    data = _png(200)
    n = 10_000
    doc = _doc(
        buffers=[{"byteLength": len(data)}],
        bufferViews=[{"buffer": 0, "byteLength": len(data)}],
        images=[{"bufferView": 0, "mimeType": "image/png"}] * n,
        textures=[{"source": i} for i in range(n)],
        materials=[{"pbrMetallicRoughness": {"baseColorTexture": {"index": i}}} for i in range(n)],
    )
    return _glb(folder, doc, data)


def _zero_filled(folder: Path) -> Path:
    """A file of under 202 bytes: 256 MiB of zero-filled positions, normals computed (15 s and
    2.3 GB under the former default)."""
    doc = _doc(
        accessors=[{"componentType": FLOAT, "count": 22_369_620, "type": "VEC3"}],
        meshes=[{"primitives": [{"attributes": {"POSITION": 0}}]}],
        nodes=[{"mesh": 0}],
    )
    path = _write(folder, doc)
    assert path.stat().st_size <= 202
    return path


def _png_5000(folder: Path) -> Path:
    """One 5000x5000 PNG as a base-colour texture (under max_bytes = 260 MiB it peaked at
    473 MiB: 8 bytes a pixel were charged, about 17 spent)."""
    data = _png(5000)
    doc = _doc(
        buffers=[{"byteLength": len(data)}],
        bufferViews=[{"buffer": 0, "byteLength": len(data)}],
        images=[{"bufferView": 0, "mimeType": "image/png"}],
        textures=[{"source": 0}],
        materials=[{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
    )
    return _glb(folder, doc, data)


_LIMIT = r"past max_bytes = \d+|vkdqs reads skins of at most 65536 joints"
#: name: (builder, max_bytes (None: the default), what happens: "ok", a refusal's pattern, or
#: None for either)
BOUND_CASES = {
    "chain_100k_2mb": (_chain_100k, None, None),
    "chain_100k_2mb_raised": (_chain_100k, 2**30, "ok"),
    "flat_roots_1m_3mb": (_flat_1m, None, _LIMIT),
    "chain_1m_22mb": (_chain_1m, None, _LIMIT),
    "skin_of_1m_joints_75mb": (_skin_1m, None, _LIMIT),
    "images_10k_share_a_view": (_images_10k, None, "ok"),
    "zero_filled_202_bytes": (_zero_filled, None, _LIMIT),
    "png_5000_under_260mib": (_png_5000, 260 * MIB, _LIMIT),
}


@pytest.mark.parametrize("case", list(BOUND_CASES))
def test_bounds_hold(tmp_path, case):
    build, max_bytes, expected = BOUND_CASES[case]
    result = measure(build(tmp_path), max_bytes=max_bytes)
    if expected == "ok":
        assert result["outcome"] == "ok", result["message"]
    elif expected is not None:
        assert result["outcome"] == "GltfError", result["message"]
        assert re.search(expected, result["message"]), result["message"]
    elif result["outcome"] == "GltfError":
        assert re.search(_LIMIT, result["message"]), result["message"]
    assert result["seconds"] < MAX_SECONDS, result
    assert result["wall"] < MAX_WALL_SECONDS, result
    assert result["mb"] < MAX_MB, result


# ------------------------------------------------------------------------------------------------
# max_bytes is a hard bound: peaks against what was charged
# ------------------------------------------------------------------------------------------------


def _tube_document(vertices: int) -> tuple[dict, bytes]:
    """A skinned tube (4 influences, 16 joints) with an animation: JSON and binary."""
    mesh = procedural.tube(vertices, bone_count=16, influences=4)
    b = GltfBuilder()
    for k in range(16):
        node = {"translation": [0.0, 0.0 if k == 0 else 0.6, 0.0]}
        if k < 15:
            node["children"] = [k + 1]
        b.add("nodes", node)
    b.add("nodes", {"mesh": 0, "skin": 0})
    attrs = {
        "POSITION": b.add_accessor(mesh.positions.astype(np.float32), target="vertex"),
        "NORMAL": b.add_accessor(mesh.normals.astype(np.float32), target="vertex"),
        "JOINTS_0": b.add_accessor(mesh.joints[:, :4].astype(np.uint16), target="vertex"),
        "WEIGHTS_0": b.add_accessor(mesh.weights[:, :4].astype(np.float32), target="vertex"),
    }
    indices = b.add_accessor(mesh.indices.astype(np.uint32), target="index")
    b.add("meshes", {"primitives": [{"attributes": attrs, "indices": indices}]})
    ibm = np.tile(np.eye(4), (16, 1, 1))
    ibm[:, 1, 3] = -0.6 * np.arange(16)
    b.add(
        "skins",
        {"joints": list(range(16)), "inverseBindMatrices": b.add_accessor(ibm.astype(np.float32))},
    )
    times = np.arange(200, dtype=np.float32) / 30
    angles = np.linspace(0, 1, 200)
    rotations = np.stack([np.sin(angles / 2), 0 * angles, 0 * angles, np.cos(angles / 2)], 1)
    rotations = rotations.astype(np.float32)
    samplers = [{"input": b.add_accessor(times, min_max=True), "output": b.add_accessor(rotations)}]
    channels = [{"sampler": 0, "target": {"node": k, "path": "rotation"}} for k in range(16)]
    b.add("animations", {"samplers": samplers, "channels": channels})
    b.document["buffers"] = [{"byteLength": len(b.binary)}]
    return b.document, bytes(b.binary)


def _zero_primitive(count: int, **primitive) -> dict:
    """A document with one primitive on accessors without a bufferView (no file bytes)."""
    accessors = [
        {"componentType": FLOAT, "count": count, "type": "VEC3"},
        {"componentType": 5121, "count": count, "type": "VEC4"},
        {"componentType": FLOAT, "count": count, "type": "VEC4"},
        {"componentType": FLOAT, "count": count, "type": "VEC2"},
    ]
    attributes = primitive.pop("attributes", {"POSITION": 0})
    return _doc(
        accessors=accessors,
        meshes=[{"primitives": [{"attributes": attributes, **primitive}]}],
        nodes=[{"mesh": 0}],
    )


@pytest.fixture(scope="module")
def peak_files(tmp_path_factory) -> list[tuple[str, bool]]:
    """(path, flat_normals) of files that exercise every decoding path."""
    folder = tmp_path_factory.mktemp("peaks")
    files = []
    for i, rig in enumerate(
        [
            make_rig(),
            make_rig(eight=True, interleaved=True),
            make_rig(sparse=True, morph_channel=True),
        ]
    ):
        rig.save(folder / f"rig{i}.glb")
        files.append((str(folder / f"rig{i}.glb"), i == 0))
    make_morph_model().save(folder / "morph.glb")
    files.append((str(folder / "morph.glb"), False))
    doc, binary = _tube_document(60_000)
    files.append((str(_glb(folder, doc, binary, "tube.glb")), False))
    meshopt_file(folder / "ext.glb", doc, binary)
    meshopt_file(folder / "khr.glb", doc, binary, extension=KHR, version=1)
    draco_file(folder / "draco.glb", doc, binary, preserve_order=False)
    files += [(str(folder / name), False) for name in ("ext.glb", "khr.glb", "draco.glb")]
    n = 120_000
    all_attributes = {"POSITION": 0, "JOINTS_0": 1, "WEIGHTS_0": 2, "TEXCOORD_0": 3, "COLOR_0": 2}
    for name, doc, flat in [
        ("computed_normals.gltf", _zero_primitive(n), False),
        ("strip.gltf", _zero_primitive(n, mode=5), False),
        ("fan_flat.gltf", _zero_primitive(n, mode=6), True),
        (
            "all_attributes.gltf",
            _zero_primitive(
                n,
                attributes=all_attributes,
                targets=[{"POSITION": 0, "NORMAL": 0}, {"POSITION": 0}],
            ),
            True,
        ),
        (
            "nodes.gltf",
            _doc(
                nodes=[
                    {
                        "children": [i + 1],
                        "translation": [0, 1, 0],
                        "rotation": [0, 0, 0.6, 0.8],
                        "scale": [2, 2, 2],
                        "name": f"n{i}",
                    }
                    for i in range(19_999)
                ]
                + [{"children": [20_000 + k]} for k in range(10_000)]
                + [{"matrix": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0.5, 0, 0, 1]}] * 10_001
            ),
            False,
        ),
    ]:
        files.append((str(_write(folder, doc, name)), flat))
    return files


_PEAKS = """
import json, sys, tracemalloc, warnings
warnings.simplefilter("ignore")
from vkdqs.gltf import load_gltf
files = json.loads(sys.argv[1])
for path, flat in files:  # imports and first-use caches are not the file's
    load_gltf(path, flat_normals=flat, max_bytes=2**33)
out = []
for path, flat in files:
    tracemalloc.start()
    scene = load_gltf(path, flat_normals=flat, max_bytes=2**33)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    charged = scene.charged_bytes
    del scene
    exact = load_gltf(path, flat_normals=flat, max_bytes=charged).charged_bytes
    try:
        load_gltf(path, flat_normals=flat, max_bytes=charged - 1)
        refused = False
    except Exception as exc:
        refused = "max_bytes" in str(exc)
    out.append({"path": path, "peak": peak, "charged": charged, "exact": exact,
                "refused": refused})
print(json.dumps(out))
"""


#: What a load may hold beyond what it charges: a fixed overhead (the reader's own objects).
OVERHEAD = 512 * 1024


def test_peak_memory_stays_under_what_is_charged(peak_files):
    """Every allocation is charged at least what it peaks at, before it is made: the traced
    peak of a load (numpy's arrays and the Python objects of the JSON and the nodes) is at most
    ``charged_bytes``, the least ``max_bytes`` that loads the file (one byte less refuses it)."""
    proc = subprocess.run(
        [sys.executable, "-c", _PEAKS, json.dumps(peak_files)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for row in json.loads(proc.stdout):
        name = Path(row["path"]).name
        assert row["peak"] <= row["charged"] + OVERHEAD, (name, row)
        assert row["exact"] == row["charged"] and row["refused"], (name, row)


_RSS = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy
from PIL import Image, PngImagePlugin, JpegImagePlugin, WebPImagePlugin
import DracoPy, meshoptimizer
from vkdqs.gltf import load_gltf
from tests.peak_memory import peak_bytes
path, max_bytes = sys.argv[1], int(sys.argv[2])
before = peak_bytes()
scene = load_gltf(path, max_bytes=max_bytes)
peak = peak_bytes()
print(json.dumps({"rss": peak - before, "charged": scene.charged_bytes,
                  "textured": [m.texture is not None for m in scene.materials]}))
"""


def _textured(folder: Path, fmt: str, side: int, **options) -> Path:
    rng = np.random.default_rng(1)
    small = rng.integers(0, 256, (side // 64, side // 64, 3), dtype=np.uint8)
    image = Image.fromarray(small).resize((side, side), Image.Resampling.BILINEAR)
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    data = out.getvalue()
    mime = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}[fmt]
    doc = _doc(
        buffers=[{"byteLength": len(data)}],
        bufferViews=[{"buffer": 0, "byteLength": len(data)}],
        images=[{"bufferView": 0, "mimeType": mime}],
        textures=[{"source": 0}],
        materials=[{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        extensionsUsed=["EXT_texture_webp"] if fmt == "WEBP" else [],
    )
    return _glb(folder, doc, data, f"{fmt.lower()}{side}.glb")


def _rss(path: Path, max_bytes: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _RSS, str(path), str(max_bytes)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    ("fmt", "side", "options"),
    [
        ("PNG", 2500, {"compress_level": 1}),  # fast to encode; inflating costs the same
        ("JPEG", 2500, {"quality": 90, "progressive": True, "subsampling": 0}),
        ("WEBP", 2500, {"lossless": True, "quality": 0, "method": 0}),
        ("PNG", 4500, {"compress_level": 1}),  # shrunk to 4096
    ],
    ids=["png", "progressive-jpeg", "webp", "png-shrunk"],
)
def test_image_decoding_peaks_under_max_bytes(tmp_path, fmt, side, options):
    """Pillow's C allocations are not traced: the resident peak of loading one big texture,
    with max_bytes set to exactly what it charges, stays under max_bytes (plus 16 MiB for the
    allocator and the imports' first use)."""
    path = _textured(tmp_path, fmt, side, **options)
    charged = load_gltf(path, max_bytes=2**33).charged_bytes
    result = _rss(path, charged)
    assert result["textured"] == [True]
    assert result["rss"] <= charged + 16 * MIB, result
    with pytest.raises(GltfError, match=r"images\[0\]: decoding a \d+x\d+ image needs"):
        load_gltf(path, max_bytes=charged - 1)


def test_draco_decoding_peaks_under_max_bytes(tmp_path):
    doc, binary = _tube_document(200_000)
    draco_file(tmp_path / "draco.glb", doc, binary, preserve_order=False)
    charged = load_gltf(tmp_path / "draco.glb", max_bytes=2**33).charged_bytes
    result = _rss(tmp_path / "draco.glb", charged)
    assert result["rss"] <= charged + 16 * MIB, result


# ------------------------------------------------------------------------------------------------
# the default bound
# ------------------------------------------------------------------------------------------------


def test_the_default_bound_grows_with_json_and_data():
    assert default_max_bytes(0) == DEFAULT_MIN_BYTES == 128 * MIB
    assert default_max_bytes(20 * MIB) == 160 * MIB
    assert default_max_bytes(MIB, 10 * MIB) == 8 * MIB + 320 * MIB
    assert default_max_bytes(0, 10**12) == DEFAULT_MAX_BYTES == 2 * 2**30


def test_the_default_bound_counts_buffer_files(tmp_path):
    """A .gltf with a .bin: the bound grows with the bytes of the files it reads (32 a byte),
    so a model in a .gltf + .bin loads as its GLB does."""
    doc, binary = _tube_document(60_000)
    (tmp_path / "tube.bin").write_bytes(binary)
    doc = dict(doc, buffers=[{"uri": "tube.bin", "byteLength": len(binary)}])
    path = _write(tmp_path, doc, "tube.gltf")
    scene = load_gltf(path)
    glb = load_gltf(_glb(tmp_path, dict(doc, buffers=[{"byteLength": len(binary)}]), binary))
    assert scene.meshes[0].vertex_count == glb.meshes[0].vertex_count == 60_000
    # and the message says how the default was reached
    big = _zero_primitive(3_000_000)
    with pytest.raises(GltfError) as info:
        load_gltf(_write(tmp_path, big, "big.gltf"))
    message = str(info.value)
    assert f"past max_bytes = {DEFAULT_MIN_BYTES} (" in message
    assert "the default for" in message and "bytes of JSON" in message


def test_an_explicit_max_bytes_above_the_default_loads_what_the_default_refuses(tmp_path):
    path = _write(tmp_path, _zero_primitive(3_000_000))
    with pytest.raises(GltfError, match="past max_bytes"):
        load_gltf(path)
    assert load_gltf(path, max_bytes=2**31).meshes[0].vertex_count == 3_000_000


# ------------------------------------------------------------------------------------------------
# shared images are decoded once
# ------------------------------------------------------------------------------------------------


def test_images_sharing_a_source_are_decoded_once(tmp_path, monkeypatch):
    from vkdqs.gltf import materials

    calls = []
    decode = materials.decode_image
    monkeypatch.setattr(
        materials, "decode_image", lambda *a, **k: calls.append(1) or decode(*a, **k)
    )
    data = _png(32, noise=True)
    (tmp_path / "t.png").write_bytes(data)
    (tmp_path / "alias.png").symlink_to("t.png")
    uri = "data:image/png;base64," + __import__("base64").b64encode(data).decode()
    images = [{"bufferView": 0, "mimeType": "image/png"}] * 3
    images += [
        {"uri": "t.png"},
        {"uri": "./t.png"},
        {"uri": "alias.png"},
        {"uri": uri},
        {"uri": uri},
    ]
    doc = _doc(
        buffers=[{"byteLength": len(data)}],
        bufferViews=[{"buffer": 0, "byteLength": len(data)}],
        images=images,
        textures=[{"source": i} for i in range(len(images))],
        materials=[
            {"pbrMetallicRoughness": {"baseColorTexture": {"index": i}}} for i in range(len(images))
        ],
    )
    scene = load_gltf(_glb(tmp_path, doc, data))
    assert len(calls) == 3  # the bufferView, the file (three URIs), the data: URI
    textures = [m.texture for m in scene.materials]
    assert textures[0] is textures[1] is textures[2]
    assert textures[3] is textures[4] is textures[5]
    assert textures[6] is textures[7]
    np.testing.assert_array_equal(textures[0], textures[3])


def test_a_broken_shared_image_warns_for_each_image(tmp_path):
    from vkdqs.gltf import GltfWarning

    data = b"not a png at all"
    doc = _doc(
        buffers=[{"byteLength": len(data)}],
        bufferViews=[{"buffer": 0, "byteLength": len(data)}],
        images=[{"bufferView": 0, "mimeType": "image/png"}] * 2 + [{"uri": "missing.png"}] * 2,
        textures=[{"source": i} for i in range(4)],
        materials=[{"pbrMetallicRoughness": {"baseColorTexture": {"index": i}}} for i in range(4)],
    )
    with pytest.warns(GltfWarning) as record:
        scene = load_gltf(_glb(tmp_path, doc, data))
    said = [str(w.message) for w in record]
    for i in range(2):
        assert any(re.match(rf"model\.glb: images\[{i}\]: not a PNG", m) for m in said), said
    for i in (2, 3):
        assert any(
            re.match(rf"model\.glb: images\[{i}\]\.uri: cannot read 'missing\.png'", m)
            for m in said
        ), said
    assert all(m.texture is None for m in scene.materials)


# ------------------------------------------------------------------------------------------------
# the hierarchy's vectorized passes
# ------------------------------------------------------------------------------------------------


def _random_forest(rng, n: int) -> np.ndarray:
    """Parents of a random forest: node i's parent is an earlier node or none, then the nodes
    shuffled (so parents may come after their children)."""
    parent = np.array(
        [-1 if i == 0 or rng.random() < 0.05 else rng.integers(0, i) for i in range(n)]
    )
    order = rng.permutation(n)
    new = np.empty(n, np.int64)
    new[order] = np.arange(n)
    out = np.full(n, -1)
    out[new] = np.where(parent >= 0, new[np.maximum(parent, 0)], -1)
    return out


def _walk_depths(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), np.int64)
    for i in range(len(parent)):  # the reference, node by node
        j = i
        while parent[j] >= 0:
            depth[i] += 1
            j = parent[j]
    return depth


@pytest.mark.parametrize("seed", range(5))
def test_depths_ancestors_and_globals_match_a_walk(seed):
    rng = np.random.default_rng(seed)
    n = 400
    parent = _random_forest(rng, n)
    depth, unreached = depths(parent)
    assert unreached.size == 0
    np.testing.assert_array_equal(depth, _walk_depths(parent))
    nodes = rng.integers(0, n, 300)
    levels = rng.integers(0, depth[nodes] + 1)
    want = []
    for x, k in zip(nodes.tolist(), levels.tolist(), strict=True):
        for _ in range(k):
            x = parent[x]
        want.append(x)
    np.testing.assert_array_equal(ancestors(parent, nodes, levels), want)
    local = np.tile(np.eye(4), (n, 1, 1))
    local[:, :3, :] += rng.normal(scale=0.1, size=(n, 3, 4))
    glob = global_matrices(local.copy(), parent)
    walk = local.copy()
    for i in np.argsort(depth, kind="stable"):  # parents first
        if parent[i] >= 0:
            walk[i] = walk[parent[i]] @ local[i]
    np.testing.assert_allclose(glob, walk, rtol=1e-12, atol=1e-12)
    flags = rng.random(n) < 0.02
    hit = np.zeros(n, bool)
    for i in range(n):  # the reference, node by node: flagged itself or above
        j = i
        while j >= 0 and not hit[i]:
            hit[i] = flags[j]
            j = parent[j]
    np.testing.assert_array_equal(on_path(parent, flags), hit)


def test_cycles_are_found_by_the_passes():
    parent = np.array([-1, 0, 3, 4, 2, 4])  # 2 -> 4 -> 3 -> 2 is a cycle, 5 hangs below it
    _, unreached = depths(parent)
    np.testing.assert_array_equal(unreached, [2, 3, 4, 5])
    long = np.arange(-1, 99_999)
    long[0] = 99_999  # a cycle through all 100,000 nodes
    assert depths(long)[1].size == 100_000
