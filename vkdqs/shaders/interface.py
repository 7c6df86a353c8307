"""The skinning shaders' interface as data: what an engine's own pipeline must declare.

Built from :mod:`vkdqs.shader_interface`, the one description the Skinner and the renderer use
too, and checked against each SPIR-V module's reflection by tests/test_shaders_library.py.
"""

from __future__ import annotations

import json
from typing import Any

from .. import methods
from .. import shader_interface as si
from ..errors import InputError
from ..shader_interface.push_constants import PUSH_MEMBERS
from ..shader_interface.specialization import SPEC_CONSTANTS
from ..shader_interface.variants import Kind, Variant, surface_variant
from .modules import spirv

__all__ = ["KINDS", "interface", "interface_json", "module", "variant_of", "variants"]

#: The variant kinds this library describes: the renderer's skinning vertex shader, the
#: Skinner's compute shader, and the vertex shader that writes skinned vertices to a buffer.
KINDS = ("render", "compute", "readback")

_STAGE_NAMES = {
    si.Stage.VERTEX: "vertex",
    si.Stage.FRAGMENT: "fragment",
    si.Stage.COMPUTE: "compute",
}


def variants() -> list[dict[str, Any]]:
    """Every module this library describes: ``name``, ``kind``, ``method``, ``slots`` and
    ``surface`` (pass the last four to :func:`interface` and :func:`module`)."""
    return [
        {
            "name": v.name,
            "kind": v.kind.value,
            "method": v.method,
            "slots": v.slots,
            "surface": surface_variant(v),
        }
        for v in si.VARIANTS
        if v.kind.value in KINDS
    ]


def variant_of(method: str, kind: str = "render", slots: int = 4, surface: bool = False) -> Variant:
    """The variant of ``method`` (a registry method, or ``"none"``), ``kind`` (:data:`KINDS`),
    ``slots`` (4 or 8 influences) and ``surface`` (the render variant with UV and colour
    inputs); :class:`~vkdqs.errors.InputError` naming the choices when there is none."""
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}, got {kind!r}")
    name = si.variant_name(kind, method, slots, surface)
    for v in si.VARIANTS:
        if v.name == name:
            return v
    have = sorted({d["method"] for d in variants() if d["kind"] == kind})
    raise InputError(f"no {kind} variant {name!r}; methods with one: {have}")


def module(method: str, kind: str = "render", slots: int = 4, surface: bool = False) -> bytes:
    """The SPIR-V bytes of a variant (:func:`variant_of`), as vkdqs ships it."""
    return spirv(variant_of(method, kind, slots, surface).name)


def _names(v: Variant) -> dict[int, str]:
    """What each binding of a skinning variant is (besides the mesh's texel inputs)."""
    names = {
        si.MORPH_DELTAS: "morph_deltas: rgba32f texels of the morph targets' deltas",
        si.MORPH_WEIGHTS: "morph_weights: the MorphBlock (weights of the active targets)",
    }
    skins = methods.get(v.method).skins
    if skins:  # the unskinned variant reads no pose
        names[si.BONES] = "bones: the BoneBlock (the pose: pack_bones(...).bones)"
    if si.has_second_block(v.method):
        names[si.BONE_SCALES] = "second_block: mat3x4 rows a bone (pack_bones(...).scales)"
    if v.kind is Kind.RENDER:
        names[si.INSTANCE] = "instance: the InstanceBlock (model and normal matrices, lights)"
    elif v.kind is Kind.READBACK:
        names[si.READBACK_OUT] = "out_vertices: positions then normals, float32 xyz rows"
    else:
        names[si.COMPUTE_OUT] = "out_vertices: r32f texels, the positions (position_base)"
        names[si.COMPUTE_OUT_NORMALS] = (
            "out_normals: r32f texels, the normals (normal_base; may be out_vertices's view)"
        )
        names[si.COMPUTE_BOXES] = "boxes: 6 uint keys a pose (COMPUTE_OUTPUT bit 1)"
    return names


def _block(dtype: Any) -> list[dict[str, Any]]:
    """A std140 block's members from its numpy dtype: name, offset, shape, scalar type."""
    out = []
    for name in dtype.names:
        field, offset = dtype.fields[name][:2]
        base = field.base if field.subdtype is not None else field
        out.append(
            {
                "name": name,
                "offset": int(offset),
                "shape": list(field.shape),
                "type": {"f": "float", "i": "int", "u": "uint"}[base.kind],
            }
        )
    return out


_BLOCKS = {"instance": si.INSTANCE_BLOCK, "morph_weights": si.MORPH_BLOCK}


def spec_ids(v: Variant) -> tuple[int, ...]:
    """The specialization constant ids a skinning variant declares."""
    ids = {si.MORPH_TARGETS_ID, si.OCT_NORMALS_ID}
    if methods.get(v.method).skins:
        ids.add(si.MAX_BONES_ID)
    if v.kind is Kind.COMPUTE:
        ids |= {si.LOCAL_SIZE_ID, si.COMPUTE_OUTPUT_ID, si.OUTPUT_STRIDE_ID}
        if "SKIN_DDM" not in v.defines:
            ids.add(si.PACKED_ROWS_ID)
    return tuple(sorted(ids))


def interface(
    method: str,
    kind: str = "render",
    slots: int = 4,
    surface: bool = False,
    layout: str = "exact",
) -> dict[str, Any]:
    """The interface of a variant as plain data (JSON-ready).

    Returns a dict: ``name`` (the module), ``stage``, ``entry_point``, ``defines``;
    ``descriptors`` (set 0): ``binding``, ``type`` (the ``VK_DESCRIPTOR_TYPE_`` suffix) and,
    for the mesh's texel inputs, ``input`` and ``format`` (``VK_FORMAT_`` suffix);
    ``push_constants``: ``size`` and ``members`` (``name``, ``type``, ``offset``);
    ``vertex_inputs`` (vertex kinds): ``location``, ``input`` and ``format`` in ``layout``
    (``"exact"`` or ``"lean"``; :func:`vkdqs.shaders.pack_vertices` writes the rows);
    ``specialization``: ``id``, ``name``, ``meaning`` and ``default``; ``bones``: the bone
    block's ``stride`` in bytes a bone and whether a ``second_block`` is bound.
    """
    v = variant_of(method, kind, slots, surface)
    lay = si.as_layout(layout)
    inputs = {m.binding: m for m in si.mesh_inputs(v.slots, v.method, lay)}
    descriptors, names = [], _names(v)
    for b in si.bindings_of(v):
        if b.binding not in names and b.binding not in inputs:
            continue  # in the renderer's shared set layout, read only by other methods
        entry: dict[str, Any] = {"set": 0, "binding": b.binding, "type": b.type.name}
        m = inputs.get(b.binding)
        if m is not None and (v.kind is Kind.COMPUTE or m.location < 0):
            entry.update(input=m.name, format=si.Format(m.texel_format).name)
        elif b.binding in names:
            entry["what"] = names[b.binding]
            block = _BLOCKS.get(names[b.binding].split(":")[0])
            if block is not None:
                entry.update(size=block.itemsize, members=_block(block))
        descriptors.append(entry)
    vertex_inputs: list[dict[str, Any]] = []
    if v.kind is Kind.RENDER:
        rows = si.render_inputs(v.slots, v.method, surface_variant(v), lay)
    elif v.kind is Kind.READBACK:
        rows = si.attributes(si.mesh_inputs(v.slots, v.method, lay))
    else:
        rows = ()
    for m in rows:
        vertex_inputs.append(
            {"location": m.location, "input": m.name, "format": si.Format(m.vertex_format).name}
        )
    members = [{"name": n, "type": t, "offset": o} for n, t, o in PUSH_MEMBERS[v.kind.value]]
    spec = [
        {
            "id": i,
            "name": SPEC_CONSTANTS[i][0],
            "meaning": SPEC_CONSTANTS[i][1],
            "default": SPEC_CONSTANTS[i][2],
        }
        for i in spec_ids(v)
    ]
    skinned = methods.get(v.method).skins
    return {
        "name": v.name,
        "kind": v.kind.value,
        "method": v.method,
        "slots": v.slots,
        "stage": _STAGE_NAMES[v.stage],
        "entry_point": "main",
        "defines": list(v.defines),
        "descriptors": descriptors,
        "push_constants": {"size": si.push_bytes_of(v), "members": members},
        "vertex_inputs": vertex_inputs,
        "specialization": spec,
        "layout": lay.name,
        "bones": {
            "stride": si.bone_stride(v.method) if skinned else 0,
            "second_block": skinned and si.has_second_block(v.method),
        },
    }


def interface_json(*args: Any, **kwargs: Any) -> str:
    """:func:`interface` as JSON text (indented, keys in order)."""
    return json.dumps(interface(*args, **kwargs), indent=2)
