"""Validation and packing of bone poses into the layouts of the shaders' bone blocks.

Pure numpy (no Vulkan). One pose is ``(B, ...)``; a batch of poses is ``(P, B, ...)``.

* DQS bones (``mat2x4 bones[]``, 8 floats): ``(B, 2, 4)`` dual quaternions (real, dual), which are
  **normalized** on the way in (a real part of length below 1e-6 is rejected), or ``(B, 4, 4)``
  matrices. Rigid matrices are converted. Matrices with scale or shear are split into a rigid
  part and a scale/shear part (:func:`vkdqs.dq.decompose_skinning_matrices`) for two-phase DQS,
  unless ``allow_scale=False``, which rejects them naming the bone; reflections are always
  rejected.
* "blend" bones: both of the above for the same rigid transforms: the DQs in the bone block and
  the matrix rows in the second block (``PackedPose.scales``), from ``(B, 4, 4)`` or
  ``(B, 3, 4)`` rigid matrices or ``(B, 2, 4)`` dual quaternions. Scale/shear is rejected,
  naming the bone.
* "cor" bones: the DQ block alone, from the same inputs as "blend" (rigid only).
* LBS bones (``mat3x4 bones[]``, 12 floats: the three rows of the affine matrix): ``(B, 3, 4)``
  or ``(B, 4, 4)`` affine matrices (bottom row must be 0, 0, 0, 1), or ``(B, 2, 4)`` dual
  quaternions, converted.

NaN or inf anywhere is rejected, naming the pose/bone and the value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dq
from .errors import MAX_MAGNITUDE, InputError, LimitError

_MIN_REAL_NORM = 1e-6
# |dual| / |real| below this cannot overflow float64 in dq.normalize (|d|_2 <= 2 |d|_max, and
# the projection d - r (r . d) at most doubles that again).
_OVERFLOW = float(np.finfo(np.float64).max) / 4.0


def _where(index: tuple[int, ...], batched: bool) -> str:
    if batched:
        return f"pose {index[0]} bone {index[1]}"
    return f"bone {index[0]}"


def _as_bones(bones: object, bone_count: int, batched: bool, shapes: tuple[tuple[int, int], ...]):
    arr = dq._as_array(bones, "bones")
    lead = 2 if batched else 1
    want = " or ".join(f"({'P, ' if batched else ''}{bone_count}, {a}, {b})" for a, b in shapes)
    if arr.dtype.kind not in "fiu":
        raise InputError(f"bones must be a float array of shape {want}, got dtype {arr.dtype}")
    if arr.ndim != lead + 2 or tuple(arr.shape[lead:]) not in shapes:
        raise InputError(f"bones must have shape {want}, got {arr.shape}")
    if arr.shape[lead - 1] != bone_count:
        raise InputError(
            f"bones has {arr.shape[lead - 1]} bones, the skinner was made for {bone_count} "
            f"(shape {arr.shape})"
        )
    if batched and arr.shape[0] == 0:
        raise InputError("bones holds no poses (P = 0)")
    arr = arr.astype(np.float64, copy=False)
    finite = np.isfinite(arr).all(axis=(-2, -1))
    if not finite.all():
        index = tuple(int(i) for i in np.argwhere(~finite)[0])
        bad = arr[index][~np.isfinite(arr[index])][0]
        raise InputError(f"{_where(index, batched)} has a non-finite value ({bad})")
    return arr


def _check_magnitude(arr: np.ndarray, batched: bool, what: str) -> None:
    """Reject values the float32 GPU math could overflow on (see errors.MAX_MAGNITUDE)."""
    big = np.abs(arr).max(axis=(-2, -1)) > MAX_MAGNITUDE
    if big.any():
        index = tuple(int(i) for i in np.argwhere(big)[0])
        value = np.abs(arr[index]).max()
        raise LimitError(
            f"{_where(index, batched)}: {what} of magnitude {value:g} exceeds +-{MAX_MAGNITUDE:g} "
            "(the GPU computes in float32; larger values would overflow)"
        )


def pack_dqs(bones: object, bone_count: int, *, batched: bool = False) -> np.ndarray:
    """Validated unit dual quaternions as float32 ``([P,] B, 2, 4)``."""
    arr = _as_bones(bones, bone_count, batched, ((2, 4), (4, 4)))
    if arr.shape[-2] == 4:
        _check_magnitude(arr, batched, "a matrix entry")
    if arr.shape[-2] == 4:
        try:
            out = dq.from_matrices(arr)
        except InputError as exc:
            raise InputError(f"DQS bones must be rigid matrices: {exc}") from None
    else:
        # Measured without squaring overflow: a real part of 1e200 is long, not infinite.
        _, length, scale = dq._rescale(arr[..., 0, :])
        norms = dq._true_length(length, scale)
        small = norms < _MIN_REAL_NORM
        if small.any():
            index = tuple(int(i) for i in np.argwhere(small)[0])
            raise InputError(
                f"{_where(index, batched)}: dual quaternion real part has length "
                f"{norms[index]:.3g}; it must be a (near-)unit rotation quaternion"
            )
        # Normalizing divides the dual part by |real|; where that overflows float64 (it would
        # reach the magnitude check below as inf or NaN), reject it here.
        dual = np.abs(arr[..., 1, :]).max(axis=-1)
        with np.errstate(over="ignore"):
            big = dual > _OVERFLOW * norms
        if big.any():
            index = tuple(int(i) for i in np.argwhere(big)[0])
            raise LimitError(
                f"{_where(index, batched)}: a dual part (half the translation) of magnitude "
                f"{dual[index]:.3g} with a real part of length {norms[index]:.3g} is beyond "
                f"float64's range after normalizing, far past +-{MAX_MAGNITUDE:g} (the GPU "
                "computes in float32)"
            )
        out = dq.normalize(arr)
        _check_magnitude(out, batched, "a dual part (half the translation)")
    return np.ascontiguousarray(out, dtype=np.float32)


@dataclass(frozen=True)
class PackedPose:
    """A validated pose in shader layout.

    ``variant`` names the skinning method whose shaders it needs (:mod:`vkdqs.methods`: a
    "dqs" pose with scale needs "dqs_scale"); ``bones`` is the bone block, ``([P,] B, 2, 4)``
    float32 dual quaternions or ``([P,] B, 3, 4)`` matrix rows, and ``scales`` the second block
    of ``([P,] B, 3, 4)`` rows for the methods that have one (two-phase DQS's ``[S | 0]``,
    "blend"'s ``[A | t]``, "dqs_blender"'s scale matrices), else None.
    """

    variant: str
    bones: np.ndarray
    scales: np.ndarray | None = None


def check_rest_matrices(rest: object, bone_count: int, method: str) -> np.ndarray:
    """``rest_matrices`` for ``method`` as a validated (B, 4, 4) float64 array: finite, affine
    and invertible (each bone's rest frame)."""
    if rest is None:
        raise InputError(
            f"method={method!r} needs rest_matrices: (B, 4, 4), each bone's rest frame in "
            "the space the skinning matrices map from (the inverse of a glTF inverse bind matrix)"
        )
    arr = dq._as_array(rest, "rest_matrices")
    if arr.dtype.kind not in "fiu" or arr.shape != (bone_count, 4, 4):
        raise InputError(
            f"rest_matrices must be a float array of shape ({bone_count}, 4, 4), got shape "
            f"{arr.shape} {arr.dtype}"
        )
    arr = arr.astype(np.float64)
    finite = np.isfinite(arr).all(axis=(1, 2))
    if not finite.all():
        b = int(np.argmin(finite))
        raise InputError(f"rest_matrices[{b}] has a non-finite value")
    _check_magnitude(arr, False, "a rest matrix entry")
    bad = dq.bottom_row_error(arr) > dq.AFFINE_ATOL
    if bad.any():
        b = int(np.argmax(bad))
        raise InputError(f"rest_matrices[{b}] is not affine: bottom row {arr[b, 3].tolist()}")
    singular = dq.matrix_kinds(arr).collapse
    if singular.any():
        b = int(np.argmax(singular))
        det = np.linalg.det(arr[b, :3, :3])
        raise InputError(f"rest_matrices[{b}] is singular (det {det:.3g})")
    return arr


def check_centers(vertex_count: int, centers: object) -> np.ndarray:
    """``centers`` (per-vertex centers of rotation) as a validated (N, 3) float32 array."""
    try:
        c = np.asarray(centers, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"centers must be a (N, 3) array of numbers: {exc}") from None
    if c.shape != (vertex_count, 3):
        raise InputError(f"centers must have shape ({vertex_count}, 3), got {c.shape}")
    bad = ~np.isfinite(c)
    if bad.any():
        v, k = (int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"centers[{v}, {k}] = {c[v, k]}: centers must be finite")
    return c.astype(np.float32)


def pack_blender(
    bones: object, bone_count: int, rest: np.ndarray, *, batched: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(B, 4, 4) skinning matrices for Blender's DQS (any scale, shear or mirroring): each
    bone's DQ as Blender's ``mat4_to_dquat`` splits it (:func:`vkdqs.dq.blender_bone_dqs`; the
    shaders use its rotation) and the matrix's own rows ``[A | t]``: the shaders carry each
    bone's transformed vertex ``M p`` by its rotation, algebraically Blender's pivot-corrected
    DQ blend but exact in float32 where the split's translations are large beside ``M p``."""
    arr = _as_bones(bones, bone_count, batched, ((4, 4),))
    _check_magnitude(arr, batched, "a matrix entry")
    bad = dq.bottom_row_error(arr) > dq.AFFINE_ATOL
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(
            f"{_where(index, batched)}: not an affine matrix, bottom row is "
            f"{arr[index][3].tolist()} (expected [0, 0, 0, 1])"
        )
    singular = dq.matrix_kinds(arr).collapse
    if singular.any():
        index = tuple(int(i) for i in np.argwhere(singular)[0])
        det = np.linalg.det(arr[index][:3, :3])
        raise InputError(f"{_where(index, batched)}: singular matrix (det {det:.3g})")
    dqs, _ = dq.blender_bone_dqs(arr, rest)
    return (
        np.ascontiguousarray(dqs, dtype=np.float32),
        np.ascontiguousarray(arr[..., :3, :], dtype=np.float32),
    )


def pack_dqs_pose(
    bones: object, bone_count: int, *, batched: bool = False, allow_scale: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """DQS bones: ``(dqs, None)``; or, where some matrix has scale/shear (and ``allow_scale``),
    the two-phase split ``(dqs, [S | 0] rows)`` (:func:`vkdqs.dq.decompose_skinning_matrices`)."""
    arr = _as_bones(bones, bone_count, batched, ((2, 4), (4, 4)))
    if arr.shape[-2] == 2 or not allow_scale or not dq.has_scale(arr).any():
        return pack_dqs(arr, bone_count, batched=batched), None
    return _two_phase(arr, batched)


def pack_two_phase(
    bones: object, bone_count: int, *, batched: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Two-phase DQS bones, always: ``(dqs, [S | 0] rows)``, the identity rows for DQs."""
    arr = _as_bones(bones, bone_count, batched, ((2, 4), (4, 4)))
    if arr.shape[-2] == 2:
        dqs = pack_dqs(arr, bone_count, batched=batched)
        scales = np.zeros((*dqs.shape[:-2], 3, 4), np.float32)
        scales[..., [0, 1, 2], [0, 1, 2]] = 1.0
        return dqs, scales
    return _two_phase(arr, batched)


def _two_phase(arr: np.ndarray, batched: bool) -> tuple[np.ndarray, np.ndarray]:
    _check_magnitude(arr, batched, "a matrix entry")
    try:
        dqs, scales = dq.decompose_skinning_matrices(arr)
    except InputError as exc:
        raise InputError(f"DQS bones: {exc}") from None
    return (
        np.ascontiguousarray(dqs, dtype=np.float32),
        np.ascontiguousarray(scales, dtype=np.float32),
    )


def pack_rigid_pair(
    bones: object, bone_count: int, method: str, *, batched: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Rigid bones as float32 ``([P,] B, 2, 4)`` unit DQs and ``([P,] B, 3, 4)`` matrix rows."""
    arr = _as_bones(bones, bone_count, batched, ((2, 4), (3, 4), (4, 4)))
    if arr.shape[-2] == 2:
        dqs = pack_dqs(arr, bone_count, batched=batched)
        rows = dq.to_matrices(dqs.astype(np.float64))[..., :3, :]
        return dqs, np.ascontiguousarray(rows, dtype=np.float32)
    _check_magnitude(arr[..., :3, :], batched, "a matrix entry")
    full = np.zeros((*arr.shape[:-2], 4, 4))
    full[..., :3, :] = arr[..., :3, :]
    full[..., 3, 3] = 1.0
    _check_affine(arr, batched)
    scaled = dq.has_scale(full, atol=dq.AFFINE_ATOL)
    if scaled.any():
        index = tuple(int(i) for i in np.argwhere(scaled)[0])
        raise InputError(
            f"{_where(index, batched)}: method {method!r} needs rigid bone matrices, this one has "
            "scale or shear"
        )
    try:
        dqs = dq.from_matrices(full)
    except InputError as exc:
        raise InputError(f"{method} bones: {exc}") from None
    rows = np.ascontiguousarray(full[..., :3, :], dtype=np.float32)
    return np.ascontiguousarray(dqs, dtype=np.float32), rows


def pack_uniformly_scaled(
    bones: object, bone_count: int, method: str, *, batched: bool = False
) -> np.ndarray:
    """Bone matrices rigid up to one uniform scale that every bone of a pose shares
    (``M_j = s [R_j | t_j]``, the same ``s > 0``: a model's unit scale, :func:`dq.common_scale`)
    as float32 ``([P,] B, 3, 4)`` rows; DQs are rigid (``s = 1``)."""
    arr = _as_bones(bones, bone_count, batched, ((2, 4), (3, 4), (4, 4)))
    if arr.shape[-2] == 2:
        return pack_rigid_pair(arr, bone_count, method, batched=batched)[1]
    _check_magnitude(arr[..., :3, :], batched, "a matrix entry")
    _check_affine(arr, batched)
    each = dq.uniform_scales(arr)
    if np.isnan(each).any():
        index = tuple(int(i) for i in np.argwhere(np.isnan(each))[0])
        raise InputError(
            f"{_where(index, batched)}: method {method!r} needs rigid bone matrices (or ones "
            "with one uniform scale every bone shares), this one has shear, a non-uniform scale "
            "or a mirror"
        )
    common = dq.common_scale(arr)
    if np.isnan(common).any():
        pose = tuple(int(i) for i in np.argwhere(np.isnan(common))[0])
        first = each[pose]
        bone = int(np.argmax(np.abs(first / first[0] - 1.0)))
        raise InputError(
            f"{_where((*pose, bone), batched)}: method {method!r} takes one uniform scale shared "
            f"by every bone of a pose; this bone's is {first[bone]:.6g}, bone 0's {first[0]:.6g}"
        )
    return np.ascontiguousarray(arr[..., :3, :], dtype=np.float32)


def _check_affine(arr: np.ndarray, batched: bool) -> None:
    """(4, 4) bone matrices must have the bottom row (0, 0, 0, 1) (dq.AFFINE_ATOL)."""
    if arr.shape[-2] != 4:
        return
    bad = dq.bottom_row_error(arr) > dq.AFFINE_ATOL
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(
            f"{_where(index, batched)}: not an affine matrix, bottom row is "
            f"{arr[index][3].tolist()} (expected [0, 0, 0, 1])"
        )


def pack_lbs(bones: object, bone_count: int, *, batched: bool = False) -> np.ndarray:
    """Validated affine bone matrices as float32 ``([P,] B, 3, 4)`` (the top three rows)."""
    arr = _as_bones(bones, bone_count, batched, ((3, 4), (4, 4), (2, 4)))
    if arr.shape[-2] == 2:
        arr = dq.to_matrices(pack_dqs(arr, bone_count, batched=batched).astype(np.float64))
    _check_magnitude(arr[..., :3, :], batched, "a matrix entry")
    _check_affine(arr, batched)
    return np.ascontiguousarray(arr[..., :3, :], dtype=np.float32)


def as_matrices(bones) -> np.ndarray:
    """([P,] B, 4, 4) float64 matrices of ([P,] B, 4, 4) / (3, 4) matrices or (2, 4) DQs (the
    poses the packers take, as the float64 references and the motion read them)."""
    b = np.asarray(bones, dtype=np.float64)
    if b.ndim >= 3 and b.shape[-2:] == (2, 4):
        return dq.to_matrices(dq.normalize(b))
    if b.ndim >= 3 and b.shape[-2:] == (3, 4):
        bottom = np.broadcast_to([0.0, 0.0, 0.0, 1.0], (*b.shape[:-2], 1, 4))
        return np.concatenate([b, bottom], axis=-2)
    return b
