"""``vkdqs shaders``: the skinning shaders' SPIR-V variants and their interface (``--json``)."""

from __future__ import annotations

import argparse
import json

from ...shaders import KINDS, interface, variants
from .options import SubParsers, _add_command


def shaders(
    *,
    method: str | None = None,
    kind: str = "render",
    slots: int = 4,
    surface: bool = False,
    layout: str = "exact",
    as_json: bool = False,
) -> int:
    """List the variants, or print one variant's interface (``--method``); ``--json``: as
    JSON (every variant's interface without ``--method``)."""
    if method is not None:
        found = interface(method, kind, slots, surface, layout)
        if as_json:
            print(json.dumps(found, indent=2))
        else:
            print(f"{found['name']}: {found['stage']} shader, entry point {found['entry_point']}")
            for d in found["descriptors"]:
                extra = f" ({d['input']}, {d['format']})" if "input" in d else ""
                print(f"  set {d['set']} binding {d['binding']}: {d['type']}{extra}")
            for m in found["push_constants"]["members"]:
                print(f"  push constant {m['name']} ({m['type']}) at offset {m['offset']}")
            for v in found["vertex_inputs"]:
                print(f"  location {v['location']}: {v['input']} {v['format']}")
            for s in found["specialization"]:
                print(
                    f"  constant_id {s['id']} {s['name']} (default {s['default']}): {s['meaning']}"
                )
        return 0
    listed = variants()
    if as_json:
        out = [interface(v["method"], v["kind"], v["slots"], v["surface"], layout) for v in listed]
        print(json.dumps(out, indent=2))
    else:
        for v in listed:
            print(
                f"{v['name']}: --method {v['method']} --kind {v['kind']} --slots {v['slots']}"
                + (" --surface" if v["surface"] else "")
            )
    return 0


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``vkdqs shaders`` to the command line's ``subparsers``."""
    p = _add_command(
        subparsers, "shaders", shaders, "the skinning shaders' variants and their interface"
    )
    p.add_argument("--method", help="the variant's skinning method (default: list the variants)")
    p.add_argument("--kind", choices=KINDS, default="render", help="which shader (default: render)")
    p.add_argument("--slots", type=int, choices=(4, 8), default=4, help="influence slots")
    p.add_argument("--surface", action="store_true", help="the render variant with UV and colour")
    p.add_argument(
        "--layout",
        choices=("exact", "lean"),
        default="exact",
        help="vertex formats (default: exact)",
    )
    p.add_argument("--json", dest="as_json", action="store_true", help="print it as JSON")
