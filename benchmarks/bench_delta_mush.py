"""Classic Delta Mush's cost: DeltaMushSkinner.skin against LBS's Skinner.skin, in the same run.

For a tube of N vertices (64 bones, 4 influences): the time of one ``skin(bones)`` call (a new
pose every call, (N, 3) positions and normals out) of LBS on the compute path, and of Delta Mush
over LBS and over DQS with ``--iterations`` smoothing steps (10 by default), each once per round
after warm-up; the table reports medians, and the Delta Mush / LBS ratio is the median of the
per-round ratios, so noise that hits a whole round cancels out (the issue's target: at most 6x
at 100k vertices and 10 iterations). Also the float64 reference's time (LBS, then
:func:`vkdqs.methods.delta_mush.reference.delta_mush_reference`) and the GPU result's largest error
against it, over the extent; and LBS and Delta Mush over LBS on a candy wrapper of about N vertices
(64 around), whose cap centres have 64 neighbours: the passes run those again in the overflow
dispatches, which meshes whose vertices all have at most 7 neighbours (the tube) skip.

    python benchmarks/bench_delta_mush.py [--sizes 100000] [--iterations 10] [--rounds 9]

Prints a table and writes benchmarks/results/delta_mush.json.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import _bench  # benchmarks/_bench.py: timing, the machine, the JSON
import numpy as np

from vkdqs import procedural, reference
from vkdqs.engine.skinner import Skinner
from vkdqs.gpu.device import Device
from vkdqs.methods.delta_mush.gpu import DeltaMushSkinner
from vkdqs.methods.delta_mush.reference import delta_mush_reference

BONES = 64
RESULTS = _bench.RESULTS


def bench_size(
    device: Device, n: int, iterations: int, rounds: int, warmup: int, reference_rounds: int
) -> dict:
    mesh = procedural.tube(n, bone_count=BONES, influences=4)
    poses = [procedural.bone_chain_pose(BONES, a) for a in np.linspace(-90.0, 90.0, 16)]
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    t0 = time.perf_counter()
    skinners = {
        "lbs": Skinner(device, mesh, bone_count=BONES, method="lbs"),
        "delta mush/lbs": DeltaMushSkinner(
            device, mesh, bone_count=BONES, method="lbs", iterations=iterations
        ),
        "delta mush/dqs": DeltaMushSkinner(
            device, mesh, bone_count=BONES, method="dqs", iterations=iterations
        ),
    }
    setup_s = time.perf_counter() - t0
    candy = procedural.candy_wrapper(rings=max(2, round(n / 64)), segments=64)
    skinners["candy: lbs"] = Skinner(device, candy, bone_count=BONES, method="lbs")
    skinners["candy: delta mush/lbs"] = DeltaMushSkinner(
        device, candy, bone_count=BONES, method="lbs", iterations=iterations
    )
    bind = skinners["delta mush/lbs"].bind
    cycle = itertools.cycle(poses)
    calls = {name: (lambda s=s: s.skin(next(cycle))) for name, s in skinners.items()}
    calls["reference (float64)"] = lambda: delta_mush_reference(
        bind, reference.skin_lbs(*args, next(cycle))[0]
    )
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(warmup):
        for fn in calls.values():
            fn()
    for r in range(rounds):
        for key, fn in calls.items():
            if key.startswith("reference") and r >= reference_rounds:
                continue
            times[key].append(_bench.timed(fn))
    pose = poses[5]
    got = skinners["delta mush/lbs"].skin(pose)[0]
    want = delta_mush_reference(bind, reference.skin_lbs(*args, pose)[0])[0]
    error = float(np.abs(got - want).max() / mesh.extent)
    for s in skinners.values():
        s.close()

    def ratio(a: str, b: str) -> float:
        k = min(len(times[a]), len(times[b]))
        return float(np.median(np.array(times[a][:k]) / np.array(times[b][:k])))

    rows = {
        key: {
            "median_ms": 1e3 * float(np.median(t)),
            "mvertices_per_s": n / float(np.median(t)) / 1e6,
            "runs": len(t),
        }
        for key, t in times.items()
    }
    return {
        "n": n,
        "iterations": iterations,
        "setup_s": setup_s,
        "rows": rows,
        "ratios": {
            "delta mush/lbs over lbs time": ratio("delta mush/lbs", "lbs"),
            "delta mush/dqs over lbs time": ratio("delta mush/dqs", "lbs"),
            "candy: delta mush/lbs over lbs time": ratio("candy: delta mush/lbs", "candy: lbs"),
            "reference over delta mush/lbs time": ratio("reference (float64)", "delta mush/lbs"),
        },
        "max_error_over_extent": error,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--reference-rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "delta_mush.json")
    args = parser.parse_args()

    with Device() as device:
        machine = _bench.machine(device)
        results = [
            bench_size(device, n, args.iterations, args.rounds, args.warmup, args.reference_rounds)
            for n in args.sizes
        ]

    print(f"device: {machine['device']}, {machine['cpu_count']} CPUs; {BONES} bones, 4 influences")
    print("medians of per-call wall time, bones in and numpy positions + normals out\n")
    print(f"{'N':>9} | {'method':<22} | {'median ms':>10} | {'M vertices/s':>12}")
    print("-" * 62)
    for res in results:
        for name, row in res["rows"].items():
            print(
                f"{res['n']:>9} | {name:<22} | {row['median_ms']:>10.2f} | "
                f"{row['mvertices_per_s']:>12.2f}"
            )
        print(f"{'':>9}   smoothing iterations: {res['iterations']}")
        for name, value in res["ratios"].items():
            print(f"{'':>9}   {name}: {value:.2f}")
        print(f"{'':>9}   max |GPU - reference| / extent: {res['max_error_over_extent']:.2e}")
        print("-" * 62)
    _bench.write_json(args.out, {"machine": machine, "results": results})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
