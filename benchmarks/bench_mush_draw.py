"""Frame time of a classic Delta Mush instance ("compute, then draw") re-posed every frame.

For a tube of N vertices (64 bones, 4 influences) drawn by one ``method="delta_mush"`` instance
into a 640x480 offscreen target: the median wall time of a frame that sets a new pose and
renders it (``render_image``, which reads the image back: the same in every revision).

``--against OLD_ROOT`` compares two revisions in one run: K pairs of fresh processes, this
tree's and OLD_ROOT's (a source tree: its ``vkdqs`` is imported through PYTHONPATH), the order
alternating from pair to pair; it reports each side's median over pairs and the median of the
per-pair ratios new/old, so load that hits both halves of a pair cancels out.

    python benchmarks/bench_mush_draw.py [--sizes 10000 100000] [--frames 20]
    python benchmarks/bench_mush_draw.py --against /tmp/old_tree [--pairs 5]

Prints a table and writes benchmarks/results/mush_draw.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import _bench  # benchmarks/_bench.py: timing, the machine, the JSON
import numpy as np

BONES = 64
W, H = 640, 480
HERE = Path(__file__).resolve()


def measure(sizes: list[int], frames: int, warmup: int) -> dict[str, float]:
    """Median seconds per re-posed frame for each size (this process's vkdqs)."""
    from vkdqs import procedural
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.gpu.device import Device

    out = {}
    poses = [procedural.bone_chain_pose(BONES, a) for a in np.linspace(-60.0, 60.0, 16)]
    with Device() as device:
        for n in sizes:
            mesh = procedural.tube(n, bone_count=BONES, influences=4)
            with (
                OffscreenTarget(device, W, H) as target,
                Renderer(device, target) as renderer,
            ):
                inst = renderer.add_instance(
                    renderer.add_mesh(mesh), bone_count=BONES, method="delta_mush"
                )
                renderer.frame_scene()
                times = []
                for f in range(warmup + frames):
                    inst.set_pose(poses[f % len(poses)])
                    t0 = time.perf_counter()
                    renderer.render_image()
                    if f >= warmup:
                        times.append(time.perf_counter() - t0)
                out[str(n)] = statistics.median(times)
    return out


def _side(root: Path | None, args: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    cmd = [sys.executable, str(HERE), "--child", "--frames", str(args.frames)]
    cmd += ["--warmup", str(args.warmup), "--sizes", *map(str, args.sizes)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=_bench.RESULTS / "mush_draw.json")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.sizes, args.frames, args.warmup)))
        return
    if args.against is None:
        new = measure(args.sizes, args.frames, args.warmup)
        for n, t in new.items():
            print(f"{n:>8} vertices  {1e3 * t:8.2f} ms/frame")
        _bench.write_json(args.out, {"machine": _bench.machine(), "ms_per_frame": new})
        return
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for k in range(args.pairs):
        order = [("old", args.against), ("new", None)]
        for name, root in order if k % 2 == 0 else order[::-1]:
            runs[name].append(_side(root, args))
    rows = {}
    for n in map(str, args.sizes):
        old = [r[n] for r in runs["old"]]
        new = [r[n] for r in runs["new"]]
        rows[n] = {
            "old_ms": 1e3 * statistics.median(old),
            "new_ms": 1e3 * statistics.median(new),
            "new/old": statistics.median(b / a for a, b in zip(old, new, strict=True)),
        }
        r = rows[n]
        print(
            f"{n:>8} vertices  old {r['old_ms']:8.2f} ms  new {r['new_ms']:8.2f} ms  "
            f"new/old {r['new/old']:.3f}"
        )
    _bench.write_json(
        args.out,
        {"machine": _bench.machine(), "pairs": args.pairs, "frames": args.frames, "rows": rows},
    )


if __name__ == "__main__":
    main()
