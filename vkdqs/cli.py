"""The ``vkdqs`` command line.

``vkdqs demo``: skins the candy-wrapper cylinder twisted 0...170 degrees with DQS and LBS on the
GPU (every angle in one submission per method) and prints the smallest ring radius and the
volume per angle, next to the float64 CPU reference's error; then opens the viewer when a
display is available, or renders the side-by-side PNG and says where it wrote it.

``vkdqs view [MODEL]``: the windowed viewer, on the candy wrapper or a glTF model.
``vkdqs render [MODEL] --out frame.png``: a PNG with no display. ``vkdqs info MODEL``: what a glTF
file holds (meshes, skins, influences, scale, animations).

Errors about the input (a malformed glTF file, an animation that does not exist, a model DQS
cannot skin, no Vulkan device) print one line, ``vkdqs: error: ...``, to stderr and exit with
status 1. Options are checked when parsed: an unusable value (a size outside 1...16384, a non-finite
or out-of-range number) is a usage error, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .gltf import GltfScene

from .errors import InputError, VkdqsError

_ANIMATION_HELP = "model: animation index or name, or 'rest' (default: the first animation)"
#: Each side of --size, in pixels (Vulkan guarantees 4096 for images; desktop GPUs take 16384).
MAX_SIZE = 16384


def demo(args: argparse.Namespace) -> int:
    from . import dq, procedural
    from .gpu import Device
    from .skinner import Skinner

    angles = args.step * np.arange(int(170.0 / args.step + 1e-9) + 1)  # 0...170, no further
    mesh = procedural.candy_wrapper()
    rest_radius = procedural.ring_radii(mesh.positions).min()
    rest_volume = procedural.mesh_volume(mesh.positions, mesh.indices)
    poses = np.stack([procedural.twist_pose(a) for a in angles])
    results = {}
    with Device(device=args.device) as device:
        print(f"device: {device.info.name} ({device.info.device_type})")
        print(
            f"mesh: candy-wrapper cylinder, {mesh.vertex_count} vertices, 2 bones, "
            f"rest radius {rest_radius:.3f}, rest volume {rest_volume:.3f}"
        )
        for method in ("dqs", "lbs"):
            with Skinner(device, mesh, bone_count=2, method=method, path=args.path) as skinner:
                positions, _ = skinner.skin_many(poses)
            results[method] = positions
    ref = np.stack(
        [
            dq.skin_dqs(
                mesh.positions, mesh.normals, mesh.joints, mesh.weights, dq.from_matrices(p)
            )[0]
            for p in poses
        ]
    )
    err = np.abs(results["dqs"] - ref).max()
    print()
    print("twist   | smallest ring radius / rest |      volume / rest")
    print("  (deg) |        DQS        LBS       |     DQS        LBS")
    print("--------+-----------------------------+--------------------")
    for i, angle in enumerate(angles):
        r = {m: procedural.ring_radii(results[m][i]).min() / rest_radius for m in results}
        v = {m: procedural.mesh_volume(results[m][i], mesh.indices) / rest_volume for m in results}
        print(
            f"{angle:7.0f} | {r['dqs']:10.3f} {r['lbs']:10.3f}       | "
            f"{v['dqs']:7.3f}    {v['lbs']:7.3f}"
        )
    print()
    print(f"GPU DQS vs float64 reference: max |error| = {err:.2e} (mesh extent {mesh.extent:.2f})")
    print("LBS collapses the twisted middle (the candy-wrapper artifact); DQS keeps its radius.")
    print()
    if args.no_window:
        return 0
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        print("opening the viewer (H for help, Esc to quit)")
        try:
            return view(
                argparse.Namespace(size=(1280, 720), present_mode="fifo", samples=4, model=None)
            )
        except VkdqsError as exc:  # e.g. DISPLAY set but unreachable: fall back to a PNG
            print(f"the viewer could not open ({exc}); rendering a PNG instead")
    out = Path("vkdqs-demo.png")
    render(
        argparse.Namespace(
            out=out, twist=170.0, method="both", size=(960, 540), samples=4, model=None
        )
    )
    return 0


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


def _load(args: argparse.Namespace) -> GltfScene:
    from .gltf import DEFAULT_MAX_BYTES, load_gltf

    return load_gltf(args.model, max_bytes=getattr(args, "max_bytes", DEFAULT_MAX_BYTES))


def _add_model(p: argparse.ArgumentParser, *, optional: bool) -> None:
    from .gltf import DEFAULT_MAX_BYTES

    p.add_argument(
        "model", nargs="?" if optional else None, type=Path, help="a glTF model (.gltf or .glb)"
    )
    p.add_argument(
        "--max-bytes",
        type=_max_bytes,
        default=DEFAULT_MAX_BYTES,
        help="the most memory a model may expand to when loaded, e.g. 500M or 8G "
        f"(default {DEFAULT_MAX_BYTES // 2**30}G); lower it for untrusted files",
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
#: --time: about 11.6 days either way; the label shows it with 2 decimals.
_time = _number("the time", -1e6, 1e6, "seconds")


def _animation(text: str | None) -> int | str | None:
    """``--animation``: an index, a name, or "rest" for the rest pose."""
    if text is None:
        return 0
    if text == "rest":
        return None
    return int(text) if text.lstrip("-").isdigit() else text


def render(args: argparse.Namespace) -> int:
    """Render the candy-wrapper scene, or a glTF model, offscreen to a PNG."""
    from .gpu import Device
    from .png import write_png
    from .renderer import Renderer
    from .scenes import CandyWrapperScene, GltfScenePlayer
    from .targets import OffscreenTarget

    w, h = args.size
    gltf = None
    if getattr(args, "model", None) is not None:
        gltf = _load(args)  # before the device: a bad file fails fast
    with Device() as device:
        with (
            OffscreenTarget(device, w, h, samples=args.samples) as target,
            Renderer(device, target) as renderer,
        ):
            if gltf is None:
                scene = CandyWrapperScene(renderer, methods=args.method)
                scene.set_twist(args.twist)
            else:
                scene = GltfScenePlayer(
                    renderer, gltf, methods=args.method, animation=_animation(args.animation)
                )
                scene.set_time(args.time)
            image = renderer.render_image()
    path = write_png(args.out, image)
    print(f"wrote {path} ({w}x{h}, {scene.label()})")
    return 0


def view(args: argparse.Namespace) -> int:
    """Open the viewer window on the embedded default scene or a glTF model."""
    from .viewer import HELP, Viewer

    w, h = args.size
    model = getattr(args, "model", None)
    if model is not None:
        model = _load(args)  # a bad file fails before a window opens
    with Viewer(
        model,
        methods=getattr(args, "method", "both"),
        animation=_animation(getattr(args, "animation", None)),
        size=(w, h),
        present_mode=args.present_mode,
        samples=args.samples,
    ) as viewer:
        print(HELP)
        viewer.run()
    return 0


def info(args: argparse.Namespace) -> int:
    """Print what a glTF file holds: meshes, skins, influences, scale, animations."""
    scene = _load(args)
    if args.json:
        print(json.dumps(scene.info(), indent=2))
    else:
        print(scene.summary())
    return 0


_METHOD_HELP = (
    "what to draw side by side: lbs, dqs, blend (per-vertex LBS/DQS blend), cor (optimized "
    "centers of rotation), dqs_blender (Blender's Preserve Volume), several joined by commas "
    "(lbs,dqs,cor), both (lbs,dqs; the default) or all"
)


def _methods(text: str) -> str:
    from .methods import parse_methods

    try:
        parse_methods(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vkdqs", description="Dual quaternion skinning on Vulkan")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="candy-wrapper twist: DQS vs LBS on the GPU")
    p.add_argument(
        "--step", type=_step, default=10.0, help="twist step in degrees, 0.1...170 (default 10)"
    )
    p.add_argument("--path", choices=("compute", "vertex"), default="compute")
    p.add_argument("--device", default=None, help="device name substring or index")
    p.add_argument("--no-window", action="store_true", help="only print the table")
    p.set_defaults(func=demo)

    p = sub.add_parser("view", help="the viewer: LBS and DQS side by side in a window")
    _add_model(p, optional=True)
    p.add_argument("--method", type=_methods, default="both", help=_METHOD_HELP)
    p.add_argument("--animation", default=None, help=_ANIMATION_HELP)
    p.add_argument(
        "--size", type=_size, default=(1280, 720), help=f"window size WxH, each 1...{MAX_SIZE}"
    )
    p.add_argument("--present-mode", choices=("fifo", "mailbox", "immediate"), default="fifo")
    p.add_argument("--samples", type=int, choices=(1, 2, 4, 8), default=4, help="MSAA samples")
    p.set_defaults(func=view)

    p = sub.add_parser(
        "render", help="render the candy-wrapper scene or a glTF model to a PNG, no display"
    )
    _add_model(p, optional=True)
    p.add_argument("--out", type=Path, default=Path("frame.png"))
    p.add_argument(
        "--twist", type=_twist, default=170.0, help="candy wrapper: twist in degrees (+-3600)"
    )
    p.add_argument(
        "--time", type=_time, default=0.0, help="model: animation time in seconds (default 0)"
    )
    p.add_argument("--animation", default=None, help=_ANIMATION_HELP)
    p.add_argument("--method", type=_methods, default="both", help=_METHOD_HELP)
    p.add_argument(
        "--size", type=_size, default=(960, 540), help=f"image size WxH, each 1...{MAX_SIZE}"
    )
    p.add_argument("--samples", type=int, choices=(1, 2, 4, 8), default=4, help="MSAA samples")
    p.set_defaults(func=render)

    p = sub.add_parser("info", help="what a glTF file holds: meshes, skins, animations")
    _add_model(p, optional=False)
    p.add_argument("--json", action="store_true", help="print the details as JSON")
    p.set_defaults(func=info)
    args = parser.parse_args(argv)
    if getattr(args, "device", None) is not None and args.device.isdigit():
        args.device = int(args.device)
    _tolerate_unencodable_output()
    try:
        return args.func(args)
    except VkdqsError as exc:
        print(
            f"vkdqs: error: {_with_file(str(exc), getattr(args, 'model', None))}", file=sys.stderr
        )
        return 1
    except OSError as exc:  # e.g. the PNG cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"vkdqs: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print("vkdqs: error: out of memory; try a smaller --size or model", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vkdqs: interrupted", file=sys.stderr)
        return 130


def _tolerate_unencodable_output() -> None:
    """Print file names that are not valid in the output encoding (e.g. a model named with the
    bytes b"model\\xff.glb" under a UTF-8 locale) escaped, instead of failing with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _with_file(message: str, model: Path | None) -> str:
    """The message, naming the model file when it does not already."""
    if model is None or model.name in message:
        return message
    return f"{model}: {message}"


if __name__ == "__main__":
    sys.exit(main())
