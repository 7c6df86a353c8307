"""The box of the vertices a Skinner wrote, reduced on the GPU after its skinning
(:class:`BoundsPass`).

``Skinner.skin(bounds=True)`` and ``skin_many(bounds=True)`` on the compute path record the very
skinning dispatches ``skin()`` records, then, after a compute -> compute barrier, one
``bounds.comp`` dispatch per pose that reads the positions back from the Skinner's output and
folds their exact box into the pose's Boxes record, all in the same submission. Reducing inside
the skinning dispatch instead (skin.comp's box code, which ``Skinner.bounds()`` still uses: it
writes no vertex) cost 1.6-1.9x the skinning on lavapipe, even with its atomics never run;
this pass costs a few percent (``benchmarks/bench_skinning.py``).

The Skinner makes it on the first call that needs it and records it; every Vulkan object it
makes is owned by the Skinner and destroyed by its ``close``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import shader_interface as si
from ..gpu import (
    Buffer,
    BufferView,
    BufferWrite,
    ComputePipelineDesc,
    DescriptorPool,
    DescriptorSetLayout,
    PipelineLayout,
    TexelWrite,
    memory_barrier,
    push_constants,
    write_descriptors,
)
from ..gpu.calls import vk

if TYPE_CHECKING:
    from .skinner import Skinner

__all__ = ["BoundsPass"]


class BoundsPass:
    """``bounds.comp``'s pipeline and descriptor set for one Skinner (compute path)."""

    def __init__(self, skinner: Skinner) -> None:
        dev, label = skinner.device, f"bounds {skinner.method}"
        self.skinner = skinner
        self._bindings = {b.binding: b for b in si.BOUNDS_BINDINGS}
        set_layout = skinner.own(DescriptorSetLayout(dev, si.BOUNDS_BINDINGS, label=label))
        self._layout = skinner.own(
            PipelineLayout(dev, [set_layout], si.BOUNDS_PUSH_BYTES, si.Stage.COMPUTE, label=label)
        )
        pool = skinner.own(DescriptorPool(dev, si.BOUNDS_BINDINGS, sets=1, label=label))
        self._set = pool.allocate(set_layout)
        self._pipelines = [
            skinner._pipelines.compute(
                ComputePipelineDesc(
                    si.Variant(si.Kind.BOUNDS).name,
                    ((si.LOCAL_SIZE_ID, si.LOCAL_SIZE), (si.BOUNDS_EDGES_ID, edges)),
                ),
                self._layout,
            )
            for edges in (0, 1)
        ]

    def write_set(self, out_view: BufferView, boxes: Buffer) -> None:
        """Point the set at the Skinner's output and Boxes buffer (again whenever the Skinner
        makes new ones for another batch size; every submission was waited for)."""
        b = self._bindings
        writes = [
            TexelWrite(b[si.BOUNDS_POSITIONS], out_view),
            BufferWrite(b[si.BOUNDS_BOXES], boxes, 0, boxes.size),
        ]
        write_descriptors(self.skinner.device, self._set, writes)

    def record(self, cmd: Any, poses: int) -> None:
        """After the skinning dispatches of ``poses`` poses: a barrier, then each pose's box
        reduced from the positions they wrote (the host zero-filled the records)."""
        n = self.skinner.vertex_count
        if n == 0:
            return
        point = vk.VK_PIPELINE_BIND_POINT_COMPUTE
        stage = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        memory_barrier(
            cmd, stage, stage, vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_ACCESS_SHADER_READ_BIT
        )
        vk.vkCmdBindDescriptorSets(cmd, point, self._layout.handle, 0, 1, [self._set], 0, None)
        # the main dispatch: groups of 12 floats (4 vertices), BOUNDS_STEPS an invocation; the
        # edge dispatch: one workgroup a pose; workgroup y is the pose
        groups = max(1, math.ceil(3 * n / (12 * si.LOCAL_SIZE * si.BOUNDS_STEPS)))
        rows = self.skinner.device.info.max_compute_work_group_count[1]
        for pipeline, x in zip(self._pipelines, (groups, 1), strict=True):
            vk.vkCmdBindPipeline(cmd, point, pipeline.handle)
            for first in range(0, poses, rows):
                push = np.array([n, first], np.uint32)
                push_constants(cmd, self._layout.handle, si.Stage.COMPUTE, push)
                vk.vkCmdDispatch(cmd, x, min(rows, poses - first), 1)
