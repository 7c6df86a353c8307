"""Baking throughput: frames per second of ``vkdqs.bake`` against the same bake in numpy, and the
peak memory of streaming a large bake to a file.

Two glTF models written in code (a chain of joints along a tube, each joint rotating on its own
LINEAR keys): a "rig" comparable to the Khronos Fox (1728 vertices, 24 joints) and a 100k-vertex
tube (64 joints). Each is baked for ``--frames`` frames at 30 fps, DQS and LBS, on the GPU
(``vkdqs.bake``: a batch of frames per ``skin_many`` submission, the frames in memory) and, for
DQS, frame by frame with ``reference.skin_dqs(..., dtype=float32)`` in numpy from the same skinning
matrices (``--numpy-frames`` frames; the rate is per frame). Every configuration runs once per
round after warm-up; the table gives medians over rounds and the speedup is the median of
per-round ratios.

With ``--memory`` (the default), a child process per format streams the tube's bake into a file
(``vkdqs.bake_to_file``) and reports its peak RSS (VmHWM, reset after warm-up) against its RSS just
before baking, next to the size of the file and, for comparison, the in-memory ``bake()``.

With ``--batch-models`` (default 200; 0 skips it), batch baking on Dask (``vkdqs.bake_batch``):
that many small models (copies of one 1000-vertex, 8-joint tube animated for 1 s, 31 frames at
30 fps, to ``.npz``), baked by a local cluster of 1 worker process and then of 2, in each round;
each row is the whole call (cluster start-up, one Device per worker, the manifest, the files),
as a user waits for it: median seconds and files per second, and the scaling ratio (2 workers'
files/s over 1 worker's, the median of per-round ratios).

    python benchmarks/bench_bake.py [--frames 1000] [--rounds 3] [--no-memory]
        [--batch-models 200] [--batch-rounds 3]

Prints a table and writes benchmarks/results/bake.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _bench  # benchmarks/_bench.py: timing, the machine, the JSON
import numpy as np

import vkdqs
from vkdqs import dq, procedural, reference
from vkdqs.gltf import load_gltf
from vkdqs.gltf.save import GltfBuilder
from vkdqs.gpu.device import Device

RESULTS = _bench.RESULTS
FPS = 30.0
MODELS = {"rig": (1728, 24), "tube": (100_000, 64)}


def make_model(path: Path, vertices: int, joints: int, seconds: float) -> Path:
    """A tube of ``vertices`` skinned to a chain of ``joints`` joints, animated for ``seconds``:
    each joint bends about z and x on LINEAR keys every 0.25 s, with its own phase."""
    mesh = procedural.tube(vertices, bone_count=joints, influences=4)
    b = GltfBuilder()
    seg = 10.0 / joints
    for k in range(joints):  # set-up: one node per joint
        node = {"name": f"joint{k}", "translation": [0.0, 0.0 if k == 0 else seg, 0.0]}
        if k + 1 < joints:
            node["children"] = [k + 1]
        b.add("nodes", node)
    body = b.add("nodes", {"name": "body", "mesh": 0, "skin": 0})
    b.add("scenes", {"nodes": [0, body]})
    b.document["scene"] = 0
    attrs = {
        "POSITION": b.add_accessor(
            mesh.positions.astype(np.float32), target="vertex", min_max=True
        ),
        "NORMAL": b.add_accessor(mesh.normals.astype(np.float32), target="vertex"),
        "JOINTS_0": b.add_accessor(mesh.joints[:, :4].astype(np.uint16), target="vertex"),
        "WEIGHTS_0": b.add_accessor(mesh.weights[:, :4].astype(np.float32), target="vertex"),
    }
    idx = b.add_accessor(mesh.indices.astype(np.uint32), target="index")
    b.add("meshes", {"name": "tube", "primitives": [{"attributes": attrs, "indices": idx}]})
    ibm = np.tile(np.eye(4), (joints, 1, 1))
    ibm[:, 1, 3] = -seg * np.arange(joints)
    b.add(
        "skins",
        {
            "joints": list(range(joints)),
            "inverseBindMatrices": b.add_accessor(ibm.astype(np.float32)),
        },
    )
    times = np.arange(0.0, seconds + 0.25, 0.25)
    t_acc = b.add_accessor(times.astype(np.float32), min_max=True)
    phase = np.linspace(0.0, np.pi, joints)
    angle_z = 0.5 * np.sin(2 * np.pi * times[:, None] / 2.0 + phase) / 2  # half angles
    angle_x = 0.3 * np.cos(2 * np.pi * times[:, None] / 3.0 + phase) / 2
    # q = qz * qx, written out: (x, y, z, w)
    cz, sz, cx, sx = np.cos(angle_z), np.sin(angle_z), np.cos(angle_x), np.sin(angle_x)
    quats = np.stack([cz * sx, sz * sx, sz * cx, cz * cx], axis=-1)  # [keys, joints, 4]
    channels, samplers = [], []
    for k in range(joints):  # set-up: one channel per joint
        out = b.add_accessor(quats[:, k].astype(np.float32))
        samplers.append({"input": t_acc, "output": out, "interpolation": "LINEAR"})
        channels.append({"sampler": k, "target": {"node": k, "path": "rotation"}})
    b.add("animations", {"name": "bend", "channels": channels, "samplers": samplers})
    b.save(path)
    return path


def numpy_bake(scene, frames: int) -> np.ndarray:
    """The same DQS bake frame by frame with the float32 numpy reference skinning."""
    mesh = scene.skinned_mesh(0)
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    out = np.empty((2, frames, mesh.vertex_count, 3), np.float32)
    for i in range(frames):  # over frames
        mats = scene.skinning_matrices(0, 0, i / FPS)
        out[0, i], out[1, i] = reference.skin_dqs(*args, dq.from_matrices(mats), dtype=np.float32)
    return out


def bench_model(device, name, path, frames, rounds, warmup, numpy_frames) -> dict:
    scene = load_gltf(path)
    end = (frames - 1) / FPS
    calls = {
        f"gpu/{m}": (
            frames,
            lambda m=m: vkdqs.bake(scene, animation=0, fps=FPS, end=end, method=m, device=device),
        )
        for m in ("dqs", "lbs")
    }
    calls["numpy32/dqs"] = (numpy_frames, lambda: numpy_bake(scene, numpy_frames))
    check = vkdqs.bake(scene, animation=0, fps=FPS, end=(numpy_frames - 1) / FPS, device=device)
    ref = numpy_bake(scene, numpy_frames)
    error = float(np.abs(check.positions - ref[0]).max())
    for _ in range(warmup):
        for _count, fn in calls.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for key, (_count, fn) in calls.items():
            times[key].append(_bench.timed(fn))
    rows = {
        key: {
            "frames": count,
            "median_s": float(np.median(times[key])),
            "frames_per_s": count / float(np.median(times[key])),
            "runs": len(times[key]),
        }
        for key, (count, _fn) in calls.items()
    }
    per_round = [
        (numpy_frames / n) / (frames / g)
        for n, g in zip(times["numpy32/dqs"], times["gpu/dqs"], strict=True)
    ]
    return {
        "model": name,
        "vertices": scene.meshes[0].vertex_count,
        "joints": scene.skins[0].joint_count,
        "frames": frames,
        "rows": rows,
        "gpu speedup over numpy32 (dqs)": 1.0 / float(np.median(per_round)),
        "max |gpu - numpy32| (dqs positions)": error,
    }


def _status_mib(field: str) -> float:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def memory_child(model: Path, out: Path, frames: int) -> None:
    """Run in a child process: stream (or, for .mem, keep) the bake; print RSS figures.

    The peak is VmHWM, reset after warm-up (``clear_refs``), so it covers the bake alone; not
    ``ru_maxrss``, which Linux carries over from the parent across exec."""
    scene = load_gltf(model)
    with Device() as device:
        vkdqs.bake(scene, fps=FPS, end=1 / FPS, device=device)  # pipelines built, lavapipe up
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        before = _status_mib("VmRSS")
        t0 = time.perf_counter()
        kwargs = {"animation": 0, "fps": FPS, "end": (frames - 1) / FPS, "device": device}
        if out.suffix == ".mem":
            b = vkdqs.bake(scene, **kwargs)
            size = b.positions.nbytes + b.normals.nbytes
        else:
            vkdqs.bake_to_file(scene, out, **kwargs)
            size = out.stat().st_size
        seconds = time.perf_counter() - t0
        peak = _status_mib("VmHWM")
    row = {"rss_before_mib": before, "peak_rss_mib": peak, "bytes": size, "seconds": seconds}
    print(json.dumps(row))


def bench_memory(model: Path, frames: int, tmp: Path) -> dict:
    rows = {}
    for fmt in ("npz", "glb", "mem"):
        out = tmp / f"bake.{fmt}"
        result = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(model), str(out), str(frames)],
            capture_output=True,
            text=True,
            check=True,
        )
        out.unlink(missing_ok=True)
        row = json.loads(result.stdout.strip().splitlines()[-1])
        row["growth_mib"] = row["peak_rss_mib"] - row["rss_before_mib"]
        rows["bake() in memory" if fmt == "mem" else f"bake_to_file .{fmt}"] = row
    return rows


BATCH_MODEL = (1000, 8)  # vertices, joints of each batch model
BATCH_WORKERS = (1, 2)


def bench_batch(tmp: Path, count: int, rounds: int, warmup: int) -> dict:
    """``vkdqs.bake_batch`` of ``count`` small models on a local cluster of 1, then 2, worker
    processes, per round; the whole call is timed."""
    folder = tmp / "batch-models"
    folder.mkdir()
    first = make_model(folder / "m0000.glb", *BATCH_MODEL, seconds=1.0)
    for i in range(1, count):  # over models: copies of one
        (folder / f"m{i:04d}.glb").write_bytes(first.read_bytes())
    times: dict[int, list[float]] = {w: [] for w in BATCH_WORKERS}
    for r in range(warmup + rounds):  # over rounds
        for w in BATCH_WORKERS:
            out = tmp / f"batch-out-{r}-{w}"
            t0 = time.perf_counter()
            report = vkdqs.bake_batch(folder, out, fps=FPS, end=1.0, jobs=w, timeout=3600)
            seconds = time.perf_counter() - t0
            if report.baked != count or report.validation:
                raise SystemExit(f"batch bake failed: {report.summary()} {report.validation}")
            if r >= warmup:
                times[w].append(seconds)
            shutil.rmtree(out)
    rows = {
        f"{w} worker{'s' if w > 1 else ''}": {
            "workers": w,
            "median_s": float(np.median(times[w])),
            "files_per_s": count / float(np.median(times[w])),
            "runs": len(times[w]),
        }
        for w in BATCH_WORKERS
    }
    ratio = float(np.median([a / b for a, b in zip(times[1], times[2], strict=True)]))
    return {
        "models": count,
        "vertices": BATCH_MODEL[0],
        "joints": BATCH_MODEL[1],
        "frames": int(FPS) + 1,
        "format": ".npz",
        "rows": rows,
        "scaling 2 workers / 1 (files/s)": ratio,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--numpy-frames", type=int, default=100)
    parser.add_argument("--tube-vertices", type=int, default=MODELS["tube"][0])
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    parser.add_argument("--batch-models", type=int, default=200, help="0: no batch rows")
    parser.add_argument("--batch-rounds", type=int, default=3)
    parser.add_argument("--batch-warmup", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS / "bake.json")
    parser.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        model, out, frames = args.memory_child
        memory_child(Path(model), Path(out), int(frames))
        return

    models = dict(MODELS, tube=(args.tube_vertices, MODELS["tube"][1]))
    seconds = args.frames / FPS + 1.0
    with tempfile.TemporaryDirectory() as tmp, Device() as device:
        machine = _bench.machine(device)
        paths = {
            name: make_model(Path(tmp) / f"{name}.glb", n, j, seconds)
            for name, (n, j) in models.items()
        }
        results = [
            bench_model(
                device, name, path, args.frames, args.rounds, args.warmup, args.numpy_frames
            )
            for name, path in paths.items()
        ]
        memory = None if args.no_memory else bench_memory(paths["tube"], args.frames, Path(tmp))
        batch = (
            bench_batch(Path(tmp), args.batch_models, args.batch_rounds, args.batch_warmup)
            if args.batch_models
            else None
        )

    print(f"device: {machine['device']}, {machine['cpu_count']} CPUs; {FPS:g} fps, 4 influences")
    print(
        "medians over rounds; GPU: vkdqs.bake (frames in memory), "
        "numpy: reference.skin_dqs float32\n"
    )
    print(f"{'model':<22} | {'bake':<12} | {'frames':>6} | {'median s':>9} | {'frames/s':>9}")
    print("-" * 70)
    for res in results:
        label = f"{res['model']} {res['vertices']}v {res['joints']}j"
        for key, row in res["rows"].items():
            print(
                f"{label:<22} | {key:<12} | {row['frames']:>6} | {row['median_s']:>9.3f} | "
                f"{row['frames_per_s']:>9.1f}"
            )
        speedup = res["gpu speedup over numpy32 (dqs)"]
        error = res["max |gpu - numpy32| (dqs positions)"]
        print(f"{'':<22}   GPU speedup over numpy32 (dqs): {speedup:.1f}x")
        print(f"{'':<22}   max |gpu - numpy32| positions: {error:.1e}")
        print("-" * 70)
    if memory:
        n = models["tube"][0]
        print(f"\npeak memory, {args.frames} frames of the {n}-vertex tube (child process RSS):")
        for key, row in memory.items():
            print(
                f"  {key:<20} peak {row['peak_rss_mib']:8.0f} MiB (+{row['growth_mib']:.0f} MiB "
                f"while baking), {row['bytes'] / 2**20:.0f} MiB of output, {row['seconds']:.1f} s"
            )
    if batch:
        print(
            f"\nbatch bake (vkdqs.bake_batch on a local Dask cluster), {batch['models']} models "
            f"of {batch['vertices']} vertices, {batch['frames']} frames each, to .npz; the whole "
            "call (cluster start-up included), medians:"
        )
        for key, row in batch["rows"].items():
            print(
                f"  {key:<10} {row['median_s']:8.2f} s  {row['files_per_s']:8.1f} files/s  "
                f"({row['runs']} runs)"
            )
        print(f"  scaling, 2 workers / 1: {batch['scaling 2 workers / 1 (files/s)']:.2f}x")
    data = {"machine": machine, "fps": FPS, "results": results, "memory": memory, "batch": batch}
    _bench.write_json(args.out, data)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
