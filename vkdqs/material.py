"""Materials: what colours a drawn mesh (pure numpy; no Vulkan here).

A :class:`Material` is what glTF's metallic-roughness material gives a skinning viewer, and what
three.js's ``MeshBasicMaterial``/pygfx's ``MeshPhongMaterial`` users expect: a base colour factor
(linear RGBA), an optional base-colour texture (an ``(H, W, 4)`` uint8 RGBA image, sRGB-encoded
as PNG and JPEG files are) with its :class:`Sampler` and a 3x3 UV transform
(``KHR_texture_transform``), an alpha mode (``"OPAQUE"``, ``"MASK"`` with ``alpha_cutoff``;
``"BLEND"`` is drawn as MASK at 0.5) and ``double_sided``. The renderer multiplies
``base_color x texture(uv) x vertex colour`` (``SkinnedMesh.colors``) x the instance's colour.

Pass one to :meth:`vkdqs.engine.renderer.Renderer.add_mesh` (``material=``; several with
``groups=``, as three.js's ``geometry.groups``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vkdqs.errors import InputError

__all__ = ["ALPHA_MODES", "FILTERS", "WRAPS", "Material", "Sampler"]

FILTERS = ("nearest", "linear")
WRAPS = ("repeat", "clamp", "mirror")
ALPHA_MODES = ("OPAQUE", "MASK", "BLEND")
#: Largest texture side vkdqs uploads (every Vulkan device samples at least 4096).
MAX_TEXTURE_SIDE = 4096


@dataclass(frozen=True)
class Sampler:
    """How a texture is filtered and wrapped.

    Attributes
    ----------
    mag_filter, min_filter : "nearest" or "linear"
    mipmap : "nearest", "linear" or None
        How mip levels are chosen when minifying; None samples only the full-size level.
    wrap_s, wrap_t : "repeat", "clamp" or "mirror"
        Outside [0, 1] in u (s) and v (t): repeat, clamp to the edge, or mirrored repeat.
    """

    mag_filter: str = "linear"
    min_filter: str = "linear"
    mipmap: str | None = "linear"
    wrap_s: str = "repeat"
    wrap_t: str = "repeat"

    def __post_init__(self) -> None:
        for name in ("mag_filter", "min_filter"):
            if getattr(self, name) not in FILTERS:
                raise InputError(
                    f"Sampler.{name} must be one of {FILTERS}, got {getattr(self, name)!r}"
                )
        if self.mipmap is not None and self.mipmap not in FILTERS:
            raise InputError(
                f"Sampler.mipmap must be None or one of {FILTERS}, got {self.mipmap!r}"
            )
        for name in ("wrap_s", "wrap_t"):
            if getattr(self, name) not in WRAPS:
                raise InputError(
                    f"Sampler.{name} must be one of {WRAPS}, got {getattr(self, name)!r}"
                )


def srgb_to_linear(c: ArrayLike) -> NDArray[np.float64]:
    """sRGB-encoded values in [0, 1] to linear light (the IEC 61966-2-1 curve)."""
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(c: ArrayLike) -> NDArray[np.float64]:
    """Linear values in [0, 1] to sRGB encoding (what an sRGB framebuffer stores, over 255)."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def uv_transform(
    offset: ArrayLike = (0.0, 0.0), rotation: float = 0.0, scale: ArrayLike = (1.0, 1.0)
) -> NDArray[np.float64]:
    """The 3x3 matrix of ``KHR_texture_transform``: ``T(offset) @ R(rotation) @ S(scale)``,
    applied to ``(u, v, 1)`` (the extension's own definition, rotation counter-clockwise in UV
    space)."""
    ox, oy = (float(x) for x in np.asarray(offset, dtype=np.float64).reshape(2))
    sx, sy = (float(x) for x in np.asarray(scale, dtype=np.float64).reshape(2))
    c, s = np.cos(rotation), np.sin(rotation)
    t = np.array([[1.0, 0.0, ox], [0.0, 1.0, oy], [0.0, 0.0, 1.0]])
    r = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    k = np.array([[sx, 0.0, 0.0], [0.0, sy, 0.0], [0.0, 0.0, 1.0]])
    return t @ r @ k


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Material:
    """A mesh's surface: base colour, texture, alpha mode, sidedness.

    Parameters
    ----------
    base_color : 4 floats (or 3: alpha 1)
        Linear RGBA factor (glTF ``baseColorFactor``), each in [0, 1].
    texture : ndarray of uint8, [H, W, 4], or None
        Base-colour texture, RGBA, sRGB-encoded (as image files are); row 0 is the top of the
        image, which is where ``v = 0`` samples (glTF's convention). Sides up to
        :data:`MAX_TEXTURE_SIDE`. None: untextured (factor only). A writable array is copied;
        a read-only one (e.g. another material's ``texture``) is shared, and a renderer
        uploads each shared texture once.
    sampler : Sampler
    uv_transform : array_like, [3, 3]
        Applied to ``(u, v, 1)`` before sampling (see :func:`uv_transform`); last row (0, 0, 1).
    alpha_mode : "OPAQUE", "MASK" or "BLEND"
        MASK discards fragments whose alpha is below ``alpha_cutoff``. BLEND is drawn as MASK
        with cutoff 0.5 (vkdqs does not sort transparent surfaces).
    alpha_cutoff : float
        For MASK, >= 0.
    double_sided : bool
        Draw back faces (lit from the side they are seen from); False culls them.
    name : str
    """

    base_color: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    texture: NDArray[np.uint8] | None = field(default=None, repr=False)
    sampler: Sampler = field(default_factory=Sampler)
    uv_transform: NDArray[np.float64] = field(default_factory=lambda: np.eye(3), repr=False)
    alpha_mode: str = "OPAQUE"
    alpha_cutoff: float = 0.5
    double_sided: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        try:
            c = np.asarray(self.base_color, dtype=np.float64)
        except (TypeError, ValueError):
            c = np.full(0, np.nan)
        if c.shape == (3,):
            c = np.r_[c, 1.0]
        if c.shape != (4,) or not ((c >= 0.0) & (c <= 1.0)).all():
            raise InputError(
                f"Material.base_color must be 3 or 4 numbers in [0, 1], got {self.base_color!r}"
            )
        object.__setattr__(self, "base_color", tuple(float(x) for x in c))
        if self.texture is not None:
            t = np.asarray(self.texture)
            if t.dtype != np.uint8 or t.ndim != 3 or t.shape[2] != 4 or min(t.shape[:2]) < 1:
                raise InputError(
                    f"Material.texture must be an (H, W, 4) uint8 RGBA array, got shape "
                    f"{t.shape} {t.dtype}"
                )
            if max(t.shape[:2]) > MAX_TEXTURE_SIDE:
                raise InputError(
                    f"Material.texture is {t.shape[1]}x{t.shape[0]}; sides up to "
                    f"{MAX_TEXTURE_SIDE} are supported"
                )
            # A read-only array (another material's texture, a decoded glTF image) is shared, so
            # a renderer uploads it once; a writable one is copied (the caller may change it).
            shared = not t.flags.writeable and t.flags.c_contiguous
            object.__setattr__(self, "texture", t if shared else _frozen(t.copy()))
        if not isinstance(self.sampler, Sampler):
            raise InputError(f"Material.sampler must be a vkdqs.Sampler, got {self.sampler!r}")
        try:
            m = np.asarray(self.uv_transform, dtype=np.float64)
        except (TypeError, ValueError):
            m = np.full(0, np.nan)
        if m.shape != (3, 3) or not np.isfinite(m).all() or not np.allclose(m[2], (0, 0, 1)):
            raise InputError(
                "Material.uv_transform must be a finite (3, 3) matrix with last row (0, 0, 1)"
            )
        object.__setattr__(self, "uv_transform", _frozen(m.copy()))
        if self.alpha_mode not in ALPHA_MODES:
            raise InputError(
                f"Material.alpha_mode must be one of {ALPHA_MODES}, got {self.alpha_mode!r}"
            )
        cutoff = float(self.alpha_cutoff)
        if not (np.isfinite(cutoff) and cutoff >= 0.0):
            raise InputError(f"Material.alpha_cutoff must be finite and >= 0, got {cutoff!r}")
        object.__setattr__(self, "alpha_cutoff", cutoff)
        if not isinstance(self.double_sided, (bool, np.bool_)):
            raise InputError(f"Material.double_sided must be a bool, got {self.double_sided!r}")
        object.__setattr__(self, "double_sided", bool(self.double_sided))

    @property
    def has_own_color(self) -> bool:
        """A texture or a base colour other than white: the model's own colours, which the
        viewer keeps instead of tinting copies by method."""
        return self.texture is not None or self.base_color != (1.0, 1.0, 1.0, 1.0)

    @property
    def cutoff(self) -> float:
        """The alpha below which fragments are discarded: -1 (never) for OPAQUE, 0.5 for BLEND
        (drawn as MASK)."""
        if self.alpha_mode == "OPAQUE":
            return -1.0
        return 0.5 if self.alpha_mode == "BLEND" else self.alpha_cutoff
