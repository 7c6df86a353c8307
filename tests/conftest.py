"""Test fixtures: one validated Device per session, and a per-test check for validation messages.

The validation layer is always on when it is installed. With ``VKDQS_REQUIRE_DEVICE=1`` (set by
``.ci/run`` and ``make test``) a missing Vulkan device or validation layer fails the run instead of
skipping the GPU tests.

Tests that open a Vulkan device are marked ``gpu``: those using the ``device``, ``fresh_device`` or
``xvfb`` fixtures automatically, the others (their own Devices, subprocesses that open one)
explicitly. ``pytest -m "not gpu"`` runs the rest with the Vulkan loader pointed at no driver, so
an unmarked test that opens a device fails instead of quietly running on the GPU.
"""

from __future__ import annotations

import logging
import os
import shutil

import pytest

from . import mesa_cache
from .xvfb import start_xvfb


class _ValidationRecords(logging.Handler):
    """Collects what any Device's debug messenger logs (devices made by the CLI or viewer too)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


_VALIDATION_RECORDS = _ValidationRecords()
logging.getLogger("vkdqs.validation").addHandler(_VALIDATION_RECORDS)
logging.getLogger("vulkan_app.validation").addHandler(_VALIDATION_RECORDS)  # VKDQS_ADOPT=1


#: Fixtures that open a Vulkan device (or a window's display): tests using them are ``gpu``.
_GPU_FIXTURES = frozenset({"device", "fresh_device", "xvfb"})

#: Where the Vulkan loader looks for drivers when ``-m`` leaves out every ``gpu`` test: no file,
#: so a test that opens a device without being marked ``gpu`` fails, its subprocesses too.
_NO_DRIVER = "/nonexistent/vkdqs-gpu-tests-deselected-mark-this-test-gpu.json"


def _gpu_deselected(config) -> bool:
    """Whether the ``-m`` expression excludes every test marked ``gpu``."""
    markexpr = config.getoption("markexpr", "")
    if not markexpr:
        return False
    try:
        from _pytest.mark.expression import Expression

        return not Expression.compile(markexpr).evaluate(lambda name, **kw: name == "gpu")
    except Exception:  # an expression or a pytest this does not understand: no guard
        return False


_SAVED_DRIVERS: dict[str, str | None] = {}


def pytest_configure(config):
    # lavapipe's shader cache keeps code built for another vector width or CPU under the same
    # key (tests/mesa_cache.py): a cache of this configuration's own, set before a driver loads
    mesa_cache.isolate()
    if _gpu_deselected(config):
        for variable in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES"):
            _SAVED_DRIVERS[variable] = os.environ.get(variable)
            os.environ[variable] = _NO_DRIVER
    # Every Device the code under test opens gets the validation layer when it is installed.
    try:
        from vkdqs.gpu.device import VALIDATION_LAYER, available_layers

        if VALIDATION_LAYER in available_layers():
            os.environ.setdefault("VKDQS_VALIDATION", "1")
            # synchronization validation too: missing barriers and cross-submission hazards
            os.environ.setdefault("VKDQS_SYNC_VALIDATION", "1")
    except Exception:  # no Vulkan loader: the GPU fixtures report it
        pass


def pytest_unconfigure(config):
    for variable, value in _SAVED_DRIVERS.items():
        if value is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = value
    _SAVED_DRIVERS.clear()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _GPU_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gpu)


def _require_device() -> bool:
    return os.environ.get("VKDQS_REQUIRE_DEVICE", "") not in ("", "0")


def _open_device(**kwargs):
    """A validated Device, or a skip (fail when required) saying why there is none."""
    from vkdqs.errors import CapabilityError

    try:
        from vkdqs.gpu.device import VALIDATION_LAYER, Device, available_layers
    except (OSError, CapabilityError) as exc:  # no Vulkan loader (libvulkan.so.1)
        if _require_device():
            pytest.fail(f"VKDQS_REQUIRE_DEVICE=1 but the Vulkan loader is missing: {exc}")
        pytest.skip(f"no Vulkan loader: {exc}")
    from vkdqs.errors import NoSuitableDeviceError

    validation = VALIDATION_LAYER in available_layers()
    if not validation and _require_device():
        pytest.fail(f"VKDQS_REQUIRE_DEVICE=1 but {VALIDATION_LAYER} is not installed")
    try:
        if _adopting():
            return _adopted_device(**kwargs)
        return Device(validation=validation, **kwargs)
    except NoSuitableDeviceError as exc:
        if _require_device():
            pytest.fail(f"VKDQS_REQUIRE_DEVICE=1 but no Vulkan device: {exc}")
        pytest.skip(f"no Vulkan device: {exc}")


def _adopting() -> bool:
    """``VKDQS_ADOPT=1``: the device fixtures wrap an app's device (Device.adopt) built with
    the plain ``vulkan`` binding (tests/vulkan_app.py) instead of opening their own."""
    return os.environ.get("VKDQS_ADOPT", "") not in ("", "0")


def _adopted_device(**kwargs):
    """An app's device (with the features vkdqs enables on its own), adopted and handed over:
    closing the Device destroys it, and the app's messenger fails the test on what is left."""
    from vkdqs.gpu.device import Device

    from .vulkan_app import VulkanApp

    app = VulkanApp(features=("vertexPipelineStoresAndAtomics", "fillModeNonSolid"))
    return Device.adopt(**app.adopt_kwargs(hand_over=True), **kwargs)


@pytest.fixture(scope="session")
def device():
    dev = _open_device()
    yield dev
    dev.close()


@pytest.fixture
def fresh_device():
    """A Device of the test's own, for lifetime tests; closed (and checked) afterwards."""
    dev = _open_device()
    yield dev
    problems = [m.message for m in dev.take_messages()]
    dev.close()
    assert not problems, "validation messages:\n" + "\n".join(problems)


@pytest.fixture(autouse=True)
def _no_validation_messages(request):
    """Fail any test during which a Device received a validation message."""
    _VALIDATION_RECORDS.records.clear()
    yield
    problems = list(_VALIDATION_RECORDS.records)
    if "device" in request.fixturenames:
        dev = request.getfixturevalue("device")
        if not dev.closed:
            dev.take_messages()  # already counted through the log handler
    assert not problems, "validation layer messages:\n" + "\n".join(problems)


def pytest_report_header(config):
    if _gpu_deselected(config):
        return f"vkdqs device: not opened (-m {config.getoption('markexpr')!r} leaves out gpu)"
    try:
        from vkdqs.gpu.device import VALIDATION_LAYER, Device, available_layers

        validation = VALIDATION_LAYER in available_layers()
        with Device(validation=False) as dev:
            info = dev.info
        return (
            f"vkdqs device: {info.name} ({info.device_type}, Vulkan {info.api_version}); "
            f"validation layer: {'on' if validation else 'NOT INSTALLED'}"
        )
    except Exception as exc:  # the header must never break collection
        return f"vkdqs device: none ({type(exc).__name__}: {exc})"


def validation_available() -> bool:
    from vkdqs.gpu.device import VALIDATION_LAYER, available_layers

    return VALIDATION_LAYER in available_layers()


@pytest.fixture(scope="session")
def xvfb():
    exe = shutil.which("Xvfb")
    if exe is None:
        if _require_device():
            pytest.fail("VKDQS_REQUIRE_DEVICE=1 but Xvfb is not installed (apt-get install xvfb)")
        pytest.skip("Xvfb is not installed")
    try:
        proc, display = start_xvfb(exe)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    old = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    yield display
    if old is None:
        os.environ.pop("DISPLAY", None)
    else:
        os.environ["DISPLAY"] = old
    proc.terminate()
    proc.wait(timeout=10)
