"""DeltaMushSkinner: a :class:`vkdqs.Skinner` over any base method with classic Delta Mush's
compute passes (:mod:`vkdqs.methods.delta_mush.passes`) and its own bind parameters;
``Skinner(method="delta_mush")`` is the registry's, over LBS with the default bind."""

from __future__ import annotations

from ... import methods
from ...engine.skinner import Skinner
from ...errors import InputError
from ...gpu import Device
from ...mesh import SkinnedMesh
from .passes import DeltaMushPasses, fan_order, topology_arrays
from .reference import DeltaMush, delta_mush_bind

__all__ = ["DeltaMushPasses", "DeltaMushSkinner", "fan_order", "topology_arrays"]


class DeltaMushSkinner(Skinner):
    """Skins ``mesh`` with a registry method, then applies classic Delta Mush on the GPU: a
    :class:`~vkdqs.Skinner` with :class:`DeltaMushPasses` over any base method and its own
    bind parameters (``Skinner(method="delta_mush")`` is LBS under the default bind).

    Parameters
    ----------
    device : Device
    mesh : SkinnedMesh
        With triangles (``indices``): they make the edge graph the smoothing runs on.
    bone_count : int
    method : str
        The skinning under the mush: a registry method (``"lbs"``, the usual one, or ``"dqs"``)
        with no compute passes of its own.
    iterations : int
        Smoothing steps (10 by default); 0 gives the skinned mesh, normals recomputed.
    step : float
        Each step's size, lambda in (0, 1] (0.5 by default).
    allow_scale, centers, rest_matrices, layout
        As for :class:`vkdqs.Skinner` (the path is always ``"compute"``).

    Notes
    -----
    :meth:`skin` and :meth:`skin_many` return the Delta Mush positions and the area-weighted
    normals of the result (float32). Boxes (``bounds=True``, :meth:`bounds`,
    :meth:`bounds_many`) are taken from the Delta Mush positions read back, not reduced on the
    GPU: they cost what :meth:`skin` does. The float64 bind is kept in :attr:`bind`.
    """

    def __init__(
        self,
        device: Device,
        mesh: SkinnedMesh,
        *,
        bone_count: int,
        method: str = "lbs",
        iterations: int = 10,
        step: float = 0.5,
        allow_scale: bool = True,
        centers: object = None,
        rest_matrices: object = None,
        layout: str = "exact",
    ) -> None:
        if not isinstance(mesh, SkinnedMesh):
            raise InputError(f"mesh must be a vkdqs.SkinnedMesh, got {type(mesh).__name__}")
        if mesh.indices is None:
            raise InputError("Delta Mush needs the mesh's triangles (indices): it has none")
        entry = methods.get(method)
        if entry.base is not None:
            raise InputError(
                f"DeltaMushSkinner's method is the skinning under the mush, one without passes "
                f"of its own, not {method!r}: use Skinner(method={method!r}) or "
                f"DeltaMushSkinner(method={entry.base!r})"
            )
        bind = delta_mush_bind(mesh.positions, mesh.indices, iterations=iterations, step=step)
        super().__init__(
            device,
            mesh,
            bone_count=bone_count,
            method=method,
            path="compute",
            allow_scale=allow_scale,
            centers=centers,
            rest_matrices=rest_matrices,
            layout=layout,
        )
        try:
            self.delta_mush = bind
            self.add_pass(DeltaMushPasses(self, bind))
        except BaseException:
            self.close()
            raise

    @property
    def bind(self) -> DeltaMush:
        """The float64 bind: adjacency, frame neighbours, offsets, iterations and step."""
        assert self.delta_mush is not None
        return self.delta_mush

    @property
    def iterations(self) -> int:
        """Smoothing steps per pose."""
        return self.bind.iterations

    @property
    def step(self) -> float:
        """The smoothing's step size (lambda)."""
        return self.bind.step

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<DeltaMushSkinner {self.method} {self.iterations} iterations, step {self.step}, "
            f"{self.vertex_count} vertices, {self.bone_count} bones ({state})>"
        )
