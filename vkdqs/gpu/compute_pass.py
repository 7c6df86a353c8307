"""One compute pass's Vulkan objects, built the same way for everyone (:class:`ComputePass`).

A pass is a descriptor set layout of its bindings, a pipeline layout with one push-constant
range, a pool with its sets, and the pipelines of its shader by specialization constants (from
the owner's :class:`~vkdqs.gpu.PipelineCache`). The bounds pass, Delta Mush's passes, the
centers of rotation, a crowd's sampling and culling and a method defined outside the package
all build theirs with it; each object is owned (and destroyed) by the owner given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..shader_interface import Binding, Stage
from .calls import vk
from .commands import memory_barrier, push_constants
from .descriptors import (
    BufferWrite,
    DescriptorPool,
    DescriptorSetLayout,
    ImageWrite,
    TexelWrite,
    write_descriptors,
)
from .objects import ResourceOwner
from .pipelines import ComputePipeline, ComputePipelineDesc, PipelineCache, PipelineLayout

__all__ = ["ComputePass", "compute_barrier"]


def compute_barrier(cmd: Any) -> None:
    """A compute -> compute barrier: what earlier dispatches wrote, later ones read and write."""
    stage = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
    memory_barrier(
        cmd,
        stage,
        stage,
        vk.VK_ACCESS_SHADER_WRITE_BIT,
        vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
    )


class ComputePass:
    """The set layout, pipeline layout, descriptor sets and pipelines of one compute shader.

    Parameters
    ----------
    owner : ResourceOwner
        Owns every object made (a Skinner, a renderer, a one-off owner).
    pipelines : PipelineCache
        The owner's cache the pipelines come from.
    shader : str
        The SPIR-V module's name (committed), or a label where ``code`` is given.
    bindings : sequence of Binding
        The set's bindings (set 0).
    push_bytes : int
        Bytes of its push constants (0: none).
    sets : int
        Descriptor sets to allocate (``pass.sets[i]``).
    code : bytes, optional
        The SPIR-V as data (a shader that does not ship with vkdqs).
    layouts : (DescriptorSetLayout, PipelineLayout), optional
        Layouts several passes share (made by their owner, for ``bindings`` and
        ``push_bytes``): this pass then makes only its pool and sets, and its pipelines are
        shared through the cache (a renderer's crowds).
    """

    def __init__(
        self,
        owner: ResourceOwner,
        pipelines: PipelineCache,
        shader: str,
        bindings: Sequence[Binding],
        push_bytes: int,
        *,
        sets: int = 1,
        code: bytes | None = None,
        label: str | None = None,
        layouts: tuple[DescriptorSetLayout, PipelineLayout] | None = None,
    ) -> None:
        dev, label = owner.device, label or shader
        self.owner, self.shader, self.code = owner, shader, code
        self.push_bytes = push_bytes
        #: the bindings by binding number
        self.bindings: dict[int, Binding] = {b.binding: b for b in bindings}
        if layouts is not None:
            self.set_layout, self.layout = layouts
        else:
            self.set_layout = owner.own(DescriptorSetLayout(dev, bindings, label=label))
            self.layout = owner.own(
                PipelineLayout(dev, [self.set_layout], push_bytes, Stage.COMPUTE, label=label)
            )
        pool = owner.own(DescriptorPool(dev, bindings, sets=sets, label=label))
        #: the descriptor sets (``VkDescriptorSet`` handles, freed with the pool)
        self.sets = [pool.allocate(self.set_layout) for _ in range(sets)]
        self._pipelines = pipelines
        self._bound: Any = None
        self._max_groups = dev.info.max_compute_work_group_count[0]

    def pipeline(self, spec: Iterable[tuple[int, int]] = ()) -> ComputePipeline:
        """The pipeline of the shader with specialization constants ``spec`` (made once)."""
        desc = ComputePipelineDesc(self.shader, tuple(spec), code=self.code, dispatch_base=True)
        return self._pipelines.compute(desc, self.layout)

    def write(self, views: Mapping[int, Any], set_index: int = 0) -> None:
        """Point set ``set_index``'s bindings at ``views`` (binding number -> a BufferView, a
        ``(Buffer, offset, size)`` range, or a ready BufferWrite/TexelWrite/ImageWrite)."""
        writes: list[BufferWrite | TexelWrite | ImageWrite] = []
        for binding, what in views.items():
            b = self.bindings[binding]
            if isinstance(what, (BufferWrite, TexelWrite, ImageWrite)):
                writes.append(what)
            elif isinstance(what, tuple):
                writes.append(BufferWrite(b, *what))
            else:
                writes.append(TexelWrite(b, what))
        write_descriptors(self.owner.device, self.sets[set_index], writes)

    def begin(self, cmd: Any) -> None:
        """Start recording this pass's dispatches into ``cmd`` (forgets what was bound)."""
        self._bound = None

    def dispatch(
        self,
        cmd: Any,
        pipeline: ComputePipeline,
        invocations: int,
        local_size: int,
        push: np.ndarray | None = None,
        set_index: int = 0,
        rows: int = 1,
    ) -> None:
        """Bind ``pipeline`` (where another was bound) and set ``set_index``, push ``push``,
        and dispatch enough workgroups of ``local_size`` for ``invocations`` (x) by ``rows``
        (y), in runs that each fit the device's ``maxComputeWorkGroupCount``."""
        point = vk.VK_PIPELINE_BIND_POINT_COMPUTE
        if pipeline is not self._bound:
            vk.vkCmdBindPipeline(cmd, point, pipeline.handle)
            self._bound = pipeline
        vk.vkCmdBindDescriptorSets(
            cmd, point, self.layout.handle, 0, 1, [self.sets[set_index]], 0, None
        )
        if push is not None:
            push_constants(cmd, self.layout.handle, Stage.COMPUTE, push)
        groups = max(1, math.ceil(invocations / local_size))
        for first, count in split_groups(0, groups, self._max_groups):
            vk.vkCmdDispatchBase(cmd, first, 0, 0, count, rows, 1)


def split_groups(first: int, count: int, limit: int) -> list[tuple[int, int]]:
    """``(first, count)`` workgroup runs of at most ``limit`` (``maxComputeWorkGroupCount``)
    covering ``count`` workgroups from ``first``: dispatched with ``vkCmdDispatchBase``, whose
    base workgroup the shaders see in ``gl_WorkGroupID`` and ``gl_GlobalInvocationID``."""
    return [(f, min(limit, first + count - f)) for f in range(first, first + count, limit)]
