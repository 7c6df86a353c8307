"""The lean layout's encoders (vkdqs.engine.vertex_packing) and the bound each states, in numpy: the
GPU side of each bound is in tests/test_lean_layout.py."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import shader_interface as si
from vkdqs.engine import vertex_packing as vp


def _angles(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), (a * b).sum(axis=1))


def test_octahedral_normals_within_their_bound():
    rng = np.random.default_rng(7)
    n = rng.normal(size=(50_000, 3))
    # the axes, the octahedron's edges and the fold (z = 0), where the encoding changes sides
    edges = [[1, 0, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [1, 1, 0], [1, 0, -1], [-1, -1, 1e-9]]
    n = np.vstack([edges, n]) / np.linalg.norm(np.vstack([edges, n]), axis=1, keepdims=True)
    e = vp.oct_encode(n)
    assert e.dtype == np.int16 and e.shape == (len(n), 2) and (e >= -32767).all()
    angle = _angles(vp.oct_decode(e), n)
    assert angle.max() < vp.OCT_NORMAL_MAX_ANGLE
    assert angle[:4].max() < 1e-12  # the axes are exact
    # keeping the best of the four roundings beats rounding to nearest
    nearest = np.rint(_fold(n) * 32767.0)
    assert np.median(angle) < np.median(_angles(vp.oct_decode(nearest), n))


def _fold(n):
    """The exact octahedral point of each unit normal (float64), as the shader unfolds it."""
    p = n[:, :2] / np.abs(n).sum(axis=1, keepdims=True)
    lower = n[:, 2] < 0
    sign = np.where(p >= 0, 1.0, -1.0)
    p[lower] = (1.0 - np.abs(p[lower][:, ::-1])) * sign[lower]
    return p


def test_unorm8_weights_only_where_they_are_bytes():
    rng = np.random.default_rng(3)
    steps = rng.multinomial(255, np.ones(4) / 4, size=1000).astype(np.float64)
    steps[:5] = 0.0
    as_read = (steps / 255.0).astype(np.float32)  # as the glTF loader reads normalized bytes
    assert vp.bytes_exact(as_read)
    q = vp.unorm_weights(as_read, 255)
    assert q.dtype == np.uint8
    np.testing.assert_array_equal(q, steps)  # stored unchanged: no error added
    assert not vp.bytes_exact(rng.dirichlet(np.ones(4), 100))
    off = as_read.copy()
    off[7] = [0.5, 0.5, 0.0, 0.0]  # 127.5 / 255: not a byte
    assert not vp.bytes_exact(off)


def test_lean_formats_follow_the_mesh_and_the_device():
    from .test_registry import rig

    rng = np.random.default_rng(0)
    mesh = rig(rng, 60, 4, 300)  # joints up to 299: 16 bits
    every = si.lean_layout(mesh, lambda f: True)
    assert every.format("joints") == si.Format.R16G16B16A16_UINT
    assert every.format("weights_1") == si.Format.R16G16B16A16_UNORM and every.oct_normals
    # a device that reads none of the narrow formats: each falls back to the next wider one
    narrow = {si.Format.R16G16_SNORM, si.Format.R16G16B16A16_UINT, si.Format.R16G16B16A16_UNORM}
    fallback = si.lean_layout(mesh, lambda f: f not in narrow)
    assert fallback.format("normals") == si.Format.R16G16B16A16_SNORM
    assert fallback.format("joints") == si.Format.R32G32B32A32_UINT
    assert fallback.format("weights") == si.Format.R32G32B32A32_SFLOAT
    assert fallback.spec == ((si.OCT_NORMALS_ID, 0),)
    # the compute path's packed rows need uint8 joints, and rgba32ui texels (every device)
    assert not si.lean_layout(mesh, lambda f: True, packed=True).packed
    small = rig(rng, 60, 4, 200)
    packed = si.lean_layout(small, lambda f: True, packed=True)
    assert packed.packed and packed.spec == ((si.OCT_NORMALS_ID, 1), (si.PACKED_ROWS_ID, 1))
    assert not si.lean_layout(small, lambda f: f != si.Format.R32G32B32A32_UINT, packed=True).packed
    arrays = si.mesh_arrays(mesh, fallback)
    assert arrays["normals"].dtype == np.int16 and arrays["normals"].shape == (60, 4)
    np.testing.assert_array_equal(arrays["weights"], mesh.weights)
    np.testing.assert_array_equal(si.mesh_arrays(mesh, every)["joints"], mesh.joints)


@pytest.mark.parametrize("slots", (4, 8))
@pytest.mark.parametrize("byte_weights", (False, True))
def test_packed_rows_hold_the_lean_values(slots, byte_weights):
    """The compute path's packed rows hold, word by word, the narrow formats' values: the
    octahedral snorm16 pair, uint8 joints and unorm16 weights (unorm8 ones times 257)."""
    from .test_registry import rig

    rng = np.random.default_rng(slots + 2 * byte_weights)
    mesh = rig(rng, 50, slots, 200)
    if byte_weights:
        steps = rng.multinomial(255, np.ones(slots) / slots, size=50)
        mesh = type(mesh)(mesh.positions, mesh.normals, mesh.joints, steps / 255.0, mesh.indices)
    layout = si.lean_layout(mesh, lambda f: True, packed=True)
    assert layout.packed
    arrays = si.mesh_arrays(mesh, layout)
    assert sorted(arrays) == (
        ["joints", "joints_1", "positions"] if slots == 8 else ["joints", "positions"]
    )
    rows = np.hstack([arrays["joints"], arrays.get("joints_1", np.zeros((50, 0), np.uint32))])
    halves = lambda w: np.stack([w & 0xFFFF, w >> 16], axis=-1).reshape(len(w), -1)  # noqa: E731
    octa = halves(rows[:, :1]).astype(np.uint16).view(np.int16)
    np.testing.assert_array_equal(octa, vp.oct_encode(mesh.normals))
    joint_words = rows[:, [1, 4][: slots // 4]]
    joints = (joint_words[:, :, None] >> np.array([0, 8, 16, 24], np.uint32)) & 0xFF
    np.testing.assert_array_equal(joints.reshape(50, slots), mesh.joints)
    weights = halves(rows[:, [2, 3, 5, 6][: slots // 2]])
    want = vp.unorm_weights(mesh.weights, 255 if byte_weights else 65535)
    np.testing.assert_array_equal(weights, want.astype(np.int64) * (257 if byte_weights else 1))
    assert rows[:, 7:].sum() == 0  # the eighth word is free
