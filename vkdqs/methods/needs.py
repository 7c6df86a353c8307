"""What a skinning method needs besides the mesh and the pose, as objects (:class:`Need`), and
the values one method skins one mesh with (:class:`MethodInputs`).

A :class:`Need` answers for itself: how to check what a user gave (its public keyword:
``centers=``, ``rest_matrices=``, ``ddm=``, ``delta_mush=``; one without a keyword is read from
the mesh), how to compute its default (lazily, kept on the mesh), which per-vertex arrays the
shaders read from it, how many influence slots it stands for, whether it fits a device, and why
the vertex path or crowds cannot run a method that has it. The engine asks a method for its
inputs in one call (:meth:`vkdqs.methods.SkinningMethod.inputs`) and never tests for a need by
name: a method with a new need adds a :class:`Need` (:func:`register`), not a branch.

Numpy only at import (the GPU defaults import their modules when they run).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import bones as packing
from ..errors import InputError, LimitError

if TYPE_CHECKING:
    from ..gpu import Device
    from ..mesh import SkinnedMesh
    from . import SkinningMethod

__all__ = [
    "DDM_MAX_BONES",
    "DDM_MAX_SLOTS",
    "NEEDS",
    "Centers",
    "DdmData",
    "DeltaMushData",
    "DqsBlend",
    "FileSkin",
    "MethodInputs",
    "Need",
    "RestMatrices",
    "SharedRows",
    "check_ddm",
    "check_delta_mush",
    "load",
    "register",
    "unregister",
]


def load(ref: object) -> Any:
    """What a reference ``"package.module:attribute.path"`` names, imported now (a callable is
    returned as it is). The registry and the needs name the code above their numpy layer this
    way (a GPU default, a pass, the shader interface's packing), so importing them loads no
    Vulkan and the import graph stays acyclic; ``tests/test_layers.py`` resolves every
    reference and checks its layer."""
    if callable(ref):
        return ref
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise InputError(f"a reference is 'module:attribute', got {ref!r}")
    module, path = ref.split(":")
    out: Any = importlib.import_module(module)
    for part in path.split("."):
        out = getattr(out, part)
    return out


#: The references the needs below load (checked by tests/test_layers.py).
CENTERS_OF_ROTATION = "vkdqs.methods.cor.gpu:centers_of_rotation"
MESH_DDM = "vkdqs.methods.ddm.gpu:mesh_ddm"
DDM_ARRAYS = "vkdqs.shader_interface.mesh_arrays:ddm_arrays"
DDM_SLOTS = "vkdqs.shader_interface.mesh_arrays:ddm_slots"
DDM_ARRAYS_ROWS = "vkdqs.shader_interface.mesh_arrays:ddm_arrays_rows"
AUX_ARRAY = "vkdqs.shader_interface.mesh_arrays:aux_array"
REFERENCES = (CENTERS_OF_ROTATION, MESH_DDM, DDM_ARRAYS, DDM_SLOTS, DDM_ARRAYS_ROWS, AUX_ARRAY)


@dataclass(frozen=True, eq=False)
class FileSkin:
    """What a model file says of one skin, in its joint order: the readers' edge
    (:func:`vkdqs.gltf.parts.skinning_inputs`) gives it to :meth:`Need.from_file`, so a need
    whose value a file holds builds it itself and a new reader (FBX) fills this, not a branch.

    Attributes
    ----------
    parents : ndarray of int64, [J]
        Each joint's parent joint: the nearest ancestor node that is a joint of this skin, -1
        for none.
    inverse_bind_matrices : ndarray of float64, [J, 4, 4]
    rest_joint_matrices : ndarray of float64, [J, 4, 4]
        The joint matrices of the rest pose (global matrix times inverse bind matrix): where
        the skin places the stored mesh at rest.
    """

    parents: np.ndarray
    inverse_bind_matrices: np.ndarray
    rest_joint_matrices: np.ndarray

    @property
    def rest_matrices(self) -> np.ndarray:
        """Each joint's rest frame: the inverse bind matrices' inverses."""
        return np.linalg.inv(self.inverse_bind_matrices)


class Need:
    """One input a method needs besides the mesh and the pose.

    A subclass sets :attr:`name` (what :attr:`vkdqs.methods.SkinningMethod.needs` lists) and
    :attr:`keyword` (the argument ``Skinner``, ``Renderer.add_instance`` and ``add_crowd`` take
    it by, or None where it comes from the mesh), and overrides what it does differently from
    these defaults: nothing to check, no default, no arrays.
    """

    #: The need's name, as methods list it.
    name: str = ""
    #: Its public keyword (``Skinner(..., centers=...)``), or None: read from the mesh.
    keyword: str | None = None
    #: Why a method with it cannot run on the vertex shader (None: it can).
    vertex_lacks: str | None = None
    #: Why crowds cannot draw a method with it (None: they can).
    crowd_lacks: str | None = None
    #: Its :meth:`default` is made on the host (no device): the float64 references use it too.
    on_host: bool = False
    #: Its values fill the per-vertex ``aux`` rows (xyz), which a mesh's instances share.
    in_aux: bool = False
    #: Its :meth:`arrays` are texel inputs of the shaders (uploaded once per value).
    texels: bool = False

    def check(
        self, value: object, mesh: SkinnedMesh, bone_count: int, method: SkinningMethod
    ) -> object:
        """``value`` as the method skins with it (validated, converted); ``value`` None: not
        given, refused where the need has no default and must be given (return None to let
        :meth:`default` make it)."""
        return value

    def default(
        self, mesh: SkinnedMesh, bone_count: int, device: Device, method: SkinningMethod
    ) -> object:
        """The value used where none was given, computed on ``device`` the first time and kept
        on the mesh (None: the need has none)."""
        return None

    def from_file(self, skin: FileSkin, mesh: SkinnedMesh) -> object:
        """The value a model file holds for ``mesh`` skinned by ``skin`` (None: the file holds
        none; the need's :meth:`default` or the user gives it). Every entry point that takes a
        model file asks this, so a user never supplies what the file holds."""
        return None

    def arrays(self, value: object) -> dict[str, np.ndarray]:
        """The per-vertex arrays the shaders read from ``value`` as texel inputs, by the name
        of their :data:`vkdqs.shader_interface.MESH_INPUTS` entry (those with ``need`` set)."""
        return {}

    def slots(self, value: object) -> int | None:
        """The influence slots of the shader variants that read ``value`` in place of the
        mesh's joints and weights (None: the mesh's)."""
        return None

    def fits(self, device: Device, value: object, path: str | None = None) -> None:
        """Refuse (LimitError) a value whose data the device cannot hold when read on
        ``path`` ("compute": the Skinner's dispatches, which read per-vertex texel inputs in
        chunks of vertices, vkdqs.engine.chunks; "vertex" or None: whole views, as the vertex
        path, renderer instances and crowds read them)."""

    def __repr__(self) -> str:
        return f"<need {self.name!r}>"


class Centers(Need):
    """Per-vertex centers of rotation (``centers=``, (N, 3)), for optimized-CoR skinning;
    computed on the GPU by :func:`vkdqs.centers_of_rotation` (the mesh needs triangles)."""

    name, keyword = "centers", "centers"
    in_aux = True

    def check(self, value, mesh, bone_count, method):
        """Given centers as validated (N, 3) float32, or None (made by :meth:`default`)."""
        return None if value is None else packing.check_centers(mesh.vertex_count, value)

    def default(self, mesh, bone_count, device, method):
        """The mesh's centers of rotation for ``bone_count`` bones, made once on ``device``."""
        centers_of_rotation = load(CENTERS_OF_ROTATION)
        cache = mesh.__dict__.setdefault("_centers", {})
        if bone_count not in cache:
            cache[bone_count] = centers_of_rotation(mesh, bone_count=bone_count, device=device)
        return cache[bone_count]


class RestMatrices(Need):
    """Each bone's rest frame (``rest_matrices=``, (B, 4, 4); a glTF skin's inverse bind
    matrices' inverses), which Blender's Preserve Volume skins about; no default."""

    name, keyword = "rest_matrices", "rest_matrices"

    def check(self, value, mesh, bone_count, method):
        """Validated (B, 4, 4) float64 rest frames; refused when not given."""
        return packing.check_rest_matrices(value, bone_count, method.name)

    def from_file(self, skin, mesh):
        """The skin's rest frames."""
        return skin.rest_matrices


class DqsBlend(Need):
    """Per-vertex LBS/DQS blend values, read from the mesh (``SkinnedMesh.dqs_blend``)."""

    name = "dqs_blend"

    def check(self, value, mesh, bone_count, method):
        """The mesh's blend values; refused when it has none."""
        if mesh.dqs_blend is None:
            raise InputError(
                f"method={method.name!r} needs per-vertex DQS blend values: "
                "SkinnedMesh(..., dqs_blend=b) with b of shape (N,) in [0, 1]"
            )
        return mesh.dqs_blend


class DdmData(Need):
    """A Direct Delta Mush precomputation (``ddm=``,
    :class:`vkdqs.methods.ddm.reference.DirectDeltaMush`): each vertex's Ω and bones, read in
    place of its joints and weights on every path; computed on the device by
    :func:`vkdqs.methods.ddm.gpu.mesh_ddm` (kept on the mesh) when not given."""

    name, keyword = "ddm_data", "ddm"
    texels = True

    def check(self, value, mesh, bone_count, method):
        """A given precomputation checked against the mesh and skeleton, or None."""
        if value is not None:
            check_ddm(value, mesh, bone_count, method.name)
        return value

    def default(self, mesh, bone_count, device, method):
        """The mesh's default precomputation, made once on ``device``."""
        return load(MESH_DDM)(mesh, bone_count, device=device)

    def arrays(self, value):
        """Its Ω and bones as texel rows (:func:`vkdqs.shader_interface.ddm_arrays`)."""
        return load(DDM_ARRAYS)(value)

    def slots(self, value):
        """4 or 8: the slots its bones take (:func:`vkdqs.shader_interface.ddm_slots`)."""
        return load(DDM_SLOTS)(value)

    def fits(self, device, value, path=None):
        """Refuse a precomputation whose texel buffers exceed the device's
        maxTexelBufferElements where they are read whole (the vertex path, instances and
        crowds; the compute path reads them a chunk of vertices at a time)."""
        if path == "compute":
            return
        limit = device.info.max_texel_buffer_elements
        fewer = " or direct_delta_mush(..., max_bones=4) (half the texels)"
        for name, count in load(DDM_ARRAYS_ROWS)(value).items():
            if count > limit:
                raise LimitError(
                    f"Direct Delta Mush's {name} of {value.omega.shape[0]} vertices take {count} "
                    f"texels, more than a texel buffer holds on {device.info.name!r} "
                    f"(maxTexelBufferElements {limit}); use fewer vertices"
                    f"{fewer if self.slots(value) == 8 else ''}"
                )


class DeltaMushData(Need):
    """A classic Delta Mush bind (``delta_mush=``,
    :class:`vkdqs.methods.delta_mush.reference.DeltaMush`): the edge graph, frames and offsets
    its compute passes after the skinning read; bound with the defaults and kept on the mesh
    (:func:`vkdqs.methods.delta_mush.reference.mesh_delta_mush`) when not given."""

    name, keyword = "delta_mush_data", "delta_mush"
    on_host = True
    vertex_lacks = (
        "it smooths the skinned mesh over its edges in compute passes after the skinning: a "
        "vertex needs its neighbours' skinned positions, which a vertex shader does not have"
    )
    crowd_lacks = (
        "a crowd draws all its copies in one instanced draw, and every copy would need its own "
        "smoothing passes over the whole mesh each frame"
    )

    def check(self, value, mesh, bone_count, method):
        """A given bind checked against the mesh; the mesh must have triangles."""
        if value is not None:
            check_delta_mush(value, mesh, method.name)
        elif mesh.indices is None:
            raise InputError(
                f"method={method.name!r} (Delta Mush) needs the mesh's triangles (indices): "
                "it smooths over their edges, and the mesh has none"
            )
        return value

    def default(self, mesh, bone_count, device, method):
        """The mesh's default bind (kept on the mesh)."""
        from .delta_mush.reference import mesh_delta_mush

        return mesh_delta_mush(mesh)

    def from_file(self, skin, mesh):
        """The bind of the rest mesh as the skin places it at rest: for most files the mesh as
        stored up to a rigid motion, but a quantized file's joint matrices scale it (gltfpack:
        9.2e-5), and a skin without inverse bind matrices moves it by the joints' rest
        transforms; its offsets are then in the units the posed mesh has."""
        from ..reference import skin_lbs
        from .delta_mush.reference import DEFAULTS, delta_mush_bind

        placed, _ = skin_lbs(
            mesh.positions, mesh.normals, mesh.joints, mesh.weights, skin.rest_joint_matrices
        )
        return delta_mush_bind(placed, mesh.indices, **DEFAULTS)


#: The most bones a vertex of a Direct Delta Mush precomputation may keep for the shaders (its
#: Ω is read as 8 slots, unused ones zero) and the most bones its skeleton may have (the slots'
#: bone indices are packed two to an int, 16 bits each).
DDM_MAX_SLOTS = 8
DDM_MAX_BONES = 2**16 - 1  # bone 0xffff marks a vertex's absent slots (shader_interface)


def check_ddm(ddm: object, mesh: SkinnedMesh, bone_count: int, method: str = "ddm") -> None:
    """Refuse a Direct Delta Mush precomputation that does not belong to ``mesh`` posed by
    ``bone_count`` bones: not a :class:`~vkdqs.methods.ddm.reference.DirectDeltaMush`, another
    vertex count or rest positions, more than :data:`DDM_MAX_SLOTS` bones a vertex, bones beyond the
    skeleton."""
    from .ddm.reference import DirectDeltaMush

    if not isinstance(ddm, DirectDeltaMush):
        raise InputError(
            f"method={method!r} needs ddm=vkdqs.direct_delta_mush(mesh, bone_count=B), got "
            f"{type(ddm).__name__}"
        )
    if ddm.omega.shape[0] != mesh.vertex_count or not np.array_equal(ddm.origin, mesh.positions):
        raise InputError(
            f"ddm was computed for another mesh ({ddm.omega.shape[0]} vertices) than this one "
            f"({mesh.vertex_count}): its rest positions must be the mesh's"
        )
    if ddm.max_bones > DDM_MAX_SLOTS:
        raise InputError(
            f"method={method!r} takes at most {DDM_MAX_SLOTS} bones a vertex, ddm keeps "
            f"{ddm.max_bones} (direct_delta_mush(..., max_bones={DDM_MAX_SLOTS}))"
        )
    if bone_count > DDM_MAX_BONES:
        raise InputError(f"method={method!r} takes at most {DDM_MAX_BONES} bones, not {bone_count}")
    if ddm.bones.size and int(ddm.bones.max()) >= bone_count:
        raise InputError(
            f"ddm uses bone {int(ddm.bones.max())}, beyond bone_count={bone_count} "
            f"(it was computed for {ddm.bone_count} bones)"
        )
    # Ω of a bone is its weights smoothed over the mesh, exactly zero where no vertex is
    # weighted to it: a bone with Ω but no weight means the ddm came from other weights
    weighted = np.zeros(bone_count, bool)
    weighted[mesh.joints[mesh.weights > 0]] = True
    stray = (ddm.omega != 0).any(axis=2) & ~weighted[ddm.bones]
    if stray.any():
        v, slot = (int(i) for i in np.argwhere(stray)[0])
        bone = int(ddm.bones[v, slot])
        raise InputError(
            f"ddm gives vertex {v} bone {bone}, but no vertex of this mesh is weighted to bone "
            f"{bone}: it was computed with other weights (vkdqs.direct_delta_mush(mesh, ...))"
        )


def check_delta_mush(bind: object, mesh: SkinnedMesh, method: str = "delta_mush") -> None:
    """Refuse a Delta Mush bind that is not a :class:`~vkdqs.methods.delta_mush.reference.DeltaMush`
    of a mesh of ``mesh``'s vertex count and triangles (its smoothing follows them)."""
    from .delta_mush.reference import DeltaMush

    if not isinstance(bind, DeltaMush):
        raise InputError(
            f"method={method!r} needs delta_mush=vkdqs.methods.delta_mush.reference."
            f"delta_mush_bind(mesh.positions, mesh.indices), got {type(bind).__name__}"
        )
    if bind.vertex_count != mesh.vertex_count:
        raise InputError(
            f"delta_mush was bound for another mesh ({bind.vertex_count} vertices) than this "
            f"one ({mesh.vertex_count})"
        )
    faces = np.asarray(mesh.indices).reshape(-1, 3)
    if bind.faces.shape != faces.shape or not np.array_equal(bind.faces, faces):
        raise InputError(
            f"delta_mush was bound with other triangles ({len(bind.faces)}) than this mesh's "
            f"({len(faces)}): delta_mush_bind(mesh.positions, mesh.indices)"
        )


#: Every need by name, in the order :attr:`SkinningMethod.needs` are checked.
NEEDS: dict[str, Need] = {
    n.name: n for n in (Centers(), RestMatrices(), DqsBlend(), DdmData(), DeltaMushData())
}


def register(need: Need) -> Need:
    """Add ``need`` (a new method's; its name new, its keyword unused)."""
    if not need.name or need.name in NEEDS:
        raise InputError(f"a need must have a new name, got {need.name!r}")
    if need.keyword is not None and need.keyword in {n.keyword for n in NEEDS.values()}:
        raise InputError(f"keyword {need.keyword!r} is another need's")
    NEEDS[need.name] = need
    return need


def unregister(name: str) -> None:
    """Remove a need :func:`register` added (the built-in ones stay)."""
    if name in _BUILT_IN:
        raise InputError(f"{name!r} is a built-in need")
    NEEDS.pop(name, None)


_BUILT_IN = frozenset(NEEDS)


def keywords() -> tuple[str, ...]:
    """Every need's public keyword."""
    return tuple(n.keyword for n in NEEDS.values() if n.keyword is not None)


@dataclass
class MethodInputs(Mapping[str, Any]):
    """What one method skins one mesh with besides the pose: each of its needs' values, by
    need name (``inputs["ddm_data"]``) or by public keyword as an attribute (``inputs.ddm``,
    None where the method lacks the need or the value is not made yet).

    Made by :meth:`vkdqs.methods.SkinningMethod.inputs` (the given values checked, the others
    None); :meth:`resolved` computes the missing defaults on a device.
    """

    method: SkinningMethod
    mesh: SkinnedMesh
    bone_count: int
    values: dict[str, object]
    #: the needs whose values the caller gave
    given: frozenset[str] = field(default_factory=frozenset)

    def __getitem__(self, name: str) -> object:
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __getattr__(self, keyword: str) -> object:
        if keyword.startswith("_") or keyword not in keywords():
            raise AttributeError(keyword)
        need = next(n for n in NEEDS.values() if n.keyword == keyword)
        return self.__dict__["values"].get(need.name)

    @property
    def needs(self) -> tuple[Need, ...]:
        """The method's needs, as objects."""
        return tuple(NEEDS[name] for name in self.values)

    def resolved(self, device: Device | None, path: str | None = None) -> MethodInputs:
        """These inputs with every missing default computed on ``device`` (kept on the mesh,
        so the next call is free; None: on a device opened for the call) and checked, and
        every value checked to fit ``device`` when read on ``path`` (:meth:`Need.fits`)."""
        values = dict(self.values)
        for need in self.needs:
            if values[need.name] is None:
                made = need.default(self.mesh, self.bone_count, device, self.method)
                if made is not None:
                    values[need.name] = need.check(made, self.mesh, self.bone_count, self.method)
            if values[need.name] is not None and device is not None:
                need.fits(device, values[need.name], path)
        return MethodInputs(self.method, self.mesh, self.bone_count, values, self.given)

    def arrays(self) -> dict[str, np.ndarray]:
        """The per-vertex arrays of the needs the shaders read as texel inputs (DDM's Ω and
        bones), by input name."""
        out: dict[str, np.ndarray] = {}
        for need in self.needs:
            if self.values[need.name] is not None:
                out.update(need.arrays(self.values[need.name]))
        return out

    def aux(self) -> np.ndarray | None:
        """The per-vertex ``aux`` rows the method's shaders read (xyz: centers of rotation,
        w: the mesh's DQS blend values), or None for a method without them."""
        if not self.method.aux:
            return None
        given = (self.values[n.name] for n in self.needs if n.in_aux)
        centers = next((v for v in given if v is not None), None)
        return load(AUX_ARRAY)(self.mesh.vertex_count, centers, self.mesh.dqs_blend)

    def slots(self) -> int:
        """The influence slots of the method's shader variants for this mesh: the mesh's, or
        those of the data a method that reads no joints and weights skins with."""
        if not self.method.influences:
            for need in self.needs:
                value = self.values[need.name]
                if value is not None and (slots := need.slots(value)) is not None:
                    return slots
        return self.mesh.slots

    def key(self) -> tuple[int, ...]:
        """Identifies the values (by object): caches of what was made from them use it."""
        return tuple(id(v) for v in self.values.values())

    def texel_key(self) -> tuple[int, ...] | None:
        """Identifies the values whose arrays are texel inputs (None: the method has none)."""
        key = tuple(id(self.values[n.name]) for n in self.needs if n.texels)
        return key or None

    def keywords(self) -> dict[str, object]:
        """The values by public keyword (for a Skinner made from the same inputs)."""
        return {n.keyword: self.values[n.name] for n in self.needs if n.keyword is not None}

    def with_values(self, values: Mapping[str, object]) -> MethodInputs:
        """These inputs with some values replaced (by need name)."""
        return MethodInputs(
            self.method, self.mesh, self.bone_count, {**self.values, **values}, self.given
        )


class SharedRows:
    """The per-vertex ``aux`` rows a mesh's instances and crowds share, and the values of the
    needs that fill them (:attr:`Need.in_aux`: centers of rotation), given last or made once:
    a later instance that gives none draws with them (``rows.centers``: by keyword)."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}
        self._written: tuple[int, ...] | None = None

    def __getattr__(self, keyword: str) -> object:
        if keyword.startswith("_") or keyword not in keywords():
            raise AttributeError(keyword)
        need = next(n for n in NEEDS.values() if n.keyword == keyword)
        return self.__dict__["values"].get(need.name)

    def fill(self, inputs: MethodInputs) -> MethodInputs:
        """``inputs`` with the shared values for its aux needs that were not given."""
        if not inputs.method.aux:
            return inputs
        known = {
            n.name: self.values[n.name]
            for n in inputs.needs
            if n.in_aux and inputs.values[n.name] is None and n.name in self.values
        }
        return inputs.with_values(known) if known else inputs

    def drawn(self, inputs: MethodInputs) -> MethodInputs:
        """``inputs`` with the aux values the mesh's rows hold now (what its instances draw)."""
        if not inputs.method.aux:
            return inputs
        held = {
            n.name: self.values[n.name] for n in inputs.needs if n.in_aux and n.name in self.values
        }
        return inputs.with_values(held) if held else inputs

    def rows(self, inputs: MethodInputs) -> np.ndarray | None:
        """The aux rows to upload for resolved ``inputs`` (their aux values kept as the shared
        ones), or None when the uploaded rows already hold them (or the method reads none)."""
        if not inputs.method.aux:
            return None
        for n in inputs.needs:
            if n.in_aux and inputs.values[n.name] is not None:
                self.values[n.name] = inputs.values[n.name]
        key = tuple(id(v) for v in self.values.values())
        if key == self._written:
            return None
        self._written = key
        centers = next(iter(self.values.values()), None)
        return load(AUX_ARRAY)(inputs.mesh.vertex_count, centers, inputs.mesh.dqs_blend)  # type: ignore[arg-type]
