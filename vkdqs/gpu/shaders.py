"""Shader modules and specialization constants.

The SPIR-V is read through :func:`vkdqs.shaders.spirv` (the only code that knows where it
lives). vkdqs never compiles GLSL at run time; a caller may hand a module's
SPIR-V words in as data instead (``ShaderModule(device, name, code=...)``,
``ComputePipelineDesc(..., code=...)``): a method defined outside the package, an app's own
build of a shader.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import vulkan as vk

from ..errors import ShaderError
from ..shaders.modules import spirv
from ..shaders.modules import spirv_dir as spirv_dir  # re-exported (vkdqs.gpu.spirv_dir)
from .calls import vk_errors
from .device import Device
from .objects import DeviceObject


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
