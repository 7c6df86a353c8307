"""Renderer: draws skinned meshes (DQS or LBS per instance) into any render target.

The renderer records frames for a target (:mod:`vkdqs.engine.targets`) without knowing whether it is
an offscreen image or a window's swapchain. It keeps ``frames_in_flight`` (2) sets of per-frame
resources: a fence, an image-available semaphore, a persistently mapped uniform buffer holding
every instance's bones and instance block, and one descriptor set per instance. A frame waits only
on the fence of the frame that last used the same slot (two frames ago), so the CPU writes a
buffer the GPU is no longer reading and never waits on the frame it just submitted.

Command buffers are recorded once and reused while nothing structural changes (instances, the
camera, wireframe, debug view, target size): per frame, the Python work for an instance is two
memory copies into mapped memory.

Materials (:class:`vkdqs.Material`, given to :meth:`Renderer.add_mesh`) are descriptor set 1:
one set per material, made once per renderer, holding its sRGB texture (a 1x1 white one when
untextured) with its sampler, and its factor, UV transform and alpha cutoff. A mesh's index
ranges (``groups``) are drawn in order, each with its material's set and a pipeline for its
sidedness; meshes without UVs or colours read one constant row instead (vertex stride 0).

What it draws, :class:`RenderMesh` (a mesh uploaded) and :class:`Instance` (a posed copy), is
in :mod:`vkdqs.engine.drawables`.

Ownership: meshes and instances belong to the renderer that made them, and the target must be
made on the renderer's Device; anything else is refused with :class:`~vkdqs.OwnershipError`.
Threads: every public method takes the renderer's lock (and the target's, while drawing).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import bones as bone_packing
from .. import methods
from .. import shader_interface as si
from ..camera import Camera
from ..clip import AnimationClip
from ..errors import InputError, ObjectDestroyedError, OwnershipError
from ..geometry import transform_box, transform_boxes
from ..gpu import (
    Buffer,
    CommandBuffer,
    DescriptorPool,
    DescriptorSetLayout,
    Device,
    GraphicsPipelineDesc,
    PipelineCache,
    PipelineLayout,
    QueryPool,
    ResourceOwner,
    batched_uploads,
    push_constants,
    write_descriptors,
)
from ..gpu.calls import vk
from ..gpu.interrupts import deferred_interrupts
from ..material import Material
from ..mesh import SkinnedMesh
from .bounds import FrameStats, SceneBoxes, outside_frustum
from .crowd import Crowd, _Layouts
from .drawables import Instance, RenderMesh, _bone_bucket
from .frames import Frame, Slot, layout_slots
from .limits import resolve_layout
from .materials import MaterialCache, check_groups
from .output_copies import computed_inputs
from .overlay_pass import OverlayPass, check_overlay
from .skinner import Skinner
from .targets import RenderTarget

INSTANCE_BLOCK = si.INSTANCE_BLOCK
_log = logging.getLogger("vkdqs.engine.renderer")


class Renderer(ResourceOwner):
    """Draws skinned mesh instances into ``target`` (an Offscreen- or SwapchainTarget).

    Parameters
    ----------
    device : Device
    target : OffscreenTarget or SwapchainTarget, made on ``device``
    frames_in_flight : int
    clear_color : 4 floats, linear RGBA
    cull : bool
        Back-face culling (meshes wound counter-clockwise seen from outside).
    gpu_timing : bool
        Write a timestamp at the start and the end of every frame's command buffer and report
        the GPU time of the last finished frame as :attr:`gpu_ms`. Raises
        :class:`~vkdqs.CapabilityError` if the device's queue has no timestamps.
    cull_copies : bool
        Leave out crowd copies whose box lies outside the view: a compute pass tests every
        copy on the GPU and the copies in view are drawn with an indirect draw (on by default:
        it costs the CPU nothing).
    cull_instances : bool
        Leave out instances whose box lies outside the view (:mod:`vkdqs.engine.bounds`: per-bone
        boxes where the method has a proved rule, else the exact box from the GPU). Off by
        default: the boxes are computed on the CPU every frame an instance is posed, about 0.1
        ms an instance of 64 bones (numpy), more than most scenes of a few instances save.

    Notes
    -----
    Images are the same with and without either culling; :attr:`stats` counts what the last
    frame drew.
    """

    def __init__(
        self,
        device: Device,
        target: RenderTarget,
        *,
        frames_in_flight: int = 2,
        clear_color: ArrayLike = (0.02, 0.025, 0.035, 1.0),
        cull: bool = True,
        gpu_timing: bool = False,
        cull_copies: bool = True,
        cull_instances: bool = False,
    ) -> None:
        super().__init__(device)
        device.check_owns(target, "the render target")
        if target.closed:
            raise ObjectDestroyedError(f"{type(target).__name__} used after close()")
        if isinstance(frames_in_flight, bool) or frames_in_flight not in range(1, 9):
            raise InputError(f"frames_in_flight must be an int in [1, 8], got {frames_in_flight!r}")
        self.target = target
        self.clear_color = tuple(float(c) for c in clear_color)
        self.cull = cull
        #: leave out crowd copies outside the view (see ``cull_copies``)
        self.cull_copies = cull_copies
        #: leave out instances outside the view (see ``cull_instances``)
        self.cull_instances = cull_instances
        self.camera = Camera()
        self.wireframe = False
        self.debug_bone: int | None = None
        self.instances: list[Instance] = []
        self.meshes: list[RenderMesh] = []
        self.crowds: list[Crowd] = []
        self._crowd_layouts: _Layouts | None = None
        self.frames_rendered = 0
        #: the renderer's pipelines (its passes and crowds take theirs from it)
        self.pipelines = PipelineCache(self)
        self._commands: dict[tuple[int, int], tuple[CommandBuffer, tuple]] = {}
        self._layout_gen = 0
        self._slots: list[Slot] = []
        # Adding or removing instances only marks the per-frame layout stale; the next frame
        # rebuilds it once, however many instances changed.
        self._layout_stale = True
        self._pool: DescriptorPool | None = None
        self._last: Frame | None = None
        self._frame_counter = 0
        self._gpu_ms: float | None = None
        self._queries: QueryPool | None = None
        self._overlay: np.ndarray | None = None
        self._overlay_version = 0
        self._overlay_pass: OverlayPass | None = None
        # boxes: per-bone ones per mesh, and the compute Skinners that measure exact ones
        # (made on first use, closed with the renderer)
        self._boxes = SceneBoxes(device)
        self._culled: tuple[bool, ...] = ()
        self._stats = FrameStats()
        self._copies_counted = (0, 0)
        try:
            self._set_layout = self.own(
                DescriptorSetLayout(device, si.RENDER_BINDINGS, label="render")
            )
            #: materials, textures and samplers on the GPU, each made once
            self.materials = MaterialCache(self)
            self._layout = self.own(
                PipelineLayout(
                    device,
                    [self._set_layout, self.materials.layout],
                    si.RENDER_PUSH_BYTES,
                    si.Stage.VERTEX,
                    label="render",
                )
            )
            self._frames = [Frame(self, i) for i in range(frames_in_flight)]
            if gpu_timing:
                self._queries = self.own(
                    QueryPool(device, 2 * frames_in_flight, label="frame timestamps")
                )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Destroy the renderer's Vulkan objects (not the target's). Safe to call twice."""
        with self._lock:
            self._boxes.close()
            for inst in self.instances:
                if inst.skinner is not None:
                    inst.skinner.close()
            super().close()
            self._commands.clear()
            self.pipelines.clear()

    # -- scene ----------------------------------------------------------------------------

    def add_mesh(
        self,
        mesh: SkinnedMesh,
        *,
        label: str | None = None,
        material: Material | Sequence[Material] | None = None,
        groups: Sequence[tuple[int, int, int]] | None = None,
        layout: str = "exact",
    ) -> RenderMesh:
        """Upload ``mesh`` once; draw it with any number of instances.

        ``layout="lean"`` packs its normals, joints and weights (32 bytes a vertex instead of
        64; see :class:`vkdqs.Skinner`'s ``layout``), for instances and crowds alike.

        ``material`` colours it (a :class:`vkdqs.Material`; None: white, untextured, opaque,
        so the instance's colour shows). Several materials, three.js-style: ``material`` a list
        and ``groups`` a list of ``(first index, index count, material index)`` ranges of
        ``mesh.indices`` (whole triangles), drawn in order; without ``groups`` the whole mesh
        uses ``material`` (or its first entry). A ``"BLEND"`` material draws as MASK with
        cutoff 0.5 (noted once in the log).
        """
        with self._lock:
            self._check_open()
            label = label or f"mesh {len(self.meshes)}"
            materials, ranges = check_groups(mesh, material, groups)
            vertex_layout = None
            if isinstance(mesh, SkinnedMesh):  # else RenderMesh refuses it, naming the type
                vertex_layout = resolve_layout(self.device, layout, mesh, "vertex")
            with batched_uploads(self.device):  # its buffers and textures in one submission
                rm = RenderMesh(self, mesh, label, layout, vertex_layout)
                gpu = [
                    self.materials.material(m, f"{label} material {k}")
                    for k, m in enumerate(materials)
                ]
            rm.groups = [(first, count, gpu[k]) for first, count, k in ranges]
            self.meshes.append(rm)
            return rm

    def _check_mesh(self, mesh: object) -> RenderMesh:
        if isinstance(mesh, SkinnedMesh):
            raise InputError(
                "add_instance() takes the RenderMesh that add_mesh() returns, not a SkinnedMesh: "
                "mesh = renderer.add_mesh(skinned_mesh)"
            )
        if not isinstance(mesh, RenderMesh):
            raise InputError(
                f"mesh must be a RenderMesh from add_mesh(), got {type(mesh).__name__}"
            )
        if mesh.renderer is not self:
            raise OwnershipError(
                f"mesh {mesh.label!r} was uploaded by another Renderer; upload it to this one "
                "with add_mesh() (meshes belong to the renderer that made them)"
            )
        return mesh

    def add_instance(
        self,
        mesh: RenderMesh,
        *,
        bone_count: int,
        method: str = methods.DEFAULT,
        model: ArrayLike | None = None,
        color: ArrayLike = (0.62, 0.34, 0.16, 1.0),
        bones: ArrayLike | None = None,
        centers: ArrayLike | None = None,
        rest_matrices: ArrayLike | None = None,
        ddm: object = None,
        delta_mush: object = None,
        inputs: Mapping[str, object] | None = None,
    ) -> Instance:
        """A new instance of ``mesh`` (rest pose unless ``bones`` is given).

        ``method="cor"`` skins about the mesh's centers of rotation: ``centers`` ((N, 3)), or
        those of an earlier "cor" instance of the mesh, or computed now on the renderer's device
        (:func:`vkdqs.centers_of_rotation`). ``method="dqs_blender"`` needs ``rest_matrices``
        ((B, 4, 4), see :class:`vkdqs.Skinner`) and poses of (B, 4, 4) matrices.

        ``method="ddm"`` (Direct Delta Mush) skins with ``ddm``, its precomputation (or the
        mesh's default one, :func:`vkdqs.methods.ddm.gpu.mesh_ddm`, computed once on the renderer's
        device), drawn by its vertex shader; its Ω and bones are texel buffers of the mesh,
        uploaded once per precomputation and shared by its instances and crowds
        (:class:`~vkdqs.LimitError` past ``maxTexelBufferElements``).

        A method whose shaders run on the compute path only (``"delta_mush"``,
        ``"delta_mush_dqs"``: classic Delta Mush's compute passes and its ``delta_mush`` bind,
        computed by the Skinner when not given, and kept on the mesh) is drawn by "compute, then
        draw"
        (:attr:`vkdqs.methods.SkinningMethod.drawn_by_compute`): the renderer keeps a compute
        :class:`vkdqs.Skinner` for the instance (closed when the instance is removed or the
        renderer closed), skins each new pose with it and draws the posed positions and normals
        with its unskinned pipeline. The posed vertices stay on the GPU: once per pose and
        frame slot the Skinner skins the pose and copies them into that slot's vertex buffers
        in the same submission, reading back only the pose's box.

        ``inputs``: the values of a registered method's other needs, by keyword
        (:func:`vkdqs.methods.needs.register`), as for :class:`vkdqs.Skinner`'s ``inputs``.
        """
        with self._lock:
            self._check_open()
            mesh = self._check_mesh(mesh)
            skinning = methods.get(method)
            if isinstance(bone_count, bool) or not isinstance(bone_count, (int, np.integer)):
                raise InputError(f"bone_count must be an int, got {bone_count!r}")
            mesh.mesh.check_joints(bone_count)
            given = dict(
                centers=centers, rest_matrices=rest_matrices, ddm=ddm, delta_mush=delta_mush
            )
            given = methods.merge_inputs(given, inputs)
            wanted = skinning.inputs(mesh.mesh, bone_count, **given)
            max_bones = self.device.info.max_uniform_buffer_range // si.bone_stride(method)
            if _bone_bucket(bone_count) > max_bones:
                raise InputError(
                    f"bone_count {bone_count} exceeds what a uniform buffer holds on this device "
                    f"(maxUniformBufferRange {self.device.info.max_uniform_buffer_range})"
                )
            identity = np.zeros((bone_count, 2, 4))
            identity[:, 0, 3] = 1.0
            start = bone_packing.PackedPose(methods.DEFAULT, identity.astype(np.float32))
            inst = Instance(mesh, bone_count, method, np.eye(4), np.ones(4), pose=start)
            inst.rest_matrices = wanted.rest_matrices  # type: ignore[assignment]
            inst.set_pose(np.tile(np.eye(4), (bone_count, 1, 1)) if bones is None else bones)
            inst.set_model(np.eye(4) if model is None else model)
            try:
                c = np.asarray(color, dtype=np.float64)
            except (ValueError, TypeError):
                c = np.full(0, np.nan)  # reported below
            if c.shape not in ((3,), (4,)) or not np.isfinite(c).all():
                raise InputError(f"color must have 3 or 4 finite components, got {color!r}")
            inst.color = np.r_[c, 1.0] if c.shape == (3,) else c
            if not inst.computed:
                inst.inputs = mesh.ensure_inputs(self, wanted)  # uploaded once per mesh
            else:
                # "compute, then draw": the Skinner that poses it, made last
                inst.skinner = Skinner(
                    self.device,
                    mesh.mesh,
                    bone_count=bone_count,
                    method=method,
                    layout=mesh.layout,
                    inputs=wanted.keywords(),
                )
            self.instances.append(inst)
            self._layout_stale = True
            return inst

    def remove_instance(self, inst: Instance) -> None:
        """Stop drawing ``inst`` (an instance of this renderer)."""
        with self._lock:
            self._check_open()
            if not any(i is inst for i in self.instances):
                raise InputError(
                    "remove_instance(): that instance is not drawn by this renderer "
                    "(already removed, or made by another renderer)"
                )
            self.instances = [i for i in self.instances if i is not inst]
            self._layout_stale = True
            self._boxes.forget(inst)
            if inst.scalar_buffers or inst.posed_buffers:
                self.device.wait_idle()  # frames in flight may read them
                for buf in inst.scalar_buffers.values():
                    self.release(buf)
                for entry in inst.posed_buffers.values():
                    self.release(entry[0])
                    self.release(entry[1])
                inst.scalar_buffers.clear()
                inst.posed_buffers.clear()
            if inst.skinner is not None:
                inst.skinner.close()

    def add_crowd(
        self,
        mesh: RenderMesh,
        clip: AnimationClip | None = None,
        *,
        count: int,
        method: str = methods.DEFAULT,
        clips: Sequence[AnimationClip] | None = None,
        label: str | None = None,
        centers: ArrayLike | None = None,
        rest_matrices: ArrayLike | None = None,
        ddm: object = None,
    ) -> Crowd:
        """``count`` copies of ``mesh`` playing ``clip`` (a :class:`vkdqs.AnimationClip`), or
        each one of ``clips`` (chosen per copy with ``crowd.set_clips``), sampled on the GPU and
        drawn in one instanced call (one per material group); see :mod:`vkdqs.engine.crowd`. The
        copies wear the mesh's materials (those given to :meth:`add_mesh`), each copy's colour
        (``crowd.set_colors``) multiplying in, as an instance's does.

        ``method`` is "dqs", "lbs", "blend" (needs the mesh's ``dqs_blend``), "cor",
        "dqs_blender" or "ddm" (Direct Delta Mush: ``ddm``, its precomputation, or the mesh's
        default one, as for :meth:`add_instance`; rigid clips). "cor" skins about the mesh's
        centers of rotation: ``centers`` ((N, 3)), or those of an earlier "cor" instance or
        crowd of the mesh, or computed now on the renderer's device, as for
        :meth:`add_instance`. "dqs_blender" needs ``rest_matrices``
        ((J, 4, 4), as for :meth:`add_instance`)."""
        with self._lock:
            self._check_open()
            mesh = self._check_mesh(mesh)
            if (clip is None) == (clips is None):
                raise InputError("add_crowd() takes a clip or clips=[...], not both or neither")
            if self._crowd_layouts is None:
                self._crowd_layouts = _Layouts(self, self.materials.layout)
            crowd = Crowd(
                self,
                self._crowd_layouts,
                mesh,
                clip if clips is None else clips,
                count,
                method,
                len(self._frames),
                label or f"crowd {len(self.crowds)}",
                rest_matrices,
                centers,
                ddm,
            )
            self.crowds.append(crowd)
            return crowd

    def remove_crowd(self, crowd: Crowd) -> None:
        """Stop drawing ``crowd`` (a crowd of this renderer)."""
        with self._lock:
            self._check_open()
            if not any(c is crowd for c in self.crowds):
                raise InputError("remove_crowd(): that crowd is not drawn by this renderer")
            self.crowds = [c for c in self.crowds if c is not crowd]
            self.device.wait_idle()  # its buffers may still be read by a frame in flight
            for obj in reversed(crowd.objects):
                self.release(obj)
            crowd.objects.clear()

    def instance_bounds(self, inst: Instance) -> np.ndarray:
        """``inst.bounds``: its world-space (2, 3) box as posed now, exact in mesh space from
        the GPU (see :attr:`Instance.bounds`)."""
        with self._lock:
            self._check_open()
            if not any(i is inst for i in self.instances):
                raise InputError("instance_bounds(): that instance is not drawn by this renderer")
            box = self._boxes.exact(inst)
        return transform_box(box, inst.model)

    def posed_boxes(
        self, inst: Instance, bones: ArrayLike, morph_weights: ArrayLike | None = None
    ) -> np.ndarray:
        """``(P, 2, 3)`` exact boxes (min, max) of ``inst``'s mesh in mesh space, posed by each
        of ``P`` poses ``bones`` (with ``morph_weights``, ``(P, M)``) by the instance's method:
        one bounds-only compute dispatch (:meth:`Skinner.bounds_many`), nothing drawn or
        changed. E.g. the box of a clip: the union over its frames."""
        with self._lock:
            self._check_open()
            if not any(i is inst for i in self.instances):
                raise InputError("posed_boxes(): that instance is not drawn by this renderer")
            if not inst.skinning.skins:
                raise InputError(
                    f"posed_boxes(): the instance is not skinned (method {inst.method!r})"
                )
            skinner = inst.skinner or self._boxes.skinner(inst.mesh, inst.inputs)
            return skinner.bounds_many(bones, morph_weights).astype(np.float64)

    def crowd_bounds(self, crowd: Crowd) -> tuple[np.ndarray, np.ndarray]:
        """World-space box around every copy of ``crowd`` over its clip: each clip's box is the
        union of the exact boxes of its frames (measured once on the GPU, bounds only), moved
        by each copy's model matrix. Copies between two frames blend their bones, which may
        reach slightly past both frames' boxes (DQS arcs; LBS stays within them)."""
        with self._lock:
            self._check_open()
            if not any(c is crowd for c in self.crowds):
                raise InputError("crowd_bounds(): that crowd is not drawn by this renderer")
            self._boxes.clip_boxes(crowd)
        return crowd.bounds()

    def _cull(self) -> None:
        """Decide which visible instances this frame leaves out (their box outside the view),
        and count it in :attr:`stats`."""
        shown = [inst for inst in self.instances if inst.visible]
        kinds: dict[str, int] = {}
        culled = [False] * len(self.instances)
        if self.cull_instances and shown:
            boxes, kind_list = self._boxes.boxes_of(shown)
            for kind in kind_list:
                kinds[kind] = kinds.get(kind, 0) + 1
            world = transform_boxes(boxes, np.stack([inst.model for inst in shown]))
            w, h = self.target.extent
            out = iter(outside_frustum(world, self.camera.view_projection(w / h)))
            culled = [inst.visible and bool(next(out)) for inst in self.instances]
        self._culled = tuple(culled)
        self._stats = FrameStats(
            instances_drawn=len(shown) - sum(culled),
            instances_culled=sum(culled),
            boxes=kinds,
        )

    def _prepare_crowds(self) -> None:
        """With culling on, give every crowd its clips' conservative boxes once (None where no
        box rule bounds its method's blends: those copies are always drawn)."""
        if not self.cull_copies:
            return
        for crowd in self.crowds:
            if crowd.visible and not crowd.cull_measured:
                boxes = self._boxes.cull_boxes(crowd)
                self.device.wait_idle()  # frames in flight may read the old boxes
                crowd.set_cull_boxes(boxes)
                crowd.cull_measured = True

    def _count_copies(self, frame: Frame) -> None:
        """Take the crowd copies ``frame`` drew (its fence has signalled) into :attr:`stats`."""
        if not frame.crowds_drawn:
            return
        drawn = sum(crowd.drawn_copies(frame.index) for crowd, _ in frame.crowds_drawn)
        total = sum(count for _, count in frame.crowds_drawn)
        frame.crowds_drawn = []
        self._copies_counted = (drawn, total - drawn)

    @property
    def stats(self) -> FrameStats:
        """What the last frame drew: instances drawn and culled and the kinds of box the culling
        used (:class:`vkdqs.engine.bounds.FrameStats`), and the crowd copies drawn and culled by the
        last frame the GPU finished (the GPU counts them: after ``wait()`` or
        ``render_image()``, the last frame's)."""
        drawn, culled = self._copies_counted
        return dataclasses.replace(self._stats, copies_drawn=drawn, copies_culled=culled)

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World-space box around every instance as posed now (exact from the GPU, see
        :attr:`Instance.bounds`) and every crowd copy (:meth:`Crowd.bounds`)."""
        if not self.instances and not self.crowds:
            raise InputError("the scene is empty: add_instance() before framing it")
        corners = [np.array(self.crowd_bounds(c)) for c in self.crowds]
        corners += [self.instance_bounds(inst) for inst in self.instances]
        pts = np.vstack(corners)
        return pts.min(axis=0), pts.max(axis=0)

    def frame_scene(self) -> None:
        """Point the camera at all instances."""
        w, h = self.target.extent
        self.camera.frame(*self.scene_bounds(), aspect=(w / h) if h else 1.0)

    @property
    def overlay(self) -> np.ndarray | None:
        """The ``(H, W, 4)`` uint8 image blended over every frame (:meth:`set_overlay`), or
        None."""
        return self._overlay

    def set_overlay(self, image: ArrayLike | None) -> None:
        """Blend ``image``, an ``(H, W, 4)`` uint8 RGBA image (sRGB colour, straight alpha,
        row 0 at the top; :func:`vkdqs.app.overlay.compose` makes one), over every frame from now
        on, pixel for pixel from the top-left corner; None removes it."""
        with self._lock:
            self._check_open()
            if image is None:
                self._overlay = None
                return
            self._overlay = check_overlay(image, self.device.info.max_texel_buffer_elements)
            self._overlay_version += 1
            if self._overlay_pass is None:
                self._overlay_pass = OverlayPass(self, len(self._frames))

    # -- per-frame resources -------------------------------------------------------------

    def _rebuild_frames(self) -> None:
        """Lay out every instance's bones and block in each frame's uniform buffer, with a
        descriptor set per instance per frame."""
        dev = self.device
        dev.wait_idle()  # the old buffers and sets may still be in use
        self._slots, size = layout_slots(
            self.instances, dev.info.min_uniform_buffer_offset_alignment
        )
        if self._pool is not None:
            self.release(self._pool)
        count = max(1, len(self.instances)) * len(self._frames)
        self._pool = self.own(DescriptorPool(dev, si.RENDER_BINDINGS, sets=count, label="render"))
        for frame in self._frames:
            if frame.uniforms is not None:
                self.release(frame.uniforms)
            frame.uniforms = self.own(
                Buffer(
                    dev,
                    max(size, 256),
                    vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                    label=f"frame {frame.index} uniforms",
                )
            )
            frame.sets = [self._pool.allocate(self._set_layout) for _ in self.instances]
            for ds, slot, inst in zip(frame.sets, self._slots, self.instances, strict=True):
                texels = inst.mesh.texel_views(inst.inputs)
                write_descriptors(
                    dev, ds, slot.writes(frame.uniforms, inst.mesh.morph_view, texels)
                )
        self._layout_gen += 1
        self._layout_stale = False

    def _pipeline(self, inst: Instance, material: Material) -> Any:
        variant = inst.variant
        slots = inst.slots
        # a computed instance's posed rows are float32 (its Skinner applied the morphs)
        layout = si.EXACT if inst.computed else inst.mesh.vertex_layout
        morph_spec = 0 if inst.computed else inst.morph_spec
        wire = self.wireframe and self.device.info.fill_mode_non_solid
        surface = inst.mesh.surface_buffers
        textured, colored = material.texture is not None, "colors" in surface
        # the shaders with UV, colour and scalar inputs only where they are read (lavapipe
        # interpolates every declared fragment input); the vertex buffers bound for them are
        # past the plain variants' inputs, so one binding serves both
        uses = textured or colored or inst.scalar is not None
        inputs = si.render_inputs(slots, variant, uses, layout)
        vertex_inputs = tuple((m.location, int(m.vertex_format)) for m in inputs)
        constant = tuple(m.location for m in si.SURFACE_INPUTS if uses and m.name not in surface)
        strides: tuple[tuple[int, int], ...] = ()
        if inst.computed:
            # its Skinner's (N, 3) float32 positions and normals, as copied (stride 12); the
            # unread joints and weights inputs read one row (stride 0)
            vertex_inputs, constant, strides = computed_inputs(vertex_inputs, constant)
        desc = GraphicsPipelineDesc(
            vertex_shader=si.variant_name("render", variant, slots, uses),
            fragment_shader=si.variant_name("fragment", methods.NONE.name, surface=uses),
            vertex_inputs=vertex_inputs,
            spec=(
                (si.MAX_BONES_ID, _bone_bucket(inst.bone_count)),
                (si.MORPH_TARGETS_ID, morph_spec),
                *layout.spec,
            ),
            fragment_spec=si.fragment_spec(textured, colored, material.cutoff >= 0.0),
            wireframe=wire,
            cull_back=self.cull and not material.double_sided,
            constant_inputs=constant,
            strides=strides,
            # a model matrix with det < 0 mirrors the mesh and flips its winding (as glTF
            # requires renderers to handle)
            clockwise=inst.mirrored,
            samples=self.target.samples,
        )
        return self.pipelines.graphics(desc, self._layout, self.target.render_pass).handle

    # -- frames ---------------------------------------------------------------------------

    def _lights(self) -> tuple[np.ndarray, np.ndarray]:
        """Key light from above-left-behind the camera (it follows the camera), a dimmer fill."""
        right, up, forward = self.camera.basis()
        key = 0.5 * forward - 0.8 * up + 0.9 * right
        fill = 0.6 * forward + 0.2 * up - 1.0 * right
        return key / np.linalg.norm(key), fill / np.linalg.norm(fill)

    def _lit_blocks(self, count: int) -> np.ndarray:
        """``count`` instance blocks holding this frame's lights, camera and debug view."""
        key, fill = self._lights()
        blocks = np.zeros(count, INSTANCE_BLOCK)
        blocks["key_light"] = np.r_[key, 1.0]
        blocks["fill_light"] = np.r_[fill, 0.25]
        blocks["ambient"] = (0.07, 0.075, 0.09, 0.3)
        blocks["camera_position"] = np.r_[self.camera.position, 1.0]
        debug = (0, -1, 0, 0) if self.debug_bone is None else (1, self.debug_bone, 0, 0)
        blocks["debug"] = debug
        return blocks

    def _instance_blocks(self) -> np.ndarray:
        """Every instance's block: model and normal matrices (column-major), colour, lights."""
        blocks = self._lit_blocks(len(self.instances))
        if not self.instances:
            return blocks
        models = np.stack([inst.model for inst in self.instances])
        normal = np.zeros_like(models)
        normal[:, :3, :3] = np.swapaxes(np.linalg.inv(models[:, :3, :3]), 1, 2)
        normal[:, 3, 3] = 1.0
        blocks["model"] = np.swapaxes(models, 1, 2)  # column-major, as GLSL reads it
        blocks["normal_matrix"] = np.swapaxes(normal, 1, 2)
        blocks["base_color"] = np.stack([inst.color for inst in self.instances])
        if self.debug_bone is not None:
            # the heat map shows skinned instances only; rigid ("none") parts stay shaded, and
            # so do instances drawn by "compute, then draw" (their unskinned shaders) and those
            # of a method without joints and weights to show (Direct Delta Mush)
            rigid = np.array(
                [inst.rigid or not inst.influences for inst in self.instances],
                dtype=bool,
            )
            blocks["debug"][rigid] = (0, -1, 0, 0)
        scalar = np.array([inst.scalar is not None for inst in self.instances], dtype=bool)
        if self.debug_bone is not None:  # the bone heat map (B) takes over skinned instances
            scalar &= rigid
        blocks["debug"][scalar] = (2, -1, 0, 0)
        return blocks

    def _crowd_block(self) -> np.ndarray:
        """The instance block crowds read (lights, camera, debug; model and colour unused)."""
        return self._lit_blocks(1)

    def _write_uniforms(self, frame: Frame) -> None:
        blocks = self._instance_blocks()
        uniforms = frame.uniforms
        assert uniforms is not None
        for i, (inst, slot) in enumerate(zip(self.instances, self._slots, strict=True)):
            pose, morph = inst.pose, inst.morph  # read once: another thread may replace them
            uniforms.write(pose.bones, slot.bones_at)
            if inst.mesh.mesh.morph_target_count:  # without targets the block is never read
                uniforms.write(morph, slot.morph_at)
            if pose.scales is not None:
                uniforms.write(pose.scales, slot.scales_at)
            uniforms.write(blocks[i : i + 1], slot.block_at)
            if inst.computed and inst.visible:
                self._write_posed(inst, frame)
            rows = inst.scalar
            if rows is not None:
                buf = inst.scalar_buffers.get(frame.index)
                if buf is None:
                    usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
                    label = f"{inst.mesh.label} scalar {frame.index}"
                    buf = self.own(Buffer(self.device, rows.nbytes, usage, label=label))
                    inst.scalar_buffers[frame.index] = buf
                buf.write(rows)

    def _write_posed(self, inst: Instance, frame: Frame) -> None:
        """Skin a computed instance's pose on the GPU straight into the vertex buffers of
        ``frame`` (whose fence has signalled), unless they hold that pose already: once per
        pose and frame slot, nothing read back but its box (:meth:`Skinner.skin_into`)."""
        entry = inst.posed_buffers.get(frame.index)
        if entry is None:
            usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            label = f"{inst.mesh.label} {inst.method} posed"
            # (N, 3) float32 rows; at least one 16-byte row for the stride-0 unread inputs
            size = max(12 * inst.mesh.mesh.vertex_count, si.MESH_ROW_BYTES)
            entry = [
                self.own(
                    Buffer(self.device, size, usage, label=f"{label} positions", memory="gpu")
                ),
                self.own(Buffer(self.device, size, usage, label=f"{label} normals", memory="gpu")),
                None,
            ]
            inst.posed_buffers[frame.index] = entry
        posed = inst.posed
        if posed is not None and entry[2] is not posed[0]:
            entry[2] = inst.skin_into(entry[0], entry[1])

    def _state_key(self) -> tuple:
        w, h = self.target.extent
        vp = self.camera.view_projection(w / h)
        return (
            self._layout_gen,
            self.wireframe,
            self.target.extent,
            vp.tobytes(),
            tuple(
                (i.visible, i.variant, i.mirrored, i.scalar is not None, i.morph_spec)
                for i in self.instances
            ),
            self._culled,
            None if self._overlay is None else (self._overlay.shape, self._overlay_pass.generation),
            self.target.state_key(),
            tuple(c.state_key() for c in self.crowds),
            self.cull_copies,
        )

    def _begin_pass(self, cmd: Any, image: int) -> None:
        w, h = self.target.extent
        clear = [
            vk.VkClearValue(color=vk.VkClearColorValue(float32=list(self.clear_color))),
            vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0)),
        ]
        if self.target.samples > 1:
            clear.append(clear[0])
        begin = vk.VkRenderPassBeginInfo(
            renderPass=self.target.render_pass.handle,
            framebuffer=self.target.framebuffer(image),
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(w, h)),
            clearValueCount=len(clear),
            pClearValues=clear,
        )
        vk.vkCmdBeginRenderPass(cmd, begin, vk.VK_SUBPASS_CONTENTS_INLINE)
        vk.vkCmdSetViewport(cmd, 0, 1, [vk.VkViewport(0, 0, w, h, 0.0, 1.0)])
        vk.vkCmdSetScissor(cmd, 0, 1, [vk.VkRect2D(vk.VkOffset2D(0, 0), vk.VkExtent2D(w, h))])
        push = np.ascontiguousarray(self.camera.view_projection(w / h).T, dtype=np.float32)
        push_constants(cmd, self._layout.handle, si.Stage.VERTEX, push)

    def _record(self, cmd_buffer: CommandBuffer, frame: Frame, image: int) -> None:
        cmd = cmd_buffer.begin()
        if self._queries is not None:
            # Reset, then stamp before everything (crowd compute passes included) ...
            self._queries.record_reset(cmd, 2 * frame.index, 2)
            self._queries.record_timestamp(
                cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 2 * frame.index
            )
        crowds = [c for c in self.crowds if c.visible]
        w, h = self.target.extent
        vp = self.camera.view_projection(w / h)
        for crowd in crowds:  # culled first: the sampling pass skips the culled copies
            crowd.record_cull(cmd, frame.index, vp, self.cull_copies)
            crowd.record_sample(cmd, frame.index)
        self._begin_pass(cmd, image)
        graphics = vk.VK_PIPELINE_BIND_POINT_GRAPHICS
        bound = None
        culled = self._culled or (False,) * len(self.instances)
        for inst, ds, out in zip(self.instances, frame.sets, culled, strict=True):
            if not inst.visible or out:
                continue
            rm = inst.mesh
            buffers = [b.handle for b in rm.vertex_buffers]
            if inst.computed:
                # its posed rows; the unread joints and weights inputs read its first row
                positions, normals, _ = inst.posed_buffers[frame.index]
                buffers = [positions.handle, normals.handle, positions.handle, positions.handle]
            elif inst.rigid:
                buffers = buffers[: len(si.mesh_inputs(4, inst.variant))]
            elif not inst.influences:  # positions and normals: its data is read as texels
                buffers = buffers[: len(si.attributes(si.mesh_inputs(inst.slots, inst.variant)))]
            elif si.has_aux(inst.variant):
                assert rm.aux_buffer is not None
                buffers.append(rm.aux_buffer.handle)
            for m in si.SURFACE_INPUTS:
                buf = rm.surface_buffers.get(m.name) or self.materials.constant_row()
                buffers.append(buf.handle)
            # location 9: the instance's scalar, or any float rows (unread: debug mode off)
            scalar = inst.scalar_buffers.get(frame.index) if inst.scalar is not None else None
            buffers.append((scalar or rm.vertex_buffers[0]).handle)
            vk.vkCmdBindVertexBuffers(cmd, 0, len(buffers), buffers, [0] * len(buffers))
            vk.vkCmdBindIndexBuffer(cmd, rm.index_buffer.handle, 0, vk.VK_INDEX_TYPE_UINT32)
            vk.vkCmdBindDescriptorSets(cmd, graphics, self._layout.handle, 0, 1, [ds], 0, None)
            for first, count, gm in rm.groups:
                pipe = self._pipeline(inst, gm.material)
                if pipe != bound:
                    vk.vkCmdBindPipeline(cmd, graphics, pipe)
                    bound = pipe
                vk.vkCmdBindDescriptorSets(
                    cmd, graphics, self._layout.handle, si.MATERIAL_SET, 1, [gm.set], 0, None
                )
                vk.vkCmdDrawIndexed(cmd, count, 1, first, 0, 0)
        w, h = self.target.extent
        wire = self.wireframe and self.device.info.fill_mode_non_solid
        for crowd in crowds:
            draws = []
            for first, count, gm in crowd.mesh.groups:  # the mesh's materials, as instances
                desc = crowd.draw_pipeline_desc(
                    gm.material, wireframe=wire, cull=self.cull, samples=self.target.samples
                )
                layout = crowd.layouts.render
                pipe = self.pipelines.graphics(desc, layout, self.target.render_pass).handle
                draws.append((first, count, gm.set, pipe))
            vp = self.camera.view_projection(w / h)
            crowd.record_draw(cmd, frame.index, draws, self.materials.constant_row(), vp)
        if self._overlay is not None and self._overlay_pass is not None:
            oh, ow = self._overlay.shape[:2]
            self._overlay_pass.record(cmd, frame.index, (ow, oh), self.target.samples)
        vk.vkCmdEndRenderPass(cmd)
        self.target.record_after_pass(cmd, image)
        if self._queries is not None:
            # ... and after the target's copy-out: the span is all the GPU work of a frame.
            self._queries.record_timestamp(
                cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 2 * frame.index + 1
            )
        cmd_buffer.end()

    def _commands_for(self, frame: Frame, image: int) -> CommandBuffer:
        """The frame's command buffer for ``image``, re-recorded if the scene changed."""
        key = self._state_key()
        entry = self._commands.get((frame.index, image))
        if entry is not None and entry[1] == key:
            return entry[0]
        if entry is None:
            label = f"frame {frame.index} image {image}"
            cmd_buffer = self.own(CommandBuffer(self.device, label=label, fence=False))
        else:
            cmd_buffer = entry[0]
        self._record(cmd_buffer, frame, image)
        self._commands[(frame.index, image)] = (cmd_buffer, key)
        return cmd_buffer

    def _submit(self, cmd_buffer: CommandBuffer, frame: Frame, image: int) -> None:
        waits = self.target.wait_semaphores(frame)
        signals = self.target.signal_semaphores(image)
        submit = vk.VkSubmitInfo(
            waitSemaphoreCount=len(waits),
            pWaitSemaphores=waits or None,
            pWaitDstStageMask=[vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT] * len(waits)
            or None,
            commandBufferCount=1,
            pCommandBuffers=[cmd_buffer.handle],
            signalSemaphoreCount=len(signals),
            pSignalSemaphores=signals or None,
        )
        frame.fence.reset()
        self.device.submit([submit], frame.fence.handle, f"submitting frame {self.frames_rendered}")
        frame.timing_pending = self._queries is not None

    def render(self) -> int | None:
        """Draw one frame into the target. Returns the frame slot used, or None when the target
        could not take a frame (a minimized window, or a swapchain being re-created)."""
        # Ctrl-C lands before or after a frame, never between its fence reset and its submit
        # or its acquire and present (deferred_interrupts): the renderer stays usable.
        with self._lock, self.target.lock, deferred_interrupts():
            self._check_open()
            if self.target.closed:
                raise ObjectDestroyedError(f"the renderer's {type(self.target).__name__} is closed")
            if self._layout_stale:
                self._rebuild_frames()
            frame = self._frames[self._frame_counter % len(self._frames)]
            frame.fence.wait(f"frame slot {frame.index}")
            self._read_timing(frame)
            self._count_copies(frame)
            image = self.target.acquire(frame)
            if image is None:
                return None
            other = self.target.frame_using(image, frame)
            if other is not None:
                other.fence.wait(f"frame slot {other.index}")  # type: ignore[attr-defined]
            self._write_uniforms(frame)
            self._cull()
            self._prepare_crowds()
            if self._overlay is not None and self._overlay_pass is not None:
                self._overlay_pass.write(frame.index, self._overlay, self._overlay_version)
            if self.crowds:
                block = self._crowd_block()
                for crowd in self.crowds:
                    crowd.write_frame(frame.index, block)
            self._submit(self._commands_for(frame, image), frame, image)
            frame.crowds_drawn = [(c, c.count) for c in self.crowds if c.visible]
            self.target.present(frame, image)
            self._frame_counter += 1
            self.frames_rendered += 1
            self._last = frame
            return frame.index

    def wait(self) -> None:
        """Block until the last submitted frame has finished on the GPU (no-op before the
        first frame)."""
        with self._lock:
            self._check_open()
            if self._last is not None:
                self._last.fence.wait("the last frame")
                self._read_timing(self._last)
                self._count_copies(self._last)
                # the queue finished every earlier frame too; theirs are older than this one
                for frame in self._frames:
                    frame.timing_pending = False

    def _read_timing(self, frame: Frame) -> None:
        """Take ``frame``'s GPU time into :attr:`gpu_ms`; its fence has signalled."""
        if self._queries is None or not frame.timing_pending:
            return
        frame.timing_pending = False
        self._gpu_ms = self._queries.elapsed_ms(2 * frame.index, 2 * frame.index + 1)

    @property
    def gpu_timing(self) -> bool:
        """Whether frames carry timestamps (``Renderer(..., gpu_timing=True)``)."""
        return self._queries is not None

    @property
    def gpu_ms(self) -> float | None:
        """GPU milliseconds of the most recently finished frame, from its first command to
        its last (crowd sampling, the render pass, the target's copy-out); None without
        ``gpu_timing`` or before a frame is known to have finished (after the next
        :meth:`render` of its slot, or :meth:`wait`)."""
        return self._gpu_ms

    def render_image(self) -> np.ndarray:
        """Draw one frame into an offscreen target and return it as ``(H, W, 4)`` uint8 RGBA."""
        with self._lock:
            if not self.target.readable:
                raise InputError("render_image() needs an OffscreenTarget")
            slot = self.render()
            assert slot is not None
            self.wait()
            return self.target.read(slot)
