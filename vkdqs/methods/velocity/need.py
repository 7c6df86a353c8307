"""Velocity skinning's need: the skeleton and weights its pass reads (``velocity=``, a
:class:`~vkdqs.methods.velocity.reference.VelocityRig`). Numpy only."""

from __future__ import annotations

from ...errors import InputError
from ..needs import Need

__all__ = ["VelocityData"]


class VelocityData(Need):
    """A :class:`~vkdqs.methods.velocity.reference.VelocityRig` (``velocity=``): the parents,
    rest frames, strengths and weights velocity skinning's pass reads; no default (a skeleton's
    parents are not in a :class:`vkdqs.SkinnedMesh`; a model file's edge gives them)."""

    name, keyword = "velocity_data", "velocity"
    vertex_lacks = (
        "it moves the skinned vertices in a compute pass after the skinning, from each "
        "chain's joint motion, which the vertex shaders do not read"
    )
    crowd_lacks = (
        "a crowd's copies are sampled from their clips on the GPU, and their motion is not "
        "tracked there"
    )

    def from_file(self, skin, mesh):
        """The rig of the file's skeleton (its joints' parents and rest frames), with the
        default strengths and weights."""
        from .reference import velocity_rig

        return velocity_rig(mesh, skin.parents, skin.rest_matrices)

    def check(self, value, mesh, bone_count, method):
        """The rig, checked against the mesh and the skeleton."""
        from .reference import VelocityRig

        if not isinstance(value, VelocityRig):
            raise InputError(
                f"method={method.name!r} needs velocity=vkdqs.methods.velocity.velocity_rig("
                f"mesh, parents, rest_matrices) (the skeleton's parents and rest frames), got "
                f"{type(value).__name__}"
            )
        if value.bone_count != bone_count:
            raise InputError(
                f"velocity was made for {value.bone_count} bones, not bone_count={bone_count}"
            )
        if len(value.vertex_floppy) != mesh.vertex_count:
            raise InputError(
                f"velocity was made for another mesh ({len(value.vertex_floppy)} vertices) than "
                f"this one ({mesh.vertex_count})"
            )
        return value
