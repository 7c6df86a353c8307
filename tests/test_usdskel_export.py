"""``vkdqs export`` / :func:`vkdqs.export_usdskel`: a UsdSkel rig that OpenUSD itself skins
(``UsdSkel.BakeSkinning``) into the positions of vkdqs's float64 reference of the glTF file, at
every key time, for LBS and DQS: 4 and 8 influences, two skins and meshes, a rigid prop under a
joint, a joint given by a matrix, joints under a node that is not a joint, scaled joints, morph
targets as blend shapes. CPU only: no Vulkan."""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Sdf, Usd, UsdGeom, UsdSkel  # usd-core: in the test extra

import vkdqs
from vkdqs import methods, reference
from vkdqs.app import cli
from vkdqs.gltf.parts import scene_parts

from .gltf_fixtures import make_rig
from .gltf_fixtures_morph import make_morph_model

#: The rig's animated scale keys, as halves hold them exactly (UsdSkel's scales are half3).
HALF_SCALES = [[1.5, 1.5, 1.5], [1.5, 0.5, 1.25]]
#: Whether this usd-core has per-vertex DQS/LBS blend weights (26.11 does not).
BLEND_WEIGHTS = hasattr(UsdSkel.Tokens, "primvarsSkelSkinningBlendWeights")
#: The methods a rig can keep with this usd-core (``blend`` needs the blend weights).
EXPRESSIBLE = [
    m.name
    for m in methods.METHODS.values()
    if m.usdskel and ("dqs_blend" not in m.needs or BLEND_WEIGHTS)
]


def _rig_file(tmp_path, name="rig.glb", **options):
    rig = make_rig(scale_keys=HALF_SCALES, **options)
    path = tmp_path / name
    rig.save(path)
    return path


def _usd_world_points(stage, mesh_path, code):
    """The mesh's points at ``code`` after OpenUSD skinned them, in world space."""
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath(mesh_path))
    p = np.array(mesh.GetPointsAttr().Get(code), np.float64)
    m = np.array(mesh.ComputeLocalToWorldTransform(code), np.float64)  # rows: p @ m
    return p @ m[:3, :3] + m[3, :3]


def _reference_points(scene, part, method, animation, time):
    """vkdqs's float64 reference of a part at ``time``: the morphed rest mesh skinned by the
    method's reference (skinned parts), or placed by the node (rigid)."""
    g = part.geometry
    p, n = g.positions.astype(np.float64), g.normals.astype(np.float64)
    if g.morph_target_count:
        w = scene.morph_weights(part.mesh, part.node, animation, time)
        p, n = reference.morph(p, n, g.morph_positions, g.morph_normals, w)
    if part.kind != "skinned":
        m = scene.node_global_matrices(animation, time)[part.node]
        return p @ m[:3, :3].T + m[:3, 3]
    mats = scene.skinning_matrices(part.skin, animation, time)
    return methods.get(method).reference_skin(
        p, n, g.joints, g.weights, mats, centers=None, rest_matrices=None, dqs_blend=None
    )[0]


def _check_rig(path, out, method, animation, tol=1e-5):
    """Export, let OpenUSD skin the rig at every key time, compare with the reference."""
    scene = vkdqs.load_gltf(path)
    info = vkdqs.export_usdskel(scene, out, method=method, animation=animation)
    stage = Usd.Stage.Open(str(out))
    root = UsdSkel.Root(stage.GetDefaultPrim())
    assert root, "the default prim is the SkelRoot"
    assert UsdSkel.BakeSkinning(root)
    parts = scene_parts(scene)
    meshes = [p for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)]
    assert len(meshes) == len(parts) == info.meshes
    anim = scene.animations[animation] if animation is not None else None
    keys = (
        np.unique(np.concatenate([c.times for c in anim.channels] + [np.zeros(1)]))
        if anim is not None
        else np.zeros(1)
    )
    extent = np.ptp(
        np.concatenate([_reference_points(scene, p, method, animation, 0.0) for p in parts]),
        axis=0,
    ).max()
    worst = 0.0
    for t in keys:  # over key times
        for part, prim in zip(parts, meshes, strict=True):
            got = _usd_world_points(stage, prim.GetPath(), t * 30.0)
            want = _reference_points(scene, part, method, animation, t)
            worst = max(worst, float(np.abs(got - want).max()))
    assert worst <= tol * extent, (worst, extent)
    return info, stage


@pytest.mark.parametrize("method", EXPRESSIBLE)
@pytest.mark.parametrize("eight", [False, True])
def test_openusd_skins_the_rig_as_vkdqs_does(tmp_path, method, eight):
    path = _rig_file(tmp_path, eight=eight)
    info, stage = _check_rig(path, tmp_path / "rig.usda", method, 0)
    assert info.skinning_method == methods.get(method).usdskel
    body = UsdSkel.BindingAPI(stage.GetPrimAtPath("/Root/body"))
    assert body.GetSkinningMethodAttr().Get() == info.skinning_method
    assert body.GetJointIndicesPrimvar().GetElementSize() == (8 if eight else 4)
    assert UsdSkel.BindingAPI(stage.GetPrimAtPath("/Root/hand")).GetSkinningMethodAttr().Get() == (
        info.skinning_method
    )
    # two skins, and the prop (under the last joint) bound rigidly to its node's Skeleton
    assert info.skeletons == 3 and info.meshes == 3
    prop = UsdSkel.BindingAPI(stage.GetPrimAtPath("/Root/prop"))
    assert prop.GetSkeletonRel().GetTargets()[0].name == "prop_skeleton"


def test_skeleton_topology_and_keys_are_the_files(tmp_path):
    """Parents come first, every joint's parent is its parent node, the animation holds the
    moved joints at the clip's own key times (not resampled), scales exact in halves."""
    path = _rig_file(tmp_path)
    scene = vkdqs.load_gltf(path)
    info = vkdqs.export_usdskel(scene, tmp_path / "rig.usdc", method="lbs", animation=0)
    assert not info.resampled
    stage = Usd.Stage.Open(str(tmp_path / "rig.usdc"))
    cache = UsdSkel.Cache()
    root = UsdSkel.Root(stage.GetDefaultPrim())
    cache.Populate(root, Usd.TraverseInstanceProxies())
    skels = [UsdSkel.Skeleton(p) for p in stage.Traverse() if p.IsA(UsdSkel.Skeleton)]
    assert len(skels) == 3  # chain, hand, the prop's
    for skel in skels:
        query = cache.GetSkelQuery(skel)
        assert query
        ok, why = query.GetTopology().Validate()
        assert ok, why
    chain = UsdSkel.Skeleton(stage.GetPrimAtPath("/Root/chain"))
    tokens = list(chain.GetJointsAttr().Get())
    # the root node above the joints, then j0|joint ... j7|joint, each under the one before
    assert tokens[0] == "root" and tokens[1] == "root/j0_joint" and tokens[-1].count("/") == 8
    names = list(chain.GetJointNamesAttr().Get())
    assert names == ["root"] + [f"j{k}|joint" for k in range(8)]
    anim = UsdSkel.Animation(stage.GetPrimAtPath("/Root/chain/Animation"))
    moved = {ch.node for ch in scene.animations[0].channels}
    node_of = {nd.name: nd.index for nd in scene.nodes}
    assert sorted(anim.GetJointsAttr().Get()) == sorted(
        t for t, name in zip(tokens, names, strict=True) if node_of[name] in moved
    )
    keys = np.unique(np.concatenate([c.times for c in scene.animations[0].channels]))
    samples = anim.GetRotationsAttr().GetTimeSamples()
    np.testing.assert_allclose(samples, keys * 30.0, rtol=0, atol=1e-9)
    assert stage.GetTimeCodesPerSecond() == 30.0


def test_step_keys_hold_their_value_until_the_next(tmp_path):
    """A STEP clip: exact at the keys, and between them (a sample just before each key)."""
    path = _rig_file(tmp_path)
    _check_rig(path, tmp_path / "step.usda", "dqs", 1)
    scene = vkdqs.load_gltf(path)
    stage = Usd.Stage.Open(str(tmp_path / "step.usda"))
    UsdSkel.BakeSkinning(UsdSkel.Root(stage.GetDefaultPrim()))
    body = next(p for p in scene_parts(scene) if p.kind == "skinned")
    for t in (0.2, 0.45, 1.0, 1.49, 1.9):  # between keys, not within 1/1000 frame before one
        got = _usd_world_points(stage, "/Root/body", t * 30.0)
        want = _reference_points(scene, body, "dqs", 1, t)
        assert np.abs(got - want).max() < 1e-5, t


def test_cubic_spline_clips_are_sampled_and_said_so(tmp_path):
    path = _rig_file(tmp_path)
    with pytest.warns(vkdqs.GltfWarning, match="CUBICSPLINE"):
        info, stage = _check_rig(path, tmp_path / "cubic.usda", "lbs", 2)
    assert info.resampled
    scene = vkdqs.load_gltf(path)
    body = next(p for p in scene_parts(scene) if p.kind == "skinned")
    for frame in (7, 31, 44):  # on the 30 fps grid, between keys
        got = _usd_world_points(stage, "/Root/body", float(frame))
        want = _reference_points(scene, body, "lbs", 2, frame / 30.0)
        assert np.abs(got - want).max() < 1e-5, frame


def test_scales_a_half_cannot_hold_are_warned_about(tmp_path):
    rig = make_rig()  # its scale keys end in 1.2, which a half rounds to 1.2002
    rig.save(tmp_path / "rig.glb")
    with pytest.warns(vkdqs.GltfWarning, match="half"):
        vkdqs.export_usdskel(tmp_path / "rig.glb", tmp_path / "rig.usda", method="lbs")


def test_nodes_above_the_joints_are_joints_and_the_skeleton_has_no_transform(tmp_path):
    """The Khronos Fox's 0.0254 root above the joints: a joint of the skeleton (binding
    nothing), not a transform UsdSkel would apply after skinning (not glTF's DQS under a
    scaled node); LBS and DQS both skin exactly."""
    path = _rig_file(tmp_path, bind_scale=0.0254)
    for method in ("lbs", "dqs"):
        _, stage = _check_rig(path, tmp_path / f"{method}.usda", method, 0)
        chain = UsdSkel.Skeleton(stage.GetPrimAtPath("/Root/chain"))
        assert chain.GetJointsAttr().Get()[0] == "root"
        assert not chain.GetOrderedXformOps()


def test_morph_targets_are_blend_shapes_with_animated_weights(tmp_path):
    model = make_morph_model()
    path = tmp_path / "morph.gltf"
    model.builder.save(path)
    for method in ("lbs", "dqs"):
        info, stage = _check_rig(path, tmp_path / f"morph_{method}.usda", method, 0)
        # the skinned tube's 3 targets, and the rigid face's 2 (bound to its node, as the
        # clip animates its weights)
        assert info.blend_shapes == 5
    shapes = [p for p in stage.Traverse() if p.IsA(UsdSkel.BlendShape)]
    assert len(shapes) == 5
    anims = [UsdSkel.Animation(p) for p in stage.Traverse() if p.IsA(UsdSkel.Animation)]
    assert sorted(len(a.GetBlendShapesAttr().Get()) for a in anims) == [2, 3]
    assert all(len(a.GetBlendShapeWeightsAttr().GetTimeSamples()) > 1 for a in anims)


def test_the_rest_pose(tmp_path):
    path = _rig_file(tmp_path)
    info, stage = _check_rig(path, tmp_path / "rest.usda", "dqs", None)
    assert info.samples == 0 and info.animation == "rest"
    assert not [p for p in stage.Traverse() if p.IsA(UsdSkel.Animation)]


@pytest.mark.parametrize("method", [m.name for m in methods.METHODS.values() if not m.usdskel])
def test_methods_usd_cannot_express_are_refused_pointing_to_bake(tmp_path, method):
    path = _rig_file(tmp_path)
    with pytest.raises(vkdqs.InputError, match="vkdqs bake"):
        vkdqs.export_usdskel(path, tmp_path / "x.usda", method=method)
    assert not (tmp_path / "x.usda").exists()


def test_blend_writes_its_weights_or_is_refused(tmp_path):
    """``blend`` needs primvars:skel:skinningBlendWeights: written where usd-core has them,
    refused (saying so) where it does not."""
    path = _rig_file(tmp_path)
    if BLEND_WEIGHTS:
        vkdqs.export_usdskel(path, tmp_path / "b.usda", method="blend")
        stage = Usd.Stage.Open(str(tmp_path / "b.usda"))
        prim = stage.GetPrimAtPath("/Root/body")
        assert prim.GetAttribute("primvars:skel:skinningBlendWeights").Get() is not None
    else:
        with pytest.raises(vkdqs.InputError, match="skinningBlendWeights"):
            vkdqs.export_usdskel(path, tmp_path / "b.usda", method="blend")


def test_outputs_are_checked_before_anything_is_done(tmp_path):
    path = _rig_file(tmp_path)
    with pytest.raises(vkdqs.InputError, match=r"\.usd"):
        vkdqs.export_usdskel(path, tmp_path / "x.glb")
    with pytest.raises(vkdqs.OutputError):
        vkdqs.export_usdskel(path, tmp_path / "missing" / "x.usda")
    (tmp_path / "old.usda").write_text("old")
    vkdqs.export_usdskel(path, tmp_path / "old.usda")
    assert (tmp_path / "old.usda").read_text().startswith("#usda")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.usda", "rig.glb"]


def test_textures_and_materials_as_the_bake_writes_them(tmp_path):
    from .gltf_fixtures_material import textured_rig

    rgba = np.zeros((4, 4, 4), np.uint8)
    rgba[..., 0], rgba[..., 3] = 200, 255
    textured_rig(rgba).save(tmp_path / "t.glb")
    vkdqs.export_usdskel(tmp_path / "t.glb", tmp_path / "t.usda", method="lbs")
    stage = Usd.Stage.Open(str(tmp_path / "t.usda"))
    shaders = [p for p in stage.Traverse() if p.GetTypeName() == "Shader"]
    assert any(p.GetAttribute("info:id").Get() == "UsdUVTexture" for p in shaders)
    assert (tmp_path / "t_texture0.png").is_file()


def test_cli_export(tmp_path, capsys):
    path = _rig_file(tmp_path)
    out = tmp_path / "rig.usdc"
    assert cli.main(["export", str(path), "--out", str(out), "--method", "lbs"]) == 0
    said = capsys.readouterr().out
    assert "rig.usdc" in said and "classicLinear" in said
    assert Usd.Stage.Open(str(out)).GetDefaultPrim().IsA(UsdSkel.Root)
    refused = next(m.name for m in methods.METHODS.values() if m.usdskel is None)
    bad = ["export", str(path), "--out", str(tmp_path / "c.usda"), "--method", refused]
    assert cli.main(bad) == 1
    err = capsys.readouterr().err
    assert err.startswith("vkdqs: error:") and "vkdqs bake" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", str(path), "--out", str(tmp_path / "x.npz")])
    assert exc.value.code == 2


def test_too_many_samples_are_refused_before_anything_is_written(tmp_path, monkeypatch):
    from vkdqs.baking import usdskel

    path = _rig_file(tmp_path)
    monkeypatch.setattr(usdskel, "MAX_SAMPLED", 5)
    with pytest.raises(vkdqs.LimitError, match="vkdqs bake"):
        vkdqs.export_usdskel(path, tmp_path / "x.usda", method="lbs")
    assert not (tmp_path / "x.usda").exists()


def test_any_node_name_becomes_a_valid_unique_joint_path(tmp_path):
    """Names USD cannot take as they are (slashes, spaces, non-ASCII, digits first, empty,
    repeated) become distinct identifiers; the names as they were are in jointNames."""
    rig = make_rig(scale_keys=HALF_SCALES)
    weird = ["a/b", "", "1st", "bone bone", "Kn\u00f6chel", "same", "same", "x:y"]
    for k, name in enumerate(weird):
        rig.document["nodes"][1 + k]["name"] = name
    rig.save(tmp_path / "weird.glb")
    _, stage = _check_rig(tmp_path / "weird.glb", tmp_path / "weird.usda", "dqs", 0)
    chain = UsdSkel.Skeleton(stage.GetPrimAtPath("/Root/chain"))
    tokens = list(chain.GetJointsAttr().Get())
    leaves = [t.rsplit("/", 1)[-1] for t in tokens]
    assert len(set(leaves)) == len(leaves)
    assert all(Sdf.Path.IsValidIdentifier(leaf) for leaf in leaves)
    assert list(chain.GetJointNamesAttr().Get())[1:] == weird
