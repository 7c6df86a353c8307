"""The host side of the mesh inputs: the arrays of rows the shaders read, made from a mesh
(exact, lean or packed), from a Direct Delta Mush precomputation, and the ``aux``, scalar and
surface rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..engine import vertex_packing
from .mesh_inputs import mesh_inputs
from .vertex_layouts import VertexLayout, as_layout
from .vulkan_types import Format

if TYPE_CHECKING:
    from ..mesh import SkinnedMesh
    from ..methods.ddm.reference import DirectDeltaMush


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
