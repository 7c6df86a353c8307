"""A Skinner's pipelines: one shader variant's pipeline, layout and descriptor set
(:class:`SkinProgram`), made by the Skinner on first use and owned by it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import methods
from .. import shader_interface as si
from ..gpu import (
    ComputePipelineDesc,
    DescriptorPool,
    DescriptorSetLayout,
    GraphicsPipelineDesc,
    PipelineLayout,
    TexelWrite,
    push_constants,
    write_descriptors,
)
from ..gpu.calls import vk

if TYPE_CHECKING:
    from .skinner import Skinner

__all__ = ["SkinProgram", "record_draws"]


class SkinProgram:
    """One shader variant (e.g. "dqs", "dqs_scale", "lbs"): its pipeline, its layouts and
    the mesh's descriptors (the vertex path: its one descriptor set)."""

    def __init__(
        self,
        skinner: Skinner,
        method: str,
        morphs: bool = False,
        output: int = si.OUTPUT_VERTICES,
        stride: int = 3,
    ) -> None:
        dev, s = skinner.device, skinner
        kind = "compute" if s.path == "compute" else "readback"
        # a method with a base (classic Delta Mush) skins with its base's variants
        self.variant = si.variant(kind, methods.get(method).shaders, s.slots)
        self.method = method
        #: the morph code is in (a batch with an active target) or compiled away; what a
        #: compute dispatch writes (si.OUTPUT_VERTICES and/or si.OUTPUT_BOX)
        self.output = output if kind == "compute" else si.OUTPUT_VERTICES
        #: floats from one output row to the next (3, or 4 for an app's vec4 rows)
        self.stride = stride
        self.key = (method, morphs, self.output, stride)
        self.name = self.variant.name
        self.bindings = {b.binding: b for b in si.bindings_of(self.variant)}
        stage = si.Stage.COMPUTE if kind == "compute" else si.Stage.VERTEX
        self.set_layout = s.own(DescriptorSetLayout(dev, self.bindings.values(), label=self.name))
        push = si.push_bytes_of(self.variant)
        self.layout = s.own(PipelineLayout(dev, [self.set_layout], push, stage, label=self.name))
        morph_spec = (si.MORPH_TARGETS_ID, si.morph_spec(s.morph_packing, morphs))
        spec = ((si.MAX_BONES_ID, s.bone_count), (si.LOCAL_SIZE_ID, si.LOCAL_SIZE), morph_spec)
        spec += s.vertex_layout.spec
        if kind == "compute":
            spec = (*spec, (si.COMPUTE_OUTPUT_ID, self.output), (si.OUTPUT_STRIDE_ID, stride))
            desc = ComputePipelineDesc(self.name, spec, dispatch_base=True)
            self.pipeline = s.pipelines.compute(desc, self.layout)
            #: each chunk's mesh descriptors (Skinner.chunks; the sets are the
            #: :class:`~vkdqs.engine.chunks.DispatchSets`' of each output)
            inputs = si.mesh_inputs(s.slots, method, s.vertex_layout)
            self._chunk_writes = [
                [TexelWrite(self.bindings[m.binding], views[m.name]) for m in inputs]
                + [TexelWrite(self.bindings[si.MORPH_DELTAS], s._morph_view)]
                for views in s.chunk_views
            ]
            self.mesh_writes = self._chunk_writes[0]
        else:
            gdesc = GraphicsPipelineDesc(
                vertex_shader=self.name,
                fragment_shader=None,
                vertex_inputs=tuple(
                    (m.location, int(m.vertex_format))
                    for m in si.attributes(si.mesh_inputs(s.slots, method, s.vertex_layout))
                ),
                spec=(spec[0], morph_spec, *s.vertex_layout.spec),
                topology=vk.VK_PRIMITIVE_TOPOLOGY_POINT_LIST,
                rasterizer_discard=True,
                cull_back=False,
            )
            self.pipeline = s.pipelines.graphics(gdesc, self.layout, s._render_pass)
            texels = [
                TexelWrite(self.bindings[m.binding], s._views[m.name])
                for m in si.mesh_inputs(s.slots, method, s.vertex_layout)
                if m.location < 0  # read as texels on this path too (Direct Delta Mush's)
            ]
            texels.append(TexelWrite(self.bindings[si.MORPH_DELTAS], s._morph_view))
            self.mesh_writes = texels
            self._chunk_writes = [texels]
            #: the vertex path's one set (the batch buffers'; compute sets: DispatchSets)
            self.pool = s.own(DescriptorPool(dev, self.bindings.values(), sets=1, label=self.name))
            self.set = self.pool.allocate(self.set_layout)
            write_descriptors(dev, self.set, texels)
        self.capacity = 0  # the Skinner's capacity this set's buffer descriptors point at

    def chunk_writes(self, c: int) -> list[TexelWrite]:
        """The mesh's texel descriptors of chunk ``c`` (compute path; vertex path: the one
        chunk's, the texel inputs it reads)."""
        return self._chunk_writes[c]


def record_draws(s: Skinner, cmd: Any, program: SkinProgram, poses: int) -> None:
    """Record the vertex path's draws of ``poses`` poses (skin.vert as points, writing the
    readback buffer), in the runs of :meth:`Skinner.dispatch_parts`."""
    n = s.vertex_count
    bind_point = vk.VK_PIPELINE_BIND_POINT_GRAPHICS
    begin = vk.VkRenderPassBeginInfo(
        renderPass=s._render_pass.handle,
        framebuffer=s._framebuffer.handle,
        renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(1, 1)),
    )
    vk.vkCmdBeginRenderPass(cmd, begin, vk.VK_SUBPASS_CONTENTS_INLINE)
    buffers = [s._mesh_buffers[m.name].handle for m in si.attributes(s._mesh_inputs)]
    vk.vkCmdBindVertexBuffers(cmd, 0, len(buffers), buffers, [0] * len(buffers))
    # the same runs as the compute path's, in vertices (gl_VertexIndex counts from first)
    size = si.LOCAL_SIZE
    parts = [
        (prog, [(a * size, min((a + c) * size, n) - a * size) for a, c in runs])
        for prog, runs in s.dispatch_parts(program)
    ]
    for p in range(poses):
        push = np.zeros(si.READBACK_PUSH_BYTES // 4, np.float32)
        push[:16] = np.eye(4, dtype=np.float32).reshape(-1)
        push[16:].view(np.uint32)[:] = (p * n * 3, (poses + p) * n * 3)
        for prog, runs in parts:
            if len(parts) > 1 or p == 0:
                vk.vkCmdBindPipeline(cmd, bind_point, prog.pipeline.handle)
            s.bind_pose(cmd, prog, bind_point, p)
            push_constants(cmd, prog.layout.handle, si.Stage.VERTEX, push)
            for first, count in runs:
                vk.vkCmdDraw(cmd, count, 1, first, 0)
    vk.vkCmdEndRenderPass(cmd)
