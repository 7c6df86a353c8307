"""Image helpers shared by the rendering tests: what counts as covered, and bounding boxes."""

from __future__ import annotations

import numpy as np

#: The clear colour the rendering tests use (linear RGBA).
CLEAR = (0.02, 0.025, 0.035, 1.0)


def srgb8(linear):
    """8-bit sRGB encoding of linear values, as an sRGB framebuffer stores them."""
    c = np.asarray(linear, dtype=np.float64)
    s = np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)
    return np.round(s * 255.0)


def covered(img):
    """Pixels that are not the clear colour."""
    return np.abs(img[..., :3].astype(int) - srgb8(CLEAR[:3])).max(axis=-1) > 2


def pixel_box(mask):
    """(x0, y0, x1, y1) of the covered pixels' centres."""
    ys, xs = np.nonzero(mask)
    assert len(xs), "nothing drawn"
    return np.array([xs.min(), ys.min(), xs.max(), ys.max()]) + 0.5


def projected_box(camera, points, width, height):
    """(x0, y0, x1, y1) of world points projected to pixels through ``camera``."""
    px = camera.project(points, width, height)
    return np.array([px[:, 0].min(), px[:, 1].min(), px[:, 0].max(), px[:, 1].max()])
