"""Crowds: baked clips sampled on the GPU, every copy in one instanced draw.

On whole frames a crowd renders exactly what ordinary instances posed with those frames render;
between frames the bones the GPU sampled match a float64 blend of the two frames, and so do the
vertices they skin; bad input is refused by name.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from vkdqs import AnimationClip, InputError, LimitError, dq, procedural, reference
from vkdqs.engine.crowd import MAX_COPIES
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gltf import load_gltf
from vkdqs.mesh import SkinnedMesh

from .gltf_fixtures import make_rig
from .imaging import CLEAR, covered

W, H = 200, 150
ANGLES = (0.0, 50.0, 110.0, 170.0, 90.0)
FPS = 10.0


def with_blend_ramp(mesh: SkinnedMesh) -> SkinnedMesh:
    """``mesh`` with a DQS fraction going from 0 to 1 over its vertices (for "blend")."""
    return SkinnedMesh(
        mesh.positions,
        mesh.normals,
        mesh.joints,
        mesh.weights,
        mesh.indices,
        dqs_blend=np.linspace(0.0, 1.0, mesh.vertex_count),
    )


@pytest.fixture
def scene(device):
    mesh = with_blend_ramp(procedural.candy_wrapper())
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target, clear_color=CLEAR)
    rm = renderer.add_mesh(mesh)
    yield mesh, renderer, rm
    renderer.close()
    target.close()


def twist_clip() -> AnimationClip:
    return AnimationClip(np.stack([procedural.twist_pose(a) for a in ANGLES]), FPS)


def grid_models(count: int, spacing: float = 3.0) -> np.ndarray:
    models = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
    models[:, 1, 3] = spacing * np.arange(count)
    return models


def blend_reference(clip: AnimationClip, positions: np.ndarray, method: str) -> np.ndarray:
    """Float64 per-copy bones: the normalized shortest-arc DQ blend, or the linear blend of the
    affine rows, of frames floor(u) and floor(u) + 1."""
    f0 = np.floor(positions).astype(int)
    f1 = np.minimum(f0 + 1, clip.frame_count - 1)
    a = (positions - f0)[:, None, None, None]
    m = clip.frames[:, :, :3, :]
    rows = (1 - a) * m[f0] + a * m[f1]
    if method == "lbs":
        return rows
    d = dq.from_matrices(clip.frames)
    d0, d1 = d[f0], d[f1]
    sign = np.where((d0[..., 0, :] * d1[..., 0, :]).sum(-1) < 0, -1.0, 1.0)[..., None, None]
    dqs = dq.normalize((1 - a) * d0 + a * sign * d1)
    return np.concatenate([dqs, rows], axis=-2) if method == "blend" else dqs


@pytest.mark.parametrize("method", ["dqs", "lbs", "blend", "cor"])
def test_whole_frames_render_like_posed_instances(scene, method):
    _mesh, renderer, rm = scene
    clip = twist_clip()
    count = clip.frame_count - 1  # time `duration` wraps to frame 0: frames 0..F-2 play
    models = grid_models(count)
    colors = np.linspace([0.8, 0.2, 0.1], [0.1, 0.4, 0.9], count)
    crowd = renderer.add_crowd(rm, clip, count=count, method=method)
    crowd.set_models(models)
    crowd.set_colors(colors)
    crowd.set_times(np.arange(count)[::-1] / FPS)  # copy i plays frame count-1-i
    renderer.frame_scene()
    crowd_image = renderer.render_image()
    assert covered(crowd_image).sum() > 500
    np.testing.assert_array_equal(crowd.frame_positions(), np.arange(count)[::-1])
    renderer.remove_crowd(crowd)
    for i in range(count):
        renderer.add_instance(
            rm,
            bone_count=2,
            method=method,
            model=models[i],
            color=colors[i],
            bones=clip.frames[count - 1 - i],
        )
    instances_image = renderer.render_image()
    different = (crowd_image != instances_image).any(axis=-1)
    assert different.sum() == 0, f"{different.sum()} pixels differ"
    if method == "blend":  # the method shows: plain DQS instances draw otherwise (a twist
        # alone: "cor" centers lie on the axis, where cor equals DQS; see the bending test)
        for inst in list(renderer.instances):
            renderer.remove_instance(inst)
        for i in range(count):
            renderer.add_instance(
                rm, bone_count=2, model=models[i], color=colors[i], bones=clip.frames[count - 1 - i]
            )
        assert (renderer.render_image() != crowd_image).any(axis=-1).sum() > 20


def test_cor_crowd_centers_are_computed_once_per_mesh(scene):
    _, renderer, rm = scene
    clip = twist_clip()
    assert rm.centers is None
    renderer.add_crowd(rm, clip, count=2, method="cor")
    centers = rm.centers
    assert centers is not None and centers.shape == (rm.mesh.vertex_count, 3)
    renderer.add_crowd(rm, clip, count=2, method="cor")
    assert rm.centers is centers
    renderer.add_instance(rm, bone_count=2, method="cor")
    assert rm.centers is centers
    given = rm.mesh.positions.astype(np.float32)
    renderer.add_crowd(rm, clip, count=1, method="cor", centers=given)
    np.testing.assert_array_equal(rm.centers, given)
    renderer.render_image()


@pytest.mark.parametrize("method", ["dqs", "lbs", "blend", "cor"])
def test_between_frames_bones_and_vertices_match_float64_blend(device, scene, method):
    mesh, renderer, rm = scene
    clip = twist_clip()
    times = np.array([0.0, 0.025, 0.05, 0.13, 0.199, 0.3999, 0.4, 1.234, -0.07])
    crowd = renderer.add_crowd(rm, clip, count=len(times), method=method)
    crowd.set_times(times)
    renderer.render_image()
    u = crowd.frame_positions()
    assert np.all((u >= 0) & (u < clip.frame_count - 1))
    want = blend_reference(clip, u, method)
    got = crowd.read_bones().astype(np.float64)
    np.testing.assert_allclose(got, want, atol=2e-6)
    # the vertices those bones skin, against float64 skinning with the float64 blend
    if method in ("blend", "cor"):
        # their vertex shader is skin_vertex(), checked against the instance path by
        # test_whole_frames_render_like_posed_instances; here the sampled bones
        return
    with Skinner(device, mesh, bone_count=2, method=method) as skinner:
        for c in (1, 3, 7):
            p, _ = skinner.skin(got[c])
            if method == "dqs":
                ref, _ = reference.skin_dqs(
                    mesh.positions, mesh.normals, mesh.joints, mesh.weights, want[c]
                )
            else:
                rows = np.concatenate([want[c], np.tile([[[0, 0, 0, 1.0]]], (2, 1, 1))], axis=1)
                ref, _ = reference.skin_lbs(
                    mesh.positions, mesh.normals, mesh.joints, mesh.weights, rows
                )
            np.testing.assert_allclose(p, ref, atol=1e-4)


def test_times_wrap_and_advance(scene):
    _, renderer, rm = scene
    clip = twist_clip()
    crowd = renderer.add_crowd(rm, clip, count=3)
    crowd.set_times([0.0, clip.duration, clip.duration + 0.1])
    np.testing.assert_allclose(crowd.frame_positions(), [0.0, 0.0, 1.0])
    crowd.set_speeds([1.0, 2.0, 0.0])
    crowd.set_times([0.0, 0.0, 0.2])
    crowd.advance(0.1)
    np.testing.assert_allclose(crowd.times, [0.1, 0.2, 0.2])


def test_advance_from_several_threads_loses_no_step(scene):
    """advance() is a read-modify-write: 4 threads x 200 steps of an exact binary dt must add up
    to exactly 800 steps (a lost update would leave a copy behind)."""
    _, renderer, rm = scene
    clip = twist_clip()
    crowd = renderer.add_crowd(rm, clip, count=64)
    dt = 2.0**-12
    assert 800 * dt < clip.duration  # no wrap: the sum stays exact

    def run():
        for _ in range(200):
            crowd.advance(dt)

    threads = [threading.Thread(target=run) for _ in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, inside advance() too
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    np.testing.assert_array_equal(crowd.times, np.full(64, 800 * dt))


def test_dqs_crowd_blends_shortest_arc(scene):
    """Two frames whose quaternions are antipodal as stored still blend along the short arc."""
    _, renderer, rm = scene
    frames = np.stack([procedural.twist_pose(a) for a in (170.0, -170.0)])
    crowd = renderer.add_crowd(rm, AnimationClip(frames, 1.0), count=1)
    crowd.set_times([0.5])
    renderer.render_image()
    real = crowd.read_bones()[0, 1, 0].astype(np.float64)
    # halfway between +170 and -170 degrees the short way is 180 degrees, not 0
    assert abs(real[3]) < 1e-5
    assert abs(abs(real[0]) - 1.0) < 1e-5


def test_bake_clip_samples_the_animation(tmp_path):
    path = tmp_path / "rig.gltf"
    make_rig(scaled=False).save(path)
    scene = load_gltf(path)
    clip = scene.bake_clip(skin=0, animation=0, fps=30)
    anim = scene.animations[0]
    assert clip.duration == pytest.approx(anim.duration)
    assert clip.frames.shape == (clip.frame_count, scene.skins[0].joint_count, 4, 4)
    for k in (0, clip.frame_count // 2, clip.frame_count - 1):
        want = scene.skinning_matrices(0, 0, k / clip.fps)
        np.testing.assert_allclose(clip.frames[k], want, atol=1e-9)
    np.testing.assert_allclose(
        clip.frames[-1], scene.skinning_matrices(0, 0, anim.duration), atol=1e-9
    )
    with pytest.raises(InputError, match="fps"):
        scene.bake_clip(fps=0)
    with pytest.raises(InputError, match="animation"):
        scene.bake_clip(animation=99)


def test_bad_clips():
    with pytest.raises(InputError, match=r"shape \(F, J, 4, 4\)"):
        AnimationClip(np.zeros((3, 2, 3, 4)), 30)
    frames = np.tile(np.eye(4), (2, 2, 1, 1))
    frames[1, 0, 0, 0] = np.nan
    with pytest.raises(InputError, match="frame 1 joint 0"):
        AnimationClip(frames, 30)
    with pytest.raises(InputError, match="fps"):
        AnimationClip(np.tile(np.eye(4), (2, 2, 1, 1)), 0.0)
    with pytest.raises(InputError, match="fps"):
        AnimationClip(np.tile(np.eye(4), (2, 2, 1, 1)), float("nan"))


def test_bad_crowd_input(scene):
    _, renderer, rm = scene
    clip = twist_clip()
    with pytest.raises(InputError, match="joints, too few"):
        renderer.add_crowd(rm, AnimationClip(np.tile(np.eye(4), (2, 1, 1, 1)), 30), count=2)
    with pytest.raises(InputError, match="method"):
        renderer.add_crowd(rm, clip, count=2, method="dqs_scale")
    with pytest.raises(InputError, match="AnimationClip"):
        renderer.add_crowd(rm, clip.frames, count=2)
    with pytest.raises(InputError, match="count must be an int"):
        renderer.add_crowd(rm, clip, count=2.0)
    with pytest.raises(LimitError, match="count"):
        renderer.add_crowd(rm, clip, count=0)
    with pytest.raises(LimitError, match="count"):
        renderer.add_crowd(rm, clip, count=MAX_COPIES + 1)
    scaled = clip.frames.copy()
    scaled[2, 1, :3, :3] *= 1.5
    with pytest.raises(InputError, match="method='lbs'"):
        renderer.add_crowd(rm, AnimationClip(scaled, FPS), count=2)
    for method in ("blend", "cor"):
        with pytest.raises(InputError, match=rf"'{method}' crowd needs a rigid clip.*scale"):
            renderer.add_crowd(rm, AnimationClip(scaled, FPS), count=2, method=method)
    renderer.add_crowd(rm, AnimationClip(scaled, FPS), count=2, method="lbs")  # fine
    plain = renderer.add_mesh(procedural.candy_wrapper(), label="no blend")
    with pytest.raises(InputError, match="dqs_blend"):
        renderer.add_crowd(plain, clip, count=2, method="blend")
    with pytest.raises(InputError, match="centers are for method='cor'"):
        renderer.add_crowd(rm, clip, count=2, method="dqs", centers=rm.mesh.positions)
    with pytest.raises(InputError, match="centers"):
        renderer.add_crowd(rm, clip, count=2, method="cor", centers=np.zeros((3, 3)))
    crowd = renderer.add_crowd(rm, clip, count=3)
    with pytest.raises(InputError, match=r"times must have shape \(3,\)"):
        crowd.set_times([0.0, 1.0])
    with pytest.raises(InputError, match=r"times\[1\] is nan"):
        crowd.set_times([0.0, np.nan, 1.0])
    with pytest.raises(InputError, match=r"models must have shape \(3, 4, 4\)"):
        crowd.set_models(np.eye(4))
    flat = grid_models(3)
    flat[1, 2, 2] = 0.0
    with pytest.raises(InputError, match=r"models\[1\] is singular"):
        crowd.set_models(flat)
    with pytest.raises(InputError, match="not affine"):
        crowd.set_models(np.zeros((3, 4, 4)))
    with pytest.raises(InputError, match="colors"):
        crowd.set_colors(np.ones((2, 3)))
    with pytest.raises(InputError, match="dt"):
        crowd.advance(float("inf"))
    # nothing above changed the crowd
    renderer.render_image()


def test_texel_limit_is_a_limit_error(device, scene):
    _, renderer, rm = scene
    limit = device.info.max_texel_buffer_elements
    joints = 256
    frames = np.tile(np.eye(4), (2, joints, 1, 1))
    count = min(MAX_COPIES, limit // (joints * 2) + 1)
    if count * joints * 2 <= limit:
        pytest.skip("this device's texel buffers hold MAX_COPIES copies of 256 joints")
    with pytest.raises(LimitError, match="maxTexelBufferElements"):
        renderer.add_crowd(rm, AnimationClip(frames, 30), count=count)


def test_crowds_and_instances_draw_together(scene):
    _mesh, renderer, rm = scene
    renderer.add_instance(rm, bone_count=2, model=grid_models(2)[1])
    crowd = renderer.add_crowd(rm, twist_clip(), count=1)
    renderer.frame_scene()
    both = covered(renderer.render_image()).sum()
    crowd.visible = False
    one = covered(renderer.render_image()).sum()
    assert both > one > 100


def test_dispatches_past_max_compute_work_group_count_run_in_pieces(device, monkeypatch):
    """A device that dispatches at most 4 workgroups at once (a profile's limit, lowered): the
    crowd's cull pass (300 copies: 5 groups) and sampling pass (600 joints: 10 groups) run in
    pieces (vkCmdDispatchBase), and the frame is the bits of the frame on the suite's device."""
    from vkdqs.gpu import Device
    from vkdqs.gpu.calls import vk
    from vkdqs.gpu.memory import profiles

    discrete = profiles._BY_NAME["discrete"].limits
    monkeypatch.setitem(discrete, "max_compute_work_group_count", (4, 65535, 65535))
    real, runs = vk.vkCmdDispatchBase, []

    def dispatch_base(cmd, bx, by, bz, gx, gy, gz):
        runs.append(gx)
        return real(cmd, bx, by, bz, gx, gy, gz)

    monkeypatch.setattr(vk, "vkCmdDispatchBase", dispatch_base)
    count = 300
    models = grid_models(count, spacing=0.5)
    models[:, 0, 3] = 0.5 * (np.arange(count) % 20)
    models[:, 1, 3] = 0.5 * (np.arange(count) // 20)
    images = []
    with Device(memory_profile="discrete") as small:
        assert small.info.max_compute_work_group_count[0] == 4
        for dev in (device, small):
            runs.clear()
            with (
                OffscreenTarget(dev, W, H) as target,
                Renderer(dev, target, clear_color=CLEAR) as renderer,
            ):
                rm = renderer.add_mesh(procedural.candy_wrapper())
                crowd = renderer.add_crowd(rm, twist_clip(), count=count)
                crowd.set_models(models)
                crowd.set_times(np.linspace(0, 0.3, count))
                renderer.frame_scene()
                images.append(renderer.render_image())
    assert max(runs) == 4 and runs.count(4) >= 3  # the cull's and the sampling's pieces
    assert covered(images[0]).sum() > 1000
    np.testing.assert_array_equal(images[1], images[0])


def test_crowd_scene_plays_a_gltf_rig_out_of_phase(device, tmp_path):
    from vkdqs.app.scenes import CrowdScene

    path = tmp_path / "rig.gltf"
    make_rig(scaled=True).save(path)
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target, clear_color=CLEAR)
    try:
        scene = CrowdScene.from_gltf(renderer, load_gltf(path), 9, methods="both")
        assert set(scene.crowds) == {"lbs"}  # the scaled rig: DQS crowds refuse scale
        for methods in ("dqs", "blend", "cor,dqs"):
            with pytest.raises(InputError, match="scale"):
                scene.show(methods)
        assert scene.methods == "both"
        scene.show("lbs,dqs_blender")  # Blender's DQS takes scale, with the bind frames
        assert covered(renderer.render_image()).sum() > 200
        scene.show("both")
        times = scene.crowds["lbs"].times
        assert len(np.unique(np.round(times, 6))) == 9  # out of phase
        scene.update(0.1)
        assert covered(renderer.render_image()).sum() > 200
        assert "crowd of 9" in scene.label()
        candy = Renderer(device, target, clear_color=CLEAR)
        try:
            scene = CrowdScene.candy_wrapper(candy, 4, methods="both")
            assert set(scene.crowds) == {"lbs", "dqs"}
            scene.show("dqs")
            assert not scene.crowds["lbs"].visible
            assert covered(candy.render_image()).sum() > 200
            scene.show("blend,cor")  # made when first shown; the candy wrapper gets a DQS
            assert set(scene.crowds) == {"lbs", "dqs", "blend", "cor"}  # fraction for blend
            assert [m for m, c in scene.crowds.items() if c.visible] == ["blend", "cor"]
            assert scene.crowds["blend"].mesh.mesh.dqs_blend is not None
            assert "LBS/DQS blend (left) | CoR (right)" in scene.label()
            assert covered(candy.render_image()).sum() > 200
            scene.show("all")
            assert set(scene.crowds) == {"lbs", "dqs", "blend", "cor", "dqs_blender", "ddm"}
            assert all(c.visible for c in scene.crowds.values())
            # the shown methods crowds do not draw are left out, saying why
            assert set(scene.left_out) == {"delta_mush", "velocity"}
            why = scene.left_out["delta_mush"]
            assert "its own smoothing passes over the whole mesh each frame" in why
            with pytest.raises(InputError, match=r"not 'delta_mush'.*every copy would need"):
                scene.show("delta_mush")
            assert scene.methods == "all"
            with pytest.raises(InputError, match="methods must be one of"):
                scene.show("dqs_scale")
            assert covered(candy.render_image()).sum() > 200
        finally:
            candy.close()
    finally:
        renderer.close()
        target.close()


@pytest.mark.parametrize("method", ["dqs", "lbs"])
def test_one_crowd_plays_several_clips(scene, method):
    _, renderer, rm = scene
    first = twist_clip()
    second = AnimationClip(np.stack([procedural.twist_pose(a) for a in (-30.0, -120.0)]), 2.0)
    crowd = renderer.add_crowd(rm, count=4, method=method, clips=[first, second])
    crowd.set_clips([0, 1, 1, 0])
    crowd.set_times([0.1, 0.0, 0.2, 0.25])
    renderer.render_image()
    u = crowd.frame_positions()
    np.testing.assert_allclose(u, [1.0, 0.0, 0.4, 2.5])
    got = crowd.read_bones().astype(np.float64)
    for c, clip in enumerate([first, second, second, first]):
        want = blend_reference(clip, u[c : c + 1], method)[0]
        np.testing.assert_allclose(got[c], want, atol=2e-6)
    crowd.set_speeds(np.ones(4))
    crowd.advance(0.5)  # wraps each copy by its own clip's duration
    np.testing.assert_allclose(crowd.times, [0.2, 0.0, 0.2, 0.35])
    with pytest.raises(InputError, match=r"clip index \[2\] is 2"):
        crowd.set_clips([0, 1, 2, 0])
    with pytest.raises(InputError, match="integers"):
        crowd.set_clips([0.0, 1.0, 1.0, 0.0])
    with pytest.raises(InputError, match="same joints"):
        renderer.add_crowd(
            rm, count=2, clips=[first, AnimationClip(np.tile(np.eye(4), (2, 3, 1, 1)), 1.0)]
        )
    with pytest.raises(InputError, match="not both"):
        renderer.add_crowd(rm, first, count=2, clips=[first])


def test_removed_crowds_free_their_buffers(device, scene):
    _, renderer, rm = scene
    counts = []
    for _ in range(3):
        crowd = renderer.add_crowd(rm, twist_clip(), count=8)
        renderer.render_image()
        renderer.remove_crowd(crowd)
        renderer.render_image()
        counts.append(device.live_objects())
    # after the first crowd made the shared layouts and pipelines, nothing accumulates
    assert counts[1] == counts[2] == counts[0]


@pytest.mark.parametrize("method", ["dqs", "lbs", "blend", "cor", "dqs_blender"])
def test_eight_influences_render_like_posed_instances(device, method):
    mesh = with_blend_ramp(procedural.tube(600, bone_count=8, influences=8))
    assert mesh.slots == 8
    clip = AnimationClip(np.stack([procedural.bone_chain_pose(8, a) for a in (0, 40, 80)]), 1.0)
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target, clear_color=CLEAR)
    try:
        rm = renderer.add_mesh(mesh)
        models = grid_models(3, spacing=12.0)
        rest = blender_rest(8) if method == "dqs_blender" else None
        crowd = renderer.add_crowd(rm, clip, count=3, method=method, rest_matrices=rest)
        crowd.set_models(models)
        crowd.set_times([0.0, 1.0, 1.0])
        crowd.set_colors([0.3, 0.6, 0.2])
        renderer.frame_scene()
        crowd_image = renderer.render_image()
        renderer.remove_crowd(crowd)
        for i, k in enumerate((0, 1, 1)):
            renderer.add_instance(
                rm,
                bone_count=8,
                method=method,
                model=models[i],
                color=(0.3, 0.6, 0.2),
                bones=clip.frames[k],
                rest_matrices=rest,
            )
        instances_image = renderer.render_image()
        assert covered(crowd_image).sum() > 300
        assert (crowd_image != instances_image).any(axis=-1).sum() == 0
        if method in ("blend", "cor"):  # the method shows: DQS instances bend otherwise
            for inst in list(renderer.instances):
                renderer.remove_instance(inst)
            for i, k in enumerate((0, 1, 1)):
                renderer.add_instance(
                    rm, bone_count=8, model=models[i], color=(0.3, 0.6, 0.2), bones=clip.frames[k]
                )
            assert (renderer.render_image() != crowd_image).any(axis=-1).sum() > 20
    finally:
        renderer.close()
        target.close()


def test_mirrored_copies_and_wireframe_draw(device, scene):
    _, renderer, rm = scene
    crowd = renderer.add_crowd(rm, twist_clip(), count=2)
    renderer.frame_scene()
    plain = covered(renderer.render_image()).sum()
    models = grid_models(2)
    models[1, 2, 2] = -1.0  # mirrors copy 1 (det < 0): the crowd is drawn without culling
    crowd.set_models(models)
    mirrored = covered(renderer.render_image()).sum()
    assert abs(mirrored - plain) <= 0.05 * plain
    if device.info.fill_mode_non_solid:
        renderer.wireframe = True
        assert 0 < covered(renderer.render_image()).sum() < plain


def blender_rest(joints: int) -> np.ndarray:
    """Rest frames for "dqs_blender": translated and turned a little per joint."""
    rest = np.tile(np.eye(4), (joints, 1, 1))
    rest[:, 0, 3] = 0.4 * np.arange(joints)
    c, s = np.cos(0.2), np.sin(0.2)
    rest[:, :2, :2] = [[c, -s], [s, c]]
    return rest


def scaled_twist_clip() -> AnimationClip:
    """The twist with scale and shear on joint 1 in some frames (DQS crowds refuse it)."""
    frames = twist_clip().frames.copy()
    frames[1:, 1, :3, :3] = frames[1:, 1, :3, :3] @ np.array(
        [[1.3, 0.2, 0.0], [0.0, 0.8, 0.0], [0.0, 0.0, 1.1]]
    )
    return AnimationClip(frames, FPS)


def test_dqs_blender_whole_frames_render_like_posed_instances(scene):
    _mesh, renderer, rm = scene
    clip = scaled_twist_clip()
    rest = blender_rest(2)
    count = clip.frame_count - 1
    models = grid_models(count)
    colors = np.linspace([0.8, 0.2, 0.1], [0.1, 0.4, 0.9], count)
    crowd = renderer.add_crowd(rm, clip, count=count, method="dqs_blender", rest_matrices=rest)
    crowd.set_models(models)
    crowd.set_colors(colors)
    crowd.set_times(np.arange(count)[::-1] / FPS)
    renderer.frame_scene()
    crowd_image = renderer.render_image()
    assert covered(crowd_image).sum() > 500
    renderer.remove_crowd(crowd)
    for i in range(count):
        renderer.add_instance(
            rm,
            bone_count=2,
            method="dqs_blender",
            model=models[i],
            color=colors[i],
            bones=clip.frames[count - 1 - i],
            rest_matrices=rest,
        )
    different = (crowd_image != renderer.render_image()).any(axis=-1)
    assert different.sum() == 0, f"{different.sum()} pixels differ"


def test_dqs_blender_crowd_bones_and_input(scene):
    _mesh, renderer, rm = scene
    clip = scaled_twist_clip()
    rest = blender_rest(2)
    times = np.array([0.0, 0.05, 0.13, 0.3])
    crowd = renderer.add_crowd(rm, clip, count=4, method="dqs_blender", rest_matrices=rest)
    crowd.set_times(times)
    renderer.render_image()
    u = crowd.frame_positions()
    got = crowd.read_bones().astype(np.float64)
    assert got.shape == (4, 2, 5, 4)
    # the DQ Blender's split gives each frame and the frame's matrix rows, blended like "blend"
    # bones
    dqs, _ = dq.blender_bone_dqs(clip.frames, rest)
    rows = clip.frames[..., :3, :]
    f0 = np.floor(u).astype(int)
    a = (u - f0)[:, None, None, None]
    d0, d1 = dqs[f0], dqs[f0 + 1]
    sign = np.where((d0[..., 0, :] * d1[..., 0, :]).sum(-1) < 0, -1.0, 1.0)[..., None, None]
    d = (1 - a) * d0 + a * sign * d1  # divided by |real|, as dq_normalize() in dqs.glsl
    d /= np.linalg.norm(d[..., :1, :], axis=-1, keepdims=True)
    np.testing.assert_allclose(got[:, :, :2], d, atol=2e-6)
    np.testing.assert_allclose(got[:, :, 2:], (1 - a) * rows[f0] + a * rows[f0 + 1], atol=2e-6)
    with pytest.raises(InputError, match="needs rest_matrices"):
        renderer.add_crowd(rm, clip, count=2, method="dqs_blender")
    with pytest.raises(InputError, match=r"rest_matrices must .*\(2, 4, 4\)"):
        renderer.add_crowd(rm, clip, count=2, method="dqs_blender", rest_matrices=rest[:1])
    with pytest.raises(InputError, match="rest_matrices"):
        renderer.add_crowd(rm, clip, count=2, method="dqs_blender", rest_matrices=[[1.0], [2, 3]])
    with pytest.raises(InputError, match="rest_matrices are for method='dqs_blender'"):
        renderer.add_crowd(rm, twist_clip(), count=2, method="dqs", rest_matrices=rest)
    mirrored = clip.frames.copy()
    mirrored[1, 0, :3, :3] = 0.0  # singular
    with pytest.raises(InputError, match="singular"):
        renderer.add_crowd(
            rm, AnimationClip(mirrored, FPS), count=2, method="dqs_blender", rest_matrices=rest
        )
