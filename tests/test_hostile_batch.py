"""Batch bakes (vkdqs.bake_batch, ``vkdqs bake ... --out-dir``) against hostile and careless input:
torn, duplicated, hand-edited and hostile manifest lines; an output folder that is a symbolic
link; a second run on a folder in use; a scheduler address that is not a Dask scheduler; a model
rewritten between planning and baking. Each ends in a one-line error or a correct result, with
nothing written outside the output folder.

Most cases never reach a worker (everything is skipped, or the run is refused first): those
replace ``batch._client`` with one that fails the test, so a planning mistake cannot quietly
start a cluster. The others share one LocalCluster of 1 worker (module fixture).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import distributed  # the test extra installs it (vkdqs[batch])
import pytest

from vkdqs import InputError, OutputError, bake_batch
from vkdqs.app import cli
from vkdqs.baking import batch
from vkdqs.baking.batch_plan import describe, pair_key

from .gltf_fixtures import make_rig

ROOT = Path(__file__).resolve().parents[1]
FPS = 5.0
LIMIT = 60.0
OPTIONS = {"method": "dqs", "fps": FPS, "start": None, "end": None, "format": ".npz"}


def _rig(path: Path, clips: int | None = 0, seed: int = 9) -> Path:
    rig = make_rig(scaled=False, seed=seed)
    if clips == 0:
        del rig.document["animations"]
    elif clips is not None:
        rig.document["animations"] = rig.document["animations"][:clips]
    rig.save(path)
    return path


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},  # as vkdqs's own: no fixed port
        silence_logs=40,
    ) as c:
        yield c


@pytest.fixture
def no_cluster(monkeypatch):
    """Fail the test if the batch tries to start or reach a cluster (it had nothing to do)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the batch started a cluster: planning did not skip the work")

    monkeypatch.setattr(batch, "_client", refuse)


def _done_line(model: Path, out: Path, size: int = 1234, **edits) -> dict:
    """A successful manifest line for ``model``'s rest pose, with a fake output of ``size``
    bytes in ``out`` (so the planner takes the pair as done)."""
    digest, _ = describe(model)
    target = out / f"{model.stem}__rest.npz"
    out.mkdir(exist_ok=True)
    target.write_bytes(b"\0" * size)
    line = {
        "input": str(model),
        "clip": "rest",
        "method": "dqs",
        "frames": 1,
        "output": str(target),
        "bytes": size,
        "seconds": 0.5,
        "error": None,
        "key": pair_key(digest, "rest", OPTIONS),
        "input_sha256": digest,
        "validation": [],
        "warnings": [],
    }
    line.update(edits)
    return line


def _encode(line: dict) -> bytes:
    return json.dumps(line).encode()


def _tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: a file's bytes, a link's target."""
    tree: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            tree[name] = f"-> {os.readlink(path)}"
        elif path.is_file():
            tree[name] = path.read_bytes()
    return tree


# ------------------------------------------------------------------------------------------------
# the manifest
# ------------------------------------------------------------------------------------------------


def test_hostile_manifest_lines_are_left_out_and_the_good_record_still_skips(tmp_path, no_cluster):
    """Around one good record: its duplicate, lines that are not JSON, invalid UTF-8, nesting
    past the recursion limit, a line of 8 MB, and later lines with the same key whose fields
    have the wrong types or are missing (each must be left out, not override the good one),
    and a torn last line. The run skips the pair with the good record's fields, appends nothing
    and only ends the torn line."""
    model = _rig(tmp_path / "m.glb")
    out = tmp_path / "out"
    good = _done_line(model, out)
    bad_types = [
        {"key": [good["key"]]},  # unhashable
        {"key": {"k": 1}},
        {"bytes": str(good["bytes"])},
        {"bytes": float(good["bytes"])},
        {"bytes": True},
        {"frames": "many"},
        {"frames": 1.5},
        {"seconds": {"s": 1}},
        {"seconds": "fast"},
        {"validation": 5},
        {"validation": "abc"},
        {"validation": [1, 2]},
        {"warnings": {"w": 1}},
        {"clip": 7},
        {"input": None},
        {"output": 5},
        {"error": 0},
    ]
    lines = [_encode(good), _encode(good)]
    lines += [b"not json", b"\xff\xfe\x80 invalid utf-8", b"[" * 100_000, b"{" * 50_000]
    lines += [b'{"input": "' + b"A" * 8_000_000 + b'"}', b"null", b"[]", b'"input"', b""]
    lines += [_encode({**good, **edit}) for edit in bad_types]
    missing = dict(good)
    del missing["output"]
    lines += [_encode(missing), _encode({"key": good["key"]})]
    torn = _encode(good)[:40]
    data = b"\n".join(lines) + b"\n" + torn
    (out / "manifest.jsonl").write_bytes(data)
    t0 = time.monotonic()
    report = bake_batch(model, out, fps=FPS, timeout=LIMIT)
    assert time.monotonic() - t0 < 15
    assert (report.baked, report.skipped, report.failed) == (0, 1, 0)
    (record,) = report.records
    assert (record.clip, record.frames, record.bytes, record.output) == (
        "rest",
        1,
        good["bytes"],
        good["output"],
    )
    assert record.validation == () and record.warnings == () and report.validation == []
    assert (out / "manifest.jsonl").read_bytes() == data + b"\n"  # the torn line ended, no more
    records = batch.read_manifest(out / "manifest.jsonl")
    assert len(records) == 3 and all(r.key == good["key"] for r in records)  # + no "output"


@pytest.mark.parametrize(
    "output",
    [
        "../victim.npz",
        "VICTIM",
        "/nonexistent-dir/m__rest.npz",
        "m__rest.npz",
        "out/../m__rest.npz",
    ],
)
def test_a_record_naming_another_path_is_not_a_skip_and_nothing_outside_is_touched(
    tmp_path, output
):
    """A hand-edited or hostile record with the pair's key but an output that is not the
    pair's (relative, outside the folder, another file of the right size) does not make the
    pair done, and planning (with its temporaries' clean-up) touches nothing outside."""
    model = _rig(tmp_path / "m.glb")
    out = tmp_path / "out"
    victim = tmp_path / "victim.npz"
    victim.write_bytes(b"\1" * 1234)
    if output == "VICTIM":
        output = str(victim)
    (tmp_path / ".m__rest.npz.x.tmp").write_bytes(b"not a temporary of out/")
    line = _done_line(model, out, output=output)
    (out / "manifest.jsonl").write_bytes(_encode(line) + b"\n")
    before = _tree(tmp_path)
    done = batch._done(batch.read_manifest(out / "manifest.jsonl"))
    jobs, skipped = batch._plan([model], out, "all", OPTIONS, done, None)
    assert skipped == {} and len(jobs) == 1 and jobs[0]["done"] == {line["key"]: (output, 1234, 1)}
    batch._clean_temporaries(out, jobs)
    assert _tree(tmp_path) == before


def test_duplicated_records_the_latest_success_wins(tmp_path, no_cluster):
    """The same pair recorded several times (a hand-merged manifest, runs that re-baked it):
    the latest successful record is the one that counts; a later failure does not undo it."""
    model = _rig(tmp_path / "m.glb")
    out = tmp_path / "out"
    old = _done_line(model, out, size=10)
    new = _done_line(model, out, size=20)
    failed = {**new, "output": None, "bytes": None, "error": "it failed"}
    lines = [old, new, failed, new, failed]  # the latest success: 20 bytes, the output's size
    (out / "manifest.jsonl").write_bytes(b"\n".join(map(_encode, lines)) + b"\n")
    report = bake_batch(model, out, fps=FPS, timeout=LIMIT)
    assert report.skipped == 1 and report.records[0].bytes == 20


# ------------------------------------------------------------------------------------------------
# the output folder
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dangling", "file", "fifo"])
def test_an_output_folder_that_is_a_link_to_no_folder_is_refused(tmp_path, capsys, kind):
    model = _rig(tmp_path / "m.glb")
    target = tmp_path / "target"
    if kind == "file":
        target.write_bytes(b"keep")
    elif kind == "fifo":
        os.mkfifo(target)
    link = tmp_path / "out"
    link.symlink_to(target)
    before = _tree(tmp_path)
    with pytest.raises(OutputError):
        bake_batch(model, link, fps=FPS, timeout=LIMIT)
    status = cli.main(["bake", str(model), "--out-dir", str(link), "--fps", "5"])
    err = capsys.readouterr().err
    assert status == 1 and len(err.splitlines()) == 1 and err.startswith("vkdqs: error: ")
    assert _tree(tmp_path) == before and not target.is_dir()


@pytest.mark.gpu
def test_an_output_folder_that_is_a_link_to_a_folder_is_written_there(tmp_path, cluster):
    """A link to a folder is the folder (as mkdir -p and cp take it): the outputs and the
    manifest land in it, nothing beside it; a second run through the link skips."""
    model = _rig(tmp_path / "m.glb")
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "out"
    link.symlink_to(real)
    run = dict(fps=FPS, scheduler=cluster.scheduler_address, timeout=LIMIT)
    report = bake_batch(model, link, **run)
    assert (report.baked, report.failed) == (1, 0), report.records
    assert sorted(p.name for p in real.iterdir()) == ["m__rest.npz", "manifest.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.glb", "out", "real"]
    assert bake_batch(model, link, **run).skipped == 1


# ------------------------------------------------------------------------------------------------
# two runs on one folder
# ------------------------------------------------------------------------------------------------

_HOLD = """
import sys, time
from vkdqs.files import AppendLog
with AppendLog(sys.argv[1]):
    print("held", flush=True)
    time.sleep(30)
"""


def test_a_second_run_on_a_folder_in_use_is_refused_and_changes_nothing(tmp_path, capsys):
    """Another process (a run) holds the manifest's lock: a second run, API or CLI, is refused
    with one line before it plans, cleans temporaries or bakes; the folder is unchanged."""
    model = _rig(tmp_path / "m.glb")
    out = tmp_path / "out"
    out.mkdir()
    temporary = out / ".m__rest.npz.abc.tmp"  # the running batch's, being written
    temporary.write_bytes(b"half")
    (out / "manifest.jsonl").write_bytes(b'{"input": "x"}\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out / "manifest.jsonl")],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        before = _tree(tmp_path)
        with pytest.raises(OutputError, match="in use by another vkdqs run"):
            bake_batch(model, out, fps=FPS, timeout=LIMIT)
        status = cli.main(["bake", str(model), "--out-dir", str(out), "--fps", "5"])
        err = capsys.readouterr().err
        assert status == 1 and len(err.splitlines()) == 1
        assert err.startswith("vkdqs: error: ") and "another vkdqs run" in err
        assert _tree(tmp_path) == before
    finally:
        holder.kill()
        holder.wait()


# ------------------------------------------------------------------------------------------------
# the scheduler
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def silent_port():
    """A TCP port that accepts connections and never says anything."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.gpu  # its worker bakes on a device
def test_a_batch_while_port_8787_is_taken_says_nothing_about_ports(tmp_path, recwarn):
    """Two batches on one machine (or a batch beside a Dask dashboard): vkdqs's own cluster binds
    no fixed port, so nothing warns that 8787, Dask's default, is in use."""
    taken = socket.socket()
    try:
        taken.bind(("", 8787))
        taken.listen(1)
    except OSError:
        pass  # another process holds it: the same case
    try:
        report = bake_batch(
            _rig(tmp_path / "m.glb"), tmp_path / "out", fps=FPS, jobs=1, timeout=LIMIT
        )
    finally:
        taken.close()
    assert report.ok and report.baked >= 1
    assert not [w for w in recwarn if "already in use" in str(w.message)]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("where", ["silent", "closed", "worker", "http", "garbage"])
def test_a_scheduler_that_is_not_one_fails_clearly_and_soon(
    tmp_path, capsys, monkeypatch, cluster, silent_port, where
):
    """A port that accepts and says nothing (distributed.Client waits forever for its
    handshake), a closed port, a Dask worker's address, another scheme, no address: one
    InputError within the connect timeout (the CLI: one line, status 1); nothing is baked."""
    monkeypatch.setattr(batch, "CONNECT_TIMEOUT", 2.0)
    model = _rig(tmp_path / "m.glb")
    out = tmp_path / "out"
    address = {
        "silent": f"tcp://127.0.0.1:{silent_port}",
        "closed": f"tcp://127.0.0.1:{_closed_port()}",
        "worker": next(iter(cluster.scheduler_info["workers"])),
        "http": "http://127.0.0.1:8787",
        "garbage": "not an address:::",
    }[where]
    message = "is not a Dask scheduler" if where == "worker" else "cannot reach the Dask scheduler"
    t0 = time.monotonic()
    with pytest.raises(InputError, match=message):
        bake_batch(model, out, fps=FPS, scheduler=address)
    assert time.monotonic() - t0 < 8
    status = cli.main(["bake", str(model), "--out-dir", str(out), "--scheduler", address])
    err = capsys.readouterr().err
    assert status == 1 and len(err.splitlines()) == 1, err
    assert err.startswith("vkdqs: error: ") and message in err
    assert [p.name for p in out.iterdir()] == ["manifest.jsonl"]
    assert (out / "manifest.jsonl").read_bytes() == b""


# ------------------------------------------------------------------------------------------------
# a model that changes between planning and baking
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["rewritten", "deleted", "truncated"])
def test_a_model_changed_after_planning_is_not_recorded_under_the_old_key(
    tmp_path, monkeypatch, cluster, change
):
    """The model is rewritten (another rig), deleted or truncated after the client hashed it
    and before the worker loads it: its pairs are failed records (tried again next run), never
    an output recorded under the old content's key; nothing is written."""
    model = _rig(tmp_path / "m.glb", clips=2, seed=9)
    out = tmp_path / "out"
    real = batch._clean_temporaries
    calls = []

    def then_change(folder, jobs):  # first called between the plan and the bake
        real(folder, jobs)
        calls.append(jobs)
        if len(calls) > 1:
            return  # after a job's task ended
        if change == "rewritten":
            _rig(model, clips=2, seed=11)
        elif change == "deleted":
            model.unlink()
        else:
            model.write_bytes(model.read_bytes()[:100])

    monkeypatch.setattr(batch, "_clean_temporaries", then_change)
    report = bake_batch(model, out, fps=FPS, scheduler=cluster.scheduler_address, timeout=LIMIT)
    assert report.failed == 2 and report.baked == 0, report.records
    assert {r.clip for r in report.records} == {"linear", "step"}
    errors = {r.error for r in report.records}
    assert len(errors) == 1
    (error,) = errors
    assert "\n" not in error and "Traceback" not in error
    if change == "rewritten":
        assert "changed while the batch ran" in error
    assert [p.name for p in out.iterdir()] == ["manifest.jsonl"]
    lines = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and all(x["error"] == error and x["output"] is None for x in lines)
