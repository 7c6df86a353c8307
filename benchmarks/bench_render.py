"""Offscreen rendering throughput: frames per second with a new pose and a readback every frame.

For a 640x480 offscreen target: tubes of 100k and 1M vertices (64 bones, 4 influences) drawn
with DQS, with LBS and without skinning (the rest mesh, same buffers and draw), each frame
changing the bones and reading the frame back to numpy; and 1, 16 and 256 instances of a
5k-vertex tube, each with its own pose every frame. Reports the median frame time over rounds,
fps, how much skinning adds to the unskinned frame (median of per-round ratios), and the
main thread's CPU milliseconds per frame (Python + driver calls; lavapipe's own rasterizer
threads are not counted).

    python benchmarks/bench_render.py [--rounds 5] [--frames 20]

Prints a table and writes benchmarks/results/render.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from vkdqs import dq, procedural
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gpu.device import Device

BONES = 64
W, H = 640, 480
RESULTS = Path(__file__).resolve().parent / "results"


def _poses(method: str, count: int = 16) -> list[np.ndarray]:
    mats = [procedural.bone_chain_pose(BONES, a) for a in np.linspace(-60.0, 60.0, count)]
    return [dq.from_matrices(m) for m in mats] if method != "lbs" else mats


def measure(renderer: Renderer, instances, poses, frames: int) -> tuple[float, float]:
    """(wall seconds per frame, main-thread CPU seconds per frame) over ``frames`` frames."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for f in range(frames):
        for i, inst in enumerate(instances):
            inst.set_pose(poses[(f + i) % len(poses)])
        renderer.render_image()
    return (time.perf_counter() - wall0) / frames, (time.thread_time() - cpu0) / frames


def scene(device, mesh, method, count):
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target)
    rm = renderer.add_mesh(mesh)
    side = int(np.ceil(np.sqrt(count)))
    instances = []
    for i in range(count):
        model = np.eye(4)
        model[:3, 3] = (3.0 * (i % side), 0.0, 3.0 * (i // side))
        instances.append(renderer.add_instance(rm, bone_count=BONES, method=method, model=model))
    renderer.frame_scene()
    return target, renderer, instances


def bench(device, mesh, count, rounds, frames) -> dict:
    runs = {m: scene(device, mesh, m, count) for m in ("dqs", "lbs", "none")}
    poses = {m: _poses(m) for m in runs}
    for m, (_, renderer, instances) in runs.items():
        measure(renderer, instances, poses[m], 3)  # warm-up: pipelines, first frames
    wall = {m: [] for m in runs}
    cpu = {m: [] for m in runs}
    for _ in range(rounds):
        for m, (_, renderer, instances) in runs.items():
            w, c = measure(renderer, instances, poses[m], frames)
            wall[m].append(w)
            cpu[m].append(c)
    for target, renderer, _ in runs.values():
        renderer.close()
        target.close()
    out = {"vertices": mesh.vertex_count, "instances": count, "methods": {}}
    for m in runs:
        out["methods"][m] = {
            "frame_ms": 1e3 * float(np.median(wall[m])),
            "fps": 1.0 / float(np.median(wall[m])),
            "cpu_ms_per_frame": 1e3 * float(np.median(cpu[m])),
        }
    for m in ("dqs", "lbs"):
        ratio = np.median(np.array(wall[m]) / np.array(wall["none"]))
        out["methods"][m]["vs_unskinned"] = float(ratio)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=10, help="frames per round")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 16, 256])
    parser.add_argument("--out", type=Path, default=RESULTS / "render.json")
    args = parser.parse_args()

    results = []
    with Device() as device:
        name = device.info.name
        for n in args.sizes:
            mesh = procedural.tube(n, bone_count=BONES, influences=4)
            results.append(bench(device, mesh, 1, args.rounds, args.frames))
        small = procedural.tube(5_000, bone_count=BONES, influences=4)
        for count in args.instances:
            frames = max(2, args.frames // max(1, count // 16))
            results.append(bench(device, small, count, args.rounds, frames))

    print(f"device: {name}, {os.cpu_count()} CPUs; {W}x{H} offscreen, readback every frame")
    print(f"{'vertices':>9} {'inst':>5} | {'method':<6} | {'frame ms':>9} | {'fps':>7} | "
          f"{'vs unskinned':>12} | {'CPU ms/frame':>12}")  # fmt: skip
    print("-" * 78)
    for res in results:
        for m, row in res["methods"].items():
            ratio = f"{row['vs_unskinned']:.2f}x" if "vs_unskinned" in row else "-"
            print(
                f"{res['vertices']:>9} {res['instances']:>5} | {m:<6} | {row['frame_ms']:>9.2f} | "
                f"{row['fps']:>7.1f} | {ratio:>12} | {row['cpu_ms_per_frame']:>12.2f}"
            )
        print("-" * 78)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"device": name, "cpu_count": os.cpu_count(), "results": results}, indent=2)
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
