"""Compressed glTF data: meshopt bufferViews and Draco primitives, decoded and checked.

* ``EXT_meshopt_compression`` and ``KHR_meshopt_compression``: a bufferView whose extension
  object names a compressed byte range is decoded with the ``meshoptimizer`` package (modes
  ATTRIBUTES, TRIANGLES and INDICES; filters OCTAHEDRAL, QUATERNION and EXPONENTIAL by the
  package, KHR's COLOR filter in numpy here because the package has none) and the decoded bytes
  become that bufferView's data. Every field is checked as the extension's README says
  (stride, count, mode/filter combinations, the stream's header byte) and the decoded size is
  charged to ``max_bytes`` before it is allocated. Fallback buffers (``fallback: true``, or a
  placeholder without ``uri`` that only compressed bufferViews use) are never read while the
  decoder is there.
* ``KHR_draco_mesh_compression``: a primitive's Draco stream is decoded with ``DracoPy``; each
  attribute it lists (by Draco unique id) and the triangles become the data of the primitive's
  own accessors, whose ``count``, ``type`` and ``componentType`` must match.

Both decoders are the ``vkdqs[compression]`` extra. Without them a file that requires the
extension (or has no uncompressed fallback) is a :class:`GltfError` saying how to install them;
a file that also carries uncompressed data loads from that, as the specifications say.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from vkdqs.gltf.errors import _show

if TYPE_CHECKING:
    from vkdqs.gltf.accessors import _AccessorReader

EXT_MESHOPT = "EXT_meshopt_compression"
KHR_MESHOPT = "KHR_meshopt_compression"
MESHOPT = (EXT_MESHOPT, KHR_MESHOPT)
DRACO = "KHR_draco_mesh_compression"
#: What a user without the decoders is told to run.
INSTALL_HINT = "pip install 'vkdqs[compression]'"
_PACKAGES = {EXT_MESHOPT: "meshoptimizer", KHR_MESHOPT: "meshoptimizer", DRACO: "DracoPy"}

_MODES = ("ATTRIBUTES", "TRIANGLES", "INDICES")
_FILTERS = {
    EXT_MESHOPT: ("NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL"),
    KHR_MESHOPT: ("NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL", "COLOR"),
}
# First byte of each stream: the attribute codec's version 0 (EXT and KHR) or 1 (KHR only), the
# triangle codec and the index-sequence codec.
_HEADERS = {
    (EXT_MESHOPT, "ATTRIBUTES"): (0xA0,),
    (KHR_MESHOPT, "ATTRIBUTES"): (0xA0, 0xA1),
    (EXT_MESHOPT, "TRIANGLES"): (0xE1,),
    (KHR_MESHOPT, "TRIANGLES"): (0xE1,),
    (EXT_MESHOPT, "INDICES"): (0xD1,),
    (KHR_MESHOPT, "INDICES"): (0xD1,),
}


def decoder(extension: str) -> ModuleType | None:
    """The package that decodes ``extension`` (``meshoptimizer`` or ``DracoPy``), or None."""
    try:
        return importlib.import_module(_PACKAGES[extension])
    except (ImportError, OSError):  # OSError: meshoptimizer's ctypes library did not load
        return None


def missing_decoder(extension: str) -> str:
    """The message for a file that needs a decoder that is not installed."""
    return (
        f"{extension} needs the {_PACKAGES[extension]} package, which is not installed: "
        f"{INSTALL_HINT}"
    )


def meshopt_extension(r: _AccessorReader, obj: dict, path: str) -> tuple[str, dict] | None:
    """(name, extension object) of a bufferView or buffer's meshopt extension, or None.

    A view with both is malformed (KHR_meshopt_compression's exclusions).
    """
    exts = r.get_obj(obj, "extensions", path)
    if not exts:
        return None
    found = [name for name in MESHOPT if name in exts]
    if len(found) == 2:
        r.fail(f"{path}.extensions", f"has both {EXT_MESHOPT} and {KHR_MESHOPT}")
    if not found:
        return None
    name = found[0]
    return name, r.get_obj(exts, name, f"{path}.extensions", required=True)


def is_fallback(r: _AccessorReader, b: int) -> bool:
    """Whether ``buffers[b]`` is tagged as a meshopt fallback buffer."""
    path = f"buffers[{b}]"
    ext = meshopt_extension(r, r.array("buffers")[b], path)
    if ext is None:
        return False
    return r.get_bool(ext[1], "fallback", f"{path}.extensions.{ext[0]}")


@dataclass(frozen=True)
class MeshoptView:
    """The checked fields of a bufferView's meshopt extension object."""

    extension: str
    path: str  # JSON path of the extension object
    buffer: int
    byte_offset: int
    byte_length: int
    byte_stride: int
    count: int
    mode: str
    filter: str


def meshopt_view(
    r: _AccessorReader, name: str, obj: dict, view_path: str, view_length: int
) -> MeshoptView:
    """Check a bufferView's meshopt extension object (every rule of the extension's README)."""
    path = f"{view_path}.extensions.{name}"
    buffer = r.get_index(obj, "buffer", path, "buffers", required=True)
    offset = r.get_int(obj, "byteOffset", path, default=0, minimum=0)
    length = r.get_int(obj, "byteLength", path, required=True, minimum=1)
    stride = r.get_int(obj, "byteStride", path, required=True, minimum=1)
    count = r.get_int(obj, "count", path, required=True, minimum=1)
    mode = r.get_str(obj, "mode", path, required=True)
    filt = r.get_str(obj, "filter", path, default="NONE")
    if mode not in _MODES:
        r.fail(f"{path}.mode", f"{_show(mode)} is not {', '.join(_MODES)}")
    if filt not in _FILTERS[name]:
        r.fail(f"{path}.filter", f"{_show(filt)} is not {', '.join(_FILTERS[name])}")
    if mode == "ATTRIBUTES" and not (stride % 4 == 0 and 4 <= stride <= 256):
        r.fail(f"{path}.byteStride", f"{stride}: ATTRIBUTES needs a multiple of 4 in [4, 256]")
    if mode != "ATTRIBUTES":
        if stride not in (2, 4):
            r.fail(f"{path}.byteStride", f"{stride}: {mode} needs 2 or 4")
        if filt != "NONE":
            r.fail(f"{path}.filter", f"{filt} is only allowed with mode ATTRIBUTES, not {mode}")
    if mode == "TRIANGLES" and count % 3:
        r.fail(f"{path}.count", f"{count} is not a multiple of 3 (mode TRIANGLES)")
    need = {"OCTAHEDRAL": (4, 8), "QUATERNION": (8,), "COLOR": (4, 8)}.get(filt)
    if need is not None and stride not in need:
        r.fail(
            f"{path}.byteStride",
            f"{stride}: filter {filt} needs {' or '.join(map(str, need))}",
        )
    if count * stride != view_length:
        r.fail(
            f"{path}.count",
            f"count {count} x byteStride {stride} = {count * stride} bytes, but "
            f"{view_path}.byteLength is {view_length}",
        )
    declared = r.get_int(
        r.array("buffers")[buffer], "byteLength", f"buffers[{buffer}]", required=True, minimum=1
    )
    if offset + length > declared:
        r.fail(
            path,
            f"byteOffset {offset} + byteLength {length} exceeds buffers[{buffer}] "
            f"(byteLength {declared})",
        )
    if is_fallback(r, buffer):
        r.fail(
            f"{path}.buffer",
            f"buffers[{buffer}] is a fallback buffer; compressed data cannot come from it",
        )
    return MeshoptView(name, path, buffer, offset, length, stride, count, mode, filt)


def decode_meshopt(
    r: _AccessorReader, mo: ModuleType, spec: MeshoptView, data: bytes | bytearray | memoryview
) -> np.ndarray:
    """The decoded bytes (``count * byteStride``, a uint8 array) of one compressed bufferView."""
    src = memoryview(data)[spec.byte_offset : spec.byte_offset + spec.byte_length]
    allowed = _HEADERS[spec.extension, spec.mode]
    if src[0] not in allowed:
        r.fail(
            spec.path,
            f"the {spec.mode} stream starts with byte 0x{src[0]:02x}, not "
            f"{' or '.join(f'0x{h:02x}' for h in allowed)}: corrupt, or a codec version "
            f"{spec.extension} does not allow",
        )
    n, stride = spec.count, spec.byte_stride
    out_bytes = n * stride
    # the decoder's output array (indices: always 4 bytes each), then a filter's copy of it
    r.charge(out_bytes if spec.mode == "ATTRIBUTES" else 4 * n, spec.path, "decoding")
    if spec.filter != "NONE":
        per = _COLOR_BYTES * n if spec.filter == "COLOR" else out_bytes
        r.charge(per, spec.path, f"the {spec.filter} filter")
    try:
        if spec.mode == "ATTRIBUTES":
            raw = mo.decode_vertex_buffer(n, stride, src, dtype=np.dtype((np.void, stride)))
            flat = raw.view(np.uint8).reshape(-1)
        else:
            if spec.mode == "TRIANGLES":
                raw = mo.decode_index_buffer(n, stride, src)
            else:
                raw = mo.decode_index_sequence(n, stride, src)
            # the decoder writes `count` indices of `stride` bytes at the start of its array
            flat = raw.view(np.uint8)[:out_bytes]
    except RuntimeError as exc:  # the decoder's error code
        r.fail(spec.path, f"cannot decode the {spec.mode} stream ({exc}): the data is corrupt")
    except ValueError as exc:  # the package's own limits (1 GiB per view)
        r.fail(spec.path, f"cannot decode the {spec.mode} stream: {exc}")
    # the package's filters work on a copy of their input
    if spec.filter == "OCTAHEDRAL":
        flat = mo.decode_filter_oct(flat, n, stride)
    elif spec.filter == "QUATERNION":
        flat = mo.decode_filter_quat(flat, n, stride)
    elif spec.filter == "EXPONENTIAL":
        flat = mo.decode_filter_exp(flat, n, stride)
    elif spec.filter == "COLOR":
        flat = decode_filter_color(flat, n, stride)
    return np.ascontiguousarray(flat).view(np.uint8).reshape(-1)


#: Peak bytes per element of :func:`decode_filter_color` (int64 and float32 temporaries).
_COLOR_BYTES = 320


def decode_filter_color(data: np.ndarray, count: int, stride: int) -> np.ndarray:
    """KHR_meshopt_compression's COLOR filter (YCoCg to RGBA), as its Appendix B specifies.

    ``data`` holds ``count`` elements of four 8-bit (``stride`` 4) or 16-bit (``stride`` 8)
    components: K-bit unsigned Y, K-bit signed Co and Cg, and alpha as a (K-1)-bit value whose
    bit K-1 is set. The result is four unsigned normalized components (R, G, B, A). The
    meshoptimizer package has no decoder for this filter, so it is written here, vectorized.
    """
    bits = 8 * stride // 4
    signed = np.dtype(f"<i{stride // 4}")
    unsigned = np.dtype(f"<u{stride // 4}")
    raw = np.ascontiguousarray(data).view(np.uint8)[: count * stride].view(unsigned)
    raw = raw.reshape(count, 4)
    s = raw.view(signed).astype(np.int64)
    u = raw.astype(np.int64)
    alpha_in = u[:, 3]
    # (1 << (findMSB(alpha) + 1)) - 1; findMSB(0) is -1, so a zero alpha gives scale 0
    msb = np.where(alpha_in > 0, np.floor(np.log2(np.maximum(alpha_in, 1))).astype(np.int64), -1)
    scale = (np.int64(1) << (msb + 1)) - 1
    y, co, cg = u[:, 0], s[:, 1], s[:, 2]
    r = y + co - cg
    g = y + cg
    b = y - co - cg
    a = alpha_in & (scale >> 1)
    a = (a << 1) | (a & 1)
    top = float(2**bits - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ss = np.where(scale > 0, top / np.maximum(scale, 1).astype(np.float32), 0.0)
    rgba = np.stack([r, g, b, a], axis=1).astype(np.float32) * ss[:, None].astype(np.float32)
    # round half away from zero, then wrap into the component type as the C decoder's casts do
    rounded = np.sign(rgba) * np.floor(np.abs(rgba) + 0.5)
    out = rounded.astype(np.int64) & (2**bits - 1)
    return out.astype(unsigned)


#: What decoding a Draco stream peaks at, in multiples of its attributes' declared sizes.
_DRACO_FACTOR = 2


@dataclass(frozen=True)
class DracoPrimitive:
    """What a primitive's Draco stream decodes to: ``(n_points, k)`` arrays per attribute
    semantic, and the triangles' corner indices."""

    attributes: dict[str, np.ndarray]
    indices: np.ndarray
    points: int


def draco_extension(r: _AccessorReader, prim: dict, path: str) -> dict | None:
    """The primitive's KHR_draco_mesh_compression object, or None."""
    exts = r.get_obj(prim, "extensions", path)
    if not exts or DRACO not in exts:
        return None
    return r.get_obj(exts, DRACO, f"{path}.extensions", required=True)


def decode_draco(
    r: _AccessorReader,
    dracopy: ModuleType,
    obj: dict,
    path: str,
    attrs: dict[str, Any],
    mode: int,
    indexed: bool,
) -> DracoPrimitive:
    """Decode a primitive's Draco stream and pick its attributes by unique id.

    ``path`` is the primitive's JSON path; ``attrs`` its ``attributes``. The caller checks the
    decoded arrays against the primitive's accessors.
    """
    epath = f"{path}.extensions.{DRACO}"
    if mode != 4:
        r.fail(f"{path}.mode", f"{mode}: vkdqs decodes {DRACO} for TRIANGLES (4) only")
    if not indexed:
        r.fail(path, f"a {DRACO} primitive must have indices (its triangles)")
    view_index = r.get_index(obj, "bufferView", epath, "bufferViews", required=True)
    ids = r.get_obj(obj, "attributes", epath, required=True)
    wanted: dict[str, int] = {}
    for key, uid in ids.items():
        upath = f"{epath}.attributes.{key}"
        if key not in attrs:
            # the stream holds an attribute the primitive does not use: not decoded into
            # anything, so it changes nothing drawn
            r.warn(upath, "is not one of the primitive's attributes; ignored")
            continue
        wanted[key] = r.as_int(uid, upath, minimum=0)
    if len(set(wanted.values())) != len(wanted):
        r.fail(f"{epath}.attributes", "lists a Draco attribute id twice")
    v = r.view(view_index)
    # The decoded arrays are charged by their accessors' declared sizes before decoding (see
    # the caller); this covers the stream's copy (DracoPy takes bytes only) and what the decoder
    # holds meanwhile (measured by tests/test_gltf_bounds.py).
    sizes = 0
    for key in wanted:
        sizes += _declared_size(r, attrs[key])
    r.charge(v.length + _DRACO_FACTOR * sizes, epath, "decoding the Draco stream")
    src = bytes(memoryview(v.data)[v.offset : v.offset + v.length])
    try:
        mesh = dracopy.decode(src)
    except Exception as exc:  # DracoPy raises several types; all mean a bad stream
        r.fail(f"{epath}.bufferView", f"cannot decode the Draco stream: {exc or type(exc)}")
    faces = getattr(mesh, "faces", None)
    if faces is None:
        r.fail(f"{epath}.bufferView", "the Draco stream is a point cloud, not a triangle mesh")
    faces = np.asarray(faces)
    points = len(np.asarray(mesh.points)) if mesh.points is not None else 0
    by_id = {int(a["unique_id"]): a for a in mesh.attributes}
    out: dict[str, np.ndarray] = {}
    for key, uid in wanted.items():
        a = by_id.get(uid)
        if a is None:
            r.fail(
                f"{epath}.attributes.{key}",
                f"the Draco stream has no attribute with unique id {uid} (it has {sorted(by_id)})",
            )
        data = np.asarray(a["data"])
        if data.ndim == 1:
            data = data[:, None]
        out[key] = data
    return DracoPrimitive(out, faces.reshape(-1), points)


def _declared_size(r: _AccessorReader, index: Any) -> int:
    """Bytes an accessor's JSON says it holds (0 when the fields are not valid; the accessor's
    own check reports them)."""
    a = r.array("accessors")
    if type(index) is not int or not 0 <= index < len(a):
        return 0
    count, ct, type_ = (a[index].get(k) for k in ("count", "componentType", "type"))
    # any JSON value may be there (an object is unhashable): only ints and strings are looked up
    width = (
        {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}.get(type_, 16) if type(type_) is str else 16
    )
    size = (
        {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}.get(ct, 4) if type(ct) is int else 4
    )
    return count * width * size if type(count) is int and count > 0 else 0
