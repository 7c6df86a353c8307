"""Memory profiles make lavapipe strict: under a real device's table a buffer the host cannot
map is never mapped, memory that is not coherent is seen only through flushes and
invalidates, heaps and the allocation count are enforced, and sub-allocation keeps the count
low. Results are the same on every profile."""

from __future__ import annotations

import numpy as np
import pytest
import vulkan as vk

from vkdqs.errors import CapabilityError
from vkdqs.gpu import Buffer, CommandBuffer
from vkdqs.gpu.memory import memory_profiles

from .conftest import _open_device

pytestmark = pytest.mark.gpu

STORAGE = vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT


@pytest.fixture(params=sorted(memory_profiles()))
def profiled(request):
    dev = _open_device(memory_profile=request.param)
    yield dev
    problems = [m.message for m in dev.take_messages()]
    dev.close()
    assert not problems, "validation messages:\n" + "\n".join(problems)


def profile_device(name: str):
    return _open_device(memory_profile=name)


def gpu_copy(dev, src: Buffer, dst: Buffer, nbytes: int) -> None:
    """A GPU copy src -> dst with the barriers a caller needs against host access."""
    with CommandBuffer(dev, label="test copy") as cb:
        cmd = cb.begin(one_time=True)
        vk.vkCmdCopyBuffer(cmd, src.handle, dst.handle, 1, [vk.VkBufferCopy(0, 0, nbytes)])
        from vkdqs.gpu import memory_barrier

        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            vk.VK_ACCESS_HOST_READ_BIT,
        )
        cb.end()
        cb.submit_and_wait()


def test_every_class_writes_and_reads_back_on_every_profile(profiled):
    data = np.arange(1000, dtype=np.float32)
    for memory_class in ("static", "dynamic", "readback", "gpu", "staging"):
        with Buffer(profiled, data.nbytes, STORAGE, label=memory_class, memory=memory_class) as b:
            b.write(data)
            assert np.array_equal(b.read(np.float32, 1000), data)
            out = np.empty(10, np.float32)
            b.read_into(out, offset=40)
            assert np.array_equal(out, data[10:20])
            # a GPU copy sees the host's writes; the host sees the GPU's
            with Buffer(profiled, data.nbytes, STORAGE, label="dst", memory="readback") as dst:
                gpu_copy(profiled, b, dst, data.nbytes)
                assert np.array_equal(dst.read(np.float32, 1000), data)


def test_a_skinner_reads_back_without_a_copy_only_on_unified_memory():
    from vkdqs import procedural
    from vkdqs import shader_interface as si
    from vkdqs.engine.skinner import Skinner

    mesh = procedural.tube(300, bone_count=4, influences=4)
    pose = procedural.bone_chain_pose(4, 30.0)
    results = {}
    for name, copied in (("integrated", False), ("mobile", False), ("discrete", True)):
        dev = profile_device(name)
        try:
            with Skinner(dev, mesh, bone_count=4, method="lbs") as s:
                results[name] = s.skin(pose)
                assert (s._out_host is not None) == copied, name
                assert s.out_buffer.host_visible != copied
                one = s.slot_bytes + 24 * mesh.vertex_count + si.BOX_STRIDE  # slot, vertices, box
                assert s.pose_bytes == one + copied * 24 * mesh.vertex_count
        finally:
            dev.close()
    for got in results.values():  # the same shader on the same inputs
        for a, b in zip(got, results["discrete"], strict=True):
            assert np.array_equal(a, b)


def test_static_data_is_not_host_visible_on_a_discrete_gpu():
    dev = profile_device("discrete")
    try:
        b = Buffer(dev, 256, STORAGE, label="rest", memory="static")
        assert not b.host_visible
        t = dev.memory_table.types[b.memory_type]
        assert t.flags == vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        with pytest.raises(CapabilityError, match="not host-visible"):
            b.allocation.view(0, 16)
        b.write(np.ones(64, np.float32))  # staged
        assert np.array_equal(b.read(np.float32, 64), np.ones(64, np.float32))
        b.destroy()
        assert dev.live_objects() == 0  # the staging buffers and command buffers are gone
    finally:
        dev.close()


def test_non_coherent_memory_needs_its_flush_and_invalidate():
    dev = profile_device("mobile")
    try:
        src = Buffer(dev, 1024, STORAGE, label="src", memory="readback")
        dst = Buffer(dev, 1024, STORAGE, label="dst", memory="readback")
        assert not src.allocation.coherent
        ones = np.ones(1024, np.uint8)
        zeros = np.zeros(1024, np.uint8)
        src.write(zeros)  # new memory holds whatever it held before: zero both, flushed
        dst.write(zeros)
        # written without a flush: the device does not see it
        src.allocation.view(0, 1024)[:] = ones
        gpu_copy(dev, src, dst, 1024)
        dst.allocation.invalidate(0, 1024)
        assert not dst.allocation.view(0, 1024).any()
        # Buffer.write flushes
        src.write(ones)
        gpu_copy(dev, src, dst, 1024)
        assert not dst.allocation.view(0, 1024).any()  # not invalidated yet: stale
        assert np.array_equal(dst.read(np.uint8, 1024), ones)  # read() invalidates
        # ranges are whole atoms of the profile's nonCoherentAtomSize
        atom = dev.info.non_coherent_atom_size
        assert src.allocation.offset % atom == 0 and src.allocation.size % atom == 0
    finally:
        dev.close()


def test_a_full_heap_is_one_error_naming_it():
    dev = profile_device("discrete")
    try:
        # every heap as if all but 1 MiB of it were taken (the allocator falls back from one
        # heap to the next: VRAM, the BAR window, system memory)
        for h, heap in enumerate(dev.memory_table.heaps):
            dev.allocator.heap_bytes[h] = heap.size - 2**20
        with pytest.raises(CapabilityError) as err:
            Buffer(dev, 40 * 2**20, STORAGE, label="rest positions", memory="static")
        text = str(err.value)
        assert "cannot allocate 41943040 bytes (40.0 MiB) of static memory" in text
        assert "'rest positions'" in text
        assert "heap 0 (8019 MiB, size 8019 MiB) has 8018.0 MiB in use" in text
        assert dev.live_objects() == 0
        assert "heap 1 (16351 MiB" in text and "heap 2 (214 MiB" in text
        dev.allocator.heap_bytes[:] = [0, 0, 0]
    finally:
        dev.close()


def test_static_data_falls_back_to_another_heap_when_vram_is_full():
    dev = profile_device("discrete")
    try:
        dev.allocator.heap_bytes[0] = dev.memory_table.heaps[0].size - 2**20
        b = Buffer(dev, 40 * 2**20, STORAGE, label="rest", memory="static")
        assert dev.memory_table.types[b.memory_type].heap != 0
        b.write(np.ones(16, np.float32))
        assert np.array_equal(b.read(np.float32, 16), np.ones(16, np.float32))
        b.destroy()
        dev.allocator.heap_bytes[0] = 0
    finally:
        dev.close()


def test_dynamic_data_leaves_the_bar_window_when_it_is_full():
    dev = profile_device("discrete")
    try:
        window = dev.memory_table.heaps[2].size  # 214 MiB
        bufs = [
            Buffer(dev, 60 * 2**20, STORAGE, label=f"bones {i}", memory="dynamic")
            for i in range(window // (60 * 2**20) + 2)
        ]
        heaps = {dev.memory_table.types[b.memory_type].heap for b in bufs}
        assert heaps == {1, 2}  # the window first, system memory after
        report = dev.memory_report()
        assert report["heaps"][2]["memory_bytes"] <= window
        for b in bufs:
            b.destroy()
    finally:
        dev.close()


def test_sub_allocation_keeps_the_allocation_count_low():
    dev = profile_device("vulkan-minimum")  # maxMemoryAllocationCount 4096
    try:
        bufs = [
            Buffer(dev, 4096, vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT, label=f"m{i}", memory="static")
            for i in range(5000)
        ]
        report = dev.memory_report()
        assert report["max_memory_objects"] == 4096
        assert report["memory_objects"] <= 2
        row = report["heaps"][0]["classes"]["static"]
        assert row["allocations"] == 5000 and row["bytes"] >= 5000 * 4096
        for b in bufs:
            b.destroy()
        assert dev.memory_report()["memory_objects"] <= 1  # one spare block kept
    finally:
        dev.close()


def test_the_allocation_count_is_enforced():
    dev = profile_device("vulkan-minimum")
    try:
        allocator = dev.allocator
        allocator.count = dev.info.max_memory_allocation_count  # as if 4096 were made
        with pytest.raises(CapabilityError, match="maxMemoryAllocationCount is 4096"):
            Buffer(dev, 64 * 2**20, STORAGE, label="one more", memory="gpu")
        allocator.count = 0
    finally:
        dev.close()


def test_vulkan_minimum_limits_are_the_specifications():
    dev = profile_device("vulkan-minimum")
    try:
        info = dev.info
        assert info.memory_profile == "vulkan-minimum"
        assert info.max_uniform_buffer_range == 16384
        assert info.max_storage_buffer_range == 2**27
        assert info.max_push_constants_size == 128
        assert info.max_texel_buffer_elements == 65536
        assert info.max_compute_work_group_invocations == 128
        assert info.max_bound_descriptor_sets == 4
        assert info.max_memory_allocation_count == 4096
    finally:
        dev.close()


def test_the_report_counts_by_heap_and_class(fresh_device):
    before = fresh_device.memory_report()
    b = Buffer(fresh_device, 1000, STORAGE, label="r", memory="readback")
    after = fresh_device.memory_report()
    heap = fresh_device.memory_table.types[b.memory_type].heap
    row = after["heaps"][heap]["classes"]["readback"]
    old = before["heaps"][heap]["classes"].get("readback", {"bytes": 0, "allocations": 0})
    assert row["allocations"] == old["allocations"] + 1
    assert row["bytes"] >= old["bytes"] + 1000
    profile = fresh_device.info.memory_profile  # $VKDQS_MEMORY_PROFILE, or None
    assert after["profile"] == profile and after["simulated"] == (profile is not None)
    b.destroy()
    assert fresh_device.memory_report()["heaps"][heap]["classes"].get("readback", old) == old


def count_submissions(monkeypatch) -> list[int]:
    """Patch the staging copies' submit to count its calls (and the copies each carried)."""
    from vkdqs.gpu.memory import transfer

    calls: list[int] = []
    real = transfer._submit

    def counted(device, copies, label, recordings=()):
        calls.append(len(copies) + len(recordings))  # buffer copies and image uploads
        real(device, copies, label, recordings)

    monkeypatch.setattr(transfer, "_submit", counted)
    return calls


def test_batched_uploads_share_one_submission(monkeypatch):
    from vkdqs.gpu import batched_uploads

    dev = profile_device("discrete")
    try:
        calls = count_submissions(monkeypatch)
        data = [np.full(64, i, np.float32) for i in range(10)]
        with batched_uploads(dev):
            bufs = [Buffer(dev, 256, STORAGE, label=f"s{i}", memory="static") for i in range(10)]
            for b, d in zip(bufs, data, strict=True):
                b.write(d)
            gone = Buffer(dev, 256, STORAGE, label="gone", memory="static")
            gone.write(np.ones(64, np.float32))
            gone.destroy()  # its copy is dropped, not recorded against a destroyed buffer
            assert calls == []
        assert calls == [10]
        for b, d in zip(bufs, data, strict=True):
            assert np.array_equal(b.read(np.float32, 64), d)
        assert dev.live_objects() == 10  # no staging buffer or command buffer left
    finally:
        dev.close()


def test_work_submitted_inside_a_batch_sees_its_uploads(monkeypatch):
    from vkdqs.gpu import batched_uploads

    dev = profile_device("discrete")
    try:
        calls = count_submissions(monkeypatch)
        with batched_uploads(dev):
            src = Buffer(dev, 256, STORAGE, label="src", memory="static")
            src.write(np.arange(64, dtype=np.float32))
            dst = Buffer(dev, 256, STORAGE, label="dst", memory="readback")
            gpu_copy(dev, src, dst, 256)  # any submission flushes the batch first
            assert np.array_equal(dst.read(np.float32, 64), np.arange(64, dtype=np.float32))
            src.write(np.zeros(64, np.float32))
            assert not src.read(np.float32, 64).any()  # a read flushes too
        assert calls == [1, 1, 1]  # upload, upload, the read's copy
    finally:
        dev.close()


def test_a_skinner_uploads_its_mesh_in_one_submission(monkeypatch):
    from vkdqs import procedural
    from vkdqs.engine.skinner import Skinner

    dev = profile_device("discrete")
    try:
        calls = count_submissions(monkeypatch)
        mesh = procedural.tube(500, bone_count=4, influences=4)
        with Skinner(dev, mesh, bone_count=4) as s:
            assert len(calls) == 1 and calls[0] >= 4  # positions, normals, joints, weights...
            s.skin(procedural.bone_chain_pose(4, 20.0))
    finally:
        dev.close()


def test_a_renderer_mesh_uploads_its_textures_with_its_buffers(monkeypatch):
    """On a discrete GPU a textured mesh's buffers and its texture (the copy into the image,
    its layout transitions and mips) go in one submission; the image is drawn as uploaded."""
    from vkdqs import Material
    from vkdqs.camera import Camera
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    from .test_materials_render import quad

    dev = profile_device("discrete")
    try:
        rgba = np.zeros((16, 16, 4), np.uint8)
        rgba[..., 1] = rgba[..., 3] = 255  # green
        with OffscreenTarget(dev, 64, 64) as target, Renderer(dev, target) as renderer:
            calls = count_submissions(monkeypatch)
            rm = renderer.add_mesh(quad(), material=Material(texture=rgba), label="quad")
            assert len(calls) == 1 and calls[0] >= 5, calls  # the buffers and the texture
            renderer.add_instance(rm, bone_count=1, color=(1, 1, 1, 1))
            renderer.camera = Camera(distance=4.0)
            image = renderer.render_image()
        drawn = image[..., :3].reshape(-1, 3).astype(int)
        assert (drawn[:, 1] > drawn[:, 0] + 60).sum() > 100  # the green texture shows
    finally:
        dev.close()


def test_the_budget_query_calls_the_core_entry_point():
    """VK_EXT_memory_budget's query goes through vkGetPhysicalDeviceMemoryProperties2 (core
    1.1); lavapipe lacks the extension and leaves the budget 0, which counts as no limit.
    Without validation: the structure is the extension's, which lavapipe does not list."""
    from vkdqs.gpu import Device
    from vkdqs.gpu.device import _budget_query

    with Device(validation=False) as dev:
        assert _budget_query(dev.physical_device)(0) > 0
