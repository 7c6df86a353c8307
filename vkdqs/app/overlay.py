"""Labels drawn into stills and the window: an RGBA image composed on the host (numpy + Pillow).

Pure functions, no Vulkan: :func:`compose` lays out a label under (or above) each copy, a
caption in the top-left corner and, for the heat maps, a colour bar with its title and its
values; :func:`copy_label_anchors` finds where each copy's label goes from the copy's points
and the camera. The renderer blends the result over the frame
(:meth:`vkdqs.engine.renderer.Renderer.set_overlay`), so stills and the viewer show the same labels.

Text is Pillow's bundled scalable font (``ImageFont.load_default(size=...)``, Pillow >= 10.1):
no system font is needed. Its size follows the image: :func:`text_px` is 4 % of the height
(22 px at 960x540), at least 12 px. Text is white with a dark outline, legible on any
background.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from PIL import Image, ImageDraw, ImageFont

from ..camera import Camera
from ..errors import InputError

__all__ = [
    "ColorBar",
    "Label",
    "colorbar",
    "compose",
    "copy_label_anchors",
    "heat",
    "text_px",
]

TEXT_COLOR = (245, 245, 245, 255)
OUTLINE_COLOR = (10, 12, 16, 255)


def text_px(height: int) -> int:
    """Font size in pixels for an image ``height`` pixels tall."""
    return max(12, round(0.04 * height))


@functools.cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def heat(t: ArrayLike) -> NDArray[np.float64]:
    """The shaders' heat map (``skin.frag``): blue, cyan, green, yellow, red for 0...1, linear
    RGB ``(..., 3)``."""
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)[..., None]
    return np.clip(1.5 - np.abs(4.0 * t - np.array([3.0, 2.0, 1.0])), 0.0, 1.0)


def _to_srgb(linear: NDArray) -> NDArray[np.uint8]:
    c = np.clip(linear, 0.0, 1.0)
    s = np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1.0 / 2.4) - 0.055)
    return np.round(255.0 * s).astype(np.uint8)


@dataclass(frozen=True)
class Label:
    """``text`` centred horizontally on ``x`` with its top at ``y`` (pixels), kept inside the
    image."""

    text: str
    x: float
    y: float


@dataclass(frozen=True)
class ColorBar:
    """A vertical heat-map bar at the right edge: ``low`` at the bottom, ``high`` at the top,
    ``title`` above it; values printed with ``fmt`` and ``unit``."""

    title: str
    low: float = 0.0
    high: float = 1.0
    unit: str = ""
    fmt: str = "{:.3g}"

    def value_text(self, value: float) -> str:
        """``value`` as the bar prints it: formatted with :attr:`fmt`, then :attr:`unit`
        after a space when there is one."""
        return self.fmt.format(value) + (f" {self.unit}" if self.unit else "")


def colorbar(width: int, height: int) -> NDArray[np.uint8]:
    """The bar's pixels ``(height, width, 4)``: the heat map from 1 (top row) to 0 (bottom
    row), sRGB-encoded as the frame shows the shaders' linear colours."""
    t = np.linspace(1.0, 0.0, max(height, 1))
    rgb = _to_srgb(heat(t))
    out = np.empty((height, width, 4), np.uint8)
    out[..., :3] = rgb[:, None, :]
    out[..., 3] = 255
    return out


def bar_box(width: int, height: int) -> tuple[int, int, int, int]:
    """Where :func:`compose` puts the colour bar: (x0, y0, x1, y1) pixels, x1/y1 exclusive."""
    px = text_px(height)
    bw = max(6, px // 2 + 2)
    x1 = width - px
    y0 = int(0.22 * height)
    y1 = int(0.78 * height)
    return x1 - bw, y0, x1, y1


def bar_band(width: int, height: int) -> float:
    """Pixels the colour bar and its values take at the right edge (stills keep a copy shown
    with a bar out of them, and as much room on the left, to stay centred)."""
    return width - bar_box(width, height)[0] + 5.0 * text_px(height)


@functools.lru_cache(maxsize=512)
def _stamp(text: str, px: int, anchor: str) -> tuple[NDArray[np.uint8], int, int]:
    """``text`` rasterized into an RGBA image just its size, and where its top-left corner
    lies relative to the anchor point (cached: labels repeat from frame to frame)."""
    font = _font(px)
    stroke = max(1, px // 10)
    left, top, right, bottom = font.getbbox(text, anchor=anchor, stroke_width=stroke)
    dx, dy = int(np.floor(left)) - 1, int(np.floor(top)) - 1
    tw, th = int(np.ceil(right)) + 2 - dx, int(np.ceil(bottom)) + 2 - dy
    img = Image.new("RGBA", (tw, th), (0, 0, 0, 0))
    ImageDraw.Draw(img).text(
        (-dx, -dy),
        text,
        font=font,
        fill=TEXT_COLOR,
        anchor=anchor,
        stroke_width=stroke,
        stroke_fill=OUTLINE_COLOR,
    )
    arr = np.asarray(img).copy()
    arr.flags.writeable = False
    return arr, dx, dy


def _text(out: NDArray[np.uint8], xy: tuple[float, float], text: str, px: int, anchor: str):
    """Draw ``text`` into ``out`` (``(H, W, 4)``, in place) with Pillow's ``anchor`` at the
    pixel nearest ``xy``, blended "over" what is there (stamping small text images: turning a
    whole frame-sized Pillow image into numpy costs far more than the text)."""
    src, dx, dy = _stamp(text, px, anchor)
    x0, y0 = round(xy[0]) + dx, round(xy[1]) + dy
    th, tw = src.shape[:2]
    h, w = out.shape[:2]
    ax0, ay0, ax1, ay1 = max(x0, 0), max(y0, 0), min(x0 + tw, w), min(y0 + th, h)
    if ax1 <= ax0 or ay1 <= ay0:
        return
    s = src[ay0 - y0 : ay1 - y0, ax0 - x0 : ax1 - x0].astype(np.float64) / 255.0
    d = out[ay0:ay1, ax0:ax1].astype(np.float64) / 255.0
    sa, da = s[..., 3:], d[..., 3:]
    alpha = sa + da * (1.0 - sa)
    rgb = (s[..., :3] * sa + d[..., :3] * da * (1.0 - sa)) / np.maximum(alpha, 1e-12)
    out[ay0:ay1, ax0:ax1] = np.round(255.0 * np.concatenate([rgb, alpha], axis=-1))


def compose(
    size: tuple[int, int],
    *,
    labels: Sequence[Label] = (),
    caption: str = "",
    bar: ColorBar | None = None,
) -> NDArray[np.uint8]:
    """The overlay image ``(H, W, 4)`` uint8 (sRGB, straight alpha; transparent where there is
    nothing) for a ``size = (W, H)`` frame: ``labels``, ``caption`` in the top-left corner,
    ``bar`` at the right edge."""
    w, h = (int(v) for v in size)
    if w < 1 or h < 1:
        raise InputError(f"overlay size must be positive, got {size!r}")
    out = np.zeros((h, w, 4), np.uint8)
    px = text_px(h)
    pad = px // 2
    if caption:
        _text(out, (pad, pad), caption, px, "la")
    for label in labels:
        width = _font(px).getlength(label.text)
        x = float(np.clip(label.x, pad + width / 2, w - pad - width / 2))
        y = float(np.clip(label.y, pad, h - pad - px))
        _text(out, (x, y), label.text, px, "mt")
    if bar is not None:
        x0, y0, x1, y1 = bar_box(w, h)
        if x1 > x0 and y1 > y0:
            out[y0:y1, x0:x1] = colorbar(x1 - x0, y1 - y0)
            small = max(10, round(0.8 * px))
            _text(out, (x0 - pad // 2, y0), bar.value_text(bar.high), small, "rt")
            _text(out, (x0 - pad // 2, y1), bar.value_text(bar.low), small, "rb")
            mid = (bar.low + bar.high) / 2.0
            _text(out, (x0 - pad // 2, (y0 + y1) / 2), bar.value_text(mid), small, "rm")
            _text(out, (x1, y0 - pad // 2), bar.title, small, "rb")
    return out


def label_band(height: int) -> float:
    """Pixels a line of labels takes at the top or bottom of an image ``height`` tall (stills
    keep the copies out of these bands)."""
    return 1.6 * text_px(height)


def copy_label_anchors(
    camera: Camera, copies: Sequence[ArrayLike], size: tuple[int, int]
) -> list[tuple[float, float]]:
    """Where each copy's label goes: ``(x, y)`` pixels, centred under the copy's points
    ``(K, 3)`` as the camera projects them (the top of the text just below the lowest point,
    and no lower than the bottom :func:`label_band`)."""
    w, h = size
    px = text_px(h)
    out = []
    for pts in copies:
        p = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
        xy = camera.project(p, w, h)
        x = float((xy[:, 0].min() + xy[:, 0].max()) / 2.0)
        y = min(float(xy[:, 1].max()) + 0.25 * px, h - 0.5 * (label_band(h) + px))
        out.append((x, y))
    return out
