"""Velocity skinning's registry entries: a base method's entry with velocity.comp's pass after
it (:func:`velocity_method`) and their float64 reference (:func:`reference_skin`)."""

from __future__ import annotations

from typing import Any

from ...errors import InputError

__all__ = ["PASS", "reference_skin", "velocity_method"]

#: The ``after`` hook of every velocity entry (loaded when a Skinner is made).
PASS = "vkdqs.methods.velocity.passes:VelocityPass.from_inputs"


def reference_skin(p, n, j, w, bones, *, velocity, base, motion=(None, None), **kw):
    """Its base's reference (``base``), then the skinned positions moved by the motion from
    ``motion`` = (previous pose, dt) (None: at rest); the base's normals."""
    from ...bones import as_matrices
    from .reference import joint_motion, velocity_deform

    if velocity is None:
        raise InputError("the velocity skinning reference needs the rig (velocity=)")
    skinned, normals = base(p, n, j, w, bones, velocity=None, **kw)
    previous, dt = motion
    before = None if previous is None else as_matrices(previous)
    moved = joint_motion(velocity, as_matrices(bones), before, 1.0 if dt is None else dt)
    return velocity_deform(velocity, skinned, j, w, moved), normals


def velocity_method(
    skin: Any,
    name: str,
    label: str,
    color: tuple[float, float, float, float],
    key: str | None = None,
) -> Any:
    """Velocity skinning over the method ``skin`` (a :class:`vkdqs.methods.SkinningMethod`).

    Its shaders, pose packing and capability rule, then velocity.comp's pass (compute path only:
    renderer instances draw it by "compute, then draw"; no crowds, boxes or USD). Shown in
    scenes where it has a viewer ``key``; chosen by name only where not.
    """
    return skin.followed_by(
        (PASS,),
        name=name,
        label=label,
        color=color,
        summary=f"velocity skinning (Rohmer et al. 2021) over {skin.label}: floppy and squashy "
        "secondary motion from the bones' velocities, in a compute pass",
        reference_skin=reference_skin,
        needs=frozenset({"velocity_data"}),
        key=key,
    )
