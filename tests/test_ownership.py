"""Objects that belong to someone else, the renderer's untyped errors, and the garbage-collection
safety net for Devices and owners that were never closed."""

from __future__ import annotations

import gc
import os
import warnings

import numpy as np
import pytest

from vkdqs import InputError, ObjectDestroyedError, OwnershipError, dq, procedural, reference
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.gpu import Buffer

from .conftest import _open_device


@pytest.fixture
def two_renderers(device):
    mesh = procedural.candy_wrapper()
    with (
        OffscreenTarget(device, 64, 48) as ta,
        OffscreenTarget(device, 64, 48) as tb,
        Renderer(device, ta) as a,
        Renderer(device, tb) as b,
    ):
        yield mesh, a, b


def test_a_mesh_of_another_renderer_is_refused(two_renderers):
    mesh, a, b = two_renderers
    rm = a.add_mesh(mesh)
    with pytest.raises(OwnershipError, match="uploaded by another Renderer"):
        b.add_instance(rm, bone_count=2)
    a.close()  # B never drew A's buffers: closing A cannot break B
    b.add_instance(b.add_mesh(mesh), bone_count=2)
    b.frame_scene()
    assert b.render_image().shape == (48, 64, 4)


def test_a_mesh_of_a_closed_renderer_is_refused(two_renderers):
    mesh, a, b = two_renderers
    rm = a.add_mesh(mesh)
    a.close()
    with pytest.raises(OwnershipError):
        b.add_instance(rm, bone_count=2)
    with pytest.raises(ObjectDestroyedError):
        a.add_instance(rm, bone_count=2)


def test_skinned_mesh_instead_of_render_mesh(two_renderers):
    mesh, a, _ = two_renderers
    with pytest.raises(InputError, match=r"takes the RenderMesh that add_mesh\(\) returns"):
        a.add_instance(mesh, bone_count=2)


def test_removing_another_renderers_instance(two_renderers):
    mesh, a, b = two_renderers
    inst = a.add_instance(a.add_mesh(mesh), bone_count=2)
    with pytest.raises(InputError, match="not drawn by this renderer"):
        b.remove_instance(inst)
    a.remove_instance(inst)
    with pytest.raises(InputError, match="already removed"):
        a.remove_instance(inst)


def test_framing_an_empty_scene(two_renderers):
    _, a, _ = two_renderers
    with pytest.raises(InputError, match="the scene is empty"):
        a.frame_scene()


def test_wait_before_the_first_frame(two_renderers):
    _, a, _ = two_renderers
    a.wait()  # nothing submitted yet: returns at once
    assert a.frames_rendered == 0


def test_a_target_of_another_device_is_refused(device):
    other = _open_device()
    try:
        with OffscreenTarget(other, 32, 32) as target:
            with pytest.raises(OwnershipError, match="belongs to another Device"):
                Renderer(device, target)
        assert other.live_objects() == 0
        assert not [m.message for m in other.take_messages()]
    finally:
        other.close()


def test_a_closed_target_is_refused(device):
    target = OffscreenTarget(device, 32, 32)
    target.close()
    with pytest.raises(ObjectDestroyedError):
        Renderer(device, target)


def test_own_and_release_keep_one_owner_per_object(device):
    """``own()`` takes an object of the owner's Device once; ``release()`` destroys only what
    this owner owns; close() destroys what is still owned."""
    usage = 0x10  # VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
    with Skinner(device, procedural.candy_wrapper(), bone_count=2) as a:
        with Skinner(device, procedural.candy_wrapper(), bone_count=2) as b:
            buf = a.own(Buffer(device, 64, usage, label="owned"))
            with pytest.raises(OwnershipError, match="already has an owner"):
                a.own(buf)
            with pytest.raises(OwnershipError, match="already has an owner"):
                b.own(buf)
            with pytest.raises(OwnershipError, match="not owned by this Skinner"):
                b.release(buf)
            a.release(buf)
            assert buf.destroyed
            with pytest.raises(OwnershipError, match="not owned"):
                a.release(buf)  # released once, not twice
            with pytest.raises(ObjectDestroyedError):
                b.own(buf)
            with pytest.raises(InputError, match="DeviceObject"):
                a.own("a buffer")
            kept = a.own(Buffer(device, 64, usage, label="kept"))
        assert not kept.destroyed  # b's close() leaves a's objects alone
    assert kept.destroyed


def test_own_refuses_an_object_of_another_device(device):
    other = _open_device()
    try:
        with Buffer(other, 64, 0x10, label="elsewhere") as buf:
            with Skinner(device, procedural.candy_wrapper(), bone_count=2) as skinner:
                with pytest.raises(OwnershipError, match="belongs to another Device"):
                    skinner.own(buf)
        assert other.live_objects() == 0
    finally:
        other.close()


def test_owners_need_a_device():
    with pytest.raises(InputError, match=r"device must be a vkdqs\.Device"):
        Skinner("gpu", procedural.candy_wrapper(), bone_count=2)
    with pytest.raises(InputError, match=r"device must be a vkdqs\.Device"):
        OffscreenTarget(None, 8, 8)


def test_non_finite_model_names_the_entry(two_renderers):
    mesh, a, _ = two_renderers
    inst = a.add_instance(a.add_mesh(mesh), bone_count=2)
    m = np.eye(4)
    m[1, 3] = np.inf
    with pytest.raises(InputError, match=r"entry \[1, 3\] is inf"):
        inst.set_model(m)
    with pytest.raises(InputError, match=r"got shape \(3, 3\)"):
        inst.set_model(np.eye(3))
    with pytest.raises(InputError, match="matrix of numbers"):
        inst.set_model([[1, 0, 0, 0], [0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    with pytest.raises(InputError, match="singular"):
        inst.set_model(np.diag([0.0, 0.0, 0.0, 1.0]))
    with pytest.raises(InputError, match="color must have 3 or 4 finite components"):
        a.add_instance(inst.mesh, bone_count=2, color=[1.0, [0.5, 0.2], 0.1])


def test_skin_many_memory_stays_bounded(device):
    """A large batch runs in chunks: the Skinner's buffers stay under max_batch_bytes, and the
    results equal the reference for every pose."""
    mesh = procedural.candy_wrapper()
    with Skinner(device, mesh, bone_count=2) as skinner:
        skinner.max_batch_bytes = 256 * 1024
        poses = np.stack([dq.from_matrices(procedural.twist_pose(a)) for a in range(0, 181, 2)])
        positions, normals = skinner.skin_many(poses)
        buffers = [o for o in skinner._objects if isinstance(o, Buffer)]
        mesh_bytes = sum(b.size for b in skinner._mesh_buffers.values())
        assert sum(b.size for b in buffers) - mesh_bytes <= skinner.max_batch_bytes
        assert skinner._capacity < len(poses)  # it really ran in several submissions
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    for i in (0, 37, len(poses) - 1):
        ref_p, ref_n = reference.skin_dqs(*args, poses[i])
        np.testing.assert_allclose(positions[i], ref_p, rtol=0, atol=1e-5 * mesh.extent)
        np.testing.assert_allclose(normals[i], ref_n, rtol=0, atol=1e-5)


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _forgotten_device_cycle(mesh, pose) -> None:
    device = _open_device()
    skinner = Skinner(device, mesh, bone_count=2)
    skinner.skin(pose)
    assert not device.take_messages()
    # dropped without close(): the finalizers must release both


@pytest.mark.gpu  # opens its own Devices
def test_forgotten_devices_are_released_by_the_garbage_collector():
    """Devices (each with a Skinner that skinned once) dropped without close() leave no threads
    and no memory behind once collected, and each warns that close() was not called."""
    mesh = procedural.candy_wrapper()
    pose = procedural.twist_pose(45)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        _forgotten_device_cycle(mesh, pose)  # warm-up: lazily loaded libraries, caches
        gc.collect()
        threads, rss = _threads(), _rss_mib()
        for _ in range(30):
            _forgotten_device_cycle(mesh, pose)
            gc.collect()  # steady state: a long-running app collects between them
    assert _threads() <= threads, "threads of forgotten Devices are still running"
    growth = _rss_mib() - rss
    # Closed Devices grow 3-8 MiB over 30 cycles here (allocator noise); one leaked lavapipe
    # Device costs ~6 MB and 6 threads, so 30 of them would show ~180 MB.
    assert growth < 32, f"30 forgotten Devices left {growth:.0f} MiB behind"
    messages = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert sum("Device" in m and "without close()" in m for m in messages) >= 31


def test_a_forgotten_skinner_is_released_while_its_device_lives(fresh_device):
    mesh = procedural.candy_wrapper()
    skinner = Skinner(fresh_device, mesh, bone_count=2)
    skinner.skin(procedural.twist_pose(10))
    assert fresh_device.live_objects() > 0
    with pytest.warns(ResourceWarning, match="Skinner was garbage-collected without close"):
        del skinner
        gc.collect()
    assert fresh_device.live_objects() == 0, fresh_device.live_object_labels()


def test_closed_objects_do_not_warn(fresh_device):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        skinner = Skinner(fresh_device, procedural.candy_wrapper(), bone_count=2)
        skinner.close()
        del skinner
        gc.collect()


def test_host_texels_grow_and_belong_to_their_owner(device):
    """A pass's host-written texel buffer: ensure() grows it (saying so, so a set points at the
    new view), releases the old objects at once, refuses a write that does not fit, and the
    owner's close() destroys what is left."""
    from vkdqs.gpu import HostTexels
    from vkdqs.gpu.calls import vk

    with Skinner(device, procedural.candy_wrapper(), bone_count=2) as owner:
        texels = HostTexels(owner, vk.VK_FORMAT_R32G32B32A32_SFLOAT, 16, "per-pose data")
        with pytest.raises(ValueError, match="ensure"):
            texels.write(np.zeros(4, np.float32))
        assert texels.ensure(3) and texels.capacity == 3
        first, view = texels.buffer, texels.view
        assert not texels.ensure(2)
        texels.write(np.arange(12, dtype=np.float32))
        np.testing.assert_array_equal(first.read(np.float32, 12), np.arange(12))
        with pytest.raises(ValueError, match="do not fit"):
            texels.write(np.zeros(16, np.float32))
        assert texels.ensure(5) and texels.view is not view
        assert first.destroyed and view.destroyed
        kept = texels.buffer
        assert not kept.destroyed
    assert kept.destroyed and texels.view.destroyed
