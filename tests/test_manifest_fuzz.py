"""The batch manifest reader against torn, duplicated, hand-edited and hostile lines: a short,
seeded version of ``make fuzz-manifest`` (tests/fuzz/manifest.py). Each input either gives
records whose fields have their types or leaves the lines out; nothing raises."""

from __future__ import annotations

import json
import random

import pytest

from tests.fuzz.manifest import TYPES, one_manifest, seed_lines

HOSTILE_VALUES = [
    None, True, 0, -1, 2**70, 1.5, float("nan"), "", "x" * 1000, "../../etc/passwd",
    "/abs/path", [], [1, 2], {}, {"a": 1}, ["ok", 3],
]  # fmt: skip


def _edited(rng: random.Random) -> bytes:
    line = json.loads(rng.choice(seed_lines()))
    for _ in range(rng.randint(1, 3)):
        name = rng.choice([*TYPES, "extra"])
        if rng.random() < 0.2:
            line.pop(name, None)
        else:
            line[name] = rng.choice(HOSTILE_VALUES)
    return json.dumps(line).encode()


def test_seed_lines_are_records(tmp_path):
    from vkdqs.baking import batch

    (tmp_path / "manifest.jsonl").write_bytes(b"\n".join(seed_lines()) + b"\n")
    assert len(batch.read_manifest(tmp_path / "manifest.jsonl")) == len(seed_lines())


@pytest.mark.parametrize("seed", range(4))
def test_hand_edited_lines_are_records_of_their_types_or_left_out(tmp_path, seed):
    rng = random.Random(seed)
    for _ in range(100):
        lines = [_edited(rng) if rng.random() < 0.7 else rng.choice(seed_lines()) for _ in range(5)]
        one_manifest(b"\n".join(lines) + b"\n", tmp_path)


def test_torn_duplicated_huge_and_invalid_lines(tmp_path):
    good = seed_lines()
    cases = [
        b"\n".join(good) + b"\n" + good[0][: len(good[0]) // 2],  # torn last line
        b"\n".join(good + good) + b"\n",  # duplicated
        b"\xff\xfe\x00garbage\n" + good[0] + b"\n",  # invalid UTF-8
        b"[" * 100_000 + b"\n" + good[0] + b"\n",  # nested past the recursion limit
        b'{"input": "' + b"a" * 5_000_000 + b'"}\n',  # a huge line
        b"\n\n\n",
        b'null\n1\n"input"\n[]\n',
    ]
    for data in cases:
        one_manifest(data, tmp_path)


def test_byte_mutations(tmp_path):
    rng = random.Random(7)
    base = b"\n".join(seed_lines()) + b"\n"
    for _ in range(300):
        data = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
        one_manifest(bytes(data), tmp_path)
