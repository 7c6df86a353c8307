"""The node hierarchy as arrays: depths, cycles, ancestors and global matrices by pointer jumping.

A glTF node hierarchy is a forest given by each node's parent. Walking it node by node costs a
Python step per node, and composing matrices level by level costs a numpy call per level, which a
chain of a million nodes turns into a million calls. Here every pass is vectorized over all nodes
and the passes double the distance they cover (pointer jumping, as in Wyllie's list ranking): a
node's pointer goes from its parent to its grandparent, then four levels up, eight, ..., so a
hierarchy of depth ``d`` takes ``ceil(log2(d + 1))`` passes of ``O(nodes)`` work, whatever its
shape, and needs no limit on its depth.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def depths(parent: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Each node's depth (0 for a root) and the nodes no root reaches (sorted).

    ``parent[i]`` is node i's parent, -1 for a root. A node that no root reaches lies on a cycle
    or below one; its depth is meaningless. ``O(n log depth)`` time, ``O(n)`` memory.
    """
    n = len(parent)
    depth = (parent >= 0).astype(np.int64)
    anc = parent.copy()
    act = np.flatnonzero(anc >= 0)
    # An acyclic hierarchy of n nodes is at most n - 1 deep: log2(n) + 1 doublings reach every
    # root; whatever still has an ancestor then never will.
    for _ in range(max(1, n.bit_length() + 1)):
        if not act.size:
            break
        up = anc[act]
        depth[act] += depth[up]
        anc[act] = anc[up]
        act = act[anc[act] >= 0]
    return depth, act


def on_path(parent: NDArray[np.int64], flags: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Whether node i or one of its ancestors is flagged, for every node: pointer jumping, each
    node's answer covering twice as many levels a pass (as :func:`depths`)."""
    hit = np.array(flags, dtype=bool)
    anc = parent.copy()
    act = np.flatnonzero(anc >= 0)
    for _ in range(max(1, len(parent).bit_length() + 1)):
        if not act.size:
            break
        up = anc[act]
        hit[act] |= hit[up]
        anc[act] = anc[up]
        act = act[anc[act] >= 0]
    return hit


def ancestors(
    parent: NDArray[np.int64], nodes: NDArray[np.int64], levels: NDArray[np.int64]
) -> NDArray[np.int64]:
    """The ancestor ``levels[k]`` levels above ``nodes[k]`` (``levels[k]`` at most its depth)
    for every k at once: binary lifting, one doubling of the jump table per bit."""
    x = np.array(nodes, dtype=np.int64)
    k = np.array(levels, dtype=np.int64)
    jump = parent.copy()
    while True:
        odd = (k & 1).astype(bool)
        x[odd] = jump[x[odd]]
        k >>= 1
        if not k.any():
            return x
        jump = np.where(jump >= 0, jump[np.maximum(jump, 0)], -1)


def global_matrices(
    local: NDArray[np.float64],
    parent: NDArray[np.int64],
    depth: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """``global[i] = global[parent[i]] @ local[i]`` for every node (``local`` may be overwritten).

    Pointer jumping: each node's matrix becomes the product of the matrices from it up to (not
    including) its current ancestor, which doubles its distance each pass, so the products
    compose in ``ceil(log2(depth + 1))`` passes. After pass ``r`` the nodes still working are
    those at least ``2^r`` deep: with ``depth`` (:func:`depths`) the nodes are sorted by depth
    first, so those are a contiguous tail and only their ancestors are gathered.
    """
    if depth is None:
        depth = depths(parent)[0]
    n = len(parent)
    order = np.argsort(depth, kind="stable")
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)
    deep = depth[order]
    glob = local[order]
    anc = np.where(parent[order] >= 0, where[np.maximum(parent[order], 0)], -1)
    above = product = None
    reach = 1
    while True:
        start = int(np.searchsorted(deep, reach))  # the nodes at least `reach` deep
        k = n - start
        if k <= 0:
            break
        if above is None:  # two work arrays for all passes (fresh ones cost page faults)
            above, product = np.empty_like(glob[:k]), np.empty_like(glob[:k])
        up = anc[start:].copy()
        np.take(glob, up, axis=0, out=above[:k])
        np.matmul(above[:k], glob[start:], out=product[:k])
        glob[start:] = product[:k]
        anc[start:] = np.take(anc, up)
        reach *= 2
    out = np.empty_like(glob)
    out[order] = glob
    return out
