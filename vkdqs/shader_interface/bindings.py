"""Descriptor bindings: the binding numbers of set 0 and the set layouts of the skinning,
rendering, material, precomputation and overlay pipelines.

The bounds, crowd and Delta Mush passes declare theirs in
:mod:`vkdqs.shader_interface.bounds`, :mod:`vkdqs.shader_interface.crowds` and
:mod:`vkdqs.shader_interface.delta_mush`.
"""

from __future__ import annotations

from .bone_blocks import has_second_block
from .mesh_inputs import NEED_INPUTS, mesh_inputs
from .vulkan_types import Binding, DescriptorType, Format, Stage

BONES = 0  #: BoneBlock (every skinning variant)
BONE_SCALES = 6  #: SecondBlock: mat3x4 rows per bone, for the methods with a second block
INSTANCE = 1  #: InstanceBlock (rendering variants and skin.frag)
READBACK_OUT = 1  #: SkinnedVertices storage buffer (readback variants)
COMPUTE_OUT = 5  #: the compute shader's r32f output storage texel buffer (positions)
#: its normals: the same view as COMPUTE_OUT where one view holds the whole output, a view of
#: the chunk's normals where the Skinner dispatches in chunks (vkdqs.engine.chunks)
COMPUTE_OUT_NORMALS = 15
#: skin.comp's Boxes storage buffer: per pose 6 uint keys
#: (:func:`vkdqs.shader_interface.bounds.decode_boxes`) at box_base
COMPUTE_BOXES = 12
MORPH_DELTAS = 10  #: rgba32f uniform texel buffer of morph-target deltas (every skin.* variant)
MORPH_WEIGHTS = 11  #: MorphBlock: every morph target's weight (dense: the active ones listed)
#: Format of the compute shader's output texel buffer (one float per texel).
COMPUTE_OUT_FORMAT = Format.R32_SFLOAT


def compute_bindings(method: str, slots: int) -> tuple[Binding, ...]:
    """The descriptor set of ``skin_<method>[_8].comp``."""
    c = Stage.COMPUTE
    out = [Binding(BONES, DescriptorType.UNIFORM_BUFFER_DYNAMIC, c)]
    if has_second_block(method):
        out.append(Binding(BONE_SCALES, DescriptorType.UNIFORM_BUFFER_DYNAMIC, c))
    out += [
        Binding(m.binding, DescriptorType.UNIFORM_TEXEL_BUFFER, c)
        for m in mesh_inputs(slots, method)
    ]
    out.append(Binding(COMPUTE_OUT, DescriptorType.STORAGE_TEXEL_BUFFER, c))
    out.append(Binding(COMPUTE_OUT_NORMALS, DescriptorType.STORAGE_TEXEL_BUFFER, c))
    out.append(Binding(COMPUTE_BOXES, DescriptorType.STORAGE_BUFFER, c))
    out += [
        Binding(MORPH_DELTAS, DescriptorType.UNIFORM_TEXEL_BUFFER, c),
        Binding(MORPH_WEIGHTS, DescriptorType.UNIFORM_BUFFER_DYNAMIC, c),
    ]
    return tuple(sorted(out, key=lambda b: b.binding))


def readback_bindings(method: str) -> tuple[Binding, ...]:
    """The descriptor set of ``skin_<method>[_8]_readback.vert``."""
    v = Stage.VERTEX
    out = [Binding(BONES, DescriptorType.UNIFORM_BUFFER_DYNAMIC, v)]
    out += [
        Binding(m.binding, DescriptorType.UNIFORM_TEXEL_BUFFER, v)
        for m in mesh_inputs(8, method)
        if m.location < 0
    ]
    out.append(Binding(READBACK_OUT, DescriptorType.STORAGE_BUFFER, v))
    if has_second_block(method):
        out.append(Binding(BONE_SCALES, DescriptorType.UNIFORM_BUFFER_DYNAMIC, v))
    out += [
        Binding(MORPH_DELTAS, DescriptorType.UNIFORM_TEXEL_BUFFER, v),
        Binding(MORPH_WEIGHTS, DescriptorType.UNIFORM_BUFFER_DYNAMIC, v),
    ]
    return tuple(out)


#: The renderer's one set layout, shared by every rendering variant (the second block is bound
#: for all of them, read by the methods that have one; skin_none uses only the instance block
#: and the morph bindings; the needs' texels, :data:`NEED_INPUTS` (Direct Delta Mush's), are
#: written for the instances whose method has the need only, the mesh's like the morph deltas).
RENDER_BINDINGS = (
    Binding(BONES, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX),
    Binding(INSTANCE, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX | Stage.FRAGMENT),
    Binding(BONE_SCALES, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX),
    Binding(MORPH_DELTAS, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    Binding(MORPH_WEIGHTS, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX),
    *(Binding(m.binding, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX) for m in NEED_INPUTS),
)

#: The renderer's material set (set :data:`MATERIAL_SET`, one per material): the base-colour
#: texture (sRGB, sampled with the material's sampler) and the :data:`MATERIAL_BLOCK`.
MATERIAL_SET = 1
MATERIAL_TEXTURE = 0
MATERIAL_UNIFORMS = 1
MATERIAL_BINDINGS = (
    Binding(MATERIAL_TEXTURE, DescriptorType.COMBINED_IMAGE_SAMPLER, Stage.FRAGMENT),
    Binding(MATERIAL_UNIFORMS, DescriptorType.UNIFORM_BUFFER, Stage.FRAGMENT),
)


#: ``cor_centers.comp``, the centers-of-rotation precomputation (:mod:`vkdqs.methods.cor.gpu`): its
#: texel buffers (binding, format) and output.
CENTERS_TEXELS = (
    (1, Format.R32G32B32A32_SINT),  # joints, slots 0..3
    (2, Format.R32G32B32A32_SFLOAT),  # weights, slots 0..3
    (3, Format.R32G32B32A32_SINT),  # joints, slots 4..7
    (4, Format.R32G32B32A32_SFLOAT),  # weights, slots 4..7
    (5, Format.R32G32B32A32_SINT),  # pair ranges: first entry, entry count
    (6, Format.R32G32B32A32_SFLOAT),  # pair bins: (b_j, b_k, A, 0), (A c, 0)
)
CENTERS_OUT = 7  #: r32f storage texel buffer: numerator xyz, denominator, per vertex
CENTERS_BINDINGS = (
    *(Binding(b, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE) for b, _ in CENTERS_TEXELS),
    Binding(CENTERS_OUT, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
)

#: ``ddm_smooth.comp``, Direct Delta Mush's smoothing as a Chebyshev expansion
#: (:mod:`vkdqs.methods.ddm.gpu`): the CSR rows (first entry, count) and entries (neighbour, bits of
#: its normalized weight) as rgba32i texels; the expansion's last two terms (rgba32f texels); the
#: next term and the running sum (rgba32f storage texels, the sum read and written); the work items
#: (r32ui: ``vertex * columns + column`` of each value the expansion can reach).
DDM_ROWS = 0
DDM_NEIGHBOURS = 1
DDM_CURRENT = 2
DDM_PREVIOUS = 3
DDM_NEXT = 4
DDM_SUM = 5
DDM_ITEMS = 6
DDM_TEXELS = (
    (DDM_ROWS, Format.R32G32B32A32_SINT),
    (DDM_NEIGHBOURS, Format.R32G32B32A32_SINT),
    (DDM_CURRENT, Format.R32G32B32A32_SFLOAT),
    (DDM_PREVIOUS, Format.R32G32B32A32_SFLOAT),
    (DDM_ITEMS, Format.R32_UINT),
)
DDM_OUT_FORMAT = Format.R32G32B32A32_SFLOAT  #: the next term's and the sum's storage views
DDM_BINDINGS = (
    *(Binding(b, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE) for b, _ in DDM_TEXELS),
    Binding(DDM_NEXT, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(DDM_SUM, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
)

#: ``overlay.frag``: the host-composed label image (:mod:`vkdqs.app.overlay`), one RGBA8 texel per
#: pixel, in its own set layout and pipeline layout (not the render layout).
OVERLAY_IMAGE = 0
OVERLAY_TEXEL_FORMAT = Format.R8G8B8A8_UNORM
OVERLAY_BINDINGS = (Binding(OVERLAY_IMAGE, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.FRAGMENT),)
