"""``vkdqs info MODEL``: what a glTF file holds (meshes, skins, influences, scale, animations)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .options import SubParsers, _add_command, _add_model
from .running import _load


def info(model: str | Path, *, as_json: bool = False, max_bytes: int | None = None) -> int:
    """Print what a glTF file holds: meshes, skins, influences, scale, animations."""
    scene = _load(Path(model), max_bytes)
    if as_json:
        print(json.dumps(scene.info(), indent=2))
    else:
        print(scene.summary())
    return 0


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``vkdqs info`` to the command line's ``subparsers``."""
    p = _add_command(subparsers, "info", info, "what a glTF file holds: meshes, skins, animations")
    _add_model(p, optional=False)
    p.add_argument("--json", dest="as_json", action="store_true", help="print the details as JSON")
