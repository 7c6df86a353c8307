"""What the coverage-guided fuzzer (``make fuzz``, tests/fuzz/) found, and its harness, replayed.

Every file in tests/fuzz/crashes/ made the loader, or a caller's use of the scene, raise
something other than GltfError before it was fixed; each must now load or raise GltfError,
quickly. The seed corpus (made in code) must load, and the fuzzer's glTF-aware mutations are
run here briefly without atheris, with fixed seeds.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.fuzz.corpus import seeds
from tests.fuzz.harness import one_input, prepare
from tests.fuzz.mutate import glb, mutate, split
from vkdqs.gltf import load_gltf

CRASHES = sorted((Path(__file__).parent / "fuzz" / "crashes").iterdir())


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return prepare(tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def corpus() -> dict[str, bytes]:
    return seeds()


@pytest.mark.parametrize("crash", CRASHES, ids=[p.name for p in CRASHES])
def test_what_the_fuzzer_found_is_a_gltf_error_now(folder, crash):
    start = time.process_time()
    one_input(crash.read_bytes(), folder)
    assert time.process_time() - start < 5.0


def test_the_seed_corpus_loads(folder, corpus):
    assert len(corpus) >= 15
    for name, data in corpus.items():
        path = folder / ("model.glb" if data[:4] == b"glTF" else "model.gltf")
        path.write_bytes(data)
        scene = load_gltf(path)  # each seed is a valid model, not an error path
        assert scene.meshes, name
        one_input(data, folder)


def _flip(data: bytes, max_size: int, rng: random.Random) -> bytes:
    """A stand-in for libFuzzer's byte mutations: flip a few bytes."""
    out = bytearray(data[:max_size])
    for _ in range(rng.randint(1, 4)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def test_tree_mutations_keep_the_container_and_reach_the_checks(folder, corpus):
    """The fuzzer's mutator, 300 times from the seeds: only GltfError comes out."""
    rng = random.Random(2024)
    names = sorted(corpus)
    for case in range(300):
        data = corpus[names[case % len(names)]]
        for _ in range(rng.randint(1, 3)):
            data = mutate(data, 1 << 20, rng.randrange(2**32), lambda d, n: _flip(d, n, rng))
        one_input(data, folder)


def test_split_and_glb_round_trip(corpus):
    for data in corpus.values():
        text, binary = split(data)
        if data[:4] == b"glTF":
            assert glb(text, binary) == data
        else:
            assert binary is None and text == data
