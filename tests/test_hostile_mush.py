"""Hostile input, round four: Delta Mush (vkdqs.methods.delta_mush.reference, DeltaMushSkinner, the
"delta_mush" methods) and Direct Delta Mush (vkdqs.methods.ddm.reference, vkdqs.direct_delta_mush,
method "ddm") given what an attacker or a careless user gives them. Each case ends in a one-line
vkdqs error or a result that matches the float64 reference, within the tolerances of the
existing tests:

* Delta Mush on the GPU (tests/test_delta_mush_gpu.py): positions 1e-5 of the extent, normals
  1e-4 of the reference's;
* Direct Delta Mush's GPU precomputation (tests/test_ddm_gpu.py): Ω 1e-5 of max |Ω|, posed
  positions 5e-6 of the extent, normals 1e-4; its skinning (tests/test_ddm_skinning.py): 2e-5 of
  the extent and 1e-4 against the reference of the same float32 Ω.

Disconnected triangles: measured on this machine (2 cores) at 100k and 1M triangles (300k and 3M
vertices), the CPU parts scale about linearly: delta_mush_bind 0.33 s / 5.6 s,
delta_mush_reference 0.14 s / 2.1 s, topology_arrays 0.07 s / 2.1 s, ddm.precompute_reference
(defaults) 1.9 s / 24 s; on lavapipe, one bone: direct_delta_mush 2.5 s / 26 s (at 1M it failed
before test_one_bone_a_chunk's fix), DeltaMushSkinner's creation 0.39 s / 4.6 s, a pose 0.12 s /
0.93 s. The test runs the CPU parts at 100k.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

import vkdqs
from vkdqs import DeltaMushSkinner, SkinnedMesh, methods, procedural
from vkdqs.engine.skinner import Skinner
from vkdqs.errors import InputError, LimitError
from vkdqs.geometry import vertex_normals
from vkdqs.methods.ddm import gpu as ddm_gpu
from vkdqs.methods.ddm import reference as ddm
from vkdqs.methods.delta_mush import passes as delta_mush_passes
from vkdqs.methods.delta_mush import reference as delta_mush
from vkdqs.methods.delta_mush.passes import topology_arrays
from vkdqs.methods.delta_mush.reference import (
    delta_mush_bind,
    delta_mush_reference,
    mesh_delta_mush,
)

DM_POSITION_TOL = 1e-5  # of the extent
DM_NORMAL_TOL = 1e-4
OMEGA_TOL = 1e-5  # of max |Ω|
DDM_POSITION_TOL = 5e-6  # of the extent, the GPU precomputation against the float64 one
DDM_SKIN_TOL = 2e-5  # of the extent, the shader against the reference of the same Ω
NORMAL_TOL = 1e-4
FAST = dict(iterations=5, rotation_step=1.0, translation_step=1.0, alpha=0.5)


def hostile() -> tuple[SkinnedMesh, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A candy wrapper with a fin (three and four triangles on one edge), an isolated vertex,
    a seam copy (a second vertex at a vertex's position, with a triangle of its own), a
    triangle repeating a vertex and one of zero area."""
    m = procedural.candy_wrapper(rings=9, segments=8)
    p, f = m.positions.astype(np.float64), m.indices.reshape(-1, 3).astype(np.int64)
    n, j, w = len(p), m.joints.astype(np.int64), m.weights.astype(np.float64)
    a, b = f[0][0], f[0][1]
    mid = 0.5 * (p[a] + p[b])
    extra = mid + np.array([[0.0, 0.3, 0.2], [0.1, -0.3, 0.25]])
    positions = np.vstack([p, extra, [p[3] + [0.0, 2.0, 0.0]], [p[5]]])
    faces = np.vstack(
        [
            f,
            [[a, b, n], [b, a, n + 1]],  # the fin: edge (a, b) on four triangles
            [[n + 3, f[10][1], f[10][2]]],  # the copy of vertex 5 (n + 2 is isolated)
            [[f[20][0], f[20][0], f[20][1]]],  # a repeated vertex
            [[f[30][0], f[30][1], n + 3]],
        ]
    )
    # a zero-area triangle: three vertices on one line
    line = p[40] + np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.2, 0.0, 0.0]]) + [0, 0, 3.0]
    positions = np.vstack([positions, line])
    faces = np.vstack([faces, [[n + 4, n + 5, n + 6]]])
    joints = np.vstack([j, j[[a, b, 3, 5, 40, 40, 40]]])
    weights = np.vstack([w, w[[a, b, 3, 5, 40, 40, 40]]])
    normals = vertex_normals(positions, faces.reshape(-1), weighting="area")
    normals[np.linalg.norm(normals, axis=1) < 0.5] = (0.0, 0.0, 1.0)
    mesh = SkinnedMesh(positions, normals, joints, weights, faces.reshape(-1))
    # the references get what the mesh holds (float32 positions, its sorted slots)
    p64, w64 = mesh.positions.astype(np.float64), mesh.weights.astype(np.float64)
    return mesh, p64, faces, mesh.joints.astype(np.int64), w64


def rigid_motion(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    m = np.eye(4)
    m[:3, :3] = q * np.sign(np.linalg.det(q))
    m[:3, 3] = rng.normal(size=3)
    return m


# -- CPU: the float64 references on hostile meshes --------------------------------------------


def test_delta_mush_reference_on_a_hostile_mesh():
    _, p, f, _, _ = hostile()
    bind = delta_mush_bind(p, f)
    assert np.isfinite(bind.deltas).all()
    np.testing.assert_allclose(delta_mush_reference(bind, p)[0], p, rtol=0, atol=1e-12)
    m = rigid_motion(1)
    moved = p @ m[:3, :3].T + m[:3, 3]
    got, normals = delta_mush_reference(bind, moved)
    np.testing.assert_allclose(got, moved, rtol=0, atol=1e-9)
    skinned = p + np.random.default_rng(2).normal(scale=0.05, size=p.shape)
    got, normals = delta_mush_reference(bind, skinned)
    assert np.isfinite(got).all() and np.isfinite(normals).all()
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-12)
    # the isolated vertex keeps its skinned position; the seam copy moves with its original
    iso, copy = len(p) - 5, len(p) - 4
    np.testing.assert_array_equal(got[iso], skinned[iso])
    np.testing.assert_array_equal(bind.canonical[copy], 5)


def test_direct_delta_mush_reference_on_a_hostile_mesh():
    """Finite everywhere; a rigid motion of every bone moves the mesh rigidly; the isolated
    vertex (no smoothing: a vanished covariance) is skinned as LBS, exactly."""
    mesh, p, f, j, w = hostile()
    omega = ddm.precompute_reference(p, f, j, w, 2, **ddm.DEFAULTS)
    assert np.isfinite(omega).all()
    m = rigid_motion(3)
    got, normals = ddm.skin_reference(p, mesh.normals, omega, np.stack([m, m]))
    np.testing.assert_allclose(got, p @ m[:3, :3].T + m[:3, 3], rtol=0, atol=1e-9)
    assert np.isfinite(normals).all()
    pose = procedural.twist_pose(150.0, bone_count=2)
    got, normals = ddm.skin_reference(p, mesh.normals, omega, pose)
    assert np.isfinite(got).all() and np.isfinite(normals).all()
    lbs, _ = methods.get("lbs").reference(mesh, pose)
    iso = len(p) - 5
    np.testing.assert_allclose(got[iso], lbs[iso], rtol=0, atol=1e-12)


BAD_WEIGHTS = {"nan": np.nan, "inf": np.inf, "negative": -0.25}


@pytest.mark.parametrize("value", BAD_WEIGHTS.values(), ids=BAD_WEIGHTS.keys())
def test_bad_weights_are_refused_by_the_reference(value):
    _, p, f, j, w = hostile()
    w = w.copy()
    w[7, 0] = value
    with pytest.raises(InputError, match=r"weights\[7, 0\] = .*: weights must be"):
        ddm.precompute_reference(p, f, j, w, 2, **FAST)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (dict(iterations=float("nan")), "iterations must be an integer >= 0, got nan"),
        (dict(iterations=float("inf")), "iterations must be an integer >= 0"),
        (dict(iterations=True), "iterations must be an integer >= 0, got True"),
        (dict(iterations="5"), "iterations must be an integer >= 0"),
        (dict(rotation_step="1"), "rotation_step must be finite"),
        (dict(alpha=None), "alpha must be in"),
        (dict(bone_count=float("nan")), "bone_count must be an integer >= 1, got nan"),
        (dict(bone_count="2"), "bone_count must be an integer >= 1"),
    ],
)
def test_bad_parameters_are_refused_by_the_reference(change, match):
    _, p, f, j, w = hostile()
    kwargs = {**FAST, "bone_count": 2, **change}
    bone_count = kwargs.pop("bone_count")
    with pytest.raises(InputError, match=match):
        ddm.precompute_reference(p, f, j, w, bone_count, **kwargs)


def test_bad_positions_are_refused():
    _, p, f, j, w = hostile()
    nan = p.copy()
    nan[4, 1] = np.nan
    huge = p * 1e20
    for bad, error, match in (
        (nan, InputError, r"positions\[4, 1\] = nan"),
        (huge, LimitError, "exceeds"),
    ):
        with pytest.raises(error, match=match):
            ddm.precompute_reference(bad, f, j, w, 2, **FAST)
        with pytest.raises(error, match=match):
            delta_mush_bind(bad, f)
    with pytest.raises(InputError, match="skinned_positions must be finite"):
        delta_mush_reference(delta_mush_bind(p, f), nan)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"iterations": float("nan")}, "iterations must be an integer >= 0, got nan"),
        ({"iterations": float("inf")}, "iterations must be an integer >= 0"),
        ({"step": "0.5"}, "step must be in"),
        ({"step": float("nan")}, "step must be in"),
    ],
)
def test_bad_bind_parameters_are_refused(kwargs, match):
    _, p, f, _, _ = hostile()
    with pytest.raises(InputError, match=match):
        delta_mush_bind(p, f, **kwargs)


@pytest.mark.parametrize("faces", ["float", "half", "bool", "str"])
def test_faces_that_are_not_integers_are_refused(faces):
    """Float faces were truncated (1.5 -> 1) and booleans read as 0 and 1: now refused, as
    Direct Delta Mush refuses them."""
    _, p, f, _, _ = hostile()
    bad = {"float": f * 1.0, "half": f + 0.5, "bool": f > 0, "str": f.astype(str)}[faces]
    with pytest.raises(InputError, match="faces must be an integer array"):
        delta_mush_bind(p, bad)
    # no triangles at all, in any spelling, is a mesh the smoothing leaves alone
    assert delta_mush_bind(p, []).vertex_count == len(p)


def test_a_bind_made_or_edited_by_hand_is_refused():
    _, p, f, _, _ = hostile()
    bind = delta_mush_bind(p, f)
    assert not bind.neighbours.flags.writeable and not bind.deltas.flags.writeable
    n = bind.vertex_count
    for change, match in (
        (dict(neighbours=bind.neighbours + n), r"neighbours must be vertex indices in \[0, "),
        (dict(neighbours=bind.neighbours[:-1]), "neighbours must have offsets"),
        (dict(offsets=bind.offsets[::-1]), "offsets must be CSR row starts"),
        (dict(frame_neighbour=bind.frame_neighbour - 1), "frame_neighbour must be vertex"),
        (dict(deltas=np.full_like(bind.deltas, np.nan)), "deltas must be finite"),
        (dict(deltas=bind.deltas[:-1]), r"deltas must have shape \(.*\) \(N = "),
        (dict(faces=bind.faces + n), "faces must be vertex indices"),
        (dict(canonical=bind.canonical[:3]), "canonical must have shape"),
        (dict(iterations=-1), "iterations must be an integer >= 0"),
        (dict(step=2.0), r"step must be in \(0, 1\]"),
    ):
        with pytest.raises(InputError, match=match):
            dataclasses.replace(bind, **change)


def test_a_precomputation_made_or_edited_by_hand_is_refused():
    _, p, f, j, w = hostile()
    omega, bones = ddm.truncate(ddm.precompute_reference(p, f, j, w, 2, **FAST), 8)
    good = ddm.DirectDeltaMush(omega.astype(np.float32), bones, p, 2, **FAST)
    for change, match in (
        (dict(omega=np.full_like(good.omega, np.nan)), "omega must be finite"),
        (dict(omega=good.omega[:, :, :9]), r"omega must be floats of shape \(V, N, 10\)"),
        (dict(bones=good.bones + 2), r"bones must be in \[0, bone_count=2\)"),
        (dict(bones=good.bones[:-1]), "bones must be integers of shape"),
        (dict(origin=np.full_like(p, np.inf)), "origin must be finite"),
        (dict(bone_count=0), "bone_count must be an integer >= 1"),
    ):
        with pytest.raises(InputError, match=match):
            dataclasses.replace(good, **change)


def test_a_hundred_thousand_disconnected_triangles_bind_in_bounded_time():
    """1M triangles take about 16x the time of 100k here (module docstring): linear but for
    the sorts. Every lone triangle collapses under the default smoothing (not mushed: it keeps
    its skinned position); Direct Delta Mush smooths each on its own, as one triangle alone."""
    count = 100_000
    tri = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    p = (tri[None] + 3.0 * np.arange(count)[:, None, None] * np.array([1.0, 0.0, 0.0])).reshape(
        -1, 3
    )
    f = np.arange(3 * count).reshape(-1, 3)
    start = time.perf_counter()
    bind = delta_mush_bind(p, f)
    moved = p + np.array([0.5, -2.0, 1.0])
    got, _ = delta_mush_reference(bind, moved)
    topology_arrays(bind)
    j, w = np.zeros((3 * count, 1), np.int64), np.ones((3 * count, 1))
    omega = ddm.precompute_reference(p, f, j, w, 1, **ddm.DEFAULTS)
    elapsed = time.perf_counter() - start
    assert elapsed < 60.0, f"{elapsed:.1f} s"  # about 2.5 s measured
    np.testing.assert_array_equal(got, moved)
    one = ddm.precompute_reference(tri, [[0, 1, 2]], j[:3], w[:3], 1, **ddm.DEFAULTS)
    last = omega[-3:]
    shifted = ddm.precompute_reference(p[-3:], [[0, 1, 2]], j[:3], w[:3], 1, **ddm.DEFAULTS)
    np.testing.assert_allclose(omega[:3], one, rtol=0, atol=1e-12)
    np.testing.assert_allclose(last, shifted, rtol=1e-9, atol=1e-9)


def test_an_interrupted_reference_precomputation_leaves_nothing_behind(monkeypatch, capsys):
    _, p, f, j, w = hostile()
    want = ddm.precompute_reference(p, f, j, w, 2, **FAST)
    real = ddm.spla.splu
    calls = []

    def splu(matrix):
        solver = real(matrix)

        class Interrupted:
            def solve(self, b):
                calls.append(1)
                if len(calls) == 3:
                    raise KeyboardInterrupt
                return solver.solve(b)

        return Interrupted()

    monkeypatch.setattr(ddm.spla, "splu", splu)
    with pytest.raises(KeyboardInterrupt):
        ddm.precompute_reference(p, f, j, w, 2, progress=True, **FAST)
    monkeypatch.undo()
    np.testing.assert_array_equal(ddm.precompute_reference(p, f, j, w, 2, **FAST), want)


def test_an_interrupted_bind_is_not_kept_on_the_mesh(monkeypatch):
    mesh = hostile()[0]
    monkeypatch.setattr(delta_mush, "frames", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        mesh_delta_mush(mesh)
    monkeypatch.undo()
    assert "_delta_mush" not in mesh.__dict__
    bind = mesh_delta_mush(mesh)
    np.testing.assert_array_equal(bind.deltas, delta_mush_bind(mesh.positions, mesh.indices).deltas)


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def _interrupt_on(monkeypatch, module, name: str, call: int) -> None:
    """``module.name`` raising KeyboardInterrupt at its ``call``-th call (1-based)."""
    real = getattr(module, name)
    count = [0]

    def wrapper(*args, **kwargs):
        count[0] += 1
        if count[0] == call:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)


# -- GPU ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_delta_mush_on_the_gpu_matches_the_reference_on_a_hostile_mesh(device, method):
    mesh = hostile()[0]
    pose = procedural.twist_pose(150.0, bone_count=2)
    with DeltaMushSkinner(device, mesh, bone_count=2, method=method) as s:
        p, n = s.skin(pose)
        wp, wn = delta_mush_reference(s.bind, methods.get(method).reference(mesh, pose)[0])
    assert np.isfinite(p).all() and np.isfinite(n).all()
    np.testing.assert_allclose(p, wp, rtol=0, atol=DM_POSITION_TOL * mesh.extent)
    np.testing.assert_allclose(n, wn, rtol=0, atol=DM_NORMAL_TOL)


def test_direct_delta_mush_on_the_gpu_matches_the_reference_on_a_hostile_mesh(device):
    mesh, p, f, j, w = hostile()
    pose = procedural.twist_pose(150.0, bone_count=2)
    got = vkdqs.direct_delta_mush(mesh, bone_count=2, device=device)
    assert np.isfinite(got.omega).all()
    full = ddm.precompute_reference(p, f, j, w, 2, **ddm.DEFAULTS)
    omega, bones = ddm.truncate(full, 8)
    dense = np.zeros_like(full)
    np.put_along_axis(dense, got.bones.astype(np.int64)[:, :, None], got.omega, axis=1)
    model = ddm.reframe(dense, -p)  # back about the model's origin
    np.testing.assert_allclose(model, full, rtol=0, atol=OMEGA_TOL * np.abs(full).max())
    wp, wn = ddm.skin_reference(p, mesh.normals, omega, pose, bones)
    gp, gn = ddm.skin_reference(p, mesh.normals, got.omega, pose, got.bones, origin=got.origin)
    np.testing.assert_allclose(gp, wp, rtol=0, atol=DDM_POSITION_TOL * mesh.extent)
    np.testing.assert_allclose(gn, wn, rtol=0, atol=NORMAL_TOL)
    with Skinner(device, mesh, bone_count=2, method="ddm", ddm=got) as s:
        sp, sn = s.skin(pose)
    np.testing.assert_allclose(sp, gp, rtol=0, atol=DDM_SKIN_TOL * mesh.extent)
    np.testing.assert_allclose(sn, gn, rtol=0, atol=NORMAL_TOL)


def test_direct_delta_mush_without_triangles_or_vertices(device):
    """No triangles: nothing to smooth, Ω is the rest one (the reference's); no vertices: the
    reference's empty Ω (the GPU path failed on an empty buffer, and without triangles on an
    integer array of cotangent weights)."""
    _, p, _, j, w = hostile()
    none = np.zeros((0, 3), np.int64)
    got = vkdqs.direct_delta_mush((p, none, j, w), bone_count=2, device=device)
    want, _ = ddm.truncate(ddm.precompute_reference(p, none, j, w, 2, **ddm.DEFAULTS), 8)
    dense = np.zeros((len(p), 2, 10))
    np.put_along_axis(dense, got.bones.astype(np.int64)[:, :, None], got.omega, axis=1)
    np.testing.assert_allclose(
        ddm.reframe(dense, -p),
        ddm.precompute_reference(p, none, j, w, 2, **ddm.DEFAULTS),
        rtol=0,
        atol=OMEGA_TOL * np.abs(want).max(),
    )
    empty = vkdqs.direct_delta_mush(
        (np.zeros((0, 3)), none, np.zeros((0, 1), int), np.zeros((0, 1))), device=device
    )
    assert empty.omega.shape == (0, 1, 10) and empty.bones.shape == (0, 1)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"weights": np.nan}, InputError, r"weights\[7, 0\] = nan: weights must be finite"),
        ({"weights": -1.0}, InputError, r"weights\[7, 0\] = -1.0: weights must be >= 0"),
        ({"positions": np.nan}, InputError, r"positions\[7, 0\] = nan"),
        ({"positions": 1e12}, LimitError, "exceeds"),
        ({"joints": -1}, InputError, "joints must be >= 0, got -1"),
        ({"iterations": float("nan")}, InputError, "iterations must be an integer >= 0"),
        ({"max_bones": float("nan")}, InputError, "max_bones must be an integer >= 1"),
        ({"bone_count": float("nan")}, InputError, "bone_count must be an integer >= 1"),
    ],
)
def test_direct_delta_mush_refuses_bad_arrays(device, change, error, match):
    _, p0, f, j0, w0 = hostile()
    p, j, w = p0.copy(), j0.copy(), w0.copy()
    kwargs = {"bone_count": 2}
    for key, value in change.items():
        if key in ("weights", "positions", "joints"):
            {"weights": w, "positions": p, "joints": j}[key][7, 0] = value
        else:
            kwargs[key] = value
    with pytest.raises(error, match=match):
        vkdqs.direct_delta_mush((p, f, j, w), device=device, **kwargs)
    with pytest.raises(InputError, match="joints must be an integer array"):
        vkdqs.direct_delta_mush((p0, f, j0.astype(str), w0), device=device)


def test_one_bone_a_chunk(device, monkeypatch):
    """A mesh too big for two columns a chunk (over TEXEL_BUDGET / 6 vertices: 700k) has the
    sum over its bones alone in the first chunk: that failed (a reshape of no columns) before
    the bones were smoothed; here forced on a small mesh."""
    mesh = procedural.tube(300, bone_count=12, influences=4)
    want = vkdqs.direct_delta_mush(mesh, bone_count=12, device=device)
    monkeypatch.setattr(ddm_gpu, "TEXEL_BUDGET", 3 * mesh.vertex_count)
    assert ddm_gpu._chunks(12, mesh.vertex_count)[0] == [-1]
    got = vkdqs.direct_delta_mush(mesh, bone_count=12, device=device)
    np.testing.assert_array_equal(got.bones, want.bones)
    np.testing.assert_allclose(got.omega, want.omega, rtol=0, atol=1e-6 * np.abs(want.omega).max())


def test_an_interrupted_gpu_precomputation_leaves_the_device_usable(device, monkeypatch):
    """Ctrl-C between two chunks of bones, in the middle of recording a command buffer, and
    between passes: each raises KeyboardInterrupt, and the same call on the same device then
    gives the uninterrupted result, bit for bit."""
    mesh = procedural.tube(300, bone_count=12, influences=4)
    monkeypatch.setattr(ddm_gpu, "TEXEL_BUDGET", 3 * mesh.vertex_count * 4)  # 4 chunks
    want = vkdqs.direct_delta_mush(mesh, bone_count=12, device=device)
    for name, call in (("_reach", 2), ("memory_barrier", 7), ("memory_barrier", 40)):
        with monkeypatch.context() as m:
            _interrupt_on(m, ddm_gpu, name, call)
            with pytest.raises(KeyboardInterrupt):
                vkdqs.direct_delta_mush(mesh, bone_count=12, device=device)
        again = vkdqs.direct_delta_mush(mesh, bone_count=12, device=device)
        np.testing.assert_array_equal(again.omega, want.omega)
        np.testing.assert_array_equal(again.bones, want.bones)


def test_interrupted_skinners_leave_the_mesh_and_device_usable(device, monkeypatch):
    mesh = hostile()[0]
    pose = procedural.twist_pose(150.0, bone_count=2)
    with monkeypatch.context() as m:  # the default precomputation, interrupted
        m.setattr(ddm_gpu, "_precompute", _interrupt)
        with pytest.raises(KeyboardInterrupt):
            Skinner(device, mesh, bone_count=2, method="ddm")
    assert not mesh.__dict__.get("_ddm")
    with Skinner(device, mesh, bone_count=2, method="ddm") as s:
        assert np.isfinite(s.skin(pose)[0]).all()
    with monkeypatch.context() as m:  # the passes' texels, interrupted after the bind
        _interrupt_on(m, delta_mush_passes, "texel_buffer", 3)
        with pytest.raises(KeyboardInterrupt):
            Skinner(device, mesh, bone_count=2, method="delta_mush")
    want = delta_mush_reference(mesh_delta_mush(mesh), methods.get("lbs").reference(mesh, pose)[0])
    with Skinner(device, mesh, bone_count=2, method="delta_mush") as s:
        with monkeypatch.context() as m:  # a pose's recording, interrupted
            _interrupt_on(m, delta_mush_passes, "compute_barrier", 2)
            with pytest.raises(KeyboardInterrupt):
                s.skin(pose)
        p, n = s.skin(pose)
    np.testing.assert_allclose(p, want[0], rtol=0, atol=DM_POSITION_TOL * mesh.extent)
    np.testing.assert_allclose(n, want[1], rtol=0, atol=DM_NORMAL_TOL)


def test_precomputations_of_another_mesh_are_refused(device):
    candy = procedural.candy_wrapper(rings=9, segments=8)
    tube = procedural.tube(300, bone_count=12, influences=4)
    of_tube = vkdqs.direct_delta_mush(tube, bone_count=12, device=device)
    with pytest.raises(InputError, match=r"another mesh \(300 vertices\) than this one \(90\)"):
        Skinner(device, candy, bone_count=2, method="ddm", ddm=of_tube)
    moved = SkinnedMesh(tube.positions + 1.0, tube.normals, tube.joints, tube.weights, tube.indices)
    with pytest.raises(InputError, match="its rest positions must be the mesh's"):
        Skinner(device, moved, bone_count=12, method="ddm", ddm=of_tube)
    of_candy4 = vkdqs.direct_delta_mush(candy, bone_count=4, device=device)
    with pytest.raises(InputError, match=r"beyond bone_count=2 .*computed for 4 bones"):
        Skinner(device, candy, bone_count=2, method="ddm", ddm=of_candy4)
    bind = delta_mush_bind(tube.positions, tube.indices)
    with pytest.raises(InputError, match=r"another mesh \(300 vertices\) than this one \(90\)"):
        Skinner(device, candy, bone_count=2, method="delta_mush", delta_mush=bind)


def test_a_precomputation_of_other_weights_is_refused(device):
    """The same mesh weighted otherwise: the ddm gives weight to bones that no vertex of the
    mesh is weighted to (smoothing keeps a weightless bone's Ω exactly zero), refused."""
    tube = procedural.tube(300, bone_count=12, influences=4)
    of_tube = vkdqs.direct_delta_mush(tube, bone_count=12, device=device)
    halved = SkinnedMesh(tube.positions, tube.normals, tube.joints // 2, tube.weights, tube.indices)
    with pytest.raises(
        InputError, match=r"no vertex of this mesh is weighted to bone \d+: .*other"
    ):
        Skinner(device, halved, bone_count=12, method="ddm", ddm=of_tube)
    with Skinner(device, tube, bone_count=12, method="ddm", ddm=of_tube):  # its own: taken
        pass


def test_a_precomputation_for_fewer_bones_serves_a_larger_skeleton(device):
    """A ddm computed for 2 bones names only bones 0 and 1; in a 4-bone skeleton the other
    two carry no weight, so their Ω is zero and the ddm is the 4-bone one's: the Skinner takes
    it and skins what the 4-bone precomputation skins (one naming a bone past the skeleton is
    refused: test_precomputations_of_another_mesh_are_refused)."""
    candy = procedural.candy_wrapper(rings=9, segments=8)
    of_two = vkdqs.direct_delta_mush(candy, bone_count=2, device=device)
    of_four = vkdqs.direct_delta_mush(candy, bone_count=4, device=device)
    pose = np.broadcast_to(np.eye(4), (4, 4, 4)).copy()
    pose[:2] = procedural.twist_pose(90.0)
    pose[3, :3, 3] = (5.0, 0.0, 0.0)  # a bone no vertex follows
    got = []
    for pre in (of_two, of_four):
        with Skinner(device, candy, bone_count=4, method="ddm", ddm=pre) as s:
            got.append(s.skin(pose)[0])
    np.testing.assert_allclose(got[0], got[1], rtol=0, atol=1e-5 * candy.extent)


def test_a_bind_of_other_triangles_is_refused(device):
    candy = procedural.candy_wrapper(rings=9, segments=8)
    faces = candy.indices.reshape(-1, 3)
    other = SkinnedMesh(
        candy.positions, candy.normals, candy.joints, candy.weights, faces[:, ::-1].ravel()
    )
    bind = delta_mush_bind(candy.positions, candy.indices)
    with pytest.raises(InputError, match=r"triangles|faces"):
        Skinner(device, other, bone_count=2, method="delta_mush", delta_mush=bind).close()
