"""Velocity skinning's float64 reference (Rohmer, Tarini, Kalyanasundaram, Faure and Cani,
"Velocity Skinning for Real-time Stylized Skeletal Animation", Eurographics 2021).

A deformer after any base method: each skinned position ``p`` moves by

    d(p) = sum over its influences k of  w_k * sum over the joints j of k's chain (k, its
           parent, ... the root) of  d_j(p)

where joint ``j``'s term comes from its motion *relative to its parent* (the paper's
hierarchical velocities: the world velocity of a point carried by bone ``k`` is the sum of its
chain's relative motions, :func:`joint_motion`), expressed in world space: a linear velocity
``v_j`` and an angular velocity ``w_j`` about the joint's position ``c_j``:

- floppy, linear: ``-f v_j`` (the vertex lags behind its bones);
- floppy, angular: a rotation of ``p`` about the axis ``w_j`` through ``c_j`` by the angle
  ``-f |w_j x (p - c_j)| / L`` (farther from the axis, more lag; at most ``max_angle``);
- squashy, linear: the volume-preserving stretch ``T = R diag(1 + s, 1/sqrt(1 + s),
  1/sqrt(1 + s)) R^T`` along ``v_j`` with ``s = q |v_j| / L``, about the joint's centre of mass
  ``m_j``: ``(T - I)(p - m_j)``;
- squashy, angular: a stretch by ``1 + s`` along the point's direction of motion about the
  medial axis (``e = a x w``, ``a`` from ``c_j`` to ``m_j``), a squeeze by ``1 / (1 + s)``
  across it, the medial axis kept (``det T = 1``), ``s = q |w_j x (m_j - c_j)| / L`` (the speed of
  the centre of mass: one affine map a joint, so what one joint carries keeps its volume
  exactly; the authors' demo takes each vertex's speed, which changes the volume at first
  order), about ``p``'s foot on the medial axis.

``L`` is the rig's length (:attr:`VelocityRig.scale`, by default the rest mesh's extent): speeds
count in lengths of the character a second, so one set of strengths suits a character in
centimetres and one in metres alike (the paper's strengths are per model).
``f`` and ``q`` are the rig's floppy and squashy strengths. Each vertex's weights and the
influencing bone ``k``'s weights (:class:`VelocityRig`) scale the floppy and the squashy
displacements of ``k``'s chain: a bone weight of 0 turns the effect off for what that bone
carries, a weight of 1/2 halves it. (Weights scale the displacement, not the strength inside
its terms: the effect is then linear in the weights, and each joint's terms are the same for
every vertex, which lets the GPU pass fold the squash and the linear lag of a whole chain into
one affine map a bone, :func:`squash_maps`, and walk each joint of a vertex's chains once.)
Joint ``j``'s centre of mass is that of the rest vertices weighted
by their weights to ``j`` and its descendants, carried rigidly by ``j``'s skinning matrix. The
normals are the base method's (the paper recomputes them from the mesh; a per-vertex
deformer has no neighbours).

With no motion (zero velocities: no previous pose, or the same one) ``d = 0`` exactly, so the
result is the base method's bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...bones import as_matrices
from ...errors import InputError

__all__ = [
    "DEFAULT_FLOPPY",
    "DEFAULT_MAX_ANGLE",
    "DEFAULT_SQUASHY",
    "JointMotion",
    "VelocityRig",
    "chain_sums",
    "chains",
    "joint_motion",
    "squash_maps",
    "subtree_ranges",
    "velocity_deform",
    "velocity_rig",
]

#: Strengths (seconds: floppy vertices lag 0.1 s behind their bones' linear motion; a speed of
#: one rig length a second stretches by 5 %) and the most a vertex's angular lag may turn it
#: (radians), the defaults of :func:`velocity_rig`.
DEFAULT_FLOPPY = 0.1
DEFAULT_SQUASHY = 0.05
DEFAULT_MAX_ANGLE = np.pi / 3


@dataclass(frozen=True, eq=False)
class VelocityRig:
    """What velocity skinning needs of a skeleton and mesh besides the poses
    (:func:`velocity_rig` builds and checks it).

    Attributes
    ----------
    parents : ndarray, int64, (B,)
        Each bone's parent bone, -1 for roots; parents come before children in no particular
        order, but the graph is a forest.
    rest_matrices : ndarray, float64, (B, 4, 4)
        Each bone's rest frame (a glTF skin's inverse bind matrices' inverses): a joint's
        world transform is its skinning matrix times its rest frame.
    floppy, squashy : float
        The strengths (seconds; 0 turns the effect off).
    max_angle : float
        The most the floppy angular lag turns a vertex (radians).
    scale : float
        The rig's length ``L`` (module docstring): angular lag and squash count speeds in
        lengths a second.
    vertex_floppy, vertex_squashy : ndarray, float64, (N,)
        Each vertex's weight of each effect, scaling what the effect moves it (default 1).
    bone_floppy, bone_squashy : ndarray, float64, (B,)
        Each influencing bone's weight of each effect, scaling what its chain's terms move
        (default 1; 0: what it carries does not move with velocity).
    rest_centers : ndarray, float64, (B, 3)
        Each joint's centre of mass at rest: the rest vertices weighted by their weights to it
        and its descendants (the joint's own rest position where no vertex has any).
    """

    parents: NDArray[np.int64]
    rest_matrices: NDArray[np.float64]
    floppy: float
    squashy: float
    max_angle: float
    scale: float
    vertex_floppy: NDArray[np.float64] = field(repr=False)
    vertex_squashy: NDArray[np.float64] = field(repr=False)
    bone_floppy: NDArray[np.float64] = field(repr=False)
    bone_squashy: NDArray[np.float64] = field(repr=False)
    rest_centers: NDArray[np.float64] = field(repr=False)

    @property
    def bone_count(self) -> int:
        """The bones of its skeleton."""
        return len(self.parents)

    @cached_property
    def chains(self) -> NDArray[np.int64]:
        """(B, D): each bone's chain (:func:`chains`; read-only, computed once)."""
        out = chains(self.parents)
        out.flags.writeable = False
        return out

    @cached_property
    def subtree_ranges(self) -> NDArray[np.int64]:
        """(B, 2): each bone's subtree range in a depth-first order (:func:`subtree_ranges`;
        read-only, computed once)."""
        out = subtree_ranges(self.parents)
        out.flags.writeable = False
        return out

    @property
    def depth(self) -> int:
        """The longest chain from a bone to its root, in bones."""
        return int(self.chains.shape[1])


def chains(parents: ArrayLike) -> NDArray[np.int64]:
    """``(B, D)``: each bone's chain (itself, its parent, ... its root), padded with -1 to the
    longest (``D`` bones). Refuses parents out of range and cycles."""
    par = np.asarray(parents, dtype=np.int64).reshape(-1)
    b = len(par)
    if ((par < -1) | (par >= b)).any():
        raise InputError(f"parents must be -1 or bone indices below {b}")
    out = [np.arange(b)]
    cur = out[0]
    for _ in range(b):  # a step per level of the deepest chain, every bone at once
        cur = np.where(cur >= 0, par[np.maximum(cur, 0)], -1)
        if (cur < 0).all():
            return np.stack(out, axis=1)
        out.append(cur)
    raise InputError("parents must form a forest (a bone is its own ancestor)")


def _weights(value: ArrayLike | None, count: int, name: str) -> NDArray[np.float64]:
    if value is None:
        return np.ones(count)
    w = np.asarray(value, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(count, float(w))
    if w.shape != (count,) or not np.isfinite(w).all() or (w < 0).any():
        raise InputError(f"{name} must be ({count},) finite values >= 0, got shape {w.shape}")
    return w


def velocity_rig(
    mesh,
    parents: ArrayLike,
    rest_matrices: ArrayLike,
    *,
    floppy: float = DEFAULT_FLOPPY,
    squashy: float = DEFAULT_SQUASHY,
    max_angle: float = DEFAULT_MAX_ANGLE,
    scale: float | None = None,
    vertex_floppy: ArrayLike | None = None,
    vertex_squashy: ArrayLike | None = None,
    bone_floppy: ArrayLike | None = None,
    bone_squashy: ArrayLike | None = None,
) -> VelocityRig:
    """The :class:`VelocityRig` of ``mesh`` (a :class:`vkdqs.SkinnedMesh`) on a skeleton of
    ``parents`` (B,) and ``rest_matrices`` (B, 4, 4); weights default to 1 (a scalar weights
    every vertex or bone alike); ``scale``: the rig's length (default the rest mesh's extent,
    1 for a mesh of one point)."""
    par = np.asarray(parents, dtype=np.int64).reshape(-1)
    b = len(par)
    chain = chains(par)
    rest = np.asarray(rest_matrices, dtype=np.float64)
    if rest.shape != (b, 4, 4) or not np.isfinite(rest).all():
        raise InputError(f"rest_matrices must be ({b}, 4, 4) finite, got shape {rest.shape}")
    for name, value in (("floppy", floppy), ("squashy", squashy), ("max_angle", max_angle)):
        if not np.isfinite(value) or value < 0:
            raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
    if scale is None:
        scale = float(mesh.extent) or 1.0
    if not np.isfinite(scale) or scale <= 0:
        raise InputError(f"scale must be a finite length > 0, got {scale!r}")
    joints = np.asarray(mesh.joints, dtype=np.int64)
    if joints.size and int(joints.max()) >= b:
        raise InputError(f"the mesh's joints reach bone {int(joints.max())}; parents has {b}")
    n = mesh.vertex_count
    w = np.asarray(mesh.weights, dtype=np.float64)
    p = np.asarray(mesh.positions, dtype=np.float64)
    # per bone: its vertices' weights and weighted positions; per joint: its descendants' sums
    flat = joints.reshape(-1)
    mass = np.bincount(flat, weights=w.reshape(-1), minlength=b)
    moment = np.stack(
        [np.bincount(flat, weights=(w * p[:, k, None]).reshape(-1), minlength=b) for k in range(3)],
        axis=1,
    )
    below = np.zeros((b, b))  # below[j, k]: k is j or a descendant of j
    rows = np.repeat(np.arange(b), chain.shape[1])
    ancestors = chain.reshape(-1)
    keep = ancestors >= 0
    below[ancestors[keep], rows[keep]] = 1.0
    total, first = below @ mass, below @ moment
    joint_rest = rest[:, :3, 3]
    centers = np.where(
        total[:, None] > 0, first / np.where(total > 0, total, 1.0)[:, None], joint_rest
    )
    return VelocityRig(
        par,
        rest,
        float(floppy),
        float(squashy),
        float(max_angle),
        float(scale),
        _weights(vertex_floppy, n, "vertex_floppy"),
        _weights(vertex_squashy, n, "vertex_squashy"),
        _weights(bone_floppy, b, "bone_floppy"),
        _weights(bone_squashy, b, "bone_squashy"),
        centers,
    )


@dataclass(frozen=True)
class JointMotion:
    """Each joint's motion relative to its parent, in world space ((..., B, 3) each): its
    position ``centers``, linear velocity ``linear``, angular velocity ``angular`` (radians a
    second, about ``centers``), and its centre of mass ``masses``, as posed now."""

    centers: NDArray[np.float64]
    linear: NDArray[np.float64]
    angular: NDArray[np.float64]
    masses: NDArray[np.float64]


def _rotation(m: NDArray) -> NDArray:
    """The rotation of each 3x3 ``m`` (polar decomposition; scale and shear left out)."""
    u, _, vt = np.linalg.svd(m)
    r = u @ vt
    flip = np.linalg.det(r) < 0
    if flip.any():
        u = u.copy()
        u[flip, :, -1] *= -1
        r = u @ vt
    return r


def _log(r: NDArray) -> NDArray:
    """The rotation vectors (axis times angle) of rotations ``r`` (..., 3, 3)."""
    cos = np.clip((np.trace(r, axis1=-2, axis2=-1) - 1) / 2, -1.0, 1.0)
    angle = np.arccos(cos)
    axis = np.stack(
        [r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]],
        axis=-1,
    )
    sin = np.sin(angle)
    small = sin < 1e-8
    scale = np.where(small, 0.5, angle / (2 * np.where(small, 1.0, sin)))
    out = axis * scale[..., None]
    near_pi = small & (cos < 0)
    if near_pi.any():  # axis from the symmetric part (R + I) / 2 = a a^T
        s = (r[near_pi] + np.eye(3)) / 2
        col = np.argmax(np.diagonal(s, axis1=-2, axis2=-1), axis=-1)
        a = np.take_along_axis(s, col[:, None, None], axis=-1)[..., 0]
        a /= np.linalg.norm(a, axis=-1, keepdims=True)
        out[near_pi] = a * np.pi
    return out


def _as_matrices(bones: ArrayLike, bone_count: int) -> NDArray[np.float64]:
    m = as_matrices(bones)
    if m.shape[-3:] != (bone_count, 4, 4):
        raise InputError(
            f"velocity skinning takes (…, {bone_count}, 4, 4) joint matrices, got {m.shape}"
        )
    return m


def joint_motion(
    rig: VelocityRig, bones: ArrayLike, previous: ArrayLike | None = None, dt: float = 1.0
) -> JointMotion:
    """The joints' motion at the poses ``bones`` ((..., B, 4, 4) skinning matrices), as the
    difference from the poses ``previous`` (the same shape; None: no motion) over ``dt``
    seconds: each joint's transform relative to its parent (``W_par^-1 W_j``, ``W = M R``
    with ``M`` the skinning matrix and ``R`` the rest frame) changes by a translation ``dt t``
    and a rotation ``exp(dt w)`` (a rotation vector, the smallest); its linear and angular
    velocities ``t`` and ``w`` are turned into world space by the parent's rotation now.
    Scale and shear are left out of the joints' rotations (polar decomposition)."""
    b = rig.bone_count
    now = _as_matrices(bones, b)
    world = now @ rig.rest_matrices
    centers = world[..., :3, 3]
    masses = np.einsum("...ij,...j->...i", now[..., :3, :3], rig.rest_centers) + now[..., :3, 3]
    if previous is None:
        zero = np.zeros_like(centers)
        return JointMotion(centers, zero, zero.copy(), masses)
    if not np.isfinite(dt) or dt <= 0:
        raise InputError(f"dt must be a number of seconds > 0, got {dt!r}")
    before = _as_matrices(previous, b)
    if before.shape != now.shape:
        raise InputError(f"previous must have the shape of bones, {now.shape}; got {before.shape}")
    world_before = before @ rig.rest_matrices
    roots = rig.parents < 0
    par = np.maximum(rig.parents, 0)

    def local(w: NDArray) -> NDArray:
        parent = np.where(roots[:, None, None], np.eye(4), w[..., par, :, :])
        return np.linalg.solve(parent, w), parent

    l_now, parent_now = local(world)
    l_before, _ = local(world_before)
    r_now, r_before = _rotation(l_now[..., :3, :3]), _rotation(l_before[..., :3, :3])
    omega = _log(r_now @ np.swapaxes(r_before, -1, -2)) / dt
    t = (l_now[..., :3, 3] - l_before[..., :3, 3]) / dt
    turn = _rotation(parent_now[..., :3, :3])
    linear = np.einsum("...ij,...j->...i", turn, t)
    angular = np.einsum("...ij,...j->...i", turn, omega)
    return JointMotion(centers, linear, angular, masses)


def _rotate(axis: NDArray, angle: NDArray, u: NDArray) -> NDArray:
    """``u`` rotated about unit ``axis`` by ``angle`` (Rodrigues), row-wise."""
    c, s = np.cos(angle)[..., None], np.sin(angle)[..., None]
    dot = np.sum(axis * u, axis=-1, keepdims=True)
    return u * c + np.cross(axis, u) * s + axis * dot * (1 - c)


def _joint_terms(
    rig: VelocityRig, motion: JointMotion, p: NDArray, j: NDArray
) -> tuple[NDArray, NDArray]:
    """``d_j(p)``'s floppy and squashy parts, each (M, 3), of joints ``j`` (M,) at points ``p``
    (M, 3), the rig's strengths (float64)."""
    f, q = rig.floppy, rig.squashy
    c, v, w, m = (x[j] for x in (motion.centers, motion.linear, motion.angular, motion.masses))
    # linear: floppy lag, and the volume-preserving stretch along v about the centre of mass
    floppy = -f * v
    speed = np.linalg.norm(v, axis=1)
    moving = speed > 0
    u = np.divide(v, speed[:, None], out=np.zeros_like(v), where=moving[:, None])
    s = q * speed / rig.scale
    r = p - m
    along = np.sum(r * u, axis=1)
    squashy = (s * along)[:, None] * u + (1 / np.sqrt(1 + s) - 1)[:, None] * (
        r - along[:, None] * u
    )
    # angular: floppy rotation about the axis through the joint, and the stretch along the
    # point's motion about the medial axis
    rate = np.linalg.norm(w, axis=1)
    turning = rate > 0
    a = np.divide(w, rate[:, None], out=np.zeros_like(w), where=turning[:, None])
    x = p - c
    foot = c + np.sum(x * a, axis=1)[:, None] * a
    vel = np.linalg.norm(np.cross(w, x), axis=1)
    angle = np.minimum(f * vel / rig.scale, rig.max_angle)
    floppy = floppy + _rotate(a, -angle, p - foot) - (p - foot)
    medial = m - c
    length = np.linalg.norm(medial, axis=1)
    am = np.divide(medial, length[:, None], out=np.zeros_like(medial), where=length[:, None] > 0)
    e = np.cross(am, a)
    en = np.linalg.norm(e, axis=1)
    ok = turning & (en > 1e-6) & (length > 0)
    e = np.divide(e, en[:, None], out=np.zeros_like(e), where=ok[:, None])
    k = np.cross(am, e)
    s = np.where(ok, q * np.linalg.norm(np.cross(w, medial), axis=1) / rig.scale, 0.0)
    y = x - np.sum(x * am, axis=1)[:, None] * am  # from the point's foot on the medial axis
    squashy = squashy + (s * np.sum(y * e, axis=1))[:, None] * e
    squashy = squashy + ((1 / (1 + s) - 1) * np.sum(y * k, axis=1))[:, None] * k
    return floppy, squashy


def squash_maps(rig: VelocityRig, motion: JointMotion) -> NDArray[np.float64]:
    """(..., B, 3, 4): each joint's squashy part of ``d_j`` as an affine map of the point
    (``d = M[:, :3] p + M[:, 3]``): both squashes are linear in ``p`` about a point that is the
    same for every vertex (the centre of mass; the joint, the medial axis's directions being
    perpendicular to it), so a chain's squash is the sum of its joints' maps."""
    c, v, w, m = motion.centers, motion.linear, motion.angular, motion.masses
    eye = np.eye(3)

    def unit(x: NDArray) -> tuple[NDArray, NDArray]:
        n = np.linalg.norm(x, axis=-1)
        return np.divide(x, n[..., None], out=np.zeros_like(x), where=n[..., None] > 0), n

    def outer(x: NDArray) -> NDArray:
        return x[..., :, None] * x[..., None, :]

    u, speed = unit(v)
    s = rig.squashy * speed / rig.scale
    uu = outer(u)
    linear = s[..., None, None] * uu + (1 / np.sqrt(1 + s) - 1)[..., None, None] * (eye - uu)
    a, rate = unit(w)
    am, length = unit(m - c)
    e, en = unit(np.cross(am, a))
    ok = (rate > 0) & (en > 1e-6) & (length > 0)
    e = np.where(ok[..., None], e, 0.0)
    k = np.cross(am, e)
    s = np.where(ok, rig.squashy * np.linalg.norm(np.cross(w, m - c), axis=-1) / rig.scale, 0.0)
    angular = s[..., None, None] * outer(e) + (1 / (1 + s) - 1)[..., None, None] * outer(k)
    out = np.empty((*c.shape[:-1], 3, 4))
    out[..., :3] = linear + angular
    out[..., 3] = -np.einsum("...ij,...j->...i", linear, m) - np.einsum(
        "...ij,...j->...i", angular, c
    )
    return out


def chain_sums(chain: NDArray[np.int64], values: ArrayLike, axis: int) -> NDArray[np.float64]:
    """``values`` summed over each bone's chain (itself, its parent, ... its root: ``chain``,
    from :func:`chains`) along their bones' ``axis`` (float64, the shape of ``values``)."""
    x = np.moveaxis(np.asarray(values, dtype=np.float64), axis, 0)
    if len(x) != len(chain):
        raise InputError(f"values have {len(x)} bones along axis {axis}; chains {len(chain)}")
    live = (chain >= 0).reshape(chain.shape + (1,) * (x.ndim - 1))
    summed = np.where(live, x[np.maximum(chain, 0)], 0.0).sum(axis=1)
    return np.moveaxis(summed, 0, axis)


def subtree_ranges(parents: ArrayLike) -> NDArray[np.int64]:
    """(B, 2): each bone's range ``[first, end)`` in a depth-first order of the forest: bone
    ``j`` is ``k`` or an ancestor of ``k`` exactly where ``first[j] <= first[k] < end[j]``."""
    chain = chains(parents)
    b, d = chain.shape
    depth = (chain >= 0).sum(axis=1)
    col = np.arange(d)
    back = np.clip(depth[:, None] - 1 - col, 0, d - 1)
    path = np.where(col < depth[:, None], np.take_along_axis(chain, back, axis=1), -1)
    order = np.lexsort(path.T[::-1])  # root-first paths: a bone, then its subtree
    first = np.empty(b, np.int64)
    first[order] = np.arange(b)
    size = np.bincount(chain[chain >= 0], minlength=b)
    return np.stack([first, first + size], axis=1)


def velocity_deform(
    rig: VelocityRig,
    positions: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    motion: JointMotion,
) -> NDArray[np.float64]:
    """The skinned ``positions`` (N, 3) of one pose moved by velocity skinning (module
    docstring), float64; ``joints``, ``weights`` (N, S): the mesh's influences, ``motion``: the
    pose's :func:`joint_motion` ((B, 3) arrays)."""
    p = np.asarray(positions, dtype=np.float64)
    jt = np.asarray(joints, dtype=np.int64)
    wt = np.asarray(weights, dtype=np.float64)
    chain = rig.chains
    out = p.copy()
    n = len(p)
    for s in range(jt.shape[1]):  # a slot, then a level of its chains: every vertex at once
        bone = jt[:, s]
        f = rig.vertex_floppy * rig.bone_floppy[bone]
        q = rig.vertex_squashy * rig.bone_squashy[bone]
        for level in range(chain.shape[1]):
            joint = chain[bone, level]
            live = (joint >= 0) & (wt[:, s] > 0)
            if not live.any():
                continue
            idx = np.flatnonzero(live)
            floppy, squashy = _joint_terms(rig, motion, p[idx], joint[idx])
            d = f[idx, None] * floppy + q[idx, None] * squashy
            out[idx] += wt[idx, s, None] * d
    assert out.shape == (n, 3)
    return out
