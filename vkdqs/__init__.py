"""vkdqs: Dual Quaternion Skinning (and linear blend skinning) on the GPU through Vulkan.

Importing vkdqs has no side effects and does not load Vulkan; the GPU classes (``Device``,
``Skinner``) import the ``vulkan`` binding when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import dq, methods, reference
from .errors import (
    CapabilityError,
    InputError,
    LimitError,
    NoSuitableDeviceError,
    ObjectDestroyedError,
    OutputError,
    OwnershipError,
    ShaderError,
    ValidationLayerError,
    VkdqsError,
    VulkanError,
)
from .images import PngImage
from .mesh import SkinnedMesh

if TYPE_CHECKING:
    from .app.viewer import Viewer
    from .baking import Bake, BatchReport, bake, bake_batch, bake_to_file
    from .baking.usdskel import UsdSkelInfo, export_usdskel
    from .camera import Camera
    from .clip import AnimationClip
    from .engine.crowd import Crowd
    from .engine.drawables import Instance, RenderMesh
    from .engine.renderer import Renderer
    from .engine.skinner import Skinner
    from .engine.targets import OffscreenTarget, SwapchainTarget
    from .gltf import GltfError, GltfScene, load_gltf
    from .gpu.device import Device
    from .methods.cor.gpu import centers_of_rotation
    from .methods.ddm.gpu import direct_delta_mush
    from .methods.ddm.reference import DirectDeltaMush
    from .methods.delta_mush.gpu import DeltaMushSkinner

__version__ = "0.1.0"

__all__ = [
    "AnimationClip",
    "Bake",
    "BatchReport",
    "Camera",
    "CapabilityError",
    "Crowd",
    "DeltaMushSkinner",
    "Device",
    "DirectDeltaMush",
    "GltfError",
    "GltfScene",
    "GltfWarning",
    "InputError",
    "Instance",
    "LimitError",
    "Material",
    "NoSuitableDeviceError",
    "ObjectDestroyedError",
    "OffscreenTarget",
    "OutputError",
    "OwnershipError",
    "PngImage",
    "RenderMesh",
    "Renderer",
    "Sampler",
    "ShaderError",
    "SkinnedMesh",
    "Skinner",
    "SwapchainTarget",
    "UsdSkelInfo",
    "ValidationLayerError",
    "Viewer",
    "VkdqsError",
    "VulkanError",
    "__version__",
    "bake",
    "bake_batch",
    "bake_to_file",
    "centers_of_rotation",
    "direct_delta_mush",
    "dq",
    "export_usdskel",
    "load_gltf",
    "methods",
    "procedural",
    "reference",
]

_LAZY = {
    "AnimationClip": ".clip",
    "Bake": ".baking",
    "BatchReport": ".baking",
    "bake_batch": ".baking",
    "bake": ".baking",
    "bake_to_file": ".baking",
    "export_usdskel": ".baking.usdskel",
    "UsdSkelInfo": ".baking.usdskel",
    "Camera": ".camera",
    "centers_of_rotation": ".methods.cor.gpu",
    "Crowd": ".engine.crowd",
    "DirectDeltaMush": ".methods.ddm.reference",
    "direct_delta_mush": ".methods.ddm.gpu",
    "DeltaMushSkinner": ".methods.delta_mush.gpu",
    "Device": ".gpu.device",
    "OffscreenTarget": ".engine.targets",
    "Renderer": ".engine.renderer",
    "Instance": ".engine.drawables",
    "RenderMesh": ".engine.drawables",
    "Viewer": ".app.viewer",
    "Skinner": ".engine.skinner",
    "SwapchainTarget": ".engine.targets",
    "procedural": ".procedural",
    "load_gltf": ".gltf",
    "GltfError": ".gltf",
    "GltfScene": ".gltf",
    "GltfWarning": ".gltf",
    "Material": ".material",
    "Sampler": ".material",
}

_NEEDS_VULKAN = {
    ".app.viewer",
    ".engine.crowd",
    ".methods.delta_mush.gpu",
    ".engine.drawables",
    ".gpu.device",
    ".engine.renderer",
    ".engine.skinner",
    ".engine.targets",
}


def __getattr__(name: str) -> Any:
    # Lazy so that `import vkdqs` (and vkdqs.dq) works on a machine without a Vulkan loader.
    if name in _LAZY:
        import importlib

        if _LAZY[name] in _NEEDS_VULKAN:
            # vkdqs.gpu first: without a Vulkan loader it raises a CapabilityError saying what
            # to install (the modules below would fail importing the binding with an OSError).
            importlib.import_module(".gpu", __name__)
        module = importlib.import_module(_LAZY[name], __name__)
        return module if name == _LAZY[name].lstrip(".") else getattr(module, name)
    raise AttributeError(f"module 'vkdqs' has no attribute {name!r}")
