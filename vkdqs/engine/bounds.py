"""The renderer's boxes: exact ones from the GPU, conservative ones from per-bone boxes, and the
frustum test that culls with them.

A :class:`SceneBoxes` belongs to one renderer (it owns the compute Skinners that measure exact
boxes and closes them with it). Per instance it gives a box in mesh space:

* **conservative**, from the mesh's per-bone boxes (:mod:`vkdqs.engine.bone_boxes`, computed once
per
  mesh and skeleton): numpy over the bones, no GPU work, for the methods whose registry entry
  has a ``box_rule`` and poses within it;
* **exact**, from the GPU (:meth:`vkdqs.Skinner.bounds`: one compute dispatch that reduces the
  box and writes no vertex), for the others ("dqs_blender", DQS poses with scale) and for
  :attr:`vkdqs.Instance.bounds`.

:func:`outside_frustum` tests world boxes against the six planes of a view-projection matrix
in clip space (a box is outside when its eight corners are all outside one plane), which never
culls a box that reaches into the view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .. import methods, reference
from .bone_boxes import BoneBoxes
from .skinner import Skinner

if TYPE_CHECKING:
    from ..gpu import Device
    from ..methods.needs import MethodInputs
    from .crowd import Crowd
    from .drawables import Instance, RenderMesh

__all__ = ["FrameStats", "SceneBoxes", "outside_frustum"]

#: The kinds of box a frame's culling used, as :attr:`FrameStats.boxes` counts them.
CONSERVATIVE, EXACT, REST = "conservative", "exact", "rest"


@dataclass(frozen=True)
class FrameStats:
    """What the last frame drew (:attr:`vkdqs.Renderer.stats`).

    Attributes
    ----------
    instances_drawn, instances_culled : int
        Visible instances drawn, and those left out because their box is outside the view.
    copies_drawn, copies_culled : int
        Crowd copies drawn and culled (crowds are not culled yet: every copy is drawn).
    boxes : dict of str to int
        How many instances' boxes were ``"conservative"`` (per-bone boxes), ``"exact"`` (the
        GPU) or ``"rest"`` (unskinned instances: their rest vertices and morph reach).
    """

    instances_drawn: int = 0
    instances_culled: int = 0
    copies_drawn: int = 0
    copies_culled: int = 0
    boxes: dict[str, int] | None = None


def outside_frustum(boxes: NDArray, view_projection: NDArray) -> NDArray[np.bool_]:
    """(K,) bool: which world boxes ``(K, 2, 3)`` lie wholly outside the view volume of
    ``view_projection`` (Vulkan clip space: -w <= x, y <= w, 0 <= z <= w)."""
    b = np.asarray(boxes, np.float64).reshape(-1, 2, 3)
    bits = (np.arange(8)[:, None] >> np.arange(3)) & 1  # (8, 3) corner selectors
    corners = np.where(bits[None], b[:, 1][:, None], b[:, 0][:, None])  # (K, 8, 3)
    m = np.asarray(view_projection, np.float64)
    clip = corners @ m[:3, :3].T + m[:3, 3]  # x, y, z of each corner
    w = corners @ m[3, :3] + m[3, 3]
    x, y, z = clip[..., 0], clip[..., 1], clip[..., 2]
    planes = (x < -w, x > w, y < -w, y > w, z < 0.0, z > w)
    return np.any([p.all(axis=1) for p in planes], axis=0)


class SceneBoxes:
    """One renderer's box machinery: per-bone boxes per mesh, the compute Skinners that measure
    exact boxes (made on first use, closed by :meth:`close`), and each crowd's clip boxes."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self._skinners: dict[tuple, Skinner] = {}
        self._bone_boxes: dict[tuple, BoneBoxes] = {}
        # per mesh: its rest box and each morph target's largest |delta| per axis, (2 + M, 3)
        self._rest: dict[int, NDArray[np.float64]] = {}
        # per instance: (pose, morph weights, box, kind) of the last box, reused until re-posed
        self._last: dict[int, tuple] = {}

    def close(self) -> None:
        """Close the Skinners this made."""
        for skinner in self._skinners.values():
            skinner.close()
        self._skinners.clear()
        self._bone_boxes.clear()
        self._rest.clear()
        self._last.clear()

    @property
    def skinners(self) -> tuple[Skinner, ...]:
        """The Skinners made so far (for tests of ownership)."""
        return tuple(self._skinners.values())

    def skinner(self, mesh: RenderMesh, inputs: MethodInputs | None) -> Skinner:
        """The compute Skinner that measures boxes of ``mesh`` posed with ``inputs`` (an
        instance's or crowd's: its method, bone count and needs' values, those the mesh's
        instances share as drawn now), one per mesh and inputs, made on first use."""
        assert inputs is not None
        inputs = mesh.shared.drawn(inputs)
        key = (id(mesh), inputs.method.name, inputs.bone_count, inputs.key())
        skinner = self._skinners.get(key)
        if skinner is None:
            skinner = Skinner(
                self.device,
                mesh.mesh,
                bone_count=inputs.bone_count,
                method=inputs.method.name,
                layout=mesh.layout,  # the vertices it measures are those drawn
                inputs=inputs.keywords(),
            )
            self._skinners[key] = skinner
        return skinner

    def exact(self, inst: Instance) -> NDArray[np.float64]:
        """``inst``'s exact (2, 3) box in mesh space as posed now."""
        bones, weights = inst.bones, inst.morph_weights
        if not inst.skinning.skins or bones is None:
            return self._rest_box(inst, exact=True)
        if inst.skinner is not None:  # "compute, then draw": the box of the vertices drawn
            return inst.box_now().copy()
        skinner = self.skinner(inst.mesh, inst.inputs)
        return skinner.bounds(bones, weights).astype(np.float64)

    def cheapest(self, inst: Instance) -> tuple[NDArray[np.float64], str]:
        """A (2, 3) box in mesh space that holds ``inst`` as posed now, and its kind: per-bone
        boxes where the method's rule covers the pose, else the GPU's exact box."""
        boxes, kinds = self.boxes_of([inst])
        return boxes[0], kinds[0]

    def boxes_of(self, insts: list[Instance]) -> tuple[NDArray[np.float64], list[str]]:
        """:meth:`cheapest` of many instances: (K, 2, 3) boxes in mesh space and their kinds.
        An instance not posed since its last box keeps it; the others are grouped by mesh,
        skeleton and rule, and each group's per-bone boxes are computed for all its poses in
        one vectorized pass."""
        out = np.empty((len(insts), 2, 3))
        kinds: list[str] = [REST] * len(insts)
        groups: dict[tuple, list[int]] = {}
        for k, inst in enumerate(insts):  # over instances: only grouping and the cache here
            weights, pose = inst.morph_weights, inst.pose
            cached = self._last.get(id(inst))
            if cached is not None and cached[0] is pose and cached[1] is weights:
                out[k], kinds[k] = cached[2], cached[3]  # not posed since: the same box
                continue
            bones = inst.bones
            # the rule of the shaders that posed it; "compute, then draw" methods' own (none:
            # their compute passes may leave their base's bone boxes)
            variant = inst.method if inst.computed else inst.pose.variant
            rule = methods.get(variant).box_rule
            if not inst.skinning.skins or bones is None:
                self._keep(inst, out, kinds, k, self._rest_box(inst, exact=False), REST)
            elif rule is None:
                self._keep(inst, out, kinds, k, self.exact(inst), EXACT)
            else:
                key = (id(inst.mesh), inst.bone_count, rule, bones.shape, weights is not None)
                groups.setdefault(key, []).append(k)
        for (_, bone_count, rule, _, morphed), members in groups.items():
            first = insts[members[0]]
            boxes = self._bone_boxes_of(first.mesh, bone_count, rule)
            mats = methods.as_matrices(np.stack([insts[k].bones for k in members]))
            weights = np.stack([insts[k].morph_weights for k in members]) if morphed else None
            found = boxes.boxes(rule, mats, weights)
            for k, box in zip(members, found, strict=True):  # over the group's instances
                if np.isnan(box).any():  # past the rule: the exact box
                    self._keep(insts[k], out, kinds, k, self.exact(insts[k]), EXACT)
                else:
                    self._keep(insts[k], out, kinds, k, box, CONSERVATIVE)
        return out, kinds

    def _keep(
        self, inst: Instance, out: NDArray, kinds: list[str], k: int, box: NDArray, kind: str
    ) -> None:
        out[k], kinds[k] = box, kind
        self._last[id(inst)] = (inst.pose, inst.morph_weights, box, kind)

    def _bone_boxes_of(self, mesh: RenderMesh, bone_count: int, rule: str) -> BoneBoxes:
        """The per-bone boxes of ``mesh`` for ``bone_count`` bones (with its centers of
        rotation for the "about_centers" rule), computed once."""
        centers = mesh.centers if rule == "about_centers" else None
        key = (id(mesh), bone_count, None if centers is None else id(centers))
        boxes = self._bone_boxes.get(key)
        if boxes is None:
            boxes = self._bone_boxes[key] = BoneBoxes.of(mesh.mesh, bone_count, centers)
        return boxes

    def forget(self, inst: Instance) -> None:
        """Drop what is kept for ``inst`` (removed from its renderer)."""
        self._last.pop(id(inst), None)

    def _rest_box(self, inst: Instance, *, exact: bool) -> NDArray[np.float64]:
        """An unskinned instance's box: its rest vertices, morphed (``exact``: the morphed
        vertices' box; else the rest box widened by each target's reach times |weight|)."""
        mesh, weights = inst.mesh.mesh, inst.morph_weights
        rest = self._rest.get(id(inst.mesh))
        if rest is None:
            lo, hi = mesh.bounds
            targets = mesh.morph_positions
            reach = np.zeros((0, 3)) if targets is None else np.abs(targets).max(axis=1)
            rest = self._rest[id(inst.mesh)] = np.concatenate([[lo, hi], reach])
        if weights is None or len(rest) == 2:
            return rest[:2].copy()
        if exact:
            p = reference.morph(mesh.positions, mesh.normals, mesh.morph_positions, None, weights)
            return np.stack([p[0].min(axis=0), p[0].max(axis=0)])
        grow = np.abs(np.asarray(weights, np.float64)) @ rest[2:]
        return np.stack([rest[0] - grow, rest[1] + grow])

    def cull_boxes(self, crowd: Crowd) -> NDArray[np.float64] | None:
        """(K, 2, 3): per clip of ``crowd`` a conservative box (mesh space) of every pose its
        sampler makes, the frames and every blend between neighbours
        (:meth:`BoneBoxes.box_between`); None when the method's rule does not bound one of
        them (the crowd is then drawn whole)."""
        skinning = crowd.skinning
        rule = skinning.box_rule
        if rule is None:
            return None
        boxes = self._bone_boxes_of(crowd.mesh, crowd.joint_count, rule)
        out = []
        for clip in crowd.clips:  # over clips and their frames: numpy over bones inside
            frames = clip.frames
            pairs = [(f, f + 1) for f in range(len(frames) - 1)] or [(0, 0)]
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
            for f, g in pairs:
                box = boxes.box_between(rule, frames[f], frames[g])
                if box is None:
                    return None
                lo, hi = np.minimum(lo, box[0]), np.maximum(hi, box[1])
            out.append(np.stack([lo, hi]))
        return np.stack(out)

    def clip_boxes(self, crowd: Crowd) -> NDArray[np.float64]:
        """(K, 2, 3): each of ``crowd``'s clips' box over its frames, the union of the frames'
        exact boxes (measured on the GPU once, kept on the crowd)."""
        if crowd.clip_boxes is None:
            skinner = self.skinner(crowd.mesh, crowd.inputs)
            boxes = [skinner.bounds_many(clip.frames) for clip in crowd.clips]
            crowd.clip_boxes = np.stack(
                [np.stack([b[:, 0].min(axis=0), b[:, 1].max(axis=0)]) for b in boxes]
            ).astype(np.float64)
        return crowd.clip_boxes
