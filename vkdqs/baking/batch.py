"""Batch baking: many models, each with its clips, baked on a Dask cluster into one folder, with a
manifest that a later run reads to skip what is done (:func:`bake_batch`; ``vkdqs bake`` with
several models or ``--out-dir``).

The work runs on ``dask.distributed`` (the ``batch`` extra): a :class:`distributed.LocalCluster`
of ``jobs`` worker processes (one thread each) by default, or the cluster behind ``scheduler``.
Each worker process opens one vkdqs Device, on its first task, and reuses it for every later one
(:class:`~vkdqs.baking.batch_worker.DevicePlugin`; closed when the worker closes or the batch
ends). One task per model (:func:`~vkdqs.baking.batch_worker.bake_model`) loads it once and
bakes each of its requested clips: loading is paid once a model, not once a clip.

The manifest, ``<out_dir>/manifest.jsonl``, holds one JSON object a line per (model, clip) pair
baked or failed: ``input``, ``clip``, ``method``, ``frames``, ``output``, ``bytes``, ``seconds``,
``error`` (null on success), ``key``, ``input_sha256``, ``validation`` and ``warnings``. Lines are
appended as models finish, each whole and fsynced (:class:`vkdqs.files.AppendLog`), so a run
killed at any moment leaves every finished pair recorded. A pair is skipped when a successful
record has its key (:mod:`~vkdqs.baking.batch_plan`: the input's content and the options that
change the output) and the output it names is the pair's and still has the recorded size;
failed pairs are tried again.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import logging
import math
import os
import shutil
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import methods
from ..errors import CapabilityError, InputError
from ..files import _NAME_CHARS, AppendLog, read_lines
from .batch_plan import MAX_JSON_BYTES, describe, model_pairs, output_stems, pair_key
from .driver import FORMATS, MAX_FPS

#: The manifest's name in the output folder.
MANIFEST = "manifest.jsonl"
#: What a folder given as a model means: its files with these extensions (not recursive).
MODEL_SUFFIXES = (".gltf", ".glb")
BATCH_HINT = "batch baking needs dask.distributed: pip install 'vkdqs[batch]'"
#: Worker deaths a task survives before it is recorded as failed (Dask retries it on another).
ALLOWED_FAILURES = 1
#: Times a finished task's result may be lost (its worker died before the result was fetched,
#: and the scheduler computed it again) before the task is recorded as failed.
MAX_LOST_RESULTS = 5
#: Seconds a scheduler (``scheduler=``) has to answer when the batch connects to it.
CONNECT_TIMEOUT = 20.0
#: The fields of a manifest line, in order.
FIELDS = (
    "input",
    "clip",
    "method",
    "frames",
    "output",
    "bytes",
    "seconds",
    "error",
    "key",
    "input_sha256",
    "validation",
    "warnings",
)
_log = logging.getLogger("vkdqs.validation")


@dataclass(frozen=True)
class BatchRecord:
    """One (model, clip) pair of a batch: a manifest line, and whether this run skipped it.

    ``clip`` is None for a model whose clips could not be listed (it failed to load);
    ``validation`` holds what the worker's Device logged to ``vkdqs.validation`` during the
    model's task (empty on a clean run); ``warnings`` what vkdqs warned about there.
    """

    input: str
    clip: str | None
    method: str
    frames: int | None
    output: str | None
    bytes: int | None
    seconds: float
    error: str | None
    key: str | None
    input_sha256: str | None = None
    validation: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: True: done by an earlier run (this record is that run's)
    skipped: bool = False
    #: the worker process that baked it, and the Devices that worker had opened by then (1:
    #: its one Device, reused); not in the manifest
    worker: int | None = None
    device_opens: int | None = None

    @classmethod
    def of(cls, data: dict[str, Any], *, skipped: bool = False) -> BatchRecord:
        """The record of a manifest line's (or a worker's) JSON object."""
        values = {k: data.get(k) for k in FIELDS}
        values["validation"] = tuple(values["validation"] or ())
        values["warnings"] = tuple(values["warnings"] or ())
        values["seconds"] = float(values["seconds"] or 0.0)
        return cls(
            **values,
            skipped=skipped,
            worker=data.get("worker"),
            device_opens=data.get("device_opens"),
        )

    def line(self) -> bytes:
        """The manifest line (JSON, ASCII, no line break)."""
        data = {k: getattr(self, k) for k in FIELDS}
        data["validation"], data["warnings"] = list(self.validation), list(self.warnings)
        return json.dumps(data, ensure_ascii=True, allow_nan=False).encode("ascii")


@dataclass(frozen=True)
class BatchReport:
    """What :func:`bake_batch` did: every (model, clip) pair's record, in the models' order."""

    records: tuple[BatchRecord, ...]
    manifest: Path
    seconds: float
    #: worker processes that baked (pids)
    workers: tuple[int, ...] = field(default=())

    @property
    def baked(self) -> int:
        """Pairs this run baked."""
        return sum(1 for r in self.records if r.error is None and not r.skipped)

    @property
    def skipped(self) -> int:
        """Pairs an earlier run had baked (left as they were)."""
        return sum(1 for r in self.records if r.skipped)

    @property
    def failed(self) -> int:
        """Pairs that failed (their records say why)."""
        return sum(1 for r in self.records if r.error is not None)

    @property
    def ok(self) -> bool:
        """No pair failed."""
        return self.failed == 0

    @property
    def validation(self) -> list[str]:
        """Validation messages the workers' Devices logged (each model's task once)."""
        seen: dict[tuple[str, ...], None] = {}
        for r in self.records:
            if r.validation:
                seen[(r.input, *r.validation)] = None
        return [m for key in seen for m in key[1:]]

    def summary(self) -> str:
        """One line: baked, skipped, failed, the time and the manifest."""
        return (
            f"baked {self.baked}, skipped {self.skipped}, failed {self.failed} "
            f"({len(self.records)} model/clip pairs, {self.seconds:.1f} s); "
            f"manifest: {self.manifest}"
        )


def import_distributed() -> Any:
    """Import ``distributed``, or raise a CapabilityError naming the ``batch`` extra."""
    try:
        import distributed
    except ImportError as exc:
        raise CapabilityError(f"{BATCH_HINT} ({exc})") from None
    return distributed


def default_jobs() -> int:
    """Worker processes of a local cluster by default: the CPUs, at most 4 (lavapipe uses
    several threads a Device; a real GPU is shared by the workers anyway)."""
    return max(1, min(os.cpu_count() or 1, 4))


def find_models(models: Iterable[str | Path], out_dir: Path | None = None) -> list[Path]:
    """The model files ``models`` names, as absolute paths, in order, each once.

    A folder means its ``*.gltf`` and ``*.glb`` files (not its subfolders'); a name with glob
    characters (``*``, ``?``, ``[``) the files it matches with those extensions (``**`` matches
    subfolders too); anything else is the file it names (a missing one is the model's error).
    Folders and globs leave out files inside ``out_dir`` (a previous batch's ``.glb`` outputs).
    """
    skip = os.path.realpath(out_dir) if out_dir is not None else None
    found: dict[str, Path] = {}
    for item in models:  # over the names given
        text = os.fspath(item)
        if os.path.isdir(text):
            names = sorted(os.path.join(text, n) for n in os.listdir(text))
        elif any(c in text for c in "*?["):
            names = sorted(glob.glob(text, recursive=True))
            if not names:
                raise InputError(f"{text}: no file matches")
        else:
            path = Path(os.path.abspath(text))
            found.setdefault(str(path), path)
            continue
        for name in names:  # over a folder's or a glob's files
            real = os.path.realpath(name)
            if Path(name).suffix.lower() not in MODEL_SUFFIXES or not os.path.isfile(name):
                continue
            if skip is not None and os.path.commonpath([skip, real]) == skip:
                continue
            path = Path(os.path.abspath(name))
            found.setdefault(str(path), path)
    return list(found.values())


def read_manifest(path: str | Path) -> list[BatchRecord]:
    """The records of a manifest, oldest first; lines that are not records (a torn last line
    of a killed run, a hand-edited line whose fields do not have their types) are left out."""
    records = []
    for raw in read_lines(path):  # over lines
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deep
            continue
        if isinstance(data, dict) and _well_typed(data):
            records.append(BatchRecord.of(data))
    return records


#: The fields a manifest line may leave out (older runs', or null), and what the others hold.
_TEXT = ("input", "method")
_OPTIONAL_TEXT = ("clip", "output", "error", "key", "input_sha256")
_COUNTS = ("frames", "bytes")
_MESSAGES = ("validation", "warnings")


def _well_typed(data: dict[str, Any]) -> bool:
    """Whether a manifest line's fields have their types (a hand-edited line may not: left
    out, as a line that is not JSON is, rather than acted on)."""

    def count(v: Any) -> bool:
        return v is None or (type(v) is int and v >= 0)

    seconds = data.get("seconds")
    if type(seconds) is int:  # (a float may not hold a huge one)
        seconds = float(seconds) if seconds < 2**53 else -1.0
    return (
        all(isinstance(data.get(k), str) for k in _TEXT)
        and all(isinstance(data.get(k), (str, type(None))) for k in _OPTIONAL_TEXT)
        and all(count(data.get(k)) for k in _COUNTS)
        and (
            seconds is None or (type(seconds) is float and math.isfinite(seconds) and seconds >= 0)
        )
        and all(
            data.get(k) is None
            or (isinstance(data[k], list) and all(isinstance(m, str) for m in data[k]))
            for k in _MESSAGES
        )
    )


def _format(fmt: str) -> str:
    suffix = fmt.lower() if fmt.startswith(".") else f".{fmt.lower()}"
    if suffix not in FORMATS:
        raise InputError(f"cannot bake to {fmt!r}; use one of {', '.join(FORMATS)}")
    return suffix


def _options(method: str, fps: float, start: float | None, end: float | None, fmt: str) -> dict:
    methods.get(method)  # InputError naming the methods
    try:
        fps = float(fps)
        start = None if start is None else float(start)
        end = None if end is None else float(end)
    except (TypeError, ValueError) as exc:
        raise InputError(f"fps, start and end must be numbers: {exc}") from None
    if not (math.isfinite(fps) and 0.0 < fps <= MAX_FPS):
        raise InputError(f"fps must be within (0, {MAX_FPS:g}], got {fps!r}")
    for name, value in (("start", start), ("end", end)):
        if value is not None and not (math.isfinite(value) and value >= 0.0):
            raise InputError(f"{name} must be a finite time >= 0 seconds, got {value!r}")
    if start is not None and end is not None and end < start:
        raise InputError(f"end ({end:g} s) is before start ({start:g} s)")
    return {"method": method, "fps": fps, "start": start, "end": end, "format": fmt}


def _clips(clips: str | Sequence[str]) -> str | list[str]:
    if isinstance(clips, str):
        if clips == "all":
            return "all"
        clips = [c.strip() for c in clips.split(",")]
    names = [c for c in clips if c]
    if not names:
        raise InputError("clips: name at least one clip, or 'all'")
    return names


def bake_batch(
    models: str | Path | Iterable[str | Path],
    out_dir: str | Path,
    *,
    clips: str | Sequence[str] = "all",
    format: str = ".npz",
    method: str = "dqs",
    fps: float = 30.0,
    start: float | None = None,
    end: float | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    device: str | int | None = None,
    max_bytes: int | None = None,
    progress: bool = False,
    timeout: float | None = None,
) -> BatchReport:
    """Bake every (model, clip) pair of many models into ``out_dir``, on a Dask cluster.

    Each pair is written to ``out_dir/<model stem>__<clip>.<format>`` (see
    :mod:`~vkdqs.baking.batch_plan` for how names are made unique) as :func:`bake_to_file`
    writes it, and recorded in ``out_dir/manifest.jsonl``; pairs an earlier run baked with the
    same input content and options are skipped. A pair that fails (a malformed model, a clip it
    lacks, an output that cannot be written, its worker dying twice) is recorded with its error
    and the batch goes on.

    Parameters
    ----------
    models : path, or iterable of paths, folders and globs
        Model files (``.gltf``, ``.glb``); a folder means its ``*.gltf`` and ``*.glb`` (not
        recursive); a glob its matches (``**``: recursive). See :func:`find_models`.
    out_dir : path
        Created when missing. Workers write here: on a cluster it must be the same path on
        every worker's machine, as must the models.
    clips : "all", or clip names (a list, or one string joined by commas)
        "all": every animation of each model (a model without any: its rest pose, clip
        ``rest``). A name the model lacks is that pair's error.
    format : str
        ``npz``, ``glb``, ``usd``, ``usda`` or ``usdc`` (with or without the dot).
    method, fps, start, end
        As :func:`bake_to_file` takes them (start and end: each clip's range; default the
        whole clip).
    jobs : int, optional
        Worker processes of the local cluster (default :func:`default_jobs`); unused with
        ``scheduler``.
    scheduler : str, optional
        The address of a running Dask scheduler (``tcp://host:8786``): the work goes to its
        workers instead of a local cluster.
    device : str or int, optional
        The Vulkan device each worker opens (a name substring or index).
    max_bytes : int, optional
        As :func:`~vkdqs.load_gltf` takes it.
    progress : bool
        One tqdm bar over all pairs, on stderr.
    timeout : float, optional
        Seconds the whole batch may take: pairs not done by then are recorded as failed.

    Returns
    -------
    BatchReport

    Raises
    ------
    CapabilityError
        ``distributed`` is not installed (the ``batch`` extra); USD without usd-core.
    InputError
        Bad options, no models, a glob that matches nothing, an unreachable scheduler.
    OutputError
        ``out_dir`` cannot be made, or its manifest written, or another run is using it.
    """
    t0 = time.perf_counter()
    distributed = import_distributed()
    fmt = _format(format)
    options = _options(method, fps, start, end, fmt)
    selection = _clips(clips)
    if fmt in (".usd", ".usda", ".usdc"):
        from .usd import import_pxr

        import_pxr()
    if jobs is not None and not (isinstance(jobs, int) and jobs >= 1):
        raise InputError(f"jobs must be a whole number >= 1, got {jobs!r}")
    out = Path(os.path.abspath(out_dir))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from ..files import output_error

        raise output_error(exc, out, existed=False) from None
    if isinstance(models, (str, os.PathLike)):
        models = [models]
    paths = find_models(models, out)
    if not paths:
        raise InputError("no models to bake (name .gltf or .glb files, folders or globs)")
    manifest = out / MANIFEST
    with AppendLog(manifest) as log:
        done = _done(read_manifest(manifest))
        work, skipped = _plan(paths, out, selection, options, done, max_bytes)
        _clean_temporaries(out, work)
        records, workers = _run(
            distributed, work, skipped, log, jobs, scheduler, device, progress, timeout, t0
        )
    return BatchReport(tuple(records), manifest, time.perf_counter() - t0, workers)


def _done(records: list[BatchRecord]) -> dict[str, BatchRecord]:
    """The latest successful record of each key."""
    done: dict[str, BatchRecord] = {}
    for r in records:  # over the manifest's records, oldest first
        if r.key is not None and r.error is None and r.output is not None and r.bytes is not None:
            done[r.key] = r
    return done


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _plan(
    paths: list[Path],
    out: Path,
    selection: str | list[str],
    options: dict,
    done: dict[str, BatchRecord],
    max_bytes: int | None,
) -> tuple[list[dict], dict[int, list[BatchRecord]]]:
    """The workers' jobs (one per model with a pair to do) and, per model index, the records of
    its pairs that are done (a model whose pairs are all done gets no job)."""
    stems = output_stems(paths)
    inputs = {os.path.realpath(p) for p in paths}
    forbidden = [p for p in inputs if os.path.dirname(p) == os.path.realpath(out)]
    jobs: list[dict] = []
    skipped: dict[int, list[BatchRecord]] = {}
    max_json = MAX_JSON_BYTES if max_bytes is None else min(max_bytes, MAX_JSON_BYTES)
    for i, path in enumerate(paths):  # over models
        digest, names = describe(path, max_json)
        pairs = (
            None if names is None else model_pairs(names, selection, stems[path], options["format"])
        )
        job = {
            "index": i,
            "input": str(path),
            "digest": digest,
            "labels": names,
            "clips": selection,
            "stem": stems[path],
            "suffix": options["format"],
            "options": options,
            "out_dir": str(out),
            "forbidden": forbidden,
            "max_bytes": max_bytes,
            "max_json": max_json,
            "pairs": 1 if pairs is None else len(pairs),
            "outputs": [] if pairs is None else [p.output for p in pairs],
        }
        if pairs is not None and digest is not None:
            ready = []
            for p in pairs:  # over the model's pairs
                key = pair_key(digest, p.clip, options)
                target = str(out / p.output)
                hit = done.get(key) if key is not None and p.error is None else None
                if hit is None or hit.output != target or _size(target) != hit.bytes:
                    break
                ready.append(dataclasses.replace(hit, input=str(path), skipped=True))
            else:  # every pair done: no job
                skipped[i] = ready
                continue
            keys = [pair_key(digest, p.clip, options) for p in pairs]
            job["done"] = {
                k: (done[k].output, done[k].bytes, done[k].frames)
                for k in keys
                if k is not None and k in done
            }
        else:
            job["done"] = {}
        jobs.append(job)
    return jobs, skipped


def _clean_temporaries(out: Path, jobs: list[dict]) -> None:
    """Remove what a killed run or worker left of these jobs' outputs: the temporaries
    (``.<name>.*.tmp``, files or private folders) :mod:`vkdqs.files` writes them under; before
    the jobs are baked, and after each job's task has ended (never after the time limit, when
    a worker may still be writing). The manifest's lock says no other run is writing here."""
    prefixes = {f".{name[:_NAME_CHARS]}." for job in jobs for name in job["outputs"]}
    if not prefixes:
        return
    for entry in os.scandir(out):  # over the folder's entries
        name = entry.name
        if name.endswith(".tmp") and any(name.startswith(p) for p in prefixes):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass


def _probe(scheduler: str, timeout: float) -> None:
    """Raise an InputError unless ``scheduler`` answers as a Dask scheduler within ``timeout``
    seconds. (``distributed.Client`` waits forever for the handshake of a port that accepts and
    says nothing, and takes a worker's address for a scheduler's.)."""
    import asyncio
    import concurrent.futures

    from distributed.comm import connect

    async def identity() -> Any:
        comm = await asyncio.wait_for(connect(scheduler, timeout=timeout), timeout)
        try:
            await asyncio.wait_for(comm.write({"op": "identity", "reply": True}), timeout)
            return await asyncio.wait_for(comm.read(), timeout)
        finally:
            comm.abort()

    pool = concurrent.futures.ThreadPoolExecutor(1)  # its own event loop, whatever runs here
    try:
        reply = pool.submit(asyncio.run, identity()).result(timeout + 5.0)
    except Exception as exc:  # refused, timed out, not Dask's protocol, a bad address
        why = str(exc) or type(exc).__name__
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
            why = f"no answer within {timeout:g} s"
        elif not isinstance(exc, (OSError, ValueError)):  # what it sent is not Dask's protocol
            why = f"it does not answer in Dask's protocol ({type(exc).__name__})"
        raise InputError(f"cannot reach the Dask scheduler {scheduler!r}: {why}") from None
    finally:
        pool.shutdown(wait=False)
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        what = f"a Dask {kind}" if isinstance(kind, str) else "something else"
        raise InputError(f"{scheduler!r} is not a Dask scheduler: {what} answered there")


def _client(distributed: Any, jobs: int | None, scheduler: str | None) -> tuple[Any, Any]:
    """(client, local cluster or None)."""
    import dask

    if scheduler is not None:
        _probe(scheduler, CONNECT_TIMEOUT)
        try:
            return distributed.Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s"), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler {scheduler!r}: {exc}") from None
    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        cluster = distributed.LocalCluster(
            n_workers=jobs or default_jobs(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # no dashboard; the scheduler's small HTTP server (health, metrics) on a free port,
            # so a second batch on the machine does not warn that port 8787 is taken
            scheduler_kwargs={"dashboard_address": ":0"},
            silence_logs=logging.ERROR,
        )
        try:
            client = distributed.Client(cluster)
        except BaseException:
            cluster.close()
            raise
    return client, cluster


def _bar(total: int, initial: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, unit="clip", desc="bake", file=sys.stderr)


def _run(
    distributed: Any,
    jobs: list[dict],
    skipped: dict[int, list[BatchRecord]],
    log: AppendLog,
    workers: int | None,
    scheduler: str | None,
    device: str | int | None,
    progress: bool,
    timeout: float | None,
    t0: float,
) -> tuple[list[BatchRecord], tuple[int, ...]]:
    """Run the jobs; append each finished model's records to the manifest."""
    by_model: dict[int, list[BatchRecord]] = dict(skipped)
    pids: set[int] = set()
    initial = sum(len(v) for v in skipped.values())
    bar = _bar(initial + sum(j["pairs"] for j in jobs), initial, progress)

    def finish(job: dict, records: list[BatchRecord]) -> None:
        by_model[job["index"]] = records
        for r in records:  # over the model's pairs
            if not r.skipped:
                log.append(r.line())
            for message in r.validation:
                _log.warning("worker bake of %s: %s", r.input, message)
        # attributed to bake_batch's caller: finish <- _collect <- _run <- bake_batch <- it
        for said in {w for r in records for w in r.warnings}:
            warnings.warn(f"{Path(job['input']).name}: {said}", stacklevel=5)
        if bar is not None:
            if len(records) > job["pairs"]:
                bar.total += len(records) - job["pairs"]
            bar.update(len(records))

    try:
        if jobs:
            from .batch_worker import PLUGIN, DevicePlugin, bake_model

            workers = workers or min(default_jobs(), len(jobs))
            client, cluster = _client(distributed, workers, scheduler)
            try:
                plugin = f"{PLUGIN}-{uuid.uuid4().hex}"  # this batch's: others keep theirs
                client.register_plugin(DevicePlugin(device), name=plugin)
                for job in jobs:  # over models
                    job["plugin"] = plugin
                futures = {
                    client.submit(
                        bake_model, job, key=f"vkdqs-bake-{i}-{os.getpid()}-{t0}", pure=False
                    ): job
                    for i, job in enumerate(jobs)
                }
                _collect(distributed, client, futures, finish, pids, timeout, t0)
                if scheduler is not None:
                    try:
                        client.unregister_worker_plugin(plugin)  # the workers close their Devices
                    except Exception:
                        pass
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
    finally:
        if bar is not None:
            bar.close()
    ordered = [r for i in sorted(by_model) for r in by_model[i]]
    return ordered, tuple(sorted(pids))


def _collect(
    distributed: Any,
    client: Any,
    futures: dict[Any, dict],
    finish: Callable[[dict, list[BatchRecord]], None],
    pids: set[int],
    timeout: float | None,
    t0: float,
) -> None:
    """Wait for the submitted tasks (``futures``: each model's job) and ``finish`` each model
    as its task ends: with its records, or with failed ones when its task failed, its result
    could not be fetched, or the batch's ``timeout`` passed first. The worker processes that
    baked are added to ``pids``."""
    deadline = None if timeout is None else t0 + timeout
    left = None if deadline is None else max(0.0, deadline - time.perf_counter())
    pending = set(futures)
    lost: dict[Any, int] = {}  # fetches of a task's result that failed
    try:
        # each task's result fetched as it finishes; a task's error (KilledWorker:
        # its workers died) is its result
        done = distributed.as_completed(futures, timeout=left, raise_errors=False)
        for future in done:
            job = futures[future]
            if future.status == "error":
                pending.discard(future)
                exc = future.exception()
                error = f"the worker baking it failed: {type(exc).__name__}: {exc}"
                future.release()
                finish(job, _failed(job, error))
                _clean_temporaries(Path(job["out_dir"]), [job])  # a killed worker's
                continue
            try:
                data = client.gather(future)
            except Exception as exc:
                # its worker died after finishing it and before its result came
                # here (the transfer fails): the scheduler computes it again, and
                # as_completed gives it back when that is done (a few times: any
                # other failure to fetch it is its error)
                lost[future] = lost.get(future, 0) + 1
                if lost[future] <= MAX_LOST_RESULTS:
                    _log.info("bake of %s: its result was lost", job["input"])
                    time.sleep(0.05)
                    done.add(future)
                    continue
                pending.discard(future)
                future.release()
                error = f"its result could not be fetched: {type(exc).__name__}: {exc}"
                finish(job, _failed(job, error))
                continue
            pending.discard(future)
            future.release()
            records = [BatchRecord.of(d, skipped=d.get("skipped", False)) for d in data]
            pids.update(d["worker"] for d in data if "worker" in d)
            finish(job, records)
            # a worker that died mid-write before a retry succeeded left its temporary
            _clean_temporaries(Path(job["out_dir"]), [job])
    except TimeoutError:
        for future in pending:
            future.cancel()
            finish(
                futures[future],
                _failed(
                    futures[future],
                    f"not done within the batch's time limit ({timeout:g} s)",
                ),
            )


def _failed(job: dict, error: str) -> list[BatchRecord]:
    """The records of a model whose task failed with ``error``: one per pair of it (one without
    a clip when its clips are unknown), each with that error."""
    names = job["labels"]
    pairs = (
        model_pairs(names, job["clips"], job["stem"], job["suffix"]) if names is not None else []
    )
    clips = [p.clip for p in pairs] or [None]
    return [
        BatchRecord(
            job["input"],
            clip,
            job["options"]["method"],
            None,
            None,
            None,
            0.0,
            error,
            pair_key(job["digest"], clip, job["options"]) if clip is not None else None,
            job["digest"],
        )
        for clip in clips
    ]
