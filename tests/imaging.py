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


#: Two pipelines that compute one image by different instructions (another vertex input
#: layout, compute then draw against the vertex shader, a crowd's shader against an
#: instance's) are not bound to give the same bits: Vulkan's invariance rules (spec appendix
#: "Invariance") promise identical results only for the same pipeline state, and llvmpipe
#: compiles each pipeline's fetch and shader into one function whose float rounding follows
#: the CPU's vector width and LLVM's instruction selection (fused multiply-adds). A few ulps
#: in a vertex move an edge by ~1e-6 pixel: the pixel whose centre lies on it flips; in a
#: normal, one 8-bit level of shading. So at most these fractions of the pixels may differ
#: (and never fewer than SMALLEST_COUNT pixels allowed):
ROUNDING_LEVEL_FRACTION = 5e-4  # by one level in some channel (shading rounding)
EDGE_FLIP_FRACTION = 2e-4  # by more, each on an edge (coverage rounding)
SMALLEST_COUNT = 2


def _neighbourhood_has(img, ys, xs, values):
    """For each (y, x), whether ``values[k]`` is within one level of a pixel of ``img`` in the
    3x3 neighbourhood of (y, x) (clipped at the border)."""
    h, w = img.shape[:2]
    found = np.zeros(len(ys), bool)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            yy, xx = np.clip(ys + dy, 0, h - 1), np.clip(xs + dx, 0, w - 1)
            close = np.abs(img[yy, xx].astype(int) - values.astype(int)).max(axis=-1) <= 1
            found |= close
    return found


def assert_images_agree_to_rounding(actual, desired):
    """``actual`` and ``desired`` (H, W, 4 uint8) are one image drawn by two pipelines: equal
    but for ROUNDING_LEVEL_FRACTION of the pixels off by one level and EDGE_FLIP_FRACTION
    flipped at an edge, where each flipped pixel takes a value its neighbour has in the other
    image (a sub-pixel shift of an edge, not a moved or missing shape)."""
    a, d = np.asarray(actual), np.asarray(desired)
    assert a.shape == d.shape, (a.shape, d.shape)
    diff = np.abs(a.astype(int) - d.astype(int)).max(axis=-1)
    total = diff.shape[0] * diff.shape[1]
    ones = int((diff == 1).sum())
    ys, xs = np.nonzero(diff > 1)
    allowed_ones = max(SMALLEST_COUNT, int(ROUNDING_LEVEL_FRACTION * total))
    allowed_flips = max(SMALLEST_COUNT, int(EDGE_FLIP_FRACTION * total))
    assert ones <= allowed_ones, f"{ones} pixels differ by one level (at most {allowed_ones})"
    assert len(ys) <= allowed_flips, (
        f"{len(ys)} pixels differ by more than one level (at most {allowed_flips} edge pixels); "
        f"the first at (y, x) = {list(zip(ys[:5].tolist(), xs[:5].tolist(), strict=True))}"
    )
    if len(ys):
        explained = _neighbourhood_has(d, ys, xs, a[ys, xs]) & _neighbourhood_has(
            a, ys, xs, d[ys, xs]
        )
        bad = [(int(y), int(x)) for y, x, ok in zip(ys, xs, explained, strict=True) if not ok]
        assert not bad, f"pixels {bad[:5]} differ and are not on an edge the images share"
