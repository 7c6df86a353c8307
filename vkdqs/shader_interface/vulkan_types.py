"""The Vulkan values the shader interface is written in.

Descriptor types, formats and shader stages as numbers (from the Vulkan specification; a test
compares them with the ``vulkan`` binding), so the numpy-only layers and ``build_shaders.py``
need no Vulkan loader, and :class:`Binding`, one descriptor of a set layout made of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag


class DescriptorType(IntEnum):
    """``VkDescriptorType`` values used by vkdqs's shaders."""

    COMBINED_IMAGE_SAMPLER = 1
    UNIFORM_TEXEL_BUFFER = 4
    STORAGE_TEXEL_BUFFER = 5
    UNIFORM_BUFFER = 6
    STORAGE_BUFFER = 7
    UNIFORM_BUFFER_DYNAMIC = 8


class Format(IntEnum):
    """``VkFormat`` values of vertex attributes, texel buffers and colour targets."""

    R8G8B8A8_UNORM = 37
    R8G8B8A8_UINT = 41
    R16G16_SNORM = 78
    R16G16B16A16_UINT = 95
    R16G16B16A16_UNORM = 91
    R16G16B16A16_SNORM = 92
    R16G16B16A16_SINT = 96
    R8G8B8A8_SRGB = 43
    B8G8R8A8_SRGB = 50
    R32_UINT = 98
    R32_SFLOAT = 100
    R32G32_SFLOAT = 103
    R32G32B32_SFLOAT = 106
    R32G32B32A32_UINT = 107
    R32G32B32A32_SINT = 108
    R32G32B32A32_SFLOAT = 109


class Stage(IntFlag):
    """``VkShaderStageFlagBits``."""

    VERTEX = 0x01
    FRAGMENT = 0x10
    COMPUTE = 0x20


@dataclass(frozen=True)
class Binding:
    """One descriptor of a set layout: binding number, type and the stages that use it."""

    binding: int
    type: DescriptorType
    stages: Stage
