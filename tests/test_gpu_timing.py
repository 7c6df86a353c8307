"""GPU timing: timestamp queries around each frame (``Renderer(..., gpu_timing=True)``).

``gpu_ms`` is None until a frame is known to have finished, then positive and finite; it grows
with the GPU's work; timing changes no pixel; its QueryPool dies with the renderer; a device
without timestamps is refused by name.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from vkdqs import AnimationClip, CapabilityError, InputError, procedural
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gpu import QueryPool

from .imaging import CLEAR, covered


def _timed_renderer(device, mesh, width=64, height=48, **kwargs):
    target = OffscreenTarget(device, width, height)
    renderer = Renderer(device, target, clear_color=CLEAR, gpu_timing=True, **kwargs)
    renderer.add_instance(renderer.add_mesh(mesh), bone_count=mesh.joints.max() + 1)
    renderer.frame_scene()
    return target, renderer


def test_gpu_ms_none_before_a_finished_frame_then_positive(device):
    mesh = procedural.tube(300, bone_count=4, influences=4)
    target, renderer = _timed_renderer(device, mesh)
    try:
        assert renderer.gpu_timing
        assert renderer.gpu_ms is None
        renderer.render()
        # submitted, but nobody has seen its fence signal yet
        assert renderer.gpu_ms is None
        renderer.render()  # the other slot: still nothing is known to have finished
        assert renderer.gpu_ms is None
        renderer.render()  # slot 0 again: it waits for frame 0's fence, then reads its time
        assert renderer.gpu_ms is not None and renderer.gpu_ms > 0
        renderer.wait()
        first = renderer.gpu_ms
        assert first is not None and math.isfinite(first) and 0.0 < first < 10_000.0
        # the next frames of both slots report their own times
        for _ in range(4):
            renderer.render()
        renderer.wait()
        assert renderer.gpu_ms is not None and renderer.gpu_ms > 0.0
    finally:
        renderer.close()
        target.close()


def test_gpu_ms_is_none_without_timing(device):
    target = OffscreenTarget(device, 32, 32)
    renderer = Renderer(device, target)
    try:
        renderer.render()
        renderer.wait()
        assert not renderer.gpu_timing and renderer.gpu_ms is None
    finally:
        renderer.close()
        target.close()


def _median_gpu_ms(renderer, frames: int = 5) -> float:
    renderer.render_image()  # warm-up: pipelines
    times = []
    for _ in range(frames):
        renderer.render_image()
        times.append(renderer.gpu_ms)
    assert all(t is not None and t > 0 for t in times)
    return float(np.median(times))


def test_gpu_ms_grows_with_work(device):
    small = procedural.tube(300, bone_count=16, influences=4)
    big = procedural.tube(300_000, bone_count=16, influences=4)
    times = {}
    for name, mesh in (("small", small), ("big", big)):
        target, renderer = _timed_renderer(device, mesh)
        try:
            times[name] = _median_gpu_ms(renderer)
        finally:
            renderer.close()
            target.close()
    # 1000x the vertices to skin: lavapipe really runs them, on the CPU
    assert times["big"] > 2.0 * times["small"], times


def test_timing_changes_no_pixel(device):
    mesh = procedural.candy_wrapper()
    images = []
    for timing in (False, True):
        target = OffscreenTarget(device, 160, 120)
        renderer = Renderer(device, target, clear_color=CLEAR, gpu_timing=timing)
        try:
            rm = renderer.add_mesh(mesh)
            inst = renderer.add_instance(rm, bone_count=2)
            inst.set_pose(procedural.twist_pose(70.0))
            renderer.frame_scene()
            images.append(renderer.render_image())
            assert (renderer.gpu_ms is not None) == timing
        finally:
            renderer.close()
            target.close()
    assert covered(images[0]).sum() > 500
    np.testing.assert_array_equal(images[0], images[1])


def test_query_pool_dies_with_its_renderer(fresh_device):
    target = OffscreenTarget(fresh_device, 32, 32)
    before = fresh_device.live_objects()
    renderer = Renderer(fresh_device, target, gpu_timing=True)
    assert "query pool 'frame timestamps'" in fresh_device.live_object_labels()
    renderer.render()
    renderer.wait()
    renderer.close()
    assert fresh_device.live_objects() == before
    target.close()
    assert fresh_device.live_objects() == 0


def test_query_pool_reads_a_timestamp_span(fresh_device):
    """The DeviceObject alone: reset, two timestamps, a read after the fence."""
    import vulkan as vk

    from vkdqs.gpu import CommandBuffer

    pool = QueryPool(fresh_device, 2, label="span")
    cmd_buffer = CommandBuffer(fresh_device, label="span")
    cmd = cmd_buffer.begin(one_time=True)
    pool.record_reset(cmd, 0, 2)
    pool.record_timestamp(cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0)
    pool.record_timestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 1)
    cmd_buffer.end()
    cmd_buffer.submit_and_wait()
    ticks = pool.read(0, 2)
    assert ticks.dtype == np.uint64 and ticks[1] >= ticks[0] > 0
    assert 0.0 <= pool.elapsed_ms(0, 1) < 1_000.0
    with pytest.raises(InputError, match="count"):
        QueryPool(fresh_device, 0, label="empty")
    cmd_buffer.destroy()
    pool.destroy()
    assert fresh_device.live_objects() == 0


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"timestamp_valid_bits": 0}, "timestampValidBits"),
        ({"timestamp_compute_and_graphics": False}, "timestampComputeAndGraphics"),
    ],
)
def test_no_timestamps_is_a_capability_error(device, monkeypatch, change, named):
    monkeypatch.setattr(device, "info", dataclasses.replace(device.info, **change))
    target = OffscreenTarget(device, 32, 32)
    before = device.live_objects()
    try:
        with pytest.raises(CapabilityError, match=named):
            Renderer(device, target, gpu_timing=True)
        assert device.live_objects() == before  # what it made before refusing is gone
        Renderer(device, target).close()  # without timing it still works
    finally:
        target.close()


def test_crowd_frames_are_timed_and_unchanged(device):
    """A crowd's sampling dispatch sits inside the timed span; timing changes no pixel."""
    clip = AnimationClip(np.stack([procedural.twist_pose(a) for a in (0.0, 60.0, 120.0)]), 10.0)
    models = np.broadcast_to(np.eye(4), (3, 4, 4)).copy()
    models[:, 1, 3] = 3.0 * np.arange(3)
    images, times = [], []
    for timing in (False, True):
        target = OffscreenTarget(device, 160, 120)
        renderer = Renderer(device, target, clear_color=CLEAR, gpu_timing=timing)
        try:
            crowd = renderer.add_crowd(renderer.add_mesh(procedural.candy_wrapper()), clip, count=3)
            crowd.set_models(models)
            crowd.set_times([0.0, 0.05, 0.15])
            renderer.frame_scene()
            images.append(renderer.render_image())
            times.append(renderer.gpu_ms)
        finally:
            renderer.close()
            target.close()
    assert covered(images[0]).sum() > 500
    np.testing.assert_array_equal(images[0], images[1])
    assert times[0] is None and times[1] is not None and times[1] > 0
