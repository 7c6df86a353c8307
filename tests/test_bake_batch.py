"""Batch baking (vkdqs.bake_batch, ``vkdqs bake ... --out-dir``) on Dask: outputs equal to single
bakes, the manifest, corrupt inputs recorded, resumption (also after SIGKILL), the CLI's batch
form and status, the missing-dask error, and --scheduler against a running cluster.

Cluster tests share one LocalCluster of 2 workers (module fixture; ``scheduler=`` its address);
the batch of the first test and the CLI subprocesses start their own local clusters (the
default). Every batch carries a time limit (``timeout=``): a hung cluster fails, never hangs. The
workers inherit the validation layer (conftest's environment); what their Devices log comes back
with the records and is logged again here, where conftest's check fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import distributed  # the test extra installs it (vkdqs[batch])
import numpy as np
import pytest

from vkdqs import CapabilityError, bake_batch, bake_to_file
from vkdqs.app import cli
from vkdqs.baking import batch
from vkdqs.baking.batch_plan import clip_labels, describe, model_pairs, output_stems

from .gltf_fixtures import make_rig

ROOT = Path(__file__).resolve().parents[1]
FPS = 5.0
LIMIT = 90.0  # seconds a batch may take before its pairs are recorded as failed


def _rig(path: Path, clips: int | None = 3, seed: int = 7) -> Path:
    """The test rig (tests/gltf_fixtures.py) with its first ``clips`` animations (None: all)."""
    rig = make_rig(scaled=False, seed=seed)
    if clips == 0:
        del rig.document["animations"]
    elif clips is not None:
        rig.document["animations"] = rig.document["animations"][:clips]
    rig.save(path)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """a.glb (3 clips), b.gltf (2 clips, an external .bin), c.glb (no animations)."""
    root = tmp_path_factory.mktemp("models")
    _rig(root / "a.glb", None)
    _rig(root / "b.gltf", 2, seed=8)
    _rig(root / "c.glb", 0, seed=9)
    return root


#: (model, clip) -> output name, for the models above
PAIRS = {
    ("a.glb", "linear"): "a__linear.npz",
    ("a.glb", "step"): "a__step.npz",
    ("a.glb", "cubic"): "a__cubic.npz",
    ("b.gltf", "linear"): "b__linear.npz",
    ("b.gltf", "step"): "b__step.npz",
    ("c.glb", "rest"): "c__rest.npz",
}


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 worker processes shared by the module's tests."""
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},  # as vkdqs's own: no fixed port
        silence_logs=40,
    ) as c:
        yield c


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def _assert_same_bake(a: Path, b: Path) -> None:
    x, y = _arrays(a), _arrays(b)
    assert set(x) == set(y)
    for k in x:
        assert np.array_equal(x[k], y[k]), k


def _manifest(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]


def test_a_batch_equals_single_bakes_and_is_recorded(models, device, tmp_path):
    out = tmp_path / "out"
    report = bake_batch(models, out, fps=FPS, jobs=2, timeout=LIMIT)
    assert (report.baked, report.skipped, report.failed) == (6, 0, 0) and report.ok
    assert report.validation == []
    got = {(Path(r.input).name, r.clip): Path(r.output).name for r in report.records}
    assert got == PAIRS
    # one Device per worker process, opened once and reused for every model it baked
    assert 1 <= len(report.workers) <= 2
    assert {r.device_opens for r in report.records} == {1}
    for (model, clip), name in PAIRS.items():
        single = tmp_path / f"single-{name}"
        animation = None if clip == "rest" else clip
        bake_to_file(models / model, single, animation=animation, fps=FPS, device=device)
        _assert_same_bake(out / name, single)
    lines = _manifest(out)
    assert len(lines) == 6
    for line in lines:
        assert list(line) == list(batch.FIELDS)
        assert line["error"] is None and line["method"] == "dqs"
        assert line["bytes"] == os.path.getsize(line["output"]) > 0
        assert line["frames"] == 1 if line["clip"] == "rest" else line["frames"] > 1
        assert line["input"] == str(models / Path(line["input"]).name)
        assert len(line["key"]) == 64 and line["validation"] == []
    frames = {(Path(r["input"]).name, r["clip"]): r["frames"] for r in lines}
    assert frames[("a.glb", "linear")] == 6 and frames[("a.glb", "step")] == 11  # 1 s, 2 s
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporaries left


@pytest.mark.gpu
def test_validation_is_on_in_the_workers(cluster):
    """The workers inherit conftest's VKDQS_VALIDATION: their Devices run the validation layer
    (so a clean record means a clean bake)."""
    from vkdqs.baking.batch_worker import PLUGIN, DevicePlugin

    def opened(dask_worker):
        plugin = dask_worker.plugins[PLUGIN]
        with plugin.lock:
            return plugin.get().validation

    with distributed.Client(cluster) as client:
        client.register_plugin(DevicePlugin(), name=PLUGIN)
        try:
            assert list(client.run(opened).values()) == [True, True]
        finally:
            client.unregister_worker_plugin(PLUGIN)


@pytest.mark.gpu
def test_a_workers_validation_messages_come_back(models, cluster, tmp_path):
    """A message logged to vkdqs.validation in a worker during a model's task (made here by
    wrapping the workers' bake_to_file) is in the record, the report and the manifest, and
    logged again here (where conftest would fail the test on it: cleared after checking)."""
    from .conftest import _VALIDATION_RECORDS

    def noisy():
        import logging

        from vkdqs.baking import driver

        original = driver.bake_to_file

        def bake_to_file(*args, **kwargs):
            logging.getLogger("vkdqs.validation").error("a made-up validation error")
            return original(*args, **kwargs)

        bake_to_file.original = original
        driver.bake_to_file = bake_to_file

    def quiet():
        from vkdqs.baking import driver

        driver.bake_to_file = getattr(driver.bake_to_file, "original", driver.bake_to_file)

    with distributed.Client(cluster) as client:
        client.run(noisy)
        try:
            report = bake_batch(
                models / "c.glb",
                tmp_path,
                fps=FPS,
                scheduler=cluster.scheduler_address,
                timeout=LIMIT,
            )
        finally:
            client.run(quiet)
    assert report.ok and report.records[0].validation == ("a made-up validation error",)
    assert report.validation == ["a made-up validation error"]
    assert _manifest(tmp_path)[0]["validation"] == ["a made-up validation error"]
    relogged = list(_VALIDATION_RECORDS.records)
    _VALIDATION_RECORDS.records.clear()
    assert relogged == [f"worker bake of {models / 'c.glb'}: a made-up validation error"]


def _bake_with_plugin(cluster, plugin, inputs):
    """bake_batch of ``inputs`` into ``out`` beside the first on the test cluster, its workers
    running ``plugin`` (the restarted ones too) and its scheduler allowing the failures a local
    cluster of bake_batch allows; then workers without it."""
    scheduler = cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, batch.ALLOWED_FAILURES
    with distributed.Client(cluster) as client:
        client.register_plugin(plugin, name="test-plugin")
        try:
            return bake_batch(
                inputs,
                Path(inputs[0]).parent / "out",
                fps=FPS,
                scheduler=cluster.scheduler_address,
                timeout=LIMIT,
            )
        finally:
            client.unregister_worker_plugin("test-plugin")
            scheduler.allowed_failures = allowed
            client.restart()  # workers without the plugin


@pytest.mark.gpu
def test_a_worker_that_dies_is_recorded_and_the_batch_goes_on(models, cluster, tmp_path):
    """A worker process that exits while baking one model (made here by a worker plugin, which
    the restarted workers get too) costs that model's pairs, recorded as failed once its task
    killed a worker twice (allowed-failures 1, as a local cluster of bake_batch has it)."""

    class Crash(distributed.WorkerPlugin):
        def setup(self, worker):
            from vkdqs.baking import driver

            original = driver.bake_to_file

            def bake_to_file(scene, path, **kwargs):
                if Path(path).name.startswith("crash"):
                    os._exit(3)
                return original(scene, path, **kwargs)

            driver.bake_to_file = bake_to_file

    shutil.copy(models / "c.glb", tmp_path / "crash.glb")
    report = _bake_with_plugin(cluster, Crash(), [tmp_path / "crash.glb", models / "c.glb"])
    crashed, fine = report.records
    assert crashed.clip == "rest" and "KilledWorker" in crashed.error
    assert fine.error is None and fine.output == str(tmp_path / "out" / "c__rest.npz")
    lines = _manifest(tmp_path / "out")
    assert sorted((line["clip"], line["error"] is None) for line in lines) == [
        ("rest", False),
        ("rest", True),
    ]


@pytest.mark.gpu
def test_a_worker_killed_mid_write_leaves_no_output_and_no_temporary(models, cluster, tmp_path):
    """A worker process that exits after writing part of an output (its frames on the disk,
    the archive not finished): no output under the final name, the model recorded as failed,
    and the temporaries its two attempts left removed when its task ended."""
    marks = tmp_path / "marks"
    marks.mkdir()

    class CrashMidWrite(distributed.WorkerPlugin):
        def setup(self, worker):
            from vkdqs import files

            original = files.AtomicFile.written

            def written(self):
                original(self)
                if self.path.name.startswith("crash"):
                    (marks / f"{os.getpid()}").write_text(str(self.temporary))
                    os._exit(3)

            files.AtomicFile.written = written

    shutil.copy(models / "c.glb", tmp_path / "crash.glb")
    # the model alone: a model baking beside it on the dying worker would die with it
    [crashed] = _bake_with_plugin(cluster, CrashMidWrite(), [tmp_path / "crash.glb"]).records
    assert "KilledWorker" in crashed.error
    left = [Path(p.read_text()) for p in marks.iterdir()]
    assert len(left) == batch.ALLOWED_FAILURES + 1  # each attempt died with a temporary
    assert all(p.parent == tmp_path / "out" and p.name.startswith(".crash") for p in left)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["manifest.jsonl"], names


@pytest.mark.gpu
@pytest.mark.parametrize("losses", [2, batch.MAX_LOST_RESULTS + 1])
def test_a_lost_result_is_fetched_again(models, cluster, tmp_path, monkeypatch, losses):
    """A task's result lost on the way (its worker died after finishing it, so the transfer
    fails and the scheduler computes it again) is fetched again when the task finishes again;
    fetches that keep failing are the model's error. The transfer is failed here for c.glb's
    first ``losses`` fetches (the worker that dies in the test above loses it too)."""
    original = distributed.Client.gather
    calls = {"n": 0}

    def gather(self, futures, *args, **kwargs):
        key = str(getattr(futures, "key", ""))
        if key.startswith("vkdqs-bake-1-") and calls["n"] < losses:
            calls["n"] += 1
            raise distributed.comm.CommClosedError("in <TCP (closed)>: Stream is closed")
        return original(self, futures, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "gather", gather)
    report = bake_batch(
        [models / "a.glb", models / "c.glb"],
        tmp_path / "out",
        fps=FPS,
        scheduler=cluster.scheduler_address,
    )
    fine, lost = [r for r in report.records if r.clip == "linear"], report.records[-1]
    assert Path(lost.input).name == "c.glb" and all(r.error is None for r in fine)
    if losses <= batch.MAX_LOST_RESULTS:
        assert calls["n"] == losses and lost.error is None and report.ok
        assert lost.output == str(tmp_path / "out" / "c__rest.npz") and Path(lost.output).exists()
    else:
        assert calls["n"] == batch.MAX_LOST_RESULTS + 1
        assert lost.error.startswith("its result could not be fetched: CommClosedError")


def test_the_time_limit_records_what_is_not_done(models, cluster, tmp_path):
    report = bake_batch(models, tmp_path, fps=FPS, scheduler=cluster.scheduler_address, timeout=0.0)
    late = [r for r in report.records if r.error and "time limit (0 s)" in r.error]
    assert late and len(late) == report.failed and report.failed + report.baked == 6


@pytest.mark.gpu
def test_corrupt_inputs_are_recorded_and_the_rest_baked(models, cluster, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    data = (models / "a.glb").read_bytes()
    (bad / "truncated.glb").write_bytes(data[: len(data) // 2])
    (bad / "garbage.gltf").write_bytes(b"\x00\xffnot json")
    shutil.copy(models / "c.glb", bad / "c.glb")
    out = tmp_path / "out"
    inputs = [bad, bad / "missing.glb"]
    report = bake_batch(inputs, out, fps=FPS, scheduler=cluster.scheduler_address, timeout=LIMIT)
    assert (report.baked, report.failed) == (1, 3) and not report.ok
    errors = {Path(r.input).name: r.error for r in report.records if r.error}
    assert "truncated" in errors["truncated.glb"]
    assert "JSON" in errors["garbage.gltf"]
    assert "missing.glb" in errors["missing.glb"]
    assert (out / "c__rest.npz").is_file()
    lines = _manifest(out)
    assert len(lines) == 4 and sum(line["error"] is not None for line in lines) == 3
    # a failed pair is tried again; the baked one is not
    again = bake_batch(inputs, out, fps=FPS, scheduler=cluster.scheduler_address, timeout=LIMIT)
    assert (again.baked, again.skipped, again.failed) == (0, 1, 3)


@pytest.mark.gpu
def test_a_second_run_skips_and_a_changed_option_rebakes(models, cluster, tmp_path):
    work = tmp_path / "models"
    shutil.copytree(models, work)
    out = tmp_path / "out"
    kw = {"scheduler": cluster.scheduler_address, "timeout": LIMIT}
    first = bake_batch(work, out, fps=FPS, **kw)
    assert first.baked == 6
    mtimes = {p.name: p.stat().st_mtime_ns for p in out.glob("*.npz")}
    second = bake_batch(work, out, fps=FPS, **kw)
    assert (second.baked, second.skipped, second.failed) == (0, 6, 0)
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.npz")} == mtimes
    assert len(_manifest(out)) == 6  # skipped pairs add no line
    # another fps: every pair again; another input content (b's .bin): b's pairs again
    assert bake_batch(work, out, fps=FPS + 1, **kw).baked == 6
    with open(work / "b.bin", "r+b") as f:  # a weight of b's: its content changes
        f.seek(0)
        f.write(b"\x00\x00\x80\x3f")
    changed = bake_batch(work, out, fps=FPS + 1, **kw)
    assert (changed.baked, changed.skipped) == (2, 4)
    # a torn last line (a killed run) and a deleted output: only that output is baked again
    (out / "a__step.npz").unlink()
    with open(out / "manifest.jsonl", "ab") as f:
        f.write(b'{"input": "/x", "clip": "tor')
    healed = bake_batch(work, out, fps=FPS + 1, **kw)
    assert (healed.baked, healed.skipped, healed.failed) == (1, 5, 0)
    assert (out / "a__step.npz").is_file()
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert lines[-2] == '{"input": "/x", "clip": "tor'  # ended by a line break, then ignored
    assert json.loads(lines[-1])["output"] == str(out / "a__step.npz")
    assert len(batch.read_manifest(out / "manifest.jsonl")) == len(lines) - 1


@pytest.mark.gpu
def test_clips_by_name_and_a_missing_clip(models, cluster, tmp_path):
    report = bake_batch(
        [models / "a.glb", models / "c.glb"],
        tmp_path,
        clips="step,rest,nope",
        fps=FPS,
        scheduler=cluster.scheduler_address,
        timeout=LIMIT,
    )
    got = {(Path(r.input).name, r.clip): r.error for r in report.records}
    assert set(got) == {(m, c) for m in ("a.glb", "c.glb") for c in ("step", "rest", "nope")}
    assert got[("a.glb", "step")] is None and got[("a.glb", "rest")] is None
    assert "no animation 'nope'" in got[("a.glb", "nope")]
    assert "no animation 'step'" in got[("c.glb", "step")]
    assert report.failed == 3


@pytest.mark.gpu
def test_cli_batch_status_and_scheduler(models, cluster, tmp_path, capsys):
    bad = tmp_path / "bad.glb"
    bad.write_bytes(b"glTF")
    out = tmp_path / "out"
    argv = ["bake", str(models / "c.glb"), str(bad), "--out-dir", str(out), "--fps", "5"]
    status = cli.main([*argv, "--scheduler", cluster.scheduler_address])
    captured = capsys.readouterr()
    assert status == 1
    errors = captured.err.splitlines()
    assert len(errors) == 1 and errors[0].startswith("vkdqs: error: ") and "bad.glb" in errors[0]
    assert "Traceback" not in captured.err
    assert captured.out.startswith("baked 1, skipped 0, failed 1")
    # without the bad file: all done, status 0
    argv = ["bake", str(models / "c.glb"), "--out-dir", str(out), "--fps", "5", "--quiet"]
    assert cli.main([*argv, "--scheduler", cluster.scheduler_address]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "x.npz", "--clips", "all"], "--clips: batch options; they need --out-dir"),
        (["--out-dir", "d", "--animation", "1"], "a batch (--out-dir) takes --clips"),
        (["m2.glb", "--out", "x.npz"], "--out names one file for one model, got 2 models"),
    ],
)
def test_cli_batch_options_need_the_batch_form(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bake", "m.glb", *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vkdqs: error: ") and message in err and len(err.splitlines()) == 1


def test_without_dask_the_error_names_the_extra(models, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    with pytest.raises(CapabilityError, match=r"pip install 'vkdqs\[batch\]'"):
        bake_batch(models, tmp_path / "api")
    status = cli.main(["bake", str(models / "c.glb"), "--out-dir", str(tmp_path / "cli")])
    err = capsys.readouterr().err
    assert status == 1 and len(err.splitlines()) == 1
    assert err.startswith("vkdqs: error: batch baking needs dask.distributed: pip install ")


def test_a_killed_run_is_finished_by_the_next(models, device, tmp_path):
    """SIGKILL to the whole command (its local cluster's workers too) mid-batch; the next run
    reads the manifest and bakes only what is missing, to the same files single bakes make."""
    work = tmp_path / "models"
    work.mkdir()
    for i in range(16):  # over models: 48 pairs, enough to be killed in the middle
        shutil.copy(models / "a.glb", work / f"m{i:02d}.glb")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "vkdqs", "bake", str(work), "--out-dir", str(out)]
    cmd += ["--fps", "60", "--jobs", "1", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        cmd, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    manifest = out / "manifest.jsonl"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if manifest.exists() and manifest.read_bytes().count(b"\n") >= 1:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()[1].decode()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    done = len(batch.read_manifest(manifest))
    assert 1 <= done < 48
    result = subprocess.run(cmd[:-1], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith(f"baked {48 - done}, skipped {done}, failed 0")
    records = batch.read_manifest(manifest)
    assert {Path(r.output).name for r in records if r.error is None} == {
        f"m{i:02d}__{c}.npz" for i in range(16) for c in ("linear", "step", "cubic")
    }
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # temporaries cleaned
    for name, clip in (("m00", "cubic"), ("m15", "linear")):
        single = tmp_path / f"{name}-{clip}.npz"
        bake_to_file(work / f"{name}.glb", single, animation=clip, fps=60, device=device)
        _assert_same_bake(out / f"{name}__{clip}.npz", single)


# ------------------------------------------------------------------------------------------------
# planning (no cluster, no GPU)
# ------------------------------------------------------------------------------------------------


def test_output_names_are_safe_and_unique(tmp_path):
    assert clip_labels(["walk", "", "run", "run", "rest"]) == [
        "walk",
        "#1",
        "run#2",
        "run#3",
        "rest#4",
    ]
    pairs = model_pairs(["Walk/Fast", "walk fast", "a:b"], "all", "hero", ".glb")
    assert [p.output for p in pairs] == [
        "hero__Walk_Fast-0.glb",
        "hero__walk_fast-1.glb",
        "hero__a_b.glb",
    ]
    assert [p.output for p in model_pairs([], "all", "prop", ".npz")] == ["prop__rest.npz"]
    (missing,) = [p for p in model_pairs(["x"], ["x", "y"], "m", ".npz") if p.error]
    assert missing.clip == "y" and "no animation 'y'" in missing.error
    a, b, c = tmp_path / "a" / "hero.glb", tmp_path / "b" / "Hero.gltf", tmp_path / "..weird.glb"
    stems = output_stems([a, b, c])
    assert stems[a].startswith("hero-") and stems[b].startswith("Hero-") and stems[a] != stems[b]
    assert stems[c] == "weird"


def test_the_digest_covers_a_gltf_buffer(tmp_path):
    _rig(tmp_path / "m.gltf", 2)
    digest, names = describe(tmp_path / "m.gltf")
    assert names == ["linear", "step"]
    with open(tmp_path / "m.bin", "r+b") as f:
        f.write(b"\x01")
    assert describe(tmp_path / "m.gltf")[0] != digest
    assert describe(tmp_path / "nothing.glb") == (None, None)


def test_the_manifest_is_not_written_through_a_link(tmp_path):
    from vkdqs import OutputError
    from vkdqs.files import AppendLog

    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    (tmp_path / "manifest.jsonl").symlink_to(target)
    with pytest.raises(OutputError, match="symbolic link"):
        AppendLog(tmp_path / "manifest.jsonl")
    assert target.read_bytes() == b"keep"
    with AppendLog(tmp_path / "log") as log, pytest.raises(OutputError, match="another vkdqs run"):
        log.append(b"{}")
        AppendLog(tmp_path / "log")


def test_a_file_many_uris_name_is_read_once(tmp_path, monkeypatch):
    """A hostile .gltf naming one large file from thousands of images costs one read of it
    (as the loader decodes a shared file once), not one per URI; the digest still changes with
    the file's content."""
    from vkdqs.baking import batch_plan

    (tmp_path / "big.bin").write_bytes(b"\1" * 4096)
    doc = {
        "asset": {"version": "2.0"},
        "buffers": [{"uri": "big.bin", "byteLength": 4096}],
        "images": [{"uri": "big.bin"} for _ in range(5000)],
    }
    (tmp_path / "m.gltf").write_text(json.dumps(doc))
    reads = []
    real = batch_plan._hash_file
    monkeypatch.setattr(
        batch_plan, "_hash_file", lambda path, h, **kw: reads.append(path) or real(path, h, **kw)
    )
    digest, names = describe(tmp_path / "m.gltf")
    assert names == [] and len(reads) == 2  # the .gltf, then big.bin once
    (tmp_path / "big.bin").write_bytes(b"\2" * 4096)
    assert describe(tmp_path / "m.gltf")[0] != digest


def test_listing_clips_reads_no_more_json_than_max_bytes(tmp_path, monkeypatch):
    """The client reads a model's JSON to list its clips only up to the batch's ``max_bytes``
    (a model the loader would refuse costs the client no more memory than loading it may);
    past it, the worker's loader refuses the model (a failed pair is retried on every run, so
    a digest without the external buffers it did not list never skips it)."""
    _rig(tmp_path / "m.gltf", 2)
    size = (tmp_path / "m.gltf").stat().st_size
    assert describe(tmp_path / "m.gltf", max_json=size)[1] == ["linear", "step"]
    digest, names = describe(tmp_path / "m.gltf", max_json=size - 1)
    assert names is None and digest is not None
    caps = []
    real = batch.describe
    monkeypatch.setattr(
        batch, "describe", lambda path, max_json: caps.append(max_json) or real(path, max_json)
    )
    options = {"method": "dqs", "fps": None, "start": None, "end": None, "format": ".npz"}
    for max_bytes, cap in ((None, batch.MAX_JSON_BYTES), (size - 1, size - 1)):
        caps.clear()
        model, out = [tmp_path / "m.gltf"], tmp_path / "out"
        jobs, _ = batch._plan(model, out, "all", options, {}, max_bytes)
        assert caps == [cap] and jobs[0]["labels"] == (None if max_bytes else ["linear", "step"])
