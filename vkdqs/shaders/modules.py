"""The only code that knows where the SPIR-V lives.

The .spv files are compiled from ``shaders/glsl`` by ``build_shaders.py`` and committed. In a
checkout they are read from ``<repo>/shaders/spirv``; in an installed wheel they ship as package
data in ``vkdqs/spirv``. Plain files: no Vulkan loader is needed to read them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..errors import ShaderError

__all__ = ["spirv", "spirv_dir"]

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_CANDIDATES = (_PACKAGE_DIR / "spirv", _PACKAGE_DIR.parent / "shaders" / "spirv")


def spirv_dir() -> Path:
    """The folder holding the committed/shipped ``*.spv`` files."""
    for path in _CANDIDATES:
        if (path / "manifest.json").exists():
            return path
    raise ShaderError("vkdqs SPIR-V not found; looked in " + ", ".join(str(p) for p in _CANDIDATES))


@cache
def spirv(name: str) -> bytes:
    """The bytes of ``<name>.spv`` (e.g. ``"skin_dqs.comp"``)."""
    path = spirv_dir() / f"{name}.spv"
    try:
        code = path.read_bytes()
    except FileNotFoundError:
        raise ShaderError(f"SPIR-V module {path} is missing (run build_shaders.py)") from None
    if len(code) % 4 or code[:4] != b"\x03\x02\x23\x07":
        raise ShaderError(f"{path} is not a SPIR-V module")
    return code
