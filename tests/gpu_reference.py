"""Float64 reference results shared by the GPU tests."""

from __future__ import annotations

import numpy as np

from vkdqs import SkinnedMesh, dq, procedural, reference


def twist_reference(mesh: SkinnedMesh, angle: float) -> tuple[np.ndarray, np.ndarray]:
    """DQS of ``mesh`` under the candy-wrapper twist of ``angle`` degrees, in float64."""
    bones = dq.from_matrices(procedural.twist_pose(angle))
    return reference.skin_dqs(mesh.positions, mesh.normals, mesh.joints, mesh.weights, bones)
