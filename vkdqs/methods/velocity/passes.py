"""Velocity skinning's compute pass after the skinning (:class:`VelocityPass`): velocity.comp
moves each pose's skinned positions in the Skinner's output by the floppy and squashy terms
of its influences' chains (:mod:`vkdqs.methods.velocity.reference`, which it follows), from the
joints' motion the Skinner hands it before each submission (``Skinner.skin(bones,
previous=, dt=)``: :meth:`VelocityPass.motion`).

The mesh's joints, weights and per-vertex weights are uploaded once (the pass's own texel
buffers); each chunk's joints (6 rgba32f texels a joint and pose) are written to a host-visible
buffer the recorded dispatches read (:func:`joint_texels`: a chain's squash and linear lag
folded into one affine map a bone, so the shader walks only the floppy turns). Every Vulkan
object is the Skinner's, destroyed by its ``close``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import shader_interface as si
from ...gpu import ComputePass, HostTexels, compute_barrier, texel_buffer
from .reference import chain_sums, joint_motion, squash_maps

if TYPE_CHECKING:
    from ...engine.passes import PassTarget, PoseMotion
    from ...engine.skinner import Skinner
    from ..needs import MethodInputs

__all__ = ["VelocityPass", "joint_texels"]

SHADER = "velocity.comp"


def joint_texels(rig, motion: PoseMotion) -> np.ndarray:
    """(P, B, 6, 4) float32: velocity.comp's joint texels of each pose of ``motion``, the
    joints in a depth-first order (joint ``k`` at ``rig.subtree_ranges[k, 0]``: a
    joint's subtree is then the range from it to its ``end``).

    The floppy turn, walked once a joint of a vertex's chains: (centre, parent), (unit axis
    times the floppy strength times the angular speed / the rig's length, the end of the
    joint's subtree). A chain's linear parts, folded on the host (float64, then rounded): (the
    floppy lag of the bone's chain times the bone's floppy weight, that weight), and the rows
    of the sum of the chain's squash maps
    (:func:`~vkdqs.methods.velocity.reference.squash_maps`) times the bone's squashy weight.
    """
    m = joint_motion(rig, motion.bones, motion.previous, motion.dt)
    p, b = motion.bones.shape[:2]
    ranges = rig.subtree_ranges
    first = ranges[:, 0]
    out = np.zeros((p, b, si.VELOCITY_JOINT_TEXELS, 4), np.float32)
    out[..., 0, :3] = m.centers
    out[..., 0, 3] = np.where(rig.parents >= 0, first[np.maximum(rig.parents, 0)], -1)
    out[..., 1, :3] = m.angular * (rig.floppy / rig.scale)
    out[..., 1, 3] = ranges[:, 1]
    lag = chain_sums(rig.chains, m.linear, axis=-2)
    out[..., 2, :3] = -rig.floppy * rig.bone_floppy[:, None] * lag
    out[..., 2, 3] = rig.bone_floppy
    squash = chain_sums(rig.chains, squash_maps(rig, m), axis=-3)
    out[..., 3:6, :] = rig.bone_squashy[:, None, None] * squash
    placed = np.empty_like(out)
    placed[:, first] = out
    return placed


class VelocityPass:
    """The pass after the skinning (a :class:`vkdqs.engine.passes.SkinPass` that reads the
    poses' motion)."""

    #: Skinner.record does not hand an app's recordings their motion: refused there
    records_ring = False

    def __init__(self, skinner: Skinner, inputs: MethodInputs) -> None:
        self.skinner = skinner
        self.rig = rig = inputs["velocity_data"]
        mesh = skinner.mesh
        n, slots = mesh.vertex_count, mesh.slots
        joints = np.zeros((n, slots), np.uint32)
        weights = np.zeros((n, slots), np.float32)
        # the joints in velocity.comp's depth-first order (joint_texels)
        joints[:, : mesh.joints.shape[1]] = rig.subtree_ranges[mesh.joints, 0]
        weights[:, : mesh.weights.shape[1]] = mesh.weights
        own = np.zeros((n, 4), np.float32)
        own[:, 0], own[:, 1] = rig.vertex_floppy, rig.vertex_squashy
        self.slot_texels = slots // 4
        views = {}
        formats = dict(si.VELOCITY_TEXELS)
        for binding, data in (
            (si.VELOCITY_JOINTS_IN, joints.reshape(-1, 4)),
            (si.VELOCITY_WEIGHTS_IN, weights.reshape(-1, 4)),
            (si.VELOCITY_VERTEX_WEIGHTS, own),
        ):
            fmt = int(formats[binding])
            buffer, view = texel_buffer(skinner.device, data, fmt, label=f"velocity {binding}")
            skinner.own(buffer)
            views[binding] = skinner.own(view)
        self.views = views
        self.compute = ComputePass(
            skinner, skinner.pipelines, SHADER, si.VELOCITY_BINDINGS, si.VELOCITY_PUSH_BYTES
        )
        self.pipeline = self.compute.pipeline(((si.VELOCITY_SLOT_TEXELS_ID, self.slot_texels),))
        self.joints = HostTexels(
            skinner,
            int(formats[si.VELOCITY_JOINTS]),
            16,
            label="velocity joints",
        )
        self.written = -1  # the output generation the set points at

    @classmethod
    def from_inputs(cls, skinner: Skinner, inputs: MethodInputs) -> VelocityPass:
        """The method's ``after`` hook."""
        return cls(skinner, inputs)

    def motion(self, motion: PoseMotion) -> None:
        """Write the chunk's joints (its poses from slot 0) before its submission."""
        if self.joints.view is None:  # nothing recorded that reads them (no vertices written)
            return
        self.joints.write(joint_texels(self.rig, motion))

    def record(self, cmd, target: PassTarget) -> None:
        """One dispatch a pose over its skinned positions, after a compute barrier."""
        if not target.writes_vertices:
            return
        texels = target.poses * self.rig.bone_count * si.VELOCITY_JOINT_TEXELS
        if self.joints.ensure(texels) or self.written != target.generation:
            self.compute.write(
                {
                    si.VELOCITY_VERTICES: target.vertices,
                    si.VELOCITY_JOINTS: self.joints.view,
                    **self.views,
                }
            )
            self.written = target.generation
        compute_barrier(cmd)
        self.compute.begin(cmd)
        n, b = target.vertex_count, self.rig.bone_count
        for p in target.pose_range:
            push = np.zeros(5, np.uint32)
            push[:4] = (n, target.positions_at(p), p * b * si.VELOCITY_JOINT_TEXELS, b)
            push[4:].view(np.float32)[0] = self.rig.max_angle
            self.compute.dispatch(cmd, self.pipeline, n, si.VELOCITY_LOCAL_SIZE, push)
