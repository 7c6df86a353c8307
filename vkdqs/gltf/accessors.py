"""Accessor decoding: typed access to the glTF JSON and the buffers, bufferViews and accessors it
points at, decoded with numpy with every byte range, alignment and component type checked."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from vkdqs.gltf import compression
from vkdqs.gltf.errors import GltfError, _BudgetSpent, _show
from vkdqs.gltf.uris import (
    _realpath,
    data_uri_size,
    decode_data_uri,
    is_data_uri,
    open_regular_file,
    read_at_most,
    resolve_uri,
)

_COMPONENTS: dict[int, tuple[str, np.dtype]] = {
    5120: ("BYTE", np.dtype("<i1")),
    5121: ("UNSIGNED_BYTE", np.dtype("<u1")),
    5122: ("SHORT", np.dtype("<i2")),
    5123: ("UNSIGNED_SHORT", np.dtype("<u2")),
    5125: ("UNSIGNED_INT", np.dtype("<u4")),
    5126: ("FLOAT", np.dtype("<f4")),
}
BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT, UNSIGNED_INT, FLOAT = 5120, 5121, 5122, 5123, 5125, 5126
# (columns, rows) of each accessor type; vectors are one column.
_TYPES = {
    "SCALAR": (1, 1),
    "VEC2": (1, 2),
    "VEC3": (1, 3),
    "VEC4": (1, 4),
    "MAT2": (2, 2),
    "MAT3": (3, 3),
    "MAT4": (4, 4),
}
_NATIVE = {ct: dtype.newbyteorder("=") for ct, (_, dtype) in _COMPONENTS.items()}
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963

#: Most bytes of accessors without a bufferView (all zeros, maybe sparse) one file may ask for, in
#: total. Such accessors cost no file bytes, so without a cap a tiny file could ask for terabytes.
MAX_ZERO_FILL_BYTES = 256 * 2**20

#: The default ``max_bytes`` of :func:`vkdqs.gltf.load_gltf` (:func:`default_max_bytes`) allows
#: this many bytes per byte of JSON (a ``.gltf`` file, a GLB's JSON chunk): a document's
#: objects, parsed, are 10 to 40 times their text, and real models' JSON is small...
DEFAULT_BYTES_PER_JSON_BYTE = 8
#: ... and this many per byte of binary data (a GLB's BIN chunk, the buffer and image files a
#: model reads): as counted, a plain indexed skinned mesh expands to about 7 times its data and
#: a meshopt- or Draco-compressed one to 19 to 30 times...
DEFAULT_BYTES_PER_DATA_BYTE = 32
#: ... but at least this (128 MiB: any model of up to about 250k vertices loads)...
DEFAULT_MIN_BYTES = 128 * 2**20
#: ... and at most this (2 GiB), which is also the CLI's ``--max-bytes`` default.
DEFAULT_MAX_BYTES = 2 * 2**30
#: Decoded images are not in proportion to the bytes that hold them (a 1.5 MB JPEG is 64 MiB of
#: pixels), so under the default bound their pixels may use this much of the file's total, each
#: image also within Pillow's own rule (:data:`vkdqs.gltf.images.max_image_pixels`): 2 GiB, what
#: eight 4096x4096 textures (512 MiB kept) or one 8192x8192 (about 0.9 GiB at its peak) need.
DEFAULT_IMAGE_BYTES = DEFAULT_MAX_BYTES


def default_max_bytes(json_bytes: int, data_bytes: int = 0) -> int:
    """The ``max_bytes`` :func:`vkdqs.gltf.load_gltf` applies when it is given none, for a model
    of ``json_bytes`` of JSON and ``data_bytes`` of binary data: 8 bytes per byte of JSON plus 32
    per byte of data, at least 128 MiB, at most 2 GiB.

    What a hostile file can make the loader hold then grows with what it cost to upload, so a
    service that bounds the size of uploads bounds what loading them costs. Larger models (over
    2 GiB as loaded, or compressed ones that expand more) load with an explicit ``max_bytes``.
    """
    earned = DEFAULT_BYTES_PER_JSON_BYTE * json_bytes + DEFAULT_BYTES_PER_DATA_BYTE * data_bytes
    return min(DEFAULT_MAX_BYTES, max(DEFAULT_MIN_BYTES, earned))


class Budget:
    """What a file may still make the loader hold: ``max_bytes``, or the default that grows with
    the JSON and binary data the model brings (:func:`default_max_bytes`), and what is spent."""

    def __init__(self, name: str, max_bytes: int | None) -> None:
        self.name = name
        self.explicit = max_bytes
        self.spent = 0
        #: the most held at once, transient peaks included: the least max_bytes that loads it
        self.high = 0
        #: of ``spent``, what decoded images keep (under the default bound they have their own
        #: allowance, :data:`DEFAULT_IMAGE_BYTES`, not the data's)
        self.image_bytes = 0
        self.json_bytes = 0
        self.data_bytes = 0

    @property
    def limit(self) -> int:
        """The bound now: ``max_bytes`` when given, else :func:`default_max_bytes` of the JSON
        and data the model has brought so far."""
        if self.explicit is not None:
            return self.explicit
        return default_max_bytes(self.json_bytes, self.data_bytes)

    def earn(self, *, json: int = 0, data: int = 0) -> None:
        """Bytes of JSON or data the model brought (the default bound grows with them)."""
        self.json_bytes += json
        self.data_bytes += data

    @property
    def image_limit(self) -> int:
        """The bound decoded images are held to: ``max_bytes`` when given, else the larger of
        the default bound and :data:`DEFAULT_IMAGE_BYTES`."""
        if self.explicit is not None:
            return self.explicit
        return max(self.limit, DEFAULT_IMAGE_BYTES)

    def message(self, nbytes: int, what: str, limit: int | None = None) -> str:
        """Why ``nbytes`` more for ``what`` do not fit (under ``limit``, the bound by default)."""
        default = ""
        if limit is not None and self.explicit is None:
            default = f"; the default for a file with decoded images: {limit} in all"
        elif self.explicit is None:
            default = (
                f"; the default for {self.json_bytes} bytes of JSON and {self.data_bytes} of "
                f"data: {DEFAULT_BYTES_PER_JSON_BYTE} and {DEFAULT_BYTES_PER_DATA_BYTE} bytes a "
                f"byte, at least {DEFAULT_MIN_BYTES}, at most {DEFAULT_MAX_BYTES}"
            )
        return (
            f"{what} needs {nbytes} more bytes, past max_bytes = "
            f"{self.limit if limit is None else limit} ({self.spent} "
            f"already used by this file{default}); load_gltf(path, max_bytes=N) with a larger N "
            "loads it"
        )

    def charge(self, nbytes: int, path: str, what: str) -> None:
        """Count ``nbytes`` against the limit, before they are allocated (GltfError past it)."""
        images = 0 if self.explicit is not None else self.image_bytes
        if self.spent - images + nbytes > self.limit:
            where = f"{path}: " if path else ""
            raise _BudgetSpent(f"{self.name}: {where}{self.message(nbytes, what)}")
        if self.spent + nbytes > self.image_limit:  # the file's total, images included
            where = f"{path}: " if path else ""
            msg = self.message(nbytes, what, self.image_limit)
            raise _BudgetSpent(f"{self.name}: {where}{msg}")
        self.spent += nbytes
        self.high = max(self.high, self.spent)

    def charge_peak(self, kept: int, peak: int, path: str, what: str) -> None:
        """Count a decode that holds ``peak`` bytes at once and keeps ``kept`` of them (its
        output), before anything is allocated: the peak must fit under :attr:`image_limit` on
        top of what is held, then only ``kept`` stays charged (GltfError past the bound)."""
        limit = self.image_limit
        if self.spent + max(peak, kept) > limit:
            where = f"{path}: " if path else ""
            msg = self.message(max(peak, kept), what, limit)
            raise _BudgetSpent(f"{self.name}: {where}{msg}")
        self.high = max(self.high, self.spent + max(peak, kept))
        self.spent += kept
        self.image_bytes += kept


def _at(path: str, key: str) -> str:
    """JSON path of ``key`` inside ``path`` (the root's path is ``""``)."""
    return f"{path}.{key}" if path else key


def _align4(n: int) -> int:
    return (n + 3) & ~3


@dataclass(frozen=True)
class _View:
    data: bytes | bytearray | memoryview
    offset: int  # absolute, in data
    length: int
    stride: int | None


@dataclass(frozen=True)
class _Accessor:
    data: np.ndarray  # [count, rows] for vectors/scalars, [count, rows, cols] for matrices
    component_type: int
    type: str
    normalized: bool

    @property
    def count(self) -> int:
        return int(self.data.shape[0])

    def floats(self) -> NDArray[np.float64]:
        """Values as float64, normalized integers mapped to [0, 1] / [-1, 1] as the spec says."""
        a = self.data
        if not self.normalized:
            return a.astype(np.float64)
        info = np.iinfo(a.dtype)
        return np.maximum(a.astype(np.float64) / info.max, -1.0)


class _AccessorReader:
    """Typed JSON access and the binary data (buffers, bufferViews, accessors) of one glTF
    document, every byte range checked. Each ``fail`` names the JSON path."""

    def __init__(
        self,
        path: Path,
        doc: dict,
        glb_bin: bytes | memoryview | None,
        *,
        budget: Budget | None = None,
    ) -> None:
        self.path = path
        self.name = path.name
        self.base_dir = _realpath(path.parent, self.name, "")
        self.doc = doc
        self.glb_bin = glb_bin
        self.budget = Budget(path.name, DEFAULT_MAX_BYTES) if budget is None else budget
        self.notes: list[str] = []  # GltfWarnings to issue once loading is done
        self._noted: set[str] = set()
        self.zero_filled = 0  # bytes of accessors without a bufferView
        self._arrays: dict[str, list[dict]] = {}
        self._buffers: dict[int, bytes | bytearray | memoryview] = {}
        self._files: dict[tuple[int, int], bytearray] = {}  # (st_dev, st_ino) -> bytes read
        self._views: dict[int, _View] = {}
        self._accessors: dict[tuple[int, bool], _Accessor] = {}
        # Accessors whose data comes from a decoded Draco primitive: [count, k] arrays.
        self._decoded: dict[int, np.ndarray] = {}
        self._meshopt_parents: set | None = None  # buffers that compressed bufferViews name

    def fail(self, path: str, msg: str) -> NoReturn:
        """Refuse the file: a :class:`GltfError` naming it, the JSON ``path`` and why."""
        where = f"{path}: " if path else ""
        raise GltfError(f"{self.name}: {where}{msg}")

    def warn(self, path: str, msg: str) -> None:
        """Note a :class:`GltfWarning` (once per path and message) for what does not change
        what is skinned or drawn; :func:`vkdqs.gltf.load_gltf` issues the notes when it
        returns, so they point at its caller."""
        note = f"{self.name}: {path}: {msg}"
        if note not in self._noted:
            self._noted.add(note)
            self.notes.append(note)

    def warn_error(self, exc: GltfError, then: str) -> None:
        """Note a :class:`GltfError` (which names the file and JSON path) as a warning ending in
        ``then``, for what vkdqs can draw without."""
        note = f"{exc}; {then}"
        if note not in self._noted:
            self._noted.add(note)
            self.notes.append(note)

    def charge(self, nbytes: int, path: str, what: str) -> None:
        """Count ``nbytes`` the file makes us hold against ``max_bytes``, before allocating them."""
        self.budget.charge(nbytes, path, what)

    def charge_peak(self, kept: int, peak: int, path: str, what: str) -> None:
        """Count a decode's transient ``peak`` and the ``kept`` bytes it leaves
        (:meth:`Budget.charge_peak`)."""
        self.budget.charge_peak(kept, peak, path, what)

    @property
    def spent(self) -> int:
        """Bytes charged so far."""
        return self.budget.spent

    @property
    def max_bytes(self) -> int:
        """The bound now (the default grows with the data the model reads)."""
        return self.budget.limit

    # -- typed JSON access -------------------------------------------------------------------

    def array(self, key: str) -> list[dict]:
        """A top-level array of objects (``[]`` when absent), checked once and then cached."""
        cached = self._arrays.get(key)
        if cached is not None:
            return cached
        value = self.doc.get(key, [])
        if not isinstance(value, list):
            self.fail(key, f"must be an array, got {_show(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                self.fail(f"{key}[{i}]", f"must be an object, got {_show(item)}")
        self._arrays[key] = value
        return value

    def get_obj(self, parent: dict, key: str, path: str, *, required: bool = False) -> dict | None:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return None
        value = parent[key]
        if not isinstance(value, dict):
            self.fail(_at(path, key), f"must be an object, got {_show(value)}")
        return value

    def get_list(self, parent: dict, key: str, path: str, *, required: bool = False) -> list:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return []
        value = parent[key]
        if not isinstance(value, list):
            self.fail(_at(path, key), f"must be an array, got {_show(value)}")
        return value

    def get_int(
        self,
        parent: dict,
        key: str,
        path: str,
        *,
        required: bool = False,
        default: int | None = None,
        minimum: int | None = None,
    ) -> int | None:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return default
        value = parent[key]
        if type(value) is int and (minimum is None or value >= minimum):
            return value  # the common case, without building the JSON path
        return self.as_int(value, _at(path, key), minimum=minimum)

    def as_int(self, value: Any, path: str, *, minimum: int | None = None) -> int:
        # JSON Schema integers may be written 3.0; booleans are not numbers.
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, got {_show(value)}")
        if minimum is not None and value < minimum:
            self.fail(path, f"must be >= {minimum}, got {value}")
        return value

    def get_index(
        self, parent: dict, key: str, path: str, target: str, *, required: bool = False
    ) -> int | None:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return None
        value = parent[key]
        items = self._arrays.get(target)
        if type(value) is int and items is not None and 0 <= value < len(items):
            return value  # the common case, without building the JSON path
        return self.as_index(value, _at(path, key), target)

    def as_index(self, value: Any, path: str, target: str) -> int:
        i = self.as_int(value, path)
        n = len(self.array(target))
        if not 0 <= i < n:
            self.fail(path, f"{i} is not an index into {target} ({n} elements)")
        return i

    def get_str(
        self, parent: dict, key: str, path: str, *, required: bool = False, default: str = ""
    ) -> str:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return default
        value = parent[key]
        if not isinstance(value, str):
            self.fail(_at(path, key), f"must be a string, got {_show(value)}")
        return value

    def get_name(self, parent: dict, path: str) -> str:
        """``parent["name"]`` (``""`` when absent). A name changes nothing vkdqs skins or draws:
        one that is not a string is a warning, and the object is unnamed."""
        value = parent.get("name", "")
        if isinstance(value, str):
            return value
        self.warn(_at(path, "name"), f"must be a string, got {_show(value)}; left unnamed")
        return ""

    def get_bool(self, parent: dict, key: str, path: str, *, default: bool = False) -> bool:
        value = parent.get(key, default)
        if not isinstance(value, bool):
            self.fail(_at(path, key), f"must be a boolean, got {_show(value)}")
        return value

    def get_numbers(
        self, parent: dict, key: str, path: str, count: int, default: list[float]
    ) -> NDArray[np.float64]:
        if key not in parent:
            return np.array(default, dtype=np.float64)
        value = parent[key]
        where = _at(path, key)
        if not isinstance(value, list) or len(value) != count:
            self.fail(where, f"must be an array of {count} numbers, got {_show(value)}")
        for i, x in enumerate(value):
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                self.fail(f"{where}[{i}]", f"must be a number, got {_show(x)}")
            try:
                finite = math.isfinite(x)
            except OverflowError:  # an int beyond float range
                finite = False
            if not finite:
                self.fail(f"{where}[{i}]", f"must be a finite float, got {_show(x)}")
        return np.array(value, dtype=np.float64)

    # -- binary data -------------------------------------------------------------------------

    def buffer(self, i: int, *, fallback: bool = False) -> bytes | bytearray | memoryview:
        """The bytes of ``buffers[i]``; ``fallback``: a meshopt bufferView's uncompressed
        fallback is wanted (read only when its decoder is missing)."""
        if i in self._buffers:
            return self._buffers[i]
        path = f"buffers[{i}]"
        b = self.array("buffers")[i]
        byte_length = self.get_int(b, "byteLength", path, required=True, minimum=1)
        if not fallback and compression.is_fallback(self, i):
            self.fail(
                path,
                "is a meshopt fallback buffer; only bufferViews with EXT_meshopt_compression or "
                "KHR_meshopt_compression may refer to it",
            )
        if "uri" not in b:
            if fallback and (i != 0 or self.glb_bin is None):
                self.fail(path, "has no data (a meshopt fallback without uncompressed data)")
            if i != 0 or self.glb_bin is None:
                self.fail(
                    path, "has no uri (only buffers[0] of a GLB with a BIN chunk may omit it)"
                )
            data = self.glb_bin
            if len(data) < byte_length:
                self.fail(
                    f"{path}.byteLength",
                    f"{byte_length} exceeds the GLB BIN chunk ({len(data)} bytes)",
                )
        else:
            uri = self.get_str(b, "uri", path)
            upath = f"{path}.uri"
            if is_data_uri(uri):
                self.charge(data_uri_size(uri), upath, "the decoded data: URI")
                data = decode_data_uri(uri, upath, name=self.name)
            else:
                data = self._read_file(uri, upath, byte_length)
            if len(data) < byte_length:
                self.fail(
                    f"{path}.byteLength", f"{byte_length} but the data has only {len(data)} bytes"
                )
        self._buffers[i] = data
        return data

    def _read_file(self, uri: str, path: str, byte_length: int) -> memoryview:
        """The first ``byte_length`` bytes (fewer if the file is shorter) of the file ``uri``
        names in the model's folder. Buffers naming the same file share one read."""
        file = resolve_uri(self.base_dir, uri, path, name=self.name)
        what = _show(uri)
        with open_regular_file(file, path, name=self.name, inside=self.base_dir, what=what) as (
            f,
            size,
        ):
            st = os.fstat(f.fileno())
            key = (st.st_dev, st.st_ino)
            want = min(byte_length, size)
            have = self._files.get(key)
            if have is None or len(have) < want:
                self.budget.earn(data=want - (0 if have is None else len(have)))
                self.charge(want, path, f"reading {what}")
                have = read_at_most(f, want, path, name=self.name)
                self._files[key] = have
        return memoryview(have)[:byte_length]

    def view(self, i: int) -> _View:
        if i in self._views:
            return self._views[i]
        path = f"bufferViews[{i}]"
        bv = self.array("bufferViews")[i]
        b = self.get_index(bv, "buffer", path, "buffers", required=True)
        length = self.get_int(bv, "byteLength", path, required=True, minimum=1)
        offset = self.get_int(bv, "byteOffset", path, default=0, minimum=0)
        stride = self.get_int(bv, "byteStride", path)
        if stride is not None and not (4 <= stride <= 252 and stride % 4 == 0):
            self.fail(f"{path}.byteStride", f"{stride} must be a multiple of 4 in [4, 252]")
        target = bv.get("target")
        if target is not None and (
            isinstance(target, bool) or target not in (_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER)
        ):
            # a hint for GPU uploads: vkdqs reads every view by how its accessors use it
            self.warn(f"{path}.target", f"{_show(target)} is not 34962 or 34963; ignored")
        meshopt = compression.meshopt_extension(self, bv, path)
        data = self.buffer(b) if meshopt is None else b""
        declared = self.get_int(
            self.array("buffers")[b], "byteLength", f"buffers[{b}]", required=True, minimum=1
        )
        if offset + length > declared:
            self.fail(
                path,
                f"byteOffset {offset} + byteLength {length} exceeds buffers[{b}] "
                f"(byteLength {declared})",
            )
        if meshopt is not None:
            v = self._meshopt_view(i, b, meshopt, length, offset, stride)
        else:
            v = _View(data, offset, length, stride)
        self._views[i] = v
        return v

    def _meshopt_view(
        self,
        i: int,
        b: int,
        meshopt: tuple[str, dict],
        length: int,
        offset: int,
        stride: int | None,
    ) -> _View:
        """``bufferViews[i]`` decoded from its meshopt stream, or its uncompressed fallback in
        ``buffers[b]`` when the decoder is missing and the extension is not required."""
        path = f"bufferViews[{i}]"
        name, obj = meshopt
        spec = compression.meshopt_view(self, name, obj, path, length)
        mo = compression.decoder(name)
        if mo is None:
            required = name in self.get_list(self.doc, "extensionsRequired", "")
            if required:
                self.fail(spec.path, compression.missing_decoder(name))
            try:
                data = self.buffer(b, fallback=True)
            except GltfError as exc:
                why = str(exc).removeprefix(f"{self.name}: ")
                self.fail(spec.path, f"{compression.missing_decoder(name)} ({why})")
            return _View(data, offset, length, stride)
        decoded = compression.decode_meshopt(self, mo, spec, self.buffer(spec.buffer))
        return _View(decoded, 0, length, stride)

    def skip_buffer(self, i: int) -> bool:
        """Whether ``buffers[i]`` is a meshopt fallback that need not be read: tagged
        ``fallback``, or without ``uri`` (and not the GLB chunk) and used by a compressed
        bufferView."""
        if compression.is_fallback(self, i):
            return True
        b = self.array("buffers")[i]
        if "uri" in b or (i == 0 and self.glb_bin is not None):
            return False
        if self._meshopt_parents is None:
            self._meshopt_parents = {
                bv.get("buffer")
                for k, bv in enumerate(self.array("bufferViews"))  # over bufferViews, once
                if compression.meshopt_extension(self, bv, f"bufferViews[{k}]")
            }
        return i in self._meshopt_parents

    def _strided(
        self,
        view_index: int,
        byte_offset: int,
        count: int,
        comp: np.dtype,
        cols: int,
        rows: int,
        path: str,
        *,
        strided: bool,
    ) -> np.ndarray:
        """``[count, cols, rows]`` elements read from a bufferView, bounds and alignment checked."""
        v = self.view(view_index)
        size = comp.itemsize
        col_stride = _align4(rows * size) if cols > 1 else rows * size
        elem = cols * col_stride
        if v.stride is not None and not strided:
            where = f"bufferViews[{view_index}].byteStride"
            if v.stride != elem:
                self.fail(
                    where,
                    f"{v.stride} must not be defined for data other than vertex attributes "
                    f"(used by {path}, {elem}-byte elements)",
                )
            # equal to the element size it reads the same (three.js's Soldier.glb has it)
            self.warn(where, f"defined for data other than vertex attributes ({path}); ignored")
        stride = v.stride if v.stride is not None else elem
        if stride < elem:
            self.fail(
                f"bufferViews[{view_index}].byteStride",
                f"{stride} is smaller than the {elem}-byte elements of {path}",
            )
        if byte_offset % size or (v.offset + byte_offset) % size:
            self.fail(
                f"{path}.byteOffset",
                f"{byte_offset} (+ bufferViews[{view_index}].byteOffset {v.offset}) is not "
                f"aligned to the {size}-byte component size",
            )
        end = byte_offset + stride * (count - 1) + elem
        if end > v.length:
            self.fail(
                f"{path}.count",
                f"{count} elements of {elem} bytes from offset {byte_offset} exceed "
                f"bufferViews[{view_index}] (byteLength {v.length})",
            )
        self.charge(count * cols * rows * size, path, f"decoding {count} elements")
        arr = np.ndarray(
            (count, cols, rows),
            dtype=comp,
            buffer=v.data,
            offset=v.offset + byte_offset,
            strides=(stride, col_stride, size),
        )
        return arr.astype(comp.newbyteorder("="))

    def accessor(self, i: int, *, vertex: bool | None = False) -> _Accessor:
        """Decode ``accessors[i]`` (dense part, then sparse substitution), fully checked.

        ``vertex``: True for vertex attributes (strided views allowed, 4-byte alignment),
        False for other uses (no byteStride), None to check an accessor nothing uses (not cached).
        """
        key = (i, bool(vertex))
        if vertex is not None and key in self._accessors:
            return self._accessors[key]
        path = f"accessors[{i}]"
        a = self.array("accessors")[i]
        ct = self.get_int(a, "componentType", path, required=True)
        if ct not in _COMPONENTS:
            self.fail(f"{path}.componentType", f"{ct} is not a glTF component type")
        count = self.get_int(a, "count", path, required=True, minimum=1)
        type_ = self.get_str(a, "type", path, required=True)
        if type_ not in _TYPES:
            self.fail(f"{path}.type", f"{_show(type_)} is not a glTF accessor type")
        normalized = self.get_bool(a, "normalized", path)
        if normalized and ct in (UNSIGNED_INT, FLOAT):
            # only 8- and 16-bit integers are normalized: the values read the same without it
            self.warn(f"{path}.normalized", f"is true for {_COMPONENTS[ct][0]} components; ignored")
            normalized = False
        comp = _COMPONENTS[ct][1]
        cols, rows = _TYPES[type_]
        byte_offset = self.get_int(a, "byteOffset", path, default=0, minimum=0)
        view_index = self.get_index(a, "bufferView", path, "bufferViews")
        decoded = self._decoded.get(i)
        if decoded is not None:
            data = self._from_draco(decoded, path, ct, count, type_, normalized)
            view_index = None
        elif view_index is None:
            if "byteOffset" in a:
                # the accessor is zeros (and its sparse values) wherever it would start
                self.warn(f"{path}.byteOffset", "is defined without a bufferView; ignored")
            nbytes = count * cols * rows * comp.itemsize
            if self.zero_filled + nbytes > MAX_ZERO_FILL_BYTES:
                self.fail(
                    f"{path}.count",
                    f"{count} elements without a bufferView would need {nbytes} bytes "
                    f"(vkdqs allows {MAX_ZERO_FILL_BYTES} for all such accessors of a file, "
                    f"{self.zero_filled} already used)",
                )
            self.charge(nbytes, f"{path}.count", f"{count} elements without a bufferView")
            self.zero_filled += nbytes
            data = np.zeros((count, cols, rows), dtype=_NATIVE[ct])
        else:
            data = self._strided(
                view_index, byte_offset, count, comp, cols, rows, path, strided=vertex is not False
            )
            if vertex:
                stride = self.view(view_index).stride
                if byte_offset % 4 or (stride is None and data[0].nbytes % 4):
                    # for GPUs that read the buffer as it is; vkdqs reads it element by element
                    # (each component aligned, as checked above), the same at any offset
                    self.warn(
                        path,
                        f"vertex attribute elements must be 4-byte aligned (byteOffset "
                        f"{byte_offset}, element size {data[0].nbytes}); read as they are",
                    )
        sparse = self.get_obj(a, "sparse", path) if decoded is None else None
        if sparse is not None:
            self._apply_sparse(sparse, f"{path}.sparse", data, comp, cols, rows, count)
        # Zeros are finite: only data from the file (dense or sparse) needs the check.
        from_file = view_index is not None or sparse is not None or decoded is not None
        if ct == FLOAT and from_file and not np.isfinite(data).all():
            e = int(np.argwhere(~np.isfinite(data))[0][0])
            values = data[e].ravel().tolist()
            if vertex is None:  # checked only because nothing vkdqs reads uses it
                self.warn(path, f"element {e} is not finite ({values}); nothing vkdqs reads it")
            else:
                self.fail(path, f"element {e} is not finite ({values})")
        # [count, cols, rows] column-major storage -> [count, rows] or [count, rows, cols].
        if cols > 1:
            self.charge(data.nbytes, path, "transposing matrices")
        data = data[:, 0, :] if cols == 1 else np.ascontiguousarray(data.transpose(0, 2, 1))
        acc = _Accessor(data, ct, type_, normalized)
        if vertex is not None:
            self._accessors[key] = acc
        return acc

    def _from_draco(
        self, decoded: np.ndarray, path: str, ct: int, count: int, type_: str, normalized: bool
    ) -> np.ndarray:
        """``[count, 1, rows]`` data of an accessor filled from a decoded Draco primitive."""
        cols, rows = _TYPES[type_]
        if cols != 1:
            self.fail(f"{path}.type", f"{type_}: a Draco attribute is a scalar or a vector")
        if decoded.shape != (count, rows):
            self.fail(
                path,
                f"count {count} x {type_} does not match the Draco stream's "
                f"{decoded.shape[0]} x {decoded.shape[1]} values",
            )
        want = _NATIVE[ct]
        if decoded.dtype.kind not in "fiu":
            self.fail(path, f"the Draco stream holds {decoded.dtype} values")
        if decoded.dtype.kind in "iu" and ct == FLOAT:
            self.fail(
                f"{path}.componentType",
                f"FLOAT but the Draco stream holds {decoded.dtype} integers",
            )
        if ct != FLOAT:
            # Integer accessors (KHR_mesh_quantization, joints, indices) take the stream's values
            # as they are; DracoPy hands some integer attributes over as floats or wider ints.
            if decoded.dtype.kind == "f" and not np.array_equal(decoded, np.round(decoded)):
                self.fail(
                    f"{path}.componentType",
                    f"{_COMPONENTS[ct][0]} but the Draco stream holds values that are not integers",
                )
            info = np.iinfo(want)
            lo, hi = (decoded.min(), decoded.max()) if decoded.size else (0, 0)
            if lo < info.min or hi > info.max:
                self.fail(
                    f"{path}.componentType",
                    f"{_COMPONENTS[ct][0]} cannot hold the Draco values in [{lo}, {hi}]",
                )
        self.charge(count * rows * want.itemsize, path, f"decoding {count} elements")
        return decoded.astype(want)[:, None, :]

    def check_unused(self) -> None:
        """Check buffers, bufferViews and accessors that nothing we load refers to.

        Their bytes must be where the file says, so that every load reads the same document;
        what only their values break (a non-finite element of an unused accessor) warns.
        """
        for i in range(len(self.array("buffers"))):
            if self.skip_buffer(i):
                b = self.array("buffers")[i]
                self.get_int(b, "byteLength", f"buffers[{i}]", required=True, minimum=1)
                if "uri" in b:
                    uri = self.get_str(b, "uri", f"buffers[{i}]")
                    if not is_data_uri(uri):
                        resolve_uri(self.base_dir, uri, f"buffers[{i}].uri", name=self.name)
                continue
            self.buffer(i)
        for i in range(len(self.array("bufferViews"))):
            self.view(i)
        for i in range(len(self.array("accessors"))):
            if (i, True) not in self._accessors and (i, False) not in self._accessors:
                self.accessor(i, vertex=None)

    def _apply_sparse(
        self,
        sparse: dict,
        path: str,
        data: np.ndarray,
        comp: np.dtype,
        cols: int,
        rows: int,
        count: int,
    ) -> None:
        n = self.get_int(sparse, "count", path, required=True, minimum=1)
        if n > count:
            self.fail(f"{path}.count", f"{n} exceeds the accessor's count {count}")
        ind = self.get_obj(sparse, "indices", path, required=True)
        ipath = f"{path}.indices"
        ibv = self.get_index(ind, "bufferView", ipath, "bufferViews", required=True)
        ioff = self.get_int(ind, "byteOffset", ipath, default=0, minimum=0)
        ict = self.get_int(ind, "componentType", ipath, required=True)
        if ict not in (UNSIGNED_BYTE, UNSIGNED_SHORT, UNSIGNED_INT):
            self.fail(f"{ipath}.componentType", f"{ict} must be 5121, 5123 or 5125")
        idx = self._strided(ibv, ioff, n, _COMPONENTS[ict][1], 1, 1, ipath, strided=False)
        self.charge(8 * n, ipath, "sparse indices")
        idx = idx.reshape(-1).astype(np.int64)
        if np.any(idx >= count):
            k = int(np.argmax(idx >= count))
            self.fail(ipath, f"element {k} is {idx[k]}, out of range for count {count}")
        if np.any(np.diff(idx) <= 0):
            k = int(np.argmax(np.diff(idx) <= 0)) + 1
            self.fail(ipath, f"must be strictly increasing; element {k} is {idx[k]}")
        val = self.get_obj(sparse, "values", path, required=True)
        vpath = f"{path}.values"
        vbv = self.get_index(val, "bufferView", vpath, "bufferViews", required=True)
        voff = self.get_int(val, "byteOffset", vpath, default=0, minimum=0)
        data[idx] = self._strided(vbv, voff, n, comp, cols, rows, vpath, strided=False)

    def typed_accessor(
        self,
        i: int,
        user: str,
        types: tuple[str, ...],
        components: tuple[tuple[int, bool], ...],
        *,
        vertex: bool = False,
    ) -> _Accessor:
        """An accessor with a type in ``types``, (componentType, normalized) in ``components``."""
        acc = self.accessor(i, vertex=vertex)
        if acc.type not in types:
            self.fail(user, f"accessors[{i}] has type {acc.type}; need {' or '.join(types)}")
        if (acc.component_type, acc.normalized) not in components:
            allowed = ", ".join(
                ("normalized " if norm else "") + _COMPONENTS[c][0] for c, norm in components
            )
            got = ("normalized " if acc.normalized else "") + _COMPONENTS[acc.component_type][0]
            self.fail(user, f"accessors[{i}] has {got} components; need {allowed}")
        return acc
