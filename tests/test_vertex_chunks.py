"""The compute path on a device whose texel views are smaller than a mesh's buffers (the
Vulkan minimum of maxTexelBufferElements is 65536): the Skinner dispatches the mesh in chunks
of whole workgroups, each with views of its own vertices, and writes a pose's output through
views of its chunks where one view cannot hold it (vkdqs/engine/chunks.py).

A device made to report a small limit skins with the same bits as a device without it: each
vertex runs the same shader code on the same inputs, only the views it is read and written
through start elsewhere. Views past the limit are refused by BufferView itself, so a whole
view made by mistake fails these tests."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from vkdqs import DeltaMushSkinner, SkinnedMesh, dq, procedural
from vkdqs import shader_interface as si
from vkdqs.engine.chunks import CHUNK_VERTICES, vertex_chunks
from vkdqs.engine.skinner import Skinner
from vkdqs.errors import LimitError
from vkdqs.methods.cor.gpu import centers_of_rotation
from vkdqs.methods.ddm.gpu import mesh_ddm

from . import test_record
from .conftest import _open_device
from .test_morph import morph_mesh

#: the app and its adopted device (tests/test_record.py's fixtures)
app, adopted, USAGE = test_record.app, test_record.adopted, test_record.USAGE

N = 5000  # five chunks of 1024 vertices under a limit of 6144 texels


def _inputs(method="dqs", slots=4, layout="exact"):
    return si.mesh_inputs(slots, method, layout)


def test_a_mesh_that_fits_is_one_chunk():
    assert vertex_chunks(_inputs(), 10_000, 2**27, split_output=False) == ((0, 10_000),)
    # the output split per chunk, but three floats a vertex fit one view
    assert vertex_chunks(_inputs(), 20_000, 65536, split_output=True) == ((0, 20_000),)
    assert vertex_chunks(_inputs(), 0, 65536, split_output=True) == ((0, 0),)


@pytest.mark.parametrize(
    ("method", "slots", "n", "limit", "split"),
    [
        ("dqs", 4, 100_000, 65536, True),
        ("lbs", 8, 70_001, 65536, True),
        ("ddm", 8, 30_000, 65536, False),
        ("ddm", 4, 4097, 24576, True),
        ("dqs", 4, N, 6144, True),
    ],
)
def test_chunks_are_whole_workgroups_that_fit_the_limit(method, slots, n, limit, split):
    inputs = _inputs(method, slots)
    chunks = vertex_chunks(inputs, n, limit, split)
    assert len(chunks) > 1
    assert chunks[0][0] == 0 and sum(c for _, c in chunks) == n
    for (first, count), (after, _) in itertools.pairwise(chunks):
        assert first + count == after
    for first, count in chunks:
        assert first % CHUNK_VERTICES == 0
        assert all(count * m.texels <= limit for m in inputs)
        if split:  # its positions (or normals) view: 3 floats a vertex, from a 256-byte start
            assert 3 * count + 64 <= limit
    assert all(count % CHUNK_VERTICES == 0 for _, count in chunks[:-1])


def test_a_limit_below_one_chunk_is_one_line_error():
    with pytest.raises(LimitError, match="maxTexelBufferElements"):
        vertex_chunks(_inputs("ddm", 8), 10_000, 8192, split_output=True)


def limited_device(texels: int):
    dev = _open_device()
    dev.info = replace(dev.info, max_texel_buffer_elements=texels)
    return dev


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def _tube(influences=4, n=N, bones=8):
    return procedural.tube(n, bone_count=bones, influences=influences, segments=20)


def _poses(method, bones=8):
    out = []
    for angle in (25.0, -60.0, 110.0):
        pose = procedural.bone_chain_pose(bones, angle)
        out.append(dq.from_matrices(pose) if method in ("dqs",) else pose)
    return np.stack(out)


def _everything(dev, mesh, method, poses, **kw):
    """skin, skin(bounds=True), bounds, skin_many (one batch and in pieces), bounds_many."""
    with Skinner(dev, mesh, bone_count=poses.shape[1], method=method, **kw) as s:
        out = [*s.skin(poses[0]), *s.skin(poses[1], bounds=True), s.bounds(poses[2])]
        out += list(s.skin_many(poses))
        out.append(s.bounds_many(poses))
        s.max_batch_bytes = s.pose_bytes  # one pose a submission
        out += list(s.skin_many(poses))
        chunks = s.chunks
    return out, chunks


def _compare(device, mesh, method, poses, texels, want_chunks, **kw):
    want, one = _everything(device, mesh, method, poses, **kw)
    assert len(one) < want_chunks  # one, unless the device itself is limited (a profile)
    dev = limited_device(texels)
    try:
        got, chunks = _everything(dev, mesh, method, poses, **kw)
        assert not [m.message for m in dev.take_messages()]
    finally:
        dev.close()
    assert len(chunks) == want_chunks
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert same_bits(np.asarray(a), np.asarray(b))


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["dqs", "lbs", "dqs_blender", "blend", "cor"])
def test_chunked_skinning_has_the_bits_of_one_dispatch(device, method):
    mesh = _tube()
    kw = {}
    if method == "dqs_blender":
        kw["rest_matrices"] = np.tile(np.eye(4), (8, 1, 1))
    if method == "blend":
        blend = np.linspace(0.0, 1.0, mesh.vertex_count)
        args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights, mesh.indices)
        mesh = SkinnedMesh(*args, dqs_blend=blend)
    if method == "cor":  # any centers do for comparing the two (the precomputation reads its
        # pair bins whole: refused past the limit, docs/memory.md)
        rng = np.random.default_rng(2)
        kw["centers"] = mesh.positions + rng.normal(scale=0.05, size=mesh.positions.shape)
    poses = _poses(method)
    _compare(device, mesh, method, poses, 6144, 5, **kw)


@pytest.mark.gpu
def test_eight_slots_lean_rows_and_morphs_in_chunks(device):
    rng = np.random.default_rng(11)
    mesh = morph_mesh(rng, 3000, 6, 8, targets=3, layout="sparse")
    poses = np.stack([procedural.bone_chain_pose(8, a) for a in (10.0, 50.0, -30.0)])
    weights = np.array([0.4, 0.9, 0.2], np.float32)
    results = {}
    for texels in (None, 6144):
        dev = device if texels is None else limited_device(texels)
        try:
            with Skinner(dev, mesh, bone_count=8, method="lbs", layout="lean") as s:
                results[texels] = [
                    *s.skin(poses[0], weights),
                    *s.skin_many(poses, np.stack([weights, weights * 0, weights[::-1]])),
                    s.bounds(poses[1], weights),
                ]
                assert len(s.chunks) == (1 if texels is None else 3)
            if texels is not None:
                assert not [m.message for m in dev.take_messages()]
        finally:
            if texels is not None:
                dev.close()
    for a, b in zip(results[6144], results[None], strict=True):
        assert same_bits(a, b)


@pytest.mark.gpu
def test_direct_delta_mush_reads_its_omega_in_chunks(device):
    """Ω is 20 texels a vertex: 4097 vertices are chunked under 24576 texels with the output
    split, and under 40960 with one view of the output (chunked inputs only)."""
    mesh = procedural.tube(4097, bone_count=8, influences=4, segments=16, length=10.0)
    ddm = mesh_ddm(mesh, 8, device=device)
    poses = np.stack([procedural.bone_chain_pose(8, a) for a in (30.0, -80.0, 140.0)])
    _compare(device, mesh, "ddm", poses, 24576, 5, ddm=ddm)
    _compare(device, mesh, "ddm", poses, 40960, 3, ddm=ddm)


@pytest.mark.gpu
def test_delta_mush_refuses_a_split_output_with_the_limit(device):
    mesh = procedural.tube(3000, bone_count=4, influences=2)
    dev = limited_device(6144)
    try:
        with pytest.raises(LimitError, match="maxTexelBufferElements"):
            DeltaMushSkinner(dev, mesh, bone_count=4, method="lbs", iterations=2)
    finally:
        dev.close()


@pytest.mark.gpu
def test_a_view_past_the_limit_is_refused(device):
    from vkdqs.gpu import Buffer, BufferView
    from vkdqs.gpu.calls import vk

    dev = limited_device(1024)
    try:
        usage = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        buf = Buffer(dev, 16 * 1025, usage, label="t")
        fmt = int(si.Format.R32G32B32A32_SFLOAT)
        BufferView(dev, buf, fmt, label="fits", size=16 * 1024).destroy()
        with pytest.raises(LimitError, match=r"1025 texels.*maxTexelBufferElements \(1024\)"):
            BufferView(dev, buf, fmt, label="past")
        buf.destroy()
    finally:
        dev.close()


def _dense(ddm, bone_count):
    out = np.zeros((ddm.omega.shape[0], bone_count, 10))
    np.put_along_axis(out, ddm.bones.astype(np.int64)[:, :, None], ddm.omega, axis=1)
    return out


@pytest.mark.gpu
def test_direct_delta_mush_precomputes_within_the_limit(device):
    """The smoothing groups fewer bones a submission where the device's views are small (the
    same passes per bone: the same bits), and where the mesh's graph itself does not fit a view
    it is precomputed on the host by the float64 reference (within the GPU's tolerance of it,
    tests/test_ddm_gpu.py)."""
    mesh = procedural.tube(16 * 40, bone_count=16, influences=4, segments=16, length=4.0)
    want = mesh_ddm(mesh, 16, device=device)
    results = {}
    for texels in (8192, 2048):  # 640 vertices: 1920 texels a bone; ~4500 graph entries
        dev = limited_device(texels)
        try:
            mesh.__dict__.pop("_ddm")  # this device computes its own
            results[texels] = mesh_ddm(mesh, 16, device=dev)
            assert not [m.message for m in dev.take_messages()]
        finally:
            dev.close()
    assert np.array_equal(_dense(results[8192], 16), _dense(want, 16))
    scale = np.abs(want.omega).max()
    assert not np.array_equal(_dense(results[2048], 16), _dense(want, 16))  # the host's
    assert np.abs(_dense(results[2048], 16) - _dense(want, 16)).max() < 1e-5 * scale


@pytest.mark.gpu
def test_record_writes_a_chunked_pose_into_the_apps_buffers(app, adopted):
    """Skinner.record's ring (two slots of a pose too large for one view) in chunks: the rows
    copied into the app's buffers are the bits skin() returns on the same limited device."""
    from vkdqs.gpu import AppBuffer

    mesh = _tube()
    n = mesh.vertex_count
    pos, pos_mem = app.host_buffer(12 * n, USAGE)
    nrm, nrm_mem = app.host_buffer(12 * n, USAGE)
    positions = AppBuffer(adopted, pos, size=12 * n, usage=USAGE, label="app positions")
    normals = AppBuffer(adopted, nrm, size=12 * n, usage=USAGE, label="app normals")
    adopted.info = replace(adopted.info, max_texel_buffer_elements=6144)
    with Skinner(adopted, mesh, bone_count=8) as skinner:
        assert len(skinner.chunks) == 5 and skinner.split_output
        for pose in _poses("lbs"):  # more frames than the ring has slots
            cmd = app.begin()
            skinner.record(cmd, pose, positions=(positions, 0), normals=(normals, 0))
            app.end_submit_wait()
            want_p, want_n = skinner.skin(pose)
            got_p = np.frombuffer(app.read(pos_mem, 12 * n), np.float32).reshape(n, 3)
            got_n = np.frombuffer(app.read(nrm_mem, 12 * n), np.float32).reshape(n, 3)
            assert same_bits(got_p, want_p) and same_bits(got_n, want_n)


@pytest.mark.gpu
def test_centers_of_rotation_in_tiles_and_windows_of_views(device):
    """The centers' precomputation where its views are small: the vertices in tiles of views
    and the pair bins in windows, each window's dispatch adding its compensated sums to the
    last's. The same terms grouped otherwise: the tiles alone give the same bits, the windows
    the same sums to float32 rounding of the per-window totals (within 1e-6 of the extent)."""
    mesh = procedural.tube(3000, bone_count=8, influences=4, segments=20)
    want = centers_of_rotation(mesh, bone_count=8, device=device)
    extent = float(np.ptp(mesh.positions, axis=0).max())
    for texels, windows in ((8192, False), (2048, True)):
        dev = limited_device(texels)
        try:
            got = centers_of_rotation(mesh, bone_count=8, device=dev, tile=700)
            assert not [m.message for m in dev.take_messages()]
        finally:
            dev.close()
        if windows:
            assert np.abs(got - want).max() < 1e-6 * extent
        else:
            assert same_bits(got, want)
