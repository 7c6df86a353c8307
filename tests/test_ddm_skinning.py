"""``method="ddm"``: Direct Delta Mush through the registry's Skinner (the compute path, and the
vertex path's readback of skin.vert), against the float64 reference
:func:`vkdqs.methods.ddm.reference.skin_reference` of the same float32 Ω.

The difference is the shader's float32 arithmetic (the sum over 8 slots, ``Q̄ - q pᵀ``, the
Jacobi eigenvectors of the polar rotation): measured 1e-8 to 1.5e-6 of the extent for positions
and up to 2e-5 for normals on these meshes; checked to 2e-5 of the extent and 1e-4. The
registry-wide tests (tests/test_registry.py, test_bounds.py, test_lean_layout.py) run it on every
path with random poses; here: the papers' poses, morph targets, and what it refuses.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkdqs
from vkdqs import SkinnedMesh, dq
from vkdqs import methods as registry
from vkdqs import shader_interface as si
from vkdqs.engine.skinner import Skinner
from vkdqs.errors import InputError
from vkdqs.methods.ddm.gpu import mesh_ddm
from vkdqs.procedural import bend_pose, bone_chain_pose, candy_wrapper, tube, twist_pose

POSITION_TOL = 2e-5  # of the extent
NORMAL_TOL = 1e-4
DDM = registry.get("ddm")


def _tube16():
    return tube(16 * 40, bone_count=16, influences=4, segments=16, length=4.0), 16


def _tube16_long():
    return tube(16 * 160, bone_count=16, influences=4, segments=16, length=4.0), 16


def _candy():
    return candy_wrapper(rings=17, segments=16), 2


CASES = {
    "tube16-chain": (_tube16, lambda: bone_chain_pose(16, 120.0, length=4.0), {}),
    "tube16-p5": (
        _tube16,
        lambda: bone_chain_pose(16, -200.0, length=4.0),
        dict(iterations=5, rotation_step=1.0, translation_step=0.5, alpha=0.3),
    ),
    # at most 4 bones a vertex: the 4-slot shaders
    "tube16-4bones": (_tube16, lambda: bone_chain_pose(16, 150.0, length=4.0), dict(max_bones=4)),
    # one short step: few bones reach each vertex, 1 to 8 live slots (the shader stops at the
    # first absent pair: test_absent_slots_are_marked)
    "tube16-p2": (
        _tube16_long,
        lambda: bone_chain_pose(16, 120.0, length=4.0),
        dict(iterations=2, rotation_step=1.0, translation_step=1.0),
    ),
    "candy-twist": (_candy, lambda: twist_pose(170.0, bone_count=2), {}),
    "candy-bend": (_candy, lambda: bend_pose(90.0, bone_count=2), {}),
    "candy-p0": (
        _candy,
        lambda: twist_pose(120.0, bone_count=2),
        dict(iterations=0, rotation_step=1.0, translation_step=0.5, alpha=0.5),
    ),
}


def _assert_close(mesh, got, want):
    extent = float(np.ptp(mesh.positions, axis=0).max())
    assert np.abs(got[0] - want[0]).max() < POSITION_TOL * extent
    assert np.abs(got[1] - want[1]).max() < NORMAL_TOL


@pytest.mark.parametrize("path", ("compute", "vertex"))
@pytest.mark.parametrize("case", list(CASES))
def test_ddm_skins_as_its_reference(device, case, path):
    make, make_pose, params = CASES[case]
    mesh, bones = make()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device, **params)
    rigid = dq.to_matrices(dq.random_rigid(bones, np.random.default_rng(1)))
    batch = np.stack([make_pose(), rigid])
    with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm, path=path) as skinner:
        assert skinner.slots == (4 if ddm.max_bones <= 4 else 8)
        many = skinner.skin_many(batch)
        for k, pose in enumerate(batch):
            want = DDM.reference(mesh, pose, ddm=ddm)
            _assert_close(mesh, (many[0][k], many[1][k]), want)
            # the reference is DDM's: what vkdqs.methods.ddm.reference.skin_reference poses
            direct = vkdqs.methods.ddm.reference.skin_reference(
                mesh.positions, mesh.normals, ddm.omega, pose, ddm.bones, origin=ddm.origin
            )
            np.testing.assert_array_equal(want[0], direct[0])
        p, _, box = skinner.skin(batch[0], bounds=True)
    np.testing.assert_array_equal(p, many[0][0])
    np.testing.assert_array_equal(box, np.stack([p.min(axis=0), p.max(axis=0)]))


def test_absent_slots_are_marked(device):
    """The packing marks each vertex's first pair of absent slots (zero Ω in it and after it),
    where the shader's loop stops; a mesh with from 4 to 8 live slots a vertex skins as its
    reference (test_ddm_skins_as_its_reference's "tube16-p2")."""
    make, _, params = CASES["tube16-p2"]
    mesh, bones = make()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device, **params)
    live = ddm.omega.any(axis=2).sum(axis=1)
    assert live.min() <= 4 and live.max() == 8  # absent pairs, and vertices with none
    assert (ddm.omega.any(axis=2) == (np.arange(8) < live[:, None])).all()  # sorted: live first
    packed = si.ddm_arrays(ddm)["ddm_bones"].view(np.uint32)[:-1]  # the last row: diag2
    first = packed & np.uint32(0xFFFF)
    absent = np.arange(4)[None, :] >= (live[:, None] + 1) // 2
    np.testing.assert_array_equal(first == si.DDM_ABSENT, absent)


def test_ddm_is_not_lbs(device):
    """A bent tube: DDM's smoothed transforms move the vertices off LBS's (the point of the
    method), by more than a thousandth of the tube."""
    mesh, bones = _tube16()
    pose = bone_chain_pose(16, 120.0, length=4.0)
    lbs = registry.get("lbs").reference(mesh, pose)[0]
    smoothed = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device)
    with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=smoothed) as skinner:
        p, _ = skinner.skin(pose)
    assert np.abs(p - lbs).max() > 1e-3 * mesh.extent


def test_without_smoothing_ddm_is_lbs(device):
    """No smoothing steps: every vertex's covariance vanishes, so its position is LBS's and its
    normal LBS's cofactor normal (the shader's second pass over the slots, for that rare case)."""
    mesh, bones = _candy()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device, iterations=0, alpha=0.5)
    pose = twist_pose(120.0, bone_count=bones)
    want_p, want_n = registry.get("lbs").reference(mesh, pose)
    with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm) as skinner:
        p, n = skinner.skin(pose)
    assert np.abs(p - want_p).max() < 1e-6 * mesh.extent
    assert np.abs(n - want_n).max() < 1e-6


@pytest.mark.parametrize("path", ("compute", "vertex"))
def test_morph_targets_move_the_rest_shape_ddm_smoothed(device, path):
    """Morph deltas move each vertex before skinning, in the frame its Ω is about (the
    smoothing stays the rest mesh's): the registry's reference, for one pose and a batch."""
    base, bones = _tube16()
    rng = np.random.default_rng(3)
    n = base.vertex_count
    deltas = np.zeros((2, n, 3))
    deltas[0, 100:180] = rng.normal(scale=0.05, size=(80, 3))
    deltas[1] = rng.normal(scale=0.02, size=(n, 3))
    normals = np.zeros((2, n, 3))
    normals[1, :50] = rng.normal(scale=0.1, size=(50, 3))
    mesh = SkinnedMesh(
        base.positions,
        base.normals,
        base.joints,
        base.weights,
        base.indices,
        morph_positions=deltas,
        morph_normals=normals,
    )
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device)
    pose = bone_chain_pose(16, 90.0, length=4.0)
    weights = np.array([[1.0, 0.5], [0.0, 0.0], [0.3, 1.0]], np.float32)
    with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm, path=path) as skinner:
        one = skinner.skin(pose, morph_weights=weights[0])
        many = skinner.skin_many(np.stack([pose] * 3), morph_weights=weights)
    _assert_close(mesh, one, DDM.reference(mesh, pose, ddm=ddm, morph_weights=weights[0]))
    for k, w in enumerate(weights):
        want = DDM.reference(mesh, pose, ddm=ddm, morph_weights=w)
        _assert_close(mesh, (many[0][k], many[1][k]), want)
    moved = np.abs(one[0] - many[0][1]).max()  # weights 1, 0.5 against none
    assert moved > 0.01


def test_without_ddm_the_skinner_computes_the_default_one_once(device):
    mesh, bones = _candy()
    given = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device)
    pose = twist_pose(150.0, bone_count=bones)
    with Skinner(device, mesh, bone_count=bones, method="ddm") as skinner:
        computed = skinner.ddm
        got = skinner.skin(pose)
    with Skinner(device, mesh, bone_count=bones, method="ddm") as again:
        assert again.ddm is computed  # kept on the mesh
    np.testing.assert_array_equal(computed.omega, given.omega)
    with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=given) as skinner:
        want = skinner.skin(pose)
    np.testing.assert_array_equal(got[0], want[0])


def test_ddm_refusals(device):
    mesh, bones = _candy()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device)
    with pytest.raises(InputError, match=r"method='ddm' needs ddm=vkdqs.direct_delta_mush"):
        Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm.omega)
    soup = SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with pytest.raises(InputError, match="direct_delta_mush needs a mesh with triangles"):
        Skinner(device, soup, bone_count=bones, method="ddm")
    with pytest.raises(InputError, match=r"ddm are for method='ddm', not 'lbs'"):
        Skinner(device, mesh, bone_count=bones, method="lbs", ddm=ddm)
    other = SkinnedMesh(mesh.positions * 2, mesh.normals, mesh.joints, mesh.weights, mesh.indices)
    with pytest.raises(InputError, match="computed for another mesh"):
        Skinner(device, other, bone_count=bones, method="ddm", ddm=ddm)
    with pytest.raises(InputError, match="needs rigid bone matrices"):
        with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm) as skinner:
            skinner.skin(np.tile(np.diag([2.0, 1.0, 1.0, 1.0]), (bones, 1, 1)))
    wide = vkdqs.direct_delta_mush(
        tube(300, bone_count=12, influences=4), bone_count=12, max_bones=9, device=device
    )
    with pytest.raises(InputError, match="at most 8 bones a vertex"):
        Skinner(
            device, tube(300, bone_count=12, influences=4), bone_count=12, method="ddm", ddm=wide
        )
    # crowds draw it (tests/test_ddm_render.py) with the rule of its instances: rigid clips
    assert DDM.check(np.tile(np.eye(4), (2, 1, 1)), crowd=True) is None
    scaled = np.tile(np.diag([2.0, 1.0, 1.0, 1.0]), (2, 1, 1))
    assert "needs rigid joint matrices in a crowd's clip" in DDM.check(scaled, crowd=True)


@pytest.mark.parametrize("path", ("compute", "vertex"))
def test_one_uniform_scale_of_every_bone_scales_the_rigid_result(device, path):
    """Joint matrices rigid up to one uniform scale s they all share (a model's unit scale:
    gltfpack's quantized rigs, a mesh in centimetres under a scene in metres) pose the mesh as
    s times the rigid pose: the covariance and the translation are s times the rigid ones, the
    rotation the same, and the shader scales the offset; the float64 reference does the same,
    exactly."""
    mesh, bones = _candy()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device)
    rng = np.random.default_rng(11)
    pose = dq.to_matrices(dq.random_rigid(bones, rng, max_angle=np.pi, max_translation=1.0))
    rigid = DDM.reference(mesh, pose, ddm=ddm)
    with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm, path=path) as skinner:
        for s in (100.0, 0.0254, 9.2e-5):
            scaled_pose = np.diag([s, s, s, 1.0]) @ pose
            want = DDM.reference(mesh, scaled_pose, ddm=ddm)
            np.testing.assert_allclose(want[0], s * rigid[0], rtol=0, atol=1e-9 * s * mesh.extent)
            np.testing.assert_allclose(want[1], rigid[1], rtol=0, atol=1e-9)
            got = skinner.skin(scaled_pose)
            assert np.abs(got[0] - want[0]).max() < POSITION_TOL * s * mesh.extent
            assert np.abs(got[1] - want[1]).max() < NORMAL_TOL


def test_other_scales_are_refused_naming_the_bone(device):
    """Variant 0 is rigid: scales that differ between bones, a non-uniform scale or a shear are
    refused, at the Skinner and by the registry's check (what info and --method all say)."""
    mesh, bones = _candy()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, device=device)
    two = np.stack([np.diag([2.0, 2.0, 2.0, 1.0]), np.diag([3.0, 3.0, 3.0, 1.0])])
    with Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm) as skinner:
        with pytest.raises(InputError, match="bone 1: method 'ddm' takes one uniform scale"):
            skinner.skin(two)
        sheared = np.tile(np.eye(4), (bones, 1, 1))
        sheared[1, 0, 1] = 0.5
        with pytest.raises(InputError, match="bone 1: method 'ddm' needs rigid bone matrices"):
            skinner.skin(sheared)
    uniform = np.tile(np.diag([100.0, 100.0, 100.0, 1.0]), (bones, 1, 1))
    traits = registry.SkinTraits.of_matrices(uniform)
    assert traits.scale and traits.uniform_scale
    assert DDM.check(traits) is None
    for name in ("blend", "cor"):  # their shaders have no scale to apply
        assert "needs rigid joint matrices" in registry.get(name).check(traits)
    assert "in a crowd's clip" in DDM.check(traits, crowd=True)  # crowds sample rigid clips
    for other in (two, np.tile(np.diag([2.0, 1.0, 1.0, 1.0]), (bones, 1, 1))):
        traits = registry.SkinTraits.of_matrices(other)
        assert traits.scale and not traits.uniform_scale
        assert "or one uniform scale they all share" in DDM.check(traits)
    # skins combined (a scene's --method all): each posed on its own, each with its own scale
    one = registry.SkinTraits.of_matrices(uniform)
    other = registry.SkinTraits.of_matrices(np.tile(np.diag([0.01, 0.01, 0.01, 1.0]), (3, 1, 1)))
    assert (one | registry.SkinTraits()).uniform_scale and (one | other).uniform_scale
    assert DDM.check(one | other) is None
    assert not (one | registry.SkinTraits(scale=True)).uniform_scale


def test_a_skin_under_an_animated_or_non_uniform_scale_is_not_uniformly_scaled(tmp_path):
    """What info says of a glTF skin follows its clips: the scaled test rig's hand skin has
    joint matrices of one uniform scale at rest (1.5), but its joints hang below j2, which the
    clip scales non-uniformly, so its frames are not uniformly scaled and DDM refuses it;
    the packer agrees on those frames. A static non-uniform scale above the joints shears their
    matrices once they rotate: also refused. A uniform scale above them is the unit scale DDM
    takes."""
    from vkdqs.gltf import load_gltf

    from .gltf_fixtures import make_rig

    path = tmp_path / "scaled.glb"
    make_rig(scaled=True).save(path)
    scene = load_gltf(path)
    hand = scene.skin_traits(1)
    rest = registry.SkinTraits.of_matrices(scene.skinning_matrices(1, None))
    assert rest.uniform_scale  # 1.5 everywhere at rest
    assert hand.scale and not hand.uniform_scale and DDM.check(hand) is not None
    with pytest.raises(InputError, match="needs rigid bone matrices"):
        DDM.pack(scene.skinning_matrices(1, 0, 1.0), 2)
    for root_scale, uniform in (([2.0, 1.0, 1.0], False), ([100.0, 100.0, 100.0], True)):
        rig = make_rig(scaled=False)
        rig.document["nodes"][0]["scale"] = root_scale
        path = tmp_path / f"root{root_scale[1]:g}.glb"
        rig.save(path)
        traits = load_gltf(path).skin_traits(0)
        assert traits.uniform_scale == uniform and (DDM.check(traits) is None) == uniform


def test_a_model_file_computes_its_ddm_once_and_bakes_with_it(tmp_path, device):
    """The entry points that take a model file do not need the precomputation: the Skinner
    computes it (default parameters) and keeps it on the part's geometry, so a bake smooths
    the mesh once, and bakes frames as the reference poses them."""
    from vkdqs.gltf import load_gltf
    from vkdqs.gltf.parts import scene_parts, skin_matrices, skinning_inputs

    from .gltf_fixtures import make_rig

    model = tmp_path / "rigid.glb"
    make_rig(scaled=False).save(model)
    scene = load_gltf(model)
    baked = vkdqs.bake(scene, method="ddm", fps=4, end=0.5, device=device)
    part = scene_parts(scene)[0]
    geometry, extra = skinning_inputs(scene, part, "ddm")
    assert extra == {}  # the Skinner computes it: once, kept on the geometry
    extra["ddm"] = mesh_ddm(geometry, part.bone_count, device=device)
    assert geometry.__dict__["_ddm"] == {next(iter(geometry.__dict__["_ddm"])): extra["ddm"]}
    assert extra["ddm"].iterations == vkdqs.methods.ddm.reference.DEFAULTS["iterations"]
    n = geometry.vertex_count
    for k, t in enumerate(baked.times):
        mats = skin_matrices(scene, (part.skin,), scene.node_global_matrices(0, t))[part.skin]
        want, _ = DDM.reference(geometry, mats, **extra)
        np.testing.assert_allclose(baked.positions[k, :n], want, atol=2e-5 * geometry.extent)
    lbs = vkdqs.bake(scene, method="lbs", fps=4, end=0.5, device=device)
    assert np.abs(lbs.positions - baked.positions).max() > 1e-4 * geometry.extent


@pytest.mark.gpu  # the CLI opens its own Device
def test_the_command_line_bakes_ddm_and_refuses_what_cannot_show_it(tmp_path, capsys):
    """``info`` names DDM among the methods a bake also takes; ``bake --method ddm`` writes its
    frames; ``export`` (UsdSkel has no DDM) points to bake; ``render`` draws it ("compute, then
    draw")."""
    from vkdqs.app import cli

    from .gltf_fixtures import make_rig

    model = tmp_path / "rigid.glb"
    make_rig(scaled=False).save(model)
    assert cli.main(["info", str(model)]) == 0
    out = capsys.readouterr().out
    assert "methods lbs, dqs, blend, cor, dqs_blender, ddm, delta_mush, velocity;" in out
    assert "; bake also dqs_scale, delta_mush_dqs" in out
    out = tmp_path / "frames.glb"
    assert cli.main(["bake", str(model), "--method", "ddm", "--out", str(out), "--fps", "4"]) == 0
    assert "ddm)" in capsys.readouterr().out and out.stat().st_size > 0
    usd = tmp_path / "rig.usda"
    assert cli.main(["export", str(model), "--method", "ddm", "--out", str(usd)]) == 1
    assert "vkdqs bake MODEL --method ddm" in capsys.readouterr().err and not usd.exists()
    png = tmp_path / "x.png"
    args = ["render", str(model), "--method", "ddm", "--out", str(png), "--size", "80x60"]
    assert cli.main([*args, "--samples", "1"]) == 0
    assert "DDM" in capsys.readouterr().out and png.stat().st_size > 0
