"""The ``vkdqs`` command line: :func:`main` (the ``vkdqs`` command, ``python -m vkdqs``) and
:func:`build_parser`; one module per subcommand, each adding its subparser (``add_parser``).

``vkdqs demo`` (:mod:`.demo`): skins the candy-wrapper cylinder twisted 0...170 degrees with
DQS, LBS, CoR (optimized centers of rotation, computed on the same device) and a 50% LBS/DQS
blend on the GPU (every angle in one submission per method) and prints the smallest ring radius
and the volume per angle, then each method's (and the centers') largest error against the
float64 CPU reference; then opens the viewer when a display is available, or renders the
side-by-side PNG and says where it wrote it.

``vkdqs view [MODEL]`` (:mod:`.view`): the windowed viewer, on the candy wrapper or a glTF
model. ``vkdqs render [MODEL] --out frame.png`` (:mod:`.render`): a PNG with no display.
``vkdqs info MODEL`` (:mod:`.info`): what a glTF file holds (meshes, skins, influences, scale,
animations). ``vkdqs bake MODEL --out FILE`` (:mod:`.bake`) bakes one animation; ``vkdqs bake
MODEL... --out-dir DIR`` every clip of many models on a Dask cluster (:func:`.bake.bake_many`,
:func:`vkdqs.bake_batch`), status 1 when any pair failed. ``vkdqs export MODEL --out RIG.usd``
(:mod:`.export`): a UsdSkel rig that keeps the skinning method.

Errors about the input (a malformed glTF file, an animation that does not exist, a model DQS
cannot skin), the output (a file that is the model read, a folder, a full disk, no permission:
files are written as :mod:`vkdqs.files` writes them) or the system (no Vulkan device, no Vulkan
driver, no Vulkan loader library: the line says what to install) print one line,
``vkdqs: error: ...``, to stderr and exit with status 1 (:mod:`.running`). Options are checked
when parsed (:mod:`.options`): an unusable value (a size outside 1...16384, a non-finite or
out-of-range number) is a usage error, exit status 2. ``vkdqs --version`` prints the version;
every option's help shows its default.

Hostile surroundings are survived without a traceback (:mod:`.running`): text the output's
encoding cannot hold (a model's "Hüfte" under ``LC_ALL=C``) is escaped; what would be printed
to a standard output or error that is closed (``>&-``, ``2>&-``) or fails (a reader gone,
``| head -1``; ``/dev/full``) is dropped. Commands whose work is printing (``info``, ``demo``,
``--help``) then say so: status 141 when the reader went away (quietly, as cat), 1 otherwise;
the others exit with their work's status (``bake`` and ``render``: 0 once the file is written).
SIGTERM, SIGHUP and SIGINT stop a command after removing the files it was writing (status
128 + the signal's number); SIGXFSZ is ignored, so a write past ``ulimit -f`` fails with one
line.

Each subcommand calls a plain function (:func:`.demo.demo`, :func:`.view.view`,
:func:`.render.render`, :func:`.info.info`, :func:`.bake.bake`, :func:`.export.export`) with
the parsed options as keyword arguments; ``demo`` calls ``view`` and ``render`` the same way.
"""

from __future__ import annotations

import argparse
import sys

from . import bake, demo, export, info, render, shaders, view
from .options import _HelpFormatter
from .running import _lost_output, _run, _standard_streams, _stop_on_signals

__all__ = ["build_parser", "main"]

#: The subcommands in the order ``vkdqs --help`` lists them; each module's ``add_parser`` adds
#: its subparser.
_COMMANDS = (demo, view, render, info, bake, export, shaders)

#: Commands whose work is what they print: when their standard output is closed or fails, they
#: say so (status 1, or 141 when the reader went away); the others' work is a file or a window.
_PRINTING = frozenset({"info", "demo", "shaders"})


def build_parser() -> argparse.ArgumentParser:
    """The ``vkdqs`` argument parser; each subcommand sets ``func`` to the function it calls with
    the other parsed values as keyword arguments."""
    from ... import __version__

    parser = argparse.ArgumentParser(
        prog="vkdqs",
        description="Dual quaternion skinning on Vulkan",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"vkdqs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


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
