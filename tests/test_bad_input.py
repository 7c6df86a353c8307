"""Every kind of bad input raises a documented vkdqs error, naming the problem, before the GPU.

Mesh-level checks (negative joints, bad weights, > 4 influences, shapes) are in test_mesh.py;
these are the checks a Skinner makes, plus use after close().
"""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import InputError, LimitError, ObjectDestroyedError, SkinnedMesh, dq, reference
from vkdqs.engine.skinner import Skinner


@pytest.fixture
def mesh():
    rng = np.random.default_rng(5)
    n = 64
    joints = rng.integers(0, 4, (n, 4))
    return SkinnedMesh(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), joints, rng.random((n, 4)))


@pytest.fixture
def bones():
    return dq.random_rigid(4, np.random.default_rng(6))


def test_joint_index_at_or_above_bone_count(device, mesh):
    with pytest.raises(InputError, match=r"vertex \d+ slot \d+ uses joint 3 .* 3 bones"):
        Skinner(device, mesh, bone_count=3)
    assert device.live_objects() == 0


def test_too_many_bones_for_the_uniform_buffer(device):
    mesh = SkinnedMesh([[0.0, 0, 0]], [[0.0, 0, 1]], [[0]], [[1.0]])
    limit = device.info.max_uniform_buffer_range // 32
    with pytest.raises(LimitError, match=rf"maxUniformBufferRange.*at most {limit} bones"):
        Skinner(device, mesh, bone_count=limit + 1)
    lbs_limit = device.info.max_uniform_buffer_range // 48
    with pytest.raises(LimitError, match=rf"at most {lbs_limit} bones"):
        Skinner(device, mesh, bone_count=lbs_limit + 1, method="lbs")


def test_the_largest_bone_count_that_fits_works(device):
    limit = device.info.max_uniform_buffer_range // 32
    mesh = SkinnedMesh([[1.0, 0, 0]], [[0.0, 0, 1]], [[limit - 1]], [[1.0]])
    bones = dq.random_rigid(limit, np.random.default_rng(7))
    with Skinner(device, mesh, bone_count=limit) as skinner:
        positions, _ = skinner.skin(bones)
    np.testing.assert_allclose(positions[0], dq.transform_points(bones[-1], [1.0, 0, 0]), atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "cpu"}, r"method must be one of .*'cpu'"),
        ({"path": "fragment"}, r"path must be one of .*'fragment'"),
        ({"bone_count": 0}, r"bone_count must be >= 1, got 0"),
        ({"bone_count": 2.5}, r"bone_count must be an int, got 2.5"),
    ],
)
def test_bad_skinner_options(device, mesh, kwargs, message):
    options = {"bone_count": 4, **kwargs}
    with pytest.raises(InputError, match=message):
        Skinner(device, mesh, **options)


def test_mesh_must_be_a_skinned_mesh(device):
    with pytest.raises(InputError, match=r"mesh must be a vkdqs\.SkinnedMesh, got ndarray"):
        Skinner(device, np.zeros((3, 3)), bone_count=1)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros((3, 2, 4)), r"bones has 3 bones, the skinner was made for 4"),
        (np.zeros((4, 3, 3)), r"bones must have shape \(4, 2, 4\) or \(4, 4, 4\), got \(4, 3, 3\)"),
        (np.zeros((4, 8)), r"bones must have shape .* got \(4, 8\)"),
        (np.array([["a"] * 4] * 8).reshape(4, 2, 4), r"bones must be a float array .* dtype <U1"),
    ],
)
def test_bad_bone_shapes_and_dtypes(device, mesh, bad, message):
    with Skinner(device, mesh, bone_count=4) as skinner:
        with pytest.raises(InputError, match=message):
            skinner.skin(bad)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_bone_data(device, mesh, bones, value):
    bad = bones.copy()
    bad[2, 1, 3] = value
    with Skinner(device, mesh, bone_count=4) as skinner:
        with pytest.raises(InputError, match=rf"bone 2 has a non-finite value \({value}\)"):
            skinner.skin(bad)
        poses = np.stack([bones, bad])
        with pytest.raises(InputError, match=r"pose 1 bone 2 has a non-finite value"):
            skinner.skin_many(poses)


def test_zero_dual_quaternion_is_rejected(device, mesh, bones):
    bad = bones.copy()
    bad[1] = 0.0
    with Skinner(device, mesh, bone_count=4) as skinner:
        with pytest.raises(InputError, match=r"bone 1: dual quaternion real part has length 0"):
            skinner.skin(bad)


@pytest.mark.parametrize(
    "matrix",
    [
        np.diag([2.0, 1.0, 1.0, 1.0]),
        np.array([[1, 0.5, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
    ],
    ids=["scale", "shear"],
)
def test_scale_and_shear_are_rejected_for_rigid_only_dqs(device, mesh, bones, matrix):
    mats = dq.to_matrices(bones)
    mats[3] = matrix
    with Skinner(device, mesh, bone_count=4, allow_scale=False) as skinner:
        with pytest.raises(InputError, match=r"matrix 3 is not rigid: scale/shear"):
            skinner.skin(mats)


@pytest.mark.parametrize("allow_scale", [True, False])
def test_reflections_are_always_rejected_for_dqs(device, mesh, bones, allow_scale):
    mats = dq.to_matrices(bones)
    mats[3] = np.diag([-1.0, 1.0, 1.0, 1.0])
    with Skinner(device, mesh, bone_count=4, allow_scale=allow_scale) as skinner:
        with pytest.raises(InputError, match=r"matrix 3 .*(reflection|det = -1)"):
            skinner.skin(mats)


def test_non_affine_matrix_is_rejected_for_lbs(device, mesh, bones):
    mats = dq.to_matrices(bones)
    mats[0, 3] = [0.0, 0.0, 1.0, 1.0]
    with Skinner(device, mesh, bone_count=4, method="lbs") as skinner:
        with pytest.raises(InputError, match=r"bone 0: not an affine matrix, bottom row"):
            skinner.skin(mats)


def test_lbs_accepts_scale(device, mesh, bones):
    mats = dq.to_matrices(bones)
    mats[:, :3, :3] *= 1.5
    with Skinner(device, mesh, bone_count=4, method="lbs") as skinner:
        positions, _ = skinner.skin(mats)
    want, _ = reference.skin_lbs(mesh.positions, mesh.normals, mesh.joints, mesh.weights, mats)
    np.testing.assert_allclose(positions, want, atol=1e-5 * mesh.extent * 1.5)


def test_skinner_use_after_close(device, mesh, bones):
    skinner = Skinner(device, mesh, bone_count=4)
    skinner.close()
    skinner.close()  # idempotent
    with pytest.raises(ObjectDestroyedError, match=r"Skinner used after close\(\)"):
        skinner.skin(bones)
    with pytest.raises(ObjectDestroyedError):
        skinner.skin_many(bones[None])


def test_skinner_use_after_device_close(fresh_device, mesh, bones):
    skinner = Skinner(fresh_device, mesh, bone_count=4)
    fresh_device.close()
    with pytest.raises(ObjectDestroyedError, match="Device was closed"):
        skinner.skin(bones)
    skinner.close()  # nothing left to destroy, and no error
    with pytest.raises(ObjectDestroyedError, match=r"Device used after close\(\)"):
        Skinner(fresh_device, mesh, bone_count=4)


def test_more_than_eight_influences_are_rejected():
    weights = np.full((2, 9), 1.0 / 9.0)
    with pytest.raises(LimitError, match="vertex 0 has 9 non-zero weights; vkdqs takes at most 8"):
        SkinnedMesh(np.zeros((2, 3)), [[0.0, 0, 1]] * 2, [list(range(9))] * 2, weights)


def test_values_that_would_overflow_float32_are_rejected(device, mesh, bones):
    far = bones.copy()
    far[2] = dq.from_rotation_translation([0, 0, 0, 1], [3e9, 0, 0])
    with Skinner(device, mesh, bone_count=4) as skinner:
        with pytest.raises(LimitError, match=r"bone 2: a dual part .* exceeds \+-1e\+09"):
            skinner.skin(far)
    mats = dq.to_matrices(bones)
    mats[1, :3, :3] *= 1e20
    with Skinner(device, mesh, bone_count=4, method="lbs") as skinner:
        with pytest.raises(
            LimitError, match=r"bone 1: a matrix entry of magnitude [0-9.]+e\+(19|20) exceeds"
        ):
            skinner.skin(mats)
    with pytest.raises(LimitError, match=r"positions\[0, 1\] = 1e\+39 exceeds"):
        SkinnedMesh([[0.0, 1e39, 0.0]], [[0.0, 0, 1]], [[0]], [[1.0]])


@pytest.mark.parametrize("method", ["dqs", "lbs"])
def test_largest_accepted_values_give_finite_unit_results(device, method):
    """At the documented magnitude limit nothing in the float32 math overflows."""
    rng = np.random.default_rng(12)
    n = 300
    big = SkinnedMesh(
        rng.uniform(-1e9, 1e9, (n, 3)),
        rng.normal(size=(n, 3)),
        rng.integers(0, 3, (n, 4)),
        rng.random((n, 4)),
    )
    mats = dq.to_matrices(dq.random_rigid(3, rng))
    mats[:, :3, :3] *= 5e8
    mats[:, :3, 3] = rng.uniform(-1e9, 1e9, (3, 3))
    with Skinner(device, big, bone_count=3, method=method) as skinner:
        positions, normals = skinner.skin(mats)
    assert np.isfinite(positions).all() and np.isfinite(normals).all()
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("method", ["dqs", "lbs", "dqs_blender"])
def test_millions_of_broadcast_poses_are_refused_before_anything_is_allocated(
    device, mesh, bones, method
):
    """A broadcast view of 3 million poses costs nothing to pass in, but its result and packing
    would: skin_many computes those sizes first and raises LimitError at once (it ran 12 s and
    then failed with numpy's MemoryError)."""
    import time

    pose = dq.to_matrices(bones)
    rest = np.tile(np.eye(4), (4, 1, 1)) if method == "dqs_blender" else None
    with Skinner(device, mesh, bone_count=4, method=method, rest_matrices=rest) as skinner:
        many = np.broadcast_to(pose, (3_000_000, 4, 4, 4))
        default = skinner.max_call_bytes
        skinner.max_call_bytes = 2**30
        start = time.process_time()
        with pytest.raises(LimitError, match=r"skin_many of 3000000 poses of 64 vertices .*"):
            skinner.skin_many(many)
        # the default (half this machine's memory) refuses what no machine holds
        skinner.max_call_bytes = default
        huge = np.broadcast_to(pose, (10**12, 4, 4, 4))
        with pytest.raises(LimitError, match=r"max_call_bytes = \d+ \(half this machine"):
            skinner.skin_many(huge)
        assert time.process_time() - start < 1.0
        # a batch that fits still skins
        positions, _ = skinner.skin_many(np.broadcast_to(pose, (5, 4, 4, 4)))
        assert positions.shape == (5, 64, 3)
