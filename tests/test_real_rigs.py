"""Every method on rigs with the traits real files carry, on every path, against float64.

The fixtures are written in code (tests/gltf_fixtures.make_rig) with what was seen on real
characters: bind matrices in inches (the Khronos Fox's 0.0254), joint matrices that are a
uniform quantization scale (gltfpack's 9.2e-5 on CesiumMan), scaled joints, 8 influences, a
skeleton root that is not an ancestor of the joints and a byteStride on a non-vertex view
(FBX2glTF, PlayCanvas, three.js's Soldier). For each, what ``vkdqs info`` says a method
accepts is what the method does on every path (compute, the rendering shader's readback,
rendering, crowds, the bake), each against the registry's float64 reference; what it refuses,
every path refuses.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import vkdqs
from vkdqs import InputError
from vkdqs import methods as registry
from vkdqs.app.scenes import CrowdScene, GltfScenePlayer
from vkdqs.engine.passes import MOTION_STEP
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gltf import GltfWarning, load_gltf
from vkdqs.gltf.parts import scene_parts, skin_matrices, skinning_inputs

from .gltf_fixtures import make_rig
from .imaging import CLEAR, covered, pixel_box, projected_box

W, H = 240, 160
ANIMATION = 0  # "linear": it rotates, translates and (scaled rig) scales joints
TIMES = np.linspace(0.0, 1.0, 5)


def _skeleton_not_ancestor(doc: dict) -> None:
    doc["skins"][0]["skeleton"] = 9  # the mesh node, as FBX2glTF writes it


def _strided_ibm(doc: dict) -> None:
    view = doc["accessors"][doc["skins"][0]["inverseBindMatrices"]]["bufferView"]
    doc["bufferViews"][view]["byteStride"] = 64  # the element size, as three.js's Soldier


#: name -> (make_rig options, a change to the document, expects a GltfWarning)
FIXTURES = {
    "plain": ({}, None, False),
    "inch_bind": ({"bind_scale": 0.0254}, None, False),
    "quantized": ({"joint_scale": 9.2e-5}, None, False),
    "scaled": ({"scaled": True}, None, False),
    "eight": ({"eight": True}, None, False),
    "skeleton_not_ancestor": ({}, _skeleton_not_ancestor, True),
    "strided_ibm": ({}, _strided_ibm, True),
}
METHODS = [m.name for m in registry.shown()]


@pytest.fixture(scope="module", params=sorted(FIXTURES))
def rig(request, tmp_path_factory):
    """(fixture name, loaded GltfScene): loaded once per fixture."""
    options, change, warns = FIXTURES[request.param]
    rig = make_rig(**({"scaled": False} | options))
    if change is not None:
        change(rig.document)
    path = tmp_path_factory.mktemp(request.param) / "rig.glb"
    rig.save(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scene = load_gltf(path)
    assert any(issubclass(w.category, GltfWarning) for w in caught) == warns
    return request.param, scene


def poses(scene, part):
    """The part's joint matrices at every time of :data:`TIMES`, ``(T, B, 4, 4)``."""
    return np.stack(
        [
            skin_matrices(scene, (part.skin,), scene.node_global_matrices(ANIMATION, t))[part.skin]
            for t in TIMES
        ]
    )


def inputs(scene, part, method, device):
    """The geometry and keyword arguments ``method`` takes for ``part``, all from the file
    (centers of rotation computed on the GPU, as the entry points do; a Direct Delta Mush
    precomputation with the default parameters, kept on the geometry as the Skinner keeps it;
    a Delta Mush bind of the part as its skin places it at rest, which the loader's entry points
    bind, so the float64 reference mushes with the bind the GPU does)."""
    geometry, extra = skinning_inputs(scene, part, method)
    if "ddm_data" in registry.get(method).needs:
        from vkdqs.methods.ddm.gpu import mesh_ddm

        extra["ddm"] = mesh_ddm(geometry, part.bone_count, device=device)
    if "centers" in registry.get(method).needs:
        extra["centers"] = vkdqs.centers_of_rotation(
            geometry, bone_count=part.bone_count, device=device
        )
    return geometry, extra


def part_accepts(scene, part, method):
    """Whether ``method`` skins ``part`` at every time (its packer's verdict; the packer takes
    the rest frames of what the file gives, not a Delta Mush bind)."""
    _, extra = skinning_inputs(scene, part, method)
    rest = {k: v for k, v in extra.items() if k == "rest_matrices"}
    try:
        registry.get(method).pack(poses(scene, part), part.bone_count, batched=True, **rest)
    except InputError:
        return False
    return True


def accepts(scene, method):
    """Whether ``method`` skins every skinned part at every time."""
    parts = [p for p in scene_parts(scene) if p.kind == "skinned"]
    return all(part_accepts(scene, part, method) for part in parts)


def assert_close(got, want):
    """Within 1e-5 of the part's size (its extent, or how far it lies from the origin: float32
    keeps about 7 digits of a coordinate), as every GPU path is checked."""
    scale = max(float(np.ptp(want, axis=0).max()), float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * scale)


def test_info_and_method_all_say_what_each_method_does(rig, device):
    name, scene = rig
    info = scene.info()
    said = set(info["skins"][0]["methods"]) & set(METHODS)
    for skin in info["skins"][1:]:
        said &= set(skin["methods"])
    does = {m for m in METHODS if accepts(scene, m)}
    assert said == does, name
    with (
        OffscreenTarget(device, 64, 48) as target,
        Renderer(device, target) as renderer,
    ):
        player = GltfScenePlayer(renderer, scene, methods="all", animation=ANIMATION)
        try:
            assert set(player.shown_methods) == does
            assert set(player.left_out) == set(METHODS) - does
        finally:
            player.close()
    # what the fixtures are for; inch_bind's second skin has no inverse bind matrices, so its
    # joint matrices keep the inch scale: blend and CoR refuse that one, as they refuse
    # quantized's uniform scale; DDM takes one uniform scale all joint matrices share, not
    # scaled's animated joint scales
    scaled = ("quantized", "scaled", "inch_bind")
    expect = set(METHODS) - ({"blend", "cor"} if name in scaled else set())
    expect -= {"ddm"} if name == "scaled" else set()
    assert does == expect, name


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", ("compute", "vertex"))
def test_skinner_paths_match_the_reference(rig, device, method, path):
    _, scene = rig
    skinning = registry.get(method)
    if path not in skinning.paths:  # tests/test_registry.py checks the refusal
        return
    for part in scene_parts(scene):
        if part.kind != "skinned":
            continue
        geometry, extra = inputs(scene, part, method, device)
        mats = poses(scene, part)
        with Skinner(
            device, geometry, bone_count=part.bone_count, method=method, path=path, inputs=extra
        ) as skinner:
            if not part_accepts(scene, part, method):
                with pytest.raises(InputError):
                    skinner.skin_many(mats)
                continue
            got, _ = skinner.skin_many(mats)
        for k, pose in enumerate(mats):
            want, _ = skinning.reference(geometry, pose, **extra)
            assert_close(got[k], want)


def clip_motion(scene, part, time):
    """The clip's motion at ``time`` as the player and the bake give it to methods that move
    with it (the joints MOTION_STEP earlier); the other methods' references ignore it."""
    earlier = scene.node_global_matrices(ANIMATION, time - MOTION_STEP)
    return {"previous": skin_matrices(scene, (part.skin,), earlier)[part.skin], "dt": MOTION_STEP}


def part_points(scene, method, time, device):
    """Every drawn part's vertices at ``time``: skinned parts by the method's reference, rigid
    parts by their node's matrix."""
    glob = scene.node_global_matrices(ANIMATION, time)
    out = []
    for part in scene_parts(scene):
        if part.kind == "skinned":
            geometry, extra = inputs(scene, part, method, device)
            mats = skin_matrices(scene, (part.skin,), glob)[part.skin]
            motion = clip_motion(scene, part, time)
            out.append(registry.get(method).reference(geometry, mats, **motion, **extra)[0])
        else:
            p = part.geometry.positions
            out.append((np.c_[p, np.ones(len(p))] @ glob[part.node].T)[:, :3])
    return out


@pytest.mark.parametrize("method", METHODS)
def test_render_draws_where_the_reference_puts_it(rig, device, method):
    _, scene = rig
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as renderer,
    ):
        if not accepts(scene, method):
            with pytest.raises(InputError, match="needs rigid"):
                GltfScenePlayer(renderer, scene, methods=method, animation=ANIMATION)
            return
        player = GltfScenePlayer(renderer, scene, methods=method, animation=ANIMATION)
        try:
            for time in (0.0, 0.75):
                player.set_time(time)
                img = renderer.render_image()
                boxes = np.array(
                    [
                        projected_box(renderer.camera, pts, W, H)
                        for pts in part_points(scene, method, time, device)
                    ]
                )
                # parts smaller than a pixel (the inch rig's prop) cover no pixel centre
                big = (boxes[:, 2:] - boxes[:, :2] >= 3.0).all(axis=1)
                want = np.r_[boxes[big, :2].min(axis=0), boxes[big, 2:].max(axis=0)]
                got = pixel_box(covered(img))
                np.testing.assert_allclose(got, want, atol=2.0)
        finally:
            player.close()


@pytest.mark.parametrize("method", METHODS)
def test_crowds_sample_the_frames_as_instances_pack_them(rig, device, method):
    _, scene = rig
    skinning = registry.get(method)
    with (
        OffscreenTarget(device, 64, 48) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
    ):
        try:
            crowd_scene = CrowdScene.from_gltf(renderer, scene, 1, methods=method)
        except InputError as exc:
            # a clip the method's crowds cannot take (no per-frame two-phase DQS in crowds)
            assert skinning.check(scene.skin_traits(0), crowd=True), exc
            return
        crowd = crowd_scene.crowds[method]
        crowd.set_times([0.0])
        renderer.render_image()
        got = crowd.read_bones()[0]
        part = next(p for p in scene_parts(scene) if p.kind == "skinned")
        _, extra = skinning_inputs(scene, part, method)
        pose = skinning.pack(crowd.clip.frames[0], crowd.joint_count, allow_scale=False, **extra)
        want = pose.bones if pose.scales is None else np.concatenate([pose.bones, pose.scales], 1)
        np.testing.assert_allclose(got, want, atol=2e-6 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("method", METHODS)
def test_bakes_skin_every_frame_as_the_reference(rig, device, method):
    _, scene = rig
    if not accepts(scene, method):
        with pytest.raises(InputError, match="cannot take its joint matrices"):
            vkdqs.bake(scene, method=method, fps=4, end=1.0, device=device)
        return
    baked = vkdqs.bake(scene, method=method, fps=4, end=1.0, device=device)
    offset = 0
    for part in scene_parts(scene):
        n = part.geometry.vertex_count
        if part.kind == "skinned":
            geometry, extra = inputs(scene, part, method, device)
            for k, t in enumerate(baked.times):
                glob = scene.node_global_matrices(ANIMATION, t)
                mats = skin_matrices(scene, (part.skin,), glob)[part.skin]
                motion = clip_motion(scene, part, t)
                want, _ = registry.get(method).reference(geometry, mats, **motion, **extra)
                assert_close(baked.positions[k, offset : offset + n], want)
        offset += n


def test_blenders_dqs_equals_dqs_on_a_rig_in_inches(tmp_path):
    """Blender's Preserve Volume on a rig whose bind matrices carry a unit scale (rigid joint
    matrices) is plain DQS, as Blender itself draws it: vkdqs put the Fox's vertices about 30
    times too far out before its rest frames were made rigid."""
    rig = make_rig(scaled=False, bind_scale=0.0254)
    rig.save(tmp_path / "inch.glb")
    scene = load_gltf(tmp_path / "inch.glb")
    part = scene_parts(scene)[0]
    geometry, extra = skinning_inputs(scene, part, "dqs_blender")
    assert np.ptp(np.linalg.norm(extra["rest_matrices"][:, :3, :3], axis=1)) < 1e-3
    assert abs(np.linalg.norm(extra["rest_matrices"][0, :3, 0]) - 0.0254) < 1e-6
    for pose in poses(scene, part):
        blender, _ = registry.get("dqs_blender").reference(geometry, pose, **extra)
        plain, _ = registry.get("dqs").reference(geometry, pose)
        np.testing.assert_allclose(blender, plain, atol=1e-7 * geometry.extent)


def _one_triangle(path, *, facing_camera: bool) -> None:
    """A single-sided triangle in the xy plane, its front (counter-clockwise, normal +z) toward
    the default camera or away from it."""
    from vkdqs.gltf.save import GltfBuilder

    b = GltfBuilder()
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    order = [0, 1, 2] if facing_camera else [0, 2, 1]
    prim = {
        "attributes": {
            "POSITION": b.add_accessor(tri, target="vertex", min_max=True),
            "NORMAL": b.add_accessor(
                np.tile([0, 0, 1 if facing_camera else -1], (3, 1)).astype(np.float32)
            ),
        },
        "indices": b.add_accessor(np.array(order, np.uint16), target="index"),
        "material": 0,
    }
    b.add("materials", {"name": "single-sided"})
    b.add("meshes", {"primitives": [prim]})
    b.add("nodes", {"mesh": 0})
    b.add("scenes", {"nodes": [0]})
    b.document["scene"] = 0
    b.save(path)


@pytest.mark.parametrize("facing", (True, False))
def test_render_says_when_nothing_is_visible(tmp_path, device, capsys, facing):
    """A model whose only triangle faces away from the camera renders the floor and labels
    alone: the CLI says so on standard error (exit 0: the picture is what was asked for)."""
    from vkdqs.app import cli

    model = tmp_path / "tri.gltf"
    _one_triangle(model, facing_camera=facing)
    out = tmp_path / "tri.png"
    args = ["render", str(model), "--out", str(out), "--size", "96x64", "--samples", "1"]
    assert cli.main([*args, "--method", "lbs"]) == 0
    err = capsys.readouterr().err
    assert ("nothing of the model is visible" in err) == (not facing), err
