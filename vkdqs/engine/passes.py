"""The pass protocol: what a compute pass recorded before or after a Skinner's skinning
dispatches is given (:class:`PassTarget`) and must do (:class:`SkinPass`).

A method's hooks (:attr:`vkdqs.methods.SkinningMethod.before` and ``after``: classic Delta
Mush's smoothing), the box pass (:class:`vkdqs.engine.bounds_pass.BoundsPass`) and a method
defined outside the package all record through it, in the Skinner's one submission, before the
host reads anything back. A pass brings its own barriers (a compute -> compute one before it
reads what the skinning wrote: :func:`vkdqs.gpu.compute_pass.compute_barrier`) and owns nothing:
the Skinner that made it owns its Vulkan objects and destroys them with its ``close``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import shader_interface as si
from ..errors import InputError

if TYPE_CHECKING:
    from ..gpu import Buffer, BufferView

__all__ = ["PassTarget", "PoseMotion", "SkinPass", "pose_motion"]


@dataclass(frozen=True)
class PassTarget:
    """What one batch's dispatches wrote, for the passes recorded around them.

    Attributes
    ----------
    poses : int
        Poses in the batch.
    vertex_count : int
    output : int
        What the skinning dispatch writes (:data:`vkdqs.shader_interface.OUTPUT_VERTICES`,
        ``OUTPUT_BOX``); a pass over the vertices records nothing for a box-only dispatch.
    vertices : BufferView
        The Skinner's output as r32f texels: pose ``p``'s positions from ``3 N p``, its
        normals from ``3 N (poses + p)`` (N: the vertex count).
    texels : BufferView
        The same buffer as rgba32f texels.
    boxes : Buffer
        The batch's Boxes records (``si.BOX_STRIDE`` bytes a pose).
    generation : int
        Changes whenever the Skinner makes new output buffers (another batch size): a pass
        points its descriptor sets at them again then, and only then.
    ring : bool
        The target is :meth:`vkdqs.Skinner.record`'s ring (its own buffers, never remade,
        ``poses`` its slots), recorded into an app's command buffers that may still be pending
        when the batch's sets are pointed elsewhere: a pass keeps descriptor sets of its own
        for it, and says so (:attr:`SkinPass.records_ring`).
    only : int or None
        The one pose to record (the ring slot); None: every pose (:attr:`pose_range`).
    """

    poses: int
    vertex_count: int
    output: int
    vertices: BufferView
    texels: BufferView
    boxes: Buffer
    generation: int = 0
    ring: bool = False
    only: int | None = None

    @property
    def pose_range(self) -> range:
        """The poses whose passes to record."""
        return range(self.poses) if self.only is None else range(self.only, self.only + 1)

    @property
    def writes_vertices(self) -> bool:
        """Whether the skinning dispatch writes vertices (not only a box)."""
        return bool(self.output & si.OUTPUT_VERTICES)

    def positions_at(self, p: int) -> int:
        """The first float of pose ``p``'s positions in :attr:`vertices`."""
        return 3 * self.vertex_count * p

    def normals_at(self, p: int) -> int:
        """The first float of pose ``p``'s normals in :attr:`vertices`."""
        return 3 * self.vertex_count * (self.poses + p)


#: Seconds between the two poses that callers sampling a motion (a clip, the viewer's scenes, a
#: bake) hand a Skinner whose passes read it: the pose at t and MOTION_STEP before (a backward
#: difference of the clip; a clip clamps before its start, so its first frame is at rest).
MOTION_STEP = 1.0 / 240.0


@dataclass(frozen=True)
class PoseMotion:
    """The poses of a chunk as given, for the passes that read them (velocity skinning): what
    a pass's ``motion(motion)`` is handed before the chunk's submission.

    Attributes
    ----------
    bones : ndarray, float64, (P, B, 4, 4)
        The poses as joint (skinning) matrices.
    previous : ndarray, float64, (P, B, 4, 4), or None
        Each pose's previous pose (``Skinner.skin(..., previous=, dt=)``), or None: no motion.
    dt : float
        Seconds from ``previous`` to ``bones``.
    """

    bones: np.ndarray
    previous: np.ndarray | None = None
    dt: float = 1.0

    def chunk(self, start: int, count: int) -> PoseMotion:
        """Poses ``start`` to ``start + count``."""
        end = start + count
        before = None if self.previous is None else self.previous[start:end]
        return PoseMotion(self.bones[start:end], before, self.dt)


def pose_motion(
    skinner: Any, bones: object, previous: object, dt: object, *, batched: bool
) -> PoseMotion | None:
    """The :class:`PoseMotion` of ``bones`` (packed and validated by the caller) for a
    Skinner whose passes read the poses (None for the others, which refuse ``previous`` and
    ``dt``): ``previous`` of the same shape, ``dt`` seconds > 0 (both or neither)."""
    from .. import methods

    if not skinner.reads_motion:
        if previous is not None or dt is not None:
            raise InputError(
                f"previous= and dt= are for methods whose passes read the motion (velocity "
                f"skinning); method {skinner.method!r} has none"
            )
        return None
    now = methods.as_matrices(bones)
    now = now if batched else now[None]
    if (previous is None) != (dt is None):
        raise InputError("previous= and dt= go together (the previous pose and the seconds since)")
    if previous is None:
        return PoseMotion(now)
    try:
        before = methods.as_matrices(previous)
    except (TypeError, ValueError) as exc:
        raise InputError(f"previous must be poses of numbers: {exc}") from None
    before = before if batched else before[None]
    if before.shape != now.shape or not np.isfinite(before).all():
        raise InputError(
            f"previous must be finite poses of the shape of bones, "
            f"{now.shape[int(not batched) :]}; got {before.shape[int(not batched) :]}"
        )
    if isinstance(dt, bool) or not isinstance(dt, (int, float, np.floating, np.integer)):
        raise InputError(f"dt must be a number of seconds, got {dt!r}")
    if not np.isfinite(dt) or dt <= 0:
        raise InputError(f"dt must be a number of seconds > 0, got {dt!r}")
    return PoseMotion(now, before, float(dt))


class SkinPass(Protocol):
    """A pass a Skinner records before or after its skinning dispatches.

    A pass may also say ``records_ring = True``: it records for :attr:`PassTarget.ring`
    targets too (the poses of :attr:`PassTarget.pose_range`, through descriptor sets of
    their own), so :meth:`vkdqs.Skinner.record` records it; ``record`` refuses a Skinner with
    a pass that does not say so. A pass that reads the poses themselves (velocity skinning's
    motion) has a method ``motion(motion: PoseMotion)``, which the Skinner calls with each
    chunk's poses after recording and before submitting it (its data goes to buffers its
    recorded dispatches read); the Skinner then takes ``previous=`` and ``dt=``.
    """

    def record(self, cmd: Any, target: PassTarget) -> None:
        """Record its dispatches (and the barriers they need) for one batch into ``cmd``."""
