"""Skinning throughput: skinned vertices per second, end to end, the way a user calls it.

For a tube of N vertices (64 bones, 4 influences) and for each of: the GPU compute path, the GPU
vertex (storage-buffer readback) path, and the numpy float32 CPU path, DQS, LBS and CoR (and on
the GPU the per-vertex LBS/DQS blend): the time of one ``skin(bones)`` call, bones in (a new
pose every call) and (N, 3) positions + normals out. CoR's centers are computed once per mesh,
before timing (``--no-cor`` skips CoR and blend). For the compute path's DQS and LBS, also the
exact box of the skinned positions: ``skin(bones, bounds=True)`` (vertices and box, the box
reduced on the GPU in the same dispatch) and ``bounds(bones)`` (the box alone, no vertex written
or read back), with their time as a ratio of ``skin(bones)``'s in the same rounds. And the lean
vertex layout (``Skinner(layout="lean")``: octahedral snorm16 normals, uint8 joints, unorm16
weights) beside the exact one, with the bytes a vertex each reads, end to end and GPU time alone
(submit and wait of the recorded dispatch, the two layouts interleaved in each round). And
velocity skinning over DQS (``skin(bones, previous=..., dt=...)``, a new pose and the one before
it each call) against DQS alone, end to end and GPU time alone, on two skeletons over the same
skinning: the tube's chain (up to 64 joints deep) and 8 limbs of 8 from one root (9 deep).

Every configuration runs once per round, in the same process, after warm-up; the table reports
the median over rounds, and the ratios (DQS/LBS, compute vs numpy) are medians of per-round
ratios, so machine noise that hits a whole round cancels out. For the compute path it also
splits a call into its parts: bone packing (Python/numpy), GPU submit+wait, and readback copy.

    python benchmarks/bench_skinning.py [--sizes 10000 100000 1000000] [--rounds 7]

Prints a table and writes benchmarks/results/skinning.json.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import _bench  # benchmarks/_bench.py: timing, the machine, the JSON
import numpy as np

from vkdqs import SkinnedMesh, dq, procedural, reference
from vkdqs import shader_interface as si
from vkdqs.engine.skinner import Skinner
from vkdqs.gpu.device import Device
from vkdqs.methods.cor.gpu import centers_of_rotation
from vkdqs.methods.velocity import velocity_rig

BONES = 64
RESULTS = _bench.RESULTS


def bench_size(
    device: Device, n: int, rounds: int, warmup: int, numpy_rounds: int, cor: bool = True
) -> dict:
    mesh = procedural.tube(n, bone_count=BONES, influences=4)
    poses = [procedural.bone_chain_pose(BONES, a) for a in np.linspace(-60.0, 60.0, 16)]
    dq_poses = [dq.from_matrices(p) for p in poses]
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    methods = ("dqs", "lbs", "cor", "blend") if cor else ("dqs", "lbs")
    centers_s = None
    if cor:
        blend = np.linspace(0.0, 1.0, n)
        blend_mesh = SkinnedMesh(*args, mesh.indices, dqs_blend=blend)
        t0 = time.perf_counter()
        centers = centers_of_rotation(mesh, bone_count=BONES, device=device, progress=False)
        centers_s = time.perf_counter() - t0

    def make(path: str, method: str) -> Skinner:
        if method == "cor":
            return Skinner(device, mesh, bone_count=BONES, method="cor", path=path, centers=centers)
        m = blend_mesh if method == "blend" else mesh
        return Skinner(device, m, bone_count=BONES, method=method, path=path)

    skinners = {
        (path, method): make(path, method) for path in ("compute", "vertex") for method in methods
    }
    # A new pose every call, as an animated app would give.
    dq_cycle, mat_cycle = itertools.cycle(dq_poses), itertools.cycle(poses)
    calls = {}
    for (path, method), skinner in skinners.items():
        cycle = dq_cycle if method in ("dqs", "cor") else mat_cycle
        calls[(path, method)] = lambda s=skinner, c=cycle: s.skin(next(c))
    lean = {
        method: Skinner(device, mesh, bone_count=BONES, method=method, layout="lean")
        for method in ("dqs", "lbs")
    }
    for method, cycle in (("dqs", dq_cycle), ("lbs", mat_cycle)):
        calls[("compute", f"{method} lean")] = lambda s=lean[method], c=cycle: s.skin(next(c))
    for method, cycle in (("dqs", dq_cycle), ("lbs", mat_cycle)):
        s = skinners[("compute", method)]
        calls[("compute", f"{method}+box")] = lambda s=s, c=cycle: s.skin(next(c), bounds=True)
        calls[("compute", f"{method} box only")] = lambda s=s, c=cycle: s.bounds(next(c))
    # velocity skinning over DQS: each call a new pose and the one before it, 1/60 s apart
    rest = np.repeat(np.eye(4)[None], BONES, axis=0)
    rest[:, 1, 3] = np.arange(BONES) * 10.0 / BONES  # the tube's bone heads
    # two skeletons over the same skinning: the tube's chain (a joint's chain up to 64 deep, the
    # worst case: the floppy turns walk it), and 8 limbs of 8 from one root (9 deep at most,
    # a character's depth)
    limbs = np.where(np.arange(BONES) % 8 == 0, 0, np.arange(BONES) - 1)
    limbs[0] = -1
    velocity = {}
    for name, parents in (("velocity", np.arange(BONES) - 1), ("velocity limbs", limbs)):
        rig = velocity_rig(mesh, parents, rest)
        velocity[name] = Skinner(
            device, mesh, bone_count=BONES, method="velocity", inputs={"velocity": rig}
        )
        motion = itertools.cycle(list(zip(dq_poses, dq_poses[-1:] + dq_poses[:-1], strict=True)))

        def moving(s=velocity[name], c=motion):
            now, before = next(c)
            return s.skin(now, previous=before, dt=1 / 60)

        calls[("compute", name)] = moving
    calls[("numpy32", "dqs")] = lambda: reference.skin_dqs(*args, next(dq_cycle), dtype=np.float32)
    calls[("numpy32", "lbs")] = lambda: reference.skin_lbs(*args, next(mat_cycle), dtype=np.float32)
    if cor:
        calls[("numpy32", "cor")] = lambda: reference.skin_cor(
            *args, next(dq_cycle), centers, dtype=np.float32
        )

    times: dict[tuple[str, str], list[float]] = {k: [] for k in calls}
    for _ in range(warmup):
        for fn in calls.values():
            fn()
    for r in range(rounds):
        for key, fn in calls.items():
            if key[0] == "numpy32" and r >= numpy_rounds:
                continue
            times[key].append(_bench.timed(fn))

    # The lean layout's GPU time alone against the exact one's, interleaved call by call.
    gpu_layouts: dict[str, list[float]] = {}
    for method, src in (("dqs", dq_poses), ("lbs", poses)):
        pair = {"exact": skinners[("compute", method)], "lean": lean[method]}
        for s in pair.values():
            s.skin(src[0])
        for _ in range(3 * rounds):
            for name, s in pair.items():
                gpu_layouts.setdefault(f"{method} {name}", []).append(
                    _bench.timed(s._cmd.submit_and_wait)
                )
    # velocity's GPU time alone against DQS's (the recorded submission: skinning + its pass)
    for key in (("compute", "velocity"), ("compute", "velocity limbs")):
        calls[key]()
    skinners[("compute", "dqs")].skin(dq_poses[0])
    for _ in range(3 * rounds):
        for name, sk in (*velocity.items(), ("dqs", skinners[("compute", "dqs")])):
            gpu_layouts.setdefault(f"{name} gpu", []).append(_bench.timed(sk._cmd.submit_and_wait))
    gpu_velocity = {
        name: float(np.median(np.array(gpu_layouts[f"{name} gpu"]) / gpu_layouts["dqs gpu"]))
        for name in velocity
    }
    gpu_lean = {
        method: float(
            np.median(np.array(gpu_layouts[f"{method} lean"]) / gpu_layouts[f"{method} exact"])
        )
        for method in ("dqs", "lbs")
    }

    # Where a compute-path call spends its time.
    parts = {}
    for method in methods:
        s = skinners[("compute", method)]
        src = dq_poses if method in ("dqs", "cor") else poses
        s.skin(src[0])
        pose = src[1]
        pack = [_bench.timed(lambda s=s, p=pose: s._pack(p, batched=False)) for _ in range(rounds)]
        gpu = [_bench.timed(s._cmd.submit_and_wait) for _ in range(rounds)]
        read = [
            _bench.timed(lambda s=s: s.out_buffer.read(np.float32, 6 * n)) for _ in range(rounds)
        ]
        parts[method] = {
            "pack_ms": 1e3 * float(np.median(pack)),
            "gpu_ms": 1e3 * float(np.median(gpu)),
            "readback_ms": 1e3 * float(np.median(read)),
        }
    memory = device.memory_report()  # every Skinner of this size alive
    for s in (*skinners.values(), *lean.values(), *velocity.values()):
        s.close()

    def med(key):
        return float(np.median(times[key]))

    def ratio(a, b):
        k = min(len(times[a]), len(times[b]))
        return float(np.median(np.array(times[a][:k]) / np.array(times[b][:k])))

    rows = {}
    for key in calls:
        rows[f"{key[0]}/{key[1]}"] = {
            "median_ms": 1e3 * med(key),
            "mvertices_per_s": n / med(key) / 1e6,
            "runs": len(times[key]),
        }
    extra = {}
    if cor:
        extra = {
            "compute cor/dqs time": ratio(("compute", "cor"), ("compute", "dqs")),
            "compute blend/dqs time": ratio(("compute", "blend"), ("compute", "dqs")),
            "vertex cor/dqs time": ratio(("vertex", "cor"), ("vertex", "dqs")),
            "compute speedup over numpy32 (cor)": ratio(("numpy32", "cor"), ("compute", "cor")),
        }
    return {
        "n": n,
        "memory": memory,
        "bytes_per_vertex": {
            layout: si.layout_bytes(4, "dqs", s.vertex_layout)
            for layout, s in (("exact", skinners[("compute", "dqs")]), ("lean", lean["dqs"]))
        },
        "gpu_ms": {k: 1e3 * float(np.median(v)) for k, v in gpu_layouts.items()},
        "centers_s": centers_s,
        "rows": rows,
        "ratios": {
            **extra,
            "compute dqs/lbs time": ratio(("compute", "dqs"), ("compute", "lbs")),
            "compute velocity/dqs time": ratio(("compute", "velocity"), ("compute", "dqs")),
            "compute velocity/dqs GPU time": gpu_velocity["velocity"],
            "compute velocity limbs/dqs time": ratio(
                ("compute", "velocity limbs"), ("compute", "dqs")
            ),
            "compute velocity limbs/dqs GPU time": gpu_velocity["velocity limbs"],
            "compute dqs skin(bounds=True)/skin time": ratio(
                ("compute", "dqs+box"), ("compute", "dqs")
            ),
            "compute dqs bounds()/skin time": ratio(
                ("compute", "dqs box only"), ("compute", "dqs")
            ),
            "compute lbs skin(bounds=True)/skin time": ratio(
                ("compute", "lbs+box"), ("compute", "lbs")
            ),
            "compute lbs bounds()/skin time": ratio(
                ("compute", "lbs box only"), ("compute", "lbs")
            ),
            "compute dqs lean/exact time": ratio(("compute", "dqs lean"), ("compute", "dqs")),
            "compute lbs lean/exact time": ratio(("compute", "lbs lean"), ("compute", "lbs")),
            "compute dqs lean/exact GPU time": gpu_lean["dqs"],
            "compute lbs lean/exact GPU time": gpu_lean["lbs"],
            "vertex dqs/lbs time": ratio(("vertex", "dqs"), ("vertex", "lbs")),
            "numpy32 dqs/lbs time": ratio(("numpy32", "dqs"), ("numpy32", "lbs")),
            "compute speedup over numpy32 (dqs)": ratio(("numpy32", "dqs"), ("compute", "dqs")),
            "compute speedup over numpy32 (lbs)": ratio(("numpy32", "lbs"), ("compute", "lbs")),
        },
        "compute_parts": parts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--numpy-rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "skinning.json")
    parser.add_argument("--no-cor", action="store_true", help="only DQS and LBS")
    args = parser.parse_args()

    with Device() as device:
        machine = _bench.machine(device)
        results = [
            bench_size(device, n, args.rounds, args.warmup, args.numpy_rounds, not args.no_cor)
            for n in args.sizes
        ]

    print(f"device: {machine['device']}, {machine['cpu_count']} CPUs; {BONES} bones, 4 influences")
    print("medians of per-call wall time, bones in and numpy positions + normals out\n")
    print(f"{'N':>9} | {'path/method':<20} | {'median ms':>10} | {'M vertices/s':>12}")
    print("-" * 62)
    for res in results:
        for name, row in res["rows"].items():
            print(
                f"{res['n']:>9} | {name:<20} | {row['median_ms']:>10.2f} | "
                f"{row['mvertices_per_s']:>12.1f}"
            )
        for name, value in res["ratios"].items():
            print(f"{'':>9}   {name}: {value:.2f}")
        layouts = ", ".join(f"{k} {v} B" for k, v in res["bytes_per_vertex"].items())
        print(f"{'':>9}   bytes a vertex reads (mesh rows): {layouts}")
        gpu = ", ".join(f"{k} {v:.2f} ms" for k, v in res["gpu_ms"].items())
        print(f"{'':>9}   compute GPU time (submit and wait, medians): {gpu}")
        for method, part in res["compute_parts"].items():
            print(
                f"{'':>9}   compute/{method} parts: pack {part['pack_ms']:.2f} ms, "
                f"GPU {part['gpu_ms']:.2f} ms, readback {part['readback_ms']:.2f} ms"
            )
        for line in _bench.memory_lines(res["memory"]):
            print(f"{'':>9}   memory: {line}")
        print("-" * 62)
    _bench.write_json(args.out, {"machine": machine, "results": results})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
