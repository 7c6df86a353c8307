"""Coverage-guided fuzzing of the glTF loader with atheris (``make fuzz``; docs/development.md).

:mod:`tests.fuzz.harness` is what one input does (load it as a model file, then use the scene as
the viewer, the player and the bake do: only GltfError may come out), :mod:`tests.fuzz.corpus`
writes the seed corpus from the test fixtures, :mod:`tests.fuzz.run` is the atheris entry point.
Every crash the fuzzer finds is kept in ``tests/fuzz/crashes/`` and replayed by
``tests/test_fuzz_regressions.py``.
"""
