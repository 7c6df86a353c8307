"""The rule two pipelines' images are compared by (tests/imaging.py): one level of shading on a
few pixels and a few edge pixels flipped pass; a moved, missing or recoloured shape fails."""

from __future__ import annotations

import numpy as np
import pytest

from .imaging import (
    EDGE_FLIP_FRACTION,
    ROUNDING_LEVEL_FRACTION,
    assert_images_agree_to_rounding,
)

W, H = 160, 120


def _disc(cx=80.0, cy=60.0, r=30.0, shade=180):
    y, x = np.mgrid[0:H, 0:W] + 0.5
    img = np.zeros((H, W, 4), np.uint8)
    img[..., 3] = 255
    img[..., :3] = 40
    inside = (x - cx) ** 2 + (y - cy) ** 2 < r * r
    img[inside, :3] = shade
    return img, inside


def test_the_same_image_and_rounding_pass():
    img, inside = _disc()
    assert_images_agree_to_rounding(img, img.copy())
    one_level = img.copy()
    ys, xs = np.nonzero(inside)
    one_level[ys[:4], xs[:4], 1] += 1  # shading rounding
    assert_images_agree_to_rounding(one_level, img)
    # an edge pixel of the disc covered in one image and not in the other
    flipped = img.copy()
    edge = np.nonzero(inside[60])[0][0]  # the first covered pixel of the middle row
    flipped[60, edge, :3] = 40
    assert_images_agree_to_rounding(flipped, img)


def test_moved_missing_or_recoloured_shapes_fail():
    img, _ = _disc()
    moved, _ = _disc(cx=81.0)  # a whole pixel: a column of edge pixels on each side
    with pytest.raises(AssertionError, match="more than one level"):
        assert_images_agree_to_rounding(moved, img)
    shaded, _ = _disc(shade=181)  # every covered pixel one level off
    with pytest.raises(AssertionError, match="one level"):
        assert_images_agree_to_rounding(shaded, img)
    speck = img.copy()
    speck[60, 80, :3] = 250  # one pixel inside the disc: no neighbour has its value
    with pytest.raises(AssertionError, match="not on an edge"):
        assert_images_agree_to_rounding(speck, img)
    hole = img.copy()
    hole[60, 80, :3] = 40  # background colour in the middle of the disc: not an edge
    with pytest.raises(AssertionError, match="not on an edge"):
        assert_images_agree_to_rounding(hole, img)


def test_the_allowances_are_small():
    assert ROUNDING_LEVEL_FRACTION <= 1e-3 and EDGE_FLIP_FRACTION <= 5e-4
