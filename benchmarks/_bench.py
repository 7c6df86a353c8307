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
