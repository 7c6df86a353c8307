"""Direct Delta Mush skinning (``Skinner(method="ddm")``): time per pose against LBS on the
compute path, in the same run, on the same vertices.

For N vertices (``--bones`` bones, 4 influences): a 10k-vertex tube (``--base``) and its
precomputation, repeated (the values do not change the work a vertex costs; the precomputation
of 1M vertices would take longer than the benchmark). Times ``skin`` of ``method="ddm"`` and
``method="lbs"`` Skinners of that mesh (median of ``--rounds`` after a warm-up, DDM and LBS
alternating round by round, each with the readback of positions and normals) and ``bounds``
(the dispatch alone: no vertex written or read back, the normals compiled away). The issue's
target: DDM at most 2.5x LBS at 1M vertices.

The weights: each vertex of the tube takes its 4 nearest bones of the chain with a smooth
falloff (:func:`vkdqs.procedural.tube`), every vertex within two bones of a joint; on the 10k
tube (about 5 rings a bone) the smoothing reaches every kept slot, so the shader's loop, which
stops at a vertex's first absent slot pair, has no slot to skip: ``live_slots`` (JSON, and the
table's last column) is the histogram of each vertex's nonzero slots. The smoothing's reach is
a count of edges, so a denser mesh (``--base 100000``: 49 rings a bone, closer to a real
million-vertex mesh than the repeated 10k tube) leaves vertices fewer live slots.

    python benchmarks/bench_ddm_skin.py [--sizes 1000000] [--bones 64] [--rounds 5]
        [--max-bones 8 4] [--base 10000]

Prints a table and writes benchmarks/results/ddm_skin.json (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from vkdqs import SkinnedMesh, procedural
from vkdqs.engine.skinner import Skinner
from vkdqs.gpu.device import Device
from vkdqs.methods.ddm.gpu import direct_delta_mush
from vkdqs.methods.ddm.reference import DirectDeltaMush

RESULTS = Path(__file__).resolve().parent / "results"


def _interleaved(calls: dict, rounds: int) -> dict:
    """Median seconds of each call, the calls alternating round by round after a warm-up (so
    the machine's load weighs on each alike)."""
    for call in calls.values():
        call()  # warm up
    times: dict = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def bench(
    device: Device, n: int, bones: int, rounds: int, max_bones: int = 8, base: int = 10_000
) -> dict:
    base_n = min(n, base)
    base = procedural.tube(base_n, bone_count=bones, influences=4)
    d = direct_delta_mush(base, bone_count=bones, max_bones=max_bones, device=device)
    reps = -(-n // base_n)
    tiled = DirectDeltaMush(
        np.tile(d.omega, (reps, 1, 1))[:n],
        np.tile(d.bones, (reps, 1))[:n],
        np.tile(d.origin, (reps, 1))[:n],
        bones,
        d.iterations,
        d.rotation_step,
        d.translation_step,
        d.alpha,
    )
    mesh = SkinnedMesh(
        tiled.origin,
        np.tile(base.normals, (reps, 1))[:n],
        np.tile(base.joints, (reps, 1))[:n],
        np.tile(base.weights, (reps, 1))[:n],
    )
    pose = procedural.bone_chain_pose(bones, 90.0)
    live = np.bincount(d.omega.any(axis=2).sum(axis=1), minlength=d.max_bones + 1)
    out = {"n": n, "base": base_n, "bones": bones, "max_bones": max_bones}
    out["live_slots"] = live.tolist()
    with (
        Skinner(device, mesh, bone_count=bones, method="ddm", ddm=tiled) as ddm_skinner,
        Skinner(device, mesh, bone_count=bones, method="lbs") as lbs_skinner,
    ):
        skinners = {"ddm": ddm_skinner, "lbs": lbs_skinner}
        for mode, key in (("skin", "{}_s"), ("bounds", "{}_bounds_s")):  # DDM and LBS alternate
            calls = {m: (lambda s=s, f=mode: getattr(s, f)(pose)) for m, s in skinners.items()}
            for m, t in _interleaved(calls, rounds).items():
                out[key.format(m)] = t
    out["ddm_over_lbs"] = out["ddm_s"] / out["lbs_s"]
    out["bounds_ddm_over_lbs"] = out["ddm_bounds_s"] / out["lbs_bounds_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--bones", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--max-bones",
        type=int,
        nargs="+",
        default=[8, 4],
        help="bones kept a vertex (8: the default; at most 4: the 4-slot shaders)",
    )
    parser.add_argument("--base", type=int, default=10_000, help="vertices of the tube repeated")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or RESULTS / "ddm_skin.json"
    with Device() as device:
        machine = {"device": device.info.name, "cpu_count": os.cpu_count()}
        results = [
            bench(device, n, args.bones, args.rounds, k, args.base)
            for n in args.sizes
            for k in args.max_bones
        ]
    print(f"device: {machine['device']}, {machine['cpu_count']} CPUs; {args.bones} bones")
    print("skin: with the readback of positions and normals; bounds: the dispatch alone")
    head = ["N", "kept", "DDM ms", "LBS ms", "DDM/LBS", "bounds DDM", "bounds LBS", "DDM/LBS"]
    head.append("live slots (0, 1, ...: vertices of the base tube)")
    print(" | ".join(f"{h:>10}" for h in head))
    for r in results:
        row = [
            r["n"],
            r["max_bones"],
            1e3 * r["ddm_s"],
            1e3 * r["lbs_s"],
            r["ddm_over_lbs"],
            1e3 * r["ddm_bounds_s"],
            1e3 * r["lbs_bounds_s"],
            r["bounds_ddm_over_lbs"],
        ]
        cells = [f"{v:>10}" if isinstance(v, int) else f"{v:>10.2f}" for v in row]
        print(" | ".join([*cells, " ".join(map(str, r["live_slots"]))]))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
