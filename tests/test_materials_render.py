"""Materials drawn offscreen (lavapipe, validation layer on): texture colours land where the UVs
put them, through every wrap mode and texture transform; factor, texture and COLOR_0 multiply;
MASK cuts out, doubleSided draws back faces, mipmaps average a minified checker.

The quad of tests/gltf_fixtures_material.py faces the camera. Each expected pixel is computed
here: the texel a NEAREST sampler picks (:func:`texel`, the glTF/Vulkan wrap rules written out),
in linear light, times the factor and vertex colour, times the light that reaches that pixel,
measured by drawing the same quad white and untextured (``L = srgb_to_linear(white)``; the
specular term is below 1e-5 there), then sRGB-encoded. Pixels agree within 2 levels of 255.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from vkdqs import dq, reference
from vkdqs.app.scenes import GltfScenePlayer
from vkdqs.camera import Camera
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.errors import InputError
from vkdqs.gltf import GltfWarning, load_gltf
from vkdqs.gltf.parts import scene_parts
from vkdqs.material import Material, Sampler, linear_to_srgb, srgb_to_linear, uv_transform
from vkdqs.mesh import SkinnedMesh

from . import imaging
from .gltf_fixtures_material import (
    CHECKER,
    QUAD_INDICES,
    QUAD_POSITIONS,
    QUAD_UVS,
    encode,
    quad_document,
    textured_rig,
    write,
)
from .imaging import CLEAR, covered, pixel_box

W = H = 64
NEAREST = Sampler("nearest", "nearest", None, "repeat", "repeat")
TOL = 2


def quad(uvs=QUAD_UVS, colors=None, indices=QUAD_INDICES) -> SkinnedMesh:
    n = len(QUAD_POSITIONS)
    normals = np.tile([0.0, 0.0, 1.0], (n, 1))
    return SkinnedMesh(
        QUAD_POSITIONS, normals, np.zeros(n, int), np.ones(n), indices, uvs=uvs, colors=colors
    )


@pytest.fixture
def renderer(device):
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR) as r,
    ):
        r.camera = Camera(distance=4.0)  # straight down -z at the quad
        yield r


def draw(renderer, mesh, material=None, *, model=None, **add):
    """Render ``mesh`` alone with ``material``; the renderer keeps nothing drawn afterwards."""
    for inst in list(renderer.instances):
        renderer.remove_instance(inst)
    rm = renderer.add_mesh(mesh, material=material, **add)
    renderer.add_instance(rm, bone_count=1, color=(1, 1, 1, 1), model=model)
    return renderer.render_image()


def grid(step=0.1):
    """World points on the quad, away from its edges."""
    xs = np.arange(-0.95, 0.951, step)
    x, y = np.meshgrid(xs, xs)
    return np.c_[x.ravel(), y.ravel(), np.zeros(x.size)]


def pixels(renderer, img, points):
    px = renderer.camera.project(points, W, H)
    return img[px[:, 1].astype(int), px[:, 0].astype(int)]


def quad_uv(points, uvs=QUAD_UVS):
    """The UV the rasterizer interpolates at quad points (affine across the quad)."""
    u0, v0 = uvs[3]  # (-1, 1)
    du = (uvs[2] - uvs[3]) / 2.0  # per unit x
    dv = (uvs[0] - uvs[3]) / -2.0  # per unit y
    return np.c_[
        u0 + (points[:, 0] + 1) * du[0] + (points[:, 1] - 1) * dv[0],
        v0 + (points[:, 0] + 1) * du[1] + (points[:, 1] - 1) * dv[1],
    ]


def wrap(t, mode):
    if mode == "repeat":
        return t - np.floor(t)
    if mode == "clamp":
        return np.clip(t, 0.0, 1.0 - 1e-9)
    m = np.mod(t, 2.0)  # mirrored repeat
    return np.where(m < 1.0, m, 2.0 - m - 1e-9)


def texel(tex, uv, sampler):
    """What a NEAREST sampler returns at ``uv`` (row 0 at v = 0), and whether the point is
    safely inside a texel (not within 10% of a texel edge, where rounding could go either way)."""
    h, w = tex.shape[:2]
    raw_s, raw_t = uv[:, 0] * w, uv[:, 1] * h  # texel edges at integers, in every mode
    safe = (np.abs(raw_s - np.round(raw_s)) > 0.1) & (np.abs(raw_t - np.round(raw_t)) > 0.1)
    s, t = wrap(uv[:, 0], sampler.wrap_s) * w, wrap(uv[:, 1], sampler.wrap_t) * h
    return tex[np.floor(t).astype(int), np.floor(s).astype(int)], safe


def expected(light, texels, factor=(1, 1, 1, 1), vertex=(1, 1, 1, 1)):
    """sRGB pixels of ``texels`` x factor x vertex colour lit by ``light`` = (diffuse, specular)."""
    diffuse, specular = light
    albedo = srgb_to_linear(texels[..., :3] / 255.0) * np.asarray(factor)[:3] * vertex[:3]
    return np.round(linear_to_srgb(albedo * diffuse + specular) * 255.0)


def specular(renderer, points):
    """skin.frag's white highlight on the quad (normal +z) at world ``points``: strength 0.3
    (the renderer's ambient.w) x Blinn-Phong with exponent 48, toward the key light."""
    key, _ = renderer._lights()
    to_key = -key / np.linalg.norm(key)
    view = renderer.camera.position - points
    view /= np.linalg.norm(view, axis=1, keepdims=True)
    h = to_key + view
    h /= np.linalg.norm(h, axis=1, keepdims=True)
    lit = to_key[2] > 0
    return 0.3 * np.where(lit, np.maximum(h[:, 2], 0.0) ** 48, 0.0)[:, None]


@pytest.fixture
def light(renderer):
    """The light reaching quad points: (diffuse per channel, specular), from the white quad's
    pixels less the highlight."""
    img = draw(renderer, quad(uvs=None))

    def at(points):
        spec = specular(renderer, points)
        white = srgb_to_linear(pixels(renderer, img, points)[:, :3] / 255.0)
        return white - spec, spec

    return at


def check(renderer, img, light, points, texels, **kw):
    got = pixels(renderer, img, points)[:, :3].astype(int)
    want = expected(light(points), texels, **kw)
    np.testing.assert_allclose(got, want, atol=TOL)


def test_texture_colours_land_where_the_uvs_put_them(renderer, light):
    pts = np.array([[-0.5, 0.5, 0], [0.5, 0.5, 0], [-0.5, -0.5, 0], [0.5, -0.5, 0]])
    img = draw(renderer, quad(), Material(texture=CHECKER, sampler=NEAREST))
    # row 0 (red, green) at the top, as glTF's v = 0 says
    check(renderer, img, light, pts, CHECKER.reshape(4, 4))
    got = pixels(renderer, img, pts)
    assert got[0, 0] > 150 > got[0, 1] and got[1, 1] > 150 > got[1, 0] and got[2, 2] > 150


def test_factor_texture_and_vertex_colour_multiply(renderer, light):
    vertex = np.array([0.5, 1.0, 0.8, 1.0])
    factor = (1.0, 0.5, 0.25, 1.0)
    mesh = quad(colors=np.tile(vertex, (4, 1)))
    img = draw(renderer, mesh, Material(base_color=factor, texture=CHECKER, sampler=NEAREST))
    pts = grid(0.25)
    texels, safe = texel(CHECKER, quad_uv(pts), NEAREST)
    check(renderer, img, light, pts[safe], texels[safe], factor=factor, vertex=vertex)


@pytest.mark.parametrize("mode", ["repeat", "clamp", "mirror"])
def test_wrap_modes(renderer, light, mode):
    uvs = QUAD_UVS * 3.0 - 1.0  # u, v from -1 to 2: the texture three times across
    sampler = Sampler("nearest", "nearest", None, mode, mode)
    img = draw(renderer, quad(uvs=uvs), Material(texture=CHECKER, sampler=sampler))
    pts = grid()
    texels, safe = texel(CHECKER, quad_uv(pts, uvs), sampler)
    assert safe.sum() > 100
    check(renderer, img, light, pts[safe], texels[safe])
    # the modes differ where u < 0: REPEAT wraps to the right column, CLAMP and MIRROR do not
    left = np.array([[-0.9, 0.5, 0.0]])  # u = -0.85
    colour = pixels(renderer, img, left)[0, :3]
    want_green = mode == "mirror"  # mirror(-0.85) = 0.85: the right column (green, top row)
    assert (colour[1] > colour[0]) == want_green


@pytest.mark.parametrize(
    ("offset", "rotation", "scale"),
    [((0.5, 0.0), 0.0, (1.0, 1.0)), ((0.0, 0.0), 0.0, (2.0, 0.5)), ((0.1, 0.3), 0.4, (1.5, 1.0))],
)
def test_texture_transform(renderer, light, offset, rotation, scale):
    m = uv_transform(offset, rotation, scale)
    img = draw(renderer, quad(), Material(texture=CHECKER, sampler=NEAREST, uv_transform=m))
    pts = grid()
    uv = quad_uv(pts)
    moved = (np.c_[uv, np.ones(len(uv))] @ m.T)[:, :2]
    texels, safe = texel(CHECKER, moved, NEAREST)
    check(renderer, img, light, pts[safe], texels[safe])
    if offset == (0.5, 0.0):  # shifted by half the texture: the top-left quarter shows green
        assert pixels(renderer, img, np.array([[-0.5, 0.5, 0.0]]))[0, 1] > 150


def test_mask_cuts_out_and_blend_draws_as_mask(renderer, caplog):
    tex = CHECKER.copy()
    tex[:, 0, 3] = 0  # the left column transparent
    left, right = np.array([[-0.5, 0.5, 0.0]]), np.array([[0.5, 0.5, 0.0]])
    clear = imaging.srgb8(CLEAR[:3])
    for mode, cut in (("OPAQUE", False), ("MASK", True), ("BLEND", True)):
        mat = Material(texture=tex, sampler=NEAREST, alpha_mode=mode, alpha_cutoff=0.3)
        with caplog.at_level(logging.WARNING, logger="vkdqs.engine.renderer"):
            img = draw(renderer, quad(), mat)
        at_left = pixels(renderer, img, left)[0, :3]
        assert np.array_equal(at_left, clear) == cut, mode
        assert not np.array_equal(pixels(renderer, img, right)[0, :3], clear), mode
    assert sum("alphaMode BLEND" in r.getMessage() for r in caplog.records) == 1  # noted once


def test_double_sided_draws_back_faces(renderer, light):
    turned = np.diag([-1.0, 1.0, -1.0, 1.0])  # half a turn about y: we see the quad's back
    centre = np.array([[0.0, 0.0, 0.0]])
    clear = imaging.srgb8(CLEAR[:3])
    red = Material(base_color=(1, 0, 0, 1))
    img = draw(renderer, quad(), red, model=turned)
    assert np.array_equal(pixels(renderer, img, centre)[0, :3], clear)  # culled
    two_sided = Material(base_color=(1, 0, 0, 1), double_sided=True)
    img = draw(renderer, quad(), two_sided, model=turned)
    # the back face's normal is reversed (glTF): lit as the front is from here
    want = expected(light(centre), np.array([[255, 255, 255, 255]]), factor=(1, 0, 0, 1))
    np.testing.assert_allclose(pixels(renderer, img, centre)[:, :3], want, atol=TOL)


def _mip_image(renderer, sampler):
    checker = np.zeros((64, 64, 4), np.uint8)
    checker[..., 3] = 255
    odd = (np.arange(64)[:, None] + np.arange(64)[None, :]) % 2 == 1
    checker[odd, 0] = 255  # red
    checker[~odd, 2] = 255  # blue
    small = np.diag([0.08, 0.08, 0.08, 1.0])  # ~4 pixels across: 16 texels a pixel
    return draw(renderer, quad(), Material(texture=checker, sampler=sampler), model=small)


def test_mipmaps_average_a_minified_checker(renderer, light, monkeypatch):
    centre = np.array([[0.0, 0.0, 0.0]])
    want = expected(light(centre), np.array([[255, 255, 255, 255]]), factor=(0.5, 0, 0.5, 1))
    mipmapped = Sampler("linear", "linear", "linear", "repeat", "repeat")
    got = pixels(renderer, _mip_image(renderer, mipmapped), centre)[:, :3]
    np.testing.assert_allclose(got, want, atol=TOL)  # purple: red and blue averaged
    # without mipmaps, NEAREST picks one texel: red or blue, never the average
    plain = pixels(renderer, _mip_image(renderer, NEAREST), centre)[0, :3]
    assert min(plain[0], plain[2]) < 10
    # the host-made chain (for devices that cannot blit) averages the same way
    monkeypatch.setattr("vkdqs.gpu.images.can_blit_mips", lambda device: False)
    renderer.materials.textures.clear()
    renderer.materials.materials.clear()
    got = pixels(renderer, _mip_image(renderer, mipmapped), centre)[:, :3]
    np.testing.assert_allclose(got, want, atol=TOL)


def test_a_textured_gltf_quad(tmp_path, renderer, light):
    """Loader to pixels: the file's texture, NEAREST sampler and COLOR_0."""
    colors = np.tile([1.0, 0.5, 1.0, 1.0], (4, 1)).astype(np.float32)
    sampler = {"magFilter": 9728, "minFilter": 9728}
    scene = load_gltf(
        write(quad_document(image=encode(CHECKER), colors=colors, sampler=sampler), tmp_path)
    )
    part = scene_parts(scene)[0]
    groups = scene.mesh_groups(0)
    material = [g[2] for g in groups]
    img = draw(
        renderer, part.geometry, material, groups=[(g[0], g[1], k) for k, g in enumerate(groups)]
    )
    pts = grid(0.25)
    texels, safe = texel(CHECKER, quad_uv(pts), NEAREST)
    check(renderer, img, light, pts[safe], texels[safe], vertex=colors[0])


def test_a_broken_image_draws_the_factor(tmp_path, renderer, light):
    doc = quad_document(image=b"not an image", material={"pbrMetallicRoughness": {}})
    doc.document["materials"][0]["pbrMetallicRoughness"] = {
        "baseColorFactor": [0.2, 0.8, 0.4, 1.0],
        "baseColorTexture": {"index": 0},
    }
    with pytest.warns(GltfWarning, match=r"images\[0\]"):
        scene = load_gltf(write(doc, tmp_path))
    for inst in list(renderer.instances):
        renderer.remove_instance(inst)
    player = GltfScenePlayer(renderer, scene, methods="lbs")
    renderer.camera = Camera(distance=4.0)
    img = renderer.render_image()
    centre = np.array([[0.0, 0.0, 0.0]])
    want = expected(light(centre), np.array([[255, 255, 255, 255]]), factor=(0.2, 0.8, 0.4, 1))
    np.testing.assert_allclose(pixels(renderer, img, centre)[:, :3], want, atol=TOL)
    assert player.label().startswith("LBS")


def test_groups_draw_each_range_with_its_material(renderer, light):
    red, blue = Material(base_color=(1, 0, 0, 1)), Material(base_color=(0, 0, 1, 1))
    img = draw(renderer, quad(uvs=None), [red, blue], groups=[(0, 3, 0), (3, 3, 1)])
    # triangle 0 (0, 1, 2) is below the diagonal y = x, triangle 1 above it
    below, above = np.array([[0.5, -0.5, 0.0]]), np.array([[-0.5, 0.5, 0.0]])
    white = np.array([[255, 255, 255, 255]])
    np.testing.assert_allclose(
        pixels(renderer, img, below)[:, :3],
        expected(light(below), white, factor=(1, 0, 0, 1)),
        atol=TOL,
    )
    np.testing.assert_allclose(
        pixels(renderer, img, above)[:, :3],
        expected(light(above), white, factor=(0, 0, 1, 1)),
        atol=TOL,
    )


def test_add_mesh_checks_materials_and_groups(renderer):
    mesh = quad()
    for kwargs, match in [
        ({"material": "red"}, "material must be"),
        ({"material": []}, "material must be"),
        ({"groups": [(0, 4, 0)]}, "whole triangles"),
        ({"groups": [(0, 9, 0)]}, "whole triangles"),
        ({"groups": [(0, 6, 1)]}, "uses material 1; there are 1"),
        ({"groups": [(0, 6)]}, r"groups\[0\] must be"),
    ]:
        with pytest.raises(InputError, match=match):
            renderer.add_mesh(mesh, **kwargs)


def test_textures_and_materials_are_made_once_and_freed_with_the_renderer(fresh_device):
    tex = CHECKER.copy()
    with OffscreenTarget(fresh_device, 8, 8) as target:
        before = fresh_device.live_objects()
        with Renderer(fresh_device, target) as renderer:
            a = Material(texture=tex, sampler=NEAREST)
            b = Material(texture=a.texture, sampler=NEAREST, base_color=(1, 0, 0, 1))
            renderer.add_mesh(quad(), material=[a, b, a], groups=[(0, 3, 0), (3, 3, 1)])
            renderer.add_mesh(quad(), material=a)
            renderer.add_mesh(quad(), material=[Material(), Material(base_color=(0, 1, 0))])
            textures = [lbl for lbl in fresh_device.live_object_labels() if "texture" in lbl]
            assert len(textures) == 2  # the checker once, the white one once
            assert len(renderer.materials.materials) == 4  # a, b and the two plain ones
        assert fresh_device.live_objects() == before


def test_a_textured_skinned_rig_keeps_its_geometry_and_its_colours(tmp_path, device):
    """The rig's tube and triangle, textured plain green: each copy where the CPU float64
    skinning puts it (as tests/test_gltf_render.py checks untextured), in the texture's colour
    rather than the method tints."""
    green = np.zeros((2, 2, 4), np.uint8)
    green[..., 1] = 200
    green[..., 3] = 255
    path = tmp_path / "rig.glb"
    textured_rig(green).save(path)
    scene = load_gltf(path)
    assert scene.materials[0].texture is not None
    with (
        OffscreenTarget(device, W, H) as target,
        Renderer(device, target, clear_color=CLEAR, cull=False) as r,
    ):
        player = GltfScenePlayer(r, scene, methods="lbs,dqs")
        r.camera.yaw = r.camera.pitch = 0.0
        player.frame_camera()
        player.set_time(0.5)
        img = r.render_image()
        mask = covered(img)
        half = player.spacing / 2
        for method, dx, cols in (("lbs", -half, slice(0, W // 2)), ("dqs", half, slice(W // 2, W))):
            pts = []
            for nd in scene.nodes:
                if nd.skin is not None:
                    mesh = scene.skinned_mesh(nd.mesh)
                    mats = scene.skinning_matrices(nd.skin, 0, 0.5)
                    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
                    p = (
                        reference.skin_lbs(*args, mats)[0]
                        if method == "lbs"
                        else reference.skin_dqs(*args, dq.from_matrices(mats))[0]
                    )
                    pts.append(p)
            for ri in scene.rigid_meshes(0, 0.5):
                p = np.concatenate([pr.positions for pr in scene.meshes[ri.mesh].primitives])
                pts.append((np.c_[p, np.ones(len(p))] @ ri.matrix.T)[:, :3])
            want = imaging.projected_box(r.camera, np.vstack(pts) + np.array([dx, 0.0, 0.0]), W, H)
            part = np.zeros_like(mask)
            part[:, cols] = mask[:, cols]
            np.testing.assert_allclose(pixel_box(part), want, atol=2.0, err_msg=method)
            colours = img[..., :3][part].astype(int)
            assert (colours[:, 1] >= colours[:, 0]).all() and (colours[:, 1] >= colours[:, 2]).all()


def test_cli_renders_a_model_with_a_broken_image_saying_so_in_one_line(tmp_path, device, capsys):
    from vkdqs.app import cli

    doc = quad_document(image_uri="gone.png", material={"doubleSided": True})
    model = write(doc, tmp_path)
    out = tmp_path / "still.png"
    args = ["render", str(model), "--out", str(out), "--size", "64x48", "--samples", "1"]
    assert cli.main(args) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "vkdqs: warning: quad.gltf: images[0].uri: cannot read 'gone.png': No such file or "
        "directory; its materials draw untextured"
    ]
    assert out.is_file()


def test_materials_benchmark_smoke(tmp_path, device):
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_materials.py"
    out = tmp_path / "materials.json"
    args = ["--vertices", "2000", "--rounds", "1", "--frames", "2", "--out", str(out)]
    result = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "vs untextured" in result.stdout
    cases = [r["case"] for r in json.loads(out.read_text())["results"]]
    assert cases == ["untextured", "textured", "textured+colors", "mask+2-sided"]


def test_the_player_tints_only_uncoloured_models(tmp_path, renderer):
    """A model with COLOR_0 (and no material) keeps its colours in every copy; one without
    colours or materials gets the method tints."""
    from vkdqs.app.scenes.common import tint

    for inst in list(renderer.instances):
        renderer.remove_instance(inst)
    coloured = load_gltf(write(quad_document(colors=np.ones((4, 4), np.float32) * 0.5), tmp_path))
    player = GltfScenePlayer(renderer, coloured, methods="lbs,dqs")
    for inst in player.draws[0].instances.values():
        np.testing.assert_array_equal(inst.color, (1, 1, 1, 1))
    plain = quad_document()
    del plain.document["meshes"][0]["primitives"][0]["material"]
    del plain.document["materials"]
    player = GltfScenePlayer(renderer, load_gltf(write(plain, tmp_path, "plain.gltf")))
    for method, inst in player.draws[0].instances.items():
        np.testing.assert_array_equal(inst.color, tint(method, rigid=True))
    assert tint("lbs", rigid=True) != tint("dqs", rigid=True)
    assert tint("lbs", rigid=True) != tint("lbs")
