"""What the benchmark scripts share: timing one call, the machine they ran on, writing their
JSON. Imported as ``_bench`` (each script runs with ``benchmarks/`` first on ``sys.path``)."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: Where the scripts write their JSON by default.
RESULTS = Path(__file__).resolve().parent / "results"


def timed(fn: Callable[[], Any]) -> float:
    """Wall-clock seconds one call of ``fn`` takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def cpu_timed(fn: Callable[[], Any]) -> float:
    """CPU seconds of this process (all threads: on lavapipe that includes the GPU's work) one
    call of ``fn`` takes."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def machine(device: Any | None = None) -> dict[str, Any]:
    """The machine a run measured: the Vulkan device (when given), CPUs, Python, numpy."""
    info = (
        {}
        if device is None
        else {
            "device": device.info.name,
            "device_type": device.info.device_type,
            "memory_profile": device.info.memory_profile,
        }
    )
    return info | {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write a run's results (indented, one trailing newline), making the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def memory_lines(report: dict[str, Any]) -> list[str]:
    """``Device.memory_report()`` as printed lines: per heap the memory vkdqs holds and, per
    usage class, what is placed in it."""
    mib = 2**20
    lines = []
    for heap in report["heaps"]:
        if not heap["memory_objects"]:
            continue
        classes = ", ".join(
            f"{name} {row['bytes'] / mib:.1f} MiB in {row['allocations']}"
            for name, row in heap["classes"].items()
        )
        lines.append(
            f"heap {heap['heap']} ({heap['size'] / mib:.0f} MiB): {heap['memory_bytes'] / mib:.0f} "
            f"MiB in {heap['memory_objects']} memory objects; {classes}"
        )
    return lines
