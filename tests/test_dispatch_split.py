"""Dispatches larger than ``maxComputeWorkGroupCount`` run in pieces (``vkCmdDispatchBase``):
a device made to report a limit of 3 workgroups skins, smooths and bounds meshes of many
more with the same bits as a device without the limit (the same shaders on the same inputs,
only the base workgroup differs)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vkdqs import DeltaMushSkinner, dq, procedural
from vkdqs.engine.skinner import Skinner
from vkdqs.gpu.compute_pass import split_groups

from .conftest import _open_device

pytestmark = pytest.mark.gpu


def test_split_groups_covers_every_workgroup_once():
    assert split_groups(0, 7, 3) == [(0, 3), (3, 3), (6, 1)]
    assert split_groups(5, 6, 3) == [(5, 3), (8, 3)]
    assert split_groups(0, 2, 65535) == [(0, 2)]
    for first, count, limit in ((0, 100, 7), (13, 1, 1), (2, 65536, 65535)):
        runs = split_groups(first, count, limit)
        assert all(0 < c <= limit for _, c in runs)
        covered = [g for f, c in runs for g in range(f, f + c)]
        assert covered == list(range(first, first + count))


def limited_device(groups: int = 3):
    dev = _open_device()
    dev.info = replace(dev.info, max_compute_work_group_count=(groups, 65535, 65535))
    return dev


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("method", ["dqs", "lbs"])
def test_skinning_and_bounds_split_their_dispatches(device, method):
    mesh = procedural.tube(1000, bone_count=8, influences=4)  # 16 workgroups of 64
    pose = procedural.bone_chain_pose(8, 35.0)
    bones = dq.from_matrices(pose) if method == "dqs" else pose
    with Skinner(device, mesh, bone_count=8, method=method) as s:
        want = s.skin(bones, bounds=True)
        want_box = s.bounds(bones)
    dev = limited_device()
    try:
        with Skinner(dev, mesh, bone_count=8, method=method) as s:
            got = s.skin(bones, bounds=True)
            got_box = s.bounds(bones)
        assert not [m.message for m in dev.take_messages()]
    finally:
        dev.close()
    for a, b in zip(got, want, strict=True):
        assert same_bits(a, b)
    assert same_bits(got_box, want_box)


def test_delta_mush_passes_split_their_dispatches(device):
    mesh = procedural.tube(900, bone_count=4, influences=2)
    pose = procedural.bone_chain_pose(4, 40.0)
    with DeltaMushSkinner(device, mesh, bone_count=4, method="lbs", iterations=4) as s:
        want = s.skin(pose)
    dev = limited_device(2)
    try:
        with DeltaMushSkinner(dev, mesh, bone_count=4, method="lbs", iterations=4) as s:
            got = s.skin(pose)
        assert not [m.message for m in dev.take_messages()]
    finally:
        dev.close()
    for a, b in zip(got, want, strict=True):
        assert same_bits(a, b)
