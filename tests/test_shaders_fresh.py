"""The committed SPIR-V matches its GLSL sources (no GPU, no glslc needed)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build_shaders():
    spec = importlib.util.spec_from_file_location("build_shaders", ROOT / "build_shaders.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_shaders"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_committed_spirv_is_fresh():
    problems = _build_shaders().check()
    assert not problems, "stale SPIR-V (run python build_shaders.py):\n" + "\n".join(problems)


def test_check_exit_status():
    result = subprocess.run(
        [sys.executable, "build_shaders.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_check_detects_a_stale_source(tmp_path, monkeypatch):
    """Copy the shader tree, edit an include, and --check must name every module using it."""
    build = _build_shaders()
    for sub in ("shaders/glsl", "shaders/spirv"):
        src = ROOT / sub
        for path in src.rglob("*"):
            if path.is_file():
                dest = tmp_path / sub / path.relative_to(src)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(path.read_bytes())
    monkeypatch.setattr(build, "ROOT", tmp_path)
    assert build.check() == []
    lbs = tmp_path / "shaders/glsl/include/lbs.glsl"
    lbs.write_text(lbs.read_text() + "\n// edited\n")
    stale = build.check()
    users = [v for v in build.VARIANTS if "include/lbs.glsl" in build.compile_inputs(v)]
    assert len(users) >= 6
    assert sorted(stale) == sorted(
        f"shaders/spirv/{v.name}.spv: stale (its GLSL sources changed since it was compiled)"
        for v in users
    )
    (tmp_path / "shaders/spirv/skin_dqs.comp.spv").unlink()
    assert any("skin_dqs.comp.spv: missing" in line for line in build.check())


def test_spirv_is_shipped_where_the_package_finds_it():
    from vkdqs.gpu.shaders import spirv, spirv_dir

    assert (spirv_dir() / "manifest.json").exists()
    for variant in _build_shaders().VARIANTS:
        assert spirv(variant.name)[:4] == b"\x03\x02\x23\x07"
