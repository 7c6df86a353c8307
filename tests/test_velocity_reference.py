"""Velocity skinning's float64 reference (vkdqs.methods.velocity.reference): what the paper's
effects promise, on the candy wrapper (a closed capsule of two bones, bone 1 the child)."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import InputError
from vkdqs.methods.velocity.reference import (
    chains,
    joint_motion,
    velocity_deform,
    velocity_rig,
)
from vkdqs.procedural import candy_wrapper, mesh_volume
from vkdqs.reference import skin_lbs

PARENTS = [-1, 0]


def _rest():
    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[1, 0, 3] = 1.0  # the joint at (length / 2, 0, 0)
    return rest


def _move(v):
    m = np.eye(4)
    m[:3, 3] = v
    return m


def _turn(angle, axis=2, about=(0.0, 0.0, 0.0)):
    m = np.eye(4)
    i, j = [k for k in range(3) if k != axis]
    c, s = np.cos(angle), np.sin(angle)
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return _move(about) @ m @ _move(-np.asarray(about))


def _skin(mesh, bones):
    return skin_lbs(mesh.positions, mesh.normals, mesh.joints, mesh.weights, bones)[0]


def _deform(rig, mesh, bones, previous, dt):
    motion = joint_motion(rig, bones, previous, dt)
    return velocity_deform(rig, _skin(mesh, bones), mesh.joints, mesh.weights, motion)


@pytest.fixture(scope="module")
def mesh():
    return candy_wrapper()


def test_no_motion_is_the_base_method_exactly(mesh):
    rig = velocity_rig(mesh, PARENTS, _rest(), floppy=0.3, squashy=0.2)
    bones = np.stack([_turn(0.4), _turn(0.9, 0, (1.0, 0, 0))])
    base = _skin(mesh, bones)
    for previous in (None, bones):
        np.testing.assert_array_equal(_deform(rig, mesh, bones, previous, 0.02), base)


def test_a_uniform_translation_lags_every_vertex_by_floppy_times_velocity(mesh):
    """The whole skeleton moving at v: the root's relative motion is v, the child's none, so
    every vertex (weights summing to 1) lags by exactly -floppy v."""
    rig = velocity_rig(mesh, PARENTS, _rest(), floppy=0.25, squashy=0.0)
    v, dt = np.array([2.0, -1.0, 0.5]), 1 / 60
    bent = np.stack([np.eye(4), _turn(0.6, 2, (1.0, 0, 0))])
    now = np.stack([_move(v * dt) @ b for b in bent])
    motion = joint_motion(rig, now, bent, dt)
    np.testing.assert_allclose(motion.linear[0], v, rtol=1e-12)
    np.testing.assert_allclose(motion.linear[1], 0, atol=1e-12)
    np.testing.assert_allclose(motion.angular, 0, atol=1e-12)
    got = _deform(rig, mesh, now, bent, dt)
    np.testing.assert_allclose(
        got - _skin(mesh, now), np.broadcast_to(-0.25 * v, got.shape), atol=1e-12
    )


def test_the_linear_squash_keeps_the_capsules_volume_and_stretches_along_the_motion(mesh):
    rig = velocity_rig(mesh, PARENTS, _rest(), floppy=0.0, squashy=0.1)
    v, dt = np.array([3.0, 0.0, 0.0]), 0.01
    rest = np.tile(np.eye(4), (2, 1, 1))
    now = np.stack([_move(v * dt)] * 2)
    base, got = _skin(mesh, now), _deform(rig, mesh, now, rest, dt)
    volume = mesh_volume(base, mesh.indices)
    assert mesh_volume(got, mesh.indices) == pytest.approx(volume, rel=1e-12)
    s = 0.1 * 3.0 / rig.scale  # speed in rig lengths a second
    assert rig.scale == mesh.extent
    np.testing.assert_allclose(np.ptp(got[:, 0]), (1 + s) * np.ptp(base[:, 0]), rtol=1e-12)
    np.testing.assert_allclose(np.ptp(got[:, 1]), np.ptp(base[:, 1]) / np.sqrt(1 + s), rtol=1e-12)


def test_the_squash_of_a_bend_keeps_the_volume_to_first_order(mesh):
    """Where the two bones blend, each joint's squash has determinant 1 but the blend does
    not: the volume changes at second order in the strength (halving it quarters the change),
    while the shape changes at first order."""
    rest = np.tile(np.eye(4), (2, 1, 1))
    now = np.stack([np.eye(4), _turn(0.03, 2, (1.0, 0, 0))])
    base = _skin(mesh, now)
    volume = mesh_volume(base, mesh.indices)
    change, moved = [], []
    for q in (0.2, 0.1, 0.05):
        rig = velocity_rig(mesh, PARENTS, _rest(), floppy=0.0, squashy=q)
        got = _deform(rig, mesh, now, rest, 0.01)
        change.append(mesh_volume(got, mesh.indices) / volume - 1)
        moved.append(np.abs(got - base).max())
    assert moved[0] / moved[1] == pytest.approx(2, rel=0.05)
    assert moved[1] / moved[2] == pytest.approx(2, rel=0.05)
    assert 3.3 < change[0] / change[1] < 4.5 and 3.3 < change[1] / change[2] < 4.5
    assert abs(change[-1]) < 0.05 * moved[-1] / mesh.extent


def test_a_turning_bone_lags_more_far_from_its_axis(mesh):
    """The child turning about z through its joint: its floppy vertices turn back about that
    axis, by an angle that grows with their distance to it (at most max_angle)."""
    rig = velocity_rig(mesh, PARENTS, _rest(), floppy=0.05, squashy=0.0)
    rest = np.tile(np.eye(4), (2, 1, 1))
    now = np.stack([np.eye(4), _turn(0.02, 2, (1.0, 0, 0))])
    base, got = _skin(mesh, now), _deform(rig, mesh, now, rest, 0.01)
    motion = joint_motion(rig, now, rest, 0.01)
    np.testing.assert_allclose(motion.angular[1], [0, 0, 2.0], rtol=1e-9)
    tip = np.flatnonzero(mesh.weights[:, 0] > 0.999)  # the child's side: x > 1 + band
    tip = tip[np.flatnonzero(np.asarray(mesh.joints)[tip, 0] == 1)]
    assert len(tip) > 50
    lag = np.linalg.norm(got[tip] - base[tip], axis=1)
    reach = np.linalg.norm(base[tip, :2] - motion.centers[1, :2], axis=1)
    # a rotation by angle f * (2 rad/s) * r / L of a point at distance r: chord 2 r sin(angle / 2)
    want = 2 * reach * np.sin(0.05 * 2.0 * reach / rig.scale / 2)
    np.testing.assert_allclose(lag, want, rtol=1e-9)
    # turned against the motion: the tip (moving +y) lags towards -y
    far = tip[np.argmax(reach)]
    assert got[far, 1] < base[far, 1]


def test_bone_weights_of_zero_turn_it_off_where_asked(mesh):
    rest = np.tile(np.eye(4), (2, 1, 1))
    v, dt = np.array([0.0, 2.0, 0.0]), 0.01
    now = np.stack([_move(v * dt) @ np.eye(4), _move(v * dt) @ _turn(0.02, 2, (1.0, 0, 0))])
    rig = velocity_rig(
        mesh, PARENTS, _rest(), floppy=0.2, squashy=0.1, bone_floppy=[1, 0], bone_squashy=[1, 0]
    )
    got = _deform(rig, mesh, now, rest, dt)
    base = _skin(mesh, now)
    joints, weights = np.asarray(mesh.joints), np.asarray(mesh.weights)
    child_only = np.all((joints == 1) | (weights == 0), axis=1)
    parent_only = np.all((joints == 0) | (weights == 0), axis=1)
    assert child_only.sum() > 100 and parent_only.sum() > 100
    np.testing.assert_array_equal(got[child_only], base[child_only])
    assert np.linalg.norm(got[parent_only] - base[parent_only], axis=1).min() > 0.5 * 0.2 * 2.0
    # per vertex too
    rig = velocity_rig(
        mesh,
        PARENTS,
        _rest(),
        floppy=0.2,
        squashy=0.1,
        vertex_floppy=0.0,
        vertex_squashy=np.where(parent_only, 0.0, 1.0),
    )
    got = _deform(rig, mesh, now, rest, dt)
    np.testing.assert_array_equal(got[parent_only], base[parent_only])


def test_chains_and_refusals(mesh):
    np.testing.assert_array_equal(
        chains([-1, 0, 1, 0]), [[0, -1, -1], [1, 0, -1], [2, 1, 0], [3, 0, -1]]
    )
    with pytest.raises(InputError, match="forest"):
        chains([1, 0])
    with pytest.raises(InputError, match="parents"):
        chains([-1, 5])
    with pytest.raises(InputError, match="rest_matrices"):
        velocity_rig(mesh, PARENTS, np.eye(4))
    with pytest.raises(InputError, match="floppy"):
        velocity_rig(mesh, PARENTS, _rest(), floppy=-1)
    with pytest.raises(InputError, match="bone_squashy"):
        velocity_rig(mesh, PARENTS, _rest(), bone_squashy=[1, 2, 3])
    with pytest.raises(InputError, match="parents has 1"):
        velocity_rig(mesh, [-1], np.eye(4)[None])
    rig = velocity_rig(mesh, PARENTS, _rest())
    bones = np.tile(np.eye(4), (2, 1, 1))
    with pytest.raises(InputError, match="dt"):
        joint_motion(rig, bones, bones, 0.0)
    with pytest.raises(InputError, match="previous"):
        joint_motion(rig, bones, bones[None], 0.1)


def test_the_same_motion_in_other_units_deforms_alike(mesh):
    """A character in centimetres moving as one in metres: every offset is 100 times larger,
    so the same strengths suit both (the rig's length is the rest mesh's extent)."""
    from vkdqs import SkinnedMesh

    big = SkinnedMesh(
        100 * mesh.positions, mesh.normals, mesh.joints, mesh.weights, indices=mesh.indices
    )
    rest = _rest()
    now = np.stack([_move([0.03, 0.01, 0.0]), _turn(0.04, 2, (1.0, 0, 0))])
    before = np.tile(np.eye(4), (2, 1, 1))
    out = []
    for m, k in ((mesh, 1.0), (big, 100.0)):
        scaled = [x.copy() for x in (rest, now, before)]
        for x in scaled:
            x[:, :3, 3] *= k
        rig = velocity_rig(m, PARENTS, scaled[0], floppy=0.2, squashy=0.3)
        assert rig.scale == pytest.approx(k * mesh.extent)
        out.append(_deform(rig, m, scaled[1], scaled[2], 0.01) - _skin(m, scaled[1]))
    assert np.abs(out[0]).max() > 1e-3 * mesh.extent
    # SkinnedMesh keeps float32 positions: 100 x a position rounds (6e-8 relative), no worse
    np.testing.assert_allclose(out[1], 100 * out[0], rtol=0, atol=1e-7 * 100 * mesh.extent)


def test_weights_scale_the_displacement(mesh):
    """A vertex or bone weight of 1/2 halves what that effect moves (the effect is linear in
    its weights)."""
    rest = np.tile(np.eye(4), (2, 1, 1))
    v, dt = np.array([0.5, 2.0, 0.0]), 0.01
    now = np.stack([_move(v * dt) @ _turn(0.01), _move(v * dt) @ _turn(0.03, 2, (1.0, 0, 0))])
    base = _skin(mesh, now)
    full, half = (
        _deform(
            velocity_rig(mesh, PARENTS, _rest(), floppy=0.2, squashy=0.2, **kw), mesh, now, rest, dt
        )
        - base
        for kw in ({}, {"vertex_floppy": 0.5, "vertex_squashy": 0.5})
    )
    assert np.abs(full).max() > 0.1
    np.testing.assert_allclose(half, full / 2, rtol=0, atol=1e-12)
    one, other = (
        _deform(
            velocity_rig(mesh, PARENTS, _rest(), floppy=0.2, squashy=0.0, **kw), mesh, now, rest, dt
        )
        - base
        for kw in ({}, {"bone_floppy": [0.5, 0.5]})
    )
    np.testing.assert_allclose(other, one / 2, rtol=0, atol=1e-12)


def _random_motion(seed, parents, n=400):
    from vkdqs import dq

    rng = np.random.default_rng(seed)
    b = len(parents)
    mesh = candy_wrapper()
    rest = dq.to_matrices(dq.random_rigid(b, rng))
    rig = velocity_rig(mesh, parents, rest, squashy=0.3)
    now = dq.to_matrices(dq.random_rigid(b, rng))
    step = dq.to_matrices(dq.random_rigid(b, rng, max_angle=0.2, max_translation=0.1))
    return rig, joint_motion(rig, now, step @ now, 0.02), rng.normal(size=(n, 3))


def test_the_squash_of_a_chain_is_the_sum_of_its_joints_affine_maps():
    """What the GPU pass folds on the host: squash_maps is each joint's squashy part as an
    affine map, and chain_sums sums them over each bone's chain (float64, to rounding)."""
    from vkdqs.methods.velocity.reference import _joint_terms, chain_sums, squash_maps

    parents = np.array([-1, 0, 1, 1, -1, 4, 5, 2])
    rig, motion, points = _random_motion(3, parents)
    maps = squash_maps(rig, motion)
    chain = chains(parents)
    summed = chain_sums(chain, maps, axis=-3)
    for bone in range(len(parents)):
        want = np.zeros_like(points)
        for j in chain[bone][chain[bone] >= 0]:
            joint = np.full(len(points), j)
            _, squashy = _joint_terms(rig, motion, points, joint)
            got = points @ maps[j, :, :3].T + maps[j, :, 3]
            np.testing.assert_allclose(got, squashy, rtol=0, atol=1e-12 * np.abs(squashy).max())
            want += squashy
        assert np.abs(want).max() > 1e-3
        got = points @ summed[bone, :, :3].T + summed[bone, :, 3]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(
        chain_sums(chain, motion.linear, axis=-2)[7],
        motion.linear[[7, 2, 1, 0]].sum(axis=0),
        rtol=1e-14,
    )


@pytest.mark.parametrize("seed", range(4))
def test_subtree_ranges_tell_ancestors(seed):
    from vkdqs.methods.velocity.reference import subtree_ranges

    rng = np.random.default_rng(seed)
    b = 40
    parents = np.array([-1] + [int(rng.integers(-1, j)) for j in range(1, b)])
    order = rng.permutation(b)  # parents after children too
    inverse = np.argsort(order)
    parents = np.where(parents[order] >= 0, inverse[np.maximum(parents[order], 0)], -1)
    chain = chains(parents)
    ranges = subtree_ranges(parents)
    above = np.zeros((b, b), bool)  # above[j, k]: j is k or an ancestor of k
    for k in range(b):
        above[chain[k][chain[k] >= 0], k] = True
    first, end = ranges[:, 0], ranges[:, 1]
    np.testing.assert_array_equal((first[:, None] <= first) & (first < end[:, None]), above)
    assert sorted(first) == list(range(b))
