"""The worker side of :func:`vkdqs.bake_batch`: the task that bakes one model's clips, and the
Dask worker plugin that gives each worker process one vkdqs :class:`~vkdqs.gpu.Device`.

Imported only where ``distributed`` is installed (by :mod:`vkdqs.baking.batch` after its check,
and by the workers when they unpickle a task, which names its function by reference: the workers
need the same vkdqs installed).

One task per model: it loads the model once, lists its clips, skips the pairs the manifest says
are done and bakes the others, one after another, on the worker's Device. Every error of a pair
(a malformed file, a clip the model lacks, an output that cannot be written) becomes that pair's
record; nothing a model does stops the batch. What the worker's Device logs to ``vkdqs.validation``
while the task runs (validation layer messages) is returned with the records, as are warnings.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin, get_worker

from .batch_plan import describe, model_pairs, pair_key

#: The plugin's name on the workers (registering it again replaces it: the old Device closes);
#: :func:`vkdqs.bake_batch` registers one per batch, named ``<PLUGIN>-<random hex>``.
PLUGIN = "vkdqs-device"


class DevicePlugin(WorkerPlugin):
    """One :class:`~vkdqs.gpu.Device` per worker process: opened by the first task that needs
    it and reused by every later one; closed when the worker closes or the plugin is removed
    (:meth:`teardown`). A lock lets one task at a time use it (a worker with several threads)."""

    name = PLUGIN

    def __init__(self, device: str | int | None = None) -> None:
        self.selector = device
        self.device: Any = None
        #: Devices this plugin opened (1 once a task has run: the Device is reused)
        self.opened = 0
        self.lock = threading.Lock()

    def setup(self, worker: Any = None) -> None:
        """On the worker: no Device yet (the first task opens it)."""
        self.device, self.opened, self.lock = None, 0, threading.Lock()

    def get(self) -> Any:
        """The worker's Device, opened on first use (hold :attr:`lock`)."""
        if self.device is None or self.device.closed:
            from ..gpu import Device

            self.device = Device(device=self.selector)
            self.opened += 1
        return self.device

    def teardown(self, worker: Any = None) -> None:
        """On the worker, closing or removing the plugin: close the Device (after the task
        using it)."""
        with self.lock:
            if self.device is not None:
                self.device.close()
                self.device = None

    def __getstate__(self) -> dict:  # only the selector travels to the workers
        return {"selector": self.selector}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["selector"])


class _Captured(logging.Handler):
    """Collects the messages logged to ``vkdqs.validation`` while a task runs."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _plugin(name: str = PLUGIN) -> DevicePlugin:
    try:
        plugin = get_worker().plugins.get(name)
    except ValueError:  # not on a worker (called directly): a plugin of its own
        plugin = None
    if plugin is None:
        raise RuntimeError(f"the {name} worker plugin is not registered on this worker")
    return plugin


def _error(exc: BaseException) -> str:
    from ..errors import VkdqsError

    if isinstance(exc, VkdqsError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"{type(exc).__name__}: {exc}"


def bake_model(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Bake one model's requested clips (``job``, made by :mod:`vkdqs.baking.batch`); returns one
    record per (model, clip) pair: the manifest's fields plus ``skipped``, ``validation`` and
    ``warnings`` lists and ``worker`` (the process id)."""
    plugin = _plugin(job.get("plugin", PLUGIN))
    log = logging.getLogger("vkdqs.validation")
    captured = _Captured()
    log.addHandler(captured)
    if log.level == logging.NOTSET or log.level > logging.WARNING:
        log.setLevel(logging.WARNING)
    try:
        with plugin.lock, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            records = _bake(job, plugin)
            if plugin.device is not None and not plugin.device.closed:
                plugin.device.take_messages()  # counted through the log; keep the list short
    finally:
        log.removeHandler(captured)
    said = [str(w.message) for w in caught]
    for r in records:
        r["validation"], r["warnings"] = list(captured.messages), said
        r["worker"], r["device_opens"] = os.getpid(), plugin.opened
    return records


def _bake(job: dict[str, Any], plugin: DevicePlugin) -> list[dict[str, Any]]:
    from ..gltf import load_gltf
    from .driver import bake_to_file

    path = Path(job["input"])
    opts = job["options"]
    t0 = time.perf_counter()

    def record(clip: str | None, key: str | None, **fields: Any) -> dict[str, Any]:
        base = {
            "input": str(path),
            "clip": clip,
            "method": opts["method"],
            "frames": None,
            "output": None,
            "bytes": None,
            "seconds": round(time.perf_counter() - t0, 6),
            "error": None,
            "key": key,
            "input_sha256": job["digest"],
            "skipped": False,
        }
        base.update(fields)
        return base

    def planned(error: str) -> list[dict[str, Any]]:  # the model's error, every planned pair's
        names = job["labels"]
        pairs = (
            [] if names is None else model_pairs(names, job["clips"], job["stem"], job["suffix"])
        )
        if not pairs:
            return [record(None, None, error=error)]
        return [record(p.clip, pair_key(job["digest"], p.clip, opts), error=error) for p in pairs]

    try:
        scene = load_gltf(path, max_bytes=job["max_bytes"])
    except Exception as exc:
        return planned(_error(exc))
    # what was loaded must be what the client planned (and keyed) from: a model rewritten in
    # between would be recorded under the old content's key, and skipped when that comes back
    if describe(path, job["max_json"])[0] != job["digest"]:
        return planned(f"{path.name}: changed while the batch ran; not baked (run it again)")
    labels = [a.name for a in scene.animations]
    out: list[dict[str, Any]] = []
    forbidden = {os.path.realpath(p) for p in job["forbidden"]}
    for pair in model_pairs(labels, job["clips"], job["stem"], job["suffix"]):
        key = pair_key(job["digest"], pair.clip, opts)
        t0 = time.perf_counter()
        if pair.error is not None:
            out.append(record(pair.clip, key, error=f"{path.name}: {pair.error}"))
            continue
        target = Path(job["out_dir"]) / pair.output
        done = job["done"].get(key) if key else None
        if done is not None and done[0] == str(target) and _size(target) == done[1]:
            out.append(
                record(
                    pair.clip, key, output=str(target), bytes=done[1], frames=done[2], skipped=True
                )
            )
            continue
        if os.path.realpath(target) in forbidden:
            error = f"{target}: is one of the batch's models; it is not overwritten"
            out.append(record(pair.clip, key, error=error))
            continue
        try:
            info = bake_to_file(
                scene,
                target,
                animation=pair.animation,
                fps=opts["fps"],
                method=opts["method"],
                start=opts["start"],
                end=opts["end"],
                device=plugin.get(),
            )
        except Exception as exc:
            out.append(record(pair.clip, key, error=_error(exc)))
            continue
        out.append(
            record(
                pair.clip,
                key,
                frames=info.frames,
                output=str(info.path),
                bytes=_size(info.path),
                seconds=round(info.seconds, 6),
            )
        )
    return out


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None
