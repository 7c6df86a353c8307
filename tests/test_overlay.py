"""The label overlay's pure functions (no GPU): text placement, colour bars, sizes, the floor
grid's geometry, the framing fit and the ``--method diff`` syntax."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs.app.overlay import (
    ColorBar,
    Label,
    bar_box,
    colorbar,
    compose,
    copy_label_anchors,
    heat,
    label_band,
    text_px,
)
from vkdqs.camera import Camera
from vkdqs.errors import InputError
from vkdqs.methods import parse_methods

from .imaging import srgb8


def _box(mask):
    ys, xs = np.nonzero(mask)
    assert len(xs), "nothing drawn"
    return xs.min(), ys.min(), xs.max() + 1, ys.max() + 1


def test_empty_overlay_is_transparent():
    img = compose((320, 200))
    assert img.shape == (200, 320, 4) and img.dtype == np.uint8
    assert not img[..., 3].any()


def test_label_text_is_centred_on_its_anchor():
    img = compose((640, 360), labels=[Label("LBS", 160.0, 300.0)])
    x0, y0, x1, y1 = _box(img[..., 3] > 0)
    px = text_px(360)
    assert abs((x0 + x1) / 2 - 160) <= 3
    assert 300 - px // 5 <= y0 <= 300 + px // 2  # the top of the text at y
    assert y1 - y0 <= 1.3 * px
    assert 1.0 * px <= x1 - x0 <= 3.0 * px  # three letters
    # the letters are white with a dark outline
    rgb = img[..., :3][img[..., 3] == 255]
    assert (rgb.min(axis=1) > 230).sum() > 20 and (rgb.max(axis=1) < 40).sum() > 20


def test_labels_stay_inside_and_the_caption_sits_top_left():
    img = compose((400, 240), labels=[Label("DQS (Blender)", -50.0, 1000.0)], caption="walk 1.00 s")
    alpha = img[..., 3] > 0
    px = text_px(240)
    top = alpha[: 2 * px]
    assert top[:, :200].sum() > 30 and not top[:, 300:].any()  # caption on the left
    x0, _, _, y1 = _box(alpha[2 * px :])  # the label, pushed inside the image
    assert x0 >= 2 and y1 + 2 * px <= 240


def test_text_scales_with_the_image():
    assert text_px(540) == 22 and text_px(1080) == 43 and text_px(100) == 12
    small = _box(compose((960, 540), labels=[Label("DQS", 480, 200)])[..., 3] > 0)
    large = _box(compose((1920, 1080), labels=[Label("DQS", 960, 400)])[..., 3] > 0)
    hs, hl = small[3] - small[1], large[3] - large[1]
    assert 1.8 <= hl / hs <= 2.2
    assert label_band(540) == pytest.approx(1.6 * 22)


def test_heat_matches_the_shader_formula():
    t = np.linspace(0.0, 1.0, 9)
    want = np.stack([np.clip(1.5 - np.abs(4 * t - k), 0.0, 1.0) for k in (3.0, 2.0, 1.0)], axis=-1)
    np.testing.assert_allclose(heat(t), want)
    np.testing.assert_allclose(heat([-1.0, 2.0]), heat([0.0, 1.0]))  # clamped


def test_colorbar_is_the_heat_gradient_top_to_bottom():
    bar = colorbar(6, 101)
    assert bar.shape == (101, 6, 4) and (bar[..., 3] == 255).all()
    assert (bar == bar[:, :1]).all()  # rows are uniform
    t = np.linspace(1.0, 0.0, 101)
    np.testing.assert_array_equal(bar[:, 0, :3], srgb8(heat(t)))
    assert bar[0, 0, 0] > 150 and bar[0, 0, 2] == 0  # red at the top (value 1)
    assert bar[-1, 0, 2] > 150 and bar[-1, 0, 0] == 0  # blue at the bottom (value 0)


def test_composed_bar_has_its_values_and_title():
    size = (960, 540)
    bar = ColorBar("|DQS - LBS|, model units", 0.0, 0.25, fmt="{:.2f}")
    img = compose(size, bar=bar)
    x0, y0, x1, y1 = bar_box(*size)
    np.testing.assert_array_equal(img[y0:y1, x0:x1], colorbar(x1 - x0, y1 - y0))
    alpha = img[..., 3] > 0
    px = text_px(540)
    assert alpha[y0 - 2 * px : y0 - 2, x0 - 12 * px : x1].sum() > 100  # title above
    assert alpha[y0 : y0 + px, : x0 - 2].sum() > 30  # the top value, left of the bar
    assert alpha[y1 - px : y1, : x0 - 2].sum() > 10  # "0.00" at the bottom
    assert not alpha[:, : x0 - 14 * px].any()  # nothing else
    assert bar.value_text(0.25) == "0.25"


def test_compose_rejects_an_empty_size():
    with pytest.raises(InputError, match="positive"):
        compose((0, 10))


def test_copy_labels_go_under_each_copy():
    camera = Camera(yaw=0.0, pitch=0.0)
    box = np.array(np.meshgrid([-0.5, 0.5], [-1.0, 1.0], [-0.3, 0.3])).reshape(3, -1).T
    shift = np.array([1.2, 0.0, 0.0])
    copies = [box - shift, box + shift]
    camera.fit(np.vstack(copies), aspect=960 / 540, margin_y=1.4)
    anchors = copy_label_anchors(camera, copies, (960, 540))
    for pts, (x, y) in zip(copies, anchors, strict=True):
        p = camera.project(pts, 960, 540)
        assert x == pytest.approx((p[:, 0].min() + p[:, 0].max()) / 2)
        assert p[:, 1].max() < y < 540 - text_px(540)
    assert anchors[0][0] < 480 < anchors[1][0]


@pytest.mark.parametrize("aspect", [16 / 9, 0.5])
def test_camera_fit_touches_the_binding_edges_and_centres_the_others(aspect):
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(400, 3)) * [3.0, 1.0, 0.7] + [5.0, -2.0, 1.0]
    cam = Camera(yaw=0.4, pitch=0.3)
    w, h = round(540 * aspect), 540
    cam.fit(pts, aspect=w / h, margin=1.0)
    p = cam.project(pts, w, h)
    lo, hi = p.min(axis=0), p.max(axis=0)
    gaps = np.array([lo[0], w - hi[0], lo[1], h - hi[1]])
    assert gaps.min() == pytest.approx(0.0, abs=1e-4)  # one side binds (to 1e-4 px) ...
    assert (gaps >= -1e-4).all()  # ... and nothing leaves the view
    assert abs(gaps[0] - gaps[1]) < 0.02 * w and abs(gaps[2] - gaps[3]) < 0.02 * h  # centred
    assert (cam.yaw, cam.pitch) == (0.4, 0.3)
    cam.fit(pts, aspect=w / h, margin=1.0, margin_y=1.5)  # room for text above and below
    p = cam.project(pts, w, h)
    assert p[:, 1].min() >= h / 6 - 1e-4 and p[:, 1].max() <= 5 * h / 6 + 1e-4


def test_camera_fit_rejects_nan():
    with pytest.raises(InputError, match="finite"):
        Camera().fit([[0.0, np.nan, 0.0]])


def test_floor_grid_geometry():
    from vkdqs.app.stills import floor_grid_mesh

    mesh = floor_grid_mesh(lines=5, width=0.01)
    p = mesh.positions
    assert (p[:, 1] == 0).all() and np.abs(p[:, [0, 2]]).max() == pytest.approx(0.505)
    np.testing.assert_array_equal(mesh.normals, np.tile([0.0, 1.0, 0.0], (len(p), 1)))
    tri = p[mesh.indices.reshape(-1, 3)]
    up = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])[:, 1]
    assert (up > 0).all()  # counter-clockwise seen from above: front faces
    assert len(tri) == 2 * 2 * 5
    with pytest.raises(InputError):
        floor_grid_mesh(lines=1)


def test_diff_is_a_method_shown_alone():
    assert parse_methods("diff") == ("diff",)
    for bad in ("diff,lbs", "lbs, diff", "dqs,diff,cor"):
        with pytest.raises(InputError, match="'diff' is shown alone"):
            parse_methods(bad)
