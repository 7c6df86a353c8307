"""DeltaMushSkinner: classic Delta Mush's GPU passes after skinning, against the float64
reference (vkdqs.methods.delta_mush.reference) applied to the float64 skinning of the same
method."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import DeltaMushSkinner, InputError, LimitError, SkinnedMesh, methods, procedural
from vkdqs.engine.skinner import Skinner
from vkdqs.errors import ObjectDestroyedError
from vkdqs.geometry import vertex_normals
from vkdqs.methods.delta_mush.gpu import fan_order
from vkdqs.methods.delta_mush.reference import delta_mush_bind, delta_mush_reference, incident_faces

RINGS, SEGMENTS = 17, 16  # 306 vertices: a partial last workgroup of 50


def candy() -> SkinnedMesh:
    return procedural.candy_wrapper(rings=RINGS, segments=SEGMENTS)


def poses() -> np.ndarray:
    return np.stack(
        [procedural.twist_pose(170), procedural.bend_pose(75), np.tile(np.eye(4), (2, 1, 1))]
    )


def want(skinner: DeltaMushSkinner, bones, morph_weights=None):
    base = methods.get(skinner.method).reference(skinner.mesh, bones, morph_weights=morph_weights)
    return delta_mush_reference(skinner.bind, base[0])


def assert_matches(mesh, got, expected):
    """Positions within 1e-5 of the extent of the reference's. Normals within 1e-5 of the
    float64 area-weighted normals of the GPU's own positions (the normal pass alone), and within
    1e-4 of the reference's: a normal moves by about the position error over the length of the
    vertex's edges (1e-6 over 0.1 on the tube)."""
    (p, n), (wp, wn) = got, expected
    assert p.dtype == n.dtype == np.float32
    assert np.isfinite(p).all() and np.isfinite(n).all()
    np.testing.assert_allclose(p, wp, rtol=0, atol=1e-5 * mesh.extent)
    own = vertex_normals(p, mesh.indices, weighting="area")
    np.testing.assert_allclose(n, own, rtol=0, atol=1e-5)
    np.testing.assert_allclose(n, wn, rtol=0, atol=1e-4)


@pytest.mark.parametrize("iterations", [0, 1, 10])
@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_gpu_matches_the_reference(device, method, iterations):
    mesh = candy()
    assert mesh.vertex_count % 64 != 0
    with DeltaMushSkinner(device, mesh, bone_count=2, method=method, iterations=iterations) as s:
        for bones in poses():
            assert_matches(mesh, s.skin(bones), want(s, bones))
        p, n = s.skin_many(poses())  # the cap centres' 16 neighbours: overflow dispatches
        for k, bones in enumerate(poses()):
            assert_matches(mesh, (p[k], n[k]), want(s, bones))


def test_the_gpu_removes_the_lbs_collapse(device):
    mesh, twist = candy(), procedural.twist_pose(170)
    with (
        DeltaMushSkinner(device, mesh, bone_count=2) as dm,
        Skinner(device, mesh, bone_count=2, method="lbs") as lbs,
    ):
        r_dm = procedural.ring_radii(dm.skin(twist)[0], rings=RINGS, segments=SEGMENTS).min()
        r_lbs = procedural.ring_radii(lbs.skin(twist)[0], rings=RINGS, segments=SEGMENTS).min()
    assert r_dm > 4 * r_lbs


def test_skin_many_matches_skin_and_the_reference(device):
    mesh = procedural.tube(3000, bone_count=12, influences=4, seed=3)
    bones = np.stack([procedural.bone_chain_pose(12, a) for a in (0, 40, 90, 160, -120)])
    with DeltaMushSkinner(device, mesh, bone_count=12, method="dqs", iterations=10) as s:
        p, n = s.skin_many(bones)
        assert p.shape == n.shape == (5, mesh.vertex_count, 3)
        for k in range(5):
            assert_matches(mesh, (p[k], n[k]), want(s, bones[k]))
        one = s.skin(bones[3])
        np.testing.assert_array_equal(one[0], p[3])
        np.testing.assert_array_equal(one[1], n[3])
        s.max_batch_bytes = 2 * s.pose_bytes  # chunks of 2 poses, 1 in the last
        chunked = s.skin_many(bones)
        np.testing.assert_array_equal(chunked[0], p)
        np.testing.assert_array_equal(chunked[1], n)


def test_morph_targets_are_applied_before_the_mush(device):
    rng = np.random.default_rng(7)
    m = candy()
    dp = np.zeros((2, m.vertex_count, 3))
    dp[0, : RINGS * SEGMENTS : 3] = rng.normal(
        scale=0.05, size=(len(dp[0, : RINGS * SEGMENTS : 3]), 3)
    )
    dp[1] = rng.normal(scale=0.02, size=(m.vertex_count, 3))
    mesh = SkinnedMesh(m.positions, m.normals, m.joints, m.weights, m.indices, morph_positions=dp)
    w = np.array([0.8, -0.4], np.float32)
    bones = procedural.bend_pose(50)
    with DeltaMushSkinner(device, mesh, bone_count=2, method="lbs") as s:
        got = s.skin(bones, w)
        assert_matches(mesh, got, want(s, bones, w))
        assert np.abs(got[0] - s.skin(bones)[0]).max() > 1e-3  # the morph did something
        many = s.skin_many(np.stack([bones, bones]), np.stack([w, 0 * w]))
        np.testing.assert_array_equal(many[0][0], got[0])


def test_isolated_vertices_keep_their_skinned_position(device):
    m = candy()
    extra = 5
    positions = np.concatenate([m.positions, [[1.0, 2.0, 0.0]] * extra])
    normals = np.concatenate([m.normals, [[0.0, 1.0, 0.0]] * extra])
    joints = np.concatenate([m.joints, [[1, 0, 0, 0]] * extra])
    weights = np.concatenate([m.weights, [[0.7, 0.3, 0, 0]] * extra])
    mesh = SkinnedMesh(positions, normals, joints, weights, m.indices)
    bones = procedural.twist_pose(90)
    with DeltaMushSkinner(device, mesh, bone_count=2, method="lbs") as s:
        got = s.skin(bones)
        assert_matches(mesh, got, want(s, bones))
    skinned = methods.get("lbs").reference(mesh, bones)[0]
    np.testing.assert_allclose(got[0][-extra:], skinned[-extra:], atol=1e-6)
    np.testing.assert_array_equal(got[1][-extra:], np.tile([0.0, 0.0, 1.0], (extra, 1)))


def test_degenerate_triangles_give_no_nans(device):
    p = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 0, 0], [2, 0, 0], [2, 0, 0], [0, -1, 0]])
    faces = np.array([[0, 1, 2], [3, 4, 5], [6, 6, 0]])
    n = len(p)
    mesh = SkinnedMesh(
        p, np.tile([0.0, 0, 1], (n, 1)), np.zeros((n, 1), int), np.ones((n, 1)), faces
    )
    bones = np.eye(4)[None].copy()
    bones[0, :3, 3] = (0.5, -1.0, 2.0)
    with DeltaMushSkinner(device, mesh, bone_count=1, iterations=3) as s:
        assert_matches(mesh, s.skin(bones), want(s, bones))


def test_boxes_are_those_of_the_delta_mush_positions(device):
    mesh = candy()
    bones = poses()
    with DeltaMushSkinner(device, mesh, bone_count=2) as s:
        p, _, box = s.skin(bones[0], bounds=True)
        np.testing.assert_array_equal(box, [p.min(0), p.max(0)])
        boxes = s.bounds_many(bones)
        many = s.skin_many(bones)[0]
        np.testing.assert_array_equal(boxes[:, 0], many.min(axis=1))
        np.testing.assert_array_equal(boxes[:, 1], many.max(axis=1))
        np.testing.assert_array_equal(s.bounds(bones[1]), boxes[1])


def test_close_and_bad_input(device):
    mesh = candy()
    s = DeltaMushSkinner(device, mesh, bone_count=2, iterations=2)
    assert "DeltaMushSkinner lbs 2 iterations" in repr(s)
    s.close()
    s.close()
    with pytest.raises(ObjectDestroyedError):
        s.skin(procedural.twist_pose(10))
    assert "closed" in repr(s)
    bare = SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with pytest.raises(InputError, match="triangles"):
        DeltaMushSkinner(device, bare, bone_count=2)
    with pytest.raises(InputError, match="iterations"):
        DeltaMushSkinner(device, mesh, bone_count=2, iterations=-1)
    with pytest.raises(InputError, match="method"):
        DeltaMushSkinner(device, mesh, bone_count=2, method="nope")


def wheel(spokes: int, *, flip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A bumpy disc: a centre and two rings of ``spokes`` vertices (the inner ring's vertices are
    the centres of closed fans of 6 triangles; the centre's has ``spokes``); ``flip`` winds one
    triangle the other way."""
    a = 2 * np.pi * np.arange(spokes) / spokes
    ring = lambda r, z: np.stack([r * np.cos(a), r * np.sin(a), np.full(spokes, z)], 1)  # noqa: E731
    p = np.concatenate([[[0.0, 0.0, 0.3]], ring(1.0, 0.1), ring(2.0, -0.2)])
    i = np.arange(spokes)
    j = (i + 1) % spokes
    inner, outer = 1 + i, 1 + spokes + i
    faces = np.concatenate(
        [
            np.stack([np.zeros(spokes, int), inner, 1 + j], 1),
            np.stack([inner, outer, 1 + spokes + j], 1),
            np.stack([inner, 1 + spokes + j, 1 + j], 1),
        ]
    )
    if flip:
        faces[1] = faces[1, ::-1]
    return p, faces


def test_fans_are_found_and_their_rings_give_the_area_normals():
    p, faces = wheel(9)
    bind = delta_mush_bind(p, faces, iterations=1)
    co, corners = incident_faces(bind.faces, len(p))
    fn = bind.frame_neighbour
    is_fan, ordered = fan_order(bind.offsets, bind.neighbours, co, corners, fn)
    assert is_fan.tolist() == [True] * 10 + [False] * 9  # the outer ring is the boundary
    for v in range(len(p)):
        r = ordered[bind.offsets[v] : bind.offsets[v + 1]]
        sorted_ = bind.neighbours[bind.offsets[v] : bind.offsets[v + 1]]
        assert sorted(r) == list(sorted_) and r[0] == fn[v]  # the frame neighbour first
        if not is_fan[v]:
            np.testing.assert_array_equal(sorted(r[1:]), np.setdiff1d(sorted_, [fn[v]]))
            continue
        q = p[r] - p[v]
        acc = np.cross(q, np.roll(q, -1, axis=0)).sum(axis=0)
        want = vertex_normals(p, faces.reshape(-1), weighting="area")[v]
        np.testing.assert_allclose(acc / np.linalg.norm(acc), want, atol=1e-12)
    flipped = delta_mush_bind(p, wheel(9, flip=True)[1], iterations=1)
    co, corners = incident_faces(flipped.faces, len(p))
    args = (flipped.offsets, flipped.neighbours, co, corners, flipped.frame_neighbour)
    is_fan, _ = fan_order(*args)
    assert not is_fan[[0, 2, 3]].any() and is_fan[[1, 4, 5]].all()  # (0, 2, 3) flipped


@pytest.mark.parametrize(("spokes", "flip"), [(7, False), (8, False), (12, True)])
def test_fans_overflow_and_wrong_windings_match_the_reference(device, spokes, flip):
    """A centre of 7 neighbours (the two fixed texels), of 8 and 12 (overflow texels), and a
    triangle wound the other way (its vertices' normals from the corner lists)."""
    p, faces = wheel(spokes, flip=flip)
    n = len(p)
    joints = np.zeros((n, 2), int)
    joints[:, 1] = 1
    w1 = np.clip(p[:, 0] / 2 + 0.5, 0, 1)
    mesh = SkinnedMesh(p, None, joints, np.stack([1 - w1, w1], 1), faces)
    bones = procedural.bend_pose(60, length=1.0)
    bones[1, :3, 3] += (0.1, 0.0, 0.3)
    for method in ("lbs", "dqs"):
        with DeltaMushSkinner(device, mesh, bone_count=2, method=method, iterations=4) as s:
            assert_matches(mesh, s.skin(bones), want(s, bones))


def test_a_mesh_without_triangles_keeps_its_skinned_positions(device):
    m = candy()
    mesh = SkinnedMesh(m.positions, m.normals, m.joints, m.weights, np.zeros(0, int))
    bones = procedural.twist_pose(120)
    with DeltaMushSkinner(device, mesh, bone_count=2, iterations=3) as s:
        p, n = s.skin(bones)
    np.testing.assert_allclose(p, methods.get("lbs").reference(mesh, bones)[0], atol=1e-6)
    np.testing.assert_array_equal(n, np.tile([0.0, 0.0, 1.0], (mesh.vertex_count, 1)))


def test_the_call_size_bound_counts_the_vertices_of_bounds_many(device):
    with DeltaMushSkinner(device, candy(), bone_count=2) as s:
        s.max_call_bytes = 2 * 3 * 4 * s.vertex_count  # one pose's vertices, not two
        with pytest.raises(LimitError, match="2 x P x N x 3"):  # boxes from the vertices
            s.bounds_many(poses()[:2])
        s.max_call_bytes = 10 * 2**20
        assert s.bounds_many(poses()[:2]).shape == (2, 2, 3)


def test_threads_calling_one_skinner_each_get_their_pose(device):
    import threading

    mesh = candy()
    bones = poses()
    with DeltaMushSkinner(device, mesh, bone_count=2, iterations=5) as s:
        alone = [s.skin(b)[0] for b in bones]
        got: dict[int, list[np.ndarray]] = {k: [] for k in range(len(bones))}

        def work(k: int) -> None:
            for _ in range(5):
                got[k].append(s.skin(bones[k])[0])

        threads = [threading.Thread(target=work, args=(k,)) for k in range(len(bones))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k, results in got.items():
        assert len(results) == 5
        for r in results:
            np.testing.assert_array_equal(r, alone[k])
