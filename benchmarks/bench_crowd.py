"""Crowds against per-instance posing: frames per second and CPU milliseconds a frame.

Two meshes: a rig of ~1.7k vertices and 24 joints (a procedural tube with a 24-joint chain,
the size of a typical glTF character) and a 5k-vertex tube (64 joints), each playing a 1 s,
30 fps clip of the chain bending back and forth. For each count of copies (1, 256, 1024, 4096 by
default), and each method (DQS, LBS):

* **crowd**: one :meth:`Renderer.add_crowd`, copies on a grid, out of phase; per frame
  ``crowd.advance(dt)`` and one render (the GPU samples the clip and draws one instanced call);
* **instances**: today's path, one :meth:`Renderer.add_instance` per copy, each posed with
  ``set_pose`` every frame (poses pre-converted to the method's layout, so only vkdqs's own
  validation and packing is counted), up to ``--max-instances`` copies.

Every frame is read back (``render_image``) at a small resolution. Reported: the median over
rounds of the frame time (fps) and of the main thread's CPU time a frame (Python + driver calls;
lavapipe's rasterizer threads are not counted).

    python benchmarks/bench_crowd.py [--counts 1 256 1024 4096] [--rounds 3] [--frames 2]

Prints a table and writes benchmarks/results/crowd.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from vkdqs import AnimationClip, dq, procedural
from vkdqs.gpu.device import Device
from vkdqs.renderer import Renderer
from vkdqs.targets import OffscreenTarget

W, H = 160, 120
FPS = 30.0
RESULTS = Path(__file__).resolve().parent / "results"
MESHES = {"rig1.7k": (1_700, 24), "tube5k": (5_000, 64)}


def make_clip(joints: int) -> AnimationClip:
    angles = 50.0 * np.sin(np.linspace(0.0, 2.0 * np.pi, int(FPS) + 1))
    return AnimationClip(np.stack([procedural.bone_chain_pose(joints, a) for a in angles]), FPS)


def grid(count: int) -> np.ndarray:
    side = int(np.ceil(np.sqrt(count)))
    models = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
    i = np.arange(count)
    models[:, 0, 3] = 3.0 * (i % side)
    models[:, 2, 3] = 3.0 * (i // side)
    return models


def timed(step, renderer: Renderer, frames: int) -> tuple[float, float]:
    """(wall seconds, main-thread CPU seconds) per frame over ``frames`` frames."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for f in range(frames):
        step(f)
        renderer.render_image()
    return (time.perf_counter() - wall0) / frames, (time.thread_time() - cpu0) / frames


def crowd_run(device, mesh, clip, count, method):
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target)
    crowd = renderer.add_crowd(renderer.add_mesh(mesh), clip, count=count, method=method)
    crowd.set_models(grid(count))
    crowd.set_times(np.random.default_rng(0).uniform(0.0, clip.duration, count))
    renderer.frame_scene()
    return target, renderer, lambda f: crowd.advance(1.0 / 60.0)


def instance_run(device, mesh, clip, count, method):
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target)
    rm = renderer.add_mesh(mesh)
    models = grid(count)
    insts = [
        renderer.add_instance(rm, bone_count=clip.joint_count, method=method, model=models[i])
        for i in range(count)
    ]
    poses = [dq.from_matrices(m) if method == "dqs" else m for m in clip.frames]
    phase = np.random.default_rng(0).integers(0, len(poses), count)
    renderer.frame_scene()

    def step(f: int) -> None:
        for i, inst in enumerate(insts):
            inst.set_pose(poses[(f + phase[i]) % len(poses)])

    return target, renderer, step


def bench(device, run, mesh, clip, count, method, rounds, frames) -> dict:
    target, renderer, step = run(device, mesh, clip, count, method)
    try:
        timed(step, renderer, 2)  # warm-up: pipelines, both frame slots
        wall, cpu = [], []
        for _ in range(rounds):
            w, c = timed(step, renderer, frames)
            wall.append(w)
            cpu.append(c)
    finally:
        renderer.close()
        target.close()
    frame = float(np.median(wall))
    return {"fps": 1.0 / frame, "frame_ms": 1e3 * frame, "cpu_ms": 1e3 * float(np.median(cpu))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 256, 1024, 4096])
    parser.add_argument("--meshes", nargs="+", default=list(MESHES), choices=list(MESHES))
    parser.add_argument("--methods", nargs="+", default=["dqs", "lbs"], choices=["dqs", "lbs"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=2, help="frames per round")
    parser.add_argument("--max-instances", type=int, default=1024)
    parser.add_argument("--out", type=Path, default=RESULTS / "crowd.json")
    args = parser.parse_args()

    results = []
    with Device() as device:
        name = device.info.name
        for mesh_name in args.meshes:
            n, joints = MESHES[mesh_name]
            mesh = procedural.tube(n, bone_count=joints, influences=4)
            clip = make_clip(joints)
            for method in args.methods:
                for count in args.counts:
                    row = {"mesh": mesh_name, "vertices": n, "joints": joints}
                    row |= {"method": method, "copies": count}
                    run = (device, mesh, clip, count, method, args.rounds, args.frames)
                    row["crowd"] = bench(run[0], crowd_run, *run[1:])
                    if count <= args.max_instances:
                        row["instances"] = bench(run[0], instance_run, *run[1:])
                    results.append(row)

    print(f"device: {name}, {os.cpu_count()} CPUs; {W}x{H} offscreen, readback every frame")
    print(f"{'mesh':<8} {'method':<6} {'copies':>6} | {'crowd fps':>9} {'CPU ms':>7} | "
          f"{'inst. fps':>9} {'CPU ms':>7} | {'CPU saved':>9}")  # fmt: skip
    print("-" * 78)
    for r in results:
        c, i = r["crowd"], r.get("instances")
        inst = f"{i['fps']:9.1f} {i['cpu_ms']:7.2f}" if i else f"{'-':>9} {'-':>7}"
        saved = f"{i['cpu_ms'] / c['cpu_ms']:8.1f}x" if i else f"{'-':>9}"
        print(
            f"{r['mesh']:<8} {r['method']:<6} {r['copies']:>6} | {c['fps']:9.1f} "
            f"{c['cpu_ms']:7.2f} | {inst} | {saved}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"device": name, "cpus": os.cpu_count(), "width": W, "height": H}
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
