"""Baked files keep the model's look: TEXCOORD_0, COLOR_0, materials and textures in .glb, .npz
and USD, read back (the .glb by vkdqs's own loader, USD by pxr) and compared with the source."""

from __future__ import annotations

import json

import numpy as np
import pytest

import vkdqs
from vkdqs import baking
from vkdqs.gltf import load_gltf
from vkdqs.gltf.parts import scene_parts
from vkdqs.material import Sampler, uv_transform

from .gltf_fixtures_material import CHECKER, encode, textured_rig
from .test_bake import _check_frames

#: a 5x3 RGBA texture with varied alpha (the second material's)
STRIPES = (np.arange(5 * 3 * 4, dtype=np.uint8).reshape(5, 3, 4) * 17 + 3).astype(np.uint8)
TRANSFORM = {"offset": [0.25, -0.5], "rotation": 0.3, "scale": [2.0, 0.5]}


@pytest.fixture(scope="module")
def look(tmp_path_factory):
    """The rig, textured (material 0 on the tube), the tube with COLOR_0, the hand with an
    untextured BLEND material 2, the prop's strip with no material and its fan with material 1:
    another texture, clamp/mirror sampler, a texture transform, MASK, double-sided, named."""
    rig = textured_rig(CHECKER)
    b, doc = rig.builder, rig.builder.document
    tube, (strip, fan), (hand,) = (
        doc["meshes"][0]["primitives"][0],
        doc["meshes"][1]["primitives"],
        doc["meshes"][2]["primitives"],
    )
    n = doc["accessors"][tube["attributes"]["POSITION"]]["count"]
    colors = np.random.default_rng(3).random((n, 4)).astype(np.float32)
    tube["attributes"]["COLOR_0"] = b.add_accessor(colors, target="vertex")
    b.add("images", {"bufferView": b.add_buffer_view(encode(STRIPES)), "mimeType": "image/png"})
    b.add("samplers", {"magFilter": 9729, "minFilter": 9986, "wrapS": 33071, "wrapT": 33648})
    b.add("textures", {"source": 1, "sampler": 1})
    b.add(
        "materials",
        {
            "name": "fan",
            "pbrMetallicRoughness": {
                "baseColorFactor": [0.2, 0.4, 0.6, 0.8],
                "baseColorTexture": {
                    "index": 1,
                    "extensions": {"KHR_texture_transform": TRANSFORM},
                },
            },
            "alphaMode": "MASK",
            "alphaCutoff": 0.3,
            "doubleSided": True,
        },
    )
    b.add(
        "materials",
        {"pbrMetallicRoughness": {"baseColorFactor": [1.0, 0.5, 0.25, 0.5]}, "alphaMode": "BLEND"},
    )
    doc["extensionsUsed"] = ["KHR_texture_transform"]
    fan["material"], hand["material"] = 1, 2
    del strip["material"]
    path = tmp_path_factory.mktemp("look") / "look.glb"
    rig.save(path)
    return path


def _material_fields(m):
    return (m.name, m.base_color, m.sampler, m.alpha_mode, m.alpha_cutoff, m.double_sided)


def _same_material(got, want):
    assert _material_fields(got) == _material_fields(want)
    np.testing.assert_allclose(got.uv_transform, want.uv_transform, rtol=0, atol=1e-12)
    if want.texture is None:
        assert got.texture is None
    else:
        np.testing.assert_array_equal(got.texture, want.texture)  # PNG is lossless


def test_bake_keeps_uvs_colors_and_material_groups(look, device):
    scene = load_gltf(look)
    b = vkdqs.bake(scene, animation="linear", fps=10, device=device)
    parts = scene_parts(scene)
    assert [(p.kind, p.mesh) for p in parts] == [("skinned", 0), ("skinned", 2), ("rigid", 1)]
    np.testing.assert_array_equal(b.uvs, np.concatenate([p.geometry.uvs for p in parts]))
    tube_colors = scene.meshes[0].primitives[0].colors
    np.testing.assert_array_equal(b.colors[: len(tube_colors)], tube_colors)
    np.testing.assert_array_equal(b.colors[len(tube_colors) :], 1.0)  # white elsewhere
    # materials in order of first use: source 0 (tube), 2 (hand), 1 (the prop's fan)
    assert all(m is scene.materials[i] for i, m in zip((0, 2, 1), b.materials, strict=True))
    # one group per primitive, in part order (tube, hand, then the prop's strip and fan)
    prims = [scene.meshes[m].primitives for m in (0, 2, 1)]
    (tube,), (hand,), (strip, fan) = prims
    counts = [(p.indices.size // 3, p.vertex_count) for p in (tube, hand, strip, fan)]
    assert counts == [(56, 32), (1, 3), (2, 4), (2, 4)]
    assert b.groups == (
        baking.BakeGroup(0, 56, 0, 32, 0),
        baking.BakeGroup(56, 1, 32, 3, 1),
        baking.BakeGroup(57, 2, 35, 4, None),
        baking.BakeGroup(59, 2, 39, 4, 2),
    )
    for g in b.groups:  # each group's faces use only its vertices
        f = b.faces[g.first_face : g.first_face + g.face_count]
        assert f.min() >= g.first_vertex and f.max() < g.first_vertex + g.vertex_count


def test_glb_keeps_the_look(look, device, tmp_path):
    scene = load_gltf(look)
    b = vkdqs.bake(scene, animation="linear", fps=10, device=device)
    out = b.save(tmp_path / "look.glb")
    again = load_gltf(out)
    doc = json.loads(out.read_bytes()[20 : 20 + int.from_bytes(out.read_bytes()[12:16], "little")])
    assert doc["extensionsUsed"] == ["KHR_texture_transform"]
    assert [i["mimeType"] for i in doc["images"]] == ["image/png"] * 2
    prims = again.meshes[0].primitives
    assert len(prims) == len(b.groups) == 4
    frames = np.empty_like(b.positions)
    for g, p in zip(b.groups, prims, strict=True):  # over groups: each one primitive
        vs = slice(g.first_vertex, g.first_vertex + g.vertex_count)
        np.testing.assert_array_equal(p.positions, b.rest_positions[vs])
        np.testing.assert_array_equal(
            p.indices.reshape(-1, 3) + g.first_vertex,
            b.faces[g.first_face : g.first_face + g.face_count],
        )
        np.testing.assert_array_equal(p.uvs, b.uvs[vs])
        np.testing.assert_array_equal(p.colors, b.colors[vs])
        if g.material is None:
            assert p.material is None
        else:
            _same_material(again.materials[p.material], b.materials[g.material])
        assert p.morph_positions.shape == (len(b.times), g.vertex_count, 3)
        frames[:, vs] = p.positions + p.morph_positions
        np.testing.assert_allclose(p.normals + p.morph_normals, b.normals[:, vs], atol=1e-6)
    # the baked frames from the file, against the float64 reference
    _check_frames(scene, 0, b.times, frames, b.normals, "dqs")
    # the texture transform came back as written: the source's offset, rotation and scale
    fan = again.materials[prims[3].material]
    np.testing.assert_allclose(fan.uv_transform, uv_transform(**TRANSFORM), rtol=0, atol=1e-12)
    assert fan.sampler == Sampler("linear", "nearest", "linear", "clamp", "mirror")
    # streamed to the file: the same bytes
    streamed = tmp_path / "streamed.glb"
    vkdqs.bake_to_file(scene, streamed, animation="linear", fps=10, device=device)
    assert streamed.read_bytes() == out.read_bytes()


def test_npz_keeps_the_look(look, device, tmp_path):
    scene = load_gltf(look)
    out = tmp_path / "look.npz"
    vkdqs.bake_to_file(scene, out, animation="linear", fps=10, device=device)
    b = vkdqs.bake(scene, animation="linear", fps=10, device=device)
    with np.load(out) as z:
        assert set(z.files) == {
            *(
                "times",
                "positions",
                "normals",
                "boxes",
                "faces",
                "groups",
                "materials",
                "uvs",
                "colors",
            ),
            *("texture_0", "texture_1"),
        }
        np.testing.assert_array_equal(z["uvs"], b.uvs)
        np.testing.assert_array_equal(z["colors"], b.colors)
        np.testing.assert_array_equal(
            z["groups"], [[*g[:4], -1 if g.material is None else g.material] for g in b.groups]
        )
        np.testing.assert_array_equal(z["texture_0"], CHECKER)
        np.testing.assert_array_equal(z["texture_1"], STRIPES)
        mats = json.loads(str(z["materials"]))
        _check_frames(scene, 0, z["times"], z["positions"], z["normals"], "dqs")
    assert [m["texture"] for m in mats] == [0, None, 1]
    assert [m["texture_shape"] for m in mats] == [[2, 2, 4], None, [5, 3, 4]]
    for got, want in zip(mats, b.materials, strict=True):
        assert got["name"] == want.name
        assert tuple(got["base_color"]) == want.base_color
        assert (got["alpha_mode"], got["alpha_cutoff"], got["double_sided"]) == (
            want.alpha_mode,
            want.alpha_cutoff,
            want.double_sided,
        )
        assert Sampler(**got["sampler"]) == want.sampler
        np.testing.assert_array_equal(got["uv_transform"], want.uv_transform)
    assert mats[2]["alpha_mode"] == "MASK" and mats[2]["double_sided"] is True


@pytest.mark.parametrize("suffix", [".usda", ".usdc"])
def test_usd_keeps_the_look(look, device, tmp_path, suffix):
    from PIL import Image
    from pxr import Usd, UsdGeom, UsdShade

    scene = load_gltf(look)
    out = tmp_path / f"look{suffix}"
    vkdqs.bake_to_file(scene, out, animation="linear", fps=10, device=device)
    b = vkdqs.bake(scene, animation="linear", fps=10, device=device)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [out.name, "look_texture0.png", "look_texture1.png"]
    )
    stage = Usd.Stage.Open(str(out))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/Bake/Mesh"))
    primvars = UsdGeom.PrimvarsAPI(mesh)
    st = primvars.GetPrimvar("st")
    assert st.GetInterpolation() == "vertex"
    assert str(st.GetTypeName()) == "texCoord2f[]"
    st = np.array(st.Get())
    # st = (u, 1 - v) of each vertex's uvs after its material's texture transform
    for g in b.groups:
        vs = slice(g.first_vertex, g.first_vertex + g.vertex_count)
        m = b.materials[g.material] if g.material is not None else None
        t = m.uv_transform if m is not None and m.texture is not None else np.eye(3)
        uv = b.uvs[vs].astype(np.float64) @ t[:2, :2].T + t[:2, 2]
        np.testing.assert_allclose(st[vs], np.c_[uv[:, 0], 1.0 - uv[:, 1]], rtol=0, atol=1e-6)
    color = primvars.GetPrimvar("displayColor")
    assert color.GetInterpolation() == "vertex"
    factor = np.ones((len(b.uvs), 3))
    for g in b.groups:
        if g.material is not None:
            factor[g.first_vertex : g.first_vertex + g.vertex_count] = b.materials[
                g.material
            ].base_color[:3]
    np.testing.assert_allclose(np.array(color.Get()), b.colors[:, :3] * factor, atol=1e-6)
    assert mesh.GetDoubleSidedAttr().Get() is True  # the fan's material is double-sided
    # one materialBind subset per material, each bound to its UsdPreviewSurface
    subsets = UsdShade.MaterialBindingAPI(mesh).GetMaterialBindSubsets()
    assert len(subsets) == 3
    for subset in subsets:
        k = int(subset.GetPrim().GetName().removeprefix("Material"))
        want = np.concatenate(
            [
                np.arange(g.first_face, g.first_face + g.face_count)
                for g in b.groups
                if g.material == k
            ]
        )
        np.testing.assert_array_equal(np.array(subset.GetIndicesAttr().Get()), want)
        bound, _ = UsdShade.MaterialBindingAPI(subset.GetPrim()).ComputeBoundMaterial()
        assert bound.GetPath() == f"/Bake/Materials/Material{k}"
        m = b.materials[k]
        assert bound.GetPrim().GetDisplayName() == m.name
        surface = bound.ComputeSurfaceSource()[0]
        assert surface.GetIdAttr().Get() == "UsdPreviewSurface"
        threshold = surface.GetInput("opacityThreshold")
        assert (threshold.Get() if threshold else None) == (
            pytest.approx(m.alpha_cutoff) if m.alpha_mode == "MASK" else None
        )
        opacity = surface.GetInput("opacity")  # glTF's OPAQUE ignores alpha
        assert bool(opacity) == (m.alpha_mode != "OPAQUE")
        diffuse = surface.GetInput("diffuseColor")
        source = UsdShade.Shader(diffuse.GetConnectedSources()[0][0].source.GetPrim())
        if m.texture is None:  # the model has COLOR_0: displayColor (COLOR_0 x factor)
            assert source.GetIdAttr().Get() == "UsdPrimvarReader_float3"
            assert source.GetInput("varname").Get() == "displayColor"
            assert surface.GetInput("opacity").Get() == pytest.approx(m.base_color[3])
            continue
        tex = source
        assert tex.GetIdAttr().Get() == "UsdUVTexture"
        asset = tex.GetInput("file").Get()
        assert asset.path.startswith("./look_texture")
        np.testing.assert_allclose(tex.GetInput("scale").Get(), m.base_color, rtol=1e-6)
        assert (tex.GetInput("wrapS").Get(), tex.GetInput("wrapT").Get()) == (
            m.sampler.wrap_s,
            m.sampler.wrap_t,
        )
        if opacity:
            assert opacity.GetConnectedSources()[0][0].sourceName == "a"
        with Image.open(asset.resolvedPath) as img:
            np.testing.assert_array_equal(np.asarray(img.convert("RGBA")), m.texture)


def test_a_primitive_without_triangles_joins_its_neighbour(device, tmp_path):
    """The prop's strip cut to two indices (no triangle) with a material of its own: its
    vertices join the group around it, its material is not written, and no empty primitive."""
    rig = textured_rig(CHECKER)
    b, doc = rig.builder, rig.builder.document
    strip = doc["meshes"][1]["primitives"][0]
    strip["indices"] = b.add_accessor(np.array([0, 1], np.uint8), target="index")
    strip["material"] = b.add("materials", {"pbrMetallicRoughness": {}, "name": "unused"})
    rig.save(tmp_path / "cut.glb")
    scene = load_gltf(tmp_path / "cut.glb")
    bake = vkdqs.bake(scene, animation="linear", fps=5, device=device)
    assert bake.groups == (baking.BakeGroup(0, 59, 0, 43, 0),)
    assert len(bake.materials) == 1 and bake.materials[0] is scene.materials[0]
    again = load_gltf(bake.save(tmp_path / "cut_bake.glb"))
    (prim,) = again.meshes[0].primitives
    np.testing.assert_array_equal(prim.positions, bake.rest_positions)
    np.testing.assert_array_equal(prim.uvs, bake.uvs)
    assert [m.name for m in again.materials] == [""]
    _same_material(again.materials[0], scene.materials[0])
    _check_frames(scene, 0, bake.times, prim.positions + prim.morph_positions, bake.normals, "dqs")


def test_save_checks_an_edited_bake(look, device, tmp_path):
    import dataclasses

    b = vkdqs.bake(load_gltf(look), animation="rest", device=device)
    g = b.groups
    for bad, match in (
        ({"groups": g[1:]}, "cover the faces and vertices in order"),
        ({"groups": g[:-1]}, "cover 59 faces and 39 vertices of 61 and 43"),
        ({"groups": (*g[:-1], g[-1]._replace(material=7))}, "names a material of 3"),
        ({"uvs": b.uvs[:5]}, r"Bake.uvs must be \(43, 2\)"),
    ):
        with pytest.raises(vkdqs.InputError, match=match):
            dataclasses.replace(b, **bad).save(tmp_path / "x.glb")
    assert list(tmp_path.iterdir()) == []


def test_usd_colours_by_factor_alone(device, tmp_path):
    """No TEXCOORD_0, no COLOR_0: displayColor is each face's base colour factor (uniform), and
    each UsdPreviewSurface's diffuseColor the factor itself; the untextured bake writes no PNG."""
    from pxr import Usd, UsdGeom, UsdShade

    from .gltf_fixtures import make_rig

    rig = make_rig(scaled=False)
    doc = rig.builder.document
    red = rig.builder.add("materials", {"pbrMetallicRoughness": {"baseColorFactor": [1, 0, 0, 1]}})
    blue = rig.builder.add("materials", {"pbrMetallicRoughness": {"baseColorFactor": [0, 0, 1, 1]}})
    doc["meshes"][0]["primitives"][0]["material"] = red
    doc["meshes"][1]["primitives"][1]["material"] = blue
    rig.save(tmp_path / "plain.glb")
    scene = load_gltf(tmp_path / "plain.glb")
    b = vkdqs.bake(scene, animation="rest", device=device)
    assert b.uvs is None and b.colors is None
    out = tmp_path / "plain.usda"
    b.save(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.glb", "plain.usda"]
    stage = Usd.Stage.Open(str(out))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/Bake/Mesh"))
    primvars = UsdGeom.PrimvarsAPI(mesh)
    assert not primvars.GetPrimvar("st")
    color = primvars.GetPrimvar("displayColor")
    assert color.GetInterpolation() == "uniform"
    want = np.ones((len(b.faces), 3))
    for g in b.groups:
        if g.material is not None:
            want[g.first_face : g.first_face + g.face_count] = b.materials[g.material].base_color[
                :3
            ]
    np.testing.assert_array_equal(np.array(color.Get()), want)
    assert {tuple(c) for c in want} == {(1, 0, 0), (1, 1, 1), (0, 0, 1)}
    subsets = UsdShade.MaterialBindingAPI(mesh).GetMaterialBindSubsets()
    assert len(subsets) == 2  # red and blue; the faces of glTF's default material stay unbound
    for subset in subsets:
        bound, _ = UsdShade.MaterialBindingAPI(subset.GetPrim()).ComputeBoundMaterial()
        k = int(bound.GetPrim().GetName().removeprefix("Material"))
        diffuse = bound.ComputeSurfaceSource()[0].GetInput("diffuseColor").Get()
        np.testing.assert_array_equal(diffuse, b.materials[k].base_color[:3])
