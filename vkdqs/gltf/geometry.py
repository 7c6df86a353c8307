"""Triangle geometry for loaded primitives: strips/fans turned into triangle lists, and the
angle-weighted vertex normals (:func:`vkdqs.geometry.vertex_normals`, re-exported here)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vkdqs.geometry import vertex_normals as vertex_normals


def _triangulate(idx: NDArray[np.int64], mode: int) -> NDArray[np.int64]:
    """Triangle list ``[3 T]`` from the vertex sequence of a TRIANGLES/STRIP/FAN primitive."""
    if mode == 4:
        return idx
    k = len(idx) - 2
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    i = np.arange(k)
    if mode == 5:
        # Spec: triangle i is (v_i, v_{i+1+i%2}, v_{i+2-i%2}), which keeps the winding consistent.
        odd = i % 2
        tri = np.stack([idx[i], idx[i + 1 + odd], idx[i + 2 - odd]], axis=1)
    else:
        # Spec: triangle i is (v_{i+1}, v_{i+2}, v_0).
        tri = np.stack([idx[i + 1], idx[i + 2], np.full(k, idx[0])], axis=1)
    return tri.reshape(-1)


# ------------------------------------------------------------------------------------------------
