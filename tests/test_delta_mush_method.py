"""method="delta_mush" (classic Delta Mush through the registry): the Skinner runs LBS's shaders
and then the Delta Mush passes, binding the mesh itself when given no bind; the bake, its
batches and the command line take it from a model file; the renderer, crowds, the vertex path
and UsdSkel export refuse it, saying why. The passes themselves: tests/test_delta_mush_gpu.py;
every path against the reference: tests/test_registry.py."""

from __future__ import annotations

import numpy as np
import pytest

import vkdqs
from vkdqs import DeltaMushSkinner, InputError, SkinnedMesh, methods, procedural
from vkdqs.clip import AnimationClip
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.methods.delta_mush.reference import DEFAULTS, delta_mush_bind, mesh_delta_mush

from .gltf_fixtures import make_rig

DM = methods.get("delta_mush")


def candy() -> SkinnedMesh:
    return procedural.candy_wrapper(rings=17, segments=16)


def test_the_entry_is_lbs_under_the_mush():
    assert DM.base == "lbs" and DM.shaders == "lbs" and DM.needs == {"delta_mush_data"}
    # shown (viewer key 9, drawn by "compute, then draw"); over DQS it is chosen by name only
    assert DM.paths == ("compute",) and DM.drawn_by_compute and not DM.crowds
    assert DM.shown and DM.key == "9" and DM in methods.shown()
    over_dqs = methods.get("delta_mush_dqs")
    assert not (over_dqs.shown or over_dqs.key or over_dqs.crowds)
    assert DM.box_rule is None and DM.usdskel is None
    lbs = methods.get("lbs")
    assert (DM.defines, DM.bone_stride, DM.pack_bones) == (
        lbs.defines,
        lbs.bone_stride,
        lbs.pack_bones,
    )
    why = DM.check_path("vertex")
    assert why.startswith("Delta Mush runs on the compute path only (it smooths the skinned mesh")
    assert "bake it" in why


def test_the_skinner_binds_the_mesh_once_and_mushes_lbs(device):
    """Without a bind the Skinner binds the mesh with the defaults and keeps the bind on the
    mesh; the result is DeltaMushSkinner's over LBS bit for bit, and the registry's reference
    (LBS, then delta_mush_reference) within float32 rounding; boxes are the mushed vertices'."""
    mesh = candy()
    pose = procedural.twist_pose(150.0)
    with Skinner(device, mesh, bone_count=2, method="delta_mush") as skinner:
        bind = skinner.delta_mush
        p, n, box = skinner.skin(pose, bounds=True)
        np.testing.assert_array_equal(skinner.bounds(pose), box)
    assert bind is mesh_delta_mush(mesh) and (bind.iterations, bind.step) == (
        DEFAULTS["iterations"],
        DEFAULTS["step"],
    )
    np.testing.assert_array_equal(box, [p.min(axis=0), p.max(axis=0)])
    with Skinner(device, mesh, bone_count=2, method="delta_mush") as again:
        assert again.delta_mush is bind
    with DeltaMushSkinner(device, mesh, bone_count=2, method="lbs") as dm:
        want = dm.skin(pose)
    np.testing.assert_array_equal(p, want[0])
    np.testing.assert_array_equal(n, want[1])
    ref_p, ref_n = DM.reference(mesh, pose)  # the default bind, as the Skinner's
    np.testing.assert_allclose(p, ref_p, rtol=0, atol=1e-5 * mesh.extent)
    np.testing.assert_allclose(n, ref_n, rtol=0, atol=1e-4)
    lbs, _ = methods.get("lbs").reference(mesh, pose)
    assert np.abs(ref_p - lbs).max() > 0.01 * mesh.extent  # it is not LBS
    # a bind of its own: its iterations and step
    light = delta_mush_bind(mesh.positions, mesh.indices, iterations=2, step=0.3)
    with Skinner(device, mesh, bone_count=2, method="delta_mush", delta_mush=light) as skinner:
        got, _ = skinner.skin(pose)
    want_p, _ = DM.reference(mesh, pose, delta_mush=light)
    np.testing.assert_allclose(got, want_p, rtol=0, atol=1e-5 * mesh.extent)
    assert np.abs(got - p).max() > 1e-3 * mesh.extent


def test_delta_mush_dqs_is_dqs_under_the_mush(device):
    """The second entry over another base: DQS's poses and rule (two-phase DQS for scale, no
    mirrors), DeltaMushSkinner's result over DQS bit for bit."""
    dqs_mush = methods.get("delta_mush_dqs")
    assert dqs_mush.base == "dqs" and dqs_mush.scaled_variant == "dqs_scale"
    mirrored = np.tile(np.diag([-1.0, 1.0, 1.0, 1.0]), (2, 1, 1))
    assert dqs_mush.check(mirrored) == methods.get("dqs").check(mirrored).replace(
        "DQS", "Delta Mush (DQS)"
    )
    mesh = candy()
    scaled = procedural.twist_pose(120.0)
    scaled[1, :3, :3] *= 1.3
    for pose in (procedural.twist_pose(150.0), scaled):
        with Skinner(device, mesh, bone_count=2, method="delta_mush_dqs") as skinner:
            p, n = skinner.skin(pose)
        with DeltaMushSkinner(device, mesh, bone_count=2, method="dqs") as dm:
            want = dm.skin(pose)
        np.testing.assert_array_equal(p, want[0])
        np.testing.assert_array_equal(n, want[1])
        ref, _ = dqs_mush.reference(mesh, pose)
        np.testing.assert_allclose(p, ref, rtol=0, atol=1e-5 * mesh.extent)


def test_morph_targets_move_the_vertices_before_the_mush(device):
    mesh = candy()
    rng = np.random.default_rng(3)
    dp = rng.normal(size=(2, mesh.vertex_count, 3)) * 0.02
    morphed = SkinnedMesh(
        mesh.positions, mesh.normals, mesh.joints, mesh.weights, mesh.indices, morph_positions=dp
    )
    pose = procedural.bend_pose(60.0)
    w = np.array([1.0, 0.5], np.float32)
    with Skinner(device, morphed, bone_count=2, method="delta_mush") as skinner:
        p, _ = skinner.skin(pose, morph_weights=w)
    want, _ = DM.reference(morphed, pose, morph_weights=w)
    np.testing.assert_allclose(p, want, rtol=0, atol=1e-5 * mesh.extent)


def test_delta_mush_refusals(device):
    mesh = candy()
    bind = mesh_delta_mush(mesh)
    with pytest.raises(
        InputError, match=r"method='delta_mush' needs delta_mush=vkdqs.methods.delta_mush.reference"
    ):
        Skinner(device, mesh, bone_count=2, method="delta_mush", delta_mush=bind.deltas)
    small = procedural.candy_wrapper(rings=9, segments=8)
    with pytest.raises(InputError, match="bound for another mesh"):
        Skinner(device, small, bone_count=2, method="delta_mush", delta_mush=bind)
    with pytest.raises(
        InputError, match=r"delta_mush are for method='delta_mush' or 'delta_mush_dqs', not 'lbs'"
    ):
        Skinner(device, mesh, bone_count=2, method="lbs", delta_mush=bind)
    soup = SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with pytest.raises(InputError, match="needs the mesh's triangles"):
        Skinner(device, soup, bone_count=2, method="delta_mush")
    with pytest.raises(InputError, match="needs the mesh's triangles"):
        DM.reference(soup, procedural.twist_pose(10.0))
    with pytest.raises(InputError, match="Delta Mush runs on the compute path only"):
        Skinner(device, mesh, bone_count=2, method="delta_mush", path="vertex")
    with pytest.raises(InputError, match="the skinning under the mush"):
        DeltaMushSkinner(device, mesh, bone_count=2, method="delta_mush")
    # crowds draw with the vertex shader; the renderer draws its instances by "compute, then
    # draw" (tests/test_draw_compute.py)
    with OffscreenTarget(device, 8, 8) as target, Renderer(device, target) as renderer:
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(rm, bone_count=2, method="delta_mush", delta_mush=bind)
        assert inst.skinner.delta_mush is bind
        clip = AnimationClip(np.tile(np.eye(4), (2, 2, 1, 1)), 10.0)
        with pytest.raises(InputError, match="got 'delta_mush': Delta Mush does not draw crowds"):
            renderer.add_crowd(rm, clip, count=2, method="delta_mush")
    # the real reason: one instanced draw, each copy its own smoothing passes every frame
    why = DM.check(np.tile(np.eye(4), (2, 1, 1)), crowd=True)
    assert (
        why
        == DM.check_crowds()
        == methods.get("delta_mush_dqs").check_crowds().replace("Delta Mush (DQS)", "Delta Mush")
    )
    assert why.startswith("Delta Mush does not draw crowds: a crowd draws all its copies in one")
    assert "its own smoothing passes over the whole mesh each frame" in why
    # it takes what LBS takes: any joint matrix
    mirrored = np.tile(np.diag([-1.0, 1.0, 1.0, 1.0]), (2, 1, 1))
    assert DM.check(mirrored) is None


def test_a_model_file_bakes_delta_mush_with_the_default_bind(tmp_path, device):
    """The bake needs nothing from the user: the model file's entry point binds the part's
    mesh as its skin places it at rest (default parameters); the frames are the reference's
    with that bind."""
    from vkdqs.gltf import load_gltf
    from vkdqs.gltf.parts import scene_parts, skin_matrices, skinning_inputs

    model = tmp_path / "rigid.glb"
    make_rig(scaled=False).save(model)
    scene = load_gltf(model)
    baked = vkdqs.bake(scene, method="delta_mush", fps=4, end=0.5, device=device)
    part = scene_parts(scene)[0]
    geometry, extra = skinning_inputs(scene, part, "delta_mush")
    bind = extra["delta_mush"]
    rest = scene.skinning_matrices(part.skin, None)
    placed = vkdqs.reference.skin_lbs(
        geometry.positions, geometry.normals, geometry.joints, geometry.weights, rest
    )[0]
    np.testing.assert_array_equal(bind.deltas, delta_mush_bind(placed, geometry.indices).deltas)
    n = geometry.vertex_count
    for k, t in enumerate(baked.times):
        mats = skin_matrices(scene, (part.skin,), scene.node_global_matrices(0, t))[part.skin]
        want, _ = DM.reference(geometry, mats, delta_mush=bind)
        np.testing.assert_allclose(baked.positions[k, :n], want, atol=2e-5 * geometry.extent)
    lbs = vkdqs.bake(scene, method="lbs", fps=4, end=0.5, device=device)
    assert np.abs(lbs.positions - baked.positions).max() > 1e-4 * geometry.extent


@pytest.mark.gpu  # the CLI opens its own Device
def test_the_command_line_bakes_delta_mush_and_refuses_what_cannot_show_it(tmp_path, capsys):
    """``info`` names it among the methods a skin suits (over DQS among those a bake also
    takes); ``bake --method delta_mush`` writes its frames; ``export`` (UsdSkel has no Delta
    Mush) points to bake; ``render`` draws it ("compute, then draw"); Delta Mush over DQS is
    not shown in scenes, and ``render`` names what draws it."""
    from vkdqs.app import cli

    model = tmp_path / "rigid.glb"
    make_rig(scaled=False).save(model)
    assert cli.main(["info", str(model)]) == 0
    out = capsys.readouterr().out
    assert "methods lbs, dqs, blend, cor, dqs_blender, ddm, delta_mush, velocity;" in out
    assert "; bake also dqs_scale, delta_mush_dqs, velocity_lbs" in out
    out = tmp_path / "frames.glb"
    args = ["bake", str(model), "--method", "delta_mush", "--out", str(out), "--fps", "4"]
    assert cli.main(args) == 0
    assert "delta_mush)" in capsys.readouterr().out and out.stat().st_size > 0
    usd = tmp_path / "rig.usda"
    assert cli.main(["export", str(model), "--method", "delta_mush", "--out", str(usd)]) == 1
    err = capsys.readouterr().err
    assert "method 'delta_mush' (Delta Mush) has no UsdSkel equivalent" in err
    assert "vkdqs bake MODEL --method delta_mush" in err and not usd.exists()
    png = tmp_path / "x.png"
    args = ["render", str(model), "--out", str(png), "--size", "80x60", "--samples", "1"]
    assert cli.main([*args, "--method", "delta_mush"]) == 0
    assert "x.png (80x60, Delta Mush, " in capsys.readouterr().out and png.stat().st_size > 0
    with pytest.raises(SystemExit):
        cli.main([*args, "--method", "delta_mush_dqs"])
    err = capsys.readouterr().err
    assert "Delta Mush (DQS) is not shown in scenes; Renderer.add_instance(" in err
    assert "method='delta_mush_dqs') draws it" in err


def test_a_batch_bakes_delta_mush_as_a_single_bake(tmp_path, device):
    """``bake_batch(method="delta_mush")``: each worker's Skinner binds the mesh it bakes, as
    one bake does."""
    from vkdqs.baking import bake_to_file, batch

    models = tmp_path / "models"
    models.mkdir()
    make_rig(scaled=False).save(models / "a.glb")
    report = batch.bake_batch(
        models, tmp_path / "out", clips="linear", method="delta_mush", fps=4, jobs=1, timeout=120
    )
    assert (report.baked, report.failed) == (1, 0) and report.ok
    (record,) = report.records
    assert record.method == "delta_mush" and record.error is None
    single = tmp_path / "single.npz"
    bake_to_file(
        models / "a.glb", single, animation="linear", fps=4, method="delta_mush", device=device
    )
    with np.load(record.output) as got, np.load(single) as want:
        assert set(got.files) == set(want.files)
        for k in got.files:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_model_files_bind_the_mesh_as_the_skin_places_it_at_rest(tmp_path, device):
    """A quantized file stores its mesh divided by 9.2e-5 and scales it back with the joint
    matrices (gltfpack), and a skin without inverse bind matrices places its mesh by the
    joints' rest transforms: Delta Mush binds the mesh as the skin places it at rest, so its
    offsets are in the posed mesh's units, and the quantized file bakes as the plain one."""
    from vkdqs import bake

    from .gltf_fixtures import make_rig

    make_rig(joint_scale=9.2e-5).save(tmp_path / "quantized.glb")
    make_rig().save(tmp_path / "plain.glb")
    for method in ("delta_mush", "delta_mush_dqs"):
        q = bake(tmp_path / "quantized.glb", method=method, fps=4, device=device)
        p = bake(tmp_path / "plain.glb", method=method, fps=4, device=device)
        extent = np.ptp(p.positions, axis=1).max()
        assert np.isfinite(q.positions).all()
        # measured: 5.8e-7 (delta_mush), 3.8e-6 (delta_mush_dqs) of the extent
        np.testing.assert_allclose(q.positions, p.positions, rtol=0, atol=1e-5 * extent)
