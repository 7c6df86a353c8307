"""What skinning into an app's buffers costs: ``Skinner.record`` against ``Skinner.skin``.

For a tube of N vertices (64 bones, 4 influences, DQS, compute path), one frame each of:

* ``skin``: ``Skinner.skin`` (its own submission, results read back to numpy);
* ``record copied``: ``Skinner.record`` into a command buffer of the caller's, positions and
  normals copied into two vertex buffers (``vkCmdCopyBuffer``), submitted and waited for;
* ``record direct``: the same into one buffer with ``STORAGE_TEXEL_BUFFER`` usage, which the
  dispatch writes itself (no copy);
* ``record vec4``: copied into 16-byte rows (one copy region a row);
* ``record direct vec4``: 16-byte rows in one storage texel buffer, written by the dispatch.

The caller's command buffer is one of vkdqs's (``CommandBuffer``) on an owned Device: the cost
measured is vkdqs's recording and the GPU work, as an embedding app would pay it. Medians over
rounds after warm-up; ratios are medians of per-round ratios (same run, same machine).

    python benchmarks/bench_record.py [--sizes 100000] [--rounds 9] [--warmup 2]

Prints a table and writes benchmarks/results/record.json.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _bench
import numpy as np
import vulkan as vk

from vkdqs import dq, procedural
from vkdqs.engine.skinner import Skinner
from vkdqs.gpu import AppBuffer, Buffer, CommandBuffer
from vkdqs.gpu.device import Device

BONES = 64
ROWS = ("skin", "record copied", "record direct", "record vec4", "record direct vec4")


def bench_size(device: Device, n: int, rounds: int, warmup: int) -> dict:
    mesh = procedural.tube(n, bone_count=BONES, influences=4)
    poses = [dq.from_matrices(procedural.bone_chain_pose(BONES, a)) for a in range(0, 180, 7)]
    copy_usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
    direct_usage = copy_usage | vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
    with (
        Skinner(device, mesh, bone_count=BONES) as skinner,
        CommandBuffer(device, label="app frame") as cb,
    ):
        skinner.frames_in_flight = 1  # each frame is waited for before the next
        bufs = {
            "positions": Buffer(device, 12 * n, copy_usage, label="positions", memory="gpu"),
            "normals": Buffer(device, 12 * n, copy_usage, label="normals", memory="gpu"),
            "both": Buffer(device, 24 * n, direct_usage, label="both", memory="gpu"),
            "vec4": Buffer(device, 16 * n, copy_usage, label="vec4", memory="gpu"),
            "both4": Buffer(device, 32 * n, direct_usage, label="both4", memory="gpu"),
        }
        both = AppBuffer(device, bufs["both"].handle, size=24 * n, usage=direct_usage)
        both4 = AppBuffer(device, bufs["both4"].handle, size=32 * n, usage=direct_usage)
        counter = iter(range(10**9))

        def pose():
            return poses[next(counter) % len(poses)]

        def record(**targets) -> None:
            skinner.record(cb.begin(one_time=True), pose(), **targets)
            cb.end()
            cb.submit_and_wait()

        calls = {
            "skin": lambda: skinner.skin(pose()),
            "record copied": lambda: record(
                positions=(bufs["positions"], 0), normals=(bufs["normals"], 0)
            ),
            "record direct": lambda: record(positions=(both, 0), normals=(both, 12 * n)),
            "record vec4": lambda: record(positions=(bufs["vec4"], 0), stride=16),
            "record direct vec4": lambda: record(
                positions=(both4, 0), normals=(both4, 16 * n), stride=16
            ),
        }
        times: dict[str, list[float]] = {k: [] for k in ROWS}
        for r in range(warmup + rounds):
            for name in ROWS:
                t = _bench.timed(calls[name])
                if r >= warmup:
                    times[name].append(t)
        for b in bufs.values():
            b.destroy()
    med = {k: float(np.median(v)) for k, v in times.items()}
    ratios = {
        f"{k} / skin": float(np.median(np.array(times[k]) / np.array(times["skin"])))
        for k in ROWS[1:]
    }
    return {"n": n, "median_s": med, "ratios": ratios}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out", type=Path, default=_bench.RESULTS / "record.json")
    args = ap.parse_args()
    with Device() as device:
        results = [bench_size(device, n, args.rounds, args.warmup) for n in args.sizes]
        meta = _bench.machine(device)
    print(f"{'N':>9}  " + "  ".join(f"{k:>18}" for k in ROWS))
    for res in results:
        cells = "  ".join(f"{1e3 * res['median_s'][k]:>15.2f} ms" for k in ROWS)
        print(f"{res['n']:>9}  {cells}")
        for k, v in res["ratios"].items():
            print(f"{'':>9}  {k}: {v:.2f}")
    _bench.write_json(args.out, {"machine": meta, "results": results})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
