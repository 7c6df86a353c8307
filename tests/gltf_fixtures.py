"""glTF fixtures written in code, and an independent reference evaluation of their poses.

:func:`make_rig` builds a skinned chain ("root" + 8 joints) with a rigid prop parented to the last
joint, a second skin, three animations (LINEAR, STEP, CUBICSPLINE) and options for every component
type, interleaved and sparse accessors and 8 influences. It also returns the data it wrote, so the
tests compare the loader with what went in.

:func:`reference_globals` walks the node hierarchy of the JSON document itself (recursively, in
plain float64 matrix math written here, not with vkdqs) to give the spec's joint matrices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vkdqs.gltf.save import GltfBuilder

BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT, UNSIGNED_INT, FLOAT = 5120, 5121, 5122, 5123, 5125, 5126
N_JOINTS = 8
RINGS = 8


def quat(axis, degrees) -> np.ndarray:
    """Unit quaternion (x, y, z, w) for a rotation of ``degrees`` about ``axis``."""
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    half = np.radians(degrees) / 2
    return np.array([*(np.sin(half) * axis), np.cos(half)])


def quat_matrix(q) -> np.ndarray:
    """3x3 rotation matrix of a quaternion, written out from the textbook formula."""
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def trs(t=(0, 0, 0), r=(0, 0, 0, 1), s=(1, 1, 1)) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = quat_matrix(r) @ np.diag(s)
    m[:3, 3] = t
    return m


def quantize(values: np.ndarray, component_type: int) -> tuple[np.ndarray, np.ndarray]:
    """(stored integers, what a reader decodes) for normalized integer components."""
    dtype, top = {
        BYTE: (np.int8, 127),
        UNSIGNED_BYTE: (np.uint8, 255),
        SHORT: (np.int16, 32767),
        UNSIGNED_SHORT: (np.uint16, 65535),
    }[component_type]
    stored = np.round(values * top).astype(dtype)
    return stored, np.maximum(stored / top, -1.0)


@dataclass
class Rig:
    builder: GltfBuilder
    positions: np.ndarray  # what mesh 0 decodes to
    normals: np.ndarray
    joints: np.ndarray
    weights: np.ndarray  # decoded (dequantized) weights, as in the file
    indices: np.ndarray
    ibm: np.ndarray  # [8, 4, 4] skin 0
    # keys[animation][(node, path)] = (interpolation, times, values, in_tangents, out_tangents)
    keys: list[dict] = field(default_factory=list)

    @property
    def document(self) -> dict:
        return self.builder.document

    def save(self, path, *, embed: bool = False) -> None:
        self.builder.save(path, embed=embed)


def _weights(rng, n: int, k: int, component_type: int) -> tuple[np.ndarray, np.ndarray]:
    """Random weights summing to 1: (array to store, decoded float64)."""
    w = rng.uniform(0.2, 1.0, size=(n, k))
    w /= w.sum(axis=1, keepdims=True)
    if component_type == FLOAT:
        stored = w.astype(np.float32)
        return stored, stored.astype(np.float64)
    top = 255 if component_type == UNSIGNED_BYTE else 65535
    q = np.round(w * top).astype(np.int64)
    # Make every row sum to exactly `top` so the decoded weights sum to 1.
    q[:, 0] += top - q.sum(axis=1)
    stored = q.astype(np.uint8 if top == 255 else np.uint16)
    return stored, stored / top


def make_rig(
    *,
    joints_type: int = UNSIGNED_BYTE,
    weights_type: int = FLOAT,
    index_type: int = UNSIGNED_SHORT,
    rotation_type: int = FLOAT,
    eight: bool = False,
    interleaved: bool = False,
    sparse: bool = False,
    scaled: bool = True,
    morph_channel: bool = False,
    bind_scale: float = 1.0,
    joint_scale: float = 1.0,
    scale_keys: tuple = ((1.5, 1.5, 1.5), (1.5, 0.5, 1.2)),
    seed: int = 7,
) -> Rig:
    """Build the test rig (see the module docstring); returns it with the data it wrote.

    ``bind_scale``: the root node scales the skeleton by it, so the bind matrices carry it and
    the inverse bind matrices its inverse (a rig built in inches: the Khronos Fox's 0.0254);
    the joint matrices stay rigid. ``scale_keys``: the LINEAR clip's two scale keys of j2.
    ``joint_scale``: mesh 0's positions are stored divided by it
    and the inverse bind matrices scale them back (gltfpack's quantized output: joint matrices
    that are a uniform ``joint_scale``, 9.2e-5 for CesiumMan).
    """
    rng = np.random.default_rng(seed)
    b = GltfBuilder()
    scale_rest = (1.5, 1.5, 1.5) if scaled else (1.0, 1.0, 1.0)

    # -- nodes: 0 root, 1..8 joints j0..j7 (a chain along +y), 9 body, 10 prop, 11 hand ----------
    root = {
        "name": "root",
        "translation": [0.5, -1.0, 0.0],
        "rotation": quat((1, 0, 0), 30).tolist(),
    }
    if bind_scale != 1.0:
        root["scale"] = [bind_scale] * 3
    b.add("nodes", root)
    for k in range(N_JOINTS):
        node = {"name": f"j{k}|joint", "translation": [0.0, 0.0 if k == 0 else 1.0, 0.0]}
        if k == 2:
            node["scale"] = list(scale_rest)
        if k == 5:
            # A joint given by a matrix (it is not animated).
            node = {
                "name": f"j{k}|joint",
                "matrix": trs((0, 1, 0), quat((0, 1, 0), 20)).T.ravel().tolist(),
            }
        b.add("nodes", node)
    for k in range(N_JOINTS - 1):
        b.document["nodes"][1 + k]["children"] = [2 + k]
    b.document["nodes"][0]["children"] = [1, 9]
    b.add("nodes", {"name": "body", "mesh": 0, "skin": 0, "translation": [5.0, 5.0, 5.0]})
    b.add("nodes", {"name": "prop", "mesh": 1, "translation": [0.0, 0.5, 0.0]})
    b.document["nodes"][8]["children"] = [10]
    b.add("nodes", {"name": "hand", "mesh": 2, "skin": 1})
    b.add("scenes", {"nodes": [0, 11]})
    b.document["scene"] = 0

    # -- mesh 0: a tube of RINGS rings of 4 vertices -------------------------------------------
    angle = np.arange(4) * np.pi / 2
    ring = np.stack([0.3 * np.cos(angle), np.zeros(4), 0.3 * np.sin(angle)], axis=1)
    positions = np.concatenate([ring + np.array([0, y, 0]) for y in range(RINGS)])
    positions = (positions / joint_scale).astype(np.float32)
    normals = np.concatenate([ring / 0.3 for _ in range(RINGS)]).astype(np.float32)
    n = len(positions)
    quads = []
    for r in range(RINGS - 1):  # fixture construction, not library code
        for c in range(4):
            a, bb = 4 * r + c, 4 * r + (c + 1) % 4
            quads += [a, bb + 4, bb, a, a + 4, bb + 4]
    indices = np.array(quads)
    k = 8 if eight else 4
    joints = np.stack([rng.permutation(N_JOINTS)[:k] for _ in range(n)])
    w_stored, w_decoded = _weights(rng, n, k, weights_type)
    jdt = np.uint8 if joints_type == UNSIGNED_BYTE else np.uint16

    attrs = {}
    if interleaved:
        attrs["POSITION"], attrs["NORMAL"] = b.add_interleaved([positions, normals])
    elif sparse:
        base = positions.copy()
        base[[1, 5, 30]] = 99.0  # wrong dense values, fixed by the sparse substitution
        attrs["POSITION"] = b.add_sparse_accessor(
            base, [1, 5, 30], positions[[1, 5, 30]], index_component_type=UNSIGNED_BYTE
        )
        attrs["NORMAL"] = b.add_accessor(normals, target="vertex")
    else:
        attrs["POSITION"] = b.add_accessor(positions, target="vertex", min_max=True)
        attrs["NORMAL"] = b.add_accessor(normals, target="vertex")
    norm = weights_type != FLOAT
    for s in range(k // 4):
        attrs[f"JOINTS_{s}"] = b.add_accessor(
            joints[:, 4 * s : 4 * s + 4].astype(jdt), component_type=joints_type, target="vertex"
        )
        attrs[f"WEIGHTS_{s}"] = b.add_accessor(
            w_stored[:, 4 * s : 4 * s + 4], normalized=norm, target="vertex"
        )
    idt = {UNSIGNED_BYTE: np.uint8, UNSIGNED_SHORT: np.uint16, UNSIGNED_INT: np.uint32}[index_type]
    idx_acc = b.add_accessor(indices.astype(idt), target="index")
    tube = {"attributes": attrs, "indices": idx_acc}
    if morph_channel:
        # one morph target, so the weights channel below (one value per key) is valid
        tube["targets"] = [
            {"POSITION": b.add_accessor(0.1 * normals.astype(np.float32), target="vertex")}
        ]
    b.add("meshes", {"name": "tube", "primitives": [tube]})

    # -- mesh 1: a rigid prop, a strip without normals and a non-indexed fan -------------------
    quad = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    strip = {
        "attributes": {"POSITION": b.add_accessor(quad, target="vertex", min_max=True)},
        "indices": b.add_accessor(np.array([0, 1, 2, 3], np.uint8), target="index"),
        "mode": 5,
    }
    fan_pos = np.array([[0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], np.float32)
    fan = {
        "attributes": {
            "POSITION": b.add_accessor(fan_pos, target="vertex", min_max=True),
            "NORMAL": b.add_accessor(np.tile([0, 0, 1], (4, 1)).astype(np.float32)),
        },
        "mode": 6,
    }
    b.add("meshes", {"name": "prop", "primitives": [strip, fan]})

    # -- mesh 2: skinned by skin 1 (two joints, no inverseBindMatrices) ------------------------
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    hand = {
        "attributes": {
            "POSITION": b.add_accessor(tri, target="vertex", min_max=True),
            "JOINTS_0": b.add_accessor(np.array([[0, 1, 0, 0]] * 3, np.uint16), target="vertex"),
            "WEIGHTS_0": b.add_accessor(
                np.array([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 1, 0, 0]], np.float32)
            ),
        }
    }
    b.add("meshes", {"name": "hand", "primitives": [hand]})

    # -- skins: IBM of skin 0 = inverse rest global of each joint, perturbed ------------------
    rest = reference_globals(b.document, None, 0.0)
    ibm = np.linalg.inv(rest[1 : 1 + N_JOINTS]) @ trs((0.1, 0.0, -0.2), quat((0, 0, 1), 10))
    ibm = ibm @ np.diag([joint_scale, joint_scale, joint_scale, 1.0])
    ibm = ibm.astype(np.float32).astype(np.float64)
    b.add(
        "skins",
        {
            "name": "chain",
            "joints": list(range(1, 1 + N_JOINTS)),
            "inverseBindMatrices": b.add_accessor(ibm.astype(np.float32)),
            "skeleton": 0,
        },
    )
    b.add("skins", {"name": "hand", "joints": [6, 4]})

    # -- animations ------------------------------------------------------------------------------
    keys: list[dict] = []

    def rotations(qs):
        qs = np.asarray(qs, float)
        if rotation_type == FLOAT:
            stored = qs.astype(np.float32)
            return stored, stored.astype(np.float64), False
        stored, decoded = quantize(qs, rotation_type)
        return stored, decoded, True

    def add_channel(anim, channels, samplers, node, path, interp, times, values, tangents=None):
        times = np.asarray(times, np.float32)
        t_acc = b.add_accessor(times, min_max=True)
        if path == "rotation":
            stored, decoded, normalized = rotations(values)
            if tangents is not None:
                raise ValueError("fixture: rotation tangents are float only")
            out = b.add_accessor(stored, normalized=normalized, component_type=None)
            if normalized:
                b.document["accessors"][out]["componentType"] = rotation_type
            decoded = decoded / np.linalg.norm(decoded, axis=1, keepdims=True)
            anim[(node, path)] = (interp, times.astype(float), decoded, None, None)
        elif tangents is not None:
            tin, tout = (np.asarray(t, np.float32) for t in tangents)
            v = np.asarray(values, np.float32)
            packed = np.stack([tin, v, tout], axis=1).reshape(-1, v.shape[1])
            out = b.add_accessor(packed)
            anim[(node, path)] = (
                interp,
                times.astype(float),
                v.astype(float),
                tin.astype(float),
                tout.astype(float),
            )
        else:
            v = np.asarray(values, np.float32)
            out = b.add_accessor(v)
            anim[(node, path)] = (interp, times.astype(float), v.astype(float), None, None)
        samplers.append({"input": t_acc, "output": out, "interpolation": interp})
        channels.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": path}})

    pos_axis = (1.0, 1.0, 1.0)  # positive quaternion components: encodable as unsigned
    # 0: LINEAR
    anim, ch, sm = {}, [], []
    add_channel(
        anim, ch, sm, 2, "rotation", "LINEAR", [0, 1], [quat(pos_axis, 0), quat(pos_axis, 90)]
    )
    add_channel(
        anim,
        ch,
        sm,
        1,
        "translation",
        "LINEAR",
        [0, 0.5, 1],
        [[0, 0, 0], [0.2, 0.1, 0], [0.4, -0.3, 0.1]],
    )
    if scaled:
        add_channel(anim, ch, sm, 3, "scale", "LINEAR", [0, 1], [list(k) for k in scale_keys])
    if morph_channel:
        sm.append({"input": sm[0]["input"], "output": sm[0]["input"]})
        ch.append({"sampler": len(sm) - 1, "target": {"node": 9, "path": "weights"}})
    b.add("animations", {"name": "linear", "channels": ch, "samplers": sm})
    keys.append(anim)
    # 1: STEP
    anim, ch, sm = {}, [], []
    add_channel(
        anim,
        ch,
        sm,
        4,
        "rotation",
        "STEP",
        [0, 0.5, 1.5],
        [quat(pos_axis, 0), quat(pos_axis, 40), quat(pos_axis, 80)],
    )
    add_channel(anim, ch, sm, 5, "translation", "STEP", [0.25, 2.0], [[0, 1, 0], [0.3, 1.2, 0]])
    b.add("animations", {"name": "step", "channels": ch, "samplers": sm})
    keys.append(anim)
    # 2: CUBICSPLINE (translation with tangents; rotation handled in test_gltf's hand cases)
    anim, ch, sm = {}, [], []
    add_channel(
        anim,
        ch,
        sm,
        1,
        "translation",
        "CUBICSPLINE",
        [0, 1, 2],
        [[0, 0, 0], [0.5, 0.2, 0], [0, 0.4, 0.3]],
        tangents=([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0.5, 0, 0], [0, 0, 1], [0, 0, 0]]),
    )
    b.add("animations", {"name": "cubic", "channels": ch, "samplers": sm})
    keys.append(anim)

    return Rig(
        b,
        positions.astype(np.float64),
        normals.astype(np.float64),
        joints,
        w_decoded,
        indices,
        ibm,
        keys,
    )


def reference_globals(document: dict, keys: dict | None, key_index_time: float) -> np.ndarray:
    """Global matrix of every node, by walking the hierarchy of ``document`` recursively.

    With ``keys`` (one animation of :attr:`Rig.keys`), every animated property takes its key value
    at time ``key_index_time``, which must be exactly a key time of every channel or before/after
    all of them (so no interpolation is involved and the reference stays independent of it).
    """
    nodes = document["nodes"]
    local = []
    for i, nd in enumerate(nodes):
        t = np.array(nd.get("translation", [0, 0, 0]), float)
        r = np.array(nd.get("rotation", [0, 0, 0, 1]), float)
        s = np.array(nd.get("scale", [1, 1, 1]), float)
        for (node, path), (_, times, values, _, _) in (keys or {}).items():
            if node != i:
                continue
            hits = np.flatnonzero(times == np.float32(key_index_time))
            if len(hits):
                k = hits[0]
            elif key_index_time < times[0]:
                k = 0
            elif key_index_time > times[-1]:
                k = len(times) - 1
            else:
                raise ValueError("reference_globals needs a key time")
            if path == "translation":
                t = values[k]
            elif path == "rotation":
                r = values[k]
            else:
                s = values[k]
        if "matrix" in nd:
            local.append(np.array(nd["matrix"], float).reshape(4, 4).T)
        else:
            local.append(trs(t, r, s))
    out = [None] * len(nodes)

    def walk(i, parent):
        out[i] = parent @ local[i]
        for c in nodes[i].get("children", []):
            walk(c, out[i])

    children = {c for nd in nodes for c in nd.get("children", [])}
    for i in range(len(nodes)):
        if i not in children:
            walk(i, np.eye(4))
    return np.array(out)


def share_tube(rig: Rig) -> list[int]:
    """Two more nodes drawing the rig's tube (mesh 0), each with its own skin on its own copy of
    the joint chain: skin 2 has the copy's 8 joints, skin 3 its copy's 8 joints plus the copy's
    root (9 joints, the tube's joint indices still < 8). The copies are not animated, turned and
    moved aside, so the three tubes stand apart in three poses.

    Returns the skinned nodes, in node order: ``[9, body A, body B]``.
    """
    doc = rig.document
    nodes = doc["nodes"]
    chain = [dict(nodes[1 + k]) for k in range(N_JOINTS)]
    bodies = [9]
    for c, (dx, degrees) in enumerate(((3.0, 25.0), (-3.0, -40.0))):
        root = len(nodes)
        first = root + 1
        nodes.append(
            {
                "name": f"root{c}",
                "translation": [dx, -1.0, 0.0],
                "rotation": quat((0, 0, 1), degrees).tolist(),
            }
        )
        for k, nd in enumerate(chain):
            copy = {key: v for key, v in nd.items() if key != "children"}
            copy["name"] = f"j{k}|copy{c}"
            if k + 1 < N_JOINTS:
                copy["children"] = [first + k + 1]
            nodes.append(copy)
        joints = list(range(first, first + N_JOINTS))
        ibm = rig.ibm
        if c == 1:
            joints.append(root)
            ibm = np.concatenate([ibm, np.eye(4)[None]])
        skin = rig.builder.add(
            "skins",
            {
                "name": f"copy{c}",
                "joints": joints,
                "inverseBindMatrices": rig.builder.add_accessor(ibm.astype(np.float32)),
                "skeleton": root,
            },
        )
        body = len(nodes)
        nodes.append({"name": f"body{c}", "mesh": 0, "skin": skin})
        nodes[root]["children"] = [first, body]
        doc["scenes"][0]["nodes"].append(root)
        bodies.append(body)
    return bodies
