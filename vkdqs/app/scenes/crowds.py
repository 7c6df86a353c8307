"""Crowds of copies playing a baked clip out of phase, one grid per method shown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ... import methods as registry
from ... import procedural
from ...clip import AnimationClip
from ...engine.crowd import Crowd, has_own_color, pack_clip
from ...engine.drawables import RenderMesh
from ...engine.renderer import Renderer
from ...errors import InputError
from ...material import Material
from ...mesh import SkinnedMesh
from ...methods import DIFF, parse_methods
from .common import box_corners, materials_of, methods_label

if TYPE_CHECKING:
    from ...gltf import GltfScene


class CrowdScene:
    """A grid of ``count`` copies of one skinned mesh playing a baked clip out of phase, drawn as
    crowds (:meth:`Renderer.add_crowd`: one instanced draw per method). ``methods="both"`` shows
    an LBS grid on the left and a DQS grid on the right. Follows :class:`ViewerScene`.

    Make one from a glTF file with :meth:`from_gltf` (its first skinned mesh and an animation,
    with its materials) or from the candy wrapper with :meth:`candy_wrapper`. ``material`` and
    ``groups`` are :meth:`Renderer.add_mesh`'s: the copies wear them, white when the mesh has
    colours of its own, else tinted by method. :class:`vkdqs.app.stills.Decorations` labels each
    grid (the viewer's labels).
    """

    def __init__(
        self,
        renderer: Renderer,
        mesh: SkinnedMesh,
        clip: AnimationClip,
        count: int,
        *,
        methods: str = "dqs",
        name: str = "crowd",
        seed: int = 0,
        rest_matrices: np.ndarray | None = None,
        material: Material | Sequence[Material] | None = None,
        groups: Sequence[tuple[int, int, int]] | None = None,
    ) -> None:
        self.renderer = renderer
        self.name = name
        self.clip = clip
        self.count = int(count)
        self.bone_count = clip.joint_count
        self.methods = _check_crowd_methods(methods)
        self._mesh = mesh
        #: (J, 4, 4) bind frames for the "dqs_blender" crowd (None: it cannot be shown)
        self.rest_matrices = rest_matrices
        self._meshes: dict[str, RenderMesh] = {}
        #: the mesh's materials, as :meth:`Renderer.add_mesh` takes them (the copies wear them)
        self._materials = {"material": material, "groups": groups}
        rm = renderer.add_mesh(mesh, label=f"{name} mesh", **self._materials)
        self._meshes["mesh"] = rm
        # a model with its own colours keeps them (labels tell the grids apart); an uncoloured
        # one gets the methods' tints, as GltfScenePlayer's copies
        self._own_colors = has_own_color(rm)
        lo, hi = mesh.bounds
        size = np.maximum(hi - lo, 1e-6)
        self._side = int(np.ceil(np.sqrt(self.count)))
        i = np.arange(self.count)
        # on the ground (xz plane), a little more than a model apart
        self._pitch = 1.3 * max(float(size[0]), float(size[2]))
        self._grid = np.stack([i % self._side, np.zeros(self.count), i // self._side], axis=1)
        self._grid = self._grid * self._pitch
        self._mesh_bounds = (lo, hi)
        rng = np.random.default_rng(seed)
        self._times = rng.uniform(0.0, max(clip.duration, 0.0), self.count)
        self._speeds = rng.uniform(0.85, 1.15, self.count)
        #: the crowds made so far, by method ("lbs" and "dqs" at once, the others when shown)
        self.crowds: dict[str, Crowd] = {}
        #: methods the clip cannot drive (DQS, blend and cor of a clip with scale)
        self._refused: dict[str, str] = {}
        self.left_out: dict[str, str] = {}
        for method in registry.BOTH:
            self._crowd(method)
        self.show(self.methods)
        renderer.camera.yaw, renderer.camera.pitch = 0.35, 0.45
        self.frame_camera()

    @classmethod
    def from_gltf(
        cls,
        renderer: Renderer,
        scene: GltfScene,
        count: int,
        *,
        methods: str = "dqs",
        animation: int | str | None = 0,
        fps: float = 30.0,
    ) -> CrowdScene:
        """The first skinned mesh of ``scene`` playing ``animation`` (default: the first),
        wearing its materials."""
        meshes = [m for m in scene.meshes if m.skin is not None and m.triangle_count > 0]
        if not meshes:
            raise InputError(f"{scene.path.name}: a crowd needs a skinned mesh; this file has none")
        if not scene.animations:
            raise InputError(f"{scene.path.name}: a crowd needs an animation; this file has none")
        m = meshes[0]
        clip = scene.bake_clip(m.skin, 0 if animation is None else animation, fps)
        geometry = scene.skinned_mesh(m.index)
        # bind frames for "dqs_blender": the inverse bind matrices' inverses
        rest = np.linalg.inv(scene.skins[m.skin].inverse_bind_matrices)
        return cls(
            renderer,
            geometry,
            clip,
            count,
            methods=methods,
            name=scene.path.name,
            rest_matrices=rest,
            **materials_of(scene, m.index),
        )

    @classmethod
    def candy_wrapper(
        cls, renderer: Renderer, count: int, *, methods: str = "dqs", period: float = 4.0
    ) -> CrowdScene:
        """Candy wrappers twisting to 170 degrees and back over ``period`` seconds."""
        angles = 170.0 * np.sin(np.linspace(0.0, np.pi, 31))
        frames = np.stack([procedural.twist_pose(a) for a in angles])
        clip = AnimationClip(frames, (len(angles) - 1) / period)
        mesh = procedural.candy_wrapper()
        rest = np.tile(np.eye(4), (2, 1, 1))  # as CandyWrapperScene's "dqs_blender" copy
        return cls(
            renderer, mesh, clip, count, methods=methods, name="candy wrapper", rest_matrices=rest
        )

    def _crowd(self, method: str) -> Crowd | None:
        """The crowd of ``method``, made on first use; None if the clip cannot drive it."""
        if method in self.crowds:
            return self.crowds[method]
        if method in self._refused:
            return None
        skinning = registry.get(method)
        extra = {}
        if "rest_matrices" in skinning.needs:
            if self.rest_matrices is None:
                self._refused[method] = f"{skinning.label} crowds need the bones' rest matrices"
                return None
            extra["rest_matrices"] = self.rest_matrices
        try:
            pack_clip(self.clip, method, self.rest_matrices if extra else None)
        except InputError as exc:
            # e.g. DQS of a clip with scale: LBS only
            self._refused[method] = f"{skinning.label} crowds refuse this clip: {exc}"
            return None
        rm = self._meshes["mesh"]
        if "dqs_blend" in skinning.needs and self._mesh.dqs_blend is None:
            if method not in self._meshes:  # a DQS fraction for the blend copies' mesh
                self._meshes[method] = self.renderer.add_mesh(
                    self._mesh.with_dqs_blend(registry.DEFAULT_DQS_BLEND),
                    label=f"{self.name} {method}",
                    **self._materials,
                )
            rm = self._meshes[method]
        crowd = self.renderer.add_crowd(
            rm, self.clip, count=self.count, method=method, label=method, **extra
        )
        crowd.set_times(self._times)
        crowd.set_speeds(self._speeds)
        crowd.set_colors((1.0, 1.0, 1.0, 1.0) if self._own_colors else skinning.color)
        self.crowds[method] = crowd
        return crowd

    def _shown(self) -> tuple[str, ...]:
        return tuple(m for m in _crowd_methods_of(self.methods) if m in self.crowds)

    def show(self, methods: str) -> None:
        """Show the grids of ``methods`` side by side (see :func:`parse_methods`; ``"both"``:
        LBS left, DQS right; ``"all"``: every method whose crowds take the clip, the others in
        :attr:`left_out`)."""
        methods = _check_crowd_methods(methods)
        wanted = _crowd_methods_of(methods)
        made = [m for m in wanted if self._crowd(m) is not None]
        if not made:
            raise InputError(f"{self.name}: " + "; ".join(self._refused[m] for m in wanted))
        self.methods = methods
        # "all": the shown methods crowds do not draw (the mushes), then the clip's refusals
        self.left_out = _not_in_crowds(methods) | {
            m: self._refused[m] for m in wanted if m in self._refused
        }
        width = self._side * self._pitch
        shown = self._shown()
        for method, crowd in self.crowds.items():
            crowd.visible = method in shown
            shift = 0.0
            if method in shown and len(shown) > 1:  # side by side, 1.1 grid widths apart
                shift = 1.1 * width * (shown.index(method) - 0.5 * (len(shown) - 1))
            models = np.broadcast_to(np.eye(4), (self.count, 4, 4)).copy()
            models[:, :3, 3] = self._grid + np.array([shift - 0.5 * width, 0.0, -0.5 * width])
            crowd.set_models(models)

    def frame_camera(self) -> None:
        """Aim the camera at the grids shown over their clip (every copy's box over the clip's
        frames, measured on the GPU), keeping its direction; R in the viewer returns here."""
        w, h = self.renderer.target.extent
        shown = [self.renderer.crowd_bounds(self.crowds[m]) for m in self._shown()]
        lo = np.min([b[0] for b in shown], axis=0)
        hi = np.max([b[1] for b in shown], axis=0)
        self.renderer.camera.frame(lo, hi, aspect=(w / h) if h else 1.0)

    def update(self, dt: float) -> None:
        """Advance every copy by ``dt`` seconds times its own speed, looping over the clip (the
        hidden grids too, so that every grid plays in step)."""
        for crowd in self.crowds.values():
            crowd.advance(dt)

    def scrub(self, direction: int) -> None:
        """Step back (-1) or forward (+1) by 2% of the clip (at least 1/60 s), each copy times
        its speed."""
        self.update(direction * max(self.clip.duration / 50.0, 1.0 / 60.0))

    def step_animation(self, delta: int) -> bool:
        """False: the crowds play the one clip they were made with."""
        return False

    def label(self) -> str:
        """One line for the window title: the grids shown, the number of copies and the clip."""
        return f"{methods_label(self._shown())}, a crowd of {self.count} ({self.clip!r})"

    # -- what stills.Decorations labels: one label under each grid shown -----------------------

    @property
    def shown_methods(self) -> tuple[str, ...]:
        """The grids shown, left to right (their labels, in order)."""
        return self._shown()

    @property
    def spacing(self) -> float:
        """How far apart the grids' centres stand along :attr:`axis`."""
        return 1.1 * self._side * self._pitch

    @property
    def axis(self) -> np.ndarray:
        """The grids stand side by side along world +x."""
        return np.array([1.0, 0.0, 0.0])

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The box of one grid's rest copies, centred as the middle grid stands."""
        width = self._side * self._pitch
        centres = self._grid + np.array([-0.5 * width, 0.0, -0.5 * width])
        lo, hi = self._mesh_bounds
        return centres.min(axis=0) + lo, centres.max(axis=0) + hi

    def pose_points(self) -> np.ndarray:
        """The corners ``(8, 3)`` of :attr:`bounds`: one grid's points, for
        :func:`~vkdqs.app.stills.copy_points` and the labels."""
        lo, hi = self.bounds
        return box_corners(lo, hi)[:, :3]

    def caption(self) -> str:
        """The corner text of the window: the model and the clip the copies play."""
        return f"{self.name}: {self.count} copies out of phase, {self.clip.duration:.2f} s clip"

    def bone_name(self, bone: int) -> str:
        """``"bone <index>"`` (the heat map's title): the crowd keeps no joint names."""
        return f"bone {bone}"


def _crowd_methods_of(methods: str) -> tuple[str, ...]:
    """The crowd methods ``methods`` shows, left to right ("all": every method that draws
    crowds)."""
    if methods == "all":
        return tuple(m.name for m in registry.shown() if m.crowds)
    return parse_methods(methods)


def _not_in_crowds(methods: str) -> dict[str, str]:
    """The shown methods ``"all"`` leaves out of crowds, with why
    (:meth:`~vkdqs.methods.SkinningMethod.check_crowds`); none for any other ``methods``."""
    if methods != "all":
        return {}
    return {m.name: why for m in registry.shown() if (why := m.check_crowds())}


def _check_crowd_methods(methods: str) -> str:
    """Crowds draw the registry's methods that draw crowds, one or several (see
    :func:`parse_methods`), "both" or "all"; a method they do not draw is refused with why."""
    bad = [m for m in _crowd_methods_of(methods) if m != DIFF and not registry.get(m).crowds]
    if bad or methods == DIFF:
        crowd = ", ".join(m.name for m in registry.shown() if m.crowds)
        why = f": {registry.get(bad[0]).check_crowds()}" if bad else ""
        raise InputError(
            f"a crowd shows {crowd} (several joined by commas), 'both' or "
            f"'all'; not {(bad or [methods])[0]!r} (got {methods!r}){why}"
        )
    return methods
