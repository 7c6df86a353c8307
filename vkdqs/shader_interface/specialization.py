"""Specialization-constant ids (``constant_id`` in the GLSL), the values they take, and
skin.frag's specialization.

The bounds and Delta Mush passes' own ids are in :mod:`vkdqs.shader_interface.bounds` and
:mod:`vkdqs.shader_interface.delta_mush`.
"""

from __future__ import annotations

MAX_BONES_ID = 0  #: ``MAX_BONES``: how many bones the bone blocks hold
LOCAL_SIZE_ID = 1  #: the compute shader's ``local_size_x``
#: ``MORPH_TARGETS``: which morph deltas a pose applies, bit 0 position and bit 1 normal deltas
#: (:func:`morph_spec`); 0 (the default) compiles the morph code away, so meshes without
#: targets, and poses without active ones, cost what they did before morphs existed (on
#: lavapipe a branch runs its body under a mask, a loop's body once even for zero trips).
MORPH_TARGETS_ID = 2
LOCAL_SIZE = 64  #: compute workgroup size vkdqs uses
#: skin.frag: sample the material's texture (false for untextured materials: no texture fetch)
TEXTURED_ID = 3
#: skin.frag: multiply the vertex colour (false for meshes without colours)
VERTEX_COLORS_ID = 4
#: skin.frag: discard below the material's alpha cutoff (false for opaque materials: no discard
#: in the shader, so the rasterizer keeps early depth testing)
ALPHA_MASK_ID = 5
#: skin.comp, skin.vert and crowd.vert: the normals input holds octahedral xy (snorm16x2, the
#: lean layout), decoded by include/vertex_data.glsl; false: xyz (float or snorm16x4)
OCT_NORMALS_ID = 12
#: skin.comp: the lean layout's packed rows (:func:`packed_rows`): the normal, joints and
#: weights one rgba32ui texel, fetched as 32-bit words and unpacked by include/vertex_data.glsl
PACKED_ROWS_ID = 13

#: crowd.vert: pass TEXCOORD_0 on (false when the material is untextured or the mesh has no
#: UVs: the output is the constant row's 1.0 and the input is not fetched)
CROWD_UVS_ID = 6
#: crowd.vert: pass COLOR_0 on (false for meshes without colours)
CROWD_COLORS_ID = 7
#: skin.comp: what a dispatch writes, bit 0 the skinned vertices, bit 1 their box
#: (:data:`OUTPUT_VERTICES`, :data:`OUTPUT_BOX`); the default, 1, compiles the box code away
COMPUTE_OUTPUT_ID = 8
OUTPUT_VERTICES = 1
OUTPUT_BOX = 2
#: skin.comp: floats from one output row to the next, 3 (tight rows, the default) or 4 (an app's
#: vec4 rows, written by Skinner.record)
OUTPUT_STRIDE_ID = 14


#: The skinning shaders' specialization constants: id -> (GLSL name, what it means, the value
#: when it is not set).
SPEC_CONSTANTS: dict[int, tuple[str, str, int]] = {
    MAX_BONES_ID: ("MAX_BONES", "bones the bone blocks hold (at least the skeleton's)", 128),
    LOCAL_SIZE_ID: ("local_size_x", f"the compute workgroup size (vkdqs uses {LOCAL_SIZE})", 64),
    MORPH_TARGETS_ID: (
        "MORPH_TARGETS",
        "morph deltas applied: bit 0 positions, bit 1 normals (0: the morph code compiled away)",
        0,
    ),
    OCT_NORMALS_ID: ("OCT_NORMALS", "normals are octahedral snorm16x2 (the lean layout)", 0),
    PACKED_ROWS_ID: ("PACKED_ROWS", "the lean layout's packed rgba32ui rows (skin.comp)", 0),
    COMPUTE_OUTPUT_ID: (
        "COMPUTE_OUTPUT",
        "what a dispatch writes: bit 0 the skinned vertices, bit 1 their box",
        1,
    ),
    OUTPUT_STRIDE_ID: ("OUTPUT_STRIDE", "floats from one output row to the next (3 or 4)", 3),
}


def fragment_spec(
    textured: bool, vertex_colors: bool, alpha_mask: bool
) -> tuple[tuple[int, int], ...]:
    """skin.frag's specialization (instances and crowds alike): texture fetch, vertex colour
    multiply and alpha test each on or off."""
    return (
        (TEXTURED_ID, int(textured)),
        (VERTEX_COLORS_ID, int(vertex_colors)),
        (ALPHA_MASK_ID, int(alpha_mask)),
    )
