"""Point of interest: skinning on the GPU and getting numpy arrays back (no window, no image).

Skins a mesh with DQS on the compute path, a batch of poses in one submission, and checks the
result against the float64 CPU reference.

    python examples/skin_to_numpy.py [--offscreen]   (it never opens a window)
"""

from __future__ import annotations

import numpy as np

import vkdqs
from vkdqs import dq, procedural, reference

mesh = procedural.tube(50_000, bone_count=32, influences=4)
poses = np.stack([dq.from_matrices(procedural.bone_chain_pose(32, a)) for a in (0, 45, 90)])

with vkdqs.Device() as device, vkdqs.Skinner(device, mesh, bone_count=32) as skinner:
    positions, normals = skinner.skin_many(poses)  # (3, N, 3) each, float32

args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
for i, pose in enumerate(poses):
    ref_p, ref_n = reference.skin_dqs(*args, pose)
    err = np.abs(positions[i] - ref_p).max()
    print(f"pose {i}: max |GPU - float64 reference| = {err:.2e} (extent {mesh.extent:.1f})")
