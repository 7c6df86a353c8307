"""Ownership: every Vulkan object has one owner and is destroyed deterministically."""

from __future__ import annotations

import gc
import resource

import numpy as np
import pytest

from vkdqs import ObjectDestroyedError, procedural
from vkdqs.engine.skinner import Skinner
from vkdqs.gpu import Buffer

from .conftest import _open_device

# Every test opens Devices (through the fixtures, or its own in a loop).
pytestmark = pytest.mark.gpu


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def test_skinner_close_destroys_everything(fresh_device):
    mesh = procedural.candy_wrapper()
    skinner = Skinner(fresh_device, mesh, bone_count=2)
    skinner.skin_many(np.stack([procedural.twist_pose(a) for a in (0, 45, 90)]))
    assert fresh_device.live_objects() > 0
    skinner.close()
    assert fresh_device.live_objects() == 0, fresh_device.live_object_labels()


def test_device_close_cascades_to_children(fresh_device):
    mesh = procedural.candy_wrapper()
    skinners = [
        Skinner(fresh_device, mesh, bone_count=2, method=m, path=p)
        for m in ("dqs", "lbs")
        for p in ("compute", "vertex")
    ]
    for s in skinners:
        s.skin(procedural.twist_pose(30))
    buffer = Buffer(fresh_device, 64, 0x10, label="orphan")  # uniform buffer
    assert fresh_device.live_objects() > 4
    fresh_device.close()
    assert fresh_device.live_objects() == 0
    assert buffer.destroyed
    buffer.destroy()  # idempotent after the cascade
    with pytest.raises(ObjectDestroyedError, match="buffer 'orphan' used after destroy"):
        buffer.write(np.zeros(4, np.float32))
    for s in skinners:
        s.close()


@pytest.mark.parametrize("path", ["compute", "vertex"])
def test_create_close_cycles_do_not_leak(path):
    """200 Device + Skinner lifecycles: no live objects after each, bounded process memory."""
    mesh = procedural.candy_wrapper()
    pose = procedural.twist_pose(90)
    rss = []
    for i in range(200):
        device = _open_device()
        with Skinner(device, mesh, bone_count=2, path=path) as skinner:
            skinner.skin(pose)
        assert device.live_objects() == 0, device.live_object_labels()
        problems = [m.message for m in device.take_messages()]
        assert not problems, problems
        device.close()
        if i in (19, 199):
            gc.collect()
            rss.append(_rss_mib())
    growth = rss[1] - rss[0]
    assert growth < 32, f"process memory grew {growth:.1f} MiB over 180 create/close cycles"
