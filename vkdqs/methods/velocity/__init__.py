"""Velocity skinning (Rohmer et al. 2021): secondary motion from the bones' velocities.

The registry's ``"velocity"`` (over DQS) and ``"velocity_lbs"`` (over LBS) skin with their base
and then move the skinned vertices in a compute pass (:mod:`.passes`) by the float64
reference's equations (:mod:`.reference`); the rig they read is the need ``velocity=``
(:mod:`.need`), a :class:`VelocityRig` made by :func:`velocity_rig`.
"""

from .reference import JointMotion, VelocityRig, joint_motion, velocity_deform, velocity_rig

__all__ = ["JointMotion", "VelocityRig", "joint_motion", "velocity_deform", "velocity_rig"]
