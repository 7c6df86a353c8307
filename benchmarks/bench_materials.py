"""What materials cost when drawing: a skinned tube untextured, textured, textured with vertex
colours, and textured with alphaMode MASK and doubleSided (the tube's inside drawn too), in one
process, frames interleaved.

Each frame poses the tube (DQS, 64 bones) and reads the 640x480 image back, as
bench_render.py does. The texture is 1024x1024 (sRGB, full mip chain, LINEAR_MIPMAP_LINEAR,
REPEAT), mapped twice around the tube. Reports per case the median frame time over all rounds
and the median of the per-round ratios to the untextured frame.

    python benchmarks/bench_materials.py [--vertices 100000] [--rounds 5] [--frames 20]

Prints a table and writes benchmarks/results/materials.json.
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
from vkdqs.material import Material
from vkdqs.mesh import SkinnedMesh

BONES = 64
W, H = 640, 480
RESULTS = Path(__file__).resolve().parent / "results"
CASES = ("untextured", "textured", "textured+colors", "mask+2-sided")


def _texture(side: int = 1024) -> np.ndarray:
    y, x = np.mgrid[0:side, 0:side]
    tex = np.empty((side, side, 4), np.uint8)
    tex[..., 0] = (x * 255) // side
    tex[..., 1] = ((x // 32 + y // 32) % 2) * 200 + 40
    tex[..., 2] = (y * 255) // side
    tex[..., 3] = np.where((x // 64) % 8 == 0, 0, 255)  # a few transparent stripes (MASK)
    return tex


def _meshes(n: int) -> dict[str, tuple[SkinnedMesh, Material | None]]:
    tube = procedural.tube(n, bone_count=BONES)
    p = tube.positions.astype(np.float64)
    angle = np.arctan2(p[:, 2], p[:, 0])
    lo, hi = p[:, 1].min(), p[:, 1].max()
    uvs = np.c_[(angle / np.pi + 1.0), (p[:, 1] - lo) / (hi - lo) * 2.0]
    colors = np.c_[0.5 + 0.5 * np.cos(angle), np.full(n, 0.9), np.full(n, 0.8), np.ones(n)]
    args = (tube.positions, tube.normals, tube.joints, tube.weights, tube.indices)
    tex = _texture()
    tex.flags.writeable = False  # shared by the materials: uploaded once per renderer
    textured = Material(texture=tex)
    return {
        "untextured": (SkinnedMesh(*args), None),
        "textured": (SkinnedMesh(*args, uvs=uvs), textured),
        "textured+colors": (SkinnedMesh(*args, uvs=uvs, colors=colors), textured),
        "mask+2-sided": (
            SkinnedMesh(*args, uvs=uvs),
            Material(texture=tex, alpha_mode="MASK", double_sided=True),
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vertices", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", type=int, default=20, help="frames per case per round")
    parser.add_argument("--out", type=Path, default=RESULTS / "materials.json")
    args = parser.parse_args(argv)
    poses = [
        dq.from_matrices(procedural.bone_chain_pose(BONES, a)) for a in np.linspace(-60, 60, 16)
    ]
    times: dict[str, list[list[float]]] = {c: [] for c in CASES}
    with Device(validation=False) as device:
        meshes = _meshes(args.vertices)
        targets = [OffscreenTarget(device, W, H) for _ in CASES]
        renderers = [Renderer(device, t) for t in targets]
        instances = []
        for case, renderer in zip(CASES, renderers, strict=True):
            mesh, material = meshes[case]
            rm = renderer.add_mesh(mesh, material=material)
            instances.append(renderer.add_instance(rm, bone_count=BONES))
            renderer.frame_scene()
            for pose in poses[:3]:  # warm-up: pipelines, first frames
                instances[-1].set_pose(pose)
                renderer.render_image()
        for _ in range(args.rounds):
            rows = {c: [] for c in CASES}
            for f in range(args.frames):
                order = list(range(len(CASES)))
                if f % 2:
                    order.reverse()
                for k in order:
                    instances[k].set_pose(poses[f % len(poses)])
                    start = time.perf_counter()
                    renderers[k].render_image()
                    rows[CASES[k]].append(time.perf_counter() - start)
            for c in CASES:
                times[c].append(rows[c])
        for r in renderers:
            r.close()
        for t in targets:
            t.close()
    base = [np.median(r) for r in times["untextured"]]
    results = []
    print(f"{args.vertices} vertices, {W}x{H}, {args.rounds} rounds of {args.frames} frames")
    print(f"{'case':18} | {'median ms':>9} | {'vs untextured':>13}")
    for c in CASES:
        per_round = [np.median(r) for r in times[c]]
        ms = float(np.median(np.concatenate(times[c]))) * 1e3
        ratio = float(np.median(np.array(per_round) / np.array(base)))
        results.append({"case": c, "median_ms": ms, "ratio_to_untextured": ratio})
        print(f"{c:18} | {ms:9.2f} | {ratio:13.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    info = {"vertices": args.vertices, "size": [W, H], "rounds": args.rounds}
    info["frames"], info["cpus"] = args.frames, os.cpu_count()
    args.out.write_text(json.dumps({**info, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
