"""The only code that knows where the SPIR-V lives; shader modules and specialization constants.

The .spv files are compiled from ``shaders/glsl`` by ``build_shaders.py`` and committed. In a
checkout they are read from ``<repo>/shaders/spirv``; in an installed wheel they ship as package
data in ``vkdqs/spirv``. vkdqs never compiles GLSL at run time; a caller may hand a module's
SPIR-V words in as data instead (``ShaderModule(device, name, code=...)``,
``ComputePipelineDesc(..., code=...)``): a method defined outside the package, an app's own
build of a shader.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import vulkan as vk

from ..errors import ShaderError
from .calls import vk_errors
from .device import Device
from .objects import DeviceObject

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


def check_spirv(code: object, name: str) -> bytes:
    """``code`` as SPIR-V bytes: a whole number of 32-bit words starting with the magic number
    (ShaderError otherwise)."""
    if not isinstance(code, (bytes, bytearray, memoryview)):
        raise ShaderError(f"SPIR-V of {name!r} must be bytes, got {type(code).__name__}")
    code = bytes(code)
    if len(code) < 20 or len(code) % 4 or code[:4] != b"\x03\x02\x23\x07":
        raise ShaderError(f"the code given for {name!r} is not a SPIR-V module")
    return code


class ShaderModule(DeviceObject):
    """A ``VkShaderModule`` of the committed SPIR-V module ``name`` (e.g. ``"skin.frag"``), or
    of ``code``: SPIR-V given as data (``name`` then only labels it)."""

    kind = "shader module"

    def __init__(self, device: Device, name: str, code: bytes | None = None) -> None:
        code = spirv(name) if code is None else check_spirv(code, name)
        vk_device = device.handle
        info = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
        with vk_errors(f"creating shader module {name!r}"):
            handle = vk.vkCreateShaderModule(vk_device, info, None)
        super().__init__(
            device, handle, name, lambda: vk.vkDestroyShaderModule(vk_device, handle, None)
        )


class SpecConstants:
    """Specialization constants by constant_id: ``SpecConstants({0: 64, 1: 256})``.

    All vkdqs constants are 32-bit ints. ``info()`` builds the VkSpecializationInfo; keep the
    SpecConstants object alive until the pipeline creation that reads it has returned.
    """

    def __init__(self, values: Mapping[int, int]) -> None:
        self.values = dict(sorted(values.items()))
        self._data = struct.pack(f"<{len(self.values)}i", *self.values.values())
        self._entries = [
            vk.VkSpecializationMapEntry(constantID=cid, offset=4 * i, size=4)
            for i, cid in enumerate(self.values)
        ]

    def info(self) -> Any:
        """The ``VkSpecializationInfo`` of these constants for a pipeline stage; it points into
        this object, which must outlive the pipeline creation."""
        return vk.VkSpecializationInfo(
            mapEntryCount=len(self._entries),
            pMapEntries=self._entries,
            dataSize=len(self._data),
            pData=vk.ffi.from_buffer(self._data),
        )
