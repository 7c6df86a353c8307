"""Velocity skinning on the GPU (the registry's "velocity" over DQS and "velocity_lbs" over
LBS: the base's skinning, then velocity.comp's pass): against the float64 reference, and the
base method's bits where nothing moves."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import vkdqs
from vkdqs import InputError, SkinnedMesh, dq
from vkdqs import methods as registry
from vkdqs.methods.velocity.reference import velocity_rig

VELOCITY = [m.name for m in registry.METHODS.values() if "velocity_data" in m.needs]


def _tree(rng, bones):
    """A random skeleton: each bone's parent an earlier bone (bone 0 the root)."""
    return np.array([-1] + [int(rng.integers(0, j)) for j in range(1, bones)])


def _rig(rng, n, slots, bones):
    mesh = vkdqs.procedural.tube(n, bone_count=bones, influences=4, length=4.0, radius=0.5)
    if slots == 8:
        far = (mesh.joints[:, :4] + rng.integers(1, bones, (n, 4))) % bones
        mesh = SkinnedMesh(
            mesh.positions,
            mesh.normals,
            np.hstack([mesh.joints, far]),
            np.hstack([mesh.weights, rng.uniform(0.0, 0.05, (n, 4))]),
            mesh.indices,
        )
    rest = dq.to_matrices(dq.random_rigid(bones, rng))
    rest[:, :3, 3] = mesh.positions[rng.integers(0, n, bones)]  # joints on the mesh
    return mesh, rest


def _motion(rng, bones, dt):
    """A pose and the pose dt before it: small random turns and moves of every joint."""
    now = dq.to_matrices(dq.random_rigid(bones, rng))
    step = dq.to_matrices(dq.random_rigid(bones, rng, max_angle=0.05, max_translation=0.02))
    return now, step @ now


@pytest.fixture(scope="module")
def rigs():
    out = {}
    for slots in (4, 8):
        rng = np.random.default_rng(slots)
        mesh, rest = _rig(rng, 900, slots, 12)
        parents = _tree(rng, 12)
        out[slots] = (mesh, rest, parents)
    return out


@pytest.mark.parametrize("slots", (4, 8))
@pytest.mark.parametrize("method", VELOCITY)
def test_against_the_reference(device, rigs, method, slots):
    mesh, rest, parents = rigs[slots]
    rng = np.random.default_rng(zlib.crc32(f"{method} {slots}".encode()))
    rig = velocity_rig(
        mesh,
        parents,
        rest,
        floppy=0.1,
        squashy=0.2,
        vertex_floppy=rng.uniform(0, 1, mesh.vertex_count),
        bone_squashy=rng.uniform(0, 1, 12),
    )
    dt = 1 / 30
    batch = [_motion(rng, 12, dt) for _ in range(3)]
    now = np.stack([b[0] for b in batch])
    before = np.stack([b[1] for b in batch])
    entry = registry.get(method)
    with vkdqs.Skinner(device, mesh, bone_count=12, method=method, inputs={"velocity": rig}) as sk:
        many, _ = sk.skin_many(now, previous=before, dt=dt)
        one, _, box = sk.skin(now[1], previous=before[1], dt=dt, bounds=True)
        still, normals = sk.skin(now[0])
    np.testing.assert_array_equal(one, many[1])
    np.testing.assert_array_equal(box, np.stack([one.min(axis=0), one.max(axis=0)]))
    for k in range(3):
        want, _ = entry.reference(mesh, now[k], velocity=rig, previous=before[k], dt=dt)
        base, _ = entry.reference(mesh, now[k], velocity=rig)
        scale = max(mesh.extent, np.abs(want).max())
        assert np.abs(want - base).max() > 0.02 * scale  # the motion shows
        np.testing.assert_allclose(many[k], want, rtol=0, atol=1e-5 * scale)
    # no motion: the base method's bits, positions and normals
    with vkdqs.Skinner(device, mesh, bone_count=12, method=entry.base) as base_sk:
        plain_p, plain_n = base_sk.skin(now[0])
    np.testing.assert_array_equal(still, plain_p)
    np.testing.assert_array_equal(normals, plain_n)


def test_the_same_pose_as_before_is_the_base_exactly(device, rigs):
    mesh, rest, parents = rigs[4]
    rig = velocity_rig(mesh, parents, rest, floppy=0.3, squashy=0.3)
    pose = dq.to_matrices(dq.random_rigid(12, np.random.default_rng(5)))
    with vkdqs.Skinner(
        device, mesh, bone_count=12, method="velocity", inputs={"velocity": rig}
    ) as sk:
        p, _ = sk.skin(pose, previous=pose, dt=0.01)
    with vkdqs.Skinner(device, mesh, bone_count=12, method="dqs") as base:
        np.testing.assert_array_equal(p, base.skin(pose)[0])


def test_refusals(device, rigs):
    mesh, rest, parents = rigs[4]
    rig = velocity_rig(mesh, parents, rest)
    pose = np.tile(np.eye(4), (12, 1, 1))
    with pytest.raises(InputError, match="needs velocity="):
        vkdqs.Skinner(device, mesh, bone_count=12, method="velocity")
    with pytest.raises(InputError, match="made for 12 bones"):
        vkdqs.Skinner(device, mesh, bone_count=13, method="velocity", inputs={"velocity": rig})
    with pytest.raises(InputError, match="compute path only"):
        vkdqs.Skinner(
            device, mesh, bone_count=12, method="velocity", path="vertex", inputs={"velocity": rig}
        )
    with vkdqs.Skinner(device, mesh, bone_count=12, method="dqs") as sk:
        with pytest.raises(InputError, match="passes read the motion"):
            sk.skin(pose, previous=pose, dt=0.1)
    with vkdqs.Skinner(
        device, mesh, bone_count=12, method="velocity", inputs={"velocity": rig}
    ) as sk:
        with pytest.raises(InputError, match="go together"):
            sk.skin(pose, previous=pose)
        with pytest.raises(InputError, match="dt must be"):
            sk.skin(pose, previous=pose, dt=-1.0)
        with pytest.raises(InputError, match="dt must be"):
            sk.skin(pose, previous=pose, dt=float("nan"))
        with pytest.raises(InputError, match="previous must be"):
            sk.skin(pose, previous=pose[:5], dt=0.1)
        with pytest.raises(InputError, match="previous must be"):
            sk.skin_many(pose[None], previous=np.full((1, 12, 4, 4), np.nan), dt=0.1)
        assert sk.skin(pose)[0].shape == (mesh.vertex_count, 3)  # still usable


def test_a_bake_moves_with_the_clip(device, tmp_path):
    """A bake's frames are the reference given the clip at t and MOTION_STEP before (the file's
    skeleton and rest frames as the rig); where the clip moves they differ from the base's."""
    from vkdqs.baking import driver
    from vkdqs.gltf import load_gltf
    from vkdqs.gltf.parts import file_skin, scene_parts

    from .gltf_fixtures import make_rig

    rig = make_rig(scaled=False)
    for node in rig.document["nodes"]:  # only the skinned chain: one drawn part
        if node.get("name") in ("prop", "hand"):
            del node["mesh"]
            node.pop("skin", None)
    rig.save(tmp_path / "single.glb")
    scene = load_gltf(tmp_path / "single.glb")
    (part,) = scene_parts(scene)
    skin = file_skin(scene, part.skin)
    assert (skin.parents[1:] >= 0).all() and (skin.parents < np.arange(len(skin.parents))).all()
    g = part.geometry
    baked = vkdqs.bake(scene, animation="linear", fps=24, method="velocity", device=device)
    base = vkdqs.bake(scene, animation="linear", fps=24, method="dqs", device=device)
    rig_ = velocity_rig(g, skin.parents, skin.rest_matrices)
    h = driver.MOTION_STEP
    scale = np.abs(baked.positions).max()
    moved = 0
    for i, t in enumerate(baked.times):  # over frames
        now = scene.skinning_matrices(part.skin, 0, t)
        before = scene.skinning_matrices(part.skin, 0, t - h)
        want, _ = registry.get("velocity").reference(g, now, previous=before, dt=h, velocity=rig_)
        np.testing.assert_allclose(baked.positions[i], want, rtol=0, atol=1e-5 * scale)
        moved += not np.allclose(baked.positions[i], base.positions[i], rtol=0, atol=1e-4 * scale)
    assert moved >= len(baked.times) // 2
    # the first frame: the clip clamps before its start, so it is at rest (the base's)
    np.testing.assert_allclose(baked.positions[0], base.positions[0], rtol=0, atol=1e-6 * scale)


def test_a_renderer_instance_moves_with_its_motion(device, rigs):
    """An instance posed with previous= and dt= is drawn by "compute, then draw" from the
    Skinner's vertices for that motion: its box is theirs exactly and its image that of those
    vertices drawn unskinned; without motion it is drawn at rest (its base's). Methods that do
    not read the motion refuse previous= and dt=."""
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    from .imaging import CLEAR, assert_images_agree_to_rounding, covered

    mesh, rest, parents = rigs[4]
    rig = velocity_rig(mesh, parents, rest, floppy=0.3, squashy=0.2)
    rng = np.random.default_rng(11)
    now, before = _motion(rng, 12, 1 / 30)
    with (
        OffscreenTarget(device, 160, 120) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
        vkdqs.Skinner(
            device, mesh, bone_count=12, method="velocity", inputs={"velocity": rig}
        ) as sk,
    ):
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(
            rm, bone_count=12, method="velocity", inputs={"velocity": rig}, bones=now
        )
        renderer.frame_scene()
        at_rest = renderer.render_image()
        np.testing.assert_array_equal(inst.bounds, sk.bounds(now))
        inst.set_pose(now, previous=before, dt=1 / 30)
        moving = renderer.render_image()
        positions, normals = sk.skin(now, previous=before, dt=1 / 30)
        np.testing.assert_array_equal(
            inst.bounds, np.stack([positions.min(axis=0), positions.max(axis=0)])
        )
        assert (moving != at_rest).any()
        inst.visible = False
        posed = SkinnedMesh(positions, normals, mesh.joints, mesh.weights, indices=mesh.indices)
        renderer.add_instance(renderer.add_mesh(posed), bone_count=12, method="none")
        want = renderer.render_image()
        assert covered(want).sum() > 500
        assert_images_agree_to_rounding(moving, want)
        with pytest.raises(InputError, match="go together"):
            inst.set_pose(now, previous=before)
        with pytest.raises(InputError, match="previous must be"):
            inst.set_pose(now, previous=before[:3], dt=0.1)
        plain = renderer.add_instance(rm, bone_count=12, method="dqs")
        with pytest.raises(InputError, match="move with the motion"):
            plain.set_pose(now, previous=before, dt=0.1)


def test_the_candy_scene_moves_with_its_twist(device):
    """The viewer's candy wrapper gives velocity skinning the twist's motion (its rate at the
    phase, MOTION_STEP back), scaled by motion_scale; the DQS copy beside it has none."""
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.engine.passes import MOTION_STEP
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    with (
        OffscreenTarget(device, 160, 120) as target,
        Renderer(device, target) as renderer,
    ):
        scene = CandyWrapperScene(renderer, methods="dqs,velocity")
        scene.update(1.0)  # a quarter period in: twisting fastest
        dqs, velocity = scene.instances["dqs"], scene.instances["velocity"]
        assert velocity.reads_motion and not dqs.reads_motion
        mesh = scene.mesh
        rig = velocity_rig(mesh, [-1, 0], np.repeat(np.eye(4)[None], 2, axis=0))
        entry = registry.get("velocity")
        omega = 2 * np.pi / scene.period
        rate = 90.0 * omega * np.sin(omega * scene.phase)
        before = vkdqs.procedural.twist_pose(scene.twist - rate * MOTION_STEP)
        for k, scale in enumerate((1.0, 2.0)):
            if k:
                scene.motion_scale = scale
                scene.update(0.0)
            want, _ = entry.reference(
                mesh, scene.pose(), velocity=rig, previous=before, dt=MOTION_STEP / scale
            )
            box = np.stack([want.min(axis=0), want.max(axis=0)])
            got = velocity.bounds - velocity.model[:3, 3]  # the model only moves it (rotated)
            got_box = np.sort(np.stack([got[0], got[1]]) @ velocity.model[:3, :3], axis=0)
            np.testing.assert_allclose(got_box, box, rtol=0, atol=1e-5 * mesh.extent)
        still, _ = registry.get("dqs").reference(mesh, scene.pose())
        assert np.abs(want - still).max() > 0.01 * mesh.extent
