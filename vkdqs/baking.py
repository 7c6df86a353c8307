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

Every format keeps the model's look (:class:`_Surface`): each vertex's ``TEXCOORD_0`` and
``COLOR_0`` and the primitives' materials, as runs of faces with one material
(:class:`BakeGroup`; each covers a range of the vertices too, as the primitives did).

* ``.npz``: ``times (F,)`` float64, ``positions (F, V, 3)`` and ``normals (F, V, 3)`` float32,
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
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import sys
import tempfile
import time as _time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from . import methods, reference
from .errors import CapabilityError, InputError, LimitError
from .gltf.parts import ScenePart, scene_parts, skin_matrices, skinning_inputs
from .gpu import Device
from .material import Material, Sampler
from .skinner import Skinner

if TYPE_CHECKING:
    from .gltf import GltfScene

__all__ = [
    "FORMATS",
    "MAX_FPS",
    "MAX_FRAMES",
    "Bake",
    "BakeGroup",
    "BakeInfo",
    "bake",
    "bake_to_file",
]

#: File extensions :meth:`Bake.save` and :func:`bake_to_file` write.
FORMATS = (".npz", ".glb", ".usd", ".usda", ".usdc")
MAX_FPS = 1000.0
#: The most frames one bake may have.
MAX_FRAMES = 1_000_000
#: Output bytes (positions + normals) of one batch of frames: one skin_many submission.
BATCH_BYTES = 64 * 2**20
_COPY_CHUNK = 16 * 2**20
_USD_HINT = "writing USD needs usd-core: pip install 'vkdqs[usd]' (or pip install usd-core)"


# ------------------------------------------------------------------------------------------------
# results
# ------------------------------------------------------------------------------------------------


class BakeGroup(NamedTuple):
    """Triangles ``faces[first_face : first_face + face_count]``, using only the vertices
    ``first_vertex : first_vertex + vertex_count``, drawn with ``materials[material]`` (None:
    glTF's default material)."""

    first_face: int
    face_count: int
    first_vertex: int
    vertex_count: int
    material: int | None


@dataclass(frozen=True, eq=False)
class _Surface:
    """What a baked mesh looks like: per-vertex uvs and colours, materials, material groups."""

    uvs: NDArray[np.float32] | None
    colors: NDArray[np.float32] | None
    materials: tuple[Material, ...]
    groups: tuple[BakeGroup, ...]

    def check(self, vertices: int, faces: int) -> None:
        """InputError unless the groups tile the faces and vertices in order, name existing
        materials, and uvs/colors have a row per vertex (a :class:`Bake` edited by hand)."""
        face = vertex = 0
        for g in self.groups:  # a few groups
            if (g.first_face, g.first_vertex) != (face, vertex) or min(g[1], g[3]) < 1:
                raise InputError(f"Bake.groups must cover the faces and vertices in order, got {g}")
            if g.material is not None and not 0 <= g.material < len(self.materials):
                raise InputError(f"Bake.groups: {g} names a material of {len(self.materials)}")
            face, vertex = face + g.face_count, vertex + g.vertex_count
        if (face, vertex) != (faces, vertices):
            raise InputError(
                f"Bake.groups cover {face} faces and {vertex} vertices of {faces} and {vertices}"
            )
        for name, a, width in (("uvs", self.uvs, 2), ("colors", self.colors, 4)):
            if a is not None and np.shape(a) != (vertices, width):
                raise InputError(f"Bake.{name} must be ({vertices}, {width}), got {np.shape(a)}")

    def textures(self) -> tuple[list[NDArray[np.uint8]], list[int | None]]:
        """The distinct texture arrays, and each material's index into them (or None)."""
        found: dict[int, int] = {}
        out: list[NDArray[np.uint8]] = []
        index: list[int | None] = []
        for m in self.materials:  # a few materials
            if m.texture is None:
                index.append(None)
                continue
            if id(m.texture) not in found:
                found[id(m.texture)] = len(out)
                out.append(m.texture)
            index.append(found[id(m.texture)])
        return out, index


def _surface(scene: GltfScene, parts: list[ScenePart]) -> _Surface:
    """The uvs, colours and material groups of ``parts`` merged in order (as :class:`_Frames`
    merges their vertices and faces): one group per run of primitives with one material."""
    # (source material, faces, vertices) of each primitive, in the order the parts merge them;
    # a primitive without triangles (e.g. a strip of two indices) joins its neighbour's run
    runs: list[list] = []
    lead = 0  # vertices of such primitives before the first run
    for part in parts:  # over parts, then their few primitives
        for p in scene.meshes[part.mesh].primitives:
            nf = int(p.indices.size) // 3
            if nf == 0:
                if runs:
                    runs[-1][2] += p.vertex_count
                else:
                    lead += p.vertex_count
            elif runs and runs[-1][0] == p.material:
                runs[-1][1] += nf
                runs[-1][2] += p.vertex_count
            else:
                runs.append([p.material, nf, p.vertex_count + lead])
                lead = 0
    groups: list[BakeGroup] = []
    index: dict[int, int] = {}
    materials: list[Material] = []
    face, vertex = 0, 0
    for source, nf, nv in runs:  # over runs: material indices in order of first use
        m = None
        if source is not None:
            m = index.setdefault(source, len(materials))
            if m == len(materials):
                materials.append(scene.materials[source])
        groups.append(BakeGroup(face, nf, vertex, nv, m))
        face += nf
        vertex += nv
    merged = {}
    for key, width, fill in (("uvs", 2, 0.0), ("colors", 4, 1.0)):
        arrays = [getattr(part.geometry, key) for part in parts]
        merged[key] = (
            None
            if all(a is None for a in arrays)
            else np.concatenate(
                [
                    np.full((part.geometry.vertex_count, width), fill, np.float32)
                    if a is None
                    else a
                    for part, a in zip(parts, arrays, strict=True)
                ]
            ).astype(np.float32)
        )
    return _Surface(merged["uvs"], merged["colors"], tuple(materials), tuple(groups))


@dataclass(eq=False)
class Bake:
    """Baked frames of one animation, world space, every drawn part merged into one mesh.

    Attributes
    ----------
    times : ndarray of float64, (F,)
        Seconds of each frame: ``start + i / fps``.
    positions, normals : ndarray of float32, (F, V, 3)
    faces : ndarray of uint32, (T, 3)
    rest_positions, rest_normals : ndarray of float32, (V, 3)
        The mesh at the rest pose (the ``.glb`` base mesh).
    fps : float
    method : str
    animation : str
        The animation's name (``"rest"`` for the rest pose).
    uvs : ndarray of float32, (V, 2), or None
        ``TEXCOORD_0`` of every part (zeros on parts without; None when no part has them).
    colors : ndarray of float32, (V, 4), or None
        ``COLOR_0`` (linear RGBA; white on parts without; None when no part has them).
    materials : tuple of Material
        The source materials the parts use, in order of first use.
    groups : tuple of BakeGroup
        Consecutive runs of triangles (and of the vertices they use) with one material, covering
        ``faces`` and the vertices in order; one glTF primitive each in a ``.glb``.
    """

    times: NDArray[np.float64]
    positions: NDArray[np.float32]
    normals: NDArray[np.float32]
    faces: NDArray[np.uint32]
    rest_positions: NDArray[np.float32]
    rest_normals: NDArray[np.float32]
    fps: float
    method: str
    animation: str
    uvs: NDArray[np.float32] | None = None
    colors: NDArray[np.float32] | None = None
    materials: tuple[Material, ...] = ()
    groups: tuple[BakeGroup, ...] = ()

    def save(self, path: str | Path) -> Path:
        """Write the bake as ``.npz``, ``.glb``, ``.usd``, ``.usda`` or ``.usdc``; returns the
        path."""
        path = _check_path(path)
        groups = self.groups or (BakeGroup(0, len(self.faces), 0, len(self.rest_positions), None),)
        surface = _Surface(self.uvs, self.colors, tuple(self.materials), tuple(groups))
        surface.check(len(self.rest_positions), len(self.faces))
        writer = _open_writer(
            path, self.times, self.faces, self.rest_positions, self.rest_normals, self.fps, surface
        )
        try:
            step = _batch_frames(self.positions.shape[1], len(self.times))
            for i in range(0, len(self.times), step):  # over batches of frames
                writer.write(self.positions[i : i + step], self.normals[i : i + step])
            writer.finish()
        except BaseException:
            writer.abort()
            raise
        return path


@dataclass(frozen=True)
class BakeInfo:
    """What :func:`bake_to_file` wrote."""

    path: Path
    frames: int
    vertices: int
    triangles: int
    fps: float
    method: str
    animation: str
    seconds: float


# ------------------------------------------------------------------------------------------------
# frames
# ------------------------------------------------------------------------------------------------


def _check_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise InputError(
            f"{path.name}: cannot bake to {path.suffix or 'a file without extension'!r}; "
            f"use one of {', '.join(FORMATS)}"
        )
    return path


def frame_times(start: float, end: float, fps: float) -> NDArray[np.float64]:
    """``start, start + 1/fps, ...`` up to ``end`` (inclusive, within a millionth of a frame)."""
    for name, value in (("start", start), ("end", end)):
        if not math.isfinite(value) or value < 0.0:
            raise InputError(f"{name} must be a finite time >= 0 seconds, got {value!r}")
    if not (math.isfinite(fps) and 0.0 < fps <= MAX_FPS):
        raise InputError(f"fps must be within (0, {MAX_FPS:g}], got {fps!r}")
    if end < start:
        raise InputError(f"end ({end:g} s) is before start ({start:g} s)")
    count = math.floor((end - start) * fps + 1e-6) + 1
    if count > MAX_FRAMES:
        raise LimitError(
            f"{count} frames ({end - start:g} s at {fps:g} fps) exceed {MAX_FRAMES}; "
            "lower the fps or bake a shorter range (start, end)"
        )
    return start + np.arange(count) / fps


def _batch_frames(vertices: int, frames: int) -> int:
    return int(max(1, min(frames, BATCH_BYTES // max(24 * vertices, 1))))


def _animation(scene: GltfScene, animation: int | str | None) -> tuple[int | None, str]:
    """(index or None, name) of ``animation``: an index, a name, or None / "rest"."""
    if animation is None or animation == "rest" or (animation == 0 and not scene.animations):
        return None, "rest"  # the first animation of a file without any: its rest pose
    names = [a.name for a in scene.animations]
    if isinstance(animation, str) and animation in names:
        index = names.index(animation)
    elif (
        isinstance(animation, (int, np.integer))
        and not isinstance(animation, bool)
        and 0 <= animation < len(names)
    ):
        index = int(animation)
    else:
        have = ", ".join(f"{i} {n!r}" for i, n in enumerate(names)) or "none"
        raise InputError(
            f"{scene.path.name}: no animation {animation!r} (animations: {have}; or 'rest')"
        )
    return index, names[index] or str(index)


class _Frames:
    """Poses the scene's parts at given times: skinned parts on the GPU, rigid ones in numpy."""

    def __init__(self, scene: GltfScene, method: str, device: Device) -> None:
        methods.get(method)  # InputError naming the methods
        self.scene = scene
        self.method = method
        self.parts: list[ScenePart] = scene_parts(scene)
        if not self.parts:
            raise InputError(
                f"{scene.path.name}: nothing to bake (no mesh with triangles is placed by a node)"
            )
        counts = [p.geometry.vertex_count for p in self.parts]
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.vertex_count = int(self.offsets[-1])
        self.faces = np.concatenate(
            [
                p.geometry.indices.reshape(-1, 3).astype(np.int64) + off
                for p, off in zip(self.parts, self.offsets, strict=False)
            ]
        ).astype(np.uint32)
        self.surface = _surface(scene, self.parts)
        if (
            sum(g.face_count for g in self.surface.groups) != len(self.faces)
            or sum(g.vertex_count for g in self.surface.groups) != self.vertex_count
        ):  # the parts' primitives are what the geometry merged; a mismatch is a vkdqs bug
            raise AssertionError("bake: material groups do not cover the merged mesh")
        self.skins = sorted({p.skin for p in self.parts if p.kind == "skinned"})
        # part index -> its Skinner; the parts of one mesh with skins of one joint count share
        # one (several nodes may draw one mesh, each posed by its own skin)
        self.skinners: dict[int, Skinner] = {}
        shared: dict[tuple[int, int], Skinner] = {}
        try:
            for i, p in enumerate(self.parts):
                if p.kind == "skinned":
                    geometry, extra = skinning_inputs(scene, p, method)
                    # parts that need their own skin's rest frames share no Skinner
                    key = (id(p.geometry), p.bone_count, p.skin if extra else None)
                    if key not in shared:
                        sk = Skinner(
                            device, geometry, bone_count=p.bone_count, method=method, **extra
                        )
                        # a whole batch (plus its bones) in one submission
                        sk.max_batch_bytes = max(sk.max_batch_bytes, 2 * BATCH_BYTES)
                        shared[key] = sk
                    self.skinners[i] = shared[key]
        except BaseException:
            for sk in shared.values():
                sk.close()
            raise

    def close(self) -> None:
        for sk in {id(s): s for s in self.skinners.values()}.values():
            sk.close()

    def pose(
        self, animation: int | None, times: NDArray[np.float64]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """(P, V, 3) float32 positions and normals at ``times`` (P of them)."""
        scene = self.scene
        globs = [scene.node_global_matrices(animation, t) for t in times]  # over frames
        joints = [skin_matrices(scene, self.skins, g) for g in globs]
        shape = (len(times), self.vertex_count, 3)
        one = len(self.parts) == 1
        pos = None if one else np.empty(shape, np.float32)
        nrm = None if one else np.empty(shape, np.float32)
        for i, part in enumerate(self.parts):  # over parts; whole arrays inside
            g = part.geometry
            # (P, M) morph weights per frame (the animation's, else the node's, else the mesh's)
            weights = (
                np.stack([scene.morph_weights(part.mesh, part.node, animation, t) for t in times])
                if g.morph_target_count
                else None
            )
            if part.kind == "skinned":
                mats = np.stack([j[part.skin] for j in joints])
                try:
                    p, n = self.skinners[i].skin_many(mats, morph_weights=weights)
                except InputError as exc:
                    raise InputError(
                        f"{scene.path.name}: skin {part.skin} "
                        f"({scene.skins[part.skin].name!r}): {self.method} cannot take its joint "
                        f"matrices between {times[0]:g} and {times[-1]:g} s: {exc} "
                        "(try method 'lbs')"
                    ) from exc
            else:
                zeros = np.zeros((g.vertex_count, 1), np.int64)
                ones = np.ones((g.vertex_count, 1))
                rests = (
                    [(g.positions, g.normals)] * len(globs)
                    if weights is None
                    else [
                        reference.morph(
                            g.positions, g.normals, g.morph_positions, g.morph_normals, w
                        )
                        for w in weights  # over frames
                    ]
                )
                frames = [
                    reference.skin_lbs(rp, rn, zeros, ones, gl[part.node][None])
                    for (rp, rn), gl in zip(rests, globs, strict=True)  # over frames
                ]
                p = np.array([f[0] for f in frames], np.float32)
                n = np.array([f[1] for f in frames], np.float32)
            if one:
                return p, n
            assert pos is not None and nrm is not None
            a, b = self.offsets[i], self.offsets[i + 1]
            pos[:, a:b] = p
            nrm[:, a:b] = n
        assert pos is not None and nrm is not None
        return pos, nrm


def _progress(total: int, enabled: bool, label: str) -> Any:
    """A tqdm bar on stderr (frames done, frames/s), or None when off or tqdm is missing."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    try:  # a terminal that reports a size of 0 (e.g. a bare pty) would hide the bar
        size = os.get_terminal_size(sys.stderr.fileno())
        ncols, nrows = size.columns or 80, size.lines or 24
    except (OSError, ValueError):
        ncols, nrows = 80, 24
    return tqdm(total=total, unit="frame", desc=label, file=sys.stderr, ncols=ncols, nrows=nrows)


def _run(
    scene: GltfScene | str | Path,
    *,
    animation: int | str | None,
    fps: float,
    method: str,
    start: float | None,
    end: float | None,
    device: Device | None,
    progress: bool,
    sink: Callable[[_Frames, NDArray, tuple[NDArray, NDArray]], Callable[[NDArray, NDArray], None]],
) -> tuple[_Frames, NDArray[np.float64], str]:
    """Bake, handing each batch of frames to what ``sink(frames, times, rest)`` returns."""
    if not isinstance(scene, (str, Path)):
        gltf = scene
    else:
        from .gltf import load_gltf

        gltf = load_gltf(scene)
    index, name = _animation(gltf, animation)
    try:
        fps = float(fps)
        start = 0.0 if start is None else float(start)
        if end is None:
            end = max(start, gltf.animations[index].duration if index is not None else start)
        end = float(end)
    except (TypeError, ValueError) as exc:
        raise InputError(f"fps, start and end must be numbers: {exc}") from None
    times = frame_times(start, end, fps)
    own = device is None
    dev = Device() if device is None else device
    try:
        frames = _Frames(gltf, method, dev)
        try:
            rest = frames.pose(None, np.zeros(1))
            put = sink(frames, times, (rest[0][0], rest[1][0]))
            step = _batch_frames(frames.vertex_count, len(times))
            bar = _progress(len(times), progress, f"{gltf.path.name} {name}")
            try:
                for i in range(0, len(times), step):  # over batches of frames
                    batch = times[i : i + step]
                    put(*frames.pose(index, batch))
                    if bar is not None:
                        bar.update(len(batch))
            finally:
                if bar is not None:
                    bar.close()
        finally:
            frames.close()
    finally:
        if own:
            dev.close()
    return frames, times, name


def bake(
    scene: GltfScene | str | Path,
    *,
    animation: int | str | None = 0,
    fps: float = 30.0,
    method: str = "dqs",
    start: float | None = None,
    end: float | None = None,
    device: Device | None = None,
    progress: bool = False,
) -> Bake:
    """Bake ``animation`` of ``scene`` at ``fps`` frames per second into memory.

    Parameters
    ----------
    scene : GltfScene, or the path of a glTF file
    animation : int, str or None
        Index or name; None (or ``"rest"``) for the rest pose.
    fps : float
        Frames per second, within (0, 1000].
    method : str
        A :class:`~vkdqs.Skinner` method ("dqs", "dqs_scale", "lbs", ...).
    start, end : float, optional
        Seconds, >= 0; default the whole animation (0 to its duration). Frames are at
        ``start + i / fps`` up to ``end``.
    device : Device, optional
        Default: a Device of its own, closed afterwards.
    progress : bool
        Show a progress bar on stderr (needs tqdm).

    Returns
    -------
    Bake

    Raises
    ------
    InputError
        An unknown animation or method, a bad fps or range, joint matrices the method cannot
        take (e.g. a mirroring joint for DQS).
    LimitError
        More than :data:`MAX_FRAMES` frames.
    """
    out: dict[str, Any] = {}

    def sink(frames: _Frames, times: NDArray, rest: tuple[NDArray, NDArray]):
        shape = (len(times), frames.vertex_count, 3)
        out.update(rest=rest, positions=np.empty(shape, np.float32), done=0)
        out["normals"] = np.empty(shape, np.float32)

        def put(p: NDArray, n: NDArray) -> None:  # filled in place: no copy of the whole bake
            i = out["done"]
            out["positions"][i : i + len(p)] = p
            out["normals"][i : i + len(p)] = n
            out["done"] = i + len(p)

        return put

    frames, times, name = _run(
        scene,
        animation=animation,
        fps=fps,
        method=method,
        start=start,
        end=end,
        device=device,
        progress=progress,
        sink=sink,
    )
    return Bake(
        times,
        out["positions"],
        out["normals"],
        frames.faces,
        *out["rest"],
        float(fps),
        method,
        name,
        frames.surface.uvs,
        frames.surface.colors,
        frames.surface.materials,
        frames.surface.groups,
    )


def bake_to_file(
    scene: GltfScene | str | Path,
    path: str | Path,
    *,
    animation: int | str | None = 0,
    fps: float = 30.0,
    method: str = "dqs",
    start: float | None = None,
    end: float | None = None,
    device: Device | None = None,
    progress: bool = False,
) -> BakeInfo:
    """Bake like :func:`bake`, streaming the frames into ``path`` (``.npz``, ``.glb``,
    ``.usd``, ``.usda``, ``.usdc``) one batch at a time.

    The file appears only when complete (it is written under a temporary name next to it and
    renamed). Raises what :func:`bake` raises, and :class:`~vkdqs.CapabilityError` for USD
    without usd-core, :class:`~vkdqs.LimitError` for a ``.glb`` past 4 GiB.
    """
    path = _check_path(path)
    if not path.parent.is_dir():
        raise InputError(f"{path}: the folder {str(path.parent)!r} does not exist; create it first")
    if path.suffix.lower() != ".npz" and path.suffix.lower() != ".glb":
        _import_pxr()  # fail before baking
    t0 = _time.perf_counter()
    writers: list[_Writer] = []

    def sink(frames: _Frames, times: NDArray, rest: tuple[NDArray, NDArray]):
        writers.append(
            _open_writer(path, times, frames.faces, rest[0], rest[1], float(fps), frames.surface)
        )
        return writers[0].write

    try:
        frames, times, name = _run(
            scene,
            animation=animation,
            fps=fps,
            method=method,
            start=start,
            end=end,
            device=device,
            progress=progress,
            sink=sink,
        )
        writers[0].finish()
    except BaseException:
        for w in writers:
            w.abort()
        raise
    return BakeInfo(
        path,
        len(times),
        frames.vertex_count,
        len(frames.faces),
        float(fps),
        method,
        name,
        _time.perf_counter() - t0,
    )


# ------------------------------------------------------------------------------------------------
# writers
# ------------------------------------------------------------------------------------------------


class _Writer(Protocol):
    def write(self, positions: NDArray, normals: NDArray) -> None: ...

    def finish(self) -> None: ...

    def abort(self) -> None: ...


def _partial(path: Path) -> Path:
    """A temporary name next to ``path`` with the same extension (USD picks its format by it)."""
    return path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")


def _bytes(a: NDArray, dtype: str = "<f4") -> memoryview:
    return memoryview(np.ascontiguousarray(a, dtype=dtype)).cast("B")


def _open_writer(
    path: Path,
    times: NDArray,
    faces: NDArray,
    rest_positions: NDArray,
    rest_normals: NDArray,
    fps: float,
    surface: _Surface,
) -> _Writer:
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return _NpzWriter(path, times, faces, len(rest_positions), surface)
    if suffix == ".glb":
        return _GlbWriter(path, times, faces, rest_positions, rest_normals, surface)
    return _UsdWriter(path, times, faces, fps, surface)


# -- materials as files write them ---------------------------------------------------------------

_GLTF_MAG = {"nearest": 9728, "linear": 9729}
_GLTF_MIN = {
    ("nearest", None): 9728,
    ("linear", None): 9729,
    ("nearest", "nearest"): 9984,
    ("linear", "nearest"): 9985,
    ("nearest", "linear"): 9986,
    ("linear", "linear"): 9987,
}
_GLTF_WRAP = {"clamp": 33071, "mirror": 33648, "repeat": 10497}
_TRANSFORM = "KHR_texture_transform"


def _png(rgba: NDArray[np.uint8]) -> bytes:
    """Lossless PNG bytes of an (H, W, 4) uint8 image (Pillow)."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgba, np.uint8), "RGBA").save(out, "PNG")
    return out.getvalue()


def _gltf_sampler(s: Sampler) -> dict[str, int]:
    return {
        "magFilter": _GLTF_MAG[s.mag_filter],
        "minFilter": _GLTF_MIN[(s.min_filter, s.mipmap)],
        "wrapS": _GLTF_WRAP[s.wrap_s],
        "wrapT": _GLTF_WRAP[s.wrap_t],
    }


def _texture_transform(m: NDArray[np.float64]) -> dict[str, Any] | None:
    """``KHR_texture_transform`` (offset, rotation, scale) of a uv matrix
    (:func:`vkdqs.material.uv_transform`: what glTF materials load as), None for the identity.
    A hand-made matrix with a shear, which the extension cannot express, loses the shear."""
    if np.array_equal(m, np.eye(3)):
        return None
    # T R S: column 0 of the 2x2 part is sx (cos, -sin), column 1 is sy (sin, cos)
    sx = float(np.hypot(m[0, 0], m[1, 0]))
    rotation = float(np.arctan2(-m[1, 0], m[0, 0]))
    c, s = np.cos(rotation), np.sin(rotation)
    sy = float(s * m[0, 1] + c * m[1, 1])
    out: dict[str, Any] = {}
    if m[0, 2] != 0.0 or m[1, 2] != 0.0:
        out["offset"] = [float(m[0, 2]), float(m[1, 2])]
    if rotation != 0.0:
        out["rotation"] = rotation
    if sx != 1.0 or sy != 1.0:
        out["scale"] = [sx, sy]
    return out


def _material_summary(m: Material, texture: int | None) -> dict[str, Any]:
    """A JSON-friendly description of a material (the ``.npz`` ``materials`` entry)."""
    return {
        "name": m.name,
        "base_color": list(m.base_color),
        "texture": texture,
        "texture_shape": None if m.texture is None else list(m.texture.shape),
        "sampler": {
            "mag_filter": m.sampler.mag_filter,
            "min_filter": m.sampler.min_filter,
            "mipmap": m.sampler.mipmap,
            "wrap_s": m.sampler.wrap_s,
            "wrap_t": m.sampler.wrap_t,
        },
        "uv_transform": m.uv_transform.tolist(),
        "alpha_mode": m.alpha_mode,
        "alpha_cutoff": m.alpha_cutoff,
        "double_sided": m.double_sided,
    }


def _npy_header(f: IO[bytes], shape: tuple[int, ...], descr: str = "<f4") -> None:
    np.lib.format.write_array_header_2_0(
        f, {"descr": descr, "fortran_order": False, "shape": shape}
    )


class _NpzWriter:
    """An uncompressed .npz written frame batch by frame batch."""

    def __init__(
        self, path: Path, times: NDArray, faces: NDArray, vertices: int, surface: _Surface
    ) -> None:
        self.path, self.tmp = path, _partial(path)
        self.zip = zipfile.ZipFile(self.tmp, "w", zipfile.ZIP_STORED, allowZip64=True)
        self.normals: IO[bytes] | None = None
        textures, texture_of = surface.textures()
        arrays: list[tuple[str, NDArray]] = [
            ("times", np.asarray(times, np.float64)),
            ("faces", faces),
            (
                "groups",
                np.array(
                    [[*g[:4], -1 if g.material is None else g.material] for g in surface.groups],
                    np.int64,
                ).reshape(-1, 5),
            ),
            (
                "materials",
                np.array(
                    json.dumps(
                        [
                            _material_summary(m, t)
                            for m, t in zip(surface.materials, texture_of, strict=True)
                        ]
                    )
                ),
            ),
        ]
        arrays += [
            (k, a) for k, a in (("uvs", surface.uvs), ("colors", surface.colors)) if a is not None
        ]
        arrays += [(f"texture_{i}", t) for i, t in enumerate(textures)]
        try:
            for name, arr in arrays:
                with self.zip.open(f"{name}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, np.asarray(arr, order="C"))
            shape = (len(times), vertices, 3)
            self.positions = self.zip.open("positions.npy", "w", force_zip64=True)
            _npy_header(self.positions, shape)
            self.normals = tempfile.TemporaryFile(dir=path.parent)
            _npy_header(self.normals, shape)
        except BaseException:
            self.abort()
            raise

    def write(self, positions: NDArray, normals: NDArray) -> None:
        self.positions.write(_bytes(positions))
        assert self.normals is not None
        self.normals.write(_bytes(normals))

    def finish(self) -> None:
        self.positions.close()
        assert self.normals is not None
        self.normals.seek(0)
        with self.zip.open("normals.npy", "w", force_zip64=True) as f:
            shutil.copyfileobj(self.normals, f, _COPY_CHUNK)
        self.normals.close()
        self.zip.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            if self.normals is not None:
                self.normals.close()
            self.zip.close()
        except Exception:  # already broken: only clean up
            pass
        self.tmp.unlink(missing_ok=True)


class _GlbWriter:
    """The rest mesh, one morph target per frame, a one-hot LINEAR weights animation; one
    primitive per material group (its own range of the vertex arrays), with TEXCOORD_0,
    COLOR_0 and the materials (base-colour textures as embedded PNGs)."""

    def __init__(
        self,
        path: Path,
        times: NDArray,
        faces: NDArray,
        rest_p: NDArray,
        rest_n: NDArray,
        surface: _Surface,
    ) -> None:
        self.path, self.tmp = path, _partial(path)
        self.times = np.asarray(times, np.float32)
        if len(self.times) > 1 and not np.all(np.diff(self.times) > 0):
            raise InputError(
                "frame times are too close together for glTF's float32 times; "
                "lower the fps or bake an earlier time range"
            )
        self.surface = surface
        self.groups = surface.groups
        # each primitive's indices count from the start of its own vertex range
        shift = np.repeat(
            np.array([g.first_vertex for g in self.groups], np.int64),
            [g.face_count for g in self.groups],
        )
        self.faces = np.ascontiguousarray(np.asarray(faces, np.int64) - shift[:, None], np.uint32)
        self.rest_p = np.ascontiguousarray(rest_p, np.float32)
        self.rest_n = np.ascontiguousarray(rest_n, np.float32)
        textures, self.texture_of = surface.textures()
        self.images = [_png(t) for t in textures]
        # the blobs after the deltas: uvs, colours, images (each padded to 4 bytes)
        self.tail: list[bytes | memoryview] = [
            _bytes(a) for a in (surface.uvs, surface.colors) if a is not None
        ] + self.images
        f, v = len(self.times), len(self.rest_p)
        self.frame_bytes = 24 * v
        self.head = [self.rest_p.nbytes, self.rest_n.nbytes, self.faces.nbytes, 4 * f, 4 * f * f]
        tail_bytes = sum(len(b) + (-len(b) % 4) for b in self.tail)
        self.bin_bytes = sum(self.head) + f * self.frame_bytes + tail_bytes
        json_estimate = 400 * f * len(self.groups) + 4096 + 1024 * len(self.surface.materials)
        if 28 + json_estimate + self.bin_bytes > 2**32 - 1:
            raise LimitError(
                f"{f} frames of {v} vertices make a .glb of about "
                f"{(self.bin_bytes + json_estimate) / 2**30:.1f} GiB, past GLB's 4 GiB; "
                "bake fewer frames or write .npz or .usdc"
            )
        self.lo = np.empty((f, len(self.groups), 3), np.float32)
        self.hi = np.empty((f, len(self.groups), 3), np.float32)
        self.done = 0
        self.deltas = tempfile.TemporaryFile(dir=path.parent)

    def write(self, positions: NDArray, normals: NDArray) -> None:
        d_p = positions - self.rest_p
        d_n = normals - self.rest_n
        i = self.done
        for k, g in enumerate(self.groups):  # over material groups: whole frames inside
            rows = d_p[:, g.first_vertex : g.first_vertex + g.vertex_count]
            self.lo[i : i + len(d_p), k] = rows.min(axis=1)
            self.hi[i : i + len(d_p), k] = rows.max(axis=1)
        self.done += len(d_p)
        for k in range(len(d_p)):  # over frames: position deltas, then normal deltas
            self.deltas.write(_bytes(d_p[k]))
            self.deltas.write(_bytes(d_n[k]))

    def _materials(self, views: list[dict], offset: int) -> tuple[dict[str, Any], bool]:
        """images/samplers/textures/materials JSON (image views appended to ``views`` from
        byte ``offset``), and whether KHR_texture_transform is used."""
        out: dict[str, list] = {"images": [], "samplers": [], "textures": [], "materials": []}
        for data in self.images:  # over distinct images: one view each
            out["images"].append({"bufferView": len(views), "mimeType": "image/png"})
            views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(data)})
            offset += len(data) + (-len(data) % 4)
        samplers: dict[Sampler, int] = {}
        textures: dict[tuple[int, int], int] = {}
        transform_used = False
        for m, t in zip(self.surface.materials, self.texture_of, strict=True):  # few
            pbr: dict[str, Any] = {
                "baseColorFactor": list(m.base_color),
                # vkdqs keeps no metallic-roughness: a rough non-metal, as vkdqs draws it
                "metallicFactor": 0.0,
            }
            if t is not None:
                s = samplers.setdefault(m.sampler, len(samplers))
                if s == len(out["samplers"]):
                    out["samplers"].append(_gltf_sampler(m.sampler))
                tex = textures.setdefault((t, s), len(textures))
                if tex == len(out["textures"]):
                    out["textures"].append({"source": t, "sampler": s})
                info: dict[str, Any] = {"index": tex}
                transform = _texture_transform(m.uv_transform)
                if transform is not None:
                    info["extensions"] = {_TRANSFORM: transform}
                    transform_used = True
                pbr["baseColorTexture"] = info
            mat: dict[str, Any] = {"pbrMetallicRoughness": pbr}
            if m.name:
                mat["name"] = m.name
            if m.alpha_mode != "OPAQUE":
                mat["alphaMode"] = m.alpha_mode
            if m.alpha_mode == "MASK":
                mat["alphaCutoff"] = m.alpha_cutoff
            if m.double_sided:
                mat["doubleSided"] = True
            out["materials"].append(mat)
        return {k: v for k, v in out.items() if v}, transform_used

    def _document(self) -> dict:
        f, groups = len(self.times), self.groups
        views: list[dict[str, Any]] = []
        offset = 0

        def split(row_bytes: int, field: str, target: int) -> list[int]:
            """One view per group over its rows of the next array; their indices."""
            nonlocal offset
            out = []
            for g in groups:  # over material groups
                first, count = getattr(g, f"first_{field}"), getattr(g, f"{field}_count")
                views.append(
                    {
                        "buffer": 0,
                        "byteOffset": offset + row_bytes * first,
                        "byteLength": row_bytes * count,
                        "target": target,
                    }
                )
                out.append(len(views) - 1)
            offset += row_bytes * sum(getattr(g, f"{field}_count") for g in groups)
            return out

        pos_views = split(12, "vertex", 34962)
        nrm_views = split(12, "vertex", 34962)
        idx_views = split(12, "face", 34963)
        for size in (4 * f, 4 * f * f):  # times, one-hot weights
            views.append({"buffer": 0, "byteOffset": offset, "byteLength": size})
            offset += size
        # every target's accessors share the deltas' view: glTF then wants its stride spelled out
        delta_view = len(views)
        views.append(
            {
                "buffer": 0,
                "byteOffset": offset,
                "byteLength": f * self.frame_bytes,
                "byteStride": 12,
                "target": 34962,
            }
        )
        offset += f * self.frame_bytes
        uv_views = split(8, "vertex", 34962) if self.surface.uvs is not None else None
        color_views = split(16, "vertex", 34962) if self.surface.colors is not None else None
        material_json, transform_used = self._materials(views, offset)
        accessors: list[dict[str, Any]] = []

        def add(acc: dict[str, Any]) -> int:
            accessors.append(acc)
            return len(accessors) - 1

        prims = []
        for k, g in enumerate(groups):  # over material groups
            rest = self.rest_p[g.first_vertex : g.first_vertex + g.vertex_count]
            attrs = {
                "POSITION": add(
                    {
                        "bufferView": pos_views[k],
                        "componentType": 5126,
                        "count": g.vertex_count,
                        "type": "VEC3",
                        "min": rest.min(axis=0).tolist(),
                        "max": rest.max(axis=0).tolist(),
                    }
                ),
                "NORMAL": add(
                    {
                        "bufferView": nrm_views[k],
                        "componentType": 5126,
                        "count": g.vertex_count,
                        "type": "VEC3",
                    }
                ),
            }
            prim: dict[str, Any] = {
                "attributes": attrs,
                "indices": add(
                    {
                        "bufferView": idx_views[k],
                        "componentType": 5125,
                        "count": 3 * g.face_count,
                        "type": "SCALAR",
                    }
                ),
                "mode": 4,
            }
            for key, vs, type_ in (
                ("TEXCOORD_0", uv_views, "VEC2"),
                ("COLOR_0", color_views, "VEC4"),
            ):
                if vs is not None:
                    attrs[key] = add(
                        {
                            "bufferView": vs[k],
                            "componentType": 5126,
                            "count": g.vertex_count,
                            "type": type_,
                        }
                    )
            if g.material is not None:
                prim["material"] = g.material
            prims.append(prim)
        times = add(
            {
                "bufferView": 3 * len(groups),
                "componentType": 5126,
                "count": f,
                "type": "SCALAR",
                "min": [float(self.times[0])],
                "max": [float(self.times[-1])],
            }
        )
        weights = add(
            {
                "bufferView": 3 * len(groups) + 1,
                "componentType": 5126,
                "count": f * f,
                "type": "SCALAR",
            }
        )
        for k, g in enumerate(groups):  # over groups, then frames: two accessors each
            targets = []
            for i in range(f):
                base = i * self.frame_bytes + 12 * g.first_vertex
                targets.append(
                    {
                        "POSITION": add(
                            {
                                "bufferView": delta_view,
                                "byteOffset": base,
                                "componentType": 5126,
                                "count": g.vertex_count,
                                "type": "VEC3",
                                "min": self.lo[i, k].tolist(),
                                "max": self.hi[i, k].tolist(),
                            }
                        ),
                        "NORMAL": add(
                            {
                                "bufferView": delta_view,
                                "byteOffset": base + 12 * len(self.rest_p),
                                "componentType": 5126,
                                "count": g.vertex_count,
                                "type": "VEC3",
                            }
                        ),
                    }
                )
            prims[k]["targets"] = targets
        names = [f"frame {i} ({t:.6g} s)" for i, t in enumerate(self.times.tolist())]
        doc: dict[str, Any] = {
            "asset": {"version": "2.0", "generator": "vkdqs bake"},
            "scene": 0,
            "scenes": [{"nodes": [0]}],
            "nodes": [{"name": "bake", "mesh": 0}],
            "meshes": [
                {
                    "name": "bake",
                    "primitives": prims,
                    "weights": [0.0] * f,
                    "extras": {"targetNames": names},
                }
            ],
            "animations": [
                {
                    "name": "bake",
                    "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}],
                    "samplers": [{"input": times, "output": weights, "interpolation": "LINEAR"}],
                }
            ],
            **material_json,
            "buffers": [{"byteLength": self.bin_bytes}],
            "bufferViews": views,
            "accessors": accessors,
        }
        if transform_used:
            doc["extensionsUsed"] = [_TRANSFORM]
        return doc

    def finish(self) -> None:
        f = len(self.times)
        text = json.dumps(self._document(), separators=(",", ":")).encode()
        text += b" " * (-len(text) % 4)
        total = 12 + 8 + len(text) + 8 + self.bin_bytes
        if total > 2**32 - 1:
            raise LimitError(f"the .glb would be {total} bytes, past GLB's 4 GiB; write .npz")
        with open(self.tmp, "wb") as out:
            out.write(struct.pack("<III", 0x46546C67, 2, total))
            out.write(struct.pack("<II", len(text), 0x4E4F534A) + text)
            out.write(struct.pack("<II", self.bin_bytes, 0x004E4942))
            for arr in (self.rest_p, self.rest_n, self.faces):
                out.write(_bytes(arr, arr.dtype.newbyteorder("<").str))
            out.write(_bytes(self.times))
            rows = max(1, _COPY_CHUNK // (4 * f))
            for r in range(0, f, rows):  # the one-hot weights, a block of rows at a time
                block = np.zeros((min(rows, f - r), f), np.float32)
                block[np.arange(len(block)), r + np.arange(len(block))] = 1.0
                out.write(_bytes(block))
            self.deltas.seek(0)
            shutil.copyfileobj(self.deltas, out, _COPY_CHUNK)
            for blob in self.tail:  # uvs, colours, images
                out.write(blob)
                out.write(b"\0" * (-len(blob) % 4))
        self.deltas.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.deltas.close()
        self.tmp.unlink(missing_ok=True)


def _import_pxr() -> Any:
    try:
        from pxr import Usd, UsdGeom, Vt
    except ImportError as exc:
        raise CapabilityError(f"{_USD_HINT} ({exc})") from None
    return Usd, UsdGeom, Vt


class _UsdWriter:
    """A UsdGeom.Mesh at /Bake/Mesh with time-sampled points, normals and extent."""

    def __init__(
        self, path: Path, times: NDArray, faces: NDArray, fps: float, surface: _Surface
    ) -> None:
        Usd, UsdGeom, Vt = _import_pxr()
        self.Usd, self.Vt = Usd, Vt
        self.path, self.tmp = path, _partial(path)
        self.tmp.unlink(missing_ok=True)
        self.codes = (np.asarray(times, np.float64) * fps).tolist()
        self.done = 0
        stage = self.stage = Usd.Stage.CreateNew(str(self.tmp))
        stage.SetTimeCodesPerSecond(fps)
        stage.SetFramesPerSecond(fps)
        stage.SetStartTimeCode(self.codes[0])
        stage.SetEndTimeCode(self.codes[-1])
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)  # glTF is +y up, in metres
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        root = UsdGeom.Xform.Define(stage, "/Bake")
        stage.SetDefaultPrim(root.GetPrim())
        mesh = UsdGeom.Mesh.Define(stage, "/Bake/Mesh")
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        faces = np.ascontiguousarray(faces, np.int32)
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), 3, np.int32)))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(faces.reshape(-1)))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        self.points = mesh.CreatePointsAttr()
        self.normals = mesh.CreateNormalsAttr()
        self.extent = mesh.CreateExtentAttr()
        self.textures: list[tuple[Path, NDArray[np.uint8]]] = []
        _usd_surface(stage, mesh, len(faces), surface, path, self.textures)

    def write(self, positions: NDArray, normals: NDArray) -> None:
        Vt, Usd = self.Vt, self.Usd
        lo, hi = positions.min(axis=1), positions.max(axis=1)
        for k in range(len(positions)):  # over frames: one time sample each
            code = Usd.TimeCode(self.codes[self.done + k])
            self.points.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(positions[k])), code)
            self.normals.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(normals[k])), code)
            self.extent.Set(Vt.Vec3fArray.FromNumpy(np.stack([lo[k], hi[k]])), code)
        self.done += len(positions)

    def finish(self) -> None:
        self.stage.GetRootLayer().Save()
        self.stage = None
        for file, rgba in self.textures:  # the PNGs the materials read, next to the file
            file.write_bytes(_png(rgba))
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.stage = None
        self.tmp.unlink(missing_ok=True)


def _usd_surface(
    stage: Any,
    mesh: Any,
    face_count: int,
    surface: _Surface,
    path: Path,
    textures: list[tuple[Path, NDArray[np.uint8]]],
) -> None:
    """``primvars:st`` and ``primvars:displayColor`` of ``mesh``, and a UsdPreviewSurface
    material per source material (a UsdUVTexture reading ``<stem>_texture<i>.png`` next to
    ``path``, appended to ``textures`` for the writer to save), bound to the mesh or, with
    several, to one ``materialBind`` GeomSubset of faces each."""
    from pxr import Gf, Sdf, UsdGeom, UsdShade, Vt

    groups, materials = surface.groups, surface.materials
    primvars = UsdGeom.PrimvarsAPI(mesh)
    vertex = np.repeat(np.arange(len(groups)), [g.vertex_count for g in groups])
    faces = np.repeat(np.arange(len(groups)), [g.face_count for g in groups])
    if surface.uvs is not None:
        # the texture transform of each vertex's material, then USD's t = 1 - v
        mats = np.stack(
            [np.eye(3)]
            + [m.uv_transform if m.texture is not None else np.eye(3) for m in materials]
        )
        which = np.array([0 if g.material is None else g.material + 1 for g in groups])[vertex]
        uv = surface.uvs.astype(np.float64)
        m = mats[which]
        st = np.stack(
            [
                m[:, 0, 0] * uv[:, 0] + m[:, 0, 1] * uv[:, 1] + m[:, 0, 2],
                1.0 - (m[:, 1, 0] * uv[:, 0] + m[:, 1, 1] * uv[:, 1] + m[:, 1, 2]),
            ],
            axis=1,
        ).astype(np.float32)
        primvars.CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.vertex).Set(
            Vt.Vec2fArray.FromNumpy(st)
        )
    # displayColor: COLOR_0 x the base colour factor (linear, as both are)
    factors = np.array([[1.0, 1.0, 1.0]] + [m.base_color[:3] for m in materials], np.float32)[
        np.array([0 if g.material is None else g.material + 1 for g in groups])
    ]
    if surface.colors is not None:
        color, how = surface.colors[:, :3] * factors[vertex], UsdGeom.Tokens.vertex
    elif len(groups) == 1:
        color, how = factors, UsdGeom.Tokens.constant
    else:
        color, how = factors[faces], UsdGeom.Tokens.uniform
    primvars.CreatePrimvar("displayColor", Sdf.ValueTypeNames.Color3fArray, how).Set(
        Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(color, np.float32))
    )
    if any(m.double_sided for m in materials):
        mesh.CreateDoubleSidedAttr(True)
    if not materials:
        return
    images, texture_of = surface.textures()
    for i, rgba in enumerate(images):  # over distinct textures
        textures.append((path.with_name(f"{path.stem}_texture{i}.png"), rgba))
    UsdGeom.Scope.Define(stage, "/Bake/Materials")
    shaded = []
    for i, (m, t) in enumerate(zip(materials, texture_of, strict=True)):  # a few materials
        where = f"/Bake/Materials/Material{i}"
        mat = UsdShade.Material.Define(stage, where)
        if m.name:  # prim names are identifiers; the glTF name is kept as the display name
            mat.GetPrim().SetDisplayName(m.name)
        pbr = UsdShade.Shader.Define(stage, f"{where}/PreviewSurface")
        pbr.CreateIdAttr("UsdPreviewSurface")
        pbr.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(0.0)
        pbr.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(1.0)
        mat.CreateSurfaceOutput().ConnectToSource(pbr.ConnectableAPI(), "surface")
        diffuse = pbr.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f)
        # glTF's OPAQUE ignores alpha: only MASK and BLEND set an opacity
        see_through = m.alpha_mode != "OPAQUE"
        opacity = pbr.CreateInput("opacity", Sdf.ValueTypeNames.Float) if see_through else None
        if t is not None:
            reader = UsdShade.Shader.Define(stage, f"{where}/TexCoordReader")
            reader.CreateIdAttr("UsdPrimvarReader_float2")
            reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set("st")
            reader.CreateOutput("result", Sdf.ValueTypeNames.Float2)
            tex = UsdShade.Shader.Define(stage, f"{where}/BaseColorTexture")
            tex.CreateIdAttr("UsdUVTexture")
            tex.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(
                Sdf.AssetPath(f"./{textures[t][0].name}")
            )
            tex.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(
                reader.ConnectableAPI(), "result"
            )
            tex.CreateInput("wrapS", Sdf.ValueTypeNames.Token).Set(m.sampler.wrap_s)
            tex.CreateInput("wrapT", Sdf.ValueTypeNames.Token).Set(m.sampler.wrap_t)
            tex.CreateInput("sourceColorSpace", Sdf.ValueTypeNames.Token).Set("sRGB")
            tex.CreateInput("scale", Sdf.ValueTypeNames.Float4).Set(Gf.Vec4f(*m.base_color))
            tex.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
            tex.CreateOutput("a", Sdf.ValueTypeNames.Float)
            diffuse.ConnectToSource(tex.ConnectableAPI(), "rgb")
            if opacity is not None:
                opacity.ConnectToSource(tex.ConnectableAPI(), "a")
        elif surface.colors is not None:
            reader = UsdShade.Shader.Define(stage, f"{where}/DisplayColorReader")
            reader.CreateIdAttr("UsdPrimvarReader_float3")
            reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set("displayColor")
            reader.CreateOutput("result", Sdf.ValueTypeNames.Float3)
            diffuse.ConnectToSource(reader.ConnectableAPI(), "result")
        else:
            diffuse.Set(Gf.Vec3f(*m.base_color[:3]))
        if opacity is not None and t is None:
            opacity.Set(m.base_color[3])
        if m.alpha_mode == "MASK":
            pbr.CreateInput("opacityThreshold", Sdf.ValueTypeNames.Float).Set(m.alpha_cutoff)
        shaded.append(mat)
    used = sorted({g.material for g in groups if g.material is not None})
    binding = UsdShade.MaterialBindingAPI.Apply(mesh.GetPrim())
    if len(groups) == 1 and used:
        binding.Bind(shaded[used[0]])
        return
    for k in used:  # one subset of faces per material
        ids = np.flatnonzero(np.array([g.material == k for g in groups])[faces]).astype(np.int32)
        subset = binding.CreateMaterialBindSubset(
            f"Material{k}", Vt.IntArray.FromNumpy(ids), UsdGeom.Tokens.face
        )
        UsdShade.MaterialBindingAPI.Apply(subset.GetPrim()).Bind(shaded[k])
