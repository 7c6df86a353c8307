"""The ``vkdqs`` command line.

``vkdqs demo``: skins the candy-wrapper cylinder twisted 0...170 degrees with DQS and LBS on the
GPU (every angle in one submission per method) and prints the smallest ring radius and the
volume per angle, next to the float64 CPU reference's error; then opens the viewer when a
display is available, or renders the side-by-side PNG and says where it wrote it.

``vkdqs view [MODEL]``: the windowed viewer, on the candy wrapper or a glTF model.
``vkdqs render [MODEL] --out frame.png``: a PNG with no display. ``vkdqs info MODEL``: what a glTF
file holds (meshes, skins, influences, scale, animations).

Errors about the input (a malformed glTF file, an animation that does not exist, a model DQS
cannot skin) or the system (no Vulkan device, no Vulkan driver, no Vulkan loader library: the
line says what to install) print one line, ``vkdqs: error: ...``, to stderr and exit with
status 1. Options are checked when parsed: an unusable value (a size outside 1...16384, a non-finite
or out-of-range number) is a usage error, exit status 2. ``vkdqs --version`` prints the version;
every option's help shows its default.

Each subcommand calls a plain function (:func:`demo`, :func:`view`, :func:`render`,
:func:`info`) with the parsed options as keyword arguments; ``demo`` calls ``view`` and
``render`` the same way.
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
_METHODS = ("dqs", "lbs", "both")
_METHOD_HELP = "skinning: DQS, LBS, or both side by side (LBS left, DQS right)"
#: Each side of --size, in pixels (Vulkan guarantees 4096 for images; desktop GPUs take 16384).
MAX_SIZE = 16384


def demo(
    step: float = 10.0,
    path: str = "compute",
    device: str | int | None = None,
    no_window: bool = False,
) -> int:
    """Print the candy-wrapper table (DQS vs LBS, twists 0...170 degrees every ``step``), then
    open the viewer, or render ``vkdqs-demo.png`` without a display (not with ``no_window``)."""
    _need_vulkan()
    from . import dq, procedural
    from .gpu import Device
    from .skinner import Skinner

    angles = step * np.arange(int(170.0 / step + 1e-9) + 1)  # 0...170, no further
    mesh = procedural.candy_wrapper()
    rest_radius = procedural.ring_radii(mesh.positions).min()
    rest_volume = procedural.mesh_volume(mesh.positions, mesh.indices)
    poses = np.stack([procedural.twist_pose(a) for a in angles])
    results = {}
    with Device(device=device) as dev:
        print(f"device: {dev.info.name} ({dev.info.device_type})")
        print(
            f"mesh: candy-wrapper cylinder, {mesh.vertex_count} vertices, 2 bones, "
            f"rest radius {rest_radius:.3f}, rest volume {rest_volume:.3f}"
        )
        for method in ("dqs", "lbs"):
            with Skinner(dev, mesh, bone_count=2, method=method, path=path) as skinner:
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
    from .gltf import DEFAULT_MAX_BYTES, load_gltf

    return load_gltf(model, max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)


def _need_vulkan() -> None:
    """Import the Vulkan plumbing first: without a Vulkan loader this raises a CapabilityError
    naming the package to install (not the binding's OSError)."""
    from . import gpu  # noqa: F401


def _add_model(p: argparse.ArgumentParser, *, optional: bool) -> None:
    from .gltf import DEFAULT_MAX_BYTES

    if optional:
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
        default=f"{DEFAULT_MAX_BYTES // 2**30}G",
        help="the most memory a model may expand to when loaded, e.g. 500M or 8G; lower it for "
        "untrusted files",
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
    time: float = 0.0,
    animation: str | None = None,
    method: str = "both",
    size: tuple[int, int] = (960, 540),
    samples: int = 4,
    max_bytes: int | None = None,
) -> int:
    """Render the candy-wrapper scene (twisted ``twist`` degrees), or a glTF ``model`` at ``time``
    of ``animation`` (an index, a name or "rest"; None: the first), offscreen to the PNG ``out``.
    """
    from .png import write_png

    w, h = size
    gltf = None
    if model is not None:
        gltf = _load(Path(model), max_bytes)  # before the device: a bad file fails fast
    _need_vulkan()
    from .gpu import Device
    from .renderer import Renderer
    from .scenes import CandyWrapperScene, GltfScenePlayer
    from .targets import OffscreenTarget

    with Device() as device:
        with (
            OffscreenTarget(device, w, h, samples=samples) as target,
            Renderer(device, target) as renderer,
        ):
            if gltf is None:
                scene = CandyWrapperScene(renderer, methods=method)
                scene.set_twist(twist)
            else:
                scene = GltfScenePlayer(
                    renderer, gltf, methods=method, animation=_animation(animation)
                )
                scene.set_time(time)
            image = renderer.render_image()
    path = write_png(out, image)
    print(f"wrote {path} ({w}x{h}, {scene.label()})")
    return 0


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
    from . import __version__

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

    p = command("demo", demo, "candy-wrapper twist: DQS vs LBS on the GPU")
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
    p.add_argument("--method", choices=_METHODS, default="both", help=_METHOD_HELP)
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
    p.add_argument("--time", type=_time, default=0.0, help="model: animation time in seconds")
    p.add_argument("--animation", default=None, help=_ANIMATION_HELP)
    p.add_argument("--method", choices=_METHODS, default="both", help=_METHOD_HELP)
    p.add_argument(
        "--size", type=_size, default="960x540", help=f"image size WxH, each 1...{MAX_SIZE}"
    )
    p.add_argument("--samples", type=int, choices=(1, 2, 4, 8), default=4, help="MSAA samples")

    p = command("info", info, "what a glTF file holds: meshes, skins, animations")
    _add_model(p, optional=False)
    p.add_argument("--json", dest="as_json", action="store_true", help="print the details as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``vkdqs`` command line; returns the exit status."""
    args = vars(build_parser().parse_args(argv))
    func = args.pop("func")
    del args["command"]
    if isinstance(args.get("device"), str) and args["device"].isdigit():
        args["device"] = int(args["device"])
    _tolerate_unencodable_output()
    try:
        return func(**args)
    except VkdqsError as exc:
        message = str(exc)
        if isinstance(exc, InputError):  # about the model file: name it
            message = _with_file(message, args.get("model"))
        print(f"vkdqs: error: {message}", file=sys.stderr)
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
