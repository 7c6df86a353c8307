"""What every scene shares: the methods' tints and labels, how copies stand side by side, what
a method needs of a skeleton at rest, and the :class:`ViewerScene` protocol the viewer drives."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from ... import methods as registry
from ...methods import DIFF, parse_methods

if TYPE_CHECKING:
    from ...gltf import GltfScene

#: Unskinned (rigid) glTF parts: each side's colour, lightened toward grey.
_GREY = np.array([0.6, 0.6, 0.6, 1.0])
#: The "diff" copy's colour where it is not coloured by |DQS - LBS| (never shown in practice).
DIFF_COLOR = (0.5, 0.5, 0.5, 1.0)


def tint(method: str, rigid: bool = False) -> tuple[float, ...]:
    """A method's tint (the registry's colour), lightened toward grey for rigid parts."""
    rgba = np.array(DIFF_COLOR if method == DIFF else registry.get(method).color)
    return tuple(float(c) for c in (0.5 * rgba + 0.5 * _GREY if rigid else rgba))


def renderer_method(method: str) -> str:
    """The renderer method drawing a scene method's copy: the diff copy is posed by DQS."""
    return registry.DEFAULT if method == DIFF else method


def check_methods(methods: str) -> str:
    """``methods`` once :func:`~vkdqs.methods.parse_methods` accepts it."""
    parse_methods(methods)
    return methods


def methods_label(shown: tuple[str, ...]) -> str:
    """What a title calls the copies shown, left to right."""
    if len(shown) == 1:
        return registry.label(shown[0])
    if len(shown) == 2:
        return f"{registry.label(shown[0])} (left) | {registry.label(shown[1])} (right)"
    return " | ".join(registry.label(m) for m in shown) + " (left to right)"


def offsets(shown: tuple[str, ...], spacing: float) -> dict[str, float]:
    """Offset of each method's copy along the placement axis: side by side, centred,
    ``spacing`` apart."""
    return {m: (k - 0.5 * (len(shown) - 1)) * spacing for k, m in enumerate(shown)}


#: Every method a scene may make copies of.
ALL_METHODS = (*(m.name for m in registry.shown()), DIFF)


class ViewerScene(Protocol):
    """What the viewer needs from a scene.

    Attributes
    ----------
    methods : str
        What :meth:`show` was last asked to show (see :func:`parse_methods`).
    shown_methods : tuple of str
        The copies shown, left to right: ``methods`` less those the scene's skins refuse
        (``"all"`` leaves them out, see :func:`vkdqs.methods.select_methods`).
    left_out : dict of str to str
        The methods ``"all"`` left out, with why.
    bone_count : int
        Bones of the largest skeleton (the heat map's ``[``/``]`` keys stay below it).
    """

    methods: str
    bone_count: int

    def update(self, dt: float) -> None:
        """Advance the animation by ``dt`` seconds (already multiplied by the playback speed)."""

    def scrub(self, direction: int) -> None:
        """Step the animation back (-1) or forward (+1) by one scrub step, for the arrow keys."""

    def step_animation(self, delta: int) -> bool:
        """Switch to the next (+1) or previous (-1) animation; False when there is none."""

    def show(self, methods: str) -> None:
        """Show the methods of ``methods`` (see :func:`parse_methods`) side by side."""

    def frame_camera(self) -> None:
        """Aim the camera at the copies shown, keeping its direction."""

    def label(self) -> str:
        """One line for the window title: method(s) and where the animation is."""


def materials_of(scene: GltfScene, mesh: int) -> dict[str, object]:
    """``material`` and ``groups`` for :meth:`Renderer.add_mesh` of a glTF mesh's merged
    primitives (one group per primitive, its material)."""
    groups = scene.mesh_groups(mesh)
    return {
        "material": [g[2] for g in groups],
        "groups": [(first, count, k) for k, (first, count, _) in enumerate(groups)],
    }


def box_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The 8 corners of ``[lo, hi]`` as homogeneous points, ``[8, 4]``."""
    bits = (np.arange(8)[:, None] >> np.arange(3)) & 1
    return np.c_[np.where(bits, hi, lo), np.ones(8)]
