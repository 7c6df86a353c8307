"""The SPIR-V variants: every module vkdqs ships as a frozen :class:`Variant`, built once
from the method registry, with its source, stage, defines, descriptor set and push constants."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .. import methods
from .bindings import (
    CENTERS_BINDINGS,
    DDM_BINDINGS,
    OVERLAY_BINDINGS,
    RENDER_BINDINGS,
    compute_bindings,
    readback_bindings,
)
from .bone_blocks import UNSKINNED, skinning
from .bounds import BOUNDS_BINDINGS, BOUNDS_PUSH_BYTES
from .crowds import (
    CROWD_CULL_BINDINGS,
    CROWD_CULL_PUSH_BYTES,
    CROWD_RENDER_BINDINGS,
    CROWD_RENDER_PUSH_BYTES,
    CROWD_SAMPLE_BINDINGS,
    CROWD_SAMPLE_PUSH_BYTES,
)
from .delta_mush import DELTA_MUSH_BINDINGS, DELTA_MUSH_PUSH_BYTES
from .push_constants import (
    CENTERS_PUSH_BYTES,
    COMPUTE_PUSH_BYTES,
    DDM_PUSH_BYTES,
    OVERLAY_PUSH_BYTES,
    READBACK_PUSH_BYTES,
    RENDER_PUSH_BYTES,
)
from .velocity import VELOCITY_BINDINGS, VELOCITY_PUSH_BYTES
from .vulkan_types import Binding, Stage


class Kind(str, Enum):
    """What a SPIR-V module is: its source, stage, bindings and push constants follow."""

    RENDER = "render"  #: skin.vert, the renderer's vertex shader
    READBACK = "readback"  #: skin.vert drawn as points, writing a storage buffer (Skinner)
    COMPUTE = "compute"  #: skin.comp (Skinner)
    FRAGMENT = "fragment"  #: skin.frag
    CENTERS = "centers"  #: cor_centers.comp, the centers-of-rotation precomputation
    DDM_SMOOTH = "ddm_smooth"  #: ddm_smooth.comp, Direct Delta Mush's smoothing sweeps
    OVERLAY = "overlay"  #: overlay.vert, the label overlay
    OVERLAY_FRAGMENT = "overlay_fragment"  #: overlay.frag
    CROWD_SAMPLE = "crowd_sample"  #: crowd.comp: a crowd's clip sampled into bones
    CROWD_CULL = "crowd_cull"  #: crowd_cull.comp: the copies in view, for an indirect draw
    CROWD_RENDER = "crowd_render"  #: crowd.vert
    CROWD_FRAGMENT = "crowd_fragment"  #: skin.frag compiled with CROWD
    DELTA_MUSH = "delta_mush"  #: delta_mush.comp: Delta Mush's passes after skinning
    BOUNDS = "bounds"  #: bounds.comp: the box of the vertices skin.comp wrote
    VELOCITY = "velocity"  #: velocity.comp: velocity skinning's pass after skinning


#: Each kind's GLSL source (relative to shaders/glsl), stage and the defines it always has.
_SOURCES = {
    Kind.RENDER: ("skin.vert", Stage.VERTEX, ()),
    Kind.READBACK: ("skin.vert", Stage.VERTEX, ("SKIN_READBACK",)),
    Kind.COMPUTE: ("skin.comp", Stage.COMPUTE, ()),
    Kind.FRAGMENT: ("skin.frag", Stage.FRAGMENT, ()),
    Kind.CENTERS: ("cor_centers.comp", Stage.COMPUTE, ()),
    Kind.DDM_SMOOTH: ("ddm_smooth.comp", Stage.COMPUTE, ()),
    Kind.OVERLAY: ("overlay.vert", Stage.VERTEX, ()),
    Kind.OVERLAY_FRAGMENT: ("overlay.frag", Stage.FRAGMENT, ()),
    Kind.CROWD_SAMPLE: ("crowd.comp", Stage.COMPUTE, ()),
    Kind.CROWD_CULL: ("crowd_cull.comp", Stage.COMPUTE, ()),
    Kind.CROWD_RENDER: ("crowd.vert", Stage.VERTEX, ()),
    Kind.CROWD_FRAGMENT: ("skin.frag", Stage.FRAGMENT, ("CROWD",)),
    Kind.DELTA_MUSH: ("delta_mush.comp", Stage.COMPUTE, ()),
    Kind.BOUNDS: ("bounds.comp", Stage.COMPUTE, ()),
    Kind.VELOCITY: ("velocity.comp", Stage.COMPUTE, ()),
}
#: The defines of each crowd sampling layout (:attr:`vkdqs.methods.SkinningMethod.crowd_layout`).
CROWD_LAYOUT_DEFINES = {"dq": (), "rows": ("SKIN_BONES_ROWS",), "dq_rows": ("SKIN_SECOND_BLOCK",)}


@dataclass(frozen=True)
class Variant:
    """One SPIR-V module: a GLSL source compiled with a set of defines, all derived from its
    fields.

    ``method`` is a registry method (:mod:`vkdqs.methods`) or :data:`UNSKINNED` for the skinning
    kinds, the sampling layout (:data:`CROWD_LAYOUT_DEFINES`) for :attr:`Kind.CROWD_SAMPLE`, and
    :data:`UNSKINNED` for the others; ``slots`` the influence slots (4 or 8); ``surface``: the
    variant with the material's UV and colour inputs (and the heat-map scalar).
    """

    kind: Kind
    method: str = UNSKINNED
    slots: int = 4
    surface: bool = False

    @property
    def name(self) -> str:
        """The module is ``shaders/spirv/<name>.spv``, e.g. ``skin_dqs_8_readback.vert``."""
        k, eight, tail = self.kind, "_8" if self.slots == 8 else "", "_surface" * self.surface
        if k in (Kind.RENDER, Kind.READBACK, Kind.COMPUTE):
            stage = "comp" if k is Kind.COMPUTE else "vert"
            readback = "_readback" if k is Kind.READBACK else ""
            return f"skin_{self.method}{eight}{readback}{tail}.{stage}"
        if k is Kind.FRAGMENT:
            return f"skin{tail}.frag"
        if k is Kind.CROWD_FRAGMENT:
            return f"skin_crowd{tail}.frag"
        if k is Kind.CROWD_SAMPLE:
            return f"crowd_{self.method}.comp"
        if k is Kind.CROWD_RENDER:
            return f"crowd_{self.method}{eight}{tail}.vert"
        return self.source

    @property
    def source(self) -> str:
        """The GLSL file, relative to ``shaders/glsl``."""
        return _SOURCES[self.kind][0]

    @property
    def stage(self) -> Stage:
        """The shader stage of the module (vertex, fragment or compute)."""
        return _SOURCES[self.kind][1]

    @property
    def defines(self) -> tuple[str, ...]:
        """The ``-D`` defines it is compiled with."""
        out = _SOURCES[self.kind][2]
        if self.kind is Kind.CROWD_SAMPLE:
            return CROWD_LAYOUT_DEFINES[self.method]
        if self.kind in (Kind.RENDER, Kind.READBACK, Kind.COMPUTE, Kind.CROWD_RENDER):
            out = (
                skinning(self.method).defines
                + (("SKIN_INFLUENCES_8",) if self.slots == 8 else ())
                + out
            )
        if self.surface:
            out += ("CROWD_SURFACE",) if self.kind is Kind.CROWD_RENDER else ("SURFACE",)
        return out


def variant_name(kind: str, method: str, slots: int = 4, surface: bool = False) -> str:
    """The module name of a variant, e.g. ``skin_dqs_8_readback.vert`` (the unskinned and
    fragment variants have no slot count; only rendering variants a ``_surface`` one)."""
    kind = Kind(kind)
    if not skinning(method).skins or kind in (Kind.FRAGMENT, Kind.CROWD_FRAGMENT):
        slots = 4
    return Variant(kind, method, slots, surface and kind is not Kind.READBACK).name


#: The path (:data:`vkdqs.methods.PATHS`) each skinning kind serves: a method has the kinds of
#: its paths.
PATH_OF = {Kind.RENDER: "vertex", Kind.READBACK: "vertex", Kind.COMPUTE: "compute"}


def _build_variants() -> tuple[Variant, ...]:
    """Every module, once: each registry method's skinning kinds of its paths (4 and 8 slots,
    rendering also with the surface inputs; none for a method with a ``base``, which runs its
    base's), the unskinned baseline, the fragment shaders, the
    precomputations (centers of rotation, Direct Delta Mush) and overlay, then the crowd
    variants of the methods that draw crowds, Delta Mush's passes and the bounds pass."""
    out = []
    for m in methods.METHODS.values():
        if m.base is not None:  # skins with its base's variants (classic Delta Mush: LBS's)
            continue
        kinds = [k for k in (Kind.RENDER, Kind.READBACK, Kind.COMPUTE) if PATH_OF[k] in m.paths]
        for slots in (4, 8):
            for kind in kinds:
                for surface in (False, True) if kind is Kind.RENDER else (False,):
                    out.append(Variant(kind, m.name, slots, surface))
    out += [Variant(Kind.RENDER, UNSKINNED, 4, s) for s in (False, True)]
    out += [Variant(Kind.FRAGMENT, UNSKINNED, 4, s) for s in (False, True)]
    out += [Variant(Kind.CENTERS, UNSKINNED, 8), Variant(Kind.DDM_SMOOTH)]
    out += [Variant(Kind.OVERLAY), Variant(Kind.OVERLAY_FRAGMENT)]
    crowd = [m for m in methods.METHODS.values() if m.crowds]
    out += [Variant(Kind.CROWD_SAMPLE, layout) for layout in CROWD_LAYOUT_DEFINES]
    out += [Variant(Kind.CROWD_CULL)]
    for m in crowd:
        for slots in (4, 8):
            out += [Variant(Kind.CROWD_RENDER, m.name, slots, s) for s in (False, True)]
    out += [Variant(Kind.CROWD_FRAGMENT, UNSKINNED, 4, s) for s in (False, True)]
    out += [Variant(Kind.DELTA_MUSH), Variant(Kind.BOUNDS), Variant(Kind.VELOCITY)]
    return tuple(out)


def variant(kind: str, method: str, slots: int = 4) -> Variant:
    """The :class:`Variant` for a kind, method and slot count (KeyError if there is none)."""
    name = variant_name(kind, method, slots)
    for v in VARIANTS:
        if v.name == name:
            return v
    raise KeyError(name)


def bindings_of(v: Variant) -> tuple[Binding, ...]:
    """The descriptor set layout the host creates for a variant's pipeline."""
    return {
        Kind.COMPUTE: lambda: compute_bindings(v.method, v.slots),
        Kind.READBACK: lambda: readback_bindings(v.method),
        Kind.CROWD_SAMPLE: lambda: CROWD_SAMPLE_BINDINGS,
        Kind.CROWD_CULL: lambda: CROWD_CULL_BINDINGS,
        Kind.CROWD_RENDER: lambda: CROWD_RENDER_BINDINGS,
        Kind.CROWD_FRAGMENT: lambda: CROWD_RENDER_BINDINGS,
        Kind.CENTERS: lambda: CENTERS_BINDINGS,
        Kind.DDM_SMOOTH: lambda: DDM_BINDINGS,
        Kind.OVERLAY: lambda: OVERLAY_BINDINGS,
        Kind.OVERLAY_FRAGMENT: lambda: OVERLAY_BINDINGS,
        Kind.DELTA_MUSH: lambda: DELTA_MUSH_BINDINGS,
        Kind.BOUNDS: lambda: BOUNDS_BINDINGS,
        Kind.VELOCITY: lambda: VELOCITY_BINDINGS,
    }.get(v.kind, lambda: RENDER_BINDINGS)()


def push_bytes_of(v: Variant) -> int:
    """The size of the push-constant range the host declares for a variant's pipeline."""
    return {
        Kind.COMPUTE: COMPUTE_PUSH_BYTES,
        Kind.READBACK: READBACK_PUSH_BYTES,
        Kind.RENDER: RENDER_PUSH_BYTES,
        Kind.FRAGMENT: RENDER_PUSH_BYTES,
        Kind.CENTERS: CENTERS_PUSH_BYTES,
        Kind.DDM_SMOOTH: DDM_PUSH_BYTES,
        Kind.CROWD_SAMPLE: CROWD_SAMPLE_PUSH_BYTES,
        Kind.CROWD_CULL: CROWD_CULL_PUSH_BYTES,
        Kind.CROWD_RENDER: CROWD_RENDER_PUSH_BYTES,
        Kind.CROWD_FRAGMENT: CROWD_RENDER_PUSH_BYTES,
        Kind.OVERLAY: OVERLAY_PUSH_BYTES,
        Kind.OVERLAY_FRAGMENT: OVERLAY_PUSH_BYTES,
        Kind.DELTA_MUSH: DELTA_MUSH_PUSH_BYTES,
        Kind.BOUNDS: BOUNDS_PUSH_BYTES,
        Kind.VELOCITY: VELOCITY_PUSH_BYTES,
    }[v.kind]


def crowd_variant_name(kind: str, method: str, slots: int = 4, surface: bool = False) -> str:
    """``crowd_dq.comp`` ("crowd_sample": the method's sampling layout), ``crowd_lbs_8.vert``
    ("crowd_render") or ``skin_crowd.frag`` ("crowd_fragment"); ``surface``: the variant with
    the material's UV and colour inputs (``crowd_lbs_8_surface.vert``,
    ``skin_crowd_surface.frag``)."""
    kind = Kind(kind)
    if kind is Kind.CROWD_SAMPLE:
        return Variant(kind, methods.get(method).crowd_layout).name
    if kind is Kind.CROWD_FRAGMENT:
        return Variant(kind, UNSKINNED, 4, surface).name
    return Variant(kind, method, slots, surface).name


def crowd_surface(v: Variant) -> bool:
    """Whether a crowd variant passes the material's UV and colour (``CROWD_SURFACE`` in
    crowd.vert, ``SURFACE`` in skin.frag)."""
    return v.kind in (Kind.CROWD_RENDER, Kind.CROWD_FRAGMENT) and v.surface


def surface_variant(v: Variant) -> bool:
    """Whether a variant has the material's UV and colour inputs (``SURFACE`` in skin.frag,
    ``CROWD_SURFACE`` in crowd.vert)."""
    return v.surface


#: Every SPIR-V module vkdqs ships, built once from the registry.
VARIANTS: tuple[Variant, ...] = _build_variants()
