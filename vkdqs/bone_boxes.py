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
``"blend"`` (LBS/DQS blend)
    ``(1 - b) LBS + b DQS`` is a convex combination of a point in the affine box and one in the
    rigid box: the rigid rule's box (which contains the affine one) holds it.
``"centers"`` (optimized centers of rotation)
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

from .mesh import SkinnedMesh

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


@dataclass(frozen=True, eq=False)
class BoneBoxes:
    """What a mesh's conservative boxes need, computed once (:meth:`of`).

    Attributes
    ----------
    lo, hi : ndarray, (B, 3)
        Each bone's box of the rest vertices it moves (empty: +inf / -inf).
    first_lo, first_hi : ndarray, (B, 3)
        Each bone's box of the vertices whose first (heaviest) influence it is.
    morph : ndarray, (B, M, 3)
        Per bone and morph target, the largest |delta| per axis over the bone's vertices.
    pairs : ndarray of int, (K, 2)
        Bones (first influence, other influence) that share a vertex.
    still : ndarray, (2, 3) or None
        The box of the vertices without weight (they stay at rest), or None.
    center_lo, center_hi : ndarray, (B, 3), or None
        Per bone the box of its vertices' centers of rotation (``centers`` given).
    center_reach : float
        The largest ``|v - c|`` over the vertices (``centers`` given).
    """

    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    first_lo: NDArray[np.float64]
    first_hi: NDArray[np.float64]
    morph: NDArray[np.float64]
    pairs: NDArray[np.int64]
    still: NDArray[np.float64] | None
    center_lo: NDArray[np.float64] | None = None
    center_hi: NDArray[np.float64] | None = None
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
        lo, hi = _segment_boxes(bone, p[vert], bone_count)
        weighted = used[:, 0]
        first_lo, first_hi = _segment_boxes(j[weighted, 0], p[weighted], bone_count)
        m = mesh.morph_target_count
        morph = np.zeros((bone_count, m, 3))
        if m and mesh.morph_positions is not None:
            reach = np.abs(mesh.morph_positions.astype(np.float64)).transpose(1, 0, 2)  # (N, M, 3)
            _, top = _segment_boxes(bone, reach[vert].reshape(len(vert), -1), bone_count)
            morph = np.where(np.isfinite(top), top, 0.0).reshape(bone_count, m, 3)
        first = np.broadcast_to(j[:, :1], (n, slots))[used]
        pairs = np.unique(np.stack([first, bone], axis=1), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        still = None
        if (~weighted).any():
            rest = p[~weighted]
            if m and mesh.morph_positions is not None:  # still vertices morph too
                grow = np.abs(mesh.morph_positions[:, ~weighted]).max(axis=1)  # (M, 3)
                morph_still = grow
            else:
                morph_still = np.zeros((m, 3))
            still = np.stack([rest.min(axis=0), rest.max(axis=0)])
            still = np.concatenate([still, morph_still])  # rows 2..: per target reach
        extra = {}
        if centers is not None:
            c = np.asarray(centers, np.float64)
            clo, chi = _segment_boxes(bone, c[vert], bone_count)
            extra = {
                "center_lo": clo,
                "center_hi": chi,
                "center_reach": float(np.linalg.norm(p - c, axis=1).max(initial=0.0)),
            }
        return cls(lo, hi, first_lo, first_hi, morph, pairs, still, **extra)

    def box(
        self, rule: str | None, matrices: ArrayLike, morph_weights: ArrayLike | None = None
    ) -> NDArray[np.float64] | None:
        """A (2, 3) box that holds the mesh skinned by ``matrices`` ((B, 4, 4), in the method's
        rule ``rule``), morph targets weighted by ``morph_weights``; None when the rule does not
        bound this pose (no rule, or bones sharing a vertex turned by more than
        :data:`MAX_RELATIVE_ANGLE` relative to each other)."""
        if rule is None:
            return None
        mats = np.asarray(matrices, np.float64)
        grow = np.zeros((len(self.lo), 3))
        mw = None if morph_weights is None else np.abs(np.asarray(morph_weights, np.float64))
        if mw is not None and self.morph.shape[1]:
            grow = np.einsum("bmk,m->bk", self.morph, mw)
        if rule == "centers":
            if self.center_lo is None or self.center_hi is None:
                return None
            reach = self.center_reach + (grow.max(initial=0.0) * np.sqrt(3.0))
            boxes = _moved(self.center_lo, self.center_hi, mats)
            return self._finish(boxes, reach, mw)
        if rule == "affine":
            return self._finish(_moved(self.lo - grow, self.hi + grow, mats), 0.0, mw)
        if rule not in ("rigid", "blend"):
            raise ValueError(f"unknown box rule {rule!r}")
        # rigid: each bone's box of the vertices it leads, widened by its bound
        lo, hi = self.first_lo - grow, self.first_hi + grow
        live = np.isfinite(lo).all(axis=1)
        center = np.where(live[:, None], 0.5 * (lo + hi), 0.0)
        radius = np.where(live, 0.5 * np.linalg.norm(hi - lo, axis=1), 0.0)
        widen = np.zeros(len(lo))
        if len(self.pairs):
            a, b = self.pairs[:, 0], self.pairs[:, 1]
            rel = np.einsum("kji,kjl->kil", mats[a, :3, :3], mats[b, :3, :3])  # R_a^T R_b
            cos = np.clip((np.trace(rel, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
            theta = np.zeros(len(lo))
            np.maximum.at(theta, a, np.arccos(cos))
            if np.degrees(theta.max()) > MAX_RELATIVE_ANGLE:
                return None
            c = center[a]
            moved_a = np.einsum("kij,kj->ki", mats[a, :3, :3], c) + mats[a, :3, 3]
            moved_b = np.einsum("kij,kj->ki", mats[b, :3, :3], c) + mats[b, :3, 3]
            delta = np.zeros(len(lo))
            np.maximum.at(delta, a, np.linalg.norm(moved_b - moved_a, axis=1))
            widen = 2.0 * np.sin(theta / 2.0) * radius + delta / np.cos(theta / 2.0)
        boxes = _moved(lo, hi, mats)
        boxes[0] -= widen[:, None]
        boxes[1] += widen[:, None]
        return self._finish(boxes, 0.0, mw)

    def _finish(
        self, boxes: NDArray[np.float64], reach: float, mw: NDArray | None
    ) -> NDArray[np.float64] | None:
        """The union of (2, B, 3) bone boxes (empty ones skipped) and the still vertices' box,
        widened by ``reach`` and the rounding margin."""
        live = np.isfinite(boxes[0]).all(axis=1) & np.isfinite(boxes[1]).all(axis=1)
        parts = [boxes[:, live]]
        if self.still is not None:
            s = self.still[:2]
            g = 0.0 if mw is None or len(self.still) == 2 else mw @ self.still[2:]
            parts.append(np.stack([s[0] - g, s[1] + g])[:, None])
        allb = np.concatenate(parts, axis=1)
        if allb.shape[1] == 0:
            return None
        out = np.stack([allb[0].min(axis=0) - reach, allb[1].max(axis=0) + reach])
        margin = ROUNDING * max(float(np.abs(out).max()), float((out[1] - out[0]).max()), 1e-30)
        out[0] -= margin
        out[1] += margin
        return out


def _moved(lo: NDArray, hi: NDArray, mats: NDArray) -> NDArray[np.float64]:
    """(2, B, 3): each bone's box [lo, hi] under its affine matrix (empty boxes stay empty)."""
    live = np.isfinite(lo).all(axis=1)
    center = np.where(live[:, None], 0.5 * (lo + hi), 0.0)
    half = np.where(live[:, None], 0.5 * (hi - lo), 0.0)
    c = np.einsum("bij,bj->bi", mats[:, :3, :3], center) + mats[:, :3, 3]
    h = np.einsum("bij,bj->bi", np.abs(mats[:, :3, :3]), half)
    out = np.stack([c - h, c + h])
    out[0, ~live] = np.inf
    out[1, ~live] = -np.inf
    return out
