"""Export a glTF character as a UsdSkel rig that keeps its skinning method: the skeleton, one
animation, the meshes bound to it with their influences, morph targets as blend shapes, and
``primvars:skel:skinningMethod`` (``classicLinear`` or ``dualQuaternion``), so any UsdSkel
reader (OpenUSD's own ``UsdSkel.BakeSkinning``, Omniverse, Houdini, Maya, Blender) skins it
as vkdqs does. Needs usd-core (the ``usd`` extra). docs/usdskel.md has the mapping.

The mapping, glTF to UsdSkel (docs/usdskel.md has it in full):

* Each skin a ``Skeleton`` under the ``SkelRoot`` ``/Root``, with no transform of its own. Its
  joints are the skin's joints and all their ancestors (joints that bind nothing), so each
  joint's skeleton parent is its parent node and its transform is the file's own TRS; parents
  first (UsdSkel's rule; ``jointIndices`` are remapped), named by path from the node names made
  into identifiers. (A transform on the Skeleton prim would be applied after skinning, which is
  not glTF's skinning for DQS under a scaled node, and DCC importers treat it unevenly.)
* ``bindTransforms`` are the inverses of the inverse bind matrices; ``restTransforms`` the
  joints' local matrices at rest; ``geomBindTransform`` the identity (glTF ignores the skinned
  mesh's node transform, and so does UsdSkel).
* The ``SkelAnimation`` holds the joints the animation moves (the others keep their rest
  transforms), with translations (float), rotations (quatf) and scales (half: UsdSkel's type)
  at the animation's key times, not resampled: USD interpolates translations and scales
  linearly and rotations by slerp, as glTF's LINEAR does. A STEP key gets a second sample just
  before it (:data:`STEP_FRAMES` of a frame earlier) holding the value before the step; a
  CUBICSPLINE channel is sampled at ``fps`` as well as at its keys (with a warning).
* Morph targets are ``BlendShape`` prims (offsets, normal offsets) with their weights animated
  in the ``SkelAnimation``, named ``<mesh>_<target>``.
* A mesh without a skin that the clip moves or morphs is bound rigidly to a Skeleton of its own
  node; one that stays put is a plain mesh placed by its node's world matrix.
* Materials and textures as a baked ``.usd`` has them (UsdPreviewSurface, PNGs beside it).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time as _time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .. import methods, reference
from ..errors import InputError, LimitError
from ..files import check_output
from ..gltf.errors import GltfWarning
from ..gltf.parts import ScenePart, scene_parts
from .surface import drop_degenerate, scene_surface
from .usd import import_pxr, save_stage, usd_surface

if TYPE_CHECKING:
    from ..gltf import GltfScene

__all__ = ["STEP_FRAMES", "UsdSkelInfo", "export_usdskel"]

#: Extensions a UsdSkel rig is written to.
FORMATS = (".usd", ".usda", ".usdc")
#: The most channel values (key times x channels) an export samples: a SkelAnimation holds
#: every animated joint at every key time of any channel.
MAX_SAMPLED = 10_000_000
#: The most time samples an export writes (distinct key times x the SkelAnimations holding
#: them), and the longest timeline (in frames) its stage may have, as a bake's ``MAX_FRAMES``.
MAX_TIMES = 1_000_000
#: The most characters of all joint paths of one Skeleton (a joint's path names every ancestor:
#: a chain of n joints needs n^2 / 2 names).
MAX_PATH_CHARS = 2**26
#: How far (in frames) before a STEP key its held value is sampled.
STEP_FRAMES = 1e-3


@dataclass(frozen=True)
class UsdSkelInfo:
    """What :func:`export_usdskel` wrote."""

    path: Path
    method: str
    #: ``primvars:skel:skinningMethod``
    skinning_method: str
    animation: str
    skeletons: int
    joints: int
    meshes: int
    blend_shapes: int
    #: time samples of the animation (0 for the rest pose)
    samples: int
    #: True when a CUBICSPLINE channel was sampled at ``fps`` (not only at its keys)
    resampled: bool
    seconds: float


def export_usdskel(
    scene: GltfScene | str | Path,
    path: str | Path,
    *,
    method: str = methods.DEFAULT,
    animation: int | str | None = 0,
    fps: float = 30.0,
) -> UsdSkelInfo:
    """Write ``scene`` as a UsdSkel rig (``.usd``, ``.usda``, ``.usdc``) skinned by ``method``.

    Parameters
    ----------
    scene : GltfScene, or the path of a glTF file
    path : str or Path
    method : str
        A method of the registry OpenUSD can express (its ``usdskel``): "dqs" writes
        ``dualQuaternion``, "lbs" ``classicLinear``; "blend" needs a usd-core with
        ``primvars:skel:skinningBlendWeights``. The others are refused (``vkdqs bake`` writes
        their frames).
    animation : int, str or None
        The clip (index or name) the ``SkelAnimation`` holds; None or ``"rest"``: none.
    fps : float
        The stage's time codes (and frames) per second; a CUBICSPLINE channel is also sampled
        at this rate.

    Raises
    ------
    InputError
        A method OpenUSD cannot express (or one a skin's joint matrices rule out, as for
        :class:`~vkdqs.Skinner`), an unknown animation, nothing to export; a singular inverse
        bind matrix, a world matrix past float64, an animated scale past a half's 65504.
    LimitError
        More than :data:`MAX_SAMPLED` channel values (distinct key times x channels), more
        than :data:`MAX_TIMES` time samples or timeline frames, joint paths longer than
        :data:`MAX_PATH_CHARS` in all (a chain thousands of joints deep).
    CapabilityError
        usd-core is missing (``pip install 'vkdqs[usd]'``).
    OutputError
        As :func:`vkdqs.bake_to_file`: the output is the model, a folder, or cannot be written.
    """
    from .driver import _animation  # the bake's reading of index / name / "rest"

    t0 = _time.perf_counter()
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise InputError(
            f"{path.name}: a UsdSkel rig is written to {', '.join(FORMATS)}, "
            f"not {path.suffix or 'a file without extension'!r}"
        )
    entry = methods.get(method)  # InputError naming the methods
    token = _usd_method(entry)
    if not (isinstance(fps, (int, float)) and math.isfinite(fps) and 0.0 < fps <= 1000.0):
        raise InputError(f"fps must be within (0, 1000], got {fps!r}")
    import_pxr()
    if isinstance(scene, (str, Path)):
        from ..gltf import load_gltf

        scene = load_gltf(scene)
    inputs = (scene.path,)
    check_output(path, inputs)
    index, name = _animation(scene, animation)
    parts = scene_parts(scene)
    if not parts:
        raise InputError(
            f"{scene.path.name}: nothing to export (no mesh with triangles is placed by a node)"
        )
    with np.errstate(over="ignore", invalid="ignore"):  # said below, not as numpy warnings
        rest = scene.node_global_matrices(None)
    bad = ~np.isfinite(rest).all(axis=(1, 2))
    if bad.any():
        node = int(np.argmax(bad))
        raise InputError(
            f"{scene.path.name}: nodes[{node}] ({scene.nodes[node].name!r}): its world matrix "
            "overflows float64 (the scales and translations above it multiply past 1e308)"
        )
    for skin in sorted({p.skin for p in parts if p.skin is not None}):  # over skins
        why = entry.check(scene.skin_traits(skin))
        if why is not None:
            raise InputError(f"{scene.path.name}: skins[{skin}]: {why} (try method 'lbs')")
    writer = _Rig(scene, path, entry, token, index, float(fps))
    writer.write(parts)
    save_stage(writer.stage, path, writer.textures, inputs)
    return UsdSkelInfo(
        path,
        entry.name,
        token,
        name,
        len(writer.skeletons),
        sum(len(s.joints) for s in writer.skeletons.values()),
        len(parts),
        writer.blend_shapes,
        len(writer.times) if index is not None else 0,
        writer.resampled,
        _time.perf_counter() - t0,
    )


def _usd_method(entry: methods.SkinningMethod) -> str:
    """The method's ``skinningMethod`` token, or an InputError saying why it has none."""
    if entry.usdskel is None:
        raise InputError(
            f"method {entry.name!r} ({entry.label}) has no UsdSkel equivalent (UsdSkel skins "
            "with classicLinear or dualQuaternion only): bake its frames instead, e.g. "
            f"vkdqs bake MODEL --method {entry.name} --out frames.usdc"
        )
    if "dqs_blend" in entry.needs:
        from pxr import UsdSkel

        if not hasattr(UsdSkel.Tokens, "primvarsSkelSkinningBlendWeights"):
            from pxr import Usd

            version = ".".join(map(str, Usd.GetVersion()))
            raise InputError(
                f"method {entry.name!r} needs per-vertex blend weights "
                "(primvars:skel:skinningBlendWeights), which this usd-core "
                f"({version}) does not have: bake its frames instead, e.g. vkdqs bake MODEL "
                f"--method {entry.name} --out frames.usdc"
            )
    return entry.usdskel


# ------------------------------------------------------------------------------------------------
# names and times
# ------------------------------------------------------------------------------------------------


def _identifiers(names: Sequence[str], fallback: str, taken: set[str] | None = None) -> list[str]:
    """``names`` made into distinct USD identifiers (``[A-Za-z_][A-Za-z0-9_]*``); an empty one
    becomes ``fallback<i>``; ``taken`` (updated) holds names already used."""
    taken = set() if taken is None else taken
    out = []
    suffix: dict[str, int] = {}  # the next suffix to try for each base: linear, not quadratic
    for i, raw in enumerate(names):  # over joints / meshes: names, not a hot path
        name = re.sub(r"[^A-Za-z0-9_]", "_", raw) or f"{fallback}{i}"
        if name[0].isdigit():
            name = "_" + name
        base, k = name, suffix.get(name, 1)
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        suffix[base] = k
        taken.add(name)
        out.append(name)
    return out


def _usd_text(names: Sequence[str], scene: GltfScene, where: str) -> list[str]:
    """``names`` as USD can hold them: its strings end at a NUL character, which would cut a
    name short there (silently), so each NUL becomes U+FFFD, with one warning."""
    cut = sum("\0" in name for name in names)  # over joints: names, not a hot path
    if not cut:
        return list(names)
    warnings.warn(
        f"{scene.path.name}: {cut} name(s) written to {where} hold a NUL character, which USD "
        "strings cannot: each NUL is written as U+FFFD",
        GltfWarning,
        stacklevel=5,
    )
    return [name.replace("\0", "\ufffd") for name in names]


def _key_times(scene: GltfScene, index: int, fps: float) -> tuple[NDArray[np.float64], bool]:
    """The seconds the animation is sampled at: every key of every channel, a sample just
    before each STEP key, and, for a CUBICSPLINE channel, every ``1 / fps`` of its range;
    with whether that resampling happened."""
    anim = scene.animations[index]
    channels = list(anim.channels) + list(anim.weight_channels)
    times = [np.asarray(ch.times, np.float64) for ch in channels]
    before = STEP_FRAMES / fps
    resampled = False
    for ch in channels:  # over channels
        t = np.asarray(ch.times, np.float64)
        if ch.interpolation == "STEP" and len(t) > 1:
            gap = np.diff(t)
            times.append(t[1:] - np.minimum(before, gap / 2))
        elif ch.interpolation == "CUBICSPLINE" and len(t) > 1:
            resampled = True
            count = math.floor((t[-1] - t[0]) * fps + 1e-6) + 1
            if count > MAX_TIMES:  # before allocating them
                raise LimitError(
                    f"{scene.path.name}: animations[{index}] has a CUBICSPLINE channel of "
                    f"{t[-1] - t[0]:g} s, {count} samples at {fps:g} fps (at most {MAX_TIMES}): "
                    "bake it instead (vkdqs bake)"
                )
            times.append(t[0] + np.arange(count) / fps)
    keys = np.unique(np.concatenate(times)) if times else np.zeros(1)
    span = (keys[-1] - keys[0]) * fps
    if len(keys) > MAX_TIMES or span > MAX_TIMES:
        raise LimitError(
            f"{scene.path.name}: animations[{index}] has {len(keys)} distinct key times over "
            f"{span:g} frames at {fps:g} fps; a SkelAnimation holds every one of them and a "
            f"stage's timeline steps through every frame (at most {MAX_TIMES} each): bake it "
            "instead (vkdqs bake)"
        )
    return keys, resampled


# ------------------------------------------------------------------------------------------------
# transforms
# ------------------------------------------------------------------------------------------------


def _usd_matrices(m: NDArray) -> Any:
    """``[..., 4, 4]`` column-vector matrices as a ``Vt.Matrix4dArray`` (USD's rows)."""
    from pxr import Vt

    m = np.asarray(m, np.float64).reshape(-1, 4, 4)
    return Vt.Matrix4dArray.FromNumpy(np.ascontiguousarray(m.transpose(0, 2, 1)))


def _usd_matrix(m: NDArray) -> Any:
    from pxr import Gf

    return Gf.Matrix4d(np.asarray(m, np.float64).T.tolist())


# ------------------------------------------------------------------------------------------------
# the stage
# ------------------------------------------------------------------------------------------------


@dataclass
class _Skeleton:
    """One skin's Skeleton: its joints in USD order (parents first) and what its animation
    needs."""

    prim: Any
    path: str
    joints: NDArray[np.int64]  # node of each USD joint
    tokens: list[str]
    usd_of: NDArray[np.int64]  # skin joint index -> USD joint index
    animated: NDArray[np.bool_]  # the USD joints the animation moves
    shapes: list[str] = dataclasses.field(default_factory=list)  # blend shape channels
    weights: list[NDArray] = dataclasses.field(default_factory=list)  # (K, M) each


class _Rig:
    """Builds the rig's stage in memory; :func:`save_stage` writes it."""

    def __init__(
        self,
        scene: GltfScene,
        path: Path,
        entry: methods.SkinningMethod,
        token: str,
        index: int | None,
        fps: float,
    ) -> None:
        from pxr import Usd, UsdGeom, UsdSkel

        self.scene, self.path, self.entry, self.token = scene, path, entry, token
        self.index, self.fps = index, fps
        self.textures: list[tuple[Path, NDArray[np.uint8]]] = []
        self.materials: dict[int, Any] = {}
        self.skeletons: dict[int, _Skeleton] = {}
        self.blend_shapes = 0
        self.resampled = False
        if index is None:
            self.times = np.zeros(1)
        else:
            self.times, self.resampled = _key_times(scene, index, fps)
            if self.resampled:
                name = scene.animations[index].name
                warnings.warn(
                    f"{scene.path.name}: animations[{index}] ({name!r}) has CUBICSPLINE "
                    f"channels: sampled at {fps:g} fps as well as at its keys (USD "
                    "interpolates time samples linearly)",
                    GltfWarning,
                    stacklevel=4,
                )
        # every channel sampled at every time, at once: (K, C, 4)
        anim = scene.animations[index] if index is not None else None
        values = len(self.times) * (len(anim.channels) + len(anim.weight_channels)) if anim else 0
        if values > MAX_SAMPLED:
            raise LimitError(
                f"{scene.path.name}: animations[{index}] has {len(self.times)} distinct key "
                f"times over its {values // len(self.times)} channels; a SkelAnimation holds "
                "every joint at every one of them, which is too large here "
                f"({values} values, at most {MAX_SAMPLED}): bake it instead (vkdqs bake)"
            )
        self.sampled = anim.sample(self.times) if anim is not None else None
        self.channel_nodes = np.array([c.node for c in anim.channels] if anim else [], np.int64)
        self.channel_paths = np.array([c.path for c in anim.channels] if anim else [], object)
        self.rest = scene.node_global_matrices(None)
        self.rest_local = scene.node_local_matrices(None)
        self.rest_trs = scene.node_local_trs(None)
        # the nodes the animation moves (TRS channels), and those with a moved ancestor
        moved = np.zeros(len(scene.nodes), bool)
        if index is not None:
            for ch in scene.animations[index].channels:  # over channels
                moved[ch.node] = True
        self.moved = moved
        self.moved_above = self._moved_ancestors(moved)
        self.codes = (self.times * fps).tolist()
        stage = self.stage = Usd.Stage.CreateInMemory()
        stage.SetTimeCodesPerSecond(fps)
        stage.SetFramesPerSecond(fps)
        if index is not None:
            stage.SetStartTimeCode(self.codes[0])
            stage.SetEndTimeCode(self.codes[-1])
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)  # glTF is +y up, in metres
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        root = UsdSkel.Root.Define(stage, "/Root")
        stage.SetDefaultPrim(root.GetPrim())
        self.names: set[str] = {"Materials"}

    def _local_trs(self, nodes: NDArray[np.int64]) -> tuple[NDArray, NDArray, NDArray]:
        """``(K, n, 3)`` translations, ``(K, n, 4)`` rotations and ``(K, n, 3)`` scales of
        ``nodes`` at each time: their rest TRS where no channel moves them."""
        count = len(self.times)
        out = [np.repeat(a[nodes][None], count, axis=0) for a in self.rest_trs]
        if self.sampled is None:
            return out[0], out[1], out[2]
        where = np.full(len(self.scene.nodes), -1, np.int64)
        where[nodes] = np.arange(len(nodes))
        slot = where[self.channel_nodes]
        for dest, path, width in zip(
            out, ("translation", "rotation", "scale"), (3, 4, 3), strict=True
        ):
            sel = np.flatnonzero((self.channel_paths == path) & (slot >= 0))
            dest[:, slot[sel]] = self.sampled[:, sel, :width]
        return out[0], out[1], out[2]

    def _moved_ancestors(self, moved: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Whether each node or one of its ancestors is moved (vectorized over nodes, a pass
        per level of the hierarchy)."""
        parent = self.scene.node_parents
        out = moved.copy()
        up = parent.copy()
        while (up >= 0).any():  # over levels
            out |= np.where(up >= 0, moved[np.maximum(up, 0)], False)
            up = np.where(up >= 0, parent[np.maximum(up, 0)], -1)
        return out

    # -- skeletons ---------------------------------------------------------------------------

    def skeleton(self, skin: int) -> _Skeleton:
        """The Skeleton of glTF skin ``skin`` (defined once)."""
        if skin not in self.skeletons:
            sk = self.scene.skins[skin]
            self.skeletons[skin] = self._define_skeleton(
                sk.name or f"skin{skin}", sk.joints, sk.inverse_bind_matrices
            )
        return self.skeletons[skin]

    def node_skeleton(self, node: int) -> _Skeleton:
        """A Skeleton whose one bound joint is ``node`` (identity bind): a mesh without a skin
        that the animation moves or morphs is bound to it rigidly, so UsdSkel poses it."""
        key = -1 - node
        if key not in self.skeletons:
            name = f"{self.scene.nodes[node].name or f'node{node}'}_skeleton"
            self.skeletons[key] = self._define_skeleton(
                name, np.array([node], np.int64), np.eye(4)[None]
            )
        return self.skeletons[key]

    def _define_skeleton(self, label: str, nodes: NDArray, ibm: NDArray) -> _Skeleton:
        """A Skeleton binding ``nodes`` with inverse bind matrices ``ibm``."""
        from pxr import UsdSkel, Vt

        scene = self.scene
        parent = scene.node_parents
        nodes = np.asarray(nodes, np.int64)
        # the Skeleton's joints: the skin's and all their ancestors (joints that bind nothing),
        # so each joint's skeleton parent is its parent node, its transform the file's local
        # TRS itself, and the Skeleton prim needs no transform (a pass per level)
        member = np.zeros(len(scene.nodes), bool)
        x = nodes.copy()
        while len(x):
            member[x] = True
            x = parent[x]
            x = x[x >= 0]
            x = x[~member[x]]
        joints = np.flatnonzero(member)
        joints = joints[np.argsort(scene.node_depths[joints], kind="stable")]  # parents first
        usd = np.full(len(scene.nodes), -1, np.int64)
        usd[joints] = np.arange(len(joints))
        up = np.where(parent[joints] >= 0, usd[np.maximum(parent[joints], 0)], -1)
        names = _identifiers([scene.nodes[n].name for n in joints], "node")
        chars = 0
        length = [0] * len(joints)
        for i, name in enumerate(names):  # over joints: each path's length, before making it
            length[i] = len(name) + (length[up[i]] + 1 if up[i] >= 0 else 0)
            chars += length[i]
        if chars > MAX_PATH_CHARS:
            raise LimitError(
                f"{scene.path.name}: {label}'s {len(joints)} joints (with their ancestors) are "
                f"{int(scene.node_depths[joints].max()) + 1} deep; UsdSkel names each joint by "
                f"its path from the root, {chars} characters in all (at most {MAX_PATH_CHARS})"
            )
        tokens: list[str] = []
        for i, name in enumerate(names):  # over joints: paths, parents first
            tokens.append(name if up[i] < 0 else f"{tokens[up[i]]}/{name}")

        where = f"/Root/{_identifiers([label], 'skin', self.names)[0]}"
        skel = UsdSkel.Skeleton.Define(self.stage, where)
        if where.rsplit("/", 1)[1] != label:
            skel.GetPrim().SetDisplayName(_usd_text([label], scene, where)[0])
        skel.CreateJointsAttr(Vt.TokenArray(tokens))
        kept = _usd_text([scene.nodes[n].name for n in joints], scene, f"{where}.jointNames")
        skel.CreateJointNamesAttr(Vt.TokenArray(kept))
        # bind transforms: the skin's joints' (inverse bind matrices, inverted); the others'
        # their world matrices at rest (they bind nothing)
        bind = self.rest[joints].copy()
        with np.errstate(all="ignore"):
            det = np.linalg.det(np.asarray(ibm, np.float64))
            bind[usd[nodes]] = np.linalg.inv(np.where((det != 0)[:, None, None], ibm, np.eye(4)))
        for what, m in (("bind", bind), ("rest", self.rest_local[joints])):
            bad = ~np.isfinite(m).all(axis=(1, 2))
            if what == "bind":
                bad[usd[nodes]] |= det == 0
            if bad.any():
                node = int(joints[np.argmax(bad)])
                raise InputError(
                    f"{scene.path.name}: {label}: the {what} transform of nodes[{node}] "
                    f"({scene.nodes[node].name!r}) is singular or not finite (its inverse bind "
                    "matrix, or its transforms overflow float64), which UsdSkel cannot hold"
                )
        skel.CreateBindTransformsAttr(_usd_matrices(bind))
        skel.CreateRestTransformsAttr(_usd_matrices(self.rest_local[joints]))
        return _Skeleton(skel, where, joints, tokens, usd[nodes], self.moved[joints])

    def animate(self) -> None:
        """One SkelAnimation per Skeleton that the clip moves or whose meshes have morph
        weights: joints at each key time, blend shape weights."""
        from pxr import UsdSkel, Vt

        moving = [  # the SkelAnimations sampled at every key time
            s
            for s in self.skeletons.values()
            if self.index is not None and (s.animated.any() or s.shapes)
        ]
        samples = len(self.times) * len(moving)
        if samples > MAX_TIMES:
            raise LimitError(
                f"{self.scene.path.name}: animations[{self.index}] moves {len(moving)} "
                f"skeletons at {len(self.times)} key times, {samples} time samples (at most "
                f"{MAX_TIMES}): bake it instead (vkdqs bake)"
            )
        for skel in self.skeletons.values():  # over skeletons
            joints = np.flatnonzero(skel.animated) if self.index is not None else []
            if not len(joints) and not skel.shapes:
                continue
            anim = UsdSkel.Animation.Define(self.stage, f"{skel.path}/Animation")
            UsdSkel.BindingAPI.Apply(skel.prim.GetPrim()).CreateAnimationSourceRel().SetTargets(
                [anim.GetPath()]
            )
            anim.CreateJointsAttr(Vt.TokenArray([skel.tokens[j] for j in joints]))
            tr, ro, sc = (
                anim.CreateTranslationsAttr(),
                anim.CreateRotationsAttr(),
                anim.CreateScalesAttr(),
            )
            if len(joints):
                t, r, s = self._local_trs(skel.joints[joints])
                top = float(np.abs(s).max())
                if top > float(np.finfo(np.float16).max):
                    raise InputError(
                        f"{self.scene.path.name}: an animated joint scale reaches {top:g}; "
                        "UsdSkel keeps joint scales as half floats, at most 65504"
                    )
                if float(np.abs(t).max()) > float(np.finfo(np.float32).max):
                    raise InputError(
                        f"{self.scene.path.name}: an animated joint translation past float32's "
                        "range; UsdSkel keeps them as floats"
                    )
                half = s.astype(np.float16).astype(np.float64)
                lost = float(np.abs(half - s).max() / max(np.abs(s).max(), 1e-30))
                if lost > 1e-5:
                    warnings.warn(
                        f"{self.scene.path.name}: UsdSkel keeps joint scales as half floats; "
                        f"some animated scales lose {lost:.1e} of their size",
                        GltfWarning,
                        stacklevel=5,
                    )
                for k, code in enumerate(self.codes):  # over key times
                    tr.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(t[k], np.float32)), code)
                    ro.Set(Vt.QuatfArray.FromNumpy(np.ascontiguousarray(r[k], np.float32)), code)
                    sc.Set(Vt.Vec3hArray.FromNumpy(np.ascontiguousarray(s[k], np.float16)), code)
            else:
                for attr, kind in ((tr, Vt.Vec3fArray), (ro, Vt.QuatfArray), (sc, Vt.Vec3hArray)):
                    attr.Set(kind())
            if skel.shapes:
                anim.CreateBlendShapesAttr(Vt.TokenArray(skel.shapes))
                weights = np.concatenate(skel.weights, axis=1).astype(np.float32)
                attr = anim.CreateBlendShapeWeightsAttr()
                if self.index is None or np.all(weights == weights[:1]):
                    attr.Set(Vt.FloatArray.FromNumpy(weights[0]))
                else:
                    for k, code in enumerate(self.codes):  # over key times
                        attr.Set(Vt.FloatArray.FromNumpy(weights[k]), code)

    # -- meshes ------------------------------------------------------------------------------

    def write(self, parts: list[ScenePart]) -> None:
        names = _identifiers(
            [self.scene.nodes[p.node].name or self.scene.meshes[p.mesh].name for p in parts],
            "mesh",
            self.names,
        )
        for part, name in zip(parts, names, strict=True):  # over parts
            if part.kind == "skinned":
                self._skinned(part, name)
            else:
                self._rigid(part, name)
        self.animate()

    def _mesh(self, part: ScenePart, name: str, positions: NDArray, normals: NDArray) -> Any:
        """A Mesh prim of the part's geometry (with these points and normals) and its look."""
        from pxr import UsdGeom, Vt

        g = part.geometry
        surface = scene_surface(self.scene, [part])
        faces, groups, _ = drop_degenerate(g.indices.reshape(-1, 3), g.positions, surface.groups)
        surface = dataclasses.replace(surface, groups=groups)
        mesh = UsdGeom.Mesh.Define(self.stage, f"/Root/{name}")
        node = self.scene.nodes[part.node]
        if node.name and node.name != name:
            mesh.GetPrim().SetDisplayName(_usd_text([node.name], self.scene, f"/Root/{name}")[0])
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        faces = np.ascontiguousarray(faces, np.int32)
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), 3, np.int32)))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(faces.reshape(-1)))
        mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(positions, np.float32)))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        mesh.CreateNormalsAttr(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(normals, np.float32)))
        box = np.stack([positions.min(axis=0), positions.max(axis=0)]).astype(np.float32)
        mesh.CreateExtentAttr(Vt.Vec3fArray.FromNumpy(box))
        usd_surface(
            self.stage,
            mesh,
            surface,
            self.path,
            self.textures,
            scope="/Root/Materials",
            defined=self.materials,
        )
        return mesh

    def _skinned(self, part: ScenePart, name: str) -> None:
        from pxr import Sdf, UsdGeom, UsdSkel, Vt

        g = part.geometry
        if part.skin is not None:
            skel = self.skeleton(part.skin)
        else:  # a rigid part bound to its node (its geometry: one bone, weight 1)
            skel = self.node_skeleton(part.node)
        mesh = self._mesh(part, name, g.positions, g.normals)
        binding = UsdSkel.BindingAPI.Apply(mesh.GetPrim())
        binding.CreateSkeletonRel().SetTargets([skel.prim.GetPath()])
        k = g.joints.shape[1]
        joints = skel.usd_of[g.joints].astype(np.int32)
        binding.CreateJointIndicesPrimvar(False, k).Set(Vt.IntArray.FromNumpy(joints.reshape(-1)))
        weights = np.ascontiguousarray(g.weights, np.float32).reshape(-1)
        binding.CreateJointWeightsPrimvar(False, k).Set(Vt.FloatArray.FromNumpy(weights))
        binding.CreateGeomBindTransformAttr(_usd_matrix(np.eye(4)))
        binding.CreateSkinningMethodAttr().Set(self.token)
        if "dqs_blend" in self.entry.needs:  # usd-core has them: _usd_method checked
            blend = g.dqs_blend if g.dqs_blend is not None else methods.DEFAULT_DQS_BLEND
            values = np.broadcast_to(np.asarray(blend, np.float32), (g.vertex_count,))
            UsdGeom.PrimvarsAPI(mesh).CreatePrimvar(
                "skel:skinningBlendWeights", Sdf.ValueTypeNames.FloatArray, UsdGeom.Tokens.vertex
            ).Set(Vt.FloatArray.FromNumpy(np.ascontiguousarray(values)))
        if not g.morph_target_count:
            return
        shapes, targets = [], []
        names = self.scene.meshes[part.mesh].target_names or ()
        for m in range(g.morph_target_count):  # over morph targets
            label = names[m] if m < len(names) and names[m] else f"target{m}"
            shape = UsdSkel.BlendShape.Define(self.stage, f"{mesh.GetPath()}/{name}_{m}")
            shape.CreateOffsetsAttr(
                Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(g.morph_positions[m], np.float32))
            )
            if g.morph_normals is not None:
                shape.CreateNormalOffsetsAttr(
                    Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(g.morph_normals[m], np.float32))
                )
            shapes.append(f"{name}_{_identifiers([label], 'target')[0]}")
            targets.append(shape.GetPath())
        binding.CreateBlendShapesAttr(Vt.TokenArray(shapes))
        binding.CreateBlendShapeTargetsRel().SetTargets(targets)
        skel.shapes += shapes
        skel.weights.append(
            np.stack(
                [
                    self.scene.morph_weights(part.mesh, part.node, self.index, t)
                    for t in self.times  # over key times
                ]
            )
        )
        self.blend_shapes += len(shapes)

    def _rigid(self, part: ScenePart, name: str) -> None:
        """A mesh without a skin: bound rigidly to its node's Skeleton when the animation moves
        or morphs it (UsdSkel then interpolates its node's TRS as glTF does), else placed by
        its node's world matrix."""
        from pxr import UsdGeom

        g = part.geometry
        if self.index is not None and (
            self.moved_above[part.node] or (g.morph_target_count and self._morphs_move(part))
        ):
            self._skinned(part, name)
            return
        positions, normals = g.positions, g.normals
        if g.morph_target_count:  # its fixed weights, applied
            w = self.scene.morph_weights(part.mesh, part.node, self.index, self.times[0])
            positions, normals = reference.morph(
                g.positions, g.normals, g.morph_positions, g.morph_normals, w
            )
        mesh = self._mesh(part, name, positions, normals)
        UsdGeom.Xformable(mesh).AddTransformOp().Set(_usd_matrix(self.rest[part.node]))

    def _morphs_move(self, part: ScenePart) -> bool:
        w = np.stack(
            [self.scene.morph_weights(part.mesh, part.node, self.index, t) for t in self.times]
        )
        return bool(np.any(w != w[:1]))
