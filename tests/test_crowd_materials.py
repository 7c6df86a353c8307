"""Crowds wear the mesh's materials (lavapipe, validation layer on): texture (with its sampler
and UV transform), base colour factor, COLOR_0, MASK cutoff, doubleSided and material groups,
each copy's colour multiplying in; a copy draws pixel for pixel like an instance posed with the
same bones and the same materials. Uncoloured meshes keep the copies' default tint.
"""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import AnimationClip, procedural
from vkdqs import methods as registry
from vkdqs.app.overlay import copy_label_anchors
from vkdqs.app.scenes import CrowdScene
from vkdqs.app.stills import Decorations, copy_points, scene_overlay
from vkdqs.camera import Camera
from vkdqs.engine.crowd import DEFAULT_TINT
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gltf import load_gltf
from vkdqs.material import Material, Sampler, linear_to_srgb, srgb_to_linear, uv_transform
from vkdqs.mesh import SkinnedMesh

from .gltf_fixtures_material import CHECKER, QUAD_INDICES, QUAD_POSITIONS, QUAD_UVS, textured_rig
from .imaging import CLEAR, covered

W, H = 160, 120
FPS = 10.0
ANGLES = np.linspace(0.0, 150.0, 6)
NEAREST = Sampler("nearest", "nearest", None, "repeat", "repeat")
WHITE = (1.0, 1.0, 1.0, 1.0)
EYE = np.eye(4)[None]  # one bone at rest
TOL = 2  # levels of 255, as tests/test_materials_render.py


def checker(size: int = 8) -> np.ndarray:
    """An RGBA checker of saturated colours, one per cell (opaque)."""
    rng = np.random.default_rng(7)
    cells = rng.integers(30, 256, (size, size, 4)).astype(np.uint8)
    cells[..., 3] = 255
    return cells


def textured_candy() -> SkinnedMesh:
    """The candy wrapper with UVs (u along the wrapper, v around it) and a vertex colour ramp."""
    m = procedural.candy_wrapper()
    p = m.positions
    lo, hi = p.min(axis=0), p.max(axis=0)
    u = (p[:, 0] - lo[0]) / (hi[0] - lo[0])
    v = (np.arctan2(p[:, 1], p[:, 2]) + np.pi) / (2 * np.pi)
    colors = np.c_[0.4 + 0.6 * u, np.full(len(u), 0.8), 1.0 - 0.5 * u, np.ones(len(u))]
    return SkinnedMesh(
        m.positions, m.normals, m.joints, m.weights, m.indices, uvs=np.c_[u, v], colors=colors
    )


def twist_clip() -> AnimationClip:
    return AnimationClip(np.stack([procedural.twist_pose(a) for a in ANGLES]), FPS)


def grid_models(count: int) -> np.ndarray:
    """Candy wrappers (2 x 1 x 1) in rows of three."""
    models = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
    models[:, 0, 3] = 2.4 * (np.arange(count) % 3)
    models[:, 1, 3] = 1.4 * (np.arange(count) // 3)
    return models


@pytest.fixture
def renderer(device):
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as r,
    ):
        yield r


def crowd_then_instances(renderer, rm, clip, models, colors, method, bone_count):
    """Render a crowd of ``len(models)`` copies (copy i at frame count-1-i), then the same as
    posed instances; both images."""
    count = len(models)
    crowd = renderer.add_crowd(rm, clip, count=count, method=method)
    crowd.set_models(models)
    crowd.set_colors(colors)
    crowd.set_times(np.arange(count)[::-1] / clip.fps)
    renderer.frame_scene()
    crowd_image = renderer.render_image()
    renderer.remove_crowd(crowd)
    for i in range(count):
        renderer.add_instance(
            rm,
            bone_count=bone_count,
            method=method,
            model=models[i],
            color=colors[i],
            bones=clip.frames[count - 1 - i],
        )
    instances_image = renderer.render_image()
    for inst in list(renderer.instances):
        renderer.remove_instance(inst)
    return crowd_image, instances_image


def assert_same(a: np.ndarray, b: np.ndarray) -> None:
    different = (a != b).any(axis=-1)
    assert different.sum() == 0, f"{different.sum()} pixels differ"


@pytest.mark.parametrize("method", ["dqs", "lbs", "blend", "cor"])
def test_textured_crowd_renders_like_textured_instances(renderer, method):
    """Two material groups (a textured one with a UV transform and factor, over COLOR_0; a
    plain double-sided one with a base colour): whole frames match posed instances exactly."""
    mesh = textured_candy()
    if method == "blend":
        blend = np.linspace(0.0, 1.0, mesh.vertex_count)
        mesh = SkinnedMesh(
            mesh.positions,
            mesh.normals,
            mesh.joints,
            mesh.weights,
            mesh.indices,
            uvs=mesh.uvs,
            colors=mesh.colors,
            dqs_blend=blend,
        )
    assert mesh.slots >= 4
    half = 3 * (mesh.indices.size // 6)
    textured = Material(
        base_color=(1.0, 0.9, 0.8, 1.0),
        texture=checker(),
        uv_transform=uv_transform(offset=(0.1, 0.0), rotation=0.3, scale=(2.0, 1.0)),
    )
    plain = Material(base_color=(0.3, 0.7, 0.4, 1.0), double_sided=True)
    rm = renderer.add_mesh(
        mesh,
        material=[textured, plain],
        groups=[(0, half, 0), (half, mesh.indices.size - half, 1)],
    )
    clip = twist_clip()
    count = clip.frame_count - 1
    models = grid_models(count)
    colors = np.linspace([1.0, 0.8, 0.6], [0.6, 0.9, 1.0], count)
    crowd_image, instances_image = crowd_then_instances(
        renderer, rm, clip, models, colors, method, 2
    )
    assert covered(crowd_image).sum() > 1500
    assert_same(crowd_image, instances_image)
    # the texture shows: many colours, and an untextured crowd draws otherwise
    assert len(np.unique(crowd_image[covered(crowd_image)], axis=0)) > 200
    bare = renderer.add_mesh(mesh)
    plain_image, _ = crowd_then_instances(renderer, bare, clip, models, colors, method, 2)
    assert (plain_image != crowd_image).any(axis=-1).sum() > 1000


def test_eight_influences_textured_crowd_renders_like_instances(renderer):
    tube = procedural.tube(600, bone_count=8, influences=8)
    assert tube.slots == 8
    p = tube.positions
    lo, hi = p.min(axis=0), p.max(axis=0)
    uvs = (p[:, :2] - lo[:2]) / (hi[:2] - lo[:2])
    mesh = SkinnedMesh(p, tube.normals, tube.joints, tube.weights, tube.indices, uvs=uvs)
    rm = renderer.add_mesh(mesh, material=Material(texture=checker(), sampler=NEAREST))
    clip = AnimationClip(
        np.stack([procedural.bone_chain_pose(8, a) for a in (0, 40, 80, 120)]), 1.0
    )
    models = np.broadcast_to(np.eye(4), (3, 4, 4)).copy()
    models[:, 1, 3] = 12.0 * np.arange(3)
    for method in ("dqs", "lbs"):
        a, b = crowd_then_instances(renderer, rm, clip, models, np.ones((3, 4)), method, 8)
        assert covered(a).sum() > 300
        assert_same(a, b)
        assert len(np.unique(a[covered(a)], axis=0)) > 50


# -- a flat quad facing the camera: colours and cut-outs, pixel by pixel ----------------------


def quad(colors=None, uvs=QUAD_UVS) -> SkinnedMesh:
    n = len(QUAD_POSITIONS)
    normals = np.tile([0.0, 0.0, 1.0], (n, 1))
    return SkinnedMesh(
        QUAD_POSITIONS, normals, np.zeros(n, int), np.ones(n), QUAD_INDICES, uvs=uvs, colors=colors
    )


def still_clip() -> AnimationClip:
    return AnimationClip(np.tile(np.eye(4), (2, 1, 1, 1)), 1.0)


def quad_crowd(renderer, rm, colors, models=None):
    """A crowd of quads, side by side along x (or at ``models``), rendered; its image."""
    count = len(colors)
    crowd = renderer.add_crowd(rm, still_clip(), count=count)
    if models is None:
        models = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
        models[:, 0, 3] = 2.5 * (np.arange(count) - 0.5 * (count - 1))
    crowd.set_models(models)
    crowd.set_colors(colors)
    renderer.camera = Camera(distance=4.0 + 1.3 * count)
    image = renderer.render_image()
    renderer.remove_crowd(crowd)
    return image, models


def centre_pixel(renderer, image, model):
    x, y = renderer.camera.project(model[None, :3, 3] + [0.3, 0.3, 0.0], W, H)[0]
    return image[int(y), int(x), :3].astype(float)


def test_vertex_colour_and_copy_colour_multiply(renderer):
    """COLOR_0 x the copy's colour x the factor, in linear light: the crowd's pixel is the white
    copy's lit pixel times the product (within 2 levels), and exactly an instance's pixel."""
    vertex = np.array([0.5, 1.0, 0.5, 1.0])  # powers of two: every product is exact
    copy = np.array([[1.0, 0.5, 0.25, 1.0], [0.25, 1.0, 1.0, 1.0]])
    factor = (1.0, 1.0, 0.5, 1.0)
    coloured = renderer.add_mesh(
        quad(colors=np.tile(vertex, (4, 1))), material=Material(base_color=factor)
    )
    white = renderer.add_mesh(quad())
    image, models = quad_crowd(renderer, coloured, copy)
    white_image, _ = quad_crowd(renderer, white, np.ones((2, 4)))
    for i in range(2):
        lit = srgb_to_linear(centre_pixel(renderer, white_image, models[i]) / 255.0)
        want = np.round(linear_to_srgb(lit * copy[i, :3] * vertex[:3] * factor[:3]) * 255.0)
        got = centre_pixel(renderer, image, models[i])
        assert np.abs(got - want).max() <= TOL, (i, got, want)
        assert np.abs(got - centre_pixel(renderer, white_image, models[i])).max() > 20
    # the same product as an instance colour over the plain quad: the same pixels
    plain_mesh = renderer.add_mesh(quad(), material=Material(base_color=factor))
    for i in range(2):
        renderer.add_instance(
            plain_mesh, bone_count=1, model=models[i], color=copy[i] * vertex, bones=EYE
        )
    assert_same(image, renderer.render_image())


def test_mask_cutout_and_double_sided(renderer):
    """A MASK texture with a transparent left half: the crowd cuts it out like an instance; a
    quad turned away is drawn only when its material is double-sided."""
    tex = np.tile(CHECKER[:1, :1], (4, 4, 1)).copy()
    tex[:, :2, 3] = 0  # u < 0.5: alpha 0
    for double_sided in (False, True):
        material = Material(
            texture=tex, sampler=NEAREST, alpha_mode="MASK", double_sided=double_sided
        )
        rm = renderer.add_mesh(quad(), material=material)
        image, models = quad_crowd(renderer, rm, np.ones((2, 4)))
        turned = models.copy()
        turned[:, :3, :3] = np.diag([-1.0, 1.0, -1.0])  # 180 degrees about y: the back face
        back, _ = quad_crowd(renderer, rm, np.ones((2, 4)), turned)
        for i in range(2):
            renderer.add_instance(rm, bone_count=1, model=models[i], color=WHITE, bones=EYE)
        assert_same(image, renderer.render_image())
        for inst in list(renderer.instances):
            renderer.remove_instance(inst)
        for i in range(2):
            renderer.add_instance(rm, bone_count=1, model=turned[i], color=WHITE, bones=EYE)
        assert_same(back, renderer.render_image())
        for inst in list(renderer.instances):
            renderer.remove_instance(inst)
        for i in range(2):
            cx, cy = renderer.camera.project(models[i, None, :3, 3], W, H)[0].astype(int)
            left, right = covered(image)[cy, cx - 12], covered(image)[cy, cx + 12]
            assert not left and right, (i, left, right)  # seen from the front: left cut out
            # seen from behind (u runs the other way on screen): drawn only if double-sided
            assert covered(back)[cy, cx - 12] == double_sided
            assert not covered(back)[cy, cx + 12]


def test_uncoloured_mesh_keeps_the_tint_textured_mesh_is_white(renderer):
    """A crowd of a mesh without colours of its own keeps the default tint; a textured or
    coloured one starts white (its own colours show)."""
    plain = renderer.add_mesh(quad())
    crowd = renderer.add_crowd(plain, still_clip(), count=2)
    np.testing.assert_array_equal(crowd.colors, np.tile(DEFAULT_TINT, (2, 1)))
    renderer.camera = Camera(distance=4.0)
    tinted = renderer.render_image()
    crowd.set_colors(DEFAULT_TINT)
    assert_same(tinted, renderer.render_image())
    crowd.set_colors((1.0, 1.0, 1.0))
    assert (renderer.render_image() != tinted).any(axis=-1).sum() > 100
    renderer.remove_crowd(crowd)
    for mesh, material in (
        (quad(), Material(texture=checker())),
        (quad(), Material(base_color=(0.5, 0.5, 1.0, 1.0))),
        (quad(colors=np.ones((4, 4))), None),
    ):
        rm = renderer.add_mesh(mesh, material=material)
        crowd = renderer.add_crowd(rm, still_clip(), count=3)
        np.testing.assert_array_equal(crowd.colors, np.ones((3, 4)))


def test_crowds_reuse_the_renderers_materials(renderer):
    """Crowds add no material set, texture or sampler: they bind the mesh's."""
    material = Material(texture=checker())
    rm = renderer.add_mesh(quad(), material=material)
    before = (
        len(renderer.materials.materials),
        len(renderer.materials.textures),
        len(renderer.materials.samplers),
    )
    for _ in range(2):
        renderer.add_crowd(rm, still_clip(), count=4)
    renderer.camera = Camera(distance=6.0)
    assert covered(renderer.render_image()).sum() > 500
    assert (
        len(renderer.materials.materials),
        len(renderer.materials.textures),
        len(renderer.materials.samplers),
    ) == before


def test_crowd_scene_from_gltf_wears_the_texture(device, tmp_path):
    """CrowdScene.from_gltf gives its grids the file's materials: white copies showing the
    texture's colours (the candy wrapper, uncoloured, keeps the methods' tints)."""
    rig = textured_rig(checker(4))
    path = tmp_path / "rig.gltf"
    rig.save(path)
    scene = load_gltf(path)
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
    ):
        crowds = CrowdScene.from_gltf(renderer, scene, 4, methods="both")
        for method in ("lbs", "dqs"):
            np.testing.assert_array_equal(crowds.crowds[method].colors, np.ones((4, 4)))
        image = renderer.render_image()
        assert covered(image).sum() > 500
        # the checker's cells: many distinct colours
        assert len(np.unique(image[covered(image)], axis=0)) > 50
        # white copies look alike: a label under each grid tells LBS from DQS (the viewer's)
        Decorations(crowds, grid=False).update()
        overlay = scene_overlay(crowds)
        labelled = renderer.render_image()
        anchors = copy_label_anchors(renderer.camera, copy_points(crowds), (W, H))
        assert len(anchors) == 2
        for method, (x, y) in zip(("lbs", "dqs"), anchors, strict=True):
            lo, hi = crowds.crowds[method].bounds()
            box = np.array(np.meshgrid(*zip(lo, hi, strict=True))).reshape(3, -1).T
            px = renderer.camera.project(box, W, H)
            assert px[:, 0].min() < x < px[:, 0].max()  # under its own grid
            text = overlay[int(y) : int(y) + 12, max(int(x) - 12, 0) : int(x) + 12, 3] > 0
            assert text.sum() > 10
        changed = (labelled != image).any(axis=-1)
        assert changed.sum() > 20 and (overlay[..., 3][changed] > 0).all()
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as renderer,
    ):
        candy = CrowdScene.candy_wrapper(renderer, 2, methods="both")
        for method in ("lbs", "dqs"):
            np.testing.assert_array_equal(
                candy.crowds[method].colors, np.tile(registry.get(method).color, (2, 1))
            )


def test_textured_material_on_a_mesh_without_uvs_draws_like_an_instance(renderer):
    """Without TEXCOORD_0 a crowd passes on the constant row's UV (crowd.vert specialized), as
    an instance reads it: one texel of the texture, the same pixels."""
    rm = renderer.add_mesh(quad(uvs=None), material=Material(texture=checker(), sampler=NEAREST))
    image, models = quad_crowd(renderer, rm, np.ones((2, 4)))
    assert covered(image).sum() > 500
    for i in range(2):
        renderer.add_instance(rm, bone_count=1, model=models[i], color=WHITE, bones=EYE)
    assert_same(image, renderer.render_image())
