"""Skinner: skins one mesh on the GPU and returns the skinned vertices as numpy arrays.

Two paths run the same ``skin_vertex()`` from ``shaders/glsl/include/skin.glsl``:

* ``path="compute"`` (default, fastest): ``skin.comp`` reads the mesh through uniform texel
  buffers and writes through a storage texel buffer (on lavapipe texel buffers are an order of
  magnitude faster than storage buffers);
* ``path="vertex"``: the rendering vertex shader's readback variant, drawn as points with
  rasterizer discard, writes each vertex to a storage buffer at ``gl_VertexIndex``. It is what
  the renderer draws with, so tests of this path test the rendering shader itself.

Meshes with more than 4 influences on some vertex use the 8-influence shader variants. The
method is an entry of the registry (:mod:`vkdqs.methods`), which says its bone blocks, how a pose
is packed and what else it needs. With ``method="dqs"``, a pose whose matrices carry scale or
shear switches to two-phase DQS (the ``dqs_scale`` variants) for that call, with one log line
the first time.

The mesh is uploaded once. Each call writes the pose(s) into a persistently mapped uniform
buffer, submits a command buffer recorded once per (variant, batch size), waits on its fence
and copies the results out. ``skin_many`` runs P poses per submission with dynamic
uniform-buffer offsets, in chunks whose buffers stay under :attr:`Skinner.max_batch_bytes`.

Threads: calls on one Skinner take turns (a lock); Skinners on one Device run concurrently and
submit through the Device's queue lock.

Interrupts: Ctrl-C during ``skin_many`` takes effect between chunks
(:func:`vkdqs.gpu.interrupts.deferred_interrupts`), never between a submission and its wait or
while the Skinner's buffers, descriptor sets and recorded command buffer change: the
``KeyboardInterrupt`` leaves the Skinner usable, and its next call correct.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import bones as bone_packing
from .. import methods
from .. import shader_interface as si
from ..errors import InputError, LimitError
from ..gpu import (
    Buffer,
    BufferView,
    BufferWrite,
    CommandBuffer,
    Device,
    Framebuffer,
    PipelineCache,
    RenderPass,
    RenderPassDesc,
    ResourceOwner,
    TexelWrite,
    batched_uploads,
    memory_barrier,
    texel_buffer,
    write_descriptors,
)
from ..gpu.calls import align, vk
from ..gpu.interrupts import deferred_interrupts
from ..mesh import SkinnedMesh
from .bounds_pass import BoundsPass
from .chunks import DispatchSets, chunk_views, vertex_chunks
from .limits import check_args, check_call_size, check_limits, physical_memory, resolve_layout
from .morphs import morph_blocks, morph_packing, morph_workgroup_runs
from .output_copies import OutputCopies
from .passes import PassTarget, PoseMotion, SkinPass, pose_motion
from .programs import SkinProgram, record_draws
from .recording import SkinRecorder

if TYPE_CHECKING:
    from ..methods.ddm.reference import DirectDeltaMush
    from ..methods.delta_mush.reference import DeltaMush

#: (first workgroup, count) runs of a dispatch
Runs = tuple[tuple[int, int], ...]

log = logging.getLogger("vkdqs")

PATHS = ("compute", "vertex")
LOCAL_SIZE = si.LOCAL_SIZE
#: Default bound on the bone and output buffers of one ``skin_many`` submission.
MAX_BATCH_BYTES = 64 * 2**20


class Skinner(ResourceOwner):
    """Skins ``mesh`` on ``device`` with DQS or LBS; a context manager.

    Parameters
    ----------
    device : Device
    mesh : SkinnedMesh
        Up to 8 influences per vertex.
    bone_count : int
        Bones in a pose. Every joint index the mesh uses must be below it.
    method : str
        A method of the registry (:data:`vkdqs.methods.METHODS`). ``"dqs"`` uses two-phase DQS
        for poses with scale/shear (see ``allow_scale``); ``"dqs_scale"`` always does (for a
        rigid pose it equals plain DQS up to rounding). ``"lbs"``: linear blend skinning.
        ``"blend"`` computes ``(1 - b) LBS + b DQS`` per vertex with ``b = mesh.dqs_blend``
        (the mesh must have it); it takes rigid ``(B, 4, 4)`` matrices or ``(B, 2, 4)`` DQs.
        ``"cor"``: optimized centers of rotation, the same rigid poses as ``"blend"``.
        ``"dqs_blender"``: Blender's "Preserve Volume" exactly (needs ``rest_matrices``); takes
        ``(B, 4, 4)`` matrices with any scale, shear or mirroring. ``"ddm"``: Direct Delta Mush
        (needs ``ddm``). ``"delta_mush"``: classic Delta Mush, LBS then compute passes that
        smooth the skinned mesh and add its rest detail back (needs ``delta_mush``).
    path : {"compute", "vertex"}
    allow_scale : bool
        With DQS, accept matrices with scale/shear (two-phase DQS). False rejects them, naming
        the bone. Reflections are always rejected.
    rest_matrices : array_like, [B, 4, 4], optional
        For ``"dqs_blender"``: each bone's rest (bind) frame in the space the skinning matrices
        map from (the inverse of the glTF inverse bind matrix; Blender's ``bone.matrix_local``).
    centers : array_like, [N, 3], optional
        For ``"cor"``: each vertex's center of rotation; computed on this device with
        :func:`vkdqs.centers_of_rotation` (the mesh needs triangles) when not given.
    ddm : DirectDeltaMush, optional
        For ``"ddm"`` (Direct Delta Mush): the mesh's precomputation,
        :func:`vkdqs.direct_delta_mush` (at most 8 bones a vertex); computed on this device
        with the default parameters (the mesh needs triangles) and kept on the mesh
        (:func:`vkdqs.methods.ddm.gpu.mesh_ddm`) when not given. Poses are rigid
        ``(B, 4, 4)`` / ``(B, 3, 4)`` matrices or ``(B, 2, 4)`` DQs. Morph targets move each
        vertex before the skinning, about the rest mesh's smoothing (``Ω`` is not recomputed).
    delta_mush : DeltaMush, optional
        For ``"delta_mush"`` (classic Delta Mush, compute path only): the bind of the mesh,
        :func:`vkdqs.methods.delta_mush.reference.delta_mush_bind` (its ``iterations`` and
        ``step``); bound with the defaults (10 steps of 0.5; the mesh needs triangles) and kept on
        the mesh (:func:`vkdqs.methods.delta_mush.reference.mesh_delta_mush`) when not given. Poses
        are LBS's. Morph targets move the vertices before the skinning, the mush smooths the result.
        Boxes (``bounds=True``, :meth:`bounds`) are taken from the positions read back.
    inputs : mapping, optional
        The values of a registered method's other needs, by their keywords
        (:func:`vkdqs.methods.needs.register`); each need computes its default when not given.
    layout : {"exact", "lean"}
        How the mesh's vertices are stored on the GPU. ``"exact"``: 32-bit rows, the mesh's
        float32 values bit for bit (64 bytes a vertex, 96 with 8 influences). ``"lean"``: float
        positions, octahedral snorm16x2 normals, uint8 joints (uint16 where the mesh names a
        joint past 255) and unorm16 weights summing to exactly 1 (unorm8 where they already
        are multiples of 1/255): 32 bytes a vertex, 44 with 8 influences; a format the device
        cannot read falls back to the next wider one (:attr:`vertex_layout` says which).
        unorm16 weights move by at most 1/65535 each (unorm8 ones not at all), so positions
        move by at most ``4 / 65535`` (8 influences: ``8 / 65535``) of the largest distance
        between a vertex's bones' images of it; rest normals by at most 5e-5 rad
        (:data:`vkdqs.engine.vertex_packing.OCT_NORMAL_MAX_ANGLE`), skinned ones typically 1e-5 to
        1e-4 rad (more where a vertex's bones turn its normal nearly opposite ways, as in LBS's
        collapse).

    Notes
    -----
    ``max_batch_bytes`` (default 64 MiB) bounds the buffers of one submission: a larger
    ``skin_many`` batch runs in several, so the Skinner's memory does not grow with P.
    ``max_call_bytes`` (default half the machine's memory) bounds what one ``skin_many`` call
    allocates on the host: its result and the packing of its poses, checked before either is
    allocated.
    """

    def __init__(
        self,
        device: Device,
        mesh: SkinnedMesh,
        *,
        bone_count: int,
        method: str = methods.DEFAULT,
        path: str = "compute",
        allow_scale: bool = True,
        centers: object = None,
        rest_matrices: object = None,
        layout: str = "exact",
        ddm: DirectDeltaMush | None = None,
        delta_mush: DeltaMush | None = None,
        inputs: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(device)
        skinning = check_args(mesh, bone_count, method, path)
        bone_count = int(bone_count)
        #: the mesh's vertex layout on the GPU (:data:`vkdqs.shader_interface.LAYOUTS`)
        self.layout = layout
        #: its formats, as resolved for this mesh and device (:func:`resolve_layout`)
        self.vertex_layout = resolve_layout(device, layout, mesh, path, skinning.influences)
        #: what the method skins the mesh with besides the pose (its needs' values, checked;
        #: the defaults of those not given computed on this device and kept on the mesh)
        given = dict(centers=centers, rest_matrices=rest_matrices, ddm=ddm, delta_mush=delta_mush)
        self.method_inputs = skinning.inputs(
            mesh, bone_count, **methods.merge_inputs(given, inputs)
        ).resolved(device, path)
        #: the centers of rotation (N, 3) a method that needs them skins with, or None
        self.centers = self.method_inputs.centers
        #: the bones' rest frames (B, 4, 4) of a method that needs them, or None
        self.rest_matrices = self.method_inputs.rest_matrices
        #: the Direct Delta Mush precomputation a method that needs one skins with, or None
        self.ddm = self.method_inputs.ddm
        #: the Delta Mush bind whose compute passes run after the skinning, or None
        self.delta_mush = self.method_inputs.delta_mush
        #: the passes recorded before and after the skinning dispatches (compute path):
        #: the method's hooks, then those added (:meth:`add_pass`)
        self._before: list[SkinPass] = []
        self._after: list[SkinPass] = []
        #: the influence slots of its shader variants (4 or 8): the mesh's, or for a method that
        #: reads no joints and weights, its data's (:func:`si.ddm_slots`)
        self.slots = self.method_inputs.slots()
        #: the mesh's morph deltas as the shaders read them (sparse or dense layout)
        self.morph_packing = morph_packing(mesh)
        check_limits(device, mesh, bone_count, skinning, path, self.morph_packing)
        #: the (first workgroup, count) runs a morphing pose skins with the morph code, and
        #: those without (their vertices have no non-zero delta); the vertex path draws the same
        self._morph_runs, self._plain_runs = morph_workgroup_runs(self.morph_packing, si.LOCAL_SIZE)
        #: the same for a dispatch that reduces a box: a workgroup covers BOX_STEPS times more
        self._box_runs = morph_workgroup_runs(self.morph_packing, si.LOCAL_SIZE * si.BOX_STEPS)
        self.mesh = mesh
        self.method = method
        #: the method's registry entry
        self.skinning = skinning
        self.path = path
        self.bone_count = bone_count
        self.vertex_count = mesh.vertex_count
        self.allow_scale = allow_scale
        self.max_batch_bytes = MAX_BATCH_BYTES
        #: Bound on what one ``skin_many`` call may allocate on the host (its result and the
        #: packing of its poses), checked before anything is: half this machine's memory.
        self.max_call_bytes = physical_memory() // 2
        alignment = device.info.min_uniform_buffer_offset_alignment
        # One slot per pose: the bone block, then the second block (a method with one, or one
        # whose scaled poses run two-phase DQS).
        self._bones_bytes = bone_count * skinning.bone_stride
        self._scale_offset = align(self._bones_bytes, alignment)
        second = skinning.second_block or (skinning.scaled_variant is not None and allow_scale)
        scale_bytes = bone_count * si.SCALE_STRIDE if second else 0
        # ... then the MorphBlock (morph weights; 0 active without targets)
        self._morph_offset = align(self._scale_offset + scale_bytes, alignment)
        #: bytes of one pose's uniform slot (bone block, second block, MorphBlock)
        self.slot_bytes = align(self._morph_offset + si.MORPH_BLOCK.itemsize, alignment)
        self._programs: dict[tuple[str, bool, int, int], SkinProgram] = {}
        #: this Skinner's pipelines (its passes take theirs from it too)
        self.pipelines = PipelineCache(self)
        self._capacity = 0
        self._generation = 0  # of the output buffers (PassTarget.generation)
        self._recorded: tuple[tuple[str, bool, int, int], int, bool] | None = None
        self._warned_scale = False
        #: the per-frame ring :meth:`record` skins from (made on its first call)
        self._recorder: SkinRecorder | None = None
        #: how many frames :meth:`record` may have in flight (its ring's slots); set before
        #: the first record() call
        self.frames_in_flight = 2
        try:
            with batched_uploads(device):  # the mesh's and the passes' static data at once
                self._create()
                for hook in skinning.before:
                    self.add_pass(methods.load(hook)(self, self.method_inputs), after=False)
                for hook in skinning.after:
                    self.add_pass(methods.load(hook)(self, self.method_inputs))
        except BaseException:
            self.close()
            raise

    @functools.cached_property
    def diag2(self) -> np.float32:
        """The rest mesh's squared bounding-box diagonal (skin.comp's push constant)."""
        return si.ddm_diag2(self.mesh.positions)

    @property
    def has_passes(self) -> bool:
        """Whether passes run before or after the skinning dispatches (Delta Mush's)."""
        return bool(self._before or self._after)

    @property
    def reads_motion(self) -> bool:
        """Whether a pass reads the bones' motion (velocity skinning): ``previous=`` and ``dt=``."""
        return any(hasattr(p, "motion") for p in (*self._before, *self._after))

    def passes(self, *, after: bool) -> tuple[SkinPass, ...]:
        """The passes recorded after (or before) the skinning dispatches (:meth:`add_pass`)."""
        return tuple(self._after if after else self._before)

    def add_pass(self, skin_pass: SkinPass, *, after: bool = True) -> None:
        """Record ``skin_pass`` (:class:`vkdqs.engine.passes.SkinPass`) after each batch's
        skinning dispatches (``after=False``: before them), in the same submission (compute
        path). Its Vulkan objects must be this Skinner's (:meth:`own`). Boxes of a Skinner
        with passes after the skinning are reduced from the vertices they wrote."""
        if self.path != "compute":
            raise InputError("passes run on the compute path only")
        if self.split_output:
            raise LimitError(
                f"{type(skin_pass).__name__} cannot run on this device: passes read a pose's "
                f"skinned vertices through one texel view, and {self.vertex_count} vertices "
                f"take {6 * self.vertex_count} texels, more than its maxTexelBufferElements "
                f"({self.device.info.max_texel_buffer_elements})"
            )
        (self._after if after else self._before).append(skin_pass)
        self._recorded = None

    # -- construction -----------------------------------------------------------------------

    def _create(self) -> None:
        dev = self.device
        label = f"skinner {self.method}/{self.path}"
        usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        self._mesh_inputs = si.mesh_inputs(self.slots, self.method, self.vertex_layout)
        self.arrays = si.mesh_arrays(self.mesh, self.vertex_layout)
        aux = self.method_inputs.aux()
        if aux is not None:
            self.arrays["aux"] = aux
        self.arrays.update(self.method_inputs.arrays())
        self._mesh_buffers: dict[str, Buffer] = {}
        self._views: dict[str, BufferView] = {}
        for m in self._mesh_inputs:
            if m.alias is None:
                arr = self.arrays[m.name]
                buf = self.own(
                    Buffer(dev, arr.nbytes, usage, label=f"{label} {m.name}", memory="static")
                )
                buf.write(arr)
                self._mesh_buffers[m.name] = buf
        limit = dev.info.max_texel_buffer_elements
        compute = self.path == "compute"
        #: whether a pose's output is written through (pose, chunk) views (it does not fit one
        #: texel view: vkdqs.engine.chunks)
        self.split_output = compute and 6 * self.vertex_count > limit
        #: the (first vertex, count) chunks the compute path dispatches (one: the whole mesh)
        self.chunks = (
            vertex_chunks(self._mesh_inputs, self.vertex_count, limit, self.split_output)
            if compute
            else ((0, self.vertex_count),)
        )
        #: each chunk's views of the mesh's texel inputs (one chunk: the whole buffers')
        self.chunk_views = chunk_views(
            self, self._mesh_inputs, self._mesh_buffers, self.chunks, compute, label
        )
        self._views = self.chunk_views[0]
        # Morph-target deltas (one zero texel for a mesh without targets: same shaders)
        deltas = self.morph_packing.texels
        buffer, view = texel_buffer(
            dev, deltas, int(si.MORPH_TEXEL_FORMAT), label=f"{label} morph deltas"
        )
        self._morph_buffer, self._morph_view = self.own(buffer), self.own(view)
        if self.path == "vertex":
            self._render_pass = self.own(RenderPass(dev, RenderPassDesc(), label=label))
            self._framebuffer = self.own(Framebuffer(dev, self._render_pass, [], 1, 1, label=label))
        self._cmd = self.own(CommandBuffer(dev, label=label))
        self._bone_buffer: Buffer | None = None
        #: the skinned vertices ((2, P, N, 3) float32: "gpu" memory) and, where the host cannot
        #: map it, the host-cached buffer results are copied to in the same submission
        self.out_buffer: Buffer | None = None
        self._out_host: Buffer | None = None
        self._out_view: BufferView | None = None
        #: the output as rgba32f texels (the bounds pass reads the positions through it)
        self._out_texels: BufferView | None = None
        self._box_buffer: Buffer | None = None
        #: the batch dispatches' descriptor sets (compute path; made with the buffers)
        self._batch_sets: DispatchSets | None = None
        #: bounds.comp after the skinning (skin(bounds=True)), made on first use
        self._bounds_pass: BoundsPass | None = None
        #: the copies of a pose's vertices into a renderer's vertex buffers (skin_into)
        self._copies = OutputCopies(self)
        self.label = label
        self.program(self.method)  # build the main pipeline now, so errors surface here

    def program(
        self, method: str, morphs: bool = False, output: int = si.OUTPUT_VERTICES, stride: int = 3
    ) -> SkinProgram:
        """The pipeline of ``method``; ``morphs``: with the morph code (a batch with an active
        target), else the one where it is compiled away (no cost for 0 active targets);
        ``output``: what a compute dispatch writes (vertices, their box, or both); ``stride``:
        floats a row (3, or 4 for vec4 rows)."""
        if self.path != "compute":
            output, stride = si.OUTPUT_VERTICES, 3
        program = self._programs.get((method, morphs, output, stride))
        if program is None:
            program = SkinProgram(self, method, morphs, output, stride)
            self._programs[(method, morphs, output, stride)] = program
        if program.capacity != self._capacity and self._capacity and self.path == "vertex":
            self._write_buffer_descriptors(program)
        return program

    def _write_buffer_descriptors(self, program: SkinProgram) -> None:
        """Point the vertex path's program set at the batch buffers (the compute path's sets
        are the batch's :class:`DispatchSets`)."""
        assert self._bone_buffer is not None and self.out_buffer is not None
        writes = self.descriptor_writes(program, self._bone_buffer, self.out_buffer)
        write_descriptors(self.device, program.set, writes)
        program.capacity = self._capacity

    def descriptor_writes(
        self,
        program: SkinProgram,
        bones: Buffer,
        out: Buffer | BufferView,
        normals: BufferView | None = None,
        boxes: Buffer | None = None,
    ) -> list[BufferWrite | TexelWrite]:
        """The buffer descriptors of ``program``'s set over these bone slots and outputs (the
        batch buffers, :meth:`record`'s ring, an app's buffer): on the vertex path ``out`` the
        output buffer; on the compute path ``out`` and ``normals`` the r32f views the positions
        and normals are written through (one view twice where it holds the whole output)."""
        b = program.bindings
        writes: list[BufferWrite | TexelWrite] = [
            BufferWrite(b[si.BONES], bones, 0, self._bones_bytes)
        ]
        if si.BONE_SCALES in b:
            scales = self.bone_count * si.SCALE_STRIDE
            writes.append(BufferWrite(b[si.BONE_SCALES], bones, self._scale_offset, scales))
        block = si.MORPH_BLOCK.itemsize
        writes.append(BufferWrite(b[si.MORPH_WEIGHTS], bones, self._morph_offset, block))
        if self.path == "vertex":
            assert isinstance(out, Buffer)
            writes.append(BufferWrite(b[si.READBACK_OUT], out, 0, out.size))
        else:
            assert isinstance(out, BufferView) and normals is not None and boxes is not None
            writes.append(TexelWrite(b[si.COMPUTE_OUT], out))
            writes.append(TexelWrite(b[si.COMPUTE_OUT_NORMALS], normals))
            writes.append(BufferWrite(b[si.COMPUTE_BOXES], boxes, 0, boxes.size))
        return writes

    def _batch_limit(self) -> int:
        """The most poses one submission takes: within max_batch_bytes and the device limits."""
        info, n = self.device.info, self.vertex_count
        out_bytes = 24 * n
        if self.path == "compute":
            # one view of the whole batch's output; past one pose, views of a pose's chunks
            device_max = 2**31 if self.split_output else info.max_texel_buffer_elements // (6 * n)
            limit = "maxTexelBufferElements"
        else:
            device_max = info.max_storage_buffer_range // out_bytes
            limit = "maxStorageBufferRange"
        if device_max < 1:
            raise LimitError(
                f"one pose of {n} vertices needs {out_bytes} bytes of output, more than this "
                f"device's {limit} allows"
            )
        return max(1, min(device_max, self.max_batch_bytes // self.pose_bytes))

    @property
    def pose_bytes(self) -> int:
        """Device memory one pose of a batch takes: its uniform slot, its output vertices
        (twice where they are read back through a copy) and (compute path) its box;
        :attr:`max_batch_bytes` divided by it is the batch size."""
        box = si.BOX_STRIDE if self.path == "compute" else 0
        # where the host cannot map the output, results read back have a copy of their own
        copies = 1 if self.device.allocator.maps("gpu") else 2
        return self.slot_bytes + copies * 24 * self.vertex_count + box

    def _ensure_capacity(self, poses: int) -> None:
        """Make the bone and output buffers hold ``poses`` poses (<= _batch_limit()).

        Should making the new ones fail, the Skinner is left with none (capacity 0, nothing
        recorded), which the next call makes again."""
        if poses == self._capacity:
            return
        dev, n = self.device, self.vertex_count
        # Every submission is waited for, so the GPU no longer uses the old buffers.
        if self._batch_sets is not None:
            self._batch_sets.close()
            self._batch_sets = None
        old_objects = (
            self._out_view,
            self._out_texels,
            self.out_buffer,
            self._out_host,
            self._bone_buffer,
            self._box_buffer,
        )
        self._capacity, self._recorded = 0, None
        self._bone_buffer = self.out_buffer = self._out_view = self._box_buffer = None
        self._out_host = None
        self._out_texels = None
        for old in old_objects:
            if old is not None:
                self.release(old)
        label = f"{self.label} x{poses}"
        self._bone_buffer = self.own(
            Buffer(
                dev,
                poses * self.slot_bytes,
                vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                label=f"{label} bones",
            )
        )
        compute = self.path == "compute"
        out_usage = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | (  # skin_into copies from it
            vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
            if compute
            else vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
        )
        # a whole number of rgba32f texels (the bounds pass's view of the positions)
        size = align(poses * n * 24, 16)
        self.out_buffer = self.own(
            Buffer(dev, size, out_usage, label=f"{label} output", memory="gpu")
        )
        if not self.out_buffer.host_visible:  # a discrete GPU: read back through a copy
            usage = vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            self._out_host = self.own(
                Buffer(dev, size, usage, label=f"{label} readback", memory="readback")
            )
        self._out_view = self._out_texels = None
        if compute:
            if not self.split_output:
                fmt = int(si.COMPUTE_OUT_FORMAT)
                self._out_view = self.own(BufferView(dev, self.out_buffer, fmt, label=label))
                fmt = int(si.BOUNDS_TEXEL_FORMAT)
                self._out_texels = self.own(
                    BufferView(dev, self.out_buffer, fmt, label=f"{label} positions")
                )
            self._box_buffer = self.own(
                Buffer(
                    dev,
                    poses * si.BOX_STRIDE,
                    vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                    label=f"{label} boxes",
                    memory="readback",
                )
            )
            self._batch_sets = DispatchSets(
                self,
                self._bone_buffer,
                self._box_buffer,
                whole=self._out_view,
                buffer=self.out_buffer,
                label=f"{label} sets",
            )
        self._capacity = poses
        self._generation += 1
        self._recorded = None
        if not compute:
            for program in self._programs.values():
                self._write_buffer_descriptors(program)

    def bounds_pass(self) -> BoundsPass:
        """The pass that reduces boxes from the vertices written (made on first use)."""
        if self._bounds_pass is None:
            self._bounds_pass = BoundsPass(self)
        return self._bounds_pass

    def _record(self, program: SkinProgram, poses: int, box_pass: bool = False) -> None:
        """Record the command buffer for a batch of ``poses`` poses (once per batch size);
        ``box_pass``: then reduce each pose's box from its vertices (:class:`BoundsPass`)."""
        if self._recorded == (program.key, poses, box_pass):
            return
        self._recorded = None  # until end(): a failure half-way leaves it to be recorded again
        cmd = self._cmd.begin()
        if self.path == "compute":
            if not (box_pass or self.has_passes):  # (split outputs have neither)
                self._record_dispatches(cmd, program, poses)
            else:
                target = self._target(program, poses)
                for before in self._before:
                    before.record(cmd, target)
                self._record_dispatches(cmd, program, poses)
                for after in self._after:
                    after.record(cmd, target)
                if box_pass:
                    self.bounds_pass().record(cmd, target)
        else:
            record_draws(self, cmd, program, poses)
        stage = (
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
            if self.path == "compute"
            else vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT
        )
        memory_barrier(
            cmd,
            stage,
            vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_HOST_READ_BIT,
        )
        self._cmd.end()
        self._recorded = (program.key, poses, box_pass)

    def _target(self, program: SkinProgram, poses: int) -> PassTarget:
        """What the passes around a batch's dispatches record over (compute path)."""
        assert self._out_view is not None and self._out_texels is not None
        assert self._box_buffer is not None
        return PassTarget(
            poses,
            self.vertex_count,
            program.output,
            self._out_view,
            self._out_texels,
            self._box_buffer,
            self._generation,
        )

    def bind_pose(
        self, cmd: Any, program: SkinProgram, bind_point: int, p: int, dset: Any = None
    ) -> None:
        """Bind ``dset`` (default: the program's own set) with slot ``p``'s offsets."""
        # one dynamic offset per dynamic binding, in binding order (bones, scales, morphs):
        # each binding's range starts at its block within slot 0
        dynamic = [
            b
            for b in sorted(program.bindings)
            if program.bindings[b].type == si.DescriptorType.UNIFORM_BUFFER_DYNAMIC
        ]
        offsets = [p * self.slot_bytes] * len(dynamic)
        sets = [program.set if dset is None else dset]
        vk.vkCmdBindDescriptorSets(
            cmd, bind_point, program.layout.handle, 0, 1, sets, len(offsets), offsets
        )

    def dispatch_parts(
        self, program: SkinProgram
    ) -> list[tuple[SkinProgram, tuple[tuple[int, int], ...]]]:
        """The programs a batch runs and their (first workgroup, count) runs: a morphing pose
        runs the morph code only on the runs whose vertices have deltas (on lavapipe a vertex
        without any still pays a loop iteration), the pipeline without it on the others."""
        box = bool(program.output & si.OUTPUT_BOX)
        group = si.LOCAL_SIZE * (si.BOX_STEPS if box else 1)
        parts = [(program, ((0, math.ceil(self.vertex_count / group)),))]
        if program.key[1]:
            plain = self.program(program.method, False, program.output, program.stride)
            morph_runs, plain_runs = self._box_runs if box else (self._morph_runs, self._plain_runs)
            parts = [(plain, plain_runs), (program, morph_runs)]
        return [(prog, runs) for prog, runs in parts if runs]

    def _record_dispatches(self, cmd: Any, program: SkinProgram, poses: int) -> None:
        parts = self.dispatch_parts(program)
        assert self._batch_sets is not None
        for p in range(poses):
            self._batch_sets.record(cmd, parts, p, poses, bind=p == 0)

    # -- public API -------------------------------------------------------------------------

    def _run(
        self,
        packed: bone_packing.PackedPose,
        out: np.ndarray | None,
        morphs: np.ndarray | None = None,
        boxes: np.ndarray | None = None,
        copy_to: tuple[Buffer, Buffer] | None = None,
        motion: PoseMotion | None = None,
    ) -> None:
        """Skin the poses of ``packed`` in chunks, writing (2, P, N, 3) into ``out`` (None: do
        not read the vertices back) and each pose's (2, 3) box into ``boxes`` ((P, 2, 3), or
        None); ``morphs``: (P,) MORPH_BLOCK records, or None (no morph targets applied).

        The compute path reduces the boxes on the GPU in the same submission: with ``out``, a
        second dispatch reads the skinned positions (:class:`BoundsPass`; the skinning dispatch
        is the one without boxes), without it the skinning dispatch reduces them and writes no
        vertex (after compute passes, Delta Mush's, bounds.comp reads the vertices they wrote);
        the vertex path reads the vertices back and takes their min and max (the same exact
        values). ``copy_to``: (positions, normals) vertex buffers that one pose's vertices are
        copied into on the GPU, in the same submission (compute path, nothing read back but the
        box; :class:`vkdqs.engine.output_copies.OutputCopies`). ``motion``: the poses as given,
        for passes that read them (:func:`vkdqs.engine.passes.pose_motion`)."""
        if packed.variant != self.method and not self._warned_scale:
            log.info("vkdqs: bones have scale/shear; using two-phase DQS")
            self._warned_scale = True
        total = packed.bones.shape[0]
        chunk = min(total, self._batch_limit())
        active = morphs is not None and bool(morphs["header"][:, 0].any())
        # Ctrl-C waits (deferred_interrupts) while buffers, descriptor sets, the recorded command
        # buffer and a submission change together, and lands between chunks, where the Skinner
        # is consistent: a KeyboardInterrupt leaves it usable and correct.
        assert copy_to is None or (self.path == "compute" and total == 1)
        gpu_box = boxes is not None and self.path == "compute"
        # bounds.comp after the vertices are written (read back, copied, or after compute
        # passes, Delta Mush's, which the skinning dispatch's own box would not see); else the
        # skinning dispatch reduces the box and writes no vertex. Where a pose's output is
        # written in chunks (no view holds it for bounds.comp; there are no passes then), the
        # skinning dispatch writes the vertices and reduces their box: the same values' min/max.
        vertices = out is not None or copy_to is not None or bool(self._after)
        box_pass = gpu_box and vertices and not self.split_output
        output = si.OUTPUT_VERTICES
        if gpu_box and not box_pass:
            output = si.OUTPUT_BOX | (si.OUTPUT_VERTICES if vertices else 0)
        host = (
            out
            if out is not None or gpu_box or copy_to is not None
            else np.empty((2, chunk, self.vertex_count, 3), np.float32)
        )
        with deferred_interrupts():
            self._ensure_capacity(chunk)
            program = self.program(packed.variant, active, output)
            if box_pass:
                self.bounds_pass()
        for start in range(0, total, chunk):
            poses = min(chunk, total - start)
            slots = self.slot_rows(packed, morphs, start, poses)
            with deferred_interrupts():
                self._record(program, poses, box_pass)
                if motion is not None:
                    for ps in (*self._before, *self._after):
                        if hasattr(ps, "motion"):
                            ps.motion(motion.chunk(start, poses))
                assert self._bone_buffer is not None and self.out_buffer is not None
                self._bone_buffer.write(slots)
                if gpu_box:
                    assert self._box_buffer is not None
                    self._box_buffer.write(np.zeros(poses * si.BOX_STRIDE, np.uint8))
                then = () if copy_to is None else (self._copies.command(*copy_to),)
                if host is not None and self._out_host is not None:
                    nbytes = poses * self.vertex_count * 24
                    then = (*then, self._copies.readback(self._out_host, nbytes))
                self._cmd.submit_and_wait(then)
                if gpu_box:
                    assert self._box_buffer is not None and boxes is not None
                    keys = self._box_buffer.read(np.uint32, poses * si.BOX_STRIDE // 4)
                    boxes[start : start + poses] = si.decode_boxes(keys)
                if host is None:
                    continue
                # straight from the mapping into the caller's array: no (2, P, N, 3) copy
                part = host[:, start : start + poses] if host is out else host[:, :poses]
                (self._out_host or self.out_buffer).read_into(part)
                if boxes is not None and not gpu_box:
                    boxes[start : start + poses, 0] = part[0].min(axis=1)
                    boxes[start : start + poses, 1] = part[0].max(axis=1)

    def slot_rows(
        self, packed: bone_packing.PackedPose, morphs: np.ndarray | None, start: int, poses: int
    ) -> np.ndarray:
        """Poses ``start`` to ``start + poses`` as the uniform slots the shaders read: the
        bone block, the second block, the MorphBlock ((poses, slot bytes / 4) float32)."""
        slots = np.zeros((poses, self.slot_bytes // 4), np.float32)
        bones = packed.bones[start : start + poses].reshape(poses, -1)
        slots[:, : self._bones_bytes // 4] = bones
        if packed.scales is not None:
            first = self._scale_offset // 4
            scales = packed.scales[start : start + poses].reshape(poses, -1)
            slots[:, first : first + self.bone_count * si.SCALE_FLOATS] = scales
        if morphs is not None:
            first = self._morph_offset // 4
            block = morphs[start : start + poses].view(np.float32).reshape(poses, -1)
            slots[:, first : first + block.shape[1]] = block
        return slots

    def _pack(self, bones: object, batched: bool) -> bone_packing.PackedPose:
        return self.skinning.pack(
            bones,
            self.bone_count,
            batched=batched,
            allow_scale=self.allow_scale,
            rest_matrices=self.rest_matrices,
        )

    def _morph_blocks(self, morph_weights: object, poses: int) -> np.ndarray | None:
        """(P,) MORPH_BLOCK records for ``morph_weights`` ((P, M)), or None."""
        if morph_weights is None:
            return None
        w = self.mesh.check_morph_weights(morph_weights).reshape(-1, self.mesh.morph_target_count)
        return morph_blocks(self.morph_packing, w)

    def skin(
        self,
        bones: object,
        morph_weights: object = None,
        *,
        bounds: bool = False,
        previous: object = None,
        dt: float | None = None,
    ) -> tuple[np.ndarray, ...]:
        """Skin the mesh with one pose.

        Parameters
        ----------
        bones : array_like, (B, ...)
            The pose in a layout the method packs (:meth:`vkdqs.methods.SkinningMethod.pack`):
            (B, 2, 4) unit dual quaternions or (B, 4, 4) matrices for DQS (rigid, or with
            scale/shear: two-phase DQS); (B, 4, 4) / (B, 3, 4) affine matrices (or (B, 2, 4)
            dual quaternions) for LBS.
        morph_weights : array_like, (M,), optional
            Weights of the mesh's morph targets, applied before skinning
            (:func:`vkdqs.reference.morph`); None leaves the rest shape. Any number may be
            non-zero.
        bounds : bool
            Also return the exact axis-aligned box of the skinned positions, reduced on the
            GPU in the same submission (compute path: a second dispatch over the positions the
            skinning wrote; the vertex path takes it from the
            vertices it reads back).
        previous, dt : array_like (B, ...), float, optional
            The pose ``dt`` seconds before, for a method that moves with the motion (velocity
            skinning: the bones' velocities are the difference); None: at rest (no motion).

        Returns
        -------
        positions : ndarray, float32, (N, 3)
        normals : ndarray, float32, (N, 3)
        box : ndarray, float32, (2, 3)
            With ``bounds=True``: the min and the max corner, exactly ``positions.min(0)``
            and ``positions.max(0)``.
        """
        batch, morphs = self._one_pose(bones, morph_weights)
        motion = pose_motion(self, bones, previous, dt, batched=False)
        out = np.empty((2, 1, self.vertex_count, 3), np.float32)
        boxes = np.empty((1, 2, 3), np.float32) if bounds else None
        with self._lock:
            self._check_open()
            self._run(batch, out, morphs, boxes, motion=motion)
        if boxes is not None:
            return out[0, 0], out[1, 0], boxes[0]
        return out[0, 0], out[1, 0]

    def bounds(
        self,
        bones: object,
        morph_weights: object = None,
        *,
        previous: object = None,
        dt: float | None = None,
    ) -> np.ndarray:
        """The exact (2, 3) box (min, max) of the mesh skinned with one pose, without reading
        the vertices back: on the compute path the dispatch reduces the box and writes no
        vertex at all (after Delta Mush's passes: bounds.comp reduces the vertices they
        wrote). Arguments as for :meth:`skin`."""
        batch, morphs = self._one_pose(bones, morph_weights)
        motion = pose_motion(self, bones, previous, dt, batched=False)
        boxes = np.empty((1, 2, 3), np.float32)
        with self._lock:
            self._check_open()
            self._run(batch, None, morphs, boxes, motion=motion)
        return boxes[0]

    def skin_into(
        self,
        bones: object,
        morph_weights: object,
        positions: Buffer,
        normals: Buffer,
        *,
        previous: object = None,
        dt: float | None = None,
    ) -> np.ndarray:
        """Skin one pose and copy its (N, 3) float32 positions and normals into the vertex
        buffers ``positions`` and ``normals`` (12 N bytes each, usable as transfer
        destinations) on the GPU, in one submission that is waited for; returns its exact
        (2, 3) box, the only thing read back. The renderer's "compute, then draw" (compute
        path); the caller makes sure no frame in flight reads those buffers."""
        batch, morphs = self._one_pose(bones, morph_weights)
        motion = pose_motion(self, bones, previous, dt, batched=False)
        boxes = np.empty((1, 2, 3), np.float32)
        with self._lock:
            self._check_open()
            if self.path != "compute":
                raise InputError("skin_into() copies the compute path's output")
            self._run(batch, None, morphs, boxes, copy_to=(positions, normals), motion=motion)
        return boxes[0]

    def record(
        self,
        command_buffer: Any,
        bones: object,
        *,
        positions: tuple[Any, int],
        normals: tuple[Any, int] | None = None,
        morph_weights: object = None,
        stride: int = 12,
        dst_stage: str | None = "vertex_input",
        bounds: bool = False,
    ) -> int:
        """Record one pose's skinning into the app's ``command_buffer`` (recording, outside a
        render pass) and the copies of its ``(N, 3)`` float32 positions and normals into the
        app's buffers, submitting nothing (compute path; passes too; the contract:
        :mod:`vkdqs.engine.recording`, docs/vulkan-app.md). ``bones``, ``morph_weights``: as for
        :meth:`skin`. ``positions``, ``normals`` (None: not written): ``(buffer, offset)``, an
        :class:`vkdqs.gpu.AppBuffer` or vkdqs Buffer with ``TRANSFER_DST`` usage, a byte offset
        that is a multiple of 4. ``stride``: 12 (tight rows) or 16 (vec4 rows, the fourth float
        kept). ``dst_stage``: the app's first use of the outputs
        (:data:`vkdqs.engine.recording.DST_STAGES`; None: the app records that barrier).
        ``bounds``: also reduce the positions' exact box (:meth:`recorded_bounds`). Returns the
        ring slot used: the app must not record :attr:`frames_in_flight` more frames with this
        Skinner before this command buffer has completed (a slot whose last command buffer has
        not run is refused with InputError).
        """
        batch, morphs = self._one_pose(bones, morph_weights)
        with self._lock:
            self._check_open()
            if self._recorder is None:
                self._recorder = SkinRecorder(self)
            return self._recorder.record(
                command_buffer, batch, morphs, positions, normals, stride, dst_stage, bounds
            )

    def forget_recordings(self) -> None:
        """Take :meth:`record`'s ring slots as free, for an app that threw away command
        buffers it recorded without submitting them (the ones it submitted have completed)."""
        with self._lock:
            if self._recorder is not None:
                self._recorder.forget()

    def recorded_bounds(self, slot: int) -> np.ndarray:
        """The exact (2, 3) box (min, max) of the positions :meth:`record` wrote from ring slot
        ``slot`` with ``bounds=True``; call it after that command buffer has completed (the
        app's fence) and before the slot is recorded again."""
        with self._lock:
            self._check_open()
            if self._recorder is None:
                raise InputError("recorded_bounds() before any record()")
            return self._recorder.box(slot)

    def _one_pose(
        self, bones: object, morph_weights: object
    ) -> tuple[bone_packing.PackedPose, np.ndarray | None]:
        """One pose, validated and packed as a batch of one, and its MORPH_BLOCK (or None)."""
        if morph_weights is not None:
            w = self.mesh.check_morph_weights(morph_weights)
            if w.shape != (self.mesh.morph_target_count,):
                raise InputError(
                    f"morph_weights must have shape ({self.mesh.morph_target_count},), "
                    f"got {w.shape}"
                )
        morphs = self._morph_blocks(morph_weights, 1)
        packed = self._pack(bones, batched=False)
        batch = bone_packing.PackedPose(
            packed.variant,
            packed.bones[None],
            None if packed.scales is None else packed.scales[None],
        )
        return batch, morphs

    def skin_many(
        self,
        bones: object,
        morph_weights: object = None,
        *,
        bounds: bool = False,
        previous: object = None,
        dt: float | None = None,
    ) -> tuple[np.ndarray, ...]:
        """Skin the mesh with P poses ``(P, B, ...)``: one submission per chunk of poses whose
        buffers fit :attr:`max_batch_bytes`. ``morph_weights``: (P, M) morph-target weights,
        one row per pose (None: the rest shape).

        Returns (P, N, 3) float32 positions and normals, and with ``bounds=True`` each pose's
        exact box, (P, 2, 3) (min, max), reduced on the GPU as in :meth:`skin`. ``previous``
        ((P, B, ...): each pose's previous pose) and ``dt``: as for :meth:`skin`.

        A batch whose result (``2 P N 3`` float32) and packing (about
        :data:`vkdqs.engine.limits.PACK_BYTES_PER_BONE` per pose and bone) would pass
        :attr:`max_call_bytes` is refused with a :class:`LimitError` before anything is
        allocated (a broadcast view of millions of poses costs nothing to pass in, but its
        result would).
        """
        packed, morphs = self._many_poses(bones, morph_weights)
        motion = pose_motion(self, bones, previous, dt, batched=True)
        count = packed.bones.shape[0]
        out = np.empty((2, count, self.vertex_count, 3), np.float32)
        boxes = np.empty((count, 2, 3), np.float32) if bounds else None
        with self._lock:
            self._check_open()
            self._run(packed, out, morphs, boxes, motion=motion)
        if boxes is not None:
            return out[0], out[1], boxes
        return out[0], out[1]

    def bounds_many(
        self,
        bones: object,
        morph_weights: object = None,
        *,
        previous: object = None,
        dt: float | None = None,
    ) -> np.ndarray:
        """The exact (P, 2, 3) boxes of the mesh skinned with P poses ``(P, B, ...)``, without
        reading the vertices back (as :meth:`bounds`); arguments as for :meth:`skin_many`."""
        packed, morphs = self._many_poses(bones, morph_weights, vertices=False)
        motion = pose_motion(self, bones, previous, dt, batched=True)
        boxes = np.empty((packed.bones.shape[0], 2, 3), np.float32)
        with self._lock:
            self._check_open()
            self._run(packed, None, morphs, boxes, motion=motion)
        return boxes

    def _many_poses(
        self, bones: object, morph_weights: object, *, vertices: bool = True
    ) -> tuple[bone_packing.PackedPose, np.ndarray | None]:
        """P poses, validated (their call size too) and packed, and their MORPH_BLOCKs."""
        bones = check_call_size(self, bones, morph_weights, vertices=vertices or bool(self._after))
        packed = self._pack(bones, batched=True)
        count = packed.bones.shape[0]
        if morph_weights is not None:
            w = self.mesh.check_morph_weights(morph_weights)
            m = self.mesh.morph_target_count
            if w.shape != (count, m):
                raise InputError(
                    f"morph_weights must have shape ({count}, {m}) (one row per pose), "
                    f"got {w.shape}"
                )
        return packed, self._morph_blocks(morph_weights, count)

    def close(self) -> None:
        """Destroy this skinner's Vulkan objects now. Safe to call twice."""
        with self._lock:
            super().close()
            self._programs.clear()
            self.pipelines.clear()
            self._bounds_pass = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<Skinner {self.method}/{self.path} {self.vertex_count} vertices, "
            f"{self.mesh.slots} influence slots, {self.bone_count} bones ({state})>"
        )
