"""Baking (vkdqs.bake, vkdqs bake): every frame against the float64 reference, and the .npz,
.glb and USD files read back independently of the writer."""

from __future__ import annotations

import builtins
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkdqs
from vkdqs import dq, reference
from vkdqs.baking import driver
from vkdqs.gltf import load_gltf
from vkdqs.gltf.parts import scene_parts

from .gltf_fixtures import make_rig, share_tube


@pytest.fixture(scope="module")
def rig_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("bake")
    files = {}
    for name, scaled in (("rigid", False), ("scaled", True)):
        files[name] = root / f"{name}.glb"
        make_rig(scaled=scaled).save(files[name])
    # only the skinned chain: mesh 0 is the one drawn part
    rig = make_rig(scaled=False)
    for node in rig.document["nodes"]:
        if node.get("name") in ("prop", "hand"):
            del node["mesh"]
            node.pop("skin", None)
    files["single"] = root / "single.glb"
    rig.save(files["single"])
    return files


def _reference(scene, animation, time, method):
    """World-space positions and normals of every drawn part at ``time``, in float64: skinned
    nodes (node order), each its mesh with its own skin's glTF skinning matrices, then rigid parts
    (node order)."""
    pos, nrm = [], []
    for nd in scene.nodes:
        if nd.skin is None or scene.meshes[nd.mesh].triangle_count == 0:
            continue
        g = scene.skinned_mesh(nd.mesh)
        args = (g.positions, g.normals, g.joints, g.weights)
        mats = scene.skinning_matrices(nd.skin, animation, time)
        if method == "lbs":
            p, n = reference.skin_lbs(*args, mats)
        elif method == "dqs_scale" or dq.has_scale(mats).any():
            p, n = reference.skin_dqs_scaled(*args, *dq.decompose_skinning_matrices(mats))
        else:
            p, n = reference.skin_dqs(*args, dq.from_matrices(mats))
        pos.append(p)
        nrm.append(n)
    for ri in scene.rigid_meshes(animation, time):
        prims = scene.meshes[ri.mesh].primitives
        p = np.concatenate([pr.positions for pr in prims]).astype(np.float64)
        n = np.concatenate([pr.normals for pr in prims]).astype(np.float64)
        lin = ri.matrix[:3, :3]
        pos.append(p @ lin.T + ri.matrix[:3, 3])
        # det * inverse transpose (the cofactor matrix, as vkdqs's LBS): for a mirroring
        # matrix the normal follows the flipped triangle winding
        n = np.linalg.det(lin) * n @ np.linalg.inv(lin)
        nrm.append(n / np.linalg.norm(n, axis=1, keepdims=True))
    return np.concatenate(pos), np.concatenate(nrm)


def _check_frames(scene, animation, times, positions, normals, method):
    assert positions.dtype == np.float32 and normals.dtype == np.float32
    for i, t in enumerate(times):  # over frames
        want_p, want_n = _reference(scene, animation, t, method)
        scale = max(1.0, np.abs(want_p).max())
        np.testing.assert_allclose(positions[i], want_p, rtol=0, atol=2e-5 * scale)
        np.testing.assert_allclose(normals[i], want_n, rtol=0, atol=2e-5)


@pytest.mark.parametrize(
    ("rig", "method"),
    [("rigid", "dqs"), ("rigid", "lbs"), ("scaled", "dqs"), ("scaled", "dqs_scale")],
)
def test_bake_matches_the_reference(rig_files, device, rig, method):
    scene = load_gltf(rig_files[rig])
    b = vkdqs.bake(scene, animation="linear", fps=24, method=method, device=device)
    np.testing.assert_allclose(b.times, np.arange(25) / 24)
    assert b.positions.shape == b.normals.shape == (25, 43, 3)
    assert b.faces.shape == (61, 3) and b.faces.dtype == np.uint32
    assert b.faces.max() < 43
    _check_frames(scene, 0, b.times, b.positions, b.normals, method)
    rest_p, rest_n = _reference(scene, None, 0.0, method)
    np.testing.assert_allclose(b.rest_positions, rest_p, atol=1e-4)
    np.testing.assert_allclose(b.rest_normals, rest_n, atol=1e-4)


def test_one_skinned_mesh_keeps_its_vertex_order(rig_files, device):
    scene = load_gltf(rig_files["single"])
    b = vkdqs.bake(scene, animation="step", fps=10, start=0.2, end=1.6, device=device)
    np.testing.assert_allclose(b.times, 0.2 + np.arange(15) / 10)
    mesh = scene.skinned_mesh(0)
    np.testing.assert_array_equal(b.faces.reshape(-1), mesh.indices)
    _check_frames(scene, 1, b.times, b.positions, b.normals, "dqs")


def test_nodes_sharing_a_mesh_bake_one_part_each(tmp_path, device):
    """The tube drawn by three nodes with three skins bakes as three parts, in node order."""
    rig = make_rig(scaled=False)
    bodies = share_tube(rig)
    rig.save(tmp_path / "shared.glb")
    scene = load_gltf(tmp_path / "shared.glb")
    parts = scene_parts(scene)
    assert [(p.kind, p.node, p.skin) for p in parts] == [
        ("skinned", bodies[0], 0),
        ("skinned", 11, 1),
        ("skinned", bodies[1], 2),
        ("skinned", bodies[2], 3),
        ("rigid", 10, None),
    ]
    b = vkdqs.bake(scene, animation="linear", fps=4, method="dqs", device=device)
    assert b.positions.shape == (5, 3 * 32 + 3 + 8, 3)
    _check_frames(scene, 0, b.times, b.positions, b.normals, "dqs")
    # four skinned parts' GPU boxes and a rigid part's numpy box: exactly the frame's box
    p = b.positions
    np.testing.assert_array_equal(b.boxes, np.stack([p.min(axis=1), p.max(axis=1)], 1))
    tube = b.positions[:, :32], b.positions[:, 35:67], b.positions[:, 67:99]
    for i in range(3):  # three different poses of one mesh
        for j in range(i + 1, 3):
            assert np.abs(tube[i] - tube[j]).max() > 0.5


def test_batches_give_the_same_frames(rig_files, device, monkeypatch, tmp_path):
    scene = load_gltf(rig_files["scaled"])
    whole = vkdqs.bake(scene, animation=2, fps=30, method="lbs", device=device)
    monkeypatch.setattr(driver, "BATCH_BYTES", 24 * 43 * 4)  # 4 frames a batch: 16 batches
    parts = vkdqs.bake(scene, animation=2, fps=30, method="lbs", device=device)
    np.testing.assert_array_equal(parts.positions, whole.positions)
    np.testing.assert_array_equal(parts.normals, whole.normals)
    # skinned parts' GPU boxes and rigid parts' numpy boxes: their union is exactly the frame's
    for bake in (parts, whole):
        p = bake.positions
        np.testing.assert_array_equal(bake.boxes, np.stack([p.min(axis=1), p.max(axis=1)], 1))
    info = vkdqs.bake_to_file(scene, tmp_path / "b.npz", animation=2, fps=30, method="lbs")
    assert info.frames == 61 and info.vertices == 43
    with np.load(tmp_path / "b.npz") as z:
        np.testing.assert_array_equal(z["positions"], whole.positions)


def test_npz_round_trip(rig_files, device, tmp_path):
    scene = load_gltf(rig_files["rigid"])
    out = tmp_path / "bake.npz"
    info = vkdqs.bake_to_file(scene, out, animation="cubic", fps=12.5, device=device)
    assert (info.frames, info.vertices, info.triangles) == (26, 43, 61)
    with np.load(out) as z:
        # an untextured model without materials: one group of every face, no uvs or colours
        assert sorted(z.files) == [
            "boxes",
            "faces",
            "groups",
            "materials",
            "normals",
            "positions",
            "times",
        ]
        # each frame's box, reduced on the GPU, is exactly that of its positions
        p = z["positions"]
        np.testing.assert_array_equal(z["boxes"], np.stack([p.min(axis=1), p.max(axis=1)], 1))
        np.testing.assert_array_equal(z["groups"], [[0, 61, 0, 43, -1]])
        assert json.loads(str(z["materials"])) == []
        assert z["positions"].dtype == z["normals"].dtype == np.float32
        assert z["positions"].shape == (26, 43, 3)
        np.testing.assert_allclose(z["times"], np.arange(26) / 12.5)
        _check_frames(scene, 2, z["times"], z["positions"], z["normals"], "dqs")
        saved = vkdqs.bake(scene, animation="cubic", fps=12.5, device=device)
        np.testing.assert_array_equal(z["faces"], saved.faces)
    assert [p.name for p in tmp_path.iterdir()] == ["bake.npz"]  # no temporary left
    saved.save(tmp_path / "again.npz")
    with np.load(tmp_path / "again.npz") as z:
        np.testing.assert_array_equal(z["positions"], saved.positions)
        np.testing.assert_array_equal(z["boxes"], saved.boxes)


def _read_glb(path):
    """(JSON, accessor reader) of a GLB, with numpy only."""
    data = path.read_bytes()
    magic, version, length = struct.unpack_from("<III", data, 0)
    assert (magic, version, length) == (0x46546C67, 2, len(data))
    json_len, kind = struct.unpack_from("<II", data, 12)
    assert kind == 0x4E4F534A
    doc = json.loads(data[20 : 20 + json_len])
    bin_len, kind = struct.unpack_from("<II", data, 20 + json_len)
    assert kind == 0x004E4942 and bin_len == doc["buffers"][0]["byteLength"]
    blob = data[28 + json_len : 28 + json_len + bin_len]
    width = {"SCALAR": 1, "VEC3": 3}
    dtype = {5126: np.float32, 5125: np.uint32}

    def accessor(i):
        a = doc["accessors"][i]
        v = doc["bufferViews"][a["bufferView"]]
        start = v.get("byteOffset", 0) + a.get("byteOffset", 0)
        n = a["count"] * width[a["type"]]
        arr = np.frombuffer(blob, dtype[a["componentType"]], n, start)
        return arr.reshape(a["count"], -1) if width[a["type"]] > 1 else arr

    return doc, accessor


def test_glb_round_trip(rig_files, device, tmp_path):
    scene = load_gltf(rig_files["rigid"])
    b = vkdqs.bake(scene, animation="linear", fps=20, device=device)
    out = b.save(tmp_path / "bake.glb")
    doc, accessor = _read_glb(out)
    views = [a["bufferView"] for a in doc["accessors"]]
    for i, view in enumerate(doc["bufferViews"]):  # the Khronos validator's rule
        if views.count(i) > 1:
            assert view["byteStride"] == 12
    (prim,) = doc["meshes"][0]["primitives"]
    rest_p = accessor(prim["attributes"]["POSITION"])
    rest_n = accessor(prim["attributes"]["NORMAL"])
    np.testing.assert_array_equal(rest_p, b.rest_positions)
    np.testing.assert_array_equal(accessor(prim["indices"]).reshape(-1, 3), b.faces)
    frames = len(b.times)
    assert len(prim["targets"]) == frames == 21
    for i, target in enumerate(prim["targets"]):  # over frames
        delta = accessor(target["POSITION"])
        acc = doc["accessors"][target["POSITION"]]
        np.testing.assert_allclose(acc["min"], delta.min(axis=0), rtol=1e-6)
        np.testing.assert_allclose(acc["max"], delta.max(axis=0), rtol=1e-6)
        np.testing.assert_allclose(rest_p + delta, b.positions[i], rtol=0, atol=1e-5)
        np.testing.assert_allclose(
            rest_n + accessor(target["NORMAL"]), b.normals[i], rtol=0, atol=1e-6
        )
    (anim,) = doc["animations"]
    (channel,) = anim["channels"]
    assert channel["target"] == {"node": 0, "path": "weights"}
    sampler = anim["samplers"][channel["sampler"]]
    assert sampler["interpolation"] == "LINEAR"
    np.testing.assert_array_equal(accessor(sampler["input"]), b.times.astype(np.float32))
    weights = accessor(sampler["output"]).reshape(frames, frames)  # one row per key time
    np.testing.assert_array_equal(weights, np.eye(frames))
    # Against the float64 reference too, and vkdqs's own loader reads the file (its rest mesh).
    _check_frames(
        scene,
        0,
        b.times,
        rest_p + np.stack([accessor(t["POSITION"]) for t in prim["targets"]]),
        b.normals,
        "dqs",
    )
    again = load_gltf(out)
    np.testing.assert_array_equal(again.meshes[0].primitives[0].positions, rest_p)
    np.testing.assert_allclose(again.meshes[0].primitives[0].normals, rest_n, atol=1e-6)
    # Streamed straight to the file: the same bytes as saving the in-memory bake.
    streamed = tmp_path / "streamed.glb"
    vkdqs.bake_to_file(scene, streamed, animation="linear", fps=20, device=device)
    assert streamed.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("suffix", [".usda", ".usdc", ".usd"])
def test_usd_round_trip(rig_files, device, tmp_path, suffix):
    pxr = pytest.importorskip("pxr", reason="usd-core (the test extra) is not installed")
    del pxr
    from pxr import Usd, UsdGeom

    scene = load_gltf(rig_files["scaled"])
    out = tmp_path / f"bake{suffix}"
    vkdqs.bake_to_file(scene, out, animation="linear", fps=8, start=0.25, device=device)
    b = vkdqs.bake(scene, animation="linear", fps=8, start=0.25, device=device)
    stage = Usd.Stage.Open(str(out))
    assert stage.GetTimeCodesPerSecond() == 8.0
    assert stage.GetStartTimeCode() == 2.0 and stage.GetEndTimeCode() == 8.0
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
    mesh = UsdGeom.Mesh(stage.GetDefaultPrim().GetChild("Mesh"))
    assert mesh
    np.testing.assert_array_equal(np.array(mesh.GetFaceVertexCountsAttr().Get()), 3)
    np.testing.assert_array_equal(
        np.array(mesh.GetFaceVertexIndicesAttr().Get()), b.faces.reshape(-1)
    )
    assert mesh.GetNormalsInterpolation() == UsdGeom.Tokens.vertex
    codes = mesh.GetPointsAttr().GetTimeSamples()
    np.testing.assert_allclose(codes, b.times * 8)
    points = np.stack([np.array(mesh.GetPointsAttr().Get(c)) for c in codes])
    normals = np.stack([np.array(mesh.GetNormalsAttr().Get(c)) for c in codes])
    np.testing.assert_array_equal(points, b.positions)
    np.testing.assert_array_equal(normals, b.normals)
    _check_frames(scene, 0, b.times, points.astype(np.float32), normals.astype(np.float32), "dqs")
    extent = np.array(mesh.GetExtentAttr().Get(codes[3]))
    np.testing.assert_array_equal(extent, [b.positions[3].min(0), b.positions[3].max(0)])


def test_usd_without_usd_core_names_the_extra(rig_files, tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_pxr(name, *args, **kwargs):
        if name == "pxr" or name.startswith("pxr."):
            raise ImportError("No module named 'pxr'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pxr)
    with pytest.raises(vkdqs.CapabilityError, match=r"vkdqs\[usd\]"):
        vkdqs.bake_to_file(rig_files["rigid"], tmp_path / "x.usda")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"fps": 0}, vkdqs.InputError, "fps must be within"),
        ({"fps": float("nan")}, vkdqs.InputError, "fps must be within"),
        ({"fps": 1e9}, vkdqs.InputError, "fps must be within"),
        ({"fps": "fast"}, vkdqs.InputError, "must be numbers"),
        ({"animation": "walk"}, vkdqs.InputError, r"no animation 'walk'.*'linear'"),
        ({"animation": 3}, vkdqs.InputError, "no animation 3"),
        ({"method": "slerp"}, vkdqs.InputError, "method must be one of lbs, dqs"),
        ({"start": 0.8, "end": 0.2}, vkdqs.InputError, "before start"),
        ({"start": -1.0}, vkdqs.InputError, "start must be"),
        ({"fps": 1000, "end": 1e4}, vkdqs.LimitError, "exceed 1000000"),
    ],
)
def test_bad_arguments(rig_files, device, kwargs, error, match):
    with pytest.raises(error, match=match):
        vkdqs.bake(rig_files["rigid"], device=device, **kwargs)


def test_unknown_extension_and_a_failed_bake_leave_no_file(rig_files, device, tmp_path):
    with pytest.raises(vkdqs.InputError, match=r"\.obj.*\.npz, \.glb"):
        vkdqs.bake_to_file(rig_files["rigid"], tmp_path / "x.obj", device=device)
    # A mirroring joint: DQS cannot take it; the error names the skin and suggests LBS.
    rig = make_rig(scaled=False)
    rig.document["nodes"][4]["scale"] = [-1.0, 1.0, 1.0]
    mirrored = tmp_path / "mirrored.glb"
    rig.save(mirrored)
    for suffix in (".npz", ".glb"):
        with pytest.raises(vkdqs.InputError, match=r"skin 0 \('chain'\).*'lbs'"):
            vkdqs.bake_to_file(mirrored, tmp_path / f"out{suffix}", device=device)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirrored.glb"]
    b = vkdqs.bake(mirrored, method="lbs", fps=5, device=device)
    _check_frames(load_gltf(mirrored), 0, b.times, b.positions, b.normals, "lbs")


def test_progress_bar_on_request(rig_files, device, capsys):
    vkdqs.bake(rig_files["rigid"], fps=10, device=device, progress=True)
    err = capsys.readouterr().err
    assert "11/11" in err and "frame/s" in err
    vkdqs.bake(rig_files["rigid"], fps=10, device=device)
    assert capsys.readouterr().err == ""


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "vkdqs", "bake", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("fps", ["0", "-1", "nan", "1e9", "inf", "fast"])
def test_cli_bad_fps_is_a_usage_error(rig_files, tmp_path, fps):
    result = _cli(rig_files["rigid"], "--out", tmp_path / "x.npz", "--fps", fps)
    assert result.returncode == 2, result.stderr
    assert "--fps" in result.stderr and "frame rate" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        # these two are found after the CLI has opened its device
        pytest.param(["--animation", "walk"], 1, "no animation 'walk'", marks=pytest.mark.gpu),
        (
            ["--method", "slerp"],
            1,
            f"{', '.join(vkdqs.methods.names())}, got 'slerp'",  # every registry method
        ),
        pytest.param(["--start", "2", "--end", "1"], 1, "before start", marks=pytest.mark.gpu),
        (["--start", "nan"], 2, "the time must be"),
    ],
)
def test_cli_errors_are_one_line(rig_files, tmp_path, args, status, message):
    result = _cli(rig_files["rigid"], "--out", tmp_path / "x.npz", *args)
    assert result.returncode == status, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    if status == 1:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("vkdqs: error: ")


@pytest.mark.gpu  # the missing output folder is found after the device is open
def test_cli_unknown_extension_and_missing_file(rig_files, tmp_path):
    result = _cli(rig_files["rigid"], "--out", tmp_path / "x.obj")
    assert result.returncode == 2
    assert "must end in .npz, .glb, .usd, .usda, .usdc" in result.stderr
    result = _cli(tmp_path / "nope.glb", "--out", tmp_path / "x.npz")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    result = _cli(rig_files["rigid"], "--out", tmp_path / "no" / "x.npz")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "does not exist; create it first" in result.stderr
    assert not list(tmp_path.iterdir())


def test_cli_bakes_a_file(rig_files, tmp_path, device):
    out = tmp_path / "walk.glb"
    result = _cli(rig_files["rigid"], "--animation", "step", "--fps", "4", "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out}: 9 frames ('step' at 4 fps, dqs)")
    assert "Traceback" not in result.stderr and "frame/s" not in result.stderr  # not a terminal
    doc, _ = _read_glb(out)
    assert len(doc["meshes"][0]["primitives"][0]["targets"]) == 9
    result = _cli(rig_files["rigid"], "--quiet", "--method", "lbs", "--out", tmp_path / "q.npz")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    with np.load(tmp_path / "q.npz") as z:
        assert z["positions"].shape == (31, 43, 3)


@pytest.mark.gpu  # the docs' example bakes on a Device of its own
def test_docs_baking_example_runs(rig_files, tmp_path, monkeypatch):
    page = (Path(__file__).resolve().parents[1] / "docs" / "baking.md").read_text()
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    code = code.replace('"model.glb"', repr(str(rig_files["rigid"]))).replace('"Walk"', '"step"')
    namespace: dict = {}
    exec(compile(code, "docs/baking.md", "exec"), namespace)
    assert namespace["bake"].positions.shape == (61, 43, 3)
    assert (tmp_path / "walk.glb").is_file()
    with np.load(tmp_path / "walk.npz") as z:
        np.testing.assert_allclose(z["times"], 0.5 + np.arange(46) / 30)
    assert namespace["info"].frames == 46


def test_rest_pose_and_a_part_scaled_to_zero(tmp_path, device):
    """A file without animations bakes its rest pose (one frame); a rigid part scaled to 0 (how
    exporters hide parts) collapses to its node's origin with finite normals."""
    rig = make_rig(scaled=False)
    del rig.document["animations"]
    rig.document["nodes"][10]["scale"] = [0.0, 0.0, 0.0]
    path = tmp_path / "still.glb"
    rig.save(path)
    scene = load_gltf(path)
    b = vkdqs.bake(scene, fps=24, device=device)
    assert b.times.tolist() == [0.0] and b.animation == "rest"
    np.testing.assert_array_equal(b.positions[0], b.rest_positions)
    prop = slice(35, 43)  # skinned tube and hand first, then the prop
    origin = scene.node_global_matrices(None)[10][:3, 3]
    np.testing.assert_allclose(b.positions[0, prop], np.broadcast_to(origin, (8, 3)), atol=1e-6)
    assert np.isfinite(b.normals).all()
    np.testing.assert_allclose(np.linalg.norm(b.normals[0], axis=1), 1.0, atol=1e-6)
    mesh = scene.skinned_mesh(0)
    mats = dq.from_matrices(scene.skinning_matrices(0, None))
    want_p, want_n = reference.skin_dqs(
        mesh.positions, mesh.normals, mesh.joints, mesh.weights, mats
    )
    np.testing.assert_allclose(b.positions[0, :32], want_p, atol=1e-5)
    np.testing.assert_allclose(b.normals[0, :32], want_n, atol=1e-5)


def test_cli_progress_bar_on_a_terminal(rig_files, tmp_path, device):
    import pty

    main, child = pty.openpty()
    try:
        args = [str(rig_files["rigid"]), "--fps", "10", "--out", str(tmp_path / "t.npz")]
        result = subprocess.run(
            [sys.executable, "-m", "vkdqs", "bake", *args],
            stdout=subprocess.PIPE,
            stderr=child,
            text=True,
            timeout=120,
        )
        os.close(child)
        child = -1
        err = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other side is closed: all read
                break
            if not chunk:
                break
            err += chunk
    finally:
        if child != -1:
            os.close(child)
        os.close(main)
    assert result.returncode == 0
    text = err.decode()
    assert "11/11" in text and "frame/s" in text and "Traceback" not in text
    assert result.stdout.startswith("wrote ")
