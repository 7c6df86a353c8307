"""vkdqs.procedural meshes and poses, and the CPU reference on them (no GPU)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from vkdqs import dq, procedural, reference
from vkdqs.mesh import SkinnedMesh


@pytest.fixture(scope="module")
def candy() -> SkinnedMesh:
    return procedural.candy_wrapper()


def welded_triangles(mesh: SkinnedMesh) -> np.ndarray:
    """Triangles with duplicated (same-position) vertices merged to one id."""
    _, ids = np.unique(np.round(mesh.positions, 5), axis=0, return_inverse=True)
    return ids.reshape(-1)[mesh.indices.astype(np.int64)].reshape(-1, 3)


def test_candy_wrapper_layout(candy):
    rings, segs = 33, 32
    assert candy.vertex_count == rings * segs + 2 * segs + 2
    side = candy.positions[: rings * segs].reshape(rings, segs, 3)
    np.testing.assert_allclose(side[:, :, 0], np.linspace(0, 2, rings)[:, None] + 0 * side[..., 0])
    np.testing.assert_allclose(np.hypot(side[..., 1], side[..., 2]), 0.5, rtol=1e-6)
    radial = side[..., 1:] / 0.5
    np.testing.assert_allclose(
        candy.normals[: rings * segs].reshape(rings, segs, 3)[..., 1:], radial, atol=1e-6
    )
    centre0, centre1 = rings * segs + segs, rings * segs + 2 * segs + 1
    np.testing.assert_allclose(candy.positions[[centre0, centre1]], [[0, 0, 0], [2, 0, 0]])
    np.testing.assert_allclose(candy.normals[rings * segs : centre0 + 1], [[-1, 0, 0]] * (segs + 1))
    np.testing.assert_allclose(candy.normals[centre0 + 1 :], [[1, 0, 0]] * (segs + 1))


def test_candy_wrapper_is_closed_and_consistently_wound(candy):
    tris = welded_triangles(candy)
    assert not np.any((tris[:, 0] == tris[:, 1]) | (tris[:, 1] == tris[:, 2]))
    directed = Counter()
    for a, b, c in tris.tolist():
        directed.update([(a, b), (b, c), (c, a)])
    undirected = Counter()
    for (a, b), count in directed.items():
        undirected[(min(a, b), max(a, b))] += count
    assert set(undirected.values()) == {2}  # every edge shared by exactly two triangles
    assert set(directed.values()) == {1}  # ... traversed once each way: consistent winding


def test_candy_wrapper_volume_and_outward_normals(candy):
    volume = procedural.mesh_volume(candy.positions, candy.indices)
    assert volume > 0
    assert volume == pytest.approx(np.pi * 0.5**2 * 2.0, rel=0.02)
    # the right-hand-rule face normal agrees with the vertex normals
    tri = candy.indices.reshape(-1, 3).astype(np.int64)
    p = candy.positions.astype(np.float64)[tri]
    face = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    assert np.all(np.einsum("ij,ij->i", face, candy.normals[tri].sum(axis=1)) > 0)


def test_candy_wrapper_weights(candy):
    rings, segs = 33, 32
    middle = slice(16 * segs, 17 * segs)
    np.testing.assert_allclose(candy.weights[middle, :2], 0.5)
    assert candy.influence_count == 2 and candy.max_joint == 1
    x = candy.positions[:, 0]
    w1 = np.where(candy.joints == 1, candy.weights, 0).sum(axis=1)
    assert np.all(w1[x < 0.5 - 1e-6] == 0) and np.all(w1[x > 1.5 + 1e-6] == 1)
    order = np.argsort(x[: rings * segs], kind="stable")
    assert np.all(np.diff(w1[: rings * segs][order]) >= 0)  # monotone along x


def test_twist_pose():
    pose = procedural.twist_pose(90.0, bone_count=3)
    assert pose.shape == (3, 4, 4)
    np.testing.assert_array_equal(pose[0], np.eye(4))
    np.testing.assert_allclose(pose[1:, :3, :3] @ [0, 1, 0], [[0, 0, 1]] * 2, atol=1e-15)
    dq.from_matrices(pose)  # rigid


def test_candy_wrapper_twist_dqs_keeps_volume_lbs_collapses(candy):
    pose = procedural.twist_pose(170.0)
    args = (candy.positions, candy.normals, candy.joints, candy.weights)
    rest = procedural.ring_radii(candy.positions)
    np.testing.assert_allclose(rest, 0.5, rtol=1e-6)
    dqs_p, _ = reference.skin_dqs(*args, dq.from_matrices(pose))
    lbs_p, _ = reference.skin_lbs(*args, pose)
    assert procedural.ring_radii(dqs_p).min() >= 0.95 * rest.min()
    assert procedural.ring_radii(lbs_p).min() <= 0.2 * rest.min()
    rest_volume = procedural.mesh_volume(candy.positions, candy.indices)
    assert procedural.mesh_volume(dqs_p, candy.indices) == pytest.approx(rest_volume, rel=0.01)
    assert procedural.mesh_volume(lbs_p, candy.indices) < 0.9 * rest_volume


def test_candy_wrapper_options_validated():
    with pytest.raises(ValueError, match="blend"):
        procedural.candy_wrapper(blend=0.0)
    mesh = procedural.candy_wrapper(rings=5, segments=8, length=4.0, radius=1.0)
    assert mesh.vertex_count == 5 * 8 + 2 * 8 + 2
    np.testing.assert_allclose(procedural.ring_radii(mesh.positions, rings=5, segments=8), 1.0)


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 997, 4096, 65537])
def test_tube_vertex_count_and_weights(n):
    mesh = procedural.tube(n, bone_count=16)
    assert mesh.vertex_count == n
    check_tube(mesh, n, bones=16)


def test_tube_one_million_and_three():
    n = 1000003  # prime, so the last ring is partial
    mesh = procedural.tube(n)
    assert mesh.vertex_count == n
    check_tube(mesh, n, bones=64)
    assert mesh.influence_count == 4


def check_tube(mesh: SkinnedMesh, n: int, bones: int, segs: int = 32) -> None:
    w = mesh.weights.astype(np.float64)
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-6)
    assert np.all(np.diff(w, axis=1) <= 0)  # SkinnedMesh sorted them
    assert mesh.max_joint < bones
    mesh.check_joints(bones)
    tri = mesh.indices.reshape(-1, 3)
    assert tri.size == 0 or tri.max() < n
    full_rings = n // segs
    assert len(tri) >= 2 * segs * max(full_rings - 1, 0)
    assert np.all(np.isfinite(mesh.positions)) and np.all(np.isfinite(mesh.normals))


def test_tube_weights_are_shuffled_before_sorting(monkeypatch):
    seen = {}
    original = procedural.SkinnedMesh

    def spy(positions, normals, joints, weights, indices=None):
        seen["weights"] = np.asarray(weights)
        return original(positions, normals, joints, weights, indices)

    monkeypatch.setattr(procedural, "SkinnedMesh", spy)
    procedural.tube(3200, bone_count=16, seed=5)
    w = seen["weights"]
    assert np.any(np.diff(w, axis=1) > 0)  # not sorted descending on input


def test_tube_weights_are_smooth_along_the_axis():
    mesh = procedural.tube(32 * 500, bone_count=8)
    y = mesh.positions[::32, 1]
    dense = np.zeros((len(y), 8))
    rows = np.repeat(np.arange(len(y)), 4)
    np.add.at(dense, (rows, mesh.joints[::32].ravel()), mesh.weights[::32].ravel())
    assert np.abs(np.diff(dense, axis=0)).max() < 0.05
    assert np.all(np.diff(y) > 0)


def test_bone_chain_pose_is_rigid_connected_and_bends():
    bones, length = 16, 10.0
    pose = procedural.bone_chain_pose(bones, 90.0, length=length)
    assert pose.shape == (bones, 4, 4)
    dq.from_matrices(pose)  # rigid
    seg = length / bones
    heads = np.stack([np.zeros(bones), seg * np.arange(bones), np.zeros(bones), np.ones(bones)], 1)
    # the tail of bone j (head of j+1) maps to the same place under M_j and M_{j+1}
    np.testing.assert_allclose(
        np.einsum("nij,nj->ni", pose[:-1], heads[1:]),
        np.einsum("nij,nj->ni", pose[1:], heads[1:]),
        atol=1e-12,
    )
    np.testing.assert_array_equal(pose[0], np.eye(4))
    last = pose[-1, :3, :3]
    np.testing.assert_allclose(last @ [0, 1, 0], [-1, 0, 0], atol=1e-12)  # 90 degrees in total
    np.testing.assert_allclose(
        procedural.bone_chain_pose(bones, 0.0), np.tile(np.eye(4), (16, 1, 1))
    )


def test_tube_with_bone_chain_pose_dqs_close_to_lbs_for_small_bends():
    mesh = procedural.tube(32 * 100, bone_count=16)
    pose = procedural.bone_chain_pose(16, 30.0)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    a, _ = reference.skin_dqs(*args, dq.from_matrices(pose))
    b, _ = reference.skin_lbs(*args, pose)
    assert np.abs(a - b).max() < 0.01
    assert np.abs(a - mesh.positions).max() > 1.0
