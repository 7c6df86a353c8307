r"""Direct Delta Mush (Le & Lewis 2019, variant 0): the float64 reference.

Direct Delta Mush (DDM) turns Delta Mush into a per-vertex skinning formula: a precomputation
smooths, over the rest mesh, each bone's weighted outer products of the homogeneous rest
positions; at run time each vertex blends the bone matrices with them and takes a rigid
transform by a 3x3 polar decomposition. This module is the float64 oracle of the GPU version
(numpy, with scipy's sparse LU for the implicit smoothing): :func:`precompute_reference` builds
Ω, :func:`truncate` keeps each vertex's strongest bones, :func:`skin_reference` poses.

Formulas (the paper's names; ``u_k = (v_k, 1)`` the homogeneous rest position of vertex ``k``,
``w_kj`` its weight of bone ``j``), as libigl 2.5.1's ``direct_delta_mush_precomputation``:

* ``L`` is the cotangent Laplacian (``L = -cotmatrix``: ``L_ik = -(cot α_ik + cot β_ik)/2`` on
  edges, ``L_ii = -Σ_k L_ik``), ``D = diag(L)`` and ``L̃ = L D⁻¹`` (a zero ``L_ii``, a vertex on
  no triangle, gives ``D⁻¹_ii = 0``). One smoothing step with step size ``s`` is
  ``X ← (I + s L̃)⁻ᵀ X``, i.e. solve ``(I + s D⁻¹ L) X_new = X``: implicit Laplacian smoothing
  with the row-normalized cotangent weights (``D⁻¹ L = I - D⁻¹ W``), which preserves constants
  (a partition of unity stays one). ``p`` steps apply ``C = (I + s L̃)⁻ᵖ``.
* Rotation part, step λ: ``Ψ_ij = Σ_k C_λ[k, i] w_kj u_k u_kᵀ`` (4x4, symmetric).
* Translation part, step κ: ``w'_ij = Σ_k C_κ[k, i] w_kj``.
* ``p_i = Σ_j Ψ_ij[0:3, 3] / Σ_j Ψ_ij[3, 3]`` and ``P_i = [[p_i p_iᵀ, p_i], [p_iᵀ, 1]]``.
* ``Ω_ij = (1 - α) Ψ_ij + α w'_ij P_i``, stored as its 10 upper-triangle values in row-major
  order ``(00, 01, 02, 03, 11, 12, 13, 22, 23, 33)``; entry 9 (``Ω_ij[3, 3]``) is the smoothed
  weight, entries ``(3, 6, 8)`` the smoothed weighted position.

Run time (libigl's ``direct_delta_mush``), bone matrices ``M_j`` (4x4, last row ``0 0 0 1``):
``Q_i = Σ_j M_j Ω_ij / Σ_j Ω_ij[3, 3]``, split as ``[[Q̄, q], [pᵀ, 1]]``; ``Q̄ - q pᵀ = U Σ Vᵀ``
(SVD), ``R = U Vᵀ`` (with the sign of U's last column flipped where ``det(U Vᵀ) < 0``, so R is a
rotation, never a reflection: libigl does not flip), ``t = q - R p``, ``v' = R v + t``.
Bones that share one uniform scale ``s`` (``M_j = s [R_j | t_j]``: a model's unit scale) give
``s`` times the rigid pose's result: ``Q̄ - q pᵀ`` and ``q`` are ``s`` times the rigid ones, so
R is the same and only the offset is scaled, ``v' = s R (v - p) + q`` (variant 0 is rigid
otherwise; the packer refuses other scales). Normals are ``R n``: the rotation of the vertex's
own rigid transform. Where the smoothed
covariance vanishes (``p = 0``: no smoothing, so ``Q̄ = q pᵀ`` and R is undefined) positions are
still exact (``v' = q``, LBS) and normals fall back to LBS's: the cofactor of
``Σ_j Ω_ij[3, 3] A_j`` (A_j the bones' 3x3 parts) applied to ``n``, so ``p = 0`` is LBS exactly.

Seams: the Laplacian is the welded mesh's (:func:`vkdqs.geometry.weld`, vertices at exactly
the same position are one node, each with its first vertex's weights), every vertex taking its
node's Ω (:func:`precompute_reference`'s ``weld``), so a seam's copies move together; libigl
smooths the triangles as indexed (``weld=False``).

Where this differs from libigl 2.5.1: libigl factors ``(I + s L̃)ᵀ`` with Eigen's
``SimplicialLDLT``, which reads only the lower triangle and assumes symmetry; the matrix is not
symmetric (``D⁻¹ L``, unless every ``L_ii`` is equal), so libigl solves with the symmetric matrix
mirrored from its lower triangle, which depends on the vertex order and does not preserve a
partition of unity. This module solves the stated system exactly (sparse LU). With the same
solve, everything else agrees with libigl to rounding (``tests/test_ddm.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike, NDArray

from ...dq import _as_array, _as_float, _cofactor_normals, _safe_normalize
from ...errors import MAX_MAGNITUDE, InputError, LimitError
from ...geometry import weld as weld_positions

__all__ = [
    "DEFAULTS",
    "DEFAULT_MAX_BONES",
    "DEGENERATE_EPS",
    "DEGENERATE_EPS_FLOAT32",
    "UPPER",
    "DirectDeltaMush",
    "cotangent_laplacian",
    "expand",
    "omega_from_smoothed",
    "precompute_reference",
    "reframe",
    "skin_reference",
    "truncate",
]

#: Bones kept per vertex by :func:`truncate` unless told otherwise.
DEFAULT_MAX_BONES = 8
#: Default parameters of :func:`vkdqs.direct_delta_mush`: smoothing steps p, rotation step λ,
#: translation step κ, translation blend α.
DEFAULTS = {"iterations": 20, "rotation_step": 3.0, "translation_step": 1.0, "alpha": 0.8}
#: ``|Q̄ - q pᵀ|_F <= eps * d²``, d the diagonal of the rest positions' bounding box, marks a
#: vanished covariance (no smoothing, where it is zero but for rounding): normals then fall back
#: to LBS's (positions need no fallback). ``eps`` follows the precision of the given Ω:
#: :data:`DEGENERATE_EPS` for float64, :data:`DEGENERATE_EPS_FLOAT32` for float32 (or less), a
#: smoothing reach below about 0.3% of the mesh's size.
DEGENERATE_EPS = 1e-12
DEGENERATE_EPS_FLOAT32 = 1e-5
#: Row and column of each of the 10 stored values of a symmetric 4x4 (row-major upper triangle).
UPPER = np.triu_indices(4)
_FULL = np.zeros((4, 4), dtype=np.intp)
_FULL[UPPER] = np.arange(10)
_FULL.T[UPPER] = np.arange(10)  # index into the 10 values of each of the 16 entries


@dataclass(frozen=True, eq=False)
class DirectDeltaMush:
    """A mesh's Direct Delta Mush precomputation, truncated: what skinning with it reads.

    Made by :func:`vkdqs.direct_delta_mush`; :func:`skin_reference` poses with
    ``skin_reference(positions, normals, d.omega, bone_matrices, d.bones, origin=d.origin)``.

    Attributes
    ----------
    omega : ndarray of float32, [V, N, 10]
        Ω of each vertex's N strongest bones (10 upper-triangle values, :data:`UPPER`), in
        decreasing strength (``|Ω[..., 9]|``, the smoothed weight). Read-only.
    bones : ndarray of uint32, [V, N]
        The bone of each slot. Read-only.
    origin : ndarray of float64, [V, 3]
        The point each vertex's Ω is expressed about (:func:`reframe`): its own rest position,
        so float32 Ω holds the covariance ``Q̄ - q pᵀ`` accurately wherever the vertex is.
        Read-only.
    bone_count : int
    iterations : int
    rotation_step, translation_step, alpha : float
        The parameters it was computed with (p, λ, κ, α).
    """

    omega: NDArray[np.float32]
    bones: NDArray[np.uint32]
    origin: NDArray[np.float64]
    bone_count: int
    iterations: int
    rotation_step: float
    translation_step: float
    alpha: float

    def __post_init__(self) -> None:
        for name in ("omega", "bones", "origin"):
            a = np.array(getattr(self, name), copy=True)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        # a precomputation made or edited by hand: refused here, not drawn as NaNs or out of
        # bounds reads by the shaders
        om, bones, origin = self.omega, self.bones, self.origin
        if om.ndim != 3 or om.shape[2] != 10 or om.dtype.kind != "f":
            raise InputError(
                f"DirectDeltaMush.omega must be floats of shape (V, N, 10), got {om.shape}"
            )
        if bones.shape != om.shape[:2] or bones.dtype.kind not in "iu":
            raise InputError(
                f"DirectDeltaMush.bones must be integers of shape {om.shape[:2]}, got "
                f"{bones.shape} {bones.dtype}"
            )
        if origin.shape != (om.shape[0], 3) or origin.dtype.kind not in "fiu":
            raise InputError(
                f"DirectDeltaMush.origin must have shape ({om.shape[0]}, 3), got {origin.shape}"
            )
        count = _integer(self.bone_count, "DirectDeltaMush.bone_count", 1)
        if bones.size and (bones.min() < 0 or bones.max() >= count):
            raise InputError(
                f"DirectDeltaMush.bones must be in [0, bone_count={count}), got "
                f"{bones.min()}..{bones.max()}"
            )
        for name, a in (("omega", om), ("origin", origin)):
            if not np.isfinite(a).all():
                raise InputError(f"DirectDeltaMush.{name} must be finite (it holds NaN or inf)")

    @property
    def max_bones(self) -> int:
        """N, the bones kept per vertex."""
        return int(self.omega.shape[1])


def _integer(value: Any, name: str, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; anything else (NaN, inf, a bool, a string, 1.5)
    an InputError naming it."""
    ok = not isinstance(value, (bool, np.bool_, str, bytes))
    try:
        ok = ok and bool(np.isfinite(value)) and int(value) == value and int(value) >= minimum
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positions(positions: ArrayLike) -> NDArray[np.float64]:
    """Rest positions as float64 (V, 3): finite, within +-MAX_MAGNITUDE (as SkinnedMesh's)."""
    v = _as_float(positions, "positions")
    if v.ndim != 2 or v.shape[1] != 3:
        raise InputError(f"positions must have shape (V, 3), got shape {v.shape}")
    if not np.isfinite(v).all():
        i, c = np.argwhere(~np.isfinite(v))[0]
        raise InputError(f"positions[{i}, {c}] = {v[i, c]}: positions must be finite")
    if v.size and np.abs(v).max() > MAX_MAGNITUDE:
        i, c = np.argwhere(np.abs(v) > MAX_MAGNITUDE)[0]
        raise LimitError(
            f"positions[{i}, {c}] = {v[i, c]:g} exceeds +-{MAX_MAGNITUDE:g}: the GPU computes "
            "in float32 and larger coordinates would overflow"
        )
    return v


def _faces(faces: ArrayLike, vertex_count: int) -> NDArray[np.int64]:
    f = _as_array(faces, "faces")
    if f.dtype == bool or not np.issubdtype(f.dtype, np.integer):
        raise InputError(f"faces must be an integer array, got {f.dtype}")
    if f.ndim == 1 and f.size % 3 == 0:
        f = f.reshape(-1, 3)
    if f.ndim != 2 or f.shape[1] != 3:
        raise InputError(f"faces must have shape (T, 3) or (3T,), got shape {f.shape}")
    if f.size and (f.min() < 0 or f.max() >= vertex_count):
        raise InputError(f"faces index outside [0, {vertex_count}): {f.min()}..{f.max()}")
    return f.astype(np.int64, copy=False)


def cotangent_laplacian(
    positions: ArrayLike, faces: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """The cotangent Laplacian ``L = -cotmatrix`` as CSR arrays of its off-diagonal part.

    ``L_ik = -(cot α_ik + cot β_ik) / 2`` summed over the triangles on edge ``ik`` (libigl's
    ``cotmatrix``, negated) and ``L_ii = -Σ_k L_ik``. Numpy only, so the GPU precomputation can
    upload it.

    Parameters
    ----------
    positions : array_like, [V, 3]
    faces : array_like of int, [T, 3] or [3T]

    Returns
    -------
    indptr : ndarray of int64, [V + 1]
    indices : ndarray of int64, [E]
        Neighbours of each vertex, sorted, without the vertex itself.
    weights : ndarray of float64, [E]
        ``-L_ik`` (the cotangent weights, positive on non-obtuse meshes).
    diagonal : ndarray of float64, [V]
        ``L_ii``, the sum of the row's weights.
    """
    v = _as_float(positions, "positions")
    if v.ndim != 2 or v.shape[1] != 3:
        raise InputError(f"positions must have shape (V, 3), got shape {v.shape}")
    n = v.shape[0]
    f = _faces(faces, n)
    rows, cols, vals = [], [], []
    for corner in range(3):  # the angle at each corner of every triangle, opposite edge (i, j)
        o, i, j = f[:, corner], f[:, (corner + 1) % 3], f[:, (corner + 2) % 3]
        a, b = v[i] - v[o], v[j] - v[o]
        cross = np.linalg.norm(np.cross(a, b), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            cot = np.where(cross > 0, np.einsum("ij,ij->i", a, b) / cross, 0.0)
        rows += [i, j]
        cols += [j, i]
        vals += [0.5 * cot, 0.5 * cot]
    r, c, w = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    keep = r != c
    key = r[keep] * n + c[keep]
    uniq, inverse = np.unique(key, return_inverse=True)
    weights = np.bincount(inverse, weights=w[keep], minlength=uniq.size).astype(np.float64)
    row, indices = np.divmod(uniq, n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    diagonal = np.bincount(row, weights=weights, minlength=n).astype(np.float64)
    return indptr, indices.astype(np.int64), weights, diagonal


def _smoothing_matrix(laplacian: tuple, step: float) -> sp.csc_matrix:
    """``I + step D⁻¹ L`` (= ``(I + step L̃)ᵀ``), whose solve is one smoothing step."""
    indptr, indices, weights, diagonal = laplacian
    n = diagonal.size
    inv = np.divide(1.0, diagonal, out=np.zeros(n), where=diagonal != 0)
    off = sp.csr_matrix((-weights, indices, indptr), shape=(n, n))
    lap = off + sp.diags(diagonal)
    return sp.csc_matrix(sp.identity(n) + step * (sp.diags(inv) @ lap))


def _dense_weights(joints: ArrayLike, weights: ArrayLike, count: int, bones: int) -> NDArray:
    j = _as_array(joints, "joints")
    w = _as_float(weights, "weights")
    if j.ndim == 1:
        j, w = j[:, None], w[:, None]
    if j.dtype == bool or not np.issubdtype(j.dtype, np.integer):
        raise InputError(f"joints must be an integer array, got {j.dtype}")
    if j.shape != w.shape or j.ndim != 2 or j.shape[0] != count:
        raise InputError(
            f"joints and weights must both have shape ({count}, K), got {j.shape}, {w.shape}"
        )
    if j.size and (j.min() < 0 or j.max() >= bones):
        raise InputError(f"joints must be in [0, bone_count={bones}), got {j.min()}..{j.max()}")
    if not np.isfinite(w).all():
        v, s = np.argwhere(~np.isfinite(w))[0]
        raise InputError(f"weights[{v}, {s}] = {w[v, s]}: weights must be finite")
    if (w < 0).any():
        v, s = np.argwhere(w < 0)[0]
        raise InputError(f"weights[{v}, {s}] = {w[v, s]}: weights must be >= 0")
    out = np.zeros((count, bones))
    np.add.at(out, (np.arange(count)[:, None], j), w)
    return out


def omega_from_smoothed(
    psi: ArrayLike, w_prime: ArrayLike, alpha: float, *, total: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Ω from the smoothed products: ``Ω_ij = (1 - α) Ψ_ij + α w'_ij P_i`` (see the module).

    Parameters
    ----------
    psi : array_like, [V, N, 10]
        Smoothed ``w_kj u_k u_kᵀ`` (step λ), 10 upper-triangle values each.
    w_prime : array_like, [V, N]
        Smoothed weights (step κ).
    alpha : float
        Translation blend α.
    total : array_like, [V, 10], keyword-only, optional
        ``Σ_j Ψ_ij`` over all bones, whose entries ``(3, 6, 8) / 9`` are ``p_i``; by default the
        sum of ``psi`` (all bones given). The GPU path, which keeps only some bones, smooths
        this sum as one more column (smoothing is linear).

    Returns
    -------
    ndarray of float64, [V, N, 10]
    """
    psi = np.asarray(psi, dtype=np.float64)
    w_prime = np.asarray(w_prime, dtype=np.float64)
    sums = psi.sum(axis=1) if total is None else np.asarray(total, dtype=np.float64)
    p = sums[:, [3, 6, 8]]
    p = np.divide(p, sums[:, 9:], out=np.zeros_like(p), where=sums[:, 9:] != 0)
    big_p = np.empty((p.shape[0], 4, 4))
    big_p[:, :3, :3] = p[:, :, None] * p[:, None, :]
    big_p[:, :3, 3] = big_p[:, 3, :3] = p
    big_p[:, 3, 3] = 1.0
    p10 = big_p[:, UPPER[0], UPPER[1]]
    return (1.0 - alpha) * psi + alpha * w_prime[:, :, None] * p10[:, None, :]


def _check_parameters(iterations: int, rotation_step: float, translation_step: float, alpha: float):
    _integer(iterations, "iterations", 0)
    for name, value in (("rotation_step", rotation_step), ("translation_step", translation_step)):
        if not (_real(value) and value > 0):
            raise InputError(f"{name} must be finite and > 0, got {value!r}")
    if not (_real(alpha) and 0 <= alpha < 1):
        raise InputError(f"alpha must be in [0, 1), got {alpha!r}")


def _real(value: Any) -> bool:
    """Whether ``value`` is a finite real number (not a bool, a string or an array)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return False
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):
        return False
    return a.ndim == 0 and a.dtype.kind in "iuf" and bool(np.isfinite(a))


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    import sys

    from tqdm import tqdm

    return tqdm(total=total, unit="step", desc="DDM (float64)", file=sys.stderr)


def precompute_reference(
    positions: ArrayLike,
    faces: ArrayLike,
    joints: ArrayLike,
    weights: ArrayLike,
    bone_count: int,
    *,
    iterations: int,
    rotation_step: float,
    translation_step: float,
    alpha: float,
    progress: bool = False,
    weld: bool = True,
) -> NDArray[np.float64]:
    """Ω of Direct Delta Mush, variant 0, in float64 (the formulas in the module docstring).

    With ``weld`` (the default) the vertices at the same position (a seam's copies,
    :func:`vkdqs.geometry.weld`: exactly equal positions) are one node of the Laplacian: Ω is
    computed on the welded mesh, each node with the joints and weights of its first vertex, and
    every vertex gets its node's Ω, so a seam's copies move identically (no crack) and a fully
    split mesh is smoothed. A vertex's own weights enter its Ω only as one term of the
    smoothing sums, so copies whose weights differ all take their first copy's.

    Parameters
    ----------
    positions : array_like, [V, 3]
        Rest positions.
    faces : array_like of int, [T, 3] or [3T]
        Triangles (the Laplacian's connectivity and cotangent weights).
    joints : array_like of int, [V, K]
        Bone of each influence slot, in ``[0, bone_count)``; repeated bones add up.
    weights : array_like, [V, K]
    bone_count : int
        B, the number of bones.
    iterations : int, keyword-only
        Smoothing steps p (>= 0; 0 is plain LBS).
    rotation_step, translation_step : float, keyword-only
        Step sizes λ and κ of the implicit smoothing of Ψ and of the weights (libigl's
        ``lambda`` and ``kappa``), > 0.
    alpha : float, keyword-only
        Translation blend α in ``[0, 1)``.
    progress : bool, keyword-only
        Show a tqdm bar (on stderr) over the smoothing steps.
    weld : bool, keyword-only
        Smooth over the welded vertices (above); False smooths the triangles as indexed, each
        side of a seam on its own.

    Returns
    -------
    ndarray of float64, [V, B, 10]
        Ω per vertex and bone, 10 upper-triangle values (``UPPER``).
    """
    v = _positions(positions)
    bones = _integer(bone_count, "bone_count", 1)
    _check_parameters(iterations, rotation_step, translation_step, alpha)
    n = v.shape[0]
    w = _dense_weights(joints, weights, n, bones)
    f = _faces(faces, n)
    inverse = None
    if weld:
        unique, inverse, first = weld_positions(v)
        if len(unique) < n:  # smooth over the nodes, each with its first vertex's weights
            v, f, w, n = unique, inverse[f], w[first], len(unique)
        else:
            inverse = None
    laplacian = cotangent_laplacian(v, f)

    hom = np.concatenate([v, np.ones((n, 1))], axis=1)
    uu = (hom[:, :, None] * hom[:, None, :])[:, UPPER[0], UPPER[1]]  # [V, 10]
    psi = (w[:, :, None] * uu[:, None, :]).reshape(n, bones * 10)
    w_prime = w
    if iterations:
        solve_psi = spla.splu(_smoothing_matrix(laplacian, rotation_step)).solve
        solve_w = spla.splu(_smoothing_matrix(laplacian, translation_step)).solve
        bar = _progress(int(iterations), progress)
        try:
            for _ in range(int(iterations)):
                psi = solve_psi(psi)
                w_prime = solve_w(w_prime)
                if bar is not None:
                    bar.update()
        finally:
            if bar is not None:
                bar.close()
    omega = omega_from_smoothed(psi.reshape(n, bones, 10), w_prime, alpha)
    return omega if inverse is None else omega[inverse]


def truncate(
    omega: ArrayLike, max_bones: int = DEFAULT_MAX_BONES
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Keep each vertex's ``max_bones`` strongest bones of a dense Ω.

    "Strongest" is the largest ``|Ω_ij[3, 3]|``, the bone's smoothed weight (its share of the
    blend: :func:`skin_reference` divides by the kept weights' sum, which renormalizes). A rigid
    motion of all bones stays exactly rigid after truncation; the error it adds otherwise is
    bounded by the dropped weights' share of the blend (measured in ``tests/test_ddm.py``).
    Slots are ordered by decreasing strength; with ``max_bones >= B`` all B bones are kept.

    Parameters
    ----------
    omega : array_like, [V, B, 10]
    max_bones : int
        N, the slots kept per vertex (at most B).

    Returns
    -------
    omega : ndarray of float64, [V, N, 10]
    bones : ndarray of int64, [V, N]
        The bone of each kept slot.
    """
    om = np.asarray(omega, dtype=np.float64)
    if om.ndim != 3 or om.shape[2] != 10:
        raise InputError(f"omega must have shape (V, B, 10), got shape {om.shape}")
    keep = min(_integer(max_bones, "max_bones", 1), om.shape[1])
    order = np.argsort(-np.abs(om[:, :, 9]), axis=1, kind="stable")[:, :keep]
    return np.take_along_axis(om, order[:, :, None], axis=1), order.astype(np.int64)


def reframe(omega: ArrayLike, origin: ArrayLike) -> NDArray[np.float64]:
    """Ω expressed about ``origin``: ``T(-origin) Ω T(-origin)ᵀ`` (Ω is a sum of ``w u uᵀ``,
    so this is Ω of the positions less ``origin``).

    Stored in float32, Ω about a point near the vertex keeps ``Q̄ - q pᵀ`` (a difference of
    products of coordinates) accurate: about the vertex's own rest position
    (:func:`vkdqs.direct_delta_mush`'s choice), ``Q̄`` is the covariance itself plus small
    terms, wherever the vertex is.

    Parameters
    ----------
    omega : array_like, [V, N, 10]
    origin : array_like, [3] or [V, 3]
        One point for all vertices, or one each.

    Returns
    -------
    ndarray of float64, [V, N, 10]
    """
    om = expand(omega)
    o = _as_float(origin, "origin")
    if o.shape != (3,) and (om.ndim != 4 or o.shape != (om.shape[0], 3)):
        raise InputError(f"origin must have shape (3,) or (V, 3), got {o.shape}")
    t = np.broadcast_to(np.eye(4), (*o.shape[:-1], 4, 4)).copy()
    t[..., :3, 3] = -o
    if o.ndim == 2:
        t = t[:, None]  # one per vertex, the same for its slots
    full = t @ om @ np.swapaxes(t, -1, -2)
    return full[..., UPPER[0], UPPER[1]]


def expand(omega10: ArrayLike) -> NDArray[np.float64]:
    """The symmetric 4x4 matrices of stored upper triangles: ``[..., 10] -> [..., 4, 4]``."""
    return np.asarray(omega10, dtype=np.float64)[..., _FULL]


def skin_reference(
    positions: ArrayLike,
    normals: ArrayLike,
    omega: ArrayLike,
    bone_matrices: ArrayLike,
    bones: ArrayLike | None = None,
    *,
    origin: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Pose with Direct Delta Mush (variant 0) in float64; the formulas in the module docstring.

    Parameters
    ----------
    positions : array_like, [V, 3]
        Rest positions.
    normals : array_like, [V, 3]
        Rest normals.
    omega : array_like, [V, N, 10]
        Ω of every bone (``N = B``, ``bones`` None) or of the kept slots (:func:`truncate`).
        Its dtype sets the threshold of a vanished covariance (:data:`DEGENERATE_EPS`).
    bone_matrices : array_like, [B, 4, 4] or [B, 3, 4]
        Affine skinning matrices (rest space -> posed space); the last row is taken as
        ``0 0 0 1``. Rigid, or sharing one uniform scale ``s`` (a model's unit scale): the
        result is then ``s`` times the rigid pose's, the offset from the smoothed centroid
        scaled by the length of a row of each vertex's first slot's bone, as the shader does.
    bones : array_like of int, [V, N], optional
        The bone of each slot of ``omega``; None means slot ``j`` is bone ``j``.
    origin : array_like, [3] or [V, 3], keyword-only, optional
        The point ``omega`` is expressed about (:func:`reframe`, ``DirectDeltaMush.origin``),
        one for all vertices or one each: posing then uses ``M_j T(origin)`` and
        ``v - origin``, which gives the same result as the model-frame Ω (the covariance
        ``Q̄ - q pᵀ`` and so R do not change).

    Returns
    -------
    positions : ndarray of float64, [V, 3]
    normals : ndarray of float64, [V, 3]
        Unit length (or zero where the rest normal is zero).
    """
    v = positions_in = _as_float(positions, "positions")
    n = _as_float(normals, "normals")
    single = np.asarray(omega).dtype.itemsize <= 4 and np.asarray(omega).dtype.kind == "f"
    eps = DEGENERATE_EPS_FLOAT32 if single else DEGENERATE_EPS
    om = _as_float(omega, "omega")
    mats = _as_float(bone_matrices, "bone_matrices")
    if v.ndim != 2 or v.shape[1] != 3 or n.shape != v.shape:
        raise InputError(f"positions and normals must be (V, 3), got {v.shape}, {n.shape}")
    if om.ndim != 3 or om.shape[0] != v.shape[0] or om.shape[2] != 10:
        raise InputError(f"omega must have shape ({v.shape[0]}, N, 10), got shape {om.shape}")
    if mats.ndim != 3 or mats.shape[1:] not in ((3, 4), (4, 4)):
        raise InputError(f"bone_matrices must be (B, 4, 4) or (B, 3, 4), got {mats.shape}")
    affine = np.zeros((mats.shape[0], 4, 4))
    affine[:, :3, :] = mats[:, :3, :]
    affine[:, 3, 3] = 1.0
    if bones is None:
        if om.shape[1] != affine.shape[0]:
            raise InputError(f"omega has {om.shape[1]} bones, bone_matrices {affine.shape[0]}")
        idx = np.broadcast_to(np.arange(affine.shape[0]), om.shape[:2])
    else:
        idx = _as_array(bones, "bones")
        if idx.shape != om.shape[:2] or not np.issubdtype(idx.dtype, np.integer):
            raise InputError(f"bones must be integers of shape {om.shape[:2]}, got {idx.shape}")
        if idx.size and (idx.min() < 0 or idx.max() >= affine.shape[0]):
            raise InputError(f"bones must be in [0, {affine.shape[0]})")
    slot = affine[idx]  # [V, N, 4, 4]: each slot's bone matrix
    # the pose's uniform scale s (1 for rigid bones), as the shader reads it: the length of a
    # row of the first slot's bone; with every bone s [R_j | t_j] the result is s times the
    # rigid pose's (the covariance is s times its, the rotation the same)
    scale = np.linalg.norm(slot[:, 0, 0, :3], axis=1) if idx.shape[1] else np.ones(len(v))
    if origin is not None:
        o = _as_float(origin, "origin")
        if o.shape not in ((3,), v.shape):
            raise InputError(f"origin must have shape (3,) or {v.shape}, got {o.shape}")
        o = np.broadcast_to(o, v.shape)
        slot[:, :, :3, 3] += np.einsum("vnij,vj->vni", slot[:, :, :3, :3], o)  # M T(origin)
        v = v - o
    q = np.einsum("vnij,vnjk->vik", slot, expand(om))
    lin = np.einsum("vn,vnij->vij", om[:, :, 9], slot[:, :, :3, :3])
    with np.errstate(divide="ignore", invalid="ignore"):
        q = q / q[:, 3:4, 3:4]
    q_bar, q_t, p_t = q[:, :3, :3], q[:, :3, 3], q[:, 3, :3]
    cov = q_bar - q_t[:, :, None] * p_t[:, None, :]
    u, _, vt = np.linalg.svd(cov)
    flip = np.linalg.det(u) * np.linalg.det(vt) < 0
    u[flip, :, 2] *= -1.0
    rot = u @ vt
    out_p = scale[:, None] * np.einsum("vij,vj->vi", rot, v - p_t) + q_t

    extent2 = float(np.sum(np.ptp(positions_in, axis=0) ** 2)) if len(v) else 0.0
    degenerate = np.linalg.norm(cov, axis=(1, 2)) <= eps * extent2 * scale
    out_n = np.einsum("vij,vj->vi", rot, n)
    out_n, _ = _safe_normalize(out_n)
    if degenerate.any():
        lbs_n, bad = _cofactor_normals(lin[degenerate], n[degenerate])
        rest_n, _ = _safe_normalize(n[degenerate])
        lbs_n[bad] = rest_n[bad]
        out_n[degenerate] = lbs_n
    return out_p, out_n
