"""GPU skinning (both paths, DQS and LBS) against the float64 CPU reference in vkdqs.reference."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import InputError, SkinnedMesh, dq, procedural, reference
from vkdqs.engine.skinner import Skinner

PATHS = ("compute", "vertex")
METHODS = ("dqs", "lbs")


def random_mesh(rng, n, influences, bone_count):
    positions = rng.uniform(-1.0, 1.0, (n, 3)) * np.array([2.0, 1.0, 0.5])
    normals = rng.normal(size=(n, 3))
    joints = np.stack([rng.permutation(bone_count)[:influences] for _ in range(n)])
    weights = rng.uniform(0.05, 1.0, (n, influences))  # deliberately not sorted
    return SkinnedMesh(positions, normals, joints, weights)


def random_pose(rng, bone_count, method):
    bones = dq.random_rigid(bone_count, rng, max_angle=np.pi, max_translation=1.0)
    if method == "lbs":
        return dq.to_matrices(bones)
    return bones


def cpu_reference(mesh, method, bones):
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    if method == "dqs":
        return reference.skin_dqs(*args, bones)
    return reference.skin_lbs(*args, bones)


def assert_matches(mesh, got, want):
    positions, normals = got
    ref_positions, ref_normals = want
    assert positions.dtype == np.float32 and positions.shape == (mesh.vertex_count, 3)
    assert normals.dtype == np.float32 and normals.shape == (mesh.vertex_count, 3)
    assert np.isfinite(positions).all() and np.isfinite(normals).all()
    # float32 error scales with the coordinates: the mesh's extent, or for a degenerate mesh
    # (a single vertex has extent 0) the largest skinned coordinate.
    scale = max(mesh.extent, np.abs(ref_positions).max())
    np.testing.assert_allclose(positions, ref_positions, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(normals, ref_normals, rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, rtol=0, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("n", "influences", "bone_count", "seed"),
    [(1, 1, 1, 1), (7, 2, 3, 2), (1000, 3, 16, 3), (20000, 4, 64, 4), (4099, 4, 128, 5)],
)
def test_gpu_matches_reference(device, path, method, n, influences, bone_count, seed):
    rng = np.random.default_rng(seed)
    mesh = random_mesh(rng, n, influences, bone_count)
    with Skinner(device, mesh, bone_count=bone_count, method=method, path=path) as skinner:
        for _ in range(3):
            bones = random_pose(rng, bone_count, method)
            assert_matches(mesh, skinner.skin(bones), cpu_reference(mesh, method, bones))


@pytest.mark.parametrize("path", PATHS)
def test_dqs_accepts_rigid_matrices(device, path):
    rng = np.random.default_rng(11)
    mesh = random_mesh(rng, 500, 4, 8)
    bones = dq.random_rigid(8, rng)
    with Skinner(device, mesh, bone_count=8, path=path) as skinner:
        from_matrices = skinner.skin(dq.to_matrices(bones))
    assert_matches(mesh, from_matrices, cpu_reference(mesh, "dqs", bones))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS)
def test_skin_many_equals_repeated_skin(device, path, method):
    rng = np.random.default_rng(21)
    mesh = random_mesh(rng, 3001, 4, 24)
    poses = np.stack([random_pose(rng, 24, method) for _ in range(5)])
    with Skinner(device, mesh, bone_count=24, method=method, path=path) as skinner:
        many_p, many_n = skinner.skin_many(poses)
        assert many_p.shape == many_n.shape == (5, mesh.vertex_count, 3)
        for i, pose in enumerate(poses):
            one_p, one_n = skinner.skin(pose)
            np.testing.assert_array_equal(many_p[i], one_p)
            np.testing.assert_array_equal(many_n[i], one_n)
            assert_matches(mesh, (many_p[i], many_n[i]), cpu_reference(mesh, method, pose))
        # a smaller batch after a larger one reuses the buffers
        small_p, _ = skinner.skin_many(poses[:2])
        np.testing.assert_array_equal(small_p, many_p[:2])


@pytest.mark.parametrize("path", PATHS)
def test_skin_many_in_chunks_equals_one_batch(device, path):
    """A batch over max_batch_bytes runs in chunks (here 2 + 2 + 1 poses), same result."""
    rng = np.random.default_rng(22)
    mesh = random_mesh(rng, 3001, 4, 24)
    poses = np.stack([random_pose(rng, 24, "dqs") for _ in range(5)])
    with Skinner(device, mesh, bone_count=24, method="dqs", path=path) as skinner:
        whole_p, whole_n = skinner.skin_many(poses)
        skinner.max_batch_bytes = 2 * skinner.pose_bytes
        assert skinner._batch_limit() == 2
        chunked_p, chunked_n = skinner.skin_many(poses)
    np.testing.assert_array_equal(chunked_p, whole_p)
    np.testing.assert_array_equal(chunked_n, whole_n)


@pytest.mark.parametrize("path", PATHS)
def test_antipodal_bones_give_the_same_result(device, path):
    rng = np.random.default_rng(31)
    bone_count = 12
    mesh = random_mesh(rng, 2000, 4, bone_count)
    bones = dq.random_rigid(bone_count, rng)
    with Skinner(device, mesh, bone_count=bone_count, path=path) as skinner:
        base = skinner.skin(bones)
        for _ in range(4):
            flipped = bones.copy()
            subset = rng.random(bone_count) < 0.5
            flipped[subset] *= -1.0
            got = skinner.skin(flipped)
            np.testing.assert_allclose(got[0], base[0], rtol=0, atol=1e-5 * mesh.extent)
            np.testing.assert_allclose(got[1], base[1], rtol=0, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_antipodality_correction_is_needed(device, path):
    """Two bones with the same small rotation, one stored negated: without the sign correction
    the blend cancels, so a check against the uncorrected math would catch a missing correction."""
    q = dq.from_rotation_translation(dq.quat_from_axis_angle([0, 0, 1], 2.5), [1.0, 0, 0])
    bones = np.stack([q, -q])  # the same transform, stored with opposite signs
    mesh = SkinnedMesh(
        [[1.0, 0.5, 0.0], [0.0, 1.0, 0.2]],
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
        [[0, 1], [1, 0]],
        [[0.6, 0.4], [0.5, 0.5]],
    )
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights, bones)
    corrected = reference.skin_dqs(*args)
    uncorrected = reference.skin_dqs(*args, antipodal=False)
    with Skinner(device, mesh, bone_count=2, path=path) as skinner:
        positions, _ = skinner.skin(bones)
    np.testing.assert_allclose(positions, corrected[0], atol=1e-5)
    # vertex 1 (weights 0.5/0.5) cancels to rest without the correction
    assert np.abs(positions - uncorrected[0]).max() > 1.0


@pytest.mark.parametrize("path", PATHS)
def test_candy_wrapper_twist(device, path):
    mesh = procedural.candy_wrapper()
    rest = procedural.ring_radii(mesh.positions).min()
    pose = procedural.twist_pose(170.0)
    with Skinner(device, mesh, bone_count=2, method="dqs", path=path) as dqs_skinner:
        dqs_positions, _ = dqs_skinner.skin(pose)
    with Skinner(device, mesh, bone_count=2, method="lbs", path=path) as lbs_skinner:
        lbs_positions, _ = lbs_skinner.skin(pose)
    assert procedural.ring_radii(dqs_positions).min() >= 0.95 * rest
    assert procedural.ring_radii(lbs_positions).min() <= 0.2 * rest


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS)
def test_zero_weight_vertex_stays_at_rest(device, path, method):
    mesh = SkinnedMesh(
        [[1.0, 2.0, 3.0], [0.5, 0.0, 0.0]],
        [[0.0, 3.0, 0.0], [0.0, 0.0, 1.0]],
        [[0, 1], [1, 0]],
        [[0.0, 0.0], [1.0, 0.0]],
    )
    bones = dq.random_rigid(2, np.random.default_rng(41))
    if method == "lbs":
        bones = dq.to_matrices(bones)
    with Skinner(device, mesh, bone_count=2, method=method, path=path) as skinner:
        positions, normals = skinner.skin(bones)
    np.testing.assert_allclose(positions[0], [1.0, 2.0, 3.0], atol=1e-6)
    np.testing.assert_allclose(normals[0], [0.0, 1.0, 0.0], atol=1e-6)
    assert_matches(mesh, (positions, normals), cpu_reference(mesh, method, bones))


def test_non_unit_dual_quaternions_are_normalized(device):
    rng = np.random.default_rng(51)
    mesh = random_mesh(rng, 300, 3, 5)
    bones = dq.random_rigid(5, rng)
    scaled = bones * rng.uniform(0.5, 3.0, (5, 1, 1))
    with Skinner(device, mesh, bone_count=5) as skinner:
        got = skinner.skin(scaled)
    assert_matches(mesh, got, cpu_reference(mesh, "dqs", bones))


def random_scaled_pose(rng, bone_count, *, uniform):
    """Affine bone matrices: random rigid transforms times a scale (and shear when not uniform)."""
    mats = dq.to_matrices(dq.random_rigid(bone_count, rng))
    if uniform:
        scale = np.eye(3) * rng.uniform(0.5, 2.0, (bone_count, 1, 1))
    else:
        scale = np.eye(3) * rng.uniform(0.5, 2.0, (bone_count, 1, 3))
        scale[:, 0, 1] = rng.uniform(-0.3, 0.3, bone_count)  # shear
    mats[:, :3, :3] = mats[:, :3, :3] @ scale
    return mats


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("influences", [5, 8])
def test_eight_influences(device, path, method, influences):
    rng = np.random.default_rng(60 + influences)
    mesh = random_mesh(rng, 3000, influences, 20)
    assert mesh.slots == 8 and mesh.influence_count == influences
    with Skinner(device, mesh, bone_count=20, method=method, path=path) as skinner:
        for _ in range(2):
            bones = random_pose(rng, 20, method)
            assert_matches(mesh, skinner.skin(bones), cpu_reference(mesh, method, bones))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("influences", [4, 8])
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform-scale", "scale-shear"])
def test_two_phase_dqs_matches_reference(device, path, influences, uniform):
    rng = np.random.default_rng(70 + influences + uniform)
    mesh = random_mesh(rng, 2000, influences, 12)
    mats = random_scaled_pose(rng, 12, uniform=uniform)
    dqs, scales = dq.decompose_skinning_matrices(mats)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    want = reference.skin_dqs_scaled(*args, dqs, scales)
    with Skinner(device, mesh, bone_count=12, path=path) as skinner:  # method "dqs": automatic
        got = skinner.skin(mats)
    assert_matches(mesh, got, want)
    with Skinner(device, mesh, bone_count=12, path=path, allow_scale=False) as rigid_only:
        with pytest.raises(InputError, match="not rigid: scale/shear"):
            rigid_only.skin(mats)


@pytest.mark.parametrize("path", PATHS)
def test_two_phase_dqs_equals_plain_dqs_on_rigid_rigs(device, path):
    rng = np.random.default_rng(80)
    mesh = random_mesh(rng, 2000, 4, 10)
    bones = dq.random_rigid(10, rng)
    with Skinner(device, mesh, bone_count=10, path=path) as plain:
        want = plain.skin(bones)
        # method "dqs" runs rigid matrices through plain DQS: exactly the same result
        same = plain.skin(dq.to_matrices(bones))
    np.testing.assert_allclose(same[0], want[0], rtol=0, atol=1e-6 * mesh.extent)
    with Skinner(device, mesh, bone_count=10, path=path, method="dqs_scale") as two_phase:
        got = two_phase.skin(dq.to_matrices(bones))
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-5 * mesh.extent)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-5)
    # The float64 references agree up to the float32 weights' sum (1 within ~6e-8): with S = I
    # phase 1 scales each vertex by that sum.
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    identity = np.tile(np.eye(3, 4), (10, 1, 1))
    np.testing.assert_allclose(
        reference.skin_dqs_scaled(*args, bones, identity)[0],
        reference.skin_dqs(*args, bones)[0],
        rtol=0,
        atol=1e-7 * mesh.extent,
    )


def test_uniformly_scaled_rig_equals_the_scaled_rigid_result(device):
    """A rig whose bones all scale by s about the origin: every vertex lands at s x (plain DQS)."""
    rng = np.random.default_rng(90)
    mesh = random_mesh(rng, 1500, 4, 6)
    bones = dq.random_rigid(6, rng)
    s = 1.7
    mats = dq.to_matrices(bones) @ np.diag([s, s, s, 1.0])
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    want_p, want_n = reference.skin_dqs(mesh.positions * s, *args[1:], bones)
    with Skinner(device, mesh, bone_count=6) as skinner:
        got = skinner.skin(mats)
    np.testing.assert_allclose(got[0], want_p, rtol=0, atol=1e-5 * mesh.extent * s)
    np.testing.assert_allclose(got[1], want_n, rtol=0, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_candy_wrapper_holds_with_scale(device, path):
    mesh = procedural.candy_wrapper()
    rest = procedural.ring_radii(mesh.positions).min()
    pose = procedural.twist_pose(170.0) @ np.diag([1.5, 1.5, 1.5, 1.0])
    with Skinner(device, mesh, bone_count=2, path=path) as skinner:
        positions, _ = skinner.skin(pose)
    assert procedural.ring_radii(positions).min() >= 0.95 * 1.5 * rest


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["lbs", "dqs_scale"])
def test_tiny_scale_does_not_look_collapsed(device, path, method):
    """Quantized glTF files scale every skinning matrix by ~1e-4 (gltfpack: 2.4e-4): the LBS
    cofactor normal is then ~1e-8 long, but the blend has not collapsed, so the normals must
    follow the pose, as they do without the scale (cofactors scale with the square)."""
    rng = np.random.default_rng(11)
    mesh = random_mesh(rng, 500, 4, 8)
    rigid = dq.to_matrices(random_pose(rng, 8, "dqs"))
    tiny = rigid @ np.diag([2.4e-4, 2.4e-4, 2.4e-4, 1.0])
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    if method == "lbs":
        _, want_n = reference.skin_lbs(*args, rigid)
        ref_p, ref_n = reference.skin_lbs(*args, tiny)
    else:  # a uniform scale in rest space, then the rigid pose: DQS's normals
        _, want_n = reference.skin_dqs(*args, dq.from_matrices(rigid))
        ref_p, ref_n = reference.skin_dqs_scaled(*args, *dq.decompose_skinning_matrices(tiny))
    np.testing.assert_allclose(ref_n, want_n, atol=1e-9)  # the reference: direction kept
    with Skinner(device, mesh, bone_count=8, method=method, path=path) as skinner:
        positions, normals = skinner.skin(tiny)
    np.testing.assert_allclose(normals, want_n, rtol=0, atol=1e-5)
    np.testing.assert_allclose(positions, ref_p, rtol=0, atol=1e-5 * np.abs(ref_p).max())
