"""What a baked mesh looks like, apart from its vertices: per-vertex uvs and colours, the
materials, and the runs of faces drawn with one material; the same for every file format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..material import Material

if TYPE_CHECKING:
    from ..gltf import GltfScene
    from ..gltf.parts import ScenePart


class BakeGroup(NamedTuple):
    """Triangles ``faces[first_face : first_face + face_count]``, using only the vertices
    ``first_vertex : first_vertex + vertex_count``, drawn with ``materials[material]`` (None:
    glTF's default material)."""

    first_face: int
    face_count: int
    first_vertex: int
    vertex_count: int
    material: int | None


@dataclass(frozen=True, eq=False)
class Surface:
    """What a baked mesh looks like: per-vertex uvs and colours, materials, material groups."""

    uvs: NDArray[np.float32] | None
    colors: NDArray[np.float32] | None
    materials: tuple[Material, ...]
    groups: tuple[BakeGroup, ...]

    def check(self, vertices: int, faces: int) -> None:
        """InputError unless the groups tile the faces and vertices in order, name existing
        materials, and uvs/colors have a row per vertex (a :class:`Bake` edited by hand)."""
        face = vertex = 0
        for g in self.groups:  # a few groups
            if (g.first_face, g.first_vertex) != (face, vertex) or min(g[1], g[3]) < 1:
                raise InputError(f"Bake.groups must cover the faces and vertices in order, got {g}")
            if g.material is not None and not 0 <= g.material < len(self.materials):
                raise InputError(f"Bake.groups: {g} names a material of {len(self.materials)}")
            face, vertex = face + g.face_count, vertex + g.vertex_count
        if (face, vertex) != (faces, vertices):
            raise InputError(
                f"Bake.groups cover {face} faces and {vertex} vertices of {faces} and {vertices}"
            )
        for name, a, width in (("uvs", self.uvs, 2), ("colors", self.colors, 4)):
            if a is not None and np.shape(a) != (vertices, width):
                raise InputError(f"Bake.{name} must be ({vertices}, {width}), got {np.shape(a)}")

    def textures(self) -> tuple[list[NDArray[np.uint8]], list[int | None]]:
        """The distinct texture arrays, and each material's index into them (or None)."""
        found: dict[int, int] = {}
        out: list[NDArray[np.uint8]] = []
        index: list[int | None] = []
        for m in self.materials:  # a few materials
            if m.texture is None:
                index.append(None)
                continue
            if id(m.texture) not in found:
                found[id(m.texture)] = len(out)
                out.append(m.texture)
            index.append(found[id(m.texture)])
        return out, index


def scene_surface(scene: GltfScene, parts: list[ScenePart]) -> Surface:
    """The uvs, colours and material groups of ``parts`` merged in order (as the driver
    merges their vertices and faces): one group per run of primitives with one material."""
    # (source material, faces, vertices) of each primitive, in the order the parts merge them;
    # a primitive without triangles (e.g. a strip of two indices) joins its neighbour's run
    runs: list[list] = []
    lead = 0  # vertices of such primitives before the first run
    for part in parts:  # over parts, then their few primitives
        for p in scene.meshes[part.mesh].primitives:
            nf = int(p.indices.size) // 3
            if nf == 0:
                if runs:
                    runs[-1][2] += p.vertex_count
                else:
                    lead += p.vertex_count
            elif runs and runs[-1][0] == p.material:
                runs[-1][1] += nf
                runs[-1][2] += p.vertex_count
            else:
                runs.append([p.material, nf, p.vertex_count + lead])
                lead = 0
    groups: list[BakeGroup] = []
    index: dict[int, int] = {}
    materials: list[Material] = []
    face, vertex = 0, 0
    for source, nf, nv in runs:  # over runs: material indices in order of first use
        m = None
        if source is not None:
            m = index.setdefault(source, len(materials))
            if m == len(materials):
                materials.append(scene.materials[source])
        groups.append(BakeGroup(face, nf, vertex, nv, m))
        face += nf
        vertex += nv
    merged = {}
    for key, width, fill in (("uvs", 2, 0.0), ("colors", 4, 1.0)):
        arrays = [getattr(part.geometry, key) for part in parts]
        merged[key] = (
            None
            if all(a is None for a in arrays)
            else np.concatenate(
                [
                    np.full((part.geometry.vertex_count, width), fill, np.float32)
                    if a is None
                    else a
                    for part, a in zip(parts, arrays, strict=True)
                ]
            ).astype(np.float32)
        )
    return Surface(merged["uvs"], merged["colors"], tuple(materials), tuple(groups))


def material_summary(m: Material, texture: int | None) -> dict[str, Any]:
    """A JSON-friendly description of a material (the ``.npz`` ``materials`` entry)."""
    return {
        "name": m.name,
        "base_color": list(m.base_color),
        "texture": texture,
        "texture_shape": None if m.texture is None else list(m.texture.shape),
        "sampler": {
            "mag_filter": m.sampler.mag_filter,
            "min_filter": m.sampler.min_filter,
            "mipmap": m.sampler.mipmap,
            "wrap_s": m.sampler.wrap_s,
            "wrap_t": m.sampler.wrap_t,
        },
        "uv_transform": m.uv_transform.tolist(),
        "alpha_mode": m.alpha_mode,
        "alpha_cutoff": m.alpha_cutoff,
        "double_sided": m.double_sided,
    }


#: A face whose rest area is at most this times the squared extent of the mesh is degenerate.
DEGENERATE_AREA = 1e-12


def drop_degenerate(
    faces: NDArray, positions: NDArray, groups: tuple[BakeGroup, ...]
) -> tuple[NDArray, tuple[BakeGroup, ...], int]:
    """``faces`` without the degenerate ones (a repeated vertex index, or zero area at rest),
    the groups recounted, and how many were dropped.

    Exporters copy them from their source meshes, and Blender's USD importer drops the
    per-face materials of a mesh that has them; nothing is drawn by them. A group left with no
    face joins its vertices to the one before it (or after it, the first), as primitives
    without triangles do in :func:`scene_surface`.
    """
    f = faces.astype(np.int64)
    repeated = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 0] == f[:, 2])
    p = positions.astype(np.float64)
    extent = float(np.ptp(p, axis=0).max()) if len(p) else 0.0
    area2 = np.linalg.norm(np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]]), axis=1)
    degenerate = repeated | (area2 <= 2.0 * DEGENERATE_AREA * extent**2)
    dropped = int(degenerate.sum())
    if not dropped:
        return faces, groups, 0
    starts = np.array([g.first_face for g in groups], np.int64)
    owner = np.searchsorted(starts, np.arange(len(faces)), side="right") - 1
    kept = np.bincount(owner[~degenerate], minlength=len(groups))
    out: list[list] = []  # [face count, vertex count, material] of each group kept
    spare = 0  # vertices of empty groups before the first kept one
    for g, count in zip(groups, kept.tolist(), strict=True):  # a few groups
        if count == 0:
            if out:
                out[-1][1] += g.vertex_count
            else:
                spare += g.vertex_count
            continue
        out.append([count, g.vertex_count + spare, g.material])
        spare = 0
    if not out:
        raise InputError("every face of the mesh is degenerate: nothing to bake")
    recounted, face, vertex = [], 0, 0
    for count, vertices, material in out:
        recounted.append(BakeGroup(face, count, vertex, vertices, material))
        face, vertex = face + count, vertex + vertices
    return np.ascontiguousarray(faces[~degenerate]), tuple(recounted), dropped
