"""A second atheris target: the batch manifest a later ``vkdqs bake --out-dir`` run reads back
(``python -m tests.fuzz.manifest [libFuzzer options] CORPUS_DIR...``; ``make fuzz-manifest``).

The manifest is a file users and crashed runs leave behind: torn, duplicated, hand-edited or
hostile lines. Its reader (:func:`vkdqs.baking.batch.read_manifest`) keeps each line that is a
well-formed record and leaves out the rest; what a later run does with the records
(:func:`vkdqs.baking.batch._done`: the latest successful record of each pair) must then work.
Anything that raises is a crash; so is a record whose fields are not of their types, which a
later run would act on.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

#: The types each field of a record kept may have.
TYPES = {
    "input": (str,),
    "clip": (str, type(None)),
    "method": (str,),
    "frames": (int, type(None)),
    "output": (str, type(None)),
    "bytes": (int, type(None)),
    "seconds": (float,),
    "error": (str, type(None)),
    "key": (str, type(None)),
    "input_sha256": (str, type(None)),
    "validation": (tuple,),
    "warnings": (tuple,),
}


def seed_lines() -> list[bytes]:
    """Manifest lines as runs write them: a baked pair, a failed one, a model that failed to
    load (no clip), one with validation messages and warnings."""
    base = {
        "input": "/models/fox.glb",
        "clip": "Run",
        "method": "dqs",
        "frames": 30,
        "output": "fox__Run.npz",
        "bytes": 123456,
        "seconds": 1.25,
        "error": None,
        "key": "fox.glb|Run|dqs|30.0|None|None|npz",
        "input_sha256": "0" * 64,
        "validation": [],
        "warnings": [],
    }
    rows = [
        base,
        {**base, "clip": "Walk", "output": None, "bytes": None, "error": "GltfError: bad"},
        {**base, "clip": None, "frames": None, "output": None, "bytes": None, "key": None},
        {**base, "validation": ["vkdqs: a message"], "warnings": ["a warning"]},
    ]
    return [json.dumps(r).encode() for r in rows]


def one_manifest(data: bytes, folder: Path) -> None:
    """Read ``data`` as ``folder/manifest.jsonl`` and plan from it; raises on a crash."""
    from vkdqs.baking import batch

    path = folder / "manifest.jsonl"
    path.write_bytes(data)
    records = batch.read_manifest(path)
    for r in records:
        for name, types in TYPES.items():
            value = getattr(r, name)
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise AssertionError(f"record field {name} = {value!r} kept")
        if not all(isinstance(v, str) for v in (*r.validation, *r.warnings)):
            raise AssertionError(f"record messages {r.validation!r} {r.warnings!r} kept")
    batch._done(records)


def main() -> None:
    import atheris

    with atheris.instrument_imports(include=["vkdqs"]):
        import vkdqs.baking.batch  # noqa: F401

    folder = Path(tempfile.mkdtemp(prefix="vkdqs-fuzz-manifest-"))
    atheris.Setup(sys.argv, lambda data: one_manifest(data, folder))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
