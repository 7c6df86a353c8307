"""Seams: the smoothing deformers (classic Delta Mush, Direct Delta Mush) weld the vertices at
the same position (vkdqs.geometry.weld), so a mesh split at a seam (glTF splits vertices at UV
seams and hard edges) deforms as the unsplit mesh does: no crack, the smoothing reaches across,
while each copy keeps its own attributes and its output normal its own triangles' (a hard edge
stays hard). Float64 references and the GPU, against the unsplit mesh and each other."""

from __future__ import annotations

import numpy as np
import pytest

import vkdqs
from vkdqs import SkinnedMesh, procedural, reference
from vkdqs.engine.skinner import Skinner
from vkdqs.geometry import vertex_normals, weld
from vkdqs.methods.ddm import reference as ddm
from vkdqs.methods.delta_mush.reference import delta_mush_bind, delta_mush_reference

RINGS, SEGMENTS = 17, 16
POSE = procedural.twist_pose(150)


def candy() -> SkinnedMesh:
    return procedural.candy_wrapper(rings=RINGS, segments=SEGMENTS)


def _mesh(mesh: SkinnedMesh, orig: np.ndarray, faces: np.ndarray, normals=None) -> SkinnedMesh:
    return SkinnedMesh(
        mesh.positions[orig],
        mesh.normals[orig] if normals is None else normals,
        mesh.joints[orig],
        mesh.weights[orig],
        faces.reshape(-1),
    )


def split_seam(mesh: SkinnedMesh) -> tuple[SkinnedMesh, np.ndarray]:
    """The candy wrapper cut along segment 0 (angle 0, ``z = 0, y > 0``) of every side ring:
    those vertices duplicated at the end, the side triangles below (``z < 0``) re-indexed to
    the copies. Returns the mesh and each vertex's original."""
    n, seam = mesh.vertex_count, np.arange(RINGS) * SEGMENTS
    tri = mesh.indices.reshape(-1, 3).copy()
    copy = np.full(n, -1)
    copy[seam] = n + np.arange(len(seam))
    below = mesh.positions[tri].mean(axis=1)[:, 2] < 0
    side = (tri < RINGS * SEGMENTS).all(axis=1)
    swap = (below & side)[:, None] & (copy[tri] >= 0)
    tri[swap] = copy[tri[swap]]
    orig = np.concatenate([np.arange(n), seam])
    return _mesh(mesh, orig, tri), orig


def split_all(mesh: SkinnedMesh) -> tuple[SkinnedMesh, np.ndarray]:
    """Every triangle its own 3 vertices, normals its face normal (all edges hard). The first
    corner of each original vertex keeps its index (the others follow), so the welded nodes
    come in the unsplit mesh's order."""
    tri = mesh.indices.reshape(-1, 3)
    corner = tri.reshape(-1)
    used, first = np.unique(corner, return_index=True)
    assert len(used) == mesh.vertex_count
    index = np.empty(len(corner), np.int64)
    index[first] = used
    rest = np.setdiff1d(np.arange(len(corner)), first)
    index[rest] = mesh.vertex_count + np.arange(len(rest))
    orig = np.empty(len(corner), np.int64)
    orig[index] = corner
    p = mesh.positions.astype(np.float64)[tri]
    face = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    face /= np.linalg.norm(face, axis=1, keepdims=True)
    normals = np.empty((len(corner), 3))
    normals[index] = np.repeat(face, 3, axis=0)
    return _mesh(mesh, orig, index, normals), orig


SPLITS = {"seam": split_seam, "all": split_all}


def lbs(mesh: SkinnedMesh, pose: np.ndarray) -> np.ndarray:
    return reference.skin_lbs(mesh.positions, mesh.normals, mesh.joints, mesh.weights, pose)[0]


def crack(positions: np.ndarray, mesh: SkinnedMesh) -> float:
    """The widest gap between vertices at the same rest position, over the extent."""
    _, inverse, first = weld(mesh.positions)
    return float(np.abs(positions - positions[first[inverse]]).max()) / mesh.extent


def test_weld_is_exact_in_first_vertex_order():
    p = np.array([[1, 0, 0], [0, 0, 0], [1, 0, 0], [0, -0.0, 0], [0, 1e-12, 0], [2, 0, 0]])
    unique, inverse, first = weld(p)
    np.testing.assert_array_equal(first, [0, 1, 4, 5])
    np.testing.assert_array_equal(inverse, [0, 1, 0, 1, 2, 3])
    np.testing.assert_array_equal(unique[inverse], p + 0.0)
    u, i, f = weld(np.zeros((0, 3)))
    assert u.shape == (0, 3) and len(i) == len(f) == 0
    mesh = candy()  # its cap rims are bit-identical copies of the end rings: they weld
    unique, inverse, first = weld(mesh.positions)
    assert len(unique) == mesh.vertex_count - 2 * SEGMENTS
    np.testing.assert_array_equal(first[: RINGS * SEGMENTS], np.arange(RINGS * SEGMENTS))


@pytest.mark.parametrize("split", list(SPLITS))
def test_delta_mush_reference_smooths_across_seams(split):
    mesh = candy()
    cut, orig = SPLITS[split](mesh)
    want, _ = delta_mush_reference(delta_mush_bind(mesh.positions, mesh.indices), lbs(mesh, POSE))
    bind = delta_mush_bind(cut.positions, cut.indices)
    got, normals = delta_mush_reference(bind, lbs(cut, POSE))
    assert crack(got, cut) == 0.0
    assert np.abs(got - want[orig]).max() <= 1e-12 * mesh.extent
    # the normals are each copy's own triangles'
    np.testing.assert_allclose(normals, vertex_normals(got, cut.indices, weighting="area"))
    old_bind = delta_mush_bind(cut.positions, cut.indices, weld=False)
    old, _ = delta_mush_reference(old_bind, lbs(cut, POSE))
    if split == "all":
        # unwelded, each triangle of a fully split mesh is a lone triangle, which the smoothing
        # collapses (COLLAPSED): none is mushed, every vertex keeps its skinned position
        assert (np.diff(old_bind.offsets) == 0).all()
        np.testing.assert_array_equal(old, lbs(cut, POSE))
    else:
        # unwelded, each side of the seam is smoothed on its own: it opens by 8% of the extent
        assert crack(old, cut) > 0.05


def test_a_hard_edge_stays_hard():
    """The candy wrapper's cap rims are copies of its end rings with the cap's normal: with
    the welding they move with the rings (no crack), their output normals stay the cap's."""
    mesh = candy()
    bind = delta_mush_bind(mesh.positions, mesh.indices)
    got, normals = delta_mush_reference(bind, lbs(mesh, POSE))
    rim, ring = RINGS * SEGMENTS + np.arange(SEGMENTS), np.arange(SEGMENTS)
    np.testing.assert_array_equal(got[rim], got[ring])
    cosine = np.einsum("ij,ij->i", normals[rim], normals[ring])
    assert np.abs(cosine).max() < 0.2  # about 90 degrees apart, as at rest
    old, _ = delta_mush_reference(
        delta_mush_bind(mesh.positions, mesh.indices, weld=False), lbs(mesh, POSE)
    )
    assert crack(old, mesh) > 5e-4  # 8e-4 unwelded: the caps were smoothed on their own


def _ddm_reference(mesh: SkinnedMesh, **kwargs) -> np.ndarray:
    return ddm.precompute_reference(
        mesh.positions, mesh.indices, mesh.joints, mesh.weights, 2, **ddm.DEFAULTS, **kwargs
    )


@pytest.mark.parametrize("split", list(SPLITS))
def test_ddm_reference_smooths_across_seams(split):
    mesh = candy()
    cut, orig = SPLITS[split](mesh)
    want = _ddm_reference(mesh)
    got = _ddm_reference(cut)
    assert np.abs(got - want[orig]).max() <= 1e-12 * np.abs(want).max()
    posed, normals = ddm.skin_reference(cut.positions, cut.normals, got, POSE)
    assert crack(posed, cut) < 1e-12
    # normals: each copy's own rest normal turned by its node's rotation, so the angle between
    # copies (a hard edge's) is kept
    _, inverse, first = weld(cut.positions)
    node = first[inverse]
    rest = cut.normals.astype(np.float64)
    rest /= np.linalg.norm(rest, axis=1, keepdims=True)
    before = np.einsum("ij,ij->i", rest, rest[node])
    after = np.einsum("ij,ij->i", normals, normals[node])
    np.testing.assert_allclose(after, before, rtol=0, atol=1e-12)
    if split == "all":
        assert before.min() < 0.5  # hard edges
    old = _ddm_reference(cut, weld=False)
    posed_old, _ = ddm.skin_reference(cut.positions, cut.normals, old, POSE)
    assert crack(posed_old, cut) > 0.05  # unwelded: 15% (seam), 7% (fully split)


def test_ddm_copies_take_their_first_vertexs_weights():
    mesh = candy()
    cut, _ = split_seam(mesh)
    weights = cut.weights.copy()
    weights[mesh.vertex_count :] = weights[mesh.vertex_count :, ::-1]  # the copies' swapped
    other = SkinnedMesh(cut.positions, cut.normals, cut.joints, weights, cut.indices)
    np.testing.assert_array_equal(_ddm_reference(other), _ddm_reference(cut))


@pytest.mark.parametrize("split", list(SPLITS))
def test_delta_mush_gpu_smooths_across_seams(device, split):
    mesh = candy()
    cut, orig = SPLITS[split](mesh)
    with Skinner(device, mesh, bone_count=2, method="delta_mush") as s:
        want = s.skin(POSE)
    bind = delta_mush_bind(cut.positions, cut.indices)
    with Skinner(device, cut, bone_count=2, method="delta_mush", delta_mush=bind) as s:
        p, n = s.skin(POSE)
    assert crack(p, cut) == 0.0
    np.testing.assert_allclose(p, want[0][orig], rtol=0, atol=1e-5 * mesh.extent)
    ref_p, ref_n = delta_mush_reference(bind, lbs(cut, POSE))
    np.testing.assert_allclose(p, ref_p, rtol=0, atol=1e-5 * mesh.extent)
    np.testing.assert_allclose(n, ref_n, rtol=0, atol=1e-4)
    np.testing.assert_allclose(n, vertex_normals(p, cut.indices, weighting="area"), atol=1e-5)
    old = delta_mush_bind(cut.positions, cut.indices, weld=False)
    with Skinner(device, cut, bone_count=2, method="delta_mush", delta_mush=old) as s:
        p_old, _ = s.skin(POSE)
    if split == "all":  # lone triangles, collapsed by the smoothing: not mushed (COLLAPSED)
        np.testing.assert_allclose(p_old, lbs(cut, POSE), rtol=0, atol=1e-5 * mesh.extent)
    else:
        assert crack(p_old, cut) > 0.05


def test_delta_mush_gpu_keeps_hard_edges(device):
    mesh = candy()
    with Skinner(device, mesh, bone_count=2, method="delta_mush") as s:
        p, n = s.skin(POSE)
    rim, ring = RINGS * SEGMENTS + np.arange(SEGMENTS), np.arange(SEGMENTS)
    np.testing.assert_array_equal(p[rim], p[ring])
    assert np.abs(np.einsum("ij,ij->i", n[rim], n[ring])).max() < 0.2
    want = delta_mush_reference(s.delta_mush, lbs(mesh, POSE))
    np.testing.assert_allclose(n, want[1], rtol=0, atol=1e-4)


def test_delta_mush_copies_skinned_apart(device):
    """Copies with different weights are skinned apart; each is smoothed from its own
    position over the shared neighbours, the GPU as the reference."""
    mesh = candy()
    cut, _ = split_seam(mesh)
    weights = cut.weights.copy()
    weights[mesh.vertex_count :] = 0.5
    other = SkinnedMesh(cut.positions, cut.normals, cut.joints, weights, cut.indices)
    bind = delta_mush_bind(other.positions, other.indices)
    ref_p, ref_n = delta_mush_reference(bind, lbs(other, POSE))
    with Skinner(device, other, bone_count=2, method="delta_mush", delta_mush=bind) as s:
        p, n = s.skin(POSE)
    np.testing.assert_allclose(p, ref_p, rtol=0, atol=1e-5 * mesh.extent)
    np.testing.assert_allclose(n, ref_n, rtol=0, atol=1e-4)


@pytest.mark.parametrize("split", list(SPLITS))
def test_ddm_gpu_smooths_across_seams(device, split):
    mesh = candy()
    cut, orig = SPLITS[split](mesh)
    whole = vkdqs.direct_delta_mush(mesh, bone_count=2, device=device)
    d = vkdqs.direct_delta_mush(cut, bone_count=2, device=device)
    np.testing.assert_array_equal(d.omega, d.omega[weld(cut.positions)[2][weld(cut.positions)[1]]])
    np.testing.assert_array_equal(d.origin, cut.positions)
    with Skinner(device, cut, bone_count=2, method="ddm", ddm=d) as s:
        p, n = s.skin(POSE)
    with Skinner(device, mesh, bone_count=2, method="ddm", ddm=whole) as s:
        want_p, _ = s.skin(POSE)
    assert crack(p, cut) == 0.0
    np.testing.assert_allclose(p, want_p[orig], rtol=0, atol=1e-5 * mesh.extent)
    ref = _ddm_reference(cut)
    ref_p, ref_n = ddm.skin_reference(cut.positions, cut.normals, ref, POSE)
    np.testing.assert_allclose(p, ref_p, rtol=0, atol=2e-5 * mesh.extent)
    np.testing.assert_allclose(n, ref_n, rtol=0, atol=1e-4)
