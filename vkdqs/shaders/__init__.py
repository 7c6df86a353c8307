"""vkdqs's shaders as a library: SPIR-V bytes, their interface as data, and the packing.

For engines that build vkdqs's skinning shaders into pipelines of their own
(docs/vulkan-app.md): :func:`module` gives a variant's SPIR-V, :func:`interface` its
descriptor bindings, push constants, vertex inputs and specialization constants as a dict
(:func:`interface_json`, ``vkdqs shaders --json``), and :func:`pack_bones` and
:func:`pack_vertices` write the bone blocks and vertex rows the shaders read. Pure Python and
numpy: no Vulkan loader is needed.
"""

from __future__ import annotations

import numpy as np

from ..bones import PackedPose
from ..mesh import SkinnedMesh
from ..shader_interface import mesh_arrays
from .interface import KINDS, interface, interface_json, module, variant_of, variants
from .modules import spirv, spirv_dir

__all__ = [
    "KINDS",
    "PackedPose",
    "interface",
    "interface_json",
    "module",
    "pack_bones",
    "pack_vertices",
    "spirv",
    "spirv_dir",
    "variant_of",
    "variants",
]


def pack_bones(
    method: str,
    bones: object,
    bone_count: int,
    *,
    allow_scale: bool = True,
    rest_matrices: object = None,
) -> PackedPose:
    """A pose packed for ``method``'s shaders: ``.bones`` (B, ...) float32 rows of the std140
    bone block (``interface(...)["bones"]["stride"]`` bytes a bone, uploaded at binding 0),
    ``.scales`` the second block's rows or None, ``.variant`` the method whose variant draws
    it (two-phase DQS for a DQS pose with scale). The layouts: :mod:`vkdqs.bones`."""
    from .. import methods

    return methods.get(method).pack(
        bones,
        int(bone_count),
        allow_scale=allow_scale,
        rest_matrices=None if rest_matrices is None else np.asarray(rest_matrices, np.float64),
    )


def pack_vertices(mesh: SkinnedMesh, layout: str = "exact") -> dict[str, np.ndarray]:
    """The mesh's rows as the shaders read them, by input name (``interface(...)``'s
    ``vertex_inputs`` and texel ``descriptors`` name them), in ``layout``: ``"exact"``
    (32-bit rows) or ``"lean"`` (the packed formats of :mod:`vkdqs.engine.vertex_packing`)."""
    return mesh_arrays(mesh, layout)
