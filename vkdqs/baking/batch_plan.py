"""What a batch bake (:func:`vkdqs.bake_batch`) does with each model, decided the same way on the
client and on the workers: its clips and their labels, the output file of each (model, clip)
pair, and the pair's key (what makes a manifest record reusable).

* A clip's label is the animation's name; an unnamed one is ``#<index>``, and a name several of
  the model's animations share becomes ``<name>#<index>`` for each. ``rest`` is the rest pose
  (what a model without animations bakes).
* An output is ``<model stem>__<clip>.<ext>``, both parts made safe file names (letters, digits,
  ``.``, ``_``, ``-``; anything else becomes ``_``). Models of the batch whose safe stems match
  (ignoring case) each get ``-<8 hex digits of the SHA-256 of their absolute path>`` after the
  stem; clips of one model whose safe names match get ``-<animation index>``.
* A key is the SHA-256 of the input's content (:func:`describe`: the file, and for the files a
  ``.gltf`` or ``.glb`` references, their URIs and contents) and the options that change the
  output: clip, method, fps, start, end and format.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Versions the key: a change to what a key covers makes every old record stale.
KEY_VERSION = "vkdqs-batch-1"
#: The most JSON :func:`describe` reads to list a model's clips (larger: the worker lists them).
MAX_JSON_BYTES = 256 * 2**20
#: Characters of a clip's or stem's safe name kept in an output's name.
MAX_NAME_CHARS = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CHUNK = 2**20


@dataclass(frozen=True)
class Pair:
    """One (model, clip) pair of a model: the clip's label, the animation (index, or None for
    the rest pose), the output's file name, and an error when the clip cannot be baked (a named
    clip the model lacks)."""

    clip: str
    animation: int | None
    output: str
    error: str | None = None


def safe_name(text: str, fallback: str) -> str:
    """``text`` as a safe part of a file name (never empty, never starting with a dot)."""
    name = _UNSAFE.sub("_", text).strip("._")[:MAX_NAME_CHARS].strip("._")
    return name or fallback


def clip_labels(names: Sequence[str | None]) -> list[str]:
    """The label of each animation (see the module's docstring)."""
    raw = [n if isinstance(n, str) and n else "" for n in names]
    labels = [
        f"#{i}" if not n else f"{n}#{i}" if raw.count(n) > 1 or n == "rest" else n
        for i, n in enumerate(raw)
    ]
    return labels


def model_pairs(
    names: Sequence[str | None], clips: str | Sequence[str], stem: str, suffix: str
) -> list[Pair]:
    """The pairs of a model whose animations are ``names`` (in order), for ``clips`` ("all", or
    names/labels: "rest" is the rest pose), with outputs ``<stem>__<clip><suffix>``."""
    labels = clip_labels(names)
    chosen: list[tuple[str, int | None, str | None]] = []
    if clips == "all":
        chosen = [(label, i, None) for i, label in enumerate(labels)] or [("rest", None, None)]
    else:
        for name in clips:  # over the requested clips
            if name == "rest":
                chosen.append(("rest", None, None))
            elif name in labels:
                chosen.append((name, labels.index(name), None))
            elif name in names:  # a name several animations share: each of them
                chosen += [(labels[i], i, None) for i, n in enumerate(names) if n == name]
            else:
                have = ", ".join(repr(label) for label in labels) or "none"
                chosen.append(
                    (name, None, f"no animation {name!r} (animations: {have}; or 'rest')")
                )
    seen: set[str] = set()
    unique = []
    for item in chosen:  # over the model's clips
        if item[0] not in seen:
            seen.add(item[0])
            unique.append(item)
    safe = [safe_name(label.replace("#", "-"), "clip") for label, _, _ in unique]
    folded = [s.casefold() for s in safe]
    pairs = []
    for (label, index, error), name, fold in zip(unique, safe, folded, strict=True):
        if folded.count(fold) > 1:
            name = f"{name}-{'rest' if index is None else index}"
        pairs.append(Pair(label, index, f"{stem}__{name}{suffix}", error))
    return pairs


def output_stems(paths: Sequence[Path]) -> dict[Path, str]:
    """Each model's output stem: its safe stem, plus a hash of its path where several models of
    the batch share that (ignoring case)."""
    safe = {p: safe_name(p.stem, "model") for p in paths}
    counts: dict[str, int] = {}
    for s in safe.values():
        counts[s.casefold()] = counts.get(s.casefold(), 0) + 1
    return {
        p: s
        if counts[s.casefold()] == 1
        else f"{s}-{hashlib.sha256(os.fsencode(str(p))).hexdigest()[:8]}"
        for p, s in safe.items()
    }


def pair_key(digest: str | None, clip: str, options: Mapping[str, Any]) -> str | None:
    """The key of a pair: SHA-256 over the input's digest and the options that change the
    output; None when the input could not be read."""
    if digest is None:
        return None
    fields = {
        "version": KEY_VERSION,
        "input": digest,
        "clip": clip,
        **{k: options[k] for k in ("method", "fps", "start", "end", "format")},
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def describe(
    path: Path, max_json: int = MAX_JSON_BYTES
) -> tuple[str | None, list[str | None] | None]:
    """(digest, animation names) of a model, read without loading it.

    The digest is the SHA-256 of the file's bytes and, for each buffer and image whose URI names
    a file (resolved in the model's folder as the loader resolves it), the URI and that file's
    bytes (or that it is missing); None when the model cannot be read. The names are those of
    the JSON's ``animations`` (None when the JSON cannot be read: the worker's loader reports
    why). JSON longer than ``max_json`` bytes is not read here (the batch passes its
    ``max_bytes``, so listing clips costs no more memory than loading the model may).
    """
    h = hashlib.sha256(KEY_VERSION.encode() + b"\0")
    try:
        text = _hash_file(path, h, max_json=max_json)
    except OSError:
        return None, None
    doc: Any = None
    if text is not None:
        try:
            doc = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError):
            doc = None
    if not isinstance(doc, dict):
        return h.hexdigest(), None
    from ..gltf.errors import GltfError
    from ..gltf.uris import is_data_uri, resolve_uri

    hashed: dict[Path, str] = {}  # each file read once, however many URIs name it
    for kind in ("buffers", "images"):
        items = doc.get(kind)
        for i, item in enumerate(items if isinstance(items, list) else []):  # over resources
            uri = item.get("uri") if isinstance(item, dict) else None
            if not isinstance(uri, str) or is_data_uri(uri):
                continue
            where = f"{kind}/{i}"
            h.update(f"\0{where}\0{uri}\0".encode("utf-8", "surrogatepass"))
            try:
                file = resolve_uri(path.parent, uri, f"/{where}/uri")
                if file in hashed:
                    h.update(f"\0as {hashed[file]}".encode())
                    continue
                hashed[file] = where
                _hash_file(file, h, max_json=None)
            except (GltfError, OSError):
                h.update(b"\0missing")
    animations = doc.get("animations")
    if animations is None:
        return h.hexdigest(), []
    if not isinstance(animations, list):
        return h.hexdigest(), None
    names = [a.get("name") if isinstance(a, dict) else None for a in animations]
    return h.hexdigest(), [n if isinstance(n, str) else None for n in names]


def _hash_file(path: Path, h: Any, *, max_json: int | None) -> bytes | None:
    """Stream a regular file into ``h``; with ``max_json``, also return its glTF JSON text
    (the whole ``.gltf``, a ``.glb``'s JSON chunk) when it is at most that long, None when
    there is none to read."""
    want_json = max_json is not None
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        head = b""
        json_text: bytes | None = None
        first = True
        while chunk := f.read(_CHUNK):  # over chunks of the file
            h.update(chunk)
            if want_json and first:
                head = chunk
            first = False
        h.update(f"\0{st.st_size}".encode())
        if not want_json:
            return None
        if head[:4] == b"glTF" and len(head) >= 20:
            length, kind = struct.unpack_from("<II", head, 12)
            if kind == 0x4E4F534A and length <= max_json:
                if 20 + length <= len(head):
                    json_text = head[20 : 20 + length]
                else:
                    f.seek(20)
                    json_text = f.read(length)
        elif st.st_size <= max_json:
            f.seek(0)
            json_text = f.read()
        return json_text
