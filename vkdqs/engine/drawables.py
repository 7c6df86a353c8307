"""What a :class:`~vkdqs.Renderer` draws: meshes it uploaded (:class:`RenderMesh`), their
materials' descriptor sets, and instances (:class:`Instance`: one posed copy of a mesh, with its
method, model matrix and colour). The renderer makes them (``add_mesh``, ``add_instance``) and
owns their Vulkan objects.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import bones as bone_packing
from .. import methods
from .. import shader_interface as si
from ..errors import InputError
from ..gpu import (
    Buffer,
    BufferView,
    texel_buffer,
)
from ..gpu.calls import vk
from ..mesh import SkinnedMesh
from ..methods.needs import MethodInputs, SharedRows
from .morphs import morph_blocks, morph_packing
from .passes import pose_motion
from .skinner import Skinner

if TYPE_CHECKING:
    from ..methods.ddm.reference import DirectDeltaMush
    from .materials import GpuMaterial
    from .renderer import Renderer

__all__ = ["SINGULAR_DET", "Instance", "RenderMesh"]

#: The method of instances drawn as their rest mesh, without skinning (rigid parts, and a
#: baseline for measuring what skinning costs); every other method is one of the registry's
#: (:mod:`vkdqs.methods`).
#: |det| of a model matrix's 3x3 below which it is singular (scaled to zero): not drawable.
SINGULAR_DET = 1e-12


def _bone_bucket(bone_count: int) -> int:
    """MAX_BONES for a pipeline: the bone count rounded up, so few pipelines serve many rigs."""
    bucket = 16
    while bucket < bone_count:
        bucket *= 2
    return bucket


class RenderMesh:
    """A :class:`SkinnedMesh` uploaded for drawing (vertex and index buffers) by one renderer."""

    def __init__(
        self,
        renderer: Renderer,
        mesh: SkinnedMesh,
        label: str,
        layout: str = "exact",
        vertex_layout: si.VertexLayout | None = None,
    ) -> None:
        if not isinstance(mesh, SkinnedMesh):
            raise InputError(f"mesh must be a vkdqs.SkinnedMesh, got {type(mesh).__name__}")
        if mesh.indices is None:
            raise InputError(
                f"mesh {label!r} has no triangle indices; the renderer draws triangles"
            )
        dev = renderer.device
        usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
        self.vertex_buffers: list[Buffer] = []
        #: the vertex layout of its buffers (:data:`vkdqs.shader_interface.LAYOUTS`)
        self.layout = layout
        #: its formats, as resolved for the mesh and device (vkdqs.engine.limits.resolve_layout)
        self.vertex_layout = vertex_layout or si.as_layout(layout)
        # The same rows the Skinner uploads: 4 buffers, or 6 with 8 influences.
        for name, arr in si.mesh_arrays(mesh, self.vertex_layout).items():
            buf = renderer.own(
                Buffer(dev, arr.nbytes, usage, label=f"{label} {name}", memory="static")
            )
            buf.write(arr)
            self.vertex_buffers.append(buf)
        self.index_buffer = renderer.own(
            Buffer(
                dev,
                mesh.indices.nbytes,
                vk.VK_BUFFER_USAGE_INDEX_BUFFER_BIT,
                label=f"{label} indices",
                memory="static",
            )
        )
        self.index_buffer.write(mesh.indices)
        # morph-target deltas (one zero texel without targets), read by every instance's set
        #: the morph deltas as the shaders read them (sparse or dense layout)
        self.morph_packing = morph_packing(mesh)
        deltas = self.morph_packing.texels
        texels = renderer.device.info.max_texel_buffer_elements
        if len(deltas) > texels:
            raise InputError(
                f"mesh {label!r}: its morph targets need {len(deltas)} texels, more than this "
                f"device's maxTexelBufferElements ({texels})"
            )
        buffer, view = texel_buffer(
            dev, deltas, int(si.MORPH_TEXEL_FORMAT), label=f"{label} morph deltas"
        )
        self.morph_buffer, self.morph_view = renderer.own(buffer), renderer.own(view)
        #: ``{"uvs": Buffer, "colors": Buffer}`` for the :data:`si.SURFACE_INPUTS` the mesh has
        self.surface_buffers: dict[str, Buffer] = {}
        for name, arr in si.surface_arrays(mesh).items():
            buf = renderer.own(
                Buffer(dev, arr.nbytes, usage, label=f"{label} {name}", memory="static")
            )
            buf.write(arr)
            self.surface_buffers[name] = buf
        #: ``(first index, index count, material)`` drawn per instance, in order
        self.groups: list[tuple[int, int, GpuMaterial]] = []
        self.mesh = mesh
        self.label = label
        self.index_count = int(mesh.indices.size)
        self._renderer = weakref.ref(renderer)
        #: the per-vertex ``aux`` rows (centers of rotation, DQS blend values), made for the
        #: first instance or crowd of a method that reads them
        self.aux_buffer: Buffer | None = None
        #: the values those rows hold, shared by the mesh's instances and crowds (given last,
        #: or made once): ``shared.centers``
        self.shared = SharedRows()
        #: per value of a need with texel inputs (a Direct Delta Mush precomputation; by id, the
        #: value kept): ``(value, {input name: BufferView})``, the texels its users read
        self._texels: dict[tuple[int, ...], tuple[object, dict[str, BufferView]]] = {}

    @property
    def centers(self) -> np.ndarray | None:
        """(N, 3) float32 centers of rotation the aux rows hold, once an instance needed them."""
        return self.shared.centers  # type: ignore[return-value]

    def ensure_inputs(self, renderer: Renderer, inputs: MethodInputs) -> MethodInputs:
        """What an instance or crowd of this mesh draws with: ``inputs`` (checked by the
        method) with the mesh's shared aux values for those not given and the other defaults
        made on the renderer's device (kept on the mesh); the aux rows and the needs' texel
        arrays uploaded once per value (LimitError where they do not fit)."""
        inputs = self.shared.fill(inputs).resolved(renderer.device)
        rows = self.shared.rows(inputs)
        if rows is not None:
            self._write_aux(renderer, rows)
        key = inputs.texel_key()
        if key is not None and key not in self._texels:
            self._upload_texels(renderer, inputs, key)
        return inputs

    def texel_views(self, inputs: MethodInputs | None) -> dict[str, BufferView]:
        """The texel views of ``inputs``' need arrays uploaded by :meth:`ensure_inputs`
        (empty for a method without any)."""
        key = None if inputs is None else inputs.texel_key()
        return {} if key is None else self._texels[key][1]

    def _upload_texels(
        self, renderer: Renderer, inputs: MethodInputs, key: tuple[int, ...]
    ) -> None:
        """Upload ``inputs``' need arrays (DDM's Ω and bones, :func:`si.ddm_arrays`) as texel
        buffers, once per value, shared by every instance and crowd copy that skins with it;
        owned by the renderer."""
        formats = {m.name: m.texel_format for m in si.MESH_INPUTS if m.need is not None}
        views = {}
        for name, arr in inputs.arrays().items():
            buffer, view = texel_buffer(
                renderer.device, arr, int(formats[name]), label=f"{self.label} {name}"
            )
            renderer.own(buffer)
            views[name] = renderer.own(view)
        self._texels[key] = (tuple(inputs.values.values()), views)

    def _write_aux(self, renderer: Renderer, rows: np.ndarray) -> Buffer:
        if self.aux_buffer is None:
            usage = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
            self.aux_buffer = renderer.own(
                Buffer(
                    renderer.device, rows.nbytes, usage, label=f"{self.label} aux", memory="static"
                )
            )
        else:
            renderer.device.wait_idle()  # frames in flight may read the old centers
        self.aux_buffer.write(rows)
        return self.aux_buffer

    @property
    def renderer(self) -> Renderer | None:
        """The renderer that uploaded this mesh (None once it is gone)."""
        return self._renderer()


@dataclass(eq=False)
class Instance:
    """One drawn copy of a mesh, with its own pose, model matrix, colour and method.

    Its setters replace whole values, so a thread may pose an instance while another renders:
    each frame sees either the old or the new pose. The fields after ``inputs`` in the listing
    (``bones``, ``morph_weights``, ``posed``, ``skinner``, ``skinned``, ``posed_buffers``,
    ``scalar_buffers``) and :meth:`box_now` / :meth:`skin_into` are the renderer's interface to
    it (package-internal: set by its setters and the renderer, read by the renderer).
    """

    mesh: RenderMesh
    bone_count: int
    method: str
    model: np.ndarray
    color: np.ndarray
    pose: bone_packing.PackedPose = field(repr=False)
    visible: bool = True
    #: The model matrix mirrors the mesh (det < 0), which flips its winding; set by set_model.
    mirrored: bool = False
    #: "dqs_blender": each bone's rest frame (B, 4, 4)
    rest_matrices: np.ndarray | None = field(default=None, repr=False)
    #: (N, 4) float32 rows of the per-vertex scalar shown as a heat map (set_scalar), or None
    scalar: np.ndarray | None = field(default=None, repr=False)
    #: per frame slot, the vertex buffer the scalar is written to (made by the renderer)
    scalar_buffers: dict = field(default_factory=dict, repr=False)
    #: the morph weights (a MORPH_BLOCK record); set by set_pose
    morph: np.ndarray = field(default_factory=lambda: np.zeros((), si.MORPH_BLOCK), repr=False)
    #: ``MORPH_TARGETS`` of its pipeline: the kinds of deltas and layout, 0 without an active
    #: target (the pipeline without the morph code); set by set_pose
    morph_spec: int = field(default=0, repr=False)
    #: the pose as given to set_pose (a copy) and its morph weights, for :attr:`bounds`
    bones: np.ndarray | None = field(default=None, repr=False)
    morph_weights: np.ndarray | None = field(default=None, repr=False)
    #: ``(pose, bones, morph weights, motion)`` as set together by set_pose (read once per
    #: frame; motion: the ``previous=`` and ``dt=`` of a method that moves with it, or {})
    posed: tuple | None = field(default=None, repr=False)
    #: a method drawn by "compute, then draw" (:attr:`SkinningMethod.drawn_by_compute`): the
    #: compute Skinner that skins its poses (the renderer's, closed with the instance)
    skinner: Skinner | None = field(default=None, repr=False)
    #: ``(pose, box)`` of the last pose the Skinner skinned or measured
    skinned: tuple | None = field(default=None, repr=False)
    #: per frame slot, ``[positions Buffer, normals Buffer, the pose they hold]``: (N, 3)
    #: float32 rows the Skinner's output is copied into on the GPU
    posed_buffers: dict = field(default_factory=dict, repr=False)
    #: what its method draws it with besides the pose (resolved; the texels of its needs'
    #: arrays are the mesh's, :meth:`RenderMesh.ensure_inputs`), or None (unskinned, or drawn
    #: by "compute, then draw": its Skinner's)
    inputs: MethodInputs | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        #: its method's registry entry (:data:`vkdqs.methods.NONE` for unskinned instances):
        #: the name is looked up once, here
        self.skinning: methods.SkinningMethod = methods.get(self.method)

    @property
    def ddm(self) -> DirectDeltaMush | None:
        """The Direct Delta Mush precomputation it skins with, or None."""
        skinner = self.skinner
        inputs = self.inputs if skinner is None else skinner.method_inputs
        return None if inputs is None else inputs.ddm  # type: ignore[return-value]

    @property
    def bounds(self) -> np.ndarray:
        """The world-space box (2, 3), min and max, of this instance as posed now (what the
        next frame draws; after ``render()``, the last frame's).

        Exact in mesh space, from the GPU: the renderer skins the current pose with a compute
        dispatch that reduces the box and writes no vertex (:meth:`vkdqs.Skinner.bounds`).
        The world box is the smallest box around that box's corners under the model matrix
        (exact for translations and axis-aligned scales; a rotated model gives a box that
        contains the mesh, as three.js's ``Box3.applyMatrix4`` does). Unskinned instances:
        their (morphed) rest vertices.
        """
        renderer = self.mesh.renderer
        if renderer is None:
            raise InputError("instance.bounds: its renderer is gone")
        return renderer.instance_bounds(self)

    @property
    def influences(self) -> bool:
        """Its shaders read the mesh's joints and weights (False where its method's data stands
        for them: Direct Delta Mush's Ω, read as texels)."""
        return self.inputs is None or self.inputs.method.influences

    @property
    def variant(self) -> str:
        """The method whose shaders draw the current pose (a "dqs" pose with scale: "dqs_scale";
        "none" for unskinned instances and for methods drawn by "compute, then draw", whose
        posed vertices are drawn unskinned: :attr:`rigid`)."""
        return methods.NONE.name if self.rigid else self.pose.variant

    @property
    def rigid(self) -> bool:
        """Drawn by the unskinned shaders (:data:`vkdqs.methods.NONE`'s): its method skins
        nothing, or its posed vertices come from its compute Skinner (:attr:`computed`)."""
        return not self.skinning.skins or self.computed

    @property
    def slots(self) -> int:
        """The influence slots of its vertex shader variant: 4 when drawn unskinned, its
        precomputation's for a method that reads no joints and weights (:func:`si.ddm_slots`),
        else the mesh's."""
        if self.rigid:
            return 4
        if self.inputs is not None:
            return self.inputs.slots()
        return self.mesh.mesh.slots

    @property
    def computed(self) -> bool:
        """Drawn by "compute, then draw": its method has no vertex shader variants, so the
        renderer's compute Skinner skins each new pose and the posed vertices are drawn
        unskinned (:attr:`vkdqs.methods.SkinningMethod.drawn_by_compute`)."""
        return self.skinning.drawn_by_compute

    @property
    def reads_motion(self) -> bool:
        """Its method moves with the motion (velocity skinning): :meth:`set_pose` takes
        ``previous=`` and ``dt=``."""
        return self.skinner is not None and self.skinner.reads_motion

    def box_now(self) -> np.ndarray:
        """The exact (2, 3) box in mesh space of a computed instance's current pose, from its
        Skinner (kept until re-posed; measured on the GPU without reading vertices back)."""
        posed, skinned, skinner = self.posed, self.skinned, self.skinner
        assert posed is not None and skinner is not None
        pose, bones, weights, motion = posed
        if skinned is None or skinned[0] is not pose:
            skinned = (pose, skinner.bounds(bones, weights, **motion).astype(np.float64))
            self.skinned = skinned
        return skinned[1]

    def skin_into(self, positions: Buffer, normals: Buffer) -> object:
        """Skin a computed instance's current pose into the vertex buffers ``positions`` and
        ``normals`` on the GPU (:meth:`Skinner.skin_into`; no frame in flight may read them);
        keep its box, and return the pose they now hold."""
        posed, skinner = self.posed, self.skinner
        assert posed is not None and skinner is not None
        pose, bones, weights, motion = posed
        box = skinner.skin_into(bones, weights, positions, normals, **motion)
        self.skinned = (pose, box.astype(np.float64))
        return pose

    def set_pose(
        self,
        bones: ArrayLike,
        morph_weights: ArrayLike | None = None,
        *,
        previous: ArrayLike | None = None,
        dt: float | None = None,
    ) -> None:
        """Validate and store this instance's pose (see :mod:`vkdqs.bones` for the layouts).

        For "dqs", matrices with scale/shear switch the instance to two-phase DQS.
        ``morph_weights`` ((M,)) weights the mesh's morph targets, applied before skinning
        (also for method "none"); None draws the rest shape. ``previous``, ``dt``: the pose
        ``dt`` seconds before, for a method that moves with the motion (velocity skinning, as
        :meth:`vkdqs.Skinner.skin` takes them); refused by the others.
        """
        skinning = self.skinning
        morph = np.zeros((), si.MORPH_BLOCK)
        spec = 0
        if morph_weights is not None:
            mesh = self.mesh.mesh
            w = mesh.check_morph_weights(morph_weights)
            if w.shape != (mesh.morph_target_count,):
                raise InputError(
                    f"morph_weights must have shape ({mesh.morph_target_count},), got {w.shape}"
                )
            morph = morph_blocks(self.mesh.morph_packing, w[None])[0]
            spec = si.morph_spec(self.mesh.morph_packing, bool(morph["header"][0] > 0))
        pose = skinning.pack(bones, self.bone_count, rest_matrices=self.rest_matrices)
        kept = np.array(bones, dtype=np.float64)  # validated by pack(): numbers, its shape
        weights = None if morph_weights is None else np.array(morph_weights, np.float32)
        motion: dict[str, object] = {}
        if previous is not None or dt is not None:
            skinner = self.skinner
            if skinner is None or not self.reads_motion:
                raise InputError(
                    f"previous= and dt= are for methods that move with the motion (velocity "
                    f"skinning); method {self.method!r} does not"
                )
            before = None if previous is None else np.array(previous, dtype=np.float64)
            pose_motion(skinner, kept, before, dt, batched=False)  # validated now, not at draw
            motion = {"previous": before, "dt": dt}
        self.pose, self.morph, self.morph_spec = pose, morph, spec
        self.bones, self.morph_weights = kept, weights
        self.posed = (pose, kept, weights, motion)

    def set_scalar(self, values: ArrayLike | None) -> None:
        """Colour this instance by a per-vertex scalar ``(N,)`` in 0..1 (clipped; NaN shows as
        0) as a heat map instead of shading its colour, e.g. |DQS - LBS| divided by the
        colour bar's top (:mod:`vkdqs.app.overlay`); None shades it again."""
        if values is None:
            self.scalar = None
            return
        try:
            v = np.asarray(values, dtype=np.float64)
        except (ValueError, TypeError) as exc:
            raise InputError(f"scalar must be numbers, one per vertex: {exc}") from None
        n = self.mesh.mesh.vertex_count
        if v.shape != (n,):
            raise InputError(f"scalar must have shape ({n},), one per vertex; got {v.shape}")
        self.scalar = si.scalar_array(v)

    def set_model(self, model: ArrayLike) -> None:
        """Place the instance with a (4, 4) affine model matrix (mesh space to world space)."""
        try:
            m = np.asarray(model, dtype=np.float64)
        except (ValueError, TypeError) as exc:
            raise InputError(f"model must be a finite (4, 4) matrix of numbers: {exc}") from None
        if m.shape != (4, 4):
            raise InputError(f"model must be a finite (4, 4) matrix, got shape {m.shape}")
        if not np.isfinite(m).all():
            r, c = (int(i) for i in np.argwhere(~np.isfinite(m))[0])
            raise InputError(f"model must be a finite (4, 4) matrix; entry [{r}, {c}] is {m[r, c]}")
        det = np.linalg.det(m[:3, :3])
        if abs(det) < SINGULAR_DET:
            raise InputError(
                f"model matrix is singular (det {det:.3g}); hide the instance "
                "(instance.visible = False) instead of scaling it to zero"
            )
        self.model = m
        self.mirrored = bool(det < 0.0)
