"""A large skin on a discrete GPU's memory: under the ``discrete`` profile (a 214 MiB BAR
window, VRAM the host cannot map) a DQS skin of ``$VKDQS_LARGE_VERTICES`` vertices (1M in the
suite; ``make test-large`` runs the issue's 10M) is staged into device-local memory, read back
through host-cached memory, and gives the same bits as the default device: the same shader on
the same inputs."""

from __future__ import annotations

import os

import numpy as np
import pytest

from vkdqs import dq, procedural, reference
from vkdqs.engine.skinner import Skinner

from .conftest import _open_device

pytestmark = pytest.mark.gpu

VERTICES = int(os.environ.get("VKDQS_LARGE_VERTICES", "1000000"))
BONES = 32


def test_a_large_dqs_skin_with_readback_on_a_discrete_gpus_memory(device):
    mesh = procedural.tube(VERTICES, bone_count=BONES, influences=4)
    bones = dq.from_matrices(procedural.bone_chain_pose(BONES, 50.0))
    with Skinner(device, mesh, bone_count=BONES) as skinner:
        expected = skinner.skin(bones)
    discrete = _open_device(memory_profile="discrete")
    try:
        with Skinner(discrete, mesh, bone_count=BONES) as skinner:
            got = skinner.skin(bones)
            report = discrete.memory_report()
        problems = [m.message for m in discrete.take_messages()]
    finally:
        discrete.close()
    assert not problems
    for a, b in zip(got, expected, strict=True):
        assert a.shape == (VERTICES, 3)
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    # where the bytes went: static data and the output in VRAM (heap 0), nothing static in
    # the BAR window or system memory; the readback copy in cached system memory (heap 1)
    heaps = report["heaps"]
    assert heaps[0]["classes"]["static"]["bytes"] >= VERTICES * 48
    assert heaps[0]["classes"]["gpu"]["bytes"] >= VERTICES * 24
    assert "static" not in heaps[1]["classes"] and "static" not in heaps[2]["classes"]
    assert heaps[1]["classes"]["readback"]["bytes"] >= VERTICES * 24
    assert heaps[2]["memory_bytes"] <= heaps[2]["size"]
    # the float64 reference on a sample of the vertices
    rows = np.random.default_rng(7).choice(VERTICES, 20000, replace=False)
    ref = reference.skin_dqs(
        mesh.positions[rows], mesh.normals[rows], mesh.joints[rows], mesh.weights[rows], bones
    )
    atol = 1e-5 * mesh.extent
    np.testing.assert_allclose(got[0][rows], ref[0], rtol=0, atol=atol)
    np.testing.assert_allclose(got[1][rows], ref[1], rtol=0, atol=1e-5)
