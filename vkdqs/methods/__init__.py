"""The registry of skinning methods: each method is defined here once, and every layer asks it.

A :class:`SkinningMethod` holds what the layers used to decide separately: its name, label and
colour, its shaders' defines and bone blocks (:mod:`vkdqs.shader_interface` builds the SPIR-V
variants and bindings from them), how a pose is packed for the GPU (:mod:`vkdqs.bones`), its
float64 reference (:mod:`vkdqs.reference`), what else it needs (centers of rotation, rest
matrices, per-vertex blend weights, a Direct Delta Mush precomputation, a Delta Mush bind), the
method whose shaders skin under its compute passes (``base``), the paths its shaders run on,
whether it draws crowds, its viewer key, and one rule of what it accepts,
:meth:`SkinningMethod.check`. The Skinner, the renderer, crowds, the bake, ``vkdqs info``,
``--method all``, the scenes and the viewer all read this module, so they agree on what a method
can take.

Numpy only (no Vulkan), so the command line checks ``--method`` without loading a driver.

Adding a method: a :class:`SkinningMethod` entry in :data:`METHODS`, its float64 reference, its
GLSL block in ``shaders/glsl/include/skin.glsl`` (under its ``define``), ``build_shaders.py``,
and its tests (``tests/test_registry.py`` runs every entry on every path against its reference).
A method with per-vertex data of its own (Direct Delta Mush's Ω: the need "ddm_data") also lists
its texel inputs in :data:`vkdqs.shader_interface.MESH_INPUTS` (read on every path through one
include, ``shaders/glsl/include/ddm_inputs.glsl``); one without vertex-shader variants says so in
``paths``. A method that skins with another's shaders and then runs compute
passes over the skinned mesh (classic Delta Mush: ``base="lbs"``, the need "delta_mush_data")
has no shader variants of its own: the Skinner records its passes after the base's dispatch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import bones as packing
from .. import dq, reference
from ..bones import as_matrices
from ..errors import InputError
from . import needs as needs_
from .needs import DDM_MAX_BONES, DDM_MAX_SLOTS, MethodInputs, check_ddm, check_delta_mush, load
from .velocity.entry import velocity_method
from .velocity.need import VelocityData

needs_.register(VelocityData())

if TYPE_CHECKING:
    from ..gpu import Device
    from ..mesh import SkinnedMesh

__all__ = [
    "BOTH",
    "DDM_MAX_BONES",
    "DDM_MAX_SLOTS",
    "DEFAULT",
    "DEFAULT_DQS_BLEND",
    "DIFF",
    "DIFF_OF",
    "METHODS",
    "NEEDS",
    "NONE",
    "MethodInputs",
    "SkinTraits",
    "SkinningMethod",
    "check_ddm",
    "check_delta_mush",
    "get",
    "label",
    "load",
    "merge_inputs",
    "names",
    "parse_methods",
    "register",
    "select_methods",
    "shown",
    "unregister",
]

#: What a method may need besides the mesh and the pose, by name: each a
#: :class:`vkdqs.methods.needs.Need` that checks what a user gave, computes its default, and says
#: what it uploads ("centers", "rest_matrices", "dqs_blend", "ddm_data", "delta_mush_data"; a new
#: method's need is added by :func:`vkdqs.methods.needs.register`).
NEEDS = needs_.NEEDS
#: The paths a method's shaders may run on: the compute shader (``Skinner(path="compute")``)
#: and the vertex shader (``path="vertex"``, the renderer's instances).
PATHS = ("compute", "vertex")

#: The bytes of one bone in the shaders' bone block: a ``mat2x4`` dual quaternion, or the three
#: rows of an affine ``mat3x4`` (std140 strides).
DQ_BYTES = 32
ROWS_BYTES = 48


@dataclass(frozen=True)
class SkinTraits:
    """What a skin's joint matrices hold, as far as a method's :meth:`~SkinningMethod.check`
    cares: built from matrices (:meth:`of_matrices`) or from a glTF skin
    (``GltfScene.skin_traits``), combined with ``|``.

    Attributes
    ----------
    scale : bool
        Some joint matrix has scale or shear (``|A^T A - I| > 1e-4``).
    reflection : bool
        Some joint matrix mirrors (``det A < 0``).
    collapse : bool
        Some joint matrix is singular (:func:`vkdqs.dq.collapsed`).
    max_influences : int
        The most influences a vertex of the skinned meshes has.
    rest_frames : bool
        Each bone's rest frame is known and invertible (a glTF skin's inverse bind matrices).
    uniform_scale : bool
        Its scale (where ``scale``) is one uniform factor that every joint matrix shares (a
        model's unit scale: a mesh in centimetres under a scene in metres,
        :func:`vkdqs.dq.common_scale`), which methods with
        :attr:`SkinningMethod.uniform_scale` take.
    """

    scale: bool = False
    reflection: bool = False
    collapse: bool = False
    max_influences: int = 0
    rest_frames: bool = True
    uniform_scale: bool = False

    @classmethod
    def of_matrices(
        cls, matrices: ArrayLike, *, max_influences: int = 0, rest_frames: bool = True
    ) -> SkinTraits:
        """The traits of joint matrices ``[..., 4, 4]`` (or ``[..., 3, 4]``): any pose of any
        batch shape."""
        m = np.asarray(matrices, dtype=np.float64)
        if m.ndim < 2 or m.shape[-2:] not in ((4, 4), (3, 4)):
            raise InputError(f"joint matrices must be of shape [..., 4, 4], got shape {m.shape}")
        finite = np.isfinite(m).all(axis=(-2, -1))
        if not finite.all():
            where = np.unravel_index(int(np.argmin(finite)), finite.shape)
            raise InputError(
                f"joint matrices must be finite; the one at {list(map(int, where))} is not "
                "(an animation whose keys multiply past float64, or a NaN)"
            )
        kinds = dq.matrix_kinds(m)
        scale = bool(kinds.scale.any())
        common = dq.common_scale(m.reshape(-1, *m.shape[-2:])) if m.size else np.ones(())
        return cls(
            scale=scale,
            reflection=bool(kinds.reflection.any()),
            collapse=bool(kinds.collapse.any()),
            max_influences=max_influences,
            rest_frames=rest_frames,
            uniform_scale=scale and bool(np.isfinite(common)),
        )

    def __or__(self, other: SkinTraits) -> SkinTraits:
        # the packers check each pose of each skin on its own: a scale common to each side's
        # matrices is all they need, whether or not the two sides' are the same
        scaled = [t for t in (self, other) if t.scale]
        return SkinTraits(
            self.scale or other.scale,
            self.reflection or other.reflection,
            self.collapse or other.collapse,
            max(self.max_influences, other.max_influences),
            self.rest_frames and other.rest_frames,
            bool(scaled) and all(t.uniform_scale for t in scaled),
        )


#: Makes one of a method's passes before or after the skinning for a compute-path Skinner:
#: ``hook(skinner, inputs)`` (``inputs``: its :class:`MethodInputs`, defaults resolved) returns
#: an object with ``record(cmd, target)`` (:class:`vkdqs.engine.passes.SkinPass`), whose
#: Vulkan objects the Skinner owns. A built-in entry names its hook by reference,
#: ``"module:attribute"`` (:func:`vkdqs.methods.needs.load`), so this numpy layer never
#: imports the Vulkan code it names.
PassHook = Callable[..., object] | str
#: Packs ``(bones, bone_count, batched, allow_scale, rest_matrices)`` into (the bone block, the
#: second block or None).
Packer = Callable[..., tuple[np.ndarray, "np.ndarray | None"]]
#: ``(positions, normals, joints, weights, bones, centers, rest_matrices, dqs_blend, ddm,
#: delta_mush, base)`` in float64 to ``(positions, normals)`` (``base``: the base method's
#: reference, for a method with one).
Reference = Callable[..., tuple[NDArray[np.float64], NDArray[np.float64]]]


@dataclass(frozen=True)
class SkinningMethod:
    """One skinning method: everything a layer needs to know about it.

    Attributes
    ----------
    name : str
        What ``method=`` and ``--method`` take.
    label : str
        What labels, titles and tables call it.
    color : tuple of float
        Its copies' linear RGBA tint in side-by-side scenes.
    summary : str
        One line for ``--help`` and the docs.
    define : str or None
        The GLSL define of its block in ``include/skin.glsl`` (None: the default DQS block).
    bone_rows : bool
        The bone block holds ``mat3x4`` matrix rows (else ``mat2x4`` dual quaternions).
    second_block : bool
        The shaders also read a ``mat3x4`` per bone at binding ``BONE_SCALES``.
    aux : bool
        The shaders read the per-vertex ``aux`` row (xyz: center of rotation, w: blend weight).
    needs : frozenset of str
        Of :data:`NEEDS`.
    influences : bool
        Its shaders read the mesh's joints and weights; False where other per-vertex inputs
        stand for them ("ddm": the precomputation's Ω and bones).
    paths : tuple of str
        Of :data:`PATHS`, the ones its shaders are built for. A method without "vertex" does
        not draw crowds (:meth:`check_path` says why); the renderer draws its instances by
        "compute, then draw" (:attr:`drawn_by_compute`: a compute Skinner skins each new pose,
        the renderer draws the posed vertices unskinned).
    scale, reflection, collapse : bool
        Whether it takes joint matrices with scale or shear, mirrored ones, singular ones.
    crowds : bool
        Whether crowds draw it; ``crowd_scale``: whether crowd clips may have scale (a crowd's
        clip is packed once, without per-frame two-phase DQS).
    max_influences : int
    shown : bool
        Shown side by side in scenes (``--method all``, the viewer); False for variants such as
        "dqs_scale" (two-phase DQS forced), which are chosen by name only.
    key : str or None
        The viewer's number key for it alone.
    scaled_variant : str or None
        The method whose shaders run a pose with scale or shear ("dqs": "dqs_scale").
    uniform_scale : bool
        Whether it takes joint matrices that are rigid up to one uniform scale they all share
        (:attr:`SkinTraits.uniform_scale`; "ddm": the result is that scale times the rigid
        pose's) where it takes no other scale (not :attr:`scale`); crowds still need rigid
        clips.
    box_rule : str or None
        How a conservative box of a pose follows from per-bone boxes
        (:mod:`vkdqs.engine.bone_boxes`): ``"affine"``, ``"rigid"``, ``"mixed"``,
        ``"about_centers"``; None where no cheap bound is proved (the exact box from the GPU is
        used).
    base : str or None
        The method whose shaders skin the mesh before this one's compute passes (``"lbs"``
        under classic Delta Mush), or None: its own shaders. A method with a base has no shader
        variants of its own (:attr:`shaders`); its bone blocks, packer and capability rule are
        the base's.
    usdskel : str or None
        Its ``primvars:skel:skinningMethod`` in a UsdSkel rig (``vkdqs export``):
        ``"classicLinear"`` or ``"dualQuaternion"``; None where OpenUSD has no equivalent (the
        rig is refused; ``vkdqs bake`` writes its frames instead). A method that also needs
        per-vertex blend weights writes ``primvars:skel:skinningBlendWeights`` where usd-core
        has them.
    before, after : tuple of callables
        Its passes before and after the skinning dispatches on the compute path (:data:`PassHook`:
        classic Delta Mush's smoothing comes after). A method with passes runs on the compute
        path only (its ``paths``).
    skins : bool
        Whether it skins at all: False only for :data:`NONE`, the entry of "no skinning" (the
        rest mesh, morphed, drawn where its model matrix puts it: rigid parts, the baseline
        that measures what skinning costs). The layers ask this, never the name.
    """

    name: str
    label: str
    color: tuple[float, float, float, float]
    summary: str
    define: str | None
    pack_bones: Packer = field(repr=False, compare=False)
    reference_skin: Reference = field(repr=False, compare=False)
    bone_rows: bool = False
    second_block: bool = False
    aux: bool = False
    needs: frozenset[str] = frozenset()
    influences: bool = True
    paths: tuple[str, ...] = PATHS
    scale: bool = False
    reflection: bool = False
    collapse: bool = False
    crowds: bool = True
    crowd_scale: bool = False
    max_influences: int = 8
    shown: bool = True
    key: str | None = None
    scaled_variant: str | None = None
    box_rule: str | None = None
    base: str | None = None
    usdskel: str | None = None
    uniform_scale: bool = False
    before: tuple[PassHook, ...] = field(default=(), repr=False, compare=False)
    after: tuple[PassHook, ...] = field(default=(), repr=False, compare=False)
    skins: bool = True

    # -- the shaders' view ------------------------------------------------------------------

    @property
    def shaders(self) -> str:
        """The method whose shader variants skin for it: its :attr:`base`, or itself."""
        return self.base or self.name

    @property
    def defines(self) -> tuple[str, ...]:
        """The GLSL defines of its shader variants: its block's own define, then the layout
        ones ``include/skin.glsl`` declares the blocks and inputs from."""
        out = (self.define,) if self.define else ()
        if self.bone_rows:
            out += ("SKIN_BONES_ROWS",)
        if self.second_block:
            out += ("SKIN_SECOND_BLOCK",)
        if self.aux:
            out += ("SKIN_AUX",)
        return out

    @property
    def bone_stride(self) -> int:
        """std140 bytes of one bone in the bone block."""
        return ROWS_BYTES if self.bone_rows else DQ_BYTES

    @property
    def crowd_texels(self) -> int:
        """rgba32f texels of one bone in the crowd buffers: the bone block's, then the second
        block's three rows."""
        return self.bone_stride // 16 + (ROWS_BYTES // 16 if self.second_block else 0)

    @property
    def crowd_layout(self) -> str:
        """The crowd sampling shader that blends its bones: ``"dq"`` (dual quaternions),
        ``"rows"`` (matrix rows) or ``"dq_rows"`` (both)."""
        if self.bone_rows:
            return "rows"
        return "dq_rows" if self.second_block else "dq"

    # -- poses ------------------------------------------------------------------------------

    def pack(
        self,
        bones: object,
        bone_count: int,
        *,
        batched: bool = False,
        allow_scale: bool = True,
        rest_matrices: np.ndarray | None = None,
    ) -> packing.PackedPose:
        """Validate and pack a pose ``([P,] B, ...)`` into its shaders' bone blocks (see
        :mod:`vkdqs.bones` for the layouts each method takes). ``rest_matrices``: validated,
        for the methods that need them."""
        block, second = self.pack_bones(
            bones,
            bone_count,
            batched=batched,
            allow_scale=allow_scale,
            rest_matrices=rest_matrices,
        )
        variant = self.name
        if second is not None and not self.second_block:
            assert self.scaled_variant is not None
            variant = self.scaled_variant
        return packing.PackedPose(variant, block, second)

    def reference(
        self,
        mesh: SkinnedMesh,
        bones: ArrayLike,
        *,
        morph_weights: ArrayLike | None = None,
        previous: ArrayLike | None = None,
        dt: float | None = None,
        **inputs: object,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The float64 positions and normals its shaders compute for ``mesh`` posed by one pose
        ``bones`` (the inputs :meth:`pack` takes), morph targets applied first (a method that
        needs "ddm_data" moves each vertex by its morph delta in the frame its Ω is about: the
        smoothing stays that of the rest mesh). ``inputs``: its needs' values by keyword
        (``centers=``, ``rest_matrices=``, ``ddm=``, ``delta_mush=``, a registered need's);
        one not given takes the need's default where it is made on the host (a Delta Mush
        bind: :func:`vkdqs.methods.delta_mush.reference.mesh_delta_mush`). ``previous``,
        ``dt``: the pose ``dt`` seconds before, for a method that moves with the motion
        (velocity skinning; None: at rest)."""
        values = {n.keyword: None for n in NEEDS.values() if n.keyword is not None}
        unknown = set(inputs) - set(values)
        if unknown:
            raise InputError(f"reference() takes no {', '.join(sorted(unknown))}")
        values.update(inputs)
        for name in self.needs:
            need = NEEDS[name]
            if need.keyword is not None and values[need.keyword] is None and need.on_host:
                values[need.keyword] = need.default(mesh, 0, None, self)
        p, n = mesh.positions, mesh.normals
        if morph_weights is not None:
            p, n = reference.morph(p, n, mesh.morph_positions, mesh.morph_normals, morph_weights)
        return self.reference_skin(
            p,
            n,
            mesh.joints,
            mesh.weights,
            bones,
            dqs_blend=mesh.dqs_blend,
            base=None if self.base is None else get(self.base).reference_skin,
            motion=(previous, dt),
            **values,
        )

    def followed_by(
        self,
        after: tuple[object, ...],
        *,
        name: str,
        label: str,
        color: tuple[float, float, float, float],
        summary: str,
        reference_skin: Callable[..., tuple[NDArray, NDArray]],
        needs: frozenset[str] = frozenset(),
        key: str | None = None,
    ) -> SkinningMethod:
        """A new method: this one's skinning (its shaders, pose packing and capability rule; it
        is the new one's ``base``) followed by the passes ``after`` (hooks, as
        :attr:`after`), with ``needs`` besides this one's. Compute path only (renderer
        instances draw it by "compute, then draw"); no crowds, box rule or USD export. Shown in
        scenes where it has a viewer ``key``; chosen by name only where not."""
        return dataclasses.replace(
            self,
            name=name,
            label=label,
            color=color,
            summary=summary,
            reference_skin=reference_skin,
            needs=self.needs | needs,
            paths=("compute",),
            crowds=False,
            crowd_scale=False,
            shown=key is not None,
            key=key,
            box_rule=None,
            usdskel=None,
            base=self.name,
            after=tuple(after),
        )

    # -- what it accepts --------------------------------------------------------------------

    def check(self, skin: SkinTraits | ArrayLike, *, crowd: bool = False) -> str | None:
        """Why this method cannot skin ``skin`` (a :class:`SkinTraits`, or joint matrices of
        any batch shape), or None when it can. ``crowd``: drawn as a crowd."""
        traits = skin if isinstance(skin, SkinTraits) else SkinTraits.of_matrices(skin)
        if crowd and not self.crowds:
            return self.check_crowds()
        if traits.max_influences > self.max_influences:
            return (
                f"{self.label} takes at most {self.max_influences} influences a vertex, the skin "
                f"has {traits.max_influences}"
            )
        if traits.collapse and not self.collapse:
            return f"{self.label} cannot skin a singular (collapsed) joint matrix"
        if traits.reflection and not self.reflection:
            return f"{self.label} cannot skin a mirrored joint matrix (det < 0)"
        uniform = self.uniform_scale and traits.uniform_scale and not crowd
        if traits.scale and not (self.crowd_scale if crowd else self.scale) and not uniform:
            where = " in a crowd's clip" if crowd else ""
            if self.uniform_scale and not crowd:
                return (
                    f"{self.label} needs rigid joint matrices, or one uniform scale they all "
                    "share; this skin has another scale or shear"
                )
            return f"{self.label} needs rigid joint matrices{where}; this skin has scale or shear"
        if crowd and "vertex" not in self.paths:
            return self.check_path("vertex")
        if needs_.RestMatrices.name in self.needs and not traits.rest_frames:
            return f"{self.label} needs each bone's rest frame (invertible inverse bind matrices)"
        return None

    @property
    def drawn_by_compute(self) -> bool:
        """Whether the renderer draws its instances by "compute, then draw": it has no vertex
        shader variants, so a compute Skinner the renderer keeps per instance skins each new
        pose and the renderer draws the posed positions and normals with its unskinned
        pipeline (crowds refuse it: :meth:`check_path`)."""
        return "vertex" not in self.paths

    def check_crowds(self) -> str | None:
        """Why crowds do not draw it, or None when they do: the reason its needs give
        (:attr:`vkdqs.methods.needs.Need.crowd_lacks`), then what the vertex shader crowds
        draw with lacks
        (:meth:`check_path`)."""
        if self.crowds:
            return None
        lacks = [w for n in sorted(self.needs) if (w := NEEDS[n].crowd_lacks)]
        if lacks:
            return (
                f"{self.label} does not draw crowds: {'; '.join(lacks)}; draw its copies as "
                "Renderer instances (each skinned by its own compute passes) or bake it"
            )
        return self.check_path("vertex") or f"{self.label} does not draw crowds"

    def check_path(self, path: str) -> str | None:
        """Why its shaders cannot run on ``path`` (of :data:`PATHS`; "vertex" is also what
        crowds draw with), or None when they can."""
        if path in self.paths:
            return None
        if not self.skins:
            return (
                f"method {self.name!r} skins nothing (a Renderer instance draws the rest mesh "
                f"where its model matrix puts it); it has no {path} path"
            )
        lacks = [w for n in sorted(self.needs) if (w := NEEDS[n].vertex_lacks)]
        what = f" ({'; '.join(lacks)})" if lacks else ""
        return (
            f"{self.label} runs on the {' and '.join(self.paths)} path only{what}, not "
            f"path={path!r}: crowds draw with the vertex shader; skin it with "
            "Skinner(path='compute'), draw it as a Renderer instance, or bake it"
        )

    # -- what else it needs -----------------------------------------------------------------

    def inputs(
        self,
        mesh: SkinnedMesh,
        bone_count: int,
        *,
        device: Device | None = None,
        **given: object,
    ) -> MethodInputs:
        """What this method skins ``mesh`` with besides the pose, in one call: each of its
        needs' value as given by keyword (``centers=``, ``rest_matrices=``, ``ddm=``,
        ``delta_mush=``, a registered need's), checked; a value given for a need it lacks is
        refused. With ``device``, the missing defaults are computed on it (kept on the mesh)
        and every value is checked to fit it (:meth:`MethodInputs.resolved`); without, they
        stay None until the caller resolves them."""
        by_keyword = {n.keyword: n for n in NEEDS.values() if n.keyword is not None}
        for arg, value in given.items():
            need = by_keyword.get(arg)
            if need is None:
                raise InputError(f"{arg!r} is not an input of any method")
            if value is not None and need.name not in self.needs:
                users = " or ".join(repr(m.name) for m in METHODS.values() if need.name in m.needs)
                raise InputError(f"{arg} are for method={users}, not {self.name!r}")
        values = {}
        for name in sorted(self.needs, key=list(NEEDS).index):
            need = NEEDS[name]
            value = given.get(need.keyword) if need.keyword is not None else None
            values[name] = need.check(value, mesh, int(bone_count), self)
        out = MethodInputs(
            self,
            mesh,
            int(bone_count),
            values,
            frozenset(
                n
                for n in values
                if NEEDS[n].keyword in given and given[NEEDS[n].keyword] is not None
            ),
        )
        return out if device is None else out.resolved(device)


# -- packers (bones -> shader blocks) ---------------------------------------------------------


def _pack_dqs(bones, bone_count, *, batched, allow_scale, rest_matrices):
    return packing.pack_dqs_pose(bones, bone_count, batched=batched, allow_scale=allow_scale)


def _pack_dqs_scale(bones, bone_count, *, batched, allow_scale, rest_matrices):
    return packing.pack_two_phase(bones, bone_count, batched=batched)


def _pack_lbs(bones, bone_count, *, batched, allow_scale, rest_matrices):
    return packing.pack_lbs(bones, bone_count, batched=batched), None


def _pack_blend(bones, bone_count, *, batched, allow_scale, rest_matrices):
    return packing.pack_rigid_pair(bones, bone_count, "blend", batched=batched)


def _pack_cor(bones, bone_count, *, batched, allow_scale, rest_matrices):
    return packing.pack_rigid_pair(bones, bone_count, "cor", batched=batched)[0], None


def _pack_ddm(bones, bone_count, *, batched, allow_scale, rest_matrices):
    return packing.pack_uniformly_scaled(bones, bone_count, "ddm", batched=batched), None


def _pack_blender(bones, bone_count, *, batched, allow_scale, rest_matrices):
    rest = packing.check_rest_matrices(rest_matrices, bone_count, "dqs_blender")
    return packing.pack_blender(bones, bone_count, rest, batched=batched)


# -- float64 references (the same inputs as the packers) --------------------------------------


def _ref_dqs(p, n, j, w, bones, **_):
    b = np.asarray(bones, dtype=np.float64)
    if b.shape[1:] == (2, 4):
        return reference.skin_dqs(p, n, j, w, b)
    if dq.has_scale(b).any():
        return reference.skin_dqs_scaled(p, n, j, w, *dq.decompose_skinning_matrices(b))
    return reference.skin_dqs(p, n, j, w, dq.from_matrices(b))


def _ref_dqs_scale(p, n, j, w, bones, **_):
    split = dq.decompose_skinning_matrices(as_matrices(bones))
    return reference.skin_dqs_scaled(p, n, j, w, *split)


def _ref_lbs(p, n, j, w, bones, **_):
    return reference.skin_lbs(p, n, j, w, as_matrices(bones))


def _ref_blend(p, n, j, w, bones, *, dqs_blend, **_):
    return reference.skin_blend(p, n, j, w, bones, dqs_blend)


def _ref_cor(p, n, j, w, bones, *, centers, **_):
    if centers is None:
        raise InputError("the CoR reference needs the centers of rotation")
    return reference.skin_cor(p, n, j, w, bones, centers)


def _ref_blender(p, n, j, w, bones, *, rest_matrices, **_):
    return reference.skin_dqs_blender(p, n, j, w, as_matrices(bones), rest_matrices)


def _ref_ddm(p, n, j, w, bones, *, ddm, **_):
    from .ddm.reference import skin_reference

    if ddm is None:
        raise InputError("the DDM reference needs the precomputation (ddm=)")
    return skin_reference(p, n, ddm.omega, as_matrices(bones), ddm.bones, origin=ddm.origin)


def _ref_delta_mush(p, n, j, w, bones, *, delta_mush, base, **kw):
    """Its base's reference (``base``: the base's ``reference_skin``), then the mush."""
    from .delta_mush.reference import delta_mush_reference

    if delta_mush is None:
        raise InputError("the Delta Mush reference needs the bind (delta_mush=)")
    skinned, _ = base(p, n, j, w, bones, delta_mush=None, **kw)
    return delta_mush_reference(delta_mush, skinned)


# -- the registry -----------------------------------------------------------------------------


def _pack_none(bones, bone_count, *, batched, allow_scale, rest_matrices):
    """The pose is validated as DQS's (its block is what the rigid variant's bone binding
    holds; the shaders read none of it), any scale allowed."""
    block, _ = packing.pack_dqs_pose(bones, bone_count, batched=batched, allow_scale=True)
    return block, None


def _ref_none(p, n, j, w, bones, **_):
    """The (morphed) rest vertices: the pose moves nothing."""
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    length = np.linalg.norm(n, axis=-1, keepdims=True)
    return p.copy(), np.divide(n, length, out=np.zeros_like(n), where=length > 0)


#: "No skinning": the registry's entry for the rest mesh drawn rigidly (the renderer's
#: ``method="none"``, the parts of a scene no skin moves, the baseline of the benchmarks). Found
#: by :func:`get` like the others and answering for itself (:attr:`SkinningMethod.skins` is
#: False; its shaders are ``skin_none.vert``'s, vertex path only, which declare the joints and
#: weights inputs and read none, nor any other input); not in :data:`METHODS`, which lists the
#: methods that skin.
NONE = SkinningMethod(
    "none",
    "unskinned",
    (0.6, 0.6, 0.6, 1.0),
    "no skinning: the (morphed) rest mesh, placed by its model matrix",
    "SKIN_NONE",
    _pack_none,
    _ref_none,
    paths=("vertex",),
    scale=True,
    reflection=True,
    collapse=True,
    crowds=False,
    shown=False,
    skins=False,
)

#: The methods that skin with shaders of their own, in the order scenes show them.
_SKINS: tuple[SkinningMethod, ...] = (
    SkinningMethod(
        "lbs",
        "LBS",
        (0.62, 0.22, 0.12, 1.0),
        "linear blend skinning: the weighted sum of the bone matrices",
        "SKIN_LBS",
        _pack_lbs,
        _ref_lbs,
        bone_rows=True,
        scale=True,
        reflection=True,
        collapse=True,
        crowd_scale=True,
        key="2",
        box_rule="affine",
        usdskel="classicLinear",
    ),
    SkinningMethod(
        "dqs",
        "DQS",
        (0.16, 0.36, 0.62, 1.0),
        "dual quaternion skinning (two-phase DQS for bones with scale or shear)",
        None,
        _pack_dqs,
        _ref_dqs,
        scale=True,
        key="1",
        scaled_variant="dqs_scale",
        box_rule="rigid",
        usdskel="dualQuaternion",
    ),
    SkinningMethod(
        "blend",
        "LBS/DQS blend",
        (0.45, 0.22, 0.52, 1.0),
        "LBS and DQS blended per vertex by the mesh's DQS fraction",
        "SKIN_BLEND",
        _pack_blend,
        _ref_blend,
        second_block=True,
        aux=True,
        needs=frozenset({"dqs_blend"}),
        key="4",
        box_rule="mixed",
        usdskel="dualQuaternion",
    ),
    SkinningMethod(
        "cor",
        "CoR",
        (0.18, 0.5, 0.3, 1.0),
        "optimized centers of rotation (Le & Hodgins 2016)",
        "SKIN_COR",
        _pack_cor,
        _ref_cor,
        aux=True,
        needs=frozenset({"centers"}),
        key="5",
        box_rule="about_centers",
    ),
    SkinningMethod(
        "dqs_blender",
        "DQS (Blender)",
        (0.15, 0.5, 0.6, 1.0),
        "Blender's Preserve Volume, exactly (any scale, shear or mirroring)",
        "SKIN_DQS_BLENDER",
        _pack_blender,
        _ref_blender,
        second_block=True,
        needs=frozenset({"rest_matrices"}),
        scale=True,
        reflection=True,
        crowd_scale=True,
        key="6",
    ),
    SkinningMethod(
        "dqs_scale",
        "DQS (two-phase)",
        (0.16, 0.36, 0.62, 1.0),
        "two-phase DQS always (Kavan et al. 2008), also for rigid poses",
        "SKIN_DQS_SCALE",
        _pack_dqs_scale,
        _ref_dqs_scale,
        second_block=True,
        scale=True,
        crowds=False,
        shown=False,
        usdskel="dualQuaternion",
    ),
    SkinningMethod(
        "ddm",
        "DDM",
        (0.55, 0.45, 0.12, 1.0),
        "Direct Delta Mush (Le & Lewis 2019): a rigid transform a vertex, blended from "
        "smoothed weights precomputed by vkdqs.direct_delta_mush",
        "SKIN_DDM",
        _pack_ddm,
        _ref_ddm,
        bone_rows=True,
        needs=frozenset({"ddm_data"}),
        influences=False,
        key="8",
        uniform_scale=True,
    ),
)


def _mushed(
    base: str,
    name: str,
    label: str,
    color: tuple[float, float, float, float],
    summary: str,
    *,
    key: str | None = None,
) -> SkinningMethod:
    """Classic Delta Mush over ``base``: the base's shaders, pose packing and capability rule,
    then the Delta Mush passes (compute path only; no crowds, boxes or USD). Shown in scenes
    (drawn by "compute, then draw") where it has a viewer ``key``; chosen by name only where
    not."""
    skin = next(m for m in _SKINS if m.name == base)
    return skin.followed_by(
        ("vkdqs.methods.delta_mush.passes:DeltaMushPasses.from_inputs",),
        name=name,
        label=label,
        color=color,
        summary=summary,
        reference_skin=_ref_delta_mush,
        needs=frozenset({"delta_mush_data"}),
        key=key,
    )


#: Every skinning method, by name, in the order scenes show them left to right.
METHODS: dict[str, SkinningMethod] = {
    m.name: m
    for m in (
        *_SKINS,
        _mushed(
            "lbs",
            "delta_mush",
            "Delta Mush",
            (0.35, 0.55, 0.45, 1.0),
            "classic Delta Mush (Mancewicz et al. 2014): LBS, then the skinned mesh smoothed "
            "and its rest detail added back, in compute passes",
            key="9",
        ),
        _mushed(
            "dqs",
            "delta_mush_dqs",
            "Delta Mush (DQS)",
            (0.25, 0.5, 0.55, 1.0),
            "classic Delta Mush over DQS (two-phase DQS for bones with scale or shear)",
        ),
        velocity_method(_SKINS[1], "velocity", "Velocity (DQS)", (0.2, 0.42, 0.72, 1.0), key="0"),
        velocity_method(_SKINS[0], "velocity_lbs", "Velocity (LBS)", (0.7, 0.3, 0.18, 1.0)),
    )
}

#: The method of every ``method=`` that is not given.
DEFAULT = "dqs"
#: The DQS fraction a method that needs per-vertex blend values ("blend") gives a mesh without
#: its own (the candy wrapper, a glTF mesh without ``_DQS_BLEND``) when a scene or a bake shows it.
DEFAULT_DQS_BLEND = 0.5
#: ``--method diff``: one copy, posed by DQS, coloured by |DQS - LBS| per vertex (shown alone).
DIFF = "diff"
_DIFF_LABEL = "|DQS - LBS|"
#: What the diff compares: the copy is posed by the first, coloured by its distance to the second.
DIFF_OF = ("dqs", "lbs")
#: ``"both"``: LBS left, DQS right.
BOTH = ("lbs", "dqs")


_BUILT_IN = frozenset(METHODS)


def merge_inputs(
    given: Mapping[str, object], more: Mapping[str, object] | None
) -> dict[str, object]:
    """The keyword arguments ``given`` and an ``inputs=`` mapping ``more`` as one (values by
    keyword); a value given both ways is refused."""
    out = dict(given)
    for key, value in (more or {}).items():
        if not isinstance(key, str):
            raise InputError(f"inputs must be keyed by keyword, got {key!r}")
        if value is None:
            out.setdefault(key, None)
            continue
        if out.get(key) is not None and out[key] is not value:
            raise InputError(f"{key} is given twice (as a keyword and in inputs=)")
        out[key] = value
    return out


def register(method: SkinningMethod) -> SkinningMethod:
    """Add ``method`` to :data:`METHODS`, so every layer takes it by name: a new name, needs
    that :data:`NEEDS` holds (:func:`vkdqs.methods.needs.register`), a registry ``base`` where
    it skins with another method's shaders (a method with shaders of its own needs its
    variants built by ``build_shaders.py``). Returns it."""
    if not isinstance(method, SkinningMethod):
        raise InputError(f"register() takes a SkinningMethod, got {type(method).__name__}")
    if method.name in METHODS or method.name in (DIFF, NONE.name):
        raise InputError(f"a method called {method.name!r} exists")
    unknown = set(method.needs) - set(NEEDS)
    if unknown:
        raise InputError(f"{method.name!r} needs {sorted(unknown)}: register them first")
    if method.base is not None and method.base not in METHODS:
        raise InputError(f"{method.name!r} has base {method.base!r}, not a method")
    if (method.before or method.after) and "vertex" in method.paths:
        raise InputError(f"{method.name!r} has compute passes: its paths must be ('compute',)")
    METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    """Remove a method :func:`register` added (the built-in ones stay)."""
    if name in _BUILT_IN:
        raise InputError(f"{name!r} is a built-in method")
    METHODS.pop(name, None)


def get(name: str) -> SkinningMethod:
    """The method called ``name`` (a method of :data:`METHODS`, or ``"none"``: :data:`NONE`);
    InputError listing the methods for any other name."""
    if name == NONE.name:
        return NONE
    method = METHODS.get(name) if isinstance(name, str) else None
    if method is None:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {name!r}")
    return method


def names() -> tuple[str, ...]:
    """Every method's name, in registry order."""
    return tuple(METHODS)


def shown() -> tuple[SkinningMethod, ...]:
    """The methods scenes show side by side, left to right (``--method all``)."""
    return tuple(m for m in METHODS.values() if m.shown)


def label(name: str) -> str:
    """What a label calls a method's copy ("LBS", "DQS", ... or "|DQS - LBS|" for the diff)."""
    return _DIFF_LABEL if name == DIFF else get(name).label


def parse_methods(methods: str) -> tuple[str, ...]:
    """The methods a ``methods`` string shows, left to right: one shown method, several joined
    by commas (``"lbs,dqs,blend"``), ``"both"`` (LBS and DQS), ``"all"`` (every shown method),
    or ``"diff"`` alone (:data:`DIFF`)."""
    if not isinstance(methods, str):
        raise InputError(f"methods must be a string, got {methods!r}")
    allowed = tuple(m.name for m in shown())
    if methods == DIFF:
        return (DIFF,)
    if DIFF in (m.strip() for m in methods.split(",")):
        raise InputError(
            f"'diff' is shown alone (one copy coloured by |DQS - LBS|), not with other "
            f"methods; got {methods!r}"
        )
    if methods == "both":
        return BOTH
    if methods == "all":
        return allowed
    picked = tuple(m.strip() for m in methods.split(","))
    bad = [m for m in picked if m not in allowed]
    if bad or len(set(picked)) != len(picked):
        why = f"unknown {bad[0]!r}" if bad else "a method repeats"
        if bad and bad[0] in METHODS:  # a method scenes do not show: say why
            hidden = METHODS[bad[0]]
            why = f"{hidden.label} is chosen by name only"
            if hidden.drawn_by_compute:
                why = (
                    f"{hidden.label} is not shown in scenes; Renderer.add_instance("
                    f"method={hidden.name!r}) draws it, vkdqs bake --method {hidden.name} bakes it"
                )
        raise InputError(
            f"methods must be one of {', '.join(allowed)}, several joined by commas, "
            f"'both', 'all' or 'diff'; got {methods!r} ({why})"
        )
    return picked


def select_methods(
    methods: str, skin: SkinTraits | None = None, *, crowd: bool = False
) -> tuple[tuple[str, ...], dict[str, str]]:
    """What ``methods`` shows on ``skin``: ``(the methods, {method left out: why})``.

    ``"all"`` is every shown method that accepts the skin; the others are left out with their
    reason. A method named on its own (or in a list, or ``"both"``) that cannot take the skin
    is an InputError giving the reason. ``"diff"`` needs DQS and LBS.
    """
    picked = parse_methods(methods)
    if skin is None:
        return picked, {}
    needed = DIFF_OF if picked == (DIFF,) else picked
    reasons = {m: why for m in needed if (why := get(m).check(skin, crowd=crowd))}
    if methods == "all":
        kept = tuple(m for m in picked if m not in reasons)
        if not kept:
            raise InputError("no method accepts this skin: " + _reasons(reasons))
        return kept, reasons
    if reasons:
        raise InputError(_reasons(reasons))
    return picked, {}


def _reasons(reasons: Mapping[str, str]) -> str:
    return "; ".join(reasons.values())
