"""The lean vertex layout (Skinner(layout="lean")): float positions, octahedral snorm16 normals,
uint8 (or uint16) joints and unorm16 (or unorm8) weights, 32 bytes a vertex instead of 64. Its
error budget against the float64 reference and the exact layout, for every method, path and slot
count, and each packing's own bound (tests/test_vertex_packing.py has the numpy side)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from vkdqs import InputError
from vkdqs import methods as registry
from vkdqs import shader_interface as si
from vkdqs.engine.skinner import Skinner

from .test_registry import inputs, method_rig, poses, rig

METHODS = registry.names()


def test_lean_weights_sum_to_one_within_a_step():
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(8), 50000)
    w[:10] = 0.0  # vertices without weight stay without
    w[10] = [1.0] + [0.0] * 7
    w[11] = [1 / 3] * 3 + [0.0] * 5
    q = si.lean_weights(w)
    assert q.dtype == np.uint16
    sums = q.astype(np.int64).sum(axis=1)
    assert (sums[:10] == 0).all() and (sums[10:] == 65535).all()
    assert np.abs(q / 65535.0 - w).max() < 1.0 / 65535.0
    assert (q[w == 0] == 0).all()  # no weight appears where there was none


def test_bytes_a_vertex():
    # positions 16, normals 4 (octahedral), joints 4 (uint8), weights 8 (unorm16)
    assert si.layout_bytes(4) == 64 and si.layout_bytes(4, layout="lean") == 32
    assert si.layout_bytes(8) == 96 and si.layout_bytes(8, layout="lean") == 44
    assert si.layout_bytes(4, "cor", "lean") == 48  # the aux row stays float
    # the compute path's packed rows: one rgba32ui texel a vertex (two with 8 slots)
    assert si.layout_bytes(4, layout=si.LEAN_PACKED) == 32
    assert si.layout_bytes(8, layout=si.LEAN_PACKED) == 48
    assert si.layout_bytes(8, "ddm", si.LEAN_PACKED) == 356  # DDM reads no joints: not packed
    wide = si.VertexLayout(
        "lean",
        (
            ("normals", si.Format.R16G16_SNORM),
            ("joints", si.Format.R16G16B16A16_UINT),
            ("weights", si.Format.R8G8B8A8_UNORM),
        ),
    )
    assert si.layout_bytes(4, layout=wide) == 32 and si.layout_bytes(8, layout=wide) == 44
    # Direct Delta Mush: no joints or weights; 8 slots of Ω (320 bytes) and their bones (16),
    # or 4 slots (160 bytes) where the precomputation keeps at most 4 bones a vertex
    assert si.layout_bytes(8, "ddm") == 368 and si.layout_bytes(4, "ddm") == 208
    assert si.layout_bytes(8, "ddm", "lean") == 356
    # ... and once a mesh, its bounding-box diagonal's texel (si.ddm_diag2)
    assert si.layout_extra_bytes(8, "ddm") == 16 and si.layout_extra_bytes(8, "lbs") == 0


def _spread(mesh, pose, method):
    """Per vertex, the largest distance between its influences' images of it (float64): what
    a weight error of one step moves it by, at most, per step."""
    mats = registry.as_matrices(pose)
    p = mesh.positions.astype(np.float64)
    images = (
        np.einsum("nsij,nj->nsi", mats[mesh.joints][..., :3, :3], p) + mats[mesh.joints][..., :3, 3]
    )
    center = images.mean(axis=1, keepdims=True)
    return 2.0 * np.linalg.norm(images - center, axis=2).max(axis=1)


@pytest.mark.parametrize("path", ("compute", "vertex"))
@pytest.mark.parametrize("slots", (4, 8))
@pytest.mark.parametrize("method", METHODS)
def test_lean_layout_error_budget(device, method, slots, path):
    rng = np.random.default_rng(zlib.crc32(f"lean {method} {slots} {path}".encode()))
    bones = 10
    skinning = registry.get(method)
    mesh = method_rig(method, rng, 800, slots, bones)
    extra = inputs(method, mesh, bones, rng, device)
    batch = poses(method, bones, rng, 3)
    args = dict(bone_count=bones, method=method, path=path, inputs=extra)
    if path not in skinning.paths:  # tests/test_registry.py checks the refusal
        with pytest.raises(InputError, match="runs on the compute path only"):
            Skinner(device, mesh, layout="lean", **args)
        return
    with (
        Skinner(device, mesh, layout="lean", **args) as lean,
        Skinner(device, mesh, **args) as exact,
    ):
        lean_p, lean_n, boxes = lean.skin_many(batch, bounds=True)
        exact_p, exact_n = exact.skin_many(batch)
        nbytes = sum(b.size for b in lean._mesh_buffers.values())
        shader_slots = lean.slots  # the mesh's, or (ddm) its precomputation's
    # 10 joints, random weights, lavapipe reads them all; the compute path packs the rows of
    # the methods that read joints and weights
    packed = path == "compute" and skinning.influences
    assert lean.vertex_layout == (si.LEAN_PACKED if packed else si.LEAN)
    layout = lean.vertex_layout
    per_vertex = si.layout_bytes(shader_slots, method, layout) * mesh.vertex_count
    assert nbytes == per_vertex + si.layout_extra_bytes(shader_slots, method, layout)
    for pose, p, n, ep, en, box in zip(batch, lean_p, lean_n, exact_p, exact_n, boxes, strict=True):
        want, _ = skinning.reference(mesh, pose, **extra)
        scale = max(mesh.extent, np.abs(want).max())
        # weights: at most one 1/65535 step each, moving a vertex by at most that times the
        # spread of its bones' images; plus float32 rounding
        budget = slots / 65535.0 * _spread(mesh, pose, method) + 1e-5 * scale
        assert (np.linalg.norm(p - want, axis=1) <= budget).all()
        # it is a different layout: the weights move positions, where the method reads them
        # (Direct Delta Mush reads its own Ω: only its normals are lean)
        differs = p - ep if skinning.influences else n - en
        assert np.linalg.norm(differs, axis=1).max() > 0
        # normals: snorm16 components (a 1/32767 step) and the weights: typically 1e-5 to 1e-4 rad;
        # where a vertex's bones turn its normal nearly opposite ways (random rigs, LBS's
        # collapse) the blended normal is short and the weights' step weighs more
        a, b = n.astype(np.float64), en.astype(np.float64)
        angle = np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), (a * b).sum(axis=1))
        assert np.median(angle) < 1e-4 and np.quantile(angle, 0.99) < 1e-3
        assert angle.max() < 1e-2
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
        if path == "compute":
            np.testing.assert_array_equal(box, np.stack([p.min(axis=0), p.max(axis=0)]))


def test_lean_layout_refusals(device):
    rng = np.random.default_rng(0)
    mesh = rig(rng, 30, 4, 4)
    with pytest.raises(InputError, match="layout must be one of"):
        Skinner(device, mesh, bone_count=4, layout="tiny")


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_lean_layout_on_a_bent_chain(device, method):
    """A 16-bone tube bent 90 degrees (a rig as characters are made): every normal within
    1e-4 rad of the exact layout's, every position within the weights' step."""
    from vkdqs import procedural

    mesh = procedural.tube(20000, bone_count=16, influences=4)
    pose = procedural.bone_chain_pose(16, 90.0)
    with (
        Skinner(device, mesh, bone_count=16, method=method, layout="lean") as lean,
        Skinner(device, mesh, bone_count=16, method=method) as exact,
    ):
        p, n = lean.skin(pose)
        ep, en = exact.skin(pose)
    a, b = n.astype(np.float64), en.astype(np.float64)
    angle = np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), (a * b).sum(axis=1))
    assert angle.max() < 1e-4
    budget = 4 / 65535.0 * _spread(mesh, pose, method) + 1e-6 * mesh.extent
    assert (np.linalg.norm(p - ep, axis=1) <= budget).all()


COLOR = (0.62, 0.34, 0.16, 1.0)


def test_lean_meshes_draw_like_exact_ones_and_crowds_like_instances(device):
    """The renderer draws a lean mesh where the exact one is (the weights' step is far below a
    pixel), and a lean crowd's copies exactly like lean instances posed with the same frame."""
    from vkdqs import AnimationClip, procedural
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    mesh = procedural.tube(3000, bone_count=8, influences=4)
    frames = np.stack([procedural.bone_chain_pose(8, a) for a in (0.0, 45.0, 90.0)])
    images = {}
    with OffscreenTarget(device, 96, 96) as target:
        for layout in ("exact", "lean"):
            with Renderer(device, target) as renderer:
                rm = renderer.add_mesh(mesh, layout=layout)
                inst = renderer.add_instance(rm, bone_count=8, bones=frames[1], color=COLOR)
                renderer.frame_scene()
                camera = renderer.camera
                images[layout] = renderer.render_image()
                renderer.remove_instance(inst)
                crowd = renderer.add_crowd(rm, AnimationClip(frames, 1.0), count=1)
                crowd.set_times([1.0])  # frame 1, whole: sampled unchanged
                crowd.set_colors(COLOR)
                renderer.camera = camera
                images[f"{layout} crowd"] = renderer.render_image()
                assert renderer.stats.copies_drawn == 1
    covered = (images["exact"][..., :3] != images["exact"][0, 0, :3]).any(axis=2)
    assert covered.sum() > 500
    differ = (images["exact"] != images["lean"]).any(axis=2)
    assert differ.sum() <= 0.01 * covered.sum()  # edge pixels at most
    np.testing.assert_array_equal(images["lean crowd"], images["lean"])


def _skin_both(device, mesh, bones, pose, path, **kw):
    with (
        Skinner(device, mesh, bone_count=bones, path=path, layout="lean", **kw) as lean,
        Skinner(device, mesh, bone_count=bones, path=path, **kw) as exact,
    ):
        return lean.vertex_layout, lean.skin(pose), exact.skin(pose)


@pytest.mark.parametrize("path", ("compute", "vertex"))
def test_octahedral_normals_on_the_gpu(device, path):
    """At rest the skinned normals are the decoded ones: within the encoding's bound of the
    float64 normals (plus float32 rounding), on both paths."""
    from vkdqs.engine import vertex_packing

    mesh = rig(np.random.default_rng(5), 3000, 4, 6)
    layout, (p, n), _ = _skin_both(device, mesh, 6, np.tile(np.eye(4), (6, 1, 1)), path)
    assert layout.oct_normals
    want = mesh.normals.astype(np.float64)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    a = n.astype(np.float64)
    angle = np.arctan2(np.linalg.norm(np.cross(a, want), axis=1), (a * want).sum(axis=1))
    assert angle.max() < vertex_packing.OCT_NORMAL_MAX_ANGLE + 2e-6
    assert angle.max() > 1e-6  # they are packed
    np.testing.assert_allclose(p, mesh.positions, atol=1e-6)  # unorm16 weights sum to 1


@pytest.mark.parametrize("path", ("compute", "vertex"))
def test_sixteen_bit_joints_past_255(device, path):
    """A mesh naming joints past 255 gets uint16 joints, read as the exact layout's."""
    rng = np.random.default_rng(6)
    mesh = rig(rng, 600, 4, 300)
    pose = poses("lbs", 300, rng, 1)[0]
    layout, (p, _), (ep, _) = _skin_both(device, mesh, 300, pose, path, method="lbs")
    assert layout.format("joints") == si.Format.R16G16B16A16_UINT
    want, _ = registry.get("lbs").reference(mesh, pose)
    budget = 4 / 65535.0 * _spread(mesh, pose, "lbs") + 1e-5 * np.abs(want).max()
    assert (np.linalg.norm(p - want, axis=1) <= budget).all()
    assert np.abs(p - ep).max() > 0  # the weights are unorm16


@pytest.mark.parametrize("path", ("compute", "vertex"))
def test_byte_weights_are_stored_as_bytes_without_error(device, path):
    """Weights that are multiples of 1/255 (a glTF accessor of normalized bytes) are unorm8:
    the positions are the exact layout's, within float32 rounding of the float64 reference."""
    rng = np.random.default_rng(8)
    mesh = rig(rng, 600, 4, 12)
    steps = rng.multinomial(255, np.ones(4) / 4, size=600)
    mesh = type(mesh)(mesh.positions, mesh.normals, mesh.joints, steps / 255.0, mesh.indices)
    pose = poses("dqs", 12, rng, 1)[0]
    layout, (p, _), (ep, _) = _skin_both(device, mesh, 12, pose, path)
    assert layout.format("weights") == si.Format.R8G8B8A8_UNORM
    want, _ = registry.get("dqs").reference(mesh, pose)
    scale = np.abs(want).max()
    assert np.abs(p - want).max() <= 1e-5 * scale
    assert np.abs(p - ep).max() <= 1e-6 * scale


def test_formats_the_device_cannot_read_fall_back(device, monkeypatch):
    """Where the device reads no octahedral normals or uint8 joints, the lean layout takes
    snorm16x4 normals and uint16 joints, and skins within the same budget (the vertex path's
    attributes; the compute path's packed rows fetch none of them, rgba32ui only)."""
    real = device.buffer_format_features
    refused = {si.Format.R16G16_SNORM, si.Format.R8G8B8A8_UINT}
    monkeypatch.setattr(device, "buffer_format_features", lambda f: 0 if f in refused else real(f))
    rng = np.random.default_rng(9)
    mesh = rig(rng, 600, 4, 8)
    pose = poses("dqs", 8, rng, 1)[0]
    layout, (p, n), (_, en) = _skin_both(device, mesh, 8, pose, "vertex")
    packed, _, _ = _skin_both(device, mesh, 8, pose, "compute")
    monkeypatch.undo()
    assert packed == si.LEAN_PACKED
    assert layout.format("normals") == si.Format.R16G16B16A16_SNORM and not layout.oct_normals
    assert layout.format("joints") == si.Format.R16G16B16A16_UINT
    want, _ = registry.get("dqs").reference(mesh, pose)
    budget = 4 / 65535.0 * _spread(mesh, pose, "dqs") + 1e-5 * np.abs(want).max()
    assert (np.linalg.norm(p - want, axis=1) <= budget).all()
    a, b = n.astype(np.float64), en.astype(np.float64)
    angle = np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), (a * b).sum(axis=1))
    assert np.median(angle) < 1e-4
