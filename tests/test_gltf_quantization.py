"""KHR_mesh_quantization: integer and normalized-integer POSITION and NORMAL accessors.

Every file is written here from the fixture rig (tests/gltf_fixtures.py). The quantized rig
stores the tube's positions as normalized SHORT integers, with the dequantization (a uniform
scale and an offset) folded into skin 0's inverse bind matrices (a skinned node's own transform
is ignored), its normals as normalized BYTE, and the prop's positions as normalized SHORT with
the prop node's scale dequantizing them. Skinned on the GPU it matches the float64 reference of
the float source within the quantization error, computed per vertex.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkdqs
from tests.gltf_fixtures import BYTE, SHORT, UNSIGNED_BYTE, UNSIGNED_SHORT, make_rig, quantize, trs
from vkdqs import reference
from vkdqs.gltf import GltfError, load_gltf

EXT = "KHR_mesh_quantization"


def _prim(doc, mesh):
    return doc["meshes"][mesh]["primitives"][0]


def _source_normals():
    """Unit normals of the tube that are not axis-aligned (so BYTE quantization changes them)."""
    rig = make_rig(scaled=False)
    rng = np.random.default_rng(3)
    n = rig.normals + rng.normal(0.0, 0.4, rig.normals.shape)
    return (n / np.linalg.norm(n, axis=1, keepdims=True)).astype(np.float32)


def _float_rig():
    rig = make_rig(scaled=False)
    _prim(rig.document, 0)["attributes"]["NORMAL"] = rig.builder.add_accessor(
        _source_normals(), target="vertex"
    )
    return rig


def _tube_box(p):
    """Centre and half the largest side of the tube's box: the dequantization of its positions."""
    lo, hi = p.min(axis=0), p.max(axis=0)
    return (lo + hi) / 2, float((hi - lo).max()) / 2


def _quantized_rig(*, listed: bool = True):
    """The rig quantized, and (per-vertex bind-space position error of the tube, the prop's)."""
    rig = make_rig(scaled=False)
    b, doc = rig.builder, rig.document
    # tube: normalized SHORT positions, p ~ centre + half * q, dequantized by skin 0's inverse
    # bind matrices
    centre, half = _tube_box(rig.positions)
    q, decoded = quantize((rig.positions - centre) / half, SHORT)
    dequant = trs(centre, (0, 0, 0, 1), (half, half, half))
    tube_err = np.linalg.norm(centre + half * decoded - rig.positions, axis=1)
    attrs = _prim(doc, 0)["attributes"]
    attrs["POSITION"] = b.add_accessor(
        q, component_type=SHORT, normalized=True, target="vertex", byte_stride=8, min_max=True
    )
    stored, _ = quantize(_source_normals().astype(np.float64), BYTE)
    attrs["NORMAL"] = b.add_accessor(
        stored, component_type=BYTE, normalized=True, target="vertex", byte_stride=4
    )
    ibm = (rig.ibm @ dequant).astype(np.float32)
    doc["skins"][0]["inverseBindMatrices"] = b.add_accessor(ibm)
    # prop: its fan's positions halved into normalized SHORT, the prop node scaled by 2
    fan = doc["meshes"][1]["primitives"][1]
    fan_pos = np.array([[0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], np.float64)
    stored, decoded = quantize(fan_pos / 2.0, SHORT)
    fan["attributes"]["POSITION"] = b.add_accessor(
        stored, component_type=SHORT, normalized=True, target="vertex", byte_stride=8
    )
    prop = doc["nodes"][10]
    prop["scale"] = [2.0, 2.0, 2.0]
    # the strip (first primitive) is halved too, as floats: the scale applies to the whole mesh
    strip = doc["meshes"][1]["primitives"][0]
    quad = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32) / 2
    strip["attributes"]["POSITION"] = b.add_accessor(quad, target="vertex", min_max=True)
    prop_err = np.r_[np.zeros(4), np.linalg.norm(2.0 * decoded - fan_pos, axis=1)]
    if listed:
        doc["extensionsUsed"] = [EXT]
        doc["extensionsRequired"] = [EXT]
    return rig, tube_err, prop_err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("quantized")
    out = {"float": root / "float.glb", "quantized": root / "quantized.glb"}
    _float_rig().save(out["float"])
    rig, tube_err, prop_err = _quantized_rig()
    rig.save(out["quantized"])
    out["errors"] = (tube_err, prop_err)
    return out


def test_quantized_attributes_decode_as_the_spec_says(files):
    scene = load_gltf(files["quantized"])
    source = load_gltf(files["float"])
    tube = scene.meshes[0].primitives[0]
    rig = make_rig(scaled=False)
    centre, half = _tube_box(rig.positions)
    # in [-1, 1], not dequantized: the inverse bind matrices do that
    _, decoded = quantize((rig.positions - centre) / half, SHORT)
    np.testing.assert_array_equal(tube.positions, decoded.astype(np.float32))
    assert np.abs(tube.positions).max() == 1.0
    want = source.meshes[0].primitives[0].normals.astype(np.float64)
    got = tube.normals.astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    err = np.linalg.norm(got - want, axis=1)
    assert 0.0 < err.max() < 2 * np.sqrt(3) * 0.5 / 127  # renormalized, within BYTE's precision
    assert not tube.normals_computed


def test_skinned_on_the_gpu_within_the_quantization_error(files, device):
    """LBS bakes of the quantized and the float rig against the float64 reference of the float
    source: each vertex within its own bind-space quantization error (LBS of rigid joint
    matrices blends rotations, a matrix of norm <= 1, so the error does not grow; the prop's
    error is its node's scale times its own)."""
    tube_err, prop_err = files["errors"]
    assert 1e-6 < tube_err.max() < 1e-3  # the bound means something and is small
    assert prop_err.max() > 1e-6
    source = load_gltf(files["float"])
    scene = load_gltf(files["quantized"])
    b = vkdqs.bake(scene, animation="linear", fps=4, method="lbs", device=device)
    assert b.positions.shape == (5, 43, 3)
    mesh = source.skinned_mesh(0)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    gpu_tol = 2e-5 * 10.0  # float32 skinning of coordinates up to ~10
    for i, t in enumerate(b.times):
        mats = source.skinning_matrices(0, 0, t)
        want_p, want_n = reference.skin_lbs(*args, mats)
        got = b.positions[i, :32].astype(np.float64)
        excess = np.linalg.norm(got - want_p, axis=1) - tube_err
        assert excess.max() < gpu_tol, f"t={t}: {excess.max()}"
        # normals: |normalize(B n_q) - normalize(B n)| <= 2 |B (n_q - n)| / |B n|, B the
        # blended rotation (norm <= 1); |n_q - n| from the decoded normals
        bl = np.einsum("vk,vkij->vij", mesh.weights, mats[mesh.joints][:, :, :3, :3])
        dn = np.linalg.norm(
            scene.meshes[0].primitives[0].normals.astype(np.float64) - mesh.normals, axis=1
        )
        bn = np.linalg.norm(np.einsum("vij,vj->vi", bl, mesh.normals), axis=1)
        got_n = b.normals[i, :32].astype(np.float64)
        excess = np.linalg.norm(got_n - want_n, axis=1) - 2 * dn / bn
        assert excess.max() < 1e-4, f"t={t}: {excess.max()}"
        # the prop (rigid, after the tube and the hand): its node's scale dequantizes
        (ri,) = source.rigid_meshes(0, t)
        pts = np.concatenate([pr.positions for pr in source.meshes[1].primitives])
        want = (np.c_[pts, np.ones(len(pts))] @ ri.matrix.T)[:, :3]
        excess = np.linalg.norm(b.positions[i, 35:].astype(np.float64) - want, axis=1) - prop_err
        assert excess.max() < gpu_tol, f"t={t}: {excess.max()}"


def test_without_the_extension_integer_positions_are_refused(tmp_path):
    rig, _, _ = _quantized_rig(listed=False)
    rig.save(tmp_path / "q.glb")
    with pytest.raises(
        GltfError,
        match=r"q\.glb: meshes\[0\]\.primitives\[0\]\.attributes\.POSITION: accessors\[\d+\] has "
        r"normalized SHORT components, which only KHR_mesh_quantization allows; the file does not "
        r"list it in extensionsUsed",
    ):
        load_gltf(tmp_path / "q.glb")
    # required but not used: still not enabled (glTF requires both lists)
    rig.document["extensionsRequired"] = [EXT]
    rig.save(tmp_path / "q.glb")
    with pytest.raises(GltfError, match="which only KHR_mesh_quantization allows"):
        load_gltf(tmp_path / "q.glb")


def _hand_file(tmp_path, attribute, stored, component_type, normalized, listed=True):
    """The rig with the hand triangle's ``attribute`` replaced by ``stored``."""
    rig = make_rig(scaled=False)
    attrs = _prim(rig.document, 2)["attributes"]
    stride = 4 * -(-3 * np.dtype(stored.dtype).itemsize // 4)
    attrs[attribute] = rig.builder.add_accessor(
        stored,
        component_type=component_type,
        normalized=normalized,
        target="vertex",
        byte_stride=stride,
        min_max=attribute == "POSITION",
    )
    if listed:
        rig.document["extensionsUsed"] = [EXT]
    path = tmp_path / "hand.glb"
    rig.save(path)
    return path


_SIGNED = {BYTE: (np.int8, 127), SHORT: (np.int16, 32767)}
_UNSIGNED = {UNSIGNED_BYTE: (np.uint8, 255), UNSIGNED_SHORT: (np.uint16, 65535)}


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("component_type", [BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT])
def test_every_position_component_type(tmp_path, component_type, normalized):
    dtype, top = {**_SIGNED, **_UNSIGNED}[component_type]
    low = np.iinfo(dtype).min  # -128 / -32768: normalized, clamps to -1
    stored = np.array([[low, 0, 0], [top, 0, 0], [0, top, 3]], dtype)
    path = _hand_file(tmp_path, "POSITION", stored, component_type, normalized)
    got = load_gltf(path).meshes[2].primitives[0].positions
    want = stored.astype(np.float64)
    if normalized:
        want = np.maximum(want / top, -1.0)
    np.testing.assert_array_equal(got, want.astype(np.float32))
    if normalized:
        assert got[1, 0] == 1.0 and got[0, 0] == (-1.0 if low < 0 else 0.0)


@pytest.mark.parametrize("component_type", [BYTE, SHORT])
def test_normalized_normals(tmp_path, component_type):
    dtype, top = _SIGNED[component_type]
    stored = np.array([[0, 0, top], [0, -top, 0], [np.iinfo(dtype).min, 0, 0]], dtype)
    path = _hand_file(tmp_path, "NORMAL", stored, component_type, True)
    got = load_gltf(path).meshes[2].primitives[0].normals
    np.testing.assert_array_equal(got, [[0, 0, 1], [0, -1, 0], [-1, 0, 0]])


@pytest.mark.parametrize(
    ("component_type", "normalized", "listed", "match"),
    [
        (BYTE, False, True, r"has BYTE components; need FLOAT, normalized BYTE, normalized SHORT"),
        (UNSIGNED_BYTE, True, True, r"has normalized UNSIGNED_BYTE components; need FLOAT, "),
        (SHORT, True, False, r"has normalized SHORT components, which only KHR_mesh_quantization"),
    ],
)
def test_normal_types_the_extension_does_not_allow(
    tmp_path, component_type, normalized, listed, match
):
    dtype = np.int8 if component_type == BYTE else np.int16
    if component_type == UNSIGNED_BYTE:
        dtype = np.uint8
    stored = np.array([[0, 0, 100], [0, 100, 0], [100, 0, 0]], dtype)
    path = _hand_file(tmp_path, "NORMAL", stored, component_type, normalized, listed=listed)
    where = r"meshes\[2\]\.primitives\[0\]\.attributes\.NORMAL: accessors\[\d+\] "
    with pytest.raises(GltfError, match=where + match):
        load_gltf(path)
