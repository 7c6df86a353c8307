"""What a device can skin: its limits checked before anything is allocated, each refusal a
one-line error naming the limit, and vertex layouts resolved to the formats it reads."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from .. import methods
from .. import shader_interface as si
from ..errors import CapabilityError, InputError, LimitError
from ..gpu import Device
from ..gpu.calls import vk
from ..mesh import SkinnedMesh

if TYPE_CHECKING:
    from .skinner import Skinner

#: What validating and packing a pose costs at its peak, per bone (float64 copies, the DQ
#: conversion's temporaries; measured at most about 1450 for "dqs_blender"), with a margin.
PACK_BYTES_PER_BONE = 2048


def check_limits(
    device: Device,
    mesh: SkinnedMesh,
    bone_count: int,
    method: methods.SkinningMethod,
    path: str,
    packing: si.MorphPacking,
) -> None:
    """Refuse a mesh or skeleton the device cannot skin, naming the limit."""
    info = device.info
    bone_bytes = method.bone_stride
    max_bones = info.max_uniform_buffer_range // bone_bytes
    if bone_count > max_bones:
        raise LimitError(
            f"bone_count {bone_count} needs {bone_count * bone_bytes} bytes of uniform "
            f"buffer ({method}: {bone_bytes} bytes a bone), more than this device's "
            f"maxUniformBufferRange of {info.max_uniform_buffer_range} bytes "
            f"(at most {max_bones} bones)"
        )
    texels = len(packing.texels)
    if texels > info.max_texel_buffer_elements:
        raise LimitError(
            f"the mesh's morph targets need {texels} texels, more than this device's "
            f"maxTexelBufferElements ({info.max_texel_buffer_elements})"
        )
    if path == "vertex":
        if not info.vertex_pipeline_stores_and_atomics:
            raise CapabilityError(
                f"{info.name!r} lacks vertexPipelineStoresAndAtomics, which path='vertex' needs"
            )
        return
    # the compute path reads and writes a mesh larger than a texel view in chunks
    # (vkdqs.engine.chunks.vertex_chunks refuses what not even a chunk fits)


def check_call_size(
    skinner: Skinner, bones: object, morph_weights: object, *, vertices: bool
) -> np.ndarray:
    """``bones`` as an array (a view where it is one), after checking that a skin_many (or
    bounds_many: not ``vertices``) call's host memory fits ``skinner.max_call_bytes``: its
    result and the packing of its poses, before either is allocated."""
    from ..dq import _as_array

    arr = _as_array(bones, "bones")
    poses = int(arr.shape[0]) if arr.ndim >= 1 else 0
    n, bone_count, limit = skinner.vertex_count, skinner.bone_count, skinner.max_call_bytes
    result = (2 * n * 3 * 4 if vertices else 24) * poses
    packing = poses * bone_count * PACK_BYTES_PER_BONE
    if morph_weights is not None:
        packing += poses * (si.MORPH_BLOCK.itemsize + 24 * skinner.mesh.morph_target_count)
    if result + packing > limit:
        call, shape = ("skin_many", "2 x P x N x 3") if vertices else ("bounds_many", "P x 6")
        raise LimitError(
            f"{call} of {poses} poses of {n} vertices and {bone_count} bones needs {result} "
            f"bytes for its result ({shape} float32) and about {packing} to pack the poses, "
            f"more than skinner.max_call_bytes = {limit} (half this machine's memory unless "
            "set); skin fewer poses per call"
        )
    return arr


def resolve_layout(
    device: Device, layout: str, mesh: SkinnedMesh, path: str, influences: bool = False
) -> si.VertexLayout:
    """``layout`` checked, and resolved to the formats the mesh's values fit and ``device``
    reads on ``path`` (uniform texel buffers for compute, vertex buffers for the vertex path):
    a narrow format the device cannot read falls back to the next wider one
    (:data:`vkdqs.shader_interface.LEAN_FORMATS`). On the compute path, for a method that
    reads joints and weights (``influences``), the packed rows where they fit (uint8 joints:
    :func:`vkdqs.shader_interface.lean_layout`)."""
    if layout not in si.LAYOUTS:
        raise InputError(f"layout must be one of {si.LAYOUTS}, got {layout!r}")
    if layout == "exact":
        return si.EXACT
    need = (
        vk.VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT
        if path == "compute"
        else vk.VK_FORMAT_FEATURE_VERTEX_BUFFER_BIT
    )
    return si.lean_layout(
        mesh,
        lambda f: bool(device.buffer_format_features(f) & need),
        packed=influences and path == "compute",
    )


def physical_memory() -> int:
    """The memory of the machine in bytes (16 GiB where the system does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return 16 * 2**30


def check_args(mesh: object, bone_count: object, method: str, path: str) -> methods.SkinningMethod:
    """A Skinner's mesh, bone count, method and path checked; returns the method's entry."""
    if not isinstance(mesh, SkinnedMesh):
        raise InputError(f"mesh must be a vkdqs.SkinnedMesh, got {type(mesh).__name__}")
    skinning = methods.get(method)
    if path not in methods.PATHS:
        raise InputError(f"path must be one of {methods.PATHS}, got {path!r}")
    why = skinning.check_path(path)
    if why:
        raise InputError(why)
    if isinstance(bone_count, bool) or not isinstance(bone_count, (int, np.integer)):
        raise InputError(f"bone_count must be an int, got {bone_count!r}")
    if bone_count < 1:
        raise InputError(f"bone_count must be >= 1, got {bone_count}")
    mesh.check_joints(int(bone_count))
    return skinning
