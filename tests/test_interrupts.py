"""Ctrl-C during GPU work leaves every object usable and correct.

Each case runs in its own process (a crash must not take pytest with it): a Skinner runs
``skin_many`` over a few hundred poses of a 20k-vertex tube (several submissions of
``max_batch_bytes``, the last one smaller, so the command buffer is re-recorded as it goes) and
SIGINT arrives at varied delays, from a timer in the process or from this one as a terminal's
Ctrl-C would. After each interrupt the same Skinner skins other poses and its positions and
normals are compared with the float64 reference. Before interrupts were deferred over the GPU
work (vkdqs.gpu.interrupts), such a run crashed (SIGSEGV or SIGABRT) or returned stale
positions; the validation layer is on in the child as in the suite.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
POSES, VERTICES, BONES = 600, 20_000, 16

_CHILD = """
import json, os, signal, sys, threading, time
import numpy as np
from vkdqs import Device, dq, procedural, reference
from vkdqs.engine.skinner import Skinner

method, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
poses, vertices, bones = (int(x) for x in sys.argv[4:7])
delays = [float(x) for x in sys.argv[7].split(",")]
mesh = procedural.tube(vertices, bone_count=bones, influences=4)
rng = np.random.default_rng(1)
batch = dq.random_rigid(poses * bones, rng).reshape(poses, bones, 2, 4)
check = dq.random_rigid(3 * bones, rng).reshape(3, bones, 2, 4)
skin_ref = reference.skin_dqs
if method == "lbs":
    batch, check, skin_ref = dq.to_matrices(batch), dq.to_matrices(check), reference.skin_lbs
args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
want = [skin_ref(*args, c) for c in check]


def error(skinner):
    p, n = skinner.skin_many(check)
    one_p, one_n = skinner.skin(check[1])
    worst = max(
        max(np.abs(p[k] - want[k][0]).max(), np.abs(n[k] - want[k][1]).max()) for k in range(3)
    )
    return float(max(worst, np.abs(one_p - want[1][0]).max(), np.abs(one_n - want[1][1]).max()))


def settle():
    for _ in range(100000):  # a signal sent meanwhile is raised here, inside the try
        pass


validation = os.environ.get("VKDQS_VALIDATION") == "1"
with Device(validation=validation) as dev:
    skinner = Skinner(dev, mesh, bone_count=bones, method=method, path=path)
    skinner.skin(check[0])  # the pipelines exist before the first interrupt
    for i, delay in enumerate(delays):
        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        outcome = "interrupted"
        try:
            if mode == "timer":
                timer.start()
            else:
                print(f"go {i}", flush=True)  # the parent sends SIGINT after `delay`
            skinner.skin_many(batch)
            outcome = "finished"
            if mode == "timer":
                timer.cancel()
                timer.join()
                settle()
            else:
                time.sleep(30)  # the parent's signal is on its way: it ends this sleep
        except KeyboardInterrupt:
            pass
        timer.cancel()
        err = None
        for _ in range(3):  # a late signal during the check: check again
            try:
                err = error(skinner)
                break
            except KeyboardInterrupt:
                continue
        print(json.dumps({"delay": delay, "outcome": outcome, "error": err}), flush=True)
    skinner.close()
    messages = [m.message for m in dev.take_messages()]
print(json.dumps({"validation": messages}), flush=True)
"""


def _child(method: str, path: str, mode: str, delays: list[float]) -> subprocess.Popen:
    args = [method, path, mode, str(POSES), str(VERTICES), str(BONES)]
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, *args, ",".join(str(d) for d in delays)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _check(lines: list[str], returncode: int, stderr: str, count: int) -> None:
    assert returncode == 0, f"the child died with {returncode}:\n{stderr[-3000:]}"
    runs = [json.loads(line) for line in lines if line.startswith('{"delay"')]
    (tail,) = [json.loads(line) for line in lines if line.startswith('{"validation"')]
    assert len(runs) == count, lines
    assert tail["validation"] == [], tail["validation"]
    # positions are at most ~10 from the origin: float32 skinning within 1e-4 of the reference
    for run in runs:
        assert run["error"] is not None and run["error"] < 1e-4, run
    assert any(run["outcome"] == "interrupted" for run in runs), runs


@pytest.mark.gpu
@pytest.mark.parametrize(("method", "path"), [("dqs", "compute"), ("lbs", "vertex")])
def test_sigint_during_skin_many_leaves_the_skinner_correct(method, path):
    """SIGINT from a timer in the process at 14 delays across the run (a run takes about a
    second), then the same Skinner against the float64 reference."""
    delays = [0.0, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0]
    with _child(method, path, "timer", delays) as proc:
        out, err = proc.communicate(timeout=300)
    _check(out.splitlines(), proc.returncode, err, len(delays))


@pytest.mark.gpu
def test_ctrl_c_from_outside_during_skin_many():
    """SIGINT sent by another process, as a terminal sends Ctrl-C, each time the child starts a
    ``skin_many``, after varied delays (a run that finishes first waits for it)."""
    delays = [0.05, 0.13, 0.27, 0.41, 0.6]
    lines: list[str] = []
    with _child("dqs", "compute", "parent", delays) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line.strip())
                if lines[-1].startswith("go "):
                    time.sleep(delays[int(lines[-1].split()[1])])
                    proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err = proc.stderr.read()
    _check(lines, proc.returncode, err, len(delays))
