"""Optimized centers of rotation (Le & Hodgins, SIGGRAPH 2016): the numpy side (no Vulkan).

Each vertex ``i`` gets a center of rotation (eq. 4 of the paper)::

    p*_i = sum_t s(w_i, w_t) A_t c_t / sum_t s(w_i, w_t) A_t

over the mesh's triangles ``t`` (``w_t`` the mean of its corners' weight vectors, ``c_t`` its
centroid, ``A_t`` its area), with the weight similarity (eq. 3)::

    s(a, b) = sum_{j != k} a_j a_k b_j b_k exp(-(a_j b_k - a_k b_j)^2 / sigma^2)

A term needs both bones ``j`` and ``k`` in both vectors, so the sum runs over the bone pairs of
the vertex's (<= 8) influences only. A vertex whose similarity to every triangle is zero (one
influence, or no triangle shares two of its bones) gets itself as its center, where CoR skinning
equals LBS.

* :func:`centers_of_rotation_reference`: the float64 brute force, every vertex against every
  triangle, for tests and benchmarks;
* :func:`pair_bins`: the data the GPU precomputation
(:func:`vkdqs.methods.cor.gpu.centers_of_rotation`)
  reads: every (triangle, bone pair) term it can need, grouped by bone pair, with triangles whose
  two weights fall in the same cell of a fine grid merged into one entry (area-weighted mean
  weights, summed ``A`` and ``A c``): the paper's "cluster triangles by weights" acceleration,
  in the 2-D space that a pair's term depends on;
* :func:`finish_centers`: the division, and the vertices that keep themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...errors import InputError
from ...mesh import SkinnedMesh

__all__ = [
    "DEFAULT_SIGMA",
    "PairBins",
    "centers_of_rotation_reference",
    "finish_centers",
    "pair_bins",
]

DEFAULT_SIGMA = 0.1
#: Grid cells per unit weight when merging a pair's triangles (see :func:`pair_bins`).
DEFAULT_RESOLUTION = 4096
#: A vertex whose total similarity ``sum_t s A_t`` is at most this fraction of the mesh's area
#: keeps itself as its center (zero similarity; the GPU's float32 exp() underflows sooner).
SIMILARITY_EPS = 1e-12


def check_cor_mesh(mesh: object, bone_count: object, sigma: object) -> tuple[int, float]:
    """Validate the arguments of a centers-of-rotation computation; returns (B, sigma)."""
    if not isinstance(mesh, SkinnedMesh):
        raise InputError(f"mesh must be a vkdqs.SkinnedMesh, got {type(mesh).__name__}")
    if mesh.indices is None or mesh.indices.size == 0:
        raise InputError(
            "centers of rotation need the mesh's triangles: SkinnedMesh(..., indices=...) "
            "(the similarity is integrated over triangle areas)"
        )
    if isinstance(bone_count, bool) or not isinstance(bone_count, (int, np.integer)):
        raise InputError(f"bone_count must be an int, got {bone_count!r}")
    if bone_count < 1:
        raise InputError(f"bone_count must be >= 1, got {bone_count}")
    mesh.check_joints(int(bone_count))
    try:
        s = float(sigma)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"sigma must be a positive number, got {sigma!r}") from None
    if not (np.isfinite(s) and s > 0.0):
        raise InputError(f"sigma must be a positive finite number, got {sigma!r}")
    return int(bone_count), s


def _triangles(mesh: SkinnedMesh) -> tuple[NDArray, NDArray, NDArray]:
    """(T, 3) corner indices, (T,) areas and (T, 3) centroids, float64."""
    tri = mesh.indices.reshape(-1, 3).astype(np.int64)
    p = mesh.positions.astype(np.float64)[tri]
    area = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    return tri, area, p.mean(axis=1)


def _triangle_weights_dense(mesh: SkinnedMesh, tri: NDArray, bone_count: int) -> NDArray:
    """(T, B) mean corner weights."""
    t = len(tri)
    out = np.zeros((t, bone_count))
    rows = np.repeat(np.arange(t), 3 * mesh.slots)
    j = mesh.joints[tri].reshape(-1)
    w = mesh.weights.astype(np.float64)[tri].reshape(-1) / 3.0
    np.add.at(out, (rows, j), w)
    return out


def finish_centers(
    mesh: SkinnedMesh,
    numerator: NDArray,
    denominator: NDArray,
    total_area: float,
    rows: NDArray | None = None,
) -> NDArray[np.float32]:
    """``numerator / denominator``, or the vertex itself where the similarity is ~0 (for the
    vertices ``rows``, default all)."""
    num = np.asarray(numerator, np.float64)
    den = np.asarray(denominator, np.float64)
    keep = ~(den > SIMILARITY_EPS * max(total_area, np.finfo(np.float64).tiny))
    safe = np.where(keep, 1.0, den)
    out = num / safe[:, None]
    positions = mesh.positions if rows is None else mesh.positions[rows]
    out[keep] = positions[keep]
    return out.astype(np.float32)


def centers_of_rotation_reference(
    mesh: SkinnedMesh,
    *,
    bone_count: int,
    sigma: float = DEFAULT_SIGMA,
    chunk: int = 256,
    vertices: NDArray | None = None,
) -> NDArray[np.float32]:
    """Eq. 4 of Le & Hodgins 2016 in float64, every vertex against every triangle.

    O(vertices x triangles x bone pairs of a vertex): a reference for tests and benchmarks,
    not for large meshes (use :func:`vkdqs.centers_of_rotation`). ``vertices`` (indices)
    computes only those vertices' centers (each costs the same).

    Returns
    -------
    ndarray of float32, [N, 3] (or [len(vertices), 3])
    """
    bone_count, sigma = check_cor_mesh(mesh, bone_count, sigma)
    tri, area, centroid = _triangles(mesh)
    wt = _triangle_weights_dense(mesh, tri, bone_count)  # (T, B)
    inv_s2 = 1.0 / (sigma * sigma)
    rows = np.arange(mesh.vertex_count) if vertices is None else np.asarray(vertices, np.int64)
    j = mesh.joints.astype(np.int64)[rows]
    a = mesh.weights.astype(np.float64)[rows]
    n, slots = j.shape
    num = np.zeros((n, 3))
    den = np.zeros(n)
    ac = area[:, None] * centroid
    for start in range(0, n, chunk):  # vertex chunks; each is whole (chunk, T) arrays
        sl = slice(start, start + chunk)
        jj, aa = j[sl], a[sl]
        b = wt[:, jj].transpose(1, 2, 0)  # (chunk, slots, T)
        sim = np.zeros((len(jj), len(tri)))
        for s in range(slots):
            for r in range(s + 1, slots):
                both = (aa[:, s] > 0) & (aa[:, r] > 0) & (jj[:, s] != jj[:, r])
                if not both.any():
                    continue
                a_s, a_r = aa[:, s, None], aa[:, r, None]
                b_s, b_r = b[:, s], b[:, r]
                diff = a_s * b_r - a_r * b_s
                term = 2.0 * a_s * a_r * b_s * b_r * np.exp(-diff * diff * inv_s2)
                sim += np.where(both[:, None], term, 0.0)
        num[sl] = sim @ ac
        den[sl] = sim @ area
    return finish_centers(mesh, num, den, float(area.sum()), rows)


@dataclass(frozen=True)
class PairBins:
    """The (bone pair, weight cell) entries the GPU precomputation sums over.

    Attributes
    ----------
    ranges : ndarray of int32, [B * B, 4]
        For the pair ``(j, k)``, ``j < k``, at row ``j * B + k``: (first entry, entry count, 0, 0).
    bins : ndarray of float32, [E, 2, 4]
        Per entry: ``(b_j, b_k, A, 0)`` (the area-weighted mean weights of its triangles for
        bones j and k, their summed area) and ``(sum A c, 0)``.
    total_area : float
    """

    ranges: NDArray[np.int32]
    bins: NDArray[np.float32]
    total_area: float

    @property
    def entry_count(self) -> int:
        """Number of (bone pair, weight cell) entries E, the rows of :attr:`bins`."""
        return int(self.bins.shape[0])


def pair_bins(
    mesh: SkinnedMesh, bone_count: int, *, resolution: int | None = DEFAULT_RESOLUTION
) -> PairBins:
    """Group every (triangle, bone pair of its mean weights) by pair, merging triangles whose
    two weights fall in one ``1/resolution`` grid cell (``resolution=None``: no merging)."""
    tri, area, centroid = _triangles(mesh)
    t = len(tri)
    # each triangle's sparse mean weights: corner entries sorted by (triangle, joint), merged
    tj = mesh.joints[tri].reshape(t, -1).astype(np.int64)
    tw = mesh.weights.astype(np.float64)[tri].reshape(t, -1) / 3.0
    rows = np.repeat(np.arange(t), tj.shape[1])
    key = rows * bone_count + tj.reshape(-1)
    uniq, inverse = np.unique(key, return_inverse=True)
    w = np.bincount(inverse, weights=tw.reshape(-1))
    keep = w > 0
    uniq, w = uniq[keep], w[keep]
    ut, uj = uniq // bone_count, uniq % bone_count
    # pad to (T, M) sorted by joint (np.unique sorted by triangle, then joint)
    counts = np.bincount(ut, minlength=t)
    m = int(counts.max()) if len(counts) else 0
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    col = np.arange(len(ut)) - first[ut]
    pj = np.full((t, m), -1, np.int64)
    pw = np.zeros((t, m))
    pj[ut, col] = uj
    pw[ut, col] = w
    pt_list, pk_list, bj_list, bk_list = [], [], [], []
    for p in range(m):
        for q in range(p + 1, m):
            ok = (pw[:, p] > 0) & (pw[:, q] > 0)
            idx = np.nonzero(ok)[0]
            pt_list.append(idx)
            pk_list.append(pj[idx, p] * bone_count + pj[idx, q])
            bj_list.append(pw[idx, p])
            bk_list.append(pw[idx, q])
    if pt_list:
        pt = np.concatenate(pt_list)
        pair = np.concatenate(pk_list)
        bj = np.concatenate(bj_list)
        bk = np.concatenate(bk_list)
    else:
        pt = pair = np.zeros(0, np.int64)
        bj = bk = np.zeros(0)
    a = area[pt]
    if resolution is None:
        cell = np.arange(len(pt), dtype=np.int64)
        key = pair * (len(pt) + 1) + cell
    else:
        r = int(resolution) + 1
        key = (pair * r + np.rint(bj * resolution).astype(np.int64)) * r + np.rint(
            bk * resolution
        ).astype(np.int64)
    ukey, inv = np.unique(key, return_inverse=True)
    e = len(ukey)
    sum_a = np.bincount(inv, weights=a, minlength=e)
    safe = np.where(sum_a > 0, sum_a, 1.0)
    mean_j = np.bincount(inv, weights=a * bj, minlength=e) / safe
    mean_k = np.bincount(inv, weights=a * bk, minlength=e) / safe
    # zero-area triangles carry no weight; their mean weights are the plain mean
    plain = sum_a <= 0
    if plain.any():
        cnt = np.bincount(inv, minlength=e)
        mean_j[plain] = (np.bincount(inv, weights=bj, minlength=e) / cnt)[plain]
        mean_k[plain] = (np.bincount(inv, weights=bk, minlength=e) / cnt)[plain]
    ac = np.stack(
        [np.bincount(inv, weights=a * centroid[pt, c], minlength=e) for c in range(3)], axis=1
    )
    entry_pair = np.zeros(e, np.int64)
    entry_pair[inv] = pair
    bins = np.zeros((e, 2, 4), np.float32)
    bins[:, 0, 0] = mean_j
    bins[:, 0, 1] = mean_k
    bins[:, 0, 2] = sum_a
    bins[:, 1, :3] = ac
    ranges = np.zeros((bone_count * bone_count, 4), np.int32)
    pairs, starts, cnts = np.unique(entry_pair, return_index=True, return_counts=True)
    ranges[pairs, 0] = starts
    ranges[pairs, 1] = cnts
    return PairBins(ranges, bins, float(area.sum()))


def centers_from_bins(
    mesh: SkinnedMesh, bins: PairBins, bone_count: int, sigma: float
) -> tuple[NDArray, NDArray]:
    """What the GPU shader computes, in float64 numpy (numerator, denominator per vertex);
    slow (a loop over vertices), for checking :func:`pair_bins` on small meshes."""
    inv_s2 = 1.0 / (sigma * sigma)
    n = mesh.vertex_count
    num = np.zeros((n, 3))
    den = np.zeros(n)
    b = bins.bins.astype(np.float64)
    for i in range(n):
        js, ws = mesh.joints[i], mesh.weights[i].astype(np.float64)
        for s in range(len(js)):
            for r in range(s + 1, len(js)):
                if ws[s] <= 0 or ws[r] <= 0 or js[s] == js[r]:
                    continue
                (j, aj), (k, ak) = sorted([(int(js[s]), ws[s]), (int(js[r]), ws[r])])
                start, count = bins.ranges[j * bone_count + k, :2]
                e = b[start : start + count]
                bj, bk, area = e[:, 0, 0], e[:, 0, 1], e[:, 0, 2]
                diff = aj * bk - ak * bj
                term = 2.0 * aj * ak * bj * bk * np.exp(-diff * diff * inv_s2)
                num[i] += term @ e[:, 1, :3]
                den[i] += term @ area
    return num, den
