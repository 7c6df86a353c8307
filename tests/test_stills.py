"""Stills worth showing (``vkdqs render``): framing of the pose drawn, labels, the floor grid
and ``--method diff`` (|DQS - LBS| per vertex against the float64 reference), on the GPU with
the validation layer on."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs import dq, reference
from vkdqs.app import cli
from vkdqs.app.overlay import bar_box, colorbar, text_px
from vkdqs.app.scenes import CandyWrapperScene, GltfScenePlayer
from vkdqs.app.stills import DIFF_PERCENTILE, FloorGrid, copy_points, frame_still, scene_overlay
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.targets import OffscreenTarget
from vkdqs.errors import InputError
from vkdqs.gltf import load_gltf
from vkdqs.gltf.parts import skin_matrices
from vkdqs.images import read_png

from .gltf_fixtures import make_rig
from .imaging import covered

W, H = 960, 540


@pytest.fixture(scope="module")
def rig_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("stills") / "rig.glb"
    make_rig(scaled=False).save(path)
    return path


def _runs(cols: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of True in a 1-D mask."""
    edges = np.diff(np.r_[0, cols.astype(int), 0])
    return list(zip(np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0], strict=True))


@pytest.mark.parametrize("time", [0.25, 0.75])
def test_a_still_frames_the_pose_drawn_side_by_side(device, rig_path, time):
    scene = load_gltf(rig_path)
    with (
        OffscreenTarget(device, W, H, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        player = GltfScenePlayer(renderer, scene, methods="both")
        player.set_time(time)
        frame_still(player, labels=False)  # no band kept free for text
        img = renderer.render_image()
        copies = copy_points(player)
        player.close()
    mask = covered(img)
    runs = _runs(mask.any(axis=0))
    assert len(runs) == 2, f"two copies apart, got column runs {runs}"
    (a0, a1), (b0, b1) = runs
    widths = (a1 - a0, b1 - b0)
    assert b0 - a1 >= 0.08 * max(widths)  # a gap (12 % on screen by design)
    # the group fills the frame: one side binds (to the 4 % margin), the other is centred
    rows = _runs(mask.any(axis=1))
    y0, y1 = rows[0][0], rows[-1][1]
    fill = max((b1 - a0) / W, (y1 - y0) / H)
    assert fill >= 0.9, f"the copies fill {fill:.0%} of the frame"
    for x0, x1 in runs:  # each copy fills most of its half, one way or the other
        sub = mask[:, x0:x1].any(axis=1)
        height = np.ptp(np.nonzero(sub)[0]) + 1
        assert max(height / H, (x1 - x0) / (W / 2)) >= 0.7
    assert abs((a0 + b1) / 2 - W / 2) < 0.03 * W  # centred
    # what is framed is this time's pose: its projected vertices are what covers the image
    cam = renderer.camera
    px = np.vstack([cam.project(c, W, H) for c in copies])
    lo, hi = px[:, 0].min(), px[:, 0].max()
    assert -1 <= lo <= a0 + 2 and b1 - 2 <= hi <= W + 1  # inside the frame, covering the copies
    assert b1 - a0 >= 0.9 * (hi - lo)  # (dark, grazing triangles may read as background)


def test_a_still_frames_this_time_not_the_animation_sweep(device, rig_path):
    """The old framing fitted a sphere around 9 times of the animation; the still now covers
    far more of the frame."""
    scene = load_gltf(rig_path)
    with (
        OffscreenTarget(device, W, H, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        player = GltfScenePlayer(renderer, scene, methods="both")
        player.set_time(0.5)
        swept = covered(renderer.render_image()).sum()
        frame_still(player)
        posed = covered(renderer.render_image()).sum()
        player.close()
    assert posed > 4 * swept


def test_labels_and_grid_in_a_still(device, rig_path, tmp_path, capsys):
    out = tmp_path / "still.png"
    args = ["render", str(rig_path), "--time", "0.5", "--samples", "1", "--out"]
    assert cli.main([*args, str(out)]) == 0
    img = read_png(out)
    assert cli.main([*args, str(tmp_path / "bare.png"), "--no-labels", "--no-grid"]) == 0
    bare = read_png(tmp_path / "bare.png")
    assert cli.main([*args, str(tmp_path / "grid.png"), "--no-labels"]) == 0
    grid = read_png(tmp_path / "grid.png")
    capsys.readouterr()
    px = text_px(H)
    white = img[..., :3].min(axis=2) > 225
    changed = np.abs(img.astype(int) - grid.astype(int)).max(axis=2) > 30
    # the caption in the top-left corner, nothing of it on the right
    assert white[: 2 * px, : W // 2].sum() > 100 and not changed[: 2 * px, W // 2 :].any()
    # one label under each copy: text (white) just below the copy's lowest pixel, centred
    body = covered(bare)
    runs = _runs(body.any(axis=0))
    assert len(runs) == 2
    for x0, x1 in runs:
        low = np.nonzero(body[:, x0:x1].any(axis=1))[0].max()
        text = changed[low : low + 2 * px, x0:x1] & white[low : low + 2 * px, x0:x1]
        assert text.sum() > 40
        cols = np.nonzero(text.any(axis=0))[0] + x0
        assert abs((cols.min() + cols.max()) / 2 - (x0 + x1) / 2) < 0.1 * (x1 - x0)
    # the grid: thin grey lines below the copies, only where the bare still shows background
    lines = np.abs(grid.astype(int) - bare.astype(int)).max(axis=2) > 20
    assert lines[H // 2 :].sum() > 2000
    assert (covered(bare) | ~lines).all() or lines[covered(bare)].mean() < 0.01


def _reference_distances(scene, player):
    glob = scene.node_global_matrices(player.animation, player.time)
    out = []
    for draw in player.draws:
        g = draw.geometry
        if draw.kind != "skinned":
            out.append(np.zeros(g.vertex_count))
            continue
        m = skin_matrices(scene, (draw.skin,), glob)[draw.skin]
        args = (g.positions, g.normals, g.joints, g.weights)
        d = reference.skin_dqs(*args, dq.from_matrices(m))[0] - reference.skin_lbs(*args, m)[0]
        out.append(np.linalg.norm(d, axis=1))
    return out


def test_diff_scalar_against_the_float64_reference(device, rig_path):
    scene = load_gltf(rig_path)
    with (
        OffscreenTarget(device, W, H, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        player = GltfScenePlayer(renderer, scene, methods="diff")
        for time in (0.3, 0.8):
            player.set_time(time)
            ref = _reference_distances(scene, player)
            flat = np.concatenate(ref)
            top = np.percentile(flat, DIFF_PERCENTILE)
            assert top > 0.05 * flat.max() > 0  # a pose where DQS and LBS differ
            got_top, got_max = player.diff_range
            extent = max(d.geometry.extent for d in player.draws)
            assert got_max == pytest.approx(flat.max(), abs=1e-5 * extent)
            assert got_top == pytest.approx(top, abs=1e-5 * extent)
            for draw, d in zip(player.draws, ref, strict=True):
                inst = draw.instances["diff"]
                assert inst.visible and inst.scalar is not None
                want = np.clip(d / top, 0.0, 1.0)
                np.testing.assert_allclose(inst.scalar[:, 0], want, atol=1e-5 * extent / top)
                np.testing.assert_array_equal(inst.scalar[:, 1:], 0.0)
        assert [i.method for d in player.draws for m, i in d.instances.items() if m == "diff"]
        player.close()


def test_diff_still_shows_heat_colours_and_its_bar(device, rig_path, tmp_path, capsys):
    out = tmp_path / "diff.png"
    args = ["render", str(rig_path), "--time", "0.5", "--out", str(out), "--method", "diff"]
    assert cli.main([*args, "--samples", "1"]) == 0
    assert "|DQS - LBS|, animation 0 'linear' 0.50/1.00 s" in capsys.readouterr().out
    img = read_png(out).astype(int)
    x0, y0, x1, y1 = bar_box(W, H)
    bar = colorbar(x1 - x0, y1 - y0).astype(int)
    assert np.abs(img[y0:y1, x0:x1, :3] - bar[..., :3]).max() <= 1  # the colour bar, opaque
    body = covered(img.astype(np.uint8))
    body[:, x0 - 2 * text_px(H) :] = False
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    blue = body & (b > 2 * r + 20) & (b > 2 * g + 20)  # |DQS - LBS| near 0
    warm = body & (r > b + 60) & (r >= g - 40)  # yellow to red: near the top of the bar
    assert blue.sum() > 2000 and warm.sum() > 50


def test_diff_of_the_candy_wrapper(device):
    from vkdqs import procedural

    with (
        OffscreenTarget(device, 320, 180, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        scene = CandyWrapperScene(renderer, methods="diff")
        scene.set_twist(150.0)
        mesh = scene.mesh
        pose = procedural.twist_pose(150.0)
        args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
        d = np.linalg.norm(
            reference.skin_dqs(*args, dq.from_matrices(pose))[0]
            - reference.skin_lbs(*args, pose)[0],
            axis=1,
        )
        top, largest = scene.diff_range
        assert largest == pytest.approx(d.max(), abs=1e-5)
        np.testing.assert_allclose(
            scene.instances["diff"].scalar[:, 0], np.clip(d / top, 0, 1), atol=1e-4
        )
        frame_still(scene)
        overlay = scene_overlay(scene)
        assert overlay[..., 3].any()
        scene.close()
        scene.close()  # twice is fine


def test_cli_diff_options(capsys):
    parser = cli.build_parser()
    for command in ("render", "view"):
        assert parser.parse_args([command, "--method", "diff"]).method == "diff"
        with pytest.raises(SystemExit) as exc:
            parser.parse_args([command, "--method", "diff,lbs"])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert "'diff' is shown alone" in err[-1] and "Traceback" not in "".join(err)
    with pytest.raises(SystemExit):
        parser.parse_args(["render", "--help"])
    assert "diff (one copy coloured by |DQS - LBS|" in " ".join(capsys.readouterr().out.split())


def test_bad_scalar_and_overlay_inputs(device):
    from vkdqs import procedural

    with (
        OffscreenTarget(device, 64, 48, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        mesh = renderer.add_mesh(procedural.candy_wrapper())
        inst = renderer.add_instance(mesh, bone_count=2)
        with pytest.raises(InputError, match="one per vertex"):
            inst.set_scalar(np.zeros(3))
        with pytest.raises(InputError, match="uint8 RGBA"):
            renderer.set_overlay(np.zeros((48, 64, 4), np.float32))
        with pytest.raises(InputError, match="uint8 RGBA"):
            renderer.set_overlay(np.zeros((48, 64, 3), np.uint8))
        from vkdqs.engine.overlay_pass import check_overlay

        with pytest.raises(
            InputError, match=r"100 pixels wide.*maxTexelBufferElements.*--no-labels"
        ):
            check_overlay(np.zeros((10, 100, 4), np.uint8), 50)
        check_overlay(np.zeros((10, 10, 4), np.uint8), 50)  # drawn in parts
        inst.set_scalar(np.full(mesh.mesh.vertex_count, np.nan))  # NaN shows as 0
        assert (inst.scalar == 0).all()
        grid = FloorGrid(renderer)
        grid.place(np.array([[0.0, -1.0, 0.0], [2.0, 1.0, 1.0]]))
        assert grid.instance.model[1, 3] == -1.0 and grid.visible
        renderer.frame_scene()
        img = renderer.render_image()
        renderer.remove_instance(inst)  # drops its scalar buffers
        assert covered(img).any()


def test_the_picture_script_runs_on_a_model(device, rig_path, tmp_path, capsys):
    """docs/make_pictures.py (docs/gltf.md's Fox pictures) on the test rig: both stills written,
    the same pixels on a second run; a missing model is one line."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "docs" / "make_pictures.py"
    spec = importlib.util.spec_from_file_location("make_pictures", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    first = module.pictures(rig_path, tmp_path, time=0.5)
    assert [p.name for p in first] == ["fox-lbs-dqs.png", "fox-diff.png"]
    images = [read_png(p) for p in first]
    assert all(img.shape[:2] == (H, W) for img in images)
    again = tmp_path / "again"
    again.mkdir()
    for a, b in zip(images, module.pictures(rig_path, again, time=0.5), strict=True):
        np.testing.assert_array_equal(a, read_png(b))
    assert module.main([str(tmp_path / "missing.glb")]) == 1
    assert "pass the path to Fox.glb" in capsys.readouterr().err


def test_diff_and_framing_of_a_morphing_model_morph_first(device, tmp_path):
    """The diff copy skins the morphed rest mesh (weights at the player's time, as drawn), and
    the framed points are those of the morphed, skinned pose: both against float64."""
    from .gltf_fixtures_morph import make_morph_model

    path = tmp_path / "morph.glb"
    make_morph_model().save(path)
    scene = load_gltf(path)
    with (
        OffscreenTarget(device, W, H, samples=1) as target,
        Renderer(device, target) as renderer,
    ):
        player = GltfScenePlayer(renderer, scene, methods="diff", animation=0)
        player.set_time(0.6)
        glob = scene.node_global_matrices(player.animation, player.time)
        skinned = [d for d in player.draws if d.kind == "skinned"]
        assert skinned and any(d.kind == "rigid" for d in player.draws)
        ref_points, moved = [], 0.0
        for draw in skinned:
            g = draw.geometry
            w = scene.morph_weights(draw.mesh, draw.node, player.animation, player.time)
            assert np.abs(w).max() > 0.1  # the pose has active targets
            rest = reference.morph(g.positions, g.normals, g.morph_positions, g.morph_normals, w)
            m = skin_matrices(scene, (draw.skin,), glob)[draw.skin]
            lbs = reference.skin_lbs(*rest, g.joints, g.weights, m)[0]
            dqs = reference.skin_dqs(*rest, g.joints, g.weights, dq.from_matrices(m))[0]
            want = np.linalg.norm(dqs - lbs, axis=1)
            top = player.diff_range[0]
            got = draw.instances["diff"].scalar[:, 0] * top
            np.testing.assert_allclose(got, np.minimum(want, top), atol=1e-5 * g.extent)
            unmorphed = reference.skin_lbs(g.positions, g.normals, g.joints, g.weights, m)[0]
            moved = max(moved, float(np.abs(lbs - unmorphed).max()))
            plain = reference.skin_dqs(
                g.positions, g.normals, g.joints, g.weights, dq.from_matrices(m)
            )
            plain_diff = np.minimum(np.linalg.norm(plain[0] - unmorphed, axis=1), top)
            # without the morph the diff would be off by far more than the tolerance above
            assert np.abs(plain_diff - got).max() > 1e-4 * g.extent
            ref_points += [lbs, dqs]
        assert moved > 0.01  # the morph changes the framed points
        points = player.pose_points()
        ref = np.vstack(ref_points)
        # every morphed, skinned vertex is among the framed points (rigid parts add boxes)
        np.testing.assert_allclose(points[: len(ref)], ref, atol=1e-9)
        player.close()


def test_an_overlay_past_max_texel_buffer_elements_is_drawn_in_parts(device):
    """At the Vulkan minimum a view holds 65536 texels, less than a 322x240 overlay: it is
    drawn in bands of rows (views at 256-byte aligned offsets, a scissor each), and the frame
    is the bits of the one-view frame on the default device (the same shaders on the same
    inputs: only the views and scissors differ)."""
    from vkdqs import procedural
    from vkdqs.engine.overlay_pass import overlay_parts
    from vkdqs.gpu import Device

    w, h = 322, 240  # rows of 1288 bytes: the bands' offsets need the alignment
    rng = np.random.default_rng(3)
    overlay = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    overlay[..., 3] = np.where(rng.random((h, w)) < 0.3, 0, overlay[..., 3])
    frames = []
    with Device(memory_profile="vulkan-minimum") as minimum:
        for dev in (device, minimum):
            with (
                OffscreenTarget(dev, w, h, samples=1) as target,
                Renderer(dev, target) as renderer,
            ):
                _, firsts = overlay_parts(w, h, dev.info.max_texel_buffer_elements)
                renderer.add_instance(renderer.add_mesh(procedural.candy_wrapper()), bone_count=2)
                renderer.set_overlay(overlay)
                frames.append((renderer.render_image(), len(firsts)))
    (one, parts_one), (banded, parts) = frames
    # one view on the suite's device (unless it runs under the minimum's limits itself)
    assert parts_one == (1 if device.info.max_texel_buffer_elements >= w * h else 2)
    assert parts == -(-h // (65536 // w)) == 2
    np.testing.assert_array_equal(banded, one)
    assert len(np.unique(one.reshape(-1, one.shape[-1]), axis=0)) > 1000  # the noise shows
