"""The Python side of the shader interface: one place for what the GLSL and the host must agree on.

Binding numbers, descriptor types, bone and scale strides, push-constant sizes, the instance
block, the mesh's vertex and texel formats, specialization-constant ids, sample counts and the
list of SPIR-V variants all live here. The Skinner, the renderer, the targets and
``build_shaders.py`` read them from this module, and ``tests/test_shader_interface.py`` checks
them against the committed SPIR-V (bindings, descriptor types, array strides, vertex inputs and
specialization ids read out of the modules), so adding a variant or a binding is one edit here
plus the GLSL, and a test says when the two disagree.

Pure Python and numpy: Vulkan enum values are written as numbers (from the Vulkan
specification; a test compares them with the ``vulkan`` binding), so ``build_shaders.py`` and
the numpy-only layers can import this module without a Vulkan loader.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum, IntEnum, IntFlag
from typing import TYPE_CHECKING

import numpy as np

from . import methods
from .engine import vertex_packing

if TYPE_CHECKING:
    from collections.abc import Callable

    from .mesh import SkinnedMesh
    from .methods import SkinningMethod
    from .methods.ddm.reference import DirectDeltaMush


class DescriptorType(IntEnum):
    """``VkDescriptorType`` values used by vkdqs's shaders."""

    COMBINED_IMAGE_SAMPLER = 1
    UNIFORM_TEXEL_BUFFER = 4
    STORAGE_TEXEL_BUFFER = 5
    UNIFORM_BUFFER = 6
    STORAGE_BUFFER = 7
    UNIFORM_BUFFER_DYNAMIC = 8


class Format(IntEnum):
    """``VkFormat`` values of vertex attributes, texel buffers and colour targets."""

    R8G8B8A8_UNORM = 37
    R8G8B8A8_UINT = 41
    R16G16_SNORM = 78
    R16G16B16A16_UINT = 95
    R16G16B16A16_UNORM = 91
    R16G16B16A16_SNORM = 92
    R16G16B16A16_SINT = 96
    R8G8B8A8_SRGB = 43
    B8G8R8A8_SRGB = 50
    R32_UINT = 98
    R32_SFLOAT = 100
    R32G32_SFLOAT = 103
    R32G32B32_SFLOAT = 106
    R32G32B32A32_UINT = 107
    R32G32B32A32_SINT = 108
    R32G32B32A32_SFLOAT = 109


class Stage(IntFlag):
    """``VkShaderStageFlagBits``."""

    VERTEX = 0x01
    FRAGMENT = 0x10
    COMPUTE = 0x20


# -- specialization constants (constant_id in the GLSL) ---------------------------------------

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


# -- bone blocks ------------------------------------------------------------------------------
#
# Each skinning method of the registry (vkdqs.methods) says its bone block's layout (``mat2x4``
# dual quaternions, 32 bytes a bone, or the three rows of an affine ``mat3x4``, 48 bytes), whether
# it has a second block of ``mat3x4`` rows per bone at :data:`BONE_SCALES` (two-phase DQS's
# ``[S | 0]``, "blend"'s ``[A | t]``, "dqs_blender"'s scale matrices) and whether it reads the
# per-vertex ``aux`` input; its ``defines`` carry that layout to the GLSL (SKIN_BONES_ROWS,
# SKIN_SECOND_BLOCK, SKIN_AUX) beside its block's own define.

#: The renderer's unskinned baseline: the rest mesh drawn by ``skin_none.vert`` (not a skinning
#: method; it measures what skinning costs and draws rigid parts).
UNSKINNED = "none"
#: std140 array stride of one bone's ``mat3x4`` rows in the second block (:data:`BONE_SCALES`).
SCALE_STRIDE = 48
SCALE_FLOATS = SCALE_STRIDE // 4


def skinning(method: str) -> SkinningMethod | None:
    """The registry entry of a shader method, None for :data:`UNSKINNED`."""
    return None if method == UNSKINNED else methods.get(method)


def bone_stride(method: str) -> int:
    """std140 bytes of one bone in the bone block of ``method`` (:data:`UNSKINNED`: a DQ's)."""
    m = skinning(method)
    return methods.DQ_BYTES if m is None else m.bone_stride


def has_second_block(method: str) -> bool:
    """Whether ``method``'s shaders read the ``mat3x4`` block at :data:`BONE_SCALES`."""
    m = skinning(method)
    return m is not None and m.second_block


def has_aux(method: str) -> bool:
    """Whether ``method``'s shaders read the per-vertex ``aux`` input."""
    m = skinning(method)
    return m is not None and m.aux


# -- bindings (set 0) -------------------------------------------------------------------------

BONES = 0  #: BoneBlock (every skinning variant)
BONE_SCALES = 6  #: SecondBlock: mat3x4 rows per bone, for the methods with a second block
INSTANCE = 1  #: InstanceBlock (rendering variants and skin.frag)
READBACK_OUT = 1  #: SkinnedVertices storage buffer (readback variants)
COMPUTE_OUT = 5  #: the compute shader's r32f output storage texel buffer
#: skin.comp's Boxes storage buffer: per pose 6 uint keys (:func:`decode_boxes`) at box_base
COMPUTE_BOXES = 12
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
MORPH_DELTAS = 10  #: rgba32f uniform texel buffer of morph-target deltas (every skin.* variant)
MORPH_WEIGHTS = 11  #: MorphBlock: every morph target's weight (dense: the active ones listed)


@dataclass(frozen=True)
class MeshInput:
    """One (N, 4) array of 32-bit rows of the mesh, as the shaders read it.

    The compute shader reads it through a uniform texel buffer at ``binding`` in
    ``texel_format``; the vertex shaders through an attribute at ``location`` in
    ``vertex_format`` (one vertex-buffer binding per attribute, stride :data:`MESH_ROW_BYTES`).
    """

    name: str
    texel_format: Format
    vertex_format: Format
    binding: int
    location: int
    eight_only: bool = False  #: only in the 8-influence variants
    aux_only: bool = False  #: only in the variants of methods with an ``aux`` input
    #: the mesh's joints or weights: only in the variants of methods that read them
    #: (:attr:`vkdqs.methods.SkinningMethod.influences`)
    influence: bool = False
    #: only in the variants of methods with this need (:data:`vkdqs.methods.NEEDS`), or None
    need: str | None = None
    #: texels a vertex (``(N * texels, 4)`` rows), in the 8-slot variants
    texels: int = 1
    #: its texels are per slot: the 4-slot variants read half of ``texels``
    per_slot: bool = False
    #: texels after the last vertex's: data of the whole mesh (``ddm_bones``: :func:`ddm_diag2`)
    extra_texels: int = 0
    #: a view of that input's buffer, not a buffer of its own: the packed rows' unread bindings
    #: (:attr:`VertexLayout.packed`)
    alias: str | None = None


MESH_ROW_BYTES = 16
_F32X4, _U32X4 = Format.R32G32B32A32_SFLOAT, Format.R32G32B32A32_UINT
MESH_INPUTS = (
    MeshInput("positions", _F32X4, Format.R32G32B32_SFLOAT, 1, 0),
    MeshInput("normals", _F32X4, _F32X4, 2, 1),
    MeshInput("joints", _U32X4, _U32X4, 3, 2, influence=True),
    MeshInput("weights", _F32X4, _F32X4, 4, 3, influence=True),
    MeshInput("joints_1", _U32X4, _U32X4, 7, 4, True, influence=True),
    MeshInput("weights_1", _F32X4, _F32X4, 8, 5, True, influence=True),
    # xyz: the vertex's center of rotation ("cor"), w: its DQS blend weight ("blend")
    MeshInput("aux", Format.R32G32B32A32_SFLOAT, Format.R32G32B32A32_SFLOAT, 9, 6, aux_only=True),
    # Direct Delta Mush (need "ddm_data"; :func:`ddm_arrays`): each vertex's Ω of 4 or 8 slots
    # (10 floats a slot: 10 or 20 texels), and its slots' bones (16 bits each, two to an int: one
    # texel; one more after the last vertex's holds :func:`ddm_diag2`). Texel buffers on every
    # path (location -1: no vertex attribute), read by include/ddm_inputs.glsl
    MeshInput(
        "ddm_omega",
        Format.R32G32B32A32_SFLOAT,
        Format.R32G32B32A32_SFLOAT,
        13,
        -1,
        need="ddm_data",
        texels=20,
        per_slot=True,
    ),
    MeshInput(
        "ddm_bones",
        Format.R32G32B32A32_SINT,
        Format.R32G32B32A32_SINT,
        14,
        -1,
        need="ddm_data",
        extra_texels=1,
    ),
)
#: Direct Delta Mush's texel inputs (:func:`ddm_arrays`), bound at their ``binding`` in every
#: variant of "ddm" (compute, readback, render and crowd: one include declares them).
DDM_INPUTS = tuple(m for m in MESH_INPUTS if m.need == "ddm_data")
#: The per-vertex scalar the rendering shaders show as a heat map in debug mode 2 (0..1, e.g.
#: |DQS - LBS| scaled on the host): every rendering variant (not readback, not compute) reads it
#: at location 9 from its own vertex buffer of (N, 4) float32 rows (x used). Instances without a
#: scalar bind their positions buffer there (read, never shown: the mode is off for them).
SCALAR_INPUT = MeshInput("scalar", Format.R32_SFLOAT, Format.R32_SFLOAT, -1, 9)
#: Format of the compute shader's output texel buffer (one float per texel).
COMPUTE_OUT_FORMAT = Format.R32_SFLOAT


#: The vertex layouts of a mesh on the GPU: ``"exact"`` (every row 32-bit: float positions,
#: normals and weights, uint joints; bit for bit the mesh's float32 values) and ``"lean"`` (float
#: positions; normals octahedral snorm16x2, joints uint8 (at most 256 joints) or uint16, weights
#: unorm16 summing to exactly 1, or unorm8 where they are multiples of 1/255: 32 bytes a vertex
#: instead of 64, 44 instead of 96 with 8 influences). The shaders are the same: the formats
#: convert on fetch and a specialization constant (:data:`OCT_NORMALS_ID`) unfolds the normals.
LAYOUTS = ("exact", "lean")
#: The most joints the lean layout's uint16 indices hold.
LEAN_MAX_JOINTS = 2**16

#: Per input, the lean layout's formats, narrowest first (:func:`lean_layout` takes the first
#: the mesh's values fit and the device reads; the exact format last, always read).
LEAN_FORMATS = {
    "normals": (Format.R16G16_SNORM, Format.R16G16B16A16_SNORM, _F32X4),
    "joints": (Format.R8G8B8A8_UINT, Format.R16G16B16A16_UINT, _U32X4),
    "weights": (Format.R8G8B8A8_UNORM, Format.R16G16B16A16_UNORM, _F32X4),
}
_FORMAT_BYTES = {
    Format.R16G16_SNORM: 4,
    Format.R8G8B8A8_UINT: 4,
    Format.R8G8B8A8_UNORM: 4,
    Format.R16G16B16A16_SNORM: 8,
    Format.R16G16B16A16_UINT: 8,
    Format.R16G16B16A16_UNORM: 8,
}


@dataclass(frozen=True)
class VertexLayout:
    """A mesh's layout on the GPU as resolved for one mesh and device: ``name`` the one asked
    for (:data:`LAYOUTS`) and the format of each input it narrows (normals, joints, weights;
    the ``_1`` inputs of 8 slots as their first four's)."""

    name: str = "exact"
    formats: tuple[tuple[str, Format], ...] = ()
    #: the compute path's packed rows (:func:`packed_rows`): the normals, joints and weights,
    #: encoded as ``formats`` say (unorm8 weights as multiples of 257 in 16 bits, the same
    #: values), in one rgba32ui texel a vertex (two with 8 slots), 32-bit fetches only
    packed: bool = False

    def format(self, name: str) -> Format | None:
        """The narrowed format of input ``name``, or None (the exact one)."""
        return dict(self.formats).get(name.removesuffix("_1"))

    @property
    def oct_normals(self) -> bool:
        """Whether the normals are octahedral xy (the shaders' :data:`OCT_NORMALS_ID`)."""
        return self.format("normals") == Format.R16G16_SNORM

    @property
    def spec(self) -> tuple[tuple[int, int], ...]:
        """The specialization constant the skinning shaders read it with."""
        packed = ((PACKED_ROWS_ID, 1),) if self.packed else ()  # skin.comp only reads it
        return ((OCT_NORMALS_ID, int(self.oct_normals)), *packed)


EXACT = VertexLayout()
#: The lean layout of a mesh of at most 256 joints whose weights are not bytes, on a device
#: that reads every narrow format (lavapipe does)
LEAN = VertexLayout(
    "lean",
    (
        ("normals", Format.R16G16_SNORM),
        ("joints", Format.R8G8B8A8_UINT),
        ("weights", Format.R16G16B16A16_UNORM),
    ),
)


#: :data:`LEAN` as the compute path packs it (methods that read joints and weights)
LEAN_PACKED = dataclasses.replace(LEAN, packed=True)


def as_layout(layout: str | VertexLayout) -> VertexLayout:
    """A :class:`VertexLayout`: itself, or :data:`EXACT` / :data:`LEAN` by name."""
    if isinstance(layout, VertexLayout):
        return layout
    return {"exact": EXACT, "lean": LEAN}[layout]


def lean_layout(
    mesh: SkinnedMesh, reads: Callable[[Format], bool], packed: bool = False
) -> VertexLayout:
    """The lean layout of ``mesh``: per input the first of :data:`LEAN_FORMATS` its values fit
    (uint8 joints below 256, unorm8 weights that are multiples of 1/255) and ``reads`` (the
    device's format features for the path) accepts. ``packed`` (the compute path, a method that
    reads joints and weights): packed rows where the joints are below 256 and the device reads
    rgba32ui texels (every Vulkan device does), the narrow formats not fetched at all."""
    joint_max = int(mesh.joints.max(initial=0))
    if packed and joint_max < 256 and reads(_U32X4):
        weights = Format.R8G8B8A8_UNORM
        if not vertex_packing.bytes_exact(mesh.weights):
            weights = Format.R16G16B16A16_UNORM
        return VertexLayout(
            "lean",
            (
                ("normals", Format.R16G16_SNORM),
                ("joints", Format.R8G8B8A8_UINT),
                ("weights", weights),
            ),
            packed=True,
        )
    fits = {
        Format.R8G8B8A8_UINT: joint_max < 256,
        Format.R16G16B16A16_UINT: joint_max < LEAN_MAX_JOINTS,
        Format.R8G8B8A8_UNORM: vertex_packing.bytes_exact(mesh.weights),
    }
    return VertexLayout(
        "lean",
        tuple(
            (name, next(f for f in options if fits.get(f, True) and reads(f)))
            for name, options in LEAN_FORMATS.items()
        ),
    )


def row_bytes(fmt: int) -> int:
    """Bytes of one vertex's row in a mesh buffer of format ``fmt`` (its vertex stride)."""
    return _FORMAT_BYTES.get(fmt, MESH_ROW_BYTES)


def layout_bytes(slots: int, method: str = "dqs", layout: str | VertexLayout = "exact") -> int:
    """Bytes a vertex's mesh rows take in ``layout`` (the rows a variant reads); the mesh's
    whole takes :func:`layout_extra_bytes` more."""
    inputs = mesh_inputs(slots, method, layout)
    return sum(row_bytes(m.texel_format) * m.texels for m in inputs if m.alias is None)


def layout_extra_bytes(
    slots: int, method: str = "dqs", layout: str | VertexLayout = "exact"
) -> int:
    """Bytes of the rows after the last vertex's (:attr:`MeshInput.extra_texels`): once a mesh."""
    inputs = mesh_inputs(slots, method, layout)
    return sum(row_bytes(m.texel_format) * m.extra_texels for m in inputs)


def attributes(inputs: tuple[MeshInput, ...]) -> tuple[MeshInput, ...]:
    """The ``inputs`` a vertex shader reads as vertex attributes (those with a location; the
    others, Direct Delta Mush's, are texel buffers on every path)."""
    return tuple(m for m in inputs if m.location >= 0)


def mesh_inputs(
    slots: int, method: str = "dqs", layout: str | VertexLayout = "exact"
) -> tuple[MeshInput, ...]:
    """The inputs a variant for ``slots`` (4 or 8) influence slots and ``method`` reads, in
    location order (the per-vertex ``aux`` row only for methods with one), with their formats
    in ``layout`` (:data:`LAYOUTS` or a resolved :class:`VertexLayout`)."""
    aux = has_aux(method)
    m_ = skinning(method)
    needs = frozenset() if m_ is None else m_.needs
    influences = m_ is None or m_.influences
    out = tuple(
        m
        for m in MESH_INPUTS
        if (slots == 8 or not m.eight_only)
        and (aux or not m.aux_only)
        and (influences or not m.influence)
        and (m.need is None or m.need in needs)
    )
    if slots == 4:
        out = tuple(dataclasses.replace(m, texels=m.texels // 2) if m.per_slot else m for m in out)
    lay = as_layout(layout)
    if lay.packed and influences:
        return tuple(_packed_input(m) for m in out)
    return tuple(
        m
        if lay.format(m.name) is None
        else dataclasses.replace(
            m, texel_format=lay.format(m.name), vertex_format=lay.format(m.name)
        )
        for m in out
    )


def _packed_input(m: MeshInput) -> MeshInput:
    """``m`` in the packed rows: the joints inputs hold them (rgba32ui), the normals and weights
    inputs become float views of their buffer (bound, not read)."""
    joints = {"normals": "joints", "weights": "joints", "weights_1": "joints_1"}
    if m.name in ("joints", "joints_1"):
        return dataclasses.replace(m, texel_format=_U32X4, vertex_format=_U32X4)
    if m.name in joints:
        return dataclasses.replace(
            m, texel_format=_F32X4, vertex_format=_F32X4, alias=joints[m.name]
        )
    return m


def packed_rows(mesh: SkinnedMesh, layout: VertexLayout) -> dict[str, np.ndarray]:
    """The packed rows (:attr:`VertexLayout.packed`) of a mesh of joints below 256: ``joints``
    ((N, 4) uint32: x the octahedral normal's snorm16x2, y joints 0..3 as uint8 (low byte
    first), zw weights 0..3 as unorm16) and with 8 slots ``joints_1`` (x joints 4..7, yz
    weights 4..7, w zero); include/vertex_data.glsl unpacks them."""
    n = mesh.vertex_count
    if layout.format("weights") == Format.R8G8B8A8_UNORM:  # k/255 is exactly 257 k/65535
        weights = vertex_packing.unorm_weights(mesh.weights, 255).astype(np.uint32) * 257
    else:
        weights = vertex_packing.unorm_weights(mesh.weights).astype(np.uint32)
    joints = mesh.joints.astype(np.uint32)
    shifts = np.array([0, 8, 16, 24], np.uint32)
    rows = {"joints": np.zeros((n, 4), np.uint32)}
    rows["joints"][:, 0] = vertex_packing.oct_encode(mesh.normals).view(np.uint16).astype(
        np.uint32
    ) @ np.array([1, 1 << 16], np.uint32)
    rows["joints"][:, 1] = (joints[:, :4] << shifts).sum(axis=1, dtype=np.uint32)
    rows["joints"][:, 2:] = weights[:, 0:4:2] | (weights[:, 1:4:2] << np.uint32(16))
    if mesh.slots == 8:
        rows["joints_1"] = np.zeros((n, 4), np.uint32)
        rows["joints_1"][:, 0] = (joints[:, 4:] << shifts).sum(axis=1, dtype=np.uint32)
        rows["joints_1"][:, 1:3] = weights[:, 4:8:2] | (weights[:, 5:8:2] << np.uint32(16))
    return rows


#: The bone of the first slot of each of a vertex's absent slot pairs (:func:`ddm_arrays`;
#: ddm.glsl's DDM_ABSENT): the shader skins with the pairs before it only.
DDM_ABSENT = 0xFFFF


def ddm_slots(ddm: DirectDeltaMush) -> int:
    """The slots of the shader variant that skins with ``ddm``: 4 where it keeps at most 4
    bones a vertex (half the data and work a vertex), else 8 (unused slots zero)."""
    return 4 if ddm.max_bones <= 4 else 8


def ddm_diag2(positions: np.ndarray) -> np.float32:
    """The rest mesh's squared bounding-box diagonal in float32, the scale of DDM's
    vanished-covariance test: skin.comp's push constant and the last ``ddm_bones`` texel hold
    this same value, so every path tests alike."""
    p = np.asarray(positions, np.float32)
    return np.float32(np.sum(np.ptp(p, axis=0) ** 2) if len(p) else 0.0)


def ddm_arrays_rows(ddm: DirectDeltaMush) -> dict[str, int]:
    """The texels of each of :func:`ddm_arrays`'s buffers, without making them."""
    n, inputs = ddm.omega.shape[0], mesh_inputs(ddm_slots(ddm), "ddm")
    return {m.name: n * m.texels + m.extra_texels for m in inputs if m.location < 0}


def ddm_arrays(ddm: DirectDeltaMush) -> dict[str, np.ndarray]:
    """The ``ddm_omega`` ((N * S * 10 / 4, 4) float32: each vertex's S = :func:`ddm_slots`
    slots' 10 values of Ω, in slot order, two slots to five texels) and ``ddm_bones`` ((N + 1,
    4) int32: slot ``2 k`` in the low 16 bits of lane ``k``, slot ``2 k + 1`` in the high ones;
    lanes past S / 2 zero; the last row's x the float32 bits of :func:`ddm_diag2` of the rest
    mesh, for the vertex shaders) rows of a precomputation with at most 8 slots and 2**16 - 1
    bones (:func:`vkdqs.methods.check_ddm`). A slot pair whose slots and all later ones have a
    zero Ω (absent: fewer bones reach the vertex than it has slots) has bone
    :data:`DDM_ABSENT` in its first slot, so the shader stops there (Ω is sorted strongest
    first). Read by ``include/ddm_inputs.glsl`` alone."""
    n, kept = ddm.omega.shape[:2]
    slots = ddm_slots(ddm)
    omega = np.zeros((n, slots, 10), np.float32)
    omega[:, :kept] = ddm.omega
    bones = np.zeros((n, 8), np.uint32)
    bones[:, :kept] = ddm.bones
    nonzero = omega.any(axis=2)  # [n, slots]
    live = np.where(nonzero.any(axis=1), slots - np.argmax(nonzero[:, ::-1], axis=1), 0)
    absent = np.arange(0, 8, 2)[None, :] >= live[:, None]  # pairs from the first absent one
    bones[:, 0::2][absent] = DDM_ABSENT
    packed = np.zeros((n + 1, 4), np.uint32)
    packed[:n] = bones[:, 0::2] | (bones[:, 1::2] << np.uint32(16))
    packed[n, 0] = ddm_diag2(ddm.origin).view(np.uint32)
    return {
        "ddm_omega": omega.reshape(n * slots * 10 // 4, 4),
        "ddm_bones": packed.view(np.int32),
    }


def scalar_array(values: np.ndarray) -> np.ndarray:
    """The (N, 4) float32 rows :data:`SCALAR_INPUT` reads: x the value, clipped to 0..1."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    out = np.zeros((len(v), 4), np.float32)
    out[:, 0] = np.clip(np.nan_to_num(v, nan=0.0), 0.0, 1.0)
    return out


def aux_array(
    vertex_count: int, centers: np.ndarray | None = None, dqs_blend: np.ndarray | None = None
) -> np.ndarray:
    """The (N, 4) float32 ``aux`` rows: xyz the centers of rotation, w the DQS blend weights."""
    out = np.zeros((vertex_count, 4), np.float32)
    if centers is not None:
        out[:, :3] = centers
    if dqs_blend is not None:
        out[:, 3] = dqs_blend
    return out


#: Inputs only the rendering variants (``render`` kind: skin.vert without SKIN_READBACK) read:
#: texture coordinates and the linear vertex colour (the material's inputs). A mesh without
#: them binds one constant row of ones (stride 0) instead: white, and a UV that samples the
#: 1x1 white texture of untextured materials.
SURFACE_INPUTS = (
    MeshInput("uvs", Format.R32G32B32A32_SFLOAT, Format.R32G32_SFLOAT, -1, 7),
    MeshInput("colors", Format.R32G32B32A32_SFLOAT, Format.R32G32B32A32_SFLOAT, -1, 8),
)


def render_inputs(
    slots: int, method: str = "dqs", surface: bool = False, layout: str | VertexLayout = "exact"
) -> tuple[MeshInput, ...]:
    """The vertex inputs of a rendering variant (``skin.vert``, not readback), in location
    order: :func:`mesh_inputs`, then for the ``surface`` variants :data:`SURFACE_INPUTS` (7, 8)
    and :data:`SCALAR_INPUT` (9); texel inputs left out (:func:`attributes`)."""
    extra = (*SURFACE_INPUTS, SCALAR_INPUT) if surface else ()
    return (*attributes(mesh_inputs(slots, method, layout)), *extra)


def surface_arrays(mesh: SkinnedMesh) -> dict[str, np.ndarray]:
    """The mesh's (N, 4) float32 rows for :data:`SURFACE_INPUTS` it has (uv padded with 0)."""
    out = {}
    if mesh.uvs is not None:
        out["uvs"] = np.hstack([mesh.uvs, np.zeros((mesh.vertex_count, 2), np.float32)])
    if mesh.colors is not None:
        out["colors"] = np.ascontiguousarray(mesh.colors, dtype=np.float32)
    return out


def mesh_arrays(mesh: SkinnedMesh, layout: str | VertexLayout = "exact") -> dict[str, np.ndarray]:
    """The mesh as the shaders read it: one array of rows per :func:`mesh_inputs` entry (and
    ``joints_1``/``weights_1`` with 8 slots), each in its ``layout`` format (32-bit in the exact
    layout; :mod:`vkdqs.engine.vertex_packing` encodes the lean one's)."""
    lay = as_layout(layout)
    n = mesh.vertex_count
    pad = np.zeros((n, 1), np.float32)
    if lay.packed:
        return {"positions": np.hstack([mesh.positions, pad]), **packed_rows(mesh, lay)}
    normals = lay.format("normals")
    if normals == Format.R16G16_SNORM:
        packed_normals = vertex_packing.oct_encode(mesh.normals)
    elif normals == Format.R16G16B16A16_SNORM:
        packed_normals = np.rint(np.clip(np.hstack([mesh.normals, pad]), -1, 1) * 32767.0)
        packed_normals = packed_normals.astype(np.int16)
    else:
        packed_normals = np.hstack([mesh.normals, pad])
    joint_type = {Format.R8G8B8A8_UINT: np.uint8, Format.R16G16B16A16_UINT: np.uint16}
    joints = mesh.joints.astype(joint_type.get(lay.format("joints"), np.uint32))
    weights = lay.format("weights")
    if weights == Format.R8G8B8A8_UNORM:
        packed_weights = vertex_packing.unorm_weights(mesh.weights, 255)
    elif weights == Format.R16G16B16A16_UNORM:
        packed_weights = vertex_packing.unorm_weights(mesh.weights)
    else:
        packed_weights = mesh.weights
    arrays = {
        "positions": np.hstack([mesh.positions, pad]),
        "normals": np.ascontiguousarray(packed_normals),
        "joints": np.ascontiguousarray(joints[:, :4]),
        "weights": np.ascontiguousarray(packed_weights[:, :4]),
    }
    if mesh.slots == 8:
        arrays["joints_1"] = np.ascontiguousarray(joints[:, 4:])
        arrays["weights_1"] = np.ascontiguousarray(packed_weights[:, 4:])
    return arrays


def lean_weights(weights: np.ndarray) -> np.ndarray:
    """The lean layout's unorm16 weights (:func:`vkdqs.engine.vertex_packing.unorm_weights`)."""
    return vertex_packing.unorm_weights(weights)


@dataclass(frozen=True)
class Binding:
    """One descriptor of a set layout: binding number, type and the stages that use it."""

    binding: int
    type: DescriptorType
    stages: Stage


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
    out.append(Binding(COMPUTE_BOXES, DescriptorType.STORAGE_BUFFER, c))
    out += [
        Binding(MORPH_DELTAS, DescriptorType.UNIFORM_TEXEL_BUFFER, c),
        Binding(MORPH_WEIGHTS, DescriptorType.UNIFORM_BUFFER_DYNAMIC, c),
    ]
    return tuple(sorted(out, key=lambda b: b.binding))


BOUNDS_BINDINGS = (
    Binding(BOUNDS_POSITIONS, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(BOUNDS_BOXES, DescriptorType.STORAGE_BUFFER, Stage.COMPUTE),
)


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
#: and the morph bindings; Direct Delta Mush's texels, :data:`DDM_INPUTS`, are written for its
#: instances only, the mesh's like the morph deltas).
RENDER_BINDINGS = (
    Binding(BONES, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX),
    Binding(INSTANCE, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX | Stage.FRAGMENT),
    Binding(BONE_SCALES, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX),
    Binding(MORPH_DELTAS, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    Binding(MORPH_WEIGHTS, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX),
    *(Binding(m.binding, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX) for m in DDM_INPUTS),
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
#: std140 ``MaterialBlock`` of skin.frag (set 1, binding :data:`MATERIAL_UNIFORMS`).
MATERIAL_BLOCK = np.dtype(
    [
        ("base_color", "<f4", 4),  # linear RGBA factor
        ("uv_row0", "<f4", 4),  # first two rows of the 3x3 UV transform (xyz; w unused)
        ("uv_row1", "<f4", 4),
        ("alpha", "<f4", 4),  # x: alpha cutoff (< 0: opaque, nothing discarded)
    ]
)
assert MATERIAL_BLOCK.itemsize == 64

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
# -- morph targets -----------------------------------------------------------------------------
#
# Morph targets are applied before skinning by morph_vertex() (shaders/glsl/include/morph.glsl)
# in skin.comp and every skin.vert variant (crowds are not morphed). The deltas of a mesh's M
# targets sit in one rgba32f texel buffer (binding MORPH_DELTAS) in one of two layouts, chosen
# per mesh by :func:`pack_morphs` (S = 2 texels per delta record with position and normal
# deltas, else 1):
#
# * sparse, vertex-major (CSR; the usual case: a face shape moves the face, not the body): the
#   first ceil(N / 2) texels hold each vertex's range (first entry, entry count), two vertices a
#   texel (xy, zw); then the entries, vertex by vertex, in target order, only the (target,
#   vertex) pairs whose position or normal delta is non-zero: entry e at texel
#   ``header.z + e * S``, (position delta xyz, target) then (normal delta xyz, 0). Integers are
#   stored as exact floats (< 2**24 entries; a mesh with more is stored dense). A vertex costs
#   one range fetch plus S fetches per non-zero entry, whatever the pose; weights of every
#   target sit in the MorphBlock, so an inactive target's entry adds 0. A morphing pose runs
#   the morph code only on the runs of vertices with entries (Skinner; a loop's body runs at
#   least once on lavapipe, so a vertex without entries would still pay S fetches).
# * dense, target-major (chosen when more than half of the (target, vertex) pairs are non-zero,
#   where the sparse entries would save no memory and a pose with few active targets would pay
#   for all of them): target t's delta of vertex v at texel (t * N + v) * S (its normal delta at
#   the next texel); the MorphBlock lists the active targets, four at a time (padding -1), so a
#   pose costs its active targets.
#
# A mesh without targets binds a one-texel buffer, and a pose without active targets runs the
# pipeline specialized with MORPH_TARGETS = 0 (no morph code). Per pose (or instance) the
# MorphBlock (binding MORPH_WEIGHTS) holds the weights of all targets, so a mesh has at most
# MAX_MORPH_TARGETS targets (LimitError), any number of them active.

#: The most morph targets a mesh may have (the MorphBlock holds all their weights).
MAX_MORPH_TARGETS = 1024
#: Targets per ivec4 / vec4 of the MorphBlock.
MORPH_GROUP = 4
_GROUPS = MAX_MORPH_TARGETS // MORPH_GROUP
#: ``MORPH_TARGETS`` bits: position deltas, normal deltas, the sparse (CSR) layout.
MORPH_POSITIONS, MORPH_NORMALS, MORPH_SPARSE = 1, 2, 4
#: The most entries the sparse layout indexes (integers stored exactly as float32).
MAX_MORPH_ENTRIES = 2**24
#: std140 ``MorphBlock`` of ``include/morph.glsl``.
MORPH_BLOCK = np.dtype(
    [
        # x: active targets (dense: groups of MORPH_GROUP), y: vertices N, z: texel of the first
        # sparse entry, w: texels per delta record (S)
        ("header", "<i4", 4),
        ("active", "<i4", (_GROUPS, 4)),  # dense: the active targets in order, then -1
        ("weights", "<f4", (_GROUPS, 4)),  # the weight of target t at [t // 4, t % 4]
    ]
)
assert MORPH_BLOCK.itemsize == 16 + 2 * 16 * _GROUPS
MORPH_TEXEL_FORMAT = Format.R32G32B32A32_SFLOAT


@dataclass(frozen=True)
class MorphPacking:
    """A mesh's morph deltas as the MORPH_DELTAS buffer holds them (:func:`pack_morphs`)."""

    texels: np.ndarray  #: (rows, 4) float32
    vertex_count: int
    target_count: int  #: M (0: the one-texel buffer of a mesh without targets)
    has_positions: bool
    has_normals: bool
    sparse: bool  #: the CSR layout (else dense, target-major)
    entries: int  #: non-zero (target, vertex) pairs (sparse: stored entries)

    @property
    def stride(self) -> int:
        """Texels per delta record (S)."""
        return int(self.has_positions) + int(self.has_normals)

    @property
    def first_entry(self) -> int:
        """Texel of sparse entry 0 (after the ranges); 0 for the dense layout."""
        return (self.vertex_count + 1) // 2 if self.sparse else 0


def pack_morphs(
    morph_positions: np.ndarray | None,
    morph_normals: np.ndarray | None,
    sparse: bool | None = None,
) -> MorphPacking:
    """The MORPH_DELTAS texels of (M, N, 3) float32 deltas (either may be None): sparse (CSR)
    unless more than half of the (target, vertex) pairs have a non-zero delta or there are
    MAX_MORPH_ENTRIES of them (``sparse`` forces a layout; ValueError when the sparse one cannot
    index them). Vectorized: memory and time in proportion to M * N once, the buffer to the
    non-zero entries (sparse)."""
    parts = [d for d in (morph_positions, morph_normals) if d is not None]
    has_p, has_n = morph_positions is not None, morph_normals is not None
    if not parts:
        return MorphPacking(np.zeros((1, 4), np.float32), 0, 0, False, False, False, 0)
    m, n = parts[0].shape[:2]
    nonzero = np.zeros((n, m), bool)  # vertex-major, so nonzero() lists entries in CSR order
    for d in parts:
        nonzero |= (d != 0).any(axis=2).T
    entries = int(np.count_nonzero(nonzero))
    if sparse is None:
        sparse = 2 * entries <= m * n and entries < MAX_MORPH_ENTRIES
    s = len(parts)
    if not sparse:
        out = np.zeros((m, n, s, 4), np.float32)
        for k, d in enumerate(parts):
            out[:, :, k, :3] = d
        return MorphPacking(out.reshape(-1, 4), n, m, has_p, has_n, False, entries)
    if entries >= MAX_MORPH_ENTRIES:
        raise ValueError(
            f"{entries} non-zero morph deltas, more than the {MAX_MORPH_ENTRIES - 1} the sparse "
            "layout indexes"
        )
    vertex, target = np.nonzero(nonzero)
    counts = np.count_nonzero(nonzero, axis=1)
    ranges = np.zeros((n + n % 2, 2), np.float32)
    ranges[:n, 0] = np.cumsum(counts) - counts
    ranges[:n, 1] = counts
    body = np.zeros((entries, s, 4), np.float32)
    for k, d in enumerate(parts):
        body[:, k, :3] = d[target, vertex]
    body[:, 0, 3] = target
    texels = np.concatenate([ranges.reshape(-1, 4), body.reshape(-1, 4)])
    return MorphPacking(texels, n, m, has_p, has_n, True, entries)


def morph_spec(packing: MorphPacking, active: bool) -> int:
    """The ``MORPH_TARGETS`` specialization value: the kinds of deltas applied and the layout
    (0 when no target is active, or no delta is non-zero: the morph code compiled away)."""
    if not active or packing.entries == 0:
        return 0
    return (
        MORPH_POSITIONS * packing.has_positions
        | MORPH_NORMALS * packing.has_normals
        | MORPH_SPARSE * packing.sparse
    )


def morph_blocks(weights: np.ndarray, packing: MorphPacking) -> np.ndarray:
    """(P,) MORPH_BLOCK records for (P, M) ``weights`` (M at most MAX_MORPH_TARGETS, checked by
    the caller): every target's weight, and (dense layout) the non-zero ones in target order,
    padded with -1."""
    p, m = weights.shape
    active = weights != 0
    counts = active.sum(axis=1)
    blocks = np.zeros(p, MORPH_BLOCK)
    header = blocks["header"]
    header[:, 0] = (counts + MORPH_GROUP - 1) // MORPH_GROUP if not packing.sparse else counts
    header[:, 1] = packing.vertex_count
    header[:, 2] = packing.first_entry
    header[:, 3] = packing.stride
    flat = np.zeros((p, MAX_MORPH_TARGETS), np.float32)
    flat[:, :m] = weights
    blocks["weights"] = flat.reshape(p, _GROUPS, MORPH_GROUP)
    if not packing.sparse:
        # the non-zero targets first, each pose's in target order
        order = np.argsort(~active, axis=1, kind="stable")
        ids = np.full((p, MAX_MORPH_TARGETS), -1, np.int32)
        ids[:, :m] = np.where(np.take_along_axis(active, order, axis=1), order, -1)
        blocks["active"] = ids.reshape(p, _GROUPS, MORPH_GROUP)
    return blocks


# -- push constants ---------------------------------------------------------------------------

#: uint vertex_count, position_base, normal_base, box_base; float diag2 (the rest mesh's
#: bounding-box diagonal squared: the scale of DDM's vanished-covariance test)
COMPUTE_PUSH_BYTES = 20


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


RENDER_PUSH_BYTES = 64  #: mat4 view_projection
READBACK_PUSH_BYTES = 72  #: mat4 view_projection, uint position_base, normal_base
CENTERS_PUSH_BYTES = 16  #: uint first_vertex, vertex_count; int bone_count; float inv_sigma2
#: uint vertex_count, columns, row_invocations, first; float gamma, delta, c_rotation,
#: c_translation
DDM_PUSH_BYTES = 32
BOUNDS_PUSH_BYTES = 8  #: uint vertex_count, first_pose
OVERLAY_PUSH_BYTES = 8  #: ivec2 size, the overlay image's width and height (fragment stage)

# -- the renderer's instance block ------------------------------------------------------------

#: std140 ``InstanceBlock`` of ``shaders/glsl/include/instance.glsl`` (binding :data:`INSTANCE`).
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

# -- render targets ---------------------------------------------------------------------------

#: Sample counts vkdqs renders with; ``VkSampleCountFlagBits`` for n samples is the number n.
SAMPLE_COUNTS = (1, 2, 4, 8)
OFFSCREEN_COLOR_FORMAT = Format.R8G8B8A8_SRGB
#: Swapchain formats in order of preference (sRGB, so the shader's linear output is encoded).
SWAPCHAIN_COLOR_FORMATS = (Format.B8G8R8A8_SRGB, Format.R8G8B8A8_SRGB)


def sample_bit(samples: int) -> int:
    """``VkSampleCountFlagBits`` for ``samples`` (1, 2, 4 or 8)."""
    if samples not in SAMPLE_COUNTS:
        raise ValueError(f"samples must be one of {SAMPLE_COUNTS}, got {samples!r}")
    return samples


# -- SPIR-V variants --------------------------------------------------------------------------


class Kind(str, Enum):
    """What a SPIR-V module is: its source, stage, bindings and push constants follow."""

    RENDER = "render"  #: skin.vert, the renderer's vertex shader
    READBACK = "readback"  #: skin.vert drawn as points, writing a storage buffer (Skinner)
    COMPUTE = "compute"  #: skin.comp (Skinner)
    FRAGMENT = "fragment"  #: skin.frag
    CENTERS = "centers"  #: cor_centers.comp, the centers-of-rotation precomputation
    DDM_SMOOTH = "ddm_smooth"  #: ddm_smooth.comp, Direct Delta Mush's smoothing sweeps
    OVERLAY = "overlay"  #: overlay.vert, the label overlay
    OVERLAY_FRAGMENT = "overlay_fragment"  #: overlay.frag
    CROWD_SAMPLE = "crowd_sample"  #: crowd.comp: a crowd's clip sampled into bones
    CROWD_CULL = "crowd_cull"  #: crowd_cull.comp: the copies in view, for an indirect draw
    CROWD_RENDER = "crowd_render"  #: crowd.vert
    CROWD_FRAGMENT = "crowd_fragment"  #: skin.frag compiled with CROWD
    DELTA_MUSH = "delta_mush"  #: delta_mush.comp: Delta Mush's passes after skinning
    BOUNDS = "bounds"  #: bounds.comp: the box of the vertices skin.comp wrote


#: Each kind's GLSL source (relative to shaders/glsl), stage and the defines it always has.
_SOURCES = {
    Kind.RENDER: ("skin.vert", Stage.VERTEX, ()),
    Kind.READBACK: ("skin.vert", Stage.VERTEX, ("SKIN_READBACK",)),
    Kind.COMPUTE: ("skin.comp", Stage.COMPUTE, ()),
    Kind.FRAGMENT: ("skin.frag", Stage.FRAGMENT, ()),
    Kind.CENTERS: ("cor_centers.comp", Stage.COMPUTE, ()),
    Kind.DDM_SMOOTH: ("ddm_smooth.comp", Stage.COMPUTE, ()),
    Kind.OVERLAY: ("overlay.vert", Stage.VERTEX, ()),
    Kind.OVERLAY_FRAGMENT: ("overlay.frag", Stage.FRAGMENT, ()),
    Kind.CROWD_SAMPLE: ("crowd.comp", Stage.COMPUTE, ()),
    Kind.CROWD_CULL: ("crowd_cull.comp", Stage.COMPUTE, ()),
    Kind.CROWD_RENDER: ("crowd.vert", Stage.VERTEX, ()),
    Kind.CROWD_FRAGMENT: ("skin.frag", Stage.FRAGMENT, ("CROWD",)),
    Kind.DELTA_MUSH: ("delta_mush.comp", Stage.COMPUTE, ()),
    Kind.BOUNDS: ("bounds.comp", Stage.COMPUTE, ()),
}
#: The defines of each crowd sampling layout (:attr:`vkdqs.methods.SkinningMethod.crowd_layout`).
CROWD_LAYOUT_DEFINES = {"dq": (), "rows": ("SKIN_BONES_ROWS",), "dq_rows": ("SKIN_SECOND_BLOCK",)}


@dataclass(frozen=True)
class Variant:
    """One SPIR-V module: a GLSL source compiled with a set of defines, all derived from its
    fields.

    ``method`` is a registry method (:mod:`vkdqs.methods`) or :data:`UNSKINNED` for the skinning
    kinds, the sampling layout (:data:`CROWD_LAYOUT_DEFINES`) for :attr:`Kind.CROWD_SAMPLE`, and
    :data:`UNSKINNED` for the others; ``slots`` the influence slots (4 or 8); ``surface``: the
    variant with the material's UV and colour inputs (and the heat-map scalar).
    """

    kind: Kind
    method: str = UNSKINNED
    slots: int = 4
    surface: bool = False

    @property
    def name(self) -> str:
        """The module is ``shaders/spirv/<name>.spv``, e.g. ``skin_dqs_8_readback.vert``."""
        k, eight, tail = self.kind, "_8" if self.slots == 8 else "", "_surface" * self.surface
        if k in (Kind.RENDER, Kind.READBACK, Kind.COMPUTE):
            stage = "comp" if k is Kind.COMPUTE else "vert"
            readback = "_readback" if k is Kind.READBACK else ""
            return f"skin_{self.method}{eight}{readback}{tail}.{stage}"
        if k is Kind.FRAGMENT:
            return f"skin{tail}.frag"
        if k is Kind.CROWD_FRAGMENT:
            return f"skin_crowd{tail}.frag"
        if k is Kind.CROWD_SAMPLE:
            return f"crowd_{self.method}.comp"
        if k is Kind.CROWD_RENDER:
            return f"crowd_{self.method}{eight}{tail}.vert"
        return self.source

    @property
    def source(self) -> str:
        """The GLSL file, relative to ``shaders/glsl``."""
        return _SOURCES[self.kind][0]

    @property
    def stage(self) -> Stage:
        """The shader stage of the module (vertex, fragment or compute)."""
        return _SOURCES[self.kind][1]

    @property
    def defines(self) -> tuple[str, ...]:
        """The ``-D`` defines it is compiled with."""
        out = _SOURCES[self.kind][2]
        if self.kind is Kind.CROWD_SAMPLE:
            return CROWD_LAYOUT_DEFINES[self.method]
        if self.kind in (Kind.RENDER, Kind.READBACK, Kind.COMPUTE, Kind.CROWD_RENDER):
            m = skinning(self.method)
            method = ("SKIN_NONE",) if m is None else m.defines
            out = method + (("SKIN_INFLUENCES_8",) if self.slots == 8 else ()) + out
        if self.surface:
            out += ("CROWD_SURFACE",) if self.kind is Kind.CROWD_RENDER else ("SURFACE",)
        return out


def variant_name(kind: str, method: str, slots: int = 4, surface: bool = False) -> str:
    """The module name of a variant, e.g. ``skin_dqs_8_readback.vert`` (the unskinned and
    fragment variants have no slot count; only rendering variants a ``_surface`` one)."""
    kind = Kind(kind)
    if method == UNSKINNED or kind in (Kind.FRAGMENT, Kind.CROWD_FRAGMENT):
        slots = 4
    return Variant(kind, method, slots, surface and kind is not Kind.READBACK).name


#: The path (:data:`vkdqs.methods.PATHS`) each skinning kind serves: a method has the kinds of
#: its paths.
PATH_OF = {Kind.RENDER: "vertex", Kind.READBACK: "vertex", Kind.COMPUTE: "compute"}


def _build_variants() -> tuple[Variant, ...]:
    """Every module, once: each registry method's skinning kinds of its paths (4 and 8 slots,
    rendering also with the surface inputs; none for a method with a ``base``, which runs its
    base's), the unskinned baseline, the fragment shaders, the
    precomputations (centers of rotation, Direct Delta Mush) and overlay, then the crowd
    variants of the methods that draw crowds, Delta Mush's passes and the bounds pass."""
    out = []
    for m in methods.METHODS.values():
        if m.base is not None:  # skins with its base's variants (classic Delta Mush: LBS's)
            continue
        kinds = [k for k in (Kind.RENDER, Kind.READBACK, Kind.COMPUTE) if PATH_OF[k] in m.paths]
        for slots in (4, 8):
            for kind in kinds:
                for surface in (False, True) if kind is Kind.RENDER else (False,):
                    out.append(Variant(kind, m.name, slots, surface))
    out += [Variant(Kind.RENDER, UNSKINNED, 4, s) for s in (False, True)]
    out += [Variant(Kind.FRAGMENT, UNSKINNED, 4, s) for s in (False, True)]
    out += [Variant(Kind.CENTERS, UNSKINNED, 8), Variant(Kind.DDM_SMOOTH)]
    out += [Variant(Kind.OVERLAY), Variant(Kind.OVERLAY_FRAGMENT)]
    crowd = [m for m in methods.METHODS.values() if m.crowds]
    out += [Variant(Kind.CROWD_SAMPLE, layout) for layout in CROWD_LAYOUT_DEFINES]
    out += [Variant(Kind.CROWD_CULL)]
    for m in crowd:
        for slots in (4, 8):
            out += [Variant(Kind.CROWD_RENDER, m.name, slots, s) for s in (False, True)]
    out += [Variant(Kind.CROWD_FRAGMENT, UNSKINNED, 4, s) for s in (False, True)]
    out += [Variant(Kind.DELTA_MUSH), Variant(Kind.BOUNDS)]
    return tuple(out)


def variant(kind: str, method: str, slots: int = 4) -> Variant:
    """The :class:`Variant` for a kind, method and slot count (KeyError if there is none)."""
    name = variant_name(kind, method, slots)
    for v in VARIANTS:
        if v.name == name:
            return v
    raise KeyError(name)


def bindings_of(v: Variant) -> tuple[Binding, ...]:
    """The descriptor set layout the host creates for a variant's pipeline."""
    return {
        Kind.COMPUTE: lambda: compute_bindings(v.method, v.slots),
        Kind.READBACK: lambda: readback_bindings(v.method),
        Kind.CROWD_SAMPLE: lambda: CROWD_SAMPLE_BINDINGS,
        Kind.CROWD_CULL: lambda: CROWD_CULL_BINDINGS,
        Kind.CROWD_RENDER: lambda: CROWD_RENDER_BINDINGS,
        Kind.CROWD_FRAGMENT: lambda: CROWD_RENDER_BINDINGS,
        Kind.CENTERS: lambda: CENTERS_BINDINGS,
        Kind.DDM_SMOOTH: lambda: DDM_BINDINGS,
        Kind.OVERLAY: lambda: OVERLAY_BINDINGS,
        Kind.OVERLAY_FRAGMENT: lambda: OVERLAY_BINDINGS,
        Kind.DELTA_MUSH: lambda: DELTA_MUSH_BINDINGS,
        Kind.BOUNDS: lambda: BOUNDS_BINDINGS,
    }.get(v.kind, lambda: RENDER_BINDINGS)()


def push_bytes_of(v: Variant) -> int:
    """The size of the push-constant range the host declares for a variant's pipeline."""
    return {
        Kind.COMPUTE: COMPUTE_PUSH_BYTES,
        Kind.READBACK: READBACK_PUSH_BYTES,
        Kind.RENDER: RENDER_PUSH_BYTES,
        Kind.FRAGMENT: RENDER_PUSH_BYTES,
        Kind.CENTERS: CENTERS_PUSH_BYTES,
        Kind.DDM_SMOOTH: DDM_PUSH_BYTES,
        Kind.CROWD_SAMPLE: CROWD_SAMPLE_PUSH_BYTES,
        Kind.CROWD_CULL: CROWD_CULL_PUSH_BYTES,
        Kind.CROWD_RENDER: CROWD_RENDER_PUSH_BYTES,
        Kind.CROWD_FRAGMENT: CROWD_RENDER_PUSH_BYTES,
        Kind.OVERLAY: OVERLAY_PUSH_BYTES,
        Kind.OVERLAY_FRAGMENT: OVERLAY_PUSH_BYTES,
        Kind.DELTA_MUSH: DELTA_MUSH_PUSH_BYTES,
        Kind.BOUNDS: BOUNDS_PUSH_BYTES,
    }[v.kind]


# -- crowds: baked clips sampled on the GPU, all copies in one instanced draw -------------------
#
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
#: The crowd draw's set (every crowd variant); Direct Delta Mush's texels (:data:`DDM_INPUTS`,
#: the mesh's, shared by all copies) are written for its crowds only.
CROWD_RENDER_BINDINGS = (
    Binding(CROWD_BONES, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    Binding(INSTANCE, DescriptorType.UNIFORM_BUFFER, Stage.VERTEX | Stage.FRAGMENT),
    Binding(CROWD_COPIES, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    Binding(CROWD_VISIBLE, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX),
    *(Binding(m.binding, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.VERTEX) for m in DDM_INPUTS),
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


def crowd_variant_name(kind: str, method: str, slots: int = 4, surface: bool = False) -> str:
    """``crowd_dq.comp`` ("crowd_sample": the method's sampling layout), ``crowd_lbs_8.vert``
    ("crowd_render") or ``skin_crowd.frag`` ("crowd_fragment"); ``surface``: the variant with
    the material's UV and colour inputs (``crowd_lbs_8_surface.vert``,
    ``skin_crowd_surface.frag``)."""
    kind = Kind(kind)
    if kind is Kind.CROWD_SAMPLE:
        return Variant(kind, methods.get(method).crowd_layout).name
    if kind is Kind.CROWD_FRAGMENT:
        return Variant(kind, UNSKINNED, 4, surface).name
    return Variant(kind, method, slots, surface).name


def crowd_surface(v: Variant) -> bool:
    """Whether a crowd variant passes the material's UV and colour (``CROWD_SURFACE`` in
    crowd.vert, ``SURFACE`` in skin.frag)."""
    return v.kind in (Kind.CROWD_RENDER, Kind.CROWD_FRAGMENT) and v.surface


def surface_variant(v: Variant) -> bool:
    """Whether a variant has the material's UV and colour inputs (``SURFACE`` in skin.frag,
    ``CROWD_SURFACE`` in crowd.vert)."""
    return v.surface


#: Every SPIR-V module vkdqs ships, built once from the registry.
VARIANTS: tuple[Variant, ...] = _build_variants()


# -- Delta Mush: compute passes after skinning --------------------------------------------------
#
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
