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

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import shader_interface as si
from ..gpu import ComputePass
from ..gpu.compute_pass import compute_barrier

if TYPE_CHECKING:
    from .passes import PassTarget
    from .skinner import Skinner

__all__ = ["BoundsPass"]


class BoundsPass:
    """``bounds.comp``'s pipelines and descriptor set for one Skinner (compute path): a
    :class:`vkdqs.engine.passes.SkinPass` after the skinning dispatches."""

    def __init__(self, skinner: Skinner) -> None:
        self.skinner = skinner
        self._pass = ComputePass(
            skinner,
            skinner.pipelines,
            si.Variant(si.Kind.BOUNDS).name,
            si.BOUNDS_BINDINGS,
            si.BOUNDS_PUSH_BYTES,
            sets=2,  # the batch's, Skinner.record's ring's
            label=f"bounds {skinner.method}",
        )
        self._pipelines = [
            self._pass.pipeline(((si.LOCAL_SIZE_ID, si.LOCAL_SIZE), (si.BOUNDS_EDGES_ID, edges)))
            for edges in (0, 1)
        ]
        #: the generation each set (batch, ring) last pointed at
        self._written: list[int | None] = [None, None]

    #: it records for Skinner.record's ring too (its second set)
    records_ring = True

    def record(self, cmd: Any, target: PassTarget) -> None:
        """After the skinning dispatches of ``target.poses`` poses: a barrier, then each
        recorded pose's box reduced from the positions they wrote (the host zero-filled the
        records). The set (the batch's, or the ring's) is pointed at the target's buffers
        when they are new (every submission was waited for)."""
        n, poses, ring = target.vertex_count, target.pose_range, int(target.ring)
        if n == 0:
            return
        if self._written[ring] != target.generation:
            boxes = target.boxes
            self._pass.write(
                {si.BOUNDS_POSITIONS: target.texels, si.BOUNDS_BOXES: (boxes, 0, boxes.size)},
                ring,
            )
            self._written[ring] = target.generation
        compute_barrier(cmd)
        self._pass.begin(cmd)
        # the main dispatch: groups of 12 floats (4 vertices), BOUNDS_STEPS an invocation; the
        # edge dispatch: one workgroup a pose; workgroup y is the pose
        per_group = 12 * si.LOCAL_SIZE * si.BOUNDS_STEPS
        rows = self.skinner.device.info.max_compute_work_group_count[1]
        for pipeline, x in zip(self._pipelines, (3 * n, per_group), strict=True):
            for first in range(poses.start, poses.stop, rows):
                push = np.array([n, first], np.uint32)
                self._pass.dispatch(
                    cmd, pipeline, x, per_group, push, ring, rows=min(rows, poses.stop - first)
                )
