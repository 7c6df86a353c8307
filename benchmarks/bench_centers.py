"""Centers-of-rotation precomputation (Le & Hodgins 2016): GPU time against the float64 numpy
reference.

For tubes of N vertices (64 bones, 4 influences; ``--noisy`` multiplies every weight by a random
factor in [0.7, 1.3], so no two vertices or triangles share weights, the worst case for the
triangle merging), times ``vkdqs.centers_of_rotation`` end to end (pair binning on the CPU, the
GPU dispatches, the division) and the brute-force float64 reference
(``vkdqs.methods.cor.reference.centers_of_rotation_reference``). The reference costs the same for
every vertex (each is compared with every triangle), so for large N it runs on
``--reference-vertices`` vertices spread over the mesh and its time is scaled to N; the error is
measured on those.

    python benchmarks/bench_centers.py [--sizes 10000 100000] [--noisy] [--rounds 3]

Prints a table and writes benchmarks/results/centers.json (centers-noisy.json with --noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from vkdqs import SkinnedMesh, procedural
from vkdqs.gpu.device import Device
from vkdqs.methods.cor.gpu import centers_of_rotation
from vkdqs.methods.cor.reference import centers_of_rotation_reference, pair_bins

BONES = 64
RESULTS = Path(__file__).resolve().parent / "results"


def make_mesh(n: int, noisy: bool) -> SkinnedMesh:
    mesh = procedural.tube(n, bone_count=BONES, influences=4)
    if not noisy:
        return mesh
    rng = np.random.default_rng(0)
    w = mesh.weights * rng.uniform(0.7, 1.3, mesh.weights.shape)
    return SkinnedMesh(mesh.positions, mesh.normals, mesh.joints, w, mesh.indices)


def bench(device: Device, n: int, rounds: int, ref_vertices: int, noisy: bool) -> dict:
    mesh = make_mesh(n, noisy)
    t0 = time.perf_counter()
    bins = pair_bins(mesh, BONES)
    binning = time.perf_counter() - t0
    gpu_times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        centers = centers_of_rotation(mesh, bone_count=BONES, device=device, progress=False)
        gpu_times.append(time.perf_counter() - t0)
    k = min(ref_vertices, n)
    rows = np.linspace(0, n - 1, k).astype(np.int64)
    t0 = time.perf_counter()
    ref = centers_of_rotation_reference(mesh, bone_count=BONES, chunk=64, vertices=rows)
    ref_time_n = (time.perf_counter() - t0) * n / k  # every vertex costs the same
    err = float(np.abs(centers[rows] - ref).max() / mesh.extent)
    gpu = float(np.median(gpu_times))
    return {
        "n": n,
        "triangles": int(mesh.indices.size // 3),
        "noisy": noisy,
        "pair_entries": bins.entry_count,
        "binning_s": binning,
        "gpu_total_s": gpu,
        "gpu_runs": gpu_times,
        "reference_s_for_n": ref_time_n,
        "reference_vertices_timed": int(k),
        "speedup": ref_time_n / gpu,
        "max_error_over_extent": err,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference-vertices", type=int, default=1000)
    parser.add_argument("--noisy", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or RESULTS / ("centers-noisy.json" if args.noisy else "centers.json")
    with Device() as device:
        machine = {"device": device.info.name, "cpu_count": os.cpu_count()}
        results = [
            bench(device, n, args.rounds, args.reference_vertices, args.noisy) for n in args.sizes
        ]
    print(f"device: {machine['device']}, {machine['cpu_count']} CPUs; {BONES} bones, 4 influences")
    print(
        f"{'N':>8} | {'tris':>8} | {'entries':>8} | {'GPU s':>7} | {'numpy f64 s':>11} | "
        f"{'speedup':>8} | {'max err/extent':>14}"
    )
    for r in results:
        print(
            f"{r['n']:>8} | {r['triangles']:>8} | {r['pair_entries']:>8} | "
            f"{r['gpu_total_s']:>7.2f} | {r['reference_s_for_n']:>11.1f} | "
            f"{r['speedup']:>7.0f}x | {r['max_error_over_extent']:>14.2e}"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
