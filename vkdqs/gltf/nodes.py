"""Reading a glTF document's ``nodes`` and ``scenes``: the node table and :class:`Node` objects.

The nodes are checked column by column (:mod:`vkdqs.gltf.columns`) and their hierarchy is
resolved by pointer jumping (:mod:`vkdqs.gltf.hierarchy`): no Python step per node but building
the :class:`Node` objects. :class:`_NodeReader` holds this part of the loader
(:mod:`vkdqs.gltf.reader`'s reader is one); what it finds wrong is a :class:`GltfError` or a
:class:`GltfWarning` naming the JSON path, as everywhere in the loader.
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vkdqs.gltf import columns, hierarchy
from vkdqs.gltf.accessors import Budget, _AccessorReader
from vkdqs.gltf.errors import GltfError, _show
from vkdqs.gltf.scene import Node, _NodeTable

#: What each node costs at the peak of reading it (its Node object, its rows of the transform
#: and hierarchy arrays, the columns it is read through), charged to ``max_bytes`` before the
#: nodes are read; measured at 370 by tests/test_gltf_bounds.py, charged with a margin...
NODE_BYTES = 448
#: ... and this much more per node that has the key (its children's tuple and flat arrays; a
#: view of its row of the transform, which nodes without the key share; measured at 230, 180
#: and 400).
NODE_KEY_BYTES = {
    "children": 288,
    "translation": 224,
    "rotation": 224,
    "scale": 224,
    "matrix": 512,
}
# The node keys vkdqs reads, and the defaults of its transform vectors.
_NODE_KEYS = (
    "children",
    "mesh",
    "skin",
    "translation",
    "rotation",
    "scale",
    "matrix",
    "name",
    "weights",
)
_NODE_VECTORS = (
    ("translation", 3, (0.0, 0.0, 0.0)),
    ("rotation", 4, (0.0, 0.0, 0.0, 1.0)),
    ("scale", 3, (1.0, 1.0, 1.0)),
)


def _more(bad: NDArray[np.bool_]) -> str:
    """`` (N more like it)`` for a warning naming the first of several objects, else ``""``."""
    n = int(np.count_nonzero(bad)) - 1
    return f" ({n} more like it)" if n > 0 else ""


def _at(key: str) -> Any:
    """The JSON path of key ``key`` of node ``i``, as a function of ``i`` (for the columns)."""
    return lambda i: f"nodes[{i}].{key}"


class _NodeReader(_AccessorReader):
    """The loader's reading of ``nodes`` and ``scenes``: :meth:`nodes` first (it sets
    :attr:`node_table`, which the rest of the loader reads), then :meth:`scene_roots`."""

    def __init__(
        self,
        path: Path,
        doc: dict,
        glb_bin: bytes | memoryview | None,
        *,
        budget: Budget | None = None,
    ) -> None:
        super().__init__(path, doc, glb_bin, budget=budget)
        #: The nodes as arrays, and the length of each node's ``weights`` (-1: none), set by
        #: nodes().
        self.node_table: _NodeTable | None = None
        self._node_weight_counts = np.zeros(0, dtype=np.int64)

    def nodes(self) -> tuple[Node, ...]:
        """Every node, checked column by column (:mod:`vkdqs.gltf.columns`) and its hierarchy
        resolved by pointer jumping (:mod:`vkdqs.gltf.hierarchy`): no Python step per node
        but building the :class:`Node` objects."""
        raw = self.array("nodes")
        n = len(raw)
        cols = self._node_columns(raw)
        parent, children = self._node_children(cols, n)
        mesh, skin = self._node_mesh_and_skin(cols)
        trs = self._node_trs(raw, cols, n)
        matrix_rows, matrices = self._node_matrices(raw, cols)
        names = columns.names(self, cols["name"], _at("name")) if "name" in cols else [""] * n
        weights = self._node_weights(raw, cols, mesh)
        # Every node must be reachable from a root: anything left over sits on a cycle.
        depth, unreached = hierarchy.depths(parent)
        if unreached.size:
            self.fail(f"nodes[{unreached[0]}]", "the node hierarchy has a cycle through this node")
        table = _NodeTable(
            parent=parent,
            mesh=mesh,
            skin=skin,
            depth=depth,
            translation=trs["translation"],
            rotation=trs["rotation"],
            scale=trs["scale"],
            matrix_nodes=matrix_rows,
            matrices=matrices,
        )
        self.node_table = table
        return table.node_objects(names, children, weights)

    def _node_columns(self, raw: list[dict]) -> dict[str, list]:
        """The columns of the node keys vkdqs reads, what reading the nodes costs charged to
        ``max_bytes`` first (per node, then per key the nodes have)."""
        n = len(raw)
        self.charge(n * NODE_BYTES, "nodes", f"{n} nodes")
        keys = set(chain.from_iterable(raw))
        cols = {k: columns.column(raw, k) for k in _NODE_KEYS if k in keys}
        extra = sum(
            per * int(columns.present(cols[k]).sum())
            for k, per in NODE_KEY_BYTES.items()
            if k in cols
        )
        self.charge(extra, "nodes", "their children and transforms")
        return cols

    def _node_children(
        self, cols: dict[str, list], n: int
    ) -> tuple[NDArray[np.int64], list[tuple[int, ...]]]:
        """Each node's parent (-1 for none) and tuple of children, from the ``children``
        lists: a node that is its own child, or the child of two nodes, is an error."""
        parent = np.full(n, -1, dtype=np.int64)
        children: list[tuple[int, ...]] = [()] * n
        if "children" not in cols:
            return parent, children
        flat, owners, within = columns.int_lists(self, cols["children"], _at("children"), "nodes")
        own = flat == owners
        if own.any():
            k = int(np.argmax(own))
            self.fail(f"nodes[{owners[k]}].children[{within[k]}]", "a node cannot be its own child")
        _, first = np.unique(flat, return_index=True)
        again = np.ones(len(flat), dtype=bool)
        again[first] = False
        if again.any():
            k = int(np.argmax(again))
            c = int(flat[k])
            earlier = int(owners[np.argmax(flat == c)])
            self.fail(
                f"nodes[{owners[k]}].children[{within[k]}]",
                f"nodes[{c}] is already a child of nodes[{earlier}]",
            )
        parent[flat] = owners
        rows = np.flatnonzero(columns.present(cols["children"]))
        ends = np.cumsum(np.bincount(owners, minlength=n)[rows]).tolist()
        spans = map(slice, [0, *ends[:-1]], ends)
        tuples = map(tuple, map(flat.tolist().__getitem__, spans))
        deque(map(children.__setitem__, rows.tolist(), tuples), maxlen=0)
        return parent, children

    def _node_mesh_and_skin(
        self, cols: dict[str, list]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each node's mesh and skin index (-1 for none); the skin of a node without a mesh is
        a warning and dropped."""
        mesh = self._node_ints(cols, "mesh", "meshes")
        skin = self._node_ints(cols, "skin", "skins")
        bad = (skin >= 0) & (mesh < 0)
        if bad.any():
            # three.js ignores it too: without a mesh there is nothing to skin
            self.warn(
                f"nodes[{int(np.argmax(bad))}].skin",
                f"a node without a mesh has nothing to skin; ignored{_more(bad)}",
            )
            skin[bad] = -1
        return mesh, skin

    def _node_ints(self, cols: dict[str, list], key: str, target: str) -> NDArray[np.int64]:
        """Column ``key`` of the nodes as indices into ``target`` (-1 where absent)."""
        if key not in cols:
            return np.full(len(self.array("nodes")), -1, dtype=np.int64)
        return columns.ints(self, cols[key], lambda i: f"nodes[{i}].{key}", target=target)

    def _node_trs(
        self, raw: list[dict], cols: dict[str, list], n: int
    ) -> dict[str, NDArray[np.float64]]:
        """Every node's ``translation`` ``[n, 3]``, ``rotation`` ``[n, 4]`` and ``scale``
        ``[n, 3]`` (glTF's defaults where absent), rotations normalized."""
        trs = {}
        for key, width, default in _NODE_VECTORS:
            trs[key] = np.broadcast_to(np.array(default, dtype=np.float64), (n, width)).copy()
            if key in cols:
                rows, values = columns.numbers(
                    self, raw, cols[key], key, lambda i: f"nodes[{i}]", width
                )
                trs[key][rows] = values
        if "rotation" in cols:
            self._normalize_rotations(cols, trs["rotation"])
        return trs

    def _normalize_rotations(self, cols: dict[str, list], rotation: NDArray[np.float64]) -> None:
        """Normalize the given rotations in place; one that is not a quaternion of some length
        (zero, or too small to normalize) is an error."""
        rows = np.flatnonzero(columns.present(cols["rotation"]))
        r = rotation[rows]
        # Divide by the largest component first so that 1e300 does not overflow the norm.
        big = np.abs(r).max(axis=1)
        r = r / np.where(big > 0, big, 1.0)[:, None]
        length = np.linalg.norm(r, axis=1)
        bad = ~((big > 1e-12) & (length > 1e-6))
        if bad.any():
            k = int(np.argmax(bad))
            self.fail(
                f"nodes[{rows[k]}].rotation",
                f"{(r[k] * big[k]).tolist()} is not a unit quaternion",
            )
        rotation[rows] = r / length[:, None]

    def _node_matrices(
        self, raw: list[dict], cols: dict[str, list]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The nodes given by a ``matrix`` and their matrices ``[k, 4, 4]``; a node with both
        a matrix and a translation, rotation or scale is an error."""
        if "matrix" not in cols:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 4, 4))
        matrix_rows, flat16 = columns.numbers(
            self, raw, cols["matrix"], "matrix", lambda i: f"nodes[{i}]", 16
        )
        for key in ("translation", "rotation", "scale"):
            if key in cols:
                both = columns.present(cols[key])[matrix_rows]
                if both.any():
                    i = int(matrix_rows[np.argmax(both)])
                    first = next(k for k in ("translation", "rotation", "scale") if k in raw[i])
                    self.fail(f"nodes[{i}]", f"has both matrix and {first}")
        return matrix_rows, flat16.reshape(-1, 4, 4).transpose(0, 2, 1).copy()  # column-major

    def _node_weights(
        self, raw: list[dict], cols: dict[str, list], mesh: NDArray[np.int64]
    ) -> list[NDArray[np.float64] | None]:
        """Each node's morph ``weights`` (None where absent; those of a node without a mesh
        are a warning and dropped), their lengths kept for ``check_node_weights``."""
        weights: list[NDArray[np.float64] | None] = [None] * len(raw)
        self._node_weight_counts = np.full(len(raw), -1, dtype=np.int64)
        if "weights" not in cols:
            return weights
        weighted = columns.present(cols["weights"])
        meshless = weighted & (mesh < 0)
        if meshless.any():
            self.warn(
                f"nodes[{int(np.argmax(meshless))}].weights",
                f"a node without a mesh has no morph targets to weight; ignored{_more(meshless)}",
            )
        for i in np.flatnonzero(weighted & (mesh >= 0)).tolist():  # weighted nodes
            w = self.number_list(raw[i], "weights", f"nodes[{i}]")
            weights[i] = w
            self._node_weight_counts[i] = len(w)
        return weights

    def number_list(self, parent: dict, key: str, path: str) -> NDArray[np.float64] | None:
        """An optional array of any number of finite numbers (morph ``weights``)."""
        if key not in parent:
            return None
        value = parent[key]
        if not isinstance(value, list) or not value:
            self.fail(f"{path}.{key}", f"must be a non-empty array of numbers, got {_show(value)}")
        self.charge(len(value) * 8, f"{path}.{key}", f"{len(value)} weights")
        return self.get_numbers(parent, key, path, len(value), [])

    def scene_roots(self, nodes: tuple[Node, ...]) -> tuple[int, ...]:
        """The roots of the default scene (``scene``, else scene 0, else every parentless node).

        vkdqs draws every node that uses a mesh, whichever scene lists it: a malformed
        ``scene`` or ``scenes`` changes nothing drawn, so it is a warning and what is wrong is
        left out of the roots.
        """
        assert self.node_table is not None
        parent = self.node_table.parent
        scenes = self.doc.get("scenes", [])
        if not isinstance(scenes, list):
            self.warn("scenes", f"must be an array, got {_show(scenes)}; ignored")
            scenes = []
        roots_of = [self._roots(sc, f"scenes[{i}]", parent) for i, sc in enumerate(scenes)]
        scene = self.doc.get("scene")
        if isinstance(scene, float) and scene.is_integer():
            scene = int(scene)  # JSON integers may be written 0.0, as elsewhere
        if "scene" in self.doc and not (type(scene) is int and 0 <= scene < len(scenes)):
            self.warn(
                "scene",
                f"{_show(scene)} is not an index into scenes ({len(scenes)} elements); ignored",
            )
            scene = None
        if scene is not None:
            return roots_of[scene]
        if roots_of:
            return roots_of[0]
        return tuple(np.flatnonzero(parent < 0).tolist())

    def _roots(self, sc: Any, path: str, parent: NDArray[np.int64]) -> tuple[int, ...]:
        """The nodes ``scenes[i]`` lists that are root nodes, each once (a warning for the
        others)."""
        if not isinstance(sc, dict):
            self.warn(path, f"must be an object, got {_show(sc)}; ignored")
            return ()
        listed = sc.get("nodes", [])
        if not isinstance(listed, list):
            self.warn(f"{path}.nodes", f"must be an array, got {_show(listed)}; ignored")
            return ()
        try:
            roots = columns.ints(self, listed, lambda k: f"{path}.nodes[{k}]", target="nodes")
            at = np.arange(len(roots))
        except GltfError as exc:  # not integers, or not indices into nodes
            self.warn_error(exc, "left out of the scene's roots")
            n = len(parent)
            ints = [int(x) if isinstance(x, float) and x.is_integer() else x for x in listed]
            at = np.array([k for k, x in enumerate(ints) if type(x) is int and 0 <= x < n])
            at = at.astype(np.int64)
            roots = np.array([ints[k] for k in at.tolist()], np.int64)
        inner = parent[roots] >= 0
        if inner.any():
            k = int(np.argmax(inner))
            self.warn(
                f"{path}.nodes[{at[k]}]",
                f"nodes[{roots[k]}] is not a root node; left out of the roots{_more(inner)}",
            )
            roots, at = roots[~inner], at[~inner]
        _, first = np.unique(roots, return_index=True)
        if len(first) != len(roots):
            self.warn(f"{path}.nodes", "lists a node twice; listed once")
            roots = roots[np.sort(first)]
        return tuple(roots.tolist())
