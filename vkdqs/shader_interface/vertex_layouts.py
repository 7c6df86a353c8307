"""Vertex layouts: the formats a mesh's rows take on the GPU (exact or lean), resolved per
mesh and device, and the bytes a row takes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engine import vertex_packing
from .specialization import OCT_NORMALS_ID, PACKED_ROWS_ID
from .vulkan_types import Format

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..mesh import SkinnedMesh


#: Bytes of one vertex's row in a 32-bit format (a mesh input's texel, :func:`row_bytes`).
MESH_ROW_BYTES = 16
_F32X4, _U32X4 = Format.R32G32B32A32_SFLOAT, Format.R32G32B32A32_UINT

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
