"""glTF materials, textures, samplers, images and the surface attributes, loaded (CPU only).

Every value is compared with what the fixture wrote (tests/gltf_fixtures_material.py): texture
pixels with the array Pillow encoded (exactly for PNG and lossless WebP, within JPEG's error),
UVs and colours with the arrays stored (normalized integers decoded by the spec's formula here),
the KHR_texture_transform matrix with the extension's own T * R * S written out here.
"""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest

import vkdqs
from vkdqs.errors import InputError
from vkdqs.gltf import GltfError, GltfWarning, load_gltf
from vkdqs.material import Material, Sampler, linear_to_srgb, srgb_to_linear

from .gltf_fixtures import BYTE, SHORT, UNSIGNED_BYTE, UNSIGNED_SHORT
from .gltf_fixtures_material import CHECKER, QUAD_UVS, encode, quad_document, write

RNG = np.random.default_rng(3)
PICTURE = RNG.integers(0, 256, size=(5, 7, 4), dtype=np.uint8)  # odd sides, random alpha


def load(builder, folder, name="quad.gltf", **kwargs):
    return load_gltf(write(builder, folder, name), **kwargs)


# -- images ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["PNG", "WEBP"])
def test_lossless_images_decode_exactly(tmp_path, fmt):
    mime = {"PNG": "image/png", "WEBP": "image/webp"}[fmt]
    scene = load(quad_document(image=encode(PICTURE, fmt), mime=mime), tmp_path)
    np.testing.assert_array_equal(scene.materials[0].texture, PICTURE)


def test_jpeg_decodes_within_its_error(tmp_path):
    smooth = np.zeros((16, 16, 4), np.uint8)
    smooth[..., 0] = np.arange(16)[:, None] * 8
    smooth[..., 1] = 120
    smooth[..., 2] = np.arange(16)[None, :] * 4
    smooth[..., 3] = 255
    scene = load(quad_document(image=encode(smooth, "JPEG"), mime="image/jpeg"), tmp_path)
    tex = scene.materials[0].texture
    assert tex.shape == (16, 16, 4) and tex.dtype == np.uint8
    assert (tex[..., 3] == 255).all()
    assert np.abs(tex[..., :3].astype(int) - smooth[..., :3]).max() <= 8


def test_image_from_a_file_and_a_data_uri(tmp_path):
    import base64

    (tmp_path / "tex").mkdir()
    (tmp_path / "tex" / "pic 1.png").write_bytes(encode(PICTURE))
    scene = load(quad_document(image_uri="tex/pic%201.png"), tmp_path)
    np.testing.assert_array_equal(scene.materials[0].texture, PICTURE)
    uri = "data:image/png;base64," + base64.b64encode(encode(PICTURE)).decode()
    scene = load(quad_document(image_uri=uri), tmp_path, "data.gltf")
    np.testing.assert_array_equal(scene.materials[0].texture, PICTURE)


def test_ext_texture_webp_source_comes_first(tmp_path):
    b = quad_document(image=encode(CHECKER))  # images[0]: the PNG fallback
    other = PICTURE.copy()
    b.add(
        "images", {"bufferView": b.add_buffer_view(encode(other, "WEBP")), "mimeType": "image/webp"}
    )
    b.document["textures"][0]["extensions"] = {"EXT_texture_webp": {"source": 1}}
    b.document["extensionsUsed"] = ["EXT_texture_webp"]
    np.testing.assert_array_equal(load(b, tmp_path).materials[0].texture, other)


def _warned_untextured(builder, folder, match, **kwargs):
    with pytest.warns(GltfWarning, match=match):
        scene = load(builder, folder, **kwargs)
    assert scene.materials[0].texture is None
    return scene


def test_broken_missing_and_refused_images_warn_and_draw_untextured(tmp_path):
    factor = {"pbrMetallicRoughness": {"baseColorFactor": [0.5, 0.25, 1.0, 1.0]}}
    bad = quad_document(image=b"\x89PNG\r\n\x1a\n garbage", material=factor)
    bad.document["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"] = {"index": 0}
    scene = _warned_untextured(bad, tmp_path, r"^quad\.gltf: images\[0\]: not a PNG, JPEG or WebP")
    assert scene.materials[0].base_color == (0.5, 0.25, 1.0, 1.0)  # the factor stays
    _warned_untextured(
        quad_document(image_uri="missing.png"), tmp_path, r"images\[0\]\.uri: cannot read"
    )
    _warned_untextured(
        quad_document(image_uri="../outside.png"), tmp_path, r"images\[0\]\.uri: .*'\.\.' segment"
    )
    truncated = encode(PICTURE)[:-30]
    _warned_untextured(quad_document(image=truncated), tmp_path, r"images\[0\]")
    _warned_untextured(
        quad_document(image=encode(PICTURE), mime="image/jpeg"),
        tmp_path,
        r"images\[0\]: mimeType 'image/jpeg' but the data is PNG",
    )


def _png_header(width: int, height: int) -> bytes:
    """A PNG claiming ``width`` x ``height`` RGBA in its IHDR, with a few bytes of pixel data."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def test_decompression_bombs_are_refused_before_decoding(tmp_path):
    # 8000 x 8000 claims 256 MB of RGBA in a 33-byte header: charged first, over max_bytes
    bomb = quad_document(image=_png_header(8000, 8000))
    with pytest.raises(
        GltfError, match=r"images\[0\]: decoding a 8000x8000 image needs .*max_bytes"
    ):
        load(bomb, tmp_path, max_bytes=64 * 2**20)
    # past what vkdqs decodes at all: a warning, nothing decoded
    _warned_untextured(quad_document(image=_png_header(20000, 5)), tmp_path, r"20000x5 pixels")


def test_large_images_shrink_to_the_texture_limit(tmp_path, monkeypatch):
    monkeypatch.setattr("vkdqs.gltf.images.MAX_TEXTURE_SIDE", 4)
    tex = load(quad_document(image=encode(PICTURE)), tmp_path).materials[0].texture
    assert max(tex.shape[:2]) == 4


def test_only_base_colour_images_are_decoded(tmp_path):
    b = quad_document(image=encode(PICTURE))
    b.add("images", {"uri": "never-read.png"})  # missing, but no material uses it
    b.add("textures", {"source": 1})
    b.document["materials"][0]["normalTexture"] = {"index": 1}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = load(b, tmp_path)
    np.testing.assert_array_equal(scene.materials[0].texture, PICTURE)


# -- samplers, materials ---------------------------------------------------------------------

MIN_FILTERS = {
    9728: ("nearest", None),
    9729: ("linear", None),
    9984: ("nearest", "nearest"),
    9985: ("linear", "nearest"),
    9986: ("nearest", "linear"),
    9987: ("linear", "linear"),
}


@pytest.mark.parametrize("min_filter", sorted(MIN_FILTERS))
def test_sampler_modes(tmp_path, min_filter):
    sampler = {"magFilter": 9728, "minFilter": min_filter, "wrapS": 33071, "wrapT": 33648}
    s = load(quad_document(image=encode(CHECKER), sampler=sampler), tmp_path).materials[0].sampler
    assert s == Sampler(
        mag_filter="nearest",
        min_filter=MIN_FILTERS[min_filter][0],
        mipmap=MIN_FILTERS[min_filter][1],
        wrap_s="clamp",
        wrap_t="mirror",
    )


def test_sampler_defaults(tmp_path):
    s = load(quad_document(image=encode(CHECKER), sampler={}), tmp_path).materials[0].sampler
    assert s == Sampler("linear", "linear", "linear", "repeat", "repeat")


def test_material_values(tmp_path):
    mat = {
        "name": "cut",
        "alphaMode": "MASK",
        "alphaCutoff": 0.25,
        "doubleSided": True,
        "pbrMetallicRoughness": {"baseColorFactor": [0.1, 0.2, 0.3, 0.4]},
    }
    m = load(quad_document(material=mat), tmp_path).materials[0]
    assert (m.name, m.alpha_mode, m.alpha_cutoff, m.double_sided) == ("cut", "MASK", 0.25, True)
    assert m.base_color == pytest.approx((0.1, 0.2, 0.3, 0.4))
    assert m.texture is None and m.cutoff == 0.25 and m.has_own_color
    d = load(quad_document(), tmp_path, "plain.gltf").materials[0]
    assert (d.alpha_mode, d.alpha_cutoff, d.double_sided, d.cutoff) == ("OPAQUE", 0.5, False, -1)
    assert not d.has_own_color
    blend = load(quad_document(material={"alphaMode": "BLEND"}), tmp_path, "b.gltf")
    assert blend.materials[0].cutoff == 0.5  # drawn as MASK at 0.5


def test_texture_transform_matrix(tmp_path):
    offset, rotation, scale = (0.25, -0.5), 0.3, (2.0, 0.5)
    info = {
        "extensions": {
            "KHR_texture_transform": {"offset": offset, "rotation": rotation, "scale": scale}
        }
    }
    m = load(quad_document(image=encode(CHECKER), texture_info=info), tmp_path).materials[0]
    # the extension's definition, written out
    c, s = np.cos(rotation), np.sin(rotation)
    translation = np.array([[1, 0, offset[0]], [0, 1, offset[1]], [0, 0, 1]])
    rot = np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]])
    scl = np.diag([scale[0], scale[1], 1.0])
    np.testing.assert_allclose(m.uv_transform, translation @ rot @ scl, atol=1e-12)
    uv = np.array([0.5, 0.5, 1.0])
    np.testing.assert_allclose(
        m.uv_transform @ uv,
        [offset[0] + c * 1.0 + s * 0.25, offset[1] - s * 1.0 + c * 0.25, 1.0],
        atol=1e-12,
    )


def test_a_second_uv_set_warns_and_draws_untextured(tmp_path):
    _warned_untextured(
        quad_document(image=encode(CHECKER), texture_info={"texCoord": 1}),
        tmp_path,
        r"baseColorTexture: uses TEXCOORD_1; vkdqs reads TEXCOORD_0 only",
    )
    info = {"extensions": {"KHR_texture_transform": {"texCoord": 1}}}
    _warned_untextured(
        quad_document(image=encode(CHECKER), texture_info=info), tmp_path, "TEXCOORD_1"
    )


BAD_MATERIALS = {
    "factor-range": (
        {"pbrMetallicRoughness": {"baseColorFactor": [1.5, 0, 0, 1]}},
        r"baseColorFactor: .* outside \[0, 1\]",
    ),
    "factor-length": (
        {"pbrMetallicRoughness": {"baseColorFactor": [1, 1, 1]}},
        r"baseColorFactor: must be an array of 4 numbers",
    ),
    "alpha-mode": ({"alphaMode": "ADD"}, r"alphaMode: 'ADD' is not OPAQUE"),
    "cutoff": ({"alphaMode": "MASK", "alphaCutoff": -1}, r"alphaCutoff: -1.0 must be >= 0"),
    "cutoff-type": ({"alphaMode": "MASK", "alphaCutoff": "half"}, r"alphaCutoff: must be a number"),
    "double-sided": ({"doubleSided": 1}, r"doubleSided: must be a boolean"),
}


@pytest.mark.parametrize("case", sorted(BAD_MATERIALS))
def test_malformed_materials_name_the_json_path(tmp_path, case):
    material, match = BAD_MATERIALS[case]
    with pytest.raises(GltfError, match=r"^quad\.gltf: materials\[0\]\.(.*\.)?" + match):
        load(quad_document(material=material), tmp_path)


#: A base-colour texture a material cannot follow (a texture that is not there, a texCoord or
#: transform vkdqs cannot read): the material draws untextured, with its factor, and warns.
UNTEXTURED = {
    "texture-index": ({"index": 3}, r"baseColorTexture\.index: 3 is not an index into textures"),
    "tex-coord": ({"texCoord": -1}, r"baseColorTexture\.texCoord: must be >= 0, got -1"),
    "transform-offset": (
        {"extensions": {"KHR_texture_transform": {"offset": [0.5]}}},
        r"KHR_texture_transform\.offset: must be an array of 2 numbers",
    ),
    "transform-rotation": (
        {"extensions": {"KHR_texture_transform": {"rotation": "quarter"}}},
        r"KHR_texture_transform\.rotation: must be a number",
    ),
    "transform-huge": (
        {"extensions": {"KHR_texture_transform": {"scale": [1e300, 1.0]}}},
        r"KHR_texture_transform: the transform is not finite",
    ),
}


@pytest.mark.parametrize("case", sorted(UNTEXTURED))
def test_a_texture_reference_vkdqs_cannot_follow_draws_untextured(tmp_path, case):
    info, match = UNTEXTURED[case]
    factor = {"pbrMetallicRoughness": {"baseColorFactor": [0.5, 0.25, 1.0, 1.0]}}
    b = quad_document(image=encode(CHECKER), material=factor)
    b.document["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"] = {"index": 0, **info}
    scene = _warned_untextured(
        b,
        tmp_path,
        r"^quad\.gltf: materials\[0\]\.pbrMetallicRoughness\.(.*\.)?"
        + match
        + r".*; this material draws untextured",
    )
    assert scene.materials[0].base_color == (0.5, 0.25, 1.0, 1.0)
    np.testing.assert_array_equal(scene.materials[0].uv_transform, np.eye(3))


def test_an_alpha_cutoff_only_mask_reads_is_a_warning(tmp_path):
    for mode, cutoff, match in [
        ("OPAQUE", -1, r"alphaCutoff: -1\.0 must be >= 0; ignored \(alphaMode OPAQUE\)"),
        ("BLEND", "half", r"alphaCutoff: must be a number, got 'half'; ignored \(alphaMode BLEND"),
    ]:
        b = quad_document(material={"alphaMode": mode, "alphaCutoff": cutoff})
        with pytest.warns(GltfWarning, match=rf"^{mode}\.gltf: materials\[0\]\." + match):
            material = load(b, tmp_path, f"{mode}.gltf").materials[0]
        assert material.alpha_mode == mode and material.alpha_cutoff == 0.5


#: Filter and wrap values glTF does not define: the default is used (as three.js does), with a
#: warning; the sampler's other fields are read.
ODD_SAMPLERS = {
    "mag": (
        {"magFilter": 9984, "wrapS": 33071},
        r"samplers\[0\]\.magFilter: 9984 is not 9728 \(NEAREST\) or 9729 \(LINEAR\); LINEAR is",
        Sampler(wrap_s="clamp"),
    ),
    "min": (
        {"minFilter": 1, "magFilter": 9728},
        r"samplers\[0\]\.minFilter: 1 is not a glTF minification filter; LINEAR_MIPMAP_LINEAR is",
        Sampler(mag_filter="nearest"),
    ),
    "wrap": (
        {"wrapS": 7, "wrapT": 33648},
        r"samplers\[0\]\.wrapS: 7 is not 33071, 33648 or 10497; REPEAT is used",
        Sampler(wrap_t="mirror"),
    ),
    "wrap-type": (
        {"wrapT": "clamp", "minFilter": 9728},
        r"samplers\[0\]\.wrapT: 'clamp' is not 33071, 33648 or 10497; REPEAT is used",
        Sampler(min_filter="nearest", mipmap=None),
    ),
}


@pytest.mark.parametrize("case", sorted(ODD_SAMPLERS))
def test_odd_sampler_values_warn_and_use_the_default(tmp_path, case):
    sampler, match, want = ODD_SAMPLERS[case]
    with pytest.warns(GltfWarning, match=r"^quad\.gltf: " + match) as caught:
        material = load(quad_document(image=encode(CHECKER), sampler=sampler), tmp_path).materials[
            0
        ]
    assert len(caught) == 1
    np.testing.assert_array_equal(material.texture, CHECKER)
    assert material.sampler == want


def test_malformed_images_draw_untextured(tmp_path):
    # without a mimeType the bytes say what the image is
    b = quad_document(image=encode(CHECKER))
    del b.document["images"][0]["mimeType"]
    with pytest.warns(GltfWarning, match=r"images\[0\]: an image in a bufferView needs a mimeType"):
        scene = load(b, tmp_path)
    np.testing.assert_array_equal(scene.materials[0].texture, CHECKER)
    for i, (image, match) in enumerate(
        [
            ({"uri": "a.png", "bufferView": 0}, r"images\[0\]: must have exactly one of uri and "),
            (
                {"mimeType": "image/png"},
                r"images\[0\]: must have exactly one of uri and bufferView",
            ),
            ({"uri": 5}, r"images\[0\]\.uri: must be a string, got 5"),
            (
                {"bufferView": 99, "mimeType": "image/png"},
                r"images\[0\]\.bufferView: 99 is not an index",
            ),
        ]
    ):
        b.document["images"][0] = image
        _warned_untextured(b, tmp_path, rf"^{i}\.gltf: " + match, name=f"{i}.gltf")


# -- surface attributes ----------------------------------------------------------------------


def test_texcoords_and_colours(tmp_path):
    colors = RNG.uniform(0, 1, size=(4, 4)).astype(np.float32)
    scene = load(quad_document(colors=colors), tmp_path)
    prim = scene.meshes[0].primitives[0]
    np.testing.assert_array_equal(prim.uvs, QUAD_UVS)
    np.testing.assert_array_equal(prim.colors, colors)
    assert prim.material == 0 and prim.tangents is None
    rgb = colors[:, :3]
    scene = load(quad_document(colors=rgb), tmp_path, "rgb.gltf")
    np.testing.assert_array_equal(scene.meshes[0].primitives[0].colors, np.c_[rgb, np.ones(4)])


@pytest.mark.parametrize("component", [UNSIGNED_BYTE, UNSIGNED_SHORT])
def test_normalized_texcoords_and_colours(tmp_path, component):
    top = 255 if component == UNSIGNED_BYTE else 65535
    dtype = np.uint8 if component == UNSIGNED_BYTE else np.uint16
    stored_uv = (QUAD_UVS * top).astype(dtype)
    stored_c = RNG.integers(0, top + 1, size=(4, 3)).astype(dtype)
    b = quad_document(
        uvs=stored_uv, uv_type=component, uv_normalized=True, colors=stored_c, color_type=component
    )
    prim = load(b, tmp_path).meshes[0].primitives[0]
    np.testing.assert_allclose(prim.uvs, stored_uv / top, rtol=1e-6)
    np.testing.assert_allclose(prim.colors[:, :3], stored_c / top, rtol=1e-6)


QUANTIZED_UV = [(BYTE, True), (SHORT, True), (BYTE, False), (SHORT, False), (UNSIGNED_SHORT, False)]


@pytest.mark.parametrize(("component", "normalized"), QUANTIZED_UV)
def test_quantized_texcoords_need_the_extension(tmp_path, component, normalized):
    dtype = {BYTE: np.int8, SHORT: np.int16, UNSIGNED_SHORT: np.uint16}[component]
    top = np.iinfo(dtype).max
    stored = np.array([[0, top], [top, top], [top, 0], [0, 0]], dtype)
    if component != UNSIGNED_SHORT:
        stored[0, 0] = -top  # signed: a negative coordinate too
    b = quad_document(uvs=stored, uv_type=component, uv_normalized=normalized)
    with pytest.raises(GltfError, match=r"TEXCOORD_0: accessors\[1\] has .* KHR_mesh_quantization"):
        load(b, tmp_path)
    b.document["extensionsUsed"] = ["KHR_mesh_quantization"]
    prim = load(b, tmp_path, "q.gltf").meshes[0].primitives[0]
    want = np.maximum(stored / top, -1.0) if normalized else stored.astype(np.float64)
    np.testing.assert_allclose(prim.uvs, want, rtol=1e-6)


def test_tangents_are_read_and_checked(tmp_path):
    b = quad_document()
    t = np.tile(np.array([[1, 0, 0, -1]], np.float32), (4, 1))
    prim_json = b.document["meshes"][0]["primitives"][0]
    prim_json["attributes"]["TANGENT"] = b.add_accessor(t, target="vertex")
    np.testing.assert_array_equal(load(b, tmp_path).meshes[0].primitives[0].tangents, t)
    bad = t.copy()
    bad[2, 3] = 0.0
    prim_json["attributes"]["TANGENT"] = b.add_accessor(bad, target="vertex")
    # vkdqs draws no normal maps: a tangent it cannot use is left out, with a warning
    with pytest.warns(
        GltfWarning,
        match=r"TANGENT: vertex 2 has tangent w = 0.0; glTF needs \+1 or -1; TANGENT is not drawn",
    ):
        prim = load(b, tmp_path, "bad.gltf").meshes[0].primitives[0]
    assert prim.tangents is None
    np.testing.assert_array_equal(prim.uvs, QUAD_UVS)
    prim_json["attributes"]["TANGENT"] = prim_json["attributes"]["POSITION"]
    with pytest.warns(GltfWarning, match=r"TANGENT: accessors\[0\] has type VEC3; need VEC4"):
        assert load(b, tmp_path, "vec3.gltf").meshes[0].primitives[0].tangents is None
    # its bytes are still checked, as an unused accessor's are
    prim_json["attributes"]["TANGENT"] = k = b.add_accessor(t, target="vertex")
    b.document["accessors"][k]["count"] = 99
    with pytest.raises(GltfError, match=rf"accessors\[{k}\]\.count: 99 elements of 16 bytes"):
        load(b, tmp_path, "outside.gltf")


BAD_ATTRIBUTES = {
    "uv-vec3": ("TEXCOORD_0", np.zeros((4, 3), np.float32), r"TEXCOORD_0: .* type VEC3; need VEC2"),
    "color-range": (
        "COLOR_0",
        np.full((4, 4), 2.0, np.float32),
        r"COLOR_0: vertex 0 has colour component 2.0, not in \[0, 1\]",
    ),
    "color-count": ("COLOR_0", np.ones((3, 4), np.float32), r"COLOR_0: has 3 elements"),
}


@pytest.mark.parametrize("case", sorted(BAD_ATTRIBUTES))
def test_malformed_surface_attributes(tmp_path, case):
    key, data, match = BAD_ATTRIBUTES[case]
    b = quad_document()
    b.document["meshes"][0]["primitives"][0]["attributes"][key] = b.add_accessor(data)
    with pytest.raises(GltfError, match=match):
        load(b, tmp_path)


def test_skinned_mesh_and_groups_carry_the_surface(tmp_path):
    colors = RNG.uniform(0, 1, size=(4, 4)).astype(np.float32)
    b = quad_document(colors=colors)
    prim = b.document["meshes"][0]["primitives"][0]
    # a second primitive with its own material, no UVs and no colours
    second = {
        "attributes": {"POSITION": prim["attributes"]["POSITION"]},
        "indices": prim["indices"],
    }
    second["material"] = b.add(
        "materials", {"pbrMetallicRoughness": {"baseColorFactor": [1, 0, 0, 1]}}
    )
    b.document["meshes"][0]["primitives"].append(second)
    scene = load(b, tmp_path)
    from vkdqs.gltf.parts import scene_parts

    mesh = scene_parts(scene)[0].geometry  # the rigid quad, both primitives merged
    np.testing.assert_array_equal(mesh.uvs, np.r_[QUAD_UVS, np.zeros((4, 2))])
    np.testing.assert_array_equal(mesh.colors, np.r_[colors, np.ones((4, 4))])
    groups = scene.mesh_groups(0)
    assert [(g[0], g[1]) for g in groups] == [(0, 6), (6, 6)]
    assert groups[0][2] is scene.materials[0] and groups[1][2].base_color == (1, 0, 0, 1)


# -- the numpy API -----------------------------------------------------------------------------


def test_material_checks_its_arguments():
    assert vkdqs.Material is Material and vkdqs.Sampler is Sampler
    assert Material(base_color=(1, 0, 0)).base_color == (1, 0, 0, 1)
    for kwargs, match in [
        ({"base_color": (2, 0, 0, 1)}, "base_color"),
        ({"texture": np.zeros((2, 2, 3), np.uint8)}, "texture"),
        ({"texture": np.zeros((2, 2, 4), np.float32)}, "texture"),
        ({"uv_transform": np.ones((3, 3))}, "uv_transform"),
        ({"alpha_mode": "ADD"}, "alpha_mode"),
        ({"alpha_cutoff": -1}, "alpha_cutoff"),
        ({"double_sided": "yes"}, "double_sided"),
        ({"sampler": "linear"}, "sampler"),
    ]:
        with pytest.raises(InputError, match=match):
            Material(**kwargs)
    with pytest.raises(InputError, match="wrap_s"):
        Sampler(wrap_s="border")
    with pytest.raises(InputError, match="mipmap"):
        Sampler(mipmap="cubic")


def test_skinned_mesh_surface_arguments():
    pos = np.zeros((3, 3))
    nrm = np.tile([0.0, 0.0, 1.0], (3, 1))
    j, w = np.zeros(3, int), np.ones(3)
    m = vkdqs.SkinnedMesh(pos, nrm, j, w, uvs=np.ones((3, 2)), colors=np.full((3, 3), 0.5))
    np.testing.assert_array_equal(m.colors, [[0.5, 0.5, 0.5, 1.0]] * 3)
    assert m.uvs.dtype == np.float32 and not m.uvs.flags.writeable
    with pytest.raises(InputError, match=r"uvs must have shape \(3, 2\)"):
        vkdqs.SkinnedMesh(pos, nrm, j, w, uvs=np.ones((3, 3)))
    with pytest.raises(InputError, match=r"colors\[1, 2\] = nan"):
        c = np.ones((3, 4))
        c[1, 2] = np.nan
        vkdqs.SkinnedMesh(pos, nrm, j, w, colors=c)


def test_srgb_curves_round_trip():
    x = np.linspace(0, 1, 101)
    np.testing.assert_allclose(linear_to_srgb(srgb_to_linear(x)), x, atol=1e-12)
    assert srgb_to_linear(0.5) == pytest.approx(0.21404, abs=1e-5)


def test_documents_stay_json(tmp_path):
    """The fixtures write plain JSON (no numpy scalars left in the document)."""
    b = quad_document(image=encode(CHECKER), colors=np.ones((4, 4), np.float32))
    json.dumps(b.document)


def test_material_copies_what_it_is_given():
    tex = CHECKER.copy()
    m = Material(texture=tex, uv_transform=np.eye(3))
    tex[0, 0] = 0  # the caller's array stays writable, and the material keeps its own
    assert m.texture[0, 0, 0] == 255 and not m.texture.flags.writeable


def test_unused_textures_are_checked_too(tmp_path):
    b = quad_document(image=encode(CHECKER))
    b.add("textures", {"source": 5, "sampler": "s"})
    with pytest.warns(GltfWarning) as caught:
        load(b, tmp_path)
    assert sorted(str(w.message) for w in caught) == [
        "quad.gltf: textures[1].sampler: must be an integer, got 's'; the default sampler is used",
        "quad.gltf: textures[1].source: 5 is not an index into images (1 elements); ignored",
    ]


def test_an_image_used_by_two_materials_is_one_array(tmp_path):
    b = quad_document(image=encode(CHECKER))
    b.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    scene = load(b, tmp_path)
    assert scene.materials[0].texture is scene.materials[1].texture


def test_info_lists_materials_and_surface_attributes(tmp_path, capsys):
    colors = np.tile([[1.0, 0.5, 0.25, 1.0]], (len(QUAD_UVS), 1))
    b = quad_document(
        image=encode(PICTURE),
        colors=colors,
        material={"name": "skin", "alphaMode": "MASK", "alphaCutoff": 0.25, "doubleSided": True},
    )
    path = write(b, tmp_path)
    from vkdqs.app import cli

    assert cli.main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "TEXCOORD_0, COLOR_0, material 0" in out
    assert (
        "material 0 'skin': base colour (1, 1, 1, 1), texture 7x5, MASK 0.25, double-sided" in out
    )
    assert cli.main(["info", "--json", str(path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["meshes"][0]["materials"] == [0]
    assert info["meshes"][0]["texcoords"] and info["meshes"][0]["colors"]
    mat = info["materials"][0]
    assert mat["texture"] == [7, 5] and mat["alpha_mode"] == "MASK" and mat["double_sided"]
