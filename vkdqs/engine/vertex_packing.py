"""Numpy encoders of the lean vertex layout's packed rows, and the error each adds.

Normals become octahedral xy in snorm16 (two 16-bit components instead of three floats), weights
unorm16 (or unorm8 where they already are multiples of 1/255, as a glTF accessor of normalized
unsigned bytes stores them), joints 8- or 16-bit unsigned integers. The GPU decodes on fetch:
the formats turn the integers into floats, ``shaders/glsl/include/vertex_data.glsl`` unfolds
the octahedron. The bounds below are what ``tests/test_vertex_packing.py`` asserts.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: The largest angle (radians) between a unit normal and its octahedral snorm16 round trip
#: (the best of the four roundings is kept): 4.3e-5 at most, 2.2e-5 median, over a million
#: random normals.
OCT_NORMAL_MAX_ANGLE = 5e-5


def oct_encode(normals: ArrayLike) -> NDArray[np.int16]:
    """(N, 2) snorm16 octahedral encodings of (N, 3) non-zero normals: each the rounding (of
    the four around the exact point) whose decoding is nearest the normal's direction."""
    n = np.asarray(normals, np.float64)
    n = n / np.linalg.norm(n, axis=1, keepdims=True)
    p = n[:, :2] / np.abs(n).sum(axis=1, keepdims=True)
    lower = n[:, 2] < 0.0
    sign = np.where(p >= 0.0, 1.0, -1.0)
    p[lower] = (1.0 - np.abs(p[lower][:, ::-1])) * sign[lower]
    scaled = np.clip(p, -1.0, 1.0) * 32767.0
    lo = np.floor(scaled)
    best, best_cos = None, None
    for dx in (0.0, 1.0):
        for dy in (0.0, 1.0):
            c = np.clip(lo + np.array([dx, dy]), -32767.0, 32767.0)
            cos = (oct_decode(c.astype(np.int16)) * n).sum(axis=1)
            if best is None:
                best, best_cos = c, cos
            else:
                better = cos > best_cos
                best[better], best_cos[better] = c[better], cos[better]
    return best.astype(np.int16)


def oct_decode(encoded: ArrayLike) -> NDArray[np.float64]:
    """(N, 3) unit normals of (N, 2) snorm16 octahedral encodings, as the shader decodes them."""
    e = np.maximum(np.asarray(encoded, np.float64) / 32767.0, -1.0)
    z = 1.0 - np.abs(e).sum(axis=1)
    sign = np.where(e >= 0.0, 1.0, -1.0)
    xy = np.where((z < 0.0)[:, None], (1.0 - np.abs(e[:, ::-1])) * sign, e)
    v = np.column_stack([xy, z])
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def unorm_weights(weights: ArrayLike, steps: int = 65535) -> NDArray[np.integer]:
    """(N, S) unsigned weights in 1/``steps`` steps (65535: uint16, 255: uint8) that sum to
    exactly ``steps`` on every vertex with weight (largest remainders round up), each within
    one step of the float weight; all-zero rows stay zero."""
    w = np.asarray(weights, np.float64) * steps
    floor = np.floor(w)
    short = np.rint(steps * (w.sum(axis=1) > 0) - floor.sum(axis=1)).astype(np.int64)
    order = np.argsort(-(w - floor), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(w.shape[1])[None], axis=1)
    out = floor + (rank < short[:, None])
    return out.astype(np.uint16 if steps > 255 else np.uint8)


def bytes_exact(weights: ArrayLike) -> bool:
    """Whether every weight is a multiple of 1/255 (to float32 rounding) and every weighted
    row sums to 255 of them: unorm8 then stores the weights without changing them (as a glTF
    accessor of normalized unsigned bytes held them)."""
    w = np.asarray(weights, np.float64) * 255.0
    steps = np.rint(w)
    if np.abs(w - steps).max(initial=0.0) > 1e-3:
        return False
    sums = steps.sum(axis=1)
    return bool(((sums == 255.0) | (sums == 0.0)).all())
