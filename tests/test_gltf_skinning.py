"""GPU skinning of loaded, animated glTF rigs against the float64 references."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import dq, reference
from vkdqs.engine.skinner import Skinner
from vkdqs.gltf import load_gltf

from .gltf_fixtures import make_rig


def _assert_close(mesh, got, want):
    scale = max(mesh.extent, np.abs(want[0]).max())
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-5)


@pytest.mark.parametrize("eight", [False, True], ids=["4-influences", "8-influences"])
@pytest.mark.parametrize("scaled", [False, True], ids=["rigid", "scaled-joint"])
@pytest.mark.parametrize("path", ["compute", "vertex"])
def test_loaded_rig_on_the_gpu_matches_the_references(tmp_path, device, eight, scaled, path):
    file = tmp_path / "rig.glb"
    make_rig(eight=eight, scaled=scaled).save(file)
    scene = load_gltf(file)
    mesh = scene.skinned_mesh(0)
    assert mesh.slots == (8 if eight else 4)
    joints = scene.skins[0].joint_count
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    with (
        Skinner(device, mesh, bone_count=joints, method="dqs", path=path) as dqs_skinner,
        Skinner(device, mesh, bone_count=joints, method="lbs", path=path) as lbs_skinner,
    ):
        for t in (0.0, 0.4, 1.3):
            mats = scene.skinning_matrices(skin=0, animation=0, time=t)
            _assert_close(mesh, lbs_skinner.skin(mats), reference.skin_lbs(*args, mats))
            if dq.has_scale(mats).any():
                bones, scales = dq.decompose_skinning_matrices(mats)
                want = reference.skin_dqs_scaled(*args, bones, scales)
            else:
                want = reference.skin_dqs(*args, dq.from_matrices(mats))
            _assert_close(mesh, dqs_skinner.skin(mats), want)
