"""What a glTF scene draws, as numpy data: one :class:`ScenePart` per node that places a mesh.

The viewer's player (:class:`vkdqs.app.scenes.GltfScenePlayer`) uploads and poses these parts,
and the bake (:mod:`vkdqs.baking`) merges them into one mesh per frame, so both agree on what a
file shows without the bake depending on the viewer. Nothing here touches the GPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import methods
from ..errors import InputError
from ..mesh import SkinnedMesh
from ..methods import needs as needs_
from .errors import GltfError
from .scene import merged_morphs, surface_arrays

if TYPE_CHECKING:
    from .scene import GltfScene, Mesh

__all__ = [
    "ScenePart",
    "file_skin",
    "rigid_geometry",
    "scene_parts",
    "skin_matrices",
    "skinning_inputs",
]


@dataclass(frozen=True, eq=False)
class ScenePart:
    """One glTF mesh drawn by one node.

    Attributes
    ----------
    kind : str
        ``"skinned"`` (posed by ``skin``) or ``"rigid"`` (placed by the global matrix of ``node``).
    mesh : int
        Index into ``GltfScene.meshes``.
    skin : int or None
        For skinned parts: the skin of ``node`` (``nodes[node].skin``).
    node : int
        The node that draws the mesh. Rigid parts: placed by its global matrix; skinned parts:
        posed by its skin alone (glTF ignores a skinned node's own transform).
    geometry : SkinnedMesh
        Shared by every part of one mesh (rigid parts: one joint 0 of weight 1 per vertex).
    bone_count : int
        Joints of ``skin`` (1 for rigid parts).
    """

    kind: str
    mesh: int
    skin: int | None
    node: int
    geometry: SkinnedMesh
    bone_count: int = 1


def rigid_geometry(mesh: Mesh) -> SkinnedMesh:
    """A glTF mesh's primitives merged, bound rigidly to bone 0, with its morph targets."""
    pos, nrm, idx = [], [], []
    offset = 0
    for p in mesh.primitives:  # a few primitives; the data inside is whole arrays
        pos.append(p.positions)
        nrm.append(p.normals)
        idx.append(p.indices.astype(np.int64) + offset)
        offset += p.vertex_count
    n = offset
    morph_p, morph_n = merged_morphs(mesh)
    return SkinnedMesh(
        np.concatenate(pos),
        np.concatenate(nrm),
        np.zeros((n, 1), np.uint32),
        np.ones((n, 1), np.float32),
        np.concatenate(idx),
        morph_positions=morph_p,
        morph_normals=morph_n,
        **surface_arrays(mesh.primitives),
    )


def scene_parts(scene: GltfScene) -> list[ScenePart]:
    """What a glTF scene draws, in drawing order.

    One part per node that places a mesh with triangles: first every node with a skin (node
    order), its mesh posed by that node's skin (``node.skin``; several nodes may draw one mesh,
    each with its own skin); then every node without a skin (node order,
    :meth:`GltfScene.rigid_meshes`), its mesh placed by the node's global matrix. The parts of
    one mesh share one geometry (skinned parts :meth:`GltfScene.skinned_mesh`, rigid parts the
    mesh bound to one bone), so a model with one skinned mesh on one node keeps that mesh's
    vertex order.
    """
    table = scene._table
    # the nodes that draw a mesh with triangles, found for all nodes at once
    has_triangles = np.array([m.triangle_count > 0 for m in scene.meshes] + [False])
    drawn = (table.mesh >= 0) & has_triangles[table.mesh]
    skinned: dict[int, SkinnedMesh] = {}
    rigid: dict[int, SkinnedMesh] = {}
    parts: list[ScenePart] = []
    for node in np.flatnonzero(drawn & (table.skin >= 0)).tolist():  # over skinned parts
        mesh, skin = int(table.mesh[node]), int(table.skin[node])
        if mesh not in skinned:  # the geometry of each mesh is built once
            skinned[mesh] = scene.skinned_mesh(mesh)
        bones = scene.skins[skin].joint_count
        parts.append(ScenePart("skinned", mesh, skin, node, skinned[mesh], bones))
    for node in np.flatnonzero(drawn & (table.skin < 0)).tolist():  # over rigid parts
        mesh = int(table.mesh[node])
        if mesh not in rigid:
            try:
                rigid[mesh] = rigid_geometry(scene.meshes[mesh])
            except InputError as exc:  # as skinned_mesh says it: naming the mesh
                raise GltfError(f"{scene.path.name}: meshes[{mesh}]: {exc}") from exc
        parts.append(ScenePart("rigid", mesh, None, node, rigid[mesh]))
    return parts


def skin_matrices(
    scene: GltfScene, skins: Iterable[int], glob: np.ndarray
) -> dict[int, np.ndarray]:
    """Joint matrices ``global[joints] @ inverse_bind_matrices`` of each skin, from the node
    global matrices ``glob`` (:meth:`GltfScene.node_global_matrices`) of one time."""
    return {s: glob[scene.skins[s].joints] @ scene.skins[s].inverse_bind_matrices for s in skins}


def file_skin(scene: GltfScene, skin: int) -> needs_.FileSkin:
    """What the file says of ``skin`` for the needs that build their value from it: each joint's
    parent joint (its nearest ancestor node that is a joint of the skin), the inverse bind
    matrices and the rest pose's joint matrices."""
    sk = scene.skins[skin]
    node_parent = np.append(scene.node_parents, -1)  # index -1: "no node" has no parent
    joint_of = np.full(len(node_parent), -1, np.int64)
    joint_of[sk.joints] = np.arange(len(sk.joints))
    parents = np.full(len(sk.joints), -1, np.int64)
    node = node_parent[sk.joints]
    pending = node >= 0
    while pending.any():  # over hierarchy levels; whole arrays inside
        found = pending & (joint_of[node] >= 0)
        parents[found] = joint_of[node[found]]
        pending &= ~found
        node = np.where(pending, node_parent[node], -1)
        pending &= node >= 0
    return needs_.FileSkin(
        parents=parents,
        inverse_bind_matrices=sk.inverse_bind_matrices,
        rest_joint_matrices=scene.skinning_matrices(skin, None),
    )


def skinning_inputs(
    scene: GltfScene, part: ScenePart, method: str
) -> tuple[SkinnedMesh, dict[str, object]]:
    """What ``method`` needs to skin a skinned ``part``, taken from the file: the geometry (with
    a DQS fraction of :data:`vkdqs.methods.DEFAULT_DQS_BLEND` everywhere for a method that needs
    per-vertex blend values where the file has none) and the keyword arguments the Skinner and
    ``Renderer.add_instance`` take: each need's :meth:`~vkdqs.methods.needs.Need.from_file`
    (``rest_matrices``, ``delta_mush``, ``velocity``...). Every entry point that takes a model
    file asks this, so a user never supplies what the file holds."""
    entry = methods.get(method)
    geometry = part.geometry
    if "dqs_blend" in entry.needs and geometry.dqs_blend is None:
        geometry = geometry.with_dqs_blend(methods.DEFAULT_DQS_BLEND)
    extra: dict[str, object] = {}
    given = [needs_.NEEDS[name] for name in sorted(entry.needs)]
    given = [need for need in given if need.keyword]
    if part.skin is None or not given:
        return geometry, extra
    skin = file_skin(scene, part.skin)
    for need in given:
        value = need.from_file(skin, geometry)
        if value is not None:
            extra[need.keyword] = value
    return geometry, extra
