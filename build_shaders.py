#!/usr/bin/env python3
"""Compile vkdqs's GLSL shaders to SPIR-V, reproducibly.

    python build_shaders.py            compile every variant, validate it, write the manifest
    python build_shaders.py --check    exit 1 naming each stale or missing .spv (no glslc needed)
    python build_shaders.py --only skin_dqs.comp

Each variant is compiled by glslc (optimized, Vulkan 1.1 target, no debug info, relative paths
from the repository root, so the output is byte-for-byte reproducible) and validated by spirv-val.
``shaders/spirv/manifest.json`` records, per output, the SHA-256 of its source and every file it
includes, its defines, and the SHA-256 of the .spv; ``--check`` compares against it. The .spv
files are committed and ship in the wheel: using vkdqs never needs glslc.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
GLSL_DIR = Path("shaders/glsl")
SPIRV_DIR = Path("shaders/spirv")
MANIFEST = SPIRV_DIR / "manifest.json"
TARGET_ENV = "vulkan1.1"


# The variants are listed once, in vkdqs/shader_interface.py, with the rest of the interface the
# host and the GLSL share; tests/test_shader_interface.py checks them against the SPIR-V.
sys.path.insert(0, str(ROOT))
from vkdqs.shader_interface import VARIANTS, Variant  # noqa: E402

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def sources_of(path: Path, seen: list[Path] | None = None) -> list[Path]:
    """The file and every file it includes, recursively, in first-seen order."""
    seen = [] if seen is None else seen
    if path in seen:
        return seen
    seen.append(path)
    for name in _INCLUDE.findall((ROOT / path).read_text()):
        sources_of(Path(*(path.parent / name).parts), seen)
    return seen


def compile_inputs(variant: Variant) -> list[str]:
    """The GLSL files a variant is compiled from, relative to shaders/glsl."""
    return [p.relative_to(GLSL_DIR).as_posix() for p in sources_of(GLSL_DIR / variant.source)]


def source_hash(variant: Variant) -> str:
    h = hashlib.sha256()
    for path in sources_of(GLSL_DIR / variant.source):
        h.update(path.as_posix().encode() + b"\0")
        h.update((ROOT / path).read_bytes().replace(b"\r\n", b"\n") + b"\0")
    h.update(" ".join(variant.defines).encode())
    return h.hexdigest()


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def compile_variant(variant: Variant) -> dict[str, object]:
    out = SPIRV_DIR / f"{variant.name}.spv"
    cmd = ["glslc", "-O", f"--target-env={TARGET_ENV}", "-Werror"]
    cmd += [f"-D{d}" for d in variant.defines]
    cmd += [(GLSL_DIR / variant.source).as_posix(), "-o", out.as_posix()]
    _run(cmd)
    _run(["spirv-val", "--target-env", TARGET_ENV, out.as_posix()])
    return {
        "source": variant.source,
        "defines": list(variant.defines),
        "includes": [p.as_posix() for p in sources_of(GLSL_DIR / variant.source)[1:]],
        "source_sha256": source_hash(variant),
        "spirv_sha256": hashlib.sha256((ROOT / out).read_bytes()).hexdigest(),
    }


def check() -> list[str]:
    """Problems with the committed SPIR-V, one line each (empty when everything is fresh)."""
    try:
        manifest = json.loads((ROOT / MANIFEST).read_text())
    except FileNotFoundError:
        return [f"{MANIFEST} is missing"]
    problems = []
    entries = manifest.get("shaders", {})
    for variant in VARIANTS:
        out = SPIRV_DIR / f"{variant.name}.spv"
        entry = entries.get(variant.name)
        if not (ROOT / out).exists():
            problems.append(f"{out}: missing")
        elif entry is None:
            problems.append(f"{out}: not in {MANIFEST}")
        elif entry["source_sha256"] != source_hash(variant):
            problems.append(f"{out}: stale (its GLSL sources changed since it was compiled)")
        elif entry["spirv_sha256"] != hashlib.sha256((ROOT / out).read_bytes()).hexdigest():
            problems.append(f"{out}: modified (does not match the manifest)")
    known = {f"{v.name}.spv" for v in VARIANTS}
    for path in sorted((ROOT / SPIRV_DIR).glob("*.spv")):
        if path.name not in known:
            problems.append(f"{SPIRV_DIR / path.name}: not produced by any variant")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale/missing SPIR-V")
    parser.add_argument("--only", metavar="NAME", help="compile one variant, e.g. skin_dqs.comp")
    args = parser.parse_args(argv)

    if args.check:
        problems = check()
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("run: python build_shaders.py", file=sys.stderr)
            return 1
        print(f"{len(VARIANTS)} SPIR-V modules are up to date")
        return 0

    for tool in ("glslc", "spirv-val"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install glslc spirv-tools")
    variants = [v for v in VARIANTS if args.only in (None, v.name)]
    if not variants:
        sys.exit(f"no variant named {args.only!r}; known: {', '.join(v.name for v in VARIANTS)}")
    (ROOT / SPIRV_DIR).mkdir(parents=True, exist_ok=True)
    manifest_path = ROOT / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    # a full build lists exactly today's variants; --only keeps the others' entries
    entries = manifest.get("shaders", {}) if args.only else {}
    for variant in variants:
        entries[variant.name] = compile_variant(variant)
        print(f"compiled {SPIRV_DIR / variant.name}.spv")
    version = _run(["glslc", "--version"]).splitlines()[0].strip()
    manifest = {
        "compiler": version,
        "target_env": TARGET_ENV,
        "shaders": dict(sorted(entries.items())),
    }
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
