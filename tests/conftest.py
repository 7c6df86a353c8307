"""Test fixtures: one validated Device per session, and a per-test check for validation messages.

The validation layer is always on when it is installed. With ``VKDQS_REQUIRE_DEVICE=1`` (set by
``.ci/run`` and ``make test``) a missing Vulkan device or validation layer fails the run instead of
skipping the GPU tests.
"""

from __future__ import annotations

import os

import pytest


def _require_device() -> bool:
    return os.environ.get("VKDQS_REQUIRE_DEVICE", "") not in ("", "0")


def _open_device(**kwargs):
    """A validated Device, or a skip (fail when required) saying why there is none."""
    try:
        from vkdqs.device import VALIDATION_LAYER, Device, available_layers
    except OSError as exc:  # no Vulkan loader (libvulkan.so.1)
        if _require_device():
            pytest.fail(f"VKDQS_REQUIRE_DEVICE=1 but the Vulkan loader is missing: {exc}")
        pytest.skip(f"no Vulkan loader: {exc}")
    from vkdqs.errors import NoSuitableDeviceError

    validation = VALIDATION_LAYER in available_layers()
    if not validation and _require_device():
        pytest.fail(f"VKDQS_REQUIRE_DEVICE=1 but {VALIDATION_LAYER} is not installed")
    try:
        return Device(validation=validation, **kwargs)
    except NoSuitableDeviceError as exc:
        if _require_device():
            pytest.fail(f"VKDQS_REQUIRE_DEVICE=1 but no Vulkan device: {exc}")
        pytest.skip(f"no Vulkan device: {exc}")


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
    """Fail any test during which the session device received a validation message."""
    yield
    if "device" not in request.fixturenames:
        return
    dev = request.getfixturevalue("device")
    if dev.closed:
        return
    problems = [f"[{m.severity}] {m.message}" for m in dev.take_messages()]
    assert not problems, "validation layer messages:\n" + "\n".join(problems)


def pytest_report_header(config):
    try:
        from vkdqs.device import VALIDATION_LAYER, Device, available_layers

        validation = VALIDATION_LAYER in available_layers()
        with Device(validation=False) as dev:
            info = dev.info
        return (
            f"vkdqs device: {info.name} ({info.device_type}, Vulkan {info.api_version}); "
            f"validation layer: {'on' if validation else 'NOT INSTALLED'}"
        )
    except Exception as exc:  # the header must never break collection
        return f"vkdqs device: none ({type(exc).__name__}: {exc})"
