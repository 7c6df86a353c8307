"""A skin of too many joints is refused from the JSON text, before the parse builds it and the
nodes it names (vkdqs.gltf.prescan): exactly ``skins[k].joints`` of the root, never an array of
the same name elsewhere, whatever the strings around it hold and wherever the scan's chunks
fall."""

from __future__ import annotations

import json

import numpy as np
import pytest

import vkdqs.gltf.container
from vkdqs.gltf import GltfError, load_gltf, prescan
from vkdqs.gltf.prescan import oversized_skin

from .test_gltf_hostile import measure

N = 1_000_002


def _doc(**fields) -> bytes:
    return json.dumps({"asset": {"version": "2.0"}, **fields}).encode()


def _cases(limit: int) -> list[tuple[bytes, tuple[int, int] | None]]:
    """Texts and what the scan finds in them, for a limit of ``limit`` joints."""
    long, most = list(range(limit + 1)), list(range(limit))
    many = limit + 1
    padding = '"skins": [{"joints": [' + "1," * many + "1]"
    return [
        (_doc(skins=[{"joints": long}]), (0, many)),
        (_doc(skins=[{}, {"name": "\\"}, {"joints": long, "name": 'a"b'}]), (2, many)),
        (_doc(nodes=[{"name": 'x"],"skins":[{"joints":['}], skins=[{"joints": long}]), (0, many)),
        (_doc(skins=[{"joints": most}]), None),  # at the limit: read
        (_doc(extensions={"X": {"joints": long}}), None),
        (_doc(skins=[{"extras": {"joints": long}}]), None),
        (_doc(extras={"skins": [{"joints": long}]}), None),
        (_doc(nodes=[{"name": padding}]), None),  # inside a string
        (b"[" + _doc(skins=[{"joints": long}]) + b"]", None),  # the root is not an object
        (b'{"skins":[{"joints":[' + b"1," * many, None),  # torn: left to the parser
    ]


@pytest.mark.parametrize(("chunk", "limit"), [(1, 2), (2, 2), (3, 3), (7, 2), (4096, 65_536)])
def test_the_scan_finds_exactly_the_skins_joints(monkeypatch, chunk, limit):
    """Wherever the scan's chunks fall (a chunk of 1 byte splits every escape and string)."""
    monkeypatch.setattr(prescan, "CHUNK", chunk)
    for text, want in _cases(limit):
        assert oversized_skin(text, limit) == want, text[:120]


def _million_joints(folder):
    nodes = [{"name": f"joint{i}", "translation": [0.0, 0.1, 0.0]} for i in range(N)]
    text = _doc(nodes=nodes, skins=[{"joints": [0]}, {"joints": list(range(N))}])
    path = folder / "joints.gltf"
    path.write_bytes(text)
    return path


def test_a_skin_of_a_million_joints_is_refused_before_the_parse(tmp_path, monkeypatch):
    """The skin of 1,000,002 joints in a 55 MB file under a raised max_bytes (which lets the
    parse run): refused naming skins[1].joints without json.loads being called, for a few
    times the text's size (the parse peaked at 814 MB for 86 MB of such text)."""
    path = _million_joints(tmp_path)

    def no_parse(*args, **kwargs):
        raise AssertionError("json.loads was called")

    monkeypatch.setattr(vkdqs.gltf.container.json, "loads", no_parse)
    with pytest.raises(GltfError, match=rf"skins\[1\]\.joints: {N} joints; .* at most 65536"):
        load_gltf(path, max_bytes=2**32)
    monkeypatch.undo()
    result = measure(path, max_bytes=2**32)
    assert result["outcome"] == "GltfError", result
    size_mb = path.stat().st_size / 2**20
    assert result["mb"] < 3 * size_mb + 64, (result, size_mb)


def _reference(doc: object, limit: int) -> tuple[int, int] | None:
    """What the scan must find, from the parsed document: the first skins[k].joints of the
    root longer than ``limit`` that is a flat array of numbers."""
    if not isinstance(doc, dict) or not isinstance(doc.get("skins"), list):
        return None
    for k, skin in enumerate(doc["skins"]):
        joints = skin.get("joints") if isinstance(skin, dict) else None
        flat = isinstance(joints, list) and all(type(j) in (int, float) for j in joints)
        if flat and len(joints) > limit:
            return k, len(joints)
    return None


def _random_value(rng, depth: int) -> object:
    kind = rng.integers(0, 7 if depth < 3 else 4)
    if kind == 0:
        return int(rng.integers(-5, 99))
    if kind == 1:
        return "".join(rng.choice(list('ab"\\[]{},: joints'), size=rng.integers(0, 9)))
    if kind == 2:
        return [int(x) for x in rng.integers(0, 9, size=rng.integers(0, 6))]
    if kind == 3:
        return None
    if kind == 4:
        return [_random_value(rng, depth + 1) for _ in range(rng.integers(0, 4))]
    keys = rng.choice(["joints", "skins", "name", 'a\\"', "x"], size=rng.integers(0, 4))
    return {str(key): _random_value(rng, depth + 1) for key in keys}


@pytest.mark.parametrize("seed", range(4))
def test_the_scan_agrees_with_the_parser_on_random_documents(monkeypatch, seed):
    """Random documents (skins and "joints" keys at every depth, strings full of quotes,
    brackets and backslashes), scanned in small chunks: what the scan finds is what the parsed
    document holds."""
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(300):
        monkeypatch.setattr(prescan, "CHUNK", int(rng.integers(1, 64)))
        doc = {
            str(k): _random_value(rng, 1)
            for k in rng.choice(["skins", "nodes", "extras", "joints"], size=rng.integers(1, 4))
        }
        if rng.random() < 0.5:
            skins = [_random_value(rng, 2) for _ in range(rng.integers(0, 3))]
            skins.insert(int(rng.integers(0, len(skins) + 1)), {"joints": [1, 2, 3, 4]})
            doc["skins"] = skins
        text = json.dumps(doc, indent=int(rng.integers(0, 2)) or None).encode()
        want = _reference(doc, 3)
        assert oversized_skin(text, 3) == want, text
        found += want is not None
    assert found > 50  # the cases include many the scan must find
