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


def global_matrices(local: NDArray[np.float64], parent: NDArray[np.int64]) -> NDArray[np.float64]:
    """``global[i] = global[parent[i]] @ local[i]`` for every node (``local`` is overwritten).

    Pointer jumping: ``local[i]`` becomes the product of the matrices from node i up to (not
    including) its current ancestor, which doubles its distance each pass, so the products
    compose in ``ceil(log2(depth + 1))`` passes over the nodes that still have an ancestor.
    """
    glob = local
    anc = parent.copy()
    act = np.flatnonzero(anc >= 0)
    # three work arrays for all passes (a fresh array per pass costs its page faults)
    above, below, product = (np.empty_like(glob[: act.size]) for _ in range(3))
    for _ in range(len(parent).bit_length() + 1):  # the loader checked the hierarchy acyclic
        if not act.size:
            break
        k = act.size
        up = np.take(anc, act)
        np.take(glob, up, axis=0, out=above[:k])
        np.take(glob, act, axis=0, out=below[:k])
        glob[act] = np.matmul(above[:k], below[:k], out=product[:k])
        anc[act] = np.take(anc, up)
        act = act[np.take(anc, act) >= 0]
    return glob
