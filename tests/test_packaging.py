"""The wheel ships the SPIR-V, the licence and the typing marker, declares its metadata, and an
installed vkdqs finds its SPIR-V without the repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_contains_every_spirv_module_and_installs_standalone(tmp_path):
    # Build from a clean copy: an in-tree build/ left by an earlier build would leak stale files.
    src = tmp_path / "src"
    junk = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", "*.png")
    shutil.copytree(ROOT, src, ignore=junk)
    wheel_dir = tmp_path / "wheel"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = wheel_dir.glob("vkdqs-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    manifest = json.loads((ROOT / "shaders/spirv/manifest.json").read_text())
    for name in manifest["shaders"]:
        assert f"vkdqs/spirv/{name}.spv" in names
    assert "vkdqs/spirv/manifest.json" in names
    # exactly the package's modules, every subpackage included
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "vkdqs").rglob("*.py")}
    assert {n for n in names if n.endswith(".py")} == modules
    # PEP 561 marker, and the licence text (PEP 639: dist-info/licenses/)
    assert "vkdqs/py.typed" in names
    version = _version()
    dist_info = f"vkdqs-{version}.dist-info"
    assert f"{dist_info}/licenses/LICENSE" in names
    with zipfile.ZipFile(wheel) as zf:
        licence = zf.read(f"{dist_info}/licenses/LICENSE").decode()
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert licence == (ROOT / "LICENSE").read_text()
    assert "Copyright (c) 2026 the vkdqs authors" in licence
    assert "\nLicense-Expression: MIT\n" in metadata
    assert "\nLicense-File: LICENSE\n" in metadata
    assert "\nRequires-Dist: pyglm>=2.8\n" in metadata
    assert "\nClassifier: Typing :: Typed\n" in metadata
    assert "Classifier: License ::" not in metadata  # PEP 639: the expression replaces them

    # Install the wheel into a folder and import it from elsewhere: it must find its own SPIR-V.
    site = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    code = (
        "import vkdqs, vkdqs.gpu.shaders as s; print(s.spirv_dir()); s.spirv('skin_dqs.comp'); "
        f"assert vkdqs.__version__ == {version!r}"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.strip()) == site / "vkdqs" / "spirv"


def _version() -> str:
    """``vkdqs.__version__`` read from the source (pyproject takes the version from it)."""
    text = (ROOT / "vkdqs" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"$', text, re.M).group(1)


def test_the_installed_version_is_the_package_version():
    from importlib.metadata import version

    import vkdqs

    assert version("vkdqs") == vkdqs.__version__ == _version()
