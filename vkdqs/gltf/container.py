"""The two containers a glTF document comes in: the GLB binary (a JSON chunk and an optional BIN
chunk) and the JSON text itself, both checked before any of the document is read."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import NoReturn

import numpy as np

from vkdqs.gltf.errors import GltfError

GLB_MAGIC = 0x46546C67  # b"glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942


def _parse_glb(
    raw: bytes | bytearray, name: str, notes: list[str] | None = None
) -> tuple[memoryview, memoryview | None]:
    """Split a GLB into its JSON chunk and optional BIN chunk (views of ``raw``, not copies),
    checking the container.

    What a GLB reader reads the same however it is laid out (bytes after the header's
    ``length``, a chunk length that is not a multiple of 4, the one JSON or BIN chunk in
    another place) is appended to ``notes`` as a warning, as three.js reads it.
    """

    def fail(msg: str) -> NoReturn:
        raise GltfError(f"{name}: {msg}")

    def warn(msg: str) -> None:
        if notes is not None:
            notes.append(f"{name}: {msg}")

    if len(raw) < 12:
        fail(f"GLB header: the file has {len(raw)} bytes, a GLB header needs 12")
    magic, version, length = struct.unpack_from("<III", raw, 0)
    if magic != GLB_MAGIC:
        fail(f"GLB header: magic {raw[:4]!r} is not b'glTF'")
    if version != 2:
        fail(f"GLB header: version {version} is not supported (only glTF 2)")
    if length > len(raw):
        fail(f"GLB header: length {length} but the file has only {len(raw)} bytes (truncated)")
    if length < len(raw):
        warn(
            f"GLB header: length {length} but the file has {len(raw)} bytes; the "
            f"{len(raw) - length} after it are ignored"
        )
    chunks: list[tuple[int, memoryview]] = []
    whole = memoryview(raw)
    offset = 12
    while offset < length:
        where = f"GLB chunk {len(chunks)} at byte {offset}"
        if length - offset < 8:
            fail(f"{where}: truncated chunk header ({length - offset} bytes left, need 8)")
        chunk_length, chunk_type = struct.unpack_from("<II", raw, offset)
        if chunk_length % 4:
            warn(f"{where}: chunkLength {chunk_length} is not a multiple of 4 (not padded)")
        start = offset + 8
        if start + chunk_length > length:
            fail(
                f"{where}: truncated: chunkLength {chunk_length} but only "
                f"{length - start} bytes follow"
            )
        chunks.append((chunk_type, whole[start : start + chunk_length]))
        offset = start + chunk_length
    found: dict[int, int] = {}  # chunk type -> the chunk's index
    for i, (chunk_type, _) in enumerate(chunks):
        if chunk_type in (_CHUNK_JSON, _CHUNK_BIN):
            what = "JSON" if chunk_type == _CHUNK_JSON else "BIN"
            if chunk_type in found:  # which one would a reader take?
                fail(f"GLB chunk {i}: a second {what} chunk (chunk {found[chunk_type]} is one)")
            found[chunk_type] = i
        # Chunks of unknown types are skipped, as the spec requires.
    if _CHUNK_JSON not in found:
        fail("GLB: no JSON chunk (the first chunk must be the JSON chunk)")
    if found[_CHUNK_JSON] != 0:
        warn(f"GLB chunk {found[_CHUNK_JSON]}: the JSON chunk is not the first chunk")
    if found.get(_CHUNK_BIN, 1) != 1:
        warn(f"GLB chunk {found[_CHUNK_BIN]}: the BIN chunk is not the second chunk")
    binary = chunks[found[_CHUNK_BIN]][1] if _CHUNK_BIN in found else None
    return chunks[found[_CHUNK_JSON]][1], binary


def _reject_constant(token: str) -> NoReturn:
    raise ValueError(f"{token} is not valid JSON")


def _json_cost(text: str) -> int:
    """Upper bound of the bytes ``json.loads(text)`` allocates besides ``text``.

    Python objects are much bigger than their JSON text (``{},`` is 3 bytes of text and a 64-byte
    dict), so the parse is charged per value: every value but the first follows a ``,``, ``:`` or
    an opening bracket, and none of them costs more than about 100 bytes. Long strings (base64
    data: URIs) have none of these characters and cost what their text costs.
    """
    tokens = sum(text.count(c) for c in (",", ":", "{", "["))
    return len(text) + 128 * (tokens + 1)


def _text_bytes(data: bytes | bytearray | memoryview) -> int:
    """What ``str(data, "utf-8")`` allocates at most: 1, 2 or 4 bytes a character, as the
    widest character needs (read from the UTF-8 lead bytes, one vectorized pass)."""
    top = int(np.frombuffer(data, dtype=np.uint8).max()) if len(data) else 0
    width = 1 if top < 0xC4 else 2 if top < 0xF0 else 4
    return width * len(data) + 80


def _parse_json(
    data: bytes | bytearray | memoryview,
    name: str,
    charge: Callable[[int], None] | None = None,
    notes: list[str] | None = None,
    prescan: Callable[[bytes | bytearray | memoryview], None] | None = None,
) -> dict:
    """Parse the JSON text of a glTF document; ``charge(bytes)`` is called before parsing with
    an upper bound of what the parse allocates (it raises to refuse the file), then
    ``prescan(text bytes)`` (it raises to refuse the file before it is parsed; it allocates
    less than the parse would). A byte order mark, which glTF forbids, is skipped with a
    warning appended to ``notes``."""
    bom = bytes(data[:3]) == b"\xef\xbb\xbf"
    if bom:
        if notes is not None:
            notes.append(f"{name}: JSON starts with a byte order mark, which glTF forbids; skipped")
        data = memoryview(data)[3:]  # a view: the text is not copied
    if charge is not None:
        charge(_text_bytes(data))
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError as exc:
        raise GltfError(f"{name}: JSON is not valid UTF-8 (byte {exc.start + 3 * bom})") from None
    if charge is not None:
        charge(_json_cost(text))
    if prescan is not None:
        prescan(data)
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise GltfError(
            f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # NaN/Infinity tokens
        raise GltfError(f"{name}: invalid JSON: {exc}") from None
    except RecursionError:
        raise GltfError(f"{name}: invalid JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise GltfError(f"{name}: the JSON root must be an object, got {type(doc).__name__}")
    return doc
