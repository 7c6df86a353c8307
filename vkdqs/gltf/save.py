"""A small glTF 2.0 writer: build a document from numpy arrays and save it as .gltf or .glb.

It writes what :mod:`vkdqs.gltf` reads, so tests and tools can make glTF files in code::

    b = GltfBuilder()
    pos = b.add_accessor(positions, target="vertex", min_max=True)
    b.add("meshes", {"primitives": [{"attributes": {"POSITION": pos}}]})
    b.save("model.glb")                       # GLB, one BIN chunk
    b.save("model.gltf")                      # JSON + model.bin next to it
    b.save("model.gltf", embed=True)          # JSON with a base64 data: URI

:func:`save` writes an existing JSON document and its binary buffer the same three ways, which is
how tests write deliberately malformed files. The writer does not validate the document.

:func:`write_glb` is the one writer of the GLB container (the bake's ``.glb`` uses it too): its
BIN chunk comes as pieces in order, so a buffer larger than memory can stream from a file.
"""

from __future__ import annotations

import base64
import copy
import json
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import LimitError
from ..files import atomic_output, write_bytes

__all__ = ["GLB_MAX_BYTES", "GltfBuilder", "glb_length", "json_bytes", "save", "write_glb"]

_COMPONENT_OF_DTYPE = {
    np.dtype(np.int8): 5120,
    np.dtype(np.uint8): 5121,
    np.dtype(np.int16): 5122,
    np.dtype(np.uint16): 5123,
    np.dtype(np.uint32): 5125,
    np.dtype(np.float32): 5126,
}
_DTYPE_OF_COMPONENT = {v: k for k, v in _COMPONENT_OF_DTYPE.items()}
_TYPE_OF_WIDTH = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4"}
_TARGETS = {"vertex": 34962, "index": 34963, None: None}
_GLB_MAGIC = 0x46546C67  # b"glTF"
_CHUNK_JSON = 0x4E4F534A  # b"JSON"
_CHUNK_BIN = 0x004E4942  # b"BIN\0"
#: The largest GLB: its header holds the file's length as a uint32.
GLB_MAX_BYTES = 2**32 - 1


def json_bytes(document: dict) -> bytes:
    """The compact UTF-8 JSON of a glTF document, as a ``.gltf`` or a GLB's JSON chunk holds it."""
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def glb_length(json_length: int, bin_length: int = 0) -> int:
    """Bytes of a GLB whose JSON is ``json_length`` bytes and whose binary buffer is
    ``bin_length`` bytes (0: no BIN chunk), headers and padding included."""
    total = 12 + 8 + json_length + (-json_length % 4)
    if bin_length:
        total += 8 + bin_length + (-bin_length % 4)
    return total


def write_glb(
    out: IO[bytes],
    json_text: bytes,
    bin_length: int = 0,
    bin_chunks: Iterable[bytes | bytearray | memoryview] = (),
) -> int:
    """Write a GLB to ``out``: the header, the JSON chunk (``json_text`` padded with spaces) and,
    when ``bin_length`` > 0, the BIN chunk: ``bin_chunks`` written in order as they come (so the
    buffer can stream from a file), ``bin_length`` bytes in all, padded with zeros.

    Returns the bytes written. Raises :class:`~vkdqs.LimitError` past :data:`GLB_MAX_BYTES`
    (before writing anything) and ValueError when the chunks do not add up to ``bin_length``.
    """
    total = glb_length(len(json_text), bin_length)
    if total > GLB_MAX_BYTES:
        raise LimitError(f"a GLB of {total} bytes is past the format's 4 GiB")
    pad = -len(json_text) % 4
    out.write(struct.pack("<III", _GLB_MAGIC, 2, total))
    out.write(struct.pack("<II", len(json_text) + pad, _CHUNK_JSON))
    out.write(json_text)
    out.write(b" " * pad)
    if bin_length:
        out.write(struct.pack("<II", bin_length + (-bin_length % 4), _CHUNK_BIN))
    written = 0
    for chunk in bin_chunks:  # pieces of the buffer, each written as it comes
        out.write(chunk)
        written += memoryview(chunk).nbytes
    if written != bin_length:
        raise ValueError(f"the BIN chunk has {written} bytes, not the {bin_length} announced")
    out.write(b"\0" * (-bin_length % 4))
    return total


def save(path: str | Path, document: dict, binary: bytes = b"", *, embed: bool = False) -> None:
    """Write a glTF JSON document and its one binary buffer.

    Parameters
    ----------
    path : str or Path
        ``*.glb`` writes a GLB (JSON chunk + BIN chunk when ``binary`` is not empty); any other
        suffix writes JSON, with ``binary`` in ``<stem>.bin`` next to it or, with ``embed``, in a
        base64 ``data:`` URI.
    document : dict
        The glTF JSON. When ``binary`` is given, ``buffers[0]`` is (re)written to point at it;
        the caller's dict is not modified.
    binary : bytes
        Contents of ``buffers[0]``.
    embed : bool, keyword-only
        For ``.gltf``: embed the buffer as a data URI instead of writing a ``.bin`` file.

    Each file is written through :mod:`vkdqs.files`: a temporary renamed over it when
    complete, never through a link planted at its name.
    """
    path = Path(path)
    doc = copy.deepcopy(document)
    if binary:
        buffers = doc.setdefault("buffers", [{}])
        if isinstance(buffers, list) and not buffers:
            buffers.append({})
        # A malformed document (buffers not an array of objects) is written as it is.
        if isinstance(buffers, list) and isinstance(buffers[0], dict):
            buf = dict(buffers[0])
            # Keep a byteLength the caller set (tests write wrong ones on purpose).
            buf.setdefault("byteLength", len(binary))
            buf.pop("uri", None)
            if path.suffix.lower() != ".glb":
                if embed:
                    data = base64.b64encode(binary).decode("ascii")
                    buf["uri"] = f"data:application/octet-stream;base64,{data}"
                else:
                    bin_path = path.with_suffix(".bin")
                    write_bytes(bin_path, binary)
                    buf["uri"] = bin_path.name
            buffers[0] = buf
    text = json_bytes(doc)
    if path.suffix.lower() != ".glb":
        write_bytes(path, text)
        return
    with atomic_output(path) as out:
        write_glb(out, text, len(binary), (binary,))


class GltfBuilder:
    """Collects a glTF document and one binary buffer.

    Attributes
    ----------
    document : dict
        The JSON being built; edit it freely (``add`` appends to a top-level array).
    binary : bytearray
        ``buffers[0]``; every bufferView starts at a 4-byte boundary.
    """

    def __init__(self) -> None:
        self.document: dict[str, Any] = {"asset": {"version": "2.0", "generator": "vkdqs"}}
        self.binary = bytearray()

    def add(self, key: str, item: dict) -> int:
        """Append ``item`` to the top-level array ``key``; returns its index."""
        items = self.document.setdefault(key, [])
        items.append(item)
        return len(items) - 1

    def add_buffer_view(
        self, data: bytes, *, byte_stride: int | None = None, target: str | None = None
    ) -> int:
        """Append raw bytes as a new bufferView; returns its index.

        Parameters
        ----------
        data : bytes
        byte_stride : int, optional
        target : {"vertex", "index", None}
        """
        self.binary.extend(b"\0" * (-len(self.binary) % 4))
        view: dict[str, Any] = {
            "buffer": 0,
            "byteOffset": len(self.binary),
            "byteLength": len(data),
        }
        if byte_stride is not None:
            view["byteStride"] = byte_stride
        if _TARGETS[target] is not None:
            view["target"] = _TARGETS[target]
        self.binary.extend(data)
        self.document.setdefault("buffers", [{"byteLength": 0}])
        self.document["buffers"][0]["byteLength"] = len(self.binary)
        return self.add("bufferViews", view)

    @staticmethod
    def _layout(array: ArrayLike, component_type: int | None, type_: str | None):
        a = np.asarray(array)
        if component_type is None:
            component_type = _COMPONENT_OF_DTYPE[a.dtype]
        a = a.astype(_DTYPE_OF_COMPONENT[component_type].newbyteorder("<"))
        if type_ is None:
            if a.ndim == 3 and a.shape[1:] in ((2, 2), (3, 3), (4, 4)):
                type_ = f"MAT{a.shape[1]}"
            else:
                type_ = _TYPE_OF_WIDTH[1 if a.ndim == 1 else a.shape[1]]
        if type_.startswith("MAT"):
            # glTF matrices are column-major; only 4-byte components (no column padding) here.
            a = np.ascontiguousarray(np.swapaxes(a, 1, 2))
        return a.reshape(len(a), -1), component_type, type_

    def add_accessor(
        self,
        array: ArrayLike,
        *,
        component_type: int | None = None,
        type: str | None = None,
        normalized: bool = False,
        target: str | None = None,
        byte_stride: int | None = None,
        min_max: bool = False,
    ) -> int:
        """Store ``array`` in its own bufferView and add an accessor for it; returns its index.

        Parameters
        ----------
        array : array_like, [count], [count, n] or [count, n, n]
            Converted to ``component_type`` (default: from the dtype, which must then be a glTF
            one); matrices are written column-major.
        type : str, optional
            Default from the shape (SCALAR, VECn, MATn).
        normalized : bool
        target : {"vertex", "index", None}
        byte_stride : int, optional
            Pad each element to this many bytes (an interleaved-style view of one attribute).
        min_max : bool
            Write ``min``/``max`` (required by the spec for POSITION and animation inputs).
        """
        flat, ct, type_ = self._layout(array, component_type, type)
        raw = flat.view(np.uint8).reshape(len(flat), -1)
        if byte_stride is not None:
            padded = np.zeros((len(flat), byte_stride), np.uint8)
            padded[:, : raw.shape[1]] = raw
            raw = padded
        view = self.add_buffer_view(raw.tobytes(), byte_stride=byte_stride, target=target)
        return self._accessor(view, 0, flat, ct, type_, normalized, min_max)

    def _accessor(self, view, offset, flat, ct, type_, normalized, min_max) -> int:
        acc: dict[str, Any] = {"componentType": ct, "count": len(flat), "type": type_}
        if view is not None:
            acc["bufferView"] = view
            if offset:
                acc["byteOffset"] = offset
        if normalized:
            acc["normalized"] = True
        if min_max:
            acc["min"] = flat.min(axis=0).tolist()
            acc["max"] = flat.max(axis=0).tolist()
        return self.add("accessors", acc)

    def add_interleaved(self, arrays: list[ArrayLike], *, target: str = "vertex") -> list[int]:
        """Store several per-vertex arrays interleaved in one strided bufferView.

        Parameters
        ----------
        arrays : list of array_like, each [count, n]
            Same count; dtypes as in :meth:`add_accessor`. Each element is padded to 4 bytes.

        Returns
        -------
        list of int
            One accessor index per array.
        """
        layouts = [self._layout(a, None, None) for a in arrays]
        count = len(layouts[0][0])
        sizes = [flat.itemsize * flat.shape[1] for flat, _, _ in layouts]
        offsets = np.cumsum([0] + [s + (-s % 4) for s in sizes])
        stride = int(offsets[-1])
        raw = np.zeros((count, stride), np.uint8)
        for (flat, _, _), off, size in zip(layouts, offsets, sizes, strict=False):
            raw[:, off : off + size] = flat.view(np.uint8).reshape(count, -1)
        view = self.add_buffer_view(raw.tobytes(), byte_stride=stride, target=target)
        return [
            self._accessor(view, int(off), flat, ct, type_, False, False)
            for (flat, ct, type_), off in zip(layouts, offsets, strict=False)
        ]

    def add_sparse_accessor(
        self,
        base: ArrayLike | None,
        indices: ArrayLike,
        values: ArrayLike,
        *,
        count: int | None = None,
        index_component_type: int = 5125,
        component_type: int | None = None,
        type: str | None = None,
        normalized: bool = False,
    ) -> int:
        """Add a sparse accessor: ``base`` (or zeros when None) with ``values`` at ``indices``.

        Parameters
        ----------
        base : array_like, [count, ...] or None
            Dense data in a bufferView; None for an accessor without one (initialized to zeros).
        indices : array_like of int, [n]
            Strictly increasing element indices.
        values : array_like, [n, ...]
        count : int, optional
            Element count when ``base`` is None.
        index_component_type : int
            5121, 5123 or 5125.
        """
        vflat, ct, type_ = self._layout(values, component_type, type)
        if base is not None:
            acc_index = self.add_accessor(
                base, component_type=ct, type=type_, normalized=normalized, target="vertex"
            )
            acc = self.document["accessors"][acc_index]
        else:
            acc = {"componentType": ct, "count": int(count), "type": type_}
            if normalized:
                acc["normalized"] = True
            acc_index = self.add("accessors", acc)
        idx = np.asarray(indices).astype(_DTYPE_OF_COMPONENT[index_component_type])
        acc["sparse"] = {
            "count": len(idx),
            "indices": {
                "bufferView": self.add_buffer_view(
                    idx.astype(idx.dtype.newbyteorder("<")).tobytes()
                ),
                "componentType": index_component_type,
            },
            "values": {"bufferView": self.add_buffer_view(vflat.tobytes())},
        }
        return acc_index

    def save(self, path: str | Path, *, embed: bool = False) -> None:
        """Write the document (see :func:`save`)."""
        save(path, self.document, bytes(self.binary), embed=embed)
