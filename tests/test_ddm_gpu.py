"""Direct Delta Mush's GPU precomputation (vkdqs.direct_delta_mush) against the float64 reference.

Tolerances: Ω is float32, smoothed by a float32 Chebyshev expansion cut at a 1e-7 error bound
(vkdqs.methods.ddm.gpu) about the mesh's centre, then moved to each vertex's own frame in float64,
so its values carry float32 roundings of the smoothing (measured: 4e-7 to 1.6e-6 of max |Ω|); Ω is
checked to 1e-5 of max |Ω|. Posed positions go through ``Q̄ - q pᵀ``, a difference of products
of coordinates: measured 1.2e-7 to 3.9e-7 of the extent, checked to 5e-6; normals (measured
1.4e-6 to 2.3e-6) to 1e-4.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import vkdqs
from vkdqs.errors import InputError, LimitError
from vkdqs.mesh import SkinnedMesh
from vkdqs.methods.ddm import gpu as ddm_gpu
from vkdqs.methods.ddm import reference as ddm
from vkdqs.procedural import bend_pose, bone_chain_pose, candy_wrapper, tube, twist_pose

OMEGA_TOL = 1e-5  # of max |Ω|
POSITION_TOL = 5e-6  # of the extent


def _tube16():
    mesh = tube(16 * 40, bone_count=16, influences=4, segments=16, length=4.0)
    return mesh, 16, bone_chain_pose(16, 120.0, length=4.0)


def _candy():
    return candy_wrapper(rings=13, segments=12), 2, twist_pose(150.0, bone_count=2)


def _candy_bend():
    return candy_wrapper(rings=13, segments=12), 2, bend_pose(80.0, bone_count=2)


CASES = {
    "tube16-p10": (
        _tube16,
        dict(iterations=10, rotation_step=2.0, translation_step=1.0, alpha=0.5),
    ),
    "tube16-p3": (_tube16, dict(iterations=3, rotation_step=0.5, translation_step=0.3, alpha=0.2)),
    "candy-p20": (_candy, dict(iterations=20, rotation_step=5.0, translation_step=2.0, alpha=0.5)),
    "candy-bend-defaults": (_candy_bend, {}),
    "candy-p0": (_candy, dict(iterations=0, rotation_step=1.0, translation_step=0.5, alpha=0.3)),
}


def _dense(omega, bones, bone_count):
    out = np.zeros((omega.shape[0], bone_count, 10))
    np.put_along_axis(out, bones.astype(np.int64)[:, :, None], omega, axis=1)
    return out


def _check(mesh, bone_count, pose, params, result, max_bones=8):
    full = ddm.precompute_reference(
        mesh.positions,
        mesh.indices,
        mesh.joints,
        mesh.weights,
        bone_count,
        **{**ddm.DEFAULTS, **params},
    )
    model_omega, ref_bones = ddm.truncate(full, max_bones)  # |Ω[9]| does not change with frame
    ref_omega = ddm.reframe(model_omega, result.origin)
    keep = min(max_bones, bone_count)
    assert result.omega.shape == (mesh.vertex_count, keep, 10)
    assert result.omega.dtype == np.float32 and result.bones.dtype == np.uint32
    scale = np.abs(ref_omega).max()
    # Bones and Ω compared as dense [V, B, 10] (zero where not kept): slot order and ties at
    # the truncation boundary aside, the same bones are kept with the same Ω.
    dense_gpu = _dense(result.omega.astype(np.float64), result.bones, bone_count)
    dense_ref = _dense(ref_omega, ref_bones, bone_count)
    assert np.abs(dense_gpu - dense_ref).max() < OMEGA_TOL * scale
    extent = float(np.ptp(mesh.positions, axis=0).max())
    # The reference poses in the model frame, the GPU's Ω about its origin: the same result.
    want, want_n = ddm.skin_reference(mesh.positions, mesh.normals, model_omega, pose, ref_bones)
    got, got_n = ddm.skin_reference(
        mesh.positions,
        mesh.normals,
        result.omega,  # float32: its dtype sets the threshold of a vanished covariance
        pose,
        result.bones.astype(np.int64),
        origin=result.origin,
    )
    assert np.abs(got - want).max() < POSITION_TOL * extent
    assert np.abs(got_n - want_n).max() < 1e-4


@pytest.mark.parametrize("case", list(CASES))
def test_gpu_precomputation_matches_the_reference(device, case):
    make, params = CASES[case]
    mesh, bone_count, pose = make()
    result = vkdqs.direct_delta_mush(mesh, bone_count=bone_count, device=device, **params)
    assert result.iterations == params.get("iterations", ddm.DEFAULTS["iterations"])
    _check(mesh, bone_count, pose, params, result)


def test_bones_in_several_chunks(device, monkeypatch):
    """A texel budget of 3 bones a chunk: 17 columns (the sum and 16 bones) in 6 chunks,
    merged on the host, give the one-chunk result."""
    mesh, bone_count, pose = _tube16()
    monkeypatch.setattr(ddm_gpu, "TEXEL_BUDGET", 3 * 3 * mesh.vertex_count)
    assert len(ddm_gpu._chunks(bone_count, mesh.vertex_count)) == 6
    params = dict(iterations=10, rotation_step=2.0, translation_step=1.0, alpha=0.5)
    result = vkdqs.direct_delta_mush(mesh, bone_count=bone_count, device=device, **params)
    _check(mesh, bone_count, pose, params, result)


def test_max_bones(device):
    mesh, bone_count, pose = _tube16()
    params = dict(iterations=5, rotation_step=1.0, translation_step=0.5, alpha=0.5)
    result = vkdqs.direct_delta_mush(
        mesh, bone_count=bone_count, device=device, max_bones=4, **params
    )
    _check(mesh, bone_count, pose, params, result, max_bones=4)
    few = vkdqs.direct_delta_mush(
        candy_wrapper(rings=5, segments=6), device=device, max_bones=8, **params
    )
    assert few.max_bones == 2 and few.bone_count == 2  # bone_count from the joints


def test_the_result_is_read_only(device):
    result = vkdqs.direct_delta_mush(
        candy_wrapper(rings=5, segments=6), device=device, iterations=2
    )
    with pytest.raises(ValueError, match="read-only"):
        result.omega[0, 0, 0] = 1.0
    with pytest.raises(AttributeError):
        result.alpha = 0.1


def test_the_progress_bar_counts_the_passes(device, capsys):
    vkdqs.direct_delta_mush(
        candy_wrapper(rings=5, segments=6), device=device, iterations=4, progress=True
    )
    done = re.search(r"(\d+)/\1 ", capsys.readouterr().err)  # the bar reached its total
    assert done and int(done.group(1)) > 1  # passes of the expansion


def test_arrays_are_accepted(device):
    mesh, bone_count, pose = _candy()
    params = dict(iterations=4, rotation_step=1.0, translation_step=0.5, alpha=0.5)
    arrays = (mesh.positions, mesh.indices.reshape(-1, 3), mesh.joints, mesh.weights)
    result = vkdqs.direct_delta_mush(arrays, bone_count=bone_count, device=device, **params)
    _check(mesh, bone_count, pose, params, result)


def test_bad_input_is_refused(device):
    normals = np.tile([0.0, 0.0, 1.0], (3, 1))
    no_faces = SkinnedMesh(np.eye(3), normals, np.zeros((3, 1), int), np.ones((3, 1)), None)
    with pytest.raises(InputError, match="triangles"):
        vkdqs.direct_delta_mush(no_faces, device=device)
    with pytest.raises(InputError, match="max_bones"):
        vkdqs.direct_delta_mush(candy_wrapper(rings=5, segments=6), device=device, max_bones=0)
    with pytest.raises(InputError, match="alpha"):
        vkdqs.direct_delta_mush(candy_wrapper(rings=5, segments=6), device=device, alpha=1.5)
    with pytest.raises(InputError, match="SkinnedMesh"):
        vkdqs.direct_delta_mush([1, 2, 3], device=device)


def test_chebyshev_terms():
    """The cut expansion matches f(x) = (1 + s x)^-p on the spectrum [0, 1 + r] within the bound
    its dropped coefficients give, and no term earlier would do; extreme parameters are
    refused rather than run with a wrong expansion."""
    from numpy.polynomial import chebyshev

    for p, step, spread in ((20, 3.0, 1.0), (10, 2.0, 1.0), (3, 0.5, 1.4), (50, 10.0, 1.0)):
        c = ddm_gpu.chebyshev_terms(p, step, spread, norm_ratio=10.0)
        x = np.linspace(0.0, 1.0 + spread, 2001)
        y = 2.0 * x / (1.0 + spread) - 1.0
        error = np.abs(chebyshev.chebval(y, c) - (1.0 + step * x) ** -float(p)).max()
        assert error <= ddm_gpu.TOLERANCE / 10.0
        shorter = ddm_gpu.chebyshev_terms(p, step, spread, terms=len(c) - 1)
        every = np.abs(ddm_gpu.chebyshev_terms(p, step, spread, terms=ddm_gpu.MAX_TERMS))
        bound = 0.5 * ddm_gpu.TOLERANCE / 10.0
        assert every[len(c) :].sum() <= bound < every[len(c) - 1 :].sum()
        assert len(shorter) == len(c) - 1
    # the defaults' passes on a 100k-vertex mesh (norm ratio ~600): 62, against 20 LU solves
    assert len(ddm_gpu.chebyshev_terms(20, 3.0, 1.0, norm_ratio=1000.0)) == 62
    for p, step in ((200, 1e5), (2, 1e6)):  # f falls from 1 to half within 1e-7 of x = 0
        with pytest.raises(LimitError, match="more than"):
            ddm_gpu.chebyshev_terms(p, step, 1.0)


def test_a_mesh_far_from_its_origin(device):
    """The candy wrapper moved 1000 away: Ω about each vertex keeps the GPU result within the
    tolerances; the same Ω stored in float32 in the model frame would not."""
    base, bone_count, pose = _candy()
    offset = np.array([1000.0, -500.0, 200.0])
    mesh = SkinnedMesh(
        base.positions + offset, base.normals, base.joints, base.weights, base.indices
    )
    move = np.eye(4)
    move[:3, 3] = offset
    pose = move @ pose @ np.linalg.inv(move)  # the same twist about the moved axis
    params = dict(iterations=10, rotation_step=2.0, translation_step=1.0, alpha=0.5)
    result = vkdqs.direct_delta_mush(mesh, bone_count=bone_count, device=device, **params)
    np.testing.assert_array_equal(result.origin, mesh.positions)  # each vertex's own
    _check(mesh, bone_count, pose, params, result)
    model = ddm.reframe(result.omega.astype(np.float64), -result.origin).astype(np.float32)
    bones = result.bones.astype(np.int64)
    good, _ = ddm.skin_reference(
        mesh.positions, mesh.normals, result.omega, pose, bones, origin=result.origin
    )
    bad, _ = ddm.skin_reference(mesh.positions, mesh.normals, model, pose, bones)
    assert np.abs(bad - good).max() > 100 * POSITION_TOL * 2.0


def test_an_irregular_mesh(device):
    """A jittered tube (obtuse triangles: negative cotangent weights, a spectrum bound r of 3.4)
    with a vertex on no triangle: the expansion covers the wider spectrum, the lone vertex
    keeps its own values."""
    base = tube(16 * 30, bone_count=8, influences=4, segments=16, length=4.0)
    rng = np.random.default_rng(3)
    positions = base.positions + rng.normal(scale=0.06, size=base.positions.shape)
    mesh = SkinnedMesh(
        np.vstack([positions, [[5.0, 5.0, 5.0]]]),
        np.vstack([base.normals, [[0.0, 0.0, 1.0]]]),
        np.vstack([base.joints, [[0, 1, 2, 3]]]),
        np.vstack([base.weights, [[1.0, 0.0, 0.0, 0.0]]]),
        base.indices,
    )
    _, _, spread, _ = ddm_gpu._csr_texels(mesh.positions.astype(np.float64), mesh.indices)
    assert spread > 3.0
    params = dict(iterations=10, rotation_step=2.0, translation_step=1.0, alpha=0.5)
    result = vkdqs.direct_delta_mush(mesh, bone_count=8, device=device, **params)
    _check(mesh, 8, bone_chain_pose(8, 90.0, length=4.0), params, result)
    lone = result.omega[-1, 0].astype(np.float64)  # w u uᵀ of its own bone 0, about itself
    # float32 rounding of its values (|u|² ~ 75 about the mesh's centre, where it is smoothed)
    np.testing.assert_allclose(lone, np.eye(10)[9], rtol=0, atol=75 * 1e-7)
