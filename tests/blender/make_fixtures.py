"""Ground truth for method="dqs_blender": Blender's own armature deform with Preserve Volume.

Run with Blender's Python module (not needed by the tests, which read the .npz it writes):

    python3 -m venv /tmp/bpyvenv && /tmp/bpyvenv/bin/pip install bpy==4.5.15 numpy
    /tmp/bpyvenv/bin/python tests/blender/make_fixtures.py

Builds 4-bone rigs (a chain with rolled, tilted rest frames, so shear reaches the children when
a parent scales non-uniformly) and a cloud of vertices with 1 to 4 weights each, assigned to
the vertex groups in descending weight order (the order vkdqs's SkinnedMesh gives the slots),
poses them (rotations; + uniform scale; + non-uniform scale on the root; + a mirroring scale),
evaluates the mesh through the depsgraph and writes tests/data/blender_dqs_<rig>.npz:
rest positions, joints, weights (per vertex, in group order), rest_matrices (each bone's
``matrix_local``), skinning matrices per pose (``pose_bone.matrix @ matrix_local^-1``, in the
armature's space = the mesh's, both objects at the origin) and Blender's deformed positions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import bpy
import numpy as np
from mathutils import Euler, Quaternion, Vector

OUT = Path(__file__).resolve().parents[1] / "data"
BONES = 4


def build(seed: int, n: int):
    rng = np.random.default_rng(seed)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    arm_data = bpy.data.armatures.new("rig")
    arm = bpy.data.objects.new("rig", arm_data)
    scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    head = Vector((0.0, 0.0, 0.0))
    names = []
    prev = None
    for i in range(BONES):
        eb = arm_data.edit_bones.new(f"b{i}")
        direction = Vector(rng.normal(size=3) * 0.4 + np.array([0.0, 0.0, 1.0]))
        eb.head = head
        eb.tail = head + direction.normalized() * rng.uniform(0.8, 1.3)
        eb.roll = float(rng.uniform(-np.pi, np.pi))
        if prev is not None:
            eb.parent = prev
            eb.use_connect = bool(i % 2)
        head = Vector(eb.tail)
        prev = eb
        names.append(eb.name)
    bpy.ops.object.mode_set(mode="OBJECT")

    mesh = bpy.data.meshes.new("cloud")
    positions = rng.uniform(-0.8, 0.8, (n, 3)) + np.array([0.0, 0.0, 2.0])
    mesh.from_pydata([tuple(p) for p in positions], [], [])
    obj = bpy.data.objects.new("cloud", mesh)
    scene.collection.objects.link(obj)
    groups = [obj.vertex_groups.new(name=name) for name in names]
    joints = np.zeros((n, 4), np.int64)
    weights = np.zeros((n, 4))
    for v in range(n):
        k = int(rng.integers(1, 5))
        js = rng.permutation(BONES)[:k]
        ws = np.sort(rng.uniform(0.05, 1.0, k))[::-1]
        for slot, (jj, ww) in enumerate(zip(js, ws, strict=True)):
            groups[jj].add([v], float(ww), "REPLACE")  # appended in this order
            joints[v, slot], weights[v, slot] = jj, ww
    mod = obj.modifiers.new("armature", "ARMATURE")
    mod.object = arm
    mod.use_deform_preserve_volume = True
    mod.use_vertex_groups = True
    mod.use_bone_envelopes = False
    return rng, arm, obj, names, positions, joints, weights


def pose(rng, arm, names, kind: str) -> None:
    for i, name in enumerate(names):
        pb = arm.pose.bones[name]
        pb.rotation_mode = "QUATERNION"
        e = Euler(tuple(rng.uniform(-1.2, 1.2, 3)), "XYZ")
        pb.rotation_quaternion = e.to_quaternion() if kind != "rest" else Quaternion()
        pb.location = tuple(rng.uniform(-0.3, 0.3, 3)) if kind != "rest" else (0, 0, 0)
        pb.scale = (1.0, 1.0, 1.0)
        if kind == "uniform":
            pb.scale = (rng.uniform(0.6, 1.5),) * 3
        elif kind == "nonuniform" and i == 0:
            pb.scale = tuple(rng.uniform(0.5, 1.8, 3))
        elif kind == "nonuniform" and i == 2:
            pb.scale = (1.0, rng.uniform(1.3, 1.8), 1.0)
        elif kind == "mirror" and i == 1:
            pb.scale = (-1.0, 1.0, 1.0)


def evaluate(arm, obj, names):
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    ev = obj.evaluated_get(dg)
    out = np.array([tuple(v.co) for v in ev.data.vertices])
    mats = np.array(
        [
            np.array(arm.pose.bones[nm].matrix @ arm.data.bones[nm].matrix_local.inverted())
            for nm in names
        ]
    )
    return out, mats


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for rig, seed in (("a", 1), ("b", 2)):
        rng, arm, obj, names, positions, joints, weights = build(seed, 300)
        rest = np.array([np.array(arm.data.bones[nm].matrix_local) for nm in names])
        kinds = ["rigid", "rigid", "uniform", "nonuniform", "nonuniform", "mirror"]
        poses, deformed = [], []
        for kind in kinds:
            pose(rng, arm, names, kind)
            out, mats = evaluate(arm, obj, names)
            poses.append(mats)
            deformed.append(out)
        np.savez_compressed(
            OUT / f"blender_dqs_{rig}.npz",
            positions=positions.astype(np.float32),
            joints=joints,
            weights=weights.astype(np.float32),
            rest_matrices=rest,
            matrices=np.array(poses),
            blender_positions=np.array(deformed),
            kinds=np.array(kinds),
            blender_version=np.array(bpy.app.version_string),
        )
        print(f"wrote blender_dqs_{rig}.npz: {len(kinds)} poses, {len(positions)} vertices")
    return 0


if __name__ == "__main__":
    sys.exit(main())
