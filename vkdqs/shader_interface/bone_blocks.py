"""The bone blocks: each shader method's bone stride, second block and ``aux`` input, as the
method registry (:mod:`vkdqs.methods`) gives them, and the unskinned baseline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import methods

if TYPE_CHECKING:
    from ..methods import SkinningMethod


# Each skinning method of the registry (vkdqs.methods) says its bone block's layout (``mat2x4``
# dual quaternions, 32 bytes a bone, or the three rows of an affine ``mat3x4``, 48 bytes), whether
# it has a second block of ``mat3x4`` rows per bone at :data:`BONE_SCALES` (two-phase DQS's
# ``[S | 0]``, "blend"'s ``[A | t]``, "dqs_blender"'s scale matrices) and whether it reads the
# per-vertex ``aux`` input; its ``defines`` carry that layout to the GLSL (SKIN_BONES_ROWS,
# SKIN_SECOND_BLOCK, SKIN_AUX) beside its block's own define.

#: The name of the registry's "no skinning" entry (:data:`vkdqs.methods.NONE`): the rest mesh
#: drawn by ``skin_none.vert`` (it measures what skinning costs and draws rigid parts); the
#: variants' file names spell it.
UNSKINNED = methods.NONE.name
#: std140 array stride of one bone's ``mat3x4`` rows in the second block (:data:`BONE_SCALES`).
SCALE_STRIDE = 48
SCALE_FLOATS = SCALE_STRIDE // 4


def skinning(method: str) -> SkinningMethod:
    """The registry entry of a shader method (:data:`UNSKINNED`: :data:`vkdqs.methods.NONE`)."""
    return methods.get(method)


def bone_stride(method: str) -> int:
    """std140 bytes of one bone in the bone block of ``method`` (:data:`UNSKINNED`: a DQ's)."""
    return skinning(method).bone_stride


def has_second_block(method: str) -> bool:
    """Whether ``method``'s shaders read the ``mat3x4`` block at :data:`BONE_SCALES`."""
    return skinning(method).second_block


def has_aux(method: str) -> bool:
    """Whether ``method``'s shaders read the per-vertex ``aux`` input."""
    return skinning(method).aux
