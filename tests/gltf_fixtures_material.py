"""Textured glTF fixtures written in code: images encoded with Pillow (PNG, JPEG, WebP), a quad
with TEXCOORD_0/COLOR_0 and one material, and the rig of tests/gltf_fixtures.py with a texture.

The quad lies in the z = 0 plane, facing +z (counter-clockwise seen from +z), corners at
(+-1, +-1); its UVs follow glTF's convention (v = 0 at the top of the image): the top-left corner
(-1, 1) has uv (0, 0), so texel row 0 lands at the top of the quad.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from vkdqs.gltf.save import GltfBuilder

from .gltf_fixtures import FLOAT, Rig, make_rig

QUAD_POSITIONS = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
QUAD_UVS = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
QUAD_INDICES = np.array([0, 1, 2, 0, 2, 3], np.uint16)
#: a 2x2 RGBA texture: red, green / blue, white (rows top to bottom), opaque
CHECKER = np.array(
    [[[255, 0, 0, 255], [0, 255, 0, 255]], [[0, 0, 255, 255], [255, 255, 255, 255]]], np.uint8
)


def encode(rgba: np.ndarray, fmt: str = "PNG", **options: Any) -> bytes:
    """``rgba`` encoded by Pillow as PNG, JPEG (RGB) or WEBP (lossless unless told)."""
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(rgba, dtype=np.uint8), "RGBA")
    if fmt == "JPEG":
        img = img.convert("RGB")
        options.setdefault("quality", 95)
    if fmt == "WEBP":
        options.setdefault("lossless", True)
    out = io.BytesIO()
    img.save(out, fmt, **options)
    return out.getvalue()


_SIZES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}


def _stride(array: np.ndarray, component_type: int) -> int | None:
    """A byteStride padding small elements to 4 bytes (glTF aligns vertex attributes)."""
    size = _SIZES[component_type] * np.asarray(array).shape[1]
    return None if size % 4 == 0 else size + (-size % 4)


def quad_document(
    *,
    image: bytes | None = None,
    mime: str = "image/png",
    image_uri: str | None = None,
    uvs: np.ndarray | None = QUAD_UVS,
    uv_type: int = FLOAT,
    uv_normalized: bool = False,
    colors: np.ndarray | None = None,
    color_type: int = FLOAT,
    sampler: dict | None = None,
    material: dict | None = None,
    texture_info: dict | None = None,
    positions: np.ndarray = QUAD_POSITIONS,
) -> GltfBuilder:
    """A glTF quad (see the module docstring). ``image``: bytes stored in a bufferView
    (``mime``), or with ``image_uri`` the image's uri instead (the caller writes the file);
    ``uvs`` (None: no TEXCOORD_0) stored as ``uv_type``; ``colors`` as COLOR_0;
    ``material``: extra material properties; ``texture_info``: extra baseColorTexture ones."""
    b = GltfBuilder()
    attrs = {"POSITION": b.add_accessor(positions, target="vertex", min_max=True)}
    if uvs is not None:
        attrs["TEXCOORD_0"] = b.add_accessor(
            uvs,
            component_type=uv_type,
            normalized=uv_normalized,
            target="vertex",
            byte_stride=_stride(uvs, uv_type),
        )
    if colors is not None:
        normalized = color_type != FLOAT
        attrs["COLOR_0"] = b.add_accessor(
            colors,
            component_type=color_type,
            normalized=normalized,
            target="vertex",
            byte_stride=_stride(colors, color_type),
        )
    prim: dict[str, Any] = {
        "attributes": attrs,
        "indices": b.add_accessor(QUAD_INDICES, target="index"),
    }
    mat: dict[str, Any] = {"pbrMetallicRoughness": {}}
    if image is not None or image_uri is not None:
        img: dict[str, Any] = (
            {"uri": image_uri}
            if image_uri is not None
            else {"bufferView": b.add_buffer_view(image), "mimeType": mime}
        )
        b.add("images", img)
        tex: dict[str, Any] = {"source": 0}
        if sampler is not None:
            tex["sampler"] = b.add("samplers", sampler)
        b.add("textures", tex)
        mat["pbrMetallicRoughness"]["baseColorTexture"] = {"index": 0, **(texture_info or {})}
    mat.update(material or {})
    prim["material"] = b.add("materials", mat)
    b.add("meshes", {"primitives": [prim]})
    b.add("nodes", {"mesh": 0})
    b.add("scenes", {"nodes": [0]})
    return b


def write(builder: GltfBuilder, folder: Path, name: str = "quad.gltf") -> Path:
    """Save as ``name`` in ``folder`` (a .gltf keeps its .bin beside it)."""
    path = folder / name
    builder.save(path)
    return path


def textured_rig(rgba: np.ndarray) -> Rig:
    """The rig of tests/gltf_fixtures.py, every mesh given TEXCOORD_0 (u along x, v along y of
    its rest positions, scaled into [0, 1]) and one material with ``rgba`` as its texture."""
    rig = make_rig(scaled=False)
    b = rig.builder
    doc = b.document
    b.add("images", {"bufferView": b.add_buffer_view(encode(rgba)), "mimeType": "image/png"})
    b.add("samplers", {"magFilter": 9728, "minFilter": 9728})
    b.add("textures", {"source": 0, "sampler": 0})
    material = b.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    for mesh in doc["meshes"]:
        for prim in mesh["primitives"]:
            pos_acc = doc["accessors"][prim["attributes"]["POSITION"]]
            n = pos_acc["count"]
            uv = np.linspace(0.0, 1.0, 2 * n, dtype=np.float32).reshape(n, 2)
            prim["attributes"]["TEXCOORD_0"] = b.add_accessor(uv, target="vertex")
            prim["material"] = material
    return rig
