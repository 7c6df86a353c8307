"""Baked files that land well in other tools: no degenerate triangles (Blender's USD importer
loses a mesh's per-face materials over them), and warnings where a viewer may not show a file
(a .glb past 256 morph targets) or a format is needlessly large (a big .usda)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import vkdqs
from vkdqs.app import cli
from vkdqs.baking import driver
from vkdqs.baking.surface import BakeGroup, drop_degenerate
from vkdqs.gltf.save import GltfBuilder

from .gltf_fixtures import make_rig

#: Two good triangles, then one with a repeated vertex and one of zero area (collinear).
POSITIONS = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [2, 0, 0]], np.float32)
INDICES = np.array([0, 1, 2, 1, 3, 2, 0, 0, 1, 0, 1, 4], np.uint16)


@pytest.fixture
def degenerate_model(tmp_path):
    b = GltfBuilder()
    prim = {
        "attributes": {"POSITION": b.add_accessor(POSITIONS, target="vertex", min_max=True)},
        "indices": b.add_accessor(INDICES, target="index"),
        "material": b.add("materials", {"name": "only"}),
    }
    b.add("meshes", {"primitives": [prim]})
    b.add("nodes", {"mesh": 0})
    b.add("scenes", {"nodes": [0]})
    b.document["scene"] = 0
    path = tmp_path / "degenerate.glb"
    b.save(path)
    return path


def test_degenerate_triangles_are_left_out_of_every_format(degenerate_model, device, tmp_path):
    baked = vkdqs.bake(degenerate_model, animation=None, device=device)
    assert baked.dropped_faces == 2
    np.testing.assert_array_equal(baked.faces, INDICES[:6].reshape(2, 3))
    assert baked.groups == (BakeGroup(0, 2, 0, 5, 0),)
    for suffix in (".npz", ".glb", ".usda"):
        info = driver.bake_to_file(
            degenerate_model, tmp_path / f"out{suffix}", animation=None, device=device
        )
        assert (info.dropped_faces, info.triangles) == (2, 2), suffix
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_array_equal(z["faces"], INDICES[:6].reshape(2, 3))
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(tmp_path / "out.usda"))
    mesh = next(UsdGeom.Mesh(p) for p in stage.Traverse() if p.IsA(UsdGeom.Mesh))
    assert list(mesh.GetFaceVertexCountsAttr().Get()) == [3, 3]
    glb = vkdqs.load_gltf(tmp_path / "out.glb")
    assert glb.meshes[0].triangle_count == 2


def test_the_cli_says_how_many_triangles_it_left_out(degenerate_model, device, tmp_path, capsys):
    out = tmp_path / "out.npz"
    assert cli.main(["bake", str(degenerate_model), "--out", str(out), "--animation", "rest"]) == 0
    assert "left out 2 degenerate triangles (zero area or a repeated vertex)" in (
        capsys.readouterr().out
    )


def test_a_group_left_without_faces_gives_its_vertices_to_its_neighbour():
    positions = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5], [6, 6, 6]], float)
    faces = np.array([[0, 1, 2], [3, 3, 4], [4, 3, 3]], np.uint32)
    groups = (BakeGroup(0, 1, 0, 3, 0), BakeGroup(1, 2, 3, 2, 1))
    kept, recounted, dropped = drop_degenerate(faces, positions, groups)
    assert dropped == 2 and kept.tolist() == [[0, 1, 2]]
    assert recounted == (BakeGroup(0, 1, 0, 5, 0),)
    # the first group emptied: its vertices go to the next one
    positions = np.array([[5, 5, 5], [6, 6, 6], [0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    faces = np.array([[0, 0, 1], [1, 0, 0], [2, 3, 4]], np.uint32)
    first_empty = (BakeGroup(0, 2, 0, 2, 1), BakeGroup(2, 1, 2, 3, 0))
    kept, recounted, _ = drop_degenerate(faces, positions, first_empty)
    assert kept.tolist() == [[2, 3, 4]] and recounted == (BakeGroup(0, 1, 0, 5, 0),)


def test_a_glb_past_256_frames_warns_with_the_remedies(device, tmp_path):
    model = tmp_path / "rig.glb"
    make_rig(scaled=False).save(model)
    with pytest.warns(UserWarning, match=r"301 frames are 301 morph targets.*--fps.*USD"):
        info = driver.bake_to_file(model, tmp_path / "long.glb", fps=300.0, device=device)
    assert info.frames == 301
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 256 frames or fewer: no word
        driver.bake_to_file(model, tmp_path / "short.glb", fps=255.0, device=device)


def test_a_large_usda_bake_hints_at_usdc(device, tmp_path, monkeypatch):
    model = tmp_path / "rig.glb"
    make_rig(scaled=False).save(model)
    monkeypatch.setattr(driver, "USDA_HINT_BYTES", 1000)
    with pytest.warns(UserWarning, match=r"big\.usda: \d+ MiB of USD text; \.usdc"):
        driver.bake_to_file(model, tmp_path / "big.usda", fps=10.0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        driver.bake_to_file(model, tmp_path / "big.usdc", fps=10.0, device=device)
