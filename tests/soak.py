"""Soak tests: many create/use/close cycles, watching the process for leaks (``make soak``).

Three soaks, each printing one row per sample (every 100 cycles, or every 10 % of a shorter
run): the cycle, RSS in MiB, its growth per 100 cycles since the previous sample, threads,
open file descriptors, the Device's live Vulkan objects, objects the Python garbage collector
tracks, and seconds since the start.

* :func:`device_skinner_cycles`: a Device and a Skinner made, used and closed per cycle
  (compute and vertex paths alternating).
* :func:`renderer_cycles`: one Device; per cycle an OffscreenTarget, a Renderer, a mesh and two
  instances (DQS and LBS), a few frames read back, then both closed.
* :func:`window_frames`: a Viewer window (its SwapchainTarget) under Xvfb, drawn for many
  frames through resizes and minimize/restore cycles.

Every Device runs the validation layer (and, as in the test suite, its synchronization
validation when ``VKDQS_SYNC_VALIDATION=1``); any validation message fails the soak, and so
does any ResourceWarning (a finalizer released something ``close()`` should have). RSS is read
from ``/proc/self/statm`` after ``gc.collect()`` and glibc's ``malloc_trim(0)``, so memory freed
but kept by the allocator does not count as growth.

Bounds, checked after the run against the "warm-up sample", the first at or after 20 % of the
cycles (earlier samples include one-time costs: the first Device loads the driver, ~60 MiB):

* live Vulkan objects exactly back to the baseline after every cycle (device and renderer
  soaks: 0 once the cycle's owners are closed; window soak: the same count at every sample
  from the warm-up on, and 0 once the renderer and target are closed);
* threads and file descriptors never above the warm-up sample's count;
* Python objects never more than :data:`PY_OBJECTS_SLACK` above it (one transient object
  for a frame after a window resize; otherwise the count stays exactly constant);
* RSS growth from the warm-up sample to the last at most ``slack + rate * n / 100`` MiB over
  n cycles (frames): :data:`DEVICE_RSS`, :data:`RENDER_RSS`, :data:`WINDOW_RSS`;
* the window soak: every frame drawn at the window's size, none while minimized, one swapchain
  creation per resize plus the first.

Measured with the full counts (lavapipe, Mesa 22.3.6; validation layer 1.3.239 with
synchronization validation; a shared 2-core machine; about 3 minutes in all): RSS grew
1.19 MiB per 100 device cycles, 0.94 per 100 renderer cycles and -0.09 per 100 window frames;
threads, fds and Python objects stayed constant. None of it is vkdqs's: synchronization
validation keeps a few KiB of heap per object created and destroyed (4 KiB per Device cycle,
8 KiB per renderer cycle; KhronosGroup/Vulkan-ValidationLayers#6033), and lavapipe keeps ~5 MiB
of JIT code address space (~8 KiB resident) per Device it destroys, so without validation the
device soak still grows ~0.5 MiB per 100 cycles while the renderer soak stays flat. The rates
allow about twice the measured growth; a Device never destroyed costs about 8 MiB and 8
threads per cycle, and a Python-level leak shows in the object count.

Run ``python -m tests.soak`` (the full counts; ``--help`` for others) or ``make soak``. Without
``DISPLAY`` the window soak starts its own Xvfb. Runs shorter than tests/test_soak.py's (30 and
60 cycles, 150 frames) sample their warm-up before one-time work is done (the first frame
title at frame 30, each skinning path's first use) and may fail spuriously.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import resource
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

try:
    from .xvfb import start_xvfb
except ImportError:  # run as a script: python tests/soak.py
    from xvfb import start_xvfb  # type: ignore[no-redef]

if TYPE_CHECKING:
    from vkdqs import Device, SkinnedMesh
    from vkdqs.app.viewer import Viewer

#: (slack MiB, MiB per 100 cycles) of RSS growth allowed after warm-up; see the module docstring.
#: The slack covers sample-to-sample noise (up to ~2 MiB) and the short runs' late warm-up
#: (~3.5 MiB from cycle 6 to 30 of the device soak).
DEVICE_RSS = (8.0, 2.0)  # measured 1.19 MiB per 100 cycles
RENDER_RSS = (8.0, 2.0)  # measured 0.94
WINDOW_RSS = (8.0, 0.5)  # measured -0.09 per 100 frames
#: Objects the garbage collector tracks may exceed the warm-up sample's count by this many.
PY_OBJECTS_SLACK = 8

FULL_DEVICE_CYCLES = 1000
FULL_RENDER_CYCLES = 3000
FULL_WINDOW_FRAMES = 2000


@dataclass(frozen=True)
class Sample:
    """The process's state after ``cycle`` cycles."""

    cycle: int
    rss_mib: float
    threads: int
    fds: int
    live_objects: int
    py_objects: int
    seconds: float


@dataclass
class SoakResult:
    """The samples of one soak and what went wrong (empty ``failures``: it passed)."""

    name: str
    cycles: int
    unit: str = "cycle"  # what a cycle is: "cycle" or "frame"
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def warmup(self) -> Sample:
        """The first sample at or after 20 % of the cycles."""
        return next((s for s in self.samples if s.cycle >= 0.2 * self.cycles), self.samples[-1])

    def rss_growth_per_100(self) -> float:
        """MiB per 100 cycles from the warm-up sample to the last."""
        first, last = self.warmup, self.samples[-1]
        if last.cycle == first.cycle:
            return 0.0
        return 100.0 * (last.rss_mib - first.rss_mib) / (last.cycle - first.cycle)


# -- measuring the process ------------------------------------------------------------------


def _malloc_trim() -> Callable[[], None]:
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return lambda: None
    return lambda: trim(0)


_trim = _malloc_trim()


def rss_mib() -> float:
    """Resident set size in MiB, after collecting garbage and trimming the malloc heap."""
    gc.collect()
    _trim()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def thread_count() -> int:
    """Threads of this process, native ones (the driver's) included."""
    return len(os.listdir("/proc/self/task"))


def fd_count() -> int:
    """Open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def python_objects() -> int:
    """Objects the garbage collector tracks (containers, instances), after a collection."""
    gc.collect()
    return len(gc.get_objects())


def sample_every(cycles: int) -> int:
    """Cycles between samples: 100, or a tenth of a shorter run."""
    return max(1, min(100, cycles // 10))


class _Sampler:
    """Takes and prints the samples of one soak."""

    def __init__(self, result: SoakResult, out: Callable[[str], None]) -> None:
        self.result = result
        self.out = out
        self.start = time.perf_counter()
        out(f"{result.name}: {result.cycles} {result.unit}s")
        out(
            f"{result.unit:>7} {'RSS MiB':>9} {'dRSS/100':>9} {'threads':>7} {'fds':>5} "
            f"{'live':>5} {'py objs':>8} {'s':>7}"
        )

    def take(self, cycle: int, live_objects: int) -> None:
        s = Sample(
            cycle,
            rss_mib(),
            thread_count(),
            fd_count(),
            live_objects,
            python_objects() - len(self.result.samples),  # not counting the samples
            time.perf_counter() - self.start,
        )
        samples = self.result.samples
        delta = ""
        if samples and cycle > samples[-1].cycle:
            delta = (
                f"{100.0 * (s.rss_mib - samples[-1].rss_mib) / (cycle - samples[-1].cycle):+9.2f}"
            )
        samples.append(s)
        self.out(
            f"{s.cycle:7d} {s.rss_mib:9.1f} {delta:>9} {s.threads:7d} {s.fds:5d} "
            f"{s.live_objects:5d} {s.py_objects:8d} {s.seconds:7.1f}"
        )


def check_bounds(result: SoakResult, rss: tuple[float, float]) -> None:
    """Add to ``result.failures`` every bound (see the module docstring) its samples break."""
    warm, last, unit = result.warmup, result.samples[-1], result.unit
    later = [s for s in result.samples if s.cycle >= warm.cycle]
    for what, slack in (("threads", 0), ("fds", 0), ("py_objects", PY_OBJECTS_SLACK)):
        top = max(later, key=lambda s: getattr(s, what))
        if getattr(top, what) > getattr(warm, what) + slack:
            result.failures.append(
                f"{what} grew from {getattr(warm, what)} ({unit} {warm.cycle}) to "
                f"{getattr(top, what)} ({unit} {top.cycle}); the bound is +{slack}"
            )
    slack_mib, rate = rss
    allowed = slack_mib + rate * (last.cycle - warm.cycle) / 100.0
    growth = last.rss_mib - warm.rss_mib
    if growth > allowed:
        result.failures.append(
            f"RSS grew {growth:.1f} MiB from {unit} {warm.cycle} to {last.cycle} "
            f"({result.rss_growth_per_100():.2f} MiB per 100 {unit}s); the bound is "
            f"{allowed:.1f} MiB ({slack_mib:g} + {rate:g} per 100 {unit}s)"
        )


def _messages(device: Device, where: str) -> list[str]:
    """The validation messages ``device`` received, each prefixed with ``where``."""
    return [f"{where}: validation {m.severity}: {m.message}" for m in device.take_messages()]


@contextmanager
def _no_resource_warnings(result: SoakResult) -> Iterator[None]:
    """Fail ``result`` on any ResourceWarning: a finalizer released what ``close()`` should
    have (a Device or owner dropped unclosed). Other warnings are passed on afterwards."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
    for w in caught:
        if issubclass(w.category, ResourceWarning):
            result.failures.append(f"ResourceWarning: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _report(result: SoakResult, out: Callable[[str], None]) -> None:
    if result.samples:
        out(
            f"{result.name}: RSS {result.rss_growth_per_100():+.2f} MiB per 100 after warm-up, "
            f"{result.samples[-1].seconds:.1f} s"
            + "".join(f", {k} {v}" for k, v in result.extra.items())
        )
    for failure in result.failures[:20]:
        out(f"  FAIL {failure}")
    if len(result.failures) > 20:
        out(f"  ... and {len(result.failures) - 20} more")


# -- the soaks ------------------------------------------------------------------------------


def _skin_once(device: Device, mesh: SkinnedMesh, pose: np.ndarray, path: str) -> bool:
    """Skin ``pose`` with a Skinner made and closed here; whether the result looks right.
    (A function of its own so that nothing of the cycle outlives it.)"""
    from vkdqs.engine.skinner import Skinner

    with Skinner(device, mesh, bone_count=2, path=path) as skinner:
        positions, _ = skinner.skin(pose)
    return positions.shape == (mesh.vertex_count, 3) and bool(np.isfinite(positions).all())


def device_skinner_cycles(
    cycles: int, *, out: Callable[[str], None] = print, validation: bool = True
) -> SoakResult:
    """``cycles`` times: open a Device, skin one pose with a Skinner, close both."""
    from vkdqs import Device, procedural

    result = SoakResult("device+skinner", cycles)
    mesh = procedural.candy_wrapper()
    pose = procedural.twist_pose(90.0)
    every = sample_every(cycles)
    sampler = _Sampler(result, out)
    sampler.take(0, 0)
    with _no_resource_warnings(result):
        for cycle in range(1, cycles + 1):
            device = Device(validation=validation)
            try:
                if not _skin_once(device, mesh, pose, ("compute", "vertex")[cycle % 2]):
                    result.failures.append(f"cycle {cycle}: bad skinned positions")
                live = device.live_objects()
                if live:
                    result.failures.append(
                        f"cycle {cycle}: {live} live objects after Skinner.close(): "
                        f"{device.live_object_labels()}"
                    )
                result.failures.extend(_messages(device, f"cycle {cycle}"))
            finally:
                device.close()
            if cycle % every == 0 or cycle == cycles:
                sampler.take(cycle, live)
    check_bounds(result, DEVICE_RSS)
    _report(result, out)
    return result


def _render_once(device: Device, size: tuple[int, int], frames: int) -> bool:
    """An OffscreenTarget and a Renderer made, drawn ``frames`` times and closed here; whether
    the last frame shows a picture."""
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    with OffscreenTarget(device, *size) as target, Renderer(device, target) as renderer:
        scene = CandyWrapperScene(renderer)
        for f in range(frames):
            scene.set_twist(60.0 * f)
            image = renderer.render_image()
    return image.shape == (size[1], size[0], 4) and len(np.unique(image[..., 0])) >= 3


def renderer_cycles(
    cycles: int,
    *,
    frames: int = 3,
    out: Callable[[str], None] = print,
    validation: bool = True,
) -> SoakResult:
    """One Device; ``cycles`` times: an OffscreenTarget and a Renderer with the candy-wrapper
    mesh in two instances (LBS and DQS), ``frames`` frames read back, then both closed."""
    from vkdqs import Device

    result = SoakResult("renderer+offscreen", cycles)
    every = sample_every(cycles)
    with _no_resource_warnings(result), Device(validation=validation) as device:
        baseline = device.live_objects()
        sampler = _Sampler(result, out)
        sampler.take(0, baseline)
        for cycle in range(1, cycles + 1):
            size = (64 + 8 * (cycle % 5), 48 + 8 * (cycle % 3))  # sizes vary between cycles
            if not _render_once(device, size, frames):
                result.failures.append(f"cycle {cycle}: no picture rendered")
            live = device.live_objects()
            if live != baseline:
                result.failures.append(
                    f"cycle {cycle}: {live} live objects after closing (baseline {baseline}): "
                    f"{device.live_object_labels()[:10]}"
                )
            result.failures.extend(_messages(device, f"cycle {cycle}"))
            if cycle % every == 0 or cycle == cycles:
                sampler.take(cycle, live)
    check_bounds(result, RENDER_RSS)
    _report(result, out)
    return result


def _minimize_restore(viewer: Viewer) -> int:
    """Iconify and restore the window, asking for 3 frames while its framebuffer is 0x0 (X11
    without a window manager ignores iconify, so the 0x0 size is simulated at the target, as in
    tests/test_window.py); how many of them were drawn (0 is right)."""
    glfw, target = viewer.glfw, viewer.target
    glfw.iconify_window(viewer.window)
    glfw.poll_events()
    real_size = target._framebuffer_size
    target._framebuffer_size = lambda: (0, 0)
    try:
        drawn = sum(viewer.renderer.render() is not None for _ in range(3))
    finally:
        target._framebuffer_size = real_size
    glfw.restore_window(viewer.window)
    return drawn


def _drive_window(
    viewer: Viewer,
    result: SoakResult,
    resize_at: set[int],
    minimize_at: set[int],
    out: Callable[[str], None],
) -> None:
    """Draw ``result.cycles`` frames, resizing and minimizing at those frames, sampling."""
    device, target = viewer.device, viewer.target
    every = sample_every(result.cycles)
    sampler = _Sampler(result, out)

    def live() -> int:
        # the overlay's parts follow the window's size where one texel view holds fewer pixels
        # than a frame (the vulkan-minimum profile): counted apart, the rest must not change
        overlay = viewer.renderer._overlay_pass
        return device.live_objects() - (0 if overlay is None else overlay.part_objects)

    sampler.take(0, live())
    size = target.extent
    for frame in range(1, result.cycles + 1):
        if frame in resize_at:
            # a different size each time: widths 200..679, heights 150..439
            n = len([f for f in resize_at if f <= frame])
            size = (200 + (n * 149) % 480, 150 + (n * 83) % 290)
            viewer.glfw.set_window_size(viewer.window, *size)
        if frame in minimize_at and _minimize_restore(viewer):
            result.failures.append(f"frame {frame}: drew while minimized")
        drawn = viewer.frames
        if not viewer.step():
            result.failures.append(f"frame {frame}: the window asked to close")
            return
        if viewer.frames != drawn + 1:
            result.failures.append(f"frame {frame}: not drawn")
        if target.extent != size:
            result.failures.append(f"frame {frame}: swapchain {target.extent}, window {size}")
        result.failures.extend(_messages(device, f"frame {frame}"))
        if frame % every == 0 or frame == result.cycles:
            sampler.take(frame, live())


def window_frames(
    frames: int,
    *,
    resizes: int | None = None,
    minimizes: int | None = None,
    out: Callable[[str], None] = print,
    validation: bool = True,
) -> SoakResult:
    """A Viewer window drawn for ``frames`` frames, with ``resizes`` window resizes and
    ``minimizes`` minimize/restore cycles spread evenly (default: one per 10 and 100 frames).

    Checks every frame drawn at the window's size, one swapchain creation per resize (plus the
    first), no frame drawn while minimized, and the Device's live objects constant after
    warm-up and 0 once the renderer and target are closed. Needs ``DISPLAY`` (see
    :func:`virtual_display`).
    """
    from vkdqs.app.viewer import Viewer

    resizes = frames // 10 if resizes is None else resizes
    minimizes = frames // 100 if minimizes is None else minimizes
    result = SoakResult("window", frames, "frame")
    resize_at = {round((i + 1) * frames / (resizes + 1)) for i in range(resizes)}
    minimize_at = {round((i + 0.5) * frames / minimizes) for i in range(minimizes)}
    if len(resize_at) != resizes or len(minimize_at) != minimizes or 0 in resize_at:
        raise ValueError(f"{frames} frames cannot hold {resizes} resizes and {minimizes} minimizes")
    with (
        _no_resource_warnings(result),
        Viewer(size=(480, 360), samples=1, validation=validation, title="vkdqs soak") as viewer,
    ):
        device, target = viewer.device, viewer.target
        _drive_window(viewer, result, resize_at, minimize_at, out)
        if target.recreations != 1 + resizes:
            result.failures.append(
                f"{target.recreations} swapchain creations for {resizes} resizes "
                f"(expected {1 + resizes})"
            )
        result.extra = {"swapchains": target.recreations, "minimizes": minimizes}
        live = {s.live_objects for s in result.samples if s.cycle >= result.warmup.cycle}
        if len(live) > 1:
            result.failures.append(f"live objects changed after warm-up: {sorted(live)}")
        viewer.renderer.close()
        target.close()
        if device.live_objects():
            result.failures.append(
                f"{device.live_objects()} live objects after closing the renderer and target: "
                f"{device.live_object_labels()}"
            )
        result.failures.extend(_messages(device, "closing"))
    check_bounds(result, WINDOW_RSS)
    _report(result, out)
    return result


@contextmanager
def virtual_display() -> Iterator[str]:
    """``DISPLAY`` if it is set, else a private Xvfb server for the duration (as the test
    suite's ``xvfb`` fixture does)."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    exe = shutil.which("Xvfb")
    if exe is None:
        raise RuntimeError("DISPLAY is unset and Xvfb is not installed (apt-get install xvfb)")
    proc, display = start_xvfb(exe)
    try:
        os.environ["DISPLAY"] = display
        yield display
    finally:
        os.environ.pop("DISPLAY", None)
        proc.terminate()
        proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    """Run the three soaks; 0 if every bound held, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device-cycles", type=int, default=FULL_DEVICE_CYCLES)
    parser.add_argument("--render-cycles", type=int, default=FULL_RENDER_CYCLES)
    parser.add_argument("--window-frames", type=int, default=FULL_WINDOW_FRAMES)
    args = parser.parse_args(argv)
    # as in the test suite: the validation layer with its synchronization validation
    os.environ.setdefault("VKDQS_VALIDATION", "1")
    os.environ.setdefault("VKDQS_SYNC_VALIDATION", "1")
    start = time.perf_counter()
    results = []
    if args.device_cycles:
        results.append(device_skinner_cycles(args.device_cycles))
    if args.render_cycles:
        results.append(renderer_cycles(args.render_cycles))
    if args.window_frames:
        with virtual_display():
            results.append(window_frames(args.window_frames))
    failed = [r.name for r in results if not r.ok]
    print(
        f"soak: {time.perf_counter() - start:.0f} s; "
        + (f"FAILED: {', '.join(failed)}" if failed else "all bounds held")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
