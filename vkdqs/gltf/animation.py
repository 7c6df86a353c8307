"""Decoded animation channels and their sampling (STEP, LINEAR with shortest-path slerp, and
CUBICSPLINE), vectorized over channels and times."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vkdqs.errors import InputError


@dataclass(frozen=True, eq=False)
class Channel:
    """One decoded animation channel (translation, rotation or scale of one node).

    Attributes
    ----------
    node : int
    path : str
        ``"translation"``, ``"rotation"`` or ``"scale"``.
    interpolation : str
        ``"LINEAR"``, ``"STEP"`` or ``"CUBICSPLINE"``.
    times : ndarray of float64, [K]
        Strictly increasing key times in seconds.
    values : ndarray of float64, [K, 3] or [K, 4]
        Key values; rotations are normalized.
    in_tangents, out_tangents : ndarray of float64, [K, 3|4] or None
        CUBICSPLINE tangents (per second, before scaling by the key interval).
    """

    node: int
    path: str
    interpolation: str
    times: NDArray[np.float64]
    values: NDArray[np.float64]
    in_tangents: NDArray[np.float64] | None = None
    out_tangents: NDArray[np.float64] | None = None


_STEP, _LINEAR, _CUBIC = 0, 1, 2


class Animation:
    """An animation: channels sampled together, vectorized over channels and times.

    Channels are padded into one ``[C, K]`` key array (``K`` = the most keys of any channel), so a
    sample is a handful of numpy operations whatever the number of channels.

    Attributes
    ----------
    name : str
    channels : tuple of Channel
    duration : float
        Last key time over all channels (including ignored morph-weight channels), in seconds.
    ignored_channels : int
        Morph-target ``weights`` channels (and channels without a target node), not sampled.
    """

    def __init__(
        self,
        name: str,
        channels: tuple[Channel, ...],
        *,
        duration: float,
        ignored_channels: int = 0,
    ) -> None:
        self.name = name
        self.channels = channels
        self.duration = float(duration)
        self.ignored_channels = ignored_channels
        c = len(channels)
        k = max((len(ch.times) for ch in channels), default=1)
        # Padding times with +inf keeps `times <= t` false past a channel's last key.
        self._times = np.full((c, k), np.inf)
        self._count = np.array([len(ch.times) for ch in channels], dtype=np.int64)
        self._values = np.zeros((c, k, 4))
        self._in = np.zeros((c, k, 4))
        self._out = np.zeros((c, k, 4))
        for i, ch in enumerate(channels):  # once per load, over channels
            n, w = ch.values.shape
            self._times[i, :n] = ch.times
            self._values[i, :n, :w] = ch.values
            if ch.in_tangents is not None and ch.out_tangents is not None:
                self._in[i, :n, :w] = ch.in_tangents
                self._out[i, :n, :w] = ch.out_tangents
        codes = {"STEP": _STEP, "LINEAR": _LINEAR, "CUBICSPLINE": _CUBIC}
        self._interp = np.array([codes[ch.interpolation] for ch in channels], dtype=np.int64)
        self._is_rot = np.array([ch.path == "rotation" for ch in channels], dtype=bool)
        paths = np.array([ch.path for ch in channels], dtype=object)
        nodes = np.array([ch.node for ch in channels], dtype=np.int64)
        self._targets = {
            p: (np.flatnonzero(paths == p), nodes[paths == p])
            for p in ("translation", "rotation", "scale")
        }

    def __repr__(self) -> str:
        return (
            f"Animation({self.name!r}, {len(self.channels)} channels, "
            f"duration {self.duration:.4g} s)"
        )

    def sample(self, time: ArrayLike, /) -> NDArray[np.float64]:
        """Sample every channel at ``time`` (clamped to each channel's first/last key).

        Parameters
        ----------
        time : float or array_like, [...]
            Seconds.

        Returns
        -------
        ndarray, [..., C, 4]
            One row per channel, in :attr:`channels` order: rotations as unit quaternions, and
            translations/scales in ``[:3]`` with ``[3] = 0``.
        """
        t = np.asarray(time, dtype=np.float64)
        if not np.isfinite(t).all():
            raise InputError(f"time must be finite, got {time!r}")
        shape = t.shape
        t = t.reshape(-1, 1)  # [T, 1]
        c = len(self.channels)
        if c == 0:
            return np.zeros((*shape, 0, 4))
        rows = np.arange(c)
        last = self._count - 1
        # Index of the last key at or before t, per channel: a count, not a per-channel search.
        k0 = np.clip((self._times[None] <= t[..., None]).sum(axis=-1) - 1, 0, last)  # [T, C]
        k1 = np.minimum(k0 + 1, last)
        t0 = self._times[rows, k0]
        t1 = self._times[rows, k1]
        dt = np.where(k1 > k0, t1 - t0, 0.0)
        u = np.clip((t - t0) / np.where(dt > 0, dt, 1.0), 0.0, 1.0)
        u = np.where(dt > 0, u, 0.0)[..., None]  # [T, C, 1]
        v0 = self._values[rows, k0]
        v1 = self._values[rows, k1]

        lerp = v0 + u * (v1 - v0)
        slerp = _slerp(v0, v1, u)
        linear = np.where(self._is_rot[:, None], slerp, lerp)

        # Hermite spline with tangents scaled by the key interval, as the spec writes it.
        u2, u3 = u * u, u * u * u
        d = dt[..., None]
        cubic = (
            (2 * u3 - 3 * u2 + 1) * v0
            + d * (u3 - 2 * u2 + u) * self._out[rows, k0]
            + (-2 * u3 + 3 * u2) * v1
            + d * (u3 - u2) * self._in[rows, k1]
        )
        norm = np.linalg.norm(cubic, axis=-1, keepdims=True)
        cubic_rot = cubic / np.where(norm > 0, norm, 1.0)
        cubic = np.where(self._is_rot[:, None] & (norm > 0), cubic_rot, cubic)

        mode = self._interp[:, None]
        out = np.where(mode == _STEP, v0, np.where(mode == _LINEAR, linear, cubic))
        return out.reshape(*shape, c, 4)


def _slerp(q0: NDArray, q1: NDArray, u: NDArray) -> NDArray:
    """Shortest-path slerp of unit quaternions ``[..., 4]`` at ``u [..., 1]``."""
    d = np.sum(q0 * q1, axis=-1, keepdims=True)
    # q and -q are the same rotation; flipping q1 takes the short way round.
    q1 = np.where(d < 0, -q1, q1)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    s = np.sin(theta)
    # Nearly equal keys: sin(theta) -> 0, so fall back to lerp (then normalize).
    near = s < 1e-6
    s_safe = np.where(near, 1.0, s)
    w0 = np.where(near, 1.0 - u, np.sin((1.0 - u) * theta) / s_safe)
    w1 = np.where(near, u, np.sin(u * theta) / s_safe)
    q = w0 * q0 + w1 * q1
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    return q / np.where(n > 0, n, 1.0)
