"""vkdqs.dq against plain 4x4 matrix math (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import dq, reference
from vkdqs.errors import InputError

ATOL = 1e-12


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240531)


def random_matrices(rng: np.random.Generator, n: int, **kw) -> np.ndarray:
    """Random rigid 4x4 matrices built without any DQ code (QR of a Gaussian, det fixed)."""
    q, r = np.linalg.qr(rng.normal(size=(n, 3, 3)))
    q = q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]
    q[np.linalg.det(q) < 0] *= -1.0
    m = np.tile(np.eye(4), (n, 1, 1))
    m[:, :3, :3] = q
    m[:, :3, 3] = rng.uniform(-2, 2, size=(n, 3))
    return m


def apply(m: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.einsum("...ij,...j->...i", m[..., :3, :3], p) + m[..., :3, 3]


# ---------------------------------------------------------------------------------------------
# quaternions
# ---------------------------------------------------------------------------------------------


def test_quat_multiply_matches_matrix_product(rng):
    a, b = dq.random_rigid(50, rng)[:, 0], dq.random_rigid(50, rng)[:, 0]
    np.testing.assert_allclose(
        dq.quat_to_matrix(dq.quat_multiply(a, b)),
        dq.quat_to_matrix(a) @ dq.quat_to_matrix(b),
        atol=ATOL,
    )


def test_quat_rotate_and_conjugate(rng):
    q = dq.random_rigid(50, rng)[:, 0]
    v = rng.normal(size=(50, 3))
    np.testing.assert_allclose(
        dq.quat_rotate(q, v), np.einsum("nij,nj->ni", dq.quat_to_matrix(q), v), atol=ATOL
    )
    np.testing.assert_allclose(dq.quat_rotate(dq.quat_conjugate(q), dq.quat_rotate(q, v)), v)


def test_quat_axis_angle_known_values():
    q = dq.quat_from_axis_angle([0, 0, 2.0], np.pi / 2)
    np.testing.assert_allclose(q, [0, 0, np.sqrt(0.5), np.sqrt(0.5)])
    np.testing.assert_allclose(dq.quat_rotate(q, [1.0, 0, 0]), [0, 1, 0], atol=ATOL)
    with pytest.raises(InputError, match="zero length"):
        dq.quat_from_axis_angle([0, 0, 0], 1.0)


def test_quat_from_matrix_round_trip_including_near_180(rng):
    axes = rng.normal(size=(200, 3))
    angles = np.concatenate(
        [rng.uniform(0, np.pi, 100), np.pi - 10.0 ** -rng.uniform(1, 12, 95), np.full(5, np.pi)]
    )
    # exact 180 degree turns about coordinate axes, and the identity
    axes[-5:] = np.eye(3)[[0, 1, 2, 0, 1]]
    angles[-1] = 0.0
    q = dq.quat_from_axis_angle(axes, angles)
    r = dq.quat_to_matrix(q)
    q2 = dq.quat_from_matrix(r)
    assert np.all(q2[:, 3] >= 0)
    np.testing.assert_allclose(np.linalg.norm(q2, axis=1), 1.0, atol=ATOL)
    np.testing.assert_allclose(dq.quat_to_matrix(q2), r, atol=1e-12)
    # same rotation up to sign
    np.testing.assert_allclose(np.abs(np.sum(q * q2, axis=1)), 1.0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# dual quaternions vs matrices
# ---------------------------------------------------------------------------------------------


def test_matrices_round_trip(rng):
    m = random_matrices(rng, 100)
    d = dq.from_matrices(m)
    assert d.shape == (100, 2, 4)
    np.testing.assert_allclose(np.linalg.norm(d[:, 0], axis=1), 1.0, atol=ATOL)
    np.testing.assert_allclose(np.sum(d[:, 0] * d[:, 1], axis=1), 0.0, atol=ATOL)
    np.testing.assert_allclose(dq.to_matrices(d), m, atol=1e-12)
    np.testing.assert_allclose(dq.translation(d), m[:, :3, 3], atol=1e-12)


def test_round_trip_near_180_degrees(rng):
    axes = rng.normal(size=(20, 3))
    angles = np.pi - np.logspace(-12, -2, 20)
    m = np.tile(np.eye(4), (20, 1, 1))
    m[:, :3, :3] = dq.quat_to_matrix(dq.quat_from_axis_angle(axes, angles))
    m[:, :3, 3] = rng.normal(size=(20, 3))
    np.testing.assert_allclose(dq.to_matrices(dq.from_matrices(m)), m, atol=1e-12)


def test_from_rotation_translation_is_rotate_then_translate(rng):
    q = rng.normal(size=(10, 4))  # not unit: must be normalized
    t = rng.normal(size=(10, 3))
    p = rng.normal(size=(10, 3))
    d = dq.from_rotation_translation(q, t)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    np.testing.assert_allclose(dq.transform_points(d, p), dq.quat_rotate(qn, p) + t, atol=ATOL)


def test_multiply_composes_like_matrices(rng):
    ma, mb = random_matrices(rng, 50), random_matrices(rng, 50)
    ab = dq.multiply(dq.from_matrices(ma), dq.from_matrices(mb))
    np.testing.assert_allclose(dq.to_matrices(ab), ma @ mb, atol=1e-12)


def test_conjugate_is_inverse(rng):
    m = random_matrices(rng, 50)
    inv = dq.conjugate(dq.from_matrices(m))
    np.testing.assert_allclose(dq.to_matrices(inv), np.linalg.inv(m), atol=1e-12)
    ident = dq.multiply(dq.from_matrices(m), inv)
    np.testing.assert_allclose(dq.to_matrices(ident), np.tile(np.eye(4), (50, 1, 1)), atol=1e-12)


def test_transform_points_and_normals(rng):
    m = random_matrices(rng, 50)
    d = dq.from_matrices(m)
    p, n = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    np.testing.assert_allclose(dq.transform_points(d, p), apply(m, p), atol=1e-12)
    np.testing.assert_allclose(
        dq.transform_normals(d, n), np.einsum("nij,nj->ni", m[:, :3, :3], n), atol=1e-12
    )
    # either sign is the same transform
    np.testing.assert_allclose(dq.transform_points(-d, p), apply(m, p), atol=1e-12)


def test_batch_matches_single(rng):
    m = random_matrices(rng, 6).reshape(2, 3, 4, 4)
    d = dq.from_matrices(m)
    assert d.shape == (2, 3, 2, 4)
    p = rng.normal(size=3)
    batched = dq.transform_points(d, p)  # one point broadcast against a (2, 3) batch
    assert batched.shape == (2, 3, 3)
    for i in range(2):
        for j in range(3):
            single = dq.from_matrices(m[i, j])
            assert single.shape == (2, 4)
            np.testing.assert_array_equal(single, d[i, j])
            np.testing.assert_allclose(dq.transform_points(single, p), batched[i, j])
            np.testing.assert_allclose(dq.to_matrices(single), m[i, j], atol=1e-12)


def test_normalize_makes_unit_dq(rng):
    d = dq.random_rigid(20, rng) * rng.uniform(0.1, 3, size=(20, 1, 1))
    d[:, 1] += 0.1 * rng.normal(size=(20, 4))  # break r . d = 0
    u = dq.normalize(d)
    np.testing.assert_allclose(np.linalg.norm(u[:, 0], axis=1), 1.0, atol=ATOL)
    np.testing.assert_allclose(np.sum(u[:, 0] * u[:, 1], axis=1), 0.0, atol=ATOL)
    # already-unit DQs are unchanged
    r = dq.random_rigid(20, rng)
    np.testing.assert_allclose(dq.normalize(r), r, atol=ATOL)


def test_normalize_rejects_zero_real_naming_index():
    d = np.zeros((2, 3, 2, 4))
    d[..., 0, 3] = 1.0
    d[1, 2, 0] = 0.0
    with pytest.raises(InputError, match=r"dual quaternion \(1, 2\) has \|real\| = 0"):
        dq.normalize(d)


def test_random_rigid_ranges(rng):
    d = dq.random_rigid(500, rng, max_angle=0.3, max_translation=0.5)
    assert d.shape == (500, 2, 4)
    angles = 2 * np.arccos(np.clip(np.abs(d[:, 0, 3]), 0, 1))
    assert angles.max() <= 0.3 + 1e-12
    assert np.abs(dq.translation(d)).max() <= 0.5 + 1e-12


# ---------------------------------------------------------------------------------------------
# from_matrices validation
# ---------------------------------------------------------------------------------------------


def _batch_with(bad: np.ndarray, index, shape=(5,)) -> np.ndarray:
    m = np.tile(np.eye(4), (*shape, 1, 1))
    m[index] = bad
    return m


def test_from_matrices_rejects_scale():
    bad = np.diag([1.0, 1.0, 1.1, 1.0])
    with pytest.raises(InputError, match=r"matrix 3 is not rigid: scale/shear, \|R\^T R - I\| max"):
        dq.from_matrices(_batch_with(bad, 3))


def test_from_matrices_rejects_shear():
    bad = np.eye(4)
    bad[0, 1] = 0.2
    with pytest.raises(InputError, match=r"matrix 1 is not rigid: scale/shear"):
        dq.from_matrices(_batch_with(bad, 1))


def test_from_matrices_rejects_reflection_naming_nd_index():
    bad = np.diag([1.0, -1.0, 1.0, 1.0])
    with pytest.raises(InputError, match=r"matrix \(1, 2\) is a reflection \(det = -1\)"):
        dq.from_matrices(_batch_with(bad, (1, 2), shape=(2, 3)))


def test_from_matrices_rejects_nan():
    bad = np.eye(4)
    bad[1, 3] = np.nan
    with pytest.raises(InputError, match=r"matrix 4 has a non-finite element: m\[1, 3\] = nan"):
        dq.from_matrices(_batch_with(bad, 4))


def test_from_matrices_rejects_bottom_row():
    bad = np.eye(4)
    bad[3, 0] = 0.5
    with pytest.raises(InputError, match=r"matrix 2 has bottom row \[0\.5, 0\. *, 0\. *, 1\. *\]"):
        dq.from_matrices(_batch_with(bad, 2))


def test_from_matrices_names_first_offender_and_accepts_small_noise():
    m = _batch_with(np.diag([2.0, 1, 1, 1]), 4)
    m[2] = np.diag([1.0, -1, 1, 1])
    with pytest.raises(InputError, match="matrix 2 is a reflection"):
        dq.from_matrices(m)
    noisy = np.eye(4)
    noisy[:3, :3] += 1e-6
    dq.from_matrices(noisy)  # within atol
    with pytest.raises(InputError, match="not rigid"):
        dq.from_matrices(noisy, atol=1e-8)


def test_from_matrices_rejects_shape():
    with pytest.raises(InputError, match=r"\[\.\.\., 4, 4\], got shape \(3, 4\)"):
        dq.from_matrices(np.eye(4)[:3])


# ---------------------------------------------------------------------------------------------
# skin_dqs / skin_lbs
# ---------------------------------------------------------------------------------------------


def random_mesh(rng: np.random.Generator, n: int, bones: int, k: int = 4):
    p = rng.normal(size=(n, 3))
    nrm = rng.normal(size=(n, 3))
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    j = rng.integers(0, bones, size=(n, k))
    w = rng.uniform(0.05, 1, size=(n, k))
    w /= w.sum(axis=1, keepdims=True)
    return p, nrm, j, w


def test_skin_dqs_single_influence_is_the_bone_transform(rng):
    p, nrm, j, _ = random_mesh(rng, 200, 7, k=1)
    m = random_matrices(rng, 7)
    out_p, out_n = reference.skin_dqs(p, nrm, j, np.ones((200, 1)), dq.from_matrices(m))
    np.testing.assert_allclose(out_p, apply(m[j[:, 0]], p), atol=1e-12)
    np.testing.assert_allclose(out_n, np.einsum("nij,nj->ni", m[j[:, 0], :3, :3], nrm), atol=1e-12)


def test_skin_dqs_identical_bones_give_that_transform(rng):
    p, nrm, j, w = random_mesh(rng, 200, 5)
    m = random_matrices(rng, 1)
    bones = np.repeat(dq.from_matrices(m), 5, axis=0)
    bones[[1, 3]] *= -1.0  # same transform, other sign
    out_p, out_n = reference.skin_dqs(p, nrm, j, w, bones)
    np.testing.assert_allclose(out_p, apply(m[0], p), atol=1e-12)
    np.testing.assert_allclose(out_n, nrm @ m[0, :3, :3].T, atol=1e-12)


def test_skin_dqs_invariant_to_bone_signs(rng):
    p, nrm, j, w = random_mesh(rng, 500, 12)
    bones = dq.random_rigid(12, rng, max_angle=2.5)
    ref = reference.skin_dqs(p, nrm, j, w, bones)
    for _ in range(5):
        signs = rng.choice([-1.0, 1.0], size=(12, 1, 1))
        out = reference.skin_dqs(p, nrm, j, w, bones * signs)
        np.testing.assert_allclose(out[0], ref[0], atol=1e-10)
        np.testing.assert_allclose(out[1], ref[1], atol=1e-10)


def test_antipodal_correction_matters():
    # Two nearby rotations (10 and 30 degrees about z) with the second stored with w < 0.
    q0 = dq.quat_from_axis_angle([0, 0, 1], np.radians(10))
    q1 = -dq.quat_from_axis_angle([0, 0, 1], np.radians(30))
    bones = dq.from_rotation_translation(np.stack([q0, q1]), np.zeros((2, 3)))
    p = np.array([[1.0, 0.0, 0.0]])
    nrm = np.array([[1.0, 0.0, 0.0]])
    j = np.array([[0, 1]])
    w = np.array([[0.5, 0.5]])
    good, _ = reference.skin_dqs(p, nrm, j, w, bones)
    bad, _ = reference.skin_dqs(p, nrm, j, w, bones, antipodal=False)
    expected = [np.cos(np.radians(20)), np.sin(np.radians(20)), 0.0]
    np.testing.assert_allclose(good[0], expected, atol=1e-12)
    assert np.linalg.norm(bad[0] - expected) > 0.5


def test_antipodal_reference_is_slot_zero_as_given():
    # Slot 0 has the small weight; the sum is still sign-corrected against it, so negating
    # slot 0's bone must not change the answer.
    q0 = dq.quat_from_axis_angle([0, 0, 1], np.radians(10))
    q1 = dq.quat_from_axis_angle([0, 0, 1], np.radians(40))
    bones = dq.from_rotation_translation(np.stack([q0, q1]), [[0, 0, 0], [1, 0, 0]])
    args = (np.ones((1, 3)), np.array([[0, 0, 1.0]]), np.array([[0, 1]]), np.array([[0.2, 0.8]]))
    a = reference.skin_dqs(*args, bones)
    b = reference.skin_dqs(*args, bones * np.array([-1.0, 1.0])[:, None, None])
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)


def test_skin_dqs_blends_without_orthogonalizing_like_the_shader(rng):
    # Reimplement the shader literally (one vertex at a time) and compare.
    p, nrm, j, w = random_mesh(rng, 30, 6)
    bones = dq.random_rigid(6, rng)
    out_p, out_n = reference.skin_dqs(p, nrm, j, w, bones)

    def rot(q, v):
        return v + 2.0 * np.cross(q[:3], np.cross(q[:3], v) + q[3] * v)

    for i in range(30):
        ref = bones[j[i, 0], 0]
        b = np.zeros((2, 4))
        for k in range(4):
            wk = w[i, k] if bones[j[i, k], 0] @ ref >= 0 else -w[i, k]
            b += wk * bones[j[i, k]]
        r, d = b[0] / np.linalg.norm(b[0]), b[1] / np.linalg.norm(b[0])
        t = 2.0 * (r[3] * d[:3] - d[3] * r[:3] + np.cross(r[:3], d[:3]))
        np.testing.assert_allclose(out_p[i], rot(r, p[i]) + t, atol=1e-12)
        n = rot(r, nrm[i])
        np.testing.assert_allclose(out_n[i], n / np.linalg.norm(n), atol=1e-12)


def test_zero_weight_vertex_stays_at_rest(rng):
    p, nrm, j, w = random_mesh(rng, 10, 4)
    w[3] = 0.0
    nrm[3] *= 5.0
    bones = dq.random_rigid(4, rng)
    for skin, pose in ((reference.skin_dqs, bones), (reference.skin_lbs, dq.to_matrices(bones))):
        out_p, out_n = skin(p, nrm, j, w, pose)
        assert np.isfinite(out_p).all() and np.isfinite(out_n).all()
        np.testing.assert_array_equal(out_p[3], p[3])
        np.testing.assert_allclose(out_n[3], nrm[3] / 5.0)
        assert not np.allclose(out_p[4], p[4])


def test_skin_dqs_cancelling_blend_falls_back_to_rest():
    q = dq.quat_from_axis_angle([1, 0, 0], 0.5)
    bones = dq.from_rotation_translation(np.stack([q, -q]), np.zeros((2, 3)))
    p, n = np.array([[1.0, 2.0, 3.0]]), np.array([[0, 2.0, 0]])
    out_p, out_n = reference.skin_dqs(p, n, [[0, 1]], [[0.5, 0.5]], bones, antipodal=False)
    np.testing.assert_array_equal(out_p, p)
    np.testing.assert_array_equal(out_n, [[0, 1.0, 0]])


def test_skin_lbs_single_influence_is_the_affine_transform(rng):
    p, nrm, j, _ = random_mesh(rng, 200, 5, k=1)
    a = np.tile(np.eye(4), (5, 1, 1))
    a[:, :3, :] = rng.normal(size=(5, 3, 4))  # general affine (scale, shear)
    a[np.linalg.det(a[:, :3, :3]) < 0, :3, 0] *= -1.0  # keep orientation for the normal check
    out_p, out_n = reference.skin_lbs(p, nrm, j, np.ones((200, 1)), a)
    np.testing.assert_allclose(out_p, apply(a[j[:, 0]], p), atol=1e-12)
    inv_t = np.linalg.inv(a[j[:, 0], :3, :3]).transpose(0, 2, 1)
    expected = np.einsum("nij,nj->ni", inv_t, nrm)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out_n, expected, atol=1e-10)
    # (B, 3, 4) input gives the same
    out2 = reference.skin_lbs(p, nrm, j, np.ones((200, 1)), a[:, :3, :])
    np.testing.assert_array_equal(out2[0], out_p)


def test_skin_lbs_blends_matrices_linearly(rng):
    p, nrm, j, w = random_mesh(rng, 100, 6)
    m = random_matrices(rng, 6)
    out_p, _ = reference.skin_lbs(p, nrm, j, w, m)
    expected = sum(w[:, k, None] * apply(m[j[:, k]], p) for k in range(4))
    np.testing.assert_allclose(out_p, expected, atol=1e-12)


def test_skin_lbs_degenerate_normal_falls_back_to_rest():
    a = np.zeros((1, 3, 4))  # collapses everything to the origin
    p, n = np.array([[1.0, 2.0, 3.0]]), np.array([[0, 0, 3.0]])
    out_p, out_n = reference.skin_lbs(p, n, [[0]], [[1.0]], a)
    np.testing.assert_array_equal(out_p, [[0, 0, 0]])
    np.testing.assert_array_equal(out_n, [[0, 0, 1.0]])


def test_skin_dqs_and_lbs_agree_for_rigid_identical_bones(rng):
    p, nrm, j, w = random_mesh(rng, 50, 3)
    m = np.repeat(random_matrices(rng, 1), 3, axis=0)
    a = reference.skin_dqs(p, nrm, j, w, dq.from_matrices(m))
    b = reference.skin_lbs(p, nrm, j, w, m)
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)
    np.testing.assert_allclose(a[1], b[1], atol=1e-12)


def test_skin_shape_errors(rng):
    p, nrm, j, w = random_mesh(rng, 5, 2)
    bones = dq.random_rigid(2, rng)
    with pytest.raises(InputError, match=r"positions must have shape \(N, 3\), got shape \(5, 2\)"):
        reference.skin_dqs(p[:, :2], nrm, j, w, bones)
    with pytest.raises(InputError, match="joints must be an integer array, got float64"):
        reference.skin_dqs(p, nrm, j.astype(float), w, bones)
    with pytest.raises(InputError, match=r"weights must have the shape of joints \(5, 4\)"):
        reference.skin_dqs(p, nrm, j, w[:, :3], bones)
    with pytest.raises(InputError, match=r"bone_dqs must have shape \(B, 2, 4\)"):
        reference.skin_dqs(p, nrm, j, w, bones[:, 0])
    with pytest.raises(InputError, match=r"bone_matrices must have shape \(B, 3, 4\) or"):
        reference.skin_lbs(p, nrm, j, w, np.zeros((2, 3, 3)))
