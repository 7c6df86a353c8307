"""Hostile glTF files: a model reads only its own data, and costs time and memory in proportion
to its size. Every file is written here, under tmp_path."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs.errors import InputError
from vkdqs.gltf import geometry
from vkdqs.gltf.animation import Animation, Channel, _slerp
from vkdqs.gltf.geometry import vertex_normals

# ------------------------------------------------------------------------------------------------
# unpadded animations sample exactly like the padded layout they replace
# ------------------------------------------------------------------------------------------------


def _padded_reference(channels: list[Channel], time) -> np.ndarray:
    """The former padded implementation of Animation.sample, kept verbatim as the reference."""
    c = len(channels)
    k = max(len(ch.times) for ch in channels)
    times = np.full((c, k), np.inf)
    count = np.array([len(ch.times) for ch in channels])
    values, tin, tout = np.zeros((c, k, 4)), np.zeros((c, k, 4)), np.zeros((c, k, 4))
    for i, ch in enumerate(channels):
        n, w = ch.values.shape
        times[i, :n] = ch.times
        values[i, :n, :w] = ch.values
        if ch.in_tangents is not None:
            tin[i, :n, :w] = ch.in_tangents
            tout[i, :n, :w] = ch.out_tangents
    interp = np.array(
        [{"STEP": 0, "LINEAR": 1, "CUBICSPLINE": 2}[ch.interpolation] for ch in channels]
    )
    is_rot = np.array([ch.path == "rotation" for ch in channels])
    t = np.asarray(time, dtype=np.float64)
    shape = t.shape
    t = t.reshape(-1, 1)
    rows = np.arange(c)
    last = count - 1
    k0 = np.clip((times[None] <= t[..., None]).sum(axis=-1) - 1, 0, last)
    k1 = np.minimum(k0 + 1, last)
    t0, t1 = times[rows, k0], times[rows, k1]
    dt = np.where(k1 > k0, t1 - t0, 0.0)
    u = np.clip((t - t0) / np.where(dt > 0, dt, 1.0), 0.0, 1.0)
    u = np.where(dt > 0, u, 0.0)[..., None]
    v0, v1 = values[rows, k0], values[rows, k1]
    linear = np.where(is_rot[:, None], _slerp(v0, v1, u), v0 + u * (v1 - v0))
    u2, u3 = u * u, u * u * u
    d = dt[..., None]
    cubic = (
        (2 * u3 - 3 * u2 + 1) * v0
        + d * (u3 - 2 * u2 + u) * tout[rows, k0]
        + (-2 * u3 + 3 * u2) * v1
        + d * (u3 - u2) * tin[rows, k1]
    )
    norm = np.linalg.norm(cubic, axis=-1, keepdims=True)
    cubic = np.where(is_rot[:, None] & (norm > 0), cubic / np.where(norm > 0, norm, 1.0), cubic)
    mode = interp[:, None]
    out = np.where(mode == 0, v0, np.where(mode == 1, linear, cubic))
    return out.reshape(*shape, c, 4)


def _random_channels(rng) -> list[Channel]:
    channels = []
    shared_times = np.cumsum(rng.uniform(0.05, 0.5, size=7))
    shared_values = rng.normal(size=(7, 3))
    for i in range(40):
        path = ("translation", "rotation", "scale")[i % 3]
        interp = ("STEP", "LINEAR", "CUBICSPLINE")[(i // 3) % 3]
        width = 4 if path == "rotation" else 3
        if i % 5 == 0 and path != "rotation":  # channels sharing one sampler's arrays
            times, values = shared_times, shared_values
        else:
            k = int(rng.integers(1, 60))
            times = np.cumsum(rng.uniform(0.01, 0.3, size=k)) - rng.uniform(0, 1)
            values = rng.normal(size=(k, width))
        if path == "rotation":
            values = values / np.linalg.norm(values, axis=1, keepdims=True)
        tin = tout = None
        if interp == "CUBICSPLINE":
            tin, tout = rng.normal(size=values.shape), rng.normal(size=values.shape)
        channels.append(Channel(i, path, interp, times, values, tin, tout))
    return channels


def test_unpadded_sampling_equals_the_padded_reference():
    rng = np.random.default_rng(11)
    channels = _random_channels(rng)
    anim = Animation("a", tuple(channels), duration=3.0)
    keys = np.concatenate([ch.times for ch in channels])
    # Random times, every key time exactly, and times before the first / after the last key.
    times = np.concatenate([rng.uniform(-2, 12, size=300), keys, [-1e9, 1e9]])
    np.testing.assert_array_equal(anim.sample(times), _padded_reference(channels, times))
    np.testing.assert_array_equal(anim.sample(0.37), _padded_reference(channels, 0.37))
    assert anim.sample(times.reshape(2, -1)).shape == (2, len(times) // 2, 40, 4)
    # Shared key arrays are stored once.
    assert len(anim._times) < sum(len(ch.times) for ch in channels)


def test_animation_rejects_unsorted_keys():
    ch = Channel(0, "translation", "LINEAR", np.array([0.0, 2.0, 1.0]), np.zeros((3, 3)))
    with pytest.raises(InputError, match="channel 0: key times must be finite and strictly"):
        Animation("a", (ch,), duration=2.0)


def test_vertex_normals_in_chunks_match_one_pass(monkeypatch):
    """Big meshes are summed in chunks of triangles (bounded temporaries): same normals."""
    rng = np.random.default_rng(5)
    positions = rng.normal(size=(3000, 3))
    indices = rng.integers(0, 3000, size=3 * 20_000)
    whole = vertex_normals(positions, indices)
    monkeypatch.setattr(geometry, "_CHUNK", 1000)
    chunked = vertex_normals(positions, indices)
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-12)
    assert np.allclose(np.linalg.norm(chunked, axis=1), 1.0)
