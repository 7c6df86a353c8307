"""Fuzz the glTF loader: mutated valid files must load or raise GltfError, nothing else.

Fixed seeds, no external files. Byte mutations hit the GLB container, the JSON text and the
binary data; JSON mutations delete keys, replace values with wrong types or out-of-range numbers,
and shuffle arrays, anywhere in the document.
"""

from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import pytest

from tests.gltf_fixtures import UNSIGNED_SHORT, make_rig
from vkdqs.gltf import GltfError, GltfWarning, load_gltf
from vkdqs.gltf.save import save

BYTE_CASES = 300
JSON_CASES = 400


def exercise(path) -> None:
    """Load, then use everything a caller would: only GltfError may come out (GltfWarnings, for
    what the loader draws without, are fine)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GltfWarning)
        scene = load_gltf(path)
    with warnings.catch_warnings():
        # Absurd but finite transforms (1e300 scales) may overflow to inf; that is not an error.
        warnings.simplefilter("ignore", RuntimeWarning)
        scene.info()
        for m in scene.meshes:
            if m.skinned:
                scene.skinned_mesh(m.index)
        for a in [None, *range(len(scene.animations))]:
            scene.rigid_meshes(a, 0.3)
            for s in range(len(scene.skins)):
                scene.skinning_matrices(s, a, 0.7)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz_src")
    rigs = [
        make_rig(),
        make_rig(eight=True, interleaved=True, joints_type=UNSIGNED_SHORT),
        make_rig(sparse=True, morph_channel=True),
    ]
    glbs = []
    for i, rig in enumerate(rigs):
        rig.save(d / f"r{i}.glb")
        glbs.append((d / f"r{i}.glb").read_bytes())
    return rigs, glbs


def test_byte_mutations(tmp_path, sources):
    _, glbs = sources
    rng = np.random.default_rng(1234)
    outcomes = {"ok": 0, "error": 0}
    for case in range(BYTE_CASES):
        raw = bytearray(glbs[case % len(glbs)])
        kind = rng.integers(4)
        if kind == 0:  # flip a few random bytes
            for pos in rng.integers(0, len(raw), size=rng.integers(1, 9)):
                raw[pos] ^= 1 << int(rng.integers(8))
        elif kind == 1:  # truncate
            raw = raw[: rng.integers(0, len(raw))]
        elif kind == 2:  # overwrite a run with random bytes
            start = int(rng.integers(0, len(raw)))
            n = int(rng.integers(1, 32))
            raw[start : start + n] = rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()
        else:  # flip bytes in the 28-byte header region + first JSON bytes, where it hurts most
            for pos in rng.integers(0, 40, size=rng.integers(1, 4)):
                raw[pos] = int(rng.integers(256))
        path = tmp_path / f"b{case}.glb"
        path.write_bytes(bytes(raw))
        try:
            exercise(path)
            outcomes["ok"] += 1
        except GltfError:
            outcomes["error"] += 1
        path.unlink()
    assert outcomes["error"] > 0


# -- JSON mutations --------------------------------------------------------------------------


def _locations(node, path=()):
    """Every (container, key) in a JSON tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield node, k
            yield from _locations(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield node, i
            yield from _locations(v, (*path, i))


def _replacement(rng, old, doc):
    choices = [
        -1,
        -(2**31),
        2**32 + 5,
        10**12,
        1e300,
        0,
        0.5,
        "7",
        None,
        True,
        [],
        {},
        [0, 0, 0, 0],
        "LINEAR",
    ]
    if isinstance(old, (int, float)) and not isinstance(old, bool):
        choices += [old + 1, old - 1, old * 2, -old, old + 4]
    # A value from elsewhere in the same document (a plausible but wrong index, name, array...).
    locs = list(_locations(doc))
    container, key = locs[int(rng.integers(len(locs)))]
    choices.append(copy.deepcopy(container[key]))
    return choices[int(rng.integers(len(choices)))]


def _mutate(rng, doc):
    locs = list(_locations(doc))
    container, key = locs[int(rng.integers(len(locs)))]
    action = rng.integers(4)
    if action == 0:
        del container[key]
    elif action == 1:
        container[key] = _replacement(rng, container[key], doc)
    elif action == 2 and isinstance(container[key], list):
        items = container[key]
        order = rng.permutation(len(items))
        container[key] = [items[i] for i in order]
    else:
        value = container[key]
        if isinstance(value, list) and value:
            value.append(copy.deepcopy(value[int(rng.integers(len(value)))]))
        else:
            container[key] = _replacement(rng, value, doc)


def test_json_mutations(tmp_path, sources):
    rigs, _ = sources
    rng = np.random.default_rng(5678)
    outcomes = {"ok": 0, "error": 0}
    for case in range(JSON_CASES):
        rig = rigs[case % len(rigs)]
        doc = json.loads(json.dumps(rig.document))
        for _ in range(int(rng.integers(1, 4))):
            _mutate(rng, doc)
        # Write with the document's own buffers[0] (save keeps a mutated byteLength).
        suffix = (".glb", ".gltf", ".gltf")[case % 3]
        path = tmp_path / f"j{case}{suffix}"
        save(path, doc, bytes(rig.builder.binary), embed=case % 3 == 2)
        try:
            exercise(path)
            outcomes["ok"] += 1
        except GltfError:
            outcomes["error"] += 1
    assert outcomes["ok"] > 0 and outcomes["error"] > 0
