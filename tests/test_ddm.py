"""Direct Delta Mush: the float64 reference (vkdqs.methods.ddm.reference) against libigl 2.5.1 and
its properties.

libigl's ``direct_delta_mush_precomputation`` factors the non-symmetric smoothing matrix
``I + s D⁻¹ L`` with Eigen's SimplicialLDLT, which reads only its lower triangle: it solves with
the symmetric matrix mirrored from that triangle. ``_libigl_omega`` redoes the precomputation with
that solve (and vkdqs.methods.ddm.reference's Laplacian and assembly); it reproduces libigl's Ω and
posed positions to rounding, so the solve is the only difference. vkdqs.methods.ddm.reference solves
the stated system, which keeps a partition of unity (libigl's smoothed weights sum to up to 1e4
after 20 steps) and moves the posed positions by 4e-4 to 0.5 of the extent
(``test_the_exact_solve_differs_from_libigl``).
"""

from __future__ import annotations

import igl  # libigl==2.5.1, the `test` extra
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from vkdqs import reference
from vkdqs.errors import InputError
from vkdqs.methods.ddm import reference as ddm
from vkdqs.procedural import (
    bend_pose,
    bone_chain_pose,
    candy_wrapper,
    ring_radii,
    tube,
    twist_pose,
)

PARAMETERS = [(3, 0.5, 0.3, 0.2), (10, 2.0, 1.0, 0.5), (20, 3.0, 1.0, 0.1)]


def _candy():
    return candy_wrapper(rings=13, segments=12), 2


def _tube():
    return tube(12 * 16, bone_count=4, influences=3, segments=12, length=4.0), 4


MESHES = {
    "candy-bend": (_candy, lambda: bend_pose(70.0, bone_count=2)),
    "candy-twist": (_candy, lambda: twist_pose(120.0, bone_count=2)),
    "tube-chain": (_tube, lambda: bone_chain_pose(4, 90.0, length=4.0)),
}


def _arrays(mesh, bones):
    v = mesh.positions.astype(np.float64)
    f = mesh.indices.reshape(-1, 3).astype(np.int64)
    w = np.zeros((len(v), bones))
    np.add.at(w, (np.arange(len(v))[:, None], mesh.joints.astype(np.int64)), mesh.weights)
    return v, f, w / w.sum(axis=1, keepdims=True)  # sums of exactly 1 (not float32's)


def _omega(mesh, bones, params):
    """Ω of the reference, from the dense float64 weights of ``_arrays`` (as libigl takes)."""
    p, lam, kappa, alpha = params
    v, f, w = _arrays(mesh, bones)
    return ddm.precompute_reference(
        v,
        f,
        np.broadcast_to(np.arange(bones), w.shape),
        w,
        bones,
        iterations=p,
        rotation_step=lam,
        translation_step=kappa,
        alpha=alpha,
    )


def _libigl_omega(v, f, w, params):
    """vkdqs.methods.ddm.reference's precomputation with libigl's solve (the lower triangle,
    mirrored)."""
    p, lam, kappa, alpha = params
    lap = ddm.cotangent_laplacian(v, f)
    n, bones = w.shape
    indptr, indices, weights, diagonal = lap
    inv = 1.0 / diagonal
    off = sp.csr_matrix((-weights, indices, indptr), shape=(n, n)) + sp.diags(diagonal)

    def solver(step):
        c = sp.identity(n) + step * (sp.diags(inv) @ off)
        lower = sp.tril(c, -1)
        return spla.splu(sp.csc_matrix(lower + lower.T + sp.diags(c.diagonal()))).solve

    hom = np.c_[v, np.ones(n)]
    uu = (hom[:, :, None] * hom[:, None, :])[:, ddm.UPPER[0], ddm.UPPER[1]]
    psi, w_prime = (w[:, :, None] * uu[:, None, :]).reshape(n, -1), w
    solve_psi, solve_w = solver(lam), solver(kappa)
    for _ in range(p):
        psi, w_prime = solve_psi(psi), solve_w(w_prime)
    return ddm.omega_from_smoothed(psi.reshape(n, bones, 10), w_prime, alpha)


def _igl_pose(pose):
    return np.concatenate([m[:3, :].T for m in pose], axis=0)  # libigl's #E*4 by 3


def _extent(v):
    return float(np.ptp(v, axis=0).max())


@pytest.mark.parametrize("params", PARAMETERS, ids=lambda p: "p{}-l{}-k{}-a{}".format(*p))
@pytest.mark.parametrize("case", list(MESHES))
def test_libigl_is_reproduced_with_its_solve(case, params):
    """With libigl's solve, Ω and the posed positions equal libigl's to rounding."""
    make, make_pose = MESHES[case]
    mesh, bones = make()
    v, f, w = _arrays(mesh, bones)
    pose = make_pose()
    omega_igl = igl.direct_delta_mush_precomputation(v, f, w, *params).reshape(len(v), bones, 10)
    omega = _libigl_omega(v, f, w, params)
    assert np.abs(omega - omega_igl).max() <= 1e-12 * np.abs(omega_igl).max()
    posed_igl = igl.direct_delta_mush(v, _igl_pose(pose), omega_igl.reshape(len(v), -1))
    posed, _ = ddm.skin_reference(v, mesh.normals, omega, pose)
    assert np.abs(posed - posed_igl).max() <= 1e-12 * _extent(v)


@pytest.mark.parametrize("params", PARAMETERS, ids=lambda p: "p{}-l{}-k{}-a{}".format(*p))
@pytest.mark.parametrize("case", list(MESHES))
def test_the_exact_solve_differs_from_libigl(case, params):
    """The stated system, solved exactly: smoothing keeps a partition of unity (libigl's does
    not), and the posed positions move from libigl's by more than 1e-4 of the extent."""
    make, make_pose = MESHES[case]
    mesh, bones = make()
    v, f, w = _arrays(mesh, bones)
    pose = make_pose()
    omega = _omega(mesh, bones, params)
    omega_igl = igl.direct_delta_mush_precomputation(v, f, w, *params).reshape(len(v), bones, 10)
    # Ω[..., 9] is (1 - α) times the λ-smoothed weight plus α times the κ-smoothed one.
    assert np.abs(omega[:, :, 9].sum(axis=1) - 1.0).max() < 1e-12
    assert np.abs(omega_igl[:, :, 9].sum(axis=1) - 1.0).max() > 0.1
    posed, _ = ddm.skin_reference(v, mesh.normals, omega, pose)
    posed_igl = igl.direct_delta_mush(v, _igl_pose(pose), omega_igl.reshape(len(v), -1))
    assert np.abs(posed - posed_igl).max() > 1e-4 * _extent(v)


def test_each_step_solves_the_stated_system():
    """One step with p=1, α=0: ``(I + λ D⁻¹ L) Ψ₁ = Ψ₀``, checked with libigl-free algebra."""
    mesh, bones = _tube()
    v, f, w = _arrays(mesh, bones)
    omega = _omega(mesh, bones, (1, 0.7, 0.3, 0.0))
    indptr, indices, weights, diagonal = ddm.cotangent_laplacian(v, f)
    n = len(v)
    lap = sp.csr_matrix((-weights, indices, indptr), shape=(n, n)) + sp.diags(diagonal)
    hom = np.c_[v, np.ones(n)]
    uu = (hom[:, :, None] * hom[:, None, :])[:, ddm.UPPER[0], ddm.UPPER[1]]
    psi0 = (w[:, :, None] * uu[:, None, :]).reshape(n, -1)
    psi1 = omega.reshape(n, -1)
    residual = psi1 + 0.7 * (lap @ psi1) / diagonal[:, None] - psi0
    assert np.abs(residual).max() < 1e-10 * np.abs(psi0).max()
    # L is symmetric with zero row sums (constants are in its kernel).
    assert np.allclose((lap - lap.T).toarray(), 0.0)
    assert np.abs(lap @ np.ones(n)).max() < 1e-12


@pytest.mark.parametrize("case", list(MESHES))
def test_no_smoothing_is_lbs(case):
    """p = 0: Ω_ij = w_ij u uᵀ, and DDM is LBS, positions and normals."""
    make, make_pose = MESHES[case]
    mesh, bones = make()
    pose = make_pose()
    omega = _omega(mesh, bones, (0, 1.0, 0.5, 0.3))
    posed, normals = ddm.skin_reference(mesh.positions, mesh.normals, omega, pose)
    _, _, w = _arrays(mesh, bones)
    joints = np.broadcast_to(np.arange(bones), w.shape)
    lbs_p, lbs_n = reference.skin_lbs(mesh.positions, mesh.normals, joints, w, pose)
    assert np.abs(posed - lbs_p).max() < 1e-9 * _extent(mesh.positions)
    assert np.abs(normals - lbs_n).max() < 1e-9


def _rigid(seed):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    m = np.eye(4)
    m[:3, :3] = q * np.sign(np.linalg.det(q))
    m[:3, 3] = rng.normal(size=3) * 3.0
    return m


@pytest.mark.parametrize("case", list(MESHES))
def test_a_rigid_motion_of_the_skeleton_moves_the_mesh_rigidly(case):
    """Every bone posed, then all moved by one rigid G: the result is G applied to the pose."""
    make, make_pose = MESHES[case]
    mesh, bones = make()
    pose = make_pose()
    g = _rigid(1)
    omega = _omega(mesh, bones, (10, 2.0, 1.0, 0.5))
    posed, normals = ddm.skin_reference(mesh.positions, mesh.normals, omega, pose)
    moved, moved_n = ddm.skin_reference(mesh.positions, mesh.normals, omega, g @ pose)
    assert np.abs(moved - (posed @ g[:3, :3].T + g[:3, 3])).max() < 1e-9 * 3.0
    assert np.abs(moved_n - normals @ g[:3, :3].T).max() < 1e-9
    # All bones at G: the rest mesh, moved by G.
    still, still_n = ddm.skin_reference(
        mesh.positions, mesh.normals, omega, np.repeat(g[None], bones, axis=0)
    )
    rest = mesh.positions.astype(np.float64)
    assert np.abs(still - (rest @ g[:3, :3].T + g[:3, 3])).max() < 1e-9 * 3.0
    assert np.abs(still_n - mesh.normals @ g[:3, :3].T).max() < 1e-6


def test_the_candy_wrapper_does_not_collapse():
    """A 170° twist: LBS squeezes the middle ring to 9% of its radius; DDM keeps 89% with
    p=20, λ=5, κ=2, α=0.5 (41% with p=10, λ=2: less smoothing, less of the fix) and bulges no
    ring by more than 5%."""
    rings, segments = 17, 16
    mesh = candy_wrapper(rings=rings, segments=segments)
    pose = twist_pose(170.0, bone_count=2)
    omega = _omega(mesh, 2, (20, 5.0, 2.0, 0.5))
    posed, _ = ddm.skin_reference(mesh.positions, mesh.normals, omega, pose)
    lbs, _ = reference.skin_lbs(mesh.positions, mesh.normals, mesh.joints, mesh.weights, pose)
    rest = ring_radii(mesh.positions, rings=rings, segments=segments)
    ddm_ratio = ring_radii(posed, rings=rings, segments=segments) / rest
    lbs_ratio = ring_radii(lbs, rings=rings, segments=segments) / rest
    assert lbs_ratio.min() < 0.1
    assert ddm_ratio.min() > 0.85
    assert ddm_ratio.max() < 1.05


def _many_bone_mesh(params=(10, 2.0, 1.0, 0.5)):
    """A tube of radius 1 and length 4 on a 16-bone chain, smoothed so that most vertices feel
    more than 8 bones."""
    mesh = tube(16 * 40, bone_count=16, influences=4, segments=16, length=4.0)
    return mesh, _omega(mesh, 16, params)


@pytest.mark.parametrize(
    ("params", "bound8", "bound4"),
    [((10, 2.0, 1.0, 0.5), 6e-3, 1.5e-2), ((5, 1.0, 0.5, 0.5), 2e-4, 4e-3)],
)
def test_truncation_error(params, bound8, bound4):
    """The 16-bone tube bent by 120°: keeping the 8 strongest bones moves a vertex by at most
    ``bound8`` of the extent (measured 4.3e-3 with p=10, λ=2, where 70% of vertices feel more
    than 8 bones and up to 2.6% of a vertex's weight is dropped; 1.2e-4 with p=5, λ=1), and
    keeping 4 by more than ``bound4`` (1.9e-2 and 5.5e-3): the bound is not vacuous. Heavier
    smoothing (p=20, λ=5) reaches 5.0e-2 with 8 bones (22% of the weight dropped)."""
    mesh, omega = _many_bone_mesh(params)
    pose = bone_chain_pose(16, 120.0, length=4.0)
    full, _ = ddm.skin_reference(mesh.positions, mesh.normals, omega, pose)
    extent = _extent(mesh.positions)
    errors = {}
    for keep in (8, 4):
        kept, bones = ddm.truncate(omega, keep)
        assert kept.shape == (len(mesh.positions), keep, 10) and bones.shape == kept.shape[:2]
        posed, _ = ddm.skin_reference(mesh.positions, mesh.normals, kept, pose, bones)
        errors[keep] = np.abs(posed - full).max() / extent
    assert errors[8] < bound8
    assert errors[4] > bound4


def test_the_truncation_test_mesh_needs_more_than_8_bones():
    _, omega = _many_bone_mesh()
    share = np.abs(omega[:, :, 9]) / np.abs(omega[:, :, 9]).sum(axis=1, keepdims=True)
    assert (np.sum(share > 1e-3, axis=1) > 8).mean() > 0.6


def test_truncation_keeps_the_strongest_and_rigid_motions_exact():
    mesh, omega = _many_bone_mesh()
    kept, bones = ddm.truncate(omega, 8)
    strength = np.abs(omega[:, :, 9])
    picked = np.take_along_axis(strength, bones, axis=1)
    dropped = strength.copy()
    np.put_along_axis(dropped, bones, -1.0, axis=1)
    assert (picked.min(axis=1) >= dropped.max(axis=1)).all()
    assert (np.diff(picked, axis=1) <= 0).all()
    g = _rigid(2)
    still, _ = ddm.skin_reference(
        mesh.positions, mesh.normals, kept, np.repeat(g[None], 16, axis=0), bones
    )
    rest = mesh.positions.astype(np.float64)
    assert np.abs(still - (rest @ g[:3, :3].T + g[:3, 3])).max() < 1e-9 * 3.0


def test_a_truncation_to_all_bones_changes_nothing():
    mesh, bones_count = _tube()
    omega = _omega(mesh, bones_count, PARAMETERS[1])
    kept, bones = ddm.truncate(omega, 8)
    assert kept.shape[1] == bones_count
    pose = bone_chain_pose(4, 90.0, length=4.0)
    a, an = ddm.skin_reference(mesh.positions, mesh.normals, omega, pose)
    b, bn = ddm.skin_reference(mesh.positions, mesh.normals, kept, pose, bones)
    assert np.abs(a - b).max() < 1e-12 and np.abs(an - bn).max() < 1e-12


def test_the_progress_bar_counts_the_iterations(capsys):
    mesh, bones = _tube()
    ddm.precompute_reference(
        mesh.positions,
        mesh.indices,
        mesh.joints,
        mesh.weights,
        bones,
        iterations=7,
        rotation_step=1.0,
        translation_step=0.5,
        alpha=0.5,
        progress=True,
    )
    assert "7/7" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"iterations": -1}, "iterations"),
        ({"rotation_step": 0.0}, "rotation_step"),
        ({"translation_step": float("nan")}, "translation_step"),
        ({"alpha": 1.0}, "alpha"),
        ({"bone_count": 2}, "joints must be in"),
        ({"faces": np.array([[0, 1, 10**6]])}, "faces index"),
    ],
)
def test_bad_input_is_refused(change, match):
    mesh, bones = _tube()
    kwargs = dict(
        positions=mesh.positions,
        faces=mesh.indices,
        joints=mesh.joints,
        weights=mesh.weights,
        bone_count=bones,
        iterations=2,
        rotation_step=1.0,
        translation_step=0.5,
        alpha=0.5,
    )
    kwargs.update(change)
    with pytest.raises(InputError, match=match):
        ddm.precompute_reference(**kwargs)


def test_omega_about_another_origin_poses_the_same():
    mesh, bones = _tube()
    omega = _omega(mesh, bones, PARAMETERS[1])
    pose = bone_chain_pose(4, 90.0, length=4.0)
    origin = np.array([0.3, 2.0, -0.7])
    a, an = ddm.skin_reference(mesh.positions, mesh.normals, omega, pose)
    b, bn = ddm.skin_reference(
        mesh.positions, mesh.normals, ddm.reframe(omega, origin), pose, origin=origin
    )
    assert np.abs(a - b).max() < 1e-12 and np.abs(an - bn).max() < 1e-12
    assert np.abs(ddm.reframe(ddm.reframe(omega, origin), -origin) - omega).max() < 1e-12
    # one origin a vertex: about each vertex's own rest position
    own = mesh.positions.astype(np.float64)
    c, cn = ddm.skin_reference(
        mesh.positions, mesh.normals, ddm.reframe(omega, own), pose, origin=own
    )
    assert np.abs(a - c).max() < 1e-12 and np.abs(an - cn).max() < 1e-12
    # Ω about the origin is Ω of the moved positions
    moved = ddm.precompute_reference(
        mesh.positions - origin,
        mesh.indices,
        np.broadcast_to(np.arange(bones), (mesh.vertex_count, bones)),
        _arrays(mesh, bones)[2],
        bones,
        iterations=10,
        rotation_step=2.0,
        translation_step=1.0,
        alpha=0.5,
    )
    assert np.abs(moved - ddm.reframe(omega, origin)).max() < 1e-9 * np.abs(omega).max()


def test_libigl_depends_on_the_vertex_order_and_the_reference_does_not():
    """Why the reference does not copy libigl's solve: renumbering the vertices changes the
    lower triangle libigl factors, so its posed mesh moves (by 7.9% of the extent here); the
    reference poses every vertex the same under any numbering."""
    mesh, bones = _tube()
    v, f, w = _arrays(mesh, bones)
    params = PARAMETERS[1]
    pose = bone_chain_pose(4, 90.0, length=4.0)
    order = np.random.default_rng(7).permutation(len(v))
    back = np.argsort(order)
    renumbered = back[f]  # vertex order[i] becomes vertex i

    def libigl(v, f, w):
        omega = igl.direct_delta_mush_precomputation(v, f, w, *params)
        return igl.direct_delta_mush(v, _igl_pose(pose), omega)

    def ours(v, f, w):
        joints = np.broadcast_to(np.arange(bones), w.shape)
        omega = ddm.precompute_reference(
            v,
            f,
            joints,
            w,
            bones,
            **dict(
                zip(
                    ("iterations", "rotation_step", "translation_step", "alpha"),
                    params,
                    strict=True,
                )
            ),
        )
        return ddm.skin_reference(v, np.tile([1.0, 0.0, 0.0], (len(v), 1)), omega, pose)[0]

    extent = _extent(v)
    moved = libigl(v[order], renumbered, w[order])[back] - libigl(v, f, w)
    assert np.abs(moved).max() > 0.05 * extent
    same = ours(v[order], renumbered, w[order])[back] - ours(v, f, w)
    assert np.abs(same).max() < 1e-12 * extent
