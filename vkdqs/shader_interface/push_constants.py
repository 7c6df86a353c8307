"""Push-constant sizes of the skinning, rendering, precomputation and overlay pipelines.

The bounds, crowd and Delta Mush passes declare theirs in
:mod:`vkdqs.shader_interface.bounds`, :mod:`vkdqs.shader_interface.crowds` and
:mod:`vkdqs.shader_interface.delta_mush`.
"""

from __future__ import annotations

#: uint vertex_count, position_base, normal_base, box_base; float diag2 (the rest mesh's
#: bounding-box diagonal squared: the scale of DDM's vanished-covariance test); uint
#: vertex_first (the dispatch's chunk: where its vertex views start)
COMPUTE_PUSH_BYTES = 24
RENDER_PUSH_BYTES = 64  #: mat4 view_projection
READBACK_PUSH_BYTES = 72  #: mat4 view_projection, uint position_base, normal_base
#: uint first_vertex, vertex_count; int bone_count; float inv_sigma2; int entry_first,
#: entry_end (the window of pair bins bound); uint accumulate
CENTERS_PUSH_BYTES = 28
#: uint vertex_count, columns, row_invocations, first; float gamma, delta, c_rotation,
#: c_translation
DDM_PUSH_BYTES = 32
#: ivec2 size (the overlay image's width and height), int first_row, int rows (the part of
#: the image drawn: a band of rows, one texel view; fragment stage)
OVERLAY_PUSH_BYTES = 16

#: The members of the skinning shaders' push blocks, by variant kind: (name, GLSL type, byte
#: offset), as skin.comp and skin.vert declare them (checked against the SPIR-V's Offset
#: decorations by tests/test_shaders_library.py).
PUSH_MEMBERS: dict[str, tuple[tuple[str, str, int], ...]] = {
    "compute": (
        ("vertex_count", "uint", 0),
        ("position_base", "uint", 4),
        ("normal_base", "uint", 8),
        ("box_base", "uint", 12),
        ("diag2", "float", 16),
        ("vertex_first", "uint", 20),
    ),
    "render": (("view_projection", "mat4", 0),),
    "readback": (
        ("view_projection", "mat4", 0),
        ("position_base", "uint", 64),
        ("normal_base", "uint", 68),
    ),
}
