"""What morph targets cost on the GPU skinning paths: K active targets vs no morphs.

For a tube of N vertices (64 bones, 4 influences, DQS) the time of one ``Skinner.skin`` call (a
new pose every call, (N, 3) positions + normals out) for: the mesh without morph targets; the
same mesh with M targets (position and normal deltas) and no weights given (0 active); and with
K of the M targets active (non-zero weights, a new set of weights every call), for two kinds of
targets:

* dense: every target moves every vertex (the worst case; the Skinner packs such a mesh in the
  dense, target-major layout, where a pose costs its active targets);
* sparse: face-like targets, each moving a contiguous region of 5-10 % of the vertices (the
  regions overlap; packed sparse, vertex-major: a vertex costs its own non-zero deltas).

The GPU part of a call (submit + wait, without the readback copy) is timed too, since that is
where the morph loop runs: in wall time, and in this process's CPU time (lavapipe runs the
shaders on threads of this process, so its CPU time is what the shaders cost, and it does not
grow when other processes share the machine, as wall time does).

Every configuration runs once per round, in the same process, after warm-up; the table reports
medians over rounds, and the ratios (K active / no morphs) are medians of per-round ratios, so
noise that hits a whole round cancels out. The issue's goal: 8 active targets on 100k vertices
cost at most 30 % more than no morphs on the compute path.

    python benchmarks/bench_morph.py [--sizes 100000] [--targets 16] [--active 8] [--rounds 9]

Prints a table and writes benchmarks/results/morph.json.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import _bench  # benchmarks/_bench.py: timing, the machine, the JSON
import numpy as np

from vkdqs import SkinnedMesh, dq, procedural
from vkdqs.engine.skinner import Skinner
from vkdqs.gpu.device import Device

BONES = 64
RESULTS = _bench.RESULTS


def face_regions(rng: np.random.Generator, targets: int, n: int) -> np.ndarray:
    """(M, N) bool: each target moves one contiguous run of 5-10 % of the vertices, the runs
    placed in the last third of the mesh (a face on a body), so they overlap."""
    mask = np.zeros((targets, n), bool)
    lo = 2 * n // 3
    for t in range(targets):  # O(M) bookkeeping
        size = int(rng.uniform(0.05, 0.10) * n)
        start = int(rng.integers(lo, n - size))
        mask[t, start : start + size] = True
    return mask


def bench_size(
    device: Device,
    n: int,
    targets: int,
    active: int,
    rounds: int,
    warmup: int,
    paths: list[str],
    kind: str,
) -> dict:
    base = procedural.tube(n, bone_count=BONES, influences=4)
    rng = np.random.default_rng(1)
    # deltas of the size real blend shapes have: a few percent of the extent
    dp = (0.02 * base.extent) * rng.standard_normal((targets, n, 3)).astype(np.float32)
    dn = 0.2 * rng.standard_normal((targets, n, 3)).astype(np.float32)
    if kind == "sparse":
        keep = face_regions(rng, targets, n)[:, :, None]
        dp, dn = dp * keep, dn * keep
    args = (base.positions, base.normals, base.joints, base.weights, base.indices)
    morph = SkinnedMesh(*args, morph_positions=dp, morph_normals=dn)

    poses = [
        dq.from_matrices(procedural.bone_chain_pose(BONES, a)) for a in np.linspace(-60, 60, 16)
    ]
    weight_sets = []
    for _ in range(16):  # K of the M targets active, different ones every call
        w = np.zeros(targets, np.float32)
        w[rng.choice(targets, active, replace=False)] = rng.uniform(0.1, 1.0, active)
        weight_sets.append(w)

    skinners = {}
    for path in paths:
        skinners[(path, "none")] = Skinner(device, base, bone_count=BONES, path=path)
        skinners[(path, "morph")] = Skinner(device, morph, bone_count=BONES, path=path)

    pose_cycle, weight_cycle = itertools.cycle(poses), itertools.cycle(weight_sets)
    calls = {}
    for path in paths:
        plain, morphed = skinners[(path, "none")], skinners[(path, "morph")]
        calls[(path, "no morphs")] = lambda s=plain: s.skin(next(pose_cycle))
        calls[(path, "0 active")] = lambda s=morphed: s.skin(next(pose_cycle))
        calls[(path, f"{active} active")] = lambda s=morphed: s.skin(
            next(pose_cycle), morph_weights=next(weight_cycle)
        )

    times: dict[tuple[str, str], list[float]] = {k: [] for k in calls}
    gpu: dict[tuple[str, str], list[float]] = {k: [] for k in calls}
    gpu_cpu: dict[tuple[str, str], list[float]] = {k: [] for k in calls}
    for _ in range(warmup):
        for fn in calls.values():
            fn()
    for _ in range(rounds):
        for key, fn in calls.items():
            times[key].append(_bench.timed(fn))
            # the same call's command buffer again, GPU only (no packing, no readback copy)
            s = skinners[(key[0], "none" if key[1] == "no morphs" else "morph")]
            gpu[key].append(_bench.timed(s._cmd.submit_and_wait))
            gpu_cpu[key].append(_bench.cpu_timed(s._cmd.submit_and_wait))
    packing = skinners[(paths[0], "morph")].morph_packing
    for s in skinners.values():
        s.close()

    def ratio(series, a, b):
        return float(np.median(np.array(series[a]) / np.array(series[b])))

    rows = {
        f"{p}/{c}": {
            "median_ms": 1e3 * float(np.median(times[(p, c)])),
            "gpu_ms": 1e3 * float(np.median(gpu[(p, c)])),
            "gpu_cpu_ms": 1e3 * float(np.median(gpu_cpu[(p, c)])),
        }
        for p, c in calls
    }
    ratios = {}
    for path in paths:
        for c in ("0 active", f"{active} active"):
            ratios[f"{path} {c} / no morphs time"] = ratio(times, (path, c), (path, "no morphs"))
            ratios[f"{path} {c} / no morphs gpu"] = ratio(gpu, (path, c), (path, "no morphs"))
            ratios[f"{path} {c} / no morphs gpu cpu"] = ratio(
                gpu_cpu, (path, c), (path, "no morphs")
            )
    return {
        "kind": kind,
        "layout": "sparse" if packing.sparse else "dense",
        "nonzero_fraction": packing.entries / (n * targets),
        "n": n,
        "targets": targets,
        "active": active,
        "rows": rows,
        "ratios": ratios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--targets", type=int, default=16)
    parser.add_argument("--active", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--paths", nargs="+", default=["compute"], choices=["compute", "vertex"])
    parser.add_argument(
        "--kinds", nargs="+", default=["dense", "sparse"], choices=["dense", "sparse"]
    )

    parser.add_argument("--out", type=Path, default=RESULTS / "morph.json")
    args = parser.parse_args()
    if not 0 < args.active <= args.targets:
        parser.error("--active must be in [1, --targets]")
    results = []
    with Device() as device:
        for n, kind in itertools.product(args.sizes, args.kinds):
            res = bench_size(
                device,
                n,
                args.targets,
                args.active,
                args.rounds,
                args.warmup,
                args.paths,
                kind,
            )
            results.append(res)
            print(
                f"\n{n} vertices, {args.targets} {kind} targets ({res['layout']} layout, "
                f"{100 * res['nonzero_fraction']:.1f} % of (target, vertex) deltas non-zero), "
                f"{device.info.name}"
            )
            print(f"{'configuration':<32}{'call ms':>10}{'gpu ms':>10}{'gpu cpu ms':>12}")
            for key, row in res["rows"].items():
                print(
                    f"{key:<32}{row['median_ms']:>10.2f}{row['gpu_ms']:>10.2f}"
                    f"{row['gpu_cpu_ms']:>12.2f}"
                )
            for key, value in res["ratios"].items():
                print(f"  {key}: {value:.3f}x")
    config = {k: v for k, v in vars(args).items() if k != "out"}
    _bench.write_json(args.out, {"machine": _bench.machine(), "config": config, "results": results})
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
