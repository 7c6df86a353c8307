"""Skin one mesh with several methods on the GPU and in float64, for ``vkdqs demo`` and the docs'
figures (``docs/make_figures.py``): the candy wrapper's ring radius, volume and bend bulge.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .. import dq, procedural
from .. import reference as references
from ..errors import InputError
from ..mesh import SkinnedMesh

__all__ = [
    "COMPARE_METHODS",
    "bend_bulge",
    "reference",
    "skin_methods",
    "with_dqs_blend",
]

#: The methods compared on rigid bones (``dqs_blender`` equals DQS there, up to antipodality).
COMPARE_METHODS = ("dqs", "lbs", "cor", "blend")


def with_dqs_blend(mesh: SkinnedMesh, blend: float = 0.5) -> SkinnedMesh:
    """``mesh`` with a DQS fraction of ``blend`` at every vertex (for ``method="blend"``)."""
    return SkinnedMesh(
        mesh.positions,
        mesh.normals,
        mesh.joints,
        mesh.weights,
        mesh.indices,
        dqs_blend=np.full(mesh.vertex_count, float(blend)),
    )


def skin_methods(
    device: object,
    mesh: SkinnedMesh,
    poses: NDArray,
    methods: Sequence[str] = COMPARE_METHODS,
    *,
    bone_count: int,
    path: str = "compute",
    centers: NDArray | None = None,
) -> dict[str, NDArray[np.float32]]:
    """GPU positions ``(P, N, 3)`` of ``mesh`` under the rigid ``poses`` ``(P, B, 4, 4)``, per
    method (every pose in one :meth:`Skinner.skin_many` per method). ``centers``: for "cor"
    (computed on ``device`` when None); "blend" uses the mesh's ``dqs_blend``; "dqs_blender"
    takes the identity as every bone's rest matrix (as for the candy wrapper)."""
    from ..skinner import Skinner

    out = {}
    for method in methods:
        extra: dict[str, object] = {}
        if method == "cor":
            extra["centers"] = centers
        elif method == "dqs_blender":  # the candy wrapper's bones rest at the identity
            extra["rest_matrices"] = np.tile(np.eye(4), (bone_count, 1, 1))
        with Skinner(
            device, mesh, bone_count=bone_count, method=method, path=path, **extra
        ) as skinner:
            out[method] = skinner.skin_many(poses)[0]
    return out


def reference(
    method: str, mesh: SkinnedMesh, poses: NDArray, *, centers: NDArray | None = None
) -> NDArray[np.float64]:
    """The float64 reference positions ``(P, N, 3)`` of :func:`skin_methods` for one method."""
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    out = []
    for pose in poses:
        if method == "dqs":
            p = references.skin_dqs(*args, dq.from_matrices(pose))[0]
        elif method == "lbs":
            p = references.skin_lbs(*args, pose)[0]
        elif method == "cor":
            if centers is None:
                raise InputError("the CoR reference needs the centers")
            p = references.skin_cor(*args, pose, centers)[0]
        elif method == "blend":
            if mesh.dqs_blend is None:
                raise InputError("the blend reference needs a mesh with dqs_blend")
            p = references.skin_blend(*args, pose, mesh.dqs_blend)[0]
        elif method == "dqs_blender":
            rest = np.tile(np.eye(4), (len(pose), 1, 1))
            p = references.skin_dqs_blender(*args, pose, rest)[0]
        else:
            raise InputError(f"no reference for method {method!r} here")
        out.append(p)
    return np.stack(out)


def bend_bulge(
    positions: NDArray,
    degrees: float,
    *,
    length: float = 2.0,
    radius: float = 0.5,
    rings: int = 33,
    segments: int = 32,
) -> float:
    """How far a :func:`~vkdqs.procedural.candy_wrapper` bent by
    :func:`~vkdqs.procedural.bend_pose` bulges out of the ideal bent tube, relative to
    ``radius``.

    The ideal bent cylinder is the union of the two rigid halves (each a cylinder of
    ``radius`` about its bone's axis, ending at the joint) and the ball of ``radius`` about the
    joint, which fills the elbow. A side vertex's excess is its distance outside that union;
    the bulge is the largest excess over the side vertices, divided by ``radius``. 0: no part
    of the surface pokes out (LBS, which only collapses inward); DQS's bend bulge shows here.
    """
    p = np.asarray(positions, np.float64)[: rings * segments]
    joint = np.array([0.5 * length, 0.0, 0.0])
    rot = procedural.bend_pose(degrees)[1, :3, :3]
    axes = (np.array([-1.0, 0.0, 0.0]), rot @ np.array([1.0, 0.0, 0.0]))
    d = p - joint
    dist = [np.linalg.norm(d, axis=1)]  # the ball at the joint
    for axis in axes:  # each half: a half-infinite cylinder starting at the joint
        along = d @ axis
        radial = np.linalg.norm(d - along[:, None] * axis, axis=1)
        dist.append(np.where(along >= 0.0, radial, np.inf))
    excess = np.min(dist, axis=0) - radius
    return float(max(excess.max(), 0.0) / radius)
