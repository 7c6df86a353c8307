"""Skin one mesh with several methods on the GPU and in float64, for ``vkdqs demo`` and the docs'
figures (``docs/make_figures.py``): the candy wrapper's ring radius, volume and bend bulge.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .. import methods as registry
from .. import procedural
from ..mesh import SkinnedMesh
from ..methods import needs as needs_

__all__ = [
    "bend_bulge",
    "compared_methods",
    "reference",
    "rest_inputs",
    "skin_methods",
]


def compared_methods() -> tuple[str, ...]:
    """The methods compared: every method scenes show (:func:`vkdqs.methods.shown`)."""
    return tuple(m.name for m in registry.shown())


def rest_inputs(method: str, mesh: SkinnedMesh, bone_count: int) -> dict[str, object]:
    """What a method needs of ``mesh`` on a chain of bones that rest at the identity (the
    candy wrapper), for ``inputs=``: each need without a default of its own takes its value
    from that skeleton as a file would give it (:meth:`vkdqs.methods.needs.Need.from_file`:
    identity rest frames, velocity skinning's rig)."""
    eye = np.tile(np.eye(4), (bone_count, 1, 1))
    skin = needs_.FileSkin(np.arange(bone_count) - 1, eye, eye)
    out: dict[str, object] = {}
    for name in sorted(registry.get(method).needs):
        need = needs_.NEEDS[name]
        if need.keyword and type(need).default is needs_.Need.default:
            value = need.from_file(skin, mesh)
            if value is not None:
                out[need.keyword] = value
    return out


def _inputs(
    method: str, mesh: SkinnedMesh, bone_count: int, centers: NDArray | None
) -> dict[str, object]:
    """What ``method`` needs besides the mesh for a skeleton resting at the identity (the
    candy wrapper): the centers of rotation given, and :func:`rest_inputs`."""
    out = rest_inputs(method, mesh, bone_count)
    if "centers" in registry.get(method).needs:
        out["centers"] = centers
    return out


def skin_methods(
    device: object,
    mesh: SkinnedMesh,
    poses: NDArray,
    methods: Sequence[str] | None = None,
    *,
    bone_count: int,
    path: str = "compute",
    centers: NDArray | None = None,
) -> dict[str, NDArray[np.float32]]:
    """GPU positions ``(P, N, 3)`` of ``mesh`` under the rigid ``poses`` ``(P, B, 4, 4)``, per
    method (default: :func:`compared_methods`; every pose in one :meth:`Skinner.skin_many` per
    method). ``centers``: for the methods that need them (computed on ``device`` when None);
    a method that needs per-vertex blend values uses the mesh's ``dqs_blend``; one that needs
    rest frames takes the identity for every bone (as for the candy wrapper)."""
    from ..engine.skinner import Skinner

    out = {}
    for method in compared_methods() if methods is None else methods:
        extra = _inputs(method, mesh, bone_count, centers)
        if extra.get("centers") is None:
            extra.pop("centers", None)  # computed by the Skinner on its device
        with Skinner(
            device, mesh, bone_count=bone_count, method=method, path=path, inputs=extra
        ) as skinner:
            out[method] = skinner.skin_many(poses)[0]
    return out


def reference(
    method: str,
    mesh: SkinnedMesh,
    poses: NDArray,
    *,
    centers: NDArray | None = None,
    device: object = None,
) -> NDArray[np.float64]:
    """The float64 reference positions ``(P, N, 3)`` of :func:`skin_methods` for one method
    (the registry's :meth:`~vkdqs.methods.SkinningMethod.reference`), with the inputs the
    Skinner skinned with: a need's default (centers of rotation, a Direct Delta Mush
    precomputation) is the one kept on the mesh (computed on ``device`` if there is none
    yet)."""
    skinning = registry.get(method)
    extra = _inputs(method, mesh, poses.shape[1], centers)
    inputs = skinning.inputs(mesh, poses.shape[1], **extra).resolved(device)  # type: ignore[arg-type]
    return np.stack([skinning.reference(mesh, pose, **inputs.keywords())[0] for pose in poses])


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
