"""Baked animation clips for crowds: skinning matrices sampled at a fixed frame rate.

Pure numpy. A clip is ``(F, J, 4, 4)`` skinning matrices, frame ``k`` at time ``k / fps``; the
last frame is the clip's end, so ``duration = (F - 1) / fps``. A copy of a crowd plays a clip at
any time: times wrap (``time mod duration``), and the GPU blends the two neighbouring frames
(:mod:`vkdqs.engine.crowd`). Make one with :meth:`vkdqs.gltf.GltfScene.bake_clip` or from your own
arrays with ``AnimationClip(frames, fps)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import MAX_MAGNITUDE, InputError

#: Frame positions this close to a whole frame are snapped to it, so ``k / fps`` plays frame k
#: exactly (``k / fps * fps`` is not always k in floating point).
SNAP = 1e-6


class AnimationClip:
    """Skinning matrices ``frames`` (F, J, 4, 4) sampled at ``fps`` frames a second."""

    def __init__(self, frames: ArrayLike, fps: float) -> None:
        try:
            arr = np.array(frames, dtype=np.float64)
        except (ValueError, TypeError) as exc:
            raise InputError(
                f"clip frames must be a (F, J, 4, 4) array of numbers: {exc}"
            ) from None
        if arr.ndim != 4 or arr.shape[2:] != (4, 4) or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise InputError(
                f"clip frames must have shape (F, J, 4, 4), F, J >= 1, got {arr.shape}"
            )
        finite = np.isfinite(arr).all(axis=(2, 3))
        if not finite.all():
            f, j = (int(i) for i in np.argwhere(~finite)[0])
            raise InputError(f"clip frame {f} joint {j} has a non-finite value")
        big = np.abs(arr).max(axis=(2, 3)) > MAX_MAGNITUDE
        if big.any():
            f, j = (int(i) for i in np.argwhere(big)[0])
            raise InputError(f"clip frame {f} joint {j} has an entry beyond +-{MAX_MAGNITUDE:g}")
        if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)):
            raise InputError(f"fps must be a positive number, got {fps!r}")
        if not (np.isfinite(fps) and fps > 0):
            raise InputError(f"fps must be a finite number > 0, got {fps!r}")
        arr.setflags(write=False)
        self.frames: NDArray[np.float64] = arr
        self.fps = float(fps)

    @property
    def frame_count(self) -> int:
        """Number of sampled frames F."""
        return int(self.frames.shape[0])

    @property
    def joint_count(self) -> int:
        """Number of joints J (skinning matrices per frame)."""
        return int(self.frames.shape[1])

    @property
    def duration(self) -> float:
        """Seconds from the first frame to the last ((F - 1) / fps; 0 for a single frame)."""
        return (self.frame_count - 1) / self.fps

    def __repr__(self) -> str:
        return (
            f"AnimationClip({self.frame_count} frames x {self.joint_count} joints, "
            f"{self.fps:g} fps, {self.duration:.4g} s)"
        )

    def frame_positions(self, times: NDArray[np.float64]) -> NDArray[np.float64]:
        """Where ``times`` (seconds, finite) fall in the clip, in frames in [0, F - 1):
        wrapped by the duration, snapped to whole frames within :data:`SNAP`."""
        last = self.frame_count - 1
        if last == 0:
            return np.zeros_like(times)
        u = np.mod(times * self.fps, last)
        r = np.rint(u)
        u = np.where(np.abs(u - r) < SNAP, r, u)
        u[u >= last] = 0.0  # wrapped onto the end: the start of the next loop
        return u
