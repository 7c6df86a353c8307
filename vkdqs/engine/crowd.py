"""Crowds: many copies of one mesh playing a baked clip, sampled on the GPU, in one draw call.

A :class:`Crowd` (made by :meth:`vkdqs.Renderer.add_crowd`) uploads its
:class:`~vkdqs.AnimationClip` once, pre-converted to the shader's bone layout (unit dual
quaternions for "dqs", the three rows of each affine matrix for "lbs"). Each copy carries only
a time, a model matrix and a colour. Per frame the renderer:

1. writes every copy's frame position (its time in frames, wrapped by its clip's duration)
   into mapped memory: one ``(N, 2)`` float32 copy (the first frame to blend, an index into all
   the crowd's clips' frames, and the next frame's weight), nothing per bone; models and colours
   only after they change;
2. dispatches the sampling shader of the method's bone layout (``crowd_dq.comp``,
   ``crowd_rows.comp`` or ``crowd_dq_rows.comp``), which blends the two neighbouring frames of every
   (copy, joint) into a texel buffer of bones (DQS: shortest arc, normalized; LBS: linear);
3. after a compute-to-vertex barrier, draws all copies with one instanced ``vkCmdDrawIndexed``
   of ``crowd_<method>.vert`` per material group of the mesh, which reads bone
   ``copy * joints + joint``.

The copies wear the RenderMesh's materials (``Renderer.add_mesh(material=..., groups=...)``):
the fragment shader is skin.frag's, with the same material set, texture and pipeline choices
as an instance's, so a copy draws exactly like an instance posed with the same bones (an
untextured material on a mesh without colours uses shader variants without UV and colour
inputs: such crowds cost what they did before materials). Each
copy's colour multiplies in: white by default over a mesh with its own colours (vertex colours,
a texture or a base colour), else :data:`DEFAULT_TINT`.

Bones, frames and copies live in rgba32f texel buffers (on lavapipe texel fetches are far faster
than storage-buffer reads), not in the 64 KiB uniform block. Limits (checked with
:class:`~vkdqs.LimitError`): the bones of all copies (``count * joints * t`` texels, ``t``
2 for DQS and cor, 3 for LBS and ddm, 5 for blend and dqs_blender), the clip
(``frames * joints * t``) and the copies (``count * 8``) must each fit
``maxTexelBufferElements`` (2^27 on lavapipe: e.g. 1.3M copies of a 50-joint DQS rig); and
``count <=`` :data:`MAX_COPIES`. The sampling and cull dispatches run in pieces of at most
``maxComputeWorkGroupCount[0]`` workgroups (:class:`~vkdqs.gpu.ComputePass`). Memory is 16
bytes a texel, per frame in flight for bones and copies.

Methods: "dqs", "lbs", "blend" (per-vertex LBS/DQS blend by the mesh's ``dqs_blend``: the
sampling pass writes each bone's blended DQ and its linearly blended matrix rows, 5 texels),
"cor" (optimized centers of rotation: DQ bones, as "dqs", and the mesh's per-vertex centers,
computed once per mesh like a "cor" instance's) and "dqs_blender" (Blender's Preserve Volume,
with the bones' ``rest_matrices``: the DQ of Blender's split and the matrix rows, 5 texels,
sampled as for "blend"; clips with scale welcome) and "ddm" (Direct Delta Mush: matrix rows,
sampled as for "lbs"; each vertex's Ω and bones are the mesh's texel buffers, uploaded once per
precomputation, given as ``ddm=`` or the mesh's default, and shared by every copy and by the
mesh's "ddm" instances: they must fit ``maxTexelBufferElements``, 20 texels a vertex with 8
slots, 10 with 4, else :class:`~vkdqs.LimitError`). The vertex shader skins with
``skin_vertex()`` of ``include/skin.glsl``, as ordinary instances do ("ddm":
``ddm_skin_vertex()`` through ``include/ddm_inputs.glsl``, as its instances do).

DQS, blend, cor and ddm crowds need rigid clips (no scale or shear, not even the one uniform
scale "ddm" instances take): use ``method="lbs"`` (or "dqs_blender") for clips with scale.
Between two frames a "ddm" copy's bones are the linear blend of the frames' rows (as for LBS),
which its polar step makes a rotation again.
All copies of a crowd share the winding of culling: if any model matrix mirrors (det < 0) the
crowd is drawn without back-face culling.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .. import methods
from .. import shader_interface as si
from ..clip import AnimationClip
from ..errors import MAX_MAGNITUDE, InputError, LimitError
from ..geometry import transform_boxes
from ..gpu import (
    Buffer,
    BufferView,
    BufferWrite,
    ComputePass,
    DescriptorPool,
    DescriptorSetLayout,
    GraphicsPipelineDesc,
    PipelineLayout,
    TexelWrite,
    memory_barrier,
    push_constants,
    write_descriptors,
)
from ..gpu.calls import vk
from ..material import Material

if TYPE_CHECKING:
    from ..gpu import ResourceOwner

#: Most copies in one crowd (the instance index is an int in the shader; far below that, memory
#: is the limit: see the module docstring).
MAX_COPIES = 1 << 20
#: Crowd serial numbers: part of the renderer's command-buffer key (unlike id(), never reused).
_SERIALS = itertools.count(1)
#: Most frames of all of a crowd's clips together.
MAX_FRAMES = 1 << 24
#: |det| of a model matrix's 3x3 below which it is singular.
SINGULAR_DET = 1e-12
_STORAGE = vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
_TEXELS = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
_OUT_TEXELS = vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT | _TEXELS
_TEXEL_BYTES = 16
#: The copies' colour when the mesh has no colours of its own (as the viewer tints LBS copies).
DEFAULT_TINT = (0.62, 0.34, 0.16, 1.0)


def has_own_color(mesh: Any) -> bool:
    """Whether a RenderMesh has colours of its own: vertex colours, or a material with a texture
    or a base colour other than white (the rule of the viewer's glTF copies)."""
    return mesh.mesh.colors is not None or any(g[2].material.has_own_color for g in mesh.groups)


def default_color(mesh: Any) -> tuple[float, ...]:
    """A new crowd's copy colour: white over a mesh's own colours, else :data:`DEFAULT_TINT`."""
    return (1.0, 1.0, 1.0, 1.0) if has_own_color(mesh) else DEFAULT_TINT


class _Layouts:
    """The set and pipeline layouts every crowd of a renderer shares; the draw's layout has the
    renderer's material set layout as set :data:`si.MATERIAL_SET`, as its instances' do."""

    def __init__(self, owner: ResourceOwner, material_set: DescriptorSetLayout) -> None:
        dev = owner.device
        self.sample_set = owner.own(
            DescriptorSetLayout(dev, si.CROWD_SAMPLE_BINDINGS, label="crowd sample")
        )
        self.sample = owner.own(
            PipelineLayout(
                dev, [self.sample_set], si.CROWD_SAMPLE_PUSH_BYTES, si.Stage.COMPUTE, label="crowd"
            )
        )
        self.render_set = owner.own(
            DescriptorSetLayout(dev, si.CROWD_RENDER_BINDINGS, label="crowd render")
        )
        self.render = owner.own(
            PipelineLayout(
                dev,
                [self.render_set, material_set],
                si.CROWD_RENDER_PUSH_BYTES,
                si.Stage.VERTEX,
                label="crowd render",
            )
        )
        self.cull_set = owner.own(
            DescriptorSetLayout(dev, si.CROWD_CULL_BINDINGS, label="crowd cull")
        )
        self.cull = owner.own(
            PipelineLayout(
                dev, [self.cull_set], si.CROWD_CULL_PUSH_BYTES, si.Stage.COMPUTE, label="crowd cull"
            )
        )


def _float_array(value: object, what: str) -> np.ndarray:
    try:
        return np.array(value, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{what} must be an array of numbers: {exc}") from None


def _check_finite(arr: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{what}{list(index)} is {arr[index]}; it must be finite")
    big = np.abs(arr) > MAX_MAGNITUDE
    if big.any():
        index = tuple(int(i) for i in np.argwhere(big)[0])
        raise InputError(f"{what}{list(index)} is {arr[index]:g}, beyond +-{MAX_MAGNITUDE:g}")


def pack_clip(
    clip: AnimationClip,
    method: str | methods.SkinningMethod,
    rest_matrices: ArrayLike | None = None,
) -> np.ndarray:
    """The clip's frames in the shader's bone layout, float32 ``(F, J, T, 4)``: each bone as the
    method packs an instance's pose (:meth:`vkdqs.methods.SkinningMethod.pack`), its bone block
    then its second block (``T`` = :attr:`~vkdqs.methods.SkinningMethod.crowd_texels`: 2 for a
    dual quaternion, 3 for matrix rows, 5 for both), so a whole frame skins exactly like an
    instance posed with it. A clip is packed once: no per-frame two-phase DQS, so the methods
    whose crowds take no scale (``crowd_scale``) need a rigid clip. ``method``: a registry entry,
    or its name."""
    skinning = method if isinstance(method, methods.SkinningMethod) else methods.get(method)
    j = clip.joint_count
    try:
        pose = skinning.pack(
            clip.frames, j, batched=True, allow_scale=False, rest_matrices=rest_matrices
        )
    except InputError as exc:
        if skinning.crowd_scale:
            raise
        scaled = [m for m in methods.METHODS.values() if m.crowds and m.crowd_scale]
        use = " or ".join(f"method={m.name!r}" for m in scaled)
        raise InputError(
            f"a {skinning.name!r} crowd needs a rigid clip (no scale or shear); use {use} for this "
            f"clip ({exc})"
        ) from None
    if not skinning.second_block:
        return pose.bones
    assert pose.scales is not None
    return np.ascontiguousarray(np.concatenate([pose.bones, pose.scales], -2))


def _check_clips(clips: AnimationClip | Sequence[AnimationClip]) -> tuple[AnimationClip, ...]:
    """A crowd's clips: at least one, all AnimationClips of the same joints, their frames within
    :data:`MAX_FRAMES`."""
    if isinstance(clips, AnimationClip):
        clips = [clips]
    if not isinstance(clips, (list, tuple)) or not clips:
        raise InputError(
            "clip must be a vkdqs.AnimationClip or a non-empty list of them, got "
            f"{type(clips).__name__}"
        )
    for i, c in enumerate(clips):
        if not isinstance(c, AnimationClip):
            raise InputError(f"clip {i} must be a vkdqs.AnimationClip, got {type(c).__name__}")
        if c.joint_count != clips[0].joint_count:
            raise InputError(
                f"all clips of a crowd need the same joints: clip {i} has {c.joint_count}, "
                f"clip 0 has {clips[0].joint_count}"
            )
    total_frames = sum(c.frame_count for c in clips)
    if total_frames > MAX_FRAMES:
        raise LimitError(
            f"a crowd's clips hold {total_frames} frames; at most {MAX_FRAMES} (frame "
            "indices travel as exact float32)"
        )
    return tuple(clips)


def _check_device_limits(
    info: Any, count: int, clips: tuple[AnimationClip, ...], texels: int
) -> None:
    """Refuse a crowd whose texel buffers exceed the device's limits."""
    joints = clips[0].joint_count
    total_frames = sum(c.frame_count for c in clips)
    limit = info.max_texel_buffer_elements
    for what, n in (
        (f"the bones of {count} copies x {joints} joints", count * joints * texels),
        (f"the clips ({total_frames} frames x {joints} joints)", total_frames * joints * texels),
        (f"{count} copies' models and colours", count * si.CROWD_COPY.itemsize // 16),
    ):
        if n > limit:
            raise LimitError(
                f"{what} take {n} texels, more than a texel buffer holds on "
                f"{info.name!r} (maxTexelBufferElements {limit}); use fewer copies per crowd"
            )


class _Kept:
    """The owner a crowd's compute passes make their objects with: the renderer's (``keep``),
    each listed as the crowd's, so that removing the crowd destroys them."""

    def __init__(self, device: Any, keep: Any) -> None:
        self.device = device
        self.own = keep


class Crowd:
    """``count`` copies of a mesh playing one clip, drawn in one instanced call.

    Made by :meth:`vkdqs.Renderer.add_crowd`. Set per-copy state with :meth:`set_times`,
    :meth:`set_models`, :meth:`set_colors`, :meth:`set_speeds` and :meth:`advance`; every
    setter replaces whole arrays, validated, and the next frame uses them.
    """

    def __init__(
        self,
        owner: ResourceOwner,
        layouts: _Layouts,
        mesh: Any,  # a RenderMesh of the renderer (checked by the renderer)
        clips: AnimationClip | Sequence[AnimationClip],
        count: int,
        method: str,
        frames_in_flight: int,
        label: str,
        rest_matrices: ArrayLike | None = None,
        centers: ArrayLike | None = None,
        ddm: object = None,
    ) -> None:
        clips = _check_clips(clips)
        clip = clips[0]
        skinning = methods.get(method)
        if not skinning.crowds:
            crowd = ", ".join(m.name for m in methods.METHODS.values() if m.crowds)
            why = skinning.check_crowds()
            raise InputError(f"crowd method must be one of {crowd}, got {method!r}: {why}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise InputError(f"count must be an int, got {count!r}")
        if not 1 <= count <= MAX_COPIES:
            raise LimitError(f"count must be in [1, {MAX_COPIES}], got {count}")
        try:
            mesh.mesh.check_joints(clip.joint_count)
        except InputError as exc:
            raise InputError(
                f"the clip has {clip.joint_count} joints, too few for mesh {mesh.label!r}: {exc}"
            ) from None
        count = int(count)
        _check_device_limits(owner.device.info, count, clips, skinning.crowd_texels)
        self.mesh = mesh
        #: The crowd's clips; ``clip`` is the first (what every copy plays until set_clips).
        self.clips = clips
        self.clip = clip
        self.count = count
        self.method = method
        #: the method's registry entry
        self.skinning = skinning
        self.label = label
        self.visible = True
        self._serial = next(_SERIALS)
        self.layouts = layouts
        self._init_copies()
        given = skinning.inputs(
            mesh.mesh, clip.joint_count, centers=centers, rest_matrices=rest_matrices, ddm=ddm
        )
        #: what every copy skins with besides its pose (resolved: the mesh's shared aux values
        #: for those not given, the defaults made on the renderer's device), the texels of its
        #: needs' arrays the mesh's (uploaded once, shared with its instances)
        self.inputs = mesh.ensure_inputs(owner, given)
        #: the bones' rest frames of a method that needs them (validated), or None
        self.rest_matrices = self.inputs.rest_matrices
        rest = self.rest_matrices
        #: (K, 2, 3) box of each clip over its frames (Renderer.crowd_bounds measures it once)
        self.clip_boxes: np.ndarray | None = None
        packed = np.concatenate([pack_clip(c, skinning, rest) for c in clips])
        #: The Vulkan objects this crowd made (kept by the owner; dropped by remove_crowd).
        self.objects: list[Any] = []
        self._owner = owner
        self._create_buffers(packed, frames_in_flight)
        self._last_slot: int | None = None

    def _init_copies(self) -> None:
        """Every copy's clip, time, speed, model and colour, and the copies' texels."""
        count, clips = self.count, self.clips
        self._clip_of = np.zeros(count, np.int64)
        self._first_frame = np.cumsum([0] + [c.frame_count for c in clips])[:-1]
        self._durations = np.array([max(c.duration, 1e-30) for c in clips])
        self._total_frames = sum(c.frame_count for c in clips)
        self._bone_bytes = count * self.clip.joint_count * self.skinning.crowd_texels * _TEXEL_BYTES
        self._times = np.zeros(count)
        # advance() is a read-modify-write of the times: this lock keeps concurrent advance /
        # set_times / set_speeds / set_clips calls from losing one another's updates.
        self._state_lock = threading.Lock()
        self._speeds = np.ones(count)
        self._models = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
        self._colors = np.broadcast_to(default_color(self.mesh), (count, 4)).copy()
        self._mirrored = False
        #: (the copies' texels, their generation), replaced together by _update_copies
        self._copies: tuple[np.ndarray, int] = (np.zeros(count, si.CROWD_COPY), 0)
        self._update_copies()

    def _keep(self, obj: Any) -> Any:
        """``obj``, owned by the renderer and listed as this crowd's (remove_crowd drops it)."""
        self.objects.append(obj)
        return self._owner.own(obj)

    def _create_buffers(self, packed: np.ndarray, frames_in_flight: int) -> None:
        """The clip's frames, and per frame in flight the positions, bones and copies
        buffers, the instance block and the sampling and drawing descriptor sets."""
        dev, label = self._owner.device, self.label
        fmt = int(si.CROWD_TEXEL_FORMAT)
        frames = self._keep(
            Buffer(dev, packed.nbytes, _TEXELS, label=f"{label} clip", memory="static")
        )
        frames.write(packed)
        self._frames = frames
        self._frames_view = self._keep(BufferView(dev, frames, fmt, label=f"{label} clip"))
        self._pool = self._keep(
            DescriptorPool(dev, si.CROWD_RENDER_BINDINGS, sets=frames_in_flight, label=label)
        )
        # the sampling and cull passes: the renderer's shared layouts, sets of this crowd's
        kept = _Kept(dev, self._keep)
        layouts = self.layouts
        self._sample = ComputePass(
            kept,
            self._owner.pipelines,
            si.crowd_variant_name("crowd_sample", self.method),
            si.CROWD_SAMPLE_BINDINGS,
            si.CROWD_SAMPLE_PUSH_BYTES,
            sets=frames_in_flight,
            label=f"{label} sample",
            layouts=(layouts.sample_set, layouts.sample),
        )
        self._cull = ComputePass(
            kept,
            self._owner.pipelines,
            si.Variant(si.Kind.CROWD_CULL).name,
            si.CROWD_CULL_BINDINGS,
            si.CROWD_CULL_PUSH_BYTES,
            sets=frames_in_flight,
            label=f"{label} cull",
            layouts=(layouts.cull_set, layouts.cull),
        )
        # each clip's box for the cull pass (2 texels: lo, hi), written by set_cull_boxes
        boxes = self._keep(
            Buffer(dev, 32 * len(self.clips), _TEXELS, label=f"{label} clip boxes", memory="static")
        )
        self._box_buffer = boxes
        self._box_view = self._keep(BufferView(dev, boxes, fmt, label=f"{label} clip boxes"))
        #: per clip the conservative box the cull pass tests ((K, 2, 3)), or None: not culled
        self.cull_boxes: np.ndarray | None = None
        self.cull_measured = False  # the renderer measured cull_boxes (maybe None) once
        # one indirect draw command per material group, its copy count 0 (the cull pass counts)
        groups = self.mesh.groups
        self._commands = np.zeros(max(1, len(groups)), si.DRAW_INDEXED_INDIRECT)
        self._commands["index_count"][: len(groups)] = [count for _, count, _ in groups]
        self._commands["first_index"][: len(groups)] = [first for first, _, _ in groups]
        self._slots = [self._create_slot(f) for f in range(frames_in_flight)]

    def _create_slot(self, f: int) -> dict[str, Any]:
        """Frame-in-flight ``f``'s buffers and descriptor sets."""
        dev, label, keep = self._owner.device, f"{self.label} {{}} {f}", self._keep
        fmt = int(si.CROWD_TEXEL_FORMAT)
        positions = keep(Buffer(dev, 8 * self.count, _STORAGE, label=label.format("positions")))
        bones = keep(
            Buffer(dev, self._bone_bytes, _OUT_TEXELS, label=label.format("bones"), memory="gpu")
        )
        nbytes = self._copies[0].nbytes
        copies = keep(Buffer(dev, nbytes, _TEXELS, label=label.format("copies")))
        bones_view = keep(BufferView(dev, bones, fmt, label=label.format("bones")))
        copies_view = keep(BufferView(dev, copies, fmt, label=label.format("copies")))
        uniform = vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
        block = keep(Buffer(dev, si.INSTANCE_BLOCK.itemsize, uniform, label=label.format("block")))
        # the copies in view (r32ui) and one indirect draw command per material group
        visible = keep(
            Buffer(dev, 4 * self.count, _OUT_TEXELS, label=label.format("visible"), memory="gpu")
        )
        visible_view = keep(
            BufferView(dev, visible, int(si.CROWD_VISIBLE_FORMAT), label=label.format("visible"))
        )
        commands = keep(
            Buffer(
                dev,
                self._commands.nbytes,
                _STORAGE | vk.VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
                label=label.format("draw commands"),
                memory="readback",
            )
        )
        self._sample.write(
            {
                si.CROWD_FRAMES: self._frames_view,
                si.CROWD_POSITIONS: (positions, 0, positions.size),
                si.CROWD_BONES_OUT: bones_view,
            },
            f,
        )
        render_set = self._pool.allocate(self.layouts.render_set)
        b = {x.binding: x for x in si.CROWD_RENDER_BINDINGS}
        texels = self.mesh.texel_views(self.inputs)
        write_descriptors(
            dev,
            render_set,
            [
                TexelWrite(b[si.CROWD_BONES], bones_view),
                BufferWrite(b[si.INSTANCE], block, 0, block.size),
                TexelWrite(b[si.CROWD_COPIES], copies_view),
                TexelWrite(b[si.CROWD_VISIBLE], visible_view),
                *(
                    TexelWrite(b[m.binding], texels[m.name])
                    for m in si.NEED_INPUTS
                    if m.name in texels
                ),
            ],
        )
        self._cull.write(
            {
                si.CROWD_CULL_COPIES: copies_view,
                si.CROWD_CULL_BOXES: self._box_view,
                si.CROWD_CULL_VISIBLE: visible_view,
                si.CROWD_CULL_COMMANDS: (commands, 0, commands.size),
                si.CROWD_CULL_POSITIONS: (positions, 0, positions.size),
            },
            f,
        )
        return {
            "visible": visible,
            "commands": commands,
            "positions": positions,
            "bones": bones,
            "copies": copies,
            "block": block,
            "render_set": render_set,
            "copies_gen": -1,
        }

    def __repr__(self) -> str:
        clips = repr(self.clip) if len(self.clips) == 1 else f"{len(self.clips)} clips"
        return f"Crowd({self.label!r}: {self.count} copies, {self.method}, {clips})"

    @property
    def joint_count(self) -> int:
        """Joints of the clips (all of a crowd's clips have the same), bones per copy."""
        return self.clip.joint_count

    # -- per-copy state ---------------------------------------------------------------------

    def _per_copy(self, value: ArrayLike, what: str, tail: tuple[int, ...]) -> np.ndarray:
        arr = _float_array(value, what)
        want = (self.count, *tail)
        if arr.shape != want:
            raise InputError(f"{what} must have shape {want}, got {arr.shape}")
        _check_finite(arr, what)
        return arr

    @property
    def times(self) -> np.ndarray:
        """Each copy's time into the clip, seconds (a copy; it wraps when played)."""
        return self._times.copy()

    def set_times(self, times: ArrayLike) -> None:
        """Each copy's time into the clip, ``(count,)`` seconds; times wrap by the duration."""
        arr = self._per_copy(times, "times", ())
        with self._state_lock:
            self._times = arr

    def set_speeds(self, speeds: ArrayLike) -> None:
        """Each copy's playback speed for :meth:`advance`, ``(count,)`` (1 = real time)."""
        arr = self._per_copy(speeds, "speeds", ())
        with self._state_lock:
            self._speeds = arr

    def advance(self, dt: float) -> None:
        """Move every copy's time on by ``dt`` seconds times its speed."""
        step = float(dt)
        if not np.isfinite(step):
            raise InputError(f"dt must be finite, got {dt!r}")
        with self._state_lock:
            self._times = np.mod(self._times + step * self._speeds, self._durations[self._clip_of])

    @property
    def clip_indices(self) -> np.ndarray:
        """Which of :attr:`clips` each copy plays (a copy)."""
        return self._clip_of.copy()

    def set_clips(self, indices: ArrayLike) -> None:
        """Which of the crowd's clips each copy plays: ``(count,)`` ints into :attr:`clips`."""
        arr = np.asarray(indices)
        if arr.shape != (self.count,):
            raise InputError(f"clip indices must have shape ({self.count},), got {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise InputError(f"clip indices must be integers, got dtype {arr.dtype}")
        bad = (arr < 0) | (arr >= len(self.clips))
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(
                f"clip index [{i}] is {arr[i]}; the crowd has {len(self.clips)} clip(s)"
            )
        with self._state_lock:
            self._clip_of = arr.astype(np.int64)
            self._update_copies()  # the cull pass reads each copy's clip from its texels

    def set_models(self, models: ArrayLike) -> None:
        """Place the copies: ``(count, 4, 4)`` affine model matrices (mesh to world space)."""
        m = self._per_copy(models, "models", (4, 4))
        bottom = np.abs(m[:, 3, :] - [0.0, 0.0, 0.0, 1.0]).max(axis=1)
        if (bottom > 1e-6).any():
            i = int(np.argmax(bottom > 1e-6))
            raise InputError(f"models[{i}] is not affine: bottom row {m[i, 3].tolist()}")
        det = np.linalg.det(m[:, :3, :3])
        if (np.abs(det) < SINGULAR_DET).any():
            i = int(np.argmax(np.abs(det) < SINGULAR_DET))
            raise InputError(f"models[{i}] is singular (det {det[i]:.3g})")
        with self._state_lock:  # a concurrent set_colors must not pair its colours with old models
            self._models = m
            self._mirrored = bool((det < 0).any())
            self._update_copies()

    @property
    def colors(self) -> np.ndarray:
        """Each copy's linear RGBA colour, ``(count, 4)`` (a copy)."""
        return self._colors.copy()

    def set_colors(self, colors: ArrayLike) -> None:
        """Each copy's linear RGB(A) colour, ``(count, 3)`` or ``(count, 4)``, or one colour
        ``(3,)``/``(4,)`` for all; it multiplies the mesh's material colours."""
        c = _float_array(colors, "colors")
        if c.shape in ((3,), (4,)):
            c = np.broadcast_to(c, (self.count, c.shape[0]))
        if c.shape not in ((self.count, 3), (self.count, 4)):
            raise InputError(f"colors must have shape ({self.count}, 3|4) or (3|4,), got {c.shape}")
        _check_finite(c, "colors")
        if c.shape[1] == 3:
            c = np.hstack([c, np.ones((self.count, 1))])
        with self._state_lock:
            self._colors = np.ascontiguousarray(c)
            self._update_copies()

    def _update_copies(self) -> None:
        copies = np.zeros(self.count, si.CROWD_COPY)
        copies["model"] = self._models.transpose(0, 2, 1)  # column-major
        normal = np.linalg.inv(self._models[:, :3, :3]).transpose(0, 2, 1)  # inverse transpose
        copies["normal_matrix"][:, :, :3] = normal.transpose(0, 2, 1)  # its columns
        copies["normal_matrix"][:, 0, 3] = self._clip_of  # the clip (crowd_cull.comp)
        copies["color"] = self._colors
        # one attribute, replaced whole: a frame reads the copies with their own generation
        self._copies = (copies, self._copies[1] + 1)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World-space box around every copy: its clip's box over the clip's frames
        (:attr:`clip_boxes`, measured on the GPU by the renderer's ``crowd_bounds``) or, until
        measured, the rest mesh's, moved by the copy's model matrix."""
        if self.clip_boxes is None:
            lo, hi = self.mesh.mesh.bounds
            boxes = np.broadcast_to(np.stack([lo, hi]), (self.count, 2, 3))
        else:
            boxes = self.clip_boxes[self._clip_of]
        world = transform_boxes(boxes, self._models)
        return world[:, 0].min(axis=0), world[:, 1].max(axis=0)

    def frame_positions(self) -> np.ndarray:
        """Each copy's position in its clip, in frames (what the GPU samples), float64."""
        times, clip_of = self._times, self._clip_of  # read once: another thread may replace
        if len(self.clips) == 1:
            return self.clip.frame_positions(times)
        out = np.empty(self.count)
        for k, c in enumerate(self.clips):
            mine = clip_of == k
            out[mine] = c.frame_positions(times[mine])
        return out

    def _gpu_positions(self) -> np.ndarray:
        """(count, 2) float32 for the GPU: the first frame to blend (an index into all clips'
        frames, exact in float32) and the weight of the next one."""
        u = self.frame_positions()
        whole = np.floor(u)
        out = np.empty((self.count, 2), np.float32)
        out[:, 0] = whole + self._first_frame[self._clip_of]
        out[:, 1] = u - whole
        return out

    # -- the renderer's hooks ---------------------------------------------------------------

    def state_key(self) -> tuple:
        """What the renderer's recorded command buffers depend on of this crowd."""
        return (self._serial, self.visible, self._mirrored, self.cull_boxes is not None)

    def write_frame(self, slot: int, block: np.ndarray) -> None:
        """Per frame: the copies' frame positions, the lights block, and (once changed) the
        models and colours, into frame slot ``slot``'s mapped buffers."""
        s = self._slots[slot]
        s["positions"].write(self._gpu_positions())
        s["block"].write(block)
        copies, gen = self._copies  # one read: the texels and their generation together
        if s["copies_gen"] != gen:
            s["copies"].write(copies)
            s["copies_gen"] = gen
        s["commands"].write(self._commands)  # copy counts zeroed for the cull pass
        self._last_slot = slot

    def set_cull_boxes(self, boxes: np.ndarray | None) -> None:
        """The conservative box of each clip ((K, 2, 3), mesh space) the cull pass tests copies
        against, or None (the copies are not culled). Call with no frame in flight."""
        if boxes is not None:
            texels = np.zeros((len(self.clips), 2, 4), np.float32)
            texels[:, :, :3] = boxes
            self._box_buffer.write(texels)
        self.cull_boxes = boxes

    def drawn_copies(self, slot: int) -> int:
        """How many copies frame slot ``slot``'s last frame drew (read after its fence)."""
        return int(self._slots[slot]["commands"].read(np.uint32, 2)[1])

    def record_cull(self, cmd: Any, slot: int, view_projection: Any, cull: bool) -> None:
        """Outside the render pass, before sampling: list the copies whose box may be in view
        (every copy when :attr:`cull_boxes` is None) and count them into the slot's draw
        commands, mark the others' frame positions so the sampling pass skips them, then make
        all of it visible to the sampling pass, the indirect draw and the vertex shader."""
        # the list and commands were last read by this slot's previous frame (WAR)
        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | vk.VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
        )
        push = np.zeros(si.CROWD_CULL_PUSH_BYTES // 4, np.float32)
        push[:16] = np.asarray(view_projection, np.float32).T.reshape(-1)
        culling = cull and self.cull_boxes is not None
        push[16:19].view(np.uint32)[:] = (self.count, len(self._commands), int(culling))
        self._cull.begin(cmd)
        pipeline = self._cull.pipeline(((si.LOCAL_SIZE_ID, si.LOCAL_SIZE),))
        # in runs of at most maxComputeWorkGroupCount workgroups (vkCmdDispatchBase)
        self._cull.dispatch(cmd, pipeline, self.count, si.LOCAL_SIZE, push, slot)
        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            vk.VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT
            | vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT
            | vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT  # the sampling pass reads the positions
            | vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_INDIRECT_COMMAND_READ_BIT
            | vk.VK_ACCESS_SHADER_READ_BIT
            | vk.VK_ACCESS_HOST_READ_BIT,  # drawn_copies() reads the counts after the fence
        )

    def record_sample(self, cmd: Any, slot: int) -> None:
        """Outside the render pass: sample the clip into the slot's bones (one invocation a
        copy's joint, in runs of at most maxComputeWorkGroupCount workgroups), then make them
        visible to the vertex shader."""
        # the bones were last read by the vertex shader of this slot's previous frame (WAR)
        memory_barrier(
            cmd, vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        )
        push = np.array([self.count, self.joint_count, self._total_frames], np.uint32)
        self._sample.begin(cmd)
        pipeline = self._sample.pipeline(((si.LOCAL_SIZE_ID, si.LOCAL_SIZE),))
        invocations = self.count * self.joint_count
        self._sample.dispatch(cmd, pipeline, invocations, si.LOCAL_SIZE, push, slot)
        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_SHADER_READ_BIT,
        )

    def record_draw(
        self,
        cmd: Any,
        slot: int,
        draws: Sequence[tuple[int, int, Any, Any]],
        constant: Buffer,
        view_projection: Any,
    ) -> None:
        """Inside the render pass: every copy in one instanced draw per material group;
        ``draws`` are ``(first index, index count, material set, pipeline)``, and ``constant``
        the renderer's row of ones that meshes without UVs or colours read."""
        s = self._slots[slot]
        graphics = vk.VK_PIPELINE_BIND_POINT_GRAPHICS
        layout = self.layouts.render.handle
        rm = self.mesh
        buffers = [b.handle for b in rm.vertex_buffers[: len(self._attributes())]]
        if self.skinning.aux:
            assert rm.aux_buffer is not None  # made by Renderer.add_crowd
            buffers.append(rm.aux_buffer.handle)
        # the UV and colour (or the constant row), read only by the pipelines of the surface
        # variants: the others' bindings end before them
        for m in si.SURFACE_INPUTS:
            buffers.append((rm.surface_buffers.get(m.name) or constant).handle)
        vk.vkCmdBindVertexBuffers(cmd, 0, len(buffers), buffers, [0] * len(buffers))
        vk.vkCmdBindIndexBuffer(cmd, rm.index_buffer.handle, 0, vk.VK_INDEX_TYPE_UINT32)
        vk.vkCmdBindDescriptorSets(cmd, graphics, layout, 0, 1, [s["render_set"]], 0, None)
        push = np.zeros(si.CROWD_RENDER_PUSH_BYTES // 4, np.float32)
        push[:16] = np.asarray(view_projection, np.float32).T.reshape(-1)
        push[16:17].view(np.uint32)[0] = self.joint_count
        push_constants(cmd, layout, si.Stage.VERTEX, push)
        bound = None
        stride = si.DRAW_INDEXED_INDIRECT.itemsize
        for g, (_, _, material_set, pipeline) in enumerate(draws):
            if pipeline != bound:
                vk.vkCmdBindPipeline(cmd, graphics, pipeline)
                bound = pipeline
            vk.vkCmdBindDescriptorSets(
                cmd, graphics, layout, si.MATERIAL_SET, 1, [material_set], 0, None
            )
            # the copies in view: the cull pass counted them into this group's command
            vk.vkCmdDrawIndexedIndirect(cmd, s["commands"].handle, g * stride, 1, stride)

    def draw_pipeline_desc(
        self, material: Material, *, wireframe: bool, cull: bool, samples: int
    ) -> GraphicsPipelineDesc:
        """The draw pipeline of the copies' triangles that use ``material``: as an instance's
        (texture fetch and vertex colours specialized on or off, doubleSided not culled). An
        untextured material on a mesh without colours draws with the variants without UV and
        colour inputs (``surface`` False), as cheap as crowds were before materials."""
        slots = self.slots
        surface = self.mesh.surface_buffers
        textured, colored = material.texture is not None, "colors" in surface
        uses = textured or colored  # else: the factor only, no UV or colour input
        inputs = si.crowd_render_inputs(slots, self.method, uses, self.mesh.vertex_layout)
        spec: tuple[tuple[int, int], ...] = self.mesh.vertex_layout.spec
        if uses:
            spec += (
                (si.CROWD_UVS_ID, int(textured and "uvs" in surface)),
                (si.CROWD_COLORS_ID, int(colored)),
            )
        return GraphicsPipelineDesc(
            vertex_shader=si.crowd_variant_name("crowd_render", self.method, slots, uses),
            fragment_shader=si.crowd_variant_name("crowd_fragment", methods.NONE.name, 4, uses),
            vertex_inputs=tuple((m.location, int(m.vertex_format)) for m in inputs),
            spec=spec,
            # as for instances (the variant without UV and colour ignores their two entries)
            fragment_spec=si.fragment_spec(textured, colored, material.cutoff >= 0.0),
            wireframe=wireframe,
            # one winding for all copies: with a mirrored copy, draw both sides
            cull_back=cull and not self._mirrored and not material.double_sided,
            constant_inputs=tuple(
                m.location for m in si.SURFACE_INPUTS if uses and m.name not in surface
            ),
            samples=samples,
        )

    @property
    def ddm(self) -> Any:
        """The Direct Delta Mush precomputation its copies skin with, or None."""
        return self.inputs.ddm

    @property
    def centers(self) -> Any:
        """The centers of rotation its copies skin about, or None."""
        return self.inputs.centers

    @property
    def slots(self) -> int:
        """The influence slots of its vertex shader variant: the mesh's, or for "ddm" its
        precomputation's (:func:`si.ddm_slots`)."""
        return self.inputs.slots()

    def _attributes(self) -> tuple[si.MeshInput, ...]:
        """The mesh's rows its vertex shader reads as attributes (positions and normals, then
        joints and weights where the method reads them)."""
        return si.attributes(si.mesh_inputs(self.slots, self.method, self.mesh.layout))

    def read_bones(self) -> np.ndarray:
        """The bones the GPU sampled for the last rendered frame, float32: ``(count, J, 2, 4)``
        dual quaternions ("dqs", "cor"), ``(count, J, 3, 4)`` affine rows ("lbs") or
        ``(count, J, 5, 4)``, the dual quaternion then the rows ("blend", "dqs_blender"). Call after
        ``renderer.wait()`` (or ``render_image()``); for tests and debugging. Copies culled that
        frame (out of view) were not sampled: their rows hold older bones."""
        if self._last_slot is None:
            raise InputError("read_bones(): the crowd has not been rendered yet")
        rows = self.skinning.crowd_texels
        n = self.count * self.joint_count * rows * 4
        out = self._slots[self._last_slot]["bones"].read(np.float32, n)
        return out.reshape(self.count, self.joint_count, rows, 4)
