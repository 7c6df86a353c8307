"""Compressed variants of the fixture rig (tests/gltf_fixtures.py), written in code.

:func:`meshopt_file` compresses every bufferView it can of a built document with the
``meshoptimizer`` package's encoders (ATTRIBUTES for vertex and animation data, TRIANGLES or
INDICES for 16/32-bit index data; 8-bit indices cannot be meshopt-compressed and stay plain),
puts the streams in the GLB chunk and points the original bufferViews at a fallback buffer:
a placeholder without data, or the uncompressed bytes. The package wraps no filter *encoders*,
so :func:`encode_filter` calls the library's ``meshopt_encodeFilter*`` functions through ctypes.

:func:`draco_file` replaces the tube primitive of the rig by a Draco stream written with
``DracoPy.encode`` (POSITION quantized, NORMAL, and JOINTS_0/WEIGHTS_0 as generic attributes
with the unique ids the extension object names).
"""

from __future__ import annotations

import base64
import copy
import ctypes
import glob
import os
from pathlib import Path

import numpy as np

from vkdqs.gltf.save import save

EXT = "EXT_meshopt_compression"
KHR = "KHR_meshopt_compression"
DRACO = "KHR_draco_mesh_compression"
QUANTIZATION = "KHR_mesh_quantization"
_SIZES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}
_WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}


def _library() -> ctypes.CDLL:
    import meshoptimizer

    (path,) = glob.glob(os.path.join(os.path.dirname(meshoptimizer.__file__), "_meshoptimizer*"))
    lib = ctypes.CDLL(path)
    for name in ("meshopt_encodeFilterOct", "meshopt_encodeFilterQuat", "meshopt_encodeFilterExp"):
        fn = getattr(lib, name)
        fn.restype = None
    return lib


def encode_filter(kind: str, values: np.ndarray, stride: int, bits: int) -> bytes:
    """The filter encoding of ``values`` (float, ``[count, k]``) as ``count * stride`` bytes.

    OCTAHEDRAL: ``k`` = 4 (unit xyz and a passthrough w), stride 4 or 8. QUATERNION: unit
    (x, y, z, w), stride 8. EXPONENTIAL: ``k = stride / 4`` floats, each with its own exponent.
    """
    lib = _library()
    data = np.ascontiguousarray(values, dtype=np.float32)
    count = len(data)
    out = np.zeros(count * stride, np.uint8)
    args = [
        out.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_size_t(count),
        ctypes.c_size_t(stride),
        ctypes.c_int(bits),
        data.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
    ]
    if kind == "OCTAHEDRAL":
        lib.meshopt_encodeFilterOct(*args)
    elif kind == "QUATERNION":
        lib.meshopt_encodeFilterQuat(*args)
    elif kind == "EXPONENTIAL":
        lib.meshopt_encodeFilterExp(*args, ctypes.c_int(0))  # meshopt_EncodeExpSeparate
    else:
        raise ValueError(kind)
    return out.tobytes()


def _view_users(doc: dict) -> dict[int, dict]:
    """For each bufferView: the first accessor using it, and whether it holds indices (and of
    which primitive mode)."""
    users: dict[int, dict] = {}
    index_modes: dict[int, int] = {}
    for mesh in doc.get("meshes", []):
        for prim in mesh["primitives"]:
            if "indices" in prim:
                index_modes[prim["indices"]] = prim.get("mode", 4)
    for i, acc in enumerate(doc.get("accessors", [])):
        if "bufferView" in acc and acc["bufferView"] not in users:
            users[acc["bufferView"]] = {"accessor": acc, "index_mode": index_modes.get(i)}
    return users


def meshopt_file(
    path: str | Path,
    document: dict,
    binary: bytes,
    *,
    extension: str = EXT,
    fallback: str = "placeholder",
    required: bool = True,
    index_mode: str = "TRIANGLES",
    version: int = 0,
    filters: dict[int, tuple[str, int]] | None = None,
) -> tuple[dict, bytes]:
    """Write ``document`` + ``binary`` (buffers[0]) with its bufferViews meshopt-compressed.

    Parameters
    ----------
    fallback : {"placeholder", "tagged", "data"}
        buffers[1], which the compressed bufferViews keep as their own buffer: no data and
        ``fallback: true`` (placeholder), no data and no tag (tagged=False variant: "bare"),
        or the uncompressed bytes in a data: URI (``data``).
    index_mode : {"TRIANGLES", "INDICES"}
        Mode for triangle-list index data (strip and fan indices always use INDICES).
    version : int
        Attribute codec version (1 only for KHR_meshopt_compression).
    filters : {bufferView: (filter, element stride)}
        Views whose bytes are already the filter's encoding (see :func:`encode_filter`).

    Returns
    -------
    (dict, bytes)
        The written document and its GLB chunk (the compressed streams).
    """
    import meshoptimizer as mo

    doc = copy.deepcopy(document)
    filters = filters or {}
    users = _view_users(doc)
    out = bytearray()
    compressed = 0
    for i, bv in enumerate(doc["bufferViews"]):
        raw = bytes(binary[bv.get("byteOffset", 0) : bv.get("byteOffset", 0) + bv["byteLength"]])
        user = users.get(i, {})
        acc = user.get("accessor")
        stream = None
        obj: dict = {}
        if user.get("index_mode") is not None and acc is not None:
            size = _SIZES[acc["componentType"]]
            if size in (2, 4):
                idx = np.frombuffer(raw, dtype=f"<u{size}").astype(np.uint32)
                mode = index_mode if user["index_mode"] == 4 else "INDICES"
                if mode == "TRIANGLES":
                    stream = mo.encode_index_buffer(idx, len(idx), int(idx.max()) + 1)
                else:
                    stream = mo.encode_index_sequence(idx, len(idx), int(idx.max()) + 1)
                obj = {"byteStride": size, "count": len(idx), "mode": mode}
        elif acc is not None or i in filters:
            if i in filters:
                filt, stride = filters[i]
            else:
                stride = bv.get("byteStride") or (
                    _SIZES[acc["componentType"]] * _WIDTHS[acc["type"]]
                )
                filt = "NONE"
                if stride % 4:
                    stride = 4
            if len(raw) % stride == 0:
                count = len(raw) // stride
                mo.encode_vertex_version(version)
                try:
                    stream = mo.encode_vertex_buffer(
                        np.frombuffer(raw, np.uint8).reshape(count, stride), count, stride
                    )
                finally:
                    mo.encode_vertex_version(0)
                obj = {"byteStride": stride, "count": count, "mode": "ATTRIBUTES"}
                if filt != "NONE":
                    obj["filter"] = filt
        out.extend(b"\0" * (-len(out) % 4))
        if stream is None:  # stays uncompressed, in buffers[0]
            bv["buffer"], bv["byteOffset"] = 0, len(out)
            out.extend(raw)
            continue
        compressed += 1
        obj.update({"buffer": 0, "byteOffset": len(out), "byteLength": len(stream)})
        out.extend(stream)
        bv["buffer"] = 1
        bv.setdefault("extensions", {})[extension] = obj
    assert compressed, "nothing was compressed"
    doc["buffers"] = [{"byteLength": len(out)}, {"byteLength": len(binary)}]
    if fallback == "data":
        doc["buffers"][1]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(
            bytes(binary)
        ).decode("ascii")
    elif fallback == "placeholder":
        doc["buffers"][1]["extensions"] = {extension: {"fallback": True}}
    used = set(doc.get("extensionsUsed", [])) | {extension}
    doc["extensionsUsed"] = sorted(used)
    if required:
        doc["extensionsRequired"] = sorted(set(doc.get("extensionsRequired", [])) | {extension})
    save(path, doc, bytes(out))
    return doc, bytes(out)


def draco_file(
    path: str | Path,
    document: dict,
    binary: bytes,
    *,
    mesh: int = 0,
    quantization_bits: int = 14,
    preserve_order: bool = True,
    fallback: bool = False,
    ids: tuple[int, int, int] = (7, 3, 4),
    quantized_positions: np.ndarray | None = None,
) -> tuple[dict, bytes, object]:
    """Write ``document`` with ``meshes[mesh].primitives[0]`` Draco-compressed.

    The primitive's POSITION, NORMAL, JOINTS_0 and WEIGHTS_0 are read back from ``binary``
    (plain float/uint accessors of the rig), encoded, and decoded once here with DracoPy to
    write the accessors' counts (Draco may reorder and renumber points unless
    ``preserve_order``). ``ids``: unique ids for NORMAL, JOINTS_0, WEIGHTS_0 (POSITION's is
    the one DracoPy assigns). With ``fallback`` the original accessors keep their bufferViews
    and the extension is only used, not required.

    ``quantized_positions`` (uint16, ``[n, 3]``, needs ``preserve_order``): POSITION becomes a
    normalized UNSIGNED_SHORT accessor (KHR_mesh_quantization) filled from a generic uint16 Draco
    attribute (unique id 9) holding these values.

    Returns the written document, its GLB chunk and DracoPy's decoded mesh.
    """
    import DracoPy

    doc = copy.deepcopy(document)
    prim = doc["meshes"][mesh]["primitives"][0]
    attrs = prim["attributes"]

    def read(i):
        acc = doc["accessors"][i]
        bv = doc["bufferViews"][acc["bufferView"]]
        dt = np.dtype({5121: "<u1", 5123: "<u2", 5125: "<u4", 5126: "<f4"}[acc["componentType"]])
        width = _WIDTHS[acc["type"]]
        start = bv.get("byteOffset", 0) + acc.get("byteOffset", 0)
        return np.frombuffer(binary, dt, acc["count"] * width, start).reshape(acc["count"], width)

    positions = read(attrs["POSITION"])
    normals = read(attrs["NORMAL"])
    joints = read(attrs["JOINTS_0"])
    weights = read(attrs["WEIGHTS_0"])
    faces = read(prim["indices"]).reshape(-1, 3).astype(np.uint32)
    nid, jid, wid = ids
    stream = DracoPy.encode(
        positions,
        faces,
        quantization_bits=quantization_bits,
        preserve_order=preserve_order,
        normals=normals.astype(np.float64),
        generic_attributes={jid: joints, wid: weights}
        | ({} if quantized_positions is None else {9: quantized_positions}),
    )
    decoded = DracoPy.decode(stream)
    pid = next(a["unique_id"] for a in decoded.attributes if a["attribute_type"] == 0)
    nid = next(a["unique_id"] for a in decoded.attributes if a["attribute_type"] == 1)
    points = len(decoded.points)
    if not fallback:
        # the primitive's accessors now describe the Draco data (no bufferView)
        for key in ("POSITION", "NORMAL", "JOINTS_0", "WEIGHTS_0", "indices"):
            acc = doc["accessors"][attrs[key] if key != "indices" else prim["indices"]]
            acc.pop("bufferView")
            acc.pop("byteOffset", None)
            acc["count"] = faces.size if key == "indices" else points
            if key == "POSITION" and quantized_positions is not None:
                acc.update(componentType=5123, normalized=True)
                acc["min"] = quantized_positions.min(axis=0).tolist()
                acc["max"] = quantized_positions.max(axis=0).tolist()
            elif key == "POSITION":
                acc["min"] = decoded.points.min(axis=0).tolist()
                acc["max"] = decoded.points.max(axis=0).tolist()
    # the file keeps only the bytes something still uses (a bufferView nothing uses shrinks to
    # 4 bytes), then the Draco stream
    used = {a["bufferView"] for a in doc["accessors"] if "bufferView" in a}
    for a in doc["accessors"]:
        for part in ("indices", "values"):
            used.add(a.get("sparse", {}).get(part, {}).get("bufferView"))
    new_bin = bytearray()
    for i, bv in enumerate(doc["bufferViews"]):
        start = bv.get("byteOffset", 0)
        data = binary[start : start + bv["byteLength"]] if i in used else b"\0" * 4
        new_bin.extend(b"\0" * (-len(new_bin) % 4))
        bv.update(byteOffset=len(new_bin), byteLength=len(data))
        if i not in used:
            bv.pop("byteStride", None)
        new_bin.extend(data)
    new_bin.extend(b"\0" * (-len(new_bin) % 4))
    view = len(doc["bufferViews"])
    doc["bufferViews"].append({"buffer": 0, "byteOffset": len(new_bin), "byteLength": len(stream)})
    new_bin.extend(stream)
    prim["extensions"] = {
        DRACO: {
            "bufferView": view,
            "attributes": {"POSITION": pid, "NORMAL": nid, "JOINTS_0": jid, "WEIGHTS_0": wid},
        }
    }
    if quantized_positions is not None:
        prim["extensions"][DRACO]["attributes"]["POSITION"] = 9
        doc["extensionsUsed"] = sorted(set(doc.get("extensionsUsed", [])) | {QUANTIZATION})
    doc["extensionsUsed"] = sorted(set(doc.get("extensionsUsed", [])) | {DRACO})
    if not fallback:
        doc["extensionsRequired"] = sorted(set(doc.get("extensionsRequired", [])) | {DRACO})
    doc["buffers"][0]["byteLength"] = len(new_bin)
    save(path, doc, bytes(new_bin))
    return doc, bytes(new_bin), decoded
