"""``vkdqs export MODEL --out RIG.usd``: a UsdSkel rig that keeps the skinning method (no GPU)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ... import methods as registry
from ...files import check_output
from .options import (
    _ANIMATION_HELP,
    SubParsers,
    _add_command,
    _add_model,
    _animation,
    _fps,
    _output,
)
from .running import _load

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
    from ...baking.usd import import_pxr
    from ...baking.usdskel import _usd_method, export_usdskel

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


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``vkdqs export`` to the command line's ``subparsers``."""
    p = _add_command(
        subparsers, "export", export, "write a UsdSkel rig that keeps the skinning method"
    )
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
