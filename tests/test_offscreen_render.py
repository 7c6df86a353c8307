"""Offscreen rendering: the image agrees with the geometry, the lighting and the pose stream."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import InputError, dq, procedural
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget

from .imaging import CLEAR, covered, pixel_box, projected_box, srgb8

W, H = 320, 240


@pytest.fixture
def scene(device):
    """A renderer looking at the candy wrapper from +z, the cylinder's axis horizontal."""
    mesh = procedural.candy_wrapper()
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target, clear_color=CLEAR)
    rm = renderer.add_mesh(mesh)
    yield mesh, target, renderer, rm
    renderer.close()
    target.close()


def pose_for(method, angle):
    m = procedural.twist_pose(angle)
    return dq.from_matrices(m) if method == "dqs" else m


def middle_height(img, renderer, mesh):
    """Covered pixels in the image column through the cylinder's middle (x = length / 2)."""
    lo, hi = mesh.bounds
    x = renderer.camera.project([[(lo[0] + hi[0]) / 2, 0.0, 0.0]], W, H)[0, 0]
    return int(covered(img)[:, int(x)].sum())


@pytest.mark.parametrize("method", ["dqs", "lbs"])
def test_silhouette_width_at_170_degrees(scene, method):
    mesh, _, renderer, rm = scene
    inst = renderer.add_instance(rm, bone_count=2, method=method)
    renderer.frame_scene()
    rest = middle_height(renderer.render_image(), renderer, mesh)
    assert rest > 40  # the cylinder is big enough on screen to measure
    inst.set_pose(pose_for(method, 170.0))
    twisted = middle_height(renderer.render_image(), renderer, mesh)
    if method == "dqs":
        assert twisted >= 0.9 * rest
    else:
        assert twisted <= 0.5 * rest


@pytest.mark.parametrize("method", ["dqs", "lbs"])
@pytest.mark.parametrize("angle", [0.0, 90.0, 170.0])
def test_image_bounding_box_matches_projected_vertices(device, scene, method, angle):
    mesh, _, renderer, rm = scene
    pose = pose_for(method, angle)
    renderer.add_instance(rm, bone_count=2, method=method, bones=pose)
    renderer.frame_scene()
    renderer.camera.orbit(0.4, 0.3)
    img = renderer.render_image()
    with Skinner(device, mesh, bone_count=2, method=method, path="vertex") as skinner:
        positions, _ = skinner.skin(pose)
    # covered pixel centres (x + 0.5) lie inside the projected hull
    got = pixel_box(covered(img))
    np.testing.assert_allclose(got, projected_box(renderer.camera, positions, W, H), atol=2.0)


@pytest.mark.parametrize("method", ["dqs", "lbs"])
def test_eight_influences_and_scaled_bones_render_where_the_skinner_puts_them(device, method):
    """An 8-influence mesh posed with scaled bones (two-phase DQS for "dqs")."""
    base = procedural.tube(4000, bone_count=8, influences=4, length=4.0, radius=0.5)
    # four more influences per vertex, smooth along the tube (the next bones, smaller weights),
    # so the surface stays free of slivers that cover no pixel
    joints = np.hstack([base.joints, (base.joints + 1) % 8])
    weights = np.hstack([base.weights, 0.3 * base.weights])
    mesh = type(base)(base.positions, base.normals, joints, weights, base.indices)
    assert mesh.slots == 8
    pose = procedural.bone_chain_pose(8, 60.0, length=4.0) @ np.diag([1.3, 1.3, 1.3, 1.0])
    # the open tube shows its inside at the ends: draw back faces too, so every triangle counts
    with OffscreenTarget(device, W, H) as target, Renderer(device, target, cull=False) as renderer:
        inst = renderer.add_instance(renderer.add_mesh(mesh), bone_count=8, method=method)
        inst.set_pose(pose)
        assert inst.variant == ("dqs_scale" if method == "dqs" else "lbs")
        renderer.frame_scene()
        renderer.camera.zoom(1.6)
        img = renderer.render_image()
        cam = renderer.camera
    with Skinner(device, mesh, bone_count=8, method=method, path="vertex") as skinner:
        positions, _ = skinner.skin(pose)
    got = pixel_box(covered(img))
    np.testing.assert_allclose(got, projected_box(cam, positions, W, H), atol=2.0)


def test_mirrored_instances_keep_their_outside_faces(scene):
    """A model matrix with det < 0 flips the winding; the renderer flips its front face."""
    _, _, renderer, rm = scene
    inst = renderer.add_instance(rm, bone_count=2)
    renderer.frame_scene()
    plain = renderer.render_image()
    inst.set_model(np.diag([-1.0, 1.0, 1.0, 1.0]) @ _shift(-2.0))  # mirrored onto the same spot
    mirrored = renderer.render_image()
    a, b = covered(plain), covered(mirrored)
    assert abs(int(a.sum()) - int(b.sum())) < 0.02 * a.sum()
    # Seeing the inside (wrong culling) would show the far wall, lit from behind: dark.
    lum = lambda img, m: (img[..., :3].astype(float) @ [0.2126, 0.7152, 0.0722])[m].mean()  # noqa: E731
    assert lum(mirrored, b) > 0.9 * lum(plain, a)


def _shift(x):
    m = np.eye(4)
    m[0, 3] = x
    return m


def test_heat_map_leaves_rigid_instances_shaded(device):
    mesh = procedural.candy_wrapper()
    with OffscreenTarget(device, W, H) as target, Renderer(device, target) as renderer:
        rm = renderer.add_mesh(mesh)
        renderer.add_instance(rm, bone_count=2, method="none", color=(0.5, 0.5, 0.5))
        renderer.frame_scene()
        shaded = renderer.render_image()
        renderer.debug_bone = 0
        np.testing.assert_array_equal(renderer.render_image(), shaded)


def test_lighting_and_background(scene):
    mesh, _, renderer, rm = scene
    renderer.add_instance(rm, bone_count=2)
    renderer.frame_scene()
    img = renderer.render_image()
    mask = covered(img)
    # the background is exactly the clear colour
    np.testing.assert_array_equal(
        img[~mask][:, :3], np.broadcast_to(srgb8(CLEAR[:3]), (int((~mask).sum()), 3))
    )
    # The key light comes from above (it follows the camera): the upper part of the cylinder,
    # whose normals face up, is brighter than the lower part, whose normals face down.
    _lo, hi = mesh.bounds
    top = renderer.camera.project([[0.5 * hi[0], 0.35, 0.3]], W, H)[0].astype(int)
    bottom = renderer.camera.project([[0.5 * hi[0], -0.35, 0.3]], W, H)[0].astype(int)
    assert mask[top[1], top[0]] and mask[bottom[1], bottom[0]]
    luminance = img[..., :3].astype(float) @ [0.2126, 0.7152, 0.0722]
    assert luminance[top[1], top[0]] > luminance[bottom[1], bottom[0]] + 20


def test_msaa_smooths_edges_and_keeps_the_silhouette(device):
    mesh = procedural.candy_wrapper()
    images = {}
    for samples in (1, 4):
        with OffscreenTarget(device, W, H, samples=samples) as target:
            with Renderer(device, target, clear_color=CLEAR) as renderer:
                renderer.add_instance(renderer.add_mesh(mesh), bone_count=2)
                renderer.frame_scene()
                images[samples] = renderer.render_image()
    a, b = covered(images[1]), covered(images[4])
    assert abs(int(a.sum()) - int(b.sum())) < 0.03 * a.sum()
    # anti-aliased edges have intermediate values that the aliased image lacks
    levels = lambda img: len(np.unique(img[..., 0][covered(img)]))  # noqa: E731
    assert levels(images[4]) > levels(images[1])


def test_wireframe_and_weight_heat_map(scene):
    mesh, _, renderer, rm = scene
    renderer.add_instance(rm, bone_count=2)
    renderer.frame_scene()
    filled = covered(renderer.render_image()).sum()
    renderer.wireframe = True
    wire = covered(renderer.render_image()).sum()
    assert 0 < wire < 0.9 * filled
    renderer.wireframe = False
    renderer.debug_bone = 1
    img = renderer.render_image().astype(int)
    _lo, hi = mesh.bounds
    left = renderer.camera.project([[0.1 * hi[0], 0.0, 0.5]], W, H)[0].astype(int)
    right = renderer.camera.project([[0.9 * hi[0], 0.0, 0.5]], W, H)[0].astype(int)
    # bone 1 drives the +x end: red there (weight 1), blue at the other end (weight 0)
    r_px, l_px = img[right[1], right[0]], img[left[1], left[0]]
    assert r_px[0] > r_px[2] + 40
    assert l_px[2] > l_px[0] + 40


def test_pose_stream_never_races_the_gpu(device, scene):
    """500 frames, a new pose each frame, two frames in flight: sampled frames and the last one
    equal a frame rendered on its own with the same pose."""
    mesh, target, renderer, rm = scene
    inst = renderer.add_instance(rm, bone_count=2)
    renderer.frame_scene()
    angles = np.linspace(0.0, 175.0, 500)

    with (
        OffscreenTarget(device, W, H) as ref_target,
        Renderer(device, ref_target, clear_color=CLEAR) as ref,
    ):
        ref_inst = ref.add_instance(ref.add_mesh(mesh), bone_count=2)
        ref.camera = renderer.camera

        def reference(angle):
            ref_inst.set_pose(pose_for("dqs", angle))
            return ref.render_image()

        checked = 0
        for i, angle in enumerate(angles):
            inst.set_pose(pose_for("dqs", angle))
            slot = renderer.render()
            if i % 97 == 3:  # let the next frame be submitted first, then check this one
                inst.set_pose(pose_for("dqs", angles[i + 1]))
                renderer.render()
                renderer.wait()
                np.testing.assert_array_equal(target.read(slot), reference(angle))
                checked += 1
        renderer.wait()
        np.testing.assert_array_equal(target.read(slot), reference(angles[-1]))
    assert checked >= 5


def test_bad_renderer_input(scene):
    _mesh, _, renderer, rm = scene
    inst = renderer.add_instance(rm, bone_count=2)
    with pytest.raises(InputError, match=r"method must be one of .*'cpu'"):
        renderer.add_instance(rm, bone_count=2, method="cpu")
    with pytest.raises(InputError, match="uses joint 1 but the skeleton has 1 bones"):
        renderer.add_instance(rm, bone_count=1)
    with pytest.raises(InputError, match=r"bone 1 has a non-finite value \(nan\)"):
        bad = pose_for("dqs", 30.0)
        bad[1, 0, 0] = np.nan
        inst.set_pose(bad)
    with pytest.raises(InputError, match="model must be a finite"):
        inst.set_model(np.full((4, 4), np.inf))
    with pytest.raises(InputError, match="offscreen width must be an int"):
        OffscreenTarget(renderer.device, 0, 10)
