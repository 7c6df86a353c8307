"""Device selection, validation-message routing, and use after close."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import vulkan as vk

from vkdqs import InputError, NoSuitableDeviceError, ObjectDestroyedError, ValidationLayerError
from vkdqs.gpu import Buffer, Device

from . import conftest


def test_device_selection_by_name_and_index(device):
    name = device.info.name
    with Device(device=name[:6].upper(), validation=False) as by_name:
        assert by_name.info.name == name
    with Device(device=device.info.index, validation=False) as by_index:
        assert by_index.info.name == name


def test_failed_selection_says_why_each_device_was_rejected(device, monkeypatch):
    monkeypatch.setenv("VKDQS_DEVICE", "no-such-gpu")
    with pytest.raises(NoSuitableDeviceError) as info:
        Device(validation=False)
    message = str(info.value)
    assert "no suitable Vulkan device" in message
    assert f"{device.info.name!r}" in message
    assert "name does not contain 'no-such-gpu'" in message
    with pytest.raises(NoSuitableDeviceError, match="not index 99"):
        Device(device=99, validation=False)


def test_validation_errors_are_captured_and_logged(fresh_device, caplog):
    if not fresh_device.validation:
        pytest.skip("the validation layer is not installed")
    bad = vk.VkBufferCreateInfo(size=16, usage=0, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
    with caplog.at_level(logging.ERROR, logger="vkdqs.validation"):
        handle = vk.vkCreateBuffer(fresh_device.handle, bad, None)
        vk.vkDestroyBuffer(fresh_device.handle, handle, None)
    errors = fresh_device.validation_errors
    assert errors and "VUID-VkBufferCreateInfo-usage-requiredbitmask" in errors[0].message
    assert any("usage-requiredbitmask" in r.getMessage() for r in caplog.records)
    # check_validation() raises them for an application's own tests, and clears them
    with pytest.raises(ValidationLayerError, match="usage-requiredbitmask"):
        fresh_device.check_validation()
    fresh_device.check_validation()  # nothing left
    assert fresh_device.take_messages() == []
    # the suite's own check would fail this test; the error was the point, so clear it
    conftest._VALIDATION_RECORDS.records.clear()


def test_device_use_after_close(fresh_device):
    fresh_device.close()
    fresh_device.close()  # idempotent
    assert fresh_device.closed
    with pytest.raises(ObjectDestroyedError, match=r"Device used after close\(\)"):
        Buffer(fresh_device, 16, vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, label="late")
    with pytest.raises(ObjectDestroyedError):
        _ = fresh_device.handle


def test_live_objects_count_children(fresh_device):
    assert fresh_device.live_objects() == 0
    a = Buffer(fresh_device, 16, vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, label="a")
    b = Buffer(fresh_device, 16, vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, label="b")
    assert fresh_device.live_objects() == 2
    assert fresh_device.live_object_labels() == ["buffer 'a'", "buffer 'b'"]
    a.destroy()
    a.destroy()
    assert fresh_device.live_objects() == 1
    b.destroy()
    assert fresh_device.live_objects() == 0


def test_buffer_read_into_matches_read_and_checks_range(fresh_device):
    data = np.arange(2 * 3 * 4 * 3, dtype=np.float32)
    with Buffer(fresh_device, data.nbytes, vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, label="r") as b:
        b.write(data)
        full = np.full((2, 5, 4, 3), -1.0, np.float32)
        b.read_into(full[:, 1:4])  # a non-contiguous view, as Skinner passes for a chunk
        np.testing.assert_array_equal(
            full[:, 1:4], b.read(np.float32, data.size).reshape(2, 3, 4, 3)
        )
        assert (full[:, [0, 4]] == -1.0).all()
        with pytest.raises(InputError, match="outside"):
            b.read_into(np.empty(2, np.float32), offset=data.nbytes - 4)
    with pytest.raises(ObjectDestroyedError):
        b.read_into(np.empty(1, np.float32))


def test_synchronization_validation_is_on_in_the_suite(fresh_device):
    """Two writes to one buffer with no barrier between them: only sync validation sees it."""
    from vkdqs.gpu.commands import CommandBuffer

    if not fresh_device.validation:
        pytest.skip("the validation layer is not installed")
    buf = Buffer(fresh_device, 256, vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT, label="hazard")
    with CommandBuffer(fresh_device, label="hazard") as cb:
        cmd = cb.begin()
        vk.vkCmdFillBuffer(cmd, buf.handle, 0, 256, 1)
        vk.vkCmdFillBuffer(cmd, buf.handle, 0, 256, 2)
        cb.end()
        cb.submit_and_wait()
    buf.destroy()
    messages = [m.message for m in fresh_device.take_messages()]
    assert any("SYNC-HAZARD-WRITE-AFTER-WRITE" in m for m in messages), messages
    conftest._VALIDATION_RECORDS.records.clear()
