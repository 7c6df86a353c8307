"""The Khronos glTF-Validator's rules that a glTF writer can break, checked in Python.

The suite cannot need node (the validator is a Dart program published on npm), so the files
vkdqs writes are checked here against the rules of the validator's issue list (its ``ISSUES.md``)
that concern what a writer produces: the GLB container, references, buffer views and accessors
(alignment, bounds, exact ``min``/``max``, finite floats), primitives (equal counts, indices in
range, unit normals, colours in 0..1, morph targets with bounds), animations (increasing
non-negative times, output counts), images (the signature of their MIME type) and extensions.
Each problem is one string starting with the validator's code for it. The files were also
checked with the validator itself by hand (docs/tests.md).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

#: componentType -> numpy dtype (little-endian)
DTYPES = {
    5120: np.dtype("i1"),
    5121: np.dtype("u1"),
    5122: np.dtype("<i2"),
    5123: np.dtype("<u2"),
    5125: np.dtype("<u4"),
    5126: np.dtype("<f4"),
}
COMPONENTS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
#: glTF-Validator's tolerance for unit vectors (lib/src/errors.dart: "slightly greater than the
#: maximum error from signed 8-bit quantization")
UNIT_LENGTH_VEC3 = 0.00674
SIGNATURES = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
#: extensions vkdqs may write
KNOWN_EXTENSIONS = {"KHR_texture_transform"}


class _Checker:
    def __init__(self, doc: dict[str, Any], binary: bytes | None) -> None:
        self.doc, self.bin, self.problems = doc, binary, []

    def fail(self, code: str, where: str, what: str) -> None:
        self.problems.append(f"{code} {where}: {what}")

    def items(self, key: str) -> list[dict[str, Any]]:
        value = self.doc.get(key, [])
        return value if isinstance(value, list) else []

    def ref(self, key: str, index: Any, where: str) -> dict[str, Any] | None:
        items = self.items(key)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(items):
            self.fail("UNRESOLVED_REFERENCE", where, f"{key}[{index!r}] does not exist")
            return None
        return items[index]

    # -- buffers and views ------------------------------------------------------------------

    def buffers(self) -> None:
        for i, b in enumerate(self.items("buffers")):
            where = f"/buffers/{i}"
            if "uri" not in b:
                if i != 0 or self.bin is None:
                    self.fail("BUFFER_MISSING_GLB_DATA", where, "no uri and no GLB BIN chunk")
                elif not b["byteLength"] <= len(self.bin) <= b["byteLength"] + 3:
                    self.fail(
                        "BUFFER_GLB_CHUNK_TOO_BIG",
                        where,
                        f"BIN chunk of {len(self.bin)} bytes for byteLength {b['byteLength']}",
                    )
        for i, v in enumerate(self.items("bufferViews")):
            where = f"/bufferViews/{i}"
            buffer = self.ref("buffers", v.get("buffer"), where)
            end = v.get("byteOffset", 0) + v.get("byteLength", 0)
            if buffer is not None and end > buffer.get("byteLength", 0):
                self.fail("BUFFER_VIEW_TOO_LONG", where, f"ends at {end}, past its buffer")
            stride = v.get("byteStride")
            if stride is not None and (stride % 4 or not 4 <= stride <= 252):
                self.fail("VALUE_MULTIPLE_OF", where, f"byteStride {stride}")
            if v.get("target") not in (None, 34962, 34963):
                self.fail("INVALID_GL_VALUE", where, f"target {v.get('target')}")

    def view_bytes(self, view: dict[str, Any]) -> bytes:
        start = view.get("byteOffset", 0)
        return (self.bin or b"")[start : start + view["byteLength"]]

    # -- accessors --------------------------------------------------------------------------

    def accessor(self, i: int) -> np.ndarray | None:
        """Check accessor ``i``; its values as an (count, components) array (float64)."""
        a = self.items("accessors")[i]
        where = f"/accessors/{i}"
        dtype, n = DTYPES.get(a.get("componentType")), COMPONENTS.get(a.get("type"))
        if dtype is None or n is None or a.get("count", 0) < 1:
            self.fail("INVALID_ACCESSOR", where, "componentType, type or count")
            return None
        view = self.ref("bufferViews", a.get("bufferView"), where)
        if view is None:
            return None
        offset, count, element = a.get("byteOffset", 0), a["count"], dtype.itemsize * n
        if offset % dtype.itemsize:
            self.fail("ACCESSOR_OFFSET_ALIGNMENT", where, f"byteOffset {offset}")
        if (view.get("byteOffset", 0) + offset) % dtype.itemsize:
            self.fail("ACCESSOR_TOTAL_OFFSET_ALIGNMENT", where, "view and accessor offsets")
        stride = view.get("byteStride", element)
        if stride < element:
            self.fail("ACCESSOR_SMALL_BYTESTRIDE", where, f"byteStride {stride} < {element}")
            return None
        if offset + stride * (count - 1) + element > view["byteLength"]:
            self.fail("ACCESSOR_TOO_LONG", where, "past the end of its bufferView")
            return None
        raw = np.frombuffer(self.view_bytes(view), np.uint8)
        rows = np.lib.stride_tricks.as_strided(
            raw[offset:], shape=(count, element), strides=(stride, 1)
        )
        values = np.ascontiguousarray(rows).view(dtype).reshape(count, n)
        if dtype.kind == "f" and not np.isfinite(values).all():
            self.fail("ACCESSOR_INVALID_FLOAT", where, "NaN or infinite values")
            return None
        for key, code, got in (
            ("min", "ACCESSOR_MIN_MISMATCH", values.min(axis=0)),
            ("max", "ACCESSOR_MAX_MISMATCH", values.max(axis=0)),
        ):
            if key in a:
                want = np.asarray(a[key], np.float64)
                # the validator compares the stored (float32) values with the declared ones
                declared = want.astype(dtype) if dtype.kind == "f" else want
                if want.shape != (n,) or not np.array_equal(declared, got):
                    self.fail(code, where, f"{key} {a[key]} against {got.tolist()}")
        if a.get("normalized"):
            if dtype.kind == "f":
                self.fail("ACCESSOR_NORMALIZED_INVALID", where, "normalized floats")
            values = values / np.iinfo(dtype).max
        return values.astype(np.float64)

    # -- meshes -----------------------------------------------------------------------------

    def meshes(self) -> None:
        for m, mesh in enumerate(self.items("meshes")):
            targets = {len(p.get("targets", [])) for p in mesh.get("primitives", [])}
            if len(targets) > 1:
                self.fail("MESH_PRIMITIVES_UNEQUAL_TARGETS_COUNT", f"/meshes/{m}", str(targets))
            if "weights" in mesh and [len(mesh["weights"])] != list(targets):
                self.fail("MESH_INVALID_WEIGHTS_COUNT", f"/meshes/{m}", "weights and targets")
            for p, prim in enumerate(mesh.get("primitives", [])):
                self.primitive(prim, f"/meshes/{m}/primitives/{p}")

    def primitive(self, prim: dict[str, Any], where: str) -> None:
        attributes = prim.get("attributes", {})
        counts = set()
        for name, index in attributes.items():
            a = self.ref("accessors", index, f"{where}/attributes/{name}")
            if a is None:
                continue
            counts.add(a["count"])
            view = self.items("bufferViews")[a["bufferView"]]
            if view.get("target", 34962) != 34962:
                self.fail("BUFFER_VIEW_TARGET_MISMATCH", f"{where}/attributes/{name}", "target")
            if (view.get("byteOffset", 0) + a.get("byteOffset", 0)) % 4:
                self.fail("MESH_PRIMITIVE_ACCESSOR_UNALIGNED", f"{where}/attributes/{name}", "")
            values = self.accessor(index)
            if values is None:
                continue
            if name == "POSITION" and not ("min" in a and "max" in a):
                self.fail("MESH_PRIMITIVE_POSITION_ACCESSOR_WITHOUT_BOUNDS", where, "")
            if name == "NORMAL":
                bad = np.abs(np.linalg.norm(values, axis=1) - 1) > UNIT_LENGTH_VEC3
                if bad.any():
                    self.fail(
                        "ACCESSOR_VECTOR3_NON_UNIT", f"{where}/attributes/NORMAL", f"{bad.sum()}"
                    )
            if name.startswith("COLOR_") and ((values < 0) | (values > 1)).any():
                self.fail("ACCESSOR_ELEMENT_OUT_OF_RANGE", f"{where}/attributes/{name}", "")
            if name.startswith("JOINTS_") and DTYPES[a["componentType"]].kind != "u":
                self.fail("MESH_PRIMITIVE_JOINTS_TYPE", f"{where}/attributes/{name}", "")
        if len(counts) > 1:
            self.fail("MESH_PRIMITIVE_UNEQUAL_ACCESSOR_COUNT", where, str(sorted(counts)))
        vertices = min(counts) if counts else 0
        if "indices" in prim:
            a = self.ref("accessors", prim["indices"], f"{where}/indices")
            values = self.accessor(prim["indices"]) if a is not None else None
            if a is not None and values is not None:
                dtype = DTYPES[a["componentType"]]
                view = self.items("bufferViews")[a["bufferView"]]
                if dtype.kind != "u" or a["type"] != "SCALAR":
                    self.fail("MESH_PRIMITIVE_INDICES_TYPE", f"{where}/indices", "")
                if view.get("target", 34963) != 34963 or "byteStride" in view:
                    self.fail("MESH_PRIMITIVE_INDICES_ACCESSOR_INVALID", f"{where}/indices", "")
                restart = np.iinfo(dtype).max
                if (values >= vertices).any() or (values == restart).any():
                    self.fail("ACCESSOR_INDEX_OOB", f"{where}/indices", f"of {vertices}")
                if prim.get("mode", 4) == 4 and a["count"] % 3:
                    self.fail("MESH_PRIMITIVE_INCOMPATIBLE_MODE", f"{where}/indices", "count")
        for t, target in enumerate(prim.get("targets", [])):
            for name, index in target.items():
                w = f"{where}/targets/{t}/{name}"
                a = self.ref("accessors", index, w)
                if a is None:
                    continue
                if a["count"] != vertices:
                    self.fail("MESH_PRIMITIVE_MORPH_TARGET_INVALID_ATTRIBUTE_COUNT", w, "")
                if name == "POSITION" and not ("min" in a and "max" in a):
                    self.fail("MESH_PRIMITIVE_POSITION_ACCESSOR_WITHOUT_BOUNDS", w, "")
                self.accessor(index)
        if "material" in prim:
            self.ref("materials", prim["material"], f"{where}/material")

    # -- animations -------------------------------------------------------------------------

    def animations(self) -> None:
        for k, anim in enumerate(self.items("animations")):
            samplers = anim.get("samplers", [])
            for s, sampler in enumerate(samplers):
                where = f"/animations/{k}/samplers/{s}"
                a = self.ref("accessors", sampler.get("input"), f"{where}/input")
                times = self.accessor(sampler["input"]) if a is not None else None
                if a is not None and not ("min" in a and "max" in a):
                    self.fail("ANIMATION_SAMPLER_INPUT_ACCESSOR_WITHOUT_BOUNDS", where, "")
                if times is not None:
                    t = times[:, 0]
                    if (t < 0).any():
                        self.fail("ACCESSOR_ANIMATION_INPUT_NEGATIVE", where, "<0")
                    if (np.diff(t) <= 0).any():
                        self.fail("ACCESSOR_ANIMATION_INPUT_NON_INCREASING", where, "")
                if self.ref("accessors", sampler.get("output"), f"{where}/output") is not None:
                    self.accessor(sampler["output"])
            for c, channel in enumerate(anim.get("channels", [])):
                where = f"/animations/{k}/channels/{c}"
                if not 0 <= channel.get("sampler", -1) < len(samplers):
                    self.fail("UNRESOLVED_REFERENCE", where, "sampler")
                    continue
                target = channel.get("target", {})
                node = self.ref("nodes", target.get("node"), f"{where}/target/node")
                sampler = samplers[channel["sampler"]]
                inputs = self.items("accessors")[sampler["input"]]["count"]
                outputs = self.items("accessors")[sampler["output"]]["count"]
                per_key = 1
                if target.get("path") == "weights":
                    mesh = self.items("meshes")[node["mesh"]] if node and "mesh" in node else None
                    if mesh is None or not mesh["primitives"][0].get("targets"):
                        self.fail("ANIMATION_CHANNEL_TARGET_NODE_WEIGHTS_NO_MORPHS", where, "")
                        continue
                    per_key = len(mesh["primitives"][0]["targets"])
                if sampler.get("interpolation") == "CUBICSPLINE":
                    per_key *= 3
                if outputs != inputs * per_key:
                    self.fail(
                        "ANIMATION_SAMPLER_OUTPUT_ACCESSOR_INVALID_COUNT",
                        where,
                        f"{outputs} outputs for {inputs} keys of {per_key}",
                    )

    # -- materials, textures, images --------------------------------------------------------

    def materials(self) -> None:
        for i, image in enumerate(self.items("images")):
            where = f"/images/{i}"
            if "bufferView" in image:
                view = self.ref("bufferViews", image["bufferView"], where)
                if view is None:
                    continue
                if "byteStride" in view or "target" in view:
                    self.fail("BUFFER_VIEW_INVALID_IMAGE", where, "stride or target")
                signature = SIGNATURES.get(image.get("mimeType", ""))
                if signature is None or not self.view_bytes(view).startswith(signature):
                    self.fail("IMAGE_MIME_TYPE_INVALID", where, str(image.get("mimeType")))
        for i, texture in enumerate(self.items("textures")):
            if "source" in texture:
                self.ref("images", texture["source"], f"/textures/{i}/source")
            if "sampler" in texture:
                self.ref("samplers", texture["sampler"], f"/textures/{i}/sampler")
        for i, sampler in enumerate(self.items("samplers")):
            for key, allowed in (
                ("magFilter", {9728, 9729}),
                ("minFilter", {9728, 9729, 9984, 9985, 9986, 9987}),
                ("wrapS", {33071, 33648, 10497}),
                ("wrapT", {33071, 33648, 10497}),
            ):
                if key in sampler and sampler[key] not in allowed:
                    self.fail("INVALID_GL_VALUE", f"/samplers/{i}/{key}", str(sampler[key]))
        for i, material in enumerate(self.items("materials")):
            pbr = material.get("pbrMetallicRoughness", {})
            factor = pbr.get("baseColorFactor", [1, 1, 1, 1])
            if len(factor) != 4 or not all(0 <= f <= 1 for f in factor):
                self.fail("VALUE_NOT_IN_RANGE", f"/materials/{i}", "baseColorFactor")
            if "baseColorTexture" in pbr:
                self.ref("textures", pbr["baseColorTexture"].get("index"), f"/materials/{i}")
            if material.get("alphaMode", "OPAQUE") not in ("OPAQUE", "MASK", "BLEND"):
                self.fail("VALUE_NOT_IN_LIST", f"/materials/{i}/alphaMode", "")

    # -- the scene graph and the document ---------------------------------------------------

    def nodes(self) -> None:
        parent: dict[int, int] = {}
        for i, node in enumerate(self.items("nodes")):
            for child in node.get("children", []):
                if self.ref("nodes", child, f"/nodes/{i}/children") is None:
                    continue
                if child in parent:
                    self.fail("NODE_PARENT_OVERRIDE", f"/nodes/{child}", "two parents")
                parent[child] = i
            if "mesh" in node:
                self.ref("meshes", node["mesh"], f"/nodes/{i}/mesh")
            if "matrix" in node and any(k in node for k in ("translation", "rotation", "scale")):
                self.fail("NODE_MATRIX_TRS", f"/nodes/{i}", "matrix and TRS")
            if "rotation" in node:
                q = np.asarray(node["rotation"], np.float64)
                if abs(np.linalg.norm(q) - 1) > UNIT_LENGTH_VEC3:
                    self.fail("ROTATION_NON_UNIT", f"/nodes/{i}/rotation", str(node["rotation"]))
        for node in range(len(self.items("nodes"))):  # few nodes: a walk to the root each
            seen, at = set(), node
            while at in parent:
                if at in seen:
                    self.fail("NODE_LOOP", f"/nodes/{node}", "a cycle of children")
                    break
                seen.add(at)
                at = parent[at]
        for s, scene in enumerate(self.items("scenes")):
            for n in scene.get("nodes", []):
                if n in parent:
                    self.fail("SCENE_NON_ROOT_NODE", f"/scenes/{s}", f"node {n} has a parent")
        if "scene" in self.doc:
            self.ref("scenes", self.doc["scene"], "/scene")

    def document(self) -> None:
        asset = self.doc.get("asset", {})
        if asset.get("version") != "2.0":
            self.fail("UNKNOWN_ASSET_MAJOR_VERSION", "/asset/version", str(asset.get("version")))
        for key, value in self.doc.items():
            if isinstance(value, list) and not value:
                self.fail("EMPTY_ENTITY", f"/{key}", "an empty array")
        used = set(self.doc.get("extensionsUsed", []))
        required = set(self.doc.get("extensionsRequired", []))
        if not required <= used:
            self.fail("NOT_IN_USED_EXTENSIONS", "/extensionsRequired", str(required - used))
        if used - KNOWN_EXTENSIONS:
            self.fail("UNSUPPORTED_EXTENSION", "/extensionsUsed", str(used - KNOWN_EXTENSIONS))
        found = _extensions_in(self.doc)
        if found - used:
            self.fail("UNDECLARED_EXTENSION", "/extensionsUsed", str(found - used))
        if used - found:
            self.fail("UNUSED_EXTENSION", "/extensionsUsed", str(used - found))

    def run(self) -> list[str]:
        self.document()
        self.buffers()
        self.meshes()
        self.animations()
        self.materials()
        self.nodes()
        return self.problems


def _extensions_in(value: Any) -> set[str]:
    """Every extension name used in an ``extensions`` object anywhere in ``value``."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "extensions" and isinstance(item, dict):
                found |= set(item)
            found |= _extensions_in(item)
    elif isinstance(value, list):
        for item in value:
            found |= _extensions_in(item)
    return found


def glb_problems(data: bytes) -> tuple[list[str], dict[str, Any] | None, bytes | None]:
    """The GLB container's problems, and its JSON and BIN chunks."""
    problems: list[str] = []
    if len(data) < 20 or data[:4] != b"glTF":
        return ["GLB_INVALID_MAGIC /: not a GLB"], None, None
    version, length = struct.unpack_from("<II", data, 4)
    if version != 2:
        problems.append(f"GLB_INVALID_VERSION /: {version}")
    if length != len(data):
        problems.append(f"GLB_LENGTH_MISMATCH /: header {length}, file {len(data)}")
    chunks: list[tuple[bytes, bytes]] = []
    at = 12
    while at + 8 <= len(data):
        size, kind = struct.unpack_from("<I4s", data, at)
        if size % 4:
            problems.append(f"GLB_CHUNK_LENGTH_UNALIGNED /: {kind!r} chunk of {size} bytes")
        chunks.append((kind, data[at + 8 : at + 8 + size]))
        at += 8 + size
    if at != len(data):
        problems.append("GLB_CHUNK_TOO_BIG /: chunks past the end of the file")
    kinds = [k for k, _ in chunks]
    if not kinds or kinds[0] != b"JSON" or kinds.count(b"JSON") != 1 or kinds.count(b"BIN\0") > 1:
        problems.append(f"GLB_UNEXPECTED_FIRST_CHUNK /: chunks {kinds}")
        return problems, None, None
    text = chunks[0][1]
    if text.rstrip(b" ") != text.rstrip(b" \t\r\n") or b"\0" in text:
        problems.append("GLB_CHUNK_PADDING /: the JSON chunk is padded with other than spaces")
    binary = chunks[1][1] if len(kinds) > 1 else None
    try:
        doc = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return [*problems, f"INVALID_JSON /: {exc}"], None, None
    return problems, doc, binary


def problems(path: str | Path) -> list[str]:
    """What the glTF-Validator's rules above find in the ``.glb`` at ``path`` (empty: valid)."""
    found, doc, binary = glb_problems(Path(path).read_bytes())
    if doc is None:
        return found
    return found + _Checker(doc, binary).run()


def document_problems(doc: dict[str, Any], binary: bytes | None) -> list[str]:
    """The rules above on a document and its GLB binary chunk."""
    return _Checker(doc, binary).run()
