"""Direct Delta Mush drawn by the vertex shader: instances (skin_ddm*.vert) and crowds
(crowd_ddm*.vert), both reading the mesh's Ω and bones from texel buffers uploaded once per
precomputation. An instance draws what "compute, then draw" drew (the compute Skinner's vertices
drawn unskinned) and a crowd copy draws like an instance posed with the bones it sampled, both
to the rounding two pipelines may differ by (tests/imaging.py); a re-drawn frame is exact;
texels past the device's limit are a LimitError naming it. (The vertex path against the float64
reference: tests/test_ddm_skinning.py, tests/test_registry.py.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vkdqs
from vkdqs import AnimationClip, LimitError, SkinnedMesh, procedural
from vkdqs import shader_interface as si
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.geometry import transform_box

from .imaging import CLEAR, assert_images_agree_to_rounding, covered

W, H = 160, 120
FPS = 10.0
ANGLES = (0.0, 60.0, 120.0, 170.0)


def _pose(angle):
    return procedural.twist_pose(angle) @ procedural.bend_pose(angle / 3.0)


def _posed_mesh(mesh, positions, normals):
    """``mesh`` with ``positions`` and ``normals`` as its rest vertices (drawn unskinned)."""
    return SkinnedMesh(positions, normals, mesh.joints, mesh.weights, indices=mesh.indices)


def _grid(count, spacing=3.0):
    models = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
    models[:, 1, 3] = spacing * np.arange(count)
    return models


@pytest.fixture
def scene(device):
    mesh = procedural.candy_wrapper()
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
    ):
        yield mesh, renderer, renderer.add_mesh(mesh)


def test_instances_draw_with_the_vertex_shader_sharing_the_meshs_texels(scene):
    _, renderer, rm = scene
    a = renderer.add_instance(rm, bone_count=2, method="ddm", bones=_pose(90.0))
    b = renderer.add_instance(rm, bone_count=2, method="ddm", model=_grid(2)[1])
    assert not a.computed and a.variant == "ddm" and a.skinner is None
    assert a.ddm is b.ddm is not None and list(rm._texels) == [(id(a.ddm),)]  # uploaded once
    renderer.frame_scene()
    assert covered(renderer.render_image()).sum() > 500


def _candy():
    return procedural.candy_wrapper(), 2, [_pose(150.0), _pose(60.0)]


def _tube():
    mesh = procedural.tube(600, bone_count=8, influences=8, segments=12, length=4.0)
    return mesh, 8, [procedural.bone_chain_pose(8, a, length=4.0) for a in (120.0, -60.0)]


@pytest.mark.parametrize("rig", (_candy, _tube), ids=("candy-4-slots", "tube-8-slots"))
def test_an_instance_draws_what_compute_then_draw_drew(device, rig):
    """The vertex shader's image of a posed DDM instance against the unskinned image of the
    compute Skinner's vertices (what the renderer drew before DDM had vertex shaders), with a
    given precomputation (4 or 8 slots): the same pixels, and the same box."""
    mesh, bones, poses = rig()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=bones, iterations=3, device=device)
    model = np.eye(4)
    model[:3, 3] = (0.25, -0.1, 0.0)
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
        Skinner(device, mesh, bone_count=bones, method="ddm", ddm=ddm) as skinner,
    ):
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(rm, bone_count=bones, method="ddm", ddm=ddm, model=model)
        assert inst.ddm is ddm and inst.slots == skinner.slots == (8 if bones == 8 else 4)
        inst.set_pose(poses[0])
        renderer.frame_scene()
        for pose in poses:
            inst.visible = True
            inst.set_pose(pose)
            got = renderer.render_image()
            positions, normals = skinner.skin(pose)
            # its box is the compute Skinner's with the same precomputation
            want = np.stack([positions.min(axis=0), positions.max(axis=0)])
            np.testing.assert_array_equal(inst.bounds, transform_box(want, model))
            inst.visible = False
            other = renderer.add_mesh(_posed_mesh(mesh, positions, normals))
            plain = renderer.add_instance(other, bone_count=bones, method="none", model=model)
            want_image = renderer.render_image()
            renderer.remove_instance(plain)
            assert covered(want_image).sum() > 500
            # the vertex shader's DDM against the compute Skinner's: two pipelines
            assert_images_agree_to_rounding(got, want_image)


def test_morph_targets_draw_on_the_vertex_path(device):
    """A morphed DDM instance draws what the compute Skinner's morphed vertices draw."""
    base = procedural.candy_wrapper()
    n = base.vertex_count
    deltas = np.zeros((1, n, 3), np.float32)
    deltas[0, : n // 2, 1] = 0.15
    mesh = SkinnedMesh(
        base.positions,
        base.normals,
        base.joints,
        base.weights,
        base.indices,
        morph_positions=deltas,
    )
    weights = np.array([0.8], np.float32)
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
        Skinner(device, mesh, bone_count=2, method="ddm") as skinner,
    ):
        inst = renderer.add_instance(renderer.add_mesh(mesh), bone_count=2, method="ddm")
        inst.set_pose(_pose(120.0), morph_weights=weights)
        renderer.frame_scene()
        got = renderer.render_image()
        inst.set_pose(_pose(120.0))
        assert (renderer.render_image() != got).any(axis=-1).sum() > 50  # the morph shows
        inst.visible = False
        positions, normals = skinner.skin(_pose(120.0), morph_weights=weights)
        renderer.add_instance(
            renderer.add_mesh(_posed_mesh(mesh, positions, normals)), bone_count=2, method="none"
        )
        assert_images_agree_to_rounding(renderer.render_image(), got)  # two pipelines


def test_crowd_copies_draw_like_instances_posed_with_their_bones(scene):
    """On whole frames each copy draws like a DDM instance posed with the bones it sampled
    (the frame's rows, as an instance packs them), to two pipelines' rounding. Between frames
    the sampling pass blends the rows linearly, as for LBS crowds (a pose instances refuse: not
    rigid)."""
    _, renderer, rm = scene
    clip = AnimationClip(np.stack([_pose(a) for a in ANGLES]), FPS)
    times = np.array([0.0, 0.1, 0.2, 0.2, 0.1])
    count = len(times)
    models = _grid(count)
    colors = np.linspace([0.8, 0.2, 0.1], [0.1, 0.4, 0.9], count)
    crowd = renderer.add_crowd(rm, clip, count=count, method="ddm")
    assert crowd.ddm is not None and crowd.slots == 4  # two bones: the 4-slot shaders
    crowd.set_models(models)
    crowd.set_colors(colors)
    crowd.set_times(times)
    renderer.frame_scene()
    crowd_image = renderer.render_image()
    assert covered(crowd_image).sum() > 300
    sampled = crowd.read_bones().astype(np.float64)  # (count, J, 3, 4) rows
    np.testing.assert_array_equal(sampled[1], clip.frames[1][:, :3].astype(np.float32))
    crowd.set_times([0.05, 0.13, 0.0, 0.0, 0.0])
    renderer.render_image()
    between = crowd.read_bones().astype(np.float64)
    for c, (f, a) in enumerate(((0, 0.5), (1, 0.3))):
        blend = (1 - a) * clip.frames[f][:, :3] + a * clip.frames[f + 1][:, :3]
        np.testing.assert_allclose(between[c], blend, atol=2e-6)
    crowd.set_times(times)
    assert (renderer.render_image() == crowd_image).all()
    renderer.remove_crowd(crowd)
    for i in range(count):
        inst = renderer.add_instance(
            rm, bone_count=2, method="ddm", model=models[i], color=colors[i], bones=sampled[i]
        )
        assert inst.ddm is crowd.ddm  # the mesh's default, shared
    assert list(rm._texels) == [(id(crowd.ddm),)]
    instances_image = renderer.render_image()
    # crowd.vert's texel bones against skin.vert's uniform ones: two pipelines
    assert_images_agree_to_rounding(instances_image, crowd_image)
    # the method shows: LBS instances with the same bones draw otherwise
    for inst in list(renderer.instances):
        renderer.remove_instance(inst)
    for i in range(count):
        renderer.add_instance(
            rm, bone_count=2, method="lbs", model=models[i], color=colors[i], bones=sampled[i]
        )
    assert (renderer.render_image() != crowd_image).any(axis=-1).sum() > 20


def test_crowds_take_the_rule_of_instances_and_a_given_precomputation(device, scene):
    mesh, renderer, rm = scene
    scaled = np.tile(np.diag([1.5, 1.0, 1.0, 1.0]), (2, 2, 1, 1))
    with pytest.raises(vkdqs.InputError, match="needs a rigid clip"):
        renderer.add_crowd(rm, AnimationClip(scaled, FPS), count=2, method="ddm")
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=2, iterations=2, device=device)
    clip = AnimationClip(np.stack([_pose(a) for a in ANGLES]), FPS)
    crowd = renderer.add_crowd(rm, clip, count=2, method="ddm", ddm=ddm)
    assert crowd.ddm is ddm
    lo, hi = renderer.crowd_bounds(crowd)  # its clip's boxes are measured with its own Ω
    with Skinner(device, mesh, bone_count=2, method="ddm", ddm=ddm) as skinner:
        boxes = skinner.bounds_many(clip.frames)
    np.testing.assert_array_equal(crowd.clip_boxes[0], [boxes[:, 0].min(0), boxes[:, 1].max(0)])
    assert np.all(lo <= hi)
    with pytest.raises(vkdqs.InputError, match="ddm are for method='ddm', not 'lbs'"):
        renderer.add_crowd(rm, clip, count=2, method="lbs", ddm=ddm)


def test_omega_past_the_texel_limit_is_a_limit_error(device, monkeypatch):
    """Ω takes 10 texels a vertex (4 slots; 20 with 8): past maxTexelBufferElements the vertex
    path, an instance and a crowd refuse it, naming the limit; the compute path reads it in
    chunks of vertices (tests/test_vertex_chunks.py) and skins the same bits."""
    mesh = procedural.candy_wrapper()
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=2, device=device)
    texels = si.ddm_arrays_rows(ddm)["ddm_omega"]
    assert texels == mesh.vertex_count * 10
    with OffscreenTarget(device, 32, 24) as target, Renderer(device, target) as renderer:
        rm = renderer.add_mesh(mesh)
        pose = _pose(ANGLES[1])
        with Skinner(device, mesh, bone_count=2, method="ddm", ddm=ddm) as whole:
            want = whole.skin(pose)
        small = dataclasses.replace(device.info, max_texel_buffer_elements=texels - 1)
        monkeypatch.setattr(device, "info", small)
        with pytest.raises(LimitError, match=r"ddm_omega .*maxTexelBufferElements"):
            Skinner(device, mesh, bone_count=2, method="ddm", ddm=ddm, path="vertex")
        with Skinner(device, mesh, bone_count=2, method="ddm", ddm=ddm) as chunked:
            assert len(chunked.chunks) == 2
            for got, wanted in zip(chunked.skin(pose), want, strict=True):
                np.testing.assert_array_equal(got, wanted)
        with pytest.raises(LimitError, match="maxTexelBufferElements"):
            renderer.add_instance(rm, bone_count=2, method="ddm", ddm=ddm)
        clip = AnimationClip(np.stack([_pose(a) for a in ANGLES]), FPS)
        with pytest.raises(LimitError, match="maxTexelBufferElements"):
            renderer.add_crowd(rm, clip, count=2, method="ddm", ddm=ddm)
        assert not rm._texels and not renderer.instances and not renderer.crowds
        monkeypatch.setattr(
            device, "info", dataclasses.replace(small, max_texel_buffer_elements=texels)
        )
        renderer.add_instance(rm, bone_count=2, method="ddm", ddm=ddm)
        renderer.render_image()
