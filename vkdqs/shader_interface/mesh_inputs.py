"""The mesh inputs: each (N, 4) array of rows the shaders read, its texel and vertex
formats, binding and location, and which variants read it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .bone_blocks import has_aux, skinning
from .vertex_layouts import VertexLayout, as_layout, row_bytes
from .vulkan_types import Format


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
#: The texel inputs of every need (:attr:`MeshInput.need`): the renderer's and crowds' sets bind
#: each at its ``binding``, written for the instances and crowds whose method has that need
#: (the mesh's uploaded arrays, :meth:`vkdqs.methods.needs.Need.arrays`). A new method's
#: per-vertex data read by its shaders is a MeshInput here and its include's declarations.
NEED_INPUTS = tuple(m for m in MESH_INPUTS if m.need is not None)
#: Direct Delta Mush's texel inputs (:func:`ddm_arrays`), bound at their ``binding`` in every
#: variant of "ddm" (compute, readback, render and crowd: one include declares them).
DDM_INPUTS = tuple(m for m in NEED_INPUTS if m.need == "ddm_data")
#: The per-vertex scalar the rendering shaders show as a heat map in debug mode 2 (0..1, e.g.
#: |DQS - LBS| scaled on the host): every rendering variant (not readback, not compute) reads it
#: at location 9 from its own vertex buffer of (N, 4) float32 rows (x used). Instances without a
#: scalar bind their positions buffer there (read, never shown: the mode is off for them).
SCALAR_INPUT = MeshInput("scalar", Format.R32_SFLOAT, Format.R32_SFLOAT, -1, 9)


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
    needs, influences = m_.needs, m_.influences
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
