"""What makes a still (``vkdqs render``) or a viewer frame worth showing, on top of a scene.

* :func:`frame_still`: the copies of the pose being drawn side by side along the screen's
  horizontal axis with a small gap, and the camera moved so the group fills the frame
  (:meth:`Camera.fit <vkdqs.camera.Camera.fit>`, the tightest perspective fit of the posed
  vertices, not a bounding sphere of the animation's sweep).
* :class:`DiffColoring`: |DQS - LBS| per vertex of a pose, both skinned by the
  :class:`~vkdqs.engine.skinner.Skinner`'s compute path, for ``--method diff``.
* :func:`scene_overlay`: the labels (method per copy, the animation and its time, the heat map's
  colour bar and bone, the diff's colour bar in model units) as an RGBA image for
  :meth:`Renderer.set_overlay <vkdqs.engine.renderer.Renderer.set_overlay>`.
* :class:`FloorGrid`: a grid of thin quads under the copies, an unskinned instance, to help read
  the pose.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .. import methods as registry
from ..errors import InputError
from ..mesh import SkinnedMesh
from ..methods import DIFF
from .overlay import ColorBar, Label, bar_band, compose, copy_label_anchors, label_band

if TYPE_CHECKING:
    from ..engine.drawables import Instance
    from ..engine.renderer import Renderer
    from ..gpu import Device

__all__ = [
    "DIFF_PERCENTILE",
    "Decorations",
    "DiffColoring",
    "FloorGrid",
    "floor_grid_mesh",
    "frame_still",
    "render_still",
    "scene_overlay",
]

#: The diff colour bar's top: this percentile of |DQS - LBS| over every drawn vertex (robust to
#: a few extreme vertices; the largest value is printed in the bar's title).
DIFF_PERCENTILE = 99.0
#: Space between two copies of a still, as a fraction of a copy's width on screen.
STILL_GAP = 0.12
#: The vertical field of view of stills, degrees (the viewer's camera keeps its 40).
STILL_FOV_Y = 20.0


class DiffColoring:
    """|DQS - LBS| per vertex on the GPU: one DQS and one LBS :class:`~vkdqs.engine.skinner.Skinner`
    per (mesh, bone count), made on first use and kept until :meth:`close`."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self._skinners: dict[tuple[int, int, str], Any] = {}
        self._meshes: dict[int, SkinnedMesh] = {}  # keeps each keyed mesh (and its id) alive

    def _skinner(self, mesh: SkinnedMesh, bone_count: int, method: str) -> Any:
        from ..engine.skinner import Skinner

        key = (id(mesh), int(bone_count), method)
        if key not in self._skinners:
            self._meshes[id(mesh)] = mesh
            self._skinners[key] = Skinner(
                self.device, mesh, bone_count=bone_count, method=method, path="compute"
            )
        return self._skinners[key]

    def distances(
        self,
        mesh: SkinnedMesh,
        bone_count: int,
        matrices: NDArray,
        morph_weights: NDArray | None = None,
    ) -> NDArray[np.float64]:
        """``(N,)`` distances between the DQS- and LBS-skinned positions of ``mesh`` under the
        joint matrices ``(B, 4, 4)`` (two-phase DQS where they carry scale), its morph targets
        weighted by ``morph_weights`` ``(M,)`` first, in the matrices' output units (world
        units for glTF skins)."""
        a, b = (
            self._skinner(mesh, bone_count, m).skin(matrices, morph_weights=morph_weights)[0]
            for m in registry.DIFF_OF
        )
        return np.linalg.norm(a.astype(np.float64) - b.astype(np.float64), axis=1)

    @staticmethod
    def color_range(distances: Sequence[NDArray]) -> tuple[float, float]:
        """(top, largest): the colour bar's top (:data:`DIFF_PERCENTILE` of every value) and
        the largest value."""
        d = np.concatenate([np.asarray(x, dtype=np.float64).reshape(-1) for x in distances])
        if d.size == 0:
            return 0.0, 0.0
        return float(np.percentile(d, DIFF_PERCENTILE)), float(d.max())

    def close(self) -> None:
        """Close the skinners made so far and let go of their meshes. Safe to call twice."""
        for skinner in self._skinners.values():
            skinner.close()
        self._skinners.clear()
        self._meshes.clear()


def _shown(scene: Any) -> tuple[str, ...]:
    """The copies a scene shows, left to right (every scene keeps ``shown_methods``)."""
    return tuple(scene.shown_methods)


def frame_still(
    scene: Any,
    *,
    gap: float = STILL_GAP,
    margin: float = 1.04,
    labels: bool = True,
    fov_y_deg: float = STILL_FOV_Y,
) -> None:
    """Frame the pose ``scene`` draws now (a :class:`~vkdqs.app.scenes.GltfScenePlayer` or
    :class:`~vkdqs.app.scenes.CandyWrapperScene`): its copies side by side along the camera's
    horizontal axis, ``gap`` (a fraction of a copy's width) apart, and the camera, keeping its
    direction, at the tightest distance where every copy's posed vertices fit (``margin``),
    leaving a band of text at the top and bottom for the labels and, for the diff copy, room
    for its colour bar at the sides (``labels``). A narrower field
    of view than the viewer's (``fov_y_deg``) keeps copies side by side from looking turned
    against each other by perspective."""
    camera = scene.renderer.camera
    camera.fov_y_deg = float(fov_y_deg)
    right = camera.basis()[0]
    points = scene.pose_points()
    along = points @ right
    spacing = (1.0 + gap) * max(float(along.max() - along.min()), 1e-6)
    w, h = scene.renderer.target.extent
    w, h = max(w, 1), max(h, 1)
    margin_x = margin_y = margin
    if labels:
        margin_y = margin * h / max(h - 2.0 * label_band(h), 0.5 * h)
        if DIFF in _shown(scene):  # the colour bar at the right edge
            margin_x = margin * w / max(w - 2.0 * bar_band(w, h), 0.5 * w)
    # Perspective makes the near side of each copy look wider than the spacing measured in
    # the world: widen the spacing until the gap on screen is `gap` of a copy's width there.
    for _ in range(6):
        scene.place(right, spacing)
        copies = copy_points(scene, points)
        camera.fit(np.vstack(copies), aspect=w / h, margin=margin_x, margin_y=margin_y)
        if len(copies) < 2:
            break
        xs = [camera.project(c, w, h)[:, 0] for c in copies]
        widths = np.array([x.max() - x.min() for x in xs])
        gaps = np.array([b.min() - a.max() for a, b in itertools.pairwise(xs)])
        pitch = float(np.mean([b.mean() - a.mean() for a, b in itertools.pairwise(xs)]))
        need = gap * float(widths.mean()) - float(gaps.min())
        if need <= 0.02 * float(widths.mean()) or pitch <= 0:
            break
        spacing *= 1.0 + need / pitch


class StillWarning(UserWarning):
    """A still shows nothing of the model (its faces point away, or it lies outside the view)."""


def _srgb(linear: NDArray) -> NDArray:
    """8-bit sRGB of linear values in [0, 1], as an sRGB render target stores them."""
    c = np.clip(np.asarray(linear, np.float64), 0.0, 1.0)
    return np.round(255 * np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055))


def copies_visible(renderer: Renderer) -> bool:
    """Whether a frame of ``renderer``'s instances alone (no overlay) covers any pixel: a model
    whose faces all point away from the camera, or that lies outside the view, draws none."""
    overlay = renderer.overlay
    renderer.set_overlay(None)
    try:
        image = renderer.render_image()
    finally:
        if overlay is not None:
            renderer.set_overlay(overlay)
    background = _srgb(renderer.clear_color[:3])
    return bool((np.abs(image[..., :3].astype(np.int16) - background) > 1).any())


def render_still(scene: Any, *, labels: bool = True, grid: bool = True) -> NDArray[np.uint8]:
    """The still of ``scene``'s current pose, as ``vkdqs render`` makes it: framed
    (:func:`frame_still`), on a floor grid (``grid``), labelled (``labels``); ``(H, W, 4)``
    uint8 from the scene's renderer (an offscreen target). A :class:`StillWarning` says when no
    copy covers a pixel (:func:`copies_visible`): faces that all point away from the camera
    are culled, as the glTF viewers cull single-sided materials."""
    renderer = scene.renderer
    frame_still(scene, labels=labels)
    if not copies_visible(renderer):
        warnings.warn(
            "nothing of the model is visible in the still: its faces point away from the camera "
            "(single-sided materials are culled) or it lies outside the view",
            StillWarning,
            stacklevel=2,
        )
    floor = FloorGrid(renderer) if grid else None
    if floor is not None:
        floor.place(np.vstack(copy_points(scene)))
    renderer.set_overlay(scene_overlay(scene) if labels else None)
    try:
        return renderer.render_image()
    finally:
        if floor is not None:
            renderer.remove_instance(floor.instance)


def copy_points(scene: Any, points: NDArray | None = None) -> list[NDArray]:
    """Each shown copy's points (``scene.pose_points()`` moved by the copy's offset), left to
    right."""
    p = scene.pose_points() if points is None else points
    shown = _shown(scene)
    ks = np.arange(len(shown)) - 0.5 * (len(shown) - 1)
    return [p + k * scene.spacing * scene.axis for k in ks]


def scene_overlay(scene: Any, *, points: NDArray | None = None) -> NDArray[np.uint8]:
    """The labels of ``scene``'s current frame for its renderer's target size: the method under
    each copy, the caption (animation and time) in the corner, and a colour bar for the bone
    heat map (0..1, the bone's name) or the diff copy (0..top in model units)."""
    renderer = scene.renderer
    size = renderer.target.extent
    shown = _shown(scene)
    anchors = copy_label_anchors(renderer.camera, copy_points(scene, points), size)
    labels = [Label(registry.label(m), x, y) for m, (x, y) in zip(shown, anchors, strict=True)]
    bar = None
    if renderer.debug_bone is not None:
        bar = ColorBar(f"weight of {scene.bone_name(renderer.debug_bone)}", 0.0, 1.0, fmt="{:.2g}")
    elif DIFF in shown and scene.diff_range is not None:
        top, largest = scene.diff_range
        bar = ColorBar(f"|DQS - LBS|, model units (max {largest:.3g})", 0.0, top, fmt="{:.3g}")
    return compose(size, labels=labels, caption=scene.caption(), bar=bar)


# -- the floor grid ------------------------------------------------------------------------------


def floor_grid_mesh(lines: int = 13, width: float = 0.0016) -> SkinnedMesh:
    """A flat grid in the xz plane at y = 0 spanning [-0.5, 0.5]: ``lines`` thin quads each way,
    ``width`` wide, facing +y (bound rigidly to bone 0)."""
    if lines < 2:
        raise InputError(f"a grid needs at least 2 lines, got {lines}")
    c = np.linspace(-0.5, 0.5, lines)
    half = width / 2.0
    lo, hi = -0.5 - half, 0.5 + half
    # quads along x at z = c, then along z at x = c: corners (x0, z0), (x1, z1) each
    x0 = np.r_[np.full(lines, lo), c - half]
    x1 = np.r_[np.full(lines, hi), c + half]
    z0 = np.r_[c - half, np.full(lines, lo)]
    z1 = np.r_[c + half, np.full(lines, hi)]
    corners = np.stack(
        [np.c_[x0, z1], np.c_[x1, z1], np.c_[x1, z0], np.c_[x0, z0]], axis=1
    )  # (Q, 4, 2), counter-clockwise seen from +y
    q = len(corners)
    pos = np.zeros((q, 4, 3))
    pos[..., 0], pos[..., 2] = corners[..., 0], corners[..., 1]
    pos = pos.reshape(-1, 3)
    base = 4 * np.arange(q)[:, None]
    tris = np.c_[base + np.array([0, 1, 2]), base + np.array([0, 2, 3])].reshape(-1, 3)
    n = len(pos)
    normals = np.tile([0.0, 1.0, 0.0], (n, 1))
    return SkinnedMesh(pos, normals, np.zeros((n, 1), np.uint32), np.ones((n, 1), np.float32), tris)


class FloorGrid:
    """A grey grid on the floor, drawn by ``renderer`` as one unskinned instance; :meth:`place`
    puts it under a set of points."""

    COLOR = (0.32, 0.34, 0.38, 1.0)

    def __init__(self, renderer: Renderer, *, lines: int = 13) -> None:
        self.renderer = renderer
        self.mesh = renderer.add_mesh(floor_grid_mesh(lines), label="floor grid")
        self.instance: Instance = renderer.add_instance(
            self.mesh, bone_count=1, method=registry.NONE.name, color=self.COLOR
        )

    def place(self, points: NDArray, *, scale: float = 1.6) -> None:
        """Under ``points`` ``(K, 3)``: at their lowest y, centred under them, ``scale`` times
        their larger horizontal extent wide."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        lo, hi = p.min(axis=0), p.max(axis=0)
        side = scale * max(float(hi[0] - lo[0]), float(hi[2] - lo[2]), 1e-6)
        model = np.diag([side, side, side, 1.0])
        model[:3, 3] = ((lo[0] + hi[0]) / 2.0, lo[1], (lo[2] + hi[2]) / 2.0)
        self.instance.set_model(model)

    @property
    def visible(self) -> bool:
        """Whether the grid is drawn (its instance's visibility)."""
        return self.instance.visible

    @visible.setter
    def visible(self, value: bool) -> None:
        self.instance.visible = bool(value)


class Decorations:
    """The floor grid and the labels of a scene in its renderer, kept up to date frame by frame
    (the viewer calls :meth:`update` before each frame; an offscreen renderer of the same scene
    and camera gets the same pixels).

    The grid lies under the copies shown (a glTF scene: under its animation's bounds, so it
    stays put while the animation plays); the labels follow the camera, the copies shown, the
    bone heat map and the animation's time. The overlay is composed again only when what it
    shows changed.
    """

    def __init__(self, scene: Any, *, labels: bool = True, grid: bool = True) -> None:
        self.scene = scene
        self.renderer = scene.renderer
        self.labels = labels
        self.grid = FloorGrid(self.renderer) if grid else None
        self._grid_key: tuple | None = None
        self._overlay_key: tuple | None = None

    def _copy_base_points(self) -> NDArray:
        """One copy's points at offset 0 for placing labels and the grid: a glTF scene's box
        over its animation (stable while it plays), else the posed vertices."""
        bounds = getattr(self.scene, "bounds", None)
        if bounds is None:
            return self.scene.pose_points()
        lo, hi = bounds
        bits = (np.arange(8)[:, None] >> np.arange(3)) & 1
        return np.where(bits, hi, lo).astype(np.float64)

    def update(self) -> None:
        """Place the grid and compose the labels again, each only when what it shows changed
        (the methods, animation and spacing; the target's size, caption, heat-map bone, diff
        range and camera). Nothing while the window is minimized."""
        scene, renderer = self.scene, self.renderer
        points = None
        if self.grid is not None:
            key = (scene.methods, getattr(scene, "animation", None), scene.spacing)
            key += (tuple(scene.axis),)
            if key != self._grid_key:
                points = self._copy_base_points()
                self.grid.place(np.vstack(copy_points(scene, points)))
                self._grid_key = key
        if not self.labels:
            return
        w, h = renderer.target.extent
        if w == 0 or h == 0:
            return
        diff = getattr(scene, "diff_range", None) if DIFF in _shown(scene) else None
        key = (
            (w, h),
            scene.methods,
            scene.caption(),
            renderer.debug_bone,
            None if renderer.debug_bone is None else scene.bone_name(renderer.debug_bone),
            diff,
            renderer.camera.view_projection(w / h).tobytes(),
            scene.spacing,
        )
        if key == self._overlay_key:
            return
        if points is None:
            points = self._copy_base_points()
        renderer.set_overlay(scene_overlay(scene, points=points))
        self._overlay_key = key
