"""Classic Delta Mush's float64 reference (vkdqs.methods.delta_mush.reference): what it keeps, what
it fixes, and its degenerate inputs (CPU only)."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import InputError, dq, procedural, reference
from vkdqs.geometry import vertex_normals
from vkdqs.methods.delta_mush.reference import (
    adjacency,
    delta_mush_bind,
    delta_mush_reference,
    farthest_neighbours,
    frames,
    incident_faces,
    smooth,
)


def bumpy_plane(h: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 41 x 11 grid over x in [0, 4], y in [-0.5, 0.5] with a bump of height ``h`` at
    (2.6, 0); bone 1's weight a smoothstep over x in [1.5, 2.5]."""
    nx, ny = 41, 11
    x, y = np.meshgrid(np.linspace(0, 4, nx), np.linspace(-0.5, 0.5, ny), indexing="ij")
    z = h * np.exp(-((x - 2.6) ** 2 + y**2) / 0.15**2)
    p = np.stack([x, y, z], -1).reshape(-1, 3)
    i = (np.arange(nx - 1)[:, None] * ny + np.arange(ny - 1)[None]).ravel()
    tri = np.stack([i, i + ny, i + 1, i + 1, i + ny, i + ny + 1], -1).reshape(-1, 3)
    t = np.clip(p[:, 0] - 1.5, 0, 1)
    return p, tri, t * t * (3 - 2 * t)


def lbs(positions, joints, weights, pose):
    normals = np.tile([0.0, 0.0, 1.0], (len(positions), 1))
    return reference.skin_lbs(positions, normals, joints, weights, pose)[0]


def rigid(rng):
    m = dq.to_matrices(dq.random_rigid(1, rng, max_angle=np.pi, max_translation=2.0))[0]
    return m[:3, :3], m[:3, 3]


def test_adjacency_is_the_unique_undirected_edges():
    offsets, nb = adjacency(np.array([[0, 1, 2], [2, 1, 3], [4, 4, 0]]), 6)
    rows = [sorted(nb[offsets[i] : offsets[i + 1]].tolist()) for i in range(6)]
    assert rows == [[1, 2, 4], [0, 2, 3], [0, 1, 3], [1, 2], [0], []]
    assert all(r == sorted(r) for r in rows)


def test_incident_faces_sum_to_the_area_weighted_normals():
    mesh = procedural.candy_wrapper(rings=9, segments=12)
    p = mesh.positions.astype(np.float64)
    offsets, corners = incident_faces(mesh.indices, mesh.vertex_count)
    owner = np.repeat(np.arange(mesh.vertex_count), np.diff(offsets))
    face = np.cross(p[corners[:, 0]] - p[owner], p[corners[:, 1]] - p[owner])
    acc = np.stack([np.bincount(owner, face[:, c], mesh.vertex_count) for c in range(3)], 1)
    want = vertex_normals(p, mesh.indices, weighting="area")
    np.testing.assert_allclose(acc / np.linalg.norm(acc, axis=1, keepdims=True), want, atol=1e-12)


def test_the_frame_neighbour_is_the_farthest_first_of_equals():
    p = np.array([[0.0, 0, 0], [1, 0, 0], [0, 3, 0], [-3, 0, 0], [9, 9, 9]])
    offsets, nb = adjacency(np.array([[0, 1, 2], [0, 2, 3]]), 5)
    got = farthest_neighbours(p, offsets, nb)
    # vertex 0: 2 and 3 both 3 away (2 first); 1: 2 (sqrt 10); 3: 2 (sqrt 18); 4: itself
    np.testing.assert_array_equal(got, [2, 2, 3, 2, 4])


def test_smoothing_is_the_umbrella_step():
    p = np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0], [5, 5, 5]])
    offsets, nb = adjacency(np.array([[0, 1, 2]]), 4)
    s = smooth(p, offsets, nb, 1, 0.5)
    np.testing.assert_allclose(s[0], 0.5 * p[0] + 0.5 * (p[1] + p[2]) / 2)
    np.testing.assert_array_equal(s[3], p[3])  # on no triangle: stays
    np.testing.assert_array_equal(smooth(p, offsets, nb, 0, 0.5), p)


@pytest.mark.parametrize("iterations", [1, 10, 25])
def test_the_rest_pose_gives_the_rest_mesh_back(iterations):
    mesh = procedural.candy_wrapper(rings=17, segments=16)
    bind = delta_mush_bind(mesh.positions, mesh.indices, iterations=iterations)
    got, normals = delta_mush_reference(bind, mesh.positions)
    np.testing.assert_allclose(got, mesh.positions, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-12)
    assert np.abs(bind.deltas).max() > 1e-3  # the smoothing moved the rest mesh


def test_zero_iterations_gives_the_skinned_mesh():
    mesh = procedural.candy_wrapper(rings=17, segments=16)
    skinned = lbs(mesh.positions, mesh.joints, mesh.weights, procedural.twist_pose(120))
    bind = delta_mush_bind(mesh.positions, mesh.indices, iterations=0)
    np.testing.assert_allclose(delta_mush_reference(bind, skinned)[0], skinned, atol=1e-12)


def test_a_rigid_motion_moves_the_result_rigidly():
    rng = np.random.default_rng(21)
    mesh = procedural.candy_wrapper(rings=17, segments=16)
    skinned = lbs(mesh.positions, mesh.joints, mesh.weights, procedural.bend_pose(70))
    bind = delta_mush_bind(mesh.positions, mesh.indices)
    p, n = delta_mush_reference(bind, skinned)
    r, t = rigid(rng)
    moved_p, moved_n = delta_mush_reference(bind, skinned @ r.T + t)
    np.testing.assert_allclose(moved_p, p @ r.T + t, atol=1e-10)
    np.testing.assert_allclose(moved_n, n @ r.T, atol=1e-10)


def test_it_reduces_the_lbs_candy_wrapper_collapse():
    rings, segments = 17, 16
    mesh = procedural.candy_wrapper(rings=rings, segments=segments)
    skinned = lbs(mesh.positions, mesh.joints, mesh.weights, procedural.twist_pose(170))
    got, normals = delta_mush_reference(delta_mush_bind(mesh.positions, mesh.indices), skinned)
    r_lbs = procedural.ring_radii(skinned, rings=rings, segments=segments).min()
    r_dm = procedural.ring_radii(got, rings=rings, segments=segments).min()
    assert r_lbs < 0.1 * 0.5  # LBS collapses to under a tenth of the radius ...
    assert r_dm > 0.4 * 0.5 and r_dm > 4 * r_lbs  # ... Delta Mush keeps over 40 %
    assert np.isfinite(normals).all()


def test_a_detail_survives_a_bend():
    h = 0.1
    p, tri, w1 = bumpy_plane(h)
    joints, weights = np.tile([0, 1], (len(p), 1)), np.stack([1 - w1, w1], 1)
    a = np.radians(60)
    rot = np.array([[np.cos(a), 0, -np.sin(a)], [0, 1, 0], [np.sin(a), 0, np.cos(a)]])
    pose = np.tile(np.eye(4), (2, 1, 1))
    pose[1, :3, :3], pose[1, :3, 3] = rot, np.array([2.0, 0, 0]) - rot @ [2.0, 0, 0]
    skinned = lbs(p, joints, weights, pose)
    bind = delta_mush_bind(p, tri, iterations=10)
    got, _ = delta_mush_reference(bind, skinned)
    apex = int(np.argmax(p[:, 2]))
    base, up = rot @ [p[apex, 0], p[apex, 1], 0.0] + pose[1, :3, 3], rot @ [0, 0, 1.0]
    smoothed = smooth(skinned, bind.offsets, bind.neighbours, 10, 0.5)
    assert (smoothed[apex] - base) @ up < 0.3 * h  # smoothing alone flattens the bump ...
    assert abs((got[apex] - base) @ up - h) < 0.05 * h  # ... the deltas bring it back


def test_degenerate_inputs_give_no_nans():
    p = np.array(
        [
            [0.0, 0, 0],
            [1, 0, 0],
            [0, 1, 0],
            [3, 3, 3],  # isolated
            [2, 0, 0],
            [2, 0, 0],
            [2, 0, 0],  # a collapsed triangle
            [0, -1, 0],  # one neighbour (a triangle repeating a vertex)
            [5, 0, 0],
            [6, 0, 0],
            [7, 0, 0],  # a zero-area (collinear) triangle
        ]
    )
    faces = np.array([[0, 1, 2], [4, 5, 6], [7, 7, 0], [8, 9, 10]])
    bind = delta_mush_bind(p, faces, iterations=5)
    assert np.isfinite(bind.deltas).all()
    rng = np.random.default_rng(5)
    for skinned in (p, p + rng.normal(scale=0.1, size=p.shape), np.zeros_like(p)):
        got, normals = delta_mush_reference(bind, skinned)
        assert np.isfinite(got).all() and np.isfinite(normals).all()
        np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(delta_mush_reference(bind, p)[0], p, atol=1e-12)
    np.testing.assert_array_equal(delta_mush_reference(bind, p + 1.0)[0][3], p[3] + 1.0)


def test_a_mesh_without_triangles_gives_the_skinned_mesh():
    p = np.random.default_rng(2).normal(size=(5, 3))
    bind = delta_mush_bind(p, np.zeros((0, 3), int))
    np.testing.assert_array_equal(bind.frame_neighbour, np.arange(5))
    got, normals = delta_mush_reference(bind, p + 2.0)
    np.testing.assert_allclose(got, p + 2.0, atol=1e-12)
    np.testing.assert_array_equal(normals, np.tile([0.0, 0.0, 1.0], (5, 1)))


def test_a_neighbour_along_the_normal_falls_back_to_an_axis():
    p = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    f = frames(p, np.array([[0, 1, 2]]), np.array([3, 0, 0, 3]))
    np.testing.assert_allclose(f[0], np.eye(3), atol=1e-15)  # t = x, the axis least along n
    np.testing.assert_allclose(
        np.einsum("nji,njk->nik", f, f), np.tile(np.eye(3), (4, 1, 1)), atol=1e-12
    )
    np.testing.assert_allclose(f[3][:, 2], [0, 0, 1])  # vertex 3 is on no triangle


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"iterations": -1}, "iterations"),
        ({"iterations": 1.5}, "iterations"),
        ({"step": 0.0}, "step"),
        ({"step": 1.5}, "step"),
    ],
)
def test_bad_parameters_are_refused(kwargs, match):
    mesh = procedural.candy_wrapper(rings=3, segments=3)
    with pytest.raises(InputError, match=match):
        delta_mush_bind(mesh.positions, mesh.indices, **kwargs)


def test_bad_meshes_are_refused():
    p = np.zeros((3, 3))
    with pytest.raises(InputError, match="faces"):
        delta_mush_bind(p, np.array([[0, 1, 3]]))
    with pytest.raises(InputError, match="positions"):
        delta_mush_bind(np.full((3, 3), np.nan), np.array([[0, 1, 2]]))
    bind = delta_mush_bind(p, np.array([[0, 1, 2]]))
    with pytest.raises(InputError, match="skinned_positions"):
        delta_mush_reference(bind, np.zeros((4, 3)))


def test_a_neighbourhood_the_smoothing_collapses_is_not_mushed():
    """A lone triangle shrinks to 1e-6 of its size under 10 steps of 0.5: no float32 frame
    holds that, so its vertices are not mushed (they keep the skinned position), on the
    reference as on the GPU (tests/test_real_rigs.py's one-triangle part); a mesh whose
    neighbourhoods keep their size (the candy wrapper) has no such vertex."""
    from vkdqs import procedural
    from vkdqs.methods.delta_mush.reference import COLLAPSED, delta_mush_bind, delta_mush_reference

    tri = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    bind = delta_mush_bind(tri, np.array([[0, 1, 2]]))
    assert (np.diff(bind.offsets) == 0).all() and not bind.deltas.any()
    moved = tri @ np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]) + 3.0
    out, _ = delta_mush_reference(bind, moved)
    np.testing.assert_array_equal(out, moved)
    # one step less shrinking (a single iteration: 0.25 of the size) is mushed as before
    bind1 = delta_mush_bind(tri, np.array([[0, 1, 2]]), iterations=1)
    assert (np.diff(bind1.offsets) == 2).all() and 0.25 > COLLAPSED
    mesh = procedural.candy_wrapper()
    assert (np.diff(delta_mush_bind(mesh.positions, mesh.indices).offsets) > 0).all()
