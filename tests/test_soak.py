"""Short versions of the soaks in tests/soak.py (``make soak`` runs the full ones), with the
same bounds: live objects back to baseline after every cycle, threads and file descriptors not
above the warm-up sample, RSS growth within slack + rate, no validation message."""

from __future__ import annotations

import pytest

from . import soak
from .conftest import _open_device, validation_available

# Every soak opens Devices (the validated fixture too).
pytestmark = pytest.mark.gpu


@pytest.fixture
def validated() -> bool:
    """Whether the soaks' Devices get the validation layer (a skip, or a failure when a device
    is required, if there is no Vulkan device at all)."""
    _open_device().close()
    return validation_available()


def _check(result: soak.SoakResult) -> None:
    assert result.samples[-1].cycle == result.cycles
    if result.failures:
        pytest.fail(f"{result.name} soak:\n" + "\n".join(result.failures[:20]), pytrace=False)


def test_device_skinner_cycles(validated):
    _check(soak.device_skinner_cycles(30, validation=validated))


def test_renderer_cycles(validated):
    _check(soak.renderer_cycles(60, validation=validated))


def test_window_frames(xvfb, validated):
    result = soak.window_frames(150, resizes=15, minimizes=2, validation=validated)
    _check(result)
    assert result.extra == {"swapchains": 16, "minimizes": 2}
