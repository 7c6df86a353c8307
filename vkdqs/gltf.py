"""glTF 2.0 loading: skinned meshes, skins, the node hierarchy and animations as numpy arrays.

:func:`load_gltf` reads a ``.gltf`` (with external ``.bin`` files or base64 ``data:`` URIs) or a
``.glb`` file, checks it against the rules of the glTF 2.0 specification that matter for skinning,
and returns a :class:`GltfScene`. The JSON is parsed with the standard library and every accessor
is decoded here with numpy, so every byte range, alignment, component type and index is checked.
Nothing here touches the GPU.

What is loaded
--------------
* Meshes: triangle primitives (modes TRIANGLES, TRIANGLE_STRIP and TRIANGLE_FAN, converted to
  triangle lists; indexed or not), ``POSITION``, ``NORMAL`` (computed when absent, see
  :func:`vertex_normals`) and every ``JOINTS_n``/``WEIGHTS_n`` set.
* Skins: joints, inverse bind matrices (identity when absent), skeleton root.
* Nodes: TRS or ``matrix`` local transforms and the hierarchy.
* Animations: translation/rotation/scale channels with STEP, LINEAR and CUBICSPLINE samplers.

What is ignored (the specification lets a loader ignore it): materials, textures, images,
samplers, cameras, lights, ``extras``, unknown ``extensionsUsed``, other vertex attributes
(TEXCOORD_n, COLOR_n, TANGENT, ...), morph targets and ``weights`` animation channels (logged once
at INFO level on the ``vkdqs.gltf`` logger).

Errors
------
A malformed or unsupported file raises one :class:`GltfError` whose message names the file, the
JSON path and the problem, e.g.
``model.gltf: accessors[7].count: 40 elements of 12 bytes from offset 0 exceed bufferViews[2]
(byteLength 400)``. Mistakes of the caller (an animation index that does not exist) raise
:class:`vkdqs.errors.InputError`.

Rigid parts
-----------
A mesh on a node without ``skin`` is attached rigidly to that node: its vertex ``p`` is drawn at
``node_global_matrices(...)[node] @ p``. :meth:`GltfScene.rigid_meshes` lists these instances with
their global matrices at a given animation time (parts parented to joint nodes follow the joint).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import struct
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vkdqs import dq
from vkdqs.errors import InputError
from vkdqs.mesh import SkinnedMesh

__all__ = [
    "Animation",
    "Channel",
    "GltfError",
    "GltfScene",
    "Mesh",
    "Node",
    "Primitive",
    "RigidInstance",
    "Skin",
    "load_gltf",
    "vertex_normals",
]

_log = logging.getLogger("vkdqs.gltf")


class GltfError(InputError):
    """A glTF file is malformed or uses something vkdqs does not support.

    The message names the file, the JSON path (``meshes[0].primitives[1].indices``) and the problem.
    """


GLB_MAGIC = 0x46546C67  # b"glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942

_COMPONENTS: dict[int, tuple[str, np.dtype]] = {
    5120: ("BYTE", np.dtype("<i1")),
    5121: ("UNSIGNED_BYTE", np.dtype("<u1")),
    5122: ("SHORT", np.dtype("<i2")),
    5123: ("UNSIGNED_SHORT", np.dtype("<u2")),
    5125: ("UNSIGNED_INT", np.dtype("<u4")),
    5126: ("FLOAT", np.dtype("<f4")),
}
BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT, UNSIGNED_INT, FLOAT = 5120, 5121, 5122, 5123, 5125, 5126
# (columns, rows) of each accessor type; vectors are one column.
_TYPES = {
    "SCALAR": (1, 1),
    "VEC2": (1, 2),
    "VEC3": (1, 3),
    "VEC4": (1, 4),
    "MAT2": (2, 2),
    "MAT3": (3, 3),
    "MAT4": (4, 4),
}
_MODES = {
    0: "POINTS",
    1: "LINES",
    2: "LINE_LOOP",
    3: "LINE_STRIP",
    4: "TRIANGLES",
    5: "TRIANGLE_STRIP",
    6: "TRIANGLE_FAN",
}
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963
_INTERPOLATIONS = ("LINEAR", "STEP", "CUBICSPLINE")
_PATHS = ("translation", "rotation", "scale", "weights")

# Required extensions that change nothing vkdqs reads (materials, textures, lights): a file that
# requires them still has plain geometry, skins and animations, so it loads. Any other required
# extension (Draco, meshopt, mesh quantization, animation pointers, ...) changes how the data we
# read must be decoded, and the spec says a loader that does not support it must fail.
_HARMLESS_REQUIRED = re.compile(
    r"^(KHR_materials_\w+|KHR_texture_transform|KHR_texture_basisu|EXT_texture_webp|"
    r"EXT_texture_avif|KHR_lights_punctual)$"
)
#: Largest accessor without a bufferView (all zeros, maybe sparse) we allocate, in bytes. Such an
#: accessor costs no file bytes, so without a cap a tiny file could ask for terabytes.
MAX_ZERO_FILL_BYTES = 256 * 2**20
#: Weights whose sum differs from 1 by more than this are reported (once per file) and renormalized.
WEIGHT_SUM_TOL = 1e-3


# ------------------------------------------------------------------------------------------------
# public data
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
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
    rotation : ndarray, [4]
        Unit quaternion ``(x, y, z, w)``.
    scale : ndarray, [3]
    matrix : ndarray, [4, 4] or None
        The node's ``matrix`` when it has one (then TRS are identity and unused).
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
    """

    positions: NDArray[np.float32]
    normals: NDArray[np.float32]
    joints: NDArray[np.uint16] | None
    weights: NDArray[np.float32] | None
    indices: NDArray[np.uint32]
    mode: int
    normals_computed: bool

    @property
    def vertex_count(self) -> int:
        return int(self.positions.shape[0])

    @property
    def triangle_count(self) -> int:
        return int(self.indices.shape[0] // 3)


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
        The skin of the first skinned node using this mesh (its joint indices refer to that skin);
        None when no node skins it.
    """

    index: int
    name: str
    primitives: tuple[Primitive, ...]
    nodes: tuple[int, ...]
    skin: int | None

    @property
    def skinned(self) -> bool:
        """Every primitive has ``JOINTS_0``/``WEIGHTS_0``."""
        return all(p.joints is not None for p in self.primitives)

    @property
    def vertex_count(self) -> int:
        return sum(p.vertex_count for p in self.primitives)

    @property
    def triangle_count(self) -> int:
        return sum(p.triangle_count for p in self.primitives)

    @property
    def max_influences(self) -> int:
        """Largest number of non-zero weights on one vertex (0 for a rigid mesh)."""
        counts = [
            int((p.weights > 0).sum(axis=1).max()) for p in self.primitives if p.weights is not None
        ]
        return max(counts, default=0)


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
        return int(self.joints.shape[0])


@dataclass(frozen=True, eq=False)
class Channel:
    """One decoded animation channel (translation, rotation or scale of one node).

    Attributes
    ----------
    node : int
    path : str
        ``"translation"``, ``"rotation"`` or ``"scale"``.
    interpolation : str
        ``"LINEAR"``, ``"STEP"`` or ``"CUBICSPLINE"``.
    times : ndarray of float64, [K]
        Strictly increasing key times in seconds.
    values : ndarray of float64, [K, 3] or [K, 4]
        Key values; rotations are normalized.
    in_tangents, out_tangents : ndarray of float64, [K, 3|4] or None
        CUBICSPLINE tangents (per second, before scaling by the key interval).
    """

    node: int
    path: str
    interpolation: str
    times: NDArray[np.float64]
    values: NDArray[np.float64]
    in_tangents: NDArray[np.float64] | None = None
    out_tangents: NDArray[np.float64] | None = None


_STEP, _LINEAR, _CUBIC = 0, 1, 2


class Animation:
    """An animation: channels sampled together, vectorized over channels and times.

    Channels are padded into one ``[C, K]`` key array (``K`` = the most keys of any channel), so a
    sample is a handful of numpy operations whatever the number of channels.

    Attributes
    ----------
    name : str
    channels : tuple of Channel
    duration : float
        Last key time over all channels (including ignored morph-weight channels), in seconds.
    ignored_channels : int
        Morph-target ``weights`` channels (and channels without a target node), not sampled.
    """

    def __init__(
        self,
        name: str,
        channels: tuple[Channel, ...],
        *,
        duration: float,
        ignored_channels: int = 0,
    ) -> None:
        self.name = name
        self.channels = channels
        self.duration = float(duration)
        self.ignored_channels = ignored_channels
        c = len(channels)
        k = max((len(ch.times) for ch in channels), default=1)
        # Padding times with +inf keeps `times <= t` false past a channel's last key.
        self._times = np.full((c, k), np.inf)
        self._count = np.array([len(ch.times) for ch in channels], dtype=np.int64)
        self._values = np.zeros((c, k, 4))
        self._in = np.zeros((c, k, 4))
        self._out = np.zeros((c, k, 4))
        for i, ch in enumerate(channels):  # once per load, over channels
            n, w = ch.values.shape
            self._times[i, :n] = ch.times
            self._values[i, :n, :w] = ch.values
            if ch.in_tangents is not None and ch.out_tangents is not None:
                self._in[i, :n, :w] = ch.in_tangents
                self._out[i, :n, :w] = ch.out_tangents
        codes = {"STEP": _STEP, "LINEAR": _LINEAR, "CUBICSPLINE": _CUBIC}
        self._interp = np.array([codes[ch.interpolation] for ch in channels], dtype=np.int64)
        self._is_rot = np.array([ch.path == "rotation" for ch in channels], dtype=bool)
        paths = np.array([ch.path for ch in channels], dtype=object)
        nodes = np.array([ch.node for ch in channels], dtype=np.int64)
        self._targets = {
            p: (np.flatnonzero(paths == p), nodes[paths == p])
            for p in ("translation", "rotation", "scale")
        }

    def __repr__(self) -> str:
        return (
            f"Animation({self.name!r}, {len(self.channels)} channels, "
            f"duration {self.duration:.4g} s)"
        )

    def sample(self, time: ArrayLike, /) -> NDArray[np.float64]:
        """Sample every channel at ``time`` (clamped to each channel's first/last key).

        Parameters
        ----------
        time : float or array_like, [...]
            Seconds.

        Returns
        -------
        ndarray, [..., C, 4]
            One row per channel, in :attr:`channels` order: rotations as unit quaternions, and
            translations/scales in ``[:3]`` with ``[3] = 0``.
        """
        t = np.asarray(time, dtype=np.float64)
        if not np.isfinite(t).all():
            raise InputError(f"time must be finite, got {time!r}")
        shape = t.shape
        t = t.reshape(-1, 1)  # [T, 1]
        c = len(self.channels)
        if c == 0:
            return np.zeros((*shape, 0, 4))
        rows = np.arange(c)
        last = self._count - 1
        # Index of the last key at or before t, per channel: a count, not a per-channel search.
        k0 = np.clip((self._times[None] <= t[..., None]).sum(axis=-1) - 1, 0, last)  # [T, C]
        k1 = np.minimum(k0 + 1, last)
        t0 = self._times[rows, k0]
        t1 = self._times[rows, k1]
        dt = np.where(k1 > k0, t1 - t0, 0.0)
        u = np.clip((t - t0) / np.where(dt > 0, dt, 1.0), 0.0, 1.0)
        u = np.where(dt > 0, u, 0.0)[..., None]  # [T, C, 1]
        v0 = self._values[rows, k0]
        v1 = self._values[rows, k1]

        lerp = v0 + u * (v1 - v0)
        slerp = _slerp(v0, v1, u)
        linear = np.where(self._is_rot[:, None], slerp, lerp)

        # Hermite spline with tangents scaled by the key interval, as the spec writes it.
        u2, u3 = u * u, u * u * u
        d = dt[..., None]
        cubic = (
            (2 * u3 - 3 * u2 + 1) * v0
            + d * (u3 - 2 * u2 + u) * self._out[rows, k0]
            + (-2 * u3 + 3 * u2) * v1
            + d * (u3 - u2) * self._in[rows, k1]
        )
        norm = np.linalg.norm(cubic, axis=-1, keepdims=True)
        cubic_rot = cubic / np.where(norm > 0, norm, 1.0)
        cubic = np.where(self._is_rot[:, None] & (norm > 0), cubic_rot, cubic)

        mode = self._interp[:, None]
        out = np.where(mode == _STEP, v0, np.where(mode == _LINEAR, linear, cubic))
        return out.reshape(*shape, c, 4)


def _slerp(q0: NDArray, q1: NDArray, u: NDArray) -> NDArray:
    """Shortest-path slerp of unit quaternions ``[..., 4]`` at ``u [..., 1]``."""
    d = np.sum(q0 * q1, axis=-1, keepdims=True)
    # q and -q are the same rotation; flipping q1 takes the short way round.
    q1 = np.where(d < 0, -q1, q1)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    s = np.sin(theta)
    # Nearly equal keys: sin(theta) -> 0, so fall back to lerp (then normalize).
    near = s < 1e-6
    s_safe = np.where(near, 1.0, s)
    w0 = np.where(near, 1.0 - u, np.sin((1.0 - u) * theta) / s_safe)
    w1 = np.where(near, u, np.sin(u * theta) / s_safe)
    q = w0 * q0 + w1 * q1
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    return q / np.where(n > 0, n, 1.0)


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


# ------------------------------------------------------------------------------------------------
# the scene
# ------------------------------------------------------------------------------------------------


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
    """

    def __init__(
        self,
        path: Path,
        nodes: tuple[Node, ...],
        meshes: tuple[Mesh, ...],
        skins: tuple[Skin, ...],
        animations: tuple[Animation, ...],
        scene_roots: tuple[int, ...],
    ) -> None:
        self.path = path
        self.nodes = nodes
        self.meshes = meshes
        self.skins = skins
        self.animations = animations
        self.scene_roots = scene_roots
        n = len(nodes)
        self._rest_t = np.array([nd.translation for nd in nodes]).reshape(n, 3)
        self._rest_r = np.array([nd.rotation for nd in nodes]).reshape(n, 4)
        self._rest_s = np.array([nd.scale for nd in nodes]).reshape(n, 3)
        self._matrix_nodes = np.array(
            [nd.index for nd in nodes if nd.matrix is not None], dtype=np.int64
        )
        self._matrices = np.array([nd.matrix for nd in nodes if nd.matrix is not None]).reshape(
            -1, 4, 4
        )
        # Nodes grouped by depth, so globals compose one level at a time (vectorized per level).
        depth = np.zeros(n, dtype=np.int64)
        for nd in _topological(nodes):
            if nd.parent is not None:
                depth[nd.index] = depth[nd.parent] + 1
        parents = np.array([-1 if nd.parent is None else nd.parent for nd in nodes], np.int64)
        self._levels = []
        for level in range(1, int(depth.max(initial=0)) + 1):
            members = np.flatnonzero(depth == level)
            self._levels.append((members, parents[members]))

    def __repr__(self) -> str:
        return (
            f"GltfScene({self.path.name!r}: {len(self.meshes)} meshes, {len(self.skins)} skins, "
            f"{len(self.animations)} animations, {len(self.nodes)} nodes)"
        )

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
        local = _trs_matrices(t, r, s)
        if len(self._matrix_nodes):
            local[self._matrix_nodes] = self._matrices
        glob = local
        for members, parents in self._levels:
            glob[members] = glob[parents] @ local[members]
        return glob

    def skinning_matrices(
        self, skin: int = 0, animation: int | str | None = 0, time: float = 0.0
    ) -> NDArray[np.float64]:
        """Joint matrices of a skin: ``global(joint) @ inverse_bind_matrix``.

        The transform of the skinned mesh's own node is ignored, as the spec requires, so these
        map the mesh's bind-space vertices straight to world space.

        Parameters
        ----------
        skin : int
        animation : int, str or None
            None for the rest pose.
        time : float

        Returns
        -------
        ndarray, [J, 4, 4]
            In the skin's joint order (the order ``JOINTS_n`` indices refer to).
        """
        sk = self.skins[self._index(skin, self.skins, "skin")]
        glob = self.node_global_matrices(animation, time)
        return glob[sk.joints] @ sk.inverse_bind_matrices

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
        return [
            RigidInstance(nd.mesh, nd.index, glob[nd.index])
            for nd in self.nodes
            if nd.mesh is not None and nd.skin is None
        ]

    # -- meshes ------------------------------------------------------------------------------

    def skinned_mesh(self, mesh: int = 0) -> SkinnedMesh:
        """The primitives of one mesh merged into a :class:`vkdqs.SkinnedMesh`.

        Indices are offset per primitive; the influences of ``JOINTS_0/WEIGHTS_0``,
        ``JOINTS_1/WEIGHTS_1``, ... are side by side (SkinnedMesh sorts, compacts and renormalizes
        them). Joint indices refer to ``meshes[mesh].skin``.

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
        pos, nrm, jnt, wgt, idx = [], [], [], [], []
        offset = 0
        for p in m.primitives:  # a few primitives; the data inside is whole arrays
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
            skin lists ``joints``, ``max_influences`` (over meshes bound to it) and
            ``scaled_joints`` (a joint has a non-unit local scale at rest or in some
            animation) and ``rest_skinning_scale`` (min, max column length of the rest-pose
            skinning matrices: ``[1, 1]`` when they are rigid).
        """
        meshes = [
            {
                "index": m.index,
                "name": m.name,
                "primitives": len(m.primitives),
                "vertices": m.vertex_count,
                "triangles": m.triangle_count,
                "skinned": m.skinned,
                "skin": m.skin,
                "nodes": list(m.nodes),
                "max_influences": m.max_influences,
                "computed_normals": any(p.normals_computed for p in m.primitives),
            }
            for m in self.meshes
        ]
        skins = []
        rest = self.node_global_matrices(None)
        for sk in self.skins:
            bound = [m.max_influences for m in self.meshes if m.skin == sk.index]
            # Column lengths of the rest skinning matrices: 1 for rigid ones. DQS needs rigid
            # matrices, so a file whose armature sits under a scaled node shows it here.
            cols = np.linalg.norm((rest[sk.joints] @ sk.inverse_bind_matrices)[:, :3, :3], axis=1)
            skins.append(
                {
                    "index": sk.index,
                    "name": sk.name,
                    "joints": sk.joint_count,
                    "joint_names": list(sk.joint_names),
                    "max_influences": max(bound, default=0),
                    "scaled_joints": self._has_scale(sk),
                    "rest_skinning_scale": [float(cols.min()), float(cols.max())],
                }
            )
        animations = [
            {
                "index": i,
                "name": a.name,
                "duration": a.duration,
                "channels": len(a.channels),
                "ignored_channels": a.ignored_channels,
                "interpolations": sorted({ch.interpolation for ch in a.channels}),
            }
            for i, a in enumerate(self.animations)
        ]
        return {
            "file": self.path.name,
            "nodes": len(self.nodes),
            "meshes": meshes,
            "skins": skins,
            "animations": animations,
        }

    def summary(self) -> str:
        """:meth:`info` as a few human-readable lines."""
        info = self.info()
        lines = [f"{info['file']}: {info['nodes']} nodes"]
        for m in info["meshes"]:
            kind = f"skin {m['skin']}" if m["skin"] is not None else "rigid"
            lines.append(
                f"  mesh {m['index']} {m['name']!r}: {m['primitives']} primitives, "
                f"{m['vertices']} vertices, {m['triangles']} triangles, {kind}, "
                f"max {m['max_influences']} influences"
            )
        for s in info["skins"]:
            scaled = ", scaled joints" if s["scaled_joints"] else ""
            lo, hi = s["rest_skinning_scale"]
            if max(abs(lo - 1.0), abs(hi - 1.0)) > 1e-4:
                scaled += f", rest skinning scale {lo:.4g}..{hi:.4g}"
            lines.append(
                f"  skin {s['index']} {s['name']!r}: {s['joints']} joints, "
                f"max {s['max_influences']} influences{scaled}"
            )
        for a in info["animations"]:
            lines.append(
                f"  animation {a['index']} {a['name']!r}: {a['duration']:.3f} s, "
                f"{a['channels']} channels ({'/'.join(a['interpolations'])})"
            )
        return "\n".join(lines)

    def _has_scale(self, skin: Skin, atol: float = 1e-4) -> bool:
        joints = set(skin.joints.tolist())
        for j in joints:
            nd = self.nodes[j]
            if nd.matrix is not None:
                col = np.linalg.norm(nd.matrix[:3, :3], axis=0)
                if np.any(np.abs(col - 1.0) > atol):
                    return True
            elif np.any(np.abs(nd.scale - 1.0) > atol):
                return True
        for a in self.animations:
            for ch in a.channels:
                if ch.path == "scale" and ch.node in joints:
                    if np.any(np.abs(ch.values - 1.0) > atol):
                        return True
        return False


def _trs_matrices(t: NDArray, r: NDArray, s: NDArray) -> NDArray[np.float64]:
    """``T @ R @ S`` for ``[n, 3]``, ``[n, 4]``, ``[n, 3]`` -> ``[n, 4, 4]``."""
    out = np.zeros((len(t), 4, 4))
    # R @ diag(s) scales the columns of R.
    out[:, :3, :3] = dq.quat_to_matrix(r) * s[:, None, :]
    out[:, :3, 3] = t
    out[:, 3, 3] = 1.0
    return out


def _topological(nodes: tuple[Node, ...]) -> list[Node]:
    """Nodes with every parent before its children (the hierarchy was checked acyclic)."""
    order = [nd for nd in nodes if nd.parent is None]
    i = 0
    while i < len(order):
        order.extend(nodes[c] for c in order[i].children)
        i += 1
    return order


# ------------------------------------------------------------------------------------------------
# normals
# ------------------------------------------------------------------------------------------------


def vertex_normals(positions: ArrayLike, indices: ArrayLike, /) -> NDArray[np.float64]:
    """Angle-weighted smooth vertex normals.

    Each triangle adds its unit normal times its corner angle to each of its three vertices
    (Thürmer & Wüthrich), which does not depend on how a surface is triangulated.

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
    p = np.asarray(positions, dtype=np.float64)
    tri = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
    n = len(p)
    corners = p[tri]  # [T, 3, 3]
    # Edges leaving each corner towards the next and the previous corner.
    nxt = np.roll(corners, -1, axis=1) - corners
    prv = np.roll(corners, 1, axis=1) - corners
    face = np.cross(nxt[:, 0], prv[:, 0])
    length = np.linalg.norm(face, axis=1, keepdims=True)
    unit = face / np.where(length > 0, length, 1.0)
    angle = np.arctan2(
        np.linalg.norm(np.cross(nxt, prv), axis=-1), np.einsum("tci,tci->tc", nxt, prv)
    )
    contrib = unit[:, None, :] * angle[..., None]  # [T, 3, 3]
    flat_idx = tri.reshape(-1)
    flat = contrib.reshape(-1, 3)
    acc = np.stack([np.bincount(flat_idx, weights=flat[:, c], minlength=n) for c in range(3)], 1)
    norm = np.linalg.norm(acc, axis=1, keepdims=True)
    out = acc / np.where(norm > 1e-12, norm, 1.0)
    out[norm[:, 0] <= 1e-12] = (0.0, 0.0, 1.0)
    return out


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
# container parsing
# ------------------------------------------------------------------------------------------------


def _parse_glb(raw: bytes, name: str) -> tuple[bytes, bytes | None]:
    """Split a GLB into its JSON chunk and optional BIN chunk, checking the container."""

    def fail(msg: str) -> NoReturn:
        raise GltfError(f"{name}: {msg}")

    if len(raw) < 12:
        fail(f"GLB header: the file has {len(raw)} bytes, a GLB header needs 12")
    magic, version, length = struct.unpack_from("<III", raw, 0)
    if magic != GLB_MAGIC:
        fail(f"GLB header: magic {raw[:4]!r} is not b'glTF'")
    if version != 2:
        fail(f"GLB header: version {version} is not supported (only glTF 2)")
    if length > len(raw):
        fail(f"GLB header: length {length} but the file has only {len(raw)} bytes (truncated)")
    if length != len(raw):
        fail(f"GLB header: length {length} but the file has {len(raw)} bytes")
    chunks: list[tuple[int, bytes]] = []
    offset = 12
    while offset < length:
        where = f"GLB chunk {len(chunks)} at byte {offset}"
        if length - offset < 8:
            fail(f"{where}: truncated chunk header ({length - offset} bytes left, need 8)")
        chunk_length, chunk_type = struct.unpack_from("<II", raw, offset)
        if chunk_length % 4:
            fail(f"{where}: chunkLength {chunk_length} is not a multiple of 4")
        start = offset + 8
        if start + chunk_length > length:
            fail(
                f"{where}: truncated: chunkLength {chunk_length} but only "
                f"{length - start} bytes follow"
            )
        chunks.append((chunk_type, raw[start : start + chunk_length]))
        offset = start + chunk_length
    if not chunks or chunks[0][0] != _CHUNK_JSON:
        fail("GLB: the first chunk must be the JSON chunk")
    binary = None
    for i, (chunk_type, data) in enumerate(chunks[1:], start=1):
        if chunk_type == _CHUNK_JSON:
            fail(f"GLB chunk {i}: a second JSON chunk")
        if chunk_type == _CHUNK_BIN:
            if i != 1:
                fail(f"GLB chunk {i}: the BIN chunk must be the second chunk (and only one)")
            binary = data
        # Chunks of unknown types are skipped, as the spec requires.
    return chunks[0][1], binary


def _reject_constant(token: str) -> NoReturn:
    raise ValueError(f"{token} is not valid JSON")


def _parse_json(data: bytes, name: str) -> dict:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GltfError(f"{name}: JSON is not valid UTF-8 (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise GltfError(f"{name}: JSON starts with a byte order mark, which glTF forbids")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise GltfError(
            f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # NaN/Infinity tokens
        raise GltfError(f"{name}: invalid JSON: {exc}") from None
    except RecursionError:
        raise GltfError(f"{name}: invalid JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise GltfError(f"{name}: the JSON root must be an object, got {type(doc).__name__}")
    return doc


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _at(path: str, key: str) -> str:
    """JSON path of ``key`` inside ``path`` (the root's path is ``""``)."""
    return f"{path}.{key}" if path else key


def _align4(n: int) -> int:
    return (n + 3) & ~3


@dataclass(frozen=True)
class _View:
    data: bytes
    offset: int  # absolute, in data
    length: int
    stride: int | None


@dataclass(frozen=True)
class _Accessor:
    data: np.ndarray  # [count, rows] for vectors/scalars, [count, rows, cols] for matrices
    component_type: int
    type: str
    normalized: bool

    @property
    def count(self) -> int:
        return int(self.data.shape[0])

    def floats(self) -> NDArray[np.float64]:
        """Values as float64, normalized integers mapped to [0, 1] / [-1, 1] as the spec says."""
        a = self.data
        if not self.normalized:
            return a.astype(np.float64)
        info = np.iinfo(a.dtype)
        return np.maximum(a.astype(np.float64) / info.max, -1.0)


class _Reader:
    """Checks and decodes one glTF document. Each ``fail`` names the JSON path."""

    def __init__(self, path: Path, doc: dict, glb_bin: bytes | None) -> None:
        self.path = path
        self.name = path.name
        self.doc = doc
        self.glb_bin = glb_bin
        self._buffers: dict[int, bytes] = {}
        self._views: dict[int, _View] = {}
        self._accessors: dict[tuple[int, bool], _Accessor] = {}
        self.weight_warnings: list[tuple[str, int, int, float]] = []
        self.ignored_morph = 0

    def fail(self, path: str, msg: str) -> NoReturn:
        where = f"{path}: " if path else ""
        raise GltfError(f"{self.name}: {where}{msg}")

    # -- typed JSON access -------------------------------------------------------------------

    def array(self, key: str) -> list[dict]:
        """A top-level array of objects (``[]`` when absent)."""
        value = self.doc.get(key, [])
        if not isinstance(value, list):
            self.fail(key, f"must be an array, got {_show(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                self.fail(f"{key}[{i}]", f"must be an object, got {_show(item)}")
        return value

    def get_obj(self, parent: dict, key: str, path: str, *, required: bool = False) -> dict | None:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return None
        value = parent[key]
        if not isinstance(value, dict):
            self.fail(_at(path, key), f"must be an object, got {_show(value)}")
        return value

    def get_list(self, parent: dict, key: str, path: str, *, required: bool = False) -> list:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return []
        value = parent[key]
        if not isinstance(value, list):
            self.fail(_at(path, key), f"must be an array, got {_show(value)}")
        return value

    def get_int(
        self,
        parent: dict,
        key: str,
        path: str,
        *,
        required: bool = False,
        default: int | None = None,
        minimum: int | None = None,
    ) -> int | None:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return default
        return self.as_int(parent[key], _at(path, key), minimum=minimum)

    def as_int(self, value: Any, path: str, *, minimum: int | None = None) -> int:
        # JSON Schema integers may be written 3.0; booleans are not numbers.
        if isinstance(value, float) and np.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, got {_show(value)}")
        if minimum is not None and value < minimum:
            self.fail(path, f"must be >= {minimum}, got {value}")
        return value

    def get_index(
        self, parent: dict, key: str, path: str, target: str, *, required: bool = False
    ) -> int | None:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return None
        return self.as_index(parent[key], _at(path, key), target)

    def as_index(self, value: Any, path: str, target: str) -> int:
        i = self.as_int(value, path)
        n = len(self.array(target))
        if not 0 <= i < n:
            self.fail(path, f"{i} is not an index into {target} ({n} elements)")
        return i

    def get_str(
        self, parent: dict, key: str, path: str, *, required: bool = False, default: str = ""
    ) -> str:
        if key not in parent:
            if required:
                self.fail(path, f"required property {key!r} is missing")
            return default
        value = parent[key]
        if not isinstance(value, str):
            self.fail(_at(path, key), f"must be a string, got {_show(value)}")
        return value

    def get_bool(self, parent: dict, key: str, path: str, *, default: bool = False) -> bool:
        value = parent.get(key, default)
        if not isinstance(value, bool):
            self.fail(_at(path, key), f"must be a boolean, got {_show(value)}")
        return value

    def get_numbers(
        self, parent: dict, key: str, path: str, count: int, default: list[float]
    ) -> NDArray[np.float64]:
        value = parent.get(key, default)
        where = _at(path, key)
        if not isinstance(value, list) or len(value) != count:
            self.fail(where, f"must be an array of {count} numbers, got {_show(value)}")
        for i, x in enumerate(value):
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                self.fail(f"{where}[{i}]", f"must be a number, got {_show(x)}")
            try:
                finite = np.isfinite(float(x))
            except OverflowError:
                finite = False
            if not finite:
                self.fail(f"{where}[{i}]", f"must be a finite float, got {_show(x)}")
        return np.array(value, dtype=np.float64)

    # -- binary data -------------------------------------------------------------------------

    def buffer(self, i: int) -> bytes:
        if i in self._buffers:
            return self._buffers[i]
        path = f"buffers[{i}]"
        b = self.array("buffers")[i]
        byte_length = self.get_int(b, "byteLength", path, required=True, minimum=1)
        if "uri" not in b:
            if i != 0 or self.glb_bin is None:
                self.fail(
                    path, "has no uri (only buffers[0] of a GLB with a BIN chunk may omit it)"
                )
            data = self.glb_bin
            if len(data) < byte_length:
                self.fail(
                    f"{path}.byteLength",
                    f"{byte_length} exceeds the GLB BIN chunk ({len(data)} bytes)",
                )
        else:
            uri = self.get_str(b, "uri", path)
            data = self._read_uri(uri, f"{path}.uri")
            if len(data) < byte_length:
                self.fail(
                    f"{path}.byteLength", f"{byte_length} but the data has only {len(data)} bytes"
                )
        self._buffers[i] = data
        return data

    def _read_uri(self, uri: str, path: str) -> bytes:
        if uri.startswith("data:"):
            header, comma, payload = uri.partition(",")
            if not comma or not header.endswith(";base64"):
                self.fail(path, "only base64 data: URIs are supported")
            try:
                return base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                self.fail(path, f"invalid base64 data: {exc}")
        try:
            scheme = urllib.parse.urlsplit(uri).scheme
        except ValueError as exc:
            self.fail(path, f"invalid URI {_show(uri)}: {exc}")
        if len(scheme) > 1:  # one letter is a Windows drive, not a scheme
            self.fail(path, f"{_show(uri)}: only relative file URIs and data: URIs are supported")
        file = self.path.parent / urllib.parse.unquote(uri)
        try:
            return file.read_bytes()
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            self.fail(path, f"cannot read {_show(uri)}: {reason}")

    def view(self, i: int) -> _View:
        if i in self._views:
            return self._views[i]
        path = f"bufferViews[{i}]"
        bv = self.array("bufferViews")[i]
        b = self.get_index(bv, "buffer", path, "buffers", required=True)
        length = self.get_int(bv, "byteLength", path, required=True, minimum=1)
        offset = self.get_int(bv, "byteOffset", path, default=0, minimum=0)
        stride = self.get_int(bv, "byteStride", path)
        if stride is not None and not (4 <= stride <= 252 and stride % 4 == 0):
            self.fail(f"{path}.byteStride", f"{stride} must be a multiple of 4 in [4, 252]")
        target = self.get_int(bv, "target", path)
        if target not in (None, _ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER):
            self.fail(f"{path}.target", f"{target} is not 34962 or 34963")
        buffer_length = self.array("buffers")[b]
        data = self.buffer(b)
        declared = self.get_int(buffer_length, "byteLength", f"buffers[{b}]")
        if offset + length > declared:
            self.fail(
                path,
                f"byteOffset {offset} + byteLength {length} exceeds buffers[{b}] "
                f"(byteLength {declared})",
            )
        v = _View(data, offset, length, stride)
        self._views[i] = v
        return v

    def _strided(
        self,
        view_index: int,
        byte_offset: int,
        count: int,
        comp: np.dtype,
        cols: int,
        rows: int,
        path: str,
        *,
        strided: bool,
    ) -> np.ndarray:
        """``[count, cols, rows]`` elements read from a bufferView, bounds and alignment checked."""
        v = self.view(view_index)
        size = comp.itemsize
        col_stride = _align4(rows * size) if cols > 1 else rows * size
        elem = cols * col_stride
        if v.stride is not None and not strided:
            self.fail(
                f"bufferViews[{view_index}].byteStride",
                f"must not be defined for data other than vertex attributes (used by {path})",
            )
        stride = v.stride if v.stride is not None else elem
        if stride < elem:
            self.fail(
                f"bufferViews[{view_index}].byteStride",
                f"{stride} is smaller than the {elem}-byte elements of {path}",
            )
        if byte_offset % size or (v.offset + byte_offset) % size:
            self.fail(
                f"{path}.byteOffset",
                f"{byte_offset} (+ bufferViews[{view_index}].byteOffset {v.offset}) is not "
                f"aligned to the {size}-byte component size",
            )
        end = byte_offset + stride * (count - 1) + elem
        if end > v.length:
            self.fail(
                f"{path}.count",
                f"{count} elements of {elem} bytes from offset {byte_offset} exceed "
                f"bufferViews[{view_index}] (byteLength {v.length})",
            )
        arr = np.ndarray(
            (count, cols, rows),
            dtype=comp,
            buffer=v.data,
            offset=v.offset + byte_offset,
            strides=(stride, col_stride, size),
        )
        return arr.astype(comp.newbyteorder("="))

    def accessor(self, i: int, user: str, *, vertex: bool | None = False) -> _Accessor:
        """Decode ``accessors[i]`` (dense part, then sparse substitution), fully checked.

        ``vertex``: True for vertex attributes (strided views allowed, 4-byte alignment),
        False for other uses (no byteStride), None to check an accessor nothing uses (not cached).
        """
        key = (i, bool(vertex))
        if vertex is not None and key in self._accessors:
            return self._accessors[key]
        path = f"accessors[{i}]"
        a = self.array("accessors")[i]
        ct = self.get_int(a, "componentType", path, required=True)
        if ct not in _COMPONENTS:
            self.fail(f"{path}.componentType", f"{ct} is not a glTF component type")
        count = self.get_int(a, "count", path, required=True, minimum=1)
        type_ = self.get_str(a, "type", path, required=True)
        if type_ not in _TYPES:
            self.fail(f"{path}.type", f"{_show(type_)} is not a glTF accessor type")
        normalized = self.get_bool(a, "normalized", path)
        if normalized and ct in (UNSIGNED_INT, FLOAT):
            self.fail(f"{path}.normalized", f"is true for {_COMPONENTS[ct][0]} components")
        comp = _COMPONENTS[ct][1]
        cols, rows = _TYPES[type_]
        byte_offset = self.get_int(a, "byteOffset", path, default=0, minimum=0)
        view_index = self.get_index(a, "bufferView", path, "bufferViews")
        if view_index is None:
            if "byteOffset" in a:
                self.fail(f"{path}.byteOffset", "must not be defined without a bufferView")
            nbytes = count * cols * rows * comp.itemsize
            if nbytes > MAX_ZERO_FILL_BYTES:
                self.fail(
                    f"{path}.count",
                    f"{count} elements without a bufferView would need {nbytes} bytes "
                    f"(vkdqs allows {MAX_ZERO_FILL_BYTES})",
                )
            data = np.zeros((count, cols, rows), dtype=comp.newbyteorder("="))
        else:
            data = self._strided(
                view_index, byte_offset, count, comp, cols, rows, path, strided=vertex is not False
            )
            if vertex:
                stride = self.view(view_index).stride
                if byte_offset % 4 or (stride is None and data[0].nbytes % 4):
                    self.fail(
                        path,
                        f"vertex attribute elements must be 4-byte aligned (byteOffset "
                        f"{byte_offset}, element size {data[0].nbytes})",
                    )
        sparse = self.get_obj(a, "sparse", path)
        if sparse is not None:
            self._apply_sparse(sparse, f"{path}.sparse", data, comp, cols, rows, count)
        if ct == FLOAT and not np.isfinite(data).all():
            e = int(np.argwhere(~np.isfinite(data))[0][0])
            self.fail(path, f"element {e} is not finite ({data[e].ravel().tolist()})")
        # [count, cols, rows] column-major storage -> [count, rows] or [count, rows, cols].
        data = data[:, 0, :] if cols == 1 else np.ascontiguousarray(data.transpose(0, 2, 1))
        acc = _Accessor(data, ct, type_, normalized)
        if vertex is not None:
            self._accessors[key] = acc
        return acc

    def check_unused(self) -> None:
        """Check buffers, bufferViews and accessors that nothing we load refers to.

        A file is malformed even when the broken part is unused, and a partial check would let
        the same file load or fail depending on which meshes a caller asks for.
        """
        for i in range(len(self.array("buffers"))):
            self.buffer(i)
        for i in range(len(self.array("bufferViews"))):
            self.view(i)
        for i in range(len(self.array("accessors"))):
            if (i, True) not in self._accessors and (i, False) not in self._accessors:
                self.accessor(i, f"accessors[{i}]", vertex=None)

    def _apply_sparse(
        self,
        sparse: dict,
        path: str,
        data: np.ndarray,
        comp: np.dtype,
        cols: int,
        rows: int,
        count: int,
    ) -> None:
        n = self.get_int(sparse, "count", path, required=True, minimum=1)
        if n > count:
            self.fail(f"{path}.count", f"{n} exceeds the accessor's count {count}")
        ind = self.get_obj(sparse, "indices", path, required=True)
        ipath = f"{path}.indices"
        ibv = self.get_index(ind, "bufferView", ipath, "bufferViews", required=True)
        ioff = self.get_int(ind, "byteOffset", ipath, default=0, minimum=0)
        ict = self.get_int(ind, "componentType", ipath, required=True)
        if ict not in (UNSIGNED_BYTE, UNSIGNED_SHORT, UNSIGNED_INT):
            self.fail(f"{ipath}.componentType", f"{ict} must be 5121, 5123 or 5125")
        idx = self._strided(ibv, ioff, n, _COMPONENTS[ict][1], 1, 1, ipath, strided=False)
        idx = idx.reshape(-1).astype(np.int64)
        if np.any(idx >= count):
            k = int(np.argmax(idx >= count))
            self.fail(ipath, f"element {k} is {idx[k]}, out of range for count {count}")
        if np.any(np.diff(idx) <= 0):
            k = int(np.argmax(np.diff(idx) <= 0)) + 1
            self.fail(ipath, f"must be strictly increasing; element {k} is {idx[k]}")
        val = self.get_obj(sparse, "values", path, required=True)
        vpath = f"{path}.values"
        vbv = self.get_index(val, "bufferView", vpath, "bufferViews", required=True)
        voff = self.get_int(val, "byteOffset", vpath, default=0, minimum=0)
        data[idx] = self._strided(vbv, voff, n, comp, cols, rows, vpath, strided=False)

    def typed_accessor(
        self,
        i: int,
        user: str,
        types: tuple[str, ...],
        components: tuple[tuple[int, bool], ...],
        *,
        vertex: bool = False,
    ) -> _Accessor:
        """An accessor with a type in ``types``, (componentType, normalized) in ``components``."""
        acc = self.accessor(i, user, vertex=vertex)
        if acc.type not in types:
            self.fail(user, f"accessors[{i}] has type {acc.type}; need {' or '.join(types)}")
        if (acc.component_type, acc.normalized) not in components:
            allowed = ", ".join(
                ("normalized " if norm else "") + _COMPONENTS[c][0] for c, norm in components
            )
            got = ("normalized " if acc.normalized else "") + _COMPONENTS[acc.component_type][0]
            self.fail(user, f"accessors[{i}] has {got} components; need {allowed}")
        return acc

    # -- document ----------------------------------------------------------------------------

    def check_asset(self) -> None:
        asset = self.get_obj(self.doc, "asset", "", required=True)
        version = self.get_str(asset, "version", "asset", required=True)
        m = re.fullmatch(r"(\d+)\.(\d+)", version)
        if m is None:
            self.fail("asset.version", f"{_show(version)} is not of the form major.minor")
        if m.group(1) != "2":
            self.fail("asset.version", f"{version}: only glTF 2.x is supported")
        if "minVersion" in asset:
            mv = self.get_str(asset, "minVersion", "asset")
            mm = re.fullmatch(r"(\d+)\.(\d+)", mv)
            if mm is None or (int(mm.group(1)), int(mm.group(2))) > (2, 0):
                self.fail("asset.minVersion", f"{_show(mv)}: vkdqs reads glTF 2.0")
        for key in ("extensionsUsed", "extensionsRequired"):
            for k, ext in enumerate(self.get_list(self.doc, key, "")):
                if not isinstance(ext, str):
                    self.fail(f"{key}[{k}]", f"must be a string, got {_show(ext)}")
        for k, ext in enumerate(self.get_list(self.doc, "extensionsRequired", "")):
            if not _HARMLESS_REQUIRED.match(ext):
                self.fail(f"extensionsRequired[{k}]", f"extension {ext!r} is not supported")

    def nodes(self) -> tuple[Node, ...]:
        raw = self.array("nodes")
        parent: list[int | None] = [None] * len(raw)
        out = []
        for i, nd in enumerate(raw):  # over nodes, at load
            path = f"nodes[{i}]"
            children = []
            for k, c in enumerate(self.get_list(nd, "children", path)):
                c = self.as_index(c, f"{path}.children[{k}]", "nodes")
                if c == i:
                    self.fail(f"{path}.children[{k}]", "a node cannot be its own child")
                if parent[c] is not None:
                    self.fail(
                        f"{path}.children[{k}]",
                        f"nodes[{c}] is already a child of nodes[{parent[c]}]",
                    )
                parent[c] = i
                children.append(c)
            mesh = self.get_index(nd, "mesh", path, "meshes")
            skin = self.get_index(nd, "skin", path, "skins")
            if skin is not None and mesh is None:
                self.fail(f"{path}.skin", "a node with a skin must have a mesh")
            t = self.get_numbers(nd, "translation", path, 3, [0.0, 0.0, 0.0])
            r = self.get_numbers(nd, "rotation", path, 4, [0.0, 0.0, 0.0, 1.0])
            s = self.get_numbers(nd, "scale", path, 3, [1.0, 1.0, 1.0])
            # Divide by the largest component first so that 1e300 does not overflow the norm.
            big = np.abs(r).max()
            r = r / (big if big > 0 else 1.0)
            length = np.linalg.norm(r)
            if not (big > 1e-12 and length > 1e-6):
                self.fail(f"{path}.rotation", f"{(r * big).tolist()} is not a unit quaternion")
            matrix = None
            if "matrix" in nd:
                trs = [k for k in ("translation", "rotation", "scale") if k in nd]
                if trs:
                    self.fail(path, f"has both matrix and {trs[0]}")
                flat = self.get_numbers(nd, "matrix", path, 16, [])
                matrix = flat.reshape(4, 4).T  # glTF stores matrices column-major
            name = self.get_str(nd, "name", path)
            out.append([i, name, children, mesh, skin, t, r / length, s, matrix])
        # Every node must be reachable from a root: anything left over sits on a cycle.
        reached = np.zeros(len(raw), dtype=bool)
        stack = [i for i in range(len(raw)) if parent[i] is None]
        while stack:
            i = stack.pop()
            reached[i] = True
            stack.extend(out[i][2])
        if not reached.all():
            i = int(np.argmin(reached))
            self.fail(f"nodes[{i}]", "the node hierarchy has a cycle through this node")
        return tuple(
            Node(i, name, parent[i], tuple(ch), mesh, skin, t, r, s, m)
            for i, name, ch, mesh, skin, t, r, s, m in out
        )

    def scene_roots(self, nodes: tuple[Node, ...]) -> tuple[int, ...]:
        scenes = self.array("scenes")
        roots_of = []
        for i, sc in enumerate(scenes):
            path = f"scenes[{i}]"
            roots = []
            for k, n in enumerate(self.get_list(sc, "nodes", path)):
                n = self.as_index(n, f"{path}.nodes[{k}]", "nodes")
                if nodes[n].parent is not None:
                    self.fail(f"{path}.nodes[{k}]", f"nodes[{n}] is not a root node")
                roots.append(n)
            if len(set(roots)) != len(roots):
                self.fail(f"{path}.nodes", "lists a node twice")
            roots_of.append(tuple(roots))
        scene = self.get_index(self.doc, "scene", "", "scenes")
        if scene is not None:
            return roots_of[scene]
        if roots_of:
            return roots_of[0]
        return tuple(nd.index for nd in nodes if nd.parent is None)

    def primitive(self, m: int, p: int, prim: dict, flat_normals: bool) -> Primitive:
        path = f"meshes[{m}].primitives[{p}]"
        attrs = self.get_obj(prim, "attributes", path, required=True)
        mode = self.get_int(prim, "mode", path, default=4)
        if mode not in _MODES:
            self.fail(f"{path}.mode", f"{mode} is not a glTF primitive mode")
        if mode not in (4, 5, 6):
            self.fail(
                f"{path}.mode",
                f"{mode} ({_MODES[mode]}) is not supported; vkdqs draws triangles "
                "(TRIANGLES, TRIANGLE_STRIP, TRIANGLE_FAN)",
            )
        if "targets" in prim:
            self.ignored_morph += 1
        apath = f"{path}.attributes"
        if "POSITION" not in attrs:
            self.fail(apath, "POSITION is missing; vkdqs needs vertex positions")
        pos_i = self.as_index(attrs["POSITION"], f"{apath}.POSITION", "accessors")
        float3 = ((FLOAT, False),)
        pos = self.typed_accessor(pos_i, f"{apath}.POSITION", ("VEC3",), float3, vertex=True)
        n = pos.count
        positions = pos.data.astype(np.float32)

        def same_count(acc: _Accessor, user: str) -> None:
            if acc.count != n:
                self.fail(user, f"has {acc.count} elements but POSITION has {n}")

        normals = None
        if "NORMAL" in attrs:
            user = f"{apath}.NORMAL"
            nrm = self.typed_accessor(
                self.as_index(attrs["NORMAL"], user, "accessors"),
                user,
                ("VEC3",),
                float3,
                vertex=True,
            )
            same_count(nrm, user)
            normals = nrm.data.astype(np.float32)

        joints, weights = self._skin_attributes(attrs, apath, n, same_count)

        if "indices" in prim:
            user = f"{path}.indices"
            ia = self.typed_accessor(
                self.as_index(prim["indices"], user, "accessors"),
                user,
                ("SCALAR",),
                ((UNSIGNED_BYTE, False), (UNSIGNED_SHORT, False), (UNSIGNED_INT, False)),
            )
            idx = ia.data[:, 0].astype(np.int64)
            restart = np.iinfo(ia.data.dtype).max
            bad = (idx >= n) | (idx == restart)
            if np.any(bad):
                k = int(np.argmax(bad))
                why = (
                    "the primitive-restart value, which glTF forbids"
                    if idx[k] == restart
                    else f"out of range for {n} vertices"
                )
                self.fail(user, f"element {k} is {idx[k]}: {why}")
        else:
            idx = np.arange(n, dtype=np.int64)
        if mode == 4 and len(idx) % 3:
            what = "indices" if "indices" in prim else "vertices"
            self.fail(path, f"TRIANGLES with {len(idx)} {what}, not a multiple of 3")
        tri = _triangulate(idx, mode)

        computed = normals is None
        if computed and flat_normals:
            # Flat shading needs a vertex per triangle corner.
            positions = positions[tri]
            joints = None if joints is None else joints[tri]
            weights = None if weights is None else weights[tri]
            tri = np.arange(len(tri), dtype=np.int64)
            face = vertex_normals(positions, tri)
            normals = face.astype(np.float32)
        elif computed:
            normals = vertex_normals(positions, tri).astype(np.float32)
        else:
            bad = np.linalg.norm(normals.astype(np.float64), axis=1) < 1e-12
            if np.any(bad):
                # Exporters write zero normals on degenerate faces; SkinnedMesh needs unit
                # normals, so such vertices get the computed smooth normal instead.
                normals = normals.copy()
                normals[bad] = vertex_normals(positions, tri)[bad]
                _log.info("%s: %s: %d zero-length normals recomputed", self.name, path, bad.sum())
        return Primitive(
            positions,
            normals,
            joints,
            weights,
            tri.astype(np.uint32),
            mode,
            computed,
        )

    def _skin_attributes(
        self, attrs: dict, apath: str, n: int, same_count: Any
    ) -> tuple[NDArray | None, NDArray | None]:
        sets = set()
        for key in attrs:
            m = re.fullmatch(r"(JOINTS|WEIGHTS)_(\d+)", key)
            if m:
                sets.add(int(m.group(2)))
        if not sets:
            return None, None
        joints, weights = [], []
        for k in range(max(sets) + 1):
            jkey, wkey = f"JOINTS_{k}", f"WEIGHTS_{k}"
            for key in (jkey, wkey):
                if key not in attrs:
                    self.fail(apath, f"{key} is missing (JOINTS_n/WEIGHTS_n come in pairs from 0)")
            juser, wuser = f"{apath}.{jkey}", f"{apath}.{wkey}"
            ja = self.typed_accessor(
                self.as_index(attrs[jkey], juser, "accessors"),
                juser,
                ("VEC4",),
                ((UNSIGNED_BYTE, False), (UNSIGNED_SHORT, False)),
                vertex=True,
            )
            wa = self.typed_accessor(
                self.as_index(attrs[wkey], wuser, "accessors"),
                wuser,
                ("VEC4",),
                ((FLOAT, False), (UNSIGNED_BYTE, True), (UNSIGNED_SHORT, True)),
                vertex=True,
            )
            same_count(ja, juser)
            same_count(wa, wuser)
            w = wa.floats()
            if np.any(w < 0):
                v, c = np.argwhere(w < 0)[0]
                self.fail(wuser, f"vertex {v} has negative weight {w[v, c]}")
            joints.append(ja.data.astype(np.uint16))
            weights.append(w)
        j = np.concatenate(joints, axis=1)
        w = np.concatenate(weights, axis=1)
        total = w.sum(axis=1)
        off = np.abs(total - 1.0) > WEIGHT_SUM_TOL
        if np.any(off):
            v = int(np.argmax(off))
            self.weight_warnings.append((apath.rsplit(".", 1)[0], int(off.sum()), v, total[v]))
        return j, w.astype(np.float32)

    def meshes(self, nodes: tuple[Node, ...], flat_normals: bool) -> list[list[Primitive]]:
        out = []
        for m, mesh in enumerate(self.array("meshes")):
            path = f"meshes[{m}]"
            prims = self.get_list(mesh, "primitives", path, required=True)
            if not prims:
                self.fail(f"{path}.primitives", "must not be empty")
            decoded = []
            for p, prim in enumerate(prims):  # over primitives
                if not isinstance(prim, dict):
                    self.fail(f"{path}.primitives[{p}]", f"must be an object, got {_show(prim)}")
                decoded.append(self.primitive(m, p, prim, flat_normals))
            out.append(decoded)
        return out

    def skins(self, nodes: tuple[Node, ...]) -> tuple[Skin, ...]:
        out = []
        for s, sk in enumerate(self.array("skins")):
            path = f"skins[{s}]"
            raw = self.get_list(sk, "joints", path, required=True)
            if not raw:
                self.fail(f"{path}.joints", "must not be empty")
            joints = [self.as_index(j, f"{path}.joints[{k}]", "nodes") for k, j in enumerate(raw)]
            if len(set(joints)) != len(joints):
                dup = next(j for j in joints if joints.count(j) > 1)
                self.fail(f"{path}.joints", f"lists nodes[{dup}] twice")
            count = len(joints)
            ibm_i = self.get_index(sk, "inverseBindMatrices", path, "accessors")
            if ibm_i is None:
                ibm = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
            else:
                user = f"{path}.inverseBindMatrices"
                acc = self.typed_accessor(ibm_i, user, ("MAT4",), ((FLOAT, False),))
                if acc.count < count:
                    self.fail(
                        user, f"accessors[{ibm_i}] has {acc.count} matrices for {count} joints"
                    )
                ibm = acc.data[:count].astype(np.float64)
                bottom = np.abs(ibm[:, 3, :] - (0.0, 0.0, 0.0, 1.0)).max(axis=1)
                if np.any(bottom > 1e-3):
                    k = int(np.argmax(bottom > 1e-3))
                    self.fail(
                        user, f"matrix {k} has bottom row {ibm[k, 3].tolist()}, not (0, 0, 0, 1)"
                    )
                ibm[:, 3, :] = (0.0, 0.0, 0.0, 1.0)
            skeleton = self.get_index(sk, "skeleton", path, "nodes")
            if skeleton is not None:
                for k, j in enumerate(joints):  # over joints, at load
                    a = j
                    while a is not None and a != skeleton:
                        a = nodes[a].parent
                    if a is None:
                        self.fail(
                            f"{path}.skeleton",
                            f"joints[{k}] (nodes[{j}]) is not under the skeleton nodes[{skeleton}]",
                        )
            names = tuple(nodes[j].name for j in joints)
            out.append(
                Skin(
                    s,
                    self.get_str(sk, "name", path),
                    np.array(joints, np.int64),
                    names,
                    ibm,
                    skeleton,
                )
            )
        return tuple(out)

    def check_skinned_nodes(
        self, nodes: tuple[Node, ...], prims: list[list[Primitive]], skins: tuple[Skin, ...]
    ) -> None:
        for nd in nodes:
            if nd.skin is None:
                continue
            count = skins[nd.skin].joint_count
            for p, prim in enumerate(prims[nd.mesh]):
                path = f"meshes[{nd.mesh}].primitives[{p}]"
                if prim.joints is None:
                    self.fail(
                        path,
                        f"has no JOINTS_0/WEIGHTS_0 but nodes[{nd.index}] skins it with "
                        f"skins[{nd.skin}]",
                    )
                # Only weighted slots matter: exporters fill unused slots with joint 0.
                bad = (prim.weights > 0) & (prim.joints >= count)
                if np.any(bad):
                    v, c = np.argwhere(bad)[0]
                    self.fail(
                        path,
                        f"JOINTS_{c // 4} uses joint {prim.joints[v, c]} (vertex {v}) but "
                        f"skins[{nd.skin}] has {count} joints",
                    )

    def animations(self, nodes: tuple[Node, ...]) -> tuple[Animation, ...]:
        out = []
        for a, anim in enumerate(self.array("animations")):
            path = f"animations[{a}]"
            samplers = self.get_list(anim, "samplers", path, required=True)
            channels = self.get_list(anim, "channels", path, required=True)
            for k, s in enumerate(samplers):
                if not isinstance(s, dict):
                    self.fail(f"{path}.samplers[{k}]", f"must be an object, got {_show(s)}")
            decoded: list[Channel] = []
            ignored = 0
            duration = 0.0
            seen: dict[tuple[int, str], int] = {}
            for c, ch in enumerate(channels):  # over channels, at load
                cpath = f"{path}.channels[{c}]"
                if not isinstance(ch, dict):
                    self.fail(cpath, f"must be an object, got {_show(ch)}")
                si = self.as_int(ch.get("sampler"), f"{cpath}.sampler") if "sampler" in ch else None
                if si is None:
                    self.fail(cpath, "required property 'sampler' is missing")
                if not 0 <= si < len(samplers):
                    self.fail(
                        f"{cpath}.sampler",
                        f"{si} is not an index into {path}.samplers ({len(samplers)} elements)",
                    )
                target = self.get_obj(ch, "target", cpath, required=True)
                tpath = f"{cpath}.target"
                node = self.get_index(target, "node", tpath, "nodes")
                kind = self.get_str(target, "path", tpath, required=True)
                if kind not in _PATHS:
                    self.fail(f"{tpath}.path", f"{_show(kind)} is not {', '.join(_PATHS)}")
                if node is not None:
                    if (node, kind) in seen:
                        first = seen[node, kind]
                        self.fail(
                            tpath, f"nodes[{node}].{kind} is already animated by channels[{first}]"
                        )
                    seen[node, kind] = c
                    if kind != "weights" and nodes[node].matrix is not None:
                        self.fail(tpath, f"nodes[{node}] is animated but has a matrix")
                channel, end = self._channel(
                    samplers[si], f"{path}.samplers[{si}]", node, kind, cpath
                )
                duration = max(duration, end)
                if channel is None:
                    ignored += 1
                else:
                    decoded.append(channel)
            if ignored:
                self.ignored_morph += ignored
            out.append(
                Animation(
                    self.get_str(anim, "name", path),
                    tuple(decoded),
                    duration=duration,
                    ignored_channels=ignored,
                )
            )
        return tuple(out)

    def _channel(
        self, sampler: dict, spath: str, node: int | None, kind: str, cpath: str
    ) -> tuple[Channel | None, float]:
        interp = self.get_str(sampler, "interpolation", spath, default="LINEAR")
        if interp not in _INTERPOLATIONS:
            self.fail(
                f"{spath}.interpolation", f"{_show(interp)} is not LINEAR, STEP or CUBICSPLINE"
            )
        in_user, out_user = f"{spath}.input", f"{spath}.output"
        ii = self.get_index(sampler, "input", spath, "accessors", required=True)
        oi = self.get_index(sampler, "output", spath, "accessors", required=True)
        times = self.typed_accessor(ii, in_user, ("SCALAR",), ((FLOAT, False),)).data[:, 0]
        times = times.astype(np.float64)
        steps = np.diff(times)
        if np.any(steps <= 0):
            k = int(np.argmax(steps <= 0)) + 1
            self.fail(
                in_user,
                f"key times must be strictly increasing: key {k} is {times[k]:g} after "
                f"{times[k - 1]:g}",
            )
        end = float(times[-1])
        if node is None or kind == "weights":
            # Morph target weights (and extension-defined targets) are not used by vkdqs.
            return None, end
        if kind == "rotation":
            out = self.typed_accessor(
                oi,
                out_user,
                ("VEC4",),
                (
                    (FLOAT, False),
                    (BYTE, True),
                    (UNSIGNED_BYTE, True),
                    (SHORT, True),
                    (UNSIGNED_SHORT, True),
                ),
            )
        else:
            out = self.typed_accessor(oi, out_user, ("VEC3",), ((FLOAT, False),))
        values = out.floats()
        k = len(times)
        need = 3 * k if interp == "CUBICSPLINE" else k
        if out.count != need:
            self.fail(
                out_user,
                f"accessors[{oi}] has {out.count} elements; {interp} with {k} keys needs {need}",
            )
        in_t = out_t = None
        if interp == "CUBICSPLINE":
            # Each key stores (in-tangent, value, out-tangent).
            triples = values.reshape(k, 3, -1)
            in_t, values, out_t = triples[:, 0], triples[:, 1].copy(), triples[:, 2]
        if kind == "rotation":
            length = np.linalg.norm(values, axis=1)
            if np.any(length < 1e-6):
                j = int(np.argmax(length < 1e-6))
                self.fail(out_user, f"key {j} is a zero quaternion {values[j].tolist()}")
            values = values / length[:, None]
        return Channel(node, kind, interp, times, values, in_t, out_t), end


def load_gltf(path: str | Path, *, flat_normals: bool = False) -> GltfScene:
    """Load a ``.gltf`` or ``.glb`` file.

    Parameters
    ----------
    path : str or Path
    flat_normals : bool, keyword-only
        For primitives without ``NORMAL``: False (default) computes smooth angle-weighted vertex
        normals on the shared vertices; True splits vertices per triangle and gives each its
        face normal, which is what the glTF spec asks viewers to do.

    Returns
    -------
    GltfScene

    Raises
    ------
    GltfError
        The file cannot be read, is malformed, or uses something vkdqs does not support; the
        message names the file, the JSON path and the problem.
    """
    path = Path(path)
    name = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise GltfError(f"{name}: cannot read the file: {exc.strerror or exc}") from exc
    glb_bin = None
    if raw[:4] == b"glTF":
        json_bytes, glb_bin = _parse_glb(raw, name)
    elif path.suffix.lower() == ".glb":
        raise GltfError(f"{name}: GLB header: magic {raw[:4]!r} is not b'glTF'")
    else:
        json_bytes = raw
    doc = _parse_json(json_bytes, name)
    r = _Reader(path, doc, glb_bin)
    r.check_asset()
    nodes = r.nodes()
    roots = r.scene_roots(nodes)
    prims = r.meshes(nodes, flat_normals)
    skins = r.skins(nodes)
    r.check_skinned_nodes(nodes, prims, skins)
    animations = r.animations(nodes)
    r.check_unused()

    meshes = []
    for m, mesh_prims in enumerate(prims):
        users = tuple(nd.index for nd in nodes if nd.mesh == m)
        skin = next((nodes[u].skin for u in users if nodes[u].skin is not None), None)
        name_m = r.get_str(r.array("meshes")[m], "name", f"meshes[{m}]")
        meshes.append(Mesh(m, name_m, tuple(mesh_prims), users, skin))

    if r.weight_warnings:
        where, _, v, total = r.weight_warnings[0]
        vertices = sum(w[1] for w in r.weight_warnings)
        _log.warning(
            "%s: %d vertices have weights not summing to 1 (first: %s vertex %d, sum %.6g); "
            "they are renormalized",
            name,
            vertices,
            where,
            v,
            total,
        )
    if r.ignored_morph:
        _log.info(
            "%s: morph targets are ignored (%d primitives/channels use them)", name, r.ignored_morph
        )
    return GltfScene(path, nodes, tuple(meshes), skins, animations, roots)
