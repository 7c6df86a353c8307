"""The registry of skinning methods (vkdqs.methods): every entry skins on every path like its own
float64 reference, its one capability rule agrees with its packer and with every layer that asks
it (info, --method all, crowds, the bake), and no other module keeps its own list of methods."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from vkdqs import InputError, SkinnedMesh, direct_delta_mush, dq
from vkdqs import methods as registry
from vkdqs import shader_interface as si
from vkdqs.app import cli
from vkdqs.app.scenes import GltfScenePlayer
from vkdqs.clip import AnimationClip
from vkdqs.engine.crowd import pack_clip
from vkdqs.engine.passes import MOTION_STEP
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gltf import load_gltf
from vkdqs.methods.delta_mush.reference import delta_mush_bind
from vkdqs.methods.velocity.reference import velocity_rig
from vkdqs.procedural import tube

from .gltf_fixtures import make_rig

PACKAGE = Path(__file__).resolve().parents[1] / "vkdqs"
METHODS = registry.names()
METHODS_ENTRIES = tuple(registry.METHODS.values())


def rig(rng, n, slots, bones, *, blend=False):
    positions = rng.uniform(-1.0, 1.0, (n, 3)) * np.array([2.0, 1.0, 0.5])
    joints = np.stack([rng.permutation(bones)[:slots] for _ in range(n)])
    weights = rng.uniform(0.05, 1.0, (n, slots))
    return SkinnedMesh(
        positions,
        rng.normal(size=(n, 3)),
        joints,
        weights,
        np.arange(n // 3 * 3),  # a triangle soup, for the renderer
        dqs_blend=rng.uniform(0.0, 1.0, n) if blend else None,
    )


def surface_rig(rng, n, slots, bones):
    """A tube of ``n`` vertices bound to a chain of ``bones`` (4 influences, plus 4 more of
    other bones with small weights for 8 slots): Direct Delta Mush smooths over a connected
    surface (a soup of random triangles leaves each vertex a flat, ill-conditioned covariance)."""
    mesh = tube(n, bone_count=bones, influences=4, segments=20, length=4.0)
    if slots == 4:
        return mesh
    far = (mesh.joints[:, :4] + rng.integers(1, bones, (n, 4))) % bones
    more = rng.uniform(0.0, 0.05, (n, 4))
    return SkinnedMesh(
        mesh.positions,
        mesh.normals,
        np.hstack([mesh.joints, far]),
        np.hstack([mesh.weights, more]),
        mesh.indices,
    )


def method_rig(method, rng, n, slots, bones):
    """The test mesh of ``method``: :func:`rig` (with a DQS fraction where it needs one), or
    :func:`surface_rig` where it needs a Direct Delta Mush precomputation or a Delta Mush bind
    (both smooth over a connected surface)."""
    needs = registry.get(method).needs
    if {"ddm_data", "delta_mush_data"} & needs:
        return surface_rig(rng, n, slots, bones)
    return rig(rng, n, slots, bones, blend="dqs_blend" in needs)


def inputs(method, mesh, bones, rng, device=None):
    """What ``method`` needs besides the pose: random centers, random rest frames, the mesh's
    Direct Delta Mush precomputation (on ``device``), its Delta Mush bind (5 steps of 0.6, not
    the defaults the Skinner would take)."""
    needs = registry.get(method).needs
    out = {}
    if "ddm_data" in needs:
        out["ddm"] = direct_delta_mush(mesh, bone_count=bones, device=device)
    if "delta_mush_data" in needs:
        out["delta_mush"] = delta_mush_bind(mesh.positions, mesh.indices, iterations=5, step=0.6)
    if "centers" in needs:
        out["centers"] = mesh.positions + rng.normal(scale=0.1, size=mesh.positions.shape)
    if "rest_matrices" in needs:
        out["rest_matrices"] = dq.to_matrices(dq.random_rigid(bones, rng))
    if "velocity_data" in needs:  # a chain; at rest (no previous pose) it is its base
        rest = dq.to_matrices(dq.random_rigid(bones, rng))
        out["velocity"] = velocity_rig(mesh, np.arange(bones) - 1, rest)
    return out


def poses(method, bones, rng, count):
    """``count`` poses the method accepts: rigid, plus per-bone scale where it takes scale."""
    mats = dq.to_matrices(dq.random_rigid(bones * count, rng)).reshape(count, bones, 4, 4)
    if registry.get(method).scale:
        mats[..., :3, :3] *= rng.uniform(0.7, 1.3, (count, bones, 1, 3))
    return mats


# -- every entry against its own reference -----------------------------------------------------


@pytest.mark.parametrize("path", ("compute", "vertex"))
@pytest.mark.parametrize("slots", (4, 8))
@pytest.mark.parametrize("method", METHODS)
def test_every_method_matches_its_reference_on_every_path(device, method, slots, path):
    rng = np.random.default_rng(zlib.crc32(f"{method} {slots} {path}".encode()))
    bones = 10
    skinning = registry.get(method)
    mesh = method_rig(method, rng, 600, slots, bones)
    extra = inputs(method, mesh, bones, rng, device)
    batch = poses(method, bones, rng, 3)
    if path not in skinning.paths:  # refused, naming the paths it runs on
        why = f"{re.escape(skinning.label)} runs on the compute path only"
        with pytest.raises(InputError, match=why):
            Skinner(device, mesh, bone_count=bones, method=method, path=path, inputs=extra)
        return
    with Skinner(device, mesh, bone_count=bones, method=method, path=path, inputs=extra) as skinner:
        many_p, many_n = skinner.skin_many(batch)
        one_p, _ = skinner.skin(batch[0])
    np.testing.assert_array_equal(one_p, many_p[0])
    for pose, p, n in zip(batch, many_p, many_n, strict=True):
        want_p, want_n = skinning.reference(mesh, pose, **extra)
        scale = max(mesh.extent, np.abs(want_p).max())
        np.testing.assert_allclose(p, want_p, rtol=0, atol=1e-5 * scale)
        assert np.isfinite(n).all()
        # normals: unit, and within float32 rounding of the reference where it is well defined
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
        assert np.median(np.abs(n - want_n)) < 1e-5


def test_every_entry_is_complete_and_distinct():
    entries = list(registry.METHODS.values())
    assert [m.name for m in entries] == list(METHODS) and len(set(METHODS)) == len(METHODS)
    shown = registry.shown()
    for attr in ("label", "color", "key"):
        values = [getattr(m, attr) for m in shown]
        assert len(set(values)) == len(values), attr
    assert all(m.key for m in shown) and all(m.summary for m in entries)
    assert registry.DEFAULT in METHODS and set(registry.BOTH) | set(registry.DIFF_OF) <= set(
        METHODS
    )
    for m in entries:
        assert m.needs <= set(registry.NEEDS), m.name
        assert m.bone_stride in (32, 48) and m.crowd_texels in (2, 3, 5)
        assert m.scaled_variant is None or not registry.get(m.scaled_variant).shown
        assert set(m.paths) <= set(registry.PATHS) and "compute" in m.paths, m.name
        # a method without vertex shaders: the renderer draws it by "compute, then draw",
        # crowds do not draw it
        assert ("vertex" in m.paths) != m.drawn_by_compute, m.name
        assert "vertex" in m.paths or not m.crowds, m.name
        # its shaders exist: the skinning kinds of its paths, both slot counts, crowds where it
        # draws them; no others. A method with a base has none of its own: it runs the base's,
        # so it reads the base's blocks, packs and takes poses as the base does
        names = {v.name for v in si.VARIANTS}
        for kind in ("render", "readback", "compute"):
            for slots in (4, 8):
                own = si.variant_name(kind, m.name, slots) in names
                assert own == (m.base is None and si.PATH_OF[si.Kind(kind)] in m.paths), m.name
                built = si.variant_name(kind, m.shaders, slots) in names
                assert built >= (si.PATH_OF[si.Kind(kind)] in m.paths), (kind, m.name, slots)
        if m.base is not None:
            base = registry.get(m.base)
            assert base.base is None and set(m.paths) <= set(base.paths), m.name
            for attr in ("defines", "bone_stride", "pack_bones", "scale", "reflection"):
                assert getattr(m, attr) == getattr(base, attr), (m.name, attr)
            assert (m.collapse, m.max_influences) == (base.collapse, base.max_influences)
        crowd = si.crowd_variant_name("crowd_render", m.name)
        assert (crowd in names) == m.crowds, m.name
        if m.crowds:
            assert si.crowd_variant_name("crowd_sample", m.name) in names


def test_none_is_an_entry_that_answers_for_itself(device):
    """ "No skinning" is the registry's entry NONE: found by get() as the others are, not among
    the methods that skin (METHODS, --method all), its reference the (morphed) rest mesh for
    any pose, taking any joint matrices, refused where it has no shaders and given no inputs."""
    none = registry.get("none")
    assert none is registry.NONE and not none.skins and all(m.skins for m in METHODS_ENTRIES)
    assert "none" not in registry.METHODS and "none" not in registry.names()
    assert none not in registry.shown() and none.paths == ("vertex",)
    assert none.defines == ("SKIN_NONE",) and none.bone_stride == 32
    with pytest.raises(InputError, match="exists"):
        registry.register(dataclasses.replace(registry.get("lbs"), name="none"))
    rng = np.random.default_rng(3)
    mesh = method_rig("lbs", rng, 200, 4, 6)
    pose = poses("lbs", 6, rng, 1)[0]
    p, n = none.reference(mesh, pose)
    np.testing.assert_array_equal(p, mesh.positions.astype(np.float64))
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-12)
    for kind in KINDS:  # rigid, scaled, mirrored, collapsed: nothing is skinned
        assert none.check(matrices_of(kind)) is None, kind
    assert "does not draw crowds" in none.check(matrices_of("rigid"), crowd=True)
    with pytest.raises(InputError, match="skins nothing"):
        Skinner(device, mesh, bone_count=6, method="none")
    with pytest.raises(InputError, match=r"centers are for method='cor', not 'none'"):
        none.inputs(mesh, 6, centers=np.zeros((mesh.vertex_count, 3), np.float32))


def test_get_and_parse_name_the_methods():
    with pytest.raises(InputError, match=r"method must be one of lbs, dqs, .*'slerp'"):
        registry.get("slerp")
    assert registry.parse_methods("all") == tuple(m.name for m in registry.shown())
    assert registry.label(registry.DIFF) == "|DQS - LBS|"


@pytest.mark.parametrize("method", [m.name for m in registry.METHODS.values() if m.crowds])
def test_every_crowd_method_samples_whole_frames_as_an_instance_packs_them(device, method):
    """On a whole frame a crowd's sampled bones are the instance packing of that frame: its
    bone block, then its second block (crowd_texels texels a bone)."""
    rng = np.random.default_rng(zlib.crc32(method.encode()))
    bones = 6
    skinning = registry.get(method)
    mesh = rig(rng, 200, 4, bones, blend="dqs_blend" in skinning.needs)
    extra = inputs(method, mesh, bones, rng)
    frames = poses(method, bones, rng, 5)  # 4 copies on frames 0..3 of 5 (5 would wrap to 0)
    if not skinning.crowd_scale:
        frames = dq.to_matrices(dq.random_rigid(5 * bones, rng)).reshape(5, bones, 4, 4)
    clip = AnimationClip(frames, 10.0)
    with (
        OffscreenTarget(device, 32, 24) as target,
        Renderer(device, target) as renderer,
    ):
        rm = renderer.add_mesh(mesh)
        crowd = renderer.add_crowd(rm, clip, count=4, method=method, **extra)
        crowd.set_times(np.arange(4) / 10.0)  # copy c on frame c
        renderer.render_image()
        got = crowd.read_bones()
    assert got.shape == (4, bones, skinning.crowd_texels, 4)
    rest = extra.get("rest_matrices")
    for c in range(4):
        pose = skinning.pack(frames[c], bones, allow_scale=False, rest_matrices=rest)
        want = pose.bones if pose.scales is None else np.concatenate([pose.bones, pose.scales], 1)
        np.testing.assert_allclose(got[c], want, atol=2e-6)


# -- one rule: check() agrees with the packers -------------------------------------------------

KINDS = ("rigid", "scaled", "sheared", "mirrored", "collapsed")


def matrices_of(kind, bones=4):
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    mats = dq.to_matrices(dq.random_rigid(bones, rng))
    if kind == "scaled":
        mats[1, :3, :3] *= [1.0, 2.0, 0.5]
    elif kind == "sheared":
        mats[2, :3, :3] = mats[2, :3, :3] @ np.array([[1.0, 0.4, 0.0], [0, 1, 0], [0, 0, 1]])
    elif kind == "mirrored":
        mats[1, :3, 0] *= -1.0
    elif kind == "collapsed":
        mats[3, :3, :3] *= [1.0, 1.0, 0.0]
    return mats


@pytest.mark.parametrize("crowd", (False, True))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", METHODS)
def test_check_agrees_with_the_packer(method, kind, crowd):
    """A method accepts joint matrices exactly when its packer packs them: an instance's pose
    (per-frame two-phase DQS allowed), or a crowd's clip (packed once)."""
    skinning = registry.get(method)
    mats = matrices_of(kind)
    rest = np.tile(np.eye(4), (4, 1, 1)) if "rest_matrices" in skinning.needs else None
    reason = skinning.check(mats, crowd=crowd)
    try:
        if crowd:
            if not skinning.crowds:
                raise InputError("no crowds")
            pack_clip(AnimationClip(mats[None], 30.0), method, rest)
        else:
            skinning.pack(mats, 4, rest_matrices=rest)
        packed = True
    except InputError:
        packed = False
    assert packed == (reason is None), (method, kind, crowd, reason)
    if reason is not None:
        assert skinning.label in reason


def test_the_capability_table():
    """What each method takes, as users meet it: LBS anything, DQS scale (two-phase) but no
    mirror, blend and CoR rigid only, Blender's DQS scale and mirrors."""
    takes = {
        m: {k for k in KINDS if registry.get(m).check(matrices_of(k)) is None} for m in METHODS
    }
    assert takes["lbs"] == set(KINDS)
    assert takes["dqs"] == takes["dqs_scale"] == {"rigid", "scaled", "sheared"}
    assert takes["blend"] == takes["cor"] == takes["ddm"] == {"rigid"}
    assert takes["delta_mush"] == takes["lbs"]  # what its base takes
    assert takes["dqs_blender"] == {"rigid", "scaled", "sheared", "mirrored"}
    # crowds: no per-frame two-phase DQS
    assert registry.get("dqs").check(matrices_of("scaled"), crowd=True)
    assert registry.get("dqs_scale").check(matrices_of("rigid"), crowd=True)
    eight = registry.SkinTraits(max_influences=9)
    assert all(registry.get(m).check(eight) for m in METHODS)
    no_rest = registry.SkinTraits(rest_frames=False)
    assert [m for m in METHODS if registry.get(m).check(no_rest)] == ["dqs_blender"]


def test_select_methods_leaves_out_what_all_cannot_show():
    scaled = registry.SkinTraits(scale=True)
    shown, left = registry.select_methods("all", scaled)
    # Delta Mush runs LBS's shaders, so it takes what LBS takes: scale, mirroring; velocity
    # skinning over DQS takes what DQS takes (scale by two-phase DQS)
    assert shown == ("lbs", "dqs", "dqs_blender", "delta_mush", "velocity")
    assert set(left) == {"blend", "cor", "ddm"} and "scale or shear" in left["blend"]
    with pytest.raises(InputError, match="CoR needs rigid joint matrices"):
        registry.select_methods("lbs,cor", scaled)
    mirrored = registry.SkinTraits(reflection=True)
    with pytest.raises(InputError, match="DQS cannot skin a mirrored"):
        registry.select_methods("diff", mirrored)
    assert registry.select_methods("diff") == ((registry.DIFF,), {})
    assert registry.select_methods("all", mirrored)[0] == ("lbs", "dqs_blender", "delta_mush")


# -- the layers agree: info, --method all, the player, crowds and the bake ---------------------


def test_info_and_render_all_agree_on_a_scaled_skin(tmp_path, device, capsys):
    """What ``vkdqs info`` says a skin suits is what ``render --method all`` draws; the others
    are named with their reason and the exit code is 0."""
    model = tmp_path / "scaled.glb"
    make_rig(scaled=True).save(model)
    assert cli.main(["info", "--json", str(model)]) == 0
    skins = json.loads(capsys.readouterr().out)["skins"]
    suits = skins[0]["methods"]
    assert suits == ["lbs", "dqs", "dqs_blender", "delta_mush", "velocity"]
    assert set(skins[0]["refused"]) == {"blend", "cor", "ddm"}
    out = tmp_path / "all.png"
    args = ["render", str(model), "--out", str(out), "--method", "all", "--size", "160x90"]
    assert cli.main([*args, "--samples", "1"]) == 0
    captured = capsys.readouterr()
    assert "LBS | DQS | DQS (Blender) | Delta Mush | Velocity (DQS) (left to right)" in captured.out
    for method in ("blend", "cor", "ddm"):
        assert f"left out {method}: " in captured.err
    assert cli.main(["info", str(model)]) == 0
    out = capsys.readouterr().out
    assert "; not blend, cor: needs rigid joint matrices" in out
    # DDM takes one uniform scale all joint matrices share, which this skin's animated scale
    # is not
    assert "; not ddm: needs rigid joint matrices, or one uniform scale they all share" in out
    # a method named alone that cannot take the skin is an error with the reason
    assert cli.main([*args[:-4], "--method", "cor", "--size", "160x90"]) == 1
    assert "CoR needs rigid joint matrices" in capsys.readouterr().err


def test_the_player_shows_what_the_skins_accept(tmp_path, device):
    model = tmp_path / "scaled.glb"
    make_rig(scaled=True).save(model)
    scene = load_gltf(model)
    with (
        OffscreenTarget(device, 64, 48) as target,
        Renderer(device, target) as renderer,
    ):
        player = GltfScenePlayer(renderer, scene, methods="all")
        takes = {m for m in METHODS if registry.get(m).check(player.traits) is None}
        assert set(player.shown_methods) == takes & set(registry.parse_methods("all"))
        assert set(player.left_out) == set(registry.parse_methods("all")) - takes
        renderer.render_image()
        # every skinned copy was posed by its own method
        for draw in player.draws:
            if draw.kind == "skinned":
                for method in player.shown_methods:
                    assert draw.instances[method].method == method
        player.close()


@pytest.mark.parametrize("method", [m.name for m in registry.shown()])
def test_a_bake_takes_every_method_from_the_file(tmp_path, device, method):
    """The bake derives what a method needs from the model (rest frames, a DQS fraction,
    centers) and skins each frame as the method's reference does."""
    import vkdqs

    model = tmp_path / "rigid.glb"
    make_rig(scaled=False).save(model)
    scene = load_gltf(model)
    baked = vkdqs.bake(scene, method=method, fps=4, end=0.5, device=device)
    assert baked.positions.shape[0] == 3 and np.isfinite(baked.positions).all()
    # the first skinned part's vertices, frame by frame, against the registry's reference
    from vkdqs.gltf.parts import scene_parts, skin_matrices, skinning_inputs

    part = scene_parts(scene)[0]
    geometry, extra = skinning_inputs(scene, part, method)
    if "ddm_data" in registry.get(method).needs:  # the one the bake computed, kept on the mesh
        from vkdqs.methods.ddm.gpu import mesh_ddm

        extra["ddm"] = mesh_ddm(geometry, part.bone_count, device=device)
    if "centers" in registry.get(method).needs:
        from vkdqs import centers_of_rotation

        extra["centers"] = centers_of_rotation(geometry, bone_count=part.bone_count, device=device)
    n = geometry.vertex_count
    h = MOTION_STEP  # the clip's motion, for methods that move with it (the others ignore it)
    for k, t in enumerate(baked.times):
        glob = scene.node_global_matrices(0, t)
        mats = skin_matrices(scene, (part.skin,), glob)[part.skin]
        before = skin_matrices(scene, (part.skin,), scene.node_global_matrices(0, t - h))
        want, _ = registry.get(method).reference(
            geometry, mats, previous=before[part.skin], dt=h, **extra
        )
        np.testing.assert_allclose(baked.positions[k, :n], want, atol=2e-5 * geometry.extent)


# -- the registry is the only list ---------------------------------------------------------------


def _method_strings(node: ast.AST) -> list[str]:
    return [
        e.value
        for e in getattr(node, "elts", [])
        if isinstance(e, ast.Constant) and e.value in registry.METHODS
    ]


def method_lists(source: str) -> list[tuple[int, str]]:
    """Where a module spells several method names as a tuple, list or set, as dict keys, or
    compares a value with a method name (``== "cor"``, ``in ("dqs", ...)``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(_method_strings(node)) >= 2:
            found.append((node.lineno, "a list of method names"))
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if isinstance(k, ast.Constant)]
            if sum(k.value in registry.METHODS for k in keys) >= 2:
                found.append((node.lineno, "a dict keyed by method names"))
        elif isinstance(node, ast.Compare):
            for right in (node.left, *node.comparators):
                if isinstance(right, ast.Constant) and right.value in registry.METHODS:
                    found.append((node.lineno, f"a comparison with {right.value!r}"))
    return found


def test_no_module_but_the_registry_lists_or_branches_on_methods():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "methods" / "__init__.py":
            continue
        for line, what in method_lists(path.read_text()):
            problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert not problems, "ask vkdqs.methods instead:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "source",
    [
        'SCENE = ("lbs", "dqs")\n',
        'COLORS = {"lbs": 1, "cor": 2}\n',
        'def f(m):\n    return m == "cor"\n',
        'def f(m):\n    return m in ["dqs", "blend"]\n',
    ],
)
def test_the_list_check_catches_a_list(source):
    assert method_lists(source)


def test_the_registry_loads_without_vulkan():
    """The command line checks --method (and --help lists the methods) without a driver."""
    code = (
        "import sys, vkdqs.methods, vkdqs.app.cli; "
        "assert 'vulkan' not in sys.modules, sorted(m for m in sys.modules if 'vulkan' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
