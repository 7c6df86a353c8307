"""glTF models drawn by GltfScenePlayer, offscreen and in the viewer window.

The fixture rig (tests/gltf_fixtures.py) is written in code: a skinned tube on an 8-joint chain, a
second skin (a triangle), and a rigid prop parented to the last joint. Each image is checked
against where the CPU puts the same geometry: ``GltfScene.skinning_matrices`` with
``vkdqs.reference.skin_lbs``/``skin_dqs`` for the skinned meshes and ``GltfScene.rigid_meshes``
for the prop, projected with the renderer's camera. Culling is off in the bounding-box tests, so
every triangle counts whichever way it faces.
"""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import dq, reference
from vkdqs.app.scenes import GltfScenePlayer
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gltf import load_gltf

from . import imaging
from .conftest import validation_available
from .gltf_fixtures import make_rig, share_tube
from .imaging import CLEAR, covered, pixel_box

W, H = 320, 240


def projected_box(renderer, points):
    return imaging.projected_box(renderer.camera, points, W, H)


@pytest.fixture(scope="module")
def rig_files(tmp_path_factory):
    """{"rigid": the rig with rigid joint matrices, "scaled": with scaled joints}, as .glb."""
    root = tmp_path_factory.mktemp("gltf_render")
    files = {}
    for name, scaled in (("rigid", False), ("scaled", True)):
        files[name] = root / f"rig_{name}.glb"
        make_rig(scaled=scaled).save(files[name])
    return files


@pytest.fixture
def renderer(device):
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as r,
    ):
        yield r


def cpu_points(scene, animation, time, method):
    """World-space vertices of everything the player draws, skinned on the CPU (no offset).

    Returns (skinned points, rigid points).
    """
    skinned, rigid = [], []
    for nd in scene.nodes:
        if nd.skin is not None:
            skinned.append(skinned_points(scene, nd.index, animation, time, method))
    for ri in scene.rigid_meshes(animation, time):
        p = np.concatenate([prim.positions for prim in scene.meshes[ri.mesh].primitives])
        rigid.append((np.c_[p, np.ones(len(p))] @ ri.matrix.T)[:, :3])
    return np.concatenate(skinned), np.concatenate(rigid)


def skinned_points(scene, node, animation, time, method):
    """World-space vertices of ``nodes[node]``'s mesh posed by that node's skin, on the CPU."""
    nd = scene.nodes[node]
    mesh = scene.skinned_mesh(nd.mesh)
    mats = scene.skinning_matrices(nd.skin, animation, time)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    if method == "lbs":
        return reference.skin_lbs(*args, mats)[0]
    return reference.skin_dqs(*args, dq.from_matrices(mats))[0]


@pytest.mark.parametrize("time", [0.0, 0.5, 1.0])
def test_lbs_image_matches_the_cpu_projection(rig_files, renderer, time):
    scene = load_gltf(rig_files["scaled"])  # LBS takes the scaled joints as they are
    player = GltfScenePlayer(renderer, scene, methods="lbs", animation="linear")
    player.set_time(time)
    img = renderer.render_image()
    skinned, rigid = cpu_points(scene, 0, time, "lbs")
    want = projected_box(renderer, np.vstack([skinned, rigid]))
    assert want.min() > 0 and want[2] < W and want[3] < H  # framed: all of it in view
    np.testing.assert_allclose(pixel_box(covered(img)), want, atol=2.0)
    assert "LBS, animation 0 'linear'" in player.label()
    assert f"{time:.2f}/1.00 s" in player.label()


def test_both_copies_side_by_side(rig_files, renderer):
    """LBS on the left, DQS on the right, each where the CPU puts it, in its method's colour."""
    scene = load_gltf(rig_files["rigid"])
    player = GltfScenePlayer(renderer, scene)  # "both", the first animation
    renderer.camera.yaw = renderer.camera.pitch = 0.0  # straight on: the copies cannot overlap
    player.frame_camera()
    player.set_time(0.75)
    img = renderer.render_image()
    mask = covered(img)
    half = player.spacing / 2
    assert half > 0
    boxes = {}
    for method, dx in (("lbs", -half), ("dqs", half)):
        pts = np.vstack(cpu_points(scene, 0, 0.75, method)) + np.array([dx, 0.0, 0.0])
        boxes[method] = projected_box(renderer, pts)
    assert boxes["dqs"][0] - boxes["lbs"][2] > 6  # a gap between the copies on screen
    split = int((boxes["lbs"][2] + boxes["dqs"][0]) / 2)
    for method, part in (("lbs", mask[:, :split]), ("dqs", mask[:, split:])):
        got = pixel_box(part) + ([split, 0, split, 0] if method == "dqs" else 0)
        np.testing.assert_allclose(got, boxes[method], atol=2.0, err_msg=method)
    red, blue = (img[..., :3][:, sl][mask[:, sl]].mean(axis=0) for sl in np.s_[:split, split:])
    assert red[0] > red[2] + 20  # METHOD_COLORS: LBS reddish
    assert blue[2] > blue[0] + 20  # DQS bluish
    assert player.label().startswith("LBS (left) | DQS (right), animation 0 'linear' 0.75/")


def test_set_time_changes_the_image(rig_files, renderer):
    scene = load_gltf(rig_files["rigid"])
    player = GltfScenePlayer(renderer, scene)
    player.set_time(0.0)
    a = renderer.render_image()
    player.set_time(1.0)
    b = renderer.render_image()
    changed = np.abs(a.astype(int) - b.astype(int)).max(axis=-1) > 8
    assert changed.sum() > 200
    player.set_time(0.0)
    np.testing.assert_array_equal(renderer.render_image(), a)  # and back: same frame


def test_rigid_parts_follow_their_node(rig_files, renderer):
    """The prop (mesh 1 on a child node of the last joint) is drawn at its node's global matrix."""
    scene = load_gltf(rig_files["rigid"])
    player = GltfScenePlayer(renderer, scene, methods="dqs")
    rigid = [d for d in player.draws if d.kind == "rigid"]
    assert [(d.mesh, d.node) for d in rigid] == [(1, 10)]
    for d in player.draws:
        if d.kind == "skinned":
            d.instances["dqs"].visible = False
    centres = []
    for time in (0.0, 1.0):
        player.set_time(time)
        img = renderer.render_image()
        _, prop = cpu_points(scene, 0, time, "dqs")
        want = projected_box(renderer, prop)
        np.testing.assert_allclose(pixel_box(covered(img)), want, atol=2.0, err_msg=f"t={time}")
        centres.append((want[:2] + want[2:]) / 2)
    assert np.linalg.norm(centres[1] - centres[0]) > 10  # it moved with the chain


def test_animations_show_and_errors(rig_files, renderer):
    scene = load_gltf(rig_files["rigid"])
    player = GltfScenePlayer(renderer, scene, methods="lbs")
    assert player.animation == 0 and player.bone_count == 8
    assert player.step_animation(1) and player.animation == 1 and player.time == 0.0
    assert player.step_animation(-1) and player.step_animation(-1) and player.animation == 2
    player.set_animation("step")
    assert player.animation == 1 and player.duration == pytest.approx(2.0)
    player.update(2.5)  # loops
    assert player.time == pytest.approx(0.5)
    player.scrub(-1)
    assert player.time == pytest.approx(0.5 - 2.0 / 50)
    player.set_animation(None)
    assert player.label() == "LBS, rest pose"
    player.update(1.0)  # nothing to play
    assert player.time == 0.0
    player.show("both")
    assert all(inst.visible for d in player.draws for inst in d.instances.values())
    with pytest.raises(ValueError, match=r"rig_rigid\.glb: no animation 'walk'"):
        player.set_animation("walk")
    with pytest.raises(ValueError, match="no animation 7"):
        GltfScenePlayer(renderer, scene, animation=7)
    with pytest.raises(ValueError, match="methods must be"):
        player.show("cpu")


def test_viewer_plays_a_model(xvfb, rig_files):
    from vkdqs.app.stills import Decorations
    from vkdqs.app.viewer import Viewer

    viewer = Viewer(rig_files["rigid"], size=(W, H), samples=1, validation=validation_available())
    glfw = viewer.glfw
    try:
        assert isinstance(viewer.scene, GltfScenePlayer)
        assert viewer.scene.methods == "both" and viewer.scene.animation == 0
        viewer.run(max_frames=20)
        assert viewer.frames == 20
        assert viewer.scene.time > 0.0  # it plays

        viewer.handle_key(glfw.KEY_N)
        assert viewer.scene.animation == 1
        viewer.handle_key(glfw.KEY_P)
        viewer.handle_key(glfw.KEY_P)
        assert viewer.scene.animation == 2  # wraps around
        viewer.handle_key(glfw.KEY_KP_ADD)
        viewer.handle_key(glfw.KEY_EQUAL)
        assert viewer.speed == 4.0
        viewer.handle_key(glfw.KEY_MINUS)
        viewer.handle_key(glfw.KEY_KP_SUBTRACT)
        viewer.handle_key(glfw.KEY_KP_SUBTRACT)
        assert viewer.speed == 0.5
        viewer.handle_key(glfw.KEY_1)
        assert viewer.scene.methods == "dqs"
        viewer.handle_key(glfw.KEY_8)
        assert viewer.scene.methods == "ddm"
        viewer.handle_key(glfw.KEY_9)
        assert viewer.scene.methods == "delta_mush"
        viewer.handle_key(glfw.KEY_0)
        assert viewer.scene.methods == "velocity"
        viewer.handle_key(glfw.KEY_V)  # velocity skinning's motion doubled, then back
        assert viewer.scene.motion_scale == 2.0
        viewer.handle_key(glfw.KEY_V, mods=glfw.MOD_SHIFT)
        assert viewer.scene.motion_scale == 1.0
        viewer.handle_key(glfw.KEY_7)  # all eight, reframed: every copy's box in the window
        assert viewer.scene.methods == "all"
        title = (
            "LBS | DQS | LBS/DQS blend | CoR | DQS (Blender) | DDM | Delta Mush | Velocity (DQS) "
            "(left to right)"
        )
        assert title in viewer.window_title
        lo, hi = viewer.scene.shown_bounds()
        px = viewer.renderer.camera.project(np.array([lo, hi]), *viewer.target.extent)
        assert (px >= 0).all() and (px[:, 0] <= W).all() and (px[:, 1] <= H).all(), px
        viewer.handle_key(glfw.KEY_3)
        viewer.handle_key(glfw.KEY_B)
        for _ in range(20):
            viewer.handle_key(glfw.KEY_RIGHT_BRACKET)
        assert viewer.renderer.debug_bone == viewer.scene.bone_count - 1 == 7
        viewer.handle_key(glfw.KEY_B)
        viewer.handle_key(glfw.KEY_SPACE)
        assert not viewer.playing
        viewer.handle_key(glfw.KEY_RIGHT)
        for _ in range(5):
            viewer.step()

        # The window's pixels equal an offscreen render of the same animation time.
        viewer.scene.set_animation(0)
        viewer.scene.set_time(0.6)
        shot = viewer.screenshot()
        w, h = viewer.target.extent
        device = viewer.device
        with OffscreenTarget(device, w, h) as target, Renderer(device, target) as renderer:
            player = GltfScenePlayer(renderer, load_gltf(rig_files["rigid"]))
            player.set_time(0.6)
            renderer.camera = viewer.renderer.camera
            Decorations(player).update()  # the viewer's floor grid and labels
            offscreen = renderer.render_image()
        diff = np.abs(shot[..., :3].astype(int) - offscreen[..., :3].astype(int))
        assert diff.max() <= 1, f"window and offscreen differ by up to {diff.max()}"
        assert covered(shot).sum() > 500

        viewer.renderer.close()
        viewer.target.close()
        assert device.live_objects() == 0, device.live_object_labels()
        assert device.messages == []
    finally:
        viewer.close()


def test_nodes_sharing_a_mesh_each_draw_it_with_their_own_skin(renderer, tmp_path):
    """Three nodes draw the tube, each posed by its own skin (8, 8 and 9 joints): three draws of
    one uploaded mesh, each where the CPU puts that node's tube."""
    rig = make_rig(scaled=False)
    bodies = share_tube(rig)
    rig.save(tmp_path / "shared.glb")
    scene = load_gltf(tmp_path / "shared.glb")
    assert scene.meshes[0].skins == (0, 2, 3) and scene.meshes[0].skin == 0
    assert [scene.skins[s].joint_count for s in (0, 2, 3)] == [8, 8, 9]
    player = GltfScenePlayer(renderer, scene, methods="dqs", animation="linear")
    tubes = [d for d in player.draws if d.kind == "skinned" and d.mesh == 0]
    assert [(d.node, d.skin, d.bone_count) for d in tubes] == [
        (bodies[0], 0, 8),
        (bodies[1], 2, 8),
        (bodies[2], 3, 9),
    ]
    assert len({id(d.render_mesh) for d in tubes}) == 1  # uploaded once
    tube_meshes = [m for m in renderer.meshes if m is tubes[0].render_mesh]
    assert len(tube_meshes) == 1
    on_tube = [i for i in renderer.instances if i.mesh is tubes[0].render_mesh]
    assert len(on_tube) == 6  # LBS and DQS instance of each of the three nodes
    player.set_time(0.5)
    boxes = []
    for d in tubes:
        for other in player.draws:
            for inst in other.instances.values():
                inst.visible = other is d and inst.method == "dqs"
        img = renderer.render_image()
        want = projected_box(renderer, skinned_points(scene, d.node, 0, 0.5, "dqs"))
        assert want.min() > 0 and want[2] < W and want[3] < H
        np.testing.assert_allclose(pixel_box(covered(img)), want, atol=2.0, err_msg=str(d.node))
        boxes.append(want)
    centres = [(b[:2] + b[2:]) / 2 for b in boxes]
    for a in range(3):  # three poses in three places
        for b in range(a + 1, 3):
            assert np.linalg.norm(centres[a] - centres[b]) > 10
