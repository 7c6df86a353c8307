"""Compare two revisions' benchmarks in one run: old, new, old, new, ... in separate processes.

Each revision is a repository root with its own ``.venv`` (``make venv``). For each of K pairs it
runs bench_skinning.py, bench_render.py, bench_crowd.py and bench_bake.py (same options for both
sides; ``--only`` picks one), the old root first in
even pairs and the new one first in odd pairs, each in a fresh process that does its own
warm-up and writes its JSON to a temporary file through the benchmark's ``--out`` (nothing
under benchmarks/results/ of either root is touched). Per metric it reports the median over
pairs for old and new and the median of the per-pair ratios new/old: noise that hits both
halves of a pair cancels out of the ratio.

    python benchmarks/compare_revisions.py OLD_ROOT NEW_ROOT [--pairs 5]

Prints a table and writes benchmarks/results/compare.json. Both sides get this process's
environment unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    return out.stdout.rstrip("\n")  # not strip(): porcelain lines start with a status column


def _changed(root: Path, *paths: str) -> list[str]:
    """Tracked files that differ from HEAD under ``paths`` (all of them without paths)."""
    status = _git(root, "status", "--porcelain", "--untracked-files=no", "--", *paths)
    return [line[3:] for line in status.splitlines()]


def _run(root: Path, script: str, args: list[str], timeout: float) -> dict:
    python = root / ".venv" / "bin" / "python"
    with tempfile.TemporaryDirectory(prefix="vkdqs-compare-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [str(python), str(root / "benchmarks" / script), *args, "--out", str(out)]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
        return json.loads(out.read_text())


def skinning_metrics(data: dict) -> dict[str, float]:
    """Flatten bench_skinning.py's JSON to {metric name: value}."""
    flat = {}
    for res in data["results"]:
        n = res["n"]
        for name, row in res["rows"].items():
            flat[f"skin n={n} {name} ms"] = row["median_ms"]
        for name, value in res["ratios"].items():
            flat[f"skin n={n} {name}"] = value
        for method, part in res["compute_parts"].items():
            for key, value in part.items():
                flat[f"skin n={n} compute/{method} {key}"] = value
    return flat


def crowd_metrics(data: dict) -> dict[str, float]:
    """Flatten bench_crowd.py's JSON to {metric name: value}: per mesh, method and copy count,
    the crowd's and the instances' frame, GPU and CPU milliseconds."""
    flat = {}
    for res in data["results"]:
        label = f"crowd {res['mesh']} {res['method']} x{res['copies']}"
        for kind in ("crowd", "instances"):
            row = res.get(kind)
            if row:
                for key in ("frame_ms", "gpu_ms", "cpu_ms"):
                    flat[f"{label} {kind} {key}"] = row[key]
    return flat


def bake_metrics(data: dict) -> dict[str, float]:
    """Flatten bench_bake.py's JSON to {metric name: value}: seconds per bake of each model."""
    flat = {}
    for res in data["results"]:
        for name, row in res["rows"].items():
            flat[f"bake {res['model']} {name} s"] = row["median_s"]
    return flat


def render_metrics(data: dict) -> dict[str, float]:
    """Flatten bench_render.py's JSON to {metric name: value}."""
    flat = {}
    for res in data["results"]:
        label = f"render {res['instances']}x{res['vertices']}"
        for method, row in res["methods"].items():
            flat[f"{label} {method} fps"] = row["fps"]
            flat[f"{label} {method} CPU ms/frame"] = row["cpu_ms_per_frame"]
            if "vs_unskinned" in row:
                flat[f"{label} {method} vs unskinned"] = row["vs_unskinned"]
    return flat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="repository root of the old revision")
    parser.add_argument("new", type=Path, help="repository root of the new revision")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--skin-sizes", nargs="+", default=["10000", "100000", "1000000"])
    parser.add_argument("--skin-rounds", type=int, default=5)
    parser.add_argument("--render-sizes", nargs="+", default=["100000"])
    parser.add_argument("--render-instances", nargs="+", default=["1", "16", "256"])
    parser.add_argument("--render-rounds", type=int, default=5)
    parser.add_argument("--render-frames", type=int, default=10)
    parser.add_argument("--crowd-counts", nargs="+", default=["256", "1024"])
    parser.add_argument("--bake-frames", type=int, default=300)
    parser.add_argument("--only", choices=["skinning", "render", "crowd", "bake"], default=None)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per process")
    parser.add_argument("--out", type=Path, default=RESULTS / "compare.json")
    args = parser.parse_args()

    roots = {"old": args.old.resolve(), "new": args.new.resolve()}
    for side, root in roots.items():
        if not (root / ".venv" / "bin" / "python").exists():
            raise SystemExit(f"{side}: {root}/.venv/bin/python is missing; run `make venv` there")

    benches = []
    if args.only in (None, "skinning"):
        skin_args = ["--sizes", *args.skin_sizes, "--rounds", str(args.skin_rounds)]
        benches.append(("bench_skinning.py", skin_args, skinning_metrics))
    if args.only in (None, "render"):
        render_args = ["--sizes", *args.render_sizes, "--instances", *args.render_instances]
        render_args += ["--rounds", str(args.render_rounds), "--frames", str(args.render_frames)]
        benches.append(("bench_render.py", render_args, render_metrics))
    if args.only in (None, "crowd"):
        crowd_args = ["--counts", *args.crowd_counts, "--methods", "dqs", "lbs", "--rounds", "3"]
        crowd_args += ["--textured-counts", "--culling-counts"]  # the plain rows only: minutes less
        benches.append(("bench_crowd.py", crowd_args, crowd_metrics))
    if args.only in (None, "bake"):
        bake_args = ["--frames", str(args.bake_frames), "--rounds", "3", "--no-memory"]
        bake_args += ["--numpy-frames", "10"]
        benches.append(("bench_bake.py", bake_args, bake_metrics))

    changed = {side: _changed(root) for side, root in roots.items()}
    # values[metric][side] = one value per pair
    values: dict[str, dict[str, list[float]]] = {}
    t0 = time.perf_counter()
    for pair in range(args.pairs):
        for script, bench_args, flatten in benches:
            # Alternate which side goes first: on a busy machine the order of a pair alone
            # skews its ratio (the first process of a pair ran measurably slower here).
            for side in ("old", "new") if pair % 2 == 0 else ("new", "old"):
                flat = flatten(_run(roots[side], script, bench_args, args.timeout))
                for metric, value in flat.items():
                    values.setdefault(metric, {"old": [], "new": []})[side].append(value)
        print(
            f"pair {pair + 1}/{args.pairs} done, {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    table = {}
    for metric, sides in values.items():
        old, new = sides["old"], sides["new"]
        if len(old) != len(new) or not old:
            continue  # a metric one side does not report
        ratios = [b / a for a, b in zip(old, new, strict=True) if a]
        table[metric] = {
            "old_median": statistics.median(old),
            "new_median": statistics.median(new),
            "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            "old": old,
            "new": new,
        }

    width = max(len(m) for m in table)
    print(f"{args.pairs} pairs, old {roots['old']} vs new {roots['new']}; medians over pairs")
    print(f"{'metric':<{width}} | {'old':>9} | {'new':>9} | {'new/old':>7} | {'ratio range':>13}")
    print("-" * (width + 50))
    for metric, row in table.items():
        print(
            f"{metric:<{width}} | {row['old_median']:>9.3f} | {row['new_median']:>9.3f} | "
            f"{row['ratio_median']:>7.3f} | {row['ratio_min']:>6.3f}-{row['ratio_max']:<6.3f}"
        )

    report = {
        "pairs": args.pairs,
        "revisions": {
            side: {
                "root": str(root),
                "commit": _git(root, "rev-parse", "HEAD"),
                # tracked files changed from that commit when the benchmarks ran
                "uncommitted": [
                    p for p in changed[side] if not p.startswith("benchmarks/results/")
                ],
            }
            for side, root in roots.items()
        },
        "config": {script: bench_args for script, bench_args, _ in benches},
        "cpu_count": os.cpu_count(),
        "metrics": table,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    # The benchmarks wrote to temporary files; their committed results must be untouched.
    out = args.out.resolve()
    for side, root in roots.items():
        dirty = [p for p in _changed(root, "benchmarks/results") if root / p != out]
        if dirty:
            print(f"warning: {side} has changed files under benchmarks/results: {dirty}")


if __name__ == "__main__":
    main()
