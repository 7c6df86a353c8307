"""Skinner: skins one mesh on the GPU and returns the skinned vertices as numpy arrays.

Two paths run the same ``skin_vertex()`` from ``shaders/glsl/include/skin.glsl``:

* ``path="compute"`` (default, fastest): ``skin.comp`` reads the mesh through uniform texel
  buffers and writes through a storage texel buffer (on lavapipe texel buffers are an order of
  magnitude faster than storage buffers);
* ``path="vertex"``: the rendering vertex shader's readback variant, drawn as points with
  rasterizer discard, writes each vertex to a storage buffer at ``gl_VertexIndex``. It is what
  the renderer draws with, so tests of this path test the rendering shader itself.

Meshes with more than 4 influences on some vertex use the 8-influence shader variants. With
``method="dqs"``, a pose whose matrices carry scale or shear switches to two-phase DQS (the
``dqs_scale`` variants) for that call, with one log line the first time.

The mesh is uploaded once. Each call writes the pose(s) into a persistently mapped uniform
buffer, submits a command buffer recorded once per (variant, batch size), waits on its fence
and copies the results out. ``skin_many`` runs P poses in one submission with dynamic
uniform-buffer offsets.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import vulkan as vk

from . import bones as bone_packing
from .commands import CommandBuffer
from .device import Device, DeviceObject, ResourceOwner
from .errors import InputError, LimitError, VkdqsError
from .memory import Buffer
from .mesh import SkinnedMesh
from .pipelines import (
    allocate_descriptor_set,
    attachmentless_framebuffer,
    attachmentless_render_pass,
    buffer_view,
    compute_pipeline,
    descriptor_pool,
    descriptor_set_layout,
    pipeline_layout,
    readback_pipeline,
    shader_module,
    vertex_inputs,
)
from .shaders import SpecConstants

log = logging.getLogger("vkdqs")

#: "dqs" switches to two-phase DQS when a pose has scale; "dqs_scale" always uses it.
METHODS = ("dqs", "dqs_scale", "lbs")
PATHS = ("compute", "vertex")
LOCAL_SIZE = 64
_VERTEX_PUSH_SIZE = 64 + 8  # mat4 view_projection, uint position_base, uint normal_base
_COMPUTE_PUSH_SIZE = 12  # uint vertex_count, position_base, normal_base
_BONE_BYTES = {"dqs": 32, "dqs_scale": 32, "lbs": 48}
_SCALE_BYTES = 48  # mat3x4 [S | 0] per bone (two-phase DQS)

_UBO_DYNAMIC = vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC
_TEXEL = vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
_STORAGE_TEXEL = vk.VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER
_STORAGE = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
_COMPUTE = vk.VK_SHADER_STAGE_COMPUTE_BIT
_VERTEX = vk.VK_SHADER_STAGE_VERTEX_BIT
# Mesh data: (name, texel-buffer format, vertex format, compute binding, vertex location).
_MESH_INPUTS = (
    ("positions", vk.VK_FORMAT_R32G32B32A32_SFLOAT, vk.VK_FORMAT_R32G32B32_SFLOAT, 1, 0),
    ("normals", vk.VK_FORMAT_R32G32B32A32_SFLOAT, vk.VK_FORMAT_R32G32B32_SFLOAT, 2, 1),
    ("joints", vk.VK_FORMAT_R32G32B32A32_SINT, vk.VK_FORMAT_R32G32B32A32_SINT, 3, 2),
    ("weights", vk.VK_FORMAT_R32G32B32A32_SFLOAT, vk.VK_FORMAT_R32G32B32A32_SFLOAT, 4, 3),
    ("joints_1", vk.VK_FORMAT_R32G32B32A32_SINT, vk.VK_FORMAT_R32G32B32A32_SINT, 7, 4),
    ("weights_1", vk.VK_FORMAT_R32G32B32A32_SFLOAT, vk.VK_FORMAT_R32G32B32A32_SFLOAT, 8, 5),
)


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def mesh_arrays(mesh: SkinnedMesh) -> dict[str, np.ndarray]:
    """The mesh as the shaders read it: (N, 4) rows; joints/weights split into groups of 4."""
    n = mesh.vertex_count
    pad = np.zeros((n, 1), np.float32)
    arrays = {
        "positions": np.hstack([mesh.positions, pad]),
        "normals": np.hstack([mesh.normals, pad]),
        "joints": np.ascontiguousarray(mesh.joints[:, :4], dtype=np.int32),
        "weights": np.ascontiguousarray(mesh.weights[:, :4]),
    }
    if mesh.slots == 8:
        arrays["joints_1"] = np.ascontiguousarray(mesh.joints[:, 4:], dtype=np.int32)
        arrays["weights_1"] = np.ascontiguousarray(mesh.weights[:, 4:])
    return arrays


class _Program:
    """One shader variant (e.g. "dqs", "dqs_scale", "lbs"): its pipeline and descriptor set."""

    def __init__(self, skinner: Skinner, variant: str) -> None:
        dev = skinner.device
        s = skinner
        self.variant = variant
        suffix = "_8" if s.mesh.slots == 8 else ""
        compute = s.path == "compute"
        name = f"skin_{variant}{suffix}" + (".comp" if compute else "_readback.vert")
        stage = _COMPUTE if compute else _VERTEX
        bindings = [(0, _UBO_DYNAMIC, stage)]
        if variant == "dqs_scale":
            bindings.append((6, _UBO_DYNAMIC, stage))
        if compute:
            bindings += [(b, _TEXEL, stage) for key, _, _, b, _ in _MESH_INPUTS if key in s.arrays]
            bindings.append((5, _STORAGE_TEXEL, stage))
        else:
            bindings.append((1, _STORAGE, stage))
        self.bindings = bindings
        self.name = name
        self.set_layout = s._keep(descriptor_set_layout(dev, bindings, label=name))
        push = _COMPUTE_PUSH_SIZE if compute else _VERTEX_PUSH_SIZE
        self.layout = s._keep(pipeline_layout(dev, [self.set_layout], push, stage, label=name))
        self.pool = s._keep(descriptor_pool(dev, bindings, sets=1, label=name))
        self.set = allocate_descriptor_set(dev, self.pool, self.set_layout)
        module = shader_module(dev, name)
        try:
            spec = SpecConstants({0: s.bone_count, 1: LOCAL_SIZE})
            if compute:
                self.pipeline = s._keep(
                    compute_pipeline(dev, self.layout, module, spec, label=name)
                )
                views = [
                    (b, _TEXEL, s._views[key])
                    for key, _, _, b, _ in _MESH_INPUTS
                    if key in s.arrays
                ]
                s._write_descriptors(self.set, views)
            else:
                inputs = vertex_inputs(
                    [(loc, fmt, 16) for key, _, fmt, _, loc in _MESH_INPUTS if key in s.arrays]
                )
                self.pipeline = s._keep(
                    readback_pipeline(
                        dev, self.layout, module, spec, s._render_pass, inputs, label=name
                    )
                )
        finally:
            module.destroy()
        self.capacity = 0  # the Skinner's capacity this set's buffer descriptors point at


class Skinner(ResourceOwner):
    """Skins ``mesh`` on ``device`` with DQS or LBS; a context manager.

    Parameters
    ----------
    device : Device
    mesh : SkinnedMesh
        Up to 8 influences per vertex.
    bone_count : int
        Bones in a pose. Every joint index the mesh uses must be below it.
    method : {"dqs", "dqs_scale", "lbs"}
        ``"dqs"`` uses two-phase DQS for poses with scale/shear (see ``allow_scale``);
        ``"dqs_scale"`` always does (for a rigid pose it equals plain DQS up to rounding).
    path : {"compute", "vertex"}
    allow_scale : bool
        With DQS, accept matrices with scale/shear (two-phase DQS). False rejects them, naming
        the bone. Reflections are always rejected.
    """

    def __init__(
        self,
        device: Device,
        mesh: SkinnedMesh,
        *,
        bone_count: int,
        method: str = "dqs",
        path: str = "compute",
        allow_scale: bool = True,
    ) -> None:
        if not isinstance(mesh, SkinnedMesh):
            raise InputError(f"mesh must be a vkdqs.SkinnedMesh, got {type(mesh).__name__}")
        if method not in METHODS:
            raise InputError(f"method must be one of {METHODS}, got {method!r}")
        if path not in PATHS:
            raise InputError(f"path must be one of {PATHS}, got {path!r}")
        if isinstance(bone_count, bool) or not isinstance(bone_count, (int, np.integer)):
            raise InputError(f"bone_count must be an int, got {bone_count!r}")
        bone_count = int(bone_count)
        if bone_count < 1:
            raise InputError(f"bone_count must be >= 1, got {bone_count}")
        info = device.info
        bone_bytes = _BONE_BYTES[method]
        max_bones = info.max_uniform_buffer_range // bone_bytes
        if bone_count > max_bones:
            raise LimitError(
                f"bone_count {bone_count} needs {bone_count * bone_bytes} bytes of uniform "
                f"buffer ({method}: {bone_bytes} bytes a bone), more than this device's "
                f"maxUniformBufferRange of {info.max_uniform_buffer_range} bytes "
                f"(at most {max_bones} bones)"
            )
        mesh.check_joints(bone_count)
        n = mesh.vertex_count
        if path == "compute":
            if n > info.max_texel_buffer_elements:
                raise LimitError(
                    f"mesh has {n} vertices, more than this device's maxTexelBufferElements "
                    f"({info.max_texel_buffer_elements}) for the compute path"
                )
            groups = math.ceil(n / LOCAL_SIZE)
            if groups > info.max_compute_work_group_count[0]:
                raise LimitError(
                    f"mesh has {n} vertices: {groups} workgroups exceed "
                    f"maxComputeWorkGroupCount[0] = {info.max_compute_work_group_count[0]}"
                )
        elif not info.vertex_pipeline_stores_and_atomics:
            raise VkdqsError(
                f"{info.name!r} lacks vertexPipelineStoresAndAtomics, which path='vertex' needs"
            )

        super().__init__(device)
        self.mesh = mesh
        self.method = method
        self.path = path
        self.bone_count = bone_count
        self.vertex_count = n
        self.allow_scale = allow_scale
        align = info.min_uniform_buffer_offset_alignment
        # One slot per pose: the bone block, then (two-phase DQS) the scale block.
        self._bones_bytes = bone_count * bone_bytes
        self._scale_offset = _align(self._bones_bytes, align)
        two_phase = method == "dqs_scale" or (method == "dqs" and allow_scale)
        scale_bytes = bone_count * _SCALE_BYTES if two_phase else 0
        self._slot_bytes = _align(self._scale_offset + scale_bytes, align)
        self._programs: dict[str, _Program] = {}
        self._capacity = 0
        self._recorded: tuple[str, int] | None = None
        self._warned_scale = False
        try:
            self._create()
        except BaseException:
            self.close()
            raise

    # -- construction -----------------------------------------------------------------------

    def _create(self) -> None:
        dev = self.device
        label = f"skinner {self.method}/{self.path}"
        usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        self.arrays = mesh_arrays(self.mesh)
        self._mesh_buffers: dict[str, Buffer] = {}
        self._views: dict[str, DeviceObject] = {}
        for key, texel_format, _, _, _ in _MESH_INPUTS:
            if key not in self.arrays:
                continue
            arr = self.arrays[key]
            buf = self._keep(dev.create_buffer(arr.nbytes, usage, label=f"{label} {key}"))
            buf.write(arr)
            self._mesh_buffers[key] = buf
            if self.path == "compute":
                self._views[key] = self._keep(
                    buffer_view(dev, buf, texel_format, buf.size, label=f"{label} {key}")
                )
        if self.path == "vertex":
            self._render_pass = self._keep(attachmentless_render_pass(dev, label=label))
            self._framebuffer = self._keep(
                attachmentless_framebuffer(dev, self._render_pass, label=label)
            )
        self._cmd = self._keep(CommandBuffer(dev, label=label))
        self._bone_buffer: Buffer | None = None
        self._out_buffer: Buffer | None = None
        self._out_view: DeviceObject | None = None
        self._label = label
        self._program(self.method)  # build the main pipeline now, so errors surface here

    def _program(self, variant: str) -> _Program:
        program = self._programs.get(variant)
        if program is None:
            program = self._programs[variant] = _Program(self, variant)
        if program.capacity != self._capacity and self._capacity:
            self._write_buffer_descriptors(program)
        return program

    def _write_descriptors(
        self, dst_set: Any, entries: list[tuple[int, int, DeviceObject]]
    ) -> None:
        """Texel-buffer descriptors: (binding, type, view) triples."""
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=dst_set,
                dstBinding=binding,
                descriptorCount=1,
                descriptorType=dtype,
                pTexelBufferView=[view.handle],
            )
            for binding, dtype, view in entries
        ]
        vk.vkUpdateDescriptorSets(self.device.handle, len(writes), writes, 0, None)

    def _write_buffer_descriptors(self, program: _Program) -> None:
        assert self._bone_buffer is not None and self._out_buffer is not None
        infos = [(0, _UBO_DYNAMIC, self._bone_buffer, 0, self._bones_bytes)]
        if program.variant == "dqs_scale":
            infos.append(
                (6, _UBO_DYNAMIC, self._bone_buffer, self._scale_offset, self.bone_count * 48)
            )
        if self.path == "vertex":
            infos.append((1, _STORAGE, self._out_buffer, 0, self._out_buffer.size))
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=program.set,
                dstBinding=binding,
                descriptorCount=1,
                descriptorType=dtype,
                pBufferInfo=[
                    vk.VkDescriptorBufferInfo(buffer=buf.handle, offset=offset, range=size)
                ],
            )
            for binding, dtype, buf, offset, size in infos
        ]
        vk.vkUpdateDescriptorSets(self.device.handle, len(writes), writes, 0, None)
        if self.path == "compute":
            assert self._out_view is not None
            self._write_descriptors(program.set, [(5, _STORAGE_TEXEL, self._out_view)])
        program.capacity = self._capacity

    def _ensure_capacity(self, poses: int) -> None:
        """Make the bone and output buffers hold ``poses`` poses (they only grow)."""
        if poses <= self._capacity:
            return
        dev, info, n = self.device, self.device.info, self.vertex_count
        out_floats = poses * n * 6
        if self.path == "compute" and out_floats > info.max_texel_buffer_elements:
            raise LimitError(
                f"{poses} poses x {n} vertices x 6 floats exceed maxTexelBufferElements "
                f"({info.max_texel_buffer_elements}); use at most "
                f"{info.max_texel_buffer_elements // (6 * n)} poses per skin_many call"
            )
        if self.path == "vertex" and 4 * out_floats > info.max_storage_buffer_range:
            raise LimitError(
                f"{poses} poses x {n} vertices x 24 bytes exceed maxStorageBufferRange "
                f"({info.max_storage_buffer_range}); use at most "
                f"{info.max_storage_buffer_range // (24 * n)} poses per skin_many call"
            )
        # Every submission is waited for, so the GPU no longer uses the old buffers.
        for old in (self._out_view, self._out_buffer, self._bone_buffer):
            if old is not None:
                self._drop(old)
        self._bone_buffer = self._keep(
            dev.create_buffer(
                poses * self._slot_bytes,
                vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                label=f"{self._label} bones x{poses}",
            )
        )
        out_usage = (
            vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
            if self.path == "compute"
            else vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
        )
        self._out_buffer = self._keep(
            dev.create_buffer(
                4 * out_floats, out_usage, label=f"{self._label} output x{poses}", readback=True
            )
        )
        if self.path == "compute":
            self._out_view = self._keep(
                buffer_view(
                    dev,
                    self._out_buffer,
                    vk.VK_FORMAT_R32_SFLOAT,
                    self._out_buffer.size,
                    label=f"{self._label} output",
                )
            )
        self._capacity = poses
        self._recorded = None
        for program in self._programs.values():
            self._write_buffer_descriptors(program)

    def _record(self, program: _Program, poses: int) -> None:
        """Record the command buffer for a batch of ``poses`` poses (once per batch size)."""
        if self._recorded == (program.variant, poses):
            return
        n = self.vertex_count
        cmd = self._cmd.begin()
        compute = self.path == "compute"
        bind_point = (
            vk.VK_PIPELINE_BIND_POINT_COMPUTE if compute else vk.VK_PIPELINE_BIND_POINT_GRAPHICS
        )
        if not compute:
            begin = vk.VkRenderPassBeginInfo(
                renderPass=self._render_pass.handle,
                framebuffer=self._framebuffer.handle,
                renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(1, 1)),
            )
            vk.vkCmdBeginRenderPass(cmd, begin, vk.VK_SUBPASS_CONTENTS_INLINE)
            buffers = [self._mesh_buffers[k].handle for k in self._mesh_buffers]
            vk.vkCmdBindVertexBuffers(cmd, 0, len(buffers), buffers, [0] * len(buffers))
        vk.vkCmdBindPipeline(cmd, bind_point, program.pipeline.handle)
        for p in range(poses):
            offsets = [p * self._slot_bytes]
            if program.variant == "dqs_scale":
                offsets.append(p * self._slot_bytes)  # the binding's range starts at the scales
            vk.vkCmdBindDescriptorSets(
                cmd, bind_point, program.layout.handle, 0, 1, [program.set], len(offsets), offsets
            )
            position_base = p * n * 3
            normal_base = (poses + p) * n * 3
            if compute:
                push = np.array([n, position_base, normal_base], np.uint32)
                vk.vkCmdPushConstants(
                    cmd, program.layout.handle, _COMPUTE, 0, push.nbytes, vk.ffi.from_buffer(push)
                )
                vk.vkCmdDispatch(cmd, math.ceil(n / LOCAL_SIZE), 1, 1)
            else:
                push = np.zeros(18, np.float32)
                push[:16] = np.eye(4, dtype=np.float32).reshape(-1)
                push[16:].view(np.uint32)[:] = (position_base, normal_base)
                vk.vkCmdPushConstants(
                    cmd, program.layout.handle, _VERTEX, 0, push.nbytes, vk.ffi.from_buffer(push)
                )
                vk.vkCmdDraw(cmd, n, 1, 0, 0)
        if not compute:
            vk.vkCmdEndRenderPass(cmd)
        src_stage = (
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
            if compute
            else vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT
        )
        barrier = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT
        )
        vk.vkCmdPipelineBarrier(
            cmd, src_stage, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, [barrier], 0, None, 0, None
        )
        self._cmd.end()
        self._recorded = (program.variant, poses)

    # -- public API -------------------------------------------------------------------------

    def _run(self, packed: bone_packing.PackedPose) -> tuple[np.ndarray, np.ndarray]:
        if packed.variant == "dqs_scale" and not self._warned_scale:
            log.info("vkdqs: bones have scale/shear; using two-phase DQS")
            self._warned_scale = True
        poses = packed.bones.shape[0]
        self._ensure_capacity(poses)
        program = self._program(packed.variant)
        self._record(program, poses)
        slots = np.zeros((poses, self._slot_bytes // 4), np.float32)
        slots[:, : self._bones_bytes // 4] = packed.bones.reshape(poses, -1)
        if packed.scales is not None:
            start = self._scale_offset // 4
            slots[:, start : start + self.bone_count * 12] = packed.scales.reshape(poses, -1)
        assert self._bone_buffer is not None and self._out_buffer is not None
        self._bone_buffer.write(slots)
        self._cmd.submit_and_wait()
        n = self.vertex_count
        out = self._out_buffer.read(np.float32, poses * n * 6).reshape(2, poses, n, 3)
        return out[0], out[1]

    def _pack(self, bones: object, batched: bool) -> bone_packing.PackedPose:
        return bone_packing.pack_pose(
            bones, self.bone_count, self.method, batched=batched, allow_scale=self.allow_scale
        )

    def skin(self, bones: object) -> tuple[np.ndarray, np.ndarray]:
        """Skin the mesh with one pose.

        Parameters
        ----------
        bones : array, (B, 2, 4) unit dual quaternions or (B, 4, 4) matrices for DQS (rigid, or
            with scale/shear: two-phase DQS); (B, 4, 4) / (B, 3, 4) affine matrices (or (B, 2, 4)
            dual quaternions) for LBS.

        Returns
        -------
        positions, normals : ndarray, float32, (N, 3) each
        """
        self._check_open()
        packed = self._pack(bones, batched=False)
        batch = bone_packing.PackedPose(
            packed.variant,
            packed.bones[None],
            None if packed.scales is None else packed.scales[None],
        )
        positions, normals = self._run(batch)
        return positions[0], normals[0]

    def skin_many(self, bones: object) -> tuple[np.ndarray, np.ndarray]:
        """Skin the mesh with P poses ``(P, B, ...)`` in one submission.

        Returns (P, N, 3) float32 positions and normals.
        """
        self._check_open()
        return self._run(self._pack(bones, batched=True))

    def close(self) -> None:
        """Destroy this skinner's Vulkan objects now. Safe to call twice."""
        super().close()
        self._programs.clear()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<Skinner {self.method}/{self.path} {self.vertex_count} vertices, "
            f"{self.mesh.slots} influence slots, {self.bone_count} bones ({state})>"
        )
