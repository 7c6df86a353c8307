"""``vkdqs view [MODEL]``: the windowed viewer, on the candy wrapper or a glTF model."""

from __future__ import annotations

import argparse
from pathlib import Path

from .options import (
    _ANIMATION_HELP,
    _METHOD_HELP,
    MAX_SIZE,
    SubParsers,
    _add_command,
    _add_model,
    _animation,
    _methods,
    _size,
)
from .running import _load, _need_vulkan


#: --crowd: copies in the viewer's crowd grid.
def _crowd(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--crowd must be a whole number, got {text!r}") from None
    if not 1 <= value <= 65536:
        raise argparse.ArgumentTypeError(f"--crowd must be within 1...65536, got {text!r}")
    return value


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
    from ..viewer import HELP, Viewer

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


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``vkdqs view`` to the command line's ``subparsers``."""
    p = _add_command(subparsers, "view", view, "the viewer: LBS and DQS side by side in a window")
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
