"""Optimized centers of rotation ("cor"): the precomputation (GPU and float64 reference), CoR
skinning on both GPU paths and in the renderer, and its bad input."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import InputError, SkinnedMesh, centers_of_rotation, dq, procedural, reference
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.methods.cor.reference import (
    centers_from_bins,
    centers_of_rotation_reference,
    finish_centers,
    pair_bins,
)

from .imaging import CLEAR, covered, pixel_box, projected_box
from .test_gpu_skinning import assert_matches

PATHS = ("compute", "vertex")
W, H = 320, 240


def noisy_tube(n, bones, influences, seed, *, extra=0):
    """A tube with per-vertex noise on its weights (no two vertices or triangles share them)."""
    base = procedural.tube(n, bone_count=bones, influences=influences, length=4.0, radius=0.5)
    rng = np.random.default_rng(seed)
    joints, weights = base.joints, base.weights * rng.uniform(0.7, 1.3, base.weights.shape)
    if extra:
        joints = np.hstack([joints, (joints[:, :extra] + influences) % bones])
        weights = np.hstack([weights, 0.2 * weights[:, :extra]])
    return SkinnedMesh(base.positions, base.normals, joints, weights, base.indices)


def similarity(a, b, sigma):
    """Eq. 3 of Le & Hodgins 2016, written out over every ordered bone pair j != k."""
    total = 0.0
    for j in range(len(a)):
        for k in range(len(a)):
            if j != k:
                d = a[j] * b[k] - a[k] * b[j]
                total += a[j] * a[k] * b[j] * b[k] * np.exp(-(d * d) / sigma**2)
    return total


def test_reference_is_eq_3_and_4():
    """The vectorized reference against the paper's formulas evaluated literally."""
    rng = np.random.default_rng(1)
    n, bones = 40, 5
    positions = rng.normal(size=(n, 3))
    joints = np.stack([rng.permutation(bones)[:3] for _ in range(n)])
    weights = rng.uniform(0.1, 1.0, (n, 3))
    weights[0, 1:] = 0.0  # one influence: keeps itself
    tris = np.stack([rng.permutation(n)[:3] for _ in range(60)])
    mesh = SkinnedMesh(positions, rng.normal(size=(n, 3)), joints, weights, tris)
    dense = np.zeros((n, bones))
    np.add.at(dense, (np.repeat(np.arange(n), 4), mesh.joints.ravel()), mesh.weights.ravel())
    p = mesh.positions.astype(np.float64)[tris]
    area = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    want = np.empty((n, 3))
    for i in range(n):
        s = np.array([similarity(dense[i], dense[t].mean(axis=0), 0.1) for t in tris])
        den = (s * area).sum()
        want[i] = mesh.positions[i] if den == 0 else (s * area) @ p.mean(axis=1) / den
    got = centers_of_rotation_reference(mesh, bone_count=bones, sigma=0.1)
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_array_equal(got[0], mesh.positions[0])


def test_pair_bins_without_merging_are_exact():
    mesh = noisy_tube(1500, 6, 3, 2)
    ref = centers_of_rotation_reference(mesh, bone_count=6)
    bins = pair_bins(mesh, 6, resolution=None)
    num, den = centers_from_bins(mesh, bins, 6, 0.1)
    np.testing.assert_allclose(finish_centers(mesh, num, den, bins.total_area), ref, atol=1e-6)


@pytest.mark.parametrize(
    ("extra", "resolution", "tol"), [(0, None, 1e-5), (0, 4096, 2e-5), (3, 4096, 2e-5)]
)
def test_gpu_centers_match_the_reference(device, extra, resolution, tol):
    mesh = noisy_tube(3000, 8, 3, 3, extra=extra)
    assert mesh.slots == (8 if extra else 4)
    ref = centers_of_rotation_reference(mesh, bone_count=8)
    got = centers_of_rotation(mesh, bone_count=8, device=device, resolution=resolution, tile=700)
    assert got.dtype == np.float32 and got.shape == (mesh.vertex_count, 3)
    assert np.abs(got - ref).max() <= tol * mesh.extent
    # the centers of a tube bent nowhere lie near its axis, between the rings they blend
    inner = np.linalg.norm(mesh.positions[:, [0, 2]], axis=1) > 0.4
    moved = np.linalg.norm(got[:, [0, 2]], axis=1) < 0.25
    assert (inner & moved).sum() > mesh.vertex_count // 2


def test_progress_bar(device, capsys):
    mesh = noisy_tube(500, 4, 2, 4)
    centers_of_rotation(mesh, bone_count=4, device=device, progress=True, tile=100)
    err = capsys.readouterr().err
    assert "centers of rotation [" in err and "100.0%" in err
    centers_of_rotation(mesh, bone_count=4, device=device)  # quick: no bar
    assert capsys.readouterr().err == ""


def cor_reference(mesh, bones, centers):
    return reference.skin_cor(
        mesh.positions, mesh.normals, mesh.joints, mesh.weights, bones, centers
    )


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("extra", [0, 3])
def test_cor_skinning_matches_reference(device, path, extra):
    mesh = noisy_tube(2500, 8, 3, 5, extra=extra)
    rng = np.random.default_rng(6)
    poses = np.stack(
        [
            dq.to_matrices(dq.random_rigid(8, rng, max_angle=np.pi, max_translation=1.0))
            for _ in range(3)
        ]
    )
    with Skinner(device, mesh, bone_count=8, method="cor", path=path) as skinner:
        centers = skinner.centers
        for pose in poses:
            assert_matches(mesh, skinner.skin(pose), cor_reference(mesh, pose, centers))
        many_p, many_n = skinner.skin_many(dq.from_matrices(poses))
        for i, pose in enumerate(poses):
            assert_matches(mesh, (many_p[i], many_n[i]), cor_reference(mesh, pose, centers))


def test_cor_about_the_vertex_itself_is_lbs(device):
    mesh = noisy_tube(1000, 6, 3, 7)
    rng = np.random.default_rng(8)
    pose = dq.to_matrices(dq.random_rigid(6, rng, max_angle=2.0))
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    want = reference.skin_lbs(*args, pose)[0]
    np.testing.assert_allclose(cor_reference(mesh, pose, mesh.positions)[0], want, atol=1e-12)
    with Skinner(device, mesh, bone_count=6, method="cor", centers=mesh.positions) as skinner:
        np.testing.assert_allclose(skinner.skin(pose)[0], want, atol=1e-5 * mesh.extent)


def test_cor_bad_input(device):
    mesh = noisy_tube(200, 4, 2, 9)
    no_tris = SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with pytest.raises(InputError, match="need the mesh's triangles"):
        centers_of_rotation(no_tris, bone_count=4, device=device)
    with pytest.raises(InputError, match="need the mesh's triangles"):
        Skinner(device, no_tris, bone_count=4, method="cor")
    with pytest.raises(InputError, match="sigma must be a positive"):
        centers_of_rotation(mesh, bone_count=4, sigma=0.0, device=device)
    with pytest.raises(InputError, match="uses joint 2 but the skeleton has 2 bones"):
        centers_of_rotation(mesh, bone_count=2, device=device)
    with pytest.raises(InputError, match=r"centers must have shape \(200, 3\)"):
        Skinner(device, mesh, bone_count=4, method="cor", centers=np.zeros((199, 3)))
    bad = mesh.positions.copy()
    bad[7, 1] = np.nan
    with pytest.raises(InputError, match=r"centers\[7, 1\] = nan"):
        Skinner(device, mesh, bone_count=4, method="cor", centers=bad)
    with pytest.raises(InputError, match="centers are for method='cor'"):
        Skinner(device, mesh, bone_count=4, method="dqs", centers=mesh.positions)
    pose = np.tile(np.eye(4), (4, 1, 1))
    pose[1, :3, :3] *= 2.0
    with Skinner(device, mesh, bone_count=4, method="cor", centers=mesh.positions) as skinner:
        with pytest.raises(InputError, match="bone 1: method 'cor' needs rigid"):
            skinner.skin(pose)


def _middle_height(img, renderer, mesh):
    lo, hi = mesh.bounds
    x = renderer.camera.project([[(lo[0] + hi[0]) / 2, 0.0, 0.0]], W, H)[0, 0]
    return int(covered(img)[:, int(x)].sum())


def test_cor_renders_the_candy_wrapper_without_collapse(device):
    mesh = procedural.candy_wrapper()
    pose = procedural.twist_pose(170.0)
    with OffscreenTarget(device, W, H) as target, Renderer(device, target, clear_color=CLEAR) as r:
        inst = r.add_instance(r.add_mesh(mesh), bone_count=2, method="cor")
        centers = inst.mesh.centers
        assert centers is not None and centers.shape == (mesh.vertex_count, 3)
        r.frame_scene()
        rest = _middle_height(r.render_image(), r, mesh)
        inst.set_pose(pose)
        img = r.render_image()
        assert _middle_height(img, r, mesh) >= 0.9 * rest
        with Skinner(device, mesh, bone_count=2, method="cor", path="vertex") as skinner:
            np.testing.assert_allclose(skinner.centers, centers, atol=1e-6)
            positions, _ = skinner.skin(pose)
        got = pixel_box(covered(img))
        np.testing.assert_allclose(got, projected_box(r.camera, positions, W, H), atol=2.0)
        with pytest.raises(InputError, match="centers must have shape"):
            r.add_instance(inst.mesh, bone_count=2, method="cor", centers=np.zeros((3, 3)))
