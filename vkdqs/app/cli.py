"""The ``vkdqs`` command line.

``vkdqs demo``: skins the candy-wrapper cylinder twisted 0...170 degrees with DQS, LBS, CoR
(optimized centers of rotation, computed on the same device) and a 50% LBS/DQS blend on the GPU
(every angle in one submission per method) and prints the smallest ring radius and the volume
per angle, then each method's (and the centers') largest error against the float64 CPU
reference; then opens the viewer when a display is available, or renders the side-by-side PNG
and says where it wrote it.

``vkdqs view [MODEL]``: the windowed viewer, on the candy wrapper or a glTF model.
``vkdqs render [MODEL] --out frame.png``: a PNG with no display. ``vkdqs info MODEL``: what a glTF
file holds (meshes, skins, influences, scale, animations). ``vkdqs bake MODEL --out FILE`` bakes
one animation; ``vkdqs bake MODEL... --out-dir DIR`` every clip of many models on a Dask cluster
(:func:`bake_many`, :func:`vkdqs.bake_batch`), status 1 when any pair failed.

Errors about the input (a malformed glTF file, an animation that does not exist, a model DQS
cannot skin), the output (a file that is the model read, a folder, a full disk, no permission:
files are written as :mod:`vkdqs.files` writes them) or the system (no Vulkan device, no Vulkan
driver, no Vulkan loader library: the line says what to install) print one line,
``vkdqs: error: ...``, to stderr and exit with status 1. Options are checked when parsed: an
unusable value (a size outside 1...16384, a non-finite or out-of-range number) is a usage error,
exit status 2. ``vkdqs --version`` prints the version;
every option's help shows its default.

Hostile surroundings are survived without a traceback: text the output's encoding cannot hold
(a model's "Hüfte" under ``LC_ALL=C``) is escaped; what would be printed to a standard output or
error that is closed (``>&-``, ``2>&-``) or fails (a reader gone, ``| head -1``; ``/dev/full``)
is dropped. Commands whose work is printing (``info``, ``demo``, ``--help``) then say so: status
141 when the reader went away (quietly, as cat), 1 otherwise; the others exit with their work's
status (``bake`` and ``render``: 0 once the file is written). SIGTERM, SIGHUP and SIGINT stop a
command after removing the files it was writing (status 128 + the signal's number); SIGXFSZ is
ignored, so a write past ``ulimit -f`` fails with one line.

Each subcommand calls a plain function (:func:`demo`, :func:`view`, :func:`render`,
:func:`info`) with the parsed options as keyword arguments; ``demo`` calls ``view`` and
``render`` the same way.
"""

from __future__ import annotations

import argparse
import codecs
import errno
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..gltf import GltfScene

from .. import methods as registry
from ..errors import InputError, VkdqsError
from ..files import check_output

_ANIMATION_HELP = "model: animation index or name, or 'rest' (default: the first animation)"
_METHOD_HELP = (
    "what to draw side by side: "
    + ", ".join(f"{m.name} ({m.summary})" for m in registry.shown())
    + "; several joined by commas (lbs,dqs,cor), both (lbs,dqs: LBS left, DQS right), all "
    "(every method the model's skins accept; the others are named on standard error), or diff "
    "(one copy coloured by |DQS - LBS| per vertex, with a colour bar in model units)"
)
_BAKE_METHOD_HELP = "skinning method: " + ", ".join(registry.names())
#: Each side of --size, in pixels (Vulkan guarantees 4096 for images; desktop GPUs take 16384).
MAX_SIZE = 16384


def demo(
    step: float = 10.0,
    path: str = "compute",
    device: str | int | None = None,
    no_window: bool = False,
) -> int:
    """Print the candy-wrapper table (every method scenes show: LBS, DQS, the 50% LBS/DQS
    blend, CoR, Blender's DQS, DDM, Delta Mush; twists 0...170 degrees every ``step``; the
    mushes on the compute path whatever ``path``), then open the viewer, or render
    ``vkdqs-demo.png`` without a display (not with ``no_window``)."""
    _need_vulkan()
    from .. import procedural
    from ..gpu import Device
    from ..methods.cor.gpu import centers_of_rotation
    from ..methods.cor.reference import centers_of_rotation_reference
    from .compare import compared_methods, reference, skin_methods

    angles = step * np.arange(int(170.0 / step + 1e-9) + 1)  # 0...170, no further
    mesh = procedural.candy_wrapper().with_dqs_blend(registry.DEFAULT_DQS_BLEND)
    rest_radius = procedural.ring_radii(mesh.positions).min()
    rest_volume = procedural.mesh_volume(mesh.positions, mesh.indices)
    poses = np.stack([procedural.twist_pose(a) for a in angles])
    compared = compared_methods()
    with Device(device=device) as dev:
        print(f"device: {dev.info.name} ({dev.info.device_type})")
        print(
            f"mesh: candy-wrapper cylinder, {mesh.vertex_count} vertices, 2 bones, "
            f"rest radius {rest_radius:.3f}, rest volume {rest_volume:.3f}"
        )
        centers = centers_of_rotation(mesh, bone_count=2, device=dev, progress=False)
        # a method without shaders on ``path`` (the mushes have no vertex shader) skins on the
        # compute path, as the renderer draws it
        elsewhere = [m for m in compared if path not in registry.get(m).paths]
        results = {}
        for on, these in (
            (path, [m for m in compared if m not in elsewhere]),
            ("compute", elsewhere),
        ):
            if these:
                results |= skin_methods(
                    dev, mesh, poses, these, bone_count=2, path=on, centers=centers
                )
    center_err = np.abs(centers - centers_of_rotation_reference(mesh, bone_count=2)).max()
    errors = {
        m: np.abs(results[m] - reference(m, mesh, poses, centers=centers)).max() for m in compared
    }
    names = [registry.label(m) for m in compared]
    width = max(7, *(len(n) for n in names))
    half = len(compared) * (width + 1)
    print()
    print(f"twist   | {'smallest ring radius / rest':^{half}}| {'volume / rest':^{half}}")
    header = " ".join(f"{n:>{width}}" for n in names)
    print(f"  (deg) | {header} | {header}")
    print("-" * 8 + "+" + "-" * (half + 1) + "+" + "-" * (half + 1))
    for i, angle in enumerate(angles):
        r = [procedural.ring_radii(results[m][i]).min() / rest_radius for m in compared]
        v = [procedural.mesh_volume(results[m][i], mesh.indices) / rest_volume for m in compared]
        print(
            f"{angle:7.0f} | "
            + " ".join(f"{x:{width}.3f}" for x in r)
            + " | "
            + " ".join(f"{x:{width}.3f}" for x in v)
        )
    print()
    if elsewhere:
        names_elsewhere = ", ".join(registry.label(m) for m in elsewhere)
        has = "they have" if len(elsewhere) > 1 else "it has"
        print(f"({names_elsewhere}: skinned on the compute path; {has} no {path} shader)")
    print(
        f"GPU vs float64 reference, max |error| (mesh extent {mesh.extent:.2f}):\n  "
        + ", ".join(f"{n} {errors[m]:.1e}" for n, m in zip(names, compared, strict=True))
        + f", CoR centers {center_err:.1e}"
    )
    print("LBS collapses the twisted middle (the candy-wrapper artifact); DQS, CoR (optimized")
    print("centers of rotation) and Blender's DQS keep its radius and volume; blend (50% DQS)")
    print("lies in between. DDM (Direct Delta Mush) and Delta Mush (over LBS) smooth the pinch:")
    print("more of the middle than LBS, far less than DQS, and neither gives back the volume.")
    print()
    if no_window:
        return 0
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        print("opening the viewer (H for help, Esc to quit)")
        try:
            return view()
        except VkdqsError as exc:  # e.g. DISPLAY set but unreachable: fall back to a PNG
            print(f"the viewer could not open ({exc}); rendering a PNG instead")
    return render(Path("vkdqs-demo.png"), twist=170.0)


_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _max_bytes(text: str) -> int:
    """``--max-bytes N[K|M|G|T]``: how much a model file may expand to when loaded."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = t[-1:] if t[-1:] in _UNITS else ""
    try:
        value = float(t[: len(t) - len(unit)] if unit else t)
    except ValueError:
        value = float("nan")
    if not (1 <= value <= 2**50 / _UNITS[unit]):
        raise argparse.ArgumentTypeError(
            f"max-bytes must be a positive size such as 4G or 500M, at most 1P; got {text!r}"
        )
    return int(value * _UNITS[unit])


def _load(model: Path, max_bytes: int | None) -> GltfScene:
    from ..gltf import load_gltf

    return load_gltf(model, max_bytes=max_bytes)  # None: the default, which grows with the file


def _need_vulkan() -> None:
    """Import the Vulkan plumbing first: without a Vulkan loader this raises a CapabilityError
    naming the package to install (not the binding's OSError)."""
    from .. import gpu  # noqa: F401


def _add_model(p: argparse.ArgumentParser, *, optional: bool, many: bool = False) -> None:
    if many:
        p.add_argument(
            "model",
            nargs="+",
            type=Path,
            help="glTF models (.gltf or .glb); with --out-dir also folders (their *.gltf and "
            "*.glb, not recursive) and quoted globs ('models/**/*.glb')",
        )
    elif optional:
        p.add_argument(
            "model",
            nargs="?",
            type=Path,
            help="a glTF model, .gltf or .glb (default: the candy-wrapper cylinder)",
        )
    else:
        p.add_argument("model", type=Path, help="a glTF model (.gltf or .glb)")
    p.add_argument(
        "--max-bytes",
        type=_max_bytes,
        default=None,
        help="the most memory a model may expand to when loaded, e.g. 500M or 8G (default: "
        "grows with the file, 8 bytes per byte of JSON and 32 per byte of binary data, 128M to "
        "2G; raise it for large compressed models)",
    )


def _size(text: str) -> tuple[int, int]:
    """``--size WxH``, each side 1...MAX_SIZE pixels."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 640x480, got {text!r}") from None
    if not (1 <= w <= MAX_SIZE and 1 <= h <= MAX_SIZE):
        raise argparse.ArgumentTypeError(
            f"each side of the size must be 1...{MAX_SIZE} pixels, got {text!r}"
        )
    return w, h


def _number(what: str, low: float, high: float, unit: str) -> Callable[[str], float]:
    """An argparse ``type``: a finite number within ``[low, high]`` (``what`` and ``unit`` name it
    in the message)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if not low <= value <= high:  # also NaN and inf
            raise argparse.ArgumentTypeError(
                f"{what} must be within {low:.10g}...{high:.10g} {unit}, got {text!r}"
            )
        return value

    return parse


#: --step: at least 0.1 degree keeps the demo's table (one row per angle in 0...170) bounded.
_step = _number("the twist step", 0.1, 170.0, "degrees")
#: --twist: ten turns either way.
_twist = _number("the twist", -3600.0, 3600.0, "degrees")
#: --bend: either way, up to folded back on itself.
_bend = _number("the bend", -180.0, 180.0, "degrees")


#: --crowd: copies in the viewer's crowd grid.
def _crowd(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--crowd must be a whole number, got {text!r}") from None
    if not 1 <= value <= 65536:
        raise argparse.ArgumentTypeError(f"--crowd must be within 1...65536, got {text!r}")
    return value


#: --time: about 11.6 days either way; the label shows it with 2 decimals.
_time = _number("the time", -1e6, 1e6, "seconds")


def _animation(text: str | None) -> int | str | None:
    """``--animation``: an index, a name, or "rest" for the rest pose."""
    if text is None:
        return 0
    if text == "rest":
        return None
    return int(text) if text.lstrip("-").isdigit() else text


def render(
    out: str | Path = "frame.png",
    model: str | Path | None = None,
    *,
    twist: float = 170.0,
    bend: float = 0.0,
    time: float = 0.0,
    animation: str | None = None,
    method: str = "both",
    size: tuple[int, int] = (960, 540),
    samples: int = 4,
    max_bytes: int | None = None,
    labels: bool = True,
    grid: bool = True,
) -> int:
    """Render the candy-wrapper scene (twisted ``twist`` degrees, then bent ``bend`` degrees at
    its joint), or a glTF ``model`` at ``time`` of ``animation`` (an index, a name or "rest";
    None: the first), offscreen to the PNG ``out``.

    The copies of the pose drawn stand side by side across the image and fill it
    (:func:`vkdqs.app.stills.frame_still`); ``labels`` draws the method under each copy, the
    animation and time in the corner and the heat map's colour bar; ``grid`` a floor grid.
    """
    if model is not None and bend:
        raise InputError("--bend bends the candy wrapper; a model takes --time")
    from ..images import write_png

    w, h = size
    inputs = () if model is None else (Path(model),)
    check_output(out, inputs)  # before rendering: not the model, not a folder
    gltf = None
    if model is not None:
        gltf = _load(Path(model), max_bytes)  # before the device: a bad file fails fast
    _need_vulkan()
    from ..engine.renderer import Renderer
    from ..engine.targets import OffscreenTarget
    from ..gpu import Device
    from .scenes import CandyWrapperScene, GltfScenePlayer
    from .stills import render_still

    with Device() as device:
        with (
            OffscreenTarget(device, w, h, samples=samples) as target,
            Renderer(device, target) as renderer,
        ):
            if gltf is None:
                scene = CandyWrapperScene(renderer, methods=method)
                scene.set_twist(twist)
                if bend:
                    scene.set_bend(bend)
                    scene.frame_camera()
            else:
                scene = GltfScenePlayer(
                    renderer, gltf, methods=method, animation=_animation(animation)
                )
                scene.set_time(_clip_time(time, scene.duration, scene.animation is None))
            try:
                image = render_still(scene, labels=labels, grid=grid)
            finally:
                scene.close()
    path = write_png(out, image, inputs=inputs)
    print(f"wrote {path} ({w}x{h}, {scene.label()})")
    _say_left_out(scene.left_out)
    return 0


def _clip_time(time: float, duration: float, rest: bool) -> float:
    """``--time`` within the animation (glTF holds the first and last keys outside it), with a
    warning when it was not."""
    if 0.0 <= time <= duration:
        return time
    if rest:
        warnings.warn(f"--time {time:g} s: the rest pose has no time; drawn at rest", stacklevel=2)
        return 0.0
    clamped = min(max(time, 0.0), duration)
    warnings.warn(
        f"--time {time:g} s is outside the animation ({duration:g} s long): drawn at {clamped:g} s",
        stacklevel=2,
    )
    return clamped


def _say_left_out(left_out: dict[str, str]) -> None:
    """Name the methods ``--method all`` left out, with why (standard error)."""
    for method, why in left_out.items():
        print(f"left out {method}: {why}", file=sys.stderr)


def view(
    model: str | Path | None = None,
    *,
    animation: str | None = None,
    method: str = "both",
    size: tuple[int, int] = (1280, 720),
    present_mode: str = "fifo",
    samples: int = 4,
    max_bytes: int | None = None,
    crowd: int | None = None,
) -> int:
    """Open the viewer window on the candy-wrapper scene or a glTF ``model`` (with ``crowd``,
    a grid of that many copies drawn as a crowd)."""
    gltf = None
    if model is not None:
        gltf = _load(Path(model), max_bytes)  # a bad file fails before a window opens
    _need_vulkan()
    from .viewer import HELP, Viewer

    with Viewer(
        gltf,
        methods=method,
        animation=_animation(animation),
        size=size,
        present_mode=present_mode,
        samples=samples,
        crowd=crowd,
    ) as viewer:
        print(HELP)
        viewer.run()
    return 0


def info(model: str | Path, *, as_json: bool = False, max_bytes: int | None = None) -> int:
    """Print what a glTF file holds: meshes, skins, influences, scale, animations."""
    scene = _load(Path(model), max_bytes)
    if as_json:
        print(json.dumps(scene.info(), indent=2))
    else:
        print(scene.summary())
    return 0


#: --fps: a bake's frame rate.
_fps = _number("the frame rate", 0.001, 1000.0, "frames per second")
_BAKE_FORMATS = (".npz", ".glb", ".usd", ".usda", ".usdc")  # vkdqs.baking.FORMATS


def _methods(text: str) -> str:
    """``--method``: one method, several joined by commas, ``both`` or ``all``."""
    try:
        registry.parse_methods(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _jobs(text: str) -> int:
    """``bake --jobs``: worker processes, 1...256."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs must be a whole number, got {text!r}") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"--jobs must be within 1...256, got {text!r}")
    return value


def _output(formats: tuple[str, ...]) -> Callable[[str], Path]:
    """An ``--out`` type: a file name ending in one of ``formats``."""

    def parse(text: str) -> Path:
        path = Path(text)
        if path.suffix.lower() not in formats:
            raise argparse.ArgumentTypeError(
                f"the output must end in {', '.join(formats)}, got {text!r}"
            )
        return path

    return parse


#: ``bake --out``: a file name ending in one of the formats vkdqs bakes to.
_bake_out = _output(_BAKE_FORMATS)


def bake(
    model: str | Path | list[Path],
    *,
    out: str | Path | None = None,
    out_dir: str | Path | None = None,
    animation: str | None = None,
    fps: float = 30.0,
    method: str = "dqs",
    start: float | None = None,
    end: float | None = None,
    device: str | int | None = None,
    quiet: bool = False,
    max_bytes: int | None = None,
    format: str | None = None,
    clips: str | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
) -> int:
    """Bake a glTF animation to one world-space mesh per frame (.npz, .glb or USD); with
    ``out_dir``, every clip of many models (:func:`bake_many`)."""
    models = model if isinstance(model, list) else [Path(model)]
    if out_dir is not None:
        if animation is not None:
            raise InputError(
                "--animation names one model's clip; a batch (--out-dir) takes --clips"
            )
        return bake_many(
            models,
            out_dir=out_dir,
            format=format or "npz",
            clips=clips or "all",
            fps=fps,
            method=method,
            start=start,
            end=end,
            device=device,
            quiet=quiet,
            max_bytes=max_bytes,
            jobs=jobs,
            scheduler=scheduler,
        )
    if out is None:
        raise InputError("name the output: --out FILE (one model) or --out-dir DIR (a batch)")
    if len(models) != 1:
        raise InputError(
            f"--out names one file for one model, got {len(models)} models; use --out-dir"
        )
    batch_only = {"--format": format, "--clips": clips, "--jobs": jobs, "--scheduler": scheduler}
    given = [name for name, value in batch_only.items() if value is not None]
    if given:
        raise InputError(f"{', '.join(given)}: batch options; they need --out-dir, not --out")
    model = models[0]
    out = Path(out)
    _need_vulkan()
    from ..baking import bake_to_file
    from ..baking.usd import import_pxr
    from ..gpu import Device

    registry.get(method)  # InputError naming the methods
    check_output(out, (Path(model),))  # before loading: not the model, not a folder
    if out.suffix.lower() in (".usd", ".usda", ".usdc"):
        import_pxr()  # before loading and baking: say what to install
    scene = _load(Path(model), max_bytes)  # before the device: a bad file fails fast
    with Device(device=device) as dev:
        info = bake_to_file(
            scene,
            out,
            animation=_animation(animation),
            fps=fps,
            method=method,
            start=start,
            end=end,
            device=dev,
            progress=not quiet and sys.stderr.isatty(),
        )
    if not quiet:
        print(
            f"wrote {info.path}: {info.frames} frames ({info.animation!r} at {info.fps:g} fps, "
            f"{info.method}), {info.vertices} vertices, {info.triangles} triangles, "
            f"{info.seconds:.2f} s ({info.frames / max(info.seconds, 1e-9):.0f} frames/s)"
            + (
                f"; left out {info.dropped_faces} degenerate triangles (zero area or a "
                "repeated vertex)"
                if info.dropped_faces
                else ""
            )
        )
    return 0


_EXPORT_FORMATS = (".usd", ".usda", ".usdc")  # vkdqs.baking.usdskel.FORMATS


#: ``export --out``: a USD file name.
_export_out = _output(_EXPORT_FORMATS)


def export(
    model: str | Path,
    *,
    out: str | Path,
    method: str = "dqs",
    animation: str | None = None,
    fps: float = 30.0,
    quiet: bool = False,
    max_bytes: int | None = None,
) -> int:
    """Write a glTF character as a UsdSkel rig that keeps its skinning method (no GPU)."""
    from ..baking.usd import import_pxr
    from ..baking.usdskel import _usd_method, export_usdskel

    out = Path(out)
    _usd_method(registry.get(method))  # before loading: a method USD cannot express
    check_output(out, (Path(model),))
    import_pxr()
    scene = _load(Path(model), max_bytes)
    info = export_usdskel(scene, out, method=method, animation=_animation(animation), fps=fps)
    if not quiet:
        print(
            f"wrote {info.path}: {info.skeletons} skeleton(s), {info.joints} joints, "
            f"{info.meshes} mesh(es), {info.blend_shapes} blend shapes, {info.skinning_method} "
            f"({info.method}); animation {info.animation!r}, {info.samples} time samples"
            + (" (CUBICSPLINE sampled at the fps)" if info.resampled else "")
        )
    return 0


def bake_many(
    models: list[Path],
    *,
    out_dir: str | Path,
    format: str = "npz",
    clips: str = "all",
    fps: float = 30.0,
    method: str = "dqs",
    start: float | None = None,
    end: float | None = None,
    device: str | int | None = None,
    quiet: bool = False,
    max_bytes: int | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
) -> int:
    """``vkdqs bake MODEL... --out-dir DIR``: :func:`vkdqs.bake_batch` on a local Dask cluster
    (or ``scheduler``'s); one line on standard error per failed pair, the summary on standard
    output; status 1 when any pair failed."""
    from ..baking.batch import bake_batch

    report = bake_batch(
        models,
        out_dir,
        clips=clips,
        format=format,
        method=method,
        fps=fps,
        start=start,
        end=end,
        jobs=jobs,
        scheduler=scheduler,
        device=device,
        max_bytes=max_bytes,
        progress=not quiet and sys.stderr.isatty(),
    )
    for r in report.records:  # over the pairs
        if r.error is not None:
            clip = "" if r.clip is None else f" (clip {r.clip!r})"
            _say(f"vkdqs: error: {_with_file(r.error, Path(r.input))}{clip}")
    if not quiet:
        print(report.summary())
    return 0 if report.ok else 1


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: ...)" to each option's help, except flags (off unless given) and help
    texts that already say their default (those whose default is None describe it in words)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.nargs == 0 or "(default" in text or action.default is None:
            return text
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    """The ``vkdqs`` argument parser; each subcommand sets ``func`` to the function it calls with
    the other parsed values as keyword arguments."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="vkdqs",
        description="Dual quaternion skinning on Vulkan",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"vkdqs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, func: Callable[..., int], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help, formatter_class=_HelpFormatter)
        p.set_defaults(func=func)
        return p

    p = command("demo", demo, "candy-wrapper twist: DQS, LBS, CoR and blend on the GPU")
    p.add_argument("--step", type=_step, default=10.0, help="twist step in degrees, 0.1...170")
    p.add_argument(
        "--path",
        choices=("compute", "vertex"),
        default="compute",
        help="skin with the compute shader or the rendering vertex shader",
    )
    p.add_argument(
        "--device",
        default=None,
        help="device name substring or index (default: $VKDQS_DEVICE, else the first discrete "
        "GPU, then integrated, then CPU)",
    )
    p.add_argument("--no-window", action="store_true", help="only print the table")

    p = command("view", view, "the viewer: LBS and DQS side by side in a window")
    _add_model(p, optional=True)
    p.add_argument(
        "--crowd",
        type=_crowd,
        default=None,
        help="show a grid of N copies walking out of phase, drawn as a crowd, 1...65536 "
        "(default: none, the usual scene)",
    )
    p.add_argument("--method", type=_methods, default="both", help=_METHOD_HELP)
    p.add_argument("--animation", default=None, help=_ANIMATION_HELP)
    p.add_argument(
        "--size", type=_size, default="1280x720", help=f"window size WxH, each 1...{MAX_SIZE}"
    )
    p.add_argument(
        "--present-mode",
        choices=("fifo", "mailbox", "immediate"),
        default="fifo",
        help="swapchain present mode: fifo waits for vsync",
    )
    p.add_argument("--samples", type=int, choices=(1, 2, 4, 8), default=4, help="MSAA samples")

    p = command(
        "render", render, "render the candy-wrapper scene or a glTF model to a PNG, no display"
    )
    _add_model(p, optional=True)
    p.add_argument("--out", type=Path, default="frame.png", help="the PNG file to write")
    p.add_argument(
        "--twist", type=_twist, default=170.0, help="candy wrapper: twist in degrees (+-3600)"
    )
    p.add_argument(
        "--bend",
        type=_bend,
        default=0.0,
        help="candy wrapper: bend at the joint in degrees (+-180), after the twist; "
        "e.g. --twist 0 --bend 135",
    )
    p.add_argument("--time", type=_time, default=0.0, help="model: animation time in seconds")
    p.add_argument("--animation", default=None, help=_ANIMATION_HELP)
    p.add_argument("--method", type=_methods, default="both", help=_METHOD_HELP)
    p.add_argument(
        "--size", type=_size, default="960x540", help=f"image size WxH, each 1...{MAX_SIZE}"
    )
    p.add_argument("--samples", type=int, choices=(1, 2, 4, 8), default=4, help="MSAA samples")
    p.add_argument(
        "--no-labels",
        dest="labels",
        action="store_false",
        help="no text in the image (method per copy, animation and time, colour bar)",
    )
    p.add_argument("--no-grid", dest="grid", action="store_false", help="no floor grid")

    p = command("info", info, "what a glTF file holds: meshes, skins, animations")
    _add_model(p, optional=False)
    p.add_argument("--json", dest="as_json", action="store_true", help="print the details as JSON")

    p = command(
        "bake",
        bake,
        "bake a glTF animation to a mesh per frame (.npz/.glb/.usd); with --out-dir, every "
        "clip of many models, on a Dask cluster",
    )
    _add_model(p, optional=False, many=True)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--out", type=_bake_out, help=f"one model: the file to write: {'|'.join(_BAKE_FORMATS)}"
    )
    where.add_argument(
        "--out-dir",
        type=Path,
        help="a batch (one model or many): the folder to write <model>__<clip>.<format> files "
        "and manifest.jsonl into (created if missing; a later run skips what is done)",
    )
    p.add_argument(
        "--animation", default=None, help="--out: " + _ANIMATION_HELP.removeprefix("model: ")
    )
    p.add_argument("--fps", type=_fps, default=30.0, help="frames per second, 0.001...1000")
    p.add_argument("--method", default=registry.DEFAULT, help=_BAKE_METHOD_HELP)
    p.add_argument("--start", type=_time, default=None, help="first frame's time (default: 0 s)")
    p.add_argument("--end", type=_time, default=None, help="last time (default: the end)")
    p.add_argument(
        "--device", default=None, help="device name substring or index (default: $VKDQS_DEVICE)"
    )
    p.add_argument(
        "--format",
        choices=tuple(f.lstrip(".") for f in _BAKE_FORMATS),
        default=None,
        help="--out-dir: the files' format (default: npz)",
    )
    p.add_argument(
        "--clips",
        default=None,
        help="--out-dir: 'all' or clip names joined by commas; 'rest' is the rest pose "
        "(default: all; a model without animations bakes its rest pose)",
    )
    p.add_argument(
        "--jobs",
        type=_jobs,
        default=None,
        help="--out-dir: worker processes of the local Dask cluster, one Vulkan device each "
        "(default: the CPUs, at most 4, at most one per model)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        help="--out-dir: a running Dask scheduler's address (tcp://HOST:PORT) to send the work "
        "to instead of a local cluster (default: none)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")

    p = command("export", export, "write a UsdSkel rig that keeps the skinning method")
    _add_model(p, optional=False)
    p.add_argument(
        "--out", type=_export_out, required=True, help=f"the rig: {'|'.join(_EXPORT_FORMATS)}"
    )
    p.add_argument(
        "--method",
        default=registry.DEFAULT,
        help="the skinning method the rig keeps: "
        + ", ".join(m.name for m in registry.METHODS.values() if m.usdskel)
        + " (the others: bake their frames)",
    )
    p.add_argument("--animation", default=None, help=_ANIMATION_HELP)
    p.add_argument(
        "--fps", type=_fps, default=30.0, help="time codes per second (CUBICSPLINE sampling)"
    )
    p.add_argument("--quiet", action="store_true", help="no summary")
    return parser


#: Commands whose work is what they print: when their standard output is closed or fails, they
#: say so (status 1, or 141 when the reader went away); the others' work is a file or a window.
_PRINTING = frozenset({"info", "demo"})


def main(argv: list[str] | None = None) -> int:
    """Run the ``vkdqs`` command line; returns the exit status."""
    with _standard_streams() as stdout, _stop_on_signals():
        try:
            args = vars(build_parser().parse_args(argv))
        except SystemExit as exc:  # --help, --version (status 0), a usage error (2)
            if exc.code == 0 and stdout.lost is not None:
                raise SystemExit(_lost_output(stdout.lost)) from None
            raise
        command = args.pop("command")
        status = _run(args)
        sys.stdout.flush()  # what is still buffered: a failure is recorded, not raised
        if status == 0 and command in _PRINTING and stdout.lost is not None:
            return _lost_output(stdout.lost)
        return status


def _lost_output(lost: OSError) -> int:
    """The status (and line) of a printing command whose standard output was lost: 141 when
    the reader went away (``| head -1``, quietly, as cat), 1 when it is closed or failed."""
    if lost.errno == errno.EPIPE:
        return 141  # 128 + SIGPIPE, what a shell reports for a process killed by it
    if lost.errno == errno.EBADF:
        _say("vkdqs: error: standard output is closed; nothing was printed")
    else:
        _say(f"vkdqs: error: standard output: {lost.strerror or lost}")
    return 1


def _run(args: dict[str, Any]) -> int:
    """Call the subcommand's function; errors become one line on standard error and a status."""
    func = args.pop("func")
    if isinstance(args.get("device"), str) and args["device"].isdigit():
        args["device"] = int(args["device"])
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            # numpy's floating-point warnings ("overflow encountered in matmul") describe its
            # arithmetic, not the model: vkdqs's own checks say what is wrong in one line
            warnings.filterwarnings("ignore", _NUMPY_FLOAT_WARNINGS, RuntimeWarning)
            return func(**args)
    except VkdqsError as exc:
        message = str(exc)
        if isinstance(exc, InputError):  # about the model file: name it
            message = _with_file(message, args.get("model"))
        _say(f"vkdqs: error: {message}")
        return 1
    except OSError as exc:  # e.g. the PNG cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        _say(f"vkdqs: error: {where}{exc.strerror or exc}")
        return 1
    except MemoryError:
        _say("vkdqs: error: out of memory; try a smaller --size or model")
        return 1
    except KeyboardInterrupt:
        _say("vkdqs: interrupted")
        return 130
    except _Stopped as exc:
        _say(f"vkdqs: stopped by {signal.Signals(exc.signum).name}")
        return 128 + exc.signum


def _say(line: str) -> None:
    """Print ``line`` to standard error (dropped when that is closed or fails)."""
    print(line, file=sys.stderr, flush=True)


#: The messages of numpy's floating-point error warnings (np.errstate's "warn").
_NUMPY_FLOAT_WARNINGS = r"(overflow|underflow|invalid value|divide by zero) encountered in "


def _show_warning(
    message: Warning | str, category: type[Warning], *_: object, **__: object
) -> None:
    """A warning from vkdqs (e.g. a glTF image it cannot use) as one line, without the source
    line Python shows."""
    _say(f"vkdqs: warning: {message}")


class _Output:
    """Standard output or error for the command's duration: writes go to the real stream until
    it fails (a reader gone, a full disk) or when it was closed from the start (None); from then
    on they are dropped, and :attr:`lost` says why (an OSError: EPIPE, EBADF for closed, ...).

    A failed stream gets /dev/null on its descriptor, so what it still buffers is flushed there
    at exit without an error, and C libraries printing to it write nowhere."""

    def __init__(self, stream: Any, fd: int) -> None:
        self.stream, self.fd = stream, fd
        self.lost: OSError | None = None

    def _fail(self, exc: OSError) -> None:
        if self.lost is None:
            self.lost = exc
        self.stream = None
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self.fd)
            finally:
                os.close(null)
        except OSError:
            pass

    def write(self, text: str) -> int:
        if self.stream is None:
            if text and self.lost is None:
                self.lost = OSError(errno.EBADF, "standard stream closed")
            return len(text)
        try:
            return self.stream.write(text)
        except (OSError, ValueError) as exc:  # ValueError: the stream object was closed
            self._fail(exc if isinstance(exc, OSError) else OSError(errno.EBADF, str(exc)))
            return len(text)

    def flush(self) -> None:
        if self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self._fail(exc if isinstance(exc, OSError) else OSError(errno.EBADF, str(exc)))

    def isatty(self) -> bool:
        try:
            return self.stream is not None and self.stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self.stream is None:
            raise OSError(errno.EBADF, "standard stream closed")
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self.stream, "errors", None) or "backslashreplace"

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # anything else a caller may ask a stream
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)


def _escape_text(exc: UnicodeError) -> tuple[str | bytes, int]:
    """An encoding error handler: the escaped bytes of a file name (``os.fsdecode``'s lone
    surrogates) as those bytes, like ``surrogateescape``, anything else the encoding cannot
    hold as a backslash escape (``Hüfte`` as ``H\\xfcfte`` under ``LC_ALL=C``)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    c = exc.object[exc.start]
    if "\udc80" <= c <= "\udcff":
        return bytes([ord(c) - 0xDC00]), exc.start + 1
    o = ord(c)
    escape = f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
    return escape, exc.start + 1


codecs.register_error("vkdqs.escape", _escape_text)


@contextmanager
def _standard_streams() -> Iterator[_Output]:
    """Make standard output and error safe to print to for the command's duration.

    A descriptor 0, 1 or 2 that is closed gets /dev/null, so no file the command opens takes
    its number (the Vulkan loader or a driver printing to "stdout" would write into it).
    ``sys.stdout`` and ``sys.stderr`` become :class:`_Output` objects, which drop what cannot be
    written. Text the stream's encoding cannot hold is escaped, not fatal: a file name that is
    not UTF-8 under a strict UTF-8 locale with backslashes, a node name under ``LC_ALL=C`` too
    (the bytes of a file name stay as they are where the locale keeps them, as
    ``surrogateescape`` does). Yields standard output's :class:`_Output` (its ``lost``); the
    streams are put back afterwards.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:  # closed when vkdqs started
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            else:
                os.set_inheritable(fd, True)
    saved = {"stdout": sys.stdout, "stderr": sys.stderr}
    outputs = {}
    for fd, (name, stream) in enumerate(saved.items(), start=1):
        if getattr(stream, "errors", None) in ("strict", "surrogateescape") and hasattr(
            stream, "reconfigure"
        ):
            keep_bytes = stream.errors == "surrogateescape"
            stream.reconfigure(errors="vkdqs.escape" if keep_bytes else "backslashreplace")
        outputs[name] = _Output(stream, fd)
        setattr(sys, name, outputs[name])
    try:
        yield outputs["stdout"]
    finally:
        for name, stream in saved.items():
            setattr(sys, name, stream)


class _Stopped(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds the command like Ctrl-C, so that every ``finally``
    (the temporary file of a bake, the Vulkan device) cleans up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM, SIGHUP and SIGINT into exceptions (:class:`_Stopped`, KeyboardInterrupt)
    for the command's duration, and ignore SIGXFSZ (a write past ``ulimit -f`` then fails with
    EFBIG instead of killing the process); the previous handlers are put back afterwards. A
    signal that whoever started vkdqs ignores (``nohup``) stays ignored; a second signal while
    the first unwinds is ignored, so the cleanup finishes. Only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if stopping:
            return
        stopping.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise _Stopped(signum)

    previous: dict[int, Any] = {}
    try:
        for name in ("SIGTERM", "SIGHUP", "SIGINT"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) != signal.SIG_IGN:
                previous[signum] = signal.signal(signum, stop)
        if hasattr(signal, "SIGXFSZ"):
            previous[signal.SIGXFSZ] = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _with_file(message: str, model: Path | list[Path] | None) -> str:
    """The message, naming the model file (the one of a bake's list) when it does not already."""
    if isinstance(model, list):
        model = model[0] if len(model) == 1 else None
    if model is None or model.name in message:
        return message
    return f"{model}: {message}"


if __name__ == "__main__":
    sys.exit(main())
