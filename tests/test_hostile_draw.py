"""Hostile input, round four, on what was added since round three for drawing: the lean
layout's joint formats at their edges (255/256, 65535/65536), joints past the skeleton, crowd
clips that would give infinite or NaN boxes, a camera inside a culled box, a zero-size target.
Each ends in a clear error or a correct result (against the float64 reference)."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import AnimationClip, InputError, LimitError, SkinnedMesh, methods, procedural
from vkdqs import shader_interface as si
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget

from .imaging import CLEAR, covered


def _mesh(top: int, n: int = 64, seed: int = 0) -> SkinnedMesh:
    """``n`` vertices weighted 0.7 to joint ``top`` and 0.3 to ``top - 1``."""
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(n, 3))
    joints = np.zeros((n, 4), np.uint32)
    joints[:, 0], joints[:, 1] = top, top - 1
    weights = np.zeros((n, 4))
    weights[:, 0], weights[:, 1] = 0.7, 0.3
    return SkinnedMesh(p, p / np.linalg.norm(p, axis=1, keepdims=True), joints, weights)


def _pose(bones: int, top: int) -> np.ndarray:
    pose = np.broadcast_to(np.eye(4), (bones, 4, 4)).copy()
    pose[top, :3, 3] = (1.0, 2.0, 3.0)
    pose[top - 1, :3, 3] = (-1.0, 0.0, 0.5)
    return pose


@pytest.mark.parametrize("path", ("compute", "vertex"))
@pytest.mark.parametrize(
    ("top", "fmt"), [(255, si.Format.R8G8B8A8_UINT), (256, si.Format.R16G16B16A16_UINT)]
)
def test_lean_joints_at_the_byte_edge_read_the_right_bone(device, path, top, fmt):
    """Joint 255 is the last a byte holds, 256 the first that needs 16 bits: each layout reads
    the bone it names (the pose moves only those two), within the unorm16 weights' error."""
    mesh, pose = _mesh(top), _pose(top + 1, top)
    want, _ = methods.get("lbs").reference(mesh, pose)
    with Skinner(device, mesh, bone_count=top + 1, path=path, layout="lean", method="lbs") as s:
        assert s.vertex_layout.format("joints") == fmt
        got, _ = s.skin(pose)
    np.testing.assert_allclose(got, want, rtol=0, atol=4 / 65535 * 4.0 + 1e-5)


@pytest.mark.parametrize("top", (255, 256, 65535, 65536))
def test_joints_past_the_skeleton_are_refused_naming_the_vertex(device, top):
    mesh = _mesh(top)
    for layout in ("exact", "lean"):
        with pytest.raises(InputError, match=f"vertex 0 slot 0 uses joint {top} but the skeleton"):
            Skinner(device, mesh, bone_count=min(top, 255), layout=layout)


@pytest.mark.parametrize("bones", (65536, 65537))
def test_skeletons_past_the_uniform_buffer_are_a_limit_error(device, bones):
    """65536 bones are 3 MiB of LBS rows: past maxUniformBufferRange on most devices, refused
    before anything is allocated, naming the limit (never a validation error)."""
    mesh = _mesh(bones - 1)
    limit = device.info.max_uniform_buffer_range
    if 48 * bones <= limit:  # a device whose uniform range holds them skins them instead
        with Skinner(device, mesh, bone_count=bones, method="lbs"):
            return
    with pytest.raises(LimitError, match="maxUniformBufferRange"):
        Skinner(device, mesh, bone_count=bones, method="lbs")


@pytest.mark.parametrize("bad", (np.nan, np.inf, -np.inf, 1e30))
def test_crowd_clips_that_would_give_unbounded_boxes_are_refused(bad):
    frames = np.stack([procedural.twist_pose(a) for a in (0.0, 60.0, 120.0)])
    frames[1, 1, 0, 3] = bad
    with pytest.raises(InputError, match="clip frame 1 joint 1 has"):
        AnimationClip(frames, 10.0)


def _camera_inside(renderer, point):
    cam = renderer.camera
    cam.target = np.asarray(point, np.float64) + 0.02 * cam.forward
    cam.distance = 0.02  # the eye is at ``point``


def test_a_camera_inside_an_instances_box_does_not_cull_it(device):
    """The box test is in clip space: corners behind the eye are on the far side of the near
    plane, not outside all planes, so an instance around the camera is drawn."""
    mesh = procedural.candy_wrapper()
    with (
        OffscreenTarget(device, 64, 48) as target,
        Renderer(device, target, clear_color=CLEAR, cull_instances=True, cull=False) as r,
    ):
        inst = r.add_instance(r.add_mesh(mesh), bone_count=2)
        r.frame_scene()
        r.render_image()
        assert r.stats.instances_drawn == 1
        lo, hi = inst.bounds
        _camera_inside(r, (lo + hi) / 2.0)
        image = r.render_image()
        assert r.stats.instances_culled == 0 and r.stats.instances_drawn == 1
        assert covered(image).any()  # the tube's inside, seen from within (no back-face cull)
        # and one far behind the eye is culled
        r.camera.target = np.asarray(r.camera.target) - 100.0 * r.camera.forward
        r.camera.distance = 0.02
        r.camera.yaw += 180.0
        r.render_image()
        assert r.stats.instances_culled == 1


def test_a_camera_inside_a_crowd_copys_box_draws_the_copy(device):
    mesh = procedural.candy_wrapper()
    clip = AnimationClip(np.stack([procedural.twist_pose(a) for a in (0.0, 60.0)]), 10.0)
    with (
        OffscreenTarget(device, 64, 48) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as r,
    ):
        crowd = r.add_crowd(r.add_mesh(mesh), clip, count=1, method="lbs")
        r.frame_scene()
        r.render_image()
        assert r.stats.copies_drawn == 1
        lo, hi = crowd.bounds()
        _camera_inside(r, (np.asarray(lo) + np.asarray(hi)) / 2.0)
        image = r.render_image()
        assert r.stats.copies_drawn == 1 and r.stats.copies_culled == 0
        assert covered(image).any()


@pytest.mark.parametrize("size", ((0, 48), (64, 0), (-1, 48), (64, 16385)))
def test_a_zero_or_oversized_target_is_refused(device, size):
    with pytest.raises(
        InputError, match=r"offscreen (width|height) must be an int in \[1, 16384\]"
    ):
        OffscreenTarget(device, *size)


@pytest.mark.parametrize("path", ("compute", "vertex"))
def test_weights_that_do_not_sum_to_one_skin_as_normalized_on_both_layouts(device, path):
    """A vertex's weights summing to 0.8 (or 3) are normalized by SkinnedMesh, as glTF
    readers do; the lean layout's unorm16 weights then sum to exactly one step count, so both
    layouts skin the normalized weights (against the float64 reference of those)."""
    mesh = _mesh(3)
    raw = mesh.weights.astype(np.float64) * np.where(np.arange(64) % 2, 0.8, 3.0)[:, None]
    odd = SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, raw)
    np.testing.assert_allclose(odd.weights.sum(axis=1), 1.0, atol=1e-6)
    pose = _pose(4, 3)
    want, _ = methods.get("lbs").reference(odd, pose)
    for layout in ("exact", "lean"):
        with Skinner(device, odd, bone_count=4, path=path, layout=layout, method="lbs") as s:
            got, _ = s.skin(pose)
        np.testing.assert_allclose(got, want, rtol=0, atol=4 / 65535 * 4.0 + 1e-5)
