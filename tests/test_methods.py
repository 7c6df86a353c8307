"""The per-vertex LBS/DQS blend ("blend"): GPU paths and renderer against the float64 reference,
and its bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest

from vkdqs import InputError, SkinnedMesh, dq, procedural, reference
from vkdqs import methods as registry
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget

from .imaging import CLEAR, covered, pixel_box, projected_box

PATHS = ("compute", "vertex")
W, H = 320, 240


def blend_mesh(rng, n, influences, bone_count, *, extra=0, indices=None):
    positions = rng.uniform(-1.0, 1.0, (n, 3)) * np.array([2.0, 1.0, 0.5])
    normals = rng.normal(size=(n, 3))
    k = influences + extra
    joints = np.stack([rng.permutation(bone_count)[:k] for _ in range(n)])
    weights = rng.uniform(0.05, 1.0, (n, k))
    b = rng.uniform(0.0, 1.0, n)
    b[: n // 4] = 0.0  # pure LBS
    b[n // 4 : n // 2] = 1.0  # pure DQS
    return SkinnedMesh(positions, normals, joints, weights, indices, dqs_blend=b)


def blend_reference(mesh, bones):
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    return reference.skin_blend(*args, bones, mesh.dqs_blend)


def assert_blend_matches(mesh, got, bones):
    """Positions within 1e-5 of the extent; normals within 3e-5 divided by the length of the
    blended (unnormalized) reference normal: normalizing a short blend magnifies float32 error,
    and the LBS cofactor normal alone is off by up to 1.3e-5 on these random poses (seed 3001,
    vertex 2066, also with method="lbs")."""
    want_p, want_n = blend_reference(mesh, bones)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    lbs_n = reference.skin_lbs(*args, bones)[1]
    dqs_n = reference.skin_dqs(*args, dq.from_matrices(bones))[1]
    b = mesh.dqs_blend.astype(np.float64)[:, None]
    length = np.linalg.norm(lbs_n + (dqs_n - lbs_n) * b, axis=1)
    positions, normals = got
    assert positions.dtype == normals.dtype == np.float32
    assert np.isfinite(positions).all() and np.isfinite(normals).all()
    scale = max(mesh.extent, np.abs(want_p).max())
    np.testing.assert_allclose(positions, want_p, rtol=0, atol=1e-5 * scale)
    err = np.abs(normals - want_n).max(axis=1)
    assert (err <= 3e-5 / np.maximum(length, 1e-3)).all(), err.max()
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, rtol=0, atol=1e-5)


def random_matrices(rng, bone_count):
    bones = dq.random_rigid(bone_count, rng, max_angle=np.pi, max_translation=1.0)
    return dq.to_matrices(bones)


def test_reference_blend_endpoints_are_lbs_and_dqs():
    rng = np.random.default_rng(1)
    mesh = blend_mesh(rng, 400, 4, 8)
    mats = random_matrices(rng, 8)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    lbs = reference.skin_lbs(*args, mats)
    dqs = reference.skin_dqs(*args, dq.from_matrices(mats))
    for b, want in ((0.0, lbs), (1.0, dqs)):
        got = reference.skin_blend(*args, mats, np.full(400, b))
        np.testing.assert_allclose(got[0], want[0], atol=1e-12)
        np.testing.assert_allclose(got[1], want[1], atol=1e-12)
    half = reference.skin_blend(*args, mats, np.full(400, 0.5))
    np.testing.assert_allclose(half[0], 0.5 * (lbs[0] + dqs[0]), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(half[1], axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("n", "influences", "extra", "bones"), [(1, 1, 0, 1), (3001, 4, 0, 24), (2000, 4, 3, 40)]
)
def test_blend_matches_reference(device, path, n, influences, extra, bones):
    rng = np.random.default_rng(n + extra)
    mesh = blend_mesh(rng, n, influences, bones, extra=extra)
    assert mesh.slots == (8 if extra else 4)
    poses = np.stack([random_matrices(rng, bones) for _ in range(3)])
    with Skinner(device, mesh, bone_count=bones, method="blend", path=path) as skinner:
        for pose in poses:
            assert_blend_matches(mesh, skinner.skin(pose), pose)
        many_p, many_n = skinner.skin_many(poses)
        for i, pose in enumerate(poses):
            assert_blend_matches(mesh, (many_p[i], many_n[i]), pose)
        # dual quaternions give the same pose
        dqs = dq.from_matrices(poses[0])
        assert_blend_matches(mesh, skinner.skin(dqs), poses[0])


def test_blend_bad_input(device):
    rng = np.random.default_rng(5)
    base = blend_mesh(rng, 10, 2, 4)
    args = (base.positions, base.normals, base.joints, base.weights)
    for bad, words in (
        (np.full(10, 1.5), "dqs_blend[0] = 1.5"),
        (np.r_[np.zeros(3), -0.1, np.zeros(6)], "dqs_blend[3] = -0.1"),
        (np.r_[np.zeros(7), np.nan, np.zeros(2)], "dqs_blend[7] = nan"),
        (np.zeros(9), "shape (10,)"),
        (np.zeros((10, 1)), "shape (10,)"),
        (np.array(["a"] * 10), "dqs_blend must be a real numeric array"),
    ):
        with pytest.raises(InputError, match=re.escape(words)):
            SkinnedMesh(*args, dqs_blend=bad)
    plain = SkinnedMesh(*args)
    with pytest.raises(InputError, match="dqs_blend"):
        Skinner(device, plain, bone_count=4, method="blend")
    scaled = dq.to_matrices(dq.random_rigid(4, rng))
    scaled[2, :3, :3] *= 1.5
    with Skinner(device, base, bone_count=4, method="blend") as skinner:
        with pytest.raises(InputError, match="bone 2: method 'blend' needs rigid"):
            skinner.skin(scaled)
        with pytest.raises(InputError, match=r"shape"):
            skinner.skin(np.zeros((4, 5, 4)))
        with pytest.raises(InputError, match="3 bones"):
            skinner.skin(scaled[:3])


def _candy(b):
    m = procedural.candy_wrapper()
    blend = np.full(m.vertex_count, b)
    return SkinnedMesh(m.positions, m.normals, m.joints, m.weights, m.indices, dqs_blend=blend)


def _middle_height(img, renderer, mesh):
    lo, hi = mesh.bounds
    x = renderer.camera.project([[(lo[0] + hi[0]) / 2, 0.0, 0.0]], W, H)[0, 0]
    return int(covered(img)[:, int(x)].sum())


def test_blend_renders_between_lbs_and_dqs(device):
    """At 170 degrees b = 0 collapses like LBS, b = 1 keeps the volume like DQS; the image's box
    matches the vertex path's skinned vertices."""
    pose = procedural.twist_pose(170.0)
    heights = {}
    with OffscreenTarget(device, W, H) as target, Renderer(device, target, clear_color=CLEAR) as r:
        for b in (0.0, 1.0):
            mesh = _candy(b)
            inst = r.add_instance(r.add_mesh(mesh), bone_count=2, method="blend")
            r.frame_scene()
            rest = _middle_height(r.render_image(), r, mesh)
            inst.set_pose(pose)
            img = r.render_image()
            heights[b] = _middle_height(img, r, mesh) / rest
            with Skinner(device, mesh, bone_count=2, method="blend", path="vertex") as skinner:
                positions, _ = skinner.skin(pose)
            got = pixel_box(covered(img))
            np.testing.assert_allclose(got, projected_box(r.camera, positions, W, H), atol=2.0)
            r.remove_instance(inst)
        with pytest.raises(InputError, match="dqs_blend"):
            r.add_instance(r.add_mesh(procedural.candy_wrapper()), bone_count=2, method="blend")
    assert heights[0.0] <= 0.5 and heights[1.0] >= 0.9


@pytest.mark.parametrize("kind", ["float", "ubyte", "ushort"])
def test_gltf_dqs_blend_attribute(tmp_path, kind):
    from vkdqs.gltf import load_gltf

    from .gltf_fixtures import FLOAT, UNSIGNED_BYTE, UNSIGNED_SHORT, make_rig, quantize

    rig = make_rig()
    n = len(rig.positions)
    values = np.linspace(0.0, 1.0, n)
    ct = {"float": FLOAT, "ubyte": UNSIGNED_BYTE, "ushort": UNSIGNED_SHORT}[kind]
    if ct == FLOAT:
        stored, want = values.astype(np.float32), values
    else:
        stored, want = quantize(values, ct)
    attrs = rig.document["meshes"][0]["primitives"][0]["attributes"]
    attrs["_DQS_BLEND"] = rig.builder.add_accessor(
        stored,
        component_type=ct,
        normalized=ct != FLOAT,
        target="vertex",
        byte_stride=None if ct == FLOAT else 4,  # glTF: vertex elements 4-byte aligned
    )
    rig.save(tmp_path / "blend.gltf")
    scene = load_gltf(tmp_path / "blend.gltf")
    mesh = scene.skinned_mesh(0)
    np.testing.assert_allclose(mesh.dqs_blend, want, atol=1e-7)
    assert load_gltf(tmp_path / "blend.gltf").skinned_mesh(2).dqs_blend is None


def test_gltf_dqs_blend_out_of_range(tmp_path):
    from vkdqs.gltf import GltfError, load_gltf

    from .gltf_fixtures import make_rig

    rig = make_rig()
    values = np.zeros(len(rig.positions), np.float32)
    values[5] = 1.25
    attrs = rig.document["meshes"][0]["primitives"][0]["attributes"]
    attrs["_DQS_BLEND"] = rig.builder.add_accessor(values, target="vertex")
    rig.save(tmp_path / "bad.gltf")
    with pytest.raises(GltfError, match=r"_DQS_BLEND.*vertex 5 has DQS blend 1.25"):
        load_gltf(tmp_path / "bad.gltf")


def test_parse_methods():
    from vkdqs.methods import parse_methods, shown

    assert parse_methods("both") == ("lbs", "dqs")
    assert parse_methods("all") == tuple(m.name for m in shown())
    assert parse_methods("blend,lbs") == ("blend", "lbs")
    for bad, why in (("lbs,lbs", "repeats"), ("dqs,xyz", "'xyz'"), ("", "''"), ("lbs,", "''")):
        with pytest.raises(InputError, match=why):
            parse_methods(bad)


def test_cli_render_all_methods(tmp_path, device, capsys):
    from vkdqs.app import cli
    from vkdqs.images import read_png

    out = tmp_path / "all.png"
    args = ["render", "--out", str(out), "--size", "240x120", "--samples", "1", "--method", "all"]
    assert cli.main([*args, "--no-grid", "--no-labels"]) == 0  # the copies alone
    label = f"{' | '.join(m.label for m in registry.shown())} (left to right), twist 170"
    assert label.startswith("LBS | DQS | LBS/DQS blend | CoR | DQS (Blender) | DDM | Delta Mush")
    assert label in capsys.readouterr().out
    img = read_png(out)
    # a cylinder a shown method: the image has that many separate runs of covered columns
    cols = covered(img).any(axis=0).astype(int)
    assert np.count_nonzero(np.diff(cols) == 1) + cols[0] == len(registry.shown()) == 8
    with pytest.raises(SystemExit):
        cli.main(["render", "--method", "lbs,nope"])
    assert "unknown 'nope'" in capsys.readouterr().err


def test_gltf_player_shows_blend(tmp_path, device):
    from vkdqs.app.scenes import GltfScenePlayer
    from vkdqs.gltf import load_gltf

    from .gltf_fixtures import make_rig

    make_rig(scaled=False).save(tmp_path / "rig.glb")
    scene = load_gltf(tmp_path / "rig.glb")
    with OffscreenTarget(device, W, H) as target, Renderer(device, target, clear_color=CLEAR) as r:
        player = GltfScenePlayer(r, scene, methods="lbs,blend")
        player.set_time(0.5)
        assert player.label().startswith("LBS (left) | LBS/DQS blend (right)")
        img = r.render_image()
        assert covered(img).sum() > 100
        blend = [d.instances["blend"] for d in player.draws if d.kind == "skinned"]
        assert blend and all(i.visible and i.mesh.mesh.dqs_blend is not None for i in blend)
        player.show("all")
        r.render_image()
        assert all(len(d.instances) == len(registry.shown()) for d in player.draws)
