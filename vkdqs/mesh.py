"""A validated, GPU-ready skinned mesh (pure numpy; no Vulkan here).

:class:`SkinnedMesh` checks its inputs once, with messages naming the argument, vertex, slot and
value, and stores read-only arrays in the layout the shaders read: float32 positions and unit
normals, 4 influence slots per vertex (8 when any vertex has more than 4 non-zero weights; uint32
joints, float32 weights) sorted by weight, and flat uint32 triangle indices.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vkdqs.dq import _as_array, _rescale, _true_length
from vkdqs.errors import MAX_MAGNITUDE, InputError, LimitError
from vkdqs.geometry import vertex_normals

__all__ = ["MAX_INFLUENCES", "SkinnedMesh"]

#: Influence slots of the common path (one ``ivec4`` of joints, one ``vec4`` of weights).
SLOTS = 4
#: The most influences a vertex may have (the 8-influence path: two ``ivec4``/``vec4`` pairs).
MAX_INFLUENCES = 8
_UINT32_MAX = np.iinfo(np.uint32).max


def _describe(a: np.ndarray) -> str:
    return f"shape {a.shape} {a.dtype}"


def _real_array(x: ArrayLike, name: str) -> NDArray[np.float64]:
    a = _as_array(x, name)
    if a.dtype == bool or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise InputError(f"{name} must be a real numeric array, got {_describe(a)}")
    return a


def _int_array(x: ArrayLike, name: str) -> np.ndarray:
    a = _as_array(x, name)
    # bool is not an np.integer subtype, so True/False joints are rejected here too.
    if not np.issubdtype(a.dtype, np.integer):
        raise InputError(f"{name} must be an integer array, got {a.dtype}")
    return a


def _first(mask: np.ndarray) -> tuple[int, ...]:
    """Index of the first True element of ``mask`` (caller checked that there is one)."""
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _sort_influences(w: NDArray, j: NDArray, slots: int) -> tuple[NDArray, NDArray]:
    """Sort slots by weight descending (stable) and pad/compact to ``slots`` (4 or 8) slots.

    Slot 0 becomes the largest influence, which the shaders use as the antipodality reference.
    The caller has checked that at most ``slots`` weights per vertex are non-zero, so compacting
    drops only zeros. Returns (weights [N, slots], joints [N, slots]).
    """
    n, k = w.shape
    if k > SLOTS or slots != SLOTS:
        # Rare path: a general stable argsort (-w keeps ties in input order).
        if k < slots:
            w = np.hstack([w, np.zeros((n, slots - k))])
            j = np.hstack([j, np.zeros((n, slots - k), dtype=j.dtype)])
        order = np.argsort(-w, axis=1, kind="stable")[:, :slots]
        return np.take_along_axis(w, order, axis=1), np.take_along_axis(j, order, axis=1)
    # K <= 4: a bubble-sort network over the slot columns (at most 6 compare-swaps) on
    # slot-major copies is several times faster than a per-row argsort for millions of vertices.
    # Swapping only on strict "<" keeps equal weights in input order (stable).
    ws = np.zeros((SLOTS, n))
    js = np.zeros((SLOTS, n), dtype=np.int64)
    ws[:k] = w.T
    js[:k] = j.T
    for last in range(k - 1, 0, -1):
        for c in range(last):
            swap = ws[c] < ws[c + 1]
            ws[c], ws[c + 1] = np.maximum(ws[c], ws[c + 1]), np.minimum(ws[c], ws[c + 1])
            js[c], js[c + 1] = np.where(swap, js[c + 1], js[c]), np.where(swap, js[c], js[c + 1])
    return ws.T, js.T


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


class SkinnedMesh:
    """A validated skinned triangle mesh with up to 8 influences per vertex.

    Parameters
    ----------
    positions : array_like, [N, 3]
        Rest positions; finite. ``N >= 1``.
    normals : array_like, [N, 3], or None
        Rest normals; finite and non-zero (normalized here). None computes smooth, area-weighted
        normals from the triangles (:func:`vkdqs.geometry.vertex_normals`; a vertex on no
        triangle of non-zero area gets ``(0, 0, 1)``), which needs ``indices``.
    joints : array_like of int, [N, K] or [N]
        Bone index per influence slot, ``K >= 1``; any integer dtype, no negatives. A 1-D array
        is one influence per vertex (``[N, 1]``).
    weights : array_like, [N, K] or [N]
        Weight per slot, the shape of ``joints``; finite and ``>= 0``. Any ``K`` is accepted as
        long as no vertex has more than 8 non-zero weights.
    indices : array_like of int, [M] or [M/3, 3], optional
        Triangle vertex indices in ``[0, N)``; a flat array needs ``M % 3 == 0``.
    dqs_blend : array_like, [N], optional, keyword-only
        Per-vertex DQS fraction in ``[0, 1]`` for ``method="blend"``: positions
        ``(1 - b) LBS + b DQS`` (Maya's "weight blended" skinning).
    morph_positions, morph_normals : array_like, [M, N, 3], optional, keyword-only
        Morph targets (blend shapes): per target, the position and normal deltas added to the
        rest vertex, weighted, before skinning (:func:`vkdqs.reference.morph`). Either may be given
        alone (a target that moves only normals, or only positions); both must agree on M.
    uvs : array_like, [N, 2], optional, keyword-only
        Texture coordinates (glTF ``TEXCOORD_0``: ``v = 0`` is the top of the image); finite.
    colors : array_like, [N, 3] or [N, 4], optional, keyword-only
        Linear vertex colours (glTF ``COLOR_0``), finite; alpha 1 when RGB. The renderer
        multiplies them into the material's colour.

    Attributes
    ----------
    positions : ndarray of float32, [N, 3]
    normals : ndarray of float32, [N, 3]
        Unit length.
    joints : ndarray of uint32, [N, S]
        ``S = 4``, or 8 when some vertex has more than 4 non-zero weights.
    weights : ndarray of float32, [N, S]
    indices : ndarray of uint32, [M] or None
    dqs_blend : ndarray of float32, [N] or None
    morph_positions, morph_normals : ndarray of float32, [M, N, 3] or None
    uvs : ndarray of float32, [N, 2] or None
    colors : ndarray of float32, [N, 4] or None

    Notes
    -----
    Per vertex, influences are sorted by weight descending (stable, so ties keep their input
    order): slot 0, the shaders' antipodality reference, holds the largest weight. Slots are padded
    to S with joint 0 / weight 0, weights are renormalized to sum to 1, and the joint of every
    zero-weight slot is set to 0 so unused slots never index past the skeleton.

    A vertex whose weights are all zero is allowed and stays all-zero: both DQS and LBS (GPU and
    :mod:`vkdqs.dq` reference) leave it at its rest pose.

    All stored arrays are read-only.

    Raises
    ------
    InputError
        A wrong shape or dtype (naming the argument, the expected and the received shape/dtype),
        mismatched vertex counts, a non-finite value, a zero normal, a negative joint or weight, an
        out-of-range index (each naming vertex/slot or triangle and the value), or no normals
        and no indices to compute them from.
    LimitError
        A vertex with more than 8 non-zero weights, or a used joint index beyond uint32.
    """

    def __init__(
        self,
        positions: ArrayLike,
        normals: ArrayLike | None,
        joints: ArrayLike,
        weights: ArrayLike,
        indices: ArrayLike | None = None,
        *,
        dqs_blend: ArrayLike | None = None,
        morph_positions: ArrayLike | None = None,
        morph_normals: ArrayLike | None = None,
        uvs: ArrayLike | None = None,
        colors: ArrayLike | None = None,
    ) -> None:
        pos = self._check_positions(positions)
        n = pos.shape[0]
        tri = None if indices is None else self._check_indices(indices, n)
        nrm = self._check_normals(normals, pos, tri)
        jnt, wgt = self._check_influences(joints, weights, pos.shape)
        j4, w4 = self._pack_influences(jnt, wgt)

        self.positions: NDArray[np.float32] = _frozen(pos.astype(np.float32))
        self.normals: NDArray[np.float32] = _frozen(nrm.astype(np.float32))
        self.joints: NDArray[np.uint32] = _frozen(j4)
        self.weights: NDArray[np.float32] = _frozen(w4.astype(np.float32))
        self.indices: NDArray[np.uint32] | None = None if tri is None else _frozen(tri)
        self.dqs_blend: NDArray[np.float32] | None = (
            None if dqs_blend is None else _frozen(self._check_dqs_blend(dqs_blend, n))
        )
        mp, mn = self._check_morphs(morph_positions, morph_normals, n)
        self.morph_positions: NDArray[np.float32] | None = mp
        self.morph_normals: NDArray[np.float32] | None = mn
        self.uvs: NDArray[np.float32] | None = (
            None if uvs is None else _frozen(self._check_rows(uvs, n, "uvs", (2,)))
        )
        self.colors: NDArray[np.float32] | None = (
            None if colors is None else _frozen(self._check_colors(colors, n))
        )

    @staticmethod
    def _check_positions(positions: ArrayLike) -> NDArray[np.float64]:
        pos = _real_array(positions, "positions")
        if pos.ndim != 2 or pos.shape[1] != 3 or pos.shape[0] < 1:
            raise InputError(f"positions must have shape (N, 3) with N >= 1, got {_describe(pos)}")
        pos = pos.astype(np.float64, copy=False)
        if not np.isfinite(pos).all():
            v, c = _first(~np.isfinite(pos))
            raise InputError(f"positions[{v}, {c}] = {pos[v, c]}: positions must be finite")
        if np.abs(pos).max() > MAX_MAGNITUDE:
            v, c = _first(np.abs(pos) > MAX_MAGNITUDE)
            raise LimitError(
                f"positions[{v}, {c}] = {pos[v, c]:g} exceeds +-{MAX_MAGNITUDE:g}: the GPU "
                "computes in float32 and larger coordinates would overflow"
            )
        return pos

    @staticmethod
    def _check_normals(
        normals: ArrayLike | None, pos: NDArray[np.float64], tri: NDArray[np.uint32] | None
    ) -> NDArray[np.float64]:
        """Unit normals: the given ones checked and normalized, or smooth ones from ``tri``."""
        n = pos.shape[0]
        if normals is None:
            if tri is None:
                raise InputError(
                    "normals is None and there are no indices: pass (N, 3) normals, or triangle "
                    "indices to compute smooth normals from"
                )
            normals = vertex_normals(pos, tri, weighting="area")
        nrm = _real_array(normals, "normals")
        if nrm.ndim != 2 or nrm.shape[1] != 3:
            raise InputError(f"normals must have shape (N, 3), got {_describe(nrm)}")
        if nrm.shape[0] != n:
            raise InputError(
                f"normals has {nrm.shape[0]} rows but positions has {n}: "
                f"normals {nrm.shape} vs positions {pos.shape}"
            )
        nrm = nrm.astype(np.float64, copy=False)
        if not np.isfinite(nrm).all():
            v, c = _first(~np.isfinite(nrm))
            raise InputError(f"normals[{v}, {c}] = {nrm[v, c]}: normals must be finite")
        # Components beyond ~1e154 would overflow when squared (and normalize to zero): such
        # normals are divided by their largest component first.
        scaled, length, scale = _rescale(nrm)
        short = _true_length(length, scale) < 1e-12
        if np.any(short):
            v = int(np.argmax(short))
            raise InputError(f"normals[{v}] = {nrm[v].tolist()} has zero length")
        return scaled / length[:, None]

    @staticmethod
    def _check_influences(
        joints: ArrayLike, weights: ArrayLike, shape: tuple[int, ...]
    ) -> tuple[np.ndarray, NDArray[np.float64]]:
        """``joints`` and ``weights`` as ``(N, K)`` arrays (a 1-D one is ``(N, 1)``), joints
        non-negative integers, weights finite and ``>= 0``; ``shape`` is the positions'."""
        n = shape[0]
        jnt = _int_array(joints, "joints")
        if jnt.ndim == 1:  # one influence per vertex: (N,) -> (N, 1)
            jnt = jnt[:, None]
        if jnt.ndim != 2 or jnt.shape[1] < 1:
            raise InputError(f"joints must have shape (N, K) with K >= 1, got {_describe(jnt)}")
        if jnt.shape[0] != n:
            raise InputError(
                f"joints has {jnt.shape[0]} rows but positions has {n}: "
                f"joints {jnt.shape} vs positions {shape}"
            )
        wgt = _real_array(weights, "weights")
        if wgt.ndim == 1:
            wgt = wgt[:, None]
        if wgt.shape != jnt.shape:
            raise InputError(
                f"weights must have the shape of joints {jnt.shape}, got {_describe(wgt)}"
            )
        if np.issubdtype(jnt.dtype, np.signedinteger) and np.any(jnt < 0):
            v, s = _first(jnt < 0)
            raise InputError(f"joints[{v}, {s}] = {jnt[v, s]}: joint indices must be >= 0")
        wgt = wgt.astype(np.float64, copy=False)
        if not np.isfinite(wgt).all():
            v, s = _first(~np.isfinite(wgt))
            raise InputError(f"weights[{v}, {s}] = {wgt[v, s]}: weights must be finite")
        if np.any(wgt < 0):
            v, s = _first(wgt < 0)
            raise InputError(f"weights[{v}, {s}] = {wgt[v, s]}: weights must be >= 0")
        return jnt, wgt

    @staticmethod
    def _pack_influences(
        jnt: np.ndarray, wgt: NDArray[np.float64]
    ) -> tuple[NDArray[np.uint32], NDArray[np.float64]]:
        """The checked influences in S = 4 or 8 slots, sorted by weight, unused slots on joint
        0, weights summing to 1 (all-zero rows stay zero): (joints uint32, weights float64)."""
        used = wgt > 0
        counts = used.sum(axis=1)
        if np.any(counts > MAX_INFLUENCES):
            v = int(np.argmax(counts > MAX_INFLUENCES))
            raise LimitError(
                f"vertex {v} has {counts[v]} non-zero weights; vkdqs takes at most "
                f"{MAX_INFLUENCES} influences per vertex"
            )
        # Only joints that carry weight reach the GPU; unused slots are zeroed below.
        if np.any(used & (jnt > _UINT32_MAX)):
            v, s = _first(used & (jnt > _UINT32_MAX))
            raise LimitError(f"joints[{v}, {s}] = {jnt[v, s]} does not fit in uint32")

        slots = SLOTS if counts.max() <= SLOTS else MAX_INFLUENCES
        w4, j4 = _sort_influences(wgt, jnt, slots)
        # Zero-weight slots get joint 0 so they never index out of range (the shader still reads
        # the bone: 0 * bone = 0, but a wild index would be out-of-bounds).
        j4 = np.where(w4 > 0, j4, 0).astype(np.uint32)
        # Divide by the row maximum first: a sum of huge weights (1e308) would overflow to inf.
        top = w4.max(axis=1, keepdims=True)
        w4 /= np.where(top > 0, top, 1.0)
        total = w4.sum(axis=1)
        w4 /= np.where(total > 0, total, 1.0)[:, None]
        return j4, w4

    @classmethod
    def _check_morphs(
        cls, morph_positions: ArrayLike | None, morph_normals: ArrayLike | None, n: int
    ) -> tuple[NDArray[np.float32] | None, NDArray[np.float32] | None]:
        """Both kinds of morph deltas, checked, read-only, with the same number of targets."""
        mp = cls._check_morph(morph_positions, "morph_positions", n)
        mn = cls._check_morph(morph_normals, "morph_normals", n)
        if mp is not None and mn is not None and len(mp) != len(mn):
            raise InputError(
                f"morph_positions has {len(mp)} targets but morph_normals has {len(mn)}: "
                "both must have shape (M, N, 3) with the same M"
            )
        return mp, mn

    @classmethod
    def _check_colors(cls, colors: ArrayLike, n: int) -> NDArray[np.float32]:
        """``colors`` as RGBA float32 ``(N, 4)`` (alpha 1 for RGB)."""
        c = cls._check_rows(colors, n, "colors", (3, 4))
        return c if c.shape[1] == 4 else np.hstack([c, np.ones((n, 1), c.dtype)])

    @staticmethod
    def _check_morph(deltas: ArrayLike | None, name: str, n: int) -> NDArray[np.float32] | None:
        if deltas is None:
            return None
        d = _real_array(deltas, name)
        if d.ndim != 3 or d.shape[1:] != (n, 3) or d.shape[0] < 1:
            raise InputError(
                f"{name} must have shape (M, {n}, 3) with M >= 1 (one (N, 3) array of deltas "
                f"per morph target), got {_describe(d)}"
            )
        d = d.astype(np.float64, copy=False)
        if not np.isfinite(d).all():
            t, v, c = _first(~np.isfinite(d))
            raise InputError(f"{name}[{t}, {v}, {c}] = {d[t, v, c]}: deltas must be finite")
        if np.abs(d).max() > MAX_MAGNITUDE:
            t, v, c = _first(np.abs(d) > MAX_MAGNITUDE)
            raise LimitError(
                f"{name}[{t}, {v}, {c}] = {d[t, v, c]:g} exceeds +-{MAX_MAGNITUDE:g}: the GPU "
                "computes in float32"
            )
        return _frozen(d.astype(np.float32))

    @staticmethod
    def _check_rows(
        x: ArrayLike, n: int, name: str, widths: tuple[int, ...]
    ) -> NDArray[np.float32]:
        a = _real_array(x, name)
        if a.ndim != 2 or a.shape[0] != n or a.shape[1] not in widths:
            shapes = " or ".join(f"({n}, {w})" for w in widths)
            raise InputError(f"{name} must have shape {shapes}, got {_describe(a)}")
        a = a.astype(np.float64, copy=False)
        if not np.isfinite(a).all():
            v, c = _first(~np.isfinite(a))
            raise InputError(f"{name}[{v}, {c}] = {a[v, c]}: {name} must be finite")
        if np.abs(a).max() > MAX_MAGNITUDE:
            v, c = _first(np.abs(a) > MAX_MAGNITUDE)
            raise LimitError(f"{name}[{v}, {c}] = {a[v, c]:g} exceeds +-{MAX_MAGNITUDE:g}")
        return a.astype(np.float32)

    @staticmethod
    def _check_dqs_blend(dqs_blend: ArrayLike, n: int) -> NDArray[np.float32]:
        b = _real_array(dqs_blend, "dqs_blend")
        if b.shape != (n,):
            raise InputError(
                f"dqs_blend must have shape ({n},) (one value a vertex), got {_describe(b)}"
            )
        b = b.astype(np.float64, copy=False)
        bad = ~((b >= 0.0) & (b <= 1.0))  # NaN fails both
        if np.any(bad):
            v = int(np.argmax(bad))
            raise InputError(f"dqs_blend[{v}] = {b[v]}: DQS blend values must be in [0, 1]")
        return b.astype(np.float32)

    @staticmethod
    def _check_indices(indices: ArrayLike, n: int) -> NDArray[np.uint32]:
        idx = _int_array(indices, "indices")
        if idx.ndim == 1:
            if idx.shape[0] % 3 != 0:
                raise InputError(
                    f"indices must have shape (M,) with M divisible by 3 or (T, 3), "
                    f"got {_describe(idx)}"
                )
            tri = idx.reshape(-1, 3)
        elif idx.ndim == 2 and idx.shape[1] == 3:
            tri = idx
        else:
            raise InputError(f"indices must have shape (M,) or (T, 3), got {_describe(idx)}")
        bad = (tri < 0) | (tri >= n)
        if np.any(bad):
            t, c = _first(bad)
            where = f"indices[{t}, {c}]" if idx.ndim == 2 else f"indices[{3 * t + c}]"
            raise InputError(
                f"{where} = {tri[t, c]} (triangle {t}) is out of range for {n} vertices"
            )
        return tri.reshape(-1).astype(np.uint32)

    # ------------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        tris = "no" if self.indices is None else f"{len(self.indices) // 3}"
        return (
            f"SkinnedMesh({self.vertex_count} vertices, {tris} triangles, "
            f"{self.influence_count} influences, max joint {self.max_joint})"
        )

    @property
    def vertex_count(self) -> int:
        """Number of vertices ``N``."""
        return int(self.positions.shape[0])

    @property
    def morph_target_count(self) -> int:
        """Number of morph targets ``M`` (0 without any)."""
        for d in (self.morph_positions, self.morph_normals):
            if d is not None:
                return int(d.shape[0])
        return 0

    def check_morph_weights(self, weights: ArrayLike, name: str = "morph_weights") -> NDArray:
        """``weights`` as a validated float32 ``(..., M)`` array for this mesh's targets.

        Raises :class:`InputError` for a mesh without targets, a wrong last axis, or a
        non-finite weight (naming ``name`` and the index).
        """
        m = self.morph_target_count
        if m == 0:
            raise InputError(
                f"{name} given, but the mesh has no morph targets "
                "(SkinnedMesh(..., morph_positions=...))"
            )
        w = _real_array(weights, name)
        if w.ndim < 1 or w.shape[-1] != m:
            raise InputError(
                f"{name} must have shape (..., {m}) (one weight per morph target), "
                f"got {_describe(w)}"
            )
        w = w.astype(np.float64, copy=False)
        if not np.isfinite(w).all():
            idx = _first(~np.isfinite(w))
            where = ", ".join(map(str, idx))
            raise InputError(f"{name}[{where}] = {w[idx]}: morph weights must be finite")
        if np.abs(w).max(initial=0.0) > MAX_MAGNITUDE:
            idx = _first(np.abs(w) > MAX_MAGNITUDE)
            where = ", ".join(map(str, idx))
            raise InputError(f"{name}[{where}] = {w[idx]:g} exceeds +-{MAX_MAGNITUDE:g}")
        return w.astype(np.float32)

    @property
    def influence_count(self) -> int:
        """Largest number of non-zero weights on any vertex (0 to 8)."""
        return int((self.weights > 0).sum(axis=1).max())

    @property
    def slots(self) -> int:
        """Influence slots per vertex in the stored arrays: 4, or 8."""
        return int(self.joints.shape[1])

    def first_vertex_over(self, influences: int) -> tuple[int, int] | None:
        """The first vertex with more than ``influences`` non-zero weights, and its count."""
        counts = (self.weights > 0).sum(axis=1)
        over = counts > influences
        if not over.any():
            return None
        v = int(np.argmax(over))
        return v, int(counts[v])

    @property
    def max_joint(self) -> int:
        """Largest joint index used with a non-zero weight, or -1 if no weight is non-zero."""
        used = self.joints[self.weights > 0]
        return int(used.max()) if used.size else -1

    @property
    def bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Axis-aligned bounding box of the rest positions: ``(min [3], max [3])``."""
        p = self.positions.astype(np.float64)
        return p.min(axis=0), p.max(axis=0)

    @property
    def extent(self) -> float:
        """Length of the bounding box diagonal."""
        lo, hi = self.bounds
        return float(np.linalg.norm(hi - lo))

    def check_joints(self, bone_count: int) -> None:
        """Check that every used joint index exists in a skeleton of ``bone_count`` bones.

        Parameters
        ----------
        bone_count : int
            Number of bones the pose provides.

        Raises
        ------
        InputError
            Naming the first vertex and (sorted) slot whose non-zero-weight joint is
            ``>= bone_count``.
        """
        if isinstance(bone_count, bool) or not isinstance(bone_count, (int, np.integer)):
            raise InputError(f"bone_count must be an int, got {type(bone_count).__name__}")
        if bone_count < 0:
            raise InputError(f"bone_count must be >= 0, got {bone_count}")
        bad = (self.weights > 0) & (self.joints >= bone_count)
        if np.any(bad):
            v, s = _first(bad)
            raise InputError(
                f"vertex {v} slot {s} uses joint {self.joints[v, s]} but the skeleton has "
                f"{bone_count} bones"
            )

    def with_dqs_blend(self, blend: float | ArrayLike) -> SkinnedMesh:
        """A copy of this mesh with ``blend`` (a number, or one per vertex in [0, 1]) as its
        per-vertex DQS fraction for ``method="blend"``, everything else the same."""
        b = np.asarray(blend, dtype=np.float64)
        return SkinnedMesh(
            self.positions,
            self.normals,
            self.joints,
            self.weights,
            self.indices,
            dqs_blend=np.broadcast_to(b, (self.vertex_count,)) if b.ndim == 0 else b,
            morph_positions=self.morph_positions,
            morph_normals=self.morph_normals,
            uvs=self.uvs,
            colors=self.colors,
        )
