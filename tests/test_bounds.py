"""Exact bounds of skinned meshes: the compute path reduces each pose's axis-aligned box on the
GPU in the same dispatch (Skinner.skin/skin_many(bounds=True), Skinner.bounds()); checked against
the skinned vertices themselves (exactly) and the float64 reference of every method."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from vkdqs import InputError, SkinnedMesh, dq
from vkdqs import methods as registry
from vkdqs import shader_interface as si
from vkdqs.engine.skinner import Skinner

from .test_registry import inputs, method_rig, poses, rig

METHODS = registry.names()
#: The methods the renderer draws (the others refuse: test_instance_bounds_...)
DRAWN = [m.name for m in registry.METHODS.values() if "vertex" in m.paths]


def encode(values: np.ndarray) -> np.ndarray:
    """The shader's float_key(), in numpy: order-preserving uint32 keys of float32 values."""
    u = np.asarray(values, np.float32).view(np.uint32)
    return np.where(u & np.uint32(0x80000000), ~u, u | np.uint32(0x80000000)).astype(np.uint32)


def reference_box(points: np.ndarray) -> np.ndarray:
    return np.stack([points.min(axis=0), points.max(axis=0)])


def test_decode_boxes_inverts_the_shaders_keys():
    rng = np.random.default_rng(3)
    specials = np.array([0.0, -0.0, 1e-38, -1e-38, 1e-45, -1e-45, 3e38, -3e38], np.float32)
    for values in (rng.normal(scale=1e3, size=(40, 3)).astype(np.float32), specials.reshape(-1, 1)):
        values = np.broadcast_to(values, (values.shape[0], 3)).astype(np.float32)
        keys = encode(values)
        # the shader folds with atomicMax: ~key for the min, key for the max
        record = np.zeros(8, np.uint32)
        record[:3] = (~keys).max(axis=0)
        record[3:6] = keys.max(axis=0)
        box = si.decode_boxes(record)[0]
        np.testing.assert_array_equal(box, reference_box(values))
        # and the keys order like the floats (-0.0 just below 0.0, which compare equal)
        order = np.argsort(keys[:, 0])
        assert (np.diff(values[order, 0]) >= 0).all()


@pytest.mark.parametrize("path", ("compute", "vertex"))
@pytest.mark.parametrize("method", METHODS)
def test_every_method_returns_the_exact_box_of_its_vertices(device, method, path):
    rng = np.random.default_rng(zlib.crc32(f"bounds {method} {path}".encode()))
    bones = 9
    skinning = registry.get(method)
    # 1000 vertices: 15 full workgroups and a partial one, whose idle invocations must not count
    mesh = method_rig(method, rng, 1000, 4, bones)
    extra = inputs(method, mesh, bones, rng, device)
    batch = poses(method, bones, rng, 3)
    if path not in skinning.paths:  # tests/test_registry.py checks the refusal
        with pytest.raises(InputError, match="runs on the compute path only"):
            Skinner(device, mesh, bone_count=bones, method=method, path=path, inputs=extra)
        return
    with Skinner(device, mesh, bone_count=bones, method=method, path=path, inputs=extra) as skinner:
        for pose in batch:
            p, _, box = skinner.skin(pose, bounds=True)
            assert box.shape == (2, 3) and box.dtype == np.float32
            np.testing.assert_array_equal(box, reference_box(p))
            np.testing.assert_array_equal(skinner.bounds(pose), box)
            want, _ = skinning.reference(mesh, pose, **extra)
            scale = max(mesh.extent, np.abs(want).max())
            np.testing.assert_allclose(box, reference_box(want), rtol=0, atol=1e-5 * scale)
        many_p, _, boxes = skinner.skin_many(batch, bounds=True)
        np.testing.assert_array_equal(skinner.bounds_many(batch), boxes)
    assert boxes.shape == (3, 2, 3)
    for p, box in zip(many_p, boxes, strict=True):
        np.testing.assert_array_equal(box, reference_box(p))


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 4099])
def test_partial_workgroups_and_single_vertices(device, n):
    rng = np.random.default_rng(n)
    mesh = rig(rng, n, 4, 5)
    pose = dq.random_rigid(5, rng, max_translation=3.0)
    with Skinner(device, mesh, bone_count=5) as skinner:
        p, _, box = skinner.skin(pose, bounds=True)
        np.testing.assert_array_equal(box, reference_box(p))
        np.testing.assert_array_equal(skinner.bounds(pose), box)


@pytest.mark.parametrize("n", [1, 2, 5, 7, 13, 1001])
def test_skin_many_boxes_of_poses_that_start_inside_a_texel(device, n):
    """skin(bounds=True) reduces the positions after the skinning, reading them as rgba32f
    texels: with 3 n floats a pose, pose p starts at float 3 n p, inside a texel (for odd n, at
    each offset 0..3 in turn). Each pose lies far from its neighbours, whose floats (and the
    normals', after the last pose) would spoil its box if read; the extremes sit at either end
    of the mesh, in the vertices the partial texels hold."""
    rng = np.random.default_rng(n)
    mesh = rig(rng, n, 4, 4)
    pos = mesh.positions.copy()
    pos[0] = (-3.0, 2.5, -1.5)  # the first vertex: min x and z, max y
    pos[-1] = (3.0, -2.5, 1.5) if n > 1 else pos[0]  # the last: max x and z, min y
    mesh = SkinnedMesh(pos, mesh.normals, mesh.joints, mesh.weights, mesh.indices)
    count = 6
    batch = np.broadcast_to(np.eye(4), (count, 4, 4, 4)).copy()
    batch[:, :, :3, 3] = (100.0 * (np.arange(count) - 2.5))[:, None, None] * [1.0, -1.0, 0.5]
    with Skinner(device, mesh, bone_count=4, method="lbs") as skinner:
        p, _, boxes = skinner.skin_many(batch, bounds=True)
        np.testing.assert_array_equal(skinner.bounds_many(batch), boxes)
    for q, box in zip(p, boxes, strict=True):
        np.testing.assert_array_equal(box, reference_box(q))
    want = pos[None].astype(np.float64) + batch[:, :1, :3, 3]  # rigid translations
    np.testing.assert_allclose(boxes[:, 0], want.min(axis=1), rtol=0, atol=1e-4)
    np.testing.assert_allclose(boxes[:, 1], want.max(axis=1), rtol=0, atol=1e-4)


@pytest.mark.parametrize("offset", [(-50.0, -60.0, -70.0), (50.0, 60.0, 70.0), (0.0, 0.0, 0.0)])
def test_boxes_on_either_side_of_zero(device, offset):
    """All-negative, all-positive and mixed coordinates: the keys order floats of either sign."""
    rng = np.random.default_rng(7)
    mesh = rig(rng, 700, 2, 3)
    pose = dq.to_matrices(dq.random_rigid(3, rng, max_translation=0.1))
    pose[:, :3, 3] += offset
    with Skinner(device, mesh, bone_count=3, method="lbs") as skinner:
        p, _, box = skinner.skin(pose, bounds=True)
    np.testing.assert_array_equal(box, reference_box(p))
    assert ((box > 0) == (np.asarray(offset) > 0)).all() or offset == (0.0, 0.0, 0.0)


def test_morph_targets_move_the_box(device):
    rng = np.random.default_rng(11)
    n, bones = 2000, 6
    base = rig(rng, n, 4, bones)
    deltas = np.zeros((2, n, 3))
    deltas[0, 17] = (0.0, 40.0, 0.0)  # one vertex far above: the box must reach it
    deltas[1, 1500:] = rng.normal(size=(500, 3))
    mesh = SkinnedMesh(
        base.positions, base.normals, base.joints, base.weights, morph_positions=deltas
    )
    pose = dq.random_rigid(bones, rng)
    weights = np.array([1.0, 0.5], np.float32)
    skinning = registry.get("dqs")
    with Skinner(device, mesh, bone_count=bones) as skinner:
        p, _, box = skinner.skin(pose, weights, bounds=True)
        np.testing.assert_array_equal(box, reference_box(p))
        np.testing.assert_array_equal(skinner.bounds(pose, weights), box)
        rest_box = skinner.bounds(pose)
        many = skinner.skin_many(
            np.stack([pose, pose]), np.stack([weights, 0 * weights]), bounds=True
        )
    want, _ = skinning.reference(mesh, pose, morph_weights=weights)
    np.testing.assert_allclose(box, reference_box(want), rtol=0, atol=1e-5 * 40)
    assert box[1].max() > rest_box[1].max() + 30  # the morphed vertex is in, the rest one not
    np.testing.assert_array_equal(many[2], np.stack([box, rest_box]))


def test_skin_many_boxes_across_chunks(device):
    """A batch larger than one submission: each chunk's boxes land at their poses."""
    rng = np.random.default_rng(5)
    mesh = rig(rng, 3000, 4, 8)
    batch = dq.random_rigid(8 * 20, rng, max_translation=5.0).reshape(20, 8, 2, 4)
    with Skinner(device, mesh, bone_count=8) as skinner:
        skinner.max_batch_bytes = 7 * skinner.pose_bytes  # 7 poses a submission
        p, _, boxes = skinner.skin_many(batch, bounds=True)
        assert skinner._capacity < 20
        plain_p, _ = skinner.skin_many(batch)  # and back to the vertices-only pipeline
    np.testing.assert_array_equal(plain_p, p)
    want = np.stack([np.stack([q.min(axis=0), q.max(axis=0)]) for q in p])
    np.testing.assert_array_equal(boxes, want)


def test_bounds_between_skins_leaves_the_vertices_right(device):
    """Switching between the vertices-only, vertices-and-box and box-only pipelines re-records
    the command buffer each time; results do not leak between them."""
    rng = np.random.default_rng(9)
    mesh = rig(rng, 500, 4, 4)
    a, b = dq.random_rigid(4, rng), dq.random_rigid(4, rng, max_translation=4.0)
    with Skinner(device, mesh, bone_count=4) as skinner:
        pa, _ = skinner.skin(a)
        box_b = skinner.bounds(b)
        pa2, _, box_a = skinner.skin(a, bounds=True)
        pb, _ = skinner.skin(b)
        box_b2 = skinner.bounds(b)
    np.testing.assert_array_equal(pa, pa2)
    np.testing.assert_array_equal(box_a, reference_box(pa))
    np.testing.assert_array_equal(box_b, reference_box(pb))
    np.testing.assert_array_equal(box_b2, box_b)


def test_bounds_many_of_more_poses_than_vertices_fit(device):
    """bounds_many's result is 24 bytes a pose: its call-size bound counts that, not the
    vertices it does not return; a batch past max_call_bytes is refused before packing."""
    from vkdqs import LimitError

    rng = np.random.default_rng(2)
    mesh = rig(rng, 20000, 4, 4)
    batch = dq.random_rigid(4 * 12, rng).reshape(12, 4, 2, 4)
    with Skinner(device, mesh, bone_count=4) as skinner:
        skinner.max_call_bytes = 12 * (2 * 20000 * 12) - 1  # skin_many's result would not fit
        with pytest.raises(LimitError, match="skin_many of 12 poses"):
            skinner.skin_many(batch)
        boxes = skinner.bounds_many(batch)
        skinner.max_call_bytes = 100
        with pytest.raises(LimitError, match=r"bounds_many of 12 poses .* \(P x 6 float32\)"):
            skinner.bounds_many(batch)
        skinner.max_call_bytes = 2**30
        p, _ = skinner.skin_many(batch[:2])
    np.testing.assert_array_equal(boxes[:2], np.stack([p.min(axis=1), p.max(axis=1)], 1))


# -- the renderer: every instance's box as posed now, and framing that uses it -----------------


def _world(points, model):
    return points @ model[:3, :3].T + model[:3, 3]


@pytest.mark.parametrize("method", METHODS)
def test_instance_bounds_are_the_posed_mesh_in_world_space(device, method):
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    rng = np.random.default_rng(zlib.crc32(f"instance bounds {method}".encode()))
    bones = 7
    skinning = registry.get(method)
    mesh = method_rig(method, rng, 900, 4, bones)
    extra = inputs(method, mesh, bones, rng, device)
    pose = poses(method, bones, rng, 1)[0]
    shifted = np.diag([2.0, 0.5, 3.0, 1.0])
    shifted[:3, 3] = (5.0, -4.0, 1.0)
    rotated = dq.to_matrices(dq.random_rigid(1, rng))[0] @ np.diag([1.5, 1.5, 1.5, 1.0])
    with OffscreenTarget(device, 8, 8) as target, Renderer(device, target) as renderer:
        render_mesh = renderer.add_mesh(mesh)
        inst = renderer.add_instance(render_mesh, bone_count=bones, method=method, inputs=extra)
        rest_box = inst.bounds  # the rest pose
        inst.set_pose(pose)
        inst.set_model(shifted)
        posed = inst.bounds
        inst.set_model(rotated)
        turned = inst.bounds
        inst.set_pose(pose)  # the same pose again: the same box
        np.testing.assert_array_equal(inst.bounds, turned)
    want, _ = skinning.reference(mesh, pose, **extra)
    scale = max(mesh.extent, np.abs(want).max()) * 3
    # axis-aligned scale and translation: the exact box of the posed vertices
    np.testing.assert_allclose(posed, reference_box(_world(want, shifted)), atol=1e-5 * scale)
    # a rotated model: a box that holds every posed vertex
    w = _world(want, rotated)
    assert (turned[0] <= w.min(axis=0) + 1e-5 * scale).all()
    assert (turned[1] >= w.max(axis=0) - 1e-5 * scale).all()
    np.testing.assert_allclose(rest_box, reference_box(mesh.positions), atol=1e-6 * scale)


def test_unskinned_and_morphed_instances_and_refusals(device):
    from vkdqs import InputError
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    rng = np.random.default_rng(4)
    base = rig(rng, 300, 2, 3)
    deltas = np.zeros((1, 300, 3))
    deltas[0, 5] = (0.0, 0.0, 9.0)
    mesh = SkinnedMesh(
        base.positions,
        base.normals,
        base.joints,
        base.weights,
        base.indices,
        morph_positions=deltas,
    )
    with OffscreenTarget(device, 8, 8) as target, Renderer(device, target) as renderer:
        rm = renderer.add_mesh(mesh)
        still = renderer.add_instance(rm, bone_count=3, method="none")
        still.set_pose(np.tile(np.eye(4), (3, 1, 1)), [1.0])
        skinned = renderer.add_instance(rm, bone_count=3)
        skinned.set_pose(np.tile(np.eye(4), (3, 1, 1)), [1.0])
        np.testing.assert_allclose(still.bounds, skinned.bounds, atol=1e-5)
        assert still.bounds[1, 2] >= 9.0 - 1.0  # the morphed vertex reaches up
        renderer.remove_instance(still)
        with pytest.raises(InputError, match="not drawn by this renderer"):
            _ = still.bounds
        skinners = list(renderer._boxes.skinners)
        assert skinners and not any(s.closed for s in skinners)
    assert all(s.closed for s in skinners)  # closed with the renderer


def test_frame_scene_frames_the_posed_instance_not_its_rest_pose(device):
    """A bent chain walked far from where it rests: framed by its box as posed, every vertex
    is in view; framed by its rest box (the old behaviour) part of it is not."""
    from vkdqs import procedural
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    bones = 8
    mesh = procedural.tube(4000, bone_count=bones, influences=4)
    pose = procedural.bone_chain_pose(bones, 85.0)
    pose[:, :3, 3] += (3.0 * mesh.extent, 0.0, 0.0)  # the whole skeleton moved aside
    with OffscreenTarget(device, 64, 48) as target, Renderer(device, target) as renderer:
        inst = renderer.add_instance(renderer.add_mesh(mesh), bone_count=bones, bones=pose)
        renderer.frame_scene()
        posed = renderer.camera.project(inst_points := _posed(mesh, pose), 64, 48)
        rest_lo, rest_hi = mesh.bounds
        renderer.camera.frame(rest_lo, rest_hi, aspect=64 / 48)
        at_rest = renderer.camera.project(inst_points, 64, 48)
        np.testing.assert_allclose(inst.bounds, reference_box(inst_points), atol=1e-4)
    inside = (posed[:, :2] >= -0.5).all(axis=1) & (posed[:, 0] <= 64.5) & (posed[:, 1] <= 48.5)
    assert inside.all()
    outside = (at_rest[:, :2] < 0).any(axis=1) | (at_rest[:, 0] > 64) | (at_rest[:, 1] > 48)
    assert outside.any()


def _posed(mesh, pose):
    return registry.get("dqs").reference(mesh, pose)[0]


@pytest.mark.parametrize("method", [m.name for m in registry.METHODS.values() if m.crowds])
def test_crowd_bounds_hold_every_copy_over_its_clip(device, method):
    """Each clip's box is the union of its frames' exact boxes, moved by each copy's model."""
    from vkdqs import AnimationClip
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    rng = np.random.default_rng(zlib.crc32(f"crowd bounds {method}".encode()))
    bones = 5
    skinning = registry.get(method)
    mesh = rig(rng, 400, 4, bones, blend="dqs_blend" in skinning.needs)
    extra = inputs(method, mesh, bones, rng)
    rigid = [
        dq.to_matrices(dq.random_rigid(bones * f, rng)).reshape(f, bones, 4, 4) for f in (4, 6)
    ]
    clips = [AnimationClip(frames, 10.0) for frames in rigid]  # crowds of DQS take rigid clips
    models = np.tile(np.eye(4), (3, 1, 1))
    models[:, :3, 3] = [(0.0, 0.0, 0.0), (10.0, 0.0, 0.0), (0.0, -7.0, 2.0)]
    with OffscreenTarget(device, 8, 8) as target, Renderer(device, target) as renderer:
        crowd = renderer.add_crowd(
            renderer.add_mesh(mesh), clips=clips, count=3, method=method, **extra
        )
        crowd.set_models(models)
        crowd.set_clips([0, 1, 1])
        lo, hi = renderer.crowd_bounds(crowd)
        assert crowd.clip_boxes is not None and crowd.clip_boxes.shape == (2, 2, 3)
        scene = renderer.scene_bounds()
    np.testing.assert_array_equal(scene[0], lo)
    np.testing.assert_array_equal(scene[1], hi)
    # every frame of each copy's clip, skinned by the float64 reference, lies inside
    pts = []
    for k, model in zip([0, 1, 1], models, strict=True):
        for pose in clips[k].frames:
            pts.append(_world(skinning.reference(mesh, pose, **extra)[0], model))
    pts = np.concatenate(pts)
    tol = 1e-5 * max(mesh.extent, np.abs(pts).max())
    np.testing.assert_allclose(lo, pts.min(axis=0), atol=tol)
    np.testing.assert_allclose(hi, pts.max(axis=0), atol=tol)


# -- conservative boxes from per-bone boxes (no skinning pass) ----------------------------------

RULED = [m.name for m in registry.METHODS.values() if m.box_rule]


def _bent_poses(rng, bones, count, max_degrees):
    """Rigid poses whose bones turn up to ``max_degrees`` apart, moved far from the origin."""
    out = []
    for _ in range(count):
        pose = dq.to_matrices(dq.random_rigid(bones, rng, max_angle=np.radians(max_degrees) / 2))
        turn = dq.to_matrices(dq.random_rigid(1, rng, max_angle=np.pi, max_translation=20.0))
        out.append(turn[0] @ pose)
    return np.stack(out)


@pytest.mark.parametrize("method", RULED)
@pytest.mark.parametrize("slots", (4, 8))
def test_bone_boxes_always_hold_the_skinned_mesh(device, method, slots):
    from vkdqs.engine.bone_boxes import BoneBoxes

    rng = np.random.default_rng(zlib.crc32(f"bone boxes {method} {slots}".encode()))
    bones = 12
    skinning = registry.get(method)
    base = rig(rng, 1500, slots, bones, blend="dqs_blend" in skinning.needs)
    weights = base.weights.copy()
    weights[:40] = 0.0  # vertices that stay at rest
    deltas = np.zeros((2, 1500, 3))
    deltas[0, rng.choice(1500, 30)] = rng.normal(scale=3.0, size=(30, 3))
    mesh = SkinnedMesh(
        base.positions,
        base.normals,
        base.joints,
        weights,
        dqs_blend=base.dqs_blend,
        morph_positions=deltas,
    )
    extra = inputs(method, mesh, bones, rng)
    boxes = BoneBoxes.of(mesh, bones, extra.get("centers"))
    batch = _bent_poses(rng, bones, 6, 165.0)
    if skinning.box_rule == "affine":  # LBS takes any affine matrix: scale and shear too
        batch[:3, :, :3, :3] *= rng.uniform(0.3, 2.0, (3, bones, 3, 3))
    morph = np.array([1.5, -0.5], np.float32)
    tight = []
    with Skinner(device, mesh, bone_count=bones, method=method, inputs=extra) as skinner:
        gpu = skinner.bounds_many(batch, np.tile(morph, (len(batch), 1)))
    for pose, exact in zip(batch, gpu, strict=True):
        box = boxes.box(skinning.box_rule, pose, morph)
        assert box is not None
        want, _ = skinning.reference(mesh, pose, morph_weights=morph, **extra)
        assert (box[0] <= want.min(axis=0)).all() and (box[1] >= want.max(axis=0)).all()
        assert (box[0] <= exact[0]).all() and (box[1] >= exact[1]).all()
        tight.append((box[1] - box[0]).max() / (exact[1] - exact[0]).max())
    assert np.median(tight) < 8  # a bound, and not a vacuous one


def test_the_rigid_rule_on_the_candy_wrapper_and_past_its_angle(device):
    """The twist the bound is hardest on: the candy wrapper's two bones turned up to 169
    degrees apart about its axis (DQS keeps the radius, LBS collapses); past
    MAX_RELATIVE_ANGLE the rule gives None."""
    from vkdqs import procedural
    from vkdqs.engine.bone_boxes import MAX_RELATIVE_ANGLE, BoneBoxes

    mesh = procedural.candy_wrapper()
    boxes = BoneBoxes.of(mesh, 2)
    with Skinner(device, mesh, bone_count=2) as skinner:
        for degrees in (30.0, 90.0, 150.0, 169.0):
            pose = procedural.twist_pose(degrees)
            exact = skinner.bounds(pose)
            box = boxes.box("rigid", pose)
            assert box is not None
            assert (box[0] <= exact[0]).all() and (box[1] >= exact[1]).all()
    far = procedural.twist_pose(MAX_RELATIVE_ANGLE + 5.0)
    assert boxes.box("rigid", far) is None
    assert boxes.box("affine", far) is not None  # LBS needs no angle
    assert boxes.box(None, far) is None


# -- frustum culling of instances --------------------------------------------------------------


def _tube_for(method, n, bones, influences):
    """A procedural tube ``method`` can skin (a DQS fraction ramp where it needs one) and the
    inputs it needs besides (identity rest frames)."""
    from vkdqs import procedural

    skinning = registry.get(method)
    tube = procedural.tube(n, bone_count=bones, influences=influences)
    blend = np.linspace(0.0, 1.0, n) if "dqs_blend" in skinning.needs else None
    mesh = SkinnedMesh(
        tube.positions, tube.normals, tube.joints, tube.weights, tube.indices, dqs_blend=blend
    )
    extra = {}
    if "rest_matrices" in skinning.needs:
        extra["rest_matrices"] = np.tile(np.eye(4), (bones, 1, 1))
    return mesh, extra


def _culling_scene(device, method, culling):
    """A row of instances of one method: in view, out to the left, right, behind the camera,
    straddling the right edge, one moved out of view by its pose alone and one whose model
    stands out of view but whose pose brings it back. Returns (image, stats)."""
    from vkdqs import procedural
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    bones = 6
    skinning = registry.get(method)
    mesh, extra = _tube_for(method, 1200, bones, 4)
    bent = procedural.bone_chain_pose(bones, 40.0)
    if skinning.scale and method != "lbs":  # scale too: dqs runs two-phase DQS (exact boxes)
        bent[:, :3, :3] *= 1.1
    away = bent.copy()
    away[:, :3, 3] += (40.0, 0.0, 0.0)  # the whole skeleton walked out of view
    back = bent.copy()
    back[:, :3, 3] += (-40.0, 0.0, 0.0)
    with (
        OffscreenTarget(device, 96, 64) as target,
        Renderer(device, target, cull_instances=culling) as renderer,
    ):
        rm = renderer.add_mesh(mesh)
        renderer.camera.frame(np.array([-3.0, -2.0, -1.0]), np.array([3.0, 2.0, 1.0]), aspect=1.5)
        right, _, forward = renderer.camera.basis()
        eye = renderer.camera.position
        places = {
            "in view": np.zeros(3),
            "left": -30.0 * right,
            "right": 30.0 * right,
            "behind": eye - 10.0 * forward,
            "straddling": 6.5 * right,
        }
        for shift in places.values():
            model = np.eye(4)
            model[:3, 3] = shift
            inst = renderer.add_instance(
                rm, bone_count=bones, method=method, model=model, bones=bent, inputs=extra
            )
        # the last of them reaches past the right edge: half in view
        lo, hi = inst.bounds
        bits = (np.arange(8)[:, None] >> np.arange(3)) & 1
        x = renderer.camera.project(np.where(bits, hi, lo), 96, 64)[:, 0]
        assert x.min() < 90 and x.max() > 100
        renderer.add_instance(rm, bone_count=bones, method=method, bones=away, inputs=extra)
        comeback = np.eye(4)
        comeback[:3, 3] = (40.0, 0.0, 0.0)
        renderer.add_instance(
            rm, bone_count=bones, method=method, model=comeback, bones=back, inputs=extra
        )
        image = renderer.render_image()
        return image, renderer.stats


@pytest.mark.parametrize("method", DRAWN)
def test_culling_leaves_the_image_as_it_was(device, method):
    culled, stats = _culling_scene(device, method, True)
    drawn, all_stats = _culling_scene(device, method, False)
    np.testing.assert_array_equal(culled, drawn)  # pixel for pixel
    assert (drawn[..., :3] != culled[0, 0, :3]).any()  # and the image is not empty
    # left, right, behind and walked away: out; in view, straddling, came back: drawn
    assert (stats.instances_culled, stats.instances_drawn) == (4, 3)
    assert (all_stats.instances_culled, all_stats.instances_drawn) == (0, 7)
    rule = registry.get(method).box_rule
    exact_kind = rule is None or (registry.get(method).scale and method != "lbs")
    assert stats.boxes == ({"exact": 7} if exact_kind else {"conservative": 7})


def test_outside_frustum_planes():
    from vkdqs.camera import Camera
    from vkdqs.engine.bounds import outside_frustum

    cam = Camera()
    cam.frame(np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0]), aspect=1.0)
    vp = cam.view_projection(1.0)
    right, up, forward = cam.basis()
    unit = np.array([[-0.1] * 3, [0.1] * 3])
    boxes = [unit + d for d in (0 * right, 50 * right, -50 * up, cam.position - 5 * forward)]
    boxes.append(unit + cam.position + 1e4 * forward)  # past the far plane
    spanning = np.array([[-100.0, -0.1, -0.1], [100.0, 0.1, 0.1]])  # crosses the view
    got = outside_frustum(np.stack([*boxes, spanning]), vp)
    assert got.tolist() == [False, True, True, True, True, False]


def test_culling_follows_each_new_pose(device):
    """The box is kept until the instance is posed again: a pose that walks it out of view
    culls it the next frame, one that brings it back draws it."""
    from vkdqs import procedural
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    mesh = procedural.tube(800, bone_count=4, influences=2)
    here = procedural.bone_chain_pose(4, 30.0)
    away = here.copy()
    away[:, :3, 3] += (0.0, 0.0, -500.0)
    with (
        OffscreenTarget(device, 32, 32) as target,
        Renderer(device, target, cull_instances=True) as renderer,
    ):
        inst = renderer.add_instance(renderer.add_mesh(mesh), bone_count=4, bones=here)
        renderer.frame_scene()
        seen = []
        for pose in (here, here, away, away, here):
            inst.set_pose(pose)
            renderer.render()
            seen.append((renderer.stats.instances_drawn, renderer.stats.instances_culled))
        renderer.remove_instance(inst)
        renderer.add_instance(renderer.meshes[0], bone_count=4, bones=here)
        renderer.render()
        assert renderer.stats.instances_drawn == 1
    assert seen == [(1, 0), (1, 0), (0, 1), (0, 1), (1, 0)]


# -- crowds: boxes of every pose the sampler makes, and culling on the GPU ---------------------


@pytest.mark.parametrize("method", ["dqs", "lbs", "cor"])
def test_box_between_holds_every_blend_of_two_frames(method):
    """Between two frames the sampler blends DQs along the shortest arc (LBS: rows linearly);
    the box of the two frames' blends holds the mesh at every blend weight."""
    from vkdqs import reference
    from vkdqs.clip import AnimationClip
    from vkdqs.engine.bone_boxes import BoneBoxes

    from .test_crowd import blend_reference

    rng = np.random.default_rng(zlib.crc32(f"between {method}".encode()))
    bones = 8
    mesh = rig(rng, 1200, 4, bones)
    centers = mesh.positions + rng.normal(scale=0.2, size=mesh.positions.shape)
    boxes = BoneBoxes.of(mesh, bones, centers if method == "cor" else None)
    rule = registry.get(method).box_rule
    for _ in range(4):
        base = dq.to_matrices(dq.random_rigid(1, rng, max_angle=np.pi, max_translation=5.0))[0]
        frames = [
            base @ dq.to_matrices(dq.random_rigid(bones, rng, max_angle=np.radians(40)))
            for _ in range(2)
        ]
        frames[1] = frames[0] @ dq.to_matrices(dq.random_rigid(bones, rng, max_angle=0.6))
        clip = AnimationClip(np.stack(frames), 1.0)
        box = boxes.box_between(rule, clip.frames[0], clip.frames[1])
        assert box is not None
        blended = blend_reference(clip, np.linspace(0.0, 0.999, 41), method)
        for pose in blended:
            args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
            if method == "lbs":
                p = reference.skin_lbs(
                    *args, np.concatenate([pose, np.tile([[[0, 0, 0, 1.0]]], (bones, 1, 1))], 1)
                )[0]
            elif method == "dqs":
                p = reference.skin_dqs(*args, pose)[0]
            else:
                p = reference.skin_cor(*args, pose, centers)[0]
            assert (box[0] <= p.min(axis=0)).all() and (box[1] >= p.max(axis=0)).all()


@pytest.mark.parametrize("method", [m.name for m in registry.METHODS.values() if m.crowds])
def test_crowd_culling_leaves_the_image_as_it_was(device, method):
    """A grid of copies, half of it out of view and some straddling the edge: the image is the
    same with GPU culling as without, and the GPU's count of copies drawn is the number whose
    box reaches into the view."""
    from vkdqs import AnimationClip, procedural
    from vkdqs.engine.bounds import outside_frustum
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.geometry import transform_box

    bones = 4
    skinning = registry.get(method)
    mesh, extra = _tube_for(method, 600, bones, 2)
    frames = np.stack([procedural.bone_chain_pose(bones, a) for a in (0.0, 30.0, 60.0, 20.0)])
    clip = AnimationClip(frames, 4.0)
    count = 64
    models = np.tile(np.eye(4), (count, 1, 1))
    grid = np.stack(np.meshgrid(np.arange(16), np.arange(4), indexing="ij"), -1).reshape(-1, 2)
    models[:, 0, 3] = 10.0 * grid[:, 0] - 75.0  # 16 columns from x = -75 to 75, 4 rows deep
    models[:, 2, 3] = -1.5 * grid[:, 1]
    images, stats = [], []
    for culling in (True, False):
        with (
            OffscreenTarget(device, 96, 64) as target,
            Renderer(device, target, cull_copies=culling) as renderer,
        ):
            crowd = renderer.add_crowd(
                renderer.add_mesh(mesh), clip, count=count, method=method, **extra
            )
            crowd.set_models(models)
            crowd.set_times(np.linspace(0.0, 0.7, count))
            renderer.camera.frame(
                np.array([-9.0, 0.0, -4.0]), np.array([9.0, 10.0, 0.0]), aspect=1.5
            )
            images.append(renderer.render_image())
            stats.append(renderer.stats)
            if culling:
                boxes = crowd.cull_boxes
                w, h = target.extent
                vp = renderer.camera.view_projection(w / h)
    np.testing.assert_array_equal(images[0], images[1])  # pixel for pixel
    assert (images[1][..., :3] != images[1][0, 0, :3]).any()
    assert stats[1].copies_drawn == count and stats[1].copies_culled == 0
    if skinning.box_rule is None:  # no bound: every copy drawn
        assert boxes is None and stats[0].copies_drawn == count
        return
    world = np.stack([transform_box(boxes[0], m) for m in models])
    out = outside_frustum(world, vp)
    assert 10 < out.sum() < count - 10  # some of both
    assert (stats[0].copies_drawn, stats[0].copies_culled) == (count - out.sum(), out.sum())


@pytest.mark.parametrize("method", ("lbs", "dqs"))
def test_posed_boxes_are_each_poses_exact_box(device, method):
    """Renderer.posed_boxes: a batch of poses' boxes from one bounds-only dispatch, each the
    min/max of the vertices the Skinner writes for that pose, and refusals."""
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.errors import InputError

    rng = np.random.default_rng(11)
    mesh = rig(rng, 700, 4, 5)
    batch = poses(method, 5, rng, 6)
    with OffscreenTarget(device, 8, 8) as target, Renderer(device, target) as renderer:
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(rm, bone_count=5, method=method)
        boxes = renderer.posed_boxes(inst, batch)
        assert boxes.shape == (6, 2, 3)
        with Skinner(device, mesh, bone_count=5, method=method) as skinner:
            positions, _ = skinner.skin_many(batch)
        for box, p in zip(boxes, positions, strict=True):
            np.testing.assert_array_equal(box, reference_box(p))
        rigid = renderer.add_instance(rm, bone_count=5, method="none")
        with pytest.raises(InputError, match="not skinned"):
            renderer.posed_boxes(rigid, batch)
        renderer.remove_instance(inst)
        with pytest.raises(InputError, match="not drawn by this renderer"):
            renderer.posed_boxes(inst, batch)


def test_the_glTF_players_bounds_are_the_clips_exact_boxes(device, tmp_path):
    """GltfScenePlayer frames by the exact GPU boxes of every copy's method over the clip:
    they hold the float64 reference of every skinned vertex at the times measured, and equal
    its extremes there (not the 9 LBS samples of before)."""
    from vkdqs import load_gltf
    from vkdqs.app.scenes import GltfScenePlayer
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.gltf.parts import scene_parts

    from .gltf_fixtures import make_rig

    make_rig(scaled=False).save(tmp_path / "rig.glb")
    scene = load_gltf(tmp_path / "rig.glb")
    with OffscreenTarget(device, 16, 16) as target, Renderer(device, target) as renderer:
        player = GltfScenePlayer(renderer, scene, methods="both", animation="linear")
        times = player._bound_times()
        assert len(times) == 31  # a one-second clip at 30 poses a second
        lo, hi = player.bounds
        points = []
        for part in scene_parts(scene):
            for t in times:
                glob = scene.node_global_matrices(player.animation, t)
                g = part.geometry
                if part.kind == "skinned":
                    mats = scene.skinning_matrices(part.skin, player.animation, t)
                    for method in registry.BOTH:
                        p, _ = registry.get(method).reference(g, mats)
                        points.append(p)
                else:
                    m = glob[part.node]
                    points.append(g.positions @ m[:3, :3].T + m[:3, 3])
        points = np.concatenate(points)
        tol = 1e-5 * np.ptp(points, axis=0).max()
        assert (points >= lo - tol).all() and (points <= hi + tol).all()
        np.testing.assert_allclose(lo, points.min(axis=0), atol=tol)
        np.testing.assert_allclose(hi, points.max(axis=0), atol=tol)
