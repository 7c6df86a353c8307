"""Push-constant sizes of the skinning, rendering, precomputation and overlay pipelines.

The bounds, crowd and Delta Mush passes declare theirs in
:mod:`vkdqs.shader_interface.bounds`, :mod:`vkdqs.shader_interface.crowds` and
:mod:`vkdqs.shader_interface.delta_mush`.
"""

from __future__ import annotations

#: uint vertex_count, position_base, normal_base, box_base; float diag2 (the rest mesh's
#: bounding-box diagonal squared: the scale of DDM's vanished-covariance test)
COMPUTE_PUSH_BYTES = 20
RENDER_PUSH_BYTES = 64  #: mat4 view_projection
READBACK_PUSH_BYTES = 72  #: mat4 view_projection, uint position_base, normal_base
CENTERS_PUSH_BYTES = 16  #: uint first_vertex, vertex_count; int bone_count; float inv_sigma2
#: uint vertex_count, columns, row_invocations, first; float gamma, delta, c_rotation,
#: c_translation
DDM_PUSH_BYTES = 32
OVERLAY_PUSH_BYTES = 8  #: ivec2 size, the overlay image's width and height (fragment stage)
