"""Bounding boxes of skinned poses: skin.comp's box records and the bounds.comp pass
(``Skinner.skin(bounds=True)``), its bindings, specialization and push constants."""

from __future__ import annotations

import numpy as np

from .vulkan_types import Binding, DescriptorType, Format, Stage

#: bytes a pose's box takes in the Boxes buffer (6 uints, padded to 8)
BOX_STRIDE = 32
#: vertices each skin.comp invocation skins when it reduces a box: a workgroup then covers
#: LOCAL_SIZE * BOX_STEPS vertices (skin.comp's BOX_STEPS)
BOX_STEPS = 16
#: bounds.comp (Skinner.skin(bounds=True): the box of the positions skin.comp wrote, reduced in
#: a second dispatch): its rgba32f view of the Skinner's output and the Boxes buffer
BOUNDS_POSITIONS = 0
BOUNDS_BOXES = 1
BOUNDS_TEXEL_FORMAT = Format.R32G32B32A32_SFLOAT
#: groups of 12 floats (4 vertices' positions) each bounds.comp invocation reduces
#: (bounds.comp's BOUNDS_STEPS)
BOUNDS_STEPS = 16
#: bounds.comp: the edge dispatch (each pose's first and last BOUNDS_EDGE vertices) or the main
#: one (the whole groups of 12 floats in between)
BOUNDS_EDGES_ID = 12
BOUNDS_EDGE = 8
BOUNDS_BINDINGS = (
    Binding(BOUNDS_POSITIONS, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(BOUNDS_BOXES, DescriptorType.STORAGE_BUFFER, Stage.COMPUTE),
)
BOUNDS_PUSH_BYTES = 8  #: uint vertex_count, first_pose


def decode_boxes(keys: np.ndarray) -> np.ndarray:
    """(P, 2, 3) float32 boxes (min, max) from skin.comp's (P, 8) uint32 Boxes records.

    The shader stores each coordinate as an order-preserving key k(f) (the float's bits with
    the sign bit set for a positive float, all bits flipped for a negative one) and folds with
    integer atomicMax: the max in slots 3..5, the min as ~k in slots 0..2.
    """
    keys = np.asarray(keys, np.uint32).reshape(-1, 8)[:, :6].copy()
    keys[:, :3] = ~keys[:, :3]
    bits = np.where(keys & np.uint32(0x80000000), keys & np.uint32(0x7FFFFFFF), ~keys)
    return bits.astype(np.uint32).view(np.float32).reshape(-1, 2, 3)
