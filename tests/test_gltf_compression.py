"""Compressed glTF: EXT_/KHR_meshopt_compression and KHR_draco_mesh_compression.

Every file is written here from the fixture rig (tests/gltf_fixtures.py) by the encoders of the
same packages (tests/gltf_fixtures_compressed.py), and every decoded attribute is compared with
the uncompressed source: exactly for the lossless codecs, within the stated error of each
filter and of Draco's position quantization otherwise. The decoded rigs are skinned on the GPU
against the float64 references.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.gltf_fixtures import BYTE, SHORT, UNSIGNED_SHORT, make_rig, quantize
from tests.gltf_fixtures_compressed import (
    DRACO,
    EXT,
    KHR,
    draco_file,
    encode_filter,
    meshopt_file,
)
from vkdqs import dq, reference
from vkdqs.engine.skinner import Skinner
from vkdqs.gltf import GltfError, GltfWarning, load_gltf
from vkdqs.gltf.compression import decode_filter_color
from vkdqs.gltf.save import save

HINT = r"pip install 'vkdqs\[compression\]'"


def _rig():
    return make_rig(scaled=False)


def _canonical_triangles(indices: np.ndarray) -> np.ndarray:
    """Triangles rotated to start at their smallest index, sorted: the meshopt triangle codec
    may rotate a triangle (keeping its winding)."""
    t = indices.reshape(-1, 3).astype(np.int64)
    first = np.argmin(t, axis=1)
    rolled = np.stack([t[np.arange(len(t)), (first + k) % 3] for k in range(3)], axis=1)
    return rolled[np.lexsort(rolled.T[::-1])]


def _assert_same_scene(got, want, *, rotated_triangles: bool) -> None:
    """Every decoded array of ``got`` equal to ``want``'s (triangles up to rotation)."""
    for mg, mw in zip(got.meshes, want.meshes, strict=True):
        for pg, pw in zip(mg.primitives, mw.primitives, strict=True):
            np.testing.assert_array_equal(pg.positions, pw.positions)
            np.testing.assert_array_equal(pg.normals, pw.normals)
            for a, b in ((pg.joints, pw.joints), (pg.weights, pw.weights)):
                assert (a is None) == (b is None)
                if a is not None:
                    np.testing.assert_array_equal(a, b)
            if rotated_triangles:
                np.testing.assert_array_equal(
                    _canonical_triangles(pg.indices), _canonical_triangles(pw.indices)
                )
            else:
                np.testing.assert_array_equal(pg.indices, pw.indices)
    for sg, sw in zip(got.skins, want.skins, strict=True):
        np.testing.assert_array_equal(sg.inverse_bind_matrices, sw.inverse_bind_matrices)
    for ag, aw in zip(got.animations, want.animations, strict=True):
        for cg, cw in zip(ag.channels, aw.channels, strict=True):
            np.testing.assert_array_equal(cg.times, cw.times)
            np.testing.assert_array_equal(cg.values, cw.values)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("source") / "rig.glb"
    rig = _rig()
    rig.save(path)
    return rig, load_gltf(path)


# -- meshopt: lossless modes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extension", "version"), [(EXT, 0), (KHR, 0), (KHR, 1)], ids=["EXT", "KHR-v0", "KHR-v1"]
)
@pytest.mark.parametrize("index_mode", ["TRIANGLES", "INDICES"])
@pytest.mark.parametrize("fallback", ["placeholder", "bare", "data"])
def test_meshopt_decodes_exactly(tmp_path, source, extension, version, index_mode, fallback):
    rig, want = source
    path = tmp_path / "mo.glb"
    doc, _ = meshopt_file(
        path,
        rig.document,
        bytes(rig.builder.binary),
        extension=extension,
        version=version,
        index_mode=index_mode,
        fallback=fallback,
        required=fallback != "data",
    )
    # 8-bit indices (the prop's strip) cannot be meshopt-compressed and stay plain
    compressed = [bv for bv in doc["bufferViews"] if extension in bv.get("extensions", {})]
    assert {bv["extensions"][extension]["mode"] for bv in compressed} == {"ATTRIBUTES", index_mode}
    assert len(compressed) == len(doc["bufferViews"]) - 1
    got = load_gltf(path)
    _assert_same_scene(got, want, rotated_triangles=index_mode == "TRIANGLES")


def test_meshopt_rig_skins_on_the_gpu_like_the_source(tmp_path, source, device):
    rig, want = source
    path = tmp_path / "mo.glb"
    meshopt_file(path, rig.document, bytes(rig.builder.binary), extension=KHR, version=1)
    scene = load_gltf(path)
    mesh, ref = scene.skinned_mesh(0), want.skinned_mesh(0)
    args = (ref.positions, ref.normals, ref.joints, ref.weights)
    n = scene.skins[0].joint_count
    with (
        Skinner(device, mesh, bone_count=n, method="dqs") as dqs_skinner,
        Skinner(device, mesh, bone_count=n, method="lbs") as lbs_skinner,
    ):
        for t in (0.0, 0.4, 1.3):
            mats = want.skinning_matrices(skin=0, animation=0, time=t)
            np.testing.assert_array_equal(mats, scene.skinning_matrices(0, 0, t))
            _close(ref, lbs_skinner.skin(mats), reference.skin_lbs(*args, mats))
            _close(ref, dqs_skinner.skin(mats), reference.skin_dqs(*args, dq.from_matrices(mats)))


def _close(mesh, got, want, extra=0.0):
    scale = max(mesh.extent, np.abs(want[0]).max())
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-5 * scale + extra)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-5 + extra)


# -- meshopt: filters -----------------------------------------------------------------------------


def _filtered_rig(oct_stride: int, exp_bits: int):
    """The rig with the tube's normals OCTAHEDRAL-encoded (``oct_stride`` 4: 8 bits, 8: 16
    bits), its positions EXPONENTIAL-encoded with ``exp_bits`` of mantissa, and the LINEAR
    animation's rotation keys QUATERNION-encoded (16 bits); returns (rig, filters)."""
    rig = _rig()
    b, doc = rig.builder, rig.document
    attrs = doc["meshes"][0]["primitives"][0]["attributes"]
    n = len(rig.positions)
    filters = {}
    # normals (random unit vectors, so that the encoding loses something): four signed
    # components (x, y, one, passthrough) behind a VEC3 normalized accessor
    rng = np.random.default_rng(4)
    unit = rng.normal(size=(n, 3))
    rig.normals = unit / np.linalg.norm(unit, axis=1, keepdims=True)
    nrm = np.c_[rig.normals, np.zeros(n)]
    view = b.add_buffer_view(
        encode_filter("OCTAHEDRAL", nrm, oct_stride, 8 if oct_stride == 4 else 16),
        byte_stride=oct_stride,
        target="vertex",
    )
    filters[view] = ("OCTAHEDRAL", oct_stride)
    attrs["NORMAL"] = b.add(
        "accessors",
        {
            "bufferView": view,
            "componentType": BYTE if oct_stride == 4 else SHORT,
            "normalized": True,
            "count": n,
            "type": "VEC3",
        },
    )
    # positions: 32-bit exponent/mantissa integers, decoded to float32
    view = b.add_buffer_view(
        encode_filter("EXPONENTIAL", rig.positions, 12, exp_bits), target="vertex"
    )
    filters[view] = ("EXPONENTIAL", 12)
    attrs["POSITION"] = b.add(
        "accessors",
        {
            "bufferView": view,
            "componentType": 5126,
            "count": n,
            "type": "VEC3",
            "min": rig.positions.min(axis=0).tolist(),
            "max": rig.positions.max(axis=0).tolist(),
        },
    )
    # rotation keys of animation 0 (node 2): normalized SHORT quaternions
    anim = doc["animations"][0]
    (ch,) = [c for c in anim["channels"] if c["target"]["path"] == "rotation"]
    sampler = anim["samplers"][ch["sampler"]]
    keys = rig.keys[0][(2, "rotation")][2]
    view = b.add_buffer_view(encode_filter("QUATERNION", keys, 8, 16))
    filters[view] = ("QUATERNION", 8)
    sampler["output"] = b.add(
        "accessors",
        {
            "bufferView": view,
            "componentType": SHORT,
            "normalized": True,
            "count": len(keys),
            "type": "VEC4",
        },
    )
    doc["extensionsUsed"] = ["KHR_mesh_quantization"]
    return rig, filters


@pytest.mark.parametrize("oct_stride", [4, 8])
@pytest.mark.parametrize("extension", [EXT, KHR])
def test_meshopt_filters_decode_within_their_precision(tmp_path, extension, oct_stride, device):
    exp_bits = 16
    rig, filters = _filtered_rig(oct_stride, exp_bits)
    path = tmp_path / "filtered.glb"
    meshopt_file(
        path, rig.document, bytes(rig.builder.binary), extension=extension, filters=filters
    )
    scene = load_gltf(path)
    tube = scene.meshes[0].primitives[0]
    # EXPONENTIAL: each component keeps exp_bits - 1 bits of magnitude: relative error
    # 2^-(exp_bits - 1) of the component at most; nonzero (so the filter really ran)
    err = np.abs(tube.positions.astype(np.float64) - rig.positions)
    assert 0 < err.max()
    assert np.all(err <= np.abs(rig.positions) * 2.0 ** -(exp_bits - 1) + 1e-30)
    # OCTAHEDRAL: unit normals within the encoding's angular precision
    got = tube.normals.astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    angle = np.linalg.norm(got - rig.normals, axis=1)
    low, high = (1e-3, 0.03) if oct_stride == 4 else (1e-6, 2e-4)  # ~2/127, ~2/32767 (x3)
    assert low < angle.max() < high, angle.max()
    # QUATERNION: 16-bit keys within 1e-4 of the source quaternions (up to sign)
    (ch,) = [c for c in scene.animations[0].channels if c.path == "rotation"]
    keys = rig.keys[0][(2, "rotation")][2]
    diff = np.minimum(np.abs(ch.values - keys).max(axis=1), np.abs(ch.values + keys).max(axis=1))
    assert diff.max() < 1e-4, diff.max()
    # the decoded rig skins on the GPU like its own float64 reference
    mesh = scene.skinned_mesh(0)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with Skinner(device, mesh, bone_count=scene.skins[0].joint_count, method="dqs") as sk:
        for t in (0.0, 0.5, 1.0):
            mats = scene.skinning_matrices(0, 0, t)
            _close(mesh, sk.skin(mats), reference.skin_dqs(*args, dq.from_matrices(mats)))


def _color_reference(element, bits: int) -> list[int]:
    """KHR_meshopt_compression's COLOR filter decode, transcribed line by line (one element)."""
    top = 2**bits - 1
    half = 2 ** (bits - 1)
    y, co, cg, alpha = (int(v) for v in element)
    co = co - 2 * half if co >= half else co  # signed components
    cg = cg - 2 * half if cg >= half else cg
    as_ = (1 << (alpha.bit_length() - 1 + 1)) - 1
    r, g, b = y + co - cg, y + cg, y - co - cg
    a = alpha & (as_ >> 1)
    a = (a << 1) | (a & 1)
    ss = np.float32(top) / np.float32(as_)

    def rnd(x):
        v = np.float32(x) * ss
        return int(np.sign(v) * np.floor(abs(v) + 0.5)) & top

    return [rnd(r), rnd(g), rnd(b), rnd(a)]


@pytest.mark.parametrize("stride", [4, 8])
def test_color_filter_follows_the_specification(stride):
    """The numpy COLOR filter (the package has none) against the spec's decode, on valid
    inputs of every K; and RGB colours encoded as YCoCg come back to within one unit."""
    bits = 2 * stride
    rng = np.random.default_rng(stride)
    rows, want = [], []
    for k in range(2, bits + 1):  # over K, a test loop
        for _ in range(20):
            rgb = rng.integers(0, 2**k, 3)
            # YCoCg-R style values the spec's integer reconstruction inverts exactly
            cg = (2 * int(rgb[1]) - int(rgb[0]) - int(rgb[2])) // 4
            co = (int(rgb[0]) - int(rgb[2])) // 2
            y = int(rgb[1]) - cg
            alpha = (1 << (k - 1)) | int(rng.integers(0, 2 ** (k - 1)))
            el = [y, co & (2**bits - 1), cg & (2**bits - 1), alpha]
            rows.append(el)
            want.append(_color_reference(el, bits))
    data = np.array(rows, dtype=f"<u{stride // 4}").tobytes()
    got = decode_filter_color(np.frombuffer(data, np.uint8), len(rows), stride)
    np.testing.assert_array_equal(got.reshape(-1, 4), np.array(want))


# -- meshopt: without the decoder ---------------------------------------------------------------


@pytest.fixture
def hide(monkeypatch):
    """``hide("meshoptimizer")``: from then on ``import meshoptimizer`` fails, as when the
    ``compression`` extra is not installed (the files are written before, with it)."""
    return lambda name: monkeypatch.setitem(sys.modules, name, None)


def test_meshopt_required_without_the_package_names_the_extra(tmp_path, source, hide):
    rig, _ = source
    path = tmp_path / "mo.glb"
    meshopt_file(path, rig.document, bytes(rig.builder.binary))
    hide("meshoptimizer")
    with pytest.raises(
        GltfError,
        match=r"mo\.glb: extensionsRequired\[0\]: EXT_meshopt_compression needs the "
        rf"meshoptimizer package, which is not installed: {HINT}",
    ):
        load_gltf(path)


def test_meshopt_without_the_package_reads_the_fallback(tmp_path, source, hide):
    rig, want = source
    path, bare = tmp_path / "mo.glb", tmp_path / "bare.glb"
    meshopt_file(path, rig.document, bytes(rig.builder.binary), fallback="data", required=False)
    meshopt_file(bare, rig.document, bytes(rig.builder.binary), required=False)
    hide("meshoptimizer")
    _assert_same_scene(load_gltf(path), want, rotated_triangles=False)
    # a fallback without data cannot stand in for the compressed views
    with pytest.raises(
        GltfError,
        match=r"bufferViews\[\d+\]\.extensions\.EXT_meshopt_compression: EXT_meshopt_compression "
        rf"needs the meshoptimizer package, which is not installed: {HINT} \(buffers\[1\]: "
        r"has no data",
    ):
        load_gltf(bare)


# -- meshopt: hostile files ---------------------------------------------------------------------


def _first(doc, mode, extension=EXT):
    """Index of the first bufferView compressed with ``mode``."""
    return next(
        i
        for i, bv in enumerate(doc["bufferViews"])
        if bv.get("extensions", {}).get(extension, {}).get("mode") == mode
    )


def _ext(doc, i, extension=EXT):
    return doc["bufferViews"][i]["extensions"][extension]


def _huge(doc):
    i = _first(doc, "ATTRIBUTES")
    e = _ext(doc, i)
    e["count"] = 2**28
    doc["bufferViews"][i].update(byteOffset=0, byteLength=2**28 * e["byteStride"])
    doc["buffers"][1]["byteLength"] = 2**28 * e["byteStride"]


MESHOPT_CASES = {
    "huge_count": (
        _huge,
        r"bufferViews\[\d+\]\.extensions\.EXT_meshopt_compression: decoding needs \d+ more "
        r"bytes, past max_bytes",
    ),
    "count_not_view_length": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(count=7),
        r"extensions\.EXT_meshopt_compression\.count: count 7 x byteStride \d+ = \d+ bytes, "
        r"but bufferViews\[\d+\]\.byteLength is \d+",
    ),
    "bad_mode": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(mode="QUADS"),
        r"EXT_meshopt_compression\.mode: 'QUADS' is not ATTRIBUTES, TRIANGLES, INDICES",
    ),
    "bad_filter": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(filter="ZSTD"),
        r"EXT_meshopt_compression\.filter: 'ZSTD' is not NONE, OCTAHEDRAL, QUATERNION, "
        r"EXPONENTIAL",
    ),
    "color_filter_in_ext": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(filter="COLOR"),
        r"EXT_meshopt_compression\.filter: 'COLOR' is not NONE",
    ),
    "filter_on_indices": (
        lambda d: _ext(d, _first(d, "TRIANGLES")).update(filter="EXPONENTIAL"),
        r"EXT_meshopt_compression\.filter: EXPONENTIAL is only allowed with mode ATTRIBUTES, "
        r"not TRIANGLES",
    ),
    "attribute_stride": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(byteStride=6),
        r"EXT_meshopt_compression\.byteStride: 6: ATTRIBUTES needs a multiple of 4 in \[4, 256\]",
    ),
    "index_stride": (
        lambda d: _ext(d, _first(d, "TRIANGLES")).update(byteStride=1),
        r"EXT_meshopt_compression\.byteStride: 1: TRIANGLES needs 2 or 4",
    ),
    "triangles_count": (
        lambda d: _ext(d, _first(d, "TRIANGLES")).update(
            count=_ext(d, _first(d, "TRIANGLES"))["count"] - 1
        ),
        r"EXT_meshopt_compression\.count: \d+ is not a multiple of 3 \(mode TRIANGLES\)",
    ),
    "octahedral_stride": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(filter="OCTAHEDRAL", byteStride=12),
        r"EXT_meshopt_compression\.byteStride: 12: filter OCTAHEDRAL needs 4 or 8",
    ),
    "quaternion_stride": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(filter="QUATERNION", byteStride=4),
        r"EXT_meshopt_compression\.byteStride: 4: filter QUATERNION needs 8",
    ),
    "truncated_stream": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(
            byteLength=_ext(d, _first(d, "ATTRIBUTES"))["byteLength"] - 5
        ),
        r"EXT_meshopt_compression: cannot decode the ATTRIBUTES stream \(.*\): the data is "
        r"corrupt",
    ),
    "truncated_triangles": (
        lambda d: _ext(d, _first(d, "TRIANGLES")).update(
            byteLength=_ext(d, _first(d, "TRIANGLES"))["byteLength"] - 3
        ),
        r"cannot decode the TRIANGLES stream",
    ),
    "stream_outside_buffer": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(byteOffset=10**6),
        r"EXT_meshopt_compression: byteOffset 1000000 \+ byteLength \d+ exceeds buffers\[0\]",
    ),
    "stream_from_fallback": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).update(buffer=1),
        r"EXT_meshopt_compression\.buffer: buffers\[1\] is a fallback buffer; compressed data "
        r"cannot come from it",
    ),
    "plain_view_on_fallback": (
        lambda d: d["bufferViews"][_first(d, "ATTRIBUTES")].pop("extensions"),
        r"buffers\[1\]: is a meshopt fallback buffer; only bufferViews with "
        r"EXT_meshopt_compression or KHR_meshopt_compression may refer to it",
    ),
    "both_extensions": (
        lambda d: d["bufferViews"][_first(d, "ATTRIBUTES")]["extensions"].update(
            {KHR: _ext(d, _first(d, "ATTRIBUTES"))}
        ),
        r"bufferViews\[\d+\]\.extensions: has both EXT_meshopt_compression and "
        r"KHR_meshopt_compression",
    ),
    "bad_fallback_flag": (
        lambda d: d["buffers"][1]["extensions"][EXT].update(fallback="yes"),
        r"buffers\[1\]\.extensions\.EXT_meshopt_compression\.fallback: must be a boolean",
    ),
    "fallback_without_length": (
        lambda d: d["buffers"][1].pop("byteLength"),
        r"buffers\[1\]: required property 'byteLength' is missing",
    ),
    "missing_count": (
        lambda d: _ext(d, _first(d, "ATTRIBUTES")).pop("count"),
        r"EXT_meshopt_compression: required property 'count' is missing",
    ),
}


@pytest.mark.parametrize("case", MESHOPT_CASES)
def test_hostile_meshopt_is_a_gltf_error(tmp_path, source, case):
    rig, _ = source
    path = tmp_path / "mo.glb"
    doc, binary = meshopt_file(path, rig.document, bytes(rig.builder.binary))
    mutate, pattern = MESHOPT_CASES[case]
    mutate(doc)
    save(path, doc, binary)
    with pytest.raises(GltfError, match=pattern):
        load_gltf(path)


def test_v1_stream_under_ext_is_refused(tmp_path, source):
    """EXT_meshopt_compression allows only version 0 of the attribute codec."""
    rig, _ = source
    path = tmp_path / "mo.glb"
    meshopt_file(path, rig.document, bytes(rig.builder.binary), version=1)
    with pytest.raises(
        GltfError,
        match=r"EXT_meshopt_compression: the ATTRIBUTES stream starts with byte 0xa1, not 0xa0",
    ):
        load_gltf(path)


def test_placeholder_used_by_a_plain_view_is_refused(tmp_path, source):
    rig, _ = source
    path = tmp_path / "mo.glb"
    doc, binary = meshopt_file(path, rig.document, bytes(rig.builder.binary), fallback="bare")
    doc["bufferViews"][_first(doc, "ATTRIBUTES")].pop("extensions")
    save(path, doc, binary)
    with pytest.raises(GltfError, match=r"buffers\[1\]: has no uri"):
        load_gltf(path)


@pytest.mark.parametrize("filtered", [False, True], ids=["plain", "filtered"])
def test_mutated_meshopt_streams_fail_cleanly(tmp_path, source, filtered):
    """200 files with random bytes of their compressed streams changed: each loads or raises
    GltfError; nothing else (no crash, no other exception, no NaN). The filtered rig runs the
    OCTAHEDRAL, EXPONENTIAL and QUATERNION filters on whatever the mutation decodes to."""
    rig, filters = _filtered_rig(4, 16) if filtered else (source[0], None)
    path = tmp_path / "mo.glb"
    doc, binary = meshopt_file(
        path, rig.document, bytes(rig.builder.binary), extension=KHR, version=1, filters=filters
    )
    rng = np.random.default_rng(11)
    failed = 0
    for _ in range(200):  # a fuzz loop over files
        data = bytearray(binary)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(len(data)))] = int(rng.integers(256))
        save(path, doc, bytes(data))
        try:
            scene = load_gltf(path)
        except GltfError:
            failed += 1
            continue
        for mesh in scene.meshes:
            for prim in mesh.primitives:
                assert np.isfinite(prim.positions).all() and np.isfinite(prim.normals).all()
    assert failed > 20  # the mutations did reach the decoder


# -- Draco -----------------------------------------------------------------------------------------


def _draco_bound(rig, bits: int) -> float:
    """Largest position error of Draco's quantization: one step of the largest side over
    2^bits - 1 levels in each coordinate."""
    side = float((rig.positions.max(axis=0) - rig.positions.min(axis=0)).max())
    return np.sqrt(3) * side / (2**bits - 1)


def test_draco_decodes_the_source(tmp_path, source):
    rig, want = source
    path = tmp_path / "draco.glb"
    draco_file(path, rig.document, bytes(rig.builder.binary), quantization_bits=14)
    scene = load_gltf(path)
    got, ref = scene.meshes[0].primitives[0], want.meshes[0].primitives[0]
    err = np.linalg.norm(got.positions.astype(np.float64) - ref.positions, axis=1)
    assert 0 < err.max() <= _draco_bound(rig, 14)
    np.testing.assert_array_equal(got.normals, ref.normals)
    np.testing.assert_array_equal(got.joints, ref.joints)
    np.testing.assert_array_equal(got.weights, ref.weights)
    np.testing.assert_array_equal(got.indices, ref.indices)
    # the other meshes are untouched
    _assert_same_scene(_without_mesh0(scene), _without_mesh0(want), rotated_triangles=False)


def test_draco_integer_attributes_fill_quantized_accessors(tmp_path, source):
    """KHR_mesh_quantization inside Draco (as glTF-Transform writes it): a normalized
    UNSIGNED_SHORT POSITION accessor takes the stream's uint16 values as they are."""
    rig, _ = source
    lo, hi = rig.positions.min(axis=0), rig.positions.max(axis=0)
    stored, decoded = quantize((rig.positions - lo) / (hi - lo).max(), UNSIGNED_SHORT)
    path = tmp_path / "draco.glb"
    draco_file(path, rig.document, bytes(rig.builder.binary), quantized_positions=stored)
    got = load_gltf(path).meshes[0].primitives[0]
    np.testing.assert_array_equal(got.positions, decoded.astype(np.float32))
    assert got.positions.max() == 1.0


def _without_mesh0(scene):
    class View:
        meshes = scene.meshes[1:]
        skins = scene.skins
        animations = scene.animations

    return View


def test_draco_reordered_points_and_gpu_skinning(tmp_path, source, device):
    """Draco's own point order (preserve_order off): every decoded vertex is a source vertex
    (same joints and weights, position within the quantization error), the triangles are the
    source's, and the GPU skins the decoded mesh like the float64 reference of the source,
    within the quantization error (LBS of rigid joints does not grow it)."""
    rig, want = source
    path = tmp_path / "draco.glb"
    draco_file(path, rig.document, bytes(rig.builder.binary), preserve_order=False)
    scene = load_gltf(path)
    got, ref = scene.meshes[0].primitives[0], want.meshes[0].primitives[0]
    assert len(got.positions) == len(ref.positions)
    d = np.linalg.norm(got.positions[:, None].astype(np.float64) - ref.positions[None], axis=2)
    match = np.argmin(d, axis=1)
    bound = _draco_bound(rig, 14)
    assert d[np.arange(len(d)), match].max() <= bound
    assert len(set(match.tolist())) == len(match)
    np.testing.assert_array_equal(got.joints, ref.joints[match])
    np.testing.assert_array_equal(got.weights, ref.weights[match])
    np.testing.assert_array_equal(got.normals, ref.normals[match])
    np.testing.assert_array_equal(
        _canonical_triangles(match[got.indices]), _canonical_triangles(ref.indices)
    )
    mesh, src = scene.skinned_mesh(0), want.skinned_mesh(0)
    n = scene.skins[0].joint_count
    with Skinner(device, mesh, bone_count=n, method="lbs") as sk:
        for t in (0.0, 0.4, 1.3):
            mats = want.skinning_matrices(0, 0, t)
            p, nrm = sk.skin(mats)
            wp, _ = reference.skin_lbs(src.positions, src.normals, src.joints, src.weights, mats)
            # the first vertices are the tube's (the skinned mesh puts primitive 0 first)
            k = len(match)
            excess = np.linalg.norm(p[:k].astype(np.float64) - wp[match], axis=1) - bound
            assert excess.max() < 1e-5 * max(src.extent, 10.0), excess.max()
            # the decoded mesh against its own float64 reference, at the usual tolerance
            _close(
                mesh,
                (p, nrm),
                reference.skin_lbs(
                    *(mesh.positions, mesh.normals), mesh.joints, mesh.weights, mats
                ),
            )


def test_draco_required_without_the_package_names_the_extra(tmp_path, source, hide):
    rig, _ = source
    path = tmp_path / "draco.glb"
    draco_file(path, rig.document, bytes(rig.builder.binary))
    hide("DracoPy")
    with pytest.raises(
        GltfError,
        match=r"extensionsRequired\[0\]: KHR_draco_mesh_compression needs the DracoPy package, "
        rf"which is not installed: {HINT}",
    ):
        load_gltf(path)


def test_draco_without_the_package_reads_the_uncompressed_accessors(tmp_path, source, hide):
    rig, want = source
    path = tmp_path / "draco.glb"
    doc, binary, _ = draco_file(path, rig.document, bytes(rig.builder.binary), fallback=True)
    hide("DracoPy")
    _assert_same_scene(load_gltf(path), want, rotated_triangles=False)
    # not required, but without uncompressed data: refused, not zeros
    prim = doc["meshes"][0]["primitives"][0]
    doc["accessors"][prim["attributes"]["POSITION"]].pop("bufferView")
    save(path, doc, binary)
    with pytest.raises(
        GltfError,
        match=r"meshes\[0\]\.primitives\[0\]\.attributes\.POSITION: has no uncompressed data, "
        rf"and KHR_draco_mesh_compression needs the DracoPy package.*{HINT}",
    ):
        load_gltf(path)


def _draco_ext(doc):
    return doc["meshes"][0]["primitives"][0]["extensions"][DRACO]


def _draco_acc(doc, key):
    prim = doc["meshes"][0]["primitives"][0]
    return doc["accessors"][prim["attributes"][key] if key != "indices" else prim["indices"]]


def _truncate_draco(doc):
    doc["bufferViews"][_draco_ext(doc)["bufferView"]]["byteLength"] //= 2


DRACO_CASES = {
    "truncated": (
        _truncate_draco,
        r"extensions\.KHR_draco_mesh_compression\.bufferView: cannot decode the Draco stream",
    ),
    "unknown_id": (
        lambda d: _draco_ext(d)["attributes"].update(JOINTS_0=99),
        r"KHR_draco_mesh_compression\.attributes\.JOINTS_0: the Draco stream has no attribute "
        r"with unique id 99",
    ),
    "id_twice": (
        lambda d: _draco_ext(d)["attributes"].update(
            NORMAL=_draco_ext(d)["attributes"]["JOINTS_0"]
        ),
        r"KHR_draco_mesh_compression\.attributes: lists a Draco attribute id twice",
    ),
    "count_mismatch": (
        lambda d: _draco_acc(d, "NORMAL").update(count=_draco_acc(d, "NORMAL")["count"] - 1),
        r"accessors\[\d+\]: count \d+ x VEC3 does not match the Draco stream's \d+ x 3 values",
    ),
    "type_mismatch": (
        lambda d: _draco_acc(d, "WEIGHTS_0").update(type="VEC3"),
        r"does not match the Draco stream's \d+ x 4 values",
    ),
    "float_joints": (
        lambda d: _draco_acc(d, "JOINTS_0").update(componentType=5126),
        r"accessors\[\d+\]\.componentType: FLOAT but the Draco stream holds uint8 integers",
    ),
    "integer_positions": (
        lambda d: _draco_acc(d, "POSITION").update(componentType=5122),
        r"accessors\[\d+\]\.componentType: SHORT but the Draco stream holds values that are "
        r"not integers",
    ),
    "index_count": (
        lambda d: _draco_acc(d, "indices").update(count=3),
        r"accessors\[\d+\]: count 3 x SCALAR does not match the Draco stream's \d+ x 1 values",
    ),
    "strip": (
        lambda d: d["meshes"][0]["primitives"][0].update(mode=5),
        r"meshes\[0\]\.primitives\[0\]\.mode: 5: vkdqs decodes KHR_draco_mesh_compression for "
        r"TRIANGLES \(4\) only",
    ),
    "no_indices": (
        lambda d: d["meshes"][0]["primitives"][0].pop("indices"),
        r"meshes\[0\]\.primitives\[0\]: a KHR_draco_mesh_compression primitive must have indices",
    ),
    "bad_view": (
        lambda d: _draco_ext(d).update(bufferView=999),
        r"KHR_draco_mesh_compression\.bufferView: 999 is not an index into bufferViews",
    ),
}


@pytest.mark.parametrize("case", DRACO_CASES)
def test_hostile_draco_is_a_gltf_error(tmp_path, source, case):
    rig, _ = source
    path = tmp_path / "draco.glb"
    doc, binary, _ = draco_file(path, rig.document, bytes(rig.builder.binary))
    mutate, pattern = DRACO_CASES[case]
    mutate(doc)
    save(path, doc, binary)
    with pytest.raises(GltfError, match=pattern):
        load_gltf(path)


def test_a_draco_attribute_the_primitive_does_not_have_is_ignored(tmp_path, source):
    """Not decoded into anything, it changes nothing drawn: a warning naming it."""
    rig, _ = source
    path = tmp_path / "draco.glb"
    doc, binary, _ = draco_file(path, rig.document, bytes(rig.builder.binary), quantization_bits=14)
    plain = load_gltf(path)
    _draco_ext(doc)["attributes"]["TEXCOORD_0"] = 5
    save(path, doc, binary)
    with pytest.warns(
        GltfWarning,
        match=r"KHR_draco_mesh_compression\.attributes\.TEXCOORD_0: is not one of the "
        r"primitive's attributes; ignored",
    ):
        scene = load_gltf(path)
    _assert_same_scene(scene, plain, rotated_triangles=False)


def test_draco_point_cloud_is_refused(tmp_path, source):
    import DracoPy

    rig, _ = source
    path = tmp_path / "draco.glb"
    doc, binary, _ = draco_file(path, rig.document, bytes(rig.builder.binary))
    cloud = DracoPy.encode(rig.positions.astype(np.float32))
    view = doc["bufferViews"][_draco_ext(doc)["bufferView"]]
    binary = binary + cloud
    view.update(byteOffset=len(binary) - len(cloud), byteLength=len(cloud))
    doc["buffers"][0]["byteLength"] = len(binary)
    save(path, doc, binary)
    with pytest.raises(GltfError, match=r"the Draco stream is a point cloud, not a triangle mesh"):
        load_gltf(path)


def test_mutated_draco_streams_fail_cleanly(tmp_path, source):
    """200 files with random bytes of the Draco stream changed: each loads or raises
    GltfError (a wrong joint, a negative or NaN weight is caught by the loader's checks)."""
    rig, _ = source
    path = tmp_path / "draco.glb"
    doc, binary, _ = draco_file(path, rig.document, bytes(rig.builder.binary))
    view = doc["bufferViews"][_draco_ext(doc)["bufferView"]]
    start, length = view["byteOffset"], view["byteLength"]
    rng = np.random.default_rng(5)
    failed = 0
    for _ in range(200):  # a fuzz loop over files
        data = bytearray(binary)
        for _ in range(int(rng.integers(1, 4))):
            data[start + int(rng.integers(length))] = int(rng.integers(256))
        save(path, doc, bytes(data))
        try:
            scene = load_gltf(path)
        except GltfError:
            failed += 1
            continue
        prim = scene.meshes[0].primitives[0]
        assert np.isfinite(prim.positions).all() and np.isfinite(prim.normals).all()
    assert failed > 20


def test_cli_info_without_the_extra_is_one_line(tmp_path, source, hide, capsys):
    from vkdqs.app import cli

    rig, _ = source
    path = tmp_path / "mo.glb"
    meshopt_file(path, rig.document, bytes(rig.builder.binary), extension=KHR, version=1)
    assert cli.main(["info", str(path)]) == 0
    assert "mesh 0 'tube': 1 primitives, 32 vertices, 56 triangles" in capsys.readouterr().out
    hide("meshoptimizer")
    assert cli.main(["info", str(path)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "vkdqs: error: mo.glb: extensionsRequired[0]: KHR_meshopt_compression needs the "
        "meshoptimizer package, which is not installed: pip install 'vkdqs[compression]'"
    ]


def test_benchmark_smoke(tmp_path):
    """benchmarks/bench_gltf_compression.py runs and writes its JSON (no timing asserted)."""
    import json
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gltf_compression.py"
    out = tmp_path / "gc.json"
    args = ["--sizes", "1500", "--rounds", "1", "--warmup", "0", "--out", str(out)]
    run = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "meshopt KHR v1" in run.stdout
    (res,) = json.loads(out.read_text())["results"]
    assert res["vertices"] == 1500
    rows = res["rows"]
    assert set(rows) == {"plain", "meshopt EXT v0", "meshopt KHR v1", "draco"}
    assert all(rows[k]["bytes"] < rows["plain"]["bytes"] for k in rows if k != "plain")
