"""Scenes the viewer and ``vkdqs render`` show: the candy wrapper, glTF files and crowds.

:class:`CandyWrapperScene` (:mod:`.candy`) is the embedded default. :class:`GltfScenePlayer`
(:mod:`.player`) plays a loaded glTF file (:func:`vkdqs.gltf.load_gltf`). :class:`CrowdScene`
(:mod:`.crowds`) draws grids of copies as crowds. All follow :class:`ViewerScene`
(:mod:`.common`), the small protocol the viewer drives, so the viewer, ``vkdqs render`` and the
docs' pictures show the same frame for the same twist or animation time. Which methods a scene
shows, and their tints and labels, come from the registry (:mod:`vkdqs.methods`).
"""

from __future__ import annotations

from ...methods import parse_methods
from .candy import CandyWrapperScene
from .common import ViewerScene
from .crowds import CrowdScene
from .player import GltfDraw, GltfScenePlayer

__all__ = [
    "CandyWrapperScene",
    "CrowdScene",
    "GltfDraw",
    "GltfScenePlayer",
    "ViewerScene",
    "parse_methods",
]
