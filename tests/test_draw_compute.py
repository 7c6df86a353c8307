"""Methods without vertex shaders (classic Delta Mush, velocity skinning) drawn by
"compute, then draw": the renderer's compute Skinner skins each new pose and the posed vertices
are drawn with the unskinned pipeline. The image is the unskinned image of the Skinner's own
vertices, to the rounding two pipelines may differ by (tests/imaging.py). (Direct Delta Mush
has vertex shaders: tests/test_ddm_render.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import InputError, SkinnedMesh, methods, procedural
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gpu import Buffer
from vkdqs.methods.velocity.reference import velocity_rig

from .imaging import CLEAR, assert_images_agree_to_rounding, covered

W, H = 160, 120
COMPUTED = ("delta_mush", "delta_mush_dqs", "velocity", "velocity_lbs")


def _inputs(method, mesh):
    """Velocity skinning's rig (the candy wrapper's two bones a chain); at rest it is its base."""
    if "velocity_data" not in methods.get(method).needs:
        return {}
    return {"velocity": velocity_rig(mesh, [-1, 0], np.repeat(np.eye(4)[None], 2, axis=0))}


def _posed_mesh(mesh, positions, normals):
    """``mesh`` with ``positions`` and ``normals`` as its rest vertices (drawn unskinned)."""
    return SkinnedMesh(positions, normals, mesh.joints, mesh.weights, indices=mesh.indices)


def _pose(angle):
    return procedural.twist_pose(angle) @ procedural.bend_pose(angle / 3.0)


def test_the_registry_says_the_renderer_draws_them():
    for name in COMPUTED:
        m = methods.get(name)
        assert m.drawn_by_compute and "vertex" not in m.paths
        assert m.check_path("vertex") is not None  # crowds still refuse them
    assert not any(m.drawn_by_compute for m in methods.METHODS.values() if m.name not in COMPUTED)


@pytest.mark.parametrize("method", COMPUTED)
def test_image_is_the_unskinned_image_of_the_skinners_vertices(device, method):
    mesh = procedural.candy_wrapper()
    model = np.eye(4)
    model[:3, 3] = (0.25, -0.1, 0.0)
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
        Skinner(device, mesh, bone_count=2, method=method, inputs=_inputs(method, mesh)) as skinner,
    ):
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(
            rm, bone_count=2, method=method, model=model, inputs=_inputs(method, mesh)
        )
        assert inst.variant == "none" and inst.computed
        poses = [_pose(120.0), _pose(60.0), _pose(150.0)]
        inst.set_pose(poses[0])
        renderer.frame_scene()
        images = []
        for pose in (*poses, poses[0]):  # re-posed each frame: both frame slots rewritten
            inst.set_pose(pose)
            images.append(renderer.render_image())
        assert (images[0] != images[1]).any() and (images[0] == images[3]).all()
        inst.visible = False
        for k, pose in enumerate((*poses, poses[0])):
            positions, normals = skinner.skin(pose)
            # the instance's box is exactly the skinned vertices', moved by the model
            if k < len(poses):
                inst.set_pose(pose)
                want = np.stack([positions.min(axis=0), positions.max(axis=0)]) + model[:3, 3]
                np.testing.assert_array_equal(inst.bounds, want)
            other = renderer.add_mesh(_posed_mesh(mesh, positions, normals))
            plain = renderer.add_instance(other, bone_count=2, method="none", model=model)
            want_image = renderer.render_image()
            assert covered(want_image).sum() > 500
            # the same positions bit for bit, but SkinnedMesh renormalizes the normals in
            # float64 (908 of them move by an ulp on the candy wrapper), so a pixel's shading
            # may round the other way (seen on an AVX-512 Xeon: 1 pixel, 195 against 196)
            assert np.array_equal(_posed_mesh(mesh, positions, normals).positions, positions)
            assert_images_agree_to_rounding(images[k], want_image)
            renderer.remove_instance(plain)


@pytest.mark.parametrize("method", COMPUTED)
def test_culling_uses_the_exact_box_of_the_vertices_drawn(device, method):
    """No bone-box rule covers the mushes' compute passes: culling takes the exact box."""
    mesh = procedural.candy_wrapper()
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR, cull_instances=True) as renderer,
    ):
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(
            rm, bone_count=2, method=method, bones=_pose(120.0), inputs=_inputs(method, mesh)
        )
        renderer.frame_scene()
        img = renderer.render_image()
        assert covered(img).sum() > 500
        assert renderer.stats.instances_drawn == 1 and set(renderer.stats.boxes) == {"exact"}
        far = np.eye(4)
        far[:3, 3] = (1000.0, 0.0, 0.0)
        inst.set_model(far)
        renderer.render_image()
        assert renderer.stats.instances_culled == 1


def test_the_renderer_owns_and_closes_their_skinners(device):
    mesh = procedural.candy_wrapper()
    with OffscreenTarget(device, 32, 32) as target:
        renderer = Renderer(device, target)
        rm = renderer.add_mesh(mesh)
        a = renderer.add_instance(rm, bone_count=2, method="delta_mush")
        b = renderer.add_instance(rm, bone_count=2, method="delta_mush_dqs")
        renderer.render_image()
        sa, sb = a.skinner, b.skinner
        assert sa is not None and sb is not None and not sa.closed and not sb.closed
        renderer.remove_instance(a)
        assert sa.closed and not sb.closed and not a.posed_buffers
        renderer.render_image()
        renderer.close()
        assert sb.closed
        # crowds still draw with the vertex shader only, one instanced draw for every copy
    with OffscreenTarget(device, 8, 8) as target, Renderer(device, target) as renderer:
        rm = renderer.add_mesh(mesh)
        clip = __import__("vkdqs").AnimationClip(np.tile(np.eye(4), (2, 2, 1, 1)), 10.0)
        with pytest.raises(InputError, match="every copy would need its own smoothing passes"):
            renderer.add_crowd(rm, clip, count=2, method="delta_mush")


@pytest.mark.parametrize("method", COMPUTED)
def test_a_reposed_frame_reads_no_vertex_back(device, method, monkeypatch):
    """Each new pose is skinned into the frame slot's vertex buffers on the GPU: the host
    reads back its box (one 32-byte record) and the image, never a vertex; the buffers hold
    the Skinner's own vertices (within float32 rounding of the float64 reference) and the
    image is the unskinned image of them."""
    mesh = procedural.candy_wrapper()
    reads = []

    def counted(name):
        real = getattr(Buffer, name)

        def read(self, *args, **kwargs):
            reads.append((self.label, name))
            return real(self, *args, **kwargs)

        return read

    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
        Skinner(device, mesh, bone_count=2, method=method, inputs=_inputs(method, mesh)) as skinner,
    ):
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(rm, bone_count=2, method=method, inputs=_inputs(method, mesh))
        renderer.frame_scene()
        renderer.render_image()
        monkeypatch.setattr(Buffer, "read", counted("read"))
        monkeypatch.setattr(Buffer, "read_into", counted("read_into"))
        images = []
        for angle in (120.0, 60.0, 150.0):
            inst.set_pose(_pose(angle))
            images.append(renderer.render_image())
            skinned = [r for r in reads if "skinner" in r[0]]
            assert skinned == [(r[0], "read") for r in skinned] and len(skinned) == 1
            assert "boxes" in skinned[0][0]
            reads.clear()
        monkeypatch.undo()
        inst.visible = False
        slots = [e for e in inst.posed_buffers.values() if e[2] is inst.pose]
        assert len(slots) == 1  # the last frame's slot holds the last pose
        positions, normals = skinner.skin(_pose(150.0))
        n = mesh.vertex_count
        np.testing.assert_array_equal(slots[0][0].read(np.float32, 3 * n).reshape(n, 3), positions)
        np.testing.assert_array_equal(slots[0][1].read(np.float32, 3 * n).reshape(n, 3), normals)
        ref_p, _ = methods.get(method).reference(mesh, _pose(150.0), **_inputs(method, mesh))
        np.testing.assert_allclose(positions, ref_p, rtol=0, atol=1e-5 * mesh.extent)
        other = renderer.add_mesh(_posed_mesh(mesh, positions, normals))
        renderer.add_instance(other, bone_count=2, method="none")
        want = renderer.render_image()
        assert covered(want).sum() > 500
        assert_images_agree_to_rounding(images[-1], want)  # another pipeline (as above)
