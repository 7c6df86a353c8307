"""Scenes the viewer and ``vkdqs render`` show: the candy wrapper and glTF files.

:class:`CandyWrapperScene` is the embedded default. :class:`GltfScenePlayer` plays a loaded glTF
file (:func:`vkdqs.gltf.load_gltf`). Both follow :class:`ViewerScene`, the small protocol the
viewer drives, so the viewer, ``vkdqs render`` and the docs screenshot show the same frame for the
same twist or animation time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .. import dq, procedural, reference
from .. import methods as registry
from ..clip import AnimationClip
from ..crowd import Crowd, has_own_color, pack_clip
from ..errors import InputError
from ..gltf.parts import ScenePart, scene_parts, skin_matrices, skinning_inputs
from ..material import Material
from ..mesh import SkinnedMesh
from ..methods import DIFF, SkinTraits, parse_methods, select_methods
from ..renderer import SINGULAR_DET, UNSKINNED, Instance, Renderer, RenderMesh

if TYPE_CHECKING:
    from ..gltf import GltfScene

__all__ = [
    "CandyWrapperScene",
    "CrowdScene",
    "GltfScenePlayer",
    "ViewerScene",
    "parse_methods",
]

#: Unskinned (rigid) glTF parts: each side's colour, lightened toward grey.
_GREY = np.array([0.6, 0.6, 0.6, 1.0])
#: The "diff" copy's colour where it is not coloured by |DQS - LBS| (never shown in practice).
DIFF_COLOR = (0.5, 0.5, 0.5, 1.0)


def _color(method: str, rigid: bool = False) -> tuple[float, ...]:
    """A method's tint (the registry's colour), lightened toward grey for rigid parts."""
    rgba = np.array(DIFF_COLOR if method == DIFF else registry.get(method).color)
    return tuple(float(c) for c in (0.5 * rgba + 0.5 * _GREY if rigid else rgba))


def _renderer_method(method: str) -> str:
    """The renderer method drawing a scene method's copy: the diff copy is posed by DQS."""
    return registry.DEFAULT if method == DIFF else method


def _check_methods(methods: str) -> str:
    parse_methods(methods)
    return methods


def _methods_label(shown: tuple[str, ...]) -> str:
    if len(shown) == 1:
        return registry.label(shown[0])
    if len(shown) == 2:
        return f"{registry.label(shown[0])} (left) | {registry.label(shown[1])} (right)"
    return " | ".join(registry.label(m) for m in shown) + " (left to right)"


def _rest_inputs(method: str, bone_count: int) -> dict[str, np.ndarray]:
    """What a method needs of a skeleton whose bones rest at the identity (the candy wrapper):
    identity rest frames for the methods that need them."""
    if "rest_matrices" not in registry.get(method).needs:
        return {}
    return {"rest_matrices": np.tile(np.eye(4), (bone_count, 1, 1))}


def _offsets(shown: tuple[str, ...], spacing: float) -> dict[str, float]:
    """Offset of each method's copy along the placement axis: side by side, centred,
    ``spacing`` apart."""
    return {m: (k - 0.5 * (len(shown) - 1)) * spacing for k, m in enumerate(shown)}


#: Every method a scene may make copies of.
_ALL_METHODS = (*(m.name for m in registry.shown()), DIFF)


class ViewerScene(Protocol):
    """What the viewer needs from a scene.

    Attributes
    ----------
    methods : str
        What :meth:`show` was last asked to show (see :func:`parse_methods`).
    shown_methods : tuple of str
        The copies shown, left to right: ``methods`` less those the scene's skins refuse
        (``"all"`` leaves them out, see :func:`vkdqs.methods.select_methods`).
    left_out : dict of str to str
        The methods ``"all"`` left out, with why.
    bone_count : int
        Bones of the largest skeleton (the heat map's ``[``/``]`` keys stay below it).
    """

    methods: str
    bone_count: int

    def update(self, dt: float) -> None:
        """Advance the animation by ``dt`` seconds (already multiplied by the playback speed)."""

    def scrub(self, direction: int) -> None:
        """Step the animation back (-1) or forward (+1) by one scrub step, for the arrow keys."""

    def step_animation(self, delta: int) -> bool:
        """Switch to the next (+1) or previous (-1) animation; False when there is none."""

    def show(self, methods: str) -> None:
        """Show the methods of ``methods`` (see :func:`parse_methods`) side by side."""

    def frame_camera(self) -> None:
        """Aim the camera at the copies shown, keeping its direction."""

    def label(self) -> str:
        """One line for the window title: method(s) and where the animation is."""


def _upright(x: float) -> np.ndarray:
    """Model matrix standing the cylinder (built along +x) up along +y, centred at x."""
    m = np.eye(4)
    m[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    m[:3, 3] = (x, -1.0, 0.0)  # the mesh spans x in [0, 2]: centre it vertically
    return m


class CandyWrapperScene:
    """Candy-wrapper cylinders twisted about their axis, one per method shown.

    Parameters
    ----------
    renderer : Renderer
    methods : str
        See :func:`parse_methods`: ``"both"``, ``"all"``, ``"dqs"``, ``"lbs,dqs,blend"``, ...
        The "blend" copy uses a DQS fraction of
        :data:`~vkdqs.methods.DEFAULT_DQS_BLEND` everywhere.
    period : float
        Seconds for one back-and-forth (0...180...0 degrees) of :meth:`update`.
    """

    bone_count = 2

    def __init__(self, renderer: Renderer, *, methods: str = "both", period: float = 4.0) -> None:
        self.renderer = renderer
        #: the copies stand side by side along this unit vector (x; stills: the screen's)
        self.axis = np.array([1.0, 0.0, 0.0])
        self._spacing: float | None = None  # set by place(); None: see spacing
        #: |DQS - LBS| on the GPU for the "diff" copy (made when first shown)
        self._diff = None
        #: the colour bar's range (top, largest) of the "diff" copy, once shown
        self.diff_range: tuple[float, float] | None = None
        self.mesh = procedural.candy_wrapper().with_dqs_blend(registry.DEFAULT_DQS_BLEND)
        self.shown_methods: tuple[str, ...] = ()
        self.left_out: dict[str, str] = {}
        self._render_mesh = renderer.add_mesh(self.mesh, label="candy wrapper")
        self.instances: dict[str, Instance] = {}
        for method in registry.BOTH:  # the others when first shown
            self._add_instance(method)
        self.twist = 0.0
        self.bend = 0.0
        self.period = float(period)
        self.phase = 0.0  # seconds into the back-and-forth
        self.show(methods)
        renderer.frame_scene()
        renderer.camera.orbit(0.35, 0.25)
        renderer.camera.zoom(0.85)
        renderer.camera.set_home()

    def _add_instance(self, method: str) -> None:
        renderer_method = _renderer_method(method)
        self.instances[method] = inst = self.renderer.add_instance(
            self._render_mesh,
            bone_count=2,
            method=renderer_method,
            color=_color(method),
            **_rest_inputs(renderer_method, 2),
        )
        if getattr(self, "twist", 0.0) or getattr(self, "bend", 0.0):
            inst.set_pose(self.pose())

    def show(self, methods: str) -> None:
        """The methods of ``methods`` (see :func:`parse_methods`) side by side."""
        shown, self.left_out = select_methods(methods)
        for method in shown:
            if method not in self.instances:
                self._add_instance(method)
        self.methods = methods
        self.shown_methods = shown
        xs = _offsets(shown, self.spacing)
        for method, inst in self.instances.items():
            inst.visible = method in shown
            # hidden copies stand in the middle, inside what frame_scene() frames
            model = _upright(0.0)
            model[:3, 3] += xs.get(method, 0.0) * self.axis
            inst.set_model(model)
        if DIFF in shown and hasattr(self, "twist"):
            self._update_diff()

    def frame_camera(self) -> None:
        """Aim the camera at the copies shown, keeping its direction (R returns here)."""
        corners = []
        lo, hi = self.mesh.bounds
        box = np.array(np.meshgrid(*zip(lo, hi, strict=True), indexing="ij")).reshape(3, -1).T
        box = np.c_[box, np.ones(len(box))]
        posed = np.vstack([box @ bone.T for bone in self.pose()])  # each half's box, posed
        for inst in self.instances.values():
            if inst.visible:
                corners.append((posed @ inst.model.T)[:, :3])
        pts = np.vstack(corners)
        w, h = self.renderer.target.extent
        camera = self.renderer.camera
        camera.frame(pts.min(axis=0), pts.max(axis=0), aspect=(w / h) if h else 1.0)
        camera.zoom(0.85)
        camera.set_home()

    def pose(self) -> np.ndarray:
        """The bones' matrices ``(2, 4, 4)``: :attr:`twist` about the axis, then :attr:`bend`
        (:func:`~vkdqs.procedural.bend_pose`)."""
        return procedural.bend_pose(self.bend) @ procedural.twist_pose(self.twist)

    def set_twist(self, degrees: float) -> None:
        self.twist = float(degrees)
        pose = self.pose()
        for inst in self.instances.values():
            inst.set_pose(pose)
        if DIFF in self.shown_methods:
            self._update_diff()

    def _update_diff(self) -> None:
        """Colour the "diff" copy by |DQS - LBS| of the current pose (GPU compute skinning)."""
        from .stills import DiffColoring

        if self._diff is None:
            self._diff = DiffColoring(self.renderer.device)
        d = self._diff.distances(self.mesh, 2, self.pose())
        top, largest = self._diff.color_range([d])
        self.instances[DIFF].set_scalar(d / top if top > 0 else np.zeros_like(d))
        self.diff_range = (top, largest)

    @property
    def spacing(self) -> float:
        """How far apart the copies stand: 1.8 (2.6 while bent), or what :meth:`place` set."""
        if self._spacing is not None:
            return self._spacing
        return 1.8 if self.bend == 0.0 else 2.6  # bent copies reach sideways

    def place(self, axis: np.ndarray, spacing: float) -> None:
        """Stand the copies side by side ``spacing`` apart along the unit vector ``axis``."""
        self.axis = np.asarray(axis, dtype=np.float64).reshape(3)
        self._spacing = float(spacing)
        self.show(self.methods)

    def pose_points(self) -> np.ndarray:
        """World points ``(K, 3)`` of one copy in the current pose as if it stood at offset
        0: its LBS- and DQS-skinned vertices (float64 reference)."""
        m = self.mesh
        pose = self.pose()
        lbs = reference.skin_lbs(m.positions, m.normals, m.joints, m.weights, pose)[0]
        dqs = reference.skin_dqs(
            m.positions, m.normals, m.joints, m.weights, dq.from_matrices(pose)
        )[0]
        model = _upright(0.0)
        return np.vstack([lbs, dqs]) @ model[:3, :3].T + model[:3, 3]

    def caption(self) -> str:
        """The corner text of stills and the window: where the motion is."""
        bend = f", bend {self.bend:.0f} deg" if self.bend else ""
        return f"candy wrapper: twist {self.twist:.0f} deg{bend}"

    def bone_name(self, bone: int) -> str:
        return f"bone {bone}"

    def close(self) -> None:
        """Release the GPU skinners of the "diff" copy (the renderer keeps the rest)."""
        if self._diff is not None:
            self._diff.close()
            self._diff = None

    def set_bend(self, degrees: float) -> None:
        """Bend the far half ``degrees`` about the joint, in the picture's plane (the copies
        move apart while bent); the twist stays."""
        was_bent = self.bend != 0.0
        self.bend = float(degrees)
        if was_bent != (self.bend != 0.0):
            self.show(self.methods)
        self.set_twist(self.twist)

    def update(self, dt: float) -> None:
        """Twist back and forth, 0...180 degrees, one cycle per ``period`` seconds."""
        self.phase += float(dt)
        self.set_twist(90.0 - 90.0 * math.cos(2.0 * math.pi * self.phase / self.period))

    def scrub(self, direction: int) -> None:
        """Twist by 5 degrees per step, within 0...180."""
        self.set_twist(float(np.clip(self.twist + 5.0 * direction, 0.0, 180.0)))
        # Continue playing from here: the phase of the cosine that gives this twist.
        self.phase = self.period * math.acos(1.0 - self.twist / 90.0) / (2.0 * math.pi)

    def step_animation(self, delta: int) -> bool:
        return False  # one built-in motion

    def label(self) -> str:
        bend = f", bend {self.bend:.0f}°" if self.bend else ""
        return f"{_methods_label(self.shown_methods)}, twist {self.twist:.0f}°{bend}"


# ------------------------------------------------------------------------------------------------
# glTF
# ------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class GltfDraw:
    """One part of a glTF scene (:class:`vkdqs.gltf.parts.ScenePart`: a mesh drawn by a node) as
    :class:`GltfScenePlayer` draws it: one instance per method shown.

    Attributes
    ----------
    part : ScenePart
        What is drawn: ``kind``, ``mesh``, ``skin``, ``node``, ``geometry`` and ``bone_count``
        (also readable on the draw itself).
    instances : dict of str to Instance
        ``{"lbs": ..., "dqs": ...}`` and one per other method once shown; rigid draws use the
        renderer's ``"none"`` method for every copy.
    render_mesh : RenderMesh
        The uploaded geometry.
    """

    part: ScenePart
    instances: dict[str, Instance] = field(default_factory=dict)
    render_mesh: RenderMesh | None = None

    kind = property(lambda self: self.part.kind)
    mesh = property(lambda self: self.part.mesh)
    skin = property(lambda self: self.part.skin)
    node = property(lambda self: self.part.node)
    geometry = property(lambda self: self.part.geometry)
    bone_count = property(lambda self: self.part.bone_count)


def _singular(model: np.ndarray) -> bool:
    """A model matrix Instance.set_model rejects as singular, e.g. a node scaled to 0 (which is
    how exporters hide parts): the player hides that instance instead."""
    return bool(abs(np.linalg.det(model[:3, :3])) < SINGULAR_DET)


#: The one bone of a rigid part's geometry (posed only to carry its morph weights).
_RIGID_POSE = np.eye(4)[None]


def _translation(offset: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = offset
    return m


def _materials_of(scene: GltfScene, mesh: int) -> dict[str, object]:
    """``material`` and ``groups`` for :meth:`Renderer.add_mesh` of a glTF mesh's merged
    primitives (one group per primitive, its material)."""
    groups = scene.mesh_groups(mesh)
    return {
        "material": [g[2] for g in groups],
        "groups": [(first, count, k) for k, (first, count, _) in enumerate(groups)],
    }


def _box_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The 8 corners of ``[lo, hi]`` as homogeneous points, ``[8, 4]``."""
    bits = (np.arange(8)[:, None] >> np.arange(3)) & 1
    return np.c_[np.where(bits, hi, lo), np.ones(8)]


class GltfScenePlayer:
    """Plays a glTF scene in a renderer: LBS on the left and DQS on the right, or one of them.

    Every node with a skin draws its mesh posed with that skin's joint matrices (one LBS and one
    DQS instance per node; each mesh is uploaded once, however many nodes draw it, see
    :func:`vkdqs.gltf.parts.scene_parts`). Every unskinned mesh placed by a node
    (:meth:`GltfScene.rigid_meshes`) is drawn with the renderer's ``"none"`` method and that node's
    global matrix as its model matrix, so parts parented to joints follow them; while that matrix
    is singular (a node scaled to 0, how exporters hide parts) the part is not drawn. With
    ``methods="both"`` the LBS copy is shifted along -x and the DQS copy along +x, half the model's
    width plus a gap each; one method alone is drawn where the file puts it.

    The model's bounds over the current animation (9 times, LBS-skinned on the CPU) set that
    offset and frame the camera, here and in :meth:`set_animation`.

    Parameters
    ----------
    renderer : Renderer
    scene : GltfScene
    methods : str
        See :func:`parse_methods`: ``"both"``, ``"all"``, ``"lbs,dqs,blend"``, ... A "blend"
        copy uses the mesh's ``_DQS_BLEND`` attribute, or :data:`DEFAULT_DQS_BLEND` where the
        mesh has none.
    animation : int, str or None
        Animation index or name to play; None for the rest pose. Default: the first animation,
        or the rest pose when the file has none.
    gap : float
        Space between the two copies, as a fraction of the model's width.

    Notes
    -----
    Per frame (:meth:`set_time`), the node matrices are evaluated once, each skin's joint matrices
    once from them (``global[joints] @ inverse_bind_matrices``, what
    :meth:`GltfScene.skinning_matrices` returns), and each instance gets its pose or model matrix:
    numpy over all nodes and joints at once, loops only over the drawn parts. Only the methods
    shown are posed; :meth:`show` poses the others when they appear.

    Raises
    ------
    InputError
        An animation that does not exist; a mesh the renderer rejects; from :meth:`set_time` and
        :meth:`show`, joint matrices the renderer's DQS rejects (the message names the file and
        the skin, and suggests LBS).
    """

    def __init__(
        self,
        renderer: Renderer,
        scene: GltfScene,
        *,
        methods: str = "both",
        animation: int | str | None = 0,
        gap: float = 0.15,
    ) -> None:
        self.renderer = renderer
        self.scene = scene
        self.gap = float(gap)
        self.time = 0.0
        self.methods = _check_methods(methods)
        if animation == 0 and not scene.animations:
            animation = None
        self.animation: int | None = None if animation is None else self._animation_index(animation)
        self.draws = [GltfDraw(part) for part in scene_parts(scene)]
        name = scene.path.name
        if not self.draws:
            raise InputError(
                f"{name}: nothing to draw (no mesh with triangles is placed by a node)"
            )
        rest = scene.node_global_matrices(None)
        self._rigid_matrix: dict[int, np.ndarray] = {}
        uploaded: dict[int, RenderMesh] = {}  # geometry id -> RenderMesh (one per mesh)
        for draw in self.draws:
            m = scene.meshes[draw.mesh]
            if id(draw.geometry) not in uploaded:
                label = f"{name} mesh {m.index} {m.name}".strip()
                label += " (rigid)" if draw.kind == "rigid" else ""
                uploaded[id(draw.geometry)] = renderer.add_mesh(
                    draw.geometry, label=label, **_materials_of(scene, m.index)
                )
            draw.render_mesh = uploaded[id(draw.geometry)]
            if draw.kind == "rigid":
                self._rigid_matrix[id(draw)] = rest[draw.node]
        skins_used = {d.skin for d in self.draws if d.kind == "skinned"}
        self._skins = sorted(skins_used)
        self.bone_count = max((scene.skins[s].joint_count for s in self._skins), default=1)
        #: what the drawn skins' joint matrices hold (which methods "all" shows)
        self.traits = SkinTraits()
        for s in self._skins:
            self.traits |= scene.skin_traits(s)
        self.shown_methods: tuple[str, ...] = ()
        self.left_out: dict[str, str] = {}
        #: the copies stand side by side along this unit vector (x; stills: the screen's)
        self.axis = np.array([1.0, 0.0, 0.0])
        self._diff = None  # DiffColoring, made when "diff" is first shown
        #: the colour bar's range (top, largest) of the "diff" copy, once shown
        self.diff_range: tuple[float, float] | None = None
        # A model with its own colours keeps them in every copy (labels tell the copies apart);
        # an uncoloured one gets the methods' tints.
        self._own_colors = any(
            draw.geometry.colors is not None
            or any(
                scene.material(p.material).has_own_color for p in scene.meshes[draw.mesh].primitives
            )
            for draw in self.draws
        )
        self._offsets = {m: _translation(np.zeros(3)) for m in _ALL_METHODS}
        #: (id(geometry), method) -> the geometry a method needs uploaded (a DQS fraction added)
        self._method_meshes: dict[tuple[int, str], RenderMesh] = {}
        for method in registry.BOTH:  # the others when first shown
            self._add_instances(method)
        self._measure()
        self.show(methods)
        renderer.camera.yaw, renderer.camera.pitch = 0.25, 0.15
        self.frame_camera()

    # -- animation ---------------------------------------------------------------------------

    def _animation_index(self, animation: int | str) -> int:
        names = [a.name for a in self.scene.animations]
        if isinstance(animation, str) and animation in names:
            return names.index(animation)
        count = len(names)
        if isinstance(animation, (int, np.integer)) and not isinstance(animation, bool):
            if 0 <= animation < count:
                return int(animation)
        have = ", ".join(f"{i} {n!r}" for i, n in enumerate(names)) or "none"
        raise InputError(f"{self.scene.path.name}: no animation {animation!r} (animations: {have})")

    @property
    def duration(self) -> float:
        """Length of the current animation in seconds (0 for the rest pose)."""
        if self.animation is None:
            return 0.0
        return self.scene.animations[self.animation].duration

    def set_animation(self, animation: int | str | None) -> None:
        """Play ``animation`` (index, name, or None for the rest pose) from time 0.

        The copies' spacing and the camera's target and distance follow the new animation's
        bounds; the camera keeps its direction.
        """
        self.animation = None if animation is None else self._animation_index(animation)
        self.time = 0.0
        self._measure()
        self.show(self.methods)
        self.frame_camera()

    def step_animation(self, delta: int) -> bool:
        """Next (+1) or previous (-1) animation, wrapping around; False if the file has none."""
        count = len(self.scene.animations)
        if count == 0:
            return False
        current = -1 if self.animation is None and delta > 0 else (self.animation or 0)
        self.set_animation((current + delta) % count)
        return True

    def set_time(self, time: float) -> None:
        """Pose every shown instance at ``time`` seconds of the current animation.

        Times outside ``[0, duration]`` clamp to the first/last keys (glTF sampling).
        """
        time = float(time)
        if not math.isfinite(time):
            raise InputError(f"time must be finite, got {time!r}")
        self.time = time
        glob = self.scene.node_global_matrices(self.animation, time)
        joint_matrices = skin_matrices(self.scene, self._skins, glob)
        shown = self._shown()
        for draw in self.draws:  # over parts; the work inside is whole arrays
            weights = self._morph_weights(draw, time)
            for method in shown:
                inst = draw.instances[method]
                if draw.kind == "rigid":
                    model = self._offsets[method] @ glob[draw.node]
                    inst.visible = not _singular(model)  # scaled to 0: draw nothing
                    if inst.visible:
                        inst.set_model(model)
                        if weights is not None:  # unskinned morphing parts (faces)
                            inst.set_pose(_RIGID_POSE, morph_weights=weights)
                else:
                    self._set_pose(inst, draw.skin, joint_matrices[draw.skin], weights)
        if DIFF in shown:
            self._update_diff(joint_matrices)

    def _morph_weights(self, draw: GltfDraw, time: float) -> np.ndarray | None:
        """A part's morph weights at ``time``: the animation's for its node, else the node's,
        else the mesh's; None for a mesh without targets."""
        if not draw.geometry.morph_target_count:
            return None
        return self.scene.morph_weights(draw.mesh, draw.node, self.animation, time)

    def _morphed_rest(self, draw: GltfDraw, time: float) -> tuple[np.ndarray, np.ndarray]:
        """The part's rest positions and normals with its morph targets applied at ``time``
        (float64 reference, :func:`vkdqs.reference.morph`), as the GPU skins them."""
        g = draw.geometry
        weights = self._morph_weights(draw, time)
        if weights is None:
            return g.positions, g.normals
        return reference.morph(g.positions, g.normals, g.morph_positions, g.morph_normals, weights)

    def _morphed_bounds(self, draw: GltfDraw, time: float) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) of the part's morphed rest positions at ``time`` (its bounds without
        targets)."""
        if not draw.geometry.morph_target_count:
            return draw.geometry.bounds
        p = self._morphed_rest(draw, time)[0]
        return p.min(axis=0), p.max(axis=0)

    def _update_diff(self, joint_matrices: dict[int, np.ndarray]) -> None:
        """Colour every part of the "diff" copy by |DQS - LBS| of the current pose, each
        skinned part skinned both ways by the GPU's compute path (rigid parts: 0); the
        colour bar's top is the 99th percentile over every drawn vertex."""
        from .stills import DiffColoring

        if self._diff is None:
            self._diff = DiffColoring(self.renderer.device)
        dists = []
        for draw in self.draws:
            if draw.kind == "skinned":
                mats = joint_matrices[draw.skin]
                weights = self._morph_weights(draw, self.time)
                dists.append(self._diff.distances(draw.geometry, draw.bone_count, mats, weights))
            else:
                dists.append(np.zeros(draw.geometry.vertex_count))
        top, largest = self._diff.color_range(dists)
        for draw, d in zip(self.draws, dists, strict=True):
            draw.instances[DIFF].set_scalar(d / top if top > 0 else np.zeros_like(d))
        self.diff_range = (top, largest)

    def place(self, axis: np.ndarray, spacing: float) -> None:
        """Stand the copies side by side ``spacing`` apart along the unit vector ``axis``
        (until the next animation is chosen, which measures the spacing anew)."""
        self.axis = np.asarray(axis, dtype=np.float64).reshape(3)
        self.spacing = float(spacing)
        self.show(self.methods)

    def pose_points(self) -> np.ndarray:
        """World points ``(K, 3)`` of one copy in the current pose as if it stood at offset
        0: each skinned part's LBS- and DQS-skinned vertices (float64 reference; LBS only
        where DQS cannot take the joint matrices) and the corners of each rigid part's box."""
        scene = self.scene
        glob = scene.node_global_matrices(self.animation, self.time)
        mats = skin_matrices(scene, self._skins, glob)
        out = []
        for draw in self.draws:
            g = draw.geometry
            if draw.kind == "skinned":
                m = mats[draw.skin]
                args = (*self._morphed_rest(draw, self.time), g.joints, g.weights)
                out.append(reference.skin_lbs(*args, m)[0])
                if not dq.has_scale(m).any():
                    out.append(reference.skin_dqs(*args, dq.from_matrices(m))[0])
            elif not _singular(glob[draw.node]):
                out.append(
                    (_box_corners(*self._morphed_bounds(draw, self.time)) @ glob[draw.node].T)[
                        :, :3
                    ]
                )
        return np.vstack(out) if out else np.zeros((1, 3))

    def caption(self) -> str:
        """The corner text of stills and the window: the file, the animation and its time."""
        if self.animation is None:
            return f"{self.scene.path.name}: rest pose"
        a = self.scene.animations[self.animation]
        name = a.name or f"animation {self.animation}"
        return f"{self.scene.path.name}: {name}  {self.time:.2f} / {a.duration:.2f} s"

    def bone_name(self, bone: int) -> str:
        """Joint ``bone`` of the first drawn skin: "bone 3 'Hips'"."""
        if not self._skins:
            return f"bone {bone}"
        joints = self.scene.skins[self._skins[0]].joints
        if not 0 <= bone < len(joints):
            return f"bone {bone}"
        name = self.scene.nodes[int(joints[bone])].name
        return f"bone {bone} {name!r}" if name else f"bone {bone}"

    def close(self) -> None:
        """Release the GPU skinners of the "diff" copy (the renderer keeps the rest)."""
        if self._diff is not None:
            self._diff.close()
            self._diff = None

    def _set_pose(
        self,
        inst: Instance,
        skin: int,
        matrices: np.ndarray,
        weights: np.ndarray | None = None,
    ) -> None:
        try:
            inst.set_pose(matrices, morph_weights=weights)
        except InputError as exc:
            takes = [m.name for m in registry.shown() if m.check(matrices) is None]
            raise InputError(
                f"{self.scene.path.name}: skin {skin} ({self.scene.skins[skin].name!r}): "
                f"{registry.label(inst.method)} cannot take its joint matrices: {exc} "
                f"(methods that can: {', '.join(takes) or 'none'})"
            ) from exc

    def _add_instances(self, method: str) -> None:
        """Every draw's copy for ``method``, once (hidden until :meth:`show`)."""
        renderer = self.renderer
        for draw in self.draws:
            if method in draw.instances:
                continue
            rm = draw.render_mesh
            assert rm is not None
            if draw.kind == "rigid":
                matrix = self._rigid_matrix[id(draw)]
                model = None if _singular(matrix) else matrix  # set_time hides it
                inst = renderer.add_instance(
                    rm, bone_count=1, method=UNSKINNED, model=model, color=self._color(draw, method)
                )
            else:
                renderer_method = _renderer_method(method)
                geometry, extra = skinning_inputs(self.scene, draw.part, renderer_method)
                if geometry is not draw.geometry:  # e.g. a DQS fraction: once per mesh
                    key = (id(draw.geometry), renderer_method)
                    if key not in self._method_meshes:
                        self._method_meshes[key] = renderer.add_mesh(
                            geometry,
                            label=f"{rm.label} ({renderer_method})",
                            **_materials_of(self.scene, draw.mesh),
                        )
                    rm = self._method_meshes[key]
                inst = renderer.add_instance(
                    rm,
                    bone_count=draw.bone_count,
                    method=renderer_method,
                    color=self._color(draw, method),
                    **extra,
                )
            inst.visible = False
            draw.instances[method] = inst

    def _color(self, draw: GltfDraw, method: str) -> tuple[float, ...]:
        """The instance colour of a copy: white (the model's own colours) when the file gives
        the part a texture, a base colour or vertex colours anywhere; else the method's tint."""
        if self._own_colors:
            return (1.0, 1.0, 1.0, 1.0)
        return _color(method, draw.kind == "rigid")

    def update(self, dt: float) -> None:
        """Advance by ``dt`` seconds, looping over the animation."""
        duration = self.duration
        if duration > 0.0:
            self.set_time((self.time + float(dt)) % duration)

    def scrub(self, direction: int) -> None:
        """Step by 2% of the animation (at least 1/60 s), within ``[0, duration]``."""
        duration = self.duration
        step = max(duration / 50.0, 1.0 / 60.0)
        self.set_time(float(np.clip(self.time + direction * step, 0.0, duration)))

    # -- layout ------------------------------------------------------------------------------

    def _shown(self) -> tuple[str, ...]:
        return self.shown_methods

    def show(self, methods: str) -> None:
        """Show the methods of ``methods`` (see :func:`parse_methods`; ``"both"``: LBS left,
        DQS right; ``"all"``: every method the drawn skins accept, :attr:`left_out` says why
        the others are not) side by side, and pose them."""
        shown, left_out = select_methods(methods, self.traits)
        for method in shown:
            self._add_instances(method)
        previous = (self.methods, self.shown_methods, self.left_out)
        self.methods, self.shown_methods, self.left_out = methods, shown, left_out
        xs = _offsets(shown, self.spacing)
        self._offsets = {m: _translation(xs.get(m, 0.0) * self.axis) for m in _ALL_METHODS}
        for draw in self.draws:
            for method, inst in draw.instances.items():
                inst.visible = method in self._shown()
                if draw.kind == "skinned":
                    inst.set_model(self._offsets[method])
        try:
            self.set_time(self.time)
        except InputError:
            # a method could not take this file's matrices after all: stay as before.
            self.methods, self.shown_methods, self.left_out = previous
            if previous[0] != methods:
                self.show(previous[0])
            raise

    def shown_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World box around the copies shown (their offsets applied)."""
        lo, hi = self.bounds
        shifts = np.array([self._offsets[m][:3, 3] for m in self._shown()])
        return lo + shifts.min(axis=0), hi + shifts.max(axis=0)

    def frame_camera(self) -> None:
        """Aim the camera at the copies shown (keeping its direction); R in the viewer returns
        here."""
        w, h = self.renderer.target.extent
        self.renderer.camera.frame(*self.shown_bounds(), aspect=(w / h) if h else 1.0)

    def _measure(self) -> None:
        """Bounds of the current animation and the spacing of the two copies."""
        self.bounds = self._model_bounds()
        lo, hi = self.bounds
        self.spacing = (1.0 + self.gap) * max(float(hi[0] - lo[0]), 1e-6)

    def _model_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Box around the model over 9 times of the current animation (or at rest), LBS-skinned.

        Over the whole animation, so the two copies never overlap and stay in the framed view.
        """
        scene = self.scene
        times = [0.0] if self.animation is None else np.linspace(0.0, self.duration, 9)
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for t in times:  # set-up only: 9 poses
            glob = scene.node_global_matrices(self.animation, t)
            for draw in self.draws:
                g = draw.geometry
                if draw.kind == "skinned":
                    mats = skin_matrices(scene, (draw.skin,), glob)[draw.skin]
                    rest = self._morphed_rest(draw, t)
                    pts, _ = reference.skin_lbs(*rest, g.joints, g.weights, mats)
                elif _singular(glob[draw.node]):
                    continue  # hidden at this time
                else:
                    pts = (_box_corners(*self._morphed_bounds(draw, t)) @ glob[draw.node].T)[:, :3]
                lo = np.minimum(lo, pts.min(axis=0))
                hi = np.maximum(hi, pts.max(axis=0))
        if not np.isfinite(lo).all():  # every part hidden all the time
            lo = hi = np.zeros(3)
        return lo, hi

    def label(self) -> str:
        if self.animation is None:
            where = "rest pose"
        else:
            a = self.scene.animations[self.animation]
            where = f"animation {self.animation} {a.name!r} {self.time:.2f}/{a.duration:.2f} s"
        return f"{_methods_label(self.shown_methods)}, {where}"


class CrowdScene:
    """A grid of ``count`` copies of one skinned mesh playing a baked clip out of phase, drawn as
    crowds (:meth:`Renderer.add_crowd`: one instanced draw per method). ``methods="both"`` shows
    an LBS grid on the left and a DQS grid on the right. Follows :class:`ViewerScene`.

    Make one from a glTF file with :meth:`from_gltf` (its first skinned mesh and an animation,
    with its materials) or from the candy wrapper with :meth:`candy_wrapper`. ``material`` and
    ``groups`` are :meth:`Renderer.add_mesh`'s: the copies wear them, white when the mesh has
    colours of its own, else tinted by method. :class:`vkdqs.app.stills.Decorations` labels each
    grid (the viewer's labels).
    """

    def __init__(
        self,
        renderer: Renderer,
        mesh: SkinnedMesh,
        clip: AnimationClip,
        count: int,
        *,
        methods: str = "dqs",
        name: str = "crowd",
        seed: int = 0,
        rest_matrices: np.ndarray | None = None,
        material: Material | Sequence[Material] | None = None,
        groups: Sequence[tuple[int, int, int]] | None = None,
    ) -> None:
        self.renderer = renderer
        self.name = name
        self.clip = clip
        self.count = int(count)
        self.bone_count = clip.joint_count
        self.methods = _check_crowd_methods(methods)
        self._mesh = mesh
        #: (J, 4, 4) bind frames for the "dqs_blender" crowd (None: it cannot be shown)
        self.rest_matrices = rest_matrices
        self._meshes: dict[str, RenderMesh] = {}
        #: the mesh's materials, as :meth:`Renderer.add_mesh` takes them (the copies wear them)
        self._materials = {"material": material, "groups": groups}
        rm = renderer.add_mesh(mesh, label=f"{name} mesh", **self._materials)
        self._meshes["mesh"] = rm
        # a model with its own colours keeps them (labels tell the grids apart); an uncoloured
        # one gets the methods' tints, as GltfScenePlayer's copies
        self._own_colors = has_own_color(rm)
        lo, hi = mesh.bounds
        size = np.maximum(hi - lo, 1e-6)
        self._side = int(np.ceil(np.sqrt(self.count)))
        i = np.arange(self.count)
        # on the ground (xz plane), a little more than a model apart
        self._pitch = 1.3 * max(float(size[0]), float(size[2]))
        self._grid = np.stack([i % self._side, np.zeros(self.count), i // self._side], axis=1)
        self._grid = self._grid * self._pitch
        self._mesh_bounds = (lo, hi)
        rng = np.random.default_rng(seed)
        self._times = rng.uniform(0.0, max(clip.duration, 0.0), self.count)
        self._speeds = rng.uniform(0.85, 1.15, self.count)
        #: the crowds made so far, by method ("lbs" and "dqs" at once, the others when shown)
        self.crowds: dict[str, Crowd] = {}
        #: methods the clip cannot drive (DQS, blend and cor of a clip with scale)
        self._refused: dict[str, str] = {}
        self.left_out: dict[str, str] = {}
        for method in registry.BOTH:
            self._crowd(method)
        self.show(self.methods)
        renderer.camera.yaw, renderer.camera.pitch = 0.35, 0.45
        self.frame_camera()

    @classmethod
    def from_gltf(
        cls,
        renderer: Renderer,
        scene: GltfScene,
        count: int,
        *,
        methods: str = "dqs",
        animation: int | str | None = 0,
        fps: float = 30.0,
    ) -> CrowdScene:
        """The first skinned mesh of ``scene`` playing ``animation`` (default: the first),
        wearing its materials."""
        meshes = [m for m in scene.meshes if m.skin is not None and m.triangle_count > 0]
        if not meshes:
            raise InputError(f"{scene.path.name}: a crowd needs a skinned mesh; this file has none")
        if not scene.animations:
            raise InputError(f"{scene.path.name}: a crowd needs an animation; this file has none")
        m = meshes[0]
        clip = scene.bake_clip(m.skin, 0 if animation is None else animation, fps)
        geometry = scene.skinned_mesh(m.index)
        # bind frames for "dqs_blender": the inverse bind matrices' inverses
        rest = np.linalg.inv(scene.skins[m.skin].inverse_bind_matrices)
        return cls(
            renderer,
            geometry,
            clip,
            count,
            methods=methods,
            name=scene.path.name,
            rest_matrices=rest,
            **_materials_of(scene, m.index),
        )

    @classmethod
    def candy_wrapper(
        cls, renderer: Renderer, count: int, *, methods: str = "dqs", period: float = 4.0
    ) -> CrowdScene:
        """Candy wrappers twisting to 170 degrees and back over ``period`` seconds."""
        angles = 170.0 * np.sin(np.linspace(0.0, np.pi, 31))
        frames = np.stack([procedural.twist_pose(a) for a in angles])
        clip = AnimationClip(frames, (len(angles) - 1) / period)
        mesh = procedural.candy_wrapper()
        rest = np.tile(np.eye(4), (2, 1, 1))  # as CandyWrapperScene's "dqs_blender" copy
        return cls(
            renderer, mesh, clip, count, methods=methods, name="candy wrapper", rest_matrices=rest
        )

    def _crowd(self, method: str) -> Crowd | None:
        """The crowd of ``method``, made on first use; None if the clip cannot drive it."""
        if method in self.crowds:
            return self.crowds[method]
        if method in self._refused:
            return None
        skinning = registry.get(method)
        extra = {}
        if "rest_matrices" in skinning.needs:
            if self.rest_matrices is None:
                self._refused[method] = f"{skinning.label} crowds need the bones' rest matrices"
                return None
            extra["rest_matrices"] = self.rest_matrices
        try:
            pack_clip(self.clip, method, self.rest_matrices if extra else None)
        except InputError as exc:
            # e.g. DQS of a clip with scale: LBS only
            self._refused[method] = f"{skinning.label} crowds refuse this clip: {exc}"
            return None
        rm = self._meshes["mesh"]
        if "dqs_blend" in skinning.needs and self._mesh.dqs_blend is None:
            if method not in self._meshes:  # a DQS fraction for the blend copies' mesh
                self._meshes[method] = self.renderer.add_mesh(
                    self._mesh.with_dqs_blend(registry.DEFAULT_DQS_BLEND),
                    label=f"{self.name} {method}",
                    **self._materials,
                )
            rm = self._meshes[method]
        crowd = self.renderer.add_crowd(
            rm, self.clip, count=self.count, method=method, label=method, **extra
        )
        crowd.set_times(self._times)
        crowd.set_speeds(self._speeds)
        crowd.set_colors((1.0, 1.0, 1.0, 1.0) if self._own_colors else skinning.color)
        self.crowds[method] = crowd
        return crowd

    def _shown(self) -> tuple[str, ...]:
        return tuple(m for m in _crowd_methods_of(self.methods) if m in self.crowds)

    def show(self, methods: str) -> None:
        """Show the grids of ``methods`` side by side (see :func:`parse_methods`; ``"both"``:
        LBS left, DQS right; ``"all"``: every method whose crowds take the clip, the others in
        :attr:`left_out`)."""
        methods = _check_crowd_methods(methods)
        wanted = _crowd_methods_of(methods)
        made = [m for m in wanted if self._crowd(m) is not None]
        if not made:
            raise InputError(f"{self.name}: " + "; ".join(self._refused[m] for m in wanted))
        self.methods = methods
        self.left_out = {m: self._refused[m] for m in wanted if m in self._refused}
        width = self._side * self._pitch
        shown = self._shown()
        for method, crowd in self.crowds.items():
            crowd.visible = method in shown
            shift = 0.0
            if method in shown and len(shown) > 1:  # side by side, 1.1 grid widths apart
                shift = 1.1 * width * (shown.index(method) - 0.5 * (len(shown) - 1))
            models = np.broadcast_to(np.eye(4), (self.count, 4, 4)).copy()
            models[:, :3, 3] = self._grid + np.array([shift - 0.5 * width, 0.0, -0.5 * width])
            crowd.set_models(models)

    def frame_camera(self) -> None:
        w, h = self.renderer.target.extent
        shown = [self.crowds[m].bounds() for m in self._shown()]
        lo = np.min([b[0] for b in shown], axis=0)
        hi = np.max([b[1] for b in shown], axis=0)
        self.renderer.camera.frame(lo, hi, aspect=(w / h) if h else 1.0)

    def update(self, dt: float) -> None:
        for crowd in self.crowds.values():
            crowd.advance(dt)

    def scrub(self, direction: int) -> None:
        self.update(direction * max(self.clip.duration / 50.0, 1.0 / 60.0))

    def step_animation(self, delta: int) -> bool:
        return False

    def label(self) -> str:
        return f"{_methods_label(self._shown())}, a crowd of {self.count} ({self.clip!r})"

    # -- what stills.Decorations labels: one label under each grid shown -----------------------

    @property
    def shown_methods(self) -> tuple[str, ...]:
        """The grids shown, left to right (their labels, in order)."""
        return self._shown()

    @property
    def spacing(self) -> float:
        """How far apart the grids' centres stand along :attr:`axis`."""
        return 1.1 * self._side * self._pitch

    @property
    def axis(self) -> np.ndarray:
        return np.array([1.0, 0.0, 0.0])

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The box of one grid's rest copies, centred as the middle grid stands."""
        width = self._side * self._pitch
        centres = self._grid + np.array([-0.5 * width, 0.0, -0.5 * width])
        lo, hi = self._mesh_bounds
        return centres.min(axis=0) + lo, centres.max(axis=0) + hi

    def pose_points(self) -> np.ndarray:
        lo, hi = self.bounds
        return _box_corners(lo, hi)[:, :3]

    def caption(self) -> str:
        """The corner text of the window: the model and the clip the copies play."""
        return f"{self.name}: {self.count} copies out of phase, {self.clip.duration:.2f} s clip"

    def bone_name(self, bone: int) -> str:
        return f"bone {bone}"


def _crowd_methods_of(methods: str) -> tuple[str, ...]:
    """The crowd methods ``methods`` shows, left to right ("all": every method that draws
    crowds)."""
    if methods == "all":
        return tuple(m.name for m in registry.shown() if m.crowds)
    return parse_methods(methods)


def _check_crowd_methods(methods: str) -> str:
    """Crowds draw the registry's methods that draw crowds, one or several (see
    :func:`parse_methods`), "both" or "all"."""
    bad = [m for m in _crowd_methods_of(methods) if m != DIFF and not registry.get(m).crowds]
    if bad or methods == DIFF:
        crowd = ", ".join(m.name for m in registry.shown() if m.crowds)
        raise InputError(
            f"a crowd shows {crowd} (several joined by commas), 'both' or "
            f"'all'; not {(bad or [methods])[0]!r} (got {methods!r})"
        )
    return methods
