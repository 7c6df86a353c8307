"""The atheris entry point: ``python -m tests.fuzz.run [libFuzzer options] CORPUS_DIR...``.

vkdqs is imported under atheris's instrumentation, so libFuzzer's mutations are guided by the
loader's Python branches (JSON checks, the GLB container, accessors, meshopt, Draco, images,
morph targets, animations). An input that raises anything but GltfError, runs past
``-timeout`` or grows the process past ``-rss_limit_mb`` is a crash; libFuzzer writes it to
``-artifact_prefix``. ``make fuzz`` and ``make fuzz-short`` run this with a seed corpus from
:mod:`tests.fuzz.corpus` (see docs/development.md).
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["vkdqs"]):
    import vkdqs.gltf
    import vkdqs.gltf.parts  # noqa: F401

from tests.fuzz.harness import one_input, prepare
from tests.fuzz.mutate import mutate

_FOLDER = prepare(Path(tempfile.mkdtemp(prefix="vkdqs-fuzz-")))


def test_one_input(data: bytes) -> None:
    """libFuzzer's callback: one input through the harness."""
    one_input(data, _FOLDER)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """libFuzzer's byte mutations half the time, glTF-aware tree mutations of the JSON the
    other half (:mod:`tests.fuzz.mutate`)."""
    return mutate(data, max_size, seed, atheris.Mutate)


def main() -> None:
    logging.getLogger("vkdqs").setLevel(logging.ERROR)  # the loader's notes, once per input
    atheris.Setup(sys.argv, test_one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
