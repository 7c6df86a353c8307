"""The recipe for a new method is this module: a method with a need of its own and a compute
pass after the skinning, defined here and registered, runs on the compute path, as a
Renderer instance and in a bake, against its float64 reference, without a line of the engine
changed (docs/architecture.md, "Adding a method").

The method, "lbs_inflate", is LBS (its ``base``) followed by a pass that moves every skinned
vertex along its skinned normal by a per-vertex amount: the need "inflation" (keyword
``inflation=``, (N,) finite; its default, kept on the mesh, grows with the rest height). Its
shader is GLSL in this file, compiled by glslc and handed to the pass as SPIR-V data.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import vkdqs
from vkdqs import methods
from vkdqs.baking import driver
from vkdqs.errors import InputError
from vkdqs.gltf import load_gltf
from vkdqs.gltf.parts import scene_parts
from vkdqs.gpu import ComputePass, HostTexels, compute_barrier, texel_buffer
from vkdqs.gpu.calls import vk
from vkdqs.methods import needs
from vkdqs.shader_interface import Binding, DescriptorType, Stage

from .gltf_fixtures import make_rig
from .imaging import CLEAR, assert_images_agree_to_rounding, covered
from .vulkan_app import VulkanApp

NAME, NEED, KEYWORD = "lbs_inflate", "inflation", "inflation"

SHADER = """
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, r32f) uniform imageBuffer vertices;
layout(set = 0, binding = 1) uniform samplerBuffer amounts;
layout(push_constant) uniform Push { uint count; uint positions; uint normals; } pc;
void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.count) return;
    float a = texelFetch(amounts, int(v)).x;
    for (int k = 0; k < 3; ++k) {
        int p = int(pc.positions + 3u * v) + k;
        float n = imageLoad(vertices, int(pc.normals + 3u * v) + k).x;
        imageStore(vertices, p, vec4(imageLoad(vertices, p).x + a * n));
    }
}
"""
BINDINGS = (
    Binding(0, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(1, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
)


class Inflation(needs.Need):
    """Per-vertex distances to move along the skinned normal."""

    name, keyword, on_host = NEED, KEYWORD, True

    def check(self, value, mesh, bone_count, method):
        """(N,) finite float32, or None (the default)."""
        if value is None:
            return None
        a = np.asarray(value, dtype=np.float64)
        if a.shape != (mesh.vertex_count,) or not np.isfinite(a).all():
            raise InputError(f"inflation must be ({mesh.vertex_count},) finite values")
        return a.astype(np.float32)

    def default(self, mesh, bone_count, device, method):
        """A twentieth of the extent at the top of the rest mesh, nothing at its bottom."""
        cached = mesh.__dict__.get("_inflation")
        if cached is None:
            y = mesh.positions[:, 1].astype(np.float64)
            span = max(float(np.ptp(y)), 1e-12)
            cached = (0.05 * mesh.extent * (y - y.min()) / span).astype(np.float32)
            mesh.__dict__["_inflation"] = cached
        return cached


class InflatePass:
    """The pass after the skinning (a :class:`vkdqs.engine.passes.SkinPass`)."""

    def __init__(self, skinner, inputs, code: bytes) -> None:
        amounts = np.asarray(inputs[NEED], np.float32).reshape(-1, 1)
        buffer, view = texel_buffer(
            skinner.device, amounts, vk.VK_FORMAT_R32_SFLOAT, label="inflation"
        )
        skinner.own(buffer)
        self.amounts = skinner.own(view)
        # two sets: the Skinner's batches', and Skinner.record's ring's (records_ring)
        self.compute = ComputePass(
            skinner, skinner.pipelines, "inflate.comp", BINDINGS, 12, sets=2, code=code
        )
        self.pipeline = self.compute.pipeline()
        self.written = [None, None]

    records_ring = True

    def record(self, cmd, target) -> None:
        if not target.writes_vertices:
            return
        ring = int(target.ring)
        if self.written[ring] != target.generation:
            self.compute.write({0: target.vertices, 1: self.amounts}, ring)
            self.written[ring] = target.generation
        compute_barrier(cmd)
        self.compute.begin(cmd)
        n = target.vertex_count
        for p in target.pose_range:
            push = np.array([n, target.positions_at(p), target.normals_at(p)], np.uint32)
            self.compute.dispatch(cmd, self.pipeline, n, 64, push, ring)


def _reference(p, n, j, w, bones, *, base, inflation, **kw):
    """Its base's float64 skinning, then each vertex moved along its skinned normal."""
    sp, sn = base(p, n, j, w, bones, **kw)
    return sp + np.asarray(inflation, np.float64)[:, None] * sn, sn


def _compile(source: str) -> bytes:
    glslc = shutil.which("glslc")
    assert glslc, (
        "glslc (Debian package glslc, installed by make deps) compiles the recipe's shader"
    )
    out = subprocess.run(
        [glslc, "-fshader-stage=compute", "--target-env=vulkan1.1", "-o", "-", "-"],
        input=source.encode(),
        capture_output=True,
        check=True,
    )
    return out.stdout


@pytest.fixture(scope="module")
def recipe():
    """The need and the method registered for this module's tests, then removed."""
    code = _compile(SHADER)
    # LBS's skinning, then the pass: compute path only, drawn by "compute, then draw"
    method = methods.get("lbs").followed_by(
        (lambda skinner, inputs: InflatePass(skinner, inputs, code),),
        name=NAME,
        label="LBS, inflated",
        summary="LBS, then each vertex moved along its normal",
        color=methods.get("lbs").color,
        reference_skin=_reference,
        needs=frozenset({NEED}),
    )
    needs.register(Inflation())
    methods.register(method)
    try:
        yield method
    finally:
        methods.unregister(NAME)
        needs.unregister(NEED)
    assert NAME not in methods.METHODS and NEED not in needs.NEEDS


def _pose(mesh):
    return vkdqs.procedural.twist_pose(80.0) @ vkdqs.procedural.bend_pose(50.0)


def test_on_the_compute_path_against_its_reference(device, recipe):
    mesh = vkdqs.procedural.candy_wrapper()
    pose = _pose(mesh)
    with vkdqs.Skinner(device, mesh, bone_count=2, method=NAME) as skinner:
        p, n = skinner.skin(pose)
        inputs = skinner.method_inputs
        # the need's default, kept on the mesh (and checked like a given value)
        np.testing.assert_array_equal(inputs.inflation, mesh.__dict__["_inflation"])
        assert inputs[NEED].max() > 0.04 * mesh.extent
        box = skinner.skin(pose, bounds=True)[2]
        many = skinner.skin_many(np.stack([pose, np.tile(np.eye(4), (2, 1, 1))]))[0]
    want_p, want_n = recipe.reference(mesh, pose)
    lbs_p, _ = methods.get("lbs").reference(mesh, pose)
    assert np.abs(want_p - lbs_p).max() > 0.04 * mesh.extent  # the pass shows
    np.testing.assert_allclose(p, want_p, rtol=0, atol=2e-6 * mesh.extent)
    np.testing.assert_allclose(n, want_n, rtol=0, atol=2e-5)
    # a pass after the skinning: the box comes from the vertices it wrote
    np.testing.assert_array_equal(box, np.stack([p.min(axis=0), p.max(axis=0)]))
    np.testing.assert_array_equal(many[0], p)  # a batch records the pass per pose
    rest = recipe.reference(mesh, np.tile(np.eye(4), (2, 1, 1)))[0]
    np.testing.assert_allclose(many[1], rest, rtol=0, atol=2e-6 * mesh.extent)


@pytest.mark.gpu
def test_recorded_into_an_apps_command_buffer(recipe):
    """Skinner.record records the method's pass on its ring, in the app's command buffer."""
    mesh = vkdqs.procedural.candy_wrapper()
    n = mesh.vertex_count
    app = VulkanApp()
    usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
    try:
        with vkdqs.Device.adopt(**app.adopt_kwargs()) as dev:
            buf, mem = app.host_buffer(12 * n, usage)
            target = vkdqs.gpu.AppBuffer(dev, buf, size=12 * n, usage=usage)
            with vkdqs.Skinner(dev, mesh, bone_count=2, method=NAME) as skinner:
                for pose in (_pose(mesh), np.tile(np.eye(4), (2, 1, 1))):
                    skinner.record(app.begin(), pose, positions=(target, 0))
                    app.end_submit_wait()
                    got = np.frombuffer(app.read(mem, 12 * n), np.float32).reshape(n, 3)
                    np.testing.assert_array_equal(got, skinner.skin(pose)[0])
                    want = recipe.reference(mesh, pose)[0]
                    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * mesh.extent)
            assert not dev.take_messages()
    finally:
        app.destroy()
    assert not app.messages


def test_a_given_value_and_the_refusals(device, recipe):
    mesh = vkdqs.procedural.candy_wrapper()
    pose = _pose(mesh)
    amount = np.full(mesh.vertex_count, 0.01)
    with vkdqs.Skinner(device, mesh, bone_count=2, method=NAME, inputs={KEYWORD: amount}) as s:
        p, _ = s.skin(pose)
    np.testing.assert_allclose(
        p, recipe.reference(mesh, pose, inflation=amount)[0], rtol=0, atol=2e-6 * mesh.extent
    )
    with pytest.raises(InputError, match="inflation must be"):
        vkdqs.Skinner(device, mesh, bone_count=2, method=NAME, inputs={KEYWORD: amount[:3]})
    with pytest.raises(InputError, match="inflation are for method='lbs_inflate', not 'dqs'"):
        vkdqs.Skinner(device, mesh, bone_count=2, inputs={KEYWORD: amount})
    with pytest.raises(InputError, match="runs on the compute path only"):
        vkdqs.Skinner(device, mesh, bone_count=2, method=NAME, path="vertex")


def test_as_a_renderer_instance(device, recipe):
    """Drawn by "compute, then draw" (it has no vertex-shader variants): the image is the
    unskinned image of what its Skinner computes, and its box that of those vertices."""
    mesh = vkdqs.procedural.candy_wrapper()
    pose = _pose(mesh)
    with (
        vkdqs.OffscreenTarget(device, 160, 120) as target,
        vkdqs.Renderer(device, target, clear_color=CLEAR) as renderer,
        vkdqs.Skinner(device, mesh, bone_count=2, method=NAME) as skinner,
    ):
        rm = renderer.add_mesh(mesh)
        inst = renderer.add_instance(rm, bone_count=2, method=NAME, bones=pose)
        assert inst.computed and inst.variant == "none"
        renderer.frame_scene()
        image = renderer.render_image()
        p, n = skinner.skin(pose)
        np.testing.assert_array_equal(inst.bounds, np.stack([p.min(axis=0), p.max(axis=0)]))
        inst.visible = False
        posed = vkdqs.SkinnedMesh(p, n, mesh.joints, mesh.weights, indices=mesh.indices)
        renderer.add_instance(renderer.add_mesh(posed), bone_count=2, method="none")
        want = renderer.render_image()
        assert covered(want).sum() > 500
        # the same positions; SkinnedMesh renormalizes the normals (an ulp): rounding
        assert_images_agree_to_rounding(image, want)
        with pytest.raises(InputError, match="runs on the compute path only"):
            renderer.add_crowd(rm, vkdqs.AnimationClip(pose[None], 30.0), count=1, method=NAME)


def test_in_a_bake(device, recipe, tmp_path):
    rig = make_rig(scaled=False)
    for node in rig.document["nodes"]:  # only the skinned chain
        if node.get("name") in ("prop", "hand"):
            del node["mesh"]
            node.pop("skin", None)
    path = tmp_path / "rig.glb"
    rig.save(path)
    scene = load_gltf(path)
    baked = vkdqs.bake(scene, animation="linear", fps=4, method=NAME, device=device)
    (part,) = [p for p in scene_parts(scene) if p.kind == "skinned"]
    geometry = part.geometry
    assert baked.positions.shape[0] > 2
    for i, t in enumerate(baked.times):
        mats = scene.skinning_matrices(part.skin, "linear", t)
        want_p, want_n = recipe.reference(geometry, mats)
        scale = max(1.0, np.abs(want_p).max())
        np.testing.assert_allclose(baked.positions[i], want_p, rtol=0, atol=2e-5 * scale)
        np.testing.assert_allclose(baked.normals[i], want_n, rtol=0, atol=2e-5)


def test_the_engine_was_not_edited_for_it(recipe, drift):
    """The engine names neither the method nor its need (tests/test_house.py checks the same
    for every method and need)."""
    from pathlib import Path

    engine = Path(vkdqs.__file__).parent / "engine"
    for path in engine.glob("*.py"):
        text = path.read_text()
        assert NAME not in text and NEED not in text and DRIFT not in text, path


# -- a method that moves with the motion -----------------------------------------------------
# The recipe's second example: "lbs_drift" is LBS followed by a pass that reads the poses'
# motion (a pass with a ``motion(motion)`` method is handed each chunk's poses, and the poses
# before them, before the chunk's submission): the whole mesh trails behind bone 0 by its
# velocity times LAG seconds. Velocity skinning (vkdqs/methods/velocity/) is the same shape.

DRIFT, LAG = "lbs_drift", 0.05
DRIFT_SHADER = """
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, r32f) uniform imageBuffer vertices;
layout(set = 0, binding = 1) uniform samplerBuffer offsets;  // one texel a pose
layout(push_constant) uniform Push { uint count; uint positions; uint pose; } pc;
void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.count) return;
    vec3 d = texelFetch(offsets, int(pc.pose)).xyz;
    for (int k = 0; k < 3; ++k) {
        int p = int(pc.positions + 3u * v) + k;
        imageStore(vertices, p, vec4(imageLoad(vertices, p).x + d[k]));
    }
}
"""


class DriftPass:
    """The pass after the skinning that reads the motion: one offset a pose, written by
    :meth:`motion` to a host-visible texel buffer the recorded dispatches read."""

    records_ring = False  # Skinner.record has no motion to hand it: refused there

    def __init__(self, skinner, inputs, code: bytes) -> None:
        self.skinner = skinner
        self.compute = ComputePass(
            skinner, skinner.pipelines, "drift.comp", BINDINGS, 12, code=code
        )
        self.pipeline = self.compute.pipeline()
        self.offsets = HostTexels(skinner, vk.VK_FORMAT_R32G32B32A32_SFLOAT, 16, "drift")
        self.written = -1

    def motion(self, motion) -> None:
        offsets = np.zeros((len(motion.bones), 4), np.float32)
        if motion.previous is not None:
            moved = motion.bones[:, 0, :3, 3] - motion.previous[:, 0, :3, 3]
            offsets[:, :3] = -LAG * moved / motion.dt
        self.offsets.ensure(len(offsets))
        self.offsets.write(offsets)

    def record(self, cmd, target) -> None:
        if not target.writes_vertices:
            return
        if self.offsets.ensure(target.poses) or self.written != target.generation:
            self.compute.write({0: target.vertices, 1: self.offsets.view})
            self.written = target.generation
        compute_barrier(cmd)
        self.compute.begin(cmd)
        for p in target.pose_range:
            push = np.array([target.vertex_count, target.positions_at(p), p], np.uint32)
            self.compute.dispatch(cmd, self.pipeline, target.vertex_count, 64, push)


def _drift_reference(p, n, j, w, bones, *, base, motion, **kw):
    """Its base's float64 skinning, then the whole mesh moved by -LAG x bone 0's velocity."""
    sp, sn = base(p, n, j, w, bones, **kw)
    previous, dt = motion
    if previous is None:
        return sp, sn
    now, before = methods.as_matrices(bones), methods.as_matrices(previous)
    return sp - LAG * (now[0, :3, 3] - before[0, :3, 3]) / dt, sn


@pytest.fixture(scope="module")
def drift():
    code = _compile(DRIFT_SHADER)
    method = methods.get("lbs").followed_by(
        (lambda skinner, inputs: DriftPass(skinner, inputs, code),),
        name=DRIFT,
        label="LBS, drifting",
        summary="LBS, then the mesh trails its root's motion",
        color=methods.get("lbs").color,
        reference_skin=_drift_reference,
    )
    methods.register(method)
    try:
        yield method
    finally:
        methods.unregister(DRIFT)


def _moving(mesh):
    """A pose and the pose 1/30 s before it (bone 0 moved and turned)."""
    now = _pose(mesh)
    step = np.eye(4)
    step[:3, 3] = (0.04, -0.02, 0.03)
    return now, step @ now, 1 / 30


def test_a_method_that_moves_with_the_motion(device, drift, tmp_path):
    """On the compute path (one pose and a batch), as a renderer instance (its box that of the
    Skinner's vertices for that motion) and in a bake (the clip at t and MOTION_STEP before)."""
    mesh = vkdqs.procedural.candy_wrapper()
    now, before, dt = _moving(mesh)
    want, _ = drift.reference(mesh, now, previous=before, dt=dt)
    still, _ = drift.reference(mesh, now)
    assert np.abs(want - still).max() > 0.02 * mesh.extent  # the motion shows
    with (
        vkdqs.OffscreenTarget(device, 160, 120) as target,
        vkdqs.Renderer(device, target, clear_color=CLEAR) as renderer,
        vkdqs.Skinner(device, mesh, bone_count=2, method=DRIFT) as skinner,
    ):
        assert skinner.reads_motion
        p, _ = skinner.skin(now, previous=before, dt=dt)
        np.testing.assert_allclose(p, want, rtol=0, atol=2e-6 * mesh.extent)
        many, _ = skinner.skin_many(np.stack([now, now]), previous=np.stack([before, now]), dt=dt)
        np.testing.assert_array_equal(many[0], p)
        np.testing.assert_array_equal(many[1], skinner.skin(now)[0])  # no motion: at rest
        inst = renderer.add_instance(renderer.add_mesh(mesh), bone_count=2, method=DRIFT)
        inst.set_pose(now, previous=before, dt=dt)
        np.testing.assert_array_equal(inst.bounds, np.stack([p.min(axis=0), p.max(axis=0)]))
    rig = make_rig(scaled=False)
    for node in rig.document["nodes"]:  # only the skinned chain
        if node.get("name") in ("prop", "hand"):
            del node["mesh"]
            node.pop("skin", None)
    rig.save(tmp_path / "rig.glb")
    scene = load_gltf(tmp_path / "rig.glb")
    baked = vkdqs.bake(scene, animation="linear", fps=4, method=DRIFT, device=device)
    (part,) = [p for p in scene_parts(scene) if p.kind == "skinned"]
    h = driver.MOTION_STEP
    moved = 0
    for i, t in enumerate(baked.times):
        mats = scene.skinning_matrices(part.skin, "linear", t)
        earlier = scene.skinning_matrices(part.skin, "linear", t - h)
        want_p, _ = drift.reference(part.geometry, mats, previous=earlier, dt=h)
        scale = max(1.0, np.abs(want_p).max())
        np.testing.assert_allclose(baked.positions[i], want_p, rtol=0, atol=2e-5 * scale)
        moved += np.abs(want_p - drift.reference(part.geometry, mats)[0]).max() > 1e-3 * scale
    assert moved >= 2  # the clip moves its root
