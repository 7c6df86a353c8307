"""Small frictions fixed: defaults that make sense for files without animations, meshes without
normals or with one influence, unnamed glTF items, Jupyter display, and plain CLI functions."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import vkdqs
from vkdqs import procedural
from vkdqs.app import cli
from vkdqs.app.cli.demo import demo
from vkdqs.app.cli.info import info
from vkdqs.app.cli.render import render
from vkdqs.app.cli.view import view
from vkdqs.geometry import vertex_normals
from vkdqs.gltf import load_gltf
from vkdqs.images import decode_png, read_png

from .gltf_fixtures import make_rig


@pytest.fixture(scope="module")
def plain_glb(tmp_path_factory):
    """The test rig without animations, mesh 0 unnamed and mesh 1 with no name at all, skin 1
    named with HTML."""
    rig = make_rig(scaled=False)
    doc = rig.document
    del doc["animations"]
    doc["meshes"][0]["name"] = ""
    del doc["meshes"][1]["name"]
    doc["skins"][1]["name"] = '<b>"hand" & co</b>'
    path = tmp_path_factory.mktemp("usability") / "plain.glb"
    rig.save(path)
    return path


def test_skinning_matrices_default_to_the_rest_pose_without_animations(plain_glb):
    scene = load_gltf(plain_glb)
    assert scene.animations == ()
    rest = scene.skinning_matrices(skin=0, animation=None)
    np.testing.assert_array_equal(scene.skinning_matrices(skin=0), rest)
    np.testing.assert_array_equal(scene.skinning_matrices(1), scene.skinning_matrices(1, None))
    with pytest.raises(vkdqs.InputError, match="animation 0 out of range"):
        scene.skinning_matrices(skin=0, animation=0)  # asked for by index: still an error


def test_skinning_matrices_default_to_the_first_animation(tmp_path):
    path = tmp_path / "rig.glb"
    make_rig(scaled=False).save(path)
    scene = load_gltf(path)
    np.testing.assert_array_equal(
        scene.skinning_matrices(0, time=0.5), scene.skinning_matrices(0, 0, 0.5)
    )
    assert not np.allclose(scene.skinning_matrices(0, time=0.5), scene.skinning_matrices(0, None))


def test_mesh_without_normals_computes_them_from_the_triangles():
    tube = procedural.tube(500, bone_count=4)
    mesh = vkdqs.SkinnedMesh(tube.positions, None, tube.joints, tube.weights, tube.indices)
    tri = tube.positions[tube.indices.reshape(-1, 3)]
    face = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])  # length: twice the area
    expected = np.zeros_like(tube.positions)
    for corner in range(3):
        np.add.at(expected, tube.indices.reshape(-1, 3)[:, corner], face)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(mesh.normals, expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, atol=1e-6)
    # on a smooth tube they agree with the analytic normals away from the open ends
    middle = np.abs(tube.positions[:, 1] - tube.positions[:, 1].mean()) < 0.3
    assert middle.any()
    cos = np.einsum("ij,ij->i", mesh.normals[middle], tube.normals[middle])
    assert cos.min() > 0.99


def test_mesh_without_normals_or_indices_is_an_input_error():
    tube = procedural.tube(100, bone_count=4)
    with pytest.raises(vkdqs.InputError, match="normals is None and there are no indices"):
        vkdqs.SkinnedMesh(tube.positions, None, tube.joints, tube.weights)


def test_mesh_without_normals_checks_the_indices_first():
    tube = procedural.tube(100, bone_count=4)
    bad = tube.indices.astype(np.int64).copy()
    bad[4] = 100
    with pytest.raises(vkdqs.InputError, match=r"indices\[4\] = 100"):
        vkdqs.SkinnedMesh(tube.positions, None, tube.joints, tube.weights, bad)


def test_one_influence_per_vertex_as_1d_arrays():
    tube = procedural.tube(100, bone_count=4)
    joints = tube.joints[:, 0].astype(np.int32)
    weights = np.ones(100)
    flat = vkdqs.SkinnedMesh(tube.positions, tube.normals, joints, weights)
    column = vkdqs.SkinnedMesh(tube.positions, tube.normals, joints[:, None], weights[:, None])
    np.testing.assert_array_equal(flat.joints, column.joints)
    np.testing.assert_array_equal(flat.weights, column.weights)
    assert flat.influence_count == 1
    with pytest.raises(vkdqs.InputError, match="weights must have the shape of joints"):
        vkdqs.SkinnedMesh(tube.positions, tube.normals, joints, np.ones((100, 2)))
    with pytest.raises(vkdqs.InputError, match="joints has 99 rows but positions has 100"):
        vkdqs.SkinnedMesh(tube.positions, tube.normals, joints[:99], weights[:99])


def test_info_prints_unnamed_items_by_index_only(plain_glb, capsys):
    assert cli.main(["info", str(plain_glb)]) == 0
    out = capsys.readouterr().out
    assert "''" not in out
    assert "  mesh 0: 1 primitives, 32 vertices" in out
    assert "  mesh 1: 2 primitives" in out
    assert "  mesh 2 'hand': " in out


def test_png_image_shows_itself_in_jupyter(tmp_path):
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (7, 5, 4), dtype=np.uint8)
    image = vkdqs.PngImage(pixels)
    data = image._repr_png_()
    np.testing.assert_array_equal(decode_png(data), pixels)
    (tmp_path / "shown.png").write_bytes(data)
    np.testing.assert_array_equal(read_png(tmp_path / "shown.png"), pixels)
    np.testing.assert_array_equal(np.asarray(image), pixels)
    np.testing.assert_array_equal(read_png(image.save(tmp_path / "saved.png")), pixels)
    assert repr(image) == "PngImage(5x7, RGBA)"
    with pytest.raises(vkdqs.InputError, match=r"image must be \(H, W, 3\|4\) uint8"):
        vkdqs.PngImage(np.zeros((4, 4), np.uint8))


def test_rendered_image_shows_itself_in_jupyter(device):
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    with (
        OffscreenTarget(device, 64, 48, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        CandyWrapperScene(renderer, methods="both").set_twist(90.0)
        pixels = renderer.render_image()
    assert type(pixels) is np.ndarray  # render_image() keeps returning a plain array
    shown = decode_png(vkdqs.PngImage(pixels)._repr_png_())
    assert shown.shape == (48, 64, 4)
    np.testing.assert_array_equal(shown, pixels)


def test_gltf_scene_shows_its_summary_in_jupyter(plain_glb):
    scene = load_gltf(plain_glb)
    html = scene._repr_html_()
    assert html.startswith("<pre>") and html.endswith("</pre>")
    assert "<b>" not in html
    assert "&lt;b&gt;&quot;hand&quot; &amp; co&lt;/b&gt;" in html
    assert "plain.glb: 12 nodes" in html
    assert "mesh 0: 1 primitives" in html


def test_cli_commands_are_plain_functions(tmp_path, device, capsys):
    for func in (demo, view, render, info):
        assert "args" not in inspect.signature(func).parameters
    out = tmp_path / "plain.png"
    assert render(out, twist=45.0, size=(40, 30), samples=1) == 0
    assert read_png(out).shape == (30, 40, 4)
    assert f"wrote {out} (40x30, " in capsys.readouterr().out


def test_computed_normals_are_area_weighted():
    """A vertex shared by a big triangle facing +z and a small one facing -x: area weighting
    leans to +z; angle weighting (the glTF loader's) would give both their right angles."""
    p = np.array([[0, 0, 0], [10, 0, 0], [0, 10, 0], [0, 0, -1], [0, 1, 0]], dtype=np.float64)
    idx = np.array([0, 1, 2, 0, 4, 3], dtype=np.uint32)
    joints = np.zeros((5, 1), np.int32)
    mesh = vkdqs.SkinnedMesh(p, None, joints, np.ones((5, 1)), idx)
    n0 = mesh.normals[0]
    want = np.array([-1.0, 0.0, 100.0]) / np.linalg.norm([-1.0, 0.0, 100.0])
    np.testing.assert_allclose(n0, want, atol=1e-6)
    angle = vertex_normals(p, idx)[0]
    assert abs(abs(angle[0]) - angle[2]) < 1e-9  # equal right angles: equal weights


def test_scrubbing_the_candy_wrapper_keeps_the_direction_of_play(device):
    """Stepping with the arrow keys, then playing on, twists on in the direction it was going:
    untwisting stays untwisting."""
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget

    with (
        OffscreenTarget(device, 32, 24, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        scene = CandyWrapperScene(renderer, methods="dqs", period=4.0)
        for start, going in ((0.5, "up"), (3.0, "down")):  # rising, then falling half
            scene.phase = 0.0
            scene.update(start)
            scene.scrub(-1)
            before = scene.twist
            scene.update(0.05)
            assert (scene.twist > before) == (going == "up"), (start, before, scene.twist)
