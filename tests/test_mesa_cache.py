"""The suite's Mesa shader cache is one per llvmpipe code-generation configuration
(tests/mesa_cache.py): code LLVM built at one vector width or on one CPU is never loaded at
another, which crashed lavapipe's rasterizer (SIGSEGV, or an abort in vkWaitForFences) and
changed pixels when the suite ran at LP_NATIVE_VECTOR_WIDTH=128 after a run at 256."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from . import mesa_cache

XEON = "vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: sse avx2 avx512f\n\n"
ZEN = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: sse avx2\n\n"


def test_the_key_tells_apart_what_changes_the_generated_code():
    base = {"HOME": "/home/u"}
    w128 = {**base, "LP_NATIVE_VECTOR_WIDTH": "128"}
    w256 = {**base, "LP_NATIVE_VECTOR_WIDTH": "256"}
    keys = {
        mesa_cache.cache_key(base, XEON),
        mesa_cache.cache_key(w128, XEON),
        mesa_cache.cache_key(w256, XEON),
        mesa_cache.cache_key(base, ZEN),
        mesa_cache.cache_key({**base, "GALLIVM_PERF": "no_filter_hacks"}, XEON),
    }
    assert len(keys) == 5
    # what does not change the code shares the cache: the thread count, other processors
    threads = {**w128, "LP_NUM_THREADS": "1"}
    assert mesa_cache.cache_key(threads, XEON) == mesa_cache.cache_key(w128, XEON)
    second_cpu = XEON + "processor\t: 1\nflags\t\t: other\n"
    assert mesa_cache.cache_key(w128, second_cpu) == mesa_cache.cache_key(w128, XEON)


def test_the_directory_lies_below_the_users_choice_and_is_not_nested(tmp_path):
    env = {"MESA_SHADER_CACHE_DIR": str(tmp_path), "LP_NATIVE_VECTOR_WIDTH": "128"}
    first = mesa_cache.isolate(env)
    assert first is not None and first.parent == tmp_path / "vkdqs-tests"
    assert first.name.startswith("lavapipe-128-") and env["MESA_SHADER_CACHE_DIR"] == str(first)
    assert mesa_cache.isolate(env) == first  # a nested run keeps it
    env["LP_NATIVE_VECTOR_WIDTH"] = "256"
    other = mesa_cache.isolate(env)
    assert other != first and other.parent == first.parent
    assert mesa_cache.isolate({"MESA_SHADER_CACHE_DISABLE": "true"}) is None
    xdg = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert mesa_cache.isolate(xdg).parent == tmp_path / "xdg" / "vkdqs-tests"


def test_this_run_and_its_subprocesses_use_their_configurations_cache(tmp_path):
    here = os.environ.get("MESA_SHADER_CACHE_DIR")
    if os.environ.get("MESA_SHADER_CACHE_DISABLE", "").lower() in ("1", "true", "yes"):
        assert mesa_cache.isolate(dict(os.environ)) is None  # no cache: nothing to mix
        return
    assert here is not None and Path(here).parent.name == "vkdqs-tests"
    env = {**os.environ, "LP_NATIVE_VECTOR_WIDTH": "128"}
    code = "import os; from tests import mesa_cache; print(mesa_cache.isolate())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert Path(out).parent == Path(here).parent and Path(out).name.startswith("lavapipe-128-")
    if os.environ.get("LP_NATIVE_VECTOR_WIDTH") != "128":
        assert out != here
