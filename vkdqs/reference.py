"""The float64 CPU reference skinning: what every GPU result is checked against.

Each ``skin_*`` function computes, in float64, exactly what the shader of its method computes
(same slot order, same antipodality rule, same normalization without orthogonalizing the dual
part, same fallbacks), so it is the test oracle for the compute, readback and rendering paths;
:func:`morph` applies morph targets first, as the GPU does. Each skinning method of the
registry (:mod:`vkdqs.methods`) names its reference here. Conventions as in :mod:`vkdqs.dq`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from .dq import (
    _as_array,
    _as_float,
    _cofactor_normals,
    _dot,
    _rescale,
    _rotate,
    _safe_normalize,
    _translation,
    _true_length,
    blender_bone_dqs,
    from_matrices,
    normalize,
    quat_multiply,
    quat_to_matrix,
    to_matrices,
)
from .errors import InputError

__all__ = [
    "DQS_EPS",
    "LBS_EPS",
    "morph",
    "skin_blend",
    "skin_cor",
    "skin_dqs",
    "skin_dqs_blender",
    "skin_dqs_scaled",
    "skin_lbs",
]

#: Below this length of the blended real part, :func:`skin_dqs` leaves the vertex at rest.
DQS_EPS = 1e-6
#: Below this sum of weights, :func:`skin_lbs` leaves the vertex at rest.
LBS_EPS = 1e-6


def _check_skin_inputs(
    positions: ArrayLike, normals: ArrayLike, joints: ArrayLike, weights: ArrayLike
) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    p = _as_float(positions, "positions")
    n = _as_float(normals, "normals")
    j = _as_array(joints, "joints")
    w = _as_float(weights, "weights")
    if p.ndim != 2 or p.shape[1] != 3:
        raise InputError(f"positions must have shape (N, 3), got shape {p.shape} {p.dtype}")
    count = p.shape[0]
    if n.shape != (count, 3):
        raise InputError(f"normals must have shape ({count}, 3), got shape {n.shape} {n.dtype}")
    if j.dtype == bool or not np.issubdtype(j.dtype, np.integer):
        raise InputError(f"joints must be an integer array, got {j.dtype}")
    if j.ndim != 2 or j.shape[0] != count or j.shape[1] < 1:
        raise InputError(f"joints must have shape ({count}, K), got shape {j.shape} {j.dtype}")
    if w.shape != j.shape:
        raise InputError(
            f"weights must have the shape of joints {j.shape}, got shape {w.shape} {w.dtype}"
        )
    return p, n, j, w


def morph(
    positions: ArrayLike,
    normals: ArrayLike,
    morph_positions: ArrayLike | None,
    morph_normals: ArrayLike | None,
    weights: ArrayLike,
    /,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Apply morph targets to a rest mesh, as the GPU does before skinning (float64).

    ``p' = p + Σ_t w_t Δp_t`` and ``n' = normalize(n̂ + Σ_t w_t Δn_t)`` with ``n̂ =
    normalize(n)`` (glTF adds the normal deltas; three.js, Blender and the glTF sample viewer
    renormalize the sum), keeping ``n̂`` where the sum is shorter than 1e-6. Every ``skin_*``
    reference then takes ``(p', n')`` as the rest vertex: morph first, then skin.

    Parameters
    ----------
    positions, normals : array_like, [N, 3]
    morph_positions, morph_normals : array_like, [M, N, 3], or None (no such deltas)
    weights : array_like, [M]

    Returns
    -------
    positions : ndarray of float64, [N, 3]
    normals : ndarray of float64, [N, 3]
    """
    p = _as_float(positions, "positions")
    n = _as_float(normals, "normals")
    if p.ndim != 2 or p.shape[1] != 3 or n.shape != p.shape:
        raise InputError(
            f"positions and normals must have shape (N, 3), got {p.shape} and {n.shape}"
        )
    w = _as_float(weights, "weights")
    if w.ndim != 1:
        raise InputError(f"weights must have shape (M,), got shape {w.shape}")
    deltas = []
    for name, d in (("morph_positions", morph_positions), ("morph_normals", morph_normals)):
        if d is None:
            deltas.append(None)
            continue
        a = _as_float(d, name)
        if a.shape != (w.shape[0], *p.shape):
            raise InputError(
                f"{name} must have shape ({w.shape[0]}, {p.shape[0]}, 3), got shape {a.shape}"
            )
        deltas.append(a)
    dp, dn = deltas
    out_p = p if dp is None else p + np.einsum("t,tnc->nc", w, dp)
    unit = _safe_normalize(n)[0]
    if dn is None:
        return out_p, unit
    summed, short_sum = _safe_normalize(unit + np.einsum("t,tnc->nc", w, dn), 1e-6)
    summed[short_sum] = unit[short_sum]
    return out_p, summed


def skin_dqs(
    positions: ArrayLike,
    normals: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    bone_dqs: ArrayLike,
    /,
    *,
    antipodal: bool = True,
    dtype: DTypeLike = np.float64,
) -> tuple[NDArray, NDArray]:
    """Dual quaternion skinning, computing exactly what the GPU shaders compute (in float64).

    For each vertex: ``dq_k = bone_dqs[joints[:, k]]``; ``s_k = -1`` where
    ``real_k · real_0 < 0`` else ``+1`` (slot 0 as given is the reference; slots are not
    sorted); ``b = Σ_k w_k s_k dq_k``; ``L = |b.real|``. Where ``L < DQS_EPS`` (e.g. all
    weights zero) the vertex keeps its rest position and normalized rest normal. Otherwise
    ``r = b.real / L`` and ``d = b.dual / L`` (no orthogonalization, like the shader),
    ``p' = rotate(r, p) + t(r, d)`` and ``n' = normalize(rotate(r, n))``.

    Parameters
    ----------
    positions : array_like, [N, 3]
    normals : array_like, [N, 3]
    joints : array_like of int, [N, K]
        Bone indices; assumed in range (:class:`vkdqs.mesh.SkinnedMesh` checks them).
    weights : array_like, [N, K]
    bone_dqs : array_like, [B, 2, 4]
        Skinning DQs (rest space -> posed space), unit or not; either sign.
    antipodal : bool, keyword-only
        Apply the sign correction. ``False`` exists to show that the correction matters.
    dtype : dtype, keyword-only
        Precision of the computation: float64 (the reference) or float32 (the numpy baseline
        the benchmarks compare the GPU with).

    Returns
    -------
    positions : ndarray, [N, 3]
    normals : ndarray, [N, 3]
    """
    p, n, j, w = _check_skin_inputs(positions, normals, joints, weights)
    bones = _as_float(bone_dqs, "bone_dqs")
    if bones.ndim != 3 or bones.shape[1:] != (2, 4):
        raise InputError(f"bone_dqs must have shape (B, 2, 4), got shape {bones.shape}")
    p, n, w, bones = (a.astype(dtype, copy=False) for a in (p, n, w, bones))

    ref = bones[j[:, 0], 0]
    blend = np.zeros((p.shape[0], 2, 4), dtype)
    for k in range(j.shape[1]):  # loop over the <= 8 influence slots, not over vertices
        dq_k = bones[j[:, k]]
        w_k = w[:, k]
        if antipodal:
            # q and -q are the same rotation; blending mixed signs takes the long way round and can
            # cancel to zero. Match the shader: compare with slot 0, flip when the dot is < 0.
            w_k = np.where(_dot(dq_k[:, 0], ref) < 0.0, -w_k, w_k)
        blend += w_k[:, None, None] * dq_k

    # Non-unit bones as long as 1e200 have a blend too long to square: _rescale measures those.
    real, length, scale = _rescale(blend[:, 0])
    at_rest = ~(_true_length(length, scale) >= DQS_EPS)
    dual = blend[:, 1]
    if scale is not None:
        with np.errstate(over="ignore"):
            dual = dual / scale[:, None]
        dual[at_rest] = 0.0  # rescaled tiny blends stay at rest; keep their math finite
    inv = 1.0 / np.where(at_rest, 1.0, length)
    r = real * inv[:, None]
    d = dual * inv[:, None]
    out_p = _rotate(r, p) + _translation(r, d)
    out_n, _ = _safe_normalize(_rotate(r, n))
    rest_n, _ = _safe_normalize(n)
    out_p[at_rest] = p[at_rest]
    out_n[at_rest] = rest_n[at_rest]
    return out_p, out_n


def skin_dqs_scaled(
    positions: ArrayLike,
    normals: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    bone_dqs: ArrayLike,
    bone_scales: ArrayLike,
    /,
    *,
    dtype: DTypeLike = np.float64,
) -> tuple[NDArray, NDArray]:
    """Two-phase DQS (Kavan et al. 2008) for bones with scale/shear, as the GPU computes it.

    Phase 1 blends the bones' scale/shear matrices ``[S | 0]`` linearly and applies them to the
    rest vertex (exactly :func:`skin_lbs` of those matrices); phase 2 is :func:`skin_dqs` of the
    rigid parts on the result. With every ``S = I`` it is plain DQS. Inputs as in
    :func:`skin_dqs`; ``bone_scales`` is ``[B, 3, 4]`` from :func:`decompose_skinning_matrices`.
    """
    p, n = skin_lbs(positions, normals, joints, weights, bone_scales, dtype=dtype)
    return skin_dqs(p, n, joints, weights, bone_dqs, dtype=dtype)


def skin_lbs(
    positions: ArrayLike,
    normals: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    bone_matrices: ArrayLike,
    /,
    *,
    dtype: DTypeLike = np.float64,
) -> tuple[NDArray, NDArray]:
    """Linear blend skinning, computing exactly what the GPU LBS path computes (in float64).

    ``M = Σ_k w_k A[joints[:, k]]`` (3x4). Where ``Σ_k w_k < LBS_EPS`` the vertex keeps its rest
    position and normalized rest normal. Otherwise ``p' = M[:, :3] p + M[:, 3]`` and the normal
    is ``cof(M[:, :3]) n`` normalized, where the cofactor matrix (``det * inverse-transpose``) is
    built from cross products of columns, so singular blends give no NaN. A normal not longer
    than 1e-6 after the transform (relative to the blended matrix's scale: ``|M|_F^2 / 3``, 1 for
    a rigid one) falls back to the normalized rest normal; so all-zero bone matrices put the
    vertex at the origin with its normalized rest normal (the shaders' ``lbs_collapsed``).

    Parameters
    ----------
    positions : array_like, [N, 3]
    normals : array_like, [N, 3]
    joints : array_like of int, [N, K]
        Bone indices; assumed in range.
    weights : array_like, [N, K]
    bone_matrices : array_like, [B, 3, 4] or [B, 4, 4]
        Affine skinning matrices (rest space -> posed space); only the top 3 rows are used.
    dtype : dtype, keyword-only
        Precision of the computation (float64 reference, or float32 baseline).

    Returns
    -------
    positions : ndarray, [N, 3]
    normals : ndarray, [N, 3]
    """
    p, n, j, w = _check_skin_inputs(positions, normals, joints, weights)
    mats = _as_float(bone_matrices, "bone_matrices")
    if mats.ndim != 3 or mats.shape[1:] not in ((3, 4), (4, 4)):
        raise InputError(
            f"bone_matrices must have shape (B, 3, 4) or (B, 4, 4), got shape {mats.shape}"
        )
    p, n, w, mats = (a.astype(dtype, copy=False) for a in (p, n, w, mats[:, :3, :]))

    m = np.zeros((p.shape[0], 3, 4), dtype)
    for k in range(j.shape[1]):  # loop over the <= 8 influence slots, not over vertices
        m += w[:, k, None, None] * mats[j[:, k]]
    wsum = w.sum(axis=1)
    at_rest = ~(wsum >= LBS_EPS)

    lin = m[:, :, :3]
    out_p = np.einsum("nij,nj->ni", lin, p) + m[:, :, 3]
    # Normals transform by the inverse-transpose; the cofactor matrix det * A^-T has columns
    # (a1 x a2, a2 x a0, a0 x a1) for columns a_i of A, needs no inverse, and keeps the
    # orientation for det > 0. Its scale is irrelevant after normalizing.
    out_n, degenerate = _cofactor_normals(lin, n)
    rest_n, _ = _safe_normalize(n)
    out_p[at_rest] = p[at_rest]
    use_rest_n = at_rest | degenerate
    out_n[use_rest_n] = rest_n[use_rest_n]
    return out_p, out_n


def _rigid_bone_inputs(bone_matrices: ArrayLike, name: str) -> tuple[NDArray, NDArray]:
    """(B, 3, 4) affine rows and (B, 2, 4) dual quaternions of rigid skinning matrices (or DQs)."""
    mats = _as_float(bone_matrices, name)
    if mats.ndim != 3 or mats.shape[1:] not in ((2, 4), (3, 4), (4, 4)):
        raise InputError(
            f"{name} must have shape (B, 4, 4) or (B, 3, 4) rigid matrices or (B, 2, 4) dual "
            f"quaternions, got shape {mats.shape}"
        )
    if mats.shape[1] == 2:
        dqs = normalize(mats)
        return to_matrices(dqs)[:, :3, :], dqs
    full = np.zeros((mats.shape[0], 4, 4))
    full[:, :3, :] = mats[:, :3, :]
    full[:, 3, 3] = 1.0
    return full[:, :3, :], from_matrices(full)


def _blend_normals(a: NDArray, b: NDArray, t: NDArray) -> NDArray:
    """normalize((1 - t) a + t b) for unit a, b; b where the blend is shorter than LBS_EPS."""
    mixed = a + (b - a) * t[:, None]  # GLSL mix()
    out, short = _safe_normalize(mixed, LBS_EPS)
    out[short] = b[short]
    return out


def skin_blend(
    positions: ArrayLike,
    normals: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    bone_matrices: ArrayLike,
    dqs_blend: ArrayLike,
    /,
    *,
    dtype: DTypeLike = np.float64,
) -> tuple[NDArray, NDArray]:
    """Per-vertex blend of LBS and DQS ("weight blended" skinning), as the GPU computes it.

    ``p' = (1 - b) p_LBS + b p_DQS`` with ``b = dqs_blend[i]`` in [0, 1]; the normal is
    ``normalize((1 - b) n_LBS + b n_DQS)`` (the DQS normal where that blend is shorter than
    1e-6). ``p_LBS`` is :func:`skin_lbs` of ``bone_matrices``, ``p_DQS`` :func:`skin_dqs` of
    the same rigid matrices as dual quaternions.

    Parameters
    ----------
    bone_matrices : array_like, [B, 4, 4] or [B, 3, 4] rigid matrices, or [B, 2, 4] unit DQs
    dqs_blend : array_like, [N]
        Each vertex's DQS fraction.
    """
    p, n, j, w = _check_skin_inputs(positions, normals, joints, weights)
    mats, dqs = _rigid_bone_inputs(bone_matrices, "bone_matrices")
    b = _as_float(dqs_blend, "dqs_blend")
    if b.shape != (p.shape[0],):
        raise InputError(f"dqs_blend must have shape ({p.shape[0]},), got shape {b.shape}")
    lp, ln = skin_lbs(p, n, j, w, mats, dtype=dtype)
    qp, qn = skin_dqs(p, n, j, w, dqs, dtype=dtype)
    b = b.astype(dtype, copy=False)
    out_p = lp + (qp - lp) * b[:, None]
    return out_p, _blend_normals(ln, qn, b)


def skin_cor(
    positions: ArrayLike,
    normals: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    bone_matrices: ArrayLike,
    centers: ArrayLike,
    /,
    *,
    dtype: DTypeLike = np.float64,
) -> tuple[NDArray, NDArray]:
    """Skinning with optimized centers of rotation (Le & Hodgins 2016), as the GPU computes it.

    ``q`` = the weighted blend of the bones' rotation quaternions with DQS's signs (flipped
    against slot 0), normalized; ``p' = R(q) (p - c) + Σ_k w_k M_k c`` with ``c = centers[i]``
    and ``M_k`` the rigid bone transforms; ``n' = normalize(R(q) n)``. A vertex whose weights
    sum to 0, or whose blended rotation is shorter than ``DQS_EPS``, stays at rest. Where
    ``c = p`` this is LBS's position.

    Parameters
    ----------
    bone_matrices : array_like, [B, 4, 4] or [B, 3, 4] rigid matrices, or [B, 2, 4] unit DQs
    centers : array_like, [N, 3]
        From :func:`vkdqs.centers_of_rotation` (or the float64
        :func:`vkdqs.methods.cor.reference.centers_of_rotation_reference`).
    """
    p, n, j, w = _check_skin_inputs(positions, normals, joints, weights)
    _, dqs = _rigid_bone_inputs(bone_matrices, "bone_matrices")
    c = _as_float(centers, "centers")
    if c.shape != p.shape:
        raise InputError(f"centers must have shape {p.shape}, got shape {c.shape}")
    p, n, w, c, dqs = (a.astype(dtype, copy=False) for a in (p, n, w, c, dqs))
    ref = dqs[j[:, 0], 0]
    q = np.zeros((p.shape[0], 4), dtype)
    pc = np.zeros_like(p)
    for k in range(j.shape[1]):  # loop over the <= 8 influence slots, not over vertices
        dq_k = dqs[j[:, k]]
        w_k = w[:, k]
        q += np.where(_dot(dq_k[:, 0], ref) < 0.0, -w_k, w_k)[:, None] * dq_k[:, 0]
        moved = _rotate(dq_k[:, 0], c) + _translation(dq_k[:, 0], dq_k[:, 1])
        pc += w_k[:, None] * moved
    q, length, scale = _rescale(q)
    at_rest = ~(_true_length(length, scale) >= DQS_EPS) | ~(w.sum(axis=1) >= LBS_EPS)
    q = q / np.where(at_rest, 1.0, length)[:, None]
    out_p = _rotate(q, p - c) + pc
    out_n, _ = _safe_normalize(_rotate(q, n))
    rest_n, _ = _safe_normalize(n)
    out_p[at_rest] = p[at_rest]
    out_n[at_rest] = rest_n[at_rest]
    return out_p, out_n


def skin_dqs_blender(
    positions: ArrayLike,
    normals: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    bone_matrices: ArrayLike,
    rest_matrices: ArrayLike,
    /,
    *,
    dtype: DTypeLike = np.float64,
) -> tuple[NDArray, NDArray]:
    """Blender's armature deform with "Preserve Volume" (DQS), as the GPU computes it.

    Per vertex ``p`` and influence ``k`` in slot order (SkinnedMesh: descending weight), with
    each bone split by :func:`blender_bone_dqs` into a DQ ``(q_k, d_k)`` and a scale matrix
    ``S_k``: the scale's translation at the vertex, ``e_k = S_k p - p``, moves into the DQ,
    ``d_k' = d_k + 0.5 q_k (e_k, 0)`` (``add_weighted_dq_dq_pivot``); the weight's sign flips
    where ``q_k`` points away from the running sum ``Σ_{l<k} ±w_l q_l`` (Blender's order,
    not slot 0's); the sums are divided by ``Σ w_k`` (``normalize_dq``) and the position is
    ``p' = R(q) p + t(q, d)`` of the normalized blend (``mul_v3m3_dq``: the scale matrix,
    neutral at the pivot, leaves ``p`` alone). The normal is transformed by the cofactor of
    ``R(q) (Σ w_k S_k) / Σ w_k`` (Blender's deform matrix; Blender itself recomputes normals
    from the deformed faces). Vertices with ``Σ w <= 1e-4`` (Blender's ``contrib``) or a
    blended rotation shorter than ``DQS_EPS`` stay at rest.
    """
    p, n, j, w = _check_skin_inputs(positions, normals, joints, weights)
    mats = _as_float(bone_matrices, "bone_matrices")
    if mats.ndim != 3 or mats.shape[1:] != (4, 4):
        raise InputError(f"bone_matrices must have shape (B, 4, 4), got shape {mats.shape}")
    dqs, scales = blender_bone_dqs(mats, rest_matrices)
    p, n, w, dqs, scales = (a.astype(dtype, copy=False) for a in (p, n, w, dqs, scales))
    count = p.shape[0]
    q_sum = np.zeros((count, 4), dtype)
    d_sum = np.zeros((count, 4), dtype)
    s_sum = np.zeros((count, 3, 3), dtype)
    for k in range(j.shape[1]):  # influence slots in order: Blender's running sum
        q_k = dqs[j[:, k], 0]
        d_k = dqs[j[:, k], 1]
        s_k = scales[j[:, k]]
        e = np.einsum("nij,nj->ni", s_k[:, :, :3], p) + s_k[:, :, 3] - p
        d_k = d_k + 0.5 * quat_multiply(q_k, np.concatenate([e, np.zeros((count, 1))], axis=1))
        w_k = w[:, k]
        signed = np.where(_dot(q_k, q_sum) < 0.0, -w_k, w_k)
        q_sum += signed[:, None] * q_k
        d_sum += signed[:, None] * d_k
        s_sum += w_k[:, None, None] * s_k[:, :, :3]
    total = w.sum(axis=1)
    at_rest = ~(total > 1e-4)
    inv_total = 1.0 / np.where(at_rest, 1.0, total)
    q_sum *= inv_total[:, None]
    d_sum *= inv_total[:, None]
    s_sum *= inv_total[:, None, None]
    length = np.linalg.norm(q_sum, axis=1)
    at_rest |= ~(length >= DQS_EPS)
    inv = 1.0 / np.where(at_rest, 1.0, length)
    r = q_sum * inv[:, None]
    d = d_sum * inv[:, None]
    out_p = _rotate(r, p) + _translation(r, d)
    rs = quat_to_matrix(r) @ s_sum
    out_n, degenerate = _cofactor_normals(rs, n)
    rest_n, _ = _safe_normalize(n)
    out_p[at_rest] = p[at_rest]
    use_rest_n = at_rest | degenerate
    out_n[use_rest_n] = rest_n[use_rest_n]
    return out_p, out_n
