"""Morph targets: the float64 reference, SkinnedMesh, the GPU paths (compute, readback, rendering)
against "morph, then skin" in float64, and the glTF loader (targets, weights, animation
channels) against what the fixtures wrote."""

from __future__ import annotations

import itertools
import re
import zlib

import numpy as np
import pytest

from vkdqs import InputError, LimitError, SkinnedMesh, dq, reference
from vkdqs import methods as registry
from vkdqs import shader_interface as si
from vkdqs.app.scenes import GltfScenePlayer
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gltf import GltfError, GltfWarning, load_gltf
from vkdqs.gltf.parts import scene_parts
from vkdqs.shader_interface import morphs as si_morphs

from .gltf_fixtures import BYTE, SHORT
from .gltf_fixtures_morph import (
    MESH_WEIGHTS,
    QUAD_NODE_WEIGHTS,
    TARGET_NAMES,
    make_morph_model,
)
from .imaging import CLEAR, covered, pixel_box, projected_box

PATHS = ("compute", "vertex")
W, H = 320, 240


def morph_mesh(
    rng, n, influences, bone_count, targets=5, *, normals=True, extra=0, layout="dense", **kw
):
    """A random mesh with morph targets; ``layout="sparse"`` zeroes 80 % of the (target, vertex)
    deltas (whole vertices untouched, a target moving one vertex, one moving none), so the
    Skinner packs them sparse; "dense": every target moves every vertex."""
    positions = rng.uniform(-1.0, 1.0, (n, 3)) * np.array([2.0, 1.0, 0.5])
    nrm = rng.normal(size=(n, 3))
    k = influences + extra
    joints = np.stack([rng.permutation(bone_count)[:k] for _ in range(n)])
    weights = rng.uniform(0.05, 1.0, (n, k))
    dp = rng.normal(size=(targets, n, 3)) * 0.2
    dn = rng.normal(size=(targets, n, 3)) * 0.3 if normals else None
    if layout == "sparse":
        keep = rng.uniform(size=(targets, n)) < 0.2
        keep[:, : n // 10] = False  # vertices no target moves
        keep[0] = False
        keep[0, n // 2] = True  # a target that moves one vertex
        keep[-1] = False  # a target whose deltas are all zero
        for d in (dp, dn):
            if d is not None:
                d *= keep[:, :, None]
    return SkinnedMesh(positions, nrm, joints, weights, morph_positions=dp, morph_normals=dn, **kw)


def morphed(mesh, w):
    """The float64 rest mesh after the morph (the reference's first step)."""
    return reference.morph(
        mesh.positions, mesh.normals, mesh.morph_positions, mesh.morph_normals, w
    )


def random_weights(rng, m, zeros=()):
    w = rng.uniform(-0.5, 1.2, m).astype(np.float32)
    w[list(zeros)] = 0.0
    return w


def assert_close(mesh, got, want, normal_atol=1e-5):
    p, n = got
    wp, wn = want
    assert p.dtype == n.dtype == np.float32
    assert np.isfinite(p).all() and np.isfinite(n).all()
    scale = max(mesh.extent, np.abs(wp).max())
    np.testing.assert_allclose(p, wp, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(n, wn, rtol=0, atol=normal_atol)


# -- the float64 reference ---------------------------------------------------------------------


def test_reference_morph_is_the_weighted_sum():
    rng = np.random.default_rng(1)
    mesh = morph_mesh(rng, 50, 2, 4, targets=3)
    w = np.array([0.5, -1.0, 2.0])
    p, n = morphed(mesh, w)
    want_p = mesh.positions + sum(w[t] * mesh.morph_positions[t] for t in range(3))
    np.testing.assert_allclose(p, want_p, atol=1e-12)
    unit = mesh.normals / np.linalg.norm(mesh.normals.astype(np.float64), axis=1, keepdims=True)
    want_n = unit + sum(w[t] * mesh.morph_normals[t] for t in range(3))
    want_n /= np.linalg.norm(want_n, axis=1, keepdims=True)
    np.testing.assert_allclose(n, want_n, atol=1e-12)
    # zero weights: the rest mesh; a normal sum of zero keeps the rest normal
    p0, n0 = morphed(mesh, np.zeros(3))
    np.testing.assert_allclose(p0, mesh.positions, atol=0)
    np.testing.assert_allclose(n0, mesh.normals, atol=1e-7)
    cancel = -mesh.normals.astype(np.float64)[None]
    p1, n1 = reference.morph(mesh.positions, mesh.normals, None, cancel, [1.0])
    np.testing.assert_allclose(n1, mesh.normals, atol=1e-7)
    np.testing.assert_allclose(p1, mesh.positions, atol=0)
    with pytest.raises(InputError, match=r"morph_positions must have shape \(2, 50, 3\)"):
        reference.morph(mesh.positions, mesh.normals, mesh.morph_positions, None, [1.0, 2.0])


def test_mesh_morph_validation():
    rng = np.random.default_rng(2)
    base = morph_mesh(rng, 10, 2, 4, targets=2)
    args = (base.positions, base.normals, base.joints, base.weights)
    assert base.morph_target_count == 2
    assert base.morph_positions.dtype == np.float32 and base.morph_positions.shape == (2, 10, 3)
    assert not base.morph_positions.flags.writeable
    only_normals = SkinnedMesh(*args, morph_normals=base.morph_normals)
    assert only_normals.morph_positions is None and only_normals.morph_target_count == 2
    nan = base.morph_positions.copy()
    nan[1, 3, 2] = np.nan
    for kw, words in (
        ({"morph_positions": np.zeros((2, 9, 3))}, "morph_positions must have shape (M, 10, 3)"),
        ({"morph_positions": np.zeros((10, 3))}, "morph_positions must have shape (M, 10, 3)"),
        ({"morph_normals": np.zeros((0, 10, 3))}, "morph_normals must have shape (M, 10, 3)"),
        ({"morph_positions": nan}, "morph_positions[1, 3, 2] = nan"),
        (
            {"morph_positions": np.zeros((2, 10, 3)), "morph_normals": np.zeros((3, 10, 3))},
            "morph_positions has 2 targets but morph_normals has 3",
        ),
    ):
        with pytest.raises(InputError, match=re.escape(words)):
            SkinnedMesh(*args, **kw)
    with pytest.raises(LimitError, match=r"morph_positions\[0, 0, 0\] = 1e\+30"):
        SkinnedMesh(*args, morph_positions=np.full((1, 10, 3), 1e30))


# -- the GPU paths against "morph, then skin" in float64 -------------------------------------


def _pose_and_reference(rng, method, mesh, bones, w, centers=None, rest=None):
    """A pose for ``method``, the float64 reference of morph + skin, and (dqs_blender) the rest
    frames (``rest``, or new ones)."""
    p, n = morphed(mesh, w)
    args = (p, n, mesh.joints, mesh.weights)
    rigid = dq.random_rigid(bones, rng, max_angle=np.pi, max_translation=1.0)
    mats = dq.to_matrices(rigid)
    if method == "dqs":
        return rigid, reference.skin_dqs(*args, rigid), None
    if method == "lbs":
        return mats, reference.skin_lbs(*args, mats), None
    if method == "dqs_scale":
        scaled = mats.copy()
        scaled[:, :3, :3] *= rng.uniform(0.7, 1.4, (bones, 1, 3))
        real_dual, scales = dq.decompose_skinning_matrices(scaled)
        return scaled, reference.skin_dqs_scaled(*args, real_dual, scales), None
    if method == "blend":
        return mats, reference.skin_blend(*args, mats, mesh.dqs_blend), None
    if method == "cor":
        return mats, reference.skin_cor(*args, mats, centers), None
    if rest is None:
        rest = dq.to_matrices(dq.random_rigid(bones, rng))
    scaled = mats.copy()
    scaled[:, :3, :3] *= rng.uniform(0.8, 1.2, (bones, 1, 3))
    return scaled, reference.skin_dqs_blender(*args, scaled, rest), rest


#: The methods that skin a random rig's joints and weights (Direct Delta Mush's morphs, on a
#: surface it smooths: tests/test_ddm_skinning.py; classic Delta Mush's, LBS's passes:
#: tests/test_delta_mush_method.py)
INFLUENCE_METHODS = [m.name for m in registry.METHODS.values() if m.influences and not m.base]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("slots", (4, 8))
@pytest.mark.parametrize("method", INFLUENCE_METHODS)
@pytest.mark.parametrize("layout", ("sparse", "dense"))
def test_morph_then_skin_matches_reference(device, path, slots, method, layout):
    rng = np.random.default_rng(zlib.crc32(f"{path} {slots} {method} {layout}".encode()))
    bones, n, m = 12, 700, 6
    blend = rng.uniform(0.0, 1.0, n) if method == "blend" else None
    mesh = morph_mesh(rng, n, 4, bones, targets=m, extra=slots - 4, dqs_blend=blend, layout=layout)
    assert mesh.slots == slots
    centers = rng.uniform(-1.0, 1.0, (n, 3)) if method == "cor" else None
    # the blend's normal mixes two unit normals before normalizing (see tests/test_methods.py)
    normal_atol = 3e-5 if method == "blend" else 1e-5
    w = random_weights(rng, m, zeros=(1, 4))
    pose, want, rest = _pose_and_reference(rng, method, mesh, bones, w, centers)
    kw = {"centers": centers} if method == "cor" else {}
    with Skinner(
        device, mesh, bone_count=bones, method=method, path=path, rest_matrices=rest, **kw
    ) as skinner:
        assert skinner.morph_packing.sparse == (layout == "sparse")
        assert_close(mesh, skinner.skin(pose, morph_weights=w), want, normal_atol)
        # without weights: the rest shape
        pose0, want0, _ = _pose_and_reference(rng, method, mesh, bones, np.zeros(m), centers, rest)
        assert_close(mesh, skinner.skin(pose0), want0, normal_atol)
        # a batch: one row of weights per pose (one all zero)
        weights = np.stack([w, np.zeros(m, np.float32), random_weights(rng, m)])
        refs = [
            _pose_and_reference(rng, method, mesh, bones, row, centers, rest) for row in weights
        ]
        poses = np.stack([r[0] for r in refs])
        many_p, many_n = skinner.skin_many(poses, morph_weights=weights)
        for i, r in enumerate(refs):
            assert_close(mesh, (many_p[i], many_n[i]), r[1], normal_atol)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("layout", ("sparse", "dense"))
def test_positions_only_and_normals_only_targets(device, path, layout):
    rng = np.random.default_rng(8)
    full = morph_mesh(rng, 300, 3, 6, targets=4, layout=layout)
    args = (full.positions, full.normals, full.joints, full.weights)
    bones = dq.random_rigid(6, rng)
    w = random_weights(rng, 4, zeros=(2,))
    for kw in ({"morph_positions": full.morph_positions}, {"morph_normals": full.morph_normals}):
        mesh = SkinnedMesh(*args, **kw)
        want = reference.skin_dqs(
            *reference.morph(
                mesh.positions, mesh.normals, mesh.morph_positions, mesh.morph_normals, w
            ),
            mesh.joints,
            mesh.weights,
            bones,
        )
        with Skinner(device, mesh, bone_count=6, path=path) as skinner:
            assert skinner.morph_packing.sparse == (layout == "sparse")
            assert_close(mesh, skinner.skin(bones, w), want)


def test_morph_weights_bad_input(device):
    rng = np.random.default_rng(9)
    mesh = morph_mesh(rng, 40, 2, 4, targets=3)
    plain = SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    bones = dq.random_rigid(4, rng)
    with Skinner(device, mesh, bone_count=4) as skinner:
        for bad, words in (
            (np.zeros(2), "morph_weights must have shape (..., 3)"),
            (np.zeros((1, 3)), "morph_weights must have shape (3,)"),
            ([0.0, np.nan, 0.0], "morph_weights[1] = nan"),
            ([0.0, 0.0, np.inf], "morph_weights[2] = inf"),
            ("abc", "morph_weights must be a real numeric array"),
        ):
            with pytest.raises(InputError, match=re.escape(words)):
                skinner.skin(bones, morph_weights=bad)
        with pytest.raises(InputError, match=re.escape("morph_weights must have shape (2, 3)")):
            skinner.skin_many(np.stack([bones, bones]), morph_weights=np.zeros((3, 3)))
    with Skinner(device, plain, bone_count=4) as skinner:
        with pytest.raises(InputError, match="the mesh has no morph targets"):
            skinner.skin(bones, morph_weights=[1.0])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("layout", ("sparse", "dense"))
def test_many_targets_few_or_all_active(device, path, layout):
    """100 targets, 8 of them active, then all of them: any number may be active."""
    rng = np.random.default_rng(10)
    m = 100
    mesh = morph_mesh(rng, 200, 2, 3, targets=m, layout=layout)
    bones = dq.random_rigid(3, rng)
    with Skinner(device, mesh, bone_count=3, path=path) as skinner:
        assert skinner.morph_packing.sparse == (layout == "sparse")
        w = np.zeros(m, np.float32)
        w[rng.choice(m, 8, replace=False)] = rng.uniform(-0.5, 1.2, 8)
        for weights in (w, random_weights(rng, m)):
            want = reference.skin_dqs(*morphed(mesh, weights), mesh.joints, mesh.weights, bones)
            assert_close(mesh, skinner.skin(bones, weights), want)


@pytest.mark.parametrize("path", PATHS)
def test_morph_runs_skip_vertices_without_deltas(device, path):
    """Targets that move two regions far apart (and one vertex): a morphing pose runs the morph
    code on those runs only and the plain pipeline on the rest, and matches the reference."""
    rng = np.random.default_rng(12)
    n, m, bones = 30_000, 4, 5
    full = morph_mesh(rng, n, 3, bones, targets=m)
    keep = np.zeros((m, n, 1))
    keep[0, 5] = 1.0
    keep[1:3, 12_000:13_000] = 1.0
    keep[3, 12_500:12_600] = 1.0
    keep[2, 25_000:25_100] = 1.0
    dp, dn = full.morph_positions * keep, full.morph_normals * keep
    mesh = SkinnedMesh(
        *(full.positions, full.normals, full.joints, full.weights),
        morph_positions=dp,
        morph_normals=dn,
    )
    with Skinner(device, mesh, bone_count=bones, path=path) as skinner:
        size = si.LOCAL_SIZE
        assert skinner._morph_runs == (
            (0, 1),
            (12_000 // size, 13_000 // size - 12_000 // size + 1),
            (25_000 // size, 25_100 // size - 25_000 // size + 1),
        )
        covered_groups = sum(c for _, c in skinner._morph_runs + skinner._plain_runs)
        assert covered_groups == -(-n // size)
        weights = np.stack([random_weights(rng, m), np.zeros(m, np.float32), np.ones(m)])
        poses = np.stack([dq.random_rigid(bones, rng) for _ in weights])
        many_p, many_n = skinner.skin_many(poses, morph_weights=weights)
        for i, w in enumerate(weights):
            want = reference.skin_dqs(*morphed(mesh, w), mesh.joints, mesh.weights, poses[i])
            assert_close(mesh, skinner.skin(poses[i], w), want)
            assert_close(mesh, (many_p[i], many_n[i]), want)


def test_morph_workgroup_runs():
    """Runs of workgroups with deltas: gaps under MORPH_RUN_GAP vertices merged, more than
    MAX_MORPH_RUNS runs merged into one; none without deltas; everything for the dense layout."""
    from vkdqs.engine.morphs import MAX_MORPH_RUNS, MORPH_RUN_GAP, morph_workgroup_runs

    size, n = 64, 64 * 1000
    gap = MORPH_RUN_GAP // size
    dp = np.zeros((2, n, 3), np.float32)
    dp[0, 10 * size, 0] = 1.0  # group 10
    dp[1, (11 + gap - 1) * size, 0] = 1.0  # a gap one group short of MORPH_RUN_GAP: merged
    dp[1, (12 + 3 * gap) * size - 1, 0] = 1.0  # far: a run of its own
    runs, plain = morph_workgroup_runs(si.pack_morphs(dp, None), size)
    assert runs == ((10, gap + 1), (11 + 3 * gap, 1))
    assert plain == ((0, 10), (11 + gap, 2 * gap), (12 + 3 * gap, 1000 - 12 - 3 * gap))
    big = 64 * 4000
    many = np.zeros((1, big, 3), np.float32)
    many[0, :: 2 * MORPH_RUN_GAP, 0] = 1.0  # runs of one group, 2 * gap groups apart
    count = -(-big // (2 * MORPH_RUN_GAP))
    assert count > MAX_MORPH_RUNS
    runs, plain = morph_workgroup_runs(si.pack_morphs(many, None), size)
    last = (count - 1) * 2 * gap
    assert runs == ((0, last + 1),) and plain == ((last + 1, 4000 - last - 1),)
    assert morph_workgroup_runs(si.pack_morphs(dp * 0, None), size) == ((), ((0, 1000),))
    assert morph_workgroup_runs(si.pack_morphs(dp + 1, None), size) == (((0, 1000),), ())


def test_more_targets_than_the_limit(device):
    rng = np.random.default_rng(11)
    m = si.MAX_MORPH_TARGETS + 1
    n = 4
    dp = np.zeros((m, n, 3))
    dp[np.arange(m), np.arange(m) % n, 0] = 1.0  # sparse: each target moves one vertex
    pos, nrm = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    mesh = SkinnedMesh(pos, nrm, [0] * n, [1.0] * n, [0, 1, 2], morph_positions=dp)
    words = f"at most {si.MAX_MORPH_TARGETS}"
    with pytest.raises(LimitError, match=words):
        Skinner(device, mesh, bone_count=1)
    with (
        OffscreenTarget(device, 8, 8) as target,
        Renderer(device, target) as r,
        pytest.raises(LimitError, match=words),
    ):
        r.add_mesh(mesh)
    # as many as the limit, all active, is fine
    mesh = SkinnedMesh(pos, nrm, [0] * n, [1.0] * n, morph_positions=dp[:-1])
    w = rng.uniform(-1.0, 1.0, m - 1).astype(np.float32)
    bones = dq.random_rigid(1, rng)
    with Skinner(device, mesh, bone_count=1) as skinner:
        assert skinner.morph_packing.sparse
        want = reference.skin_dqs(*morphed(mesh, w), mesh.joints, mesh.weights, bones)
        assert_close(mesh, skinner.skin(bones, w), want)


# -- rendering ---------------------------------------------------------------------------------


def _quad_mesh(layout="dense"):
    quad = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float64)
    dp = np.zeros((2, 4, 3))
    dp[0, :, 0] = 1.0  # right
    dp[1, :, 1] = -0.5  # down
    if layout == "sparse":  # the right edge moves right, the bottom edge down
        dp[0, [0, 2]] = 0.0
        dp[1, [2, 3]] = 0.0
    return SkinnedMesh(
        quad,
        np.tile([0.0, 0.0, 1.0], (4, 1)),
        np.zeros(4, np.uint32),
        np.ones(4),
        [0, 1, 2, 2, 1, 3],
        morph_positions=dp,
    )


@pytest.mark.parametrize("method", ("none", "dqs", "lbs"))
@pytest.mark.parametrize("layout", ("sparse", "dense"))
def test_rendered_morph_moves_the_part(device, method, layout):
    """An unskinned ("none") or skinned quad, morphed: the covered pixels are the projected box
    of the morphed (and skinned) quad."""
    mesh = _quad_mesh(layout)
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as r,
    ):
        rm = r.add_mesh(mesh)
        assert rm.morph_packing.sparse == (layout == "sparse")
        inst = r.add_instance(rm, bone_count=1, method=method)
        r.camera.frame(np.array([-0.5, -1.0, -0.5]), np.array([2.5, 1.5, 0.5]), aspect=W / H)
        boxes = []
        for w in ([0.0, 0.0], [1.0, 0.0], [0.5, 1.0]):
            bone = dq.to_matrices(
                dq.random_rigid(1, np.random.default_rng(1), max_angle=0.3, max_translation=0.2)
            )
            pose = np.eye(4)[None] if method == "none" else bone
            inst.set_pose(pose, morph_weights=w)
            img = r.render_image()
            pts = morphed(mesh, np.array(w))[0]
            if method != "none":
                pts = pts @ bone[0, :3, :3].T + bone[0, :3, 3]
            want = projected_box(r.camera, pts, W, H)
            np.testing.assert_allclose(pixel_box(covered(img)), want, atol=1.5)
            boxes.append(pixel_box(covered(img)))
        assert boxes[1][2] > boxes[0][2] + 20  # its right edge moved right
        inst.set_pose(pose)  # no weights: the rest shape again
        np.testing.assert_allclose(pixel_box(covered(r.render_image())), boxes[0], atol=0.01)
        with pytest.raises(InputError, match=re.escape("morph_weights must have shape (2,)")):
            inst.set_pose(np.eye(4)[None], morph_weights=[[1.0, 0.0]])


# -- glTF ---------------------------------------------------------------------------------------


def _load(tmp_path, **kw):
    model = make_morph_model(**kw)
    path = tmp_path / "morph.glb"
    model.save(path)
    return model, load_gltf(path)


@pytest.mark.parametrize(
    "quantized", (None, (BYTE, True), (SHORT, True), (BYTE, False), (SHORT, False))
)
def test_gltf_targets_decode_as_written(tmp_path, quantized):
    model, scene = _load(tmp_path, quantized=quantized)
    tube, face = scene.meshes
    assert tube.morph_target_count == 3 and face.morph_target_count == 2
    assert tube.target_names == tuple(TARGET_NAMES) and face.target_names == ()
    np.testing.assert_array_equal(tube.weights, MESH_WEIGHTS)
    assert face.weights is None
    np.testing.assert_array_equal(scene.nodes[4].weights, QUAD_NODE_WEIGHTS)
    mesh = scene.skinned_mesh(0)
    np.testing.assert_array_equal(mesh.morph_positions, model.morph_positions.astype(np.float32))
    np.testing.assert_array_equal(mesh.morph_normals, model.morph_normals.astype(np.float32))
    parts = scene_parts(scene)
    rigid = next(p for p in parts if p.kind == "rigid")
    np.testing.assert_array_equal(rigid.geometry.morph_positions, model.quad_morph_positions)
    assert rigid.geometry.morph_normals is None
    info = scene.info()["meshes"][0]
    assert info["morph_targets"] == 3 and info["morph_target_names"] == TARGET_NAMES
    assert "3 morph targets ('bulge', 'shift', 'tilt')" in scene.summary()


def _sample(keys, t):
    """glTF sampling of one weights channel, written out independently of vkdqs."""
    interp, times, values, in_t, out_t = keys
    times = times.astype(np.float64)
    if t <= times[0]:
        return values[0]
    if t >= times[-1]:
        return values[-1]
    k = int(np.searchsorted(times, t, side="right")) - 1
    td = times[k + 1] - times[k]
    u = (t - times[k]) / td
    if interp == "STEP":
        return values[k]
    if interp == "LINEAR":
        return (1 - u) * values[k] + u * values[k + 1]
    h00, h10 = 2 * u**3 - 3 * u**2 + 1, u**3 - 2 * u**2 + u
    h01, h11 = -2 * u**3 + 3 * u**2, u**3 - u**2
    return h00 * values[k] + h10 * td * out_t[k] + h01 * values[k + 1] + h11 * td * in_t[k + 1]


@pytest.mark.parametrize("interpolation", ("STEP", "LINEAR", "CUBICSPLINE"))
def test_gltf_weights_precedence_and_sampling(tmp_path, interpolation):
    model, scene = _load(tmp_path, interpolation=interpolation)
    for t in (-1.0, 0.0, 0.2, 0.5, 0.9, 1.5, 3.0):
        for node, mesh in ((3, 0), (4, 1)):
            got = scene.morph_weights(mesh, node=node, animation=0, time=t)
            np.testing.assert_allclose(got, _sample(model.weight_keys[node], t), atol=1e-6)
        # animation 1 does not animate weights: the node's, else the mesh's
        np.testing.assert_array_equal(
            scene.morph_weights(0, animation="bones only", time=t), MESH_WEIGHTS
        )
        np.testing.assert_array_equal(
            scene.morph_weights(1, animation=1, time=t), QUAD_NODE_WEIGHTS
        )
    # no animation: node, then mesh; the default node is the first using the mesh
    np.testing.assert_array_equal(scene.morph_weights(1), QUAD_NODE_WEIGHTS)
    np.testing.assert_array_equal(scene.morph_weights(0), MESH_WEIGHTS)
    with pytest.raises(InputError, match=r"nodes\[4\] does not draw meshes\[0\]"):
        scene.morph_weights(0, node=4)
    with pytest.raises(InputError, match="mesh 7 out of range"):
        scene.morph_weights(7)


def _bad(tmp_path, edit):
    model = make_morph_model()
    edit(model.document, model)
    path = tmp_path / "bad.glb"
    model.save(path)
    return path


def _prim(doc, m=0, p=0):
    return doc["meshes"][m]["primitives"][p]


BAD_CASES = {
    "target_count_differs": (
        lambda d, m: _prim(d, 0, 1)["targets"].pop(),
        r"meshes\[0\]\.primitives\[1\]\.targets: 2 morph targets, but primitives\[0\] has 3",
    ),
    "mesh_weights_length": (
        lambda d, m: d["meshes"][0].update(weights=[1.0]),
        r"meshes\[0\]\.weights: has 1 values for 3 morph targets",
    ),
    "node_weights_length": (
        lambda d, m: d["nodes"][4].update(weights=[1.0, 2.0, 3.0]),
        r"nodes\[4\]\.weights: has 3 values but meshes\[1\] has 2 morph targets",
    ),
    "node_weights_not_numbers": (
        lambda d, m: d["nodes"][4].update(weights=[1.0, "x"]),
        r"nodes\[4\]\.weights\[1\]: must be a number",
    ),
    "channel_output_count": (
        lambda d, m: d["animations"][0]["samplers"][0].update(
            output=d["animations"][0]["samplers"][1]["output"]
        ),
        r"animations\[0\]\.samplers\[0\]\.output: accessors\[\d+\] has 6 elements; LINEAR with "
        r"3 keys of 3 morph weights needs 9",
    ),
    "target_not_vec3": (
        lambda d, m: _prim(d)["targets"][0].update(POSITION=_prim(d)["attributes"]["JOINTS_0"]),
        r"meshes\[0\]\.primitives\[0\]\.targets\[0\]\.POSITION: accessors\[\d+\] has type VEC4",
    ),
    "target_count_vs_position": (
        lambda d, m: _prim(d)["targets"][0].update(POSITION=_prim(d, 1)["targets"][0]["POSITION"]),
        r"meshes\[0\]\.primitives\[0\]\.targets\[0\]\.POSITION: has 4 elements but POSITION has 30",
    ),
    "target_not_object": (
        lambda d, m: _prim(d, 1, 0)["targets"].__setitem__(0, 5),
        r"meshes\[1\]\.primitives\[0\]\.targets\[0\]: must be an object",
    ),
}


@pytest.mark.parametrize("case", BAD_CASES)
def test_gltf_bad_morph_data(tmp_path, case):
    edit, pattern = BAD_CASES[case]
    with pytest.raises(GltfError, match=pattern):
        load_gltf(_bad(tmp_path, edit))


#: Morph data that weights nothing (a node without a mesh, a mesh without targets): ignored,
#: with a warning naming the JSON path; what the file's other morph targets do is unchanged.
IDLE_CASES = {
    "node_weights_without_mesh": (
        lambda d, m: d["nodes"][1].update(weights=[1.0]),
        [r"nodes\[1\]\.weights: a node without a mesh has no morph targets to weight; ignored"],
        [(0, 3), (1, 4)],
    ),
    "channel_on_mesh_without_targets": (
        lambda d, m: d["animations"][0]["channels"][0]["target"].update(node=0),
        [
            r"animations\[0\]\.channels\[0\]\.target: animates the weights of nodes\[0\], which "
            r"has no mesh with morph targets; the channel is ignored"
        ],
        [(1, 4)],  # the tube's channel is the one moved
    ),
    # the quad's only primitive: its node's weights and its channel then weight nothing
    "targets_empty": (
        lambda d, m: _prim(d, 1, 0).update(targets=[]),
        [
            r"meshes\[1\]\.primitives\[0\]\.targets: is empty: the primitive has no morph targets",
            r"nodes\[4\]\.weights: meshes\[1\] has no morph targets to weight; ignored",
            r"animations\[0\]\.channels\[1\]\.target: animates the weights of nodes\[4\]",
        ],
        [(0, 3)],
    ),
}


@pytest.mark.parametrize("case", sorted(IDLE_CASES))
def test_gltf_morph_data_that_weights_nothing_warns(tmp_path, case):
    edit, patterns, untouched = IDLE_CASES[case]
    _, plain = _load(tmp_path)
    with pytest.warns(GltfWarning) as caught:
        scene = load_gltf(_bad(tmp_path, edit))
    messages = [str(w.message) for w in caught]
    assert len(messages) == len(patterns), messages
    for pattern, message in zip(patterns, messages, strict=True):
        assert re.search(pattern, message), (pattern, message)
    for (mesh, node), t in itertools.product(untouched, (0.0, 0.5, 1.5)):
        np.testing.assert_array_equal(
            scene.morph_weights(mesh, node=node, animation=0, time=t),
            plain.morph_weights(mesh, node=node, animation=0, time=t),
        )
    if case == "targets_empty":
        assert scene.meshes[1].primitives[0].target_count == 0
        assert scene.nodes[4].weights is None
        assert len(scene.morph_weights(1, node=4, animation=0, time=0.5)) == 0


def test_gltf_quantized_deltas_need_the_extension_and_signed_types(tmp_path):
    model = make_morph_model(quantized=(SHORT, True))
    doc = model.document
    doc.pop("extensionsUsed")
    doc.pop("extensionsRequired")
    path = tmp_path / "q.glb"
    model.save(path)
    with pytest.raises(GltfError, match=r"targets\[0\]\.POSITION: .*KHR_mesh_quantization"):
        load_gltf(path)
    model = make_morph_model(quantized=(SHORT, True))
    acc = model.document["meshes"][0]["primitives"][0]["targets"][0]["POSITION"]
    model.document["accessors"][acc]["componentType"] = 5123  # UNSIGNED_SHORT: no sign
    model.save(path)
    with pytest.raises(GltfError, match=r"targets\[0\]\.POSITION: accessors\[\d+\] has normalized"):
        load_gltf(path)


def test_gltf_morph_memory_is_charged(tmp_path):
    model = make_morph_model()
    path = tmp_path / "m.glb"
    model.save(path)
    size = path.stat().st_size
    with pytest.raises(GltfError, match="max_bytes"):
        load_gltf(path, max_bytes=size + 2000)


def block_weights(block, mesh):
    """The (M,) weights a MorphBlock record applies."""
    return block["weights"].reshape(-1)[: mesh.morph_target_count]


def test_more_sparse_entries_than_the_layout_indexes(device, monkeypatch):
    """From MAX_MORPH_ENTRIES non-zero deltas on (entry indices are exact floats) the mesh is
    stored dense, and still skins right; a forced sparse layout is refused."""
    monkeypatch.setattr(si_morphs, "MAX_MORPH_ENTRIES", 4)  # pack_morphs reads it there
    rng = np.random.default_rng(13)
    dp = np.zeros((4, 10, 3))
    dp[np.arange(4), np.arange(4), 0] = 1.0  # 4 entries: few enough for sparse otherwise
    mesh = SkinnedMesh(
        rng.normal(size=(10, 3)), np.ones((10, 3)), [0] * 10, [1.0] * 10, morph_positions=dp
    )
    with pytest.raises(ValueError, match="4 non-zero morph deltas, more than the 3"):
        si.pack_morphs(mesh.morph_positions, None, sparse=True)
    w = np.array([0.5, -1.0, 0.0, 2.0], np.float32)
    bones = dq.random_rigid(1, rng)
    with Skinner(device, mesh, bone_count=1) as skinner:
        assert not skinner.morph_packing.sparse
        want = reference.skin_dqs(*morphed(mesh, w), mesh.joints, mesh.weights, bones)
        assert_close(mesh, skinner.skin(bones, w), want)


def test_sparse_packing_is_vertex_major_csr():
    """Per vertex a range of entries, in target order, only the non-zero (target, vertex)
    deltas, exact; ranges two vertices a texel; a vertex no target moves has count 0."""
    m, n = 5, 7
    dp = np.zeros((m, n, 3), np.float32)
    dn = np.zeros((m, n, 3), np.float32)
    dp[0, 3] = [1.5, -2.0, 0.25]  # target 0 moves vertex 3 only
    dp[2, 1:4, 1] = [3.0, 4.0, 5.0]  # target 2 overlaps target 0 at vertex 3
    dn[4, 6] = [0.0, 0.0, 1e-30]  # a tiny non-zero normal delta is kept, exactly
    # target 1 and 3: all zero
    pk = si.pack_morphs(dp, dn)
    assert pk.sparse and pk.entries == 5 and pk.stride == 2 and pk.first_entry == 4
    ranges = pk.texels[: pk.first_entry].reshape(-1, 2)[:n]
    np.testing.assert_array_equal(ranges, [[0, 0], [0, 1], [1, 1], [2, 2], [4, 0], [4, 0], [4, 1]])
    body = pk.texels[pk.first_entry :].reshape(-1, 2, 4)
    assert len(body) == 5
    np.testing.assert_array_equal(body[:, 0, 3], [2, 2, 0, 2, 4])  # targets
    np.testing.assert_array_equal(body[2, 0, :3], dp[0, 3])
    np.testing.assert_array_equal(body[3, 0, :3], dp[2, 3])
    np.testing.assert_array_equal(body[4, 1, :3], dn[4, 6])
    np.testing.assert_array_equal(body[4, 0, :3], 0.0)
    # positions only: one texel an entry, the target in w
    only = si.pack_morphs(dp, None)
    assert only.entries == 4 and only.stride == 1
    np.testing.assert_array_equal(only.texels[only.first_entry :, 3], [2, 2, 0, 2])
    # no targets at all: the one-texel buffer
    assert len(si.pack_morphs(None, None).texels) == 1
    # most pairs non-zero: the dense, target-major layout
    full = np.arange(m * n * 3, dtype=np.float32).reshape(m, n, 3) + 1
    dense = si.pack_morphs(full, -full)
    assert not dense.sparse and dense.entries == m * n
    np.testing.assert_array_equal(dense.texels[(2 * n + 3) * 2, :3], full[2, 3])
    np.testing.assert_array_equal(dense.texels[(2 * n + 3) * 2 + 1, :3], -full[2, 3])


def test_morph_blocks_hold_every_weight_and_the_active_list():
    """Every target's weight at its index; the dense layout's active targets in order, padded
    with -1; the header: active count (dense: groups of 4), N, entry 0's texel, stride."""
    n = 10
    w = np.array([[1, 0, 2, 3, 4, 5, 6], [0] * 7], np.float32)
    full = np.ones((7, n, 3), np.float32)
    blocks = si.morph_blocks(w, si.pack_morphs(full, full))
    assert blocks["header"].tolist() == [[2, n, 0, 2], [0, n, 0, 2]]
    np.testing.assert_array_equal(blocks["active"][0, :2].reshape(-1), [0, 2, 3, 4, 5, 6, -1, -1])
    np.testing.assert_array_equal(blocks["weights"][0].reshape(-1)[:8], [1, 0, 2, 3, 4, 5, 6, 0])
    sparse = np.zeros((7, n, 3), np.float32)
    sparse[:, 0] = 1.0
    pk = si.pack_morphs(sparse, None)
    assert pk.sparse
    blocks = si.morph_blocks(w, pk)
    assert blocks["header"].tolist() == [[6, n, 5, 1], [0, n, 5, 1]]
    np.testing.assert_array_equal(blocks["weights"][0].reshape(-1)[:7], w[0])
    assert si.morph_spec(pk, True) == si.MORPH_POSITIONS | si.MORPH_SPARSE
    assert si.morph_spec(pk, False) == 0
    # targets whose deltas are all zero (RobotExpressive has such meshes): no morph code
    assert si.morph_spec(si.pack_morphs(sparse * 0, None), True) == 0


@pytest.mark.parametrize("path", PATHS)
def test_targets_without_any_delta(device, path):
    rng = np.random.default_rng(14)
    full = morph_mesh(rng, 100, 2, 3, targets=3)
    mesh = SkinnedMesh(
        full.positions,
        full.normals,
        full.joints,
        full.weights,
        morph_positions=full.morph_positions * 0,
        morph_normals=full.morph_normals * 0,
    )
    w = np.array([1.0, -0.5, 2.0], np.float32)
    bones = dq.random_rigid(3, rng)
    with Skinner(device, mesh, bone_count=3, path=path) as skinner:
        want = reference.skin_dqs(*morphed(mesh, w), mesh.joints, mesh.weights, bones)
        assert_close(mesh, skinner.skin(bones, w), want)
        p, n = skinner.skin_many(bones[None], morph_weights=w[None])
        assert_close(mesh, (p[0], n[0]), want)


def test_player_feeds_morph_weights_and_draws_the_face(device, tmp_path):
    """The player poses each part with its weights at each time (the unskinned face too), and
    the face's pixels move as its morph targets say."""
    model, scene = _load(tmp_path)
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as r,
    ):
        player = GltfScenePlayer(r, scene, methods="dqs", animation=0)
        face = next(d for d in player.draws if d.kind == "rigid")
        tube = next(d for d in player.draws if d.kind == "skinned")
        r.camera.frame(np.array([-0.5, -0.5, -0.5]), np.array([3.5, 2.5, 0.5]), aspect=W / H)
        for t in (0.0, 0.5, 1.5):
            player.set_time(t)
            for draw, node in ((face, 4), (tube, 3)):
                got = block_weights(draw.instances["dqs"].morph, draw.geometry)
                np.testing.assert_allclose(got, _sample(model.weight_keys[node], t), atol=1e-7)
            # hide the tube: the image is the face alone, at its morphed place
            tube.instances["dqs"].visible = False
            img = r.render_image()
            w = _sample(model.weight_keys[4], t)
            pts = model.quad_positions + np.tensordot(w, model.quad_morph_positions, 1)
            pts = pts + np.array([2.0, 0.0, 0.0])  # the face node's translation
            want_box = projected_box(r.camera, pts, W, H)
            np.testing.assert_allclose(pixel_box(covered(img)), want_box, atol=1.5)
        player.set_animation(1)  # no weights channels: the face's node weights
        got = block_weights(face.instances["dqs"].morph, face.geometry)
        np.testing.assert_array_equal(got, QUAD_NODE_WEIGHTS)


def test_bake_applies_morph_weights(device, tmp_path):
    from vkdqs.baking import bake

    model, scene = _load(tmp_path)
    result = bake(scene, animation=0, fps=4.0, method="lbs", device=device)
    parts = scene_parts(scene)
    tube = parts[0].geometry
    n_tube = tube.vertex_count
    for f, t in enumerate(result.times):
        w = scene.morph_weights(0, animation=0, time=t)
        mats = scene.skinning_matrices(0, 0, t)
        want = reference.skin_lbs(*morphed(tube, w), tube.joints, tube.weights, mats)
        assert_close(tube, (result.positions[f, :n_tube], result.normals[f, :n_tube]), want)
        wf = _sample(model.weight_keys[4], t)
        face = model.quad_positions + np.tensordot(wf, model.quad_morph_positions, 1)
        np.testing.assert_allclose(
            result.positions[f, n_tube:], face + np.array([2.0, 0.0, 0.0]), atol=1e-6
        )


def test_cli_info_lists_morph_targets(tmp_path, capsys):
    from vkdqs.app.cli import main

    model = make_morph_model()
    path = tmp_path / "m.glb"
    model.save(path)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 morph targets ('bulge', 'shift', 'tilt')" in out
    assert "2 morph targets" in out and "2 morph weights channels" in out
