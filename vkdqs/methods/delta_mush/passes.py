"""Classic Delta Mush's compute passes after the skinning (:class:`DeltaMushPasses`).

A :class:`vkdqs.Skinner` (compute path) with ``method="delta_mush"`` (the registry's method: LBS
under the mush), or a :class:`DeltaMushSkinner` (any base method, its own iterations and step),
records :class:`DeltaMushPasses` after the skinning dispatch of each pose: ``delta_mush.comp``
on the skinned positions in its output buffer (a :class:`vkdqs.engine.passes.SkinPass` after the
skinning, made by the method's ``after`` hook or ``DeltaMushSkinner``):
``iterations`` smoothing dispatches ping-ponging between two rgba32f scratch buffers (one pose's
worth each, reused pose after pose), one that rebuilds each vertex from the frame of the
smoothed mesh and its bind-time offset, and one that writes the result's positions and
area-weighted normals back over the skinned ones, with a compute -> compute barrier before each;
all in the Skinner's one submission, before its readback.
The bind (smoothing the rest mesh, the offsets) is the float64 reference's,
:func:`vkdqs.methods.delta_mush.reference.delta_mush_bind`;
:func:`vkdqs.methods.delta_mush.reference.delta_mush_reference` is what the GPU result is tested
against.

The Skinner records them (``Skinner.add_pass``); this module does not import it
(:mod:`vkdqs.methods.delta_mush.gpu` holds :class:`DeltaMushSkinner`, a Skinner subclass).
Threads, interrupts and ownership are the Skinner's: calls on one Skinner take turns (a lock);
every Vulkan object the passes make is owned by the Skinner and destroyed by its ``close``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ... import shader_interface as si
from ...errors import LimitError
from ...gpu import Buffer, BufferView, ComputePass, compute_barrier, texel_buffer
from ...gpu.calls import vk
from .reference import DeltaMush, incident_faces, node_corners

if TYPE_CHECKING:
    from ...engine.passes import PassTarget
    from ...engine.skinner import Skinner
    from ..needs import MethodInputs

__all__ = ["DeltaMushPasses", "fan_order", "overflow_list", "padded_groups", "topology_arrays"]

SHADER = "delta_mush.comp"
#: Workgroup size of the passes (the skinning's is si.LOCAL_SIZE).
LOCAL_SIZE = 64
#: The descriptor sets: each reads one scratch buffer and writes the other (both also bind the
#: Skinner's output, which the first pass reads and the last writes).
_SETS = {"ab": ("a", "b"), "ba": ("b", "a")}
#: The (pass, reads the Skinner's output) pipelines the passes use (each also in an overflow
#: variant for the vertices of more than FIXED neighbours, when the mesh has some).
_PIPELINES = (
    (si.DELTA_MUSH_SMOOTH, True),
    (si.DELTA_MUSH_SMOOTH, False),
    (si.DELTA_MUSH_REBUILD, True),
    (si.DELTA_MUSH_REBUILD, False),
    (si.DELTA_MUSH_NORMALS, False),
)


def padded_groups(
    offsets: np.ndarray, values: np.ndarray, width: int, pad: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists regrouped in rows of ``width`` entries (a texel each): every row's list padded
    with its ``pad`` value to a multiple of ``width``. Returns (each list's first row, rows)."""
    count = np.diff(offsets)
    groups = -(-count // width)
    first = np.zeros(len(count) + 1, np.int64)
    np.cumsum(groups, out=first[1:])
    out = np.repeat(pad, groups * width, axis=0)
    owner = np.repeat(np.arange(len(count)), count)
    k = np.arange(len(values)) - offsets[:-1][owner]
    out[first[:-1][owner] * width + k] = values
    return first[:-1], out.reshape(-1, width * (out.shape[1] if out.ndim > 1 else 1))


#: Vertices with more neighbours than this keep their corner list (bounds the ring search).
MAX_RING = 16


def fan_order(
    offsets: np.ndarray,
    neighbours: np.ndarray,
    corner_offsets: np.ndarray,
    corners: np.ndarray,
    first: np.ndarray,
    canonical: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Which vertices are the centre of one closed, consistently wound fan of triangles (an
    interior manifold vertex of at most MAX_RING neighbours), and the neighbour lists (CSR as
    ``offsets``, ``neighbours``) each starting with ``first[v]`` (the frame neighbour), a fan's
    in fan order. Around a fan's centre the triangles are ``(v, ring[i], ring[i + 1])``
    (cyclically), so the shader gets the area-weighted normal from the neighbours it loads
    anyway.

    With ``canonical`` (a welded bind's
    :attr:`~vkdqs.methods.delta_mush.reference.DeltaMush.canonical`) the lists are the nodes'
    (:func:`vkdqs.methods.delta_mush.reference.node_corners`), centred on ``canonical[v]``.

    Returns (is_fan (N,), neighbours (2 E,)); the other lists keep their order but for
    ``first``, swapped to the front."""
    n = len(offsets) - 1
    count = np.diff(corner_offsets)
    owner = np.repeat(np.arange(n), count)
    nxt, prv = corners[:, 0], corners[:, 1]
    ok = (count == np.diff(offsets)) & (count >= 3) & (count <= MAX_RING)
    centre_of = owner if canonical is None else np.asarray(canonical)[owner]
    bad = (nxt == centre_of) | (prv == centre_of) | (nxt == prv)
    # the corner following corner k around its vertex: the one whose next is k's prev
    key = owner * n + nxt
    order = np.argsort(key, kind="stable")
    keys = key[order]
    dup = np.zeros(len(keys), bool)
    dup[1:] = keys[1:] == keys[:-1]
    bad[order[dup]] = True
    pos = np.minimum(np.searchsorted(keys, owner * n + prv), max(len(keys) - 1, 0))
    found = keys[pos] == owner * n + prv if len(keys) else np.zeros(0, bool)
    bad |= ~found
    ok &= ~np.bincount(owner, weights=bad, minlength=n).astype(bool)
    succ = np.where(found, order[pos] if len(keys) else 0, -1)
    centre = np.flatnonzero(ok)
    ring = np.zeros((len(centre), MAX_RING), np.int64)
    start = corner_offsets[centre]
    cur = start.copy()
    closed = np.zeros(len(centre), np.int64)  # the step at which the walk first came back
    for j in range(MAX_RING):  # a step for every fan at once
        ring[:, j] = nxt[cur]
        cur = succ[cur]
        closed = np.where((closed == 0) & (cur == start), j + 1, closed)
    good = closed == count[centre]
    centre, ring = centre[good], ring[good]
    is_fan = np.zeros(n, bool)
    is_fan[centre] = True
    # every list starts with first[v]: swapped to the front, a ring rotated to start there
    degree = np.diff(offsets)
    out = np.array(neighbours, np.int64)
    at = np.flatnonzero(out == np.repeat(first, degree))  # one a vertex with neighbours
    head = offsets[:-1][degree > 0]
    out[at], out[head] = out[head], out[at]
    deg = count[centre][:, None]
    j = np.arange(MAX_RING)[None]
    inside = j < deg
    shift = np.argmax(inside & (ring == first[centre][:, None]), axis=1)[:, None]
    ring = np.take_along_axis(ring, (j + shift) % deg, axis=1)
    out[(offsets[centre][:, None] + j)[inside]] = ring[inside]
    return is_fan, out


def overflow_list(bind: DeltaMush) -> tuple[int, int]:
    """Where :func:`topology_arrays` puts the list of the vertices of more than FIXED
    neighbours (its first texel in the neighbours buffer) and how many it lists."""
    degree = np.diff(bind.offsets)
    extra = np.maximum(degree - FIXED, 0)
    first = 2 * bind.vertex_count + int((-(-extra // 4)).sum())
    return first, int((degree > FIXED).sum())


#: Neighbours in a vertex's two fixed texels; bit 31 of its meta word marks a fan's centre.
FIXED = 7
FAN = 1 << 31


def topology_arrays(bind: DeltaMush) -> dict[int, np.ndarray]:
    """The texel arrays ``delta_mush.comp`` reads (binding -> array, see
    :data:`vkdqs.shader_interface.DELTA_MUSH_TEXELS`), at least one texel each.

    Neighbours: texels ``2 v`` and ``2 v + 1`` hold v's first FIXED neighbours, padded with v
    itself (it adds nothing: ``q - p = 0``, a zero cross product), and a meta word (the degree,
    FAN for the centre of a closed fan); the rest follow the 2 N fixed texels, 4 a texel. The
    first is the frame neighbour; a fan's neighbours are in fan order (:func:`fan_order`). Per
    vertex (topology): its first overflow texel, degree, first corner texel and corner count; a
    fan has no corners (the shader takes its normal from the ring), the others' corners (next,
    prev) come 2 a texel. After the overflow texels, the list of the vertices of more than FIXED
    neighbours, 4 a texel (:func:`overflow_list`)."""
    n = bind.vertex_count
    me = np.arange(n)
    corner_offsets, corners = node_corners(bind.faces, bind.canonical)
    is_ring, nbs = fan_order(
        bind.offsets,
        bind.neighbours,
        corner_offsets,
        corners,
        bind.frame_neighbour,
        bind.canonical,
    )
    degree = np.diff(bind.offsets)
    owner = np.repeat(me, degree)
    k = np.arange(len(nbs)) - bind.offsets[:-1][owner]
    fixed = np.repeat(me, 2 * 4).reshape(n, 8)
    head = k < FIXED
    fixed[owner[head], k[head]] = nbs[head]
    fixed[:, 7] = degree | np.where(is_ring, FAN, 0)
    extra = np.zeros(n + 1, np.int64)
    np.cumsum(np.maximum(degree - FIXED, 0), out=extra[1:])
    first_x, overflow = padded_groups(extra, nbs[~head], 4, me)
    listed = np.flatnonzero(degree > FIXED)  # run again by the overflow dispatches
    vlist = np.zeros(-(-len(listed) // 4) * 4, np.int64)
    vlist[: len(listed)] = listed
    keep = ~is_ring[np.repeat(me, np.diff(corner_offsets))]
    kept = np.zeros(n + 1, np.int64)
    np.cumsum(np.where(is_ring, 0, np.diff(corner_offsets)), out=kept[1:])
    first_c, cr = padded_groups(kept, corners[keep], 2, np.stack([me, me], axis=1))
    topology = np.stack([2 * n + first_x, degree, first_c, np.diff(kept)], axis=1)
    deltas = np.zeros((n, 4), np.float32)
    deltas[:, :3] = bind.deltas
    return {
        0: topology.astype(np.uint32),
        1: np.concatenate([fixed.reshape(-1, 4), overflow, vlist.reshape(-1, 4)]).astype(np.uint32),
        2: cr.astype(np.uint32) if len(cr) else np.zeros((1, 4), np.uint32),
        3: deltas,
        8: output_corners(bind),
    }


#: Output-normal header flag: the vertex's normal is its frame normal (its triangles are the
#: welded mesh's).
SAME = 1 << 31


def output_corners(bind: DeltaMush) -> np.ndarray:
    """The normals pass's own triangles (binding 8, rgba32ui): N header texels, each vertex's
    (first corner texel, corner count, 0, 0), then the corners (next, prev) 2 a texel. A vertex
    whose triangles are the welded mesh's (it and their other corners alone at their positions)
    has SAME in its count: its normal is its frame normal (the fan or corners of binding 1 and
    2, over the same triangles); the others (a seam's copies, their neighbours) sum their own
    triangles, so a hard edge stays hard while the frames are the nodes'."""
    n = bind.vertex_count
    me = np.arange(n)
    offsets, corners = incident_faces(bind.faces, n)
    alone = np.bincount(bind.canonical, minlength=n)[bind.canonical] == 1
    welded = (bind.canonical[corners] != corners).any(axis=1)  # a corner of a copy
    alone &= np.bincount(np.repeat(me, np.diff(offsets)), welded, minlength=n) == 0
    count = np.where(alone, 0, np.diff(offsets))
    kept = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=kept[1:])
    keep = ~alone[np.repeat(me, np.diff(offsets))]
    first, cr = padded_groups(kept, corners[keep], 2, np.stack([me, me], axis=1))
    header = np.zeros((n, 4), np.int64)
    header[:, 0] = n + first
    header[:, 1] = np.diff(kept) | np.where(alone, SAME, 0)
    out = np.concatenate([header, cr.reshape(-1, 4)]) if len(cr) else header
    return (out if len(out) else np.zeros((1, 4), np.int64)).astype(np.uint32)


class DeltaMushPasses:
    """The Delta Mush passes of one compute-path :class:`~vkdqs.engine.skinner.Skinner`: its
    topology texel buffers, two scratch buffers, descriptor sets and pipelines (all owned by the
    Skinner), and the recording of each pose's passes after its skinning dispatch.

    Parameters
    ----------
    skinner : Skinner
        Created (its mesh uploaded); its path is ``"compute"``.
    bind : DeltaMush
        The float64 bind of its mesh (:func:`vkdqs.methods.delta_mush.reference.delta_mush_bind`).
    """

    def __init__(self, skinner: Skinner, bind: DeltaMush) -> None:
        self.skinner = skinner
        self.bind = bind
        dev, n, label = skinner.device, skinner.vertex_count, f"delta mush {skinner.method}"
        limit = dev.info.max_texel_buffer_elements
        self._texels: dict[int, BufferView] = {}
        arrays = topology_arrays(bind)
        for binding, fmt in si.DELTA_MUSH_TEXELS:
            arr = arrays[binding]
            if arr.shape[0] > limit:
                raise LimitError(
                    f"{label}: {arr.shape[0]} texels for binding {binding} exceed this device's "
                    f"maxTexelBufferElements ({limit})"
                )
            buffer, view = texel_buffer(dev, arr, int(fmt), label=f"{label} {binding}")
            skinner.own(buffer)
            skinner.own(view)
            self._texels[binding] = view
        self._scratch: dict[str, BufferView] = {}
        usage = (
            vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        )
        for name in ("a", "b"):
            buf = skinner.own(Buffer(dev, 16 * n, usage, label=f"{label} {name}", memory="gpu"))
            fmt = int(si.DELTA_MUSH_SCRATCH_FORMAT)
            self._scratch[name] = skinner.own(BufferView(dev, buf, fmt, label=f"{label} {name}"))
        self._pass = ComputePass(
            skinner,
            skinner.pipelines,
            SHADER,
            si.DELTA_MUSH_BINDINGS,
            si.DELTA_MUSH_PUSH_BYTES,
            sets=2 * len(_SETS),  # the batch's, then Skinner.record's ring's
            label=label,
        )
        self._sets = {name: i for i, name in enumerate(_SETS)}
        self._local_size = LOCAL_SIZE
        self._overflow = overflow_list(bind)
        variants = (False, True) if self._overflow[1] else (False,)
        self._pipelines = {
            (k, from_out, overflow): self._pass.pipeline(
                (
                    (si.LOCAL_SIZE_ID, self._local_size),
                    (si.DELTA_MUSH_PASS_ID, k),
                    (si.DELTA_MUSH_FROM_OUT_ID, int(from_out)),
                    (si.DELTA_MUSH_OVERFLOW_ID, int(overflow)),
                )
            )
            for k, from_out in _PIPELINES
            for overflow in variants
        }
        #: the generation the batch's sets and the ring's last pointed at
        self._written: list[int | None] = [None, None]

    #: it records for Skinner.record's ring too (sets of its own)
    records_ring = True

    @classmethod
    def from_inputs(cls, skinner: Skinner, inputs: MethodInputs) -> DeltaMushPasses:
        """The passes of a method that needs a Delta Mush bind (its ``after`` hook): with the
        bind in ``inputs`` (given, or the mesh's default)."""
        return cls(skinner, inputs.delta_mush)  # type: ignore[arg-type]

    def _write_sets(self, out_view: BufferView, ring: int) -> None:
        """Point the batch's sets (``ring`` 0) at the scratch buffers and the Skinner's current
        output (made again when the batch size changes; every submission was waited for), or
        the ring's (1) at the ring's output (made once)."""
        for name, index in self._sets.items():
            src, dst = _SETS[name]
            views = {
                **self._texels,
                si.DELTA_MUSH_SRC_OUT: out_view,
                si.DELTA_MUSH_DST_OUT: out_view,
                si.DELTA_MUSH_SRC: self._scratch[src],
                si.DELTA_MUSH_DST: self._scratch[dst],
            }
            self._pass.write(views, index + ring * len(_SETS))

    def passes(
        self, p: int, poses: int
    ) -> list[tuple[tuple[int, bool, bool], str, tuple[int, ...]]]:
        """Pose ``p``'s dispatches: (pipeline, descriptor set, push constant uints but the
        step). Each pass reads ``cur`` (the Skinner's output first, then a scratch buffer) and
        writes the other scratch buffer; the last writes the output. A mesh with vertices of
        more than FIXED neighbours runs each pass again on those (the overflow dispatch)."""
        n, out = self.bind.vertex_count, []
        first, listed = self._overflow
        base, normals = 3 * n * p, 3 * n * (poses + p)
        cur = "out"
        kinds = [si.DELTA_MUSH_SMOOTH] * self.bind.iterations
        kinds += [si.DELTA_MUSH_REBUILD, si.DELTA_MUSH_NORMALS]
        for kind in kinds:
            last = kind == si.DELTA_MUSH_NORMALS
            bases = (0, base, normals) if last else (base, 0, 0)
            dset = "ab" if cur == "a" else "ba"
            out.append(((kind, cur == "out", False), dset, (n, *bases, 0)))
            if listed:
                out.append(((kind, cur == "out", True), dset, (listed, *bases, first)))
            cur = "b" if cur == "a" else "a"
        return out

    def record(self, cmd: Any, target: PassTarget) -> None:
        """After the skinning dispatches: each pose's Delta Mush passes, a barrier before each
        (nothing for a dispatch that writes no vertices)."""
        if not target.writes_vertices:
            return
        ring = int(target.ring)
        if self._written[ring] != target.generation:
            self._write_sets(target.vertices, ring)
            self._written[ring] = target.generation
        push = np.zeros(si.DELTA_MUSH_PUSH_BYTES // 4, np.uint32)
        push[4:5].view(np.float32)[0] = self.bind.step
        self._pass.begin(cmd)
        for p in target.pose_range:
            for pipeline, dset, uints in self.passes(p, target.poses):
                compute_barrier(cmd)
                push[:4], push[5] = uints[:4], uints[4]
                self._pass.dispatch(
                    cmd,
                    self._pipelines[pipeline],
                    uints[0],
                    self._local_size,
                    push,
                    self._sets[dset] + ring * len(_SETS),
                )
