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
from ..errors import InputError

if TYPE_CHECKING:
    from ..mesh import SkinnedMesh
    from .ddm.reference import DirectDeltaMush
    from .delta_mush.reference import DeltaMush

__all__ = [
    "BOTH",
    "DEFAULT",
    "DEFAULT_DQS_BLEND",
    "DIFF",
    "DIFF_OF",
    "METHODS",
    "NEEDS",
    "SkinTraits",
    "SkinningMethod",
    "get",
    "label",
    "names",
    "parse_methods",
    "select_methods",
    "shown",
]

#: What a method may need besides the mesh and the pose: per-vertex centers of rotation
#: ("centers", computed on the GPU when not given), each bone's rest frame ("rest_matrices",
#: from a glTF skin: the inverse bind matrices' inverses), per-vertex LBS/DQS blend weights
#: ("dqs_blend", ``SkinnedMesh.dqs_blend``), a Direct Delta Mush precomputation ("ddm_data",
#: the ``ddm=`` argument, :class:`vkdqs.methods.ddm.reference.DirectDeltaMush`: each vertex's Ω and
#: bones, read in place of its joints and weights), a classic Delta Mush bind ("delta_mush_data",
#: the ``delta_mush=`` argument, :class:`vkdqs.methods.delta_mush.reference.DeltaMush`: the edge
#: graph, frames and offsets its compute passes after the skinning read).
NEEDS = ("centers", "rest_matrices", "dqs_blend", "ddm_data", "delta_mush_data")
#: Why a method with one of these needs cannot run on the vertex shader (what
#: :meth:`SkinningMethod.check_path` says).
VERTEX_LACKS = {
    "delta_mush_data": "it smooths the skinned mesh over its edges in compute passes after the "
    "skinning: a vertex needs its neighbours' skinned positions, which a vertex shader does not "
    "have",
}
#: Why crowds do not draw a method with one of these needs (what :meth:`SkinningMethod.check`
#: and :meth:`SkinningMethod.check_crowds` say), before what its shaders' path lacks.
CROWD_LACKS = {
    "delta_mush_data": "a crowd draws all its copies in one instanced draw, and every copy "
    "would need its own smoothing passes over the whole mesh each frame",
}
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
        (:mod:`vkdqs.engine.bone_boxes`): ``"affine"``, ``"rigid"``, ``"blend"``, ``"centers"``;
        None where no cheap bound is proved (the exact box from the GPU is used).
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
        centers: ArrayLike | None = None,
        rest_matrices: ArrayLike | None = None,
        morph_weights: ArrayLike | None = None,
        ddm: DirectDeltaMush | None = None,
        delta_mush: DeltaMush | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The float64 positions and normals its shaders compute for ``mesh`` posed by one pose
        ``bones`` (the inputs :meth:`pack` takes), morph targets applied first (a method that
        needs "ddm_data" moves each vertex by its morph delta in the frame its Ω is about: the
        smoothing stays that of the rest mesh). A method that needs "delta_mush_data" smooths
        its base's skinned mesh with ``delta_mush`` (the bind of the rest mesh; the Skinner's
        default, :func:`vkdqs.methods.delta_mush.reference.mesh_delta_mush`, when None)."""
        if "delta_mush_data" in self.needs and delta_mush is None:
            from .delta_mush.reference import mesh_delta_mush

            delta_mush = mesh_delta_mush(mesh)
        p, n = mesh.positions, mesh.normals
        if morph_weights is not None:
            p, n = reference.morph(p, n, mesh.morph_positions, mesh.morph_normals, morph_weights)
        return self.reference_skin(
            p,
            n,
            mesh.joints,
            mesh.weights,
            bones,
            centers=centers,
            rest_matrices=rest_matrices,
            dqs_blend=mesh.dqs_blend,
            ddm=ddm,
            delta_mush=delta_mush,
            base=None if self.base is None else get(self.base).reference_skin,
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
        if "rest_matrices" in self.needs and not traits.rest_frames:
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
        (:data:`CROWD_LACKS`), then what the vertex shader crowds draw with lacks
        (:meth:`check_path`)."""
        if self.crowds:
            return None
        lacks = [CROWD_LACKS[n] for n in sorted(self.needs) if n in CROWD_LACKS]
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
        lacks = [VERTEX_LACKS[n] for n in sorted(self.needs) if n in VERTEX_LACKS]
        what = f" ({'; '.join(lacks)})" if lacks else ""
        return (
            f"{self.label} runs on the {' and '.join(self.paths)} path only{what}, not "
            f"path={path!r}: crowds draw with the vertex shader; skin it with "
            "Skinner(path='compute'), draw it as a Renderer instance, or bake it"
        )

    # -- what else it needs -----------------------------------------------------------------

    def check_inputs(
        self,
        mesh: SkinnedMesh,
        bone_count: int,
        *,
        centers: object = None,
        rest_matrices: object = None,
        ddm: object = None,
        delta_mush: object = None,
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Validate what this method needs beyond the mesh and pose, and refuse what it does
        not take: ``(centers (N, 3) float32 or None, rest_matrices (B, 4, 4) float64 or
        None)``. Centers it needs but was not given stay None: the caller computes them on its
        device (:func:`vkdqs.centers_of_rotation`). ``ddm``: a
        :class:`~vkdqs.methods.ddm.reference.DirectDeltaMush` of ``mesh`` (checked, kept by the
        caller); one it needs but was not given the caller likewise computes
        (:func:`vkdqs.methods.ddm.gpu.mesh_ddm`). ``delta_mush``: a
        :class:`~vkdqs.methods.delta_mush.reference.DeltaMush` bind of ``mesh`` (checked; one not
        given: :func:`vkdqs.methods.delta_mush.reference.mesh_delta_mush`)."""
        given_inputs = (
            ("centers", "centers", centers),
            ("rest_matrices", "rest_matrices", rest_matrices),
            ("ddm_data", "ddm", ddm),
            ("delta_mush_data", "delta_mush", delta_mush),
        )
        for need, arg, given in given_inputs:
            if given is not None and need not in self.needs:
                users = " or ".join(repr(m.name) for m in METHODS.values() if need in m.needs)
                raise InputError(f"{arg} are for method={users}, not {self.name!r}")
        if "dqs_blend" in self.needs and mesh.dqs_blend is None:
            raise InputError(
                f"method={self.name!r} needs per-vertex DQS blend values: "
                "SkinnedMesh(..., dqs_blend=b) with b of shape (N,) in [0, 1]"
            )
        if "rest_matrices" in self.needs:
            rest_matrices = packing.check_rest_matrices(rest_matrices, bone_count, self.name)
        if "ddm_data" in self.needs and ddm is not None:
            check_ddm(ddm, mesh, bone_count, self.name)
        if "delta_mush_data" in self.needs:
            if delta_mush is not None:
                check_delta_mush(delta_mush, mesh, self.name)
            elif mesh.indices is None:
                raise InputError(
                    f"method={self.name!r} (Delta Mush) needs the mesh's triangles (indices): "
                    "it smooths over their edges, and the mesh has none"
                )
        if centers is not None:
            centers = packing.check_centers(mesh.vertex_count, centers)
        return centers, rest_matrices  # type: ignore[return-value]


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


def as_matrices(bones: ArrayLike) -> NDArray[np.float64]:
    """([P,] B, 4, 4) float64 matrices of ([P,] B, 4, 4) / (3, 4) matrices or (2, 4) DQs."""
    b = np.asarray(bones, dtype=np.float64)
    if b.ndim >= 3 and b.shape[-2:] == (2, 4):
        return dq.to_matrices(dq.normalize(b))
    if b.ndim >= 3 and b.shape[-2:] == (3, 4):
        bottom = np.broadcast_to([0.0, 0.0, 0.0, 1.0], (*b.shape[:-2], 1, 4))
        return np.concatenate([b, bottom], axis=-2)
    return b


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
        box_rule="blend",
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
        box_rule="centers",
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
    return dataclasses.replace(
        skin,
        name=name,
        label=label,
        color=color,
        summary=summary,
        reference_skin=_ref_delta_mush,
        needs=skin.needs | {"delta_mush_data"},
        paths=("compute",),
        crowds=False,
        crowd_scale=False,
        shown=key is not None,
        key=key,
        box_rule=None,
        usdskel=None,
        base=base,
    )


#: Every skinning method, by name, in the order scenes show them left to right.
METHODS: Mapping[str, SkinningMethod] = {
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


def get(name: str) -> SkinningMethod:
    """The method called ``name``; InputError listing the methods for any other name."""
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
