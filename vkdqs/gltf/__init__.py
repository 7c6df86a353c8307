"""glTF 2.0 loading: skinned meshes, skins, the node hierarchy and animations as numpy arrays.

:func:`load_gltf` (in :mod:`vkdqs.gltf.reader`, which documents what is loaded, what is ignored,
the errors and the limits on untrusted files) returns a :class:`GltfScene`;
:mod:`vkdqs.gltf.compression` decodes meshopt and Draco data (the ``vkdqs[compression]`` extra);
:mod:`vkdqs.gltf.uris` decides which files a model may read; :mod:`vkdqs.gltf.materials` reads
materials, textures and images (decoded by :mod:`vkdqs.gltf.images`); :mod:`vkdqs.gltf.save`
writes files it reads. Nothing here touches the GPU.
"""

from __future__ import annotations

from vkdqs.gltf.accessors import BYTE as BYTE
from vkdqs.gltf.accessors import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from vkdqs.gltf.accessors import FLOAT as FLOAT
from vkdqs.gltf.accessors import MAX_ZERO_FILL_BYTES as MAX_ZERO_FILL_BYTES
from vkdqs.gltf.accessors import SHORT as SHORT
from vkdqs.gltf.accessors import UNSIGNED_BYTE as UNSIGNED_BYTE
from vkdqs.gltf.accessors import UNSIGNED_INT as UNSIGNED_INT
from vkdqs.gltf.accessors import UNSIGNED_SHORT as UNSIGNED_SHORT
from vkdqs.gltf.animation import Animation, Channel
from vkdqs.gltf.container import GLB_MAGIC as GLB_MAGIC
from vkdqs.gltf.errors import GltfError, GltfWarning
from vkdqs.gltf.geometry import vertex_normals
from vkdqs.gltf.reader import WEIGHT_SUM_TOL as WEIGHT_SUM_TOL
from vkdqs.gltf.reader import load_gltf
from vkdqs.gltf.scene import FIRST_ANIMATION as FIRST_ANIMATION
from vkdqs.gltf.scene import GltfScene, Mesh, Node, Primitive, RigidInstance, Skin

__all__ = [
    "Animation",
    "Channel",
    "GltfError",
    "GltfScene",
    "GltfWarning",
    "Mesh",
    "Node",
    "Primitive",
    "RigidInstance",
    "Skin",
    "load_gltf",
    "vertex_normals",
]
