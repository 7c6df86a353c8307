"""glTF loading: every component type and container, skinning math, sampling, and bad input.

No GPU and no external assets: every file is written in code (tests/gltf_fixtures.py).
"""

from __future__ import annotations

import copy
import json
import logging
import struct

import numpy as np
import pytest

from tests.gltf_fixtures import (
    BYTE,
    FLOAT,
    SHORT,
    UNSIGNED_BYTE,
    UNSIGNED_INT,
    UNSIGNED_SHORT,
    make_rig,
    quantize,
    quat,
    reference_globals,
    share_tube,
)
from vkdqs import dq, reference
from vkdqs.errors import InputError
from vkdqs.gltf import GltfError, GltfWarning, load_gltf, vertex_normals
from vkdqs.gltf.save import GltfBuilder, save

FORMATS = ["model.glb", "model.gltf", "embedded.gltf"]


def write(rig_or_builder, tmp_path, name="model.glb"):
    path = tmp_path / name
    rig_or_builder.save(path, embed=name.startswith("embedded"))
    return path


def expected_lbs(rig, globals_, points):
    """Σ_i w_i (G_joint_i @ IBM_i) p, straight from the spec, in float64."""
    mats = globals_[1:9] @ rig.ibm
    w = rig.weights / rig.weights.sum(axis=1, keepdims=True)
    hom = np.concatenate([points, np.ones((len(points), 1))], axis=1)
    out = np.zeros((len(points), 4))
    for k in range(rig.joints.shape[1]):  # influence slots
        out += w[:, k, None] * np.einsum("nij,nj->ni", mats[rig.joints[:, k]], hom)
    return out[:, :3]


# ------------------------------------------------------------------------------------------------
# containers and component types
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FORMATS)
def test_formats_load_the_same_data(tmp_path, name):
    rig = make_rig()
    scene = load_gltf(write(rig, tmp_path, name))
    prim = scene.meshes[0].primitives[0]
    np.testing.assert_array_equal(prim.positions, rig.positions.astype(np.float32))
    np.testing.assert_array_equal(prim.joints, rig.joints)
    np.testing.assert_allclose(prim.weights, rig.weights, atol=1e-7)
    np.testing.assert_array_equal(prim.indices, rig.indices)
    np.testing.assert_allclose(scene.skins[0].inverse_bind_matrices, rig.ibm)
    assert [a.name for a in scene.animations] == ["linear", "step", "cubic"]
    assert scene.scene_roots == (0, 11)


@pytest.mark.parametrize("joints_type", [UNSIGNED_BYTE, UNSIGNED_SHORT])
@pytest.mark.parametrize("weights_type", [FLOAT, UNSIGNED_BYTE, UNSIGNED_SHORT])
@pytest.mark.parametrize("index_type", [UNSIGNED_BYTE, UNSIGNED_SHORT, UNSIGNED_INT])
def test_component_types(tmp_path, joints_type, weights_type, index_type):
    rig = make_rig(joints_type=joints_type, weights_type=weights_type, index_type=index_type)
    scene = load_gltf(write(rig, tmp_path))
    prim = scene.meshes[0].primitives[0]
    np.testing.assert_array_equal(prim.joints, rig.joints)
    np.testing.assert_allclose(prim.weights, rig.weights, atol=1e-7)
    np.testing.assert_array_equal(prim.indices, rig.indices)
    mesh = scene.skinned_mesh(0)
    np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("rotation_type", [FLOAT, BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT])
def test_rotation_component_types(tmp_path, rotation_type):
    rig = make_rig(rotation_type=rotation_type)
    scene = load_gltf(write(rig, tmp_path))
    ch = scene.animations[0].channels[0]
    assert (ch.node, ch.path) == (2, "rotation")
    np.testing.assert_allclose(ch.values, rig.keys[0][2, "rotation"][2], atol=1e-12)
    # Quantization error stays within one step of the format.
    tol = {FLOAT: 1e-7, BYTE: 2 / 127, UNSIGNED_BYTE: 2 / 255}.get(rotation_type, 2e-4)
    np.testing.assert_allclose(ch.values[1], quat((1, 1, 1), 90), atol=tol)


def test_interleaved_and_sparse(tmp_path):
    for kwargs in ({"interleaved": True}, {"sparse": True}):
        rig = make_rig(**kwargs)
        doc = rig.document
        if kwargs.get("interleaved"):
            assert doc["bufferViews"][doc["accessors"][0]["bufferView"]]["byteStride"] == 24
        scene = load_gltf(write(rig, tmp_path))
        prim = scene.meshes[0].primitives[0]
        np.testing.assert_array_equal(prim.positions, rig.positions.astype(np.float32))
        np.testing.assert_array_equal(prim.normals, rig.normals.astype(np.float32))


def test_sparse_without_buffer_view(tmp_path):
    b = GltfBuilder()
    values = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    pos = b.add_sparse_accessor(None, [0, 2], values, count=3, index_component_type=UNSIGNED_SHORT)
    b.add("meshes", {"primitives": [{"attributes": {"POSITION": pos}}]})
    b.add("nodes", {"mesh": 0})
    scene = load_gltf(write(b, tmp_path, "model.gltf"))
    np.testing.assert_array_equal(
        scene.meshes[0].primitives[0].positions, [values[0], [0, 0, 0], values[1]]
    )


def test_eight_influences(tmp_path):
    rig = make_rig(eight=True)
    scene = load_gltf(write(rig, tmp_path))
    assert scene.meshes[0].primitives[0].joints.shape == (32, 8)
    mesh = scene.skinned_mesh(0)
    assert mesh.slots == 8 and mesh.influence_count == 8
    assert scene.info()["skins"][0]["max_influences"] == 8


def test_strip_fan_nonindexed_and_computed_normals(tmp_path):
    scene = load_gltf(write(make_rig(), tmp_path))
    strip, fan = scene.meshes[1].primitives
    # Spec: strip triangle i = (v_i, v_{i+1+i%2}, v_{i+2-i%2});
    # fan triangle i = (v_{i+1}, v_{i+2}, v_0).
    np.testing.assert_array_equal(strip.indices, [0, 1, 2, 1, 3, 2])
    np.testing.assert_array_equal(fan.indices, [1, 2, 0, 2, 3, 0])
    assert strip.normals_computed and not fan.normals_computed
    np.testing.assert_allclose(strip.normals, np.tile([0, 0, 1], (4, 1)), atol=1e-7)
    with pytest.raises(InputError, match="rigid mesh"):
        scene.skinned_mesh(1)


def test_vertex_normals_are_angle_weighted():
    # A cube corner: three faces meeting at the origin, each contributing 90 degrees.
    p = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    tri = np.array([0, 2, 1, 0, 1, 3, 0, 3, 2])  # normals -z, -y, -x
    n = vertex_normals(p, tri)
    np.testing.assert_allclose(n[0], -np.ones(3) / np.sqrt(3), atol=1e-12)
    # Splitting one face into two triangles changes nothing for an angle-weighted normal.
    p2 = np.vstack([p, [0.5, 0.5, 0]])
    tri2 = np.array([0, 4, 1, 0, 2, 4, 0, 1, 3, 0, 3, 2])
    np.testing.assert_allclose(vertex_normals(p2, tri2)[0], n[0], atol=1e-12)


def test_flat_normals_option(tmp_path):
    scene = load_gltf(write(make_rig(), tmp_path), flat_normals=True)
    strip = scene.meshes[1].primitives[0]
    assert strip.vertex_count == 6
    np.testing.assert_array_equal(strip.indices, np.arange(6))


# ------------------------------------------------------------------------------------------------
# skinning math
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("animation", "time"), [(None, 0.0), (0, 1.0), (0, 7.0), (0, -3.0), (1, 2.0), (2, 1.0)]
)
@pytest.mark.parametrize("eight", [False, True])
def test_lbs_matches_the_spec_formula(tmp_path, animation, time, eight):
    rig = make_rig(eight=eight)
    scene = load_gltf(write(rig, tmp_path))
    keys = None if animation is None else rig.keys[animation]
    globals_ = reference_globals(rig.document, keys, time)
    np.testing.assert_allclose(scene.node_global_matrices(animation, time), globals_, atol=1e-6)
    mats = scene.skinning_matrices(0, animation, time)
    assert mats.shape == (8, 4, 4) and mats.dtype == np.float64
    np.testing.assert_allclose(mats, globals_[1:9] @ rig.ibm, atol=1e-6)
    mesh = scene.skinned_mesh(0)
    got, _ = reference.skin_lbs(mesh.positions, mesh.normals, mesh.joints, mesh.weights, mats)
    np.testing.assert_allclose(got, expected_lbs(rig, globals_, rig.positions), atol=1e-5)


def test_second_skin_and_rigid_prop(tmp_path):
    rig = make_rig()
    scene = load_gltf(write(rig, tmp_path))
    globals_ = reference_globals(rig.document, rig.keys[0], 1.0)
    # Skin 1 has no inverseBindMatrices: identity.
    np.testing.assert_allclose(scene.skinning_matrices(1, 0, 1.0), globals_[[6, 4]], atol=1e-6)
    assert scene.meshes[2].skin == 1 and scene.meshes[0].skin == 0 and scene.meshes[1].skin is None
    (prop,) = scene.rigid_meshes(0, 1.0)
    assert (prop.mesh, prop.node) == (1, 10)
    np.testing.assert_allclose(prop.matrix, globals_[10], atol=1e-6)


def test_dqs_runs_and_matches_lbs_for_single_influence(tmp_path):
    rig = make_rig(scaled=False)
    scene = load_gltf(write(rig, tmp_path))
    mesh = scene.skinned_mesh(0)
    # One influence per vertex: the largest one with weight 1.
    joints = mesh.joints[:, :1]
    weights = np.ones((mesh.vertex_count, 1))
    for animation, time in [(None, 0.0), (0, 0.3), (1, 0.7), (2, 1.4)]:
        mats = scene.skinning_matrices(0, animation, time)
        p_lbs, n_lbs = reference.skin_lbs(mesh.positions, mesh.normals, joints, weights, mats)
        p_dqs, n_dqs = reference.skin_dqs(
            mesh.positions, mesh.normals, joints, weights, dq.from_matrices(mats)
        )
        # The matrices come from float32 file data, so they are rigid to ~1e-7 only.
        np.testing.assert_allclose(p_dqs, p_lbs, atol=1e-6)
        np.testing.assert_allclose(n_dqs, n_lbs, atol=1e-6)
        # And with the real blended weights DQS runs and stays finite.
        p, n = reference.skin_dqs(
            mesh.positions, mesh.normals, mesh.joints, mesh.weights, dq.from_matrices(mats)
        )
        assert np.isfinite(p).all() and np.isfinite(n).all()


# ------------------------------------------------------------------------------------------------
# animation sampling, against numbers worked out by hand from the spec's formulas
# ------------------------------------------------------------------------------------------------


def one_node_animation(tmp_path, interpolation, path, times, values, normalized_type=None):
    b = GltfBuilder()
    b.add("nodes", {"name": "n"})
    t = b.add_accessor(np.asarray(times, np.float32), min_max=True)
    v = np.asarray(values, np.float32)
    if normalized_type is not None:
        stored, _ = quantize(v, normalized_type)
        out = b.add_accessor(stored, normalized=True)
    else:
        out = b.add_accessor(v)
    b.add(
        "animations",
        {
            "channels": [{"sampler": 0, "target": {"node": 0, "path": path}}],
            "samplers": [{"input": t, "output": out, "interpolation": interpolation}],
        },
    )
    return load_gltf(write(b, tmp_path)).animations[0]


S225, C225 = np.sin(np.radians(22.5)), np.cos(np.radians(22.5))
S45 = np.sqrt(0.5)


def test_linear_translation(tmp_path):
    anim = one_node_animation(tmp_path, "LINEAR", "translation", [0, 2], [[0, 0, 0], [2, 4, 6]])
    s = anim.sample([-1.0, 0.0, 0.5, 2.0, 3.0])[:, 0, :3]
    np.testing.assert_allclose(s, [[0, 0, 0], [0, 0, 0], [0.5, 1, 1.5], [2, 4, 6], [2, 4, 6]])
    assert anim.duration == 2.0


@pytest.mark.parametrize("flip", [1.0, -1.0])
def test_linear_rotation_is_shortest_path_slerp(tmp_path, flip):
    # identity -> 90 degrees about z; halfway is 45 degrees about z: (0, 0, sin 22.5, cos 22.5).
    # The second key given as -q must still take the short way.
    anim = one_node_animation(
        tmp_path, "LINEAR", "rotation", [0, 1], [[0, 0, 0, 1], flip * np.array([0, 0, S45, S45])]
    )
    got = anim.sample(0.5)[0]
    np.testing.assert_allclose(got, [0, 0, S225, C225], atol=1e-7)
    # Slerp (not nlerp) at a quarter: 22.5 degrees.
    s, c = np.sin(np.radians(11.25)), np.cos(np.radians(11.25))
    np.testing.assert_allclose(anim.sample(0.25)[0], [0, 0, s, c], atol=1e-7)


def test_step(tmp_path):
    anim = one_node_animation(
        tmp_path, "STEP", "scale", [0, 1, 2], [[1, 1, 1], [2, 2, 2], [3, 3, 3]]
    )
    got = anim.sample([-1, 0, 0.999, 1.0, 1.5, 2.0, 9.0])[:, 0, 0]
    np.testing.assert_allclose(got, [1, 1, 1, 2, 2, 3, 3])


def test_cubicspline_translation(tmp_path):
    # Keys at t = 1 and 3 (interval 2). Per key: (in-tangent, value, out-tangent).
    # x: v0 = 0, b0 = 2 (out), v1 = 1, a1 = 0;  y: v0 = v1 = 0, b0 = 0, a1 = 4.
    # At t = 2, u = 0.5: h00 = 0.5, h10 = 0.125, h01 = 0.5, h11 = -0.125, tangents x interval 2:
    # x = 2 * 0.125 * 2 + 0.5 * 1 = 1.0;  y = 2 * (-0.125) * 4 = -1.0.
    values = [[9, 9, 9], [0, 0, 0], [2, 0, 0], [0, 4, 0], [1, 0, 0], [9, 9, 9]]
    anim = one_node_animation(tmp_path, "CUBICSPLINE", "translation", [1, 3], values)
    np.testing.assert_allclose(anim.sample(2.0)[0, :3], [1.0, -1.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(anim.sample(1.0)[0, :3], [0, 0, 0])
    np.testing.assert_allclose(anim.sample(3.0)[0, :3], [1, 0, 0])
    np.testing.assert_allclose(anim.sample(0.0)[0, :3], [0, 0, 0])
    np.testing.assert_allclose(anim.sample(5.0)[0, :3], [1, 0, 0])


def test_cubicspline_rotation_is_renormalized(tmp_path):
    # Zero tangents, identity -> 90 deg about z: at u = 0.5 the Hermite blend is
    # 0.5 q0 + 0.5 q1 = (0, 0, s45/2, (1 + s45)/2), which normalized is 45 degrees about z.
    zero = [0, 0, 0, 0]
    values = [zero, [0, 0, 0, 1], zero, zero, [0, 0, S45, S45], zero]
    anim = one_node_animation(tmp_path, "CUBICSPLINE", "rotation", [0, 1], values)
    np.testing.assert_allclose(anim.sample(0.5)[0], [0, 0, S225, C225], atol=1e-7)


def test_sampling_is_vectorized_over_channels_and_times(tmp_path):
    rig = make_rig()
    scene = load_gltf(write(rig, tmp_path))
    anim = scene.animations[0]
    times = np.linspace(-1, 2, 7)
    batch = anim.sample(times)
    assert batch.shape == (7, len(anim.channels), 4)
    for i, t in enumerate(times):
        np.testing.assert_array_equal(batch[i], anim.sample(t))


def test_animation_lookup_errors(tmp_path):
    scene = load_gltf(write(make_rig(), tmp_path))
    with pytest.raises(InputError, match="animation 5 out of range"):
        scene.skinning_matrices(0, 5)
    with pytest.raises(InputError, match="no animation named 'nope'"):
        scene.node_global_matrices("nope")
    np.testing.assert_array_equal(
        scene.node_global_matrices("cubic", 1.0), scene.node_global_matrices(2, 1.0)
    )


# ------------------------------------------------------------------------------------------------
# info, warnings, ignored things
# ------------------------------------------------------------------------------------------------


def test_info_and_summary(tmp_path):
    scene = load_gltf(write(make_rig(), tmp_path))
    info = scene.info()
    assert [m["name"] for m in info["meshes"]] == ["tube", "prop", "hand"]
    assert info["meshes"][0]["max_influences"] == 4
    chain, hand = info["skins"]
    assert chain["joints"] == 8 and chain["scaled_joints"] and not hand["scaled_joints"]
    assert chain["joint_names"][0] == "j0|joint"
    assert [a["duration"] for a in info["animations"]] == [1.0, 2.0, 2.0]
    assert [a["interpolations"] for a in info["animations"]][2] == ["CUBICSPLINE"]
    text = scene.summary()
    assert "skin 0 'chain': 8 joints" in text and "scaled joints" in text
    unscaled = load_gltf(write(make_rig(scaled=False), tmp_path, "u.glb"))
    assert not unscaled.info()["skins"][0]["scaled_joints"]


def test_weights_not_summing_to_one_warn_once(tmp_path, caplog):
    rig = make_rig()
    b = rig.builder
    # Add a second copy of the weights scaled by 0.5 as another mesh instance: two primitives off.
    acc = b.document["meshes"][0]["primitives"][0]["attributes"]
    halved = b.add_accessor((rig.weights * 0.5).astype(np.float32), target="vertex")
    prim = copy.deepcopy(b.document["meshes"][0]["primitives"][0])
    prim["attributes"]["WEIGHTS_0"] = halved
    acc["WEIGHTS_0"] = halved
    b.document["meshes"][0]["primitives"].append(prim)
    with caplog.at_level(logging.WARNING, logger="vkdqs.gltf"):
        scene = load_gltf(write(b, tmp_path))
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "64 vertices have weights not summing to 1" in warnings[0].getMessage()
    mesh = scene.skinned_mesh(0)
    np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0, atol=1e-6)
    assert mesh.vertex_count == 64


def test_ignored_parts(tmp_path, caplog):
    rig = make_rig(morph_channel=True)
    doc = rig.document
    doc["extensionsUsed"] = ["EXT_unknown", "KHR_materials_unlit"]
    doc["extensionsRequired"] = ["KHR_materials_unlit"]
    doc["materials"] = [{"name": "m"}]
    doc["cameras"] = [{"type": "perspective"}]
    doc["extras"] = {"anything": [1, 2]}
    doc["meshes"][0]["primitives"][0]["attributes"]["TEXCOORD_1"] = 0  # not read
    with caplog.at_level(logging.INFO, logger="vkdqs.gltf"):
        scene = load_gltf(write(rig, tmp_path))
    # the weights channel is read (see tests/test_morph.py), not ignored
    assert scene.animations[0].ignored_channels == 0
    assert len(scene.animations[0].weight_channels) == 1


def test_save_writes_external_bin(tmp_path):
    rig = make_rig()
    rig.save(tmp_path / "a.gltf")
    doc = json.loads((tmp_path / "a.gltf").read_text())
    assert doc["buffers"][0]["uri"] == "a.bin"
    assert (tmp_path / "a.bin").stat().st_size == doc["buffers"][0]["byteLength"]


# ------------------------------------------------------------------------------------------------
# malformed files: one GltfError naming the file, the JSON path and the problem
# ------------------------------------------------------------------------------------------------


def _acc(doc, name):
    return doc["meshes"][0]["primitives"][0]["attributes"][name]


def _anim_sampler(doc, a=0, s=0):
    return doc["animations"][a]["samplers"][s]


def _put_floats(rig, accessor, values):
    """Overwrite the first floats of an accessor's data in the binary buffer."""
    doc = rig.document
    view = doc["bufferViews"][doc["accessors"][accessor]["bufferView"]]
    raw = np.asarray(values, "<f4").tobytes()
    rig.builder.binary[view["byteOffset"] : view["byteOffset"] + len(raw)] = raw


def _add_indices(rig, values, dtype):
    doc = rig.document
    doc["meshes"][0]["primitives"][0]["indices"] = rig.builder.add_accessor(
        np.asarray(values, dtype), target="index"
    )


def _misalign(doc, rig, accessor, pad):
    """Move an accessor's bytes ``pad`` bytes into a new bufferView (its byteOffset)."""
    acc = doc["accessors"][accessor]
    view = doc["bufferViews"][acc["bufferView"]]
    start = view["byteOffset"] + acc.get("byteOffset", 0)
    raw = bytes(rig.builder.binary[start : start + view["byteLength"]])
    acc.update(bufferView=rig.builder.add_buffer_view(b"\0" * pad + raw), byteOffset=pad)


DOC_CASES = {
    "count_exceeds_view": (
        lambda d, r: d["accessors"][_acc(d, "POSITION")].update(count=40),
        r"model\.glb: accessors\[\d+\]\.count: 40 elements of 12 bytes from offset 0 exceed "
        r"bufferViews\[\d+\] \(byteLength 384\)",
    ),
    "joint_beyond_skin": (
        lambda d, r: d["skins"][0].update(joints=d["skins"][0]["joints"][:6]),
        r"meshes\[0\]\.primitives\[0\]: JOINTS_0 uses joint [67] \(vertex \d+\) but nodes\[9\] "
        r"skins it with skins\[0\], which has 6 joints",
    ),
    "unknown_required_extension": (
        lambda d, r: d.update(extensionsRequired=["KHR_animation_pointer"]),
        r"extensionsRequired\[0\]: extension 'KHR_animation_pointer' is not supported",
    ),
    "view_outside_buffer": (
        lambda d, r: d["bufferViews"][0].update(byteOffset=10**6),
        r"bufferViews\[0\]: byteOffset 1000000 \+ byteLength \d+ exceeds buffers\[0\]",
    ),
    "accessor_offset_outside_view": (
        lambda d, r: d["accessors"][_acc(d, "NORMAL")].update(byteOffset=4096),
        r"accessors\[\d+\]\.count: 32 elements of 12 bytes from offset 4096 exceed",
    ),
    "nan_key_value": (
        lambda d, r: _put_floats(r, _anim_sampler(d, 0, 1)["output"], [np.nan]),
        r"accessors\[\d+\]: element 0 is not finite",
    ),
    "nan_key_time": (
        lambda d, r: _put_floats(r, _anim_sampler(d, 0, 1)["input"], [0, np.nan]),
        r"accessors\[\d+\]: element 1 is not finite",
    ),
    "non_increasing_times": (
        lambda d, r: _put_floats(r, _anim_sampler(d, 0, 1)["input"], [0, 0.5, 0.5]),
        r"animations\[0\]\.samplers\[1\]\.input: key times must be strictly increasing: key 2",
    ),
    "index_out_of_range": (
        lambda d, r: _add_indices(r, [0, 1, 32], np.uint16),
        r"meshes\[0\]\.primitives\[0\]\.indices: element 2 is 32: out of range for 32 vertices",
    ),
    "primitive_restart_index": (
        lambda d, r: _add_indices(r, [0, 1, 255], np.uint8),
        r"indices: element 2 is 255: the primitive-restart value",
    ),
    "float_indices": (
        lambda d, r: _add_indices(r, [0, 1, 2], np.float32),
        r"indices: accessors\[\d+\] has FLOAT components; need UNSIGNED_BYTE",
    ),
    "triangles_not_multiple_of_3": (
        lambda d, r: _add_indices(r, [0, 1, 2, 3], np.uint16),
        r"meshes\[0\]\.primitives\[0\]: TRIANGLES with 4 indices, not a multiple of 3",
    ),
    "missing_component_type": (
        lambda d, r: d["accessors"][0].pop("componentType"),
        r"accessors\[0\]: required property 'componentType' is missing",
    ),
    "missing_asset": (lambda d, r: d.pop("asset"), r"model\.glb: required property 'asset'"),
    "gltf_1": (
        lambda d, r: d["asset"].update(version="1.0"),
        r"asset\.version: 1\.0: only glTF 2\.x",
    ),
    "count_as_string": (
        lambda d, r: d["accessors"][0].update(count="40"),
        r"accessors\[0\]\.count: must be an integer, got '40'",
    ),
    "negative_count": (
        lambda d, r: d["accessors"][0].update(count=-1),
        r"accessors\[0\]\.count: must be >= 1, got -1",
    ),
    "mode_lines": (
        lambda d, r: d["meshes"][0]["primitives"][0].update(mode=1),
        r"meshes\[0\]\.primitives\[0\]\.mode: 1 \(LINES\) is not supported",
    ),
    "mode_unknown": (
        lambda d, r: d["meshes"][0]["primitives"][0].update(mode=9),
        r"mode: 9 is not a glTF primitive mode",
    ),
    "missing_position": (
        lambda d, r: d["meshes"][0]["primitives"][0]["attributes"].pop("POSITION"),
        r"attributes: POSITION is missing",
    ),
    "bad_accessor_index": (
        lambda d, r: d["meshes"][0]["primitives"][0]["attributes"].update(NORMAL=999),
        r"attributes\.NORMAL: 999 is not an index into accessors",
    ),
    "position_wrong_type": (
        lambda d, r: d["meshes"][0]["primitives"][0]["attributes"].update(
            POSITION=_acc(d, "JOINTS_0")
        ),
        r"attributes\.POSITION: accessors\[\d+\] has type VEC4; need VEC3",
    ),
    "weights_wrong_type": (
        lambda d, r: d["meshes"][0]["primitives"][0]["attributes"].update(WEIGHTS_0=0),
        r"attributes\.WEIGHTS_0: accessors\[0\] has type VEC3; need VEC4",
    ),
    "attribute_count_mismatch": (
        lambda d, r: d["accessors"][_acc(d, "NORMAL")].update(count=16),
        r"attributes\.NORMAL: has 16 elements but POSITION has 32",
    ),
    "joints_without_weights": (
        lambda d, r: d["meshes"][0]["primitives"][0]["attributes"].pop("WEIGHTS_0"),
        r"WEIGHTS_0 is missing",
    ),
    "joints_normalized": (
        lambda d, r: d["accessors"][_acc(d, "JOINTS_0")].update(normalized=True),
        r"JOINTS_0: accessors\[\d+\] has normalized UNSIGNED_BYTE components",
    ),
    "misaligned_offset": (
        lambda d, r: d["accessors"][_acc(d, "NORMAL")].update(byteOffset=2),
        r"accessors\[\d+\]\.byteOffset: 2 .* not aligned to the 4-byte component size",
    ),
    "stride_on_index_view": (
        lambda d, r: d["bufferViews"][
            d["accessors"][d["meshes"][0]["primitives"][0]["indices"]]["bufferView"]
        ].update(byteStride=4),
        r"bufferViews\[\d+\]\.byteStride: 4 must not be defined for data other than vertex",
    ),
    "stride_too_small": (
        lambda d, r: d["bufferViews"][d["accessors"][0]["bufferView"]].update(byteStride=8),
        r"byteStride: 8 is smaller than the 12-byte elements",
    ),
    "stride_not_multiple_of_4": (
        lambda d, r: d["bufferViews"][0].update(byteStride=13),
        r"bufferViews\[0\]\.byteStride: 13 must be a multiple of 4",
    ),
    "node_cycle": (
        lambda d, r: d["nodes"][10].update(children=[0]),
        r"nodes\[\d+\]: the node hierarchy has a cycle",
    ),
    "node_two_parents": (
        lambda d, r: d["nodes"][11].update(children=[2]),
        r"nodes\[11\]\.children\[0\]: nodes\[2\] is already a child of nodes\[1\]",
    ),
    "node_own_child": (
        lambda d, r: d["nodes"][11].update(children=[11]),
        r"nodes\[11\]\.children\[0\]: a node cannot be its own child",
    ),
    "zero_rotation": (
        lambda d, r: d["nodes"][0].update(rotation=[0, 0, 0, 0]),
        r"nodes\[0\]\.rotation: \[0\.0, 0\.0, 0\.0, 0\.0\] is not a unit quaternion",
    ),
    "matrix_and_trs": (
        lambda d, r: d["nodes"][0].update(matrix=np.eye(4).ravel().tolist()),
        r"nodes\[0\]: has both matrix and translation",
    ),
    "animated_matrix_node": (
        lambda d, r: (
            d["nodes"][2].pop("translation"),
            d["nodes"][2].update(matrix=np.eye(4).ravel().tolist()),
        ),
        r"animations\[0\]\.channels\[0\]\.target: nodes\[2\] is animated but has a matrix",
    ),
    "translation_wrong_length": (
        lambda d, r: d["nodes"][0].update(translation=[1, 2]),
        r"nodes\[0\]\.translation: must be an array of 3 numbers",
    ),
    "skinned_primitive_without_joints": (
        lambda d, r: d["nodes"][10].update(skin=0),
        r"meshes\[1\]\.primitives\[0\]: has no JOINTS_0/WEIGHTS_0 but nodes\[10\] skins it",
    ),
    "ibm_too_few": (
        lambda d, r: d["skins"][0].update(joints=[*d["skins"][0]["joints"], 0]),
        r"skins\[0\]\.inverseBindMatrices: accessors\[\d+\] has 8 matrices for 9 joints",
    ),
    "skin_duplicate_joint": (
        lambda d, r: d["skins"][1].update(joints=[6, 6]),
        r"skins\[1\]\.joints: lists nodes\[6\] twice",
    ),
    "stride_not_element_on_ibm_view": (
        lambda d, r: d["bufferViews"][
            d["accessors"][d["skins"][0]["inverseBindMatrices"]]["bufferView"]
        ].update(byteStride=68),
        r"bufferViews\[\d+\]\.byteStride: 68 must not be defined for data other than vertex",
    ),
    "cubic_count": (
        lambda d, r: _anim_sampler(d, 0, 1).update(interpolation="CUBICSPLINE"),
        r"animations\[0\]\.samplers\[1\]\.output: accessors\[\d+\] has 3 elements; CUBICSPLINE "
        r"with 3 keys needs 9",
    ),
    "bad_interpolation": (
        lambda d, r: _anim_sampler(d).update(interpolation="SMOOTH"),
        r"samplers\[0\]\.interpolation: 'SMOOTH' is not LINEAR",
    ),
    "duplicate_channel_target": (
        lambda d, r: d["animations"][0]["channels"].append(d["animations"][0]["channels"][0]),
        r"channels\[\d\]\.target: nodes\[2\]\.rotation is already animated by channels\[0\]",
    ),
    "bad_sampler_index": (
        lambda d, r: d["animations"][0]["channels"][0].update(sampler=7),
        r"channels\[0\]\.sampler: 7 is not an index into animations\[0\]\.samplers",
    ),
    "translation_output_vec4": (
        lambda d, r: d["animations"][0]["channels"][1]["target"].update(path="rotation", node=7),
        r"samplers\[1\]\.output: accessors\[\d+\] has type VEC3; need VEC4",
    ),
    "sparse_not_increasing": (
        lambda d, r: (
            d["accessors"][0].update(
                sparse={
                    "count": 2,
                    "indices": {"bufferView": 0, "componentType": UNSIGNED_BYTE},
                    "values": {"bufferView": 0},
                }
            ),
            r.builder.binary.__setitem__(slice(0, 2), b"\x03\x01"),
        ),
        r"accessors\[0\]\.sparse\.indices: must be strictly increasing; element 1 is 1",
    ),
    "sparse_index_out_of_range": (
        lambda d, r: (
            d["accessors"][0].update(
                sparse={
                    "count": 1,
                    "indices": {"bufferView": 0, "componentType": UNSIGNED_BYTE},
                    "values": {"bufferView": 0},
                }
            ),
            r.builder.binary.__setitem__(slice(0, 1), b"\xff"),
        ),
        r"accessors\[0\]\.sparse\.indices: element 0 is 255, out of range for count 32",
    ),
    "huge_zero_fill": (
        lambda d, r: (d["accessors"][0].pop("bufferView"), d["accessors"][0].update(count=10**9)),
        r"accessors\[0\]\.count: 1000000000 elements without a bufferView",
    ),
    "negative_weight": (
        lambda d, r: _put_floats(r, _acc(d, "WEIGHTS_0"), [-0.5]),
        r"attributes\.WEIGHTS_0: vertex 0 has negative weight -0\.5",
    ),
    "nan_position": (
        lambda d, r: _put_floats(r, _acc(d, "POSITION"), [np.inf]),
        r"accessors\[\d+\]: element 0 is not finite",
    ),
    "ibm_bottom_row": (
        lambda d, r: _put_floats(r, d["skins"][0]["inverseBindMatrices"], [1, 0, 0, 5]),
        r"skins\[0\]\.inverseBindMatrices: matrix 0 has bottom row \[5\.0",
    ),
    "buffer_length_too_big": (
        lambda d, r: d["buffers"][0].update(byteLength=10**6),
        r"buffers\[0\]\.byteLength: 1000000 exceeds the GLB BIN chunk",
    ),
    "accessors_not_array": (
        lambda d, r: d.update(accessors={"0": 1}),
        r"model\.glb: accessors: must be an array, got \{'0': 1\}",
    ),
    "big_number_in_matrix": (
        lambda d, r: d["nodes"][6].update(matrix=[10**400, *d["nodes"][6]["matrix"][1:]]),
        r"nodes\[6\]\.matrix\[0\]: must be a finite float",
    ),
}


@pytest.mark.parametrize("case", sorted(DOC_CASES))
def test_malformed_document(tmp_path, case):
    mutate, pattern = DOC_CASES[case]
    rig = make_rig()
    mutate(rig.document, rig)
    path = write(rig, tmp_path)
    with pytest.raises(GltfError, match=pattern) as info:
        load_gltf(path)
    assert str(info.value).startswith("model.glb: ")


#: Fields that change nothing vkdqs skins or draws: loaded, with a GltfWarning naming the JSON
#: path (three.js and Blender load most of them too), and the same data as the unmodified file.
WARN_CASES = {
    # FBX2glTF and PlayCanvas name the mesh node as the skeleton
    "skeleton_not_ancestor": (
        lambda d, r: d["skins"][0].update(skeleton=11),
        r"skins\[0\]\.skeleton: joints\[0\] \(nodes\[1\]\) is not under the skeleton nodes\[11\]",
    ),
    "skeleton_not_an_index": (
        lambda d, r: d["skins"][0].update(skeleton=99),
        r"skins\[0\]\.skeleton: 99 is not an index into nodes \(12 elements\); the skeleton root "
        r"is not used",
    ),
    # three.js's Soldier.glb: a stride equal to the 64-byte matrices on the IBM view
    "stride_equal_to_element_on_ibm_view": (
        lambda d, r: d["bufferViews"][
            d["accessors"][d["skins"][0]["inverseBindMatrices"]]["bufferView"]
        ].update(byteStride=64),
        r"bufferViews\[\d+\]\.byteStride: defined for data other than vertex attributes",
    ),
    "view_target_unknown": (
        lambda d, r: d["bufferViews"][0].update(target=0),
        r"bufferViews\[0\]\.target: 0 is not 34962 or 34963; ignored",
    ),
    # the joints' bytes moved 2 bytes into a new bufferView: the same values, read unaligned
    "vertex_attribute_not_4_byte_aligned": (
        lambda d, r: _misalign(d, r, _acc(d, "JOINTS_0"), 2),
        r"accessors\[2\]: vertex attribute elements must be 4-byte aligned \(byteOffset 2, "
        r"element size 4\); read as they are",
    ),
    "normalized_float": (
        lambda d, r: d["accessors"][0].update(normalized=True),
        r"accessors\[0\]\.normalized: is true for FLOAT components; ignored",
    ),
    "byte_offset_without_view": (
        lambda d, r: d["accessors"].append(
            {"componentType": FLOAT, "count": 2, "type": "SCALAR", "byteOffset": 4}
        ),
        r"accessors\[25\]\.byteOffset: is defined without a bufferView; ignored",
    ),
    "unused_accessor_not_finite": (
        lambda d, r: r.builder.add_accessor(np.array([1.0, np.inf], np.float32)),
        r"accessors\[25\]: element 1 is not finite \(\[inf\]\); nothing vkdqs reads it",
    ),
    "extensions_used_not_strings": (
        lambda d, r: d.update(extensionsUsed=[7]),
        r"extensionsUsed\[0\]: must be a string, got 7; ignored",
    ),
    "node_name_not_a_string": (
        lambda d, r: d["nodes"][3].update(name=7),
        r"nodes\[3\]\.name: must be a string, got 7; left unnamed",
    ),
    "mesh_name_not_a_string": (
        lambda d, r: d["meshes"][0].update(name=["tube"]),
        r"meshes\[0\]\.name: must be a string, got \['tube'\]; left unnamed",
    ),
    "skin_name_not_a_string": (
        lambda d, r: d["skins"][1].update(name=None),
        r"skins\[1\]\.name: must be a string, got None; left unnamed",
    ),
    "animation_name_not_a_string": (
        lambda d, r: d["animations"][1].update(name={"en": "step"}),
        r"animations\[1\]\.name: must be a string, got \{'en': 'step'\}; left unnamed",
    ),
    # vkdqs draws every node with a mesh, whichever scene lists it
    "scene_node_not_root": (
        lambda d, r: d["scenes"][0].update(nodes=[0, 1, 11]),
        r"scenes\[0\]\.nodes\[1\]: nodes\[1\] is not a root node; left out of the roots",
    ),
    "scene_lists_a_node_twice": (
        lambda d, r: d["scenes"][0].update(nodes=[0, 11, 0]),
        r"scenes\[0\]\.nodes: lists a node twice; listed once",
    ),
    "scene_node_not_an_index": (
        lambda d, r: d["scenes"][0]["nodes"].append(99),
        r"scenes\[0\]\.nodes\[2\]: 99 is not an index into nodes .*; left out of the scene's roots",
    ),
    "scene_not_an_index": (
        lambda d, r: d.update(scene=3),
        r"scene: 3 is not an index into scenes \(1 elements\); ignored",
    ),
    "scenes_not_an_array": (
        lambda d, r: (d.pop("scene"), d.update(scenes={"nodes": [0, 11]})),
        r"scenes: must be an array, got \{'nodes': \[0, 11\]\}; ignored",
    ),
    "skin_without_mesh": (
        lambda d, r: d["nodes"][1].update(skin=1),
        r"nodes\[1\]\.skin: a node without a mesh has nothing to skin; ignored",
    ),
    "node_weights_without_mesh": (
        lambda d, r: d["nodes"][1].update(weights=[1.0]),
        r"nodes\[1\]\.weights: a node without a mesh has no morph targets to weight; ignored",
    ),
    "node_weights_without_targets": (
        lambda d, r: d["nodes"][9].update(weights=[0.5]),
        r"nodes\[9\]\.weights: meshes\[0\] has no morph targets to weight; ignored",
    ),
    "mesh_weights_without_targets": (
        lambda d, r: d["meshes"][0].update(weights=[0.5]),
        r"meshes\[0\]\.weights: the mesh has no morph targets to weight; ignored",
    ),
    "targets_empty": (
        lambda d, r: d["meshes"][0]["primitives"][0].update(targets=[]),
        r"meshes\[0\]\.primitives\[0\]\.targets: is empty: the primitive has no morph targets",
    ),
    "weights_channel_without_targets": (
        lambda d, r: d["animations"][0]["channels"].append(
            {"sampler": 1, "target": {"node": 9, "path": "weights"}}
        ),
        r"animations\[0\]\.channels\[3\]\.target: animates the weights of nodes\[9\], which has "
        r"no mesh with morph targets; the channel is ignored",
    ),
    "unknown_channel_path": (
        lambda d, r: d["animations"][0]["channels"].append(
            {"sampler": 1, "target": {"node": 7, "path": "color"}}
        ),
        r"animations\[0\]\.channels\[3\]\.target\.path: 'color' is not translation, rotation, "
        r"scale or weights; the channel is ignored",
    ),
    # KHR_animation_pointer, used but not required: a viewer without it ignores the channel
    "animation_pointer_channel": (
        lambda d, r: (
            d.update(extensionsUsed=["KHR_animation_pointer"]),
            d["animations"][0]["channels"].append(
                {
                    "sampler": 1,
                    "target": {
                        "path": "pointer",
                        "extensions": {"KHR_animation_pointer": {"pointer": "/nodes/7/scale"}},
                    },
                }
            ),
        ),
        r"animations\[0\]\.channels\[3\]\.target\.path: 'pointer' is not translation",
    ),
}


def _assert_same_data(scene, plain):
    """What vkdqs skins and draws of ``scene`` is that of ``plain``."""
    assert scene.scene_roots == plain.scene_roots
    for a, b in zip(scene.meshes, plain.meshes, strict=True):
        for p, q in zip(a.primitives, b.primitives, strict=True):
            for key in ("positions", "normals", "indices", "joints", "weights"):
                np.testing.assert_array_equal(getattr(p, key), getattr(q, key))
    for a, b in zip(scene.skins, plain.skins, strict=True):
        np.testing.assert_array_equal(a.joints, b.joints)
        np.testing.assert_array_equal(a.inverse_bind_matrices, b.inverse_bind_matrices)
    for s in range(len(plain.skins)):
        for animation in (None, *range(len(plain.animations))):
            for t in (0.0, 0.5, 1.7):
                np.testing.assert_array_equal(
                    scene.skinning_matrices(s, animation, t),
                    plain.skinning_matrices(s, animation, t),
                )


@pytest.mark.parametrize("case", sorted(WARN_CASES))
def test_harmless_fields_load_with_a_warning(tmp_path, case):
    mutate, pattern = WARN_CASES[case]
    plain = load_gltf(write(make_rig(), tmp_path, "plain.glb"))
    rig = make_rig()
    mutate(rig.document, rig)
    with pytest.warns(GltfWarning, match=pattern) as caught:
        scene = load_gltf(write(rig, tmp_path))
    assert len(caught) == 1  # once, however many accessors read the view
    assert str(caught[0].message).startswith("model.glb: ")
    _assert_same_data(scene, plain)


def test_harmless_fields_leave_what_they_name_out(tmp_path):
    rig = make_rig()
    doc = rig.document
    doc["nodes"][3]["name"] = 7
    doc["skins"][0]["skeleton"] = 99
    doc["nodes"][1]["skin"] = 1
    doc["meshes"][0]["weights"] = [0.5]
    doc["animations"][0]["channels"].append({"sampler": 1, "target": {"node": 7, "path": "color"}})
    with pytest.warns(GltfWarning):
        scene = load_gltf(write(rig, tmp_path))
    assert scene.nodes[3].name == "" and scene.skins[0].joint_names[2] == ""
    assert scene.skins[0].skeleton is None and scene.nodes[1].skin is None
    assert scene.meshes[0].weights is None
    assert len(scene.animations[0].channels) == 3 and scene.animations[0].ignored_channels == 1


def _glb(tmp_path) -> bytes:
    return write(make_rig(), tmp_path, "ok.glb").read_bytes()


def _rechunk(json_bytes: bytes, bin_bytes: bytes | None, *more_bin: bytes) -> bytes:
    """A GLB of a JSON chunk and BIN chunks (none when ``bin_bytes`` is None)."""
    body = struct.pack("<II", len(json_bytes), 0x4E4F534A) + json_bytes
    for chunk in (bin_bytes, *more_bin) if bin_bytes is not None else ():
        body += struct.pack("<II", len(chunk), 0x004E4942) + chunk
    return struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body


def _chunk(chunk_type: int, data: bytes) -> bytes:
    return struct.pack("<II", len(data), chunk_type) + data


def _unpadded(json_bytes: bytes) -> bytes:
    """The JSON without its padding, one byte short of a multiple of 4."""
    text = json_bytes.rstrip(b" ")
    return text + b" " * ((3 - len(text)) % 4)


def _split(raw: bytes) -> tuple[bytes, bytes]:
    jlen = struct.unpack_from("<I", raw, 12)[0]
    return raw[20 : 20 + jlen], raw[28 + jlen :]


GLB_CASES = {
    "short_header": (lambda raw: raw[:9], r"GLB header: the file has 9 bytes"),
    "bad_magic": (lambda raw: b"glTX" + raw[4:], r"GLB header: magic b'glTX'"),
    "version_1": (lambda raw: raw[:4] + struct.pack("<I", 1) + raw[8:], r"version 1 is not"),
    "truncated_file": (
        lambda raw: raw[:-100],
        r"GLB header: length \d+ but the file has only \d+ bytes \(truncated\)",
    ),
    "truncated_chunk": (
        lambda raw: raw[:8] + struct.pack("<I", len(raw) - 100) + raw[12 : len(raw) - 100],
        r"GLB chunk 1 at byte \d+: truncated: chunkLength \d+ but only \d+ bytes follow",
    ),
    "chunk_header_cut": (
        lambda raw: (
            raw[:8]
            + struct.pack("<I", 12 + 8 + len(_split(raw)[0]) + 4)
            + raw[12 : 12 + 8 + len(_split(raw)[0]) + 4]
        ),
        r"truncated chunk header \(4 bytes left, need 8\)",
    ),
    "two_bin_chunks": (
        lambda raw: _rechunk(*_split(raw), _split(raw)[1]),
        r"GLB chunk 2: a second BIN chunk \(chunk 1 is one\)",
    ),
    "bin_first": (
        lambda raw: (
            _rechunk(_split(raw)[1], None)[:12]
            + struct.pack("<II", len(_split(raw)[1]), 0x004E4942)
            + _split(raw)[1]
        ),
        r"GLB: no JSON chunk",
    ),
    "no_bin_chunk": (
        lambda raw: _rechunk(_split(raw)[0], None),
        r"buffers\[0\]: has no uri \(only buffers\[0\] of a GLB with a BIN chunk",
    ),
    "json_garbage": (
        lambda raw: _rechunk(b"{nope   ", _split(raw)[1]),
        r"invalid JSON at line 1 column 2",
    ),
    "json_not_utf8": (
        lambda raw: _rechunk(b'{"a":"\xff"}   ', _split(raw)[1]),
        r"JSON is not valid UTF-8",
    ),
    "json_root_list": (
        lambda raw: _rechunk(b"[1, 2]  ", _split(raw)[1]),
        r"JSON root must be an object",
    ),
    "json_nan": (
        lambda raw: _rechunk(b'{"asset": NaN}  ', _split(raw)[1]),
        r"invalid JSON: NaN is not valid JSON",
    ),
}


@pytest.mark.parametrize("case", sorted(GLB_CASES))
def test_malformed_glb(tmp_path, case):
    mutate, pattern = GLB_CASES[case]
    path = tmp_path / "bad.glb"
    path.write_bytes(mutate(_glb(tmp_path)))
    with pytest.raises(GltfError, match=pattern) as info:
        load_gltf(path)
    assert str(info.value).startswith("bad.glb: ")


#: GLB layouts that read the same (three.js reads them): loaded, with a GltfWarning.
GLB_WARN_CASES = {
    "bytes_after_length": (
        lambda raw: raw + b"\0" * 8,
        r"GLB header: length (\d+) but the file has \d+ bytes; the 8 after it are ignored",
    ),
    "unpadded_json_chunk": (
        lambda raw: _rechunk(_unpadded(_split(raw)[0]), _split(raw)[1]),
        r"GLB chunk 0 at byte 12: chunkLength \d+ is not a multiple of 4 \(not padded\)",
    ),
    "bin_after_unknown_chunk": (
        lambda raw: (
            _rechunk(_split(raw)[0], None)[:8]
            + struct.pack("<I", len(raw) + 12)
            + _chunk(0x4E4F534A, _split(raw)[0])
            + _chunk(0x12345678, b"abcd")
            + _chunk(0x004E4942, _split(raw)[1])
        ),
        r"GLB chunk 2: the BIN chunk is not the second chunk",
    ),
}


@pytest.mark.parametrize("case", sorted(GLB_WARN_CASES))
def test_glb_layouts_that_read_the_same_warn(tmp_path, case):
    mutate, pattern = GLB_WARN_CASES[case]
    plain = load_gltf(write(make_rig(), tmp_path, "plain.glb"))
    path = tmp_path / "odd.glb"
    path.write_bytes(mutate(_glb(tmp_path)))
    with pytest.warns(GltfWarning, match=pattern) as caught:
        scene = load_gltf(path)
    assert len(caught) == 1 and str(caught[0].message).startswith("odd.glb: ")
    _assert_same_data(scene, plain)


def test_a_byte_order_mark_is_skipped(tmp_path):
    plain = load_gltf(write(make_rig(), tmp_path, "plain.gltf"))
    path = write(make_rig(), tmp_path, "bom.gltf")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    with pytest.warns(GltfWarning, match=r"^bom\.gltf: JSON starts with a byte order mark"):
        scene = load_gltf(path)
    _assert_same_data(scene, plain)
    raw = _glb(tmp_path)  # in a GLB's JSON chunk too
    json_bytes, bin_bytes = _split(raw)
    path = tmp_path / "bom.glb"
    text = b"\xef\xbb\xbf" + json_bytes.rstrip(b" ")
    path.write_bytes(_rechunk(text + b" " * (-len(text) % 4), bin_bytes))
    with pytest.warns(GltfWarning, match=r"byte order mark"):
        _assert_same_data(load_gltf(path), plain)


def test_unknown_chunks_are_skipped(tmp_path):
    json_bytes, bin_bytes = _split(_glb(tmp_path))
    raw = _rechunk(json_bytes, bin_bytes)
    extra = struct.pack("<II", 4, 0x12345678) + b"abcd"
    raw = raw[:8] + struct.pack("<I", len(raw) + 12) + raw[12:] + extra
    path = tmp_path / "extra.glb"
    path.write_bytes(raw)
    assert load_gltf(path).meshes[0].vertex_count == 32


def test_external_buffer_problems(tmp_path):
    rig = make_rig()
    path = write(rig, tmp_path, "model.gltf")
    (tmp_path / "model.bin").unlink()
    with pytest.raises(
        GltfError, match=r"model\.gltf: buffers\[0\]\.uri: cannot read 'model\.bin'"
    ):
        load_gltf(path)
    doc = json.loads(path.read_text())
    doc["buffers"][0]["uri"] = "data:application/octet-stream;base64,@@@"
    path.write_text(json.dumps(doc))
    with pytest.raises(GltfError, match=r"buffers\[0\]\.uri: invalid base64"):
        load_gltf(path)
    doc["buffers"][0]["uri"] = "https://example.com/model.bin"
    path.write_text(json.dumps(doc))
    with pytest.raises(GltfError, match=r"only relative file URIs and data: URIs"):
        load_gltf(path)
    doc["buffers"][0]["uri"] = "data:application/octet-stream;base64,AAAA"
    path.write_text(json.dumps(doc))
    with pytest.raises(GltfError, match=r"buffers\[0\]\.byteLength: \d+ but the data has only 3"):
        load_gltf(path)


def test_missing_file_and_bom(tmp_path):
    with pytest.raises(GltfError, match=r"nothere\.gltf: cannot read the file"):
        load_gltf(tmp_path / "nothere.gltf")
    path = tmp_path / "bom.gltf"
    path.write_bytes(b"\xef\xbb\xbf{}")  # skipped with a warning, which a failed load never gives
    with pytest.raises(GltfError, match=r"bom\.gltf: required property 'asset' is missing"):
        load_gltf(path)
    path = tmp_path / "notglb.glb"
    path.write_bytes(b"{}")
    with pytest.raises(GltfError, match=r"notglb\.glb: GLB header: magic"):
        load_gltf(path)


def test_save_writes_malformed_documents_verbatim(tmp_path):
    doc = {"asset": {"version": "2.0"}, "accessors": [{"count": "x"}]}
    save(tmp_path / "m.gltf", doc)
    with pytest.raises(GltfError, match=r"accessors\[0\]: required property 'componentType'"):
        load_gltf(tmp_path / "m.gltf")


def test_too_many_influences_is_a_gltf_error(tmp_path):
    rig = make_rig(eight=True)
    doc = rig.document
    attrs = doc["meshes"][0]["primitives"][0]["attributes"]
    attrs["JOINTS_2"], attrs["WEIGHTS_2"] = attrs["JOINTS_0"], attrs["WEIGHTS_0"]
    scene = load_gltf(write(rig, tmp_path))
    with pytest.raises(GltfError, match=r"meshes\[0\]: vertex 0 has 12 non-zero weights"):
        scene.skinned_mesh(0)


def test_each_node_skinning_a_shared_mesh_is_checked_with_its_own_skin(tmp_path):
    rig = make_rig(scaled=False)
    bodies = share_tube(rig)
    rig.save(tmp_path / "shared.glb")
    scene = load_gltf(tmp_path / "shared.glb")
    info = scene.info()
    assert info["meshes"][0]["skins"] == [0, 2, 3]
    assert [s["max_influences"] for s in info["skins"]] == [4, 2, 4, 4]
    summary = scene.summary()
    assert "mesh 0 'tube': 1 primitives, 32 vertices, 56 triangles, skins 0, 2, 3, max 4" in summary
    # the third node's skin loses joints the tube uses: the error names that node and skin
    skin = rig.document["skins"][3]
    skin["joints"] = skin["joints"][:5]
    rig.save(tmp_path / "short.glb")
    with pytest.raises(
        GltfError,
        match=rf"short\.glb: meshes\[0\]\.primitives\[0\]: JOINTS_0 uses joint [5-7] "
        rf"\(vertex \d+\) but nodes\[{bodies[2]}\] skins it with skins\[3\], which has 5 joints",
    ):
        load_gltf(tmp_path / "short.glb")
