"""The options the ``vkdqs`` subcommands share: the argparse types that check a value when it
is parsed (a usage error, exit status 2, names what is wrong), the model argument and
``--max-bytes``, help texts, and the help formatter that shows each option's default.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ... import methods as registry
from ...errors import InputError

_ANIMATION_HELP = "model: animation index or name, or 'rest' (default: the first animation)"
_METHOD_HELP = (
    "what to draw side by side: "
    + ", ".join(f"{m.name} ({m.summary})" for m in registry.shown())
    + "; several joined by commas (lbs,dqs,cor), both (lbs,dqs: LBS left, DQS right), all "
    "(every method the model's skins accept; the others are named on standard error), or diff "
    "(one copy coloured by |DQS - LBS| per vertex, with a colour bar in model units)"
)
#: Each side of --size, in pixels (Vulkan guarantees 4096 for images; desktop GPUs take 16384).
MAX_SIZE = 16384


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


#: --time: about 11.6 days either way; the label shows it with 2 decimals.
_time = _number("the time", -1e6, 1e6, "seconds")


def _animation(text: str | None) -> int | str | None:
    """``--animation``: an index, a name, or "rest" for the rest pose."""
    if text is None:
        return 0
    if text == "rest":
        return None
    return int(text) if text.lstrip("-").isdigit() else text


#: --fps: a bake's frame rate.
_fps = _number("the frame rate", 0.001, 1000.0, "frames per second")


def _methods(text: str) -> str:
    """``--method``: one method, several joined by commas, ``both`` or ``all``."""
    try:
        registry.parse_methods(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


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


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: ...)" to each option's help, except flags (off unless given) and help
    texts that already say their default (those whose default is None describe it in words)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.nargs == 0 or "(default" in text or action.default is None:
            return text
        return super()._get_help_string(action)


#: What ``ArgumentParser.add_subparsers()`` returns: argparse names its class privately (the one
#: private name the command line uses; typeshed types it so).
SubParsers = argparse._SubParsersAction


def _add_command(
    subparsers: SubParsers[argparse.ArgumentParser],
    name: str,
    func: Callable[..., int],
    help: str,
) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` (``help`` also its description) calling ``func`` with the
    other parsed values as keyword arguments (:func:`.running._run`)."""
    p = subparsers.add_parser(name, help=help, description=help, formatter_class=_HelpFormatter)
    p.set_defaults(func=func)
    return p
