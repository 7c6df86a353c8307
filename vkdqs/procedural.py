"""Procedural skinned meshes and poses for tests, demos and benchmarks (pure numpy).

* :func:`candy_wrapper` + :func:`twist_pose`: the classic LBS failure case, a capped cylinder
  twisted about its own axis. LBS collapses the middle ring to a point near 180 degrees; DQS keeps
  the radius. :func:`ring_radii` and :func:`mesh_volume` measure it.
* :func:`tube` + :func:`bone_chain_pose`: a long open tube of exactly ``n`` vertices bound to a
  chain of bones with up to 4 unsorted influences, for scaling tests and benchmarks.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vkdqs.errors import InputError
from vkdqs.mesh import MAX_INFLUENCES, SkinnedMesh

__all__ = [
    "bend_pose",
    "bone_chain_pose",
    "candy_wrapper",
    "mesh_volume",
    "ring_radii",
    "tube",
    "twist_pose",
]


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise InputError(message)


def _quad_triangles(a: NDArray, b: NDArray, c: NDArray, d: NDArray) -> NDArray:
    """Two triangles (a, b, c), (b, d, c) per quad; caller orders corners for the winding."""
    return np.stack([a, b, c, b, d, c], axis=-1).reshape(-1, 3)


def candy_wrapper(
    *,
    length: float = 2.0,
    radius: float = 0.5,
    rings: int = 33,
    segments: int = 32,
    blend: float = 0.5,
) -> SkinnedMesh:
    """A closed, capped cylinder along +x bound to 2 bones: the "candy wrapper" test.

    Bone 0 drives the ``x < length/2`` half and bone 1 the ``x > length/2`` half; both are meant to
    rotate about the x axis (see :func:`twist_pose`), on which the joint ``(length/2, 0, 0)`` lies.
    The weight of bone 1 is a smoothstep of ``x`` over a band of width ``blend * length`` centred
    at ``length/2`` (0 below, 1 above), bone 0 gets the rest. With odd ``rings`` one ring lies at
    exactly ``x = length/2`` and has weights 0.5 / 0.5.

    Vertex layout (a contract that tests and :func:`ring_radii` rely on), ``R = rings``,
    ``S = segments``:

    * ``[0, R*S)``: the side, ring-major. Ring ``r``, segment ``s`` is vertex ``r*S + s`` at
      ``x = length * r / (R - 1)``, angle ``2 pi s / S`` (``y = radius cos``, ``z = radius sin``),
      with the radial normal.
    * ``[R*S, R*S + S)``: rim of the ``x = 0`` cap (duplicates of ring 0, normal ``-x``); then its
      centre vertex ``R*S + S``.
    * ``[R*S + S + 1, R*S + 2S + 1)``: rim of the ``x = length`` cap (normal ``+x``); then its
      centre vertex ``R*S + 2S + 1``. ``N = R*S + 2S + 2`` in all.

    Triangles are wound counter-clockwise seen from outside, so the right-hand-rule normals point
    outwards and :func:`mesh_volume` is positive. Welding the duplicated rim vertices by position
    gives a closed (watertight) surface.

    Parameters
    ----------
    length, radius : float, keyword-only
        Cylinder size, both > 0.
    rings : int, keyword-only
        Rings along the length, >= 2 (odd for a ring at the middle).
    segments : int, keyword-only
        Vertices around each ring, >= 3.
    blend : float, keyword-only
        Width of the weight transition as a fraction of ``length``, in ``(0, 1]``.

    Returns
    -------
    SkinnedMesh
    """
    _require(length > 0 and radius > 0, f"length and radius must be > 0, got {length}, {radius}")
    _require(int(rings) == rings and rings >= 2, f"rings must be an int >= 2, got {rings}")
    _require(int(segments) == segments and segments >= 3, f"segments must be >= 3, got {segments}")
    _require(0 < blend <= 1, f"blend must be in (0, 1], got {blend}")
    rings, segments = int(rings), int(segments)

    theta = 2.0 * np.pi * np.arange(segments) / segments
    cos, sin = np.cos(theta), np.sin(theta)
    x = length * np.arange(rings) / (rings - 1)
    side_p = np.stack(
        np.broadcast_arrays(x[:, None], radius * cos[None, :], radius * sin[None, :]), axis=-1
    ).reshape(-1, 3)
    side_n = np.tile(np.stack([np.zeros(segments), cos, sin], axis=-1), (rings, 1))

    def cap(x_cap: float, sign: float) -> tuple[NDArray, NDArray]:
        rim = np.stack([np.full(segments, x_cap), radius * cos, radius * sin], axis=-1)
        p = np.concatenate([rim, [[x_cap, 0.0, 0.0]]])
        n = np.tile([sign, 0.0, 0.0], (segments + 1, 1))
        return p, n

    cap0_p, cap0_n = cap(0.0, -1.0)
    cap1_p, cap1_n = cap(length, 1.0)
    positions = np.concatenate([side_p, cap0_p, cap1_p])
    normals = np.concatenate([side_n, cap0_n, cap1_n])

    # Side quads: corners a=(r,s), b=(r,s+1), c=(r+1,s), d=(r+1,s+1). At angle 0, s+1 moves
    # towards +z and r+1 towards +x, so (a, b, c) has normal cross(z, x) = +y: outwards.
    r = np.arange(rings - 1)[:, None]
    s = np.arange(segments)[None, :]
    s1 = (s + 1) % segments
    a, b = r * segments + s, r * segments + s1
    c, d = a + segments, b + segments
    side_t = _quad_triangles(a.ravel(), b.ravel(), c.ravel(), d.ravel())

    k = np.arange(segments)
    k1 = (k + 1) % segments
    base0 = rings * segments
    centre0 = base0 + segments
    base1 = centre0 + 1
    centre1 = base1 + segments
    # Seen from +x the rim runs counter-clockwise with k, so (centre, k, k+1) faces +x; the
    # x = 0 cap faces -x and takes the opposite order.
    cap0_t = np.stack([np.full(segments, centre0), base0 + k1, base0 + k], axis=-1)
    cap1_t = np.stack([np.full(segments, centre1), base1 + k, base1 + k1], axis=-1)
    indices = np.concatenate([side_t, cap0_t, cap1_t])

    lo = 0.5 * length * (1.0 - blend)
    t = np.clip((positions[:, 0] - lo) / (blend * length), 0.0, 1.0)
    w1 = t * t * (3.0 - 2.0 * t)
    joints = np.tile(np.array([0, 1]), (len(positions), 1))
    weights = np.stack([1.0 - w1, w1], axis=-1)
    return SkinnedMesh(positions, normals, joints, weights, indices)


def _rotation_x(angle_rad: float) -> NDArray[np.float64]:
    c, s = np.cos(angle_rad), np.sin(angle_rad)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def twist_pose(angle_deg: float, *, bone_count: int = 2) -> NDArray[np.float64]:
    """Skinning matrices that twist a :func:`candy_wrapper` about its axis.

    Parameters
    ----------
    angle_deg : float
        Twist of bones ``1..`` in degrees, right-handed about +x.
    bone_count : int, keyword-only
        Number of matrices, >= 1.

    Returns
    -------
    ndarray, [bone_count, 4, 4]
        Rigid matrices: bone 0 is the identity, bones ``1..`` rotate by ``angle_deg`` about the
        x axis through the origin (which contains the joint, so no translation is needed).
    """
    _require(int(bone_count) == bone_count and bone_count >= 1, f"bad bone_count {bone_count}")
    _require(np.isfinite(angle_deg), f"angle_deg must be finite, got {angle_deg}")
    out = np.tile(np.eye(4), (int(bone_count), 1, 1))
    out[1:, :3, :3] = _rotation_x(np.radians(angle_deg))
    return out


def bend_pose(angle_deg: float, *, length: float = 2.0, bone_count: int = 2) -> NDArray[np.float64]:
    """Skinning matrices that bend a :func:`candy_wrapper` at its joint.

    Parameters
    ----------
    angle_deg : float
        Bend of bones ``1..`` in degrees, right-handed about +z (perpendicular to the cylinder)
        through the joint ``(length/2, 0, 0)``: positive angles lift the far end towards +y.
    length : float, keyword-only
        As passed to :func:`candy_wrapper`, > 0.
    bone_count : int, keyword-only
        Number of matrices, >= 1.

    Returns
    -------
    ndarray, [bone_count, 4, 4]
        Rigid matrices: bone 0 is the identity, bones ``1..`` rotate about the joint.
    """
    _require(int(bone_count) == bone_count and bone_count >= 1, f"bad bone_count {bone_count}")
    _require(np.isfinite(angle_deg), f"angle_deg must be finite, got {angle_deg}")
    _require(length > 0, f"length must be > 0, got {length}")
    a = np.radians(angle_deg)
    c, s = np.cos(a), np.sin(a)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    joint = np.array([0.5 * length, 0.0, 0.0])
    out = np.tile(np.eye(4), (int(bone_count), 1, 1))
    out[1:, :3, :3] = rot
    out[1:, :3, 3] = joint - rot @ joint
    return out


def ring_radii(positions: ArrayLike, *, rings: int = 33, segments: int = 32) -> NDArray[np.float64]:
    """Mean distance from the x axis of each side ring of a :func:`candy_wrapper` layout.

    Parameters
    ----------
    positions : array_like, [N, 3]
        Rest or skinned positions in the candy-wrapper vertex layout (side rings first).
    rings, segments : int, keyword-only
        As passed to :func:`candy_wrapper`.

    Returns
    -------
    ndarray, [rings]
    """
    p = np.asarray(positions, dtype=np.float64)
    _require(
        p.ndim == 2 and p.shape[1] == 3 and p.shape[0] >= rings * segments,
        f"positions must have shape (N >= {rings * segments}, 3), got shape {p.shape}",
    )
    side = p[: rings * segments].reshape(rings, segments, 3)
    return np.hypot(side[..., 1], side[..., 2]).mean(axis=1)


def mesh_volume(positions: ArrayLike, indices: ArrayLike) -> float:
    """Signed volume enclosed by a closed triangle mesh (divergence theorem).

    Parameters
    ----------
    positions : array_like, [N, 3]
    indices : array_like of int, [M] or [M/3, 3]
        Triangles; counter-clockwise seen from outside gives a positive volume.

    Returns
    -------
    float
    """
    p = np.asarray(positions, dtype=np.float64)
    tri = np.asarray(indices).reshape(-1, 3)
    a, b, c = p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]
    # Each triangle spans a tetrahedron with the origin of signed volume a . (b x c) / 6.
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0)


def tube(
    n_vertices: int,
    *,
    bone_count: int = 64,
    influences: int = 4,
    length: float = 10.0,
    radius: float = 1.0,
    segments: int = 32,
    seed: int = 0,
) -> SkinnedMesh:
    """An open tube along +y with exactly ``n_vertices`` vertices, bound to a chain of bones.

    Vertices are ring-major (vertex ``i`` is ring ``i // segments``, segment ``i % segments``);
    the last ring may be partial, and triangles are emitted only for quads whose 4 corners exist.
    Rings are spaced evenly over ``y in [0, length]``; vertices sit at
    ``(radius cos, y, radius sin)`` with radial normals.

    Bone ``j`` spans ``y in [j, j+1] * length / bone_count`` (see :func:`bone_chain_pose`). Each
    vertex takes its ``influences`` nearest bones (by bone centre) with a smooth compact falloff
    ``(1 - (d/h)^2)^2``, ``h = max(influences/2, 1)`` bone lengths, which reaches zero just where
    a bone leaves the window, so weights are continuous along the tube. Weights are normalized,
    and their slot order is shuffled with ``seed`` so :class:`SkinnedMesh` has real sorting to do.

    Parameters
    ----------
    n_vertices : int
        Exact number of vertices, >= 1.
    bone_count : int, keyword-only
        Bones in the chain, >= ``influences``.
    influences : int, keyword-only
        Slots per vertex, 1 to 4.
    length, radius : float, keyword-only
    segments : int, keyword-only
        Vertices per full ring, >= 3.
    seed : int, keyword-only
        Seed of the slot shuffle.

    Returns
    -------
    SkinnedMesh
    """
    _require(int(n_vertices) == n_vertices and n_vertices >= 1, f"bad n_vertices {n_vertices}")
    _require(1 <= influences <= MAX_INFLUENCES, f"influences must be in [1, 4], got {influences}")
    _require(
        int(bone_count) == bone_count and bone_count >= influences,
        f"bone_count must be an int >= influences ({influences}), got {bone_count}",
    )
    _require(int(segments) == segments and segments >= 3, f"segments must be >= 3, got {segments}")
    _require(length > 0 and radius > 0, f"length and radius must be > 0, got {length}, {radius}")
    n, segs, bones, k = int(n_vertices), int(segments), int(bone_count), int(influences)

    n_rings = -(-n // segs)
    ring, seg = np.divmod(np.arange(n), segs)
    y = ring * (length / max(n_rings - 1, 1))
    # Trig per segment, then gather: far cheaper than cos/sin of a million angles.
    theta = (2.0 * np.pi / segs) * np.arange(segs)
    cos, sin = np.cos(theta)[seg], np.sin(theta)[seg]
    positions = np.empty((n, 3))
    positions[:, 0], positions[:, 1], positions[:, 2] = radius * cos, y, radius * sin
    normals = np.empty((n, 3))
    normals[:, 0], normals[:, 1], normals[:, 2] = cos, 0.0, sin

    # Quads between ring r and r+1. At angle 0 segment+1 moves towards +z and ring+1 towards +y;
    # (a, c, b) has normal cross(y, z) = +x, outwards.
    r = np.arange(max(n_rings - 1, 0))[:, None]
    s = np.arange(segs)[None, :]
    a = (r * segs + s).ravel()
    b = (r * segs + (s + 1) % segs).ravel()
    c, d = a + segs, b + segs
    complete = np.maximum(c, d) < n
    indices = _quad_triangles(a[complete], c[complete], b[complete], d[complete])

    # Continuous bone coordinate: bone j's centre is at f = j. The k integers nearest to f start
    # at ceil(f - k/2), clipped to the chain.
    f = y / (length / bones) - 0.5
    start = np.clip(np.ceil(f - 0.5 * k), 0, bones - k).astype(np.int32)
    # Slot order is shuffled (so SkinnedMesh has real sorting to do) by drawing, per vertex, one
    # of the k! orders of the window offsets 0..k-1; weights are then computed in that order.
    all_perms = np.array(list(itertools.permutations(range(k))), dtype=np.int32)
    perm = all_perms[np.random.default_rng(seed).integers(len(all_perms), size=n)]
    joints = start[:, None] + perm
    h = max(0.5 * k, 1.0)
    weights = (joints - f[:, None]) / h
    weights *= weights
    np.subtract(1.0, weights, out=weights)
    np.clip(weights, 0.0, None, out=weights)
    weights *= weights
    # The nearest bone is at most half a bone away and h >= 1, so every row has a positive sum.
    weights /= weights.sum(axis=1, keepdims=True)
    return SkinnedMesh(positions, normals, joints, weights, indices)


def bone_chain_pose(
    bone_count: int, angle_deg: float, *, length: float = 10.0
) -> NDArray[np.float64]:
    """Skinning matrices that bend the :func:`tube` bone chain smoothly in the xy plane.

    Bone ``j`` has its head at ``(0, j * length / bone_count, 0)`` at rest. Bone 0 stays at rest;
    each following joint bends by ``angle_deg / (bone_count - 1)`` about +z, so bone ``j`` is
    rotated by ``j * angle_deg / (bone_count - 1)`` about its own head, and the heads follow the
    bent chain (forward kinematics), so neighbouring bones stay connected.

    Parameters
    ----------
    bone_count : int
        Bones in the chain, >= 1.
    angle_deg : float
        Total bend between the first and the last bone, in degrees.
    length : float, keyword-only
        Chain length, as passed to :func:`tube`.

    Returns
    -------
    ndarray, [bone_count, 4, 4]
        Rigid matrices mapping rest space to posed space.
    """
    _require(int(bone_count) == bone_count and bone_count >= 1, f"bad bone_count {bone_count}")
    _require(np.isfinite(angle_deg), f"angle_deg must be finite, got {angle_deg}")
    bones = int(bone_count)
    seg = length / bones
    step = np.radians(angle_deg) / max(bones - 1, 1)
    theta = step * np.arange(bones)
    c, s = np.cos(theta), np.sin(theta)
    # Posed head of bone j: sum of the rotated bone vectors (0, seg, 0) of bones 0..j-1.
    tail = np.stack([-s * seg, c * seg], axis=-1)
    head = np.concatenate([np.zeros((1, 2)), np.cumsum(tail, axis=0)[:-1]])
    rest_head_y = seg * np.arange(bones)

    out = np.tile(np.eye(4), (bones, 1, 1))
    out[:, 0, 0], out[:, 0, 1] = c, -s
    out[:, 1, 0], out[:, 1, 1] = s, c
    # M_j = T(head_j) Rz(theta_j) T(-rest_head_j): rotate about the bone's own head.
    out[:, 0, 3] = head[:, 0] + s * rest_head_y
    out[:, 1, 3] = head[:, 1] - c * rest_head_y
    return out
