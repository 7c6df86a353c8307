"""Renderer: draws skinned meshes (DQS or LBS per instance) into any render target.

The renderer records frames for a target (:mod:`vkdqs.targets`) without knowing whether it is
an offscreen image or a window's swapchain. It keeps ``frames_in_flight`` (2) sets of per-frame
resources: a fence, an image-available semaphore, a persistently mapped uniform buffer holding
every instance's bones and instance block, and one descriptor set per instance. A frame waits only
on the fence of the frame that last used the same slot (two frames ago), so the CPU writes a
buffer the GPU is no longer reading and never waits on the frame it just submitted.

Command buffers are recorded once and reused while nothing structural changes (instances, the
camera, wireframe, debug view, target size): per frame, the Python work for an instance is two
memory copies into mapped memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import vulkan as vk
from numpy.typing import ArrayLike

from . import bones as bone_packing
from .camera import Camera
from .commands import FENCE_TIMEOUT_NS, CommandBuffer
from .device import Device, DeviceObject, ResourceOwner
from .errors import InputError
from .memory import Buffer
from .mesh import SkinnedMesh
from .pipelines import (
    allocate_descriptor_set,
    descriptor_pool,
    descriptor_set_layout,
    pipeline_layout,
    shader_module,
    vertex_inputs,
)
from .shaders import SpecConstants
from .skinner import mesh_arrays
from .targets import RenderTarget
from .vkcall import vk_errors

_UBO = vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
_VERTEX = vk.VK_SHADER_STAGE_VERTEX_BIT
_FRAGMENT = vk.VK_SHADER_STAGE_FRAGMENT_BIT
# bones, instance block, bone scales (two-phase DQS; unused by the other variants)
_BINDINGS = [(0, _UBO, _VERTEX), (1, _UBO, _VERTEX | _FRAGMENT), (6, _UBO, _VERTEX)]
_SCALE_BYTES = 48
_PUSH_SIZE = 64  # mat4 view_projection
#: "dqs" switches to two-phase DQS for poses with scale; "dqs_scale" always uses it; "none"
#: draws the rest mesh without skinning (a baseline for measuring what skinning costs).
METHODS = ("dqs", "dqs_scale", "lbs", "none")

#: std140 InstanceBlock of shaders/glsl/include/instance.glsl.
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


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _bone_stride(method: str) -> int:
    """Bytes per bone in the bone block: mat3x4 for LBS, mat2x4 otherwise."""
    return 48 if method == "lbs" else 32


def _bone_bucket(bone_count: int) -> int:
    """MAX_BONES for a pipeline: the bone count rounded up, so few pipelines serve many rigs."""
    bucket = 16
    while bucket < bone_count:
        bucket *= 2
    return bucket


class RenderMesh:
    """A :class:`SkinnedMesh` uploaded for drawing (vertex and index buffers)."""

    def __init__(self, renderer: Renderer, mesh: SkinnedMesh, label: str) -> None:
        if not isinstance(mesh, SkinnedMesh):
            raise InputError(f"mesh must be a vkdqs.SkinnedMesh, got {type(mesh).__name__}")
        if mesh.indices is None:
            raise InputError(
                f"mesh {label!r} has no triangle indices; the renderer draws triangles"
            )
        dev = renderer.device
        usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
        self.vertex_buffers: list[Buffer] = []
        # The same (N, 4) rows the Skinner uploads: 4 buffers, or 6 with 8 influences.
        for name, arr in mesh_arrays(mesh).items():
            buf = renderer._keep(dev.create_buffer(arr.nbytes, usage, label=f"{label} {name}"))
            buf.write(arr)
            self.vertex_buffers.append(buf)
        self.index_buffer = renderer._keep(
            dev.create_buffer(
                mesh.indices.nbytes, vk.VK_BUFFER_USAGE_INDEX_BUFFER_BIT, label=f"{label} indices"
            )
        )
        self.index_buffer.write(mesh.indices)
        self.mesh = mesh
        self.label = label
        self.index_count = int(mesh.indices.size)


@dataclass(eq=False)
class Instance:
    """One drawn copy of a mesh, with its own pose, model matrix, colour and method."""

    mesh: RenderMesh
    bone_count: int
    method: str
    model: np.ndarray
    color: np.ndarray
    pose: bone_packing.PackedPose = field(repr=False)
    visible: bool = True
    #: The model matrix mirrors the mesh (det < 0), which flips its winding; set by set_model.
    mirrored: bool = False

    @property
    def variant(self) -> str:
        """The shader variant the current pose needs ("dqs", "dqs_scale", "lbs" or "none")."""
        return "none" if self.method == "none" else self.pose.variant

    def set_pose(self, bones: ArrayLike) -> None:
        """Validate and store this instance's pose (see :mod:`vkdqs.bones` for the layouts).

        For "dqs", matrices with scale/shear switch the instance to two-phase DQS.
        """
        method = "dqs" if self.method == "none" else self.method
        self.pose = bone_packing.pack_pose(bones, self.bone_count, method)

    def set_model(self, model: ArrayLike) -> None:
        m = np.asarray(model, dtype=np.float64)
        if m.shape != (4, 4) or not np.isfinite(m).all():
            raise InputError(f"model must be a finite (4, 4) matrix, got shape {m.shape}")
        det = np.linalg.det(m[:3, :3])
        if abs(det) < 1e-12:
            raise InputError("model matrix is singular")
        self.model = m
        self.mirrored = bool(det < 0.0)


class _Frame:
    """Per-frame-in-flight resources."""

    def __init__(self, renderer: Renderer, index: int) -> None:
        dev = renderer.device
        self.index = index
        with vk_errors("creating a frame fence"):
            fence = vk.vkCreateFence(
                dev.handle, vk.VkFenceCreateInfo(flags=vk.VK_FENCE_CREATE_SIGNALED_BIT), None
            )
        self.fence_obj = renderer._keep(
            dev.own("fence", fence, f"frame {index}", vk.vkDestroyFence)
        )
        self.fence = fence
        with vk_errors("creating a frame semaphore"):
            sem = vk.vkCreateSemaphore(dev.handle, vk.VkSemaphoreCreateInfo(), None)
        renderer._keep(dev.own("semaphore", sem, f"image available {index}", vk.vkDestroySemaphore))
        self.image_available = sem
        self.uniforms: Buffer | None = None
        self.sets: list[Any] = []


class Renderer(ResourceOwner):
    """Draws skinned mesh instances into ``target`` (an Offscreen- or SwapchainTarget).

    Parameters
    ----------
    device : Device
    target : OffscreenTarget or SwapchainTarget
    frames_in_flight : int
    clear_color : 4 floats, linear RGBA
    cull : bool
        Back-face culling (meshes wound counter-clockwise seen from outside).
    """

    def __init__(
        self,
        device: Device,
        target: RenderTarget,
        *,
        frames_in_flight: int = 2,
        clear_color: ArrayLike = (0.02, 0.025, 0.035, 1.0),
        cull: bool = True,
    ) -> None:
        super().__init__(device)
        self.target = target
        self.clear_color = tuple(float(c) for c in clear_color)
        self.cull = cull
        self.camera = Camera()
        self.wireframe = False
        self.debug_bone: int | None = None
        self.instances: list[Instance] = []
        self.meshes: list[RenderMesh] = []
        self.frames_rendered = 0
        self._pipelines: dict[tuple, DeviceObject] = {}
        self._commands: dict[tuple[int, int], tuple[CommandBuffer, tuple]] = {}
        self._layout_gen = 0
        self._slots: list[tuple[int, int, int]] = []
        # Adding or removing instances only marks the per-frame layout stale; the next frame
        # rebuilds it once, however many instances changed.
        self._layout_stale = True
        self._pool: DeviceObject | None = None
        try:
            self._set_layout = self._keep(descriptor_set_layout(device, _BINDINGS, label="render"))
            self._layout = self._keep(
                pipeline_layout(device, [self._set_layout], _PUSH_SIZE, _VERTEX, label="render")
            )
            self._frames = [_Frame(self, i) for i in range(frames_in_flight)]
        except BaseException:
            self.close()
            raise
        self._frame_counter = 0

    def close(self) -> None:
        """Destroy the renderer's Vulkan objects (not the target's). Safe to call twice."""
        super().close()
        self._commands.clear()
        self._pipelines.clear()

    # -- scene ----------------------------------------------------------------------------

    def add_mesh(self, mesh: SkinnedMesh, *, label: str | None = None) -> RenderMesh:
        """Upload ``mesh`` once; draw it with any number of instances."""
        self._check_open()
        rm = RenderMesh(self, mesh, label or f"mesh {len(self.meshes)}")
        self.meshes.append(rm)
        return rm

    def add_instance(
        self,
        mesh: RenderMesh,
        *,
        bone_count: int,
        method: str = "dqs",
        model: ArrayLike | None = None,
        color: ArrayLike = (0.62, 0.34, 0.16, 1.0),
        bones: ArrayLike | None = None,
    ) -> Instance:
        """A new instance of ``mesh`` (rest pose unless ``bones`` is given)."""
        self._check_open()
        if method not in METHODS:
            raise InputError(f"method must be one of {METHODS}, got {method!r}")
        mesh.mesh.check_joints(bone_count)
        max_bones = self.device.info.max_uniform_buffer_range // _bone_stride(method)
        if _bone_bucket(bone_count) > max_bones:
            raise InputError(
                f"bone_count {bone_count} exceeds what a uniform buffer holds on this device "
                f"(maxUniformBufferRange {self.device.info.max_uniform_buffer_range})"
            )
        identity = np.zeros((bone_count, 2, 4))
        identity[:, 0, 3] = 1.0
        rest = bone_packing.PackedPose("dqs", identity.astype(np.float32))
        inst = Instance(mesh, bone_count, method, np.eye(4), np.ones(4), pose=rest)
        inst.set_pose(identity if bones is None else bones)
        inst.set_model(np.eye(4) if model is None else model)
        c = np.asarray(color, dtype=np.float64)
        if c.shape not in ((3,), (4,)):
            raise InputError(f"color must have 3 or 4 components, got shape {c.shape}")
        inst.color = np.r_[c, 1.0] if c.shape == (3,) else c
        self.instances.append(inst)
        self._layout_stale = True
        return inst

    def remove_instance(self, inst: Instance) -> None:
        self._check_open()
        self.instances.remove(inst)
        self._layout_stale = True

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World-space box around every instance's rest mesh."""
        corners = []
        for inst in self.instances:
            lo, hi = inst.mesh.mesh.bounds
            box = np.array(
                [
                    [x, y, z, 1.0]
                    for x in (lo[0], hi[0])
                    for y in (lo[1], hi[1])
                    for z in (lo[2], hi[2])
                ]
            )
            corners.append((box @ inst.model.T)[:, :3])
        pts = np.vstack(corners)
        return pts.min(axis=0), pts.max(axis=0)

    def frame_scene(self) -> None:
        """Point the camera at all instances."""
        w, h = self.target.extent
        self.camera.frame(*self.scene_bounds(), aspect=(w / h) if h else 1.0)

    # -- per-frame resources -------------------------------------------------------------

    def _rebuild_frames(self) -> None:
        """Lay out every instance's bones and block in each frame's uniform buffer."""
        dev = self.device
        dev.wait_idle()
        align = dev.info.min_uniform_buffer_offset_alignment
        self._slots = []
        offset = 0
        for inst in self.instances:
            bucket = _bone_bucket(inst.bone_count)
            bones_at = offset
            offset = _align(offset + bucket * _bone_stride(inst.method), align)
            scales_at = offset
            offset = _align(offset + bucket * _SCALE_BYTES, align)
            block_at = offset
            offset = _align(offset + INSTANCE_BLOCK.itemsize, align)
            self._slots.append((bones_at, block_at, scales_at))
        for frame in self._frames:
            if frame.uniforms is not None:
                self._drop(frame.uniforms)
            frame.uniforms = self._keep(
                dev.create_buffer(
                    max(offset, 256),
                    vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                    label=f"frame {frame.index} uniforms",
                )
            )
        if self._pool is not None:
            self._drop(self._pool)
            self._pool = None
        count = max(1, len(self.instances)) * len(self._frames)
        self._pool = self._keep(descriptor_pool(dev, _BINDINGS, sets=count, label="render"))
        writes = []
        keep_alive = []  # cffi structs the writes point into must live until the update call
        for frame in self._frames:
            frame.sets = []
            for inst, (bones_at, block_at, scales_at) in zip(
                self.instances, self._slots, strict=True
            ):
                ds = allocate_descriptor_set(dev, self._pool, self._set_layout)
                frame.sets.append(ds)
                bucket = _bone_bucket(inst.bone_count)
                ranges = {
                    0: (bones_at, bucket * _bone_stride(inst.method)),
                    1: (block_at, INSTANCE_BLOCK.itemsize),
                    6: (scales_at, bucket * _SCALE_BYTES),
                }
                infos = {
                    b: vk.VkDescriptorBufferInfo(buffer=frame.uniforms.handle, offset=o, range=r)
                    for b, (o, r) in ranges.items()
                }
                keep_alive.append(infos)
                for binding, info in infos.items():
                    writes.append(
                        vk.VkWriteDescriptorSet(
                            dstSet=ds,
                            dstBinding=binding,
                            descriptorCount=1,
                            descriptorType=_UBO,
                            pBufferInfo=[info],
                        )
                    )
        if writes:
            vk.vkUpdateDescriptorSets(dev.handle, len(writes), writes, 0, None)
        self._layout_gen += 1
        self._layout_stale = False

    def _pipeline(self, variant: str, slots: int, max_bones: int, mirrored: bool) -> Any:
        key = (variant, slots, max_bones, mirrored, self.wireframe, self.target.render_pass.handle)
        pipe = self._pipelines.get(key)
        if pipe is None:
            pipe = self._keep(self._create_pipeline(variant, slots, max_bones, mirrored))
            self._pipelines[key] = pipe
        return pipe.handle

    def _create_pipeline(
        self, variant: str, slots: int, max_bones: int, mirrored: bool
    ) -> DeviceObject:
        dev = self.device
        eight = slots == 8 and variant != "none"
        vert = shader_module(dev, f"skin_{variant}{'_8' if eight else ''}.vert")
        frag = shader_module(dev, "skin.frag")
        try:
            spec = SpecConstants({0: max_bones})
            spec_info = spec.info()
            stages = [
                vk.VkPipelineShaderStageCreateInfo(
                    stage=_VERTEX, module=vert.handle, pName="main", pSpecializationInfo=spec_info
                ),
                vk.VkPipelineShaderStageCreateInfo(
                    stage=_FRAGMENT, module=frag.handle, pName="main"
                ),
            ]
            formats = [
                vk.VK_FORMAT_R32G32B32_SFLOAT,
                vk.VK_FORMAT_R32G32B32_SFLOAT,
                vk.VK_FORMAT_R32G32B32A32_SINT,
                vk.VK_FORMAT_R32G32B32A32_SFLOAT,
            ]
            if eight:
                formats += [vk.VK_FORMAT_R32G32B32A32_SINT, vk.VK_FORMAT_R32G32B32A32_SFLOAT]
            vertex_input = vertex_inputs([(loc, fmt, 16) for loc, fmt in enumerate(formats)])
            assembly = vk.VkPipelineInputAssemblyStateCreateInfo(
                topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST
            )
            viewport = vk.VkPipelineViewportStateCreateInfo(viewportCount=1, scissorCount=1)
            wire = self.wireframe and dev.info.fill_mode_non_solid
            raster = vk.VkPipelineRasterizationStateCreateInfo(
                polygonMode=vk.VK_POLYGON_MODE_LINE if wire else vk.VK_POLYGON_MODE_FILL,
                cullMode=vk.VK_CULL_MODE_BACK_BIT
                if self.cull and not wire
                else vk.VK_CULL_MODE_NONE,
                # a model matrix with det < 0 mirrors the mesh and flips its winding (as glTF
                # requires renderers to handle)
                frontFace=vk.VK_FRONT_FACE_CLOCKWISE
                if mirrored
                else vk.VK_FRONT_FACE_COUNTER_CLOCKWISE,
                lineWidth=1.0,
            )
            samples = {
                1: vk.VK_SAMPLE_COUNT_1_BIT,
                2: vk.VK_SAMPLE_COUNT_2_BIT,
                4: vk.VK_SAMPLE_COUNT_4_BIT,
                8: vk.VK_SAMPLE_COUNT_8_BIT,
            }
            multisample = vk.VkPipelineMultisampleStateCreateInfo(
                rasterizationSamples=samples[self.target.samples]
            )
            depth = vk.VkPipelineDepthStencilStateCreateInfo(
                depthTestEnable=vk.VK_TRUE,
                depthWriteEnable=vk.VK_TRUE,
                depthCompareOp=vk.VK_COMPARE_OP_LESS,
            )
            blend_attachment = vk.VkPipelineColorBlendAttachmentState(
                blendEnable=vk.VK_FALSE,
                colorWriteMask=vk.VK_COLOR_COMPONENT_R_BIT
                | vk.VK_COLOR_COMPONENT_G_BIT
                | vk.VK_COLOR_COMPONENT_B_BIT
                | vk.VK_COLOR_COMPONENT_A_BIT,
            )
            blend = vk.VkPipelineColorBlendStateCreateInfo(
                attachmentCount=1, pAttachments=[blend_attachment]
            )
            dynamic = vk.VkPipelineDynamicStateCreateInfo(
                dynamicStateCount=2,
                pDynamicStates=[vk.VK_DYNAMIC_STATE_VIEWPORT, vk.VK_DYNAMIC_STATE_SCISSOR],
            )
            info = vk.VkGraphicsPipelineCreateInfo(
                stageCount=2,
                pStages=stages,
                pVertexInputState=vertex_input,
                pInputAssemblyState=assembly,
                pViewportState=viewport,
                pRasterizationState=raster,
                pMultisampleState=multisample,
                pDepthStencilState=depth,
                pColorBlendState=blend,
                pDynamicState=dynamic,
                layout=self._layout.handle,
                renderPass=self.target.render_pass.handle,
                subpass=0,
            )
            label = f"render {variant}/{slots} x{max_bones}{' wireframe' if wire else ''}"
            with vk_errors(f"creating graphics pipeline {label!r}"):
                handle = vk.vkCreateGraphicsPipelines(dev.handle, None, 1, [info], None)[0]
            return dev.own("pipeline", handle, label, vk.vkDestroyPipeline)
        finally:
            vert.destroy()
            frag.destroy()

    # -- frames ---------------------------------------------------------------------------

    def _lights(self) -> tuple[np.ndarray, np.ndarray]:
        """Key light from above-left-behind the camera (it follows the camera), a dimmer fill."""
        right, up, forward = self.camera.basis()
        key = 0.5 * forward - 0.8 * up + 0.9 * right
        fill = 0.6 * forward + 0.2 * up - 1.0 * right
        return key / np.linalg.norm(key), fill / np.linalg.norm(fill)

    def _write_uniforms(self, frame: _Frame) -> None:
        key, fill = self._lights()
        blocks = np.zeros(len(self.instances), INSTANCE_BLOCK)
        for i, inst in enumerate(self.instances):
            blocks[i]["model"] = inst.model.T  # column-major
            normal = np.eye(4)
            normal[:3, :3] = np.linalg.inv(inst.model[:3, :3]).T
            blocks[i]["normal_matrix"] = normal.T
            blocks[i]["base_color"] = inst.color
        blocks["key_light"] = np.r_[key, 1.0]
        blocks["fill_light"] = np.r_[fill, 0.25]
        blocks["ambient"] = (0.07, 0.075, 0.09, 0.3)
        blocks["camera_position"] = np.r_[self.camera.position, 1.0]
        if self.debug_bone is not None:
            # the heat map shows skinned instances only; rigid ("none") parts stay shaded
            skinned = np.array([inst.method != "none" for inst in self.instances])
            blocks["debug"][skinned] = (1, self.debug_bone, 0, 0)
            blocks["debug"][~skinned] = (0, -1, 0, 0)
        else:
            blocks["debug"] = (0, -1, 0, 0)
        uniforms = frame.uniforms
        assert uniforms is not None
        for i, (inst, (bones_at, block_at, scales_at)) in enumerate(
            zip(self.instances, self._slots, strict=True)
        ):
            uniforms.write(inst.pose.bones, bones_at)
            if inst.pose.scales is not None:
                uniforms.write(inst.pose.scales, scales_at)
            uniforms.write(blocks[i : i + 1], block_at)

    def _state_key(self) -> tuple:
        w, h = self.target.extent
        vp = self.camera.view_projection(w / h)
        return (
            self._layout_gen,
            self.wireframe,
            self.target.extent,
            vp.tobytes(),
            tuple((i.visible, i.variant, i.mirrored) for i in self.instances),
            self.target.state_key() if hasattr(self.target, "state_key") else (),
        )

    def _record(self, cmd_buffer: CommandBuffer, frame: _Frame, image: int) -> None:
        w, h = self.target.extent
        cmd = cmd_buffer.begin()
        clear = [
            vk.VkClearValue(color=vk.VkClearColorValue(float32=list(self.clear_color))),
            vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0)),
        ]
        if self.target.samples > 1:
            clear.append(clear[0])
        begin = vk.VkRenderPassBeginInfo(
            renderPass=self.target.render_pass.handle,
            framebuffer=self.target.framebuffer(image),
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(w, h)),
            clearValueCount=len(clear),
            pClearValues=clear,
        )
        vk.vkCmdBeginRenderPass(cmd, begin, vk.VK_SUBPASS_CONTENTS_INLINE)
        vk.vkCmdSetViewport(cmd, 0, 1, [vk.VkViewport(0, 0, w, h, 0.0, 1.0)])
        vk.vkCmdSetScissor(cmd, 0, 1, [vk.VkRect2D(vk.VkOffset2D(0, 0), vk.VkExtent2D(w, h))])
        vp = self.camera.view_projection(w / h).T.astype(np.float32)  # column-major
        push = np.ascontiguousarray(vp)
        vk.vkCmdPushConstants(
            cmd, self._layout.handle, _VERTEX, 0, push.nbytes, vk.ffi.from_buffer(push)
        )
        bound = None
        for inst, ds in zip(self.instances, frame.sets, strict=True):
            if not inst.visible:
                continue
            rm = inst.mesh
            pipe = self._pipeline(
                inst.variant, rm.mesh.slots, _bone_bucket(inst.bone_count), inst.mirrored
            )
            if pipe != bound:
                vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, pipe)
                bound = pipe
            buffers = [b.handle for b in rm.vertex_buffers]
            if inst.variant == "none":
                buffers = buffers[:4]
            vk.vkCmdBindVertexBuffers(cmd, 0, len(buffers), buffers, [0] * len(buffers))
            vk.vkCmdBindIndexBuffer(cmd, rm.index_buffer.handle, 0, vk.VK_INDEX_TYPE_UINT32)
            vk.vkCmdBindDescriptorSets(
                cmd, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self._layout.handle, 0, 1, [ds], 0, None
            )
            vk.vkCmdDrawIndexed(cmd, rm.index_count, 1, 0, 0, 0)
        vk.vkCmdEndRenderPass(cmd)
        self.target.record_after_pass(cmd, image)
        cmd_buffer.end()

    def render(self) -> int | None:
        """Draw one frame into the target. Returns the frame slot used, or None when the target
        could not take a frame (a minimized window, or a swapchain being re-created)."""
        self._check_open()
        if self._layout_stale:
            self._rebuild_frames()  # waits for the GPU: the old buffers may be in use
        frame = self._frames[self._frame_counter % len(self._frames)]
        vk_device = self.device.handle
        with vk_errors(f"waiting for frame slot {frame.index}"):
            vk.vkWaitForFences(vk_device, 1, [frame.fence], vk.VK_TRUE, FENCE_TIMEOUT_NS)
        image = self.target.acquire(frame)
        if image is None:
            return None
        in_flight = getattr(self.target, "images_in_flight", None)
        if in_flight is not None:
            other = in_flight[image]
            if other is not None and other is not frame:
                vk.vkWaitForFences(vk_device, 1, [other.fence], vk.VK_TRUE, FENCE_TIMEOUT_NS)
            in_flight[image] = frame
        self._write_uniforms(frame)
        key = self._state_key()
        entry = self._commands.get((frame.index, image))
        if entry is None or entry[1] != key:
            cmd_buffer = (
                entry[0]
                if entry
                else self._keep(
                    CommandBuffer(
                        self.device, label=f"frame {frame.index} image {image}", fence=False
                    )
                )
            )
            self._record(cmd_buffer, frame, image)
            self._commands[(frame.index, image)] = (cmd_buffer, key)
        cmd_buffer = self._commands[(frame.index, image)][0]
        waits = self.target.wait_semaphores(frame)
        signals = self.target.signal_semaphores(image)
        submit = vk.VkSubmitInfo(
            waitSemaphoreCount=len(waits),
            pWaitSemaphores=waits or None,
            pWaitDstStageMask=[vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT] * len(waits)
            or None,
            commandBufferCount=1,
            pCommandBuffers=[cmd_buffer.handle],
            signalSemaphoreCount=len(signals),
            pSignalSemaphores=signals or None,
        )
        vk.vkResetFences(vk_device, 1, [frame.fence])
        with vk_errors(f"submitting frame {self.frames_rendered}"):
            vk.vkQueueSubmit(self.device.queue, 1, [submit], frame.fence)
        self.target.present(frame, image)
        self._frame_counter += 1
        self.frames_rendered += 1
        self._last = (frame, image)
        return frame.index

    def wait(self) -> None:
        """Block until the last submitted frame has finished on the GPU."""
        frame, _ = self._last
        with vk_errors("waiting for the last frame"):
            vk.vkWaitForFences(self.device.handle, 1, [frame.fence], vk.VK_TRUE, FENCE_TIMEOUT_NS)

    def render_image(self) -> np.ndarray:
        """Draw one frame into an offscreen target and return it as ``(H, W, 4)`` uint8 RGBA."""
        if not hasattr(self.target, "read"):
            raise InputError("render_image() needs an OffscreenTarget")
        slot = self.render()
        assert slot is not None
        self.wait()
        return self.target.read(slot)
