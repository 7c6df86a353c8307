"""A loaded glTF file played in a renderer: one copy of every part per method shown."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ... import dq, reference
from ... import methods as registry
from ...engine.drawables import SINGULAR_DET, Instance, RenderMesh
from ...engine.passes import MOTION_STEP
from ...engine.renderer import Renderer
from ...errors import InputError
from ...gltf.parts import ScenePart, scene_parts, skin_matrices, skinning_inputs
from ...methods import DIFF, SkinTraits, select_methods
from .common import (
    ALL_METHODS,
    box_corners,
    check_methods,
    materials_of,
    methods_label,
    offsets,
    renderer_method,
    tint,
)

if TYPE_CHECKING:
    from ...gltf import GltfScene


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


#: Poses a second over the clip the player's bounds are measured at (exact GPU boxes), the
#: most poses measured, and the most vertices skinned for them per method (a large model gets
#: fewer times, at least 9).
BOUND_FPS = 30.0
BOUND_SAMPLES = 240
BOUND_VERTICES = 4_000_000


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

    The model's bounds over the current animation set that offset and frame the camera, here
    and in :meth:`set_animation`: exact boxes from the GPU (:meth:`Renderer.posed_boxes`) of each
    copy's method at the clip's times (:data:`BOUND_FPS` a second, at most
    :data:`BOUND_SAMPLES`).

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
        #: velocity skinning's copies: their velocities times this (the viewer's V keys)
        self.motion_scale = 1.0
        self.methods = check_methods(methods)
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
                    draw.geometry, label=label, **materials_of(scene, m.index)
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
        self._offsets = {m: _translation(np.zeros(3)) for m in ALL_METHODS}
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
        before = None  # the joints MOTION_STEP earlier, for copies that move with the motion
        if any(i.reads_motion for d in self.draws for m, i in d.instances.items() if m in shown):
            earlier = self.scene.node_global_matrices(self.animation, time - MOTION_STEP)
            before = skin_matrices(self.scene, self._skins, earlier)
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
                    motion = {}
                    if before is not None and inst.reads_motion:
                        dt = MOTION_STEP / self.motion_scale
                        motion = {"previous": before[draw.skin], "dt": dt}
                    self._set_pose(inst, draw.skin, joint_matrices[draw.skin], weights, motion)
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
        from ..stills import DiffColoring

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
                    (box_corners(*self._morphed_bounds(draw, self.time)) @ glob[draw.node].T)[:, :3]
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
        motion: dict | None = None,
    ) -> None:
        try:
            inst.set_pose(matrices, morph_weights=weights, **(motion or {}))
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
                    rm,
                    bone_count=1,
                    method=registry.NONE.name,
                    model=model,
                    color=self._color(draw, method),
                )
            else:
                drawn_by = renderer_method(method)
                geometry, extra = skinning_inputs(self.scene, draw.part, drawn_by)
                if geometry is not draw.geometry:  # e.g. a DQS fraction: once per mesh
                    key = (id(draw.geometry), drawn_by)
                    if key not in self._method_meshes:
                        self._method_meshes[key] = renderer.add_mesh(
                            geometry,
                            label=f"{rm.label} ({drawn_by})",
                            **materials_of(self.scene, draw.mesh),
                        )
                    rm = self._method_meshes[key]
                inst = renderer.add_instance(
                    rm,
                    bone_count=draw.bone_count,
                    method=drawn_by,
                    color=self._color(draw, method),
                    inputs=extra,
                )
            inst.visible = False
            draw.instances[method] = inst

    def _color(self, draw: GltfDraw, method: str) -> tuple[float, ...]:
        """The instance colour of a copy: white (the model's own colours) when the file gives
        the part a texture, a base colour or vertex colours anywhere; else the method's tint."""
        if self._own_colors:
            return (1.0, 1.0, 1.0, 1.0)
        return tint(method, draw.kind == "rigid")

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
        xs = offsets(shown, self.spacing)
        self._offsets = {m: _translation(xs.get(m, 0.0) * self.axis) for m in ALL_METHODS}
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
        """Box around the model over the current animation (or at rest): each skinned part's
        exact boxes from the GPU, posed by every method it is drawn with, at
        :meth:`_bound_times`; rigid parts' boxes placed by their node.

        Over the whole animation, so the copies never overlap and stay in the framed view.
        """
        scene = self.scene
        times = self._bound_times()
        globs = [scene.node_global_matrices(self.animation, t) for t in times]  # over times
        boxes = []
        for draw in self.draws:  # over parts; the poses of each are one batch
            if draw.kind == "skinned":
                mats = np.stack([skin_matrices(scene, (draw.skin,), g)[draw.skin] for g in globs])
                weights = (
                    np.stack([self._morph_weights(draw, t) for t in times])
                    if draw.geometry.morph_target_count
                    else None
                )
                for method, inst in draw.instances.items():  # the copies' methods
                    if method not in registry.METHODS:
                        continue  # "diff": posed as its first method
                    try:
                        box = self.renderer.posed_boxes(inst, mats, weights)
                    except InputError:
                        continue  # a pose the method cannot take: that copy is not shown
                    boxes.append(box.reshape(-1, 3))
            else:
                for t, glob in zip(times, globs, strict=True):  # over times
                    if _singular(glob[draw.node]):
                        continue  # hidden at this time
                    corners = box_corners(*self._morphed_bounds(draw, t)) @ glob[draw.node].T
                    boxes.append(corners[:, :3])
        if not boxes:  # every part hidden all the time
            return np.zeros(3), np.zeros(3)
        pts = np.concatenate(boxes)
        pts = pts[np.isfinite(pts).all(axis=1)]
        if not len(pts):
            return np.zeros(3), np.zeros(3)
        return pts.min(axis=0), pts.max(axis=0)

    def _bound_times(self) -> np.ndarray:
        """The times the bounds are measured at: the clip at :data:`BOUND_FPS` (both ends
        included), at most :data:`BOUND_SAMPLES` of them and :data:`BOUND_VERTICES` skinned
        vertices in all (at least 9 times); 0 at rest."""
        if self.animation is None:
            return np.zeros(1)
        vertices = sum(d.geometry.vertex_count for d in self.draws if d.kind == "skinned")
        count = min(
            BOUND_SAMPLES,
            math.ceil(self.duration * BOUND_FPS) + 1,
            max(9, BOUND_VERTICES // max(vertices, 1)),
        )
        return np.linspace(0.0, self.duration, max(count, 2))

    def label(self) -> str:
        """One line for the window title: the methods shown and the animation with its time
        (or the rest pose)."""
        if self.animation is None:
            where = "rest pose"
        else:
            a = self.scene.animations[self.animation]
            where = f"animation {self.animation} {a.name!r} {self.time:.2f}/{a.duration:.2f} s"
        return f"{methods_label(self.shown_methods)}, {where}"
