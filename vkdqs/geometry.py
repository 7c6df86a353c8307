"""Triangle-mesh geometry in numpy (no Vulkan, no glTF): smooth vertex normals, angle- or
area-weighted, axis-aligned boxes under affine transforms, and the welding of vertices split at
seams (:func:`weld`).

Normals are used by :class:`vkdqs.SkinnedMesh` when normals are omitted and by the glTF loader
for primitives without ``NORMAL``; boxes by the renderer's bounds and framing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["transform_box", "transform_boxes", "vertex_normals", "weld"]


def transform_box(box: ArrayLike, matrix: ArrayLike) -> NDArray[np.float64]:
    """The smallest axis-aligned box (2, 3) around ``box`` ((2, 3): min, max) transformed by the
    (4, 4) affine ``matrix``: the centre moved by the matrix, the half-size by its absolute
    linear part (Arvo 1990), which is the box of the 8 transformed corners."""
    return transform_boxes(np.asarray(box)[None], np.asarray(matrix)[None])[0]


def transform_boxes(boxes: ArrayLike, matrices: ArrayLike) -> NDArray[np.float64]:
    """:func:`transform_box` of K boxes (K, 2, 3) by K matrices (K, 4, 4) at once."""
    b = np.asarray(boxes, np.float64)
    m = np.asarray(matrices, np.float64)
    center, half = 0.5 * (b[:, 0] + b[:, 1]), 0.5 * (b[:, 1] - b[:, 0])
    c = np.matmul(m[:, :3, :3], center[:, :, None])[:, :, 0] + m[:, :3, 3]
    h = np.matmul(np.abs(m[:, :3, :3]), half[:, :, None])[:, :, 0]
    return np.stack([c - h, c + h], axis=1)


def vertex_normals(
    positions: ArrayLike, indices: ArrayLike, /, *, weighting: str = "angle"
) -> NDArray[np.float64]:
    """Smooth vertex normals.

    ``weighting="angle"``: each triangle adds its unit normal times its corner angle to each of
    its three vertices (Thürmer & Wüthrich), which does not depend on how a surface is
    triangulated (the glTF loader's choice). ``"area"``: each adds its normal times its area, the
    classic choice of modelling tools (what :class:`vkdqs.SkinnedMesh` computes).

    Parameters
    ----------
    positions : array_like, [N, 3]
    indices : array_like of int, [3 T]
        Triangle list, counter-clockwise front faces.

    Returns
    -------
    ndarray, [N, 3]
        Unit normals. Vertices used by no triangle of non-zero area get ``(0, 0, 1)`` (they
        draw nothing, but SkinnedMesh needs a unit normal everywhere).
    """
    if weighting not in ("angle", "area"):
        raise ValueError(f"weighting must be 'angle' or 'area', got {weighting!r}")
    area = weighting == "area"
    p = np.asarray(positions, dtype=np.float64)
    tri = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
    n = len(p)
    if len(tri) <= _CHUNK:
        acc = _corner_sums(p, tri, n, area=area)
    else:
        # A pass's temporaries are about 400 bytes per triangle: take the triangles in chunks,
        # each summed over the vertices it touches only, so memory stays bounded however many
        # triangles a file has (a loop over chunks, not over vertices or triangles).
        acc = np.zeros((n, 3))
        for start in range(0, len(tri), _CHUNK):
            part = tri[start : start + _CHUNK]
            touched, local = np.unique(part, return_inverse=True)
            acc[touched] += _corner_sums(p, local.reshape(-1, 3), len(touched), part, area=area)
    norm = np.linalg.norm(acc, axis=1, keepdims=True)
    out = acc / np.where(norm > 1e-12, norm, 1.0)
    out[norm[:, 0] <= 1e-12] = (0.0, 0.0, 1.0)
    return out


#: Triangles per pass of :func:`vertex_normals` (bounds its temporaries to about 25 MB).
_CHUNK = 1 << 16


def _corner_sums(
    p: NDArray[np.float64],
    tri: NDArray[np.int64],
    n: int,
    corners_of: NDArray | None = None,
    *,
    area: bool = False,
) -> NDArray[np.float64]:
    """Sum over triangles of unit face normal times corner angle (or, with ``area``, of the face
    normal scaled by twice the triangle's area), per vertex: ``[n, 3]``.

    ``tri`` indexes the ``n`` output rows; the corners' positions are ``p[corners_of]``
    (``p[tri]`` when None).
    """
    corners = p[tri if corners_of is None else corners_of]  # [T, 3, 3]
    # Edges leaving each corner towards the next and the previous corner.
    nxt = np.roll(corners, -1, axis=1) - corners
    prv = np.roll(corners, 1, axis=1) - corners
    face = np.cross(nxt[:, 0], prv[:, 0])
    if area:
        contrib = np.repeat(face[:, None, :], 3, axis=1)  # |face| = twice the area
        flat = contrib.reshape(-1, 3)
        idx = tri.reshape(-1)
        return np.stack([np.bincount(idx, weights=flat[:, c], minlength=n) for c in range(3)], 1)
    length = np.linalg.norm(face, axis=1, keepdims=True)
    unit = face / np.where(length > 0, length, 1.0)
    angle = np.arctan2(
        np.linalg.norm(np.cross(nxt, prv), axis=-1), np.einsum("tci,tci->tc", nxt, prv)
    )
    contrib = unit[:, None, :] * angle[..., None]  # [T, 3, 3]
    flat_idx = tri.reshape(-1)
    flat = contrib.reshape(-1, 3)
    return np.stack([np.bincount(flat_idx, weights=flat[:, c], minlength=n) for c in range(3)], 1)


def weld(
    positions: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """The distinct positions of a mesh's vertices: what the smoothing deformers (Delta Mush,
    Direct Delta Mush) smooth over, so that a vertex split at a UV seam or a hard edge (glTF
    splits them: same position, separate vertices) is one node of the smoothing graph.

    The rule: vertices weld when their positions are *exactly* equal (``-0.0`` equals ``0.0``);
    no tolerance. A file's split copies are bit-identical (one position written twice), while a
    tolerance would also join vertices that are distinct on purpose (lips or eyelids closed at
    bind time, the two sides of a cut) and would depend on the mesh's scale.

    Parameters
    ----------
    positions : array_like, [N, 3]

    Returns
    -------
    unique : ndarray of float64, [M, 3]
        One position per node, in the order of each node's first vertex (so a mesh with no
        repeated position gives ``unique == positions`` and ``inverse == arange(N)``).
    inverse : ndarray of int64, [N]
        Each vertex's node: ``unique[inverse] == positions``.
    first : ndarray of int64, [M]
        Each node's first vertex (the lowest index): ``unique == positions[first]``.
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3) + 0.0  # -0.0 -> 0.0
    n = len(p)
    if n == 0:
        return p.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((p[:, 2], p[:, 1], p[:, 0]))  # stable: equal rows keep index order
    srt = p[order]
    new = np.ones(n, bool)
    new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    group = np.cumsum(new) - 1  # node of each sorted row, in sorted order
    first = order[new]  # each sorted node's lowest index
    rank = np.empty(len(first), np.int64)
    by_first = np.argsort(first, kind="stable")
    rank[by_first] = np.arange(len(first))
    inverse = np.empty(n, np.int64)
    inverse[order] = rank[group]
    first = first[by_first]
    return p[first], inverse, first.astype(np.int64)
