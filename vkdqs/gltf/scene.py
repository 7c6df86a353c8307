"""The loaded scene: nodes, meshes, skins and the node hierarchy math (global and skinning
matrices at rest or at a time of an animation).

Rigid parts
-----------
A mesh on a node without ``skin`` is attached rigidly to that node: its vertex ``p`` is drawn at
``node_global_matrices(...)[node] @ p``. :meth:`GltfScene.rigid_meshes` lists these instances with
their global matrices at a given animation time (parts parented to joint nodes follow the joint).
"""

from __future__ import annotations

import enum
import html
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vkdqs import dq, methods
from vkdqs.clip import AnimationClip
from vkdqs.errors import InputError
from vkdqs.gltf import hierarchy
from vkdqs.gltf.animation import Animation
from vkdqs.gltf.errors import GltfError
from vkdqs.gltf.summary import scene_info, summary_text
from vkdqs.material import Material
from vkdqs.mesh import SkinnedMesh


class _Default(enum.Enum):
    FIRST_ANIMATION = "FIRST_ANIMATION"

    def __repr__(self) -> str:
        return self.value


#: glTF's default material (primitives without ``material``): one object, so a renderer makes
#: it once.
_DEFAULT_MATERIAL = Material()

#: ``GltfScene.skinning_matrices``'s default animation: animation 0, or the rest pose when the
#: file has none.
FIRST_ANIMATION = _Default.FIRST_ANIMATION


@dataclass(frozen=True, eq=False, slots=True)
class Node:
    """One node of the hierarchy, with its rest (unanimated) local transform.

    Attributes
    ----------
    index : int
    name : str
        ``""`` when the file gives none.
    parent : int or None
    children : tuple of int
    mesh, skin : int or None
    translation : ndarray, [3]
        Read-only, as are ``rotation``, ``scale`` and ``matrix`` (views of the scene's arrays).
    rotation : ndarray, [4]
        Unit quaternion ``(x, y, z, w)``.
    scale : ndarray, [3]
    matrix : ndarray, [4, 4] or None
        The node's ``matrix`` when it has one (then TRS are identity and unused).
    weights : ndarray, [M] or None
        The node's morph-target ``weights`` (they override its mesh's), None when it has none.
    """

    index: int
    name: str
    parent: int | None
    children: tuple[int, ...]
    mesh: int | None
    skin: int | None
    translation: NDArray[np.float64]
    rotation: NDArray[np.float64]
    scale: NDArray[np.float64]
    matrix: NDArray[np.float64] | None
    weights: NDArray[np.float64] | None = None


_DEFAULT_TRS = {
    "translation": np.zeros(3),
    "rotation": np.array([0.0, 0.0, 0.0, 1.0]),
    "scale": np.ones(3),
}
for _a in _DEFAULT_TRS.values():
    _a.flags.writeable = False


@dataclass(frozen=True, eq=False)
class _NodeTable:
    """Every node's hierarchy and rest transform as arrays (-1 for no parent, mesh, skin), what
    the scene's math uses; :class:`Node` objects are views of it."""

    parent: NDArray[np.int64]
    mesh: NDArray[np.int64]
    skin: NDArray[np.int64]
    depth: NDArray[np.int64]
    translation: NDArray[np.float64]
    rotation: NDArray[np.float64]
    scale: NDArray[np.float64]
    matrix_nodes: NDArray[np.int64]
    matrices: NDArray[np.float64]

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            getattr(self, name).flags.writeable = False

    @classmethod
    def of(cls, nodes: tuple[Node, ...]) -> _NodeTable:
        """The table of Node objects (a scene made without the loader's table)."""
        n = len(nodes)

        def ints(values: list[int | None]) -> NDArray[np.int64]:
            return np.array([-1 if v is None else v for v in values], dtype=np.int64)

        parent = ints([nd.parent for nd in nodes])
        with_matrix = [nd for nd in nodes if nd.matrix is not None]
        return cls(
            parent=parent,
            mesh=ints([nd.mesh for nd in nodes]),
            skin=ints([nd.skin for nd in nodes]),
            depth=hierarchy.depths(parent)[0],
            translation=np.array([nd.translation for nd in nodes], np.float64).reshape(n, 3),
            rotation=np.array([nd.rotation for nd in nodes], np.float64).reshape(n, 4),
            scale=np.array([nd.scale for nd in nodes], np.float64).reshape(n, 3),
            matrix_nodes=np.array([nd.index for nd in with_matrix], dtype=np.int64),
            matrices=np.array([nd.matrix for nd in with_matrix], np.float64).reshape(-1, 4, 4),
        )

    def node_objects(
        self,
        names: list[str],
        children: list[tuple[int, ...]],
        weights: list[NDArray[np.float64] | None],
    ) -> tuple[Node, ...]:
        """A :class:`Node` per row; a node with a default translation, rotation or scale shares
        one read-only default array, the others view the table."""
        n = len(self.parent)
        rows = {}
        for key, default in _DEFAULT_TRS.items():
            values: list[NDArray[np.float64]] = [default] * n
            table = getattr(self, key)
            moved = np.flatnonzero((table != default).any(axis=1))
            picked = table[moved]
            picked.flags.writeable = False
            deque(map(values.__setitem__, moved.tolist(), picked), maxlen=0)  # their rows
            rows[key] = values
        matrix: list[NDArray[np.float64] | None] = [None] * n
        deque(map(matrix.__setitem__, self.matrix_nodes.tolist(), self.matrices), maxlen=0)

        def optional(a: NDArray[np.int64]) -> list[int | None]:
            out = a.astype(object)
            out[a < 0] = None
            return out.tolist()

        return _instances(
            Node,
            n,
            index=range(n),
            name=names,
            parent=optional(self.parent),
            children=children,
            mesh=optional(self.mesh),
            skin=optional(self.skin),
            translation=rows["translation"],
            rotation=rows["rotation"],
            scale=rows["scale"],
            matrix=matrix,
            weights=weights,
        )


def _instances(cls: type, n: int, **columns: Any) -> tuple:
    """``n`` objects of the frozen slotted dataclass ``cls``, field ``f`` of object ``i`` set to
    ``columns[f][i]``: one C-level pass per field through its slot's descriptor, as
    ``cls.__init__`` would set it (which, frozen, costs about 4 us an object: 11 Python-level
    ``object.__setattr__`` calls)."""
    assert set(columns) == set(cls.__dataclass_fields__)
    objects = list(map(object.__new__, repeat(cls, n)))
    for name, values in columns.items():
        deque(map(getattr(cls, name).__set__, objects, values), maxlen=0)
    return tuple(objects)


@dataclass(frozen=True, eq=False)
class Primitive:
    """One triangle primitive of a mesh, decoded.

    Attributes
    ----------
    positions : ndarray of float32, [N, 3]
    normals : ndarray of float32, [N, 3]
        From ``NORMAL``, or computed when ``normals_computed``.
    joints : ndarray of uint16, [N, 4 * S] or None
        ``JOINTS_0 .. JOINTS_{S-1}`` side by side; None for a primitive without skin attributes.
    weights : ndarray of float32, [N, 4 * S] or None
        ``WEIGHTS_n`` as in the file (normalized integers converted to float), not renormalized.
    indices : ndarray of uint32, [3 T]
        Triangle list (strips and fans converted; ``arange`` for non-indexed triangles).
    mode : int
        The file's primitive mode (4, 5 or 6).
    normals_computed : bool
    dqs_blend : ndarray of float32, [N] or None
        The application attribute ``_DQS_BLEND`` (each vertex's DQS fraction for
        ``method="blend"``), None when the primitive has none.
    morph_positions, morph_normals : ndarray of float32, [M, N, 3] or None
        The ``targets``' POSITION and NORMAL deltas (zeros for a target without one; None when
        no target has it). Every primitive of a mesh has the same M.
    uvs : ndarray of float32, [N, 2] or None
        ``TEXCOORD_0`` (normalized integers converted; quantized integers as they are).
    colors : ndarray of float32, [N, 4] or None
        ``COLOR_0``, linear RGBA (alpha 1 for a VEC3 colour).
    tangents : ndarray of float32, [N, 4] or None
        ``TANGENT`` (xyz, handedness w = +-1): read and checked, not drawn; None when the
        primitive has none or one vkdqs cannot use (a GltfWarning says why).
    material : int or None
        Index into ``GltfScene.materials``; None for glTF's default material.
    """

    positions: NDArray[np.float32]
    normals: NDArray[np.float32]
    joints: NDArray[np.uint16] | None
    weights: NDArray[np.float32] | None
    indices: NDArray[np.uint32]
    mode: int
    normals_computed: bool
    dqs_blend: NDArray[np.float32] | None = None
    morph_positions: NDArray[np.float32] | None = None
    morph_normals: NDArray[np.float32] | None = None
    target_count: int = 0
    uvs: NDArray[np.float32] | None = None
    colors: NDArray[np.float32] | None = None
    tangents: NDArray[np.float32] | None = None
    material: int | None = None

    @property
    def vertex_count(self) -> int:
        """Number of vertices (rows of ``positions``)."""
        return int(self.positions.shape[0])

    @property
    def triangle_count(self) -> int:
        """Number of triangles (``indices`` holds three per triangle)."""
        return int(self.indices.shape[0] // 3)

    @cached_property
    def max_influences(self) -> int:
        """Largest number of non-zero weights on one vertex (0 without skin attributes).

        Cached: meshes that share this primitive ask once.
        """
        if self.weights is None or len(self.weights) == 0:
            return 0
        return int((self.weights > 0).sum(axis=1).max())


@dataclass(frozen=True, eq=False)
class Mesh:
    """A mesh: its primitives and the nodes that instantiate it.

    Attributes
    ----------
    index : int
    name : str
    primitives : tuple of Primitive
    nodes : tuple of int
        Nodes whose ``mesh`` is this mesh.
    skin : int or None
        The skin of the first skinned node using this mesh; None when no node skins it.
    skins : tuple of int
        Every skin a node uses with this mesh, in node order without repeats (glTF lets nodes
        share a mesh, each with its own skin; its joint indices then refer to each node's skin,
        and the loader checked them against each).
    weights : ndarray, [M] or None
        The mesh's default morph-target ``weights``; None when the file gives none.
    target_names : tuple of str
        ``extras.targetNames`` (the de-facto convention of Blender and three.js), or ``()``.
    """

    index: int
    name: str
    primitives: tuple[Primitive, ...]
    nodes: tuple[int, ...]
    skin: int | None
    skins: tuple[int, ...] = ()
    weights: NDArray[np.float64] | None = None
    target_names: tuple[str, ...] = ()

    @property
    def morph_target_count(self) -> int:
        """Morph targets ``M`` of every primitive (0 without any)."""
        return self.primitives[0].target_count if self.primitives else 0

    @property
    def skinned(self) -> bool:
        """Every primitive has ``JOINTS_0``/``WEIGHTS_0``."""
        return all(p.joints is not None for p in self.primitives)

    @property
    def vertex_count(self) -> int:
        """Number of vertices of all its primitives."""
        return sum(p.vertex_count for p in self.primitives)

    @property
    def triangle_count(self) -> int:
        """Number of triangles of all its primitives."""
        return sum(p.triangle_count for p in self.primitives)

    @property
    def max_influences(self) -> int:
        """Largest number of non-zero weights on one vertex (0 for a rigid mesh)."""
        return max((p.max_influences for p in self.primitives), default=0)


@dataclass(frozen=True, eq=False)
class Skin:
    """A skin: joint nodes and their inverse bind matrices.

    Attributes
    ----------
    index : int
    name : str
    joints : ndarray of int64, [J]
        Node index of each joint.
    joint_names : tuple of str
    inverse_bind_matrices : ndarray of float64, [J, 4, 4]
    skeleton : int or None
    """

    index: int
    name: str
    joints: NDArray[np.int64]
    joint_names: tuple[str, ...]
    inverse_bind_matrices: NDArray[np.float64]
    skeleton: int | None

    @property
    def joint_count(self) -> int:
        """Number of joints (entries of ``joints``)."""
        return int(self.joints.shape[0])


@dataclass(frozen=True)
class RigidInstance:
    """A mesh drawn rigidly by a node without a skin.

    Attributes
    ----------
    mesh : int
    node : int
    matrix : ndarray, [4, 4]
        The node's global matrix: vertex ``p`` goes to ``matrix @ p``.
    """

    mesh: int
    node: int
    matrix: NDArray[np.float64]


class GltfScene:
    """A loaded glTF file. Create it with :func:`load_gltf`.

    Attributes
    ----------
    path : pathlib.Path
    nodes : tuple of Node
    meshes : tuple of Mesh
    skins : tuple of Skin
    animations : tuple of Animation
    scene_roots : tuple of int
        Root nodes of the default scene (``scene``, else scene 0, else every parentless node).
    materials : tuple of vkdqs.Material
        ``materials[i]`` of the file, textures decoded (see :mod:`vkdqs.gltf.materials`).
    charged_bytes : int
        What loading the file counted against :func:`~vkdqs.gltf.load_gltf`'s ``max_bytes``
        (0 for a scene not made by it): the least ``max_bytes`` that loads it.
    """

    def __init__(
        self,
        path: Path,
        nodes: tuple[Node, ...],
        meshes: tuple[Mesh, ...],
        skins: tuple[Skin, ...],
        animations: tuple[Animation, ...],
        scene_roots: tuple[int, ...],
        *,
        materials: tuple[Material, ...] = (),
        _table: _NodeTable | None = None,
    ) -> None:
        self.path = path
        self.materials = materials
        self.nodes = nodes
        self.meshes = meshes
        self.skins = skins
        self.animations = animations
        self.scene_roots = scene_roots
        self.charged_bytes = 0
        # The hierarchy and rest transforms as arrays (the loader's, or made from the nodes):
        # every pose composes with pointer jumping (vkdqs.gltf.hierarchy), no loop per node.
        self._table = _NodeTable.of(nodes) if _table is None else _table
        self._parent = self._table.parent
        self._rest_t = self._table.translation
        self._rest_r = self._table.rotation
        self._rest_s = self._table.scale
        self._matrix_nodes = self._table.matrix_nodes
        self._matrices = self._table.matrices
        # nodes that draw their mesh rigidly (no skin), in node order
        self._rigid_nodes = np.flatnonzero((self._table.mesh >= 0) & (self._table.skin < 0))

    def __repr__(self) -> str:
        return (
            f"GltfScene({self.path.name!r}: {len(self.meshes)} meshes, {len(self.skins)} skins, "
            f"{len(self.animations)} animations, {len(self.nodes)} nodes)"
        )

    def _repr_html_(self) -> str:
        """Jupyter: :meth:`summary` as preformatted text (names from the file are escaped)."""
        return f"<pre>{html.escape(self.summary())}</pre>"

    # -- lookups -----------------------------------------------------------------------------

    def _animation(self, animation: int | str) -> Animation:
        if isinstance(animation, str):
            for a in self.animations:
                if a.name == animation:
                    return a
            names = ", ".join(repr(a.name) for a in self.animations) or "none"
            raise InputError(f"{self.path.name}: no animation named {animation!r} (have {names})")
        if isinstance(animation, bool) or not isinstance(animation, (int, np.integer)):
            raise InputError(f"animation must be an int, a name or None, got {animation!r}")
        if not 0 <= animation < len(self.animations):
            raise InputError(
                f"{self.path.name}: animation {animation} out of range "
                f"({len(self.animations)} animations)"
            )
        return self.animations[int(animation)]

    def _index(self, i: int, items: tuple, what: str) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InputError(f"{what} index must be an int, got {i!r}")
        if not 0 <= i < len(items):
            raise InputError(f"{self.path.name}: {what} {i} out of range ({len(items)} {what}s)")
        return int(i)

    # -- poses -------------------------------------------------------------------------------

    def node_global_matrices(
        self, animation: int | str | None = None, time: float = 0.0
    ) -> NDArray[np.float64]:
        """Global (world) matrix of every node, at rest or at ``time`` of an animation.

        Parameters
        ----------
        animation : int, str or None
            Animation index or name; None for the rest pose (the nodes' own TRS/matrix).
        time : float
            Seconds; clamped to each channel's key range.

        Returns
        -------
        ndarray, [num_nodes, 4, 4]
            ``global[n] = global[parent(n)] @ local[n]``.
        """
        if animation is None:
            # the rest pose is asked for often (info, skin traits, framing): composed once
            rest = self.__dict__.get("_rest_globals")
            if rest is None:
                rest = self._compose(self._rest_t, self._rest_r, self._rest_s)
                rest.flags.writeable = False
                self.__dict__["_rest_globals"] = rest
            return rest.copy()
        return self._compose(*self.node_local_trs(animation, time))

    def node_local_trs(
        self, animation: int | str | None = None, time: float = 0.0
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Every node's local translation ``[N, 3]``, rotation ``[N, 4]`` (unit quaternions
        ``x, y, z, w``) and scale ``[N, 3]``, at rest or at ``time`` of an animation (copies).
        Nodes given by a ``matrix`` keep identity TRS here (:attr:`Node.matrix` is theirs)."""
        t, r, s = self._rest_t.copy(), self._rest_r.copy(), self._rest_s.copy()
        if animation is not None:
            anim = self._animation(animation)
            values = anim.sample(float(time))
            ch, nodes = anim._targets["translation"]
            t[nodes] = values[ch, :3]
            ch, nodes = anim._targets["rotation"]
            r[nodes] = values[ch]
            ch, nodes = anim._targets["scale"]
            s[nodes] = values[ch, :3]
        return t, r, s

    @property
    def node_parents(self) -> NDArray[np.int64]:
        """Every node's parent index, -1 for a root (read-only)."""
        return self._parent

    @property
    def node_depths(self) -> NDArray[np.int64]:
        """Every node's depth in the hierarchy, 0 for a root (read-only)."""
        return self._table.depth

    def node_local_matrices(
        self, animation: int | str | None = None, time: float = 0.0
    ) -> NDArray[np.float64]:
        """Every node's local matrix ``[N, 4, 4]`` (its TRS, or its ``matrix``), at rest or at
        ``time`` of an animation."""
        return self._locals(*self.node_local_trs(animation, time))

    def _locals(self, t: NDArray, r: NDArray, s: NDArray) -> NDArray[np.float64]:
        local = _trs_matrices(t, r, s)
        if len(self._matrix_nodes):
            local[self._matrix_nodes] = self._matrices
        return local

    def _compose(self, t: NDArray, r: NDArray, s: NDArray) -> NDArray[np.float64]:
        """Global matrices of every node from local TRS (matrix nodes use their matrix). Where
        an animation's keys multiply past float64 the matrices hold inf or NaN, without numpy's
        warnings: the skinners and writers refuse non-finite matrices in one line of their own
        (a rest pose that overflows is refused when the file loads)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return hierarchy.global_matrices(self._locals(t, r, s), self._parent, self._table.depth)

    def skinning_matrices(
        self,
        skin: int = 0,
        animation: int | str | _Default | None = FIRST_ANIMATION,
        time: float = 0.0,
    ) -> NDArray[np.float64]:
        """Joint matrices of a skin: ``global(joint) @ inverse_bind_matrix``.

        The transform of the skinned mesh's own node is ignored, as the spec requires, so these
        map the mesh's bind-space vertices straight to world space.

        Parameters
        ----------
        skin : int
        animation : int, str or None
            Animation index or name; None for the rest pose. The default,
            :data:`FIRST_ANIMATION`, is animation 0, or the rest pose when the file has no
            animations.
        time : float

        Returns
        -------
        ndarray, [J, 4, 4]
            In the skin's joint order (the order ``JOINTS_n`` indices refer to).
        """
        sk = self.skins[self._index(skin, self.skins, "skin")]
        if animation is FIRST_ANIMATION:
            animation = 0 if self.animations else None
        glob = self.node_global_matrices(animation, time)
        return glob[sk.joints] @ sk.inverse_bind_matrices

    def morph_weights(
        self,
        mesh: int,
        node: int | None = None,
        animation: int | str | None = None,
        time: float = 0.0,
    ) -> NDArray[np.float64]:
        """The morph-target weights a mesh is drawn with by a node, at ``time`` of an animation.

        glTF's precedence: the animation's ``weights`` channel for that node when it has one,
        else the node's ``weights``, else the mesh's ``weights``, else zeros.

        Parameters
        ----------
        mesh : int
        node : int, optional
            A node whose ``mesh`` is ``mesh``; default the first such node (or none).
        animation : int, str or None
            None: no animation.
        time : float

        Returns
        -------
        ndarray of float64, [M]
            ``M = meshes[mesh].morph_target_count`` (0 for a mesh without targets).
        """
        m = self.meshes[self._index(mesh, self.meshes, "mesh")]
        if node is None:
            node = m.nodes[0] if m.nodes else None
        else:
            node = self._index(node, self.nodes, "node")
            if self.nodes[node].mesh != m.index:
                raise InputError(
                    f"{self.path.name}: nodes[{node}] does not draw meshes[{m.index}] "
                    f"(its mesh is {self.nodes[node].mesh})"
                )
        count = m.morph_target_count
        time = float(time)
        if not np.isfinite(time):
            raise InputError(f"time must be finite, got {time!r}")
        if count and animation is not None:
            anim = self._animation(animation)
            for ch in anim.weight_channels:
                if ch.node == node:
                    return ch.sample(time)
        nd = None if node is None else self.nodes[node]
        if count and nd is not None and nd.weights is not None:
            return nd.weights.copy()
        if count and m.weights is not None:
            return m.weights.copy()
        return np.zeros(count)

    def bake_clip(
        self, skin: int = 0, animation: int | str = 0, fps: float = 30.0
    ) -> AnimationClip:
        """Sample an animation's skinning matrices at ``fps`` for crowds.

        Frame ``k`` is :meth:`skinning_matrices` at ``k / fps``, the last frame at the
        animation's end (a clip one frame long for an animation of no duration).

        Returns
        -------
        vkdqs.AnimationClip
        """
        sk = self.skins[self._index(skin, self.skins, "skin")]
        anim = self._animation(animation)
        if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)):
            raise InputError(f"fps must be a positive number, got {fps!r}")
        if not (np.isfinite(fps) and 0 < fps <= 1000):
            raise InputError(f"fps must be in (0, 1000], got {fps!r}")
        count = int(np.ceil(anim.duration * fps - 1e-9)) + 1
        times = np.minimum(np.arange(count) / fps, anim.duration)
        frames = np.empty((count, sk.joint_count, 4, 4))
        for k, t in enumerate(times):
            frames[k] = self.skinning_matrices(skin, animation, float(t))
        # the last frame sits exactly at the end, so the clip's duration is the animation's
        return AnimationClip(frames, (count - 1) / anim.duration if count > 1 else fps)

    def rigid_meshes(
        self, animation: int | str | None = None, time: float = 0.0
    ) -> list[RigidInstance]:
        """Meshes placed by nodes without a skin, with their global matrices.

        Parameters
        ----------
        animation : int, str or None
        time : float

        Returns
        -------
        list of RigidInstance
            One per (node, mesh), in node order.
        """
        glob = self.node_global_matrices(animation, time)
        rigid = self._rigid_nodes
        meshes = self._table.mesh[rigid].tolist()
        return list(map(RigidInstance, meshes, rigid.tolist(), glob[rigid]))

    # -- meshes ------------------------------------------------------------------------------

    def material(self, index: int | None) -> Material:
        """``materials[index]``, or glTF's default material (white, opaque) for None."""
        return _DEFAULT_MATERIAL if index is None else self.materials[index]

    def mesh_groups(self, mesh: int = 0) -> list[tuple[int, int, Material]]:
        """Each primitive of a mesh as ``(first index, index count, material)`` in the merged
        index array of :meth:`skinned_mesh` (primitives in file order), for
        ``Renderer.add_mesh(..., groups=...)``."""
        m = self.meshes[self._index(mesh, self.meshes, "mesh")]
        out, first = [], 0
        for p in m.primitives:  # a few primitives
            out.append((first, int(p.indices.size), self.material(p.material)))
            first += int(p.indices.size)
        return out

    def skinned_mesh(self, mesh: int = 0) -> SkinnedMesh:
        """The primitives of one mesh merged into a :class:`vkdqs.SkinnedMesh`.

        A primitive's ``_DQS_BLEND`` attribute becomes ``SkinnedMesh.dqs_blend`` (0, plain LBS,
        on the mesh's other primitives; None when no primitive has it).
        ``TEXCOORD_0`` and ``COLOR_0`` become ``uvs`` and ``colors`` likewise (0 and white on
        primitives without them; None when no primitive has them).
        Indices are offset per primitive; the influences of ``JOINTS_0/WEIGHTS_0``,
        ``JOINTS_1/WEIGHTS_1``, ... are side by side (SkinnedMesh sorts, compacts and renormalizes
        them). Joint indices refer to the skin of each node that draws the mesh (``Mesh.skins``:
        usually one).

        Parameters
        ----------
        mesh : int

        Returns
        -------
        SkinnedMesh

        Raises
        ------
        InputError
            The mesh index does not exist, or the mesh has a primitive without ``JOINTS_0``.
        GltfError
            SkinnedMesh rejected the data (e.g. more than 8 non-zero weights on a vertex).
        """
        m = self.meshes[self._index(mesh, self.meshes, "mesh")]
        rigid = [i for i, p in enumerate(m.primitives) if p.joints is None]
        if rigid:
            raise InputError(
                f"{self.path.name}: meshes[{m.index}] ({m.name!r}) primitive {rigid[0]} has no "
                "JOINTS_0/WEIGHTS_0; it is a rigid mesh (see GltfScene.rigid_meshes)"
            )
        width = max(p.joints.shape[1] for p in m.primitives)
        morph_p, morph_n = merged_morphs(m)
        pos, nrm, jnt, wgt, idx, blend = [], [], [], [], [], []
        offset = 0
        for p in m.primitives:  # a few primitives; the data inside is whole arrays
            blend.append(
                np.zeros(p.vertex_count, np.float32) if p.dqs_blend is None else p.dqs_blend
            )
            pad = width - p.joints.shape[1]
            pos.append(p.positions)
            nrm.append(p.normals)
            jnt.append(np.pad(p.joints, ((0, 0), (0, pad))))
            wgt.append(np.pad(p.weights, ((0, 0), (0, pad))))
            idx.append(p.indices.astype(np.int64) + offset)
            offset += p.vertex_count
        try:
            return SkinnedMesh(
                np.concatenate(pos),
                np.concatenate(nrm),
                np.concatenate(jnt),
                np.concatenate(wgt),
                np.concatenate(idx),
                dqs_blend=(
                    np.concatenate(blend)
                    if any(p.dqs_blend is not None for p in m.primitives)
                    else None
                ),
                morph_positions=morph_p,
                morph_normals=morph_n,
                **surface_arrays(m.primitives),
            )
        except InputError as exc:
            raise GltfError(f"{self.path.name}: meshes[{m.index}]: {exc}") from exc

    # -- summary -----------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """A JSON-friendly summary: meshes, skins, animations (for ``vkdqs info``).

        Returns
        -------
        dict
            ``{"file", "nodes", "meshes": [...], "skins": [...], "animations": [...]}``; each
            skin lists ``methods`` (the shown skinning methods that accept it,
            :meth:`skin_traits` judged by :meth:`vkdqs.methods.SkinningMethod.check`) and
            ``refused`` (the others, with the reason), ``joints``,
            ``max_influences`` (over meshes bound to it) and
            ``scaled_joints`` (a joint has a non-unit local scale at rest or in some
            animation) and ``rest_skinning_scale`` (min, max column length of the rest-pose
            skinning matrices: ``[1, 1]`` when they are rigid).
        """
        return scene_info(self)

    def summary(self) -> str:
        """:meth:`info` as a few human-readable lines."""
        return summary_text(self.info())

    def skin_traits(self, skin: int) -> methods.SkinTraits:
        """What the joint matrices of ``skin`` hold in the rest pose and any animation, for the
        skinning methods' :meth:`~vkdqs.methods.SkinningMethod.check` (``vkdqs info``, the
        scenes' ``--method all`` and the bake all ask this): scale or shear (in the rest
        skinning matrices, a joint's rest scale, an animation scaling a joint, or a joint below
        an animated or non-uniform scale; a uniform one the rest matrices all share is
        ``uniform_scale``), a mirror (a
        negative determinant or an animated negative scale), a singular matrix, the most
        influences of the meshes bound to it, and whether its inverse bind matrices give each
        bone's rest frame."""
        sk = self.skins[self._index(skin, self.skins, "skin")]
        rest = self.node_global_matrices(None)[sk.joints] @ sk.inverse_bind_matrices
        bound = [m.max_influences for m in self.meshes if sk.index in m.skins]
        ibm = dq.matrix_kinds(sk.inverse_bind_matrices)
        traits = methods.SkinTraits.of_matrices(
            rest, max_influences=max(bound, default=0), rest_frames=not ibm.collapse.any()
        )
        joints = set(sk.joints.tolist())
        scaled, mirrored, collapsed = self._scale_animated()
        # a joint under an animated or non-uniform scale: its matrices change scale or shear
        # as the clip moves it, whatever they are at rest
        moving = bool(self._scale_above(scaled)[sk.joints].any())
        return traits | methods.SkinTraits(
            scale=self._has_scale(sk, scaled) or moving,
            reflection=not mirrored.isdisjoint(joints),
            collapse=not collapsed.isdisjoint(joints),
        )

    def _scale_animated(self, atol: float = 1e-4) -> tuple[set[int], set[int], set[int]]:
        """Nodes some animation scales away from 1, to a negative scale, to a zero one
        (computed once for all skins)."""
        cached = self.__dict__.get("_scaled_nodes")
        if cached is not None:
            return cached
        out: tuple[set[int], set[int], set[int]] = (set(), set(), set())
        seen: dict[int, tuple[bool, bool, bool]] = {}  # per key array: channels may share one
        for a in self.animations:
            for ch in a.channels:
                if ch.path != "scale":
                    continue
                key = id(ch.values)
                if key not in seen:
                    v = ch.values
                    seen[key] = (
                        bool(np.any(np.abs(v - 1.0) > atol)),
                        bool(np.any(v < 0.0)),
                        bool(np.any(np.abs(v) <= atol)),
                    )
                for nodes, hit in zip(out, seen[key], strict=True):
                    if hit:
                        nodes.add(ch.node)
        self.__dict__["_scaled_nodes"] = out
        return out

    def _scale_above(self, scaled_nodes: set[int]) -> np.ndarray:
        """Per node: it or an ancestor has an animated scale (``scaled_nodes``) or a
        non-uniform rest scale (or a shear, for a matrix node), computed once for all skins."""
        cached = self.__dict__.get("_scale_above_nodes")
        if cached is not None:
            return cached
        s = self._rest_s
        flags = np.abs(s - s[:, :1]).max(axis=1) > 1e-4 * np.abs(s).max(axis=1)
        if len(self._matrix_nodes):
            flags[self._matrix_nodes] = np.isnan(dq.uniform_scales(self._matrices))
        flags[list(scaled_nodes)] = True
        out = hierarchy.on_path(self._parent, flags)
        self.__dict__["_scale_above_nodes"] = out
        return out

    def _has_scale(self, skin: Skin, scaled_nodes: set[int], atol: float = 1e-4) -> bool:
        joints = skin.joints
        if not scaled_nodes.isdisjoint(joints.tolist()):
            return True
        # Rest scale of every node: its TRS scale, or the column lengths of its matrix.
        rest = self._rest_s
        if len(self._matrix_nodes):
            rest = rest.copy()
            rest[self._matrix_nodes] = np.linalg.norm(self._matrices[:, :3, :3], axis=1)
        return bool(np.any(np.abs(rest[joints] - 1.0) > atol))


def merged_morphs(
    mesh: Mesh,
) -> tuple[NDArray[np.float32] | None, NDArray[np.float32] | None]:
    """The morph deltas of a mesh's primitives side by side, ``(M, N, 3)`` each, in the vertex
    order of :meth:`GltfScene.skinned_mesh` (zeros where a primitive lacks a kind that another
    has); None for a kind no primitive has."""
    out: list[NDArray[np.float32] | None] = []
    for kind in ("morph_positions", "morph_normals"):
        if mesh.morph_target_count == 0 or all(getattr(p, kind) is None for p in mesh.primitives):
            out.append(None)
            continue
        parts = []
        for p in mesh.primitives:  # a few primitives; the data inside is whole arrays
            d = getattr(p, kind)
            shape = (mesh.morph_target_count, p.vertex_count, 3)
            parts.append(np.zeros(shape, np.float32) if d is None else d)
        out.append(np.concatenate(parts, axis=1))
    return out[0], out[1]


def surface_arrays(primitives: tuple[Primitive, ...]) -> dict[str, np.ndarray | None]:
    """``uvs`` and ``colors`` of primitives merged in order (zeros / white where a primitive
    has none; None when none has them), as SkinnedMesh keywords."""
    out: dict[str, np.ndarray | None] = {}
    for key, width, fill in (("uvs", 2, 0.0), ("colors", 4, 1.0)):
        arrays = [getattr(p, key) for p in primitives]
        if all(a is None for a in arrays):
            out[key] = None
            continue
        out[key] = np.concatenate(
            [
                np.full((p.vertex_count, width), fill, np.float32) if a is None else a
                for p, a in zip(primitives, arrays, strict=True)
            ]
        )
    return out


def _trs_matrices(t: NDArray, r: NDArray, s: NDArray) -> NDArray[np.float64]:
    """``T @ R @ S`` for ``[n, 3]``, ``[n, 4]``, ``[n, 3]`` -> ``[n, 4, 4]``."""
    out = np.zeros((len(t), 4, 4))
    # R @ diag(s) scales the columns of R.
    out[:, :3, :3] = dq.quat_to_matrix(r) * s[:, None, :]
    out[:, :3, 3] = t
    out[:, 3, 3] = 1.0
    return out
