"""Bake a glTF animation into one world-space mesh per frame: a vertex cache, training data, or a
file any viewer plays.

:func:`bake` returns a :class:`Bake` (every frame in memory); :func:`bake_to_file` streams the
frames into a file batch by batch (``vkdqs bake`` uses it), so memory stays bounded by one batch
for ``.npz`` and ``.glb``. Each frame is every part a glTF scene draws
(:func:`~vkdqs.gltf.parts.scene_parts`: one part per node with a skin, in node order, then one per
rigid node, in node order; a model with one skinned mesh on one node keeps that mesh's vertex
order) merged into one mesh: skinned parts posed by their node's skin on the GPU, a batch of
frames per ``Skinner.skin_many`` submission, and rigid parts by their node's global matrix (in
numpy, as :func:`vkdqs.reference.skin_lbs` with one bone).

Formats (by the file's extension):

Every format keeps the model's look (:class:`~vkdqs.baking.surface.Surface`): each vertex's
``TEXCOORD_0`` and ``COLOR_0`` and the primitives' materials, as runs of faces with one material
(:class:`BakeGroup`; each covers a range of the vertices too, as the primitives did).

* ``.npz``: ``times (F,)`` float64, ``positions (F, V, 3)`` and ``normals (F, V, 3)`` float32,
  ``boxes (F, 2, 3)`` float32 (each frame's exact box, reduced on the GPU),
  ``faces (T, 3)`` uint32, ``groups (G, 5)`` int64 (first face, face count, first vertex, vertex
  count, material or -1), ``materials`` (a JSON string, a list of material summaries whose
  ``texture`` is the ``i`` of ``texture_<i> (H, W, 4)`` uint8), and ``uvs (V, 2)`` /
  ``colors (V, 4)`` float32 when the model has them. Written frame batch by frame batch
  (positions straight into the zip entry, normals through a temporary file appended at the
  end).
* ``.glb``: the rest mesh, one primitive per group (its range of the vertices, TEXCOORD_0,
  COLOR_0, its material with the texture as an embedded PNG), one morph target (position and
  normal deltas) per frame and a LINEAR ``weights`` animation that is one-hot at each baked
  time, so glTF players show exactly the baked frames at those times. Deltas stream to a
  temporary file; the JSON (which holds each target's min/max) is written once they are known.
* ``.usd``, ``.usda``, ``.usdc``: a ``UsdGeom.Mesh`` with time-sampled points, normals and
  extent, ``timeCodesPerSecond = fps`` (time code = seconds * fps), ``primvars:st`` and
  ``primvars:displayColor``, UsdPreviewSurface materials (textures as PNG files next to it).
  Needs ``usd-core`` (``pip install 'vkdqs[usd]'``); USD keeps the samples in memory until it
  saves.

:func:`bake_batch` bakes every clip of many models into one folder on a Dask cluster (the
``batch`` extra), one task per model and one Device per worker process, with a manifest a later
run reads to skip what is done (:mod:`~vkdqs.baking.batch`, :mod:`~vkdqs.baking.batch_plan`,
:mod:`~vkdqs.baking.batch_worker`).

The package: :mod:`~vkdqs.baking.driver` poses the frames and batches them (:func:`bake`,
:func:`bake_to_file`, :class:`Bake`); :mod:`~vkdqs.baking.surface` summarizes the look;
:mod:`~vkdqs.baking.writers` is what the format modules (:mod:`~vkdqs.baking.npz`,
:mod:`~vkdqs.baking.glb`, :mod:`~vkdqs.baking.usd`) share.
"""

from __future__ import annotations

from .batch import BatchRecord, BatchReport, bake_batch
from .driver import FORMATS, MAX_FPS, MAX_FRAMES, Bake, BakeInfo, bake, bake_to_file
from .surface import BakeGroup

__all__ = [
    "FORMATS",
    "MAX_FPS",
    "MAX_FRAMES",
    "Bake",
    "BakeGroup",
    "BakeInfo",
    "BatchRecord",
    "BatchReport",
    "bake",
    "bake_batch",
    "bake_to_file",
]
