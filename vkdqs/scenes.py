"""The embedded default scene: the candy-wrapper cylinder, LBS on the left and DQS on the right.

Shared by the viewer, ``vkdqs render`` and the docs screenshot, so all of them show the same
frame for the same twist.
"""

from __future__ import annotations

import numpy as np

from . import dq, procedural
from .renderer import Instance, Renderer

METHOD_COLORS = {"lbs": (0.62, 0.22, 0.12, 1.0), "dqs": (0.16, 0.36, 0.62, 1.0)}


def _upright(x: float) -> np.ndarray:
    """Model matrix standing the cylinder (built along +x) up along +y, centred at x."""
    m = np.eye(4)
    m[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    m[:3, 3] = (x, -1.0, 0.0)  # the mesh spans x in [0, 2]: centre it vertically
    return m


class CandyWrapperScene:
    """Candy-wrapper cylinders twisted about their axis, one per method shown."""

    def __init__(self, renderer: Renderer, *, methods: str = "both") -> None:
        self.renderer = renderer
        self.mesh = procedural.candy_wrapper()
        self._render_mesh = renderer.add_mesh(self.mesh, label="candy wrapper")
        self.instances: dict[str, Instance] = {}
        for method, x in (("lbs", -0.9), ("dqs", 0.9)):
            self.instances[method] = renderer.add_instance(
                self._render_mesh,
                bone_count=2,
                method=method,
                model=_upright(x),
                color=METHOD_COLORS[method],
            )
        self.twist = 0.0
        self.show(methods)
        renderer.frame_scene()
        renderer.camera.orbit(0.35, 0.25)
        renderer.camera.zoom(0.85)
        renderer.camera._home = renderer.camera._state()

    def show(self, methods: str) -> None:
        """``"dqs"``, ``"lbs"`` or ``"both"`` side by side."""
        if methods not in ("dqs", "lbs", "both"):
            raise ValueError(f"methods must be 'dqs', 'lbs' or 'both', got {methods!r}")
        self.methods = methods
        for method, inst in self.instances.items():
            inst.visible = methods in (method, "both")

    def set_twist(self, degrees: float) -> None:
        self.twist = float(degrees)
        pose = procedural.twist_pose(self.twist)
        self.instances["lbs"].set_pose(pose)
        self.instances["dqs"].set_pose(dq.from_matrices(pose))

    def label(self) -> str:
        names = {"dqs": "DQS", "lbs": "LBS", "both": "LBS (left) | DQS (right)"}
        return f"{names[self.methods]}, twist {self.twist:.0f}°"
