"""The benchmark scripts run and write their JSON (tiny sizes; no timing is asserted here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import vulkan as vk

from vkdqs.gpu import Buffer

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(script, *args, env=None):
    result = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=None if env is None else {**os.environ, **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_skinning_benchmark_smoke(tmp_path, device):
    out = tmp_path / "skinning.json"
    args = ["--sizes", "2000", "--rounds", "1", "--warmup", "1", "--numpy-rounds", "1"]
    text = _run("bench_skinning.py", *args, "--out", str(out))
    assert "compute dqs/lbs time" in text
    (res,) = json.loads(out.read_text())["results"]
    assert res["n"] == 2000
    assert set(res["rows"]) == {
        f"{p}/{m}" for p in ("compute", "vertex", "numpy32") for m in ("dqs", "lbs", "cor")
    } | {"compute/blend", "vertex/blend", "compute/velocity", "compute/velocity limbs"} | {
        f"compute/{m}{box}" for m in ("dqs", "lbs") for box in ("+box", " box only", " lean")
    }
    assert res["bytes_per_vertex"] == {"exact": 64, "lean": 32}
    # one round of one sample each: a ratio is checked to be measured, not bounded (a single
    # scheduling hiccup on a loaded machine made bounds()/skin 14 once; its median is 0.9)
    assert 0 < res["ratios"]["compute dqs lean/exact GPU time"] < float("inf")
    assert "compute cor/dqs time" in res["ratios"]
    assert 0 < res["ratios"]["compute dqs bounds()/skin time"] < float("inf")
    assert 0 < res["ratios"]["compute velocity/dqs time"] < float("inf")
    assert 0 < res["ratios"]["compute velocity/dqs GPU time"] < float("inf")
    assert 0 < res["ratios"]["compute velocity limbs/dqs GPU time"] < float("inf")


def test_centers_benchmark_smoke(tmp_path, device):
    out = tmp_path / "centers.json"
    args = ["--sizes", "1500", "--rounds", "1", "--reference-vertices", "50"]
    text = _run("bench_centers.py", *args, "--out", str(out))
    assert "speedup" in text
    (res,) = json.loads(out.read_text())["results"]
    assert res["n"] == 1500 and res["max_error_over_extent"] < 1e-4


def test_ddm_benchmark_smoke(tmp_path, device):
    out = tmp_path / "ddm.json"
    args = ["--sizes", "600", "--bones", "6", "--rounds", "1", "--iterations", "3"]
    text = _run("bench_ddm.py", *args, "--out", str(out))
    assert "speedup" in text
    (res,) = json.loads(out.read_text())["results"]
    assert res["n"] == 600 and res["bones"] == 6 and res["max_error_over_extent"] < 1e-5


def test_ddm_skin_benchmark_smoke(tmp_path, device):
    out = tmp_path / "ddm_skin.json"
    args = ["--sizes", "3000", "--bones", "6", "--rounds", "1"]
    text = _run("bench_ddm_skin.py", *args, "--out", str(out))
    assert "DDM/LBS" in text
    rows = json.loads(out.read_text())["results"]
    assert [r["max_bones"] for r in rows] == [8, 4]
    for res in rows:
        assert res["n"] == 3000 and res["ddm_over_lbs"] > 0 and res["bounds_ddm_over_lbs"] > 0
        assert len(res["live_slots"]) <= res["max_bones"] + 1 and sum(res["live_slots"]) == 3000


def test_render_benchmark_smoke(tmp_path, device):
    out = tmp_path / "render.json"
    args = ["--sizes", "2000", "--instances", "2", "--rounds", "1", "--frames", "2"]
    text = _run("bench_render.py", *args, "--out", str(out))
    assert "vs unskinned" in text
    results = json.loads(out.read_text())["results"]
    assert [r["instances"] for r in results] == [1, 2]
    assert set(results[0]["methods"]) == {"dqs", "lbs", "none"}


def test_bake_benchmark_smoke(tmp_path, device):
    out = tmp_path / "bake.json"
    args = ["--frames", "6", "--rounds", "1", "--warmup", "0", "--numpy-frames", "2"]
    args += ["--batch-models", "4", "--batch-rounds", "1", "--batch-warmup", "0"]
    text = _run("bench_bake.py", *args, "--tube-vertices", "2000", "--out", str(out))
    assert "GPU speedup over numpy32" in text and "peak memory" in text
    assert "scaling, 2 workers / 1" in text
    data = json.loads(out.read_text())
    assert [(r["model"], r["vertices"], r["joints"]) for r in data["results"]] == [
        ("rig", 1728, 24),
        ("tube", 2000, 64),
    ]
    for res in data["results"]:
        assert set(res["rows"]) == {"gpu/dqs", "gpu/lbs", "numpy32/dqs"}
        assert res["rows"]["gpu/dqs"]["frames"] == 6
        assert res["max |gpu - numpy32| (dqs positions)"] < 1e-4
    assert set(data["memory"]) == {"bake_to_file .npz", "bake_to_file .glb", "bake() in memory"}
    batch = data["batch"]
    assert batch["models"] == 4 and set(batch["rows"]) == {"1 worker", "2 workers"}
    for row in batch["rows"].values():
        assert row["runs"] == 1 and row["files_per_s"] == 4 / row["median_s"] > 0
    assert batch["scaling 2 workers / 1 (files/s)"] > 0


def test_crowd_benchmark_smoke(tmp_path, device):
    out = tmp_path / "crowd.json"
    args = ["--counts", "1", "3", "--meshes", "rig1.7k", "--rounds", "1", "--frames", "1"]
    args += ["--culling-counts", "64", "--culling-size", "160", "120", "--textured-counts", "8"]
    text = _run("bench_crowd.py", *args, "--max-instances", "1", "--out", str(out))
    assert "culling (camera on half of the grid, 160x120)" in text
    assert "crowd fps" in text
    results = json.loads(out.read_text())["results"]
    assert [(r["method"], r["copies"]) for r in results] == [
        ("dqs", 1),
        ("dqs", 3),
        ("lbs", 1),
        ("lbs", 3),
    ]
    assert "instances" in results[0] and "instances" not in results[1]
    assert all(r["crowd"]["cpu_ms"] > 0 for r in results)
    # GPU time a frame and a skinned vertex, for the crowd, the instances and one instance
    assert "GPU ms" in text and "single instance" in text
    data = json.loads(out.read_text())
    assert data["meta"]["empty_gpu_ms"] > 0
    assert [(s["mesh"], s["method"]) for s in data["single_instance"]] == [
        ("rig1.7k", "dqs"),
        ("rig1.7k", "lbs"),
    ]
    for s in data["single_instance"]:
        assert s["single"]["gpu_ms"] > 0 and s["single"]["gpu_ns_per_vertex"] > 0
    assert "textured crowds" in text
    assert [(t["method"], t["copies"]) for t in data["textured"]] == [("dqs", 8), ("lbs", 8)]
    for t in data["textured"]:
        assert t["textured"]["copies_drawn"] == t["untextured"]["copies_drawn"] == 8
        assert t["textured/untextured GPU ms"] > 0
    for r in results:
        c = r["crowd"]
        assert c["gpu_ms"] > 0
        expected = 1e6 * c["gpu_ms"] / (r["copies"] * r["vertices"])
        assert abs(c["gpu_ns_per_vertex"] - expected) <= 1e-9 * expected
        assert r["crowd/single GPU per vertex"] > 0
    assert results[0]["instances"]["gpu_ms"] > 0
    assert results[0]["crowd/instances GPU per vertex"] > 0
    # the culling rows: half the grid out of view, drawn by the GPU's count, every copy drawn
    # with culling off, and the crowd of only the copies in view (the host's test) as many
    assert data["meta"]["culling_size"] == [160, 120]
    for row in data["culling"]:
        drawn = row["culled"]["copies_drawn"]
        assert 0 < drawn < 64 and row["unculled"]["copies_drawn"] == 64
        assert row["only visible"]["copies_drawn"] == drawn
        for what in ("GPU ms", "process CPU ms"):
            assert row[f"culled/unculled {what}"] > 0 and row[f"culled/only visible {what}"] > 0
    assert [(r["method"], r["copies"]) for r in data["culling"]] == [("dqs", 64), ("lbs", 64)]


def test_crowd_benchmark_without_pygfx(tmp_path, device):
    """pygfx is an optional outside reference, not a dependency: where it cannot be imported
    (simulated by a stub that fails to import), --pygfx says so in one line and measures the
    rest. The pygfx rows themselves were measured by hand (docs/crowds.md)."""
    stub = tmp_path / "stub"
    (stub / "pygfx").mkdir(parents=True)
    (stub / "pygfx" / "__init__.py").write_text("raise ImportError('no pygfx here')\n")
    out = tmp_path / "crowd.json"
    args = ["--counts", "1", "--meshes", "rig1.7k", "--methods", "lbs", "--rounds", "1"]
    args += ["--frames", "1", "--max-instances", "1", "--max-pygfx", "1", "--pygfx"]
    args += ["--culling-counts", "--textured-counts"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stub), *sys.path])}
    result = subprocess.run(
        [sys.executable, str(BENCH / "bench_crowd.py"), *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    skipped = [line for line in result.stdout.splitlines() if "pygfx reference skipped" in line]
    assert skipped == ["pygfx reference skipped: no pygfx here (pip install pygfx)"]
    (row,) = json.loads(out.read_text())["results"]
    assert "pygfx" not in row and row["crowd"]["cpu_ms"] > 0


def test_morph_benchmark_smoke(tmp_path, device):
    out = tmp_path / "morph.json"
    args = ["--sizes", "2000", "--targets", "4", "--active", "2", "--rounds", "1", "--warmup", "0"]
    text = _run("bench_morph.py", *args, "--paths", "compute", "vertex", "--out", str(out))
    assert "compute 2 active / no morphs time" in text
    dense, sparse = json.loads(out.read_text())["results"]
    assert (dense["kind"], dense["layout"], sparse["kind"], sparse["layout"]) == (
        "dense",
        "dense",
        "sparse",
        "sparse",
    )
    assert 0.05 <= sparse["nonzero_fraction"] <= 0.4 and dense["nonzero_fraction"] == 1.0
    for res in (dense, sparse):
        assert (res["n"], res["targets"], res["active"]) == (2000, 4, 2)
        assert set(res["rows"]) == {
            f"{p}/{c}" for p in ("compute", "vertex") for c in ("no morphs", "0 active", "2 active")
        }


def test_delta_mush_benchmark_smoke(tmp_path, device):
    out = tmp_path / "delta_mush.json"
    args = ["--sizes", "2000", "--iterations", "3", "--rounds", "1", "--warmup", "0"]
    text = _run("bench_delta_mush.py", *args, "--reference-rounds", "1", "--out", str(out))
    assert "delta mush/lbs over lbs time" in text
    (res,) = json.loads(out.read_text())["results"]
    assert (res["n"], res["iterations"]) == (2000, 3)
    assert set(res["rows"]) == {
        "lbs",
        "delta mush/lbs",
        "delta mush/dqs",
        "reference (float64)",
        "candy: lbs",
        "candy: delta mush/lbs",
    }
    assert res["ratios"]["delta mush/lbs over lbs time"] > 0
    assert res["max_error_over_extent"] < 1e-5


def test_gpu_benchmark_smoke(tmp_path, device):
    """benchmarks/gpu_run.sh's script: refuses a CPU device (exit 2, naming it); with
    --allow-any-device, every row in both layouts, each layout's bytes a vertex, and the floor."""
    result = subprocess.run(
        [sys.executable, str(BENCH / "bench_gpu.py"), "--sizes", "2000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if device.info.device_type != "discrete GPU":
        assert result.returncode == 2 and "no discrete GPU" in result.stderr
    out = tmp_path / "gpu.json"
    args = ["--sizes", "2000", "--crowd-counts", "4", "--rounds", "1", "--copy-mib", "4"]
    args += ["--mush-sizes", "1500"]
    text = _run("bench_gpu.py", *args, "--allow-any-device", "--out", str(out))
    assert (
        "copy bandwidth" in text
        and "upload: copy" in text
        and "memory, largest Skinner alive" in text
    )
    res = json.loads(out.read_text())
    assert res["copy_bandwidth_bytes_per_s"] > 0
    transfers = res["transfer_bytes_per_s"]
    assert all(transfers[k] > 0 for k in ("upload_copy", "readback_copy", "static_write"))
    # staged where static data is not host-visible: not on lavapipe (unified memory), but
    # under $VKDQS_MEMORY_PROFILE=discrete
    probe = Buffer(device, 16, vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, label="p", memory="static")
    assert transfers["staged"] is not probe.host_visible
    probe.destroy()
    mush = {r["method"]: r for r in res["mush"]}
    assert set(mush) == {"ddm", "delta mush/lbs (10 iterations)"}
    assert all(r["vertices"] == 1500 and r["over_lbs"] > 0 for r in mush.values())
    assert res["memory_report"]["heaps"][0]["memory_objects"] >= 1
    skin = {(r["method"], r["layout"], r["case"]): r for r in res["skinning"]}
    assert len(skin) == 8 and all(0 < r["fraction_of_floor"] for r in skin.values())
    for method in ("dqs", "lbs"):
        exact, lean = (skin[(method, lay, "bounds (no vertex out)")] for lay in ("exact", "lean"))
        assert (exact["bytes_per_vertex"], lean["bytes_per_vertex"]) == (64, 32)
        assert skin[(method, "lean", "skin (readback)")]["bytes_per_vertex"] == 32 + 24
    crowds = {(r["method"], r["layout"]): r for r in res["crowds"]}
    assert len(crowds) == 4 and all(r["copies_drawn"] == 4 for r in crowds.values())


def test_gpu_benchmark_stages_under_the_discrete_profile(tmp_path, device):
    out = tmp_path / "gpu.json"
    args = ["--sizes", "1000", "--crowd-counts", "2", "--rounds", "1", "--copy-mib", "2"]
    args += ["--mush-sizes", "--allow-any-device", "--out", str(out)]
    _run("bench_gpu.py", *args, env={"VKDQS_MEMORY_PROFILE": "discrete"})
    res = json.loads(out.read_text())
    assert res["transfer_bytes_per_s"]["staged"] is True
    heaps = res["memory_report"]["heaps"]
    assert "static" in heaps[0]["classes"] and "static" not in heaps[1]["classes"]
    assert res["memory_report"]["profile"] == "discrete"


def test_mush_draw_benchmark_smoke(tmp_path, device):
    out = tmp_path / "mush_draw.json"
    args = ["--sizes", "500", "--frames", "1", "--warmup", "0", "--out", str(out)]
    text = _run("bench_mush_draw.py", *args)
    assert "500 vertices" in text
    assert json.loads(out.read_text())["ms_per_frame"]["500"] > 0


def test_record_benchmark_smoke(tmp_path, device):
    out = tmp_path / "record.json"
    args = ["--sizes", "2000", "--rounds", "1", "--warmup", "1", "--out", str(out)]
    text = _run("bench_record.py", *args)
    assert "record direct / skin" in text
    (res,) = json.loads(out.read_text())["results"]
    assert res["n"] == 2000
    rows = {"skin", "record copied", "record direct", "record vec4", "record direct vec4"}
    assert set(res["median_s"]) == rows
