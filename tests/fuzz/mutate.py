"""glTF-aware mutations for the fuzzer: the JSON is changed as a tree and the GLB rebuilt.

libFuzzer's own mutations flip bytes; on a GLB most of them break the container or the JSON
syntax, and the loader refuses the file before it reaches what the file describes. Half the
mutations here do that (:func:`atheris.Mutate`); the others parse the document, change it as a
tree (delete a key, give it a wrong type, an out-of-range or neighbouring number, another
value from the same document, shuffle or grow an array) and write it back, in a valid
container whose BIN chunk libFuzzer may also mutate, so the mutations reach every check.
"""

from __future__ import annotations

import copy
import json
import random
import struct
from collections.abc import Callable, Iterator
from typing import Any

_MAGIC, _JSON, _BIN = 0x46546C67, 0x4E4F534A, 0x004E4942
_VALUES: list[Any] = [
    -1,
    0,
    1,
    2,
    3,
    4,
    5,
    -(2**31),
    2**31,
    2**32 + 5,
    2**63,
    10**12,
    1e300,
    -1e300,
    0.5,
    3.0,
    "7",
    "",
    "\ud800",
    None,
    True,
    False,
    [],
    {},
    [0, 0, 0, 0],
    [1e300, 0, 0, 1],
    "LINEAR",
    "CUBICSPLINE",
    "STEP",
    "weights",
    "rotation",
    "VEC3",
    "MAT4",
    5121,
    5123,
    5125,
    5126,
    "data:application/octet-stream;base64,AAAA",
    "../secret.bin",
    "texture.png",
    "data.bin",
]


def split(data: bytes) -> tuple[bytes, bytes | None] | None:
    """(JSON text, BIN chunk or None) of a GLB or a .gltf; None when it is neither."""
    if data[:4] != b"glTF":
        return data, None
    if len(data) < 20:
        return None
    length, kind = struct.unpack_from("<II", data, 12)
    if kind != _JSON or 20 + length > len(data):
        return None
    text = data[20 : 20 + length]
    binary = None
    rest = 20 + length
    if rest + 8 <= len(data):
        blen, bkind = struct.unpack_from("<II", data, rest)
        if bkind == _BIN:
            binary = data[rest + 8 : rest + 8 + blen]
    return text, binary


def glb(text: bytes, binary: bytes | None) -> bytes:
    """A well-formed GLB of ``text`` and ``binary`` (both padded to 4 bytes)."""
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), _JSON) + text
    if binary is not None:
        binary += b"\0" * (-len(binary) % 4)
        chunks += struct.pack("<II", len(binary), _BIN) + binary
    return struct.pack("<III", _MAGIC, 2, 12 + len(chunks)) + chunks


def _places(node: Any) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) of a JSON tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield node, k
            yield from _places(v)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield node, i
            yield from _places(v)


def mutate_document(doc: dict, rng: random.Random) -> None:
    """Change one place of the tree, in place."""
    places = list(_places(doc))
    if not places:
        doc[rng.choice(["nodes", "meshes", "accessors", "scene"])] = rng.choice(_VALUES)
        return
    container, key = rng.choice(places)
    value = container[key]
    action = rng.randrange(6)
    if action == 0:
        del container[key]
    elif action == 1 and isinstance(value, (int, float)) and not isinstance(value, bool):
        container[key] = rng.choice([value + 1, value - 1, value * 2, -value, value + 4, 0])
    elif action == 2 and isinstance(value, list) and value:
        rng.shuffle(value)
    elif action == 3 and isinstance(value, list) and value:
        for _ in range(rng.choice([1, 1, 2, 100])):
            value.append(copy.deepcopy(rng.choice(value)))
    elif action == 4:
        other, other_key = rng.choice(places)  # a plausible but wrong value from elsewhere
        container[key] = copy.deepcopy(other[other_key])
    else:
        container[key] = copy.deepcopy(rng.choice(_VALUES))


def mutate(
    data: bytes, max_size: int, seed: int, byte_mutate: Callable[[bytes, int], bytes]
) -> bytes:
    """One mutation of a model file: libFuzzer's (``byte_mutate``) half the time, else a tree
    mutation of its JSON, written back in a valid container."""
    rng = random.Random(seed)
    parts = split(data)
    if rng.random() < 0.5 or parts is None:
        return byte_mutate(data, max_size)
    text, binary = parts
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return byte_mutate(data, max_size)
    if not isinstance(doc, dict):
        return byte_mutate(data, max_size)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        mutate_document(doc, rng)
    new_text = json.dumps(doc, separators=(",", ":")).encode()
    if binary is not None and rng.random() < 0.2:
        binary = byte_mutate(binary, max(len(binary), 64))
    out = glb(new_text, binary) if data[:4] == b"glTF" else new_text
    return out if len(out) <= max_size else byte_mutate(data, max_size)
