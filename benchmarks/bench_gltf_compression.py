"""Loading compressed glTF: file size and ``load_gltf`` time, plain against meshopt and Draco.

The model is bench_bake's skinned tube (``--sizes`` vertices, 64 joints, 4 influences, an
animation), written plain and then compressed by the encoders of the test fixtures
(tests/gltf_fixtures_compressed.py, the ``meshoptimizer`` and ``DracoPy`` packages): every
bufferView meshopt-compressed as EXT_meshopt_compression (codec version 0) and as
KHR_meshopt_compression (codec version 1), and the mesh Draco-compressed (positions quantized to
14 bits, Draco's own point order). Each file is loaded once per round after ``--warmup`` loads;
the table gives medians over rounds and the slowdown is the median of per-round ratios to the
plain file of the same round.

    python benchmarks/bench_gltf_compression.py [--sizes 100000 1000000] [--rounds 7]

Prints a table and writes benchmarks/results/gltf_compression.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test fixtures' encoders
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_bake import make_model  # noqa: E402

from tests.gltf_fixtures_compressed import KHR, draco_file, meshopt_file  # noqa: E402
from vkdqs.gltf import load_gltf  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
FORMATS = ("plain", "meshopt EXT v0", "meshopt KHR v1", "draco")


def write_files(tmp: Path, vertices: int) -> dict[str, Path]:
    """The plain model and its compressed variants."""
    plain = make_model(tmp / f"plain{vertices}.glb", vertices, 64, 2.0)
    scene_doc, binary = _document(plain)
    paths = {"plain": plain}
    paths["meshopt EXT v0"] = tmp / f"ext{vertices}.glb"
    meshopt_file(paths["meshopt EXT v0"], scene_doc, binary)
    paths["meshopt KHR v1"] = tmp / f"khr{vertices}.glb"
    meshopt_file(paths["meshopt KHR v1"], scene_doc, binary, extension=KHR, version=1)
    paths["draco"] = tmp / f"draco{vertices}.glb"
    draco_file(paths["draco"], scene_doc, binary, preserve_order=False)
    return paths


def _document(path: Path) -> tuple[dict, bytes]:
    """JSON and BIN chunk of a GLB."""
    raw = path.read_bytes()
    json_len = int.from_bytes(raw[12:16], "little")
    doc = json.loads(raw[20 : 20 + json_len])
    bin_start = 20 + json_len + 8
    return doc, raw[bin_start:]


def bench(paths: dict[str, Path], rounds: int, warmup: int) -> dict:
    for _ in range(warmup):  # warm-up
        for p in paths.values():
            load_gltf(p)
    times: dict[str, list[float]] = {k: [] for k in paths}
    for _ in range(rounds):  # timed rounds
        for name, p in paths.items():
            t0 = time.perf_counter()
            load_gltf(p)
            times[name].append(time.perf_counter() - t0)
    plain = np.array(times["plain"])
    return {
        name: {
            "bytes": paths[name].stat().st_size,
            "load_ms": float(np.median(t) * 1e3),
            "slowdown": float(np.median(np.array(t) / plain)),
        }
        for name, t in times.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", type=Path, default=RESULTS / "gltf_compression.json")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            rows = bench(write_files(Path(tmp), n), args.rounds, args.warmup)
            results.append({"vertices": n, "rows": rows})
            print(f"\n{n} vertices, 64 joints: median of {args.rounds} rounds")
            print(f"{'format':<16} {'file':>10} {'load':>10} {'vs plain':>9}")
            for name in FORMATS:
                r = rows[name]
                print(
                    f"{name:<16} {r['bytes'] / 2**20:>7.2f} MiB {r['load_ms']:>7.1f} ms "
                    f"{r['slowdown']:>8.2f}x"
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": platform.platform(),
                "processor": platform.processor(),
                "rounds": args.rounds,
                "warmup": args.warmup,
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
