"""Classic Delta Mush (Mancewicz et al. 2014): the float64 reference, numpy and scipy only.

At bind time the rest mesh is smoothed (``iterations`` umbrella steps of size ``step`` over the
mesh's edge graph) and each vertex's offset from its smoothed position is stored in a local
frame of the smoothed mesh. Each pose: skin, smooth the skinned mesh the same way, rebuild the
frames and add the offsets back; normals are the area-weighted normals of the result. The
smoothing takes away skinning artefacts (LBS's collapse at a twisted joint), the offsets put the
mesh's detail back.

The frame of vertex ``i`` (:func:`frames`): normal ``n`` = the area-weighted vertex normal of the
smoothed mesh, ``(0, 0, 1)`` where the vertex touches no triangle of non-zero area
(:func:`vkdqs.geometry.vertex_normals`); tangent ``t`` = the direction to its *frame neighbour*
(chosen at bind time: its farthest neighbour in the smoothed rest mesh, the first in CSR order
of equals, which keeps float32 frames well conditioned on long thin triangles; itself when it
has no neighbour) projected onto the plane of ``n``
and normalized; when that projection is (nearly) zero (the neighbour along the normal, or on
the vertex) the tangent is the coordinate axis least aligned with ``n``, projected the same
way; bitangent ``b = n x t``. Every frame is orthonormal: no input makes a NaN. ``shaders/glsl/
delta_mush.comp`` computes the same in float32.

Seams: the smoothing runs over the *welded* mesh (:func:`vkdqs.geometry.weld`: vertices at
exactly the same position are one node, as glTF's copies split at UV seams and hard edges
are), so the copies of a seam get the same smoothed positions and frames and the seam does not
open; the output normals are each vertex's own triangles' (a hard edge stays hard). See
:func:`delta_mush_bind` (``weld=False`` smooths the triangles as indexed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from ...errors import InputError
from ...geometry import vertex_normals
from ...geometry import weld as weld_positions
from ..ddm.reference import _faces, _integer, _positions, _real

if TYPE_CHECKING:
    from ...mesh import SkinnedMesh

__all__ = [
    "DeltaMush",
    "adjacency",
    "corner_normals",
    "delta_mush_bind",
    "delta_mush_reference",
    "expand_rows",
    "frames",
    "incident_faces",
    "mesh_delta_mush",
    "node_corners",
    "smooth",
]

#: The bind parameters of ``Skinner(method="delta_mush")`` given no ``delta_mush=``.
DEFAULTS = {"iterations": 10, "step": 0.5}

#: A tangent whose projection onto the normal's plane is shorter than this fraction of the
#: edge (the neighbour within 1e-5 rad of the normal) falls back to a coordinate axis.
TANGENT_EPS = 1e-5
#: Squared length under which an edge or a projected tangent counts as zero.
TINY = 1e-30
#: A vertex whose neighbourhood the bind's smoothing shrinks below this fraction of its rest
#: size (its farthest neighbour's distance) is not mushed: it keeps its skinned position, as a
#: vertex without neighbours does. Such a neighbourhood (a small separate part, e.g. a lone
#: triangle, shrinks by (1 - 1.5 step) ** iterations: 1e-6 at the defaults) has no frame that
#: float32 can hold: its smoothed edges are below the positions' rounding times 1e5 there, and
#: the frame's error is the rounding over the smoothed size (6e-8 / 1e-2 of the extent here).
COLLAPSED = 1e-2


@dataclass(frozen=True)
class DeltaMush:
    """A mesh bound for Delta Mush (:func:`delta_mush_bind`).

    Attributes
    ----------
    faces : ndarray of int64, (T, 3)
    offsets : ndarray of int64, (N + 1,)
        CSR row starts of the edge graph: the neighbours of ``i`` are
        ``neighbours[offsets[i]:offsets[i + 1]]``, in increasing order.
    neighbours : ndarray of int64, (2 E,)
    frame_neighbour : ndarray of int64, (N,)
        The neighbour each vertex's tangent points to (its farthest in the smoothed rest mesh;
        itself when it has none).
    deltas : ndarray of float64, (N, 3)
        Each vertex's offset from the smoothed rest mesh in its frame (t, b, n).
    iterations, step : int, float
        The smoothing's step count and size (lambda).
    canonical : ndarray of int64, (N,)
        Each vertex's node: the first vertex at its position (``arange(N)`` unwelded). The
        edge graph, the frame neighbours and the frames' triangles are the welded mesh's,
        in these indices, every vertex with its node's (see :func:`delta_mush_bind`).
    """

    faces: NDArray[np.int64]
    offsets: NDArray[np.int64]
    neighbours: NDArray[np.int64]
    frame_neighbour: NDArray[np.int64]
    deltas: NDArray[np.float64]
    iterations: int
    step: float
    canonical: NDArray[np.int64]

    def __post_init__(self) -> None:
        # a bind made or edited by hand is refused here, not read out of bounds by the shader
        # or turned into NaNs; the arrays are read-only copies, so it stays as checked
        for name in ("faces", "offsets", "neighbours", "frame_neighbour", "deltas", "canonical"):
            a = np.array(getattr(self, name), copy=True)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        offsets, n = self.offsets, len(self.offsets) - 1
        ints = ("faces", "offsets", "neighbours", "frame_neighbour", "canonical")
        for name in ints:
            if getattr(self, name).dtype.kind not in "iu":
                raise InputError(f"DeltaMush.{name} must be integers")
        if offsets.ndim != 1 or n < 0 or offsets[0] != 0 or (np.diff(offsets) < 0).any():
            raise InputError("DeltaMush.offsets must be CSR row starts: from 0, increasing")
        if self.neighbours.shape != (offsets[-1],):
            raise InputError(
                f"DeltaMush.neighbours must have offsets[-1] = {offsets[-1]} entries, got "
                f"shape {self.neighbours.shape}"
            )
        shapes = {"frame_neighbour": (n,), "canonical": (n,), "deltas": (n, 3)}
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                raise InputError(
                    f"DeltaMush.{name} must have shape {shape} (N = {n} vertices), got "
                    f"{getattr(self, name).shape}"
                )
        if self.faces.ndim != 2 or self.faces.shape[1] != 3:
            raise InputError(f"DeltaMush.faces must have shape (T, 3), got {self.faces.shape}")
        for name in ints[1:]:
            if name == "offsets":
                continue
            a = getattr(self, name)
            if a.size and (a.min() < 0 or a.max() >= n):
                raise InputError(f"DeltaMush.{name} must be vertex indices in [0, {n})")
        if self.faces.size and (self.faces.min() < 0 or self.faces.max() >= n):
            raise InputError(f"DeltaMush.faces must be vertex indices in [0, {n})")
        if not np.isfinite(self.deltas).all():
            raise InputError("DeltaMush.deltas must be finite (it holds NaN or inf)")
        _integer(self.iterations, "DeltaMush.iterations", 0)
        if not (_real(self.step) and 0.0 < self.step <= 1.0):
            raise InputError(f"DeltaMush.step must be in (0, 1], got {self.step!r}")

    @property
    def vertex_count(self) -> int:
        """N, the vertices of the bound mesh."""
        return len(self.offsets) - 1


def adjacency(faces: ArrayLike, vertex_count: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The mesh's edge graph as CSR (offsets (N + 1,), neighbours): the unique undirected
    edges of the triangles (degenerate ones with a repeated vertex give no self-edge),
    each vertex's neighbours sorted."""
    tri = np.asarray(faces, np.int64).reshape(-1, 3)
    a = tri.reshape(-1)
    b = np.roll(tri, -1, axis=1).reshape(-1)
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    keep = src != dst
    keys = np.sort(src[keep] * vertex_count + dst[keep])
    keys = keys[np.diff(keys, prepend=-1) != 0]  # np.unique without its hash (slow at 1M)
    rows, cols = keys // max(vertex_count, 1), keys % max(vertex_count, 1)
    offsets = np.zeros(vertex_count + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=vertex_count), out=offsets[1:])
    return offsets, cols


def incident_faces(
    faces: ArrayLike, vertex_count: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Each vertex's triangles as CSR (offsets (N + 1,), corners (K, 2)): for every corner of
    vertex ``i``, the next and the previous corner of its triangle, so that
    ``(p[next] - p[i]) x (p[prev] - p[i])`` is the triangle's area-weighted normal (twice its
    area). What the GPU sums per vertex, without atomics."""
    tri = np.asarray(faces, np.int64).reshape(-1, 3)
    corner = tri.reshape(-1)
    nxt = np.roll(tri, -1, axis=1).reshape(-1)
    prv = np.roll(tri, 1, axis=1).reshape(-1)
    order = np.argsort(corner, kind="stable")
    offsets = np.zeros(vertex_count + 1, np.int64)
    np.cumsum(np.bincount(corner, minlength=vertex_count), out=offsets[1:])
    return offsets, np.stack([nxt[order], prv[order]], axis=1)


def expand_rows(
    offsets: NDArray[np.int64], values: NDArray, rows: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray]:
    """The CSR lists whose row ``v`` is row ``rows[v]`` of ``(offsets, values)``: every
    vertex given its node's list."""
    count = np.diff(offsets)[rows]
    out = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(count, out=out[1:])
    take = np.repeat(offsets[:-1][rows] - out[:-1], count) + np.arange(out[-1])
    return out, values[take]


def node_corners(
    faces: ArrayLike, canonical: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """:func:`incident_faces` of the welded mesh (``canonical[faces]``) with every vertex given
    its node's corners: what a vertex's frame normal sums (its own corners when unwelded)."""
    n = len(canonical)
    offsets, corners = incident_faces(canonical[np.asarray(faces, np.int64)], n)
    if (canonical == np.arange(n)).all():
        return offsets, corners
    return expand_rows(offsets, corners, canonical)


def corner_normals(
    positions: ArrayLike, offsets: NDArray[np.int64], corners: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Unit ``sum (p[next] - p[v]) x (p[prev] - p[v])`` over each vertex's corners (CSR
    ``offsets``, ``corners`` (K, 2)), each about the vertex's own position; ``(0, 0, 1)`` where
    the sum is (nearly) zero. :func:`vkdqs.geometry.vertex_normals` (area) of those triangles."""
    p = np.asarray(positions, np.float64)
    n = len(offsets) - 1
    owner = np.repeat(np.arange(n), np.diff(offsets))
    c = np.cross(p[corners[:, 0]] - p[owner], p[corners[:, 1]] - p[owner])
    acc = np.stack([np.bincount(owner, weights=c[:, k], minlength=n) for k in range(3)], 1)
    norm = np.linalg.norm(acc, axis=1, keepdims=True)
    out = acc / np.where(norm > 1e-12, norm, 1.0)
    out[norm[:, 0] <= 1e-12] = (0.0, 0.0, 1.0)
    return out


def _mean_matrix(offsets: NDArray[np.int64], neighbours: NDArray[np.int64]) -> sp.csr_matrix:
    """The (N, N) sparse matrix taking positions to the mean of each vertex's neighbours (a
    row of zeros for a vertex without any)."""
    n = len(offsets) - 1
    degree = np.diff(offsets)
    weights = np.repeat(1.0 / np.maximum(degree, 1), degree)
    return sp.csr_matrix((weights, neighbours, offsets), shape=(n, n))


def smooth(
    positions: ArrayLike,
    offsets: NDArray[np.int64],
    neighbours: NDArray[np.int64],
    iterations: int,
    step: float,
) -> NDArray[np.float64]:
    """``iterations`` umbrella steps ``v <- v + step (mean of neighbours - v)`` (Jacobi: every
    vertex from the previous step's positions); a vertex without neighbours stays put."""
    p = np.array(positions, np.float64)
    mean = _mean_matrix(offsets, neighbours)
    has = (np.diff(offsets) > 0)[:, None]
    for _ in range(iterations):
        p = p + step * np.where(has, mean @ p - p, 0.0)
    return p


def frames(
    smoothed: ArrayLike,
    faces: ArrayLike,
    frame_neighbour: NDArray[np.int64],
    canonical: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """Each vertex's orthonormal frame (N, 3, 3), columns (t, b, n), of the smoothed mesh (the
    module docstring says how, degenerate cases included). With ``canonical`` (each vertex's
    node, :attr:`DeltaMush.canonical`) the normal is over the welded triangles
    (:func:`node_corners`), so the copies of a seam share it."""
    s = np.asarray(smoothed, np.float64)
    tri = np.asarray(faces, np.int64).reshape(-1, 3)
    if canonical is None or (canonical == np.arange(len(s))).all():
        n = vertex_normals(s, tri.reshape(-1), weighting="area")
    else:
        n = corner_normals(s, *node_corners(tri, canonical))
    e = s[frame_neighbour] - s
    t = e - np.einsum("ij,ij->i", e, n)[:, None] * n
    t2 = np.einsum("ij,ij->i", t, t)
    e2 = np.einsum("ij,ij->i", e, e)
    bad = (t2 <= TANGENT_EPS**2 * e2) | (t2 <= TINY)
    axis = np.eye(3)[np.argmin(np.abs(n), axis=1)]
    ta = axis - np.einsum("ij,ij->i", axis, n)[:, None] * n
    t = np.where(bad[:, None], ta, t)
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    b = np.cross(n, t)
    return np.stack([t, b, n], axis=2)


def farthest_neighbours(
    positions: ArrayLike, offsets: NDArray[np.int64], neighbours: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Each vertex's farthest neighbour (the first in CSR order of equals; itself when it has
    none): the frame neighbour, the longest edge giving the best conditioned tangent."""
    p = np.asarray(positions, np.float64)
    degree = np.diff(offsets)
    owner = np.repeat(np.arange(len(degree)), degree)
    length = np.linalg.norm(p[neighbours] - p[owner], axis=1)
    order = np.lexsort((np.arange(len(neighbours)), -length, owner))
    out = np.arange(len(degree))
    has = degree > 0
    out[has] = neighbours[order[offsets[:-1][has]]]
    return out


def _check(positions: ArrayLike, faces: ArrayLike) -> tuple[NDArray, NDArray]:
    """Positions (N, 3), finite and within +-MAX_MAGNITUDE, and integer faces (T, 3) of
    vertex indices below N, as Direct Delta Mush checks them
    (:mod:`vkdqs.methods.ddm.reference`)."""
    p = _positions(positions)
    if np.size(faces) == 0:  # no triangles, as [] (float64 to numpy) or (0, 3) of any type
        return p, np.zeros((0, 3), np.int64)
    return p, _faces(faces, len(p))


def _collapsed(
    rest: NDArray, smoothed: NDArray, offsets: NDArray[np.int64], neighbours: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """The vertices whose farthest neighbour the smoothing brought within :data:`COLLAPSED`
    of its rest distance (vectorized over the edges)."""
    n = len(offsets) - 1
    degree = np.diff(offsets)
    owner = np.repeat(np.arange(n), degree)
    rows = np.flatnonzero(degree > 0)
    before = np.zeros(n)
    after = np.zeros(n)
    if len(rows):  # each row's largest edge: rows are contiguous in the CSR order
        starts = offsets[:-1][rows]
        d0 = np.linalg.norm(rest[neighbours] - rest[owner], axis=1)
        d1 = np.linalg.norm(smoothed[neighbours] - smoothed[owner], axis=1)
        before[rows] = np.maximum.reduceat(d0, starts)
        after[rows] = np.maximum.reduceat(d1, starts)
    return (before > 0.0) & (after < COLLAPSED * before)


def delta_mush_bind(
    positions: ArrayLike,
    faces: ArrayLike,
    *,
    iterations: int = 10,
    step: float = 0.5,
    weld: bool = True,
) -> DeltaMush:
    """Bind the rest mesh ``positions`` (N, 3) with triangles ``faces`` ((T, 3) or (3 T,)):
    smooth it and store each vertex's offset from the smoothed mesh in the smoothed mesh's
    frame. ``iterations`` >= 0 smoothing steps of size ``step`` (in (0, 1] for a smoothing
    that does not overshoot; 0.5 by default).

    With ``weld`` (the default) the vertices at exactly the same position (a seam's copies,
    :func:`vkdqs.geometry.weld`) are one node of the smoothing: the edge graph, the frame
    neighbour and the frame normal's triangles are the welded mesh's, on the node's first
    vertex, and each copy gets its node's lists, so copies with the same skinned position get
    identical smoothed positions and frames (no crack) while the output normals stay each
    copy's own (a hard edge stays hard). Copies skinned apart (different weights) are each
    smoothed from their own position over the shared neighbours: their gap shrinks by
    ``(1 - step) ** iterations``. ``weld=False`` smooths the triangles as indexed.

    A vertex whose neighbourhood the smoothing shrinks below :data:`COLLAPSED` of its rest size
    (a small separate part: a lone triangle) is not mushed; it keeps its skinned position."""
    p, tri = _check(positions, faces)
    _integer(iterations, "iterations", 0)
    if not (_real(step) and 0.0 < step <= 1.0):
        raise InputError(f"step must be in (0, 1], got {step!r}")
    n = len(p)
    canonical = np.arange(n)
    if weld:
        _, inverse, first = weld_positions(p)
        canonical = first[inverse]
    offsets, neighbours = adjacency(canonical[tri], n)
    if (canonical != np.arange(n)).any():
        offsets, neighbours = expand_rows(offsets, neighbours, canonical)
    s = smooth(p, offsets, neighbours, int(iterations), float(step))
    collapsed = _collapsed(p, s, offsets, neighbours)
    if collapsed.any():  # not mushed: no neighbours, so smoothed = skinned and delta = 0
        degree = np.diff(offsets)
        keep = np.repeat(~collapsed, degree)
        neighbours = neighbours[keep]
        offsets = np.concatenate([[0], np.cumsum(np.where(collapsed, 0, degree))])
        s = smooth(p, offsets, neighbours, int(iterations), float(step))
    frame_neighbour = farthest_neighbours(s, offsets, neighbours)
    f = frames(s, tri, frame_neighbour, canonical)
    deltas = np.einsum("nji,nj->ni", f, p - s)  # F^T (p - s)
    return DeltaMush(
        tri,
        offsets,
        neighbours,
        frame_neighbour,
        deltas,
        int(iterations),
        float(step),
        canonical,
    )


def delta_mush_reference(
    bind: DeltaMush, skinned_positions: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Delta Mush of one pose: ``skinned_positions`` (N, 3) (LBS, DQS, ...) smoothed as at bind
    time, plus each vertex's rest offset in the frame of the smoothed skinned mesh.

    Returns
    -------
    positions, normals : ndarray of float64, (N, 3)
        Normals: the area-weighted vertex normals of the result over each vertex's own
        triangles (``bind.faces``, unwelded: a hard edge stays hard; ``(0, 0, 1)`` off triangles).
    """
    q = np.asarray(skinned_positions, np.float64)
    if q.shape != (bind.vertex_count, 3):
        raise InputError(
            f"skinned_positions must have shape ({bind.vertex_count}, 3), got {q.shape}"
        )
    if not np.isfinite(q).all():
        raise InputError("skinned_positions must be finite (they hold NaN or inf)")
    s = smooth(q, bind.offsets, bind.neighbours, bind.iterations, bind.step)
    f = frames(s, bind.faces, bind.frame_neighbour, bind.canonical)
    out = s + np.einsum("nij,nj->ni", f, bind.deltas)
    return out, vertex_normals(out, bind.faces.reshape(-1), weighting="area")


def mesh_delta_mush(mesh: SkinnedMesh) -> DeltaMush:
    """``mesh``'s Delta Mush bind with the default parameters (:data:`DEFAULTS`), computed the
    first time and kept on the mesh: what ``Skinner(method="delta_mush")`` (and the registry's
    reference) mush with when given no ``delta_mush=``, so a bake binds each mesh once. The
    mesh needs triangles (``indices``)."""
    cached = mesh.__dict__.get("_delta_mush")
    if cached is None:
        if mesh.indices is None:
            raise InputError("Delta Mush needs the mesh's triangles (indices): it has none")
        cached = delta_mush_bind(mesh.positions, mesh.indices, **DEFAULTS)
        mesh.__dict__["_delta_mush"] = cached
    return cached
