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


@dataclass(frozen=True, eq=False)
class WeightsChannel:
    """A ``weights`` channel: the morph-target weights of one node's mesh over time.

    Attributes
    ----------
    node : int
    interpolation : str
        ``"LINEAR"``, ``"STEP"`` or ``"CUBICSPLINE"``.
    times : ndarray of float64, [K]
    values : ndarray of float64, [K, M]
    in_tangents, out_tangents : ndarray of float64, [K, M] or None
        CUBICSPLINE tangents.
    """

    node: int
    interpolation: str
    times: NDArray[np.float64]
    values: NDArray[np.float64]
    in_tangents: NDArray[np.float64] | None = None
    out_tangents: NDArray[np.float64] | None = None

    def sample(self, time: float, /) -> NDArray[np.float64]:
        """The (M,) weights at ``time`` seconds (clamped to the first/last key), interpolated
        as glTF says (STEP: the key at or before; LINEAR: lerp; CUBICSPLINE: the Hermite
        spline with tangents scaled by the key interval)."""
        t = float(time)
        if not np.isfinite(t):
            raise InputError(f"time must be finite, got {time!r}")
        times = self.times
        k0 = int(np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 1))
        k1 = min(k0 + 1, len(times) - 1)
        v0, v1 = self.values[k0], self.values[k1]
        dt = times[k1] - times[k0]
        if k1 == k0 or dt <= 0 or self.interpolation == "STEP":
            return v0.copy()
        u = min(max((t - times[k0]) / dt, 0.0), 1.0)
        if self.interpolation == "LINEAR" or self.in_tangents is None or self.out_tangents is None:
            return v0 + u * (v1 - v0)
        u2, u3 = u * u, u * u * u
        return (
            (2 * u3 - 3 * u2 + 1) * v0
            + dt * (u3 - 2 * u2 + u) * self.out_tangents[k0]
            + (-2 * u3 + 3 * u2) * v1
            + dt * (u3 - u2) * self.in_tangents[k1]
        )


_STEP, _LINEAR, _CUBIC = 0, 1, 2


def _pack(
    groups: list[tuple[NDArray | None, ...]], count: NDArray[np.int64], width: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Key arrays end to end in one float64 array, each distinct group of arrays once.

    ``groups[i]`` holds channel ``i``'s arrays (e.g. its in- and out-tangents), each stored in
    its own block of ``width`` columns (zero-padded; None stores ``count[i]`` rows of zeros).
    Channels whose groups are the same arrays share rows. Returns the packed ``[rows, width *
    len(group)]`` array and each channel's first row.
    """
    starts = np.zeros(len(groups), dtype=np.int64)
    seen: dict[tuple[int, ...], int] = {}
    parts: list[tuple[int, tuple[NDArray | None, ...], int]] = []
    total = 0
    for i, group in enumerate(groups):  # over channels, once per animation
        key = tuple(id(a) for a in group)
        shareable = all(a is not None for a in group)
        if shareable and key in seen:
            starts[i] = seen[key]
            continue
        n = int(count[i])
        starts[i] = total
        if shareable:
            seen[key] = total
        parts.append((total, group, n))
        total += n
    packed = np.zeros((total, width * max((len(g) for g in groups), default=1)))
    for row, group, n in parts:  # over distinct key arrays
        for b, a in enumerate(group):
            if a is not None:
                a2 = np.asarray(a, dtype=np.float64).reshape(n, -1)
                packed[row : row + n, b * width : b * width + a2.shape[1]] = a2
    return packed, starts


class Animation:
    """An animation: channels sampled together, vectorized over channels and times.

    The keys of all channels are stored end to end, unpadded, each distinct key array once
    (channels of one sampler, or samplers sharing an input accessor, share their keys), so memory
    follows the keys in the file however unequal the channels are. A sample finds each channel's
    key interval with a binary search vectorized over channels and times: a handful of numpy
    operations per halving, whatever the number of channels.

    Attributes
    ----------
    name : str
    channels : tuple of Channel
    duration : float
        Last key time over all channels (including morph-weight channels), in seconds.
    weight_channels : tuple of WeightsChannel
        The morph-target ``weights`` channels (:meth:`GltfScene.morph_weights` samples them).
    ignored_channels : int
        Channels without a target node, not sampled.

    Raises
    ------
    InputError
        A channel has no keys, or key times that are not finite and strictly increasing.
    """

    def __init__(
        self,
        name: str,
        channels: tuple[Channel, ...],
        *,
        duration: float,
        ignored_channels: int = 0,
        weight_channels: tuple[WeightsChannel, ...] = (),
    ) -> None:
        self.name = name
        self.channels = channels
        self.weight_channels = weight_channels
        self.duration = float(duration)
        self.ignored_channels = ignored_channels
        checked: set[int] = set()
        for i, ch in enumerate(channels):  # over channels (each distinct key array checked once)
            if id(ch.times) in checked:
                continue
            times = np.asarray(ch.times, dtype=np.float64)
            if times.ndim != 1 or len(times) == 0:
                raise InputError(f"channel {i}: times must be a non-empty 1-D array")
            if not np.isfinite(times).all() or np.any(np.diff(times) <= 0):
                raise InputError(f"channel {i}: key times must be finite and strictly increasing")
            checked.add(id(ch.times))
        self._count = np.array([len(ch.times) for ch in channels], dtype=np.int64)
        times, self._tstart = _pack([(ch.times,) for ch in channels], self._count, 1)
        self._times = times[:, 0]
        self._values, self._vstart = _pack([(ch.values,) for ch in channels], self._count, 4)
        # Binary search halvings to find a key among the most keys of a channel.
        self._steps = int(self._count.max(initial=0)).bit_length()
        codes = {"STEP": _STEP, "LINEAR": _LINEAR, "CUBICSPLINE": _CUBIC}
        self._interp = np.array([codes[ch.interpolation] for ch in channels], dtype=np.int64)
        self._is_rot = np.array([ch.path == "rotation" for ch in channels], dtype=bool)
        # Tangents only for CUBICSPLINE channels (zeros for one without them).
        self._cubic = np.flatnonzero(self._interp == _CUBIC)
        tangents = []
        for i in self._cubic:  # over cubic channels
            ch = channels[i]
            has = ch.in_tangents is not None and ch.out_tangents is not None
            tangents.append((ch.in_tangents, ch.out_tangents) if has else (None, None))
        both, self._gstart = _pack(tangents, self._count[self._cubic], 4)
        self._in = np.ascontiguousarray(both[:, :4])
        self._out = np.ascontiguousarray(both[:, 4:]) if both.shape[1] > 4 else self._in
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

    def _keys_at_or_before(self, t: NDArray[np.float64]) -> NDArray[np.int64]:
        """How many keys of each channel are at or before ``t [T, 1]``: ``[T, C]``.

        A binary search over each channel's keys, vectorized over channels and times; the loop
        is over halvings (log2 of the most keys), not over keys or channels.
        """
        lo = np.broadcast_to(self._tstart, (len(t), len(self._tstart))).copy()
        hi = lo + self._count
        top = len(self._times) - 1
        for _ in range(self._steps):
            mid = (lo + hi) >> 1
            after = self._times[np.minimum(mid, top)] > t
            open_ = lo < hi
            lo = np.where(open_ & ~after, mid + 1, lo)
            hi = np.where(open_ & after, mid, hi)
        return lo - self._tstart

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
        last = self._count - 1
        # Index of the last key at or before t, per channel.
        k0 = np.clip(self._keys_at_or_before(t) - 1, 0, last)  # [T, C]
        k1 = np.minimum(k0 + 1, last)
        t0 = self._times[self._tstart + k0]
        t1 = self._times[self._tstart + k1]
        dt = np.where(k1 > k0, t1 - t0, 0.0)
        u = np.clip((t - t0) / np.where(dt > 0, dt, 1.0), 0.0, 1.0)
        u = np.where(dt > 0, u, 0.0)[..., None]  # [T, C, 1]
        v0 = self._values[self._vstart + k0]
        v1 = self._values[self._vstart + k1]

        lerp = v0 + u * (v1 - v0)
        slerp = _slerp(v0, v1, u)
        linear = np.where(self._is_rot[:, None], slerp, lerp)
        out = np.where((self._interp == _STEP)[:, None], v0, linear)

        cc = self._cubic
        if len(cc):
            # Hermite spline with tangents scaled by the key interval, as the spec writes it.
            uc = u[:, cc]
            u2, u3 = uc * uc, uc * uc * uc
            d = dt[:, cc, None]
            g0 = self._gstart + k0[:, cc]
            g1 = self._gstart + k1[:, cc]
            cubic = (
                (2 * u3 - 3 * u2 + 1) * v0[:, cc]
                + d * (u3 - 2 * u2 + uc) * self._out[g0]
                + (-2 * u3 + 3 * u2) * v1[:, cc]
                + d * (u3 - u2) * self._in[g1]
            )
            norm = np.linalg.norm(cubic, axis=-1, keepdims=True)
            cubic_rot = cubic / np.where(norm > 0, norm, 1.0)
            out[:, cc] = np.where(self._is_rot[cc, None] & (norm > 0), cubic_rot, cubic)
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
