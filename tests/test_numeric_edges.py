"""Values at the edges: huge normals and dual quaternions, ragged array-likes, zero scale.

Vectors whose components are too large to square (beyond ~1e154) must keep their direction
instead of normalizing to zero; what the GPU then gets is checked against the float64 reference.
Array-likes numpy cannot read (ragged nested lists) must raise InputError naming the argument.
A glTF part scaled to 0 (how exporters hide parts) is not drawn, instead of failing the render.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from vkdqs import InputError, LimitError, SkinnedMesh, bones, dq, procedural, reference
from vkdqs import methods as registry
from vkdqs.app import cli
from vkdqs.app.scenes import GltfScenePlayer
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gltf import load_gltf
from vkdqs.images import read_png

from .gltf_fixtures import make_rig
from .imaging import CLEAR, covered, pixel_box, projected_box


def gpu_matches(mesh, got, want):
    """The GPU's float32 result against the float64 reference, as in test_gpu_skinning."""
    positions, normals = got
    ref_positions, ref_normals = want
    assert np.isfinite(positions).all() and np.isfinite(normals).all()
    scale = max(mesh.extent, np.abs(ref_positions).max())
    np.testing.assert_allclose(positions, ref_positions, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(normals, ref_normals, rtol=0, atol=1e-5)


def args(mesh):
    return mesh.positions, mesh.normals, mesh.joints, mesh.weights


@pytest.fixture
def two_bone_mesh():
    rng = np.random.default_rng(3)
    n = 200
    return SkinnedMesh(
        rng.uniform(-1.0, 1.0, (n, 3)),
        rng.normal(size=(n, 3)),
        rng.integers(0, 2, (n, 2)),
        rng.uniform(0.1, 1.0, (n, 2)),
    )


# -- normals --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1e155, 1e200, 1e300, 1.7e308, 1e-10])
def test_huge_and_tiny_normals_keep_their_direction(size):
    direction = np.array([[3.0, -4.0, 12.0], [0.0, 1.0, 0.0], [-1.0, -1.0, 0.0]])
    mesh = SkinnedMesh(np.zeros((3, 3)), direction / 12.0 * size, [[0]] * 3, [[1.0]] * 3)
    want = direction / np.linalg.norm(direction, axis=1, keepdims=True)
    np.testing.assert_allclose(mesh.normals, want, rtol=0, atol=1e-7)


def test_normals_too_short_are_still_rejected():
    with pytest.raises(InputError, match=r"normals\[1\] = \[0\.0, 1e-13, 0\.0\] has zero length"):
        SkinnedMesh(np.zeros((2, 3)), [[0.0, 0, 1], [0.0, 1e-13, 0]], [[0]] * 2, [[1.0]] * 2)


@pytest.mark.parametrize("method", ["dqs", "lbs"])
def test_gpu_skins_a_mesh_built_from_huge_normals(device, method):
    rng = np.random.default_rng(4)
    n = 64
    raw = rng.normal(size=(n, 3))
    mesh = SkinnedMesh(
        rng.uniform(-1, 1, (n, 3)), raw * 1e250, rng.integers(0, 3, (n, 2)), rng.random((n, 2))
    )
    small = SkinnedMesh(mesh.positions, raw, mesh.joints, mesh.weights)
    np.testing.assert_array_equal(mesh.normals, small.normals)
    pose = dq.random_rigid(3, rng)
    pose = pose if method == "dqs" else dq.to_matrices(pose)
    ref = (reference.skin_dqs if method == "dqs" else reference.skin_lbs)(*args(mesh), pose)
    with Skinner(device, mesh, bone_count=3, method=method) as skinner:
        gpu_matches(mesh, skinner.skin(pose), ref)
    assert np.all(np.abs(np.linalg.norm(ref[1], axis=1) - 1.0) < 1e-12)


def test_reference_normalizes_huge_normals_it_is_given_directly():
    n = np.array([[1e300, 0.0, 1e300], [0.0, 3e200, 0.0]])
    unit = n / np.array([[np.sqrt(2) * 1e300], [3e200]])
    pose = dq.random_rigid(1, np.random.default_rng(8))
    joints, weights = [[0], [0]], [[1.0], [1.0]]
    _, dqs_normals = reference.skin_dqs(np.zeros((2, 3)), n, joints, weights, pose)
    np.testing.assert_allclose(dqs_normals, dq.transform_normals(pose[0], unit), atol=1e-15)
    _, lbs_normals = reference.skin_lbs(np.zeros((2, 3)), n, joints, weights, dq.to_matrices(pose))
    np.testing.assert_allclose(lbs_normals, dqs_normals, atol=1e-15)
    axis = dq.quat_from_axis_angle([1e300, 0.0, 0.0], np.pi / 2)
    np.testing.assert_allclose(axis, [np.sqrt(0.5), 0, 0, np.sqrt(0.5)], atol=1e-15)


def _eight_influence_mesh(rng, n=96):
    """Vertices on up to 8 bones (the 8-influence shaders), some weights on bones 0 and 1."""
    joints = np.stack([rng.permutation(8) for _ in range(n)])
    weights = rng.uniform(0.1, 1.0, (n, 8))
    weights[: n // 2, 5:] = 0.0  # half the vertices on 5 bones: both shader loops used
    return SkinnedMesh(rng.uniform(-1, 1, (n, 3)), rng.normal(size=(n, 3)), joints, weights)


@pytest.mark.parametrize("path", ["compute", "vertex"])
@pytest.mark.parametrize("influences", [4, 8])
def test_all_zero_lbs_matrices_give_the_origin_and_the_rest_normal(device, path, influences):
    """Defined, never NaN: a blend of all-zero matrices is the zero matrix, so the vertex goes
    to the origin, and its normal (the cofactor normal is 0, not longer than its bound 0) is
    the normalized rest normal, on the GPU as in the float64 reference."""
    rng = np.random.default_rng(21)
    if influences == 8:
        mesh = _eight_influence_mesh(rng)
    else:
        n = 96
        mesh = SkinnedMesh(
            rng.uniform(-1, 1, (n, 3)),
            rng.normal(size=(n, 3)),
            rng.integers(0, 8, (n, 4)),
            rng.uniform(0.1, 1.0, (n, 4)),
        )
    zero = np.zeros((8, 3, 4))  # (B, 3, 4): the rows of the affine matrices, all zero
    # and a pose where only some bones are zero: vertices on those alone collapse to the origin
    mixed = dq.to_matrices(dq.random_rigid(8, rng))[:, :3]
    mixed[::2] = 0.0
    with Skinner(device, mesh, bone_count=8, method="lbs", path=path) as skinner:
        for pose in (zero, mixed):
            want = reference.skin_lbs(*args(mesh), pose)
            got = skinner.skin(pose)
            gpu_matches(mesh, got, want)
            many = skinner.skin_many(np.stack([pose, mixed, zero]))
            assert np.isfinite(many[0]).all() and np.isfinite(many[1]).all()
            gpu_matches(mesh, (many[0][0], many[1][0]), want)
    positions, normals = reference.skin_lbs(*args(mesh), zero)
    np.testing.assert_array_equal(positions, 0.0)
    np.testing.assert_allclose(normals, mesh.normals, atol=1e-7)


# -- dual quaternions -----------------------------------------------------------------------


@pytest.mark.parametrize("size", [1e155, 1e200, 1e300, 1e-7])
def test_normalize_scales_before_squaring(size):
    unit = dq.random_rigid(6, np.random.default_rng(9))
    got = dq.normalize(unit * size)
    np.testing.assert_allclose(got, unit, rtol=0, atol=1e-15)


def test_normalize_huge_real_small_dual_is_the_rotation():
    unit = dq.random_rigid(4, np.random.default_rng(10))
    raw = unit.copy()
    raw[:, 0] *= 1e200  # the dual part stays ~1: the translation vanishes after normalizing
    got = dq.normalize(raw)
    np.testing.assert_allclose(got[:, 0], unit[:, 0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(got[:, 1], 0.0, rtol=0, atol=1e-180)
    assert np.all(np.abs(got[:, 0]).max(axis=1) > 0.4)  # not the zeros it used to be


def test_normalize_rejects_what_it_cannot_represent():
    unit = dq.random_rigid(3, np.random.default_rng(11))
    over = unit.copy()
    over[2, 0] *= 1e-5
    over[2, 1] = [1e308, -1e308, 0.0, 0.0]
    with pytest.raises(LimitError, match=r"dual quaternion 2: its dual part is too large"):
        dq.normalize(over)
    inf = unit.copy()
    inf[1, 0, 3] = np.inf
    with pytest.raises(InputError, match=r"dual quaternion 1 has a non-finite element \(inf\)"):
        dq.normalize(inf)


def test_from_rotation_translation_scales_and_rejects_zero():
    got = dq.from_rotation_translation([0.0, 0.0, 0.0, 1e300], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(got, [[0, 0, 0, 1], [0.5, 1.0, 1.5, 0]], atol=1e-15)
    with pytest.raises(InputError, match=r"quaternion 1 has length 0\.0"):
        dq.from_rotation_translation([[0, 0, 0, 1], [0, 0, 0, 0]], [[0, 0, 0]] * 2)


@pytest.mark.parametrize("path", ["compute", "vertex"])
def test_gpu_gets_bones_with_huge_real_parts_normalized(device, two_bone_mesh, path):
    """A DQ of 1e200 * rotation (+ a small dual part) moves the vertices; it used to leave them
    at rest."""
    mesh = two_bone_mesh
    unit = dq.random_rigid(2, np.random.default_rng(12), max_translation=0.5)
    raw = unit.copy()
    raw[:, 0] *= 1e200
    packed = bones.pack_dqs(raw, 2)
    want_bones = dq.normalize(raw)
    np.testing.assert_allclose(packed, want_bones, rtol=0, atol=1e-7)
    ref = reference.skin_dqs(*args(mesh), want_bones)
    # The reference given the raw bones computes the same thing.
    raw_ref = reference.skin_dqs(*args(mesh), raw)
    np.testing.assert_allclose(raw_ref[0], ref[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(raw_ref[1], ref[1], rtol=0, atol=1e-12)
    with Skinner(device, mesh, bone_count=2, path=path) as skinner:
        got = skinner.skin(raw)
    gpu_matches(mesh, got, ref)
    moved = np.linalg.norm(got[0] - mesh.positions, axis=1)
    assert moved.max() > 0.1  # a real rotation, not the rest pose


def test_dual_parts_beyond_the_limit_after_normalizing_are_rejected(device, two_bone_mesh):
    unit = dq.random_rigid(2, np.random.default_rng(13))
    ratio = unit.copy()
    ratio[1, 0] *= 1e-5
    ratio[1, 1] = [2e4, 0.0, 0.0, 0.0]  # |dual| / |real| = 2e9 after normalizing
    overflow = unit.copy()
    overflow[1, 0] *= 1e-5
    overflow[1, 1] = [1e308, 1e308, 0.0, 0.0]  # would be inf, then NaN, if divided
    with Skinner(device, two_bone_mesh, bone_count=2) as skinner:
        with pytest.raises(LimitError, match=r"bone 1: a dual part .* magnitude 2e\+09 exceeds"):
            skinner.skin(ratio)
        with pytest.raises(LimitError, match=r"pose 0 bone 1: .* beyond float64's range"):
            skinner.skin_many(overflow[None])
        # a huge but proportionate DQ is fine: the GPU blends it normalized, like the reference
        fine = unit.copy()
        fine[1] *= 1e200
        want = reference.skin_dqs(*args(two_bone_mesh), dq.normalize(fine))
        gpu_matches(two_bone_mesh, skinner.skin(fine), want)
        np.testing.assert_allclose(
            want[0], reference.skin_dqs(*args(two_bone_mesh), unit)[0], atol=1e-12
        )


@pytest.mark.parametrize("angle", [np.inf, -np.inf, np.nan])
def test_procedural_poses_reject_non_finite_angles(angle):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # np.cos(inf) used to warn, then return NaN matrices
        with pytest.raises(InputError, match=r"angle_deg must be finite, got (-?inf|nan)"):
            procedural.twist_pose(angle)
        with pytest.raises(InputError, match=r"angle_deg must be finite"):
            procedural.bone_chain_pose(4, angle)


# -- ragged and unreadable array-likes --------------------------------------------------------

GOOD = [[0.0, 0.0, 1.0], [1.0, 2.0, 3.0]]
RAGGED = [[0.0, 0.0, 0.0], [1.0, 2.0]]
BONE = [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]
RAGGED_BONES = [BONE, [[0.0, 0.0, 0.0, 1.0], [0.0]]]
RAGGED_MATRICES = [np.eye(4).tolist(), [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0]]]


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: SkinnedMesh(RAGGED, GOOD, [[0], [0]], [[1], [1]]), "positions"),
        (lambda: SkinnedMesh(GOOD, RAGGED, [[0], [0]], [[1], [1]]), "normals"),
        (lambda: SkinnedMesh(GOOD, GOOD, [[0], [0, 1]], [[1], [1]]), "joints"),
        (lambda: SkinnedMesh(GOOD, GOOD, [[0], [0]], [[1], [1, 0]]), "weights"),
        (lambda: SkinnedMesh(GOOD, GOOD, [[0], [0]], [[1], [1]], [[0, 1, 1], [0]]), "indices"),
        (lambda: dq.from_matrices(RAGGED_MATRICES), "m"),
        (lambda: dq.decompose_skinning_matrices(RAGGED_MATRICES), "m"),
        (lambda: dq.has_scale(RAGGED_MATRICES), "m"),
        (lambda: dq.normalize(RAGGED_BONES), "dq"),
        (lambda: dq.to_matrices(RAGGED_BONES), "dq"),
        (lambda: dq.multiply(BONE, RAGGED_BONES), "b"),
        (lambda: dq.transform_points(BONE, RAGGED), "p"),
        (lambda: dq.quat_multiply([0, 0, 0, 1], [[0, 0, 0, 1], [1]]), "b"),
        (lambda: dq.quat_from_axis_angle([1, 0, 0], [[1.0], [1.0, 2.0]]), "angle"),
        (lambda: dq.from_rotation_translation([0, 0, 0, 1], RAGGED), "t"),
        (lambda: reference.skin_dqs(GOOD, GOOD, [[0], [0, 1]], [[1], [1]], [BONE]), "joints"),
        (
            lambda: reference.skin_lbs(GOOD, GOOD, [[0], [0]], [[1], [1]], [RAGGED_MATRICES]),
            "bone_ma",
        ),
        (lambda: registry.get("dqs").pack(RAGGED_BONES, 2), "bones"),
        (lambda: registry.get("lbs").pack(RAGGED_MATRICES, 2), "bones"),
    ],
)
def test_ragged_array_likes_raise_input_error_naming_the_argument(call, name):
    with pytest.raises(
        InputError, match=rf"^{name}\w* could not be read as an array .*same length"
    ):
        call()


def test_has_scale_checks_its_shape():
    with pytest.raises(InputError, match=r"m must have shape \[\.\.\., 4, 4\] or \[\.\.\., 3, 4\]"):
        dq.has_scale([1.0, 2.0, 3.0])


def test_random_rigid_checks_its_arguments():
    with pytest.raises(InputError, match=r"rng must be a numpy\.random\.Generator.* NoneType"):
        dq.random_rigid(2, None)
    with pytest.raises(InputError, match=r"n must be an int >= 0, got -1"):
        dq.random_rigid(-1, np.random.default_rng(0))


def test_skinner_and_instance_take_ragged_bones_as_input_errors(device, two_bone_mesh):
    with Skinner(device, two_bone_mesh, bone_count=2) as skinner:
        with pytest.raises(InputError, match=r"^bones could not be read as an array"):
            skinner.skin(RAGGED_BONES)
        with pytest.raises(InputError, match=r"^bones could not be read as an array"):
            skinner.skin_many([RAGGED_BONES])
    mesh = SkinnedMesh(
        [[0.0, 0, 0], [1, 0, 0], [0, 1, 0]],
        [[0.0, 0, 1]] * 3,
        [[0], [1], [1]],
        [[1.0]] * 3,
        [0, 1, 2],
    )
    with OffscreenTarget(device, 16, 16) as target, Renderer(device, target) as renderer:
        inst = renderer.add_instance(renderer.add_mesh(mesh), bone_count=2)
        with pytest.raises(InputError, match=r"^bones could not be read as an array"):
            inst.set_pose(RAGGED_BONES)
        with pytest.raises(InputError, match=r"^bones could not be read as an array"):
            inst.set_pose(RAGGED_MATRICES)


# -- glTF parts scaled to 0 -------------------------------------------------------------------

PROP = 10  # make_rig's rigid prop node (mesh 1), a child of the last joint


def _prop_rig(prop: str):
    """make_rig with the prop placed normally ("shown"), scaled to 0 ("hidden"), or not placed at
    all ("absent"). Each gets animation 3 "grow": the prop's scale steps 0 -> 1 at t = 0.5."""
    rig = make_rig(scaled=False)
    b = rig.builder
    node = b.document["nodes"][PROP]
    if prop == "hidden":
        node["scale"] = [0.0, 0.0, 0.0]
    elif prop == "absent":
        del node["mesh"]
    times = b.add_accessor(np.array([0.0, 0.5], np.float32), min_max=True)
    values = b.add_accessor(np.array([[0, 0, 0], [1, 1, 1]], np.float32))
    b.add(
        "animations",
        {
            "name": "grow",
            "samplers": [{"input": times, "output": values, "interpolation": "STEP"}],
            "channels": [{"sampler": 0, "target": {"node": PROP, "path": "scale"}}],
        },
    )
    return rig


@pytest.fixture(scope="module")
def prop_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("zero_scale")
    files = {}
    for prop in ("shown", "hidden", "absent"):
        files[prop] = root / f"prop_{prop}.glb"
        _prop_rig(prop).save(files[prop])
    return files


def _render(device, path, setup=None, camera=None, animation="grow"):
    """(image, player) of a model in a fresh 160x120 renderer (culling off: every face counts)."""
    with (
        OffscreenTarget(device, 160, 120) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as renderer,
    ):
        player = GltfScenePlayer(renderer, load_gltf(path), methods="lbs", animation=animation)
        if camera is not None:
            renderer.camera = camera
        if setup is not None:
            setup(player)
        return renderer.render_image(), player


def test_a_part_scaled_to_zero_is_not_drawn(device, prop_files):
    absent, reference = _render(device, prop_files["absent"], animation=None)
    camera = reference.renderer.camera
    shown, _ = _render(device, prop_files["shown"], camera=camera, animation=None)
    assert (shown != absent).any(axis=-1).sum() > 20  # the prop is there to hide

    # Scaled to 0 by the file: the same frame as without the prop, framing included.
    hidden, player = _render(device, prop_files["hidden"], animation=None)
    np.testing.assert_array_equal(hidden, absent)
    rigid = [i for draw in player.draws if draw.kind == "rigid" for i in draw.instances.values()]
    assert rigid and not any(inst.visible for inst in rigid)


def test_a_part_scaled_back_up_is_drawn_again(device, prop_files):
    """Animation "grow" scales the hidden prop to 1 at t = 0.5: hidden, shown, hidden again."""
    _, reference = _render(device, prop_files["absent"])
    camera = reference.renderer.camera
    frames = {}

    def play(player):
        (prop,) = [d.instances["lbs"] for d in player.draws if d.kind == "rigid"]
        for time in (0.25, 0.75, 0.1):
            player.set_time(time)
            frames[time] = (player.renderer.render_image(), prop.visible)

    _render(device, prop_files["hidden"], play, camera)
    absent = {
        t: _render(device, prop_files["absent"], lambda p, t=t: p.set_time(t), camera)[0]
        for t in (0.1, 0.25, 0.75)
    }
    for time in (0.25, 0.1):
        image, visible = frames[time]
        assert not visible
        np.testing.assert_array_equal(image, absent[time])
    image, visible = frames[0.75]
    assert visible
    diff = np.abs(image.astype(int) - absent[0.75].astype(int)).max(axis=-1) > 0
    assert diff.sum() > 20
    # what changed is the prop, where the CPU puts it
    scene = load_gltf(prop_files["hidden"])
    (prop,) = scene.rigid_meshes("grow", 0.75)
    pts = np.concatenate([p.positions for p in scene.meshes[prop.mesh].primitives])
    box = projected_box(camera, (np.c_[pts, np.ones(len(pts))] @ prop.matrix.T)[:, :3], 160, 120)
    got = pixel_box(diff)
    assert np.all(got[:2] >= box[:2] - 2) and np.all(got[2:] <= box[2:] + 2), (got, box)


def test_render_command_draws_nothing_for_a_part_scaled_to_zero(device, prop_files, tmp_path):
    images = {}
    for prop in ("hidden", "absent"):
        out = tmp_path / f"{prop}.png"
        args = ["render", str(prop_files[prop]), "--out", str(out), "--size", "160x120"]
        # no labels: the caption names the file
        assert cli.main([*args, "--samples", "1", "--animation", "rest", "--no-labels"]) == 0
        images[prop] = read_png(out)
    np.testing.assert_array_equal(images["hidden"], images["absent"])
    assert covered(images["hidden"]).sum() > 100
