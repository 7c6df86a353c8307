"""Quaternion and dual quaternion math in pure numpy.

Conventions (written once, used everywhere in vkdqs)
----------------------------------------------------
* A quaternion is an array ``[..., 4]`` ordered ``(x, y, z, w)``, matching glTF and a GLSL
  ``vec4`` (``q.xyz`` is the vector part, ``q.w`` the scalar part).
* A rotation quaternion ``q`` rotates a vector ``v`` as ``q (v, 0) q*``.
  :func:`quat_from_matrix` returns the canonical sign ``w >= 0``; every other function accepts
  either sign (``q`` and ``-q`` are the same rotation).
* A dual quaternion (DQ) is an array ``[..., 2, 4]`` = ``(real, dual)``. For the rigid transform
  "rotate by ``q``, then translate by ``t``" the DQ is ``real = q``, ``dual = 0.5 * (t, 0) ⊗ q``.
  A *unit* DQ has ``|real| = 1`` and ``real · dual = 0``; ``dq`` and ``-dq`` are the same transform.
* Matrices act on column vectors: ``p' = R @ p + t`` and a 4x4 rigid matrix is
  ``[[R, t], [0, 0, 0, 1]]``. :func:`multiply` composes like matrices: ``multiply(a, b)`` applies
  ``b`` first, then ``a``.
* Batch axes come first and broadcast. Inputs may be any array-like; results are float64. Data
  arguments are positional-only, options keyword-only.

The float64 reference skinning that the GPU results are checked against is
:mod:`vkdqs.reference`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vkdqs.errors import InputError, LimitError

__all__ = [
    "COLLAPSE_DET",
    "MatrixKinds",
    "blender_bone_dqs",
    "conjugate",
    "decompose_skinning_matrices",
    "from_matrices",
    "from_rotation_translation",
    "has_scale",
    "matrix_kinds",
    "multiply",
    "normalize",
    "quat_conjugate",
    "quat_from_axis_angle",
    "quat_from_matrix",
    "quat_multiply",
    "quat_rotate",
    "quat_to_matrix",
    "random_rigid",
    "to_matrices",
    "transform_normals",
    "transform_points",
    "translation",
]

# Normals shorter than this after the LBS cofactor transform fall back to the rest normal, relative
# to the matrix's scale (see _cofactor_normals).
_NORMAL_EPS = 1e-6
# |real| below this cannot be normalized.
_NORMALIZE_EPS = 1e-8


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _as_array(x: ArrayLike, name: str) -> np.ndarray:
    """``np.asarray(x)``, with numpy's failures (e.g. ragged nested lists) as an InputError."""
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise InputError(
            f"{name} could not be read as an array ({exc}); pass a numpy array or nested lists "
            "of numbers whose rows all have the same length"
        ) from None


def _as_float(x: ArrayLike, name: str) -> NDArray[np.float64]:
    a = _as_array(x, name)
    if a.dtype == bool or not (
        np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
    ):
        raise InputError(f"{name} must be a real numeric array, got dtype {a.dtype}")
    return a.astype(np.float64, copy=False)


def _check_last(a: NDArray, name: str, tail: tuple[int, ...], expected: str) -> None:
    if a.ndim < len(tail) or a.shape[a.ndim - len(tail) :] != tail:
        raise InputError(f"{name} must have shape {expected}, got shape {a.shape} {a.dtype}")


def _label(kind: str, batch_shape: tuple[int, ...], flat: int) -> str:
    """Human-readable name of one element of a batch: 'matrix 3', 'matrix (1, 2)', 'the matrix'."""
    if len(batch_shape) == 0:
        return f"the {kind}"
    idx = tuple(int(i) for i in np.unravel_index(int(flat), batch_shape))
    if len(idx) == 1:
        return f"{kind} {idx[0]}"
    return f"{kind} {idx}"


def _cross(a: NDArray, b: NDArray) -> NDArray:
    # np.cross is slow on large batches and warns on broadcasting quirks; spell it out.
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx], axis=-1)


def _dot(a: NDArray, b: NDArray) -> NDArray:
    return np.einsum("...i,...i->...", a, b)


def _rescale(v: NDArray, *, dot: bool = False) -> tuple[NDArray, NDArray, NDArray | None]:
    """Lengths ``|v|`` over the last axis, guarded against overflow and underflow of the squares.

    ``|v|`` is ``np.linalg.norm`` (or ``sqrt(v . v)`` with ``dot=True``, the arithmetic the
    caller used before). Where it overflowed (components beyond ~1e154 in float64, ~1e19 in
    float32), or is so small that the squares lost precision, those vectors are divided by their
    largest ``|component|`` ``s`` and measured again.

    Returns ``(v', |v'|, s)`` with ``v' = v / s``. ``s`` is None when no vector needed it (then
    ``v'`` and ``|v'|`` are the inputs, unchanged), else 1 for the other vectors, so ordinary
    vectors keep exactly the caller's arithmetic. The true length is ``|v'| * s``.
    """
    with np.errstate(over="ignore"):
        length = np.asarray(np.sqrt(_dot(v, v)) if dot else np.linalg.norm(v, axis=-1))
    info = np.finfo(length.dtype)
    lowest = np.sqrt(info.tiny) / info.eps  # squares above tiny / eps^2: no precision lost
    off = ~((length >= lowest) & (length <= info.max))  # also NaN, which stays NaN
    if not off.any():
        return v, length, None
    top = np.abs(v[off]).max(axis=-1)
    top = np.where(top > 0.0, top, 1.0)
    v = v.copy()
    v[off] = v[off] / top[..., None]
    length = length.copy()
    length[off] = np.sqrt(_dot(v[off], v[off]))
    scale = np.ones_like(length)
    scale[off] = top
    return v, length, scale


def _true_length(length: NDArray, scale: NDArray | None) -> NDArray:
    """``|v'| * s`` from :func:`_rescale`: the length of the caller's ``v`` (inf past float max)."""
    if scale is None:
        return length
    with np.errstate(over="ignore"):
        return length * scale


def _cofactor_normals(lin: NDArray, n: NDArray) -> tuple[NDArray, NDArray]:
    """``cof(lin) n`` normalized for ``lin [N, 3, 3]``, and where it is degenerate (a collapsed
    blend): no longer than ``_NORMAL_EPS * |lin|_F^2 / 3``. Cofactors scale with the square of
    the matrix, so the bound does too (it is ``_NORMAL_EPS`` for rigid matrices), and a rig whose
    matrices carry a tiny scale (quantized glTF) is not mistaken for collapsed. The same rule as
    ``lbs_cofactor_eps`` in ``shaders/glsl/include/lbs.glsl``.
    """
    c0, c1, c2 = lin[:, :, 0], lin[:, :, 1], lin[:, :, 2]
    cof = np.stack([_cross(c1, c2), _cross(c2, c0), _cross(c0, c1)], axis=-1)
    v = np.einsum("nij,nj->ni", cof, n)
    out, zero = _safe_normalize(v)
    v, length, scale = _rescale(v, dot=True)
    eps = _NORMAL_EPS * np.einsum("nij,nij->n", lin, lin) / 3.0
    with np.errstate(over="ignore"):
        degenerate = zero | ~(_true_length(length, scale) > eps)
    out[degenerate] = 0.0
    return out, degenerate


def _safe_normalize(v: NDArray, eps: float = 0.0) -> tuple[NDArray, NDArray]:
    """Normalize ``v [..., 3]``; returns (unit vectors, mask of vectors with length <= eps).

    Vectors at or below ``eps`` are returned as zeros instead of NaN. Vectors too long or too
    short to square (e.g. components of 1e200) are scaled first, so they keep their direction.
    """
    v, length, scale = _rescale(v, dot=True)
    small = _true_length(length, scale) <= eps
    out = v / np.where(small, 1.0, length)[..., None]
    out[small] = 0.0
    return out, small


# --------------------------------------------------------------------------------------------
# quaternions
# --------------------------------------------------------------------------------------------


def quat_multiply(a: ArrayLike, b: ArrayLike, /) -> NDArray[np.float64]:
    """Hamilton product ``a ⊗ b``.

    Parameters
    ----------
    a, b : array_like, [..., 4]
        Quaternions ``(x, y, z, w)``; leading axes broadcast.

    Returns
    -------
    ndarray, [..., 4]
    """
    a = _as_float(a, "a")
    b = _as_float(b, "b")
    _check_last(a, "a", (4,), "[..., 4]")
    _check_last(b, "b", (4,), "[..., 4]")
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    vec = aw * bv + bw * av + _cross(av, bv)
    w = aw * bw - _dot(av, bv)[..., None]
    return np.concatenate([vec, w], axis=-1)


def quat_conjugate(q: ArrayLike, /) -> NDArray[np.float64]:
    """Conjugate ``(-x, -y, -z, w)``; the inverse rotation for a unit quaternion.

    Parameters
    ----------
    q : array_like, [..., 4]

    Returns
    -------
    ndarray, [..., 4]
    """
    q = _as_float(q, "q")
    _check_last(q, "q", (4,), "[..., 4]")
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def quat_rotate(q: ArrayLike, v: ArrayLike, /) -> NDArray[np.float64]:
    """Rotate vectors ``v`` by unit quaternions ``q``.

    Uses the shader's formula ``v + 2 cross(q.xyz, cross(q.xyz, v) + q.w v)``, which equals
    ``q v q*`` for a unit ``q`` (it is not scale-invariant, so pass unit quaternions).

    Parameters
    ----------
    q : array_like, [..., 4]
    v : array_like, [..., 3]

    Returns
    -------
    ndarray, [..., 3]
    """
    q = _as_float(q, "q")
    v = _as_float(v, "v")
    _check_last(q, "q", (4,), "[..., 4]")
    _check_last(v, "v", (3,), "[..., 3]")
    return _rotate(q, v)


def _rotate(q: NDArray, v: NDArray) -> NDArray:
    qv = q[..., :3]
    return v + 2.0 * _cross(qv, _cross(qv, v) + q[..., 3:] * v)


def quat_from_matrix(r: ArrayLike, /) -> NDArray[np.float64]:
    """Unit quaternions of rotation matrices (Shepperd's method, vectorized).

    Parameters
    ----------
    r : array_like, [..., 3, 3]
        Rotation matrices. Not validated; a nearly orthonormal matrix gives the nearest-ish
        rotation's quaternion, normalized.

    Returns
    -------
    ndarray, [..., 4]
        Unit quaternions with ``w >= 0``.
    """
    r = _as_float(r, "r")
    _check_last(r, "r", (3, 3), "[..., 3, 3]")
    r00, r01, r02 = r[..., 0, 0], r[..., 0, 1], r[..., 0, 2]
    r10, r11, r12 = r[..., 1, 0], r[..., 1, 1], r[..., 1, 2]
    r20, r21, r22 = r[..., 2, 0], r[..., 2, 1], r[..., 2, 2]
    # K = 4 q q^T (order x, y, z, w) written from the matrix entries. Any row i of K divided by
    # 2 sqrt(K_ii) is q (up to sign); Shepperd's trick is to use the row with the largest diagonal,
    # which is >= 1 for a rotation, so the division is always well conditioned (incl. 180 deg).
    xx = 1.0 + r00 - r11 - r22
    yy = 1.0 - r00 + r11 - r22
    zz = 1.0 - r00 - r11 + r22
    ww = 1.0 + r00 + r11 + r22
    xy, xz, yz = r01 + r10, r02 + r20, r12 + r21
    wx, wy, wz = r21 - r12, r02 - r20, r10 - r01
    k = np.stack(
        [
            np.stack([xx, xy, xz, wx], axis=-1),
            np.stack([xy, yy, yz, wy], axis=-1),
            np.stack([xz, yz, zz, wz], axis=-1),
            np.stack([wx, wy, wz, ww], axis=-1),
        ],
        axis=-2,
    )
    diag = np.stack([xx, yy, zz, ww], axis=-1)
    best = np.argmax(diag, axis=-1)[..., None]
    row = np.take_along_axis(k, best[..., None], axis=-2)[..., 0, :]
    q = row / np.linalg.norm(row, axis=-1, keepdims=True)
    return np.where(q[..., 3:] < 0.0, -q, q)


def quat_to_matrix(q: ArrayLike, /) -> NDArray[np.float64]:
    """Rotation matrices of unit quaternions.

    Parameters
    ----------
    q : array_like, [..., 4]

    Returns
    -------
    ndarray, [..., 3, 3]
    """
    q = _as_float(q, "q")
    _check_last(q, "q", (4,), "[..., 4]")
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def quat_from_axis_angle(axis: ArrayLike, angle: ArrayLike, /) -> NDArray[np.float64]:
    """Unit quaternions rotating by ``angle`` radians about ``axis`` (right-hand rule).

    Parameters
    ----------
    axis : array_like, [..., 3]
        Rotation axes; normalized here, must be non-zero.
    angle : array_like, [...]
        Angles in radians; broadcasts against ``axis[..., 0]``.

    Returns
    -------
    ndarray, [..., 4]
    """
    axis = _as_float(axis, "axis")
    angle = _as_float(angle, "angle")
    _check_last(axis, "axis", (3,), "[..., 3]")
    unit, small = _safe_normalize(axis, 1e-12)
    if np.any(small):
        flat = int(np.argmax(small.ravel()))
        raise InputError(f"{_label('axis', small.shape, flat)} has zero length")
    half = 0.5 * angle[..., None]
    vec = np.sin(half) * unit
    w = np.broadcast_to(np.cos(half), (*vec.shape[:-1], 1))
    return np.concatenate([vec, w], axis=-1)


# --------------------------------------------------------------------------------------------
# dual quaternions
# --------------------------------------------------------------------------------------------


def _check_dq(dq: ArrayLike, name: str) -> NDArray[np.float64]:
    a = _as_float(dq, name)
    _check_last(a, name, (2, 4), "[..., 2, 4]")
    return a


def from_rotation_translation(q: ArrayLike, t: ArrayLike, /) -> NDArray[np.float64]:
    """Unit DQs for "rotate by ``q``, then translate by ``t``".

    Parameters
    ----------
    q : array_like, [..., 4]
        Rotation quaternions; normalized here, must be non-zero.
    t : array_like, [..., 3]
        Translations.

    Returns
    -------
    ndarray, [..., 2, 4]
    """
    q = _as_float(q, "q")
    t = _as_float(t, "t")
    _check_last(q, "q", (4,), "[..., 4]")
    _check_last(t, "t", (3,), "[..., 3]")
    q, length, _ = _rescale(q)
    if not np.all(length > 0.0):
        flat = int(np.argmax(~(length > 0.0).ravel()))
        raise InputError(
            f"{_label('quaternion', length.shape, flat)} has length {length.ravel()[flat]}; "
            "a rotation quaternion must be non-zero and finite"
        )
    q = q / length[..., None]
    tq = np.concatenate([t, np.zeros((*t.shape[:-1], 1))], axis=-1)
    dual = 0.5 * quat_multiply(tq, q)
    real, dual = np.broadcast_arrays(q, dual)
    return np.stack([real, dual], axis=-2)


#: How far an affine matrix's bottom row may be from (0, 0, 0, 1): exact in any exporter's
#: float32 output, so anything beyond rounding noise means a projective or garbled matrix.
AFFINE_ATOL = 1e-4


def bottom_row_error(m: NDArray[np.float64]) -> NDArray[np.float64]:
    """``max |m[..., 3, :] - (0, 0, 0, 1)|`` per matrix of ``m [..., 4, 4]``: the one check of
    affinity (compare with :data:`AFFINE_ATOL`) that the pose packer, the glTF loader and this
    module share."""
    return np.abs(m[..., 3, :] - np.array([0.0, 0.0, 0.0, 1.0])).max(axis=-1)


def _affine_batch(
    m: ArrayLike, *, bottom_atol: float = AFFINE_ATOL, kind: str
) -> tuple[NDArray[np.float64], tuple[int, ...]]:
    """``m [..., 4, 4]`` as ``(flat [M, 4, 4], batch shape)``, after checking that every matrix is
    finite and has the bottom row (0, 0, 0, 1); errors name the first offending matrix."""
    m = _as_float(m, "m")
    _check_last(m, "m", (4, 4), "[..., 4, 4]")
    batch = m.shape[:-2]
    flat = m.reshape(-1, 4, 4)
    finite = np.isfinite(flat).all(axis=(1, 2))
    if not finite.all():
        i = int(np.argmin(finite))
        r, c = np.argwhere(~np.isfinite(flat[i]))[0]
        who = _label("matrix", batch, i)
        raise InputError(f"{who} has a non-finite element: m[{r}, {c}] = {flat[i, r, c]}")
    bottom_err = bottom_row_error(flat)
    if np.any(bottom_err > bottom_atol):
        i = int(np.argmax(bottom_err > bottom_atol))
        row = np.array2string(flat[i, 3], precision=4, separator=", ")
        who = _label("matrix", batch, i)
        raise InputError(f"{who} has bottom row {row}; {kind} needs (0, 0, 0, 1)")
    return flat, batch


def from_matrices(m: ArrayLike, /, *, atol: float = AFFINE_ATOL) -> NDArray[np.float64]:
    """Unit DQs of rigid 4x4 matrices, after checking that they are rigid.

    Parameters
    ----------
    m : array_like, [..., 4, 4]
        Rigid transforms ``[[R, t], [0, 0, 0, 1]]``.
    atol : float, keyword-only
        Tolerance for the bottom row and for ``R^T R = I``.

    Returns
    -------
    ndarray, [..., 2, 4]

    Raises
    ------
    InputError
        Wrong shape; or, naming the index of the first offending matrix: a non-finite element, a
        bottom row other than ``(0, 0, 0, 1)``, scale/shear (``|R^T R - I| > atol``) or a
        reflection (``det R < 0``). DQs represent rigid transforms only.
    """
    flat, batch = _affine_batch(m, bottom_atol=atol, kind="a rigid matrix")
    rot = flat[:, :3, :3]
    ortho_err = np.abs(np.swapaxes(rot, 1, 2) @ rot - np.eye(3)).max(axis=(1, 2))
    det = np.linalg.det(rot) if len(rot) else np.zeros(0)
    bad = (ortho_err > atol) | (det <= 0.0)
    if np.any(bad):
        i = int(np.argmax(bad))
        who = _label("matrix", batch, i)
        if ortho_err[i] > atol:
            raise InputError(
                f"{who} is not rigid: scale/shear, |R^T R - I| max = {ortho_err[i]:.3g}"
                f" (atol = {atol:g})"
            )
        raise InputError(f"{who} is a reflection (det = {det[i]:.3g})")

    q = quat_from_matrix(flat[:, :3, :3])
    dq = from_rotation_translation(q, flat[:, :3, 3])
    return dq.reshape((*batch, 2, 4))


def has_scale(m: ArrayLike, /, *, atol: float = 1e-5) -> NDArray[np.bool_]:
    """Whether each affine matrix ``[..., 4, 4]`` (or ``[..., 3, 4]``) has scale or shear.

    True where ``max |A^T A - I| > atol`` for the linear part ``A``.
    """
    a = _as_float(m, "m")
    if a.ndim < 2 or a.shape[-2:] not in ((4, 4), (3, 4)):
        raise InputError(f"m must have shape [..., 4, 4] or [..., 3, 4], got shape {a.shape}")
    a = a[..., :3, :3]
    return np.abs(np.swapaxes(a, -1, -2) @ a - np.eye(3)).max(axis=(-2, -1)) > atol


#: A matrix whose 3x3 part ``A`` has ``|det A| <= COLLAPSE_DET * s^3``, ``s`` its largest
#: singular value, is singular (collapsed): no method but LBS can skin it, and two-phase DQS
#: cannot split it. Relative to the matrix's own scale, so a uniformly scaled matrix is as
#: regular as a rigid one: gltfpack's quantized rigs carry a scale of 1e-4 (det 1e-12), and
#: 1e-12 is where a unit matrix was judged singular before.
COLLAPSE_DET = 1e-12


def relative_det(m: NDArray[np.float64]) -> NDArray[np.float64]:
    """``det A / s^3`` of each 3x3 part ``A`` of ``m [..., 3+, 3+]``, ``s`` its largest singular
    value: the determinant of the matrix scaled to a largest axis of 1 (0 for a zero matrix).
    Compare its magnitude with :data:`COLLAPSE_DET`."""
    a = m[..., :3, :3]
    if not a.size:
        return np.zeros(a.shape[:-2])
    top = np.linalg.svd(a, compute_uv=False)[..., 0]
    det = np.linalg.det(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(top > 0.0, det / top**3, 0.0)


class MatrixKinds(NamedTuple):
    """Per matrix of :func:`matrix_kinds`: has scale or shear, mirrors, is singular."""

    scale: NDArray[np.bool_]
    reflection: NDArray[np.bool_]
    collapse: NDArray[np.bool_]


def matrix_kinds(m: ArrayLike, /, *, atol: float = AFFINE_ATOL) -> MatrixKinds:
    """What each affine matrix ``[..., 4, 4]`` (or ``[..., 3, 4]``) is, as the skinning methods
    judge it (:meth:`vkdqs.methods.SkinningMethod.check` and the pose packers alike): scale or
    shear (``max |A^T A - I| > atol``), a reflection (``det A < 0``, not singular), singular
    (``|det A| <= COLLAPSE_DET`` times the cube of its largest singular value, see
    :func:`relative_det`)."""
    a = _as_float(m, "m")
    if a.ndim < 2 or a.shape[-2:] not in ((4, 4), (3, 4)):
        raise InputError(f"m must have shape [..., 4, 4] or [..., 3, 4], got shape {a.shape}")
    lin = a[..., :3, :3]
    det = relative_det(lin)
    collapse = np.abs(det) <= COLLAPSE_DET
    scale = np.abs(np.swapaxes(lin, -1, -2) @ lin - np.eye(3)).max(axis=(-2, -1)) > atol
    return MatrixKinds(scale, (det < 0.0) & ~collapse, collapse)


def uniform_scales(m: ArrayLike, /, *, atol: float = AFFINE_ATOL) -> NDArray[np.float64]:
    """The uniform scale ``s`` of each affine matrix ``[..., 4, 4]`` (or ``[..., 3, 4]``) whose
    3x3 part ``A`` is ``s`` times a rotation (``max |A^T A / s^2 - I| <= atol``, ``det A > 0``),
    NaN where it is not one (shear, a non-uniform scale, a mirror, a collapse): 1 for a rigid
    matrix, the factor of a model's unit scale (joint matrices of a mesh stored in centimetres
    under a metre scene)."""
    a = _as_float(m, "m")
    if a.ndim < 2 or a.shape[-2:] not in ((4, 4), (3, 4)):
        raise InputError(f"m must have shape [..., 4, 4] or [..., 3, 4], got shape {a.shape}")
    lin = a[..., :3, :3]
    s2 = (lin * lin).sum(axis=(-2, -1)) / 3.0
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = lin / np.sqrt(s2)[..., None, None]
        off = np.abs(np.swapaxes(unit, -1, -2) @ unit - np.eye(3)).max(axis=(-2, -1))
        ok = (s2 > 0.0) & (off <= atol) & (np.linalg.det(unit) > 0.0)
    return np.where(ok, np.sqrt(s2), np.nan)


def common_scale(m: ArrayLike, /, *, atol: float = AFFINE_ATOL) -> NDArray[np.float64]:
    """One uniform scale that every matrix of each pose ``[..., B, 4, 4]`` shares
    (:func:`uniform_scales`, equal within ``atol`` relative to the first bone's): per pose,
    NaN where the pose has no such scale."""
    s = uniform_scales(m, atol=atol)
    if s.ndim == 0 or s.shape[-1] == 0:
        return np.ones(s.shape[:-1]) if s.ndim else s
    first = s[..., :1]
    with np.errstate(invalid="ignore"):
        same = (np.abs(s / first - 1.0) <= atol).all(axis=-1)
    return np.where(same, first[..., 0], np.nan)


def decompose_skinning_matrices(m: ArrayLike, /) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Split affine skinning matrices into a rigid part and a scale/shear part.

    ``M = [A | t]`` with ``A = R S`` (polar decomposition: ``R`` a rotation, ``S`` symmetric
    positive definite), so ``M p = R (S p) + t``: scale/shear acts in rest space, then the rigid
    transform. Two-phase DQS blends the ``S`` linearly and the rigid parts as dual quaternions.

    Parameters
    ----------
    m : array_like, [..., 4, 4]
        Affine matrices (bottom row ``0, 0, 0, 1``) with ``det A > 0``.

    Returns
    -------
    dqs : ndarray, [..., 2, 4]
        Unit dual quaternions of ``(R, t)``.
    scales : ndarray, [..., 3, 4]
        ``[S | 0]``: the three rows of the scale/shear matrix with a zero translation column.

    Raises
    ------
    InputError
        Naming the first offending matrix: non-finite, not affine, or ``det A <= 0`` (a
        reflection or a collapse, which no rotation times a positive scale can represent).
    """
    flat, batch = _affine_batch(m, kind="an affine matrix")
    det = np.linalg.det(flat[:, :3, :3]) if len(flat) else np.zeros(0)
    bad = ~(relative_det(flat) > COLLAPSE_DET)
    if np.any(bad):
        i = int(np.argmax(bad))
        raise InputError(
            f"{_label('matrix', batch, i)} has det = {det[i]:.3g}: a reflection or collapse "
            "cannot be skinned with DQS"
        )
    u, sigma, vt = np.linalg.svd(flat[:, :3, :3])
    rot = u @ vt  # det > 0 because det A > 0
    scale = np.swapaxes(vt, 1, 2) @ (sigma[:, :, None] * vt)
    dqs = from_rotation_translation(quat_from_matrix(rot), flat[:, :3, 3])
    scales = np.concatenate([scale, np.zeros((len(flat), 3, 1))], axis=2)
    return dqs.reshape((*batch, 2, 4)), scales.reshape((*batch, 3, 4))


def translation(dq: ArrayLike, /) -> NDArray[np.float64]:
    """Translations of unit DQs: ``t = 2 (dual ⊗ real*).xyz``.

    Parameters
    ----------
    dq : array_like, [..., 2, 4]

    Returns
    -------
    ndarray, [..., 3]
    """
    dq = _check_dq(dq, "dq")
    return _translation(dq[..., 0, :], dq[..., 1, :])


def _translation(r: NDArray, d: NDArray) -> NDArray:
    # The shader's expansion of 2 (d ⊗ r*).xyz; identical arithmetic keeps the oracle exact.
    return 2.0 * (
        r[..., 3:] * d[..., :3] - d[..., 3:] * r[..., :3] + _cross(r[..., :3], d[..., :3])
    )


def to_matrices(dq: ArrayLike, /) -> NDArray[np.float64]:
    """Rigid 4x4 matrices of unit DQs.

    Parameters
    ----------
    dq : array_like, [..., 2, 4]

    Returns
    -------
    ndarray, [..., 4, 4]
    """
    dq = _check_dq(dq, "dq")
    out = np.zeros((*dq.shape[:-2], 4, 4))
    out[..., :3, :3] = quat_to_matrix(dq[..., 0, :])
    out[..., :3, 3] = _translation(dq[..., 0, :], dq[..., 1, :])
    out[..., 3, 3] = 1.0
    return out


def multiply(a: ArrayLike, b: ArrayLike, /) -> NDArray[np.float64]:
    """Compose DQs: ``to_matrices(multiply(a, b)) == to_matrices(a) @ to_matrices(b)``.

    Parameters
    ----------
    a, b : array_like, [..., 2, 4]
        Leading axes broadcast.

    Returns
    -------
    ndarray, [..., 2, 4]
    """
    a = _check_dq(a, "a")
    b = _check_dq(b, "b")
    # (ar + e ad)(br + e bd) = ar br + e (ar bd + ad br), since e^2 = 0.
    real = quat_multiply(a[..., 0, :], b[..., 0, :])
    dual = quat_multiply(a[..., 0, :], b[..., 1, :]) + quat_multiply(a[..., 1, :], b[..., 0, :])
    return np.stack([real, dual], axis=-2)


def conjugate(dq: ArrayLike, /) -> NDArray[np.float64]:
    """Quaternion conjugate of both parts; for a unit DQ this is the inverse transform.

    Parameters
    ----------
    dq : array_like, [..., 2, 4]

    Returns
    -------
    ndarray, [..., 2, 4]
    """
    dq = _check_dq(dq, "dq")
    return dq * np.array([-1.0, -1.0, -1.0, 1.0])


def normalize(dq: ArrayLike, /) -> NDArray[np.float64]:
    """Project DQs onto unit DQs.

    Divides both parts by ``|real|`` and then removes the dual part's component along the real
    part (``d -= r (r · d)``), so that ``|r| = 1`` and ``r · d = 0`` hold exactly.

    Parameters
    ----------
    dq : array_like, [..., 2, 4]

    Returns
    -------
    ndarray, [..., 2, 4]

    Raises
    ------
    InputError
        Naming the first DQ with a non-finite element or ``|real| < 1e-8``.
    LimitError
        Naming the first DQ whose normalized dual part does not fit in float64
        (``|dual| / |real|`` beyond ~1e308).

    Notes
    -----
    A real part too long to square in float64 (components beyond ~1e154) is divided by its
    largest component first, so ``1e200 * dq`` normalizes like ``dq``.
    """
    dq = _check_dq(dq, "dq")
    finite = np.isfinite(dq).all(axis=(-2, -1))
    if not finite.all():
        i = int(np.argmax(~finite.ravel()))
        who = _label("dual quaternion", finite.shape, i)
        bad = dq.reshape(-1, 8)[i]
        raise InputError(f"{who} has a non-finite element ({bad[~np.isfinite(bad)][0]})")
    real, length, scale = _rescale(dq[..., 0, :])
    true_length = _true_length(length, scale)
    small = ~(true_length >= _NORMALIZE_EPS)
    if np.any(small):
        i = int(np.argmax(small.ravel()))
        who = _label("dual quaternion", small.shape, i)
        raise InputError(
            f"{who} has |real| = {true_length.ravel()[i]:.3g} < {_NORMALIZE_EPS:g}; "
            "cannot normalize"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        dual = dq[..., 1, :] if scale is None else dq[..., 1, :] / scale[..., None]
        r = real / length[..., None]
        d = dual / length[..., None]
        d = d - r * _dot(r, d)[..., None]
    overflow = ~np.isfinite(d).all(axis=-1)
    if np.any(overflow):
        i = int(np.argmax(overflow.ravel()))
        who = _label("dual quaternion", overflow.shape, i)
        raise LimitError(
            f"{who}: its dual part is too large for its real part (|real| = "
            f"{true_length.ravel()[i]:.3g}); the normalized dual part overflows float64"
        )
    return np.stack([r, d], axis=-2)


def transform_points(dq: ArrayLike, p: ArrayLike, /) -> NDArray[np.float64]:
    """Apply unit DQs to points: rotate, then translate.

    Parameters
    ----------
    dq : array_like, [..., 2, 4]
    p : array_like, [..., 3]
        Leading axes broadcast against ``dq``'s.

    Returns
    -------
    ndarray, [..., 3]
    """
    dq = _check_dq(dq, "dq")
    p = _as_float(p, "p")
    _check_last(p, "p", (3,), "[..., 3]")
    r, d = dq[..., 0, :], dq[..., 1, :]
    return _rotate(r, p) + _translation(r, d)


def transform_normals(dq: ArrayLike, n: ArrayLike, /) -> NDArray[np.float64]:
    """Apply the rotation of unit DQs to normals (or any direction vectors).

    Parameters
    ----------
    dq : array_like, [..., 2, 4]
    n : array_like, [..., 3]

    Returns
    -------
    ndarray, [..., 3]
        Rotated vectors (lengths are preserved, not renormalized).
    """
    dq = _check_dq(dq, "dq")
    n = _as_float(n, "n")
    _check_last(n, "n", (3,), "[..., 3]")
    return _rotate(dq[..., 0, :], n)


def random_rigid(
    n: int,
    rng: np.random.Generator,
    /,
    *,
    max_angle: float = np.pi,
    max_translation: float = 1.0,
) -> NDArray[np.float64]:
    """Random unit DQs for tests.

    Parameters
    ----------
    n : int
        Number of transforms.
    rng : numpy.random.Generator
    max_angle : float, keyword-only
        Angles are uniform in ``[0, max_angle]`` radians about uniformly random axes.
    max_translation : float, keyword-only
        Translations are uniform in the cube ``[-max_translation, max_translation]^3``.

    Returns
    -------
    ndarray, [n, 2, 4]
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise InputError(f"n must be an int >= 0, got {n!r}")
    if not isinstance(rng, np.random.Generator):
        raise InputError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    axis = rng.normal(size=(n, 3))
    # A zero Gaussian sample has probability zero, but guard it so the result is always valid.
    axis[np.linalg.norm(axis, axis=1) < 1e-12] = (1.0, 0.0, 0.0)
    angle = rng.uniform(0.0, max_angle, size=n)
    t = rng.uniform(-max_translation, max_translation, size=(n, 3))
    return from_rotation_translation(quat_from_axis_angle(axis, angle), t)


# --------------------------------------------------------------------------------------------
# Blender's "Preserve Volume" (armature_deform.cc, math_rotation_c.cc)
# --------------------------------------------------------------------------------------------


def _orthogonalize_keep_y(m: NDArray) -> NDArray:
    """Blender's ``orthogonalize_m4(R, 1)`` on the 3x3 parts ``[..., 3, 3]`` (columns are axes):
    Y normalized, Z = normalize(X x Y), X = Y x Z (a right-handed frame even for det < 0)."""
    x, y = m[..., :, 0], m[..., :, 1]
    y = y / np.linalg.norm(y, axis=-1, keepdims=True)
    z = _cross(x, y)
    z = z / np.linalg.norm(z, axis=-1, keepdims=True)
    x = _cross(y, z)
    return np.stack([x, y, z], axis=-1)


def blender_bone_dqs(
    matrices: ArrayLike, rest_matrices: ArrayLike, /
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Blender's ``mat4_to_dquat(dq, basemat=rest, mat=matrix)`` for every bone.

    Blender's bone rest frames (``bone.matrix_local``) are rigid; a glTF bind matrix may carry
    a scale (a rig built in centimetres or inches: the Fox's is 0.0254), which Blender's
    importer puts on the armature, not on the bones. So ``rest`` is the rest matrix made rigid
    first: its axes orthonormalized with the Y axis kept (the bone's direction, as Blender's
    ``orthogonalize_m4(R, 1)``), its translation kept. A rigid skinning matrix then gives
    plain DQS, as Blender's "Preserve Volume" does on such a rig.

    Returns ``([..., B, 2, 4] unit DQs of the rigid parts, [..., B, 3, 4] scale matrices)``:
    where ``matrix @ rest`` has scale, shear or a reflection (the bone's axis lengths differ
    from 1 by more than 1e-4 in norm, or the 3x3 part is not orthonormal within 1e-5, or
    det < 0), it is split in the bone's rest frame: ``baseRS = matrix @ rest``, ``baseR`` its
    rotation with the Y axis kept (Gram-Schmidt) and baseRS's translation,
    ``R = baseR @ rest^-1``, ``scale = rest @ (baseR^-1 @ baseRS) @ rest^-1``; otherwise
    ``R = matrix`` and ``scale = I``. The DQ holds ``R``; ``matrix = R @ scale``.
    """
    m = _as_float(matrices, "matrices")
    base = _as_float(rest_matrices, "rest_matrices")
    if m.ndim < 3 or m.shape[-2:] != (4, 4):
        raise InputError(f"matrices must have shape [..., B, 4, 4], got shape {m.shape}")
    if base.ndim != 3 or base.shape[1:] != (4, 4) or base.shape[0] != m.shape[-3]:
        raise InputError(
            f"rest_matrices must have shape ({m.shape[-3]}, 4, 4), got shape {base.shape}"
        )
    base = base.copy()
    base[:, :3, :3] = _orthogonalize_keep_y(base[:, :3, :3])
    base_rs = m @ base
    size = np.linalg.norm(base_rs[..., :3, :3], axis=-2)  # axis (column) lengths
    a = m[..., :3, :3]
    gram = np.swapaxes(a, -1, -2) @ a
    ortho = (np.abs(gram - np.eye(3)) <= 1e-5).all(axis=(-2, -1))
    has_scale = ~ortho | (np.linalg.det(m) < 0.0) | (((size - 1.0) ** 2).sum(axis=-1) > 1e-8)
    base_r = np.zeros_like(base_rs)
    base_r[..., :3, :3] = quat_to_matrix(
        quat_from_matrix(_orthogonalize_keep_y(base_rs[..., :3, :3]))
    )
    base_r[..., :3, 3] = base_rs[..., :3, 3]
    base_r[..., 3, 3] = 1.0
    base_inv = np.linalg.inv(base)
    split_r = base_r @ base_inv
    s = np.linalg.inv(base_r) @ base_rs
    scale = base @ s @ base_inv
    r = np.where(has_scale[..., None, None], split_r, m)
    scale = np.where(has_scale[..., None, None], scale, np.eye(4))
    rot = r[..., :3, :3]
    rot = rot / np.linalg.norm(rot, axis=-2, keepdims=True)  # mat4_to_quat normalizes axes
    q = quat_from_matrix(rot)
    return from_rotation_translation(q, r[..., :3, 3]), scale[..., :3, :]
