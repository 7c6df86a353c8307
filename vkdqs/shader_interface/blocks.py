"""The std140 uniform blocks the renderer fills: the instance block and the material
block (the morph block is in :mod:`vkdqs.shader_interface.morphs`)."""

from __future__ import annotations

import numpy as np

#: std140 ``InstanceBlock`` of ``shaders/glsl/include/instance.glsl`` (binding
#: :data:`vkdqs.shader_interface.bindings.INSTANCE`).
INSTANCE_BLOCK = np.dtype(
    [
        ("model", "<f4", (4, 4)),  # column-major, as GLSL reads it
        ("normal_matrix", "<f4", (4, 4)),
        ("base_color", "<f4", 4),
        ("key_light", "<f4", 4),
        ("fill_light", "<f4", 4),
        ("ambient", "<f4", 4),
        ("camera_position", "<f4", 4),
        ("debug", "<i4", 4),
    ]
)
assert INSTANCE_BLOCK.itemsize == 224


#: std140 ``MaterialBlock`` of skin.frag (set 1, binding
#: :data:`vkdqs.shader_interface.bindings.MATERIAL_UNIFORMS`).
MATERIAL_BLOCK = np.dtype(
    [
        ("base_color", "<f4", 4),  # linear RGBA factor
        ("uv_row0", "<f4", 4),  # first two rows of the 3x3 UV transform (xyz; w unused)
        ("uv_row1", "<f4", 4),
        ("alpha", "<f4", 4),  # x: alpha cutoff (< 0: opaque, nothing discarded)
    ]
)
assert MATERIAL_BLOCK.itemsize == 64
