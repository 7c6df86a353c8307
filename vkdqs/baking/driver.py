"""The bake's driver: poses a glTF scene's parts frame by frame (skinned parts on the GPU, a batch
of frames per ``Skinner.skin_many`` submission; rigid parts in numpy), merges them into one mesh
and hands each batch to the writer of the file's format (or keeps it, for :func:`bake`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time as _time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .. import methods, reference
from ..engine.passes import MOTION_STEP
from ..engine.skinner import Skinner
from ..errors import InputError, LimitError
from ..files import check_output, output_error
from ..gltf.parts import ScenePart, scene_parts, skin_matrices, skinning_inputs
from ..gpu import Device
from ..material import Material
from .glb import GlbWriter
from .npz import NpzWriter
from .surface import BakeGroup, Surface, drop_degenerate, scene_surface
from .usd import UsdWriter, import_pxr
from .writers import Opener, Writer

if TYPE_CHECKING:
    from ..gltf import GltfScene

#: The writer of each file extension :meth:`Bake.save` and :func:`bake_to_file` write.
WRITERS: dict[str, Opener] = {
    ".npz": NpzWriter,
    ".glb": GlbWriter,
    ".usd": UsdWriter,
    ".usda": UsdWriter,
    ".usdc": UsdWriter,
}
#: File extensions :meth:`Bake.save` and :func:`bake_to_file` write.
FORMATS = tuple(WRITERS)
MAX_FPS = 1000.0
#: The most frames one bake may have.
MAX_FRAMES = 1_000_000
#: Output bytes (positions + normals) of one batch of frames: one skin_many submission.
BATCH_BYTES = 64 * 2**20


# ------------------------------------------------------------------------------------------------
# results
# ------------------------------------------------------------------------------------------------


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
    dropped_faces : int
        The model's degenerate triangles left out of ``faces`` (zero area at rest, or a
        repeated vertex: Blender's USD importer loses a mesh's per-face materials over them).
    boxes : ndarray of float32, (F, 2, 3), or None
        Each frame's exact axis-aligned box (min, max) of ``positions``: skinned parts' boxes
        reduced on the GPU as they were skinned. None (a Bake made by hand): computed from
        ``positions`` where needed (:meth:`frame_boxes`).
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
    dropped_faces: int = 0
    boxes: NDArray[np.float32] | None = None

    def frame_boxes(self) -> NDArray[np.float32]:
        """(F, 2, 3) float32: each frame's box (min, max) of its positions."""
        if self.boxes is not None:
            return self.boxes
        return boxes_of(self.positions)

    def save(self, path: str | Path, *, inputs: Sequence[str | Path] = ()) -> Path:
        """Write the bake as ``.npz``, ``.glb``, ``.usd``, ``.usda`` or ``.usdc``; returns the
        path.

        Written as :func:`bake_to_file` writes (under a temporary name beside ``path``, renamed
        when complete, never through a link). ``inputs``: files ``path`` must not be (e.g. the
        model baked). Raises :class:`~vkdqs.OutputError` for an output that is a folder, not a
        regular file or one of ``inputs``, or that cannot be written (a full disk, no
        permission; the old file is then unchanged).
        """
        path = _check_path(path)
        inputs = tuple(Path(p) for p in inputs)
        check_output(path, inputs)
        groups = self.groups or (BakeGroup(0, len(self.faces), 0, len(self.rest_positions), None),)
        surface = Surface(self.uvs, self.colors, tuple(self.materials), tuple(groups))
        surface.check(len(self.rest_positions), len(self.faces))
        writer = _open_writer(
            path,
            self.times,
            self.faces,
            self.rest_positions,
            self.rest_normals,
            self.fps,
            surface,
            inputs,
        )
        try:
            step = _batch_frames(self.positions.shape[1], len(self.times))
            boxes = self.frame_boxes()
            for i in range(0, len(self.times), step):  # over batches of frames
                batch = slice(i, i + step)
                writer.write(self.positions[batch], self.normals[batch], boxes[batch])
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
    #: degenerate triangles of the model left out (zero area at rest, or a repeated vertex)
    dropped_faces: int = 0


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
        #: reduce each frame's box on the GPU (False: the output has no use for it)
        self.boxes = True
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
        self.surface = scene_surface(scene, self.parts)
        if (
            sum(g.face_count for g in self.surface.groups) != len(self.faces)
            or sum(g.vertex_count for g in self.surface.groups) != self.vertex_count
        ):  # the parts' primitives are what the geometry merged; a mismatch is a vkdqs bug
            raise AssertionError("bake: material groups do not cover the merged mesh")
        rest = np.concatenate([p.geometry.positions for p in self.parts])
        self.faces, groups, self.dropped_faces = drop_degenerate(
            self.faces, rest, self.surface.groups
        )
        self.surface = dataclasses.replace(self.surface, groups=groups)
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
                            device, geometry, bone_count=p.bone_count, method=method, inputs=extra
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
    ) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]:
        """(P, V, 3) float32 positions and normals at ``times`` (P of them), and each frame's
        (P, 2, 3) box: the union of the skinned parts' boxes, reduced on the GPU in the
        dispatch that skinned them, and the rigid parts' (numpy, from their vertices); NaN
        when :attr:`boxes` is False (an output that has no use for them: the dispatch is
        cheaper without)."""
        scene = self.scene
        globs = [scene.node_global_matrices(animation, t) for t in times]  # over frames
        _check_finite(scene, np.stack(globs), times, "its world matrix")
        with np.errstate(over="ignore", invalid="ignore"):  # said below, not by numpy
            joints = [skin_matrices(scene, self.skins, g) for g in globs]
        before = None  # the joints MOTION_STEP earlier, for methods that move with the motion
        if any(sk.reads_motion for sk in self.skinners.values()):
            with np.errstate(over="ignore", invalid="ignore"):
                before = [
                    skin_matrices(scene, self.skins, scene.node_global_matrices(animation, t))
                    for t in np.asarray(times) - MOTION_STEP
                ]
        shape = (len(times), self.vertex_count, 3)
        one = len(self.parts) == 1
        pos = None if one else np.empty(shape, np.float32)
        nrm = None if one else np.empty(shape, np.float32)
        boxes = np.empty((len(times), 2, 3), np.float32)
        boxes[:, 0], boxes[:, 1] = np.inf, -np.inf
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
                finite = np.isfinite(mats).all(axis=(2, 3))
                if not finite.all():
                    frame, joint = np.unravel_index(int(np.argmin(finite)), finite.shape)
                    raise InputError(
                        f"{scene.path.name}: skins[{part.skin}]: joint {joint}'s matrix at "
                        f"{times[frame]:g} s overflows float64 (its world matrix times its "
                        "inverse bind matrix)"
                    )
                sk = self.skinners[i]
                motion = {}
                if before is not None and sk.reads_motion:
                    prev = np.stack([j[part.skin] for j in before])
                    if np.isfinite(prev).all():  # (else at rest: the pose's own check says why)
                        motion = {"previous": prev, "dt": MOTION_STEP}
                try:
                    if self.boxes:
                        p, n, box = sk.skin_many(mats, morph_weights=weights, bounds=True, **motion)
                    else:
                        p, n = sk.skin_many(mats, morph_weights=weights, **motion)
                        box = np.full((len(p), 2, 3), np.nan, np.float32)
                except InputError as exc:
                    # LBS takes any finite matrices: the way out, unless it is the method failing
                    general = methods.get("lbs")
                    hint = "" if methods.get(self.method) is general else " (try method 'lbs')"
                    raise InputError(
                        f"{scene.path.name}: skin {part.skin} "
                        f"({scene.skins[part.skin].name!r}): {self.method} cannot take its joint "
                        f"matrices between {times[0]:g} and {times[-1]:g} s: {exc}{hint}"
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
                box = boxes_of(p)
            np.minimum(boxes[:, 0], box[:, 0], out=boxes[:, 0])
            np.maximum(boxes[:, 1], box[:, 1], out=boxes[:, 1])
            if one:
                return p, n, boxes
            assert pos is not None and nrm is not None
            a, b = self.offsets[i], self.offsets[i + 1]
            pos[:, a:b] = p
            nrm[:, a:b] = n
        assert pos is not None and nrm is not None
        return pos, nrm, boxes


def boxes_of(positions: NDArray) -> NDArray[np.float32]:
    """(P, 2, 3) float32 boxes (min, max) of (P, V, 3) positions (numpy: for rigid parts and
    for a Bake made by hand)."""
    p = np.asarray(positions, np.float32)
    if p.shape[1] == 0:
        return np.zeros((len(p), 2, 3), np.float32)
    return np.stack([p.min(axis=1), p.max(axis=1)], axis=1)


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
    sink: Callable[
        [_Frames, NDArray, tuple[NDArray, NDArray]], Callable[[NDArray, NDArray, NDArray], None]
    ],
    boxes: bool = True,
) -> tuple[_Frames, NDArray[np.float64], str]:
    """Bake, handing each batch of frames to what ``sink(frames, times, rest)`` returns."""
    if not isinstance(scene, (str, Path)):
        gltf = scene
    else:
        from ..gltf import load_gltf

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
        frames.boxes = boxes
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
        out["boxes"] = np.empty((len(times), 2, 3), np.float32)

        def put(p: NDArray, n: NDArray, box: NDArray) -> None:  # in place: no copy of the bake
            i = out["done"]
            out["positions"][i : i + len(p)] = p
            out["normals"][i : i + len(p)] = n
            out["boxes"][i : i + len(p)] = box
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
        frames.dropped_faces,
        out["boxes"],
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

    The file appears only when complete: it is written under an unpredictable temporary name
    next to it, created exclusively (never through a link planted there), fsynced and renamed
    over ``path`` (:mod:`vkdqs.files`); on any error or interrupt the temporary is removed and
    an old file at ``path`` is left as it was. Raises what :func:`bake` raises,
    :class:`~vkdqs.CapabilityError` for USD without usd-core, :class:`~vkdqs.LimitError` for a
    ``.glb`` past 4 GiB, and :class:`~vkdqs.OutputError`, before baking, for an output that is
    the model read (also through a link), a folder or not a regular file, or in a folder that
    does not exist, and after, when it cannot be written (a full disk, a quota, the file-size
    limit, no permission).
    """
    path = _check_path(path)
    inputs = (Path(scene),) if isinstance(scene, (str, Path)) else (scene.path,)
    check_output(path, inputs)
    if path.suffix.lower() != ".npz" and path.suffix.lower() != ".glb":
        import_pxr()  # fail before baking
    t0 = _time.perf_counter()
    writers: list[Writer] = []

    def sink(frames: _Frames, times: NDArray, rest: tuple[NDArray, NDArray]):
        _warn_about_size(path, len(times), frames.vertex_count)
        writers.append(
            _open_writer(
                path, times, frames.faces, rest[0], rest[1], float(fps), frames.surface, inputs
            )
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
            boxes=path.suffix.lower() != ".glb",  # a .glb bounds its deltas, not positions
        )
        writers[0].finish()
    except BaseException:
        for w in writers:
            w.abort()
        raise
    _hint_usdc(path)
    return BakeInfo(
        path,
        len(times),
        frames.vertex_count,
        len(frames.faces),
        float(fps),
        method,
        name,
        _time.perf_counter() - t0,
        frames.dropped_faces,
    )


#: Morph targets a WebGL2 glTF viewer may show at most (three.js keeps them in a texture array
#: whose layers its WebGL2 renderer limits): a baked .glb holds one per frame.
GLB_VIEWER_TARGETS = 256
#: A .usda bake larger than this gets a hint toward .usdc.
USDA_HINT_BYTES = 100 * 2**20


def _warn_about_size(path: Path, frames: int, vertices: int) -> None:
    """Warn, before baking, about a .glb whose frames (one morph target each) WebGL2 viewers
    may not show."""
    if path.suffix.lower() == ".glb" and frames > GLB_VIEWER_TARGETS:
        warnings.warn(
            f"{path.name}: {frames} frames are {frames} morph targets; WebGL2 viewers (three.js) "
            f"may not show more than {GLB_VIEWER_TARGETS}: bake fewer (a lower --fps, or "
            "--start/--end) or to USD (.usdc) for those viewers",
            stacklevel=3,
        )


def _hint_usdc(path: Path) -> None:
    """Hint toward .usdc after a large .usda (text) bake."""
    if path.suffix.lower() == ".usda":
        size = path.stat().st_size
        if size > USDA_HINT_BYTES:
            warnings.warn(
                f"{path.name}: {size / 2**20:.0f} MiB of USD text; .usdc holds the same frames "
                "in binary, several times smaller and faster to open",
                stacklevel=3,
            )


def _open_writer(
    path: Path,
    times: NDArray,
    faces: NDArray,
    rest_positions: NDArray,
    rest_normals: NDArray,
    fps: float,
    surface: Surface,
    inputs: Sequence[Path],
) -> Writer:
    """The writer of ``path``'s format (its extension, already checked), whose errors writing
    the file (an ``OSError``: a full disk, no permission) are one-line OutputErrors."""
    existed = os.path.lexists(path)
    try:
        writer = WRITERS[path.suffix.lower()](
            path, times, faces, rest_positions, rest_normals, fps, surface, inputs
        )
    except OSError as exc:
        raise output_error(exc, path, existed=existed) from None
    return _Reported(writer, path, existed)


class _Reported:
    """A writer whose ``OSError``s are :class:`~vkdqs.OutputError`s naming its file."""

    def __init__(self, writer: Writer, path: Path, existed: bool) -> None:
        self.writer, self.path, self.existed = writer, path, existed

    def write(self, positions: NDArray, normals: NDArray, boxes: NDArray) -> None:
        try:
            self.writer.write(positions, normals, boxes)
        except OSError as exc:
            raise output_error(exc, self.path, existed=self.existed) from None

    def finish(self) -> None:
        try:
            self.writer.finish()
        except OSError as exc:
            raise output_error(exc, self.path, existed=self.existed) from None

    def abort(self) -> None:
        try:
            self.writer.abort()
        except OSError:  # cleaning up after an error: that error is the one to report
            pass


def _check_finite(scene: GltfScene, globs: NDArray, times: NDArray, what: str) -> None:
    """Refuse frames whose node world matrices (``globs``, frames x nodes) are not finite: an
    animation's keys that multiply past float64 down the hierarchy."""
    finite = np.isfinite(globs).all(axis=(2, 3))
    if not finite.all():
        frame, node = np.unravel_index(int(np.argmin(finite)), finite.shape)
        raise InputError(
            f"{scene.path.name}: nodes[{node}] ({scene.nodes[node].name!r}): {what} at "
            f"{times[frame]:g} s overflows float64 (the animation's keys of the nodes above it "
            "multiply past 1e308)"
        )
