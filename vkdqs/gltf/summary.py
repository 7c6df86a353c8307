"""What ``vkdqs info`` shows of a loaded scene: the JSON-friendly summary of
:meth:`GltfScene.info <vkdqs.gltf.scene.GltfScene.info>` (meshes, skins with the skinning
methods that take them, animations, materials) and the lines of text
:meth:`GltfScene.summary <vkdqs.gltf.scene.GltfScene.summary>` makes of it.

Only presentation lives here: what a skin holds is :meth:`GltfScene.skin_traits`'s to say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from vkdqs import methods

if TYPE_CHECKING:
    from vkdqs.gltf.animation import Animation
    from vkdqs.gltf.scene import GltfScene, Mesh, Skin
    from vkdqs.material import Material


def scene_info(scene: GltfScene) -> dict[str, Any]:
    """:meth:`GltfScene.info` of ``scene``: one entry per mesh, skin, animation and material."""
    meshes = [_mesh_info(m) for m in scene.meshes]
    rest = scene.node_global_matrices(None)
    skins = [_skin_info(scene, sk, rest) for sk in scene.skins]
    animations = [_animation_info(i, a) for i, a in enumerate(scene.animations)]
    materials = [_material_info(i, mat) for i, mat in enumerate(scene.materials)]
    return {
        "file": scene.path.name,
        "nodes": len(scene.nodes),
        "meshes": meshes,
        "skins": skins,
        "animations": animations,
        "materials": materials,
    }


def _mesh_info(m: Mesh) -> dict[str, Any]:
    """A mesh's entry of :func:`scene_info`: its size, skins, nodes and vertex attributes."""
    return {
        "index": m.index,
        "name": m.name,
        "primitives": len(m.primitives),
        "vertices": m.vertex_count,
        "triangles": m.triangle_count,
        "skinned": m.skinned,
        "skin": m.skin,
        "skins": list(m.skins),
        "nodes": list(m.nodes),
        "max_influences": m.max_influences,
        "computed_normals": any(p.normals_computed for p in m.primitives),
        "dqs_blend": any(p.dqs_blend is not None for p in m.primitives),
        "materials": sorted({-1 if p.material is None else p.material for p in m.primitives}),
        "texcoords": any(p.uvs is not None for p in m.primitives),
        "colors": any(p.colors is not None for p in m.primitives),
        "morph_targets": m.morph_target_count,
        "morph_target_names": list(m.target_names),
    }


def _skin_info(scene: GltfScene, sk: Skin, rest: np.ndarray) -> dict[str, Any]:
    """A skin's entry of :func:`scene_info`: its joints, its scale at rest (``rest``: every
    node's rest global matrix) and the skinning methods that take it or refuse it."""
    # Column lengths of the rest skinning matrices: 1 for rigid ones. DQS needs rigid
    # matrices, so a file whose armature sits under a scaled node shows it here.
    cols = np.linalg.norm((rest[sk.joints] @ sk.inverse_bind_matrices)[:, :3, :3], axis=1)
    traits = scene.skin_traits(sk.index)
    return {
        "index": sk.index,
        "name": sk.name,
        "joints": sk.joint_count,
        "joint_names": list(sk.joint_names),
        "max_influences": traits.max_influences,
        "scaled_joints": scene._has_scale(sk, scene._scale_animated()[0]),
        "rest_skinning_scale": [float(cols.min()), float(cols.max())],
        "methods": [m.name for m in methods.shown() if m.check(traits) is None],
        "refused": {m.name: why for m in methods.shown() if (why := m.check(traits))},
        # methods scenes do not show (compute-only ones such as "delta_mush", variants
        # chosen by name) that skin it: what ``vkdqs bake --method`` also takes
        "bake_also": [
            m.name for m in methods.METHODS.values() if not m.shown and m.check(traits) is None
        ],
    }


def _animation_info(i: int, a: Animation) -> dict[str, Any]:
    """Animation ``i``'s entry of :func:`scene_info`: its duration and channels."""
    return {
        "index": i,
        "name": a.name,
        "duration": a.duration,
        "channels": len(a.channels),
        "ignored_channels": a.ignored_channels,
        "morph_weight_channels": len(a.weight_channels),
        "interpolations": sorted({ch.interpolation for ch in (*a.channels, *a.weight_channels)}),
    }


def _material_info(i: int, mat: Material) -> dict[str, Any]:
    """Material ``i``'s entry of :func:`scene_info`: its colour, texture size and alpha."""
    return {
        "index": i,
        "name": mat.name,
        "base_color": list(mat.base_color),
        "texture": None if mat.texture is None else list(mat.texture.shape[1::-1]),
        "alpha_mode": mat.alpha_mode,
        "alpha_cutoff": mat.alpha_cutoff,
        "double_sided": mat.double_sided,
    }


def summary_text(info: dict[str, Any]) -> str:
    """:meth:`GltfScene.summary`: an ``info`` of :func:`scene_info` as a few human-readable
    lines, a header, then one line per mesh, skin, material and animation."""
    lines = [f"{info['file']}: {info['nodes']} nodes"]
    lines.extend(_mesh_line(m) for m in info["meshes"])
    lines.extend(_skin_line(s) for s in info["skins"])
    for mat in info["materials"]:
        lines.append(f"  material {mat['index']}{_name(mat['name'])}: {_material_text(mat)}")
    lines.extend(_animation_line(a) for a in info["animations"])
    return "\n".join(lines)


def _mesh_line(m: dict[str, Any]) -> str:
    """A mesh's line of :func:`summary_text` from its entry of :func:`scene_info`."""
    kind = f"skin {m['skin']}" if m["skin"] is not None else "rigid"
    if len(m["skins"]) > 1:
        kind = "skins " + ", ".join(str(s) for s in m["skins"])
    return (
        f"  mesh {m['index']}{_name(m['name'])}: {m['primitives']} primitives, "
        f"{m['vertices']} vertices, {m['triangles']} triangles, {kind}, "
        f"max {m['max_influences']} influences"
        + (", DQS blend values (_DQS_BLEND)" if m["dqs_blend"] else "")
        + _morph_text(m["morph_targets"], m["morph_target_names"])
        + _surface_text(m)
    )


def _skin_line(s: dict[str, Any]) -> str:
    """A skin's line of :func:`summary_text`: joints, scale, the methods it takes and those it
    refuses."""
    scaled = ", scaled joints" if s["scaled_joints"] else ""
    lo, hi = s["rest_skinning_scale"]
    if max(abs(lo - 1.0), abs(hi - 1.0)) > 1e-4:
        scaled += f", rest skinning scale {lo:.4g}..{hi:.4g}"
    refused = _refused_text(s["refused"])
    return (
        f"  skin {s['index']}{_name(s['name'])}: {s['joints']} joints, "
        f"max {s['max_influences']} influences{scaled}; methods {', '.join(s['methods'])}"
        + refused
        + (f"; bake also {', '.join(s['bake_also'])}" if s["bake_also"] else "")
    )


def _animation_line(a: dict[str, Any]) -> str:
    """An animation's line of :func:`summary_text`: duration, channels and interpolations."""
    return (
        f"  animation {a['index']}{_name(a['name'])}: {a['duration']:.3f} s, "
        f"{a['channels']} channels ({'/'.join(a['interpolations'])})"
        + (
            f", {a['morph_weight_channels']} morph weights channels"
            if a["morph_weight_channels"]
            else ""
        )
    )


def _refused_text(refused: dict[str, str]) -> str:
    """``; not blend, cor: needs rigid joint matrices; ...`` for a summary line: the methods a skin
    refuses, grouped by their reason (each reason without its method's label)."""
    by_reason: dict[str, list[str]] = {}
    for name, why in refused.items():
        label = methods.get(name).label
        by_reason.setdefault(why.removeprefix(f"{label} "), []).append(name)
    return "".join(f"; not {', '.join(names)}: {why}" for why, names in by_reason.items())


def _morph_text(count: int, names: list[str]) -> str:
    """``, 3 morph targets ('a', 'b', 'c')`` for a summary line; nothing without targets."""
    if not count:
        return ""
    shown = ", ".join(repr(n) for n in names[:8]) + (", ..." if len(names) > 8 else "")
    return f", {count} morph target{'s' if count > 1 else ''}" + (f" ({shown})" if names else "")


def _surface_text(mesh: dict[str, Any]) -> str:
    """``, TEXCOORD_0, COLOR_0, materials 0, 2`` for a mesh's summary line."""
    out = (", TEXCOORD_0" if mesh["texcoords"] else "") + (", COLOR_0" if mesh["colors"] else "")
    named = [str(i) for i in mesh["materials"] if i >= 0]
    if named:
        out += f", material{'s' if len(named) > 1 else ''} {', '.join(named)}"
    return out


def _material_text(mat: dict[str, Any]) -> str:
    """``base colour (1, 0.5, 0, 1), texture 1024x1024, MASK 0.5, double-sided``."""
    color = ", ".join(f"{c:.3g}" for c in mat["base_color"])
    out = f"base colour ({color})"
    if mat["texture"] is not None:
        out += f", texture {mat['texture'][0]}x{mat['texture'][1]}"
    if mat["alpha_mode"] == "MASK":
        out += f", MASK {mat['alpha_cutoff']:.3g}"
    elif mat["alpha_mode"] == "BLEND":
        out += ", BLEND (drawn as MASK 0.5)"
    return out + (", double-sided" if mat["double_sided"] else "")


def _name(name: str) -> str:
    """`` 'name'`` for a summary line, nothing for an unnamed item (shown by its index only)."""
    return f" {name!r}" if name else ""
