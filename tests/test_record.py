"""Skinner.record: one pose skinned into an app's buffers, in the app's command buffer.

The app (tests/vulkan_app.py) records, submits on its own queue and waits on its own fence;
vkdqs only records. The rows it finds in its buffers are the bits ``Skinner.skin`` returns (the
same pipeline on the same inputs, then copies), checked against the float64 reference too; the
validation layer (with synchronization validation in the suite) checks every sequence.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import vulkan as vk

from vkdqs import DeltaMushSkinner, Skinner, dq, procedural, reference
from vkdqs.errors import InputError, OwnershipError
from vkdqs.gpu import AppBuffer, Buffer
from vkdqs.gpu.device import Device

from .test_morph import morph_mesh
from .vulkan_app import VulkanApp

pytestmark = pytest.mark.gpu

USAGE = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT


@pytest.fixture
def app():
    a = VulkanApp(features=("vertexPipelineStoresAndAtomics",))
    yield a
    a.destroy()
    assert not a.messages, "the app's validation messages:\n" + "\n".join(a.messages)


@pytest.fixture
def adopted(app):
    with Device.adopt(**app.adopt_kwargs()) as dev:
        yield dev
        assert not dev.take_messages()


def _rows(app, memory, offset, n, stride):
    raw = np.frombuffer(app.read(memory, offset + stride * n), np.float32, offset=offset)
    return raw.reshape(n, stride // 4)


def _poses():
    return [procedural.twist_pose(a) for a in (0, 45, 90, 135, 170)]


def test_recorded_rows_are_the_bits_skin_returns(app, adopted):
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    pos, pos_mem = app.host_buffer(64 + 12 * n, USAGE)
    nrm, nrm_mem = app.host_buffer(12 * n, USAGE)
    positions = AppBuffer(adopted, pos, size=64 + 12 * n, usage=USAGE, label="app positions")
    normals = AppBuffer(adopted, nrm, size=12 * n, usage=USAGE, label="app normals")
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        submitted = app.submissions
        for frame, pose in enumerate(_poses()):  # more frames than the ring has slots
            cmd = app.begin()
            slot = skinner.record(cmd, pose, positions=(positions, 64), normals=(normals, 0))
            assert slot == frame % skinner.frames_in_flight
            app.end_submit_wait()
            got_p = _rows(app, pos_mem, 64, n, 12)
            got_n = _rows(app, nrm_mem, 0, n, 12)
            want_p, want_n = skinner.skin(pose)
            np.testing.assert_array_equal(got_p, want_p)
            np.testing.assert_array_equal(got_n, want_n)
            args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
            ref_p, _ = reference.skin_dqs(*args, dq.from_matrices(pose))
            np.testing.assert_allclose(got_p, ref_p, atol=1e-5)
        # record() submitted nothing through the app's callback: only skin() did
        assert app.submissions - submitted == len(_poses())


def test_two_poses_in_one_command_buffer_and_vec4_rows(app, adopted):
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    size = 2 * 16 * n
    buf, mem = app.host_buffer(size, USAGE)
    sentinel = np.full((2 * n, 4), 7.0, np.float32)
    app.write(mem, sentinel.tobytes())
    target = AppBuffer(adopted, buf, size=size, usage=USAGE)
    poses = [procedural.twist_pose(30), procedural.twist_pose(150)]
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        cmd = app.begin()
        for i, pose in enumerate(poses):  # both ring slots in one frame: no hazard between them
            skinner.record(cmd, pose, positions=(target, i * 16 * n), stride=16)
        app.end_submit_wait()
        rows = _rows(app, mem, 0, 2 * n, 16)
        for i, pose in enumerate(poses):
            want, _ = skinner.skin(pose)
            np.testing.assert_array_equal(rows[i * n : (i + 1) * n, :3], want)
        np.testing.assert_array_equal(rows[:, 3], 7.0)  # the fourth float left as it was


def test_morph_weights_are_recorded_too(app, adopted):
    mesh = morph_mesh(np.random.default_rng(5), 300, 4, 6)
    n = mesh.vertex_count
    buf, mem = app.host_buffer(12 * n, USAGE)
    target = AppBuffer(adopted, buf, size=12 * n, usage=USAGE)
    weights = np.linspace(0.2, 0.9, mesh.morph_target_count).astype(np.float32)
    bones = np.stack([procedural.twist_pose(20 * b)[1] for b in range(6)])
    with Skinner(adopted, mesh, bone_count=6) as skinner:
        cmd = app.begin()
        skinner.record(cmd, bones, positions=(target, 0), morph_weights=weights)
        app.end_submit_wait()
        want, _ = skinner.skin(bones, weights)
    np.testing.assert_array_equal(_rows(app, mem, 0, n, 12), want)


def test_a_wrong_destination_is_refused_before_anything_is_recorded(app, adopted, device):
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    buf, _ = app.host_buffer(12 * n, USAGE)
    pose = procedural.twist_pose(30)
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        cmd = app.begin()
        good = AppBuffer(adopted, buf, size=12 * n, usage=USAGE)
        with pytest.raises(InputError, match=r"wrap the app.s VkBuffer as vkdqs\.gpu\.AppBuffer"):
            skinner.record(cmd, pose, positions=(buf, 0))
        with pytest.raises(InputError, match="do not fit"):
            skinner.record(cmd, pose, positions=(good, 12))
        with pytest.raises(InputError, match="not a multiple of 4"):
            skinner.record(cmd, pose, positions=(good, 2))
        no_dst = AppBuffer(adopted, buf, size=12 * n, usage=vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT)
        with pytest.raises(InputError, match="TRANSFER_DST"):
            skinner.record(cmd, pose, positions=(no_dst, 0))
        with pytest.raises(InputError, match="stride must be 12 or 16"):
            skinner.record(cmd, pose, positions=(good, 0), stride=20)
        with pytest.raises(InputError, match="dst_stage"):
            skinner.record(cmd, pose, positions=(good, 0), dst_stage="fragment_sometimes")
        if device is not adopted:
            other = Buffer(device, 12 * n, USAGE, label="other device's")
            with pytest.raises(OwnershipError):
                skinner.record(cmd, pose, positions=(other, 0))
            other.destroy()
        assert skinner._recorder is None or skinner._recorder.frame == 0  # nothing recorded
        app.end_submit_wait()  # an empty command buffer


def test_record_is_for_the_compute_path(app, adopted):
    mesh = procedural.candy_wrapper()
    buf, _ = app.host_buffer(12 * mesh.vertex_count, USAGE)
    target = AppBuffer(adopted, buf, size=12 * mesh.vertex_count, usage=USAGE)
    pose = procedural.twist_pose(30)
    cmd = app.begin()
    with Skinner(adopted, mesh, bone_count=2, path="vertex") as skinner:
        with pytest.raises(InputError, match="path='compute'"):
            skinner.record(cmd, pose, positions=(target, 0))
    app.end_submit_wait()


def test_frames_in_flight_is_fixed_by_the_first_record(app, adopted):
    mesh = procedural.candy_wrapper()
    buf, _ = app.host_buffer(12 * mesh.vertex_count, USAGE)
    target = AppBuffer(adopted, buf, size=12 * mesh.vertex_count, usage=USAGE)
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        cmd = app.begin()
        for bad in (0, 17, 10**9, True, 2.0):  # refused before anything is made or recorded
            skinner.frames_in_flight = bad
            with pytest.raises(InputError, match=r"frames_in_flight must be an int in \[1, 16\]"):
                skinner.record(cmd, procedural.twist_pose(0), positions=(target, 0))
        app.end_submit_wait()
        skinner.frames_in_flight = 3
        for frame in range(4):
            cmd = app.begin()
            assert (
                skinner.record(cmd, procedural.twist_pose(10 * frame), positions=(target, 0))
                == frame % 3
            )
            app.end_submit_wait()
        skinner.frames_in_flight = 2
        cmd = app.begin()
        with pytest.raises(InputError, match="cannot change"):
            skinner.record(cmd, procedural.twist_pose(0), positions=(target, 0))
        app.end_submit_wait()


def _copy_out(app, src, dst, nbytes):
    """The app's next use of the outputs: a transfer read of them."""
    region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=nbytes)
    vk.vkCmdCopyBuffer(app._cmd, src, dst, 1, [region])


# The direct path's missing barrier is not among them: the installed layer (Debian 12's
# 1.3.239) tracks no storage texel buffer writes (two unsynchronized dispatches writing one
# texel range are not reported either), so for it this shows only that nothing is reported;
# its barriers follow the contract in vkdqs/engine/recording.py.
@pytest.mark.parametrize(
    ("dst_stage", "direct"),
    [("transfer", False), (None, False), ("transfer", True)],
    ids=["copied", "copied-no-barrier", "direct"],
)
def test_the_barrier_after_the_copies_is_what_synchronization_validation_asks(
    app, adopted, dst_stage, direct
):
    """With ``dst_stage`` the app's read of the outputs is ordered after vkdqs's copies; with
    None (the app records its own barrier) and no barrier, the layer reports the hazard: the
    contract is checked, not assumed."""
    import os

    if os.environ.get("VKDQS_SYNC_VALIDATION", "") in ("", "0") or not app.validation:
        pytest.skip("needs synchronization validation (the suite turns it on)")
    mesh = procedural.candy_wrapper()
    nbytes = 12 * mesh.vertex_count
    usage = (DIRECT if direct else USAGE) | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
    src, _ = app.host_buffer(2 * nbytes, usage)
    dst, _ = app.host_buffer(nbytes, usage | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
    target = AppBuffer(adopted, src, size=2 * nbytes, usage=usage)
    normals = (target, nbytes) if direct else None
    loggers = [logging.getLogger(n) for n in ("vulkan_app.validation", "vkdqs.validation")]
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        skinner.skin(procedural.twist_pose(10))  # pipelines made outside the frame
        for lg in loggers:
            lg.disabled = dst_stage is None  # the hazard expected below
        try:
            cmd = app.begin()
            pose = procedural.twist_pose(40)
            positions = (target, 0)
            skinner.record(cmd, pose, positions=positions, normals=normals, dst_stage=dst_stage)
            _copy_out(app, src, dst, nbytes)
            app.end_submit_wait()
        finally:
            for lg in loggers:
                lg.disabled = False
    hazards = [m for m in app.messages if "SYNC-HAZARD" in m]
    adopted.take_messages()
    if dst_stage is None:
        assert any("READ_AFTER_WRITE" in m for m in hazards), app.messages
        app.messages.clear()
    else:
        assert not hazards


def test_the_recorded_box_is_the_exact_box_of_the_positions(app, adopted):
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    buf, mem = app.host_buffer(12 * n, USAGE)
    target = AppBuffer(adopted, buf, size=12 * n, usage=USAGE)
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        with pytest.raises(InputError, match="before any record"):
            skinner.recorded_bounds(0)
        for frame, pose in enumerate(_poses()[:3]):
            cmd = app.begin()
            slot = skinner.record(cmd, pose, positions=(target, 0), bounds=frame != 1)
            app.end_submit_wait()
            if frame == 1:
                with pytest.raises(InputError, match="not recorded with bounds=True"):
                    skinner.recorded_bounds(slot)
                continue
            got = _rows(app, mem, 0, n, 12)
            box = skinner.recorded_bounds(slot)
            np.testing.assert_array_equal(box, np.stack([got.min(0), got.max(0)]))
            np.testing.assert_array_equal(got, skinner.skin(pose)[0])  # still the same bits


DIRECT = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT


def test_one_storage_texel_buffer_is_written_by_the_dispatch_itself(app, adopted):
    """Positions and normals in one app buffer with STORAGE_TEXEL_BUFFER usage: the dispatch
    writes the rows there (no copy: the buffer has no TRANSFER_DST usage, which a copy would
    need and the validation layer would report), the same bits as skin()."""
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    size = 64 + 24 * n + 16
    buf, mem = app.host_buffer(size, DIRECT)
    target = AppBuffer(adopted, buf, size=size, usage=DIRECT, label="app vertices")
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        for frame, pose in enumerate(_poses()):
            cmd = app.begin()
            skinner.record(
                cmd,
                pose,
                positions=(target, 64),
                normals=(target, 64 + 12 * n),
                bounds=frame % 2 == 0,
            )
            app.end_submit_wait()
            got_p = _rows(app, mem, 64, n, 12)
            got_n = _rows(app, mem, 64 + 12 * n, n, 12)
            want_p, want_n = skinner.skin(pose)
            np.testing.assert_array_equal(got_p, want_p)
            np.testing.assert_array_equal(got_n, want_n)
            if frame % 2 == 0:
                box = skinner.recorded_bounds(frame % skinner.frames_in_flight)
                np.testing.assert_array_equal(box, np.stack([want_p.min(0), want_p.max(0)]))
        assert skinner._recorder._out is None  # no ring output of its own: nothing copied
        with pytest.raises(InputError, match="TRANSFER_DST"):  # apart: copied, so refused here
            skinner.record(app.begin(), _poses()[0], positions=(target, 0))
        app.end_submit_wait()


def test_vec4_rows_in_a_storage_texel_buffer_are_written_by_the_dispatch(app, adopted):
    """16-byte rows in one buffer with STORAGE_TEXEL_BUFFER usage: the dispatch writes xyz at
    the vec4 stride (OUTPUT_STRIDE 4), the fourth float of every row left as it was."""
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    size = 32 * n
    buf, mem = app.host_buffer(size, DIRECT)
    app.write(mem, np.full((2 * n, 4), 7.0, np.float32).tobytes())
    target = AppBuffer(adopted, buf, size=size, usage=DIRECT)
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        for pose in _poses()[:3]:
            cmd = app.begin()
            skinner.record(cmd, pose, positions=(target, 0), normals=(target, 16 * n), stride=16)
            app.end_submit_wait()
            rows = _rows(app, mem, 0, 2 * n, 16)
            want_p, want_n = skinner.skin(pose)
            np.testing.assert_array_equal(rows[:n, :3], want_p)
            np.testing.assert_array_equal(rows[n:, :3], want_n)
            np.testing.assert_array_equal(rows[:, 3], 7.0)


def test_a_slot_whose_command_buffer_has_not_run_is_refused(app, adopted):
    """The frames_in_flight promise, checked where the GPU can tell: each recording's mark."""
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    buf, mem = app.host_buffer(12 * n, USAGE)
    target = AppBuffer(adopted, buf, size=12 * n, usage=USAGE)
    poses = _poses()
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        cmd = app.begin()
        assert [skinner.record(cmd, p, positions=(target, 0)) for p in poses[:2]] == [0, 1]
        with pytest.raises(InputError, match="slot 0 is still in flight"):
            skinner.record(cmd, poses[2], positions=(target, 0))  # nothing recorded
        app.end_submit_wait()
        np.testing.assert_array_equal(_rows(app, mem, 0, n, 12), skinner.skin(poses[1])[0])
        cmd = app.begin()
        assert skinner.record(cmd, poses[2], positions=(target, 0)) == 0  # slot 0 has run
        vk.vkEndCommandBuffer(cmd)  # thrown away without being submitted
        cmd = app.begin()
        assert skinner.record(cmd, poses[3], positions=(target, 0)) == 1
        with pytest.raises(InputError, match="slot 0 is still in flight"):
            skinner.record(cmd, poses[4], positions=(target, 0))
        skinner.forget_recordings()
        assert skinner.record(cmd, poses[4], positions=(target, 0)) == 0
        app.end_submit_wait()
        np.testing.assert_array_equal(_rows(app, mem, 0, n, 12), skinner.skin(poses[4])[0])


def _mush_skinner(device, mesh, kind):
    if kind == "delta_mush":
        return Skinner(device, mesh, bone_count=2, method="delta_mush")
    return DeltaMushSkinner(device, mesh, bone_count=2, method="dqs", iterations=4)


@pytest.mark.parametrize(
    ("kind", "bounds"), [("delta_mush", False), ("delta_mush", True), ("dqs", True)]
)
def test_delta_mush_passes_are_recorded_on_the_ring(app, adopted, kind, bounds):
    """A method with passes after the skinning (classic Delta Mush): the passes run on the
    ring's slot in the app's command buffer (descriptor sets of their own), the rows are
    copied; the same bits as skin() (the same pipelines and passes on the same inputs), the
    box the bounds pass reduces from the mushed positions."""
    mesh = procedural.candy_wrapper()
    n = mesh.vertex_count
    size = 24 * n
    usage = USAGE | DIRECT  # the direct path would be possible: the passes need the copy
    buf, mem = app.host_buffer(size, usage)
    target = AppBuffer(adopted, buf, size=size, usage=usage)
    with _mush_skinner(adopted, mesh, kind) as skinner:
        for frame, pose in enumerate(_poses()):
            cmd = app.begin()
            slot = skinner.record(
                cmd, pose, positions=(target, 0), normals=(target, 12 * n), bounds=bounds
            )
            if frame == 1:  # a batch of the Skinner's own between two frames
                many = skinner.skin_many(np.stack(_poses()[:3]))
            app.end_submit_wait()
            want_p, want_n = skinner.skin(pose)
            np.testing.assert_array_equal(_rows(app, mem, 0, n, 12), want_p)
            np.testing.assert_array_equal(_rows(app, mem, 12 * n, n, 12), want_n)
            if bounds:
                box = skinner.recorded_bounds(slot)
                np.testing.assert_array_equal(box, np.stack([want_p.min(0), want_p.max(0)]))
        np.testing.assert_array_equal(many[0][2], skinner.skin(_poses()[2])[0])
        with Skinner(adopted, mesh, bone_count=2, method="lbs") as lbs:  # the passes show
            assert np.abs(lbs.skin(_poses()[-1])[0] - want_p).max() > 1e-3 * mesh.extent


def test_a_pass_that_does_not_record_for_the_ring_is_refused(app, adopted):
    class OwnPass:
        def record(self, cmd, target):
            pass

    mesh = procedural.candy_wrapper()
    buf, _ = app.host_buffer(12 * mesh.vertex_count, USAGE)
    target = AppBuffer(adopted, buf, size=12 * mesh.vertex_count, usage=USAGE)
    with Skinner(adopted, mesh, bone_count=2) as skinner:
        skinner.add_pass(OwnPass())
        cmd = app.begin()
        with pytest.raises(InputError, match=r"passes \['OwnPass'\].*records_ring"):
            skinner.record(cmd, procedural.twist_pose(30), positions=(target, 0))
        app.end_submit_wait()
