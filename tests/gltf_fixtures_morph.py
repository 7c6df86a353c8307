"""glTF fixtures with morph targets, written in code, and the data that went into them.

:func:`make_morph_model` builds a two-joint skinned tube whose mesh has two primitives with three
morph targets (a dense POSITION + NORMAL target, a sparse POSITION-only target without a
bufferView, a NORMAL-only target), ``mesh.weights`` and ``extras.targetNames``, plus an unskinned
quad on its own node (two POSITION targets, ``node.weights``), and two animations: 0 animates
the tube node's weights (and a joint), the quad node's weights and nothing else; 1 animates only
a joint, so the tube falls back to its mesh's weights and the quad to its node's.
``quantized`` stores the deltas as (normalized) BYTE/SHORT under ``KHR_mesh_quantization``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vkdqs.gltf.save import GltfBuilder

from .gltf_fixtures import BYTE, FLOAT, SHORT, quantize, quat

TUBE_RINGS = 5
TUBE_SIDES = 6
TARGET_NAMES = ["bulge", "shift", "tilt"]
MESH_WEIGHTS = [0.5, 0.0, 0.25]
QUAD_NODE_WEIGHTS = [0.0, 1.0]


@dataclass
class MorphModel:
    builder: GltfBuilder
    # what the tube mesh (both primitives, in order) decodes to
    positions: np.ndarray
    normals: np.ndarray
    morph_positions: np.ndarray  # (3, N, 3), zeros where a target has none
    morph_normals: np.ndarray
    quad_positions: np.ndarray
    quad_morph_positions: np.ndarray  # (2, 4, 3)
    # animation 0's weights channels: node -> (interpolation, times, values, in_t, out_t)
    weight_keys: dict = field(default_factory=dict)

    @property
    def document(self) -> dict:
        return self.builder.document

    def save(self, path) -> None:
        self.builder.save(path)


def _tube(rings: int, sides: int, y0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, normals and triangle indices of an open tube of radius 0.3 along +y."""
    a = np.arange(sides) * 2 * np.pi / sides
    y = y0 + np.arange(rings) * (1.0 / (rings - 1))
    pos = np.stack(
        [np.tile(0.3 * np.cos(a), rings), np.repeat(y, sides), np.tile(0.3 * np.sin(a), rings)], 1
    )
    nrm = np.stack([np.cos(a), np.zeros(sides), np.sin(a)], 1)
    nrm = np.tile(nrm, (rings, 1))
    r, c = np.meshgrid(np.arange(rings - 1), np.arange(sides), indexing="ij")
    a0 = (r * sides + c).ravel()
    b0 = (r * sides + (c + 1) % sides).ravel()
    tri = np.stack([a0, b0 + sides, b0, a0, a0 + sides, b0 + sides], 1).reshape(-1, 3)
    return pos.astype(np.float32), nrm.astype(np.float32), tri.astype(np.uint16)


def _delta_accessor(b: GltfBuilder, d: np.ndarray, quantized: tuple[int, bool] | None) -> tuple:
    """Store deltas (float32, or quantized); returns (accessor, what a reader decodes)."""
    if quantized is None:
        d32 = d.astype(np.float32)
        return b.add_accessor(d32, target="vertex"), d32.astype(np.float64)
    ct, normalized = quantized
    if normalized:
        stored, decoded = quantize(d, ct)
    else:  # integer deltas in model units (the node transform would dequantize)
        stored = np.round(d * 20).astype(np.int8 if ct == BYTE else np.int16)
        decoded = stored.astype(np.float64)
    # each element padded to 4 bytes, as vertex attributes must be
    stride = 4 if ct == BYTE else 8
    acc = b.add_accessor(
        stored, component_type=ct, normalized=normalized, target="vertex", byte_stride=stride
    )
    return acc, decoded


def make_morph_model(
    *,
    interpolation: str = "LINEAR",
    quantized: tuple[int, bool] | None = None,
    seed: int = 3,
) -> MorphModel:
    """Build the model (see the module docstring)."""
    rng = np.random.default_rng(seed)
    b = GltfBuilder()
    if quantized is not None:
        b.document["extensionsUsed"] = ["KHR_mesh_quantization"]
        b.document["extensionsRequired"] = ["KHR_mesh_quantization"]
    # nodes: 0 root, 1-2 joints, 3 the skinned tube, 4 the rigid quad (a face)
    b.add("nodes", {"name": "root", "children": [1, 3, 4]})
    b.add("nodes", {"name": "j0", "children": [2]})
    b.add("nodes", {"name": "j1", "translation": [0.0, 1.0, 0.0]})
    b.add("nodes", {"name": "tube", "mesh": 0, "skin": 0})
    b.add(
        "nodes",
        {"name": "face", "mesh": 1, "translation": [2.0, 0.0, 0.0], "weights": QUAD_NODE_WEIGHTS},
    )

    prims, all_pos, all_nrm = [], [], []
    all_dp, all_dn = [], []
    for y0 in (0.0, 1.0):  # two primitives: the lower and the upper half
        pos, nrm, tri = _tube(TUBE_RINGS, TUBE_SIDES, y0)
        n = len(pos)
        joints = np.zeros((n, 4), np.uint8)
        joints[:, 1] = 1
        w1 = np.clip(pos[:, 1].astype(np.float64) - 0.5, 0.0, 1.0)
        weights = np.zeros((n, 4), np.float32)
        weights[:, 0] = 1.0 - w1
        weights[:, 1] = w1
        dp = np.zeros((3, n, 3))
        dn = np.zeros((3, n, 3))
        dp[0] = 0.2 * nrm  # bulge
        dn[0] = rng.uniform(-0.3, 0.3, (n, 3))
        sparse = [1, 4, n - 2]
        dp[1, sparse] = rng.uniform(-0.5, 0.5, (3, 3))  # shift a few vertices
        dn[2] = rng.uniform(-0.4, 0.4, (n, 3))  # tilt the normals only
        t0p, dp[0] = _delta_accessor(b, dp[0], quantized)
        t0n, dn[0] = _delta_accessor(b, dn[0], None if quantized is None else (quantized[0], True))
        if quantized is None:
            values = dp[1, sparse].astype(np.float32)
            dp[1, sparse] = values
            t1p = b.add_sparse_accessor(None, sparse, values, count=n, index_component_type=5121)
        else:
            t1p, dp[1] = _delta_accessor(b, dp[1], quantized)
        t2n, dn[2] = _delta_accessor(b, dn[2], None if quantized is None else (quantized[0], True))
        prims.append(
            {
                "attributes": {
                    "POSITION": b.add_accessor(pos, target="vertex", min_max=True),
                    "NORMAL": b.add_accessor(nrm, target="vertex"),
                    "JOINTS_0": b.add_accessor(joints, target="vertex"),
                    "WEIGHTS_0": b.add_accessor(weights, target="vertex"),
                },
                "indices": b.add_accessor(tri.reshape(-1), target="index"),
                "targets": [
                    {"POSITION": t0p, "NORMAL": t0n},
                    {"POSITION": t1p},
                    # TANGENT deltas are ignored (vkdqs reads no tangents)
                    {"NORMAL": t2n, "TANGENT": t2n},
                ],
            }
        )
        all_pos.append(pos)
        all_nrm.append(nrm)
        all_dp.append(dp)
        all_dn.append(dn)
    b.add(
        "meshes",
        {
            "name": "tube",
            "primitives": prims,
            "weights": MESH_WEIGHTS,
            "extras": {"targetNames": TARGET_NAMES},
        },
    )
    quad = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    quad_dp = np.zeros((2, 4, 3))
    quad_dp[0, :, 0] = 0.5  # target 0: move right
    quad_dp[1, :, 1] = 0.5  # target 1: move up
    b.add(
        "meshes",
        {
            "name": "face",
            "primitives": [
                {
                    "attributes": {"POSITION": b.add_accessor(quad, target="vertex", min_max=True)},
                    "indices": b.add_accessor(
                        np.array([0, 1, 2, 2, 1, 3], np.uint8), target="index"
                    ),
                    "targets": [
                        {"POSITION": b.add_accessor(quad_dp[k].astype(np.float32))}
                        for k in range(2)
                    ],
                }
            ],
        },
    )
    b.add("skins", {"joints": [1, 2]})

    # animation 0: the tube's and the face's weights (and a joint); animation 1: a joint only
    times = np.array([0.0, 0.5, 1.5], np.float32)
    tube_w = rng.uniform(0.0, 1.0, (3, 3)).astype(np.float32)
    tube_w[1, 1] = 0.0
    face_w = np.array([[0, 0], [1, 0], [1, 1]], np.float32)
    t_acc = b.add_accessor(times, min_max=True)
    samplers, channels = [], []
    keys = {}
    for node, w in ((3, tube_w), (4, face_w)):
        if interpolation == "CUBICSPLINE":
            in_t = rng.uniform(-1, 1, w.shape).astype(np.float32)
            out_t = rng.uniform(-1, 1, w.shape).astype(np.float32)
            flat = np.stack([in_t, w, out_t], 1).reshape(-1)
            keys[node] = (interpolation, times, w, in_t, out_t)
        else:
            flat = w.reshape(-1)
            keys[node] = (interpolation, times, w, None, None)
        samplers.append(
            {"input": t_acc, "output": b.add_accessor(flat), "interpolation": interpolation}
        )
        channels.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": "weights"}})
    rot = np.array([quat((0, 0, 1), 0), quat((0, 0, 1), 60), quat((0, 0, 1), 30)], np.float32)
    samplers.append({"input": t_acc, "output": b.add_accessor(rot)})
    channels.append({"sampler": len(samplers) - 1, "target": {"node": 2, "path": "rotation"}})
    b.add("animations", {"name": "morph", "channels": channels, "samplers": samplers})
    b.add(
        "animations",
        {
            "name": "bones only",
            "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}],
            "samplers": [{"input": t_acc, "output": b.add_accessor(rot)}],
        },
    )
    b.add("scenes", {"nodes": [0]})
    b.document["scene"] = 0
    return MorphModel(
        b,
        np.concatenate(all_pos),
        np.concatenate(all_nrm),
        np.concatenate(all_dp, axis=1),
        np.concatenate(all_dn, axis=1),
        quad,
        quad_dp,
        keys,
    )


__all__ = ["FLOAT", "SHORT", "MorphModel", "make_morph_model"]
