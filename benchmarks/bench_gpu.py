"""Skinning and crowds on a real GPU, each as a fraction of the memory-traffic floor.

On a discrete GPU skinning is bound by memory traffic: the bytes each vertex costs decide the
speed. This measures, in one run:

* the device's **copy bandwidth**: ``vkCmdCopyBuffer`` of a large buffer into another, timed with
  GPU timestamps (read + write bytes over the time), between buffers of the memory vkdqs's own
  buffers use (host-visible, device-local where the driver offers it);
* **skinning** at each ``--sizes`` (1M, 10M and 50M vertices by default; a 64-bone tube, 4
  influences, DQS and LBS, compute path), in both vertex layouts (``layout="exact"``: float
  normals and weights, 32-bit joints; ``"lean"``: packed): ``skin(bones)`` with the vertices read
  back, and ``bounds(bones)``, which writes no vertex (the box alone: the GPU work without the
  output);
* **crowds** of ``--crowd-counts`` copies (4096 and 16384) of a 5k-vertex, 64-joint tube in both
  layouts, GPU time a frame from timestamps;
* **uploads and readback** (``--copy-mib``): the GPU copy from a staging buffer into device-local
  memory and from device-local memory into host-cached memory (timestamps: the bus), and the
  whole ``Buffer.write`` of static data and ``Buffer.read`` of a GPU-only buffer (wall time:
  what a caller waits), next to the copy bandwidth;
* **Direct Delta Mush and Delta Mush** at ``--mush-sizes`` (1M): ``skin`` per pose against LBS
  in the same run (DDM's values are a 10k tube's precomputation, repeated, as in
  ``bench_ddm_skin.py``);
* the device's ``memory_report()`` while the largest Skinner is alive, printed and in the JSON.

Each result is printed as a fraction of the floor: (bytes a vertex x vertices a second) /
measured bandwidth, where a skinned vertex reads its mesh rows in its layout
(``shader_interface.layout_bytes`` of the layout the device took) and writes 24 bytes (none for
``bounds``), and a crowd vertex reads its rows. Medians over ``--rounds`` after a warm-up; JSON
in ``benchmarks/results/gpu.json``.

    benchmarks/gpu_run.sh            # the prepared run (under 5 minutes on a discrete GPU)
    python benchmarks/bench_gpu.py --sizes 1000000 --crowd-counts 256 --allow-any-device

Without a discrete GPU it exits with status 2 and says which device it found, unless
``--allow-any-device`` (the tests' smoke run on lavapipe).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from _bench import memory_lines  # benchmarks/_bench.py

from vkdqs import AnimationClip, LimitError, procedural
from vkdqs import shader_interface as si
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gpu import Buffer, CommandBuffer, Device
from vkdqs.gpu.calls import vk
from vkdqs.gpu.queries import QueryPool

RESULTS = Path(__file__).resolve().parent / "results"
BONES = 64
#: bytes a skinned vertex writes (position and normal, float32)
WRITE_BYTES = 24
#: the vertex layouts each row is measured in
LAYOUTS = ("exact", "lean")


def copy_bandwidth(
    device: Device, nbytes: int, rounds: int, src_class: str = "gpu", dst_class: str = "gpu"
) -> float:
    """Bytes a second the GPU moves copying ``nbytes`` from a buffer of ``src_class`` memory
    to one of ``dst_class`` (read plus write for two device-local buffers; the bytes once over
    the bus otherwise), the median over ``rounds`` timed copies."""
    usage_src = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
    usage_dst = vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
    with (
        Buffer(device, nbytes, usage_src, label="bandwidth src", memory=src_class) as src,
        Buffer(device, nbytes, usage_dst, label="bandwidth dst", memory=dst_class) as dst,
        QueryPool(device, 2, label="bandwidth") as pool,
        CommandBuffer(device, label="bandwidth") as cmd_buffer,
    ):
        cmd = cmd_buffer.begin()
        pool.record_reset(cmd, 0, 2)
        pool.record_timestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0)
        vk.vkCmdCopyBuffer(cmd, src.handle, dst.handle, 1, [vk.VkBufferCopy(0, 0, nbytes)])
        pool.record_timestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 1)
        cmd_buffer.end()
        cmd_buffer.submit_and_wait()  # warm-up
        times = []
        for _ in range(rounds):
            cmd_buffer.submit_and_wait()
            times.append(pool.elapsed_ms(0, 1) / 1e3)
    moved = 2 if src_class == dst_class == "gpu" else 1
    return moved * nbytes / float(np.median(times))


def transfer_rows(device: Device, nbytes: int, rounds: int) -> dict[str, float]:
    """Upload and readback bandwidths (bytes a second): the GPU's copies between staging or
    readback memory and device-local memory, and the calls a user makes."""
    data = np.ones(nbytes // 4, np.float32)
    usage = vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
    with (
        Buffer(device, nbytes, usage, label="upload target", memory="static") as static,
        Buffer(device, nbytes, usage, label="readback source", memory="gpu") as gpu_only,
    ):
        write_s = _median_s(lambda: static.write(data), rounds)
        read_s = _median_s(lambda: gpu_only.read(np.float32, nbytes // 4), rounds)
        staged = not static.host_visible
    return {
        "upload_copy": copy_bandwidth(device, nbytes, rounds, "staging", "gpu"),
        "readback_copy": copy_bandwidth(device, nbytes, rounds, "gpu", "readback"),
        "static_write": nbytes / write_s,
        "gpu_read": nbytes / read_s,
        "staged": staged,
    }


def mush_rows(device: Device, sizes: list[int], rounds: int) -> list[dict]:
    """Direct Delta Mush and Delta Mush per pose against LBS at each size (same run)."""
    from bench_ddm_skin import bench as ddm_bench  # benchmarks/, beside this script

    from vkdqs import DeltaMushSkinner

    rows = []
    for n in sizes:
        ddm = ddm_bench(device, n, BONES, rounds)
        rows.append(
            {
                "vertices": n,
                "method": "ddm",
                "ms": 1e3 * ddm["ddm_s"],
                "lbs_ms": 1e3 * ddm["lbs_s"],
                "over_lbs": ddm["ddm_over_lbs"],
            }
        )
        mesh = procedural.tube(n, bone_count=BONES, influences=4)
        pose = procedural.bone_chain_pose(BONES, 60.0)
        with (
            Skinner(device, mesh, bone_count=BONES, method="lbs") as lbs,
            DeltaMushSkinner(device, mesh, bone_count=BONES, method="lbs", iterations=10) as dm,
        ):
            lbs_s = _median_s(lambda p=pose: lbs.skin(p), rounds)
            dm_s = _median_s(lambda p=pose: dm.skin(p), rounds)
        rows.append(
            {
                "vertices": n,
                "method": "delta mush/lbs (10 iterations)",
                "ms": 1e3 * dm_s,
                "lbs_ms": 1e3 * lbs_s,
                "over_lbs": dm_s / lbs_s,
            }
        )
    return rows


def _median_s(fn, rounds: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def skinning_rows(
    device: Device, sizes: list[int], rounds: int, bandwidth: float, peak: dict
) -> list[dict]:
    """The skinning rows; ``peak`` gets the ``memory_report()`` of the Skinner that held the
    most memory, taken while it was alive."""
    rows = []
    for n in sizes:  # over sizes: each a separate mesh
        t0 = time.perf_counter()
        mesh = procedural.tube(n, bone_count=BONES, influences=4)
        made_s = time.perf_counter() - t0
        pose = procedural.bone_chain_pose(BONES, 40.0)
        for method in ("dqs", "lbs"):
            for layout in LAYOUTS:
                rows += _skinning_cases(device, mesh, pose, method, layout, rounds, bandwidth, peak)
        for r in rows:
            r.setdefault("mesh_made_s", made_s)
        del mesh
    return rows


def _skinning_cases(device, mesh, pose, method, layout, rounds, bandwidth, peak) -> list[dict]:
    """The readback and box-only rows of one method and layout (a skip row where one pose's
    output passes the device's texel limit)."""
    n = mesh.vertex_count
    head = {"vertices": n, "method": method, "layout": layout}
    skinner = None
    try:
        skinner = Skinner(device, mesh, bone_count=BONES, method=method, layout=layout)
        skinner._batch_limit()  # one pose's output must fit the device's texel limit
    except LimitError as exc:  # e.g. 6 N output texels past maxTexelBufferElements
        if skinner is not None:
            skinner.close()
        return [{**head, "skipped": str(exc)}]
    rows = []
    with skinner:
        skinner.max_batch_bytes = max(skinner.max_batch_bytes, skinner.pose_bytes)
        read = si.layout_bytes(skinner.slots, method, skinner.vertex_layout)
        cases = {
            "skin (readback)": (lambda s=skinner, p=pose: s.skin(p), read + WRITE_BYTES),
            "bounds (no vertex out)": (lambda s=skinner, p=pose: s.bounds(p), read),
        }
        for case, (fn, per_vertex) in cases.items():
            seconds = _median_s(fn, rounds)
            rate = n / seconds
            rows.append(
                {
                    **head,
                    "case": case,
                    "ms": 1e3 * seconds,
                    "mvertices_per_s": rate / 1e6,
                    "bytes_per_vertex": per_vertex,
                    "fraction_of_floor": per_vertex * rate / bandwidth,
                }
            )
        report = device.memory_report()  # the Skinner alive
        held = sum(h["memory_bytes"] for h in report["heaps"])
        if held >= peak.get("held", -1):
            peak.update(held=held, report=report)
    return rows


def crowd_rows(device: Device, counts: list[int], rounds: int, bandwidth: float) -> list[dict]:
    rows = []
    n, joints = 5000, 64
    mesh = procedural.tube(n, bone_count=joints, influences=4)
    angles = 50.0 * np.sin(np.linspace(0.0, 2.0 * np.pi, 31))
    clip = AnimationClip(np.stack([procedural.bone_chain_pose(joints, a) for a in angles]), 30.0)
    for count, method, layout in itertools.product(counts, ("dqs", "lbs"), LAYOUTS):
        with (
            OffscreenTarget(device, 320, 240) as target,
            Renderer(device, target, gpu_timing=True) as renderer,
        ):
            rm = renderer.add_mesh(mesh, layout=layout)
            read = si.layout_bytes(4, method, rm.vertex_layout)
            crowd = renderer.add_crowd(rm, clip, count=count, method=method)
            side = int(np.ceil(np.sqrt(count)))
            models = np.tile(np.eye(4), (count, 1, 1))
            models[:, 0, 3] = 3.0 * (np.arange(count) % side)
            models[:, 2, 3] = 3.0 * (np.arange(count) // side)
            crowd.set_models(models)
            crowd.set_times(np.random.default_rng(0).uniform(0.0, clip.duration, count))
            renderer.frame_scene()  # every copy in view: none culled
            gpu = []
            for f in range(rounds + 2):
                crowd.advance(1.0 / 60.0)
                renderer.render_image()
                if f >= 2:
                    assert renderer.gpu_ms is not None
                    gpu.append(renderer.gpu_ms)
            ms = float(np.median(gpu))
            rate = count * n / (ms / 1e3)
            rows.append(
                {
                    "copies": count,
                    "vertices": count * n,
                    "method": method,
                    "layout": layout,
                    "gpu_ms": ms,
                    "mvertices_per_s": rate / 1e6,
                    "bytes_per_vertex": read,
                    "fraction_of_floor": read * rate / bandwidth,
                    "copies_drawn": renderer.stats.copies_drawn,
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000, 50_000_000])
    parser.add_argument("--crowd-counts", type=int, nargs="*", default=[4096, 16384])
    parser.add_argument("--mush-sizes", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copy-mib", type=int, default=512, help="bytes the bandwidth copy moves")
    parser.add_argument("--allow-any-device", action="store_true", help="run on a CPU device too")
    parser.add_argument("--out", type=Path, default=RESULTS / "gpu.json")
    args = parser.parse_args()
    with Device() as device:
        info = device.info
        if info.device_type != "discrete GPU" and not args.allow_any_device:
            print(
                f"bench_gpu: no discrete GPU: Vulkan chose {info.name!r} ({info.device_type}); "
                "this benchmark is for a machine with a discrete GPU "
                "(--allow-any-device runs it anyway)",
                file=sys.stderr,
            )
            return 2
        t0 = time.perf_counter()
        bandwidth = copy_bandwidth(device, args.copy_mib * 2**20, args.rounds)
        transfers = transfer_rows(device, args.copy_mib * 2**20, args.rounds)
        peak: dict = {}
        skinning = skinning_rows(device, args.sizes, args.rounds, bandwidth, peak)
        memory = peak.get("report") or device.memory_report()
        mush = mush_rows(device, args.mush_sizes, args.rounds)
        crowds = crowd_rows(device, args.crowd_counts, args.rounds, bandwidth)
        seconds = time.perf_counter() - t0
    print(f"device: {info.name} ({info.device_type}), {os.cpu_count()} CPUs")
    print(f"copy bandwidth (read + write): {bandwidth / 1e9:.1f} GB/s")
    print(
        f"upload: copy {transfers['upload_copy'] / 1e9:.1f} GB/s, Buffer.write of static data "
        f"{transfers['static_write'] / 1e9:.1f} GB/s; readback: copy "
        f"{transfers['readback_copy'] / 1e9:.1f} GB/s, Buffer.read of gpu memory "
        f"{transfers['gpu_read'] / 1e9:.1f} GB/s (staged: {transfers['staged']})"
    )
    print(
        f"{'N':>10} {'method':<6} {'layout':<6} {'case':<24} | {'ms':>9} {'M vtx/s':>9} "
        f"{'B/vtx':>6} | floor"
    )
    for r in skinning:
        if "skipped" in r:
            print(f"{r['vertices']:>10} {r['method']:<6} {r['layout']:<6} skipped: {r['skipped']}")
            continue
        print(
            f"{r['vertices']:>10} {r['method']:<6} {r['layout']:<6} {r['case']:<24} | "
            f"{r['ms']:9.2f} "
            f"{r['mvertices_per_s']:9.1f} {r['bytes_per_vertex']:6d} | "
            f"{r['fraction_of_floor']:.3f}"
        )
    for r in crowds:
        print(
            f"crowd x{r['copies']:<6} {r['method']:<6} {r['layout']:<6} "
            f"{r['vertices']:>10} vertices | "
            f"{r['gpu_ms']:8.2f} GPU ms {r['mvertices_per_s']:9.1f} M vtx/s "
            f"{r['bytes_per_vertex']:3d} B/vtx | floor {r['fraction_of_floor']:.3f}"
        )
    for r in mush:
        print(
            f"{r['vertices']:>10} {r['method']:<32} | {r['ms']:9.2f} ms, LBS {r['lbs_ms']:.2f} ms:"
            f" {r['over_lbs']:.2f}x"
        )
    for line in memory_lines(memory):
        print(f"memory, largest Skinner alive: {line}")
    print(f"took {seconds:.0f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "meta": {"device": info.name, "device_type": info.device_type, "seconds": seconds},
        "copy_bandwidth_bytes_per_s": bandwidth,
        "transfer_bytes_per_s": transfers,
        "skinning": skinning,
        "mush": mush,
        "memory_report": memory,
        "crowds": crowds,
    }
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
