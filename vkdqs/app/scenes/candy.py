"""The candy-wrapper cylinders twisted (and bent) about their joint: the embedded default."""

from __future__ import annotations

import math

import numpy as np

from ... import dq, procedural, reference
from ... import methods as registry
from ...engine.drawables import Instance
from ...engine.passes import MOTION_STEP
from ...engine.renderer import Renderer
from ...methods import DIFF, select_methods
from ..compare import rest_inputs
from .common import methods_label, offsets, renderer_method, tint


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
        #: velocity skinning's copies: their velocities times this (the viewer's V keys)
        self.motion_scale = 1.0
        self.show(methods)
        renderer.frame_scene()
        renderer.camera.orbit(0.35, 0.25)
        renderer.camera.zoom(0.85)
        renderer.camera.set_home()

    def _add_instance(self, method: str) -> None:
        drawn_by = renderer_method(method)
        self.instances[method] = inst = self.renderer.add_instance(
            self._render_mesh,
            bone_count=2,
            method=drawn_by,
            color=tint(method),
            inputs=rest_inputs(drawn_by, self.mesh, 2),
        )
        if getattr(self, "twist", 0.0) or getattr(self, "bend", 0.0):
            inst.set_pose(self.pose(), **self._motion(inst))

    def show(self, methods: str) -> None:
        """The methods of ``methods`` (see :func:`parse_methods`) side by side."""
        shown, self.left_out = select_methods(methods)
        for method in shown:
            if method not in self.instances:
                self._add_instance(method)
        self.methods = methods
        self.shown_methods = shown
        xs = offsets(shown, self.spacing)
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

    def _motion(self, inst: Instance) -> dict[str, object]:
        """``previous=`` and ``dt=`` for a copy that moves with the motion (velocity skinning):
        the pose MOTION_STEP earlier on :meth:`update`'s twist, at its rate now (also while
        paused or scrubbed), the velocities scaled by :attr:`motion_scale`; {} for the rest."""
        if not inst.reads_motion:
            return {}
        omega = 2.0 * math.pi / self.period
        rate = 90.0 * omega * math.sin(omega * self.phase)  # degrees a second
        before = procedural.bend_pose(self.bend) @ procedural.twist_pose(
            self.twist - rate * MOTION_STEP
        )
        return {"previous": before, "dt": MOTION_STEP / self.motion_scale}

    def set_twist(self, degrees: float) -> None:
        """Pose every copy twisted ``degrees`` about the cylinder's axis (the bend stays) and
        colour the "diff" copy again when it is shown."""
        self.twist = float(degrees)
        pose = self.pose()
        for inst in self.instances.values():
            inst.set_pose(pose, **self._motion(inst))
        if DIFF in self.shown_methods:
            self._update_diff()

    def _update_diff(self) -> None:
        """Colour the "diff" copy by |DQS - LBS| of the current pose (GPU compute skinning)."""
        from ..stills import DiffColoring

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
        """``"bone 0"`` or ``"bone 1"`` (the heat map's title): the wrapper's bones have no
        names."""
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
        """Twist by 5 degrees per step, within 0...180; playing goes on from there, in the
        direction it was going (twisting or untwisting)."""
        untwisting = (self.phase % self.period) > 0.5 * self.period
        self.set_twist(float(np.clip(self.twist + 5.0 * direction, 0.0, 180.0)))
        # Continue playing from here: the phase of the cosine that gives this twist, on the
        # rising half of the cycle or the falling one.
        rising = self.period * math.acos(1.0 - self.twist / 90.0) / (2.0 * math.pi)
        self.phase = self.period - rising if untwisting else rising

    def step_animation(self, delta: int) -> bool:
        """False: the twist is the scene's only motion."""
        return False  # one built-in motion

    def label(self) -> str:
        """One line for the window title: the methods shown, the twist and the bend."""
        bend = f", bend {self.bend:.0f}°" if self.bend else ""
        return f"{methods_label(self.shown_methods)}, twist {self.twist:.0f}°{bend}"
