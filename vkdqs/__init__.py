"""vkdqs: Dual Quaternion Skinning (and linear blend skinning) on the GPU through Vulkan.

Importing vkdqs has no side effects and does not load Vulkan; the GPU classes (``Device``,
``Skinner``) import the ``vulkan`` binding when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import dq
from .errors import (
    InputError,
    LimitError,
    NoSuitableDeviceError,
    ObjectDestroyedError,
    ShaderError,
    ValidationLayerError,
    VkdqsError,
    VulkanError,
)
from .mesh import SkinnedMesh

if TYPE_CHECKING:
    from .device import Device
    from .skinner import Skinner

__version__ = "0.1.0"

__all__ = [
    "Device",
    "GltfError",
    "InputError",
    "LimitError",
    "NoSuitableDeviceError",
    "ObjectDestroyedError",
    "ShaderError",
    "SkinnedMesh",
    "Skinner",
    "ValidationLayerError",
    "VkdqsError",
    "VulkanError",
    "__version__",
    "dq",
    "load_gltf",
    "procedural",
]

_LAZY = {
    "Device": ".device",
    "Skinner": ".skinner",
    "procedural": ".procedural",
    "load_gltf": ".gltf",
    "GltfError": ".gltf",
}


def __getattr__(name: str) -> Any:
    # Lazy so that `import vkdqs` (and vkdqs.dq) works on a machine without a Vulkan loader.
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name], __name__)
        return module if name == _LAZY[name].lstrip(".") else getattr(module, name)
    raise AttributeError(f"module 'vkdqs' has no attribute {name!r}")
