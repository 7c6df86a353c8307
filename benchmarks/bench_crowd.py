"""Crowds against per-instance posing: frames per second, GPU and CPU milliseconds a frame.

Two meshes: a rig of ~1.7k vertices and 24 joints (a procedural tube with a 24-joint chain,
the size of a typical glTF character) and a 5k-vertex tube (64 joints), each playing a 1 s,
30 fps clip of the chain bending back and forth. For each count of copies (1, 256, 1024, 4096 by
default), and each of ``--methods`` (DQS and LBS by default; "blend", "cor"):

* **crowd**: one :meth:`Renderer.add_crowd`, copies on a grid, out of phase; per frame
  ``crowd.advance(dt)`` and one render (the GPU samples the clip and draws one instanced call);
* **instances**: today's path, one :meth:`Renderer.add_instance` per copy, each posed with
  ``set_pose`` every frame (poses pre-converted to the method's layout, so only vkdqs's own
  validation and packing is counted), up to ``--max-instances`` copies.

With ``--pygfx`` (pygfx is not a dependency: ``pip install pygfx``; skipped with one line if
missing), an outside reference: **pygfx**, N ``pygfx.SkinnedMesh`` objects of the same mesh on the
same grid, each with its own ``Skeleton`` (one ``Bone`` per joint), posed every frame in Python
from the same clip at out-of-phase frames (``bone.local.matrix = ...``; pygfx skins linearly,
so compare with the LBS rows), rendered offscreen with ``rendercanvas`` and read back
(``canvas.draw()``), up to ``--max-pygfx`` copies; fps and CPU ms only (no GPU timestamps).
``--pygfx-only`` measures just those and adds them to the rows of an existing ``--out`` file.

**Textured crowds** (``--textured-counts``, 256 and 4096 by default; none with no value): the
same crowd, its mesh given TEXCOORD_0 and COLOR_0 and a 256x256 mipmapped texture (the material
path of a glTF character), against the untextured crowd measured next to it in the same run
(both made first, their rounds interleaved; medians): the ratios of GPU ms and of process CPU
ms a frame (every thread's CPU time: on lavapipe the GPU work itself, and less disturbed by
other processes than the timestamps).

**Culling** (``--culling-counts``, 4096 by default; none with no value): a fair "about half
out of view" crowd. The copies stand on the usual grid (3 units apart: a copy's box is 2 x 10 x
2, so copies do not pile up); the camera looks across the crowd from above its left half, 0.5
rad (29 deg) down, at a 1280x720 target (``--culling-size``), zoomed in until at most 45% of
the copies' centres project into the image (about half of the copies' boxes reach into the
view). Three crowds, their rounds interleaved: ``cull_copies`` on (**culled**: the GPU tests
every copy's box and draws the copies in view with an indirect draw), off (**unculled**: every
copy drawn) and **only visible**: a crowd of just the copies whose box is in view (the host's
``outside_frustum`` on the same boxes), culling off, seen by the same camera: what a perfect
culling would cost. Reported: the copies each drew, GPU ms and main-thread CPU ms a frame, and
the ratios culled/unculled (GPU ms and process CPU ms: every thread, on lavapipe the GPU work
itself) and culled/only visible (what culled copies still cost: 1.0 is the floor).

Every frame is read back (``render_image``) at a small resolution. Reported: the median over
rounds of the frame time (fps) and of the main thread's CPU time a frame (Python + driver calls;
lavapipe's rasterizer threads are not counted); the median over frames of the GPU time a frame
(``Renderer(gpu_timing=True)``: timestamps around the whole command buffer, crowd sampling,
render pass and readback copy included), and that divided by the skinned vertices (copies x
vertices) as GPU ns a vertex. Per mesh and method, a **single instance** (one add_instance) is
the baseline of the crowds issue's goal "GPU time per vertex no worse than a single
instance's"; ``empty_gpu_ms`` (a frame with nothing to draw: clear and readback) is the fixed
cost in every frame, which the ``net`` per-vertex figures subtract.

    python benchmarks/bench_crowd.py [--counts 1 256 1024 4096] [--rounds 3] [--frames 2]
    python benchmarks/bench_crowd.py --pygfx-only  # pygfx rows into the existing crowd.json

Prints a table and writes benchmarks/results/crowd.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from vkdqs import AnimationClip, dq, procedural
from vkdqs import methods as registry
from vkdqs.engine.bounds import outside_frustum
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.geometry import transform_boxes
from vkdqs.gpu.device import Device
from vkdqs.material import Material
from vkdqs.mesh import SkinnedMesh

W, H = 160, 120
FPS = 30.0
RESULTS = Path(__file__).resolve().parent / "results"
MESHES = {"rig1.7k": (1_700, 24), "tube5k": (5_000, 64)}
#: the culling rows' target (``--culling-size``) and camera pitch (radians down)
CULL_SIZE = (1280, 720)
CULL_PITCH = 0.5


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


def timed(
    step, renderer: Renderer, frames: int, gpu: list[float], process: list[float] | None = None
) -> tuple[float, float]:
    """(wall seconds, main-thread CPU seconds) per frame over ``frames`` frames; appends each
    frame's GPU milliseconds to ``gpu`` and, if given, the process's CPU seconds a frame (every
    thread: lavapipe's too) to ``process``."""
    wall0, cpu0, proc0 = time.perf_counter(), time.thread_time(), time.process_time()
    for f in range(frames):
        step(f)
        renderer.render_image()  # waits for the frame, so gpu_ms is this frame's
        assert renderer.gpu_ms is not None
        gpu.append(renderer.gpu_ms)
    if process is not None:
        process.append((time.process_time() - proc0) / frames)
    return (time.perf_counter() - wall0) / frames, (time.thread_time() - cpu0) / frames


def textured(mesh: SkinnedMesh) -> tuple[SkinnedMesh, Material]:
    """``mesh`` with UVs (its x, y box) and a colour ramp, and a 256x256 mipmapped texture."""
    p = mesh.positions
    lo, hi = p.min(axis=0), p.max(axis=0)
    uvs = (p[:, :2] - lo[:2]) / np.maximum(hi[:2] - lo[:2], 1e-9)
    colors = np.c_[0.5 + 0.5 * uvs, np.ones((len(p), 2))]
    textured_mesh = SkinnedMesh(
        p, mesh.normals, mesh.joints, mesh.weights, mesh.indices, dqs_blend=mesh.dqs_blend,
        uvs=uvs, colors=colors,
    )  # fmt: skip
    rgba = np.random.default_rng(1).integers(0, 256, (256, 256, 4), dtype=np.uint8)
    rgba[..., 3] = 255
    return textured_mesh, Material(texture=rgba)


def crowd_run(
    device, mesh, clip, count, method, material=None, culling=True, half=False, subset=None
):
    """A crowd of ``count`` copies on the grid, framed whole or, with ``half``, as the culling
    rows see it (:func:`frame_half`); ``subset`` ``(keep, camera)``: only the copies ``keep``
    of the grid of ``count``, each with its time, seen by ``camera``."""
    size = CULL_SIZE if half else (W, H)
    target = OffscreenTarget(device, *size)
    renderer = Renderer(device, target, gpu_timing=True, cull_copies=culling)
    rm = renderer.add_mesh(mesh, material=material)
    models = grid(count)
    times = np.random.default_rng(0).uniform(0.0, clip.duration, count)
    keep = np.ones(count, bool) if subset is None else subset[0]
    crowd = renderer.add_crowd(rm, clip, count=int(keep.sum()), method=method)
    crowd.set_models(models[keep])
    crowd.set_times(times[keep])
    renderer.frame_scene()
    if subset is not None:
        renderer.camera = copy.deepcopy(subset[1])
    elif half:
        frame_half(renderer, models, size)
    return target, renderer, lambda f: crowd.advance(1.0 / 60.0)


def frame_half(renderer: Renderer, models: np.ndarray, size: tuple[int, int]) -> None:
    """Look across the grid's left half from above (:data:`CULL_PITCH` down), then closer until
    at most 45% of the copies' centres project into the image: about half of the copies'
    boxes in view."""
    w, h = size
    lo, hi = renderer.scene_bounds()
    mid = 0.5 * (lo + hi)
    renderer.camera.pitch = CULL_PITCH
    renderer.camera.frame(lo, np.array([mid[0], hi[1], hi[2]]), aspect=w / h)
    for _ in range(40):
        x = renderer.camera.project(models[:, :3, 3], w, h)
        if ((x >= 0) & (x <= [w, h])).all(axis=1).mean() <= 0.45:
            break
        renderer.camera.zoom(0.9)


def culling_runs(count: int) -> dict:
    """The culling rows' three runs for :func:`bench_interleaved`: culled, unculled, and only
    the copies in view (made after the culled one, from its boxes and camera)."""
    made = {}

    def culled(device, mesh, clip, n, method):
        made["culled"] = crowd_run(device, mesh, clip, n, method, culling=True, half=True)
        return made["culled"]

    def unculled(device, mesh, clip, n, method):
        return crowd_run(device, mesh, clip, n, method, culling=False, half=True)

    def only_visible(device, mesh, clip, n, method):
        _, renderer, step = made["culled"]
        step(0)
        renderer.render_image()  # measures the crowd's cull boxes
        boxes = renderer.crowds[0].cull_boxes
        assert boxes is not None
        world = transform_boxes(np.broadcast_to(boxes[0], (n, 2, 3)), grid(n))
        keep = ~outside_frustum(world, renderer.camera.view_projection(CULL_SIZE[0] / CULL_SIZE[1]))
        subset = (keep, renderer.camera)
        return crowd_run(device, mesh, clip, n, method, culling=False, half=True, subset=subset)

    return {"culled": culled, "unculled": unculled, "only visible": only_visible}


def instance_run(device, mesh, clip, count, method):
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target, gpu_timing=True)
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


def empty_run(device, mesh, clip, count, method):
    """A frame with nothing to draw: the clear and the readback every frame pays."""
    target = OffscreenTarget(device, W, H)
    renderer = Renderer(device, target, gpu_timing=True)
    return target, renderer, lambda f: None


def textured_crowd_run(device, mesh, clip, count, method):
    textured_mesh, material = textured(mesh)
    return crowd_run(device, textured_mesh, clip, count, method, material)


def bench(device, run, mesh, clip, count, method, rounds, frames) -> dict:
    target, renderer, step = run(device, mesh, clip, count, method)
    gpu: list[float] = []
    try:
        timed(step, renderer, 2, [])  # warm-up: pipelines, both frame slots
        wall, cpu, process = [], [], []
        for _ in range(rounds):
            w, c = timed(step, renderer, frames, gpu, process)
            wall.append(w)
            cpu.append(c)
    finally:
        renderer.close()
        target.close()
    frame = float(np.median(wall))
    gpu_ms = float(np.median(gpu))
    out = {"fps": 1.0 / frame, "frame_ms": 1e3 * frame, "cpu_ms": 1e3 * float(np.median(cpu))}
    out["gpu_ms"] = gpu_ms
    # every thread's CPU a frame: on lavapipe the GPU work itself, and less disturbed than the
    # GPU timestamps by other processes sharing the cores
    out["process_cpu_ms"] = 1e3 * float(np.median(process))
    if mesh is not None:
        out["gpu_ns_per_vertex"] = 1e6 * gpu_ms / (count * mesh.vertex_count)
    return out


def pygfx_bench(mesh, clip, count: int, rounds: int, frames: int) -> dict:
    """N pygfx SkinnedMesh objects, each with its own skeleton, posed in Python every frame."""
    import pygfx as gfx
    from rendercanvas.offscreen import RenderCanvas

    canvas = RenderCanvas(size=(W, H), pixel_ratio=1)
    renderer = gfx.WgpuRenderer(canvas)
    scene = gfx.Scene()
    scene.add(gfx.AmbientLight(), gfx.DirectionalLight())
    geometry = gfx.Geometry(
        positions=mesh.positions,
        normals=mesh.normals,
        indices=mesh.indices.reshape(-1, 3).astype(np.uint32),
        skin_indices=mesh.joints.astype(np.uint32),
        skin_weights=mesh.weights,
    )
    material = gfx.MeshPhongMaterial(color="#c86")
    skeletons, models = [], grid(count)
    for model in models:
        obj = gfx.SkinnedMesh(geometry, material)
        obj.local.matrix = model
        bones = [gfx.Bone() for _ in range(clip.joint_count)]
        obj.add(*bones)  # children of the mesh: bone.world = model @ skinning matrix
        # identity inverse binds: a bone's local matrix is the clip's skinning matrix
        obj.bind(gfx.Skeleton(bones, [np.eye(4) for _ in bones]), np.eye(4))
        scene.add(obj)
        skeletons.append(bones)
    # framed as Renderer.frame_scene() frames the crowd: the rest meshes' box, along -z, 40 deg
    lo = np.asarray(mesh.bounds[0]) + models[:, :3, 3].min(axis=0)
    hi = np.asarray(mesh.bounds[1]) + models[:, :3, 3].max(axis=0)
    half_fov = min(np.radians(20.0), np.arctan(np.tan(np.radians(20.0)) * W / H))
    distance = 1.15 * np.linalg.norm(hi - lo) / 2.0 / np.sin(half_fov)
    camera = gfx.PerspectiveCamera(40, W / H)
    camera.local.position = (lo + hi) / 2.0 + (0.0, 0.0, distance)
    camera.look_at((lo + hi) / 2.0)
    canvas.request_draw(lambda: renderer.render(scene, camera))
    poses = list(clip.frames)
    phase = np.random.default_rng(0).integers(0, len(poses), count)

    def timed_frames(n: int) -> tuple[float, float]:
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        for f in range(n):
            for i, bones in enumerate(skeletons):
                pose = poses[(f + phase[i]) % len(poses)]
                for j, bone in enumerate(bones):
                    bone.local.matrix = pose[j]
            image = np.asarray(canvas.draw())  # render and read back
            assert image.shape[:2] == (H, W)
        return (time.perf_counter() - wall0) / n, (time.thread_time() - cpu0) / n

    try:
        timed_frames(2)  # warm-up: pipelines, buffers
        wall, cpu = zip(*(timed_frames(frames) for _ in range(rounds)), strict=True)
    finally:
        canvas.close()
    frame = float(np.median(wall))
    return {"fps": 1.0 / frame, "frame_ms": 1e3 * frame, "cpu_ms": 1e3 * float(np.median(cpu))}


def pygfx_info() -> dict | None:
    """pygfx's version and adapter, or None (and one line printed) if it is not installed."""
    try:
        import pygfx as gfx
        import wgpu
    except ImportError as e:
        print(f"pygfx reference skipped: {e} (pip install pygfx)")
        return None
    adapter = wgpu.gpu.request_adapter_sync().info
    return {"pygfx": gfx.__version__, "wgpu": wgpu.__version__, "adapter": adapter["device"]}


def pygfx_rows(args) -> dict[tuple[str, int], dict]:
    rows = {}
    for mesh_name in args.meshes:
        n, joints = MESHES[mesh_name]
        mesh = procedural.tube(n, bone_count=joints, influences=4)
        clip = make_clip(joints)
        for count in args.counts:
            if count <= args.max_pygfx:
                rows[mesh_name, count] = pygfx_bench(mesh, clip, count, args.rounds, args.frames)
    return rows


def pygfx_only(args) -> None:
    """Measure only the pygfx rows and add them to the rows of the existing ``--out`` file."""
    info = pygfx_info()
    if info is None:
        return
    data = json.loads(args.out.read_text())
    rows = pygfx_rows(args)
    print(f"pygfx {info['pygfx']} (wgpu {info['wgpu']}) on {info['adapter']}; {W}x{H}, "
          f"readback every frame; crowd columns from {args.out.name} (not rerun)")  # fmt: skip
    print(f"{'mesh':<8} {'copies':>6} | {'pygfx fps':>9} {'CPU ms':>7} | "
          f"{'crowd lbs fps':>13} {'CPU ms':>7} | {'inst. lbs fps':>13} {'CPU ms':>7}")  # fmt: skip
    for r in data["results"]:
        key = (r["mesh"], r["copies"])
        if key not in rows:
            continue
        r["pygfx"] = rows[key]
        if r["method"] != "lbs":
            continue
        p, c, i = rows[key], r["crowd"], r.get("instances")
        inst = f"{i['fps']:13.1f} {i['cpu_ms']:7.2f}" if i else f"{'-':>13} {'-':>7}"
        print(
            f"{r['mesh']:<8} {r['copies']:>6} | {p['fps']:9.1f} {p['cpu_ms']:7.2f} | "
            f"{c['fps']:13.1f} {c['cpu_ms']:7.2f} | {inst}"
        )
    data["meta"]["pygfx"] = info | {"args": sys.argv[1:], "max_pygfx": args.max_pygfx}
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {args.out}")


def bench_interleaved(device, runs: dict, mesh, clip, count, method, rounds, frames) -> dict:
    """:func:`bench` of several runs of the same crowd at once, their rounds interleaved (run A,
    run B, run A, ...) so that load from other processes and the allocator's warm-up fall on
    all of them alike; ``{name: result}``."""
    made = {name: run(device, mesh, clip, count, method) for name, run in runs.items()}
    gpu = {name: [] for name in runs}
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    process = {name: [] for name in runs}
    try:
        for _target, renderer, step in made.values():
            timed(step, renderer, 2, [])  # warm-up: pipelines, both frame slots
        for _ in range(rounds):
            for name, (_target, renderer, step) in made.items():
                w, c = timed(step, renderer, frames, gpu[name], process[name])
                wall[name].append(w)
                cpu[name].append(c)
        drawn = {name: renderer.stats.copies_drawn for name, (_, renderer, _) in made.items()}
    finally:
        for target, renderer, _step in made.values():
            renderer.close()
            target.close()
    out = {}
    for name in runs:
        frame = float(np.median(wall[name]))
        out[name] = {
            "fps": 1.0 / frame,
            "frame_ms": 1e3 * frame,
            "cpu_ms": 1e3 * float(np.median(cpu[name])),
            "gpu_ms": float(np.median(gpu[name])),
            "process_cpu_ms": 1e3 * float(np.median(process[name])),
            "copies_drawn": drawn[name],
        }
    return out


def per_vertex_net(gpu_ms: float, empty_ms: float, vertices: int) -> float:
    """GPU ns a skinned vertex once the empty frame's fixed cost is taken off."""
    return 1e6 * max(gpu_ms - empty_ms, 0.0) / vertices


def main() -> None:
    global CULL_SIZE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 256, 1024, 4096])
    parser.add_argument("--meshes", nargs="+", default=list(MESHES), choices=list(MESHES))
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["dqs", "lbs"],
        # dqs_blender would need the tube's bind frames here: not measured yet
        choices=[m.name for m in registry.shown() if m.crowds and m.name != "dqs_blender"],
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", type=int, default=2, help="frames per round")
    parser.add_argument("--max-instances", type=int, default=1024)
    parser.add_argument(
        "--textured-counts",
        type=int,
        nargs="*",
        default=[256, 4096],
        help="copies of the textured crowd rows (each also measured untextured)",
    )
    parser.add_argument(
        "--culling-counts",
        type=int,
        nargs="*",
        default=[4096],
        help="copies of the culling rows (half the grid out of view, culled and not)",
    )
    parser.add_argument(
        "--culling-size", type=int, nargs=2, default=list(CULL_SIZE), metavar=("W", "H"),
        help="the culling rows' target size",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=RESULTS / "crowd.json")
    parser.add_argument("--pygfx", action="store_true", help="add pygfx as an outside reference")
    parser.add_argument("--pygfx-only", action="store_true", help="only pygfx, into --out")
    parser.add_argument("--max-pygfx", type=int, default=256)
    args = parser.parse_args()
    CULL_SIZE = tuple(args.culling_size)
    if args.pygfx_only:
        pygfx_only(args)
        return

    results, singles, textured_rows, culling_rows = [], [], [], []
    with Device() as device:
        name = device.info.name
        # Process warm-up, discarded: until a large frame's buffers have been freed once,
        # glibc serves them with fresh mmap()s (its dynamic mmap threshold), which made the
        # first big crowd measured in a process 1.5x slower than the same crowd measured again.
        n, joints = MESHES[args.meshes[0]]
        warm = (procedural.tube(n, bone_count=joints, influences=4), make_clip(joints))
        bench(device, crowd_run, *warm, min(256, max(args.counts)), "dqs", 1, 1)
        empty = bench(device, empty_run, None, None, 0, None, args.rounds, args.frames)
        empty_ms = empty["gpu_ms"]
        for mesh_name in args.meshes:
            n, joints = MESHES[mesh_name]
            plain = procedural.tube(n, bone_count=joints, influences=4)
            clip = make_clip(joints)
            for method in args.methods:
                # "blend": a DQS fraction of 0.5 at every vertex
                mesh = plain.with_dqs_blend(0.5) if method == "blend" else plain
                run = (device, mesh, clip, 1, method, args.rounds, args.frames)
                single = bench(run[0], instance_run, *run[1:])
                single["gpu_ns_per_vertex_net"] = per_vertex_net(single["gpu_ms"], empty_ms, n)
                singles.append({"mesh": mesh_name, "method": method, "single": single})
                for count in args.counts:
                    row = {"mesh": mesh_name, "vertices": n, "joints": joints}
                    row |= {"method": method, "copies": count}
                    run = (device, mesh, clip, count, method, args.rounds, args.frames)
                    row["crowd"] = bench(run[0], crowd_run, *run[1:])
                    if count <= args.max_instances:
                        row["instances"] = bench(run[0], instance_run, *run[1:])
                    for key in ("crowd", "instances"):
                        if key in row:
                            row[key]["gpu_ns_per_vertex_net"] = per_vertex_net(
                                row[key]["gpu_ms"], empty_ms, count * n
                            )
                    c = row["crowd"]
                    if "instances" in row:
                        i = row["instances"]
                        row["crowd/instances GPU per vertex"] = (
                            c["gpu_ns_per_vertex"] / i["gpu_ns_per_vertex"]
                        )
                    row["crowd/single GPU per vertex"] = (
                        c["gpu_ns_per_vertex"] / single["gpu_ns_per_vertex"]
                    )
                    row["crowd/single GPU per vertex, net"] = (
                        c["gpu_ns_per_vertex_net"] / single["gpu_ns_per_vertex_net"]
                        if single["gpu_ns_per_vertex_net"] > 0
                        else None
                    )
                    results.append(row)
                for count in args.textured_counts:
                    if count < 1:
                        continue
                    pair = {"untextured": crowd_run, "textured": textured_crowd_run}
                    measured = bench_interleaved(
                        device, pair, mesh, clip, count, method, args.rounds, args.frames
                    )
                    untextured, tex = measured["untextured"], measured["textured"]
                    row = {"mesh": mesh_name, "method": method, "copies": count}
                    row |= {"untextured": untextured, "textured": tex}
                    row["textured/untextured GPU ms"] = tex["gpu_ms"] / untextured["gpu_ms"]
                    row["textured/untextured frame ms"] = tex["frame_ms"] / untextured["frame_ms"]
                    row["textured/untextured process CPU ms"] = (
                        tex["process_cpu_ms"] / untextured["process_cpu_ms"]
                    )
                    textured_rows.append(row)
                for count in args.culling_counts:
                    if count < 1:
                        continue
                    measured = bench_interleaved(
                        device, culling_runs(count), mesh, clip, count, method, args.rounds,
                        args.frames,
                    )  # fmt: skip
                    row = {"mesh": mesh_name, "method": method, "copies": count} | measured
                    c, u, v = (measured[k] for k in ("culled", "unculled", "only visible"))
                    for key in ("gpu_ms", "process_cpu_ms"):
                        what = "GPU ms" if key == "gpu_ms" else "process CPU ms"
                        row[f"culled/unculled {what}"] = c[key] / u[key]
                        row[f"culled/only visible {what}"] = c[key] / v[key]
                    culling_rows.append(row)

    pygfx, info = {}, pygfx_info() if args.pygfx else None
    if info is not None:
        pygfx = pygfx_rows(args)
        for r in results:
            if (r["mesh"], r["copies"]) in pygfx:
                r["pygfx"] = pygfx[r["mesh"], r["copies"]]

    print(f"device: {name}, {os.cpu_count()} CPUs; {W}x{H} offscreen, readback every frame")
    print(f"empty frame (clear + readback): {empty_ms:.3f} GPU ms")
    for s in singles:
        one = s["single"]
        print(
            f"single instance {s['mesh']} {s['method']}: {one['gpu_ms']:.3f} GPU ms, "
            f"{one['gpu_ns_per_vertex']:.1f} GPU ns/vertex "
            f"({one['gpu_ns_per_vertex_net']:.1f} net of the empty frame)"
        )
    print(f"{'mesh':<8} {'method':<6} {'copies':>6} | {'crowd fps':>9} {'CPU ms':>7} "
          f"{'GPU ms':>8} {'ns/vtx':>7} | {'inst. fps':>9} {'CPU ms':>7} {'GPU ms':>8} "
          f"{'ns/vtx':>7} | {'CPU saved':>9} {'c/i vtx':>7} {'c/1 vtx':>7}")  # fmt: skip
    print("-" * 124)
    for r in results:
        c, i = r["crowd"], r.get("instances")
        inst = (
            f"{i['fps']:9.1f} {i['cpu_ms']:7.2f} {i['gpu_ms']:8.2f} {i['gpu_ns_per_vertex']:7.1f}"
            if i
            else f"{'-':>9} {'-':>7} {'-':>8} {'-':>7}"
        )
        saved = f"{i['cpu_ms'] / c['cpu_ms']:8.1f}x" if i else f"{'-':>9}"
        ci = f"{r['crowd/instances GPU per vertex']:7.2f}" if i else f"{'-':>7}"
        print(
            f"{r['mesh']:<8} {r['method']:<6} {r['copies']:>6} | {c['fps']:9.1f} "
            f"{c['cpu_ms']:7.2f} {c['gpu_ms']:8.2f} {c['gpu_ns_per_vertex']:7.1f} | {inst} | "
            f"{saved} {ci} {r['crowd/single GPU per vertex']:7.2f}"
            + (
                f" | pygfx {r['pygfx']['fps']:.1f} fps, {r['pygfx']['cpu_ms']:.2f} CPU ms"
                if "pygfx" in r
                else ""
            )
        )
    if textured_rows:
        print("textured crowds (UVs, COLOR_0, 256x256 mipmapped texture) against untextured:")
        print(f"{'mesh':<8} {'method':<6} {'copies':>6} | {'untex GPU ms':>12} "
              f"{'tex GPU ms':>10} {'tex/untex':>9} | {'untex CPU ms':>12} {'tex CPU ms':>10} "
              f"{'tex/untex':>9} | {'untex fps':>9} {'tex fps':>8}")  # fmt: skip
        for r in textured_rows:
            u, t = r["untextured"], r["textured"]
            print(
                f"{r['mesh']:<8} {r['method']:<6} {r['copies']:>6} | {u['gpu_ms']:12.2f} "
                f"{t['gpu_ms']:10.2f} {r['textured/untextured GPU ms']:9.2f} | "
                f"{u['process_cpu_ms']:12.1f} {t['process_cpu_ms']:10.1f} "
                f"{r['textured/untextured process CPU ms']:9.2f} | {u['fps']:9.1f} {t['fps']:8.1f}"
            )
    if culling_rows:
        cw, ch = CULL_SIZE
        print(f"culling (camera on half of the grid, {cw}x{ch}): culled, unculled and only the "
              "copies in view, interleaved; ratios of GPU ms and of process CPU ms:")  # fmt: skip
        head = f"{'mesh':<8} {'method':<6} {'copies':>6} | {'drawn':>5} {'GPU ms':>7} "
        head += f"{'CPU ms':>6} | {'unculled':>8} {'CPU ms':>6} | {'visible':>7} {'GPU ms':>7} | "
        head += f"{'c/u GPU':>7} {'c/u CPU':>7} | {'c/v GPU':>7} {'c/v CPU':>7}"
        print(head)
        for r in culling_rows:
            c, u, v = r["culled"], r["unculled"], r["only visible"]
            print(
                f"{r['mesh']:<8} {r['method']:<6} {r['copies']:>6} | {c['copies_drawn']:>5} "
                f"{c['gpu_ms']:7.1f} {c['cpu_ms']:6.2f} | {u['gpu_ms']:8.1f} {u['cpu_ms']:6.2f} | "
                f"{v['copies_drawn']:>7} {v['gpu_ms']:7.1f} | "
                f"{r['culled/unculled GPU ms']:7.2f} {r['culled/unculled process CPU ms']:7.2f} | "
                f"{r['culled/only visible GPU ms']:7.2f} "
                f"{r['culled/only visible process CPU ms']:7.2f}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"device": name, "cpus": os.cpu_count(), "width": W, "height": H}
    meta |= {"empty_gpu_ms": empty_ms, "args": sys.argv[1:]}
    meta |= {"culling_size": list(CULL_SIZE), "culling_pitch": CULL_PITCH}
    if info is not None:
        meta["pygfx"] = info | {"max_pygfx": args.max_pygfx}
    data = {"meta": meta, "single_instance": singles, "results": results}
    data["textured"] = textured_rows
    data["culling"] = culling_rows
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
