"""method="dqs_blender": Blender's "Preserve Volume" armature deform, against Blender itself.

tests/data/blender_dqs_*.npz were written by tests/blender/make_fixtures.py with bpy 4.5.15
(Blender's armature modifier with Preserve Volume on 4-bone rigs: rigid poses, uniform and
non-uniform scale with shear reaching child bones, and a mirroring scale); the tests need no bpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vkdqs import InputError, SkinnedMesh, dq, reference
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget

from .imaging import CLEAR, covered, pixel_box, projected_box
from .test_gpu_skinning import assert_matches

DATA = Path(__file__).resolve().parent / "data"
RIGS = sorted(DATA.glob("blender_dqs_*.npz"))
PATHS = ("compute", "vertex")
BLENDER_TOL = 2e-5


def load(path):
    d = np.load(path)
    rng = np.random.default_rng(0)
    normals = rng.normal(size=d["positions"].shape)
    mesh = SkinnedMesh(d["positions"], normals, d["joints"], d["weights"])
    return d, mesh


def test_fixtures_exist():
    assert len(RIGS) >= 2


@pytest.mark.parametrize("rig", RIGS, ids=lambda p: p.stem)
def test_reference_matches_blender(rig):
    d, mesh = load(rig)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    kinds = set(d["kinds"].tolist())
    assert {"rigid", "uniform", "nonuniform", "mirror"} <= kinds
    for mats, want in zip(d["matrices"], d["blender_positions"], strict=True):
        got, _ = reference.skin_dqs_blender(*args, mats, d["rest_matrices"])
        assert np.abs(got - want).max() <= BLENDER_TOL


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rig", RIGS, ids=lambda p: p.stem)
def test_gpu_matches_blender_and_the_reference(device, rig, path):
    d, mesh = load(rig)
    rest = d["rest_matrices"]
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with Skinner(
        device, mesh, bone_count=4, method="dqs_blender", rest_matrices=rest, path=path
    ) as skinner:
        many_p, many_n = skinner.skin_many(d["matrices"])
        for k, mats in enumerate(d["matrices"]):
            assert np.abs(many_p[k] - d["blender_positions"][k]).max() <= BLENDER_TOL
            want = reference.skin_dqs_blender(*args, mats, rest)
            assert_matches(mesh, (many_p[k], many_n[k]), want)
            one_p, _ = skinner.skin(mats)
            np.testing.assert_array_equal(one_p, many_p[k])


def test_rigid_rest_frames_without_scale_equal_dqs_up_to_the_sign_reference(device):
    """Without scale Blender's DQS is vkdqs's DQS except for the antipodality reference."""
    rng = np.random.default_rng(3)
    n, bones = 2000, 6
    positions = rng.uniform(-1, 1, (n, 3))
    joints = np.stack([rng.permutation(bones)[:2] for _ in range(n)])
    mesh = SkinnedMesh(positions, rng.normal(size=(n, 3)), joints, rng.uniform(0.1, 1, (n, 2)))
    mats = dq.to_matrices(dq.random_rigid(bones, rng, max_angle=2.0))
    rest = dq.to_matrices(dq.random_rigid(bones, rng))
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    want = reference.skin_dqs(*args, dq.from_matrices(mats))  # two influences: same sign reference
    got = reference.skin_dqs_blender(*args, mats, rest)
    np.testing.assert_allclose(got[0], want[0], atol=1e-9)
    np.testing.assert_allclose(got[1], want[1], atol=1e-9)


def test_dqs_blender_bad_input(device):
    d, mesh = load(RIGS[0])
    rest = d["rest_matrices"]
    with pytest.raises(InputError, match="needs rest_matrices"):
        Skinner(device, mesh, bone_count=4, method="dqs_blender")
    with pytest.raises(
        InputError, match=r"rest_matrices must be a float array of shape \(4, 4, 4\)"
    ):
        Skinner(device, mesh, bone_count=4, method="dqs_blender", rest_matrices=rest[:3])
    bad = rest.copy()
    bad[2, :3, :3] = 0.0
    with pytest.raises(InputError, match=r"rest_matrices\[2\] is singular"):
        Skinner(device, mesh, bone_count=4, method="dqs_blender", rest_matrices=bad)
    with pytest.raises(InputError, match="rest_matrices are for method='dqs_blender'"):
        Skinner(device, mesh, bone_count=4, method="dqs", rest_matrices=rest)
    with Skinner(device, mesh, bone_count=4, method="dqs_blender", rest_matrices=rest) as s:
        with pytest.raises(InputError, match="shape"):
            s.skin(dq.from_matrices(np.tile(np.eye(4), (4, 1, 1))))
        flat = np.tile(np.eye(4), (4, 1, 1))
        flat[1, 2, 2] = 0.0
        with pytest.raises(InputError, match="bone 1: singular matrix"):
            s.skin(flat)


def test_dqs_blender_renders_where_the_skinner_puts_it(device):
    d, mesh = load(RIGS[0])
    tris = np.arange(3 * (mesh.vertex_count // 3)).reshape(-1, 3)
    mesh = SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, mesh.weights, tris)
    rest, pose = d["rest_matrices"], d["matrices"][3]
    with (
        OffscreenTarget(device, 320, 240) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as r,
    ):
        inst = r.add_instance(
            r.add_mesh(mesh), bone_count=4, method="dqs_blender", rest_matrices=rest
        )
        inst.set_pose(pose)
        assert inst.variant == "dqs_blender"
        r.frame_scene()  # frames the cloud as posed (it reaches far past its rest box)
        img = r.render_image()
        with pytest.raises(InputError, match="needs rest_matrices"):
            r.add_instance(inst.mesh, bone_count=4, method="dqs_blender")
    with Skinner(
        device, mesh, bone_count=4, method="dqs_blender", rest_matrices=rest, path="vertex"
    ) as skinner:
        positions, _ = skinner.skin(pose)
    # the triangles of a random cloud are slivers that can miss the pixels at the extremes: the
    # image lies inside the projected vertices' box and spans most of it
    got = pixel_box(covered(img))
    want = projected_box(r.camera, positions, 320, 240)
    assert got[0] >= want[0] - 2 and got[1] >= want[1] - 2
    assert got[2] <= want[2] + 2 and got[3] <= want[3] + 2
    assert got[2] - got[0] >= 0.9 * (want[2] - want[0])
    assert got[3] - got[1] >= 0.9 * (want[3] - want[1])


@pytest.mark.parametrize("path", PATHS)
def test_eight_influences_with_scale_shear_and_mirroring_match_the_reference(device, path):
    rng = np.random.default_rng(11)
    n, bones = 3000, 12
    joints = np.stack([rng.permutation(bones)[:7] for _ in range(n)])
    weights = rng.uniform(0.05, 1.0, (n, 7))
    mesh = SkinnedMesh(rng.uniform(-1, 1, (n, 3)), rng.normal(size=(n, 3)), joints, weights)
    assert mesh.slots == 8
    rest = dq.to_matrices(dq.random_rigid(bones, rng, max_translation=1.0))
    mats = dq.to_matrices(dq.random_rigid(bones, rng, max_angle=np.pi, max_translation=1.0))
    mats[:, :3, :3] = mats[:, :3, :3] @ (np.eye(3) + rng.uniform(-0.3, 0.3, (bones, 3, 3)))
    mats[5, :3, 0] *= -1.0  # a mirroring bone
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with Skinner(
        device, mesh, bone_count=bones, method="dqs_blender", rest_matrices=rest, path=path
    ) as skinner:
        got = skinner.skin(mats)
    want = reference.skin_dqs_blender(*args, mats, rest)
    np.testing.assert_allclose(got[0], want[0], atol=1e-5 * max(mesh.extent, 1.0))
    np.testing.assert_allclose(got[1], want[1], atol=1e-5)
