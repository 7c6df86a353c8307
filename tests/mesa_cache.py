"""One Mesa shader cache per llvmpipe code-generation configuration, for the test runs.

lavapipe keeps the machine code LLVM generated for each shader in Mesa's on-disk shader cache
(``~/.cache/mesa_shader_cache`` unless ``MESA_SHADER_CACHE_DIR`` says otherwise). In Mesa 22.3
(Debian 12) the cache key holds the driver's build and the shader, but not the settings that
change the code generated for it: ``LP_NATIVE_VECTOR_WIDTH`` (128 on CPUs without AVX and on
ARM servers, 256 with AVX2) and the host CPU's features (a home directory shared between
machines, or a container image built on another CPU). A run at width 128 after a run at 256
then executes 256-bit code with 128-bit state: triangles are binned with garbage commands (the
rasterizer thread dereferences a non-canonical pointer read from its bins: SIGSEGV, or an abort
inside ``vkWaitForFences``) and pixels differ. With a cache of its own per configuration, or
none (``MESA_SHADER_CACHE_DISABLE=true``), every run is clean. tests/test_mesa_cache.py checks
the key; ``docs/tests.md`` tells users of vkdqs outside the suite how to do the same.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

#: Environment variables that change the code llvmpipe generates (gallivm and llvmpipe
#: options); LP_NUM_THREADS only changes how many threads run it.
_CODEGEN_PREFIXES = ("LP_", "GALLIVM_")
_NOT_CODEGEN = frozenset({"LP_NUM_THREADS"})


def _cpu_description(cpuinfo: str) -> str:
    """The first processor's model and feature flags from ``/proc/cpuinfo`` text ('' if none):
    what LLVM's host CPU detection reads."""
    keep = []
    for line in cpuinfo.splitlines():
        if not line.strip():
            break  # the first processor's block ends
        key, _, value = line.partition(":")
        if key.strip() in ("vendor_id", "model name", "flags", "Features", "CPU part"):
            keep.append(f"{key.strip()}={' '.join(value.split())}")
    return "\n".join(keep)


def cache_key(environ: Mapping[str, str], cpuinfo: str) -> str:
    """A short hex key naming llvmpipe's code-generation configuration: the vector width and
    the other LP_/GALLIVM_ settings as given, and the host CPU."""
    settings = sorted(
        f"{k}={v}"
        for k, v in environ.items()
        if k.startswith(_CODEGEN_PREFIXES) and k not in _NOT_CODEGEN
    )
    text = "\n".join([*settings, _cpu_description(cpuinfo)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_dir(environ: Mapping[str, str], cpuinfo: str) -> Path:
    """Where the runs of this configuration keep their shaders: below the cache directory the
    user chose (``MESA_SHADER_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = environ.get("MESA_SHADER_CACHE_DIR") or environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    if root.parent.name == "vkdqs-tests":  # already one of ours (a nested run): its base
        root = root.parent.parent
    width = environ.get("LP_NATIVE_VECTOR_WIDTH", "native")
    return root / "vkdqs-tests" / f"lavapipe-{width}-{cache_key(environ, cpuinfo)}"


def isolate(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """Point ``MESA_SHADER_CACHE_DIR`` at this configuration's own cache (before any driver
    loads; subprocesses inherit it). Returns the directory, or None where the cache is off."""
    env = os.environ if environ is None else environ
    if env.get("MESA_SHADER_CACHE_DISABLE", "").lower() in ("1", "true", "yes"):
        return None
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        cpuinfo = ""
    path = cache_dir(env, cpuinfo)
    try:
        path.mkdir(parents=True, exist_ok=True)  # Mesa makes only the last level
    except OSError:
        pass  # Mesa then runs without a cache: slower, still clean
    env["MESA_SHADER_CACHE_DIR"] = str(path)
    return path
