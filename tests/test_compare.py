"""The candy wrapper's bend pose, the bulge measure and the method comparison (demo, figures)."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import centers_of_rotation, procedural
from vkdqs.app.compare import bend_bulge, compared_methods, reference, skin_methods
from vkdqs.errors import InputError


def test_bend_pose_rotates_the_far_bone_about_the_joint():
    pose = procedural.bend_pose(90.0)
    assert pose.shape == (2, 4, 4)
    np.testing.assert_allclose(pose[0], np.eye(4))
    np.testing.assert_allclose(pose[1] @ [1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(pose[1] @ [2.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(pose[1, :3, :3] @ pose[1, :3, :3].T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(procedural.bend_pose(0.0), np.tile(np.eye(4), (2, 1, 1)))
    assert procedural.bend_pose(30.0, bone_count=3).shape == (3, 4, 4)
    with pytest.raises(InputError, match="finite"):
        procedural.bend_pose(float("nan"))


def test_bend_bulge_separates_dqs_from_lbs():
    mesh = procedural.candy_wrapper().with_dqs_blend(0.5)
    assert bend_bulge(mesh.positions, 0.0) == 0.0
    poses = procedural.bend_pose(135.0)[None]
    lbs = reference("lbs", mesh, poses)[0]
    dqs = reference("dqs", mesh, poses)[0]
    assert bend_bulge(lbs, 135.0) < 0.01  # LBS collapses inward, it does not bulge
    assert bend_bulge(dqs, 135.0) > 0.08  # DQS's joint bulge
    # a vertex pushed 0.1 outward at the elbow's outer side reads as a 0.2-radius bulge
    pushed = mesh.positions.copy()
    ring = 16 * 32  # the middle ring (x = 1), segment 0 points along +y
    pushed[ring] += [0.0, 0.1, 0.0]
    assert bend_bulge(pushed, 0.0) == pytest.approx(0.2)


def test_gpu_methods_match_the_reference_on_bends_and_twists(device):
    mesh = procedural.candy_wrapper().with_dqs_blend(0.3)
    poses = np.stack([procedural.bend_pose(135.0), procedural.twist_pose(170.0)])
    centers = centers_of_rotation(mesh, bone_count=2, device=device)
    methods = compared_methods()
    assert {"dqs", "lbs", "cor", "blend", "dqs_blender"} <= set(methods)
    gpu = skin_methods(device, mesh, poses, bone_count=2, centers=centers)
    assert set(gpu) == set(methods)
    for method in methods:
        ref = reference(method, mesh, poses, centers=centers)
        assert np.abs(gpu[method] - ref).max() < 1e-5 * mesh.extent, method
    # CoR bulges less than DQS on the bend and keeps the twist's volume like DQS
    bulge = {m: bend_bulge(gpu[m][0], 135.0) for m in ("dqs", "cor")}
    assert bulge["cor"] < 0.5 * bulge["dqs"]
    rest = procedural.mesh_volume(mesh.positions, mesh.indices)
    assert procedural.mesh_volume(gpu["cor"][1], mesh.indices) / rest == pytest.approx(1, abs=0.01)
    # without centers, the reference takes the need's default, the one the Skinner skinned
    # with (kept on the mesh): the same float32 centers, made on the same device
    default = skin_methods(device, mesh, poses, ["cor"], bone_count=2)["cor"]
    got = reference("cor", mesh, poses, device=device)
    assert np.abs(default - got).max() < 1e-5 * mesh.extent
    assert mesh.__dict__["_centers"][2] is not None
