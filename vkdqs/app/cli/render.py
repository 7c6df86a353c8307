"""``vkdqs render [MODEL] --out frame.png``: the candy wrapper or a glTF model to a PNG, with no
display."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from ...errors import InputError
from ...files import check_output
from .options import (
    _ANIMATION_HELP,
    _METHOD_HELP,
    MAX_SIZE,
    SubParsers,
    _add_command,
    _add_model,
    _animation,
    _methods,
    _number,
    _size,
    _time,
)
from .running import _load, _need_vulkan

#: --twist: ten turns either way.
_twist = _number("the twist", -3600.0, 3600.0, "degrees")
#: --bend: either way, up to folded back on itself.
_bend = _number("the bend", -180.0, 180.0, "degrees")


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
    from ...images import write_png

    w, h = size
    inputs = () if model is None else (Path(model),)
    check_output(out, inputs)  # before rendering: not the model, not a folder
    gltf = None
    if model is not None:
        gltf = _load(Path(model), max_bytes)  # before the device: a bad file fails fast
    _need_vulkan()
    from ...engine.renderer import Renderer
    from ...engine.targets import OffscreenTarget
    from ...gpu import Device
    from ..scenes import CandyWrapperScene, GltfScenePlayer
    from ..stills import render_still

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


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``vkdqs render`` to the command line's ``subparsers``."""
    p = _add_command(
        subparsers,
        "render",
        render,
        "render the candy-wrapper scene or a glTF model to a PNG, no display",
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
