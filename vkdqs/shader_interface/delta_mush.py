"""Delta Mush: the compute passes after skinning (delta_mush.comp), their bindings,
specialization and push constants."""

from __future__ import annotations

from .vulkan_types import Binding, DescriptorType, Format, Stage

# delta_mush.comp (vkdqs/methods/delta_mush/passes.py) smooths the skinned positions (one dispatch
# per iteration, ping-pong), rebuilds each vertex from its frame and offset, then writes the
# result's positions and area-weighted normals: one module, its pass a specialization constant.


#: delta_mush.comp: which pass (DELTA_MUSH_SMOOTH, DELTA_MUSH_REBUILD, DELTA_MUSH_NORMALS)
DELTA_MUSH_PASS_ID = 9
DELTA_MUSH_SMOOTH = 0
DELTA_MUSH_REBUILD = 1
DELTA_MUSH_NORMALS = 2
#: Its read-only texel buffers (binding, format): per vertex (first overflow neighbour texel,
#: degree, first corner texel, corner count); the neighbours, 2 texels a vertex (7 and a meta
#: word) then the overflow, 4 a texel; the corners, 2 a texel (each the next and previous vertex
#: of its triangle); per vertex its offset in its frame
#: (vkdqs.methods.delta_mush.passes.topology_arrays); the normals pass's own triangles (binding 8:
#: per vertex first corner texel and count, then the corners; the frames' lists are a welded mesh's,
#: vkdqs.methods.delta_mush.passes.output_corners).
DELTA_MUSH_TEXELS = (
    (0, Format.R32G32B32A32_UINT),
    (1, Format.R32G32B32A32_UINT),
    (2, Format.R32G32B32A32_UINT),
    (3, Format.R32G32B32A32_SFLOAT),
    (8, Format.R32G32B32A32_UINT),
)
#: delta_mush.comp: the first pass reads the skinned positions from the Skinner's r32f output
#: (a storage texel buffer, when DELTA_MUSH_FROM_OUT_ID is true); the last writes the result there
DELTA_MUSH_FROM_OUT_ID = 10
#: delta_mush.comp: the dispatch runs the listed vertices of more neighbours than their two
#: fixed texels hold, with the overflow code (false: every vertex, on its first seven)
DELTA_MUSH_OVERFLOW_ID = 11
DELTA_MUSH_SRC_OUT = 4
DELTA_MUSH_DST_OUT = 5
#: The passes in between read a scratch buffer as rgba32f uniform texels, write one as storage
DELTA_MUSH_SRC = 6
DELTA_MUSH_DST = 7
DELTA_MUSH_SCRATCH_FORMAT = Format.R32G32B32A32_SFLOAT
DELTA_MUSH_BINDINGS = (
    *(Binding(b, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE) for b, _ in DELTA_MUSH_TEXELS),
    Binding(DELTA_MUSH_SRC_OUT, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(DELTA_MUSH_DST_OUT, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(DELTA_MUSH_SRC, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(DELTA_MUSH_DST, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
)
#: uint vertex_count, src_base (FROM_OUT), dst_base, normal_base (the normals pass); float step;
#: uint list_first (OVERFLOW)
DELTA_MUSH_PUSH_BYTES = 24
