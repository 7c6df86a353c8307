"""Skinner: skins one mesh on the GPU and returns the skinned vertices as numpy arrays.

Two paths run the same ``skin_vertex()`` from ``shaders/glsl/include/skin.glsl``:

* ``path="compute"`` (default, fastest): ``skin.comp`` reads the mesh through uniform texel
  buffers and writes through a storage texel buffer (on lavapipe texel buffers are an order of
  magnitude faster than storage buffers);
* ``path="vertex"``: the rendering vertex shader's readback variant, drawn as points with
  rasterizer discard, writes each vertex to a storage buffer at ``gl_VertexIndex``. It is what
  the renderer draws with, so tests of this path test the rendering shader itself.

The mesh is uploaded once. Each call writes the pose(s) into a persistently mapped uniform
buffer, submits a command buffer recorded once per batch size, waits on its fence and copies the
results out. ``skin_many`` runs P poses in one submission with dynamic uniform-buffer offsets.
"""

from __future__ import annotations

import math

import numpy as np
import vulkan as vk

from . import bones as bone_packing
from .commands import CommandBuffer
from .device import Device, DeviceObject
from .errors import InputError, LimitError, ObjectDestroyedError, VkdqsError
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

METHODS = ("dqs", "lbs")
PATHS = ("compute", "vertex")
LOCAL_SIZE = 64
_VERTEX_PUSH_SIZE = 64 + 8  # mat4 view_projection, uint position_base, uint normal_base
_COMPUTE_PUSH_SIZE = 12  # uint vertex_count, position_base, normal_base

_UBO_DYNAMIC = vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC
_TEXEL = vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
_STORAGE_TEXEL = vk.VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER
_STORAGE = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
_COMPUTE = vk.VK_SHADER_STAGE_COMPUTE_BIT
_VERTEX = vk.VK_SHADER_STAGE_VERTEX_BIT


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


class Skinner:
    """Skins ``mesh`` on ``device`` with DQS or LBS; a context manager.

    Parameters
    ----------
    device : Device
    mesh : SkinnedMesh
    bone_count : int
        Bones in a pose. Every joint index the mesh uses must be below it.
    method : {"dqs", "lbs"}
    path : {"compute", "vertex"}
    """

    def __init__(
        self,
        device: Device,
        mesh: SkinnedMesh,
        *,
        bone_count: int,
        method: str = "dqs",
        path: str = "compute",
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
        self.bone_floats = bone_packing.DQ_FLOATS if method == "dqs" else bone_packing.LBS_FLOATS
        bone_bytes = 4 * self.bone_floats
        max_bones = info.max_uniform_buffer_range // bone_bytes
        if bone_count > max_bones:
            raise LimitError(
                f"bone_count {bone_count} needs {bone_count * bone_bytes} bytes of uniform "
                f"buffer ({method}: {bone_bytes} bytes a bone), more than this device's "
                f"maxUniformBufferRange of {info.max_uniform_buffer_range} bytes "
                f"(at most {max_bones} bones)"
            )
        mesh.check_joints(bone_count)
        over = mesh.first_vertex_over(4)
        if over is not None:
            raise LimitError(
                f"vertex {over[0]} has {over[1]} non-zero weights; the 4-influence path takes "
                "at most 4"
            )
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

        self.device = device
        self.mesh = mesh
        self.method = method
        self.path = path
        self.bone_count = bone_count
        self.vertex_count = n
        self._block_bytes = bone_count * bone_bytes
        self._slot_bytes = _align(self._block_bytes, info.min_uniform_buffer_offset_alignment)
        self._objects: list[DeviceObject] = []
        self._capacity = 0
        self._recorded_poses = 0
        self._closed = False
        try:
            self._create(mesh)
        except BaseException:
            self.close()
            raise

    # -- construction -----------------------------------------------------------------------

    def _keep(self, obj):
        self._objects.append(obj)
        return obj

    def _create(self, mesh: SkinnedMesh) -> None:
        dev = self.device
        n = self.vertex_count
        name = f"skin_{self.method}" + (".comp" if self.path == "compute" else "_readback.vert")
        usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        pad = np.zeros((n, 1), np.float32)
        mesh_arrays = {
            "positions": np.hstack([mesh.positions, pad]),
            "normals": np.hstack([mesh.normals, pad]),
            "joints": mesh.joints.astype(np.int32),
            "weights": mesh.weights,
        }
        self._mesh_buffers = {}
        for key, arr in mesh_arrays.items():
            buf = self._keep(dev.create_buffer(arr.nbytes, usage, label=f"{name} {key}"))
            buf.write(arr)
            self._mesh_buffers[key] = buf

        if self.path == "compute":
            self._bindings = [
                (0, _UBO_DYNAMIC, _COMPUTE),
                (1, _TEXEL, _COMPUTE),
                (2, _TEXEL, _COMPUTE),
                (3, _TEXEL, _COMPUTE),
                (4, _TEXEL, _COMPUTE),
                (5, _STORAGE_TEXEL, _COMPUTE),
            ]
            stages, push = _COMPUTE, _COMPUTE_PUSH_SIZE
        else:
            self._bindings = [(0, _UBO_DYNAMIC, _VERTEX), (1, _STORAGE, _VERTEX)]
            stages, push = _VERTEX, _VERTEX_PUSH_SIZE
        self._set_layout = self._keep(descriptor_set_layout(dev, self._bindings, label=name))
        self._layout = self._keep(
            pipeline_layout(dev, [self._set_layout], push, stages, label=name)
        )
        self._pool = self._keep(descriptor_pool(dev, self._bindings, sets=1, label=name))
        self._set = allocate_descriptor_set(dev, self._pool, self._set_layout)
        module = self._keep(shader_module(dev, name))
        spec = SpecConstants({0: self.bone_count, 1: LOCAL_SIZE})
        if self.path == "compute":
            self._pipeline = self._keep(
                compute_pipeline(dev, self._layout, module, spec, label=name)
            )
            fmt = {
                "positions": vk.VK_FORMAT_R32G32B32A32_SFLOAT,
                "normals": vk.VK_FORMAT_R32G32B32A32_SFLOAT,
                "joints": vk.VK_FORMAT_R32G32B32A32_SINT,
                "weights": vk.VK_FORMAT_R32G32B32A32_SFLOAT,
            }
            views = [
                self._keep(buffer_view(dev, buf, fmt[k], buf.size, label=f"{name} {k}"))
                for k, buf in self._mesh_buffers.items()
            ]
            self._write_texel_descriptors([(1 + i, _TEXEL, v) for i, v in enumerate(views)])
        else:
            self._render_pass = self._keep(attachmentless_render_pass(dev, label=name))
            self._framebuffer = self._keep(
                attachmentless_framebuffer(dev, self._render_pass, label=name)
            )
            inputs = vertex_inputs(
                [
                    (0, vk.VK_FORMAT_R32G32B32_SFLOAT, 16),
                    (1, vk.VK_FORMAT_R32G32B32_SFLOAT, 16),
                    (2, vk.VK_FORMAT_R32G32B32A32_SINT, 16),
                    (3, vk.VK_FORMAT_R32G32B32A32_SFLOAT, 16),
                ]
            )
            self._pipeline = self._keep(
                readback_pipeline(
                    dev, self._layout, module, spec, self._render_pass, inputs, label=name
                )
            )
        module.destroy()  # pipelines keep what they need
        self._objects.remove(module)
        self._cmd = self._keep(CommandBuffer(dev, label=name))
        self._bone_buffer: Buffer | None = None
        self._out_buffer: Buffer | None = None
        self._out_view: DeviceObject | None = None
        self._name = name

    def _write_texel_descriptors(self, entries) -> None:
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=self._set,
                dstBinding=binding,
                descriptorCount=1,
                descriptorType=dtype,
                pTexelBufferView=[view.handle],
            )
            for binding, dtype, view in entries
        ]
        vk.vkUpdateDescriptorSets(self.device.handle, len(writes), writes, 0, None)

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
                old.destroy()
                self._objects.remove(old)
        self._bone_buffer = self._keep(
            dev.create_buffer(
                poses * self._slot_bytes,
                vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                label=f"{self._name} bones x{poses}",
            )
        )
        out_usage = (
            vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
            if self.path == "compute"
            else vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
        )
        self._out_buffer = self._keep(
            dev.create_buffer(
                4 * out_floats, out_usage, label=f"{self._name} output x{poses}", readback=True
            )
        )
        bone_info = vk.VkDescriptorBufferInfo(
            buffer=self._bone_buffer.handle, offset=0, range=self._block_bytes
        )
        writes = [
            vk.VkWriteDescriptorSet(
                dstSet=self._set,
                dstBinding=0,
                descriptorCount=1,
                descriptorType=_UBO_DYNAMIC,
                pBufferInfo=[bone_info],
            )
        ]
        vk.vkUpdateDescriptorSets(dev.handle, len(writes), writes, 0, None)
        if self.path == "compute":
            self._out_view = self._keep(
                buffer_view(
                    dev,
                    self._out_buffer,
                    vk.VK_FORMAT_R32_SFLOAT,
                    self._out_buffer.size,
                    label=f"{self._name} output",
                )
            )
            self._write_texel_descriptors([(5, _STORAGE_TEXEL, self._out_view)])
        else:
            out_info = vk.VkDescriptorBufferInfo(
                buffer=self._out_buffer.handle, offset=0, range=self._out_buffer.size
            )
            write = vk.VkWriteDescriptorSet(
                dstSet=self._set,
                dstBinding=1,
                descriptorCount=1,
                descriptorType=_STORAGE,
                pBufferInfo=[out_info],
            )
            vk.vkUpdateDescriptorSets(dev.handle, 1, [write], 0, None)
        self._capacity = poses
        self._recorded_poses = 0

    def _record(self, poses: int) -> None:
        """Record the command buffer for a batch of ``poses`` poses (once per batch size)."""
        if self._recorded_poses == poses:
            return
        n = self.vertex_count
        cmd = self._cmd.begin()
        bind_point = (
            vk.VK_PIPELINE_BIND_POINT_COMPUTE
            if self.path == "compute"
            else vk.VK_PIPELINE_BIND_POINT_GRAPHICS
        )
        if self.path == "vertex":
            begin = vk.VkRenderPassBeginInfo(
                renderPass=self._render_pass.handle,
                framebuffer=self._framebuffer.handle,
                renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(1, 1)),
            )
            vk.vkCmdBeginRenderPass(cmd, begin, vk.VK_SUBPASS_CONTENTS_INLINE)
            buffers = [self._mesh_buffers[k].handle for k in self._mesh_buffers]
            vk.vkCmdBindVertexBuffers(cmd, 0, len(buffers), buffers, [0] * len(buffers))
        vk.vkCmdBindPipeline(cmd, bind_point, self._pipeline.handle)
        for p in range(poses):
            vk.vkCmdBindDescriptorSets(
                cmd, bind_point, self._layout.handle, 0, 1, [self._set], 1, [p * self._slot_bytes]
            )
            position_base = p * n * 3
            normal_base = (poses + p) * n * 3
            if self.path == "compute":
                push = np.array([n, position_base, normal_base], np.uint32)
                vk.vkCmdPushConstants(
                    cmd, self._layout.handle, _COMPUTE, 0, push.nbytes, vk.ffi.from_buffer(push)
                )
                vk.vkCmdDispatch(cmd, math.ceil(n / LOCAL_SIZE), 1, 1)
            else:
                push = np.zeros(18, np.float32)
                push[:16] = np.eye(4, dtype=np.float32).reshape(-1)
                push[16:].view(np.uint32)[:] = (position_base, normal_base)
                vk.vkCmdPushConstants(
                    cmd, self._layout.handle, _VERTEX, 0, push.nbytes, vk.ffi.from_buffer(push)
                )
                vk.vkCmdDraw(cmd, n, 1, 0, 0)
        if self.path == "vertex":
            vk.vkCmdEndRenderPass(cmd)
        src_stage = (
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
            if self.path == "compute"
            else vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT
        )
        barrier = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT
        )
        vk.vkCmdPipelineBarrier(
            cmd, src_stage, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, [barrier], 0, None, 0, None
        )
        self._cmd.end()
        self._recorded_poses = poses

    # -- public API -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ObjectDestroyedError("Skinner used after close()")
        if self.device.closed:
            raise ObjectDestroyedError("Skinner used after its Device was closed")

    def _pack(self, bones: object, batched: bool) -> np.ndarray:
        if self.method == "dqs":
            return bone_packing.pack_dqs(bones, self.bone_count, batched=batched)
        return bone_packing.pack_lbs(bones, self.bone_count, batched=batched)

    def _run(self, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        poses = packed.shape[0]
        self._ensure_capacity(poses)
        self._record(poses)
        slots = np.zeros((poses, self._slot_bytes // 4), np.float32)
        slots[:, : self.bone_count * self.bone_floats] = packed.reshape(poses, -1)
        assert self._bone_buffer is not None and self._out_buffer is not None
        self._bone_buffer.write(slots)
        self._cmd.submit_and_wait()
        n = self.vertex_count
        out = self._out_buffer.read(np.float32, poses * n * 6)
        positions = out[: poses * n * 3].reshape(poses, n, 3)
        normals = out[poses * n * 3 :].reshape(poses, n, 3)
        return positions, normals

    def skin(self, bones: object) -> tuple[np.ndarray, np.ndarray]:
        """Skin the mesh with one pose.

        Parameters
        ----------
        bones : array, (B, 2, 4) unit dual quaternions or (B, 4, 4) rigid matrices for DQS;
            (B, 4, 4) / (B, 3, 4) affine matrices (or (B, 2, 4) dual quaternions) for LBS.

        Returns
        -------
        positions, normals : ndarray, float32, (N, 3) each
        """
        self._check_open()
        packed = self._pack(bones, batched=False)
        positions, normals = self._run(packed[None])
        return positions[0], normals[0]

    def skin_many(self, bones: object) -> tuple[np.ndarray, np.ndarray]:
        """Skin the mesh with P poses ``(P, B, ...)`` in one submission.

        Returns (P, N, 3) float32 positions and normals.
        """
        self._check_open()
        return self._run(self._pack(bones, batched=True))

    def close(self) -> None:
        """Destroy this skinner's Vulkan objects now. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if not self.device.closed:
            self.device.wait_idle()
            for obj in reversed(self._objects):
                obj.destroy()
        self._objects.clear()

    def __enter__(self) -> Skinner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<Skinner {self.method}/{self.path} {self.vertex_count} vertices, "
            f"{self.bone_count} bones ({state})>"
        )
