"""An orbit camera (pyglm underneath) with Vulkan's clip conventions.

Matrices are returned as numpy float64 ``(4, 4)`` arrays acting on column vectors
(``clip = view_projection @ [x, y, z, 1]``). The projection maps depth to [0, 1] and flips y, so
that +y is up on screen with Vulkan's y-down framebuffer; front faces stay counter-clockwise.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pyglm import glm

from .errors import InputError


def _np(m: glm.mat4) -> NDArray[np.float64]:
    # glm stores columns; to_list() gives them in order, so transpose to rows.
    return np.array(m.to_list(), dtype=np.float64).T


class Camera:
    """Looks at ``target`` from ``distance`` away, at angles ``yaw`` (about +y) and ``pitch``."""

    def __init__(
        self,
        *,
        target: ArrayLike = (0.0, 0.0, 0.0),
        distance: float = 5.0,
        yaw: float = 0.0,
        pitch: float = 0.0,
        fov_y_deg: float = 40.0,
        near: float = 0.01,
        far: float = 1000.0,
    ) -> None:
        self.target = np.asarray(target, dtype=np.float64).reshape(3)
        self.distance = float(distance)
        self.yaw = float(yaw)
        self.pitch = float(pitch)
        self.fov_y_deg = float(fov_y_deg)
        self._near = float(near)
        self._far = float(far)
        # Set by frame(): the depth range then follows the distance, so zooming and orbiting
        # never clip the framed scene (posed meshes may reach past their rest bounds: 3 radii).
        self.radius: float | None = None
        self._home = self._state()

    def _state(self) -> tuple:
        return (self.target.copy(), self.distance, self.yaw, self.pitch)

    def set_home(self) -> None:
        """Make the current view the one :meth:`reset` returns to."""
        self._home = self._state()

    def reset(self) -> None:
        """Back to the home view: what the last :meth:`frame`, :meth:`fit` or
        :meth:`set_home` left (the construction's view before any of them)."""
        target, self.distance, self.yaw, self.pitch = self._home
        self.target = target.copy()

    @property
    def forward(self) -> NDArray[np.float64]:
        """Unit vector from the camera towards the target."""
        cp = math.cos(self.pitch)
        return -np.array([cp * math.sin(self.yaw), math.sin(self.pitch), cp * math.cos(self.yaw)])

    @property
    def position(self) -> NDArray[np.float64]:
        """The eye: :attr:`distance` back from the target along :attr:`forward`."""
        return self.target - self.distance * self.forward

    def basis(self) -> tuple[NDArray, NDArray, NDArray]:
        """(right, up, forward) unit vectors of the view."""
        f = self.forward
        right = np.cross(f, [0.0, 1.0, 0.0])
        right /= np.linalg.norm(right)
        return right, np.cross(right, f), f

    def orbit(self, d_yaw: float, d_pitch: float) -> None:
        """Rotate around the target (radians); pitch stays short of the poles."""
        self.yaw += d_yaw
        self.pitch = float(np.clip(self.pitch + d_pitch, -1.55, 1.55))

    def zoom(self, factor: float) -> None:
        """Multiply the distance to the target by ``factor`` (< 1 moves closer)."""
        if not factor > 0:
            raise InputError(f"zoom factor must be > 0, got {factor}")
        self.distance = max(self.distance * factor, 1e-4)

    def pan(self, dx: float, dy: float) -> None:
        """Move the target in the view plane by fractions of the view height."""
        right, up, _ = self.basis()
        height = 2.0 * self.distance * math.tan(math.radians(self.fov_y_deg) / 2.0)
        self.target = self.target + (-dx * right + dy * up) * height

    def frame(
        self, lo: ArrayLike, hi: ArrayLike, *, aspect: float = 1.0, margin: float = 1.15
    ) -> None:
        """Aim at the box ``[lo, hi]`` and step back until its bounding sphere fits the view."""
        lo = np.asarray(lo, dtype=np.float64)
        hi = np.asarray(hi, dtype=np.float64)
        self.target = (lo + hi) / 2.0
        radius = max(float(np.linalg.norm(hi - lo)) / 2.0, 1e-6)
        half_fov = math.radians(self.fov_y_deg) / 2.0
        half_fov = min(half_fov, math.atan(math.tan(half_fov) * aspect))
        self.distance = margin * radius / math.sin(half_fov)
        self.radius = radius
        self._home = self._state()

    def fit(
        self,
        points: ArrayLike,
        *,
        aspect: float = 1.0,
        margin: float = 1.05,
        margin_y: float | None = None,
    ) -> None:
        """Keep the view direction and move the camera so ``points`` ``(K, 3)`` fill the view:
        the tightest perspective fit, touching the frame's edges (over ``margin``; vertically
        over ``margin_y`` when given) on the binding side and centred on the other (the
        points' own extent, not a bounding sphere).

        In the camera's basis a point (x, y, z) (z along :attr:`forward`) seen from (cx, cy,
        cz) lies inside the horizontal half-angle tan ``t`` when ``|x - cx| <= t (z - cz)``:
        ``cx - t cz >= max(x - t z)`` and ``cx + t cz <= min(x + t z)``, which gives cx and the
        largest cz for each axis in closed form; the camera stands at the smaller cz.
        """
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(p) == 0 or not np.isfinite(p).all():
            raise InputError("fit() needs finite points")
        right, up, forward = self.basis()
        local = p @ np.stack([right, up, forward]).T  # (K, 3): x, y, z in the view's basis
        tan_y = math.tan(math.radians(self.fov_y_deg) / 2.0)
        ty = tan_y / (margin if margin_y is None else margin_y)
        tx = tan_y * aspect / margin
        bounds, depth = [], []
        for axis, t in ((0, tx), (1, ty)):
            a = float(np.max(local[:, axis] - t * local[:, 2]))
            b = float(np.min(local[:, axis] + t * local[:, 2]))
            bounds.append((a, b, t))
            depth.append((b - a) / (2.0 * t))
        cz = min(depth)
        centre = []
        for axis, (a, b, t) in enumerate(bounds):
            # every c in [a + t cz, b - t cz] fits; take the one whose projection is centred
            # (max + min of (x - c) / (z - cz) = 0, decreasing in c: bisection)
            lo_c, hi_c = a + t * cz, b - t * cz
            x, inv = local[:, axis], 1.0 / np.maximum(local[:, 2] - cz, 1e-12)
            for _ in range(60):
                c = (lo_c + hi_c) / 2.0
                u = (x - c) * inv
                lo_c, hi_c = (c, hi_c) if u.max() + u.min() > 0.0 else (lo_c, c)
            centre.append((lo_c + hi_c) / 2.0)
        lo, hi = local.min(axis=0), local.max(axis=0)
        radius = max(float(np.linalg.norm(hi - lo)) / 2.0, 1e-6)
        eye = centre[0] * right + centre[1] * up + cz * forward
        self.distance = max((lo[2] + hi[2]) / 2.0 - cz, 1e-4)
        self.target = eye + self.distance * forward
        self.radius = radius
        self._home = self._state()

    @property
    def near(self) -> float:
        """Near clip distance: the constructor's, or after :meth:`frame`/:meth:`fit` 3 radii in
        front of the target (at least 1/1000 of the distance), so it follows zooming."""
        if self.radius is None:
            return self._near
        return max(self.distance - 3.0 * self.radius, self.distance * 1e-3)

    @property
    def far(self) -> float:
        """Far clip distance: the constructor's, or after :meth:`frame`/:meth:`fit` 3 radii
        behind the target."""
        if self.radius is None:
            return self._far
        return self.distance + 3.0 * self.radius

    def view_matrix(self) -> NDArray[np.float64]:
        """World to view space ``(4, 4)``: right-handed, looking down -z, +y up."""
        eye = glm.dvec3(*self.position)
        return _np(glm.lookAt(eye, glm.dvec3(*self.target), glm.dvec3(0.0, 1.0, 0.0)))

    def projection_matrix(self, aspect: float) -> NDArray[np.float64]:
        """View to Vulkan clip space ``(4, 4)`` for a viewport ``aspect`` = width / height:
        perspective over :attr:`fov_y_deg`, depth 0 at :attr:`near` to 1 at :attr:`far`, y
        flipped."""
        proj = _np(glm.perspectiveRH_ZO(math.radians(self.fov_y_deg), aspect, self.near, self.far))
        proj[1, :] *= -1.0  # Vulkan's framebuffer y points down
        return proj

    def view_projection(self, aspect: float) -> NDArray[np.float64]:
        """World to clip space ``(4, 4)``, projection times view: the matrix the renderer's
        shaders get."""
        return self.projection_matrix(aspect) @ self.view_matrix()

    def project(self, points: ArrayLike, width: int, height: int) -> NDArray[np.float64]:
        """Pixel coordinates ``(N, 2)`` of world points, as the rasterizer places them."""
        p = np.asarray(points, dtype=np.float64)
        clip = np.c_[p, np.ones(len(p))] @ self.view_projection(width / height).T
        ndc = clip[:, :2] / clip[:, 3:4]
        return np.c_[(ndc[:, 0] + 1.0) * 0.5 * width, (ndc[:, 1] + 1.0) * 0.5 * height]
