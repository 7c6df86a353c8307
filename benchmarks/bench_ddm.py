"""Direct Delta Mush precomputation: GPU time against the float64 scipy reference.

For tubes of N vertices (``--bones`` bones, 4 influences), times ``vkdqs.direct_delta_mush``
end to end (Laplacian and inputs on the CPU, the smoothing sweeps on the GPU, the truncation and
Ω on the CPU) and ``vkdqs.methods.ddm.reference.precompute_reference`` (sparse LU solves, float64),
then poses both (truncated to 8 bones) with a 90° bend of the chain and reports the largest position
difference over the extent. The issue's targets: under 30 s for 100k vertices on lavapipe and at
least 20x the reference.

    python benchmarks/bench_ddm.py [--sizes 10000 100000] [--bones 64] [--rounds 3]
        [--reference-sizes 10000]

The float64 reference takes minutes at 100k vertices: it runs (once) only at the sizes in
``--reference-sizes`` (all by default); the other rows report the GPU time alone.

Prints a table and writes benchmarks/results/ddm.json (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from vkdqs import procedural
from vkdqs.gpu.device import Device
from vkdqs.methods.ddm import reference as ddm
from vkdqs.methods.ddm.gpu import direct_delta_mush

RESULTS = Path(__file__).resolve().parent / "results"


def bench(device: Device, n: int, bones: int, rounds: int, params: dict, reference: bool) -> dict:
    mesh = procedural.tube(n, bone_count=bones, influences=4)
    gpu_times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        result = direct_delta_mush(mesh, bone_count=bones, device=device, **params)
        gpu_times.append(time.perf_counter() - t0)
    gpu = float(np.median(gpu_times))
    out = {"n": n, "bones": bones, "parameters": params, "gpu_total_s": gpu, "gpu_runs": gpu_times}
    if not reference:
        return out
    t0 = time.perf_counter()
    full = ddm.precompute_reference(
        mesh.positions, mesh.indices, mesh.joints, mesh.weights, bones, **params
    )
    reference_s = time.perf_counter() - t0
    omega, kept = ddm.truncate(full, result.max_bones)
    pose = procedural.bone_chain_pose(bones, 90.0)
    want, _ = ddm.skin_reference(mesh.positions, mesh.normals, omega, pose, kept)
    got, _ = ddm.skin_reference(
        mesh.positions,
        mesh.normals,
        result.omega,
        pose,
        result.bones.astype(np.int64),
        origin=result.origin,
    )
    return {
        **out,
        "reference_s": reference_s,
        "speedup": reference_s / gpu,
        "max_error_over_extent": float(np.abs(got - want).max() / mesh.extent),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--bones", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--reference-sizes",
        type=int,
        nargs="*",
        default=None,
        help="sizes that also run the float64 reference (default: all)",
    )
    parser.add_argument("--iterations", type=int, default=ddm.DEFAULTS["iterations"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    params = {**ddm.DEFAULTS, "iterations": args.iterations}
    out = args.out or RESULTS / "ddm.json"
    with Device() as device:
        machine = {"device": device.info.name, "cpu_count": os.cpu_count()}
        ref = args.sizes if args.reference_sizes is None else args.reference_sizes
        results = [bench(device, n, args.bones, args.rounds, params, n in ref) for n in args.sizes]
    print(f"device: {machine['device']}, {machine['cpu_count']} CPUs; {args.bones} bones; {params}")
    print(
        f"{'N':>8} | {'GPU s':>7} | {'scipy f64 s':>11} | {'speedup':>8} | {'max err/extent':>14}"
    )
    for r in results:
        if "reference_s" not in r:
            print(f"{r['n']:>8} | {r['gpu_total_s']:>7.2f} | {'-':>11} | {'-':>8} | {'-':>14}")
            continue
        print(
            f"{r['n']:>8} | {r['gpu_total_s']:>7.2f} | {r['reference_s']:>11.2f} | "
            f"{r['speedup']:>7.2f}x | {r['max_error_over_extent']:>14.2e}"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
