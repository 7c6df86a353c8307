"""``vkdqs bake MODEL --out FILE``: one animation baked to a mesh per frame (.npz, .glb, USD);
``vkdqs bake MODEL... --out-dir DIR``: every clip of many models on a Dask cluster
(:func:`bake_many`, :func:`vkdqs.bake_batch`), status 1 when any pair failed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ... import methods as registry
from ...errors import InputError
from ...files import check_output
from .options import (
    _ANIMATION_HELP,
    SubParsers,
    _add_command,
    _add_model,
    _animation,
    _fps,
    _output,
    _time,
)
from .running import _load, _need_vulkan, _say, _with_file

_BAKE_METHOD_HELP = "skinning method: " + ", ".join(registry.names())
_BAKE_FORMATS = (".npz", ".glb", ".usd", ".usda", ".usdc")  # vkdqs.baking.FORMATS


def _jobs(text: str) -> int:
    """``bake --jobs``: worker processes, 1...256."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs must be a whole number, got {text!r}") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"--jobs must be within 1...256, got {text!r}")
    return value


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
    from ...baking import bake_to_file
    from ...baking.usd import import_pxr
    from ...gpu import Device

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
    from ...baking.batch import bake_batch

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


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``vkdqs bake`` to the command line's ``subparsers``."""
    p = _add_command(
        subparsers,
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
