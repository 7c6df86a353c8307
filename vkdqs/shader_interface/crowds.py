"""Crowds: baked clips sampled on the GPU, all copies in one instanced draw; the crowd
passes' bindings, texel formats, copy records and push constants."""

from __future__ import annotations

import numpy as np

from .bindings import INSTANCE
from .mesh_inputs import NEED_INPUTS, SURFACE_INPUTS, MeshInput, attributes, mesh_inputs
from .vertex_layouts import VertexLayout
from .vulkan_types import Binding, DescriptorType, Format, Stage

# crowd_<method>.comp samples a baked clip for every (copy, joint) into a texel buffer of bones;
# crowd_<method>[_8].vert skins with bone gl_InstanceIndex * joint_count + joint from it and
# places each copy with its own model matrix and colour (another texel buffer); the fragment
# shader is skin.frag compiled with CROWD (the copy's colour from the vertex shader, times the
# mesh's material: set MATERIAL_SET, as for instances). The ``_surface`` variants (CROWD_SURFACE)
# also pass the material's UV and colour (SURFACE_INPUTS); the others, for untextured materials
# on meshes without colours, have neither. Clip frames and bones
# are rgba32f texel buffers holding each bone as BONE_TEXELS texels, in the same layout as the
# uniform bone blocks (a DQ's real and dual parts; an affine matrix's three rows): on lavapipe
# texel fetches are far faster than storage-buffer reads.


CROWD_FRAMES = 0  #: crowd_*.comp: the clip's frames, (F * J) bones, uniform texel buffer
CROWD_POSITIONS = 1  #: crowd_*.comp: per copy a vec2: first frame to blend, next one's weight
CROWD_BONES_OUT = 2  #: crowd_*.comp: (copies * J) bones, storage texel buffer
CROWD_BONES = 0  #: crowd vertex shader: the bones crowd_*.comp wrote, uniform texel buffer
CROWD_COPIES = 9  #: crowd vertex shader: one CROWD_COPY per copy, uniform texel buffer
#: crowd vertex shader: the copies in view (r32ui indices), instance i draws copy visible[i]
CROWD_VISIBLE = 10
#: crowd_cull.comp: the copies (as crowd.vert reads them), each clip's box (2 texels: lo, hi),
#: the visible list it writes (r32ui) and the indirect draw commands it counts into
CROWD_CULL_COPIES = 0
CROWD_CULL_BOXES = 1
CROWD_CULL_VISIBLE = 2
CROWD_CULL_COMMANDS = 3
#: crowd_cull.comp: the copies' frame positions (CROWD_POSITIONS), x = -1 for a culled copy
CROWD_CULL_POSITIONS = 4
#: Format of the visible-copies texel buffer.
CROWD_VISIBLE_FORMAT = Format.R32_UINT
#: One VkDrawIndexedIndirectCommand: indexCount, instanceCount, firstIndex, vertexOffset,
#: firstInstance.
DRAW_INDEXED_INDIRECT = np.dtype(
    [
        ("index_count", "<u4"),
        ("instance_count", "<u4"),
        ("first_index", "<u4"),
        ("vertex_offset", "<i4"),
        ("first_instance", "<u4"),
    ]
)
#: crowd.vert -> skin.frag (CROWD): the copy's flat colour; locations 3 and 4 carry the UV and
#: vertex colour as in the instance path (the fragment shader reads the material, set 1).
CROWD_COLOR_LOCATION = 5
#: Format of every crowd texel buffer.
CROWD_TEXEL_FORMAT = Format.R32G32B32A32_SFLOAT

#: One copy in ``crowd.vert``'s copies texel buffer (binding :data:`CROWD_COPIES`): 8 texels.
CROWD_COPY = np.dtype(
    [
        ("model", "<f4", (4, 4)),  # column-major (4 texels)
        ("normal_matrix", "<f4", (3, 4)),  # 3 columns of the 3x3; column 0's w: the clip
        ("color", "<f4", 4),
    ]
)
assert CROWD_COPY.itemsize == 128

CROWD_SAMPLE_PUSH_BYTES = 12  #: uint copy_count, joint_count, frame_count
CROWD_RENDER_PUSH_BYTES = 68  #: mat4 view_projection, uint joint_count
CROWD_CULL_PUSH_BYTES = 76  #: mat4 view_projection, uint copy_count, group_count, cull

CROWD_SAMPLE_BINDINGS = (
    Binding(CROWD_FRAMES, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(CROWD_POSITIONS, DescriptorType.STORAGE_BUFFER, Stage.COMPUTE),
    Binding(CROWD_BONES_OUT, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
)
#: The crowd draw's set (every crowd variant); the needs' texels (:data:`NEED_INPUTS`, DDM's:
#: the mesh's, shared by all copies) are written for its crowds only.
CROWD_RENDER_BINDINGS = (
    Binding(CROWD_BONES, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    Binding(INSTANCE, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX | Stage.FRAGMENT),
    Binding(CROWD_COPIES, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    Binding(CROWD_VISIBLE, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    *(Binding(m.binding, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX) for m in NEED_INPUTS),
)
CROWD_CULL_BINDINGS = (
    Binding(CROWD_CULL_COPIES, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(CROWD_CULL_BOXES, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(CROWD_CULL_VISIBLE, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(CROWD_CULL_COMMANDS, DescriptorType.STORAGE_BUFFER, Stage.COMPUTE),
    Binding(CROWD_CULL_POSITIONS, DescriptorType.STORAGE_BUFFER, Stage.COMPUTE),
)


def crowd_render_inputs(
    slots: int, method: str = "dqs", surface: bool = True, layout: str | VertexLayout = "exact"
) -> tuple[MeshInput, ...]:
    """The vertex inputs of ``crowd_<method>[_8][_surface].vert``: :func:`mesh_inputs`, then
    for the ``surface`` variant :data:`SURFACE_INPUTS` (7, 8: the material's UV and colour; a
    constant row without them). Untextured materials on meshes without colours draw with the
    variant without them: what crowds cost before materials. Texel inputs left out."""
    return (*attributes(mesh_inputs(slots, method, layout)), *(SURFACE_INPUTS if surface else ()))
