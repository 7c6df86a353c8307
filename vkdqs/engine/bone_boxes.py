"""Conservative boxes of skinned meshes from per-bone boxes: no skinning pass (numpy only).

Computed once per mesh (:class:`BoneBoxes`): each bone's box of the rest vertices it moves (in
the bind space the skinning matrices map from), how far morph targets can move them, which
bones share a vertex, and for centers of rotation each bone's box of centers. Per pose,
:meth:`BoneBoxes.box` transforms every bone's box by its matrix and takes the union, widened
where the method's blend can leave the bones' images. Each rule is a bound, proved below, so
the box always contains the skinned mesh (tested against the GPU and the float64 references);
a pose outside a rule's assumptions gives None, and callers use the exact box from the GPU
(:meth:`vkdqs.Skinner.bounds`).

Rules (the registry's :attr:`~vkdqs.methods.SkinningMethod.box_rule`):

``"affine"`` (LBS)
    A vertex's position ``sum_k w_k M_k v`` with weights >= 0 summing to 1 is a convex
    combination of the points ``M_k v``, each inside the box of bone k's box under ``M_k``; so
    it lies in the union box.
``"rigid"`` (DQS, rigid bones)
    DQ blending commutes with multiplying every bone by one unit DQ, so the blended transform is
    ``M_p E`` with ``E`` the normalized blend of the relative transforms ``M_p^-1 M_k``, ``p``
    the vertex's first (heaviest) influence, against which the shaders correct signs. Every
    relative rotation within angle ``theta`` < 180 degrees of the identity keeps ``E``'s rotation
    within ``theta`` and the blend's norm at least ``cos(theta / 2)``; with coordinates centred
    at bone p's box centre ``c``, ``|E(v) - v| <= 2 sin(theta / 2) |v - c| + max_k |M_k c - M_p
    c| / cos(theta / 2)``. So bone p's transformed box widened by that amount (``theta`` and the
    maximum over the bones sharing a vertex with p) holds every vertex whose first influence is
    p, and the union holds the mesh.
``"mixed"`` (LBS/DQS blend)
    ``(1 - b) LBS + b DQS`` is a convex combination of a point in the affine box and one in the
    rigid box: the rigid rule's box (which contains the affine one) holds it.
``"about_centers"`` (optimized centers of rotation)
    ``R (v - c) + sum_k w_k M_k c``: the second term lies in the affine box of the centers, the
    first has length ``|v - c|``; the affine box of the bones' boxes of centers, widened by the
    largest ``|v - c|``.

Vertices without weight stay at rest and are in the box as they are. Morph targets widen each
bone's box by ``sum_t |w_t| max |delta_t|`` over its vertices, per axis. Every box is widened by
a relative 1e-5 of the coordinates for float32 rounding on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..mesh import SkinnedMesh

__all__ = ["ROUNDING", "BoneBoxes"]

#: Relative margin for float32 rounding: the GPU's vertices are within it of the exact ones.
ROUNDING = 1e-5
#: The rigid rule's largest relative rotation between bones that share a vertex (degrees):
#: past it the bound grows as 1 / cos(theta / 2) and a box is no longer worth it.
MAX_RELATIVE_ANGLE = 170.0


def _segment_boxes(keys: NDArray, points: NDArray, count: int) -> tuple[NDArray, NDArray]:
    """Per key in ``range(count)``, the (lo, hi) of ``points`` with that key; keys without
    points get an empty box (lo = +inf, hi = -inf)."""
    lo = np.full((count, points.shape[1]), np.inf)
    hi = np.full((count, points.shape[1]), -np.inf)
    if len(keys):
        order = np.argsort(keys, kind="stable")
        k, p = keys[order], points[order]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        lo[k[starts]] = np.minimum.reduceat(p, starts, axis=0)
        hi[k[starts]] = np.maximum.reduceat(p, starts, axis=0)
    return lo, hi


class _Boxes:
    """Static boxes of some bones: their indices, centres, half sizes and radii (live only)."""

    def __init__(self, lo: NDArray, hi: NDArray) -> None:
        live = np.isfinite(lo).all(axis=1)
        self.index = np.flatnonzero(live)
        self.lo, self.hi = lo[live], hi[live]
        self.center = 0.5 * (self.lo + self.hi)
        self.half = 0.5 * (self.hi - self.lo)

    def moved(
        self, rot: NDArray, move: NDArray, grow: NDArray | None
    ) -> tuple[NDArray, NDArray, NDArray]:
        """Under each bone's rotation/linear part ``rot`` ([G,] B, 3, 3) and translation
        ``move`` ([G,] B, 3): the moved centres and half sizes (Arvo 1990), and the half sizes
        before moving, each box widened by ``grow`` ([G,] B, 3) first."""
        half = self.half if grow is None else self.half + grow[..., self.index, :]
        r = rot[..., self.index, :, :]
        # elementwise products and sums: numpy's matmul is slow on stacks of 3x3 matrices
        c = (r * self.center[:, None, :]).sum(axis=-1) + move[..., self.index, :]
        h = (np.abs(r) * half[..., None, :]).sum(axis=-1)
        return c, h, half


@dataclass(frozen=True, eq=False)
class BoneBoxes:
    """What a mesh's conservative boxes need, computed once (:meth:`of`); :meth:`box` per pose.

    Attributes
    ----------
    moving : per bone, the box of the rest vertices it moves (the affine rule)
    leading : per bone, the box of the vertices whose first (heaviest) influence it is (the
        rigid rule)
    centers : per bone, the box of its vertices' centers of rotation, or None
    morph : ndarray, (B, M, 3)
        Per bone and morph target, the largest |delta| per axis over the bone's vertices.
    pairs : ndarray of int, (K, 2)
        Bones (first influence, other influence) that share a vertex, sorted by the first.
    still : ndarray, (2 + M, 3) or None
        The box of the vertices without weight (they stay at rest) and each target's reach on
        them, or None.
    center_reach : float
        The largest ``|v - c|`` over the vertices (with centers).
    """

    moving: _Boxes
    leading: _Boxes
    centers: _Boxes | None
    morph: NDArray[np.float64]
    pairs: NDArray[np.int64]
    still: NDArray[np.float64] | None
    center_reach: float = 0.0

    @classmethod
    def of(cls, mesh: SkinnedMesh, bone_count: int, centers: ArrayLike | None = None) -> BoneBoxes:
        """The per-bone boxes of ``mesh`` for a skeleton of ``bone_count`` bones (vectorized:
        one sort of the (vertex, slot) influences)."""
        p = mesh.positions.astype(np.float64)
        j, w = mesh.joints.astype(np.int64), mesh.weights
        n, slots = j.shape
        used = w > 0
        vert = np.broadcast_to(np.arange(n)[:, None], (n, slots))[used]
        bone = j[used]
        moving = _Boxes(*_segment_boxes(bone, p[vert], bone_count))
        weighted = used[:, 0]
        leading = _Boxes(*_segment_boxes(j[weighted, 0], p[weighted], bone_count))
        m = mesh.morph_target_count
        morph = np.zeros((bone_count, m, 3))
        targets = mesh.morph_positions
        if m and targets is not None:
            reach = np.abs(targets.astype(np.float64)).transpose(1, 0, 2)  # (N, M, 3)
            _, top = _segment_boxes(bone, reach[vert].reshape(len(vert), -1), bone_count)
            morph = np.where(np.isfinite(top), top, 0.0).reshape(bone_count, m, 3)
        first = np.broadcast_to(j[:, :1], (n, slots))[used]
        pairs = np.unique(np.stack([first, bone], axis=1), axis=0)  # sorted by the first
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        still = None
        if (~weighted).any():
            rest = p[~weighted]
            reach_still = (
                np.abs(targets[:, ~weighted]).max(axis=1)
                if m and targets is not None
                else np.zeros((m, 3))
            )
            still = np.concatenate([[rest.min(axis=0), rest.max(axis=0)], reach_still])
        boxes_of_centers, center_reach = None, 0.0
        if centers is not None:
            c = np.asarray(centers, np.float64)
            boxes_of_centers = _Boxes(*_segment_boxes(bone, c[vert], bone_count))
            center_reach = float(np.linalg.norm(p - c, axis=1).max(initial=0.0))
        return cls(moving, leading, boxes_of_centers, morph, pairs, still, center_reach)

    def box(
        self, rule: str | None, matrices: ArrayLike, morph_weights: ArrayLike | None = None
    ) -> NDArray[np.float64] | None:
        """A (2, 3) box that holds the mesh skinned by ``matrices`` ((B, 4, 4), in the method's
        rule ``rule``), morph targets weighted by ``morph_weights``; None when the rule does not
        bound this pose (no rule, or bones sharing a vertex turned by more than
        :data:`MAX_RELATIVE_ANGLE` relative to each other)."""
        if rule is None:
            return None
        mw = None if morph_weights is None else np.asarray(morph_weights, np.float64)[None]
        out = self.boxes(rule, np.asarray(matrices, np.float64)[None], mw)[0]
        return None if np.isnan(out).any() else out

    def boxes(
        self, rule: str, matrices: ArrayLike, morph_weights: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """:meth:`box` of G poses at once: ``matrices`` (G, B, 4, 4), ``morph_weights`` (G, M)
        or None; (G, 2, 3), NaN for a pose the rule does not bound."""
        mats = np.asarray(matrices, np.float64)
        rot, move = mats[..., :3, :3], mats[..., :3, 3]
        grow = None
        mw = None if morph_weights is None else np.abs(np.asarray(morph_weights, np.float64))
        if mw is not None and self.morph.shape[1] and mw.any():
            grow = np.einsum("gm,bmk->gbk", mw, self.morph)  # (G, B, 3)
        count = len(mats)
        if rule == "about_centers":
            if self.centers is None:
                return np.full((count, 2, 3), np.nan)
            spread = 0.0 if grow is None else grow.max(axis=(1, 2)) * 3**0.5
            reach = self.center_reach + np.broadcast_to(spread, (count,))
            c, h, _ = self.centers.moved(rot, move, None)
            return self._finish(c - h, c + h, reach, mw)
        if rule == "affine":
            c, h, _ = self.moving.moved(rot, move, grow)
            return self._finish(c - h, c + h, np.zeros(count), mw)
        if rule not in ("rigid", "mixed"):
            raise ValueError(f"unknown box rule {rule!r}")
        return self._rigid(rot, move, grow, self.pairs, MAX_RELATIVE_ANGLE, mw)

    def box_between(
        self, rule: str | None, first: ArrayLike, second: ArrayLike
    ) -> NDArray[np.float64] | None:
        """A (2, 3) box that holds the mesh skinned by every blend of two poses (B, 4, 4) that
        the crowd sampler makes between two frames; None where no rule holds.

        LBS rows are blended linearly, so the skinned vertices move on straight lines: the
        union of both poses' boxes. Dual quaternions are blended per bone along the shortest arc
        and normalized, so a vertex's blend is a DQ blend, with weights >= 0, of its bones'
        transforms in both poses, made relative to its first bone's blend ``B_p`` (the shaders'
        sign reference), which lies between ``M_p`` in the two poses. With ``Theta`` the largest
        rotation between ``p`` and a bone sharing its vertices (in either pose, both ways) and
        ``Delta`` bone p's own turn between the poses, every rotation relative to ``B_p`` is
        within ``theta = Theta + Delta / 2``; below 180 degrees every sign agrees, and the
        rigid rule's bound about ``B_p`` plus how far ``B_p`` moves bone p's box from the first
        pose gives the widening (see :mod:`vkdqs.engine.bone_boxes`).
        """
        if rule is None:
            return None
        f, g = np.asarray(first, np.float64), np.asarray(second, np.float64)
        if rule in ("affine", "about_centers"):
            a, b = self.box(rule, f), self.box(rule, g)
            if a is None or b is None:
                return None
            return np.stack([np.minimum(a[0], b[0]), np.maximum(a[1], b[1])])
        if rule not in ("rigid", "mixed"):
            raise ValueError(f"unknown box rule {rule!r}")
        box = self._rigid_between(f, g)
        if box is None or rule == "rigid":
            return box
        lbs = self.box_between("affine", f, g)  # blend: also its LBS part
        assert lbs is not None
        return np.stack([np.minimum(box[0], lbs[0]), np.maximum(box[1], lbs[1])])

    def _rigid_between(self, f: NDArray, g: NDArray) -> NDArray[np.float64] | None:
        lead = self.leading
        idx = lead.index
        rf, rg, tf, tg = f[:, :3, :3], g[:, :3, :3], f[:, :3, 3], g[:, :3, 3]
        c, h, half = lead.moved(rf, tf, None)  # bone boxes in the first pose
        radius = np.sqrt((half**2).sum(axis=1))
        center = lead.center

        def angle(ra: NDArray, rb: NDArray) -> NDArray:
            cos = ((ra * rb).sum(axis=(1, 2)) - 1.0) / 2.0
            return np.arccos(np.clip(cos, -1.0, 1.0))

        # bone p's own turn and move between the poses
        delta = angle(rf[idx], rg[idx])
        moved_g = np.matmul(rg[idx], center[:, :, None])[:, :, 0] + tg[idx]
        step = np.sqrt(((moved_g - c) ** 2).sum(axis=1))
        big_theta = delta.copy()
        turn = delta.copy()  # the largest own turn of p's partners (k = p too)
        reach = step.copy()  # |M_k c - M_p,f c| over partners k in both poses (k = p too)
        if len(self.pairs):
            a, b = self.pairs[:, 0], self.pairs[:, 1]
            rows = np.searchsorted(idx, a)
            starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
            worst = np.max([angle(ra[a], rb[b]) for ra in (rf, rg) for rb in (rf, rg)], axis=0)
            big_theta[rows[starts]] = np.maximum(
                big_theta[rows[starts]], np.maximum.reduceat(worst, starts)
            )
            own = angle(rf[b], rg[b])
            turn[rows[starts]] = np.maximum(turn[rows[starts]], np.maximum.reduceat(own, starts))
            cp = center[rows]
            far = np.max(
                [
                    np.sqrt(
                        (((np.matmul(r[b], cp[:, :, None])[:, :, 0] + t[b]) - c[rows]) ** 2).sum(
                            axis=1
                        )
                    )
                    for r, t in ((rf, tf), (rg, tg))
                ],
                axis=0,
            )
            reach[rows[starts]] = np.maximum(reach[rows[starts]], np.maximum.reduceat(far, starts))
        theta = big_theta + delta / 2.0
        # every partner's blend stays on one side of B_p's hemisphere (its sign never flips)
        if np.degrees((theta + turn).max(initial=0.0)) > MAX_RELATIVE_ANGLE:
            return None
        # |B_p c - M_p,f c| <= step / cos(delta / 2): the pivot's own blend
        pivot = step / np.cos(delta / 2.0)
        widen = (
            2.0 * np.sin(theta / 2.0) * radius
            + (reach + pivot) / np.cos(theta / 2.0)
            + 2.0 * np.sin(delta / 2.0) * radius
            + pivot
        )
        out = self._finish(
            (c - h - widen[:, None])[None], (c + h + widen[:, None])[None], np.zeros(1), None
        )[0]
        return None if np.isnan(out).any() else out

    def _rigid(
        self,
        rot: NDArray,
        move: NDArray,
        grow: NDArray | None,
        pairs: NDArray,
        max_angle: float,
        mw: NDArray | None,
    ) -> NDArray[np.float64]:
        """The rigid rule for G poses (``rot`` (G, B', 3, 3), ``move`` (G, B', 3)): each bone's
        box of the vertices it leads, widened by its bound over ``pairs`` (sorted by the leading
        bone; the others may index past the skeleton, into further bones); (G, 2, 3), NaN where
        a relative turn passes ``max_angle``."""
        lead = self.leading
        c, h, half = lead.moved(rot, move, grow)
        count, leads = len(rot), len(lead.index)
        widen = np.zeros((count, leads))
        bad = np.zeros(count, bool)
        if len(pairs):
            a, b = pairs[:, 0], pairs[:, 1]
            # pairs are sorted by a, and every a leads a vertex: rows of `lead` in that order
            rows = np.searchsorted(lead.index, a)
            starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
            flat = rot.reshape(count, -1, 9)
            cos = (np.einsum("gpk,gpk->gp", flat[:, a], flat[:, b]) - 1.0) / 2.0  # tr(R_a^T R_b)
            theta_pairs = np.arccos(np.clip(cos, -1.0, 1.0))
            theta = np.zeros((count, leads))
            theta[:, rows[starts]] = np.maximum.reduceat(theta_pairs, starts, axis=1)
            bad = np.degrees(theta.max(axis=1)) > max_angle
            center = lead.center[rows]
            moved_b = (rot[:, b] * center[:, None, :]).sum(axis=-1) + move[:, b]
            dist = np.sqrt(((moved_b - c[:, rows]) ** 2).sum(axis=2))
            delta = np.zeros((count, leads))
            delta[:, rows[starts]] = np.maximum.reduceat(dist, starts, axis=1)
            radius = np.sqrt((half**2).sum(axis=-1))
            widen = 2.0 * np.sin(theta / 2.0) * radius + delta / np.cos(theta / 2.0)
        out = self._finish(c - h - widen[..., None], c + h + widen[..., None], np.zeros(count), mw)
        out[bad] = np.nan
        return out

    def _finish(
        self, lo: NDArray, hi: NDArray, reach: NDArray, mw: NDArray | None
    ) -> NDArray[np.float64]:
        """(G, 2, 3): the union of each pose's bone boxes (G, L, 3) and the still vertices'
        box, widened by ``reach`` (G,) and the rounding margin; NaN when there is no box."""
        count = len(lo)
        if self.still is not None:
            g = np.zeros((count, 3)) if mw is None or len(self.still) == 2 else mw @ self.still[2:]
            lo = np.concatenate([lo, (self.still[0] - g)[:, None]], axis=1)
            hi = np.concatenate([hi, (self.still[1] + g)[:, None]], axis=1)
        if lo.shape[1] == 0:
            return np.full((count, 2, 3), np.nan)
        r = np.asarray(reach, np.float64)[:, None]
        out = np.stack([lo.min(axis=1) - r, hi.max(axis=1) + r], axis=1)
        size = np.maximum(np.abs(out).max(axis=(1, 2)), (out[:, 1] - out[:, 0]).max(axis=1))
        margin = ROUNDING * np.maximum(size, 1e-30)
        out[:, 0] -= margin[:, None]
        out[:, 1] += margin[:, None]
        return out
