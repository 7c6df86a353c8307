"""glTF 2.0 loading: skinned meshes, skins, the node hierarchy and animations as numpy arrays.

:func:`load_gltf` reads a ``.gltf`` (with external ``.bin`` files or base64 ``data:`` URIs) or a
``.glb`` file, checks it against the rules of the glTF 2.0 specification that matter for skinning,
and returns a :class:`GltfScene`. The JSON is parsed with the standard library and every accessor
is decoded here with numpy, so every byte range, alignment, component type and index is checked.
Nothing here touches the GPU.

What is loaded
--------------
* Meshes: triangle primitives (modes TRIANGLES, TRIANGLE_STRIP and TRIANGLE_FAN, converted to
  triangle lists; indexed or not), ``POSITION``, ``NORMAL`` (computed when absent, see
  :func:`vertex_normals`) and every ``JOINTS_n``/``WEIGHTS_n`` set.
* ``KHR_mesh_quantization`` (when listed in ``extensionsUsed``; it may be required): integer
  ``POSITION`` (BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT, normalized or not) and normalized
  BYTE/SHORT ``NORMAL``, converted to float as glTF says (normalized signed ``c``:
  ``max(c / (2^(b-1) - 1), -1)``; unsigned ``c / (2^b - 1)``; quantized normals renormalized).
  The file's node transforms and inverse bind matrices carry the dequantization; nothing else
  is needed. Morph-target deltas may be quantized as the extension lists (POSITION: BYTE or
  SHORT, normalized or not; NORMAL: normalized BYTE or SHORT), ``TEXCOORD_0`` may be
  (normalized or not) BYTE/SHORT or non-normalized UNSIGNED_BYTE/SHORT too, and ``TANGENT``
  normalized BYTE/SHORT. Without the extension such an accessor is an error naming it.
* ``EXT_meshopt_compression``, ``KHR_meshopt_compression`` and ``KHR_draco_mesh_compression``
  with the ``vkdqs[compression]`` extra (see :mod:`vkdqs.gltf.compression`): the decoded data
  goes through the same checks as uncompressed data.
* Morph targets: each primitive's ``targets`` (POSITION and NORMAL deltas, sparse accessors
  too; TANGENT and other target attributes are ignored), the same count on every primitive of a
  mesh; ``mesh.weights``, ``node.weights`` (lengths checked) and ``mesh.extras.targetNames``.
* ``TEXCOORD_0`` (float, normalized unsigned byte/short), ``COLOR_0`` (VEC3/VEC4 float or
  normalized unsigned byte/short; linear) and ``TANGENT`` (VEC4, ``w`` = +-1; kept on the
  :class:`Primitive`, not drawn: one vkdqs cannot use is left out with a warning) and each
  primitive's ``material``.
* Materials, textures, samplers and images (:mod:`vkdqs.gltf.materials`): base colour factor
  and texture (PNG, JPEG, ``EXT_texture_webp``; ``KHR_texture_transform``), alpha mode,
  double-sidedness. A broken, missing or refused image is a :class:`GltfWarning` and an
  untextured draw.
* Skins: joints, inverse bind matrices (identity when absent), skeleton root.
* Nodes: TRS or ``matrix`` local transforms and the hierarchy.
* Animations: translation/rotation/scale channels with STEP, LINEAR and CUBICSPLINE samplers,
  and ``weights`` channels (M values per key, on a node whose mesh has M targets).

What is ignored (the specification lets a loader ignore it): material properties other than the
base colour, alpha and sidedness, images no base-colour texture uses (their ``uri`` is checked,
not read), cameras, lights, ``extras``, unknown ``extensionsUsed``, other vertex attributes
(TEXCOORD_1, COLOR_1, ...).

Untrusted files
---------------
A model file reads only its own data: buffer (and image) URIs are base64 ``data:`` URIs or files
inside the model's folder, regular files only, read up to their ``byteLength`` (see
:mod:`vkdqs.gltf.uris`). It costs time and memory in proportion to its size: each array of the
document is checked once (arrays of objects, such as the nodes, column by column:
:mod:`vkdqs.gltf.columns`), the hierarchy is resolved by pointer jumping
(:mod:`vkdqs.gltf.hierarchy`), accessors, primitives, animation keys and images that several
users share are decoded once, and everything the file makes the loader hold is counted against
``max_bytes`` at its peak before it is allocated; the default ``max_bytes`` grows with the file
(:func:`vkdqs.gltf.accessors.default_max_bytes`).

Errors
------
A file that cannot be read safely, or whose malformed or unsupported parts would change what is
skinned or drawn, raises one :class:`GltfError` whose message names the file, the JSON path and
the problem, e.g.
``model.gltf: accessors[7].count: 40 elements of 12 bytes from offset 0 exceed bufferViews[2]
(byteLength 400)``. What does not change what vkdqs skins or draws (a name that is not a string,
a malformed ``scene``, a ``bufferView.target`` glTF does not define, morph weights for a mesh
without morph targets, a tangent it cannot use, ...) loads as three.js would, with a
:class:`GltfWarning` naming the JSON path; docs/bad-input.md lists both. Mistakes of the caller
(an animation index that does not exist) raise :class:`vkdqs.errors.InputError`.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vkdqs import dq
from vkdqs.errors import InputError
from vkdqs.gltf import columns, compression, hierarchy
from vkdqs.gltf.accessors import (
    _COMPONENTS,
    BYTE,
    DEFAULT_MAX_BYTES,
    FLOAT,
    SHORT,
    UNSIGNED_BYTE,
    UNSIGNED_INT,
    UNSIGNED_SHORT,
    Budget,
    _Accessor,
)
from vkdqs.gltf.animation import Animation, Channel, WeightsChannel
from vkdqs.gltf.container import _parse_glb, _parse_json
from vkdqs.gltf.errors import GltfError, _BudgetSpent, _show
from vkdqs.gltf.geometry import _triangulate, vertex_normals
from vkdqs.gltf.materials import issue_warnings, read_materials
from vkdqs.gltf.nodes import _more, _NodeReader
from vkdqs.gltf.prescan import oversized_skin
from vkdqs.gltf.scene import GltfScene, Mesh, Node, Primitive, Skin, _NodeTable
from vkdqs.gltf.uris import open_regular_file, read_at_most

_log = logging.getLogger("vkdqs.gltf")


_MODES = {
    0: "POINTS",
    1: "LINES",
    2: "LINE_LOOP",
    3: "LINE_STRIP",
    4: "TRIANGLES",
    5: "TRIANGLE_STRIP",
    6: "TRIANGLE_FAN",
}
_INTERPOLATIONS = ("LINEAR", "STEP", "CUBICSPLINE")
_PATHS = ("translation", "rotation", "scale", "weights")

# Required extensions that change nothing vkdqs reads (materials, textures, lights): a file that
# requires them still has plain geometry, skins and animations, so it loads. Any other required
# extension (Draco, meshopt, animation pointers, ...) changes how the data we read must be
# decoded, and the spec says a loader that does not support it must fail; KHR_mesh_quantization
# is implemented (_SUPPORTED_REQUIRED).
_HARMLESS_REQUIRED = re.compile(
    r"^(KHR_materials_\w+|KHR_texture_transform|KHR_texture_basisu|EXT_texture_webp|"
    r"EXT_texture_avif|KHR_lights_punctual)$"
)
#: Required extensions vkdqs implements (the compressions with the ``vkdqs[compression]`` extra).
_SUPPORTED_REQUIRED = ("KHR_mesh_quantization", *compression.MESHOPT, compression.DRACO)
_QUANTIZATION = "KHR_mesh_quantization"
_FLOAT3 = ((FLOAT, False),)
# KHR_mesh_quantization: the component types it allows for the attributes vkdqs reads.
_QUANTIZED_POSITION = (
    (FLOAT, False),
    *((ct, norm) for ct in (BYTE, UNSIGNED_BYTE, SHORT, UNSIGNED_SHORT) for norm in (False, True)),
)
_QUANTIZED_NORMAL = ((FLOAT, False), (BYTE, True), (SHORT, True))
# KHR_mesh_quantization: morph-target deltas (signed only: a delta has a sign).
_QUANTIZED_DELTA_POSITION = (
    (FLOAT, False),
    *((ct, norm) for ct in (BYTE, SHORT) for norm in (False, True)),
)
_QUANTIZED_DELTA_NORMAL = _QUANTIZED_NORMAL
# Component types of a ``weights`` sampler's output (glTF 2.0, animation samplers).
_WEIGHT_OUTPUTS = (
    (FLOAT, False),
    (BYTE, True),
    (UNSIGNED_BYTE, True),
    (SHORT, True),
    (UNSIGNED_SHORT, True),
)
# TEXCOORD_n: glTF core, and what KHR_mesh_quantization adds.
_TEXCOORD = ((FLOAT, False), (UNSIGNED_BYTE, True), (UNSIGNED_SHORT, True))
_QUANTIZED_TEXCOORD = (
    *_TEXCOORD,
    (BYTE, False),
    (BYTE, True),
    (SHORT, False),
    (SHORT, True),
    (UNSIGNED_BYTE, False),
    (UNSIGNED_SHORT, False),
)
_COLOR = ((FLOAT, False), (UNSIGNED_BYTE, True), (UNSIGNED_SHORT, True))
_TANGENT = ((FLOAT, False),)
_QUANTIZED_TANGENT = ((FLOAT, False), (BYTE, True), (SHORT, True))
#: The application-specific vertex attribute holding each vertex's DQS fraction for
#: ``method="blend"`` (a float, or a normalized unsigned byte/short, in [0, 1]).
DQS_BLEND_ATTRIBUTE = "_DQS_BLEND"
#: Weights whose sum differs from 1 by more than this are reported (once per file) and renormalized.
WEIGHT_SUM_TOL = 1e-3
#: Most joints of one skin: ``JOINTS_n`` are unsigned bytes or shorts, so no vertex can use a
#: joint past 65535. A skin with more is refused before its nodes are read.
MAX_JOINTS = 65536


class _Reader(_NodeReader):
    """Checks and decodes one glTF document. Each ``fail`` names the JSON path."""

    def __init__(
        self,
        path: Path,
        doc: dict,
        glb_bin: bytes | memoryview | None,
        *,
        budget: Budget | None = None,
    ) -> None:
        super().__init__(path, doc, glb_bin, budget=budget)
        self.weight_warnings: list[tuple[str, int, int, float]] = []
        # morph targets of each mesh (set by meshes(); weights channels check against it)
        self._morph_counts: list[int] = []
        # KHR_mesh_quantization listed in extensionsUsed: integer POSITION/NORMAL are allowed
        self.quantized = False
        # Each decoded once however many users share it (see primitive() and _channel()).
        self._primitives: dict[str, tuple[Primitive, tuple | None]] = {}
        self._key_times: dict[int, tuple[NDArray[np.float64], float]] = {}
        self._key_values: dict[tuple, tuple] = {}

    # -- document ----------------------------------------------------------------------------

    def check_asset(self) -> None:
        asset = self.get_obj(self.doc, "asset", "", required=True)
        version = self.get_str(asset, "version", "asset", required=True)
        m = re.fullmatch(r"(\d+)\.(\d+)", version)
        if m is None:
            self.fail("asset.version", f"{_show(version)} is not of the form major.minor")
        if m.group(1) != "2":
            self.fail("asset.version", f"{version}: only glTF 2.x is supported")
        if "minVersion" in asset:
            mv = self.get_str(asset, "minVersion", "asset")
            mm = re.fullmatch(r"(\d+)\.(\d+)", mv)
            if mm is None or (int(mm.group(1)), int(mm.group(2))) > (2, 0):
                self.fail("asset.minVersion", f"{_show(mv)}: vkdqs reads glTF 2.0")
        required = self.get_list(self.doc, "extensionsRequired", "")
        for k, ext in enumerate(required):
            if not isinstance(ext, str):
                self.fail(f"extensionsRequired[{k}]", f"must be a string, got {_show(ext)}")
        # extensionsUsed only lists names: of them vkdqs reads KHR_mesh_quantization's
        used = self.doc.get("extensionsUsed", [])
        if not isinstance(used, list):
            self.warn("extensionsUsed", f"must be an array, got {_show(used)}; ignored")
            used = []
        for k, ext in enumerate(used):
            if not isinstance(ext, str):
                self.warn(f"extensionsUsed[{k}]", f"must be a string, got {_show(ext)}; ignored")
        for k, ext in enumerate(required):
            if not _HARMLESS_REQUIRED.match(ext) and ext not in _SUPPORTED_REQUIRED:
                self.fail(f"extensionsRequired[{k}]", f"extension {ext!r} is not supported")
            if ext in (*compression.MESHOPT, compression.DRACO) and not compression.decoder(ext):
                self.fail(f"extensionsRequired[{k}]", compression.missing_decoder(ext))
        self.quantized = _QUANTIZATION in used

    def check_limits(self) -> None:
        """Limits a file can break before anything is decoded (its skins' joint counts)."""
        for s, sk in enumerate(self.array("skins")):
            joints = sk.get("joints")
            if isinstance(joints, list) and len(joints) > MAX_JOINTS:
                self.fail(f"skins[{s}].joints", _too_many_joints(len(joints)))

    def primitive(self, m: int, p: int, prim: dict, flat_normals: bool) -> Primitive:
        path = f"meshes[{m}].primitives[{p}]"
        attrs = self.get_obj(prim, "attributes", path, required=True)
        mode = self.get_int(prim, "mode", path, default=4)
        if mode not in _MODES:
            self.fail(f"{path}.mode", f"{mode} is not a glTF primitive mode")
        if mode not in (4, 5, 6):
            self.fail(
                f"{path}.mode",
                f"{mode} ({_MODES[mode]}) is not supported; vkdqs draws triangles "
                "(TRIANGLES, TRIANGLE_STRIP, TRIANGLE_FAN)",
            )
        # Primitives with the same accessors decode to the same arrays: decode them once, so
        # many primitives sharing one huge accessor cost what one does.
        draco = compression.draco_extension(self, prim, path)
        material = self.get_index(prim, "material", path, "materials")
        key = json.dumps(
            [attrs, prim.get("indices"), mode, flat_normals, draco, prim.get("targets")],
            sort_keys=True,
        )
        if key in self._primitives:
            decoded, warned = self._primitives[key]
            if warned is not None:  # reported for each primitive, as if decoded again
                self.weight_warnings.append((path, *warned[1:]))
        else:
            before = len(self.weight_warnings)
            if draco is not None:
                self._draco(path, prim, attrs, mode, draco)
            decoded = self._decode_primitive(path, prim, attrs, mode, flat_normals)
            warned = self.weight_warnings[before] if len(self.weight_warnings) > before else None
            self._primitives[key] = (decoded, warned)
        # the arrays are shared; only the material differs between such primitives
        return decoded if decoded.material == material else replace(decoded, material=material)

    def _draco(self, path: str, prim: dict, attrs: dict, mode: int, obj: dict) -> None:
        """Decode the primitive's KHR_draco_mesh_compression stream into its accessors (the
        uncompressed data is used, as the extension says, when DracoPy is missing and the
        extension is not required; a primitive without such data is then an error)."""
        dracopy = compression.decoder(compression.DRACO)
        if dracopy is None:
            ids = self.get_obj(obj, "attributes", f"{path}.extensions.{compression.DRACO}")
            users = [f"attributes.{k}" for k in ids or {} if k in attrs] + ["indices"]
            for user in users:
                key = user.split(".")[-1]
                i = attrs.get(key) if user != "indices" else prim.get("indices")
                a = self.array("accessors")
                if type(i) is int and 0 <= i < len(a) and "bufferView" not in a[i]:
                    self.fail(
                        f"{path}.{user}",
                        "has no uncompressed data, and "
                        + compression.missing_decoder(compression.DRACO),
                    )
            return
        d = compression.decode_draco(self, dracopy, obj, path, attrs, mode, "indices" in prim)
        targets = [(attrs[k], f"{path}.attributes.{k}", v) for k, v in d.attributes.items()]
        targets.append((prim["indices"], f"{path}.indices", d.indices[:, None]))
        for index, user, data in targets:
            i = self.as_index(index, user, "accessors")
            self._decoded[i] = data
            self._accessors.pop((i, True), None)
            self._accessors.pop((i, False), None)

    def _decode_primitive(
        self, path: str, prim: dict, attrs: dict, mode: int, flat_normals: bool
    ) -> Primitive:
        apath = f"{path}.attributes"
        positions = self._positions(path, attrs, apath)
        n = len(positions)

        def same_count(acc: _Accessor, user: str) -> None:
            if acc.count != n:
                self.fail(user, f"has {acc.count} elements but POSITION has {n}")

        normals = self._normals(attrs, apath, n, same_count)
        morph_p, morph_n, target_count = self._morph_targets(prim, path, n, same_count)
        joints, weights = self._skin_attributes(attrs, apath, n, same_count)
        uvs, colors, tangents = self._surface_attributes(attrs, apath, n, same_count)
        # Everything with one row per vertex (a flat-shaded primitive repeats them per corner).
        vertex: dict[str, NDArray | None] = {
            "positions": positions,
            "joints": joints,
            "weights": weights,
            "dqs_blend": self._dqs_blend(attrs, apath, n, same_count),
            "uvs": uvs,
            "colors": colors,
            "tangents": tangents,
        }
        morphs = {"morph_positions": morph_p, "morph_normals": morph_n}
        tri = self._triangles(path, prim, mode, n)
        computed = normals is None
        if computed and flat_normals:
            tri = self._flat_shaded(path, tri, vertex, morphs, target_count)
        return Primitive(
            normals=self._checked_normals(path, vertex["positions"], normals, tri),
            indices=tri.astype(np.uint32),
            mode=mode,
            normals_computed=computed,
            target_count=target_count,
            **vertex,
            **morphs,
        )

    def _positions(self, path: str, attrs: dict, apath: str) -> NDArray[np.float32]:
        """POSITION as float32 ``(N, 3)``: KHR_mesh_quantization integers as they are,
        normalized ones mapped to [-1, 1] / [0, 1] (the node transform, or a skin's inverse bind
        matrices, dequantizes them)."""
        if "POSITION" not in attrs:
            self.fail(apath, "POSITION is missing; vkdqs needs vertex positions")
        pos = self._vec3_attribute(attrs, apath, "POSITION", _QUANTIZED_POSITION)
        n = pos.count
        # The primitive's own positions and normals (float32 and the float64 normals math).
        self.charge(n * 48, path, f"{n} vertices")
        if pos.component_type == FLOAT:
            return pos.data.astype(np.float32)
        self.charge(n * 24, f"{apath}.POSITION", f"dequantizing {n} positions")
        return pos.floats().astype(np.float32)

    def _normals(
        self, attrs: dict, apath: str, n: int, same_count: Any
    ) -> NDArray[np.float32] | None:
        """NORMAL as float32 ``(N, 3)``, or None without one."""
        if "NORMAL" not in attrs:
            return None
        user = f"{apath}.NORMAL"
        nrm = self._vec3_attribute(attrs, apath, "NORMAL", _QUANTIZED_NORMAL)
        same_count(nrm, user)
        if nrm.component_type == FLOAT:
            return nrm.data.astype(np.float32)
        # normalized integers are unit only to within their precision: renormalize (zero ones
        # stay zero and are recomputed by _checked_normals)
        self.charge(n * 32, user, f"dequantizing {n} normals")
        v = nrm.floats()
        length = np.linalg.norm(v, axis=1, keepdims=True)
        return (v / np.where(length > 0.0, length, 1.0)).astype(np.float32)

    def _dqs_blend(
        self, attrs: dict, apath: str, n: int, same_count: Any
    ) -> NDArray[np.float32] | None:
        """The application attribute ``_DQS_BLEND`` as float32 ``(N,)`` in [0, 1], or None."""
        if DQS_BLEND_ATTRIBUTE not in attrs:
            return None
        user = f"{apath}.{DQS_BLEND_ATTRIBUTE}"
        ba = self.typed_accessor(
            self.as_index(attrs[DQS_BLEND_ATTRIBUTE], user, "accessors"),
            user,
            ("SCALAR",),
            ((FLOAT, False), (UNSIGNED_BYTE, True), (UNSIGNED_SHORT, True)),
            vertex=True,
        )
        same_count(ba, user)
        self.charge(n * 12, user, f"{n} DQS blend values")
        b = ba.floats()[:, 0]
        bad = ~((b >= 0.0) & (b <= 1.0))
        if np.any(bad):
            v = int(np.argmax(bad))
            self.fail(user, f"vertex {v} has DQS blend {b[v]}, not in [0, 1]")
        return b.astype(np.float32)

    def _triangles(self, path: str, prim: dict, mode: int, n: int) -> NDArray[np.int64]:
        """The primitive's triangle list ``[3 T]`` (int64): its ``indices`` (or ``arange`` when
        it has none) checked against ``n`` vertices, strips and fans converted."""
        if "indices" in prim:
            user = f"{path}.indices"
            ia = self.typed_accessor(
                self.as_index(prim["indices"], user, "accessors"),
                user,
                ("SCALAR",),
                ((UNSIGNED_BYTE, False), (UNSIGNED_SHORT, False), (UNSIGNED_INT, False)),
            )
            self.charge(ia.count * 9, user, f"{ia.count} indices")
            idx = ia.data[:, 0].astype(np.int64)
            restart = np.iinfo(ia.data.dtype).max
            bad = (idx >= n) | (idx == restart)
            if np.any(bad):
                k = int(np.argmax(bad))
                why = (
                    "the primitive-restart value, which glTF forbids"
                    if idx[k] == restart
                    else f"out of range for {n} vertices"
                )
                self.fail(user, f"element {k} is {idx[k]}: {why}")
        else:
            self.charge(n * 8, path, f"{n} indices")
            idx = np.arange(n, dtype=np.int64)
        if mode == 4 and len(idx) % 3:
            what = "indices" if "indices" in prim else "vertices"
            self.fail(path, f"TRIANGLES with {len(idx)} {what}, not a multiple of 3")
        # Strips and fans become lists (int64), then the uint32 indices of the Primitive.
        corners = len(idx) if mode == 4 else 3 * max(len(idx) - 2, 0)
        self.charge(corners * 12, path, f"{corners // 3} triangles")
        return _triangulate(idx, mode)

    def _flat_shaded(
        self,
        path: str,
        tri: NDArray[np.int64],
        vertex: dict[str, NDArray | None],
        morphs: dict[str, NDArray | None],
        target_count: int,
    ) -> NDArray[np.int64]:
        """Flat shading needs a vertex per triangle corner: repeat each per-vertex array of
        ``vertex`` and ``morphs`` (in place) per corner; returns the new triangle list."""
        joints = vertex["joints"]
        width = 0 if joints is None else joints.shape[1]
        self.charge(len(tri) * (48 + 6 * width), path, f"{len(tri)} flat-shaded corners")
        if any(d is not None for d in morphs.values()):
            self.charge(len(tri) * 24 * target_count, path, "flat-shaded morph deltas")
        for key, a in vertex.items():
            vertex[key] = None if a is None else a[tri]
        for key, d in morphs.items():
            morphs[key] = None if d is None else d[:, tri]
        return np.arange(len(tri), dtype=np.int64)

    def _checked_normals(
        self,
        path: str,
        positions: NDArray[np.float32],
        normals: NDArray[np.float32] | None,
        tri: NDArray[np.int64],
    ) -> NDArray[np.float32]:
        """The file's normals, or the computed ones when it has none; zero-length normals in
        the file get the computed smooth normal."""
        n = len(positions)
        if normals is None:
            self.charge(_normals_cost(n, len(tri)) + n * 12, path, f"{n} computed normals")
            return vertex_normals(positions, tri).astype(np.float32)
        self.charge(n * 64, path, f"checking {n} normals")
        bad = np.linalg.norm(normals.astype(np.float64), axis=1) < 1e-12
        if np.any(bad):
            # Exporters write zero normals on degenerate faces; SkinnedMesh needs unit normals,
            # so such vertices get the computed smooth normal instead.
            self.charge(_normals_cost(n, len(tri)) + n * 12, path, "recomputing zero normals")
            normals = normals.copy()
            normals[bad] = vertex_normals(positions, tri)[bad]
            _log.info("%s: %s: %d zero-length normals recomputed", self.name, path, bad.sum())
        return normals

    def _morph_targets(
        self, prim: dict, path: str, n: int, same_count: Any
    ) -> tuple[NDArray[np.float32] | None, NDArray[np.float32] | None, int]:
        """A primitive's ``targets``: (M, n, 3) POSITION and NORMAL deltas (zeros for a target
        without one, None when no target has it) and M."""
        targets = self.get_list(prim, "targets", path)
        if not targets:
            if "targets" in prim:
                self.warn(f"{path}.targets", "is empty: the primitive has no morph targets")
            return None, None, 0
        m = len(targets)
        out: dict[str, NDArray[np.float32]] = {}
        for t, target in enumerate(targets):  # over morph targets
            tpath = f"{path}.targets[{t}]"
            if not isinstance(target, dict):
                self.fail(tpath, f"must be an object, got {_show(target)}")
            for key, quantized in (
                ("POSITION", _QUANTIZED_DELTA_POSITION),
                ("NORMAL", _QUANTIZED_DELTA_NORMAL),
            ):
                if key not in target:
                    continue
                acc = self._vec3_attribute(target, tpath, key, quantized)
                same_count(acc, f"{tpath}.{key}")
                if key not in out:
                    self.charge(m * n * 12, f"{tpath}.{key}", f"{m} morph targets of {n} deltas")
                    out[key] = np.zeros((m, n, 3), np.float32)
                self.charge(n * 24, f"{tpath}.{key}", f"{n} deltas")
                out[key][t] = acc.floats() if acc.component_type != FLOAT else acc.data
        return out.get("POSITION"), out.get("NORMAL"), m

    def _quantized_only(self, acc: _Accessor, i: int, user: str, core: tuple) -> None:
        """GltfError for an accessor type only KHR_mesh_quantization allows, in a file that does
        not list it."""
        got = (acc.component_type, acc.normalized)
        if not self.quantized and got not in core:
            what = ("normalized " if acc.normalized else "") + _COMPONENTS[got[0]][0]
            self.fail(
                user,
                f"accessors[{i}] has {what} components, which only {_QUANTIZATION} allows; "
                "the file does not list it in extensionsUsed",
            )

    def _surface_attributes(
        self, attrs: dict, apath: str, n: int, same_count: Any
    ) -> tuple[NDArray | None, NDArray | None, NDArray | None]:
        """TEXCOORD_0 ``(N, 2)``, COLOR_0 ``(N, 4)`` and TANGENT ``(N, 4)`` as float32, or None."""
        uvs = colors = tangents = None
        if "TEXCOORD_0" in attrs:
            user = f"{apath}.TEXCOORD_0"
            i = self.as_index(attrs["TEXCOORD_0"], user, "accessors")
            acc = self.typed_accessor(i, user, ("VEC2",), _QUANTIZED_TEXCOORD, vertex=True)
            self._quantized_only(acc, i, user, _TEXCOORD)
            same_count(acc, user)
            self.charge(n * 24, user, f"{n} texture coordinates")
            uvs = acc.floats().astype(np.float32)
        if "COLOR_0" in attrs:
            user = f"{apath}.COLOR_0"
            i = self.as_index(attrs["COLOR_0"], user, "accessors")
            acc = self.typed_accessor(i, user, ("VEC3", "VEC4"), _COLOR, vertex=True)
            same_count(acc, user)
            self.charge(n * 48, user, f"{n} vertex colours")
            c = acc.floats()
            if c.shape[1] == 3:
                c = np.hstack([c, np.ones((n, 1))])
            bad = ~((c >= 0.0) & (c <= 1.0))
            if np.any(bad):
                v, k = np.argwhere(bad)[0]
                self.fail(user, f"vertex {v} has colour component {c[v, k]}, not in [0, 1]")
            colors = c.astype(np.float32)
        if "TANGENT" in attrs:
            try:
                tangents = self._tangents(attrs, apath, n, same_count)
            except _BudgetSpent:
                raise
            except GltfError as exc:
                # vkdqs draws no normal maps: a tangent it cannot use changes nothing drawn (the
                # accessor's bytes are still checked, as an unused accessor's)
                self.warn_error(exc, "TANGENT is not drawn by vkdqs; left out")
        return uvs, colors, tangents

    def _tangents(self, attrs: dict, apath: str, n: int, same_count: Any) -> NDArray[np.float32]:
        """TANGENT as float32 ``(N, 4)``, ``w`` = +-1 (GltfError otherwise)."""
        user = f"{apath}.TANGENT"
        i = self.as_index(attrs["TANGENT"], user, "accessors")
        acc = self.typed_accessor(i, user, ("VEC4",), _QUANTIZED_TANGENT, vertex=True)
        self._quantized_only(acc, i, user, _TANGENT)
        same_count(acc, user)
        self.charge(n * 48, user, f"{n} tangents")
        t = acc.floats()
        bad = np.abs(np.abs(t[:, 3]) - 1.0) > 1e-3
        if np.any(bad):
            v = int(np.argmax(bad))
            self.fail(user, f"vertex {v} has tangent w = {t[v, 3]}; glTF needs +1 or -1")
        return t.astype(np.float32)

    def _vec3_attribute(
        self, attrs: dict, apath: str, key: str, quantized: tuple[tuple[int, bool], ...]
    ) -> _Accessor:
        """The VEC3 accessor of attribute ``key``: float, or with KHR_mesh_quantization in
        extensionsUsed, one of the component types in ``quantized``."""
        user = f"{apath}.{key}"
        i = self.as_index(attrs[key], user, "accessors")
        if not self.quantized:
            acc = self.accessor(i, vertex=True)
            got = (acc.component_type, acc.normalized)
            if acc.type == "VEC3" and got in quantized and got not in _FLOAT3:
                what = ("normalized " if acc.normalized else "") + _COMPONENTS[got[0]][0]
                self.fail(
                    user,
                    f"accessors[{i}] has {what} components, which only {_QUANTIZATION} allows; "
                    "the file does not list it in extensionsUsed",
                )
        allowed = quantized if self.quantized else _FLOAT3
        return self.typed_accessor(i, user, ("VEC3",), allowed, vertex=True)

    def _skin_attributes(
        self, attrs: dict, apath: str, n: int, same_count: Any
    ) -> tuple[NDArray | None, NDArray | None]:
        sets = set()
        for key in attrs:
            m = re.fullmatch(r"(JOINTS|WEIGHTS)_(\d+)", key)
            if m:
                sets.add(int(m.group(2)))
        if not sets:
            return None, None
        joints, weights = [], []
        for k in range(max(sets) + 1):
            jkey, wkey = f"JOINTS_{k}", f"WEIGHTS_{k}"
            for key in (jkey, wkey):
                if key not in attrs:
                    self.fail(apath, f"{key} is missing (JOINTS_n/WEIGHTS_n come in pairs from 0)")
            juser, wuser = f"{apath}.{jkey}", f"{apath}.{wkey}"
            ja = self.typed_accessor(
                self.as_index(attrs[jkey], juser, "accessors"),
                juser,
                ("VEC4",),
                ((UNSIGNED_BYTE, False), (UNSIGNED_SHORT, False)),
                vertex=True,
            )
            wa = self.typed_accessor(
                self.as_index(attrs[wkey], wuser, "accessors"),
                wuser,
                ("VEC4",),
                ((FLOAT, False), (UNSIGNED_BYTE, True), (UNSIGNED_SHORT, True)),
                vertex=True,
            )
            same_count(ja, juser)
            same_count(wa, wuser)
            # float64 weights, uint16 joints, then both concatenated and the float32 weights.
            self.charge(n * 4 * (8 + 2 + 8 + 2 + 4), wuser, f"{n} vertex influences")
            w = wa.floats()
            if np.any(w < 0):
                v, c = np.argwhere(w < 0)[0]
                self.fail(wuser, f"vertex {v} has negative weight {w[v, c]}")
            joints.append(ja.data.astype(np.uint16))
            weights.append(w)
        j = np.concatenate(joints, axis=1)
        w = np.concatenate(weights, axis=1)
        total = w.sum(axis=1)
        off = np.abs(total - 1.0) > WEIGHT_SUM_TOL
        if np.any(off):
            v = int(np.argmax(off))
            self.weight_warnings.append((apath.rsplit(".", 1)[0], int(off.sum()), v, total[v]))
        return j, w.astype(np.float32)

    def meshes(self, flat_normals: bool) -> list[list[Primitive]]:
        out = []
        for m, mesh in enumerate(self.array("meshes")):
            path = f"meshes[{m}]"
            prims = self.get_list(mesh, "primitives", path, required=True)
            if not prims:
                self.fail(f"{path}.primitives", "must not be empty")
            decoded = []
            for p, prim in enumerate(prims):  # over primitives
                if not isinstance(prim, dict):
                    self.fail(f"{path}.primitives[{p}]", f"must be an object, got {_show(prim)}")
                decoded.append(self.primitive(m, p, prim, flat_normals))
                count = decoded[-1].target_count
                if count != decoded[0].target_count:
                    self.fail(
                        f"{path}.primitives[{p}].targets",
                        f"{count} morph targets, but primitives[0] has "
                        f"{decoded[0].target_count}; every primitive of a mesh needs the same",
                    )
            out.append(decoded)
            self._morph_counts.append(decoded[0].target_count)
        return out

    def check_node_weights(self, nodes: tuple[Node, ...]) -> tuple[Node, ...]:
        """Each node's ``weights`` has one value per morph target of its mesh; those of a node
        whose mesh has no morph targets weight nothing: a warning, and they are dropped."""
        assert self.node_table is not None
        mesh = self.node_table.mesh
        have = self._node_weight_counts
        counts = np.array([*self._morph_counts, 0], dtype=np.int64)[mesh]
        idle = (have >= 0) & (counts == 0)
        if idle.any():
            i = int(np.argmax(idle))
            self.warn(
                f"nodes[{i}].weights",
                f"meshes[{mesh[i]}] has no morph targets to weight; ignored{_more(idle)}",
            )
            have = np.where(idle, -1, have)
            self._node_weight_counts = have
            nodes = tuple(
                replace(nd, weights=None) if idle[nd.index] else nd
                for nd in nodes  # over nodes only when some are idle (a malformed file)
            )
        bad = (have >= 0) & (have != counts)
        if bad.any():
            i = int(np.argmax(bad))
            self.fail(
                f"nodes[{i}].weights",
                f"has {have[i]} values but meshes[{mesh[i]}] has {counts[i]} morph targets",
            )
        return nodes

    def mesh_morph_info(self, m: int) -> tuple[NDArray[np.float64] | None, tuple[str, ...]]:
        """``meshes[m].weights`` and ``extras.targetNames`` (checked against the targets)."""
        path = f"meshes[{m}]"
        mesh = self.array("meshes")[m]
        count = self._morph_counts[m]
        weights = self.number_list(mesh, "weights", path)
        if weights is not None and count == 0:
            self.warn(f"{path}.weights", "the mesh has no morph targets to weight; ignored")
            weights = None
        if weights is not None and len(weights) != count:
            self.fail(f"{path}.weights", f"has {len(weights)} values for {count} morph targets")
        names: tuple[str, ...] = ()
        extras = mesh.get("extras")
        raw = extras.get("targetNames") if isinstance(extras, dict) else None
        # extras are the application's: malformed names are ignored, not an error
        if isinstance(raw, list) and len(raw) == count and all(isinstance(x, str) for x in raw):
            names = tuple(raw)
        return weights, names

    def skins(self, nodes: tuple[Node, ...]) -> tuple[Skin, ...]:
        assert self.node_table is not None
        parent, depth = self.node_table.parent, self.node_table.depth
        out = []
        for s, sk in enumerate(self.array("skins")):  # over skins; each skin's joints as arrays
            path = f"skins[{s}]"
            raw = self.get_list(sk, "joints", path, required=True)
            if not raw:
                self.fail(f"{path}.joints", "must not be empty")
            joints = columns.ints(self, raw, lambda k, p=path: f"{p}.joints[{k}]", target="nodes")
            _, inverse, uses = np.unique(joints, return_inverse=True, return_counts=True)
            twice = uses[inverse] > 1
            if twice.any():
                self.fail(f"{path}.joints", f"lists nodes[{joints[np.argmax(twice)]}] twice")
            count = len(joints)
            ibm_i = self.get_index(sk, "inverseBindMatrices", path, "accessors")
            self.charge(count * 128, path, f"{count} joint matrices")
            if ibm_i is None:
                ibm = np.broadcast_to(np.eye(4), (count, 4, 4)).copy()
            else:
                user = f"{path}.inverseBindMatrices"
                acc = self.typed_accessor(ibm_i, user, ("MAT4",), ((FLOAT, False),))
                if acc.count < count:
                    self.fail(
                        user, f"accessors[{ibm_i}] has {acc.count} matrices for {count} joints"
                    )
                self.charge(count * 128, user, "checking the matrices")
                ibm = acc.data[:count].astype(np.float64)
                bad = dq.bottom_row_error(ibm) > dq.AFFINE_ATOL
                if np.any(bad):
                    k = int(np.argmax(bad))
                    self.fail(
                        user, f"matrix {k} has bottom row {ibm[k, 3].tolist()}, not (0, 0, 0, 1)"
                    )
                ibm[:, 3, :] = (0.0, 0.0, 0.0, 1.0)
            skeleton = self._skeleton(sk, path)
            if skeleton is not None:
                # Under the skeleton: the skeleton is the ancestor as many levels up as the
                # joint lies deeper (all joints at once, by binary lifting). It changes nothing
                # vkdqs skins (joint matrices are global), and exporters (FBX2glTF, PlayCanvas)
                # name the mesh node: a warning, as three.js loads it.
                up = depth[joints] - depth[skeleton]
                outside = up < 0
                inside = np.flatnonzero(~outside)
                above = hierarchy.ancestors(parent, joints[inside], up[inside])
                outside[inside] = above != skeleton
                if np.any(outside):
                    k = int(np.argmax(outside))
                    self.warn(
                        f"{path}.skeleton",
                        f"joints[{k}] (nodes[{joints[k]}]) is not under the skeleton "
                        f"nodes[{skeleton}]; the skeleton root is not used",
                    )
            names = tuple(map(attrgetter("name"), map(nodes.__getitem__, joints.tolist())))
            out.append(Skin(s, self.get_name(sk, path), joints, names, ibm, skeleton))
        return tuple(out)

    def _skeleton(self, sk: dict, path: str) -> int | None:
        """``skins[s].skeleton``, or None (a warning) when it is not an index into the nodes:
        joint matrices are global, so the skeleton root changes nothing vkdqs skins."""
        try:
            return self.get_index(sk, "skeleton", path, "nodes")
        except GltfError as exc:
            self.warn_error(exc, "the skeleton root is not used")
            return None

    def check_skinned_nodes(
        self, nodes: tuple[Node, ...], prims: list[list[Primitive]], skins: tuple[Skin, ...]
    ) -> None:
        """Every skinned node's skin has the joints its mesh's weighted joint indices use.

        Per skinned mesh once: its first primitive without skin attributes, and the running
        maximum over its primitives of the largest joint used with a non-zero weight. Then all
        skinned nodes find their first bad primitive with one binary search, vectorized.
        """
        assert self.node_table is not None
        skinned = np.flatnonzero(self.node_table.skin >= 0)
        if not skinned.size:
            return
        node_mesh = self.node_table.mesh[skinned]
        joint_counts = np.array([sk.joint_count for sk in skins], dtype=np.int64)
        count = joint_counts[self.node_table.skin[skinned]]
        meshes, rank = np.unique(node_mesh, return_inverse=True)
        tops: dict[int, int] = {}  # per joints array: primitives may share it
        keys, starts, rigid_at, lengths = [], [], [], []
        for r, m in enumerate(meshes.tolist()):  # over the skinned meshes
            mesh_prims = prims[m]
            top = []
            for prim in mesh_prims:  # over primitives (each mesh once)
                if prim.joints is None:
                    top.append(-1)
                    continue
                if id(prim.joints) not in tops:
                    used = prim.joints[prim.weights > 0]
                    tops[id(prim.joints)] = int(used.max()) if used.size else -1
                top.append(tops[id(prim.joints)])
            rigid = [p for p, pr in enumerate(mesh_prims) if pr.joints is None]
            starts.append(sum(lengths))
            lengths.append(len(mesh_prims))
            rigid_at.append(rigid[0] if rigid else len(mesh_prims))
            # segment r of one sorted array: r * 2^18 + (running max + 1), 0 <= that < 2^18
            keys.append(r * 2**18 + np.maximum.accumulate(np.array(top, dtype=np.int64)) + 1)
        flat = np.concatenate(keys)
        first = np.searchsorted(flat, rank * 2**18 + count + 1) - np.array(starts)[rank]
        p = np.minimum(first, np.array(rigid_at)[rank])
        bad = p < np.array(lengths)[rank]
        if not bad.any():
            return
        k = int(np.argmax(bad))
        node, m, pk = int(skinned[k]), int(node_mesh[k]), int(p[k])
        skin, count_k = int(self.node_table.skin[node]), int(count[k])
        path = f"meshes[{m}].primitives[{pk}]"
        prim = prims[m][pk]
        if prim.joints is None:
            self.fail(
                path,
                f"has no JOINTS_0/WEIGHTS_0 but nodes[{node}] skins it with skins[{skin}]",
            )
        # Only weighted slots matter: exporters fill unused slots with joint 0.
        wrong = (prim.weights > 0) & (prim.joints >= count_k)
        v, c = np.argwhere(wrong)[0]
        self.fail(
            path,
            f"JOINTS_{c // 4} uses joint {prim.joints[v, c]} (vertex {v}) but "
            f"nodes[{node}] skins it with skins[{skin}], which has {count_k} joints",
        )

    def animations(self, nodes: tuple[Node, ...]) -> tuple[Animation, ...]:
        out = []
        for a, anim in enumerate(self.array("animations")):
            path = f"animations[{a}]"
            samplers = self.get_list(anim, "samplers", path, required=True)
            channels = self.get_list(anim, "channels", path, required=True)
            for k, s in enumerate(samplers):
                if not isinstance(s, dict):
                    self.fail(f"{path}.samplers[{k}]", f"must be an object, got {_show(s)}")
            decoded: list[Channel] = []
            morphs: list[WeightsChannel] = []
            ignored = 0
            duration = 0.0
            seen: dict[tuple[int, str], int] = {}
            for c, ch in enumerate(channels):  # over channels, at load
                cpath = f"{path}.channels[{c}]"
                if not isinstance(ch, dict):
                    self.fail(cpath, f"must be an object, got {_show(ch)}")
                si = self.as_int(ch.get("sampler"), f"{cpath}.sampler") if "sampler" in ch else None
                if si is None:
                    self.fail(cpath, "required property 'sampler' is missing")
                if not 0 <= si < len(samplers):
                    self.fail(
                        f"{cpath}.sampler",
                        f"{si} is not an index into {path}.samplers ({len(samplers)} elements)",
                    )
                target = self.get_obj(ch, "target", cpath, required=True)
                tpath = f"{cpath}.target"
                node = self.get_index(target, "node", tpath, "nodes")
                if "path" not in target:
                    self.fail(tpath, "required property 'path' is missing")
                kind = target["path"]
                if kind not in _PATHS:
                    # an extension's target (KHR_animation_pointer's "pointer"), or one nobody
                    # can animate: ignored, as three.js does and as the node-less targets are
                    self.warn(
                        f"{tpath}.path",
                        f"{_show(kind)} is not translation, rotation, scale or weights; the "
                        "channel is ignored",
                    )
                    node = None
                if node is not None:
                    if (node, kind) in seen:
                        first = seen[node, kind]
                        self.fail(
                            tpath, f"nodes[{node}].{kind} is already animated by channels[{first}]"
                        )
                    seen[node, kind] = c
                    if kind != "weights" and nodes[node].matrix is not None:
                        self.fail(tpath, f"nodes[{node}] is animated but has a matrix")
                channel, end = self._channel(
                    samplers[si], f"{path}.samplers[{si}]", node, kind, cpath
                )
                duration = max(duration, end)
                if channel is None:
                    ignored += 1
                elif isinstance(channel, WeightsChannel):
                    morphs.append(channel)
                else:
                    decoded.append(channel)
            # Animation packs each distinct key array once (times, values, tangents; width 4).
            distinct = {id(x): x for ch in decoded for x in (ch.times, ch.values, ch.in_tangents)}
            rows = sum(len(x) for x in distinct.values() if x is not None)
            self.charge(rows * 72, path, "packing the animation's keys")
            out.append(
                Animation(
                    self.get_name(anim, path),
                    tuple(decoded),
                    duration=duration,
                    ignored_channels=ignored,
                    weight_channels=tuple(morphs),
                )
            )
        return tuple(out)

    def _channel(
        self, sampler: dict, spath: str, node: int | None, kind: str, cpath: str
    ) -> tuple[Channel | WeightsChannel | None, float]:
        interp = self.get_str(sampler, "interpolation", spath, default="LINEAR")
        if interp not in _INTERPOLATIONS:
            self.fail(
                f"{spath}.interpolation", f"{_show(interp)} is not LINEAR, STEP or CUBICSPLINE"
            )
        in_user, out_user = f"{spath}.input", f"{spath}.output"
        ii = self.get_index(sampler, "input", spath, "accessors", required=True)
        oi = self.get_index(sampler, "output", spath, "accessors", required=True)
        # Samplers (and channels) sharing an accessor share its decoded keys: decoded once.
        if ii not in self._key_times:
            acc = self.typed_accessor(ii, in_user, ("SCALAR",), ((FLOAT, False),))
            self.charge(acc.count * 16, in_user, f"{acc.count} key times")
            times = acc.data[:, 0].astype(np.float64)
            steps = np.diff(times)
            if np.any(steps <= 0):
                k = int(np.argmax(steps <= 0)) + 1
                self.fail(
                    in_user,
                    f"key times must be strictly increasing: key {k} is {times[k]:g} after "
                    f"{times[k - 1]:g}",
                )
            self._key_times[ii] = (times, float(times[-1]))
        times, end = self._key_times[ii]
        if node is None:
            # extension-defined targets (no node) are not used by vkdqs
            return None, end
        k = len(times)
        if kind == "weights":
            return self._weights_channel(f"{cpath}.target", node, interp, times, oi, out_user), end
        key = (oi, kind == "rotation", interp, k)
        if key not in self._key_values:
            self._key_values[key] = self._key_values_of(oi, out_user, kind, interp, k)
        values, in_t, out_t = self._key_values[key]
        return Channel(node, kind, interp, times, values, in_t, out_t), end

    def _weights_channel(
        self, tpath: str, node: int, interp: str, times: NDArray, oi: int, out_user: str
    ) -> WeightsChannel | None:
        """A ``weights`` channel of ``node``: M values per key (x3 for CUBICSPLINE); None (a
        warning) for a node whose mesh has no morph targets."""
        assert self.node_table is not None
        mesh = int(self.node_table.mesh[node])
        count = self._morph_counts[mesh] if mesh >= 0 else 0
        if count == 0:
            # nothing to weight: three.js makes no track of it either
            self.warn(
                tpath,
                f"animates the weights of nodes[{node}], which has no mesh with morph targets; "
                "the channel is ignored",
            )
            return None
        k = len(times)
        key = (oi, "weights", interp, k, count)
        if key not in self._key_values:
            acc = self.typed_accessor(oi, out_user, ("SCALAR",), _WEIGHT_OUTPUTS)
            need = k * count * (3 if interp == "CUBICSPLINE" else 1)
            if acc.count != need:
                self.fail(
                    out_user,
                    f"accessors[{oi}] has {acc.count} elements; {interp} with {k} keys of "
                    f"{count} morph weights needs {need}",
                )
            self.charge(acc.count * 24, out_user, f"{acc.count} morph weights")
            values = acc.floats()[:, 0]
            in_t = out_t = None
            if interp == "CUBICSPLINE":
                triples = values.reshape(k, 3, count)
                in_t, values, out_t = triples[:, 0], triples[:, 1].copy(), triples[:, 2]
            else:
                values = values.reshape(k, count)
            self._key_values[key] = (values, in_t, out_t)
        values, in_t, out_t = self._key_values[key]
        return WeightsChannel(node, interp, times, values, in_t, out_t)

    def _key_values_of(
        self, oi: int, out_user: str, kind: str, interp: str, k: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64] | None]:
        """Decoded key values (rotations normalized) and CUBICSPLINE tangents of ``oi``."""
        if kind == "rotation":
            out = self.typed_accessor(
                oi,
                out_user,
                ("VEC4",),
                (
                    (FLOAT, False),
                    (BYTE, True),
                    (UNSIGNED_BYTE, True),
                    (SHORT, True),
                    (UNSIGNED_SHORT, True),
                ),
            )
        else:
            out = self.typed_accessor(oi, out_user, ("VEC3",), ((FLOAT, False),))
        need = 3 * k if interp == "CUBICSPLINE" else k
        if out.count != need:
            self.fail(
                out_user,
                f"accessors[{oi}] has {out.count} elements; {interp} with {k} keys needs {need}",
            )
        self.charge(out.data.size * 24, out_user, f"{out.count} key values")
        values = out.floats()
        in_t = out_t = None
        if interp == "CUBICSPLINE":
            # Each key stores (in-tangent, value, out-tangent).
            triples = values.reshape(k, 3, -1)
            in_t, values, out_t = triples[:, 0], triples[:, 1].copy(), triples[:, 2]
        if kind == "rotation":
            length = np.linalg.norm(values, axis=1)
            if np.any(length < 1e-6):
                j = int(np.argmax(length < 1e-6))
                self.fail(out_user, f"key {j} is a zero quaternion {values[j].tolist()}")
            values = values / length[:, None]
        return values, in_t, out_t


def _normals_cost(vertices: int, corners: int) -> int:
    """Peak bytes of :func:`vkdqs.geometry.vertex_normals` (float64 copies and sums per vertex,
    about 520 bytes a triangle in its passes of at most 65536 triangles), with a margin."""
    return 96 * vertices + 640 * min(corners // 3, 1 << 16)


def load_gltf(
    path: str | Path, *, flat_normals: bool = False, max_bytes: int | None = None
) -> GltfScene:
    """Load a ``.gltf`` or ``.glb`` file.

    The file is untrusted input: it reads only files in its own folder (see
    :mod:`vkdqs.gltf.uris`), and what it may make the loader hold is bounded by ``max_bytes``.

    Parameters
    ----------
    path : str or Path
        The model; it must be a regular file (not a FIFO or a device).
    flat_normals : bool, keyword-only
        For primitives without ``NORMAL``: False (default) computes smooth angle-weighted vertex
        normals on the shared vertices; True splits vertices per triangle and gives each its
        face normal, which is what the glTF spec asks viewers to do.
    max_bytes : int or None, keyword-only
        Most bytes the file may expand to: the file itself, the JSON objects parsed from it, the
        buffers it reads, and every array and object decoded from it (accessors, primitives,
        nodes, animation keys, images), each counted at its peak before it is allocated, so the
        load's peak memory stays under ``max_bytes`` plus a fixed overhead. None (default):
        :func:`vkdqs.gltf.accessors.default_max_bytes` of the file's size, 16 bytes per byte
        of the file, at least 128 MiB and at most 2 GiB (:data:`DEFAULT_MAX_BYTES`), which
        is safe for a service that loads uploaded files. A plain model expands to about 6
        times its file as counted, a compressed one to 20 or more: pass a larger
        ``max_bytes`` for big compressed models.

    Returns
    -------
    GltfScene
        Its ``charged_bytes`` says what the load counted against ``max_bytes``.

    Raises
    ------
    GltfError
        The file cannot be read, is malformed, uses something vkdqs does not support, refers to
        a file outside its folder, needs more than ``max_bytes``, or is compressed and the
        decoders of ``vkdqs[compression]`` are not installed; the message names the file, the
        JSON path and the problem.
    """
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
    ):
        raise InputError(f"max_bytes must be a positive int or None, got {max_bytes!r}")
    path = Path(path)
    name = path.name
    budget = Budget(name, max_bytes)
    raw = _read_file(path, budget, max_bytes)
    notes: list[str] = []  # the container's warnings
    doc, glb_bin = _parse_document(path, raw, budget, notes)
    r = _Reader(path, doc, glb_bin, budget=budget)
    r.notes.extend(notes)
    r.check_asset()
    r.check_limits()
    materials = read_materials(r)
    nodes = r.nodes()
    roots = r.scene_roots(nodes)
    prims = r.meshes(flat_normals)
    skins = r.skins(nodes)
    r.check_skinned_nodes(nodes, prims, skins)
    nodes = r.check_node_weights(nodes)
    animations = r.animations(nodes)
    r.check_unused()

    table = r.node_table
    assert table is not None
    meshes = _mesh_objects(r, prims, table)
    _log_weight_warnings(r, name)
    issue_warnings(r)
    scene = GltfScene(
        path, nodes, tuple(meshes), skins, animations, roots, materials=materials, _table=table
    )
    scene.charged_bytes = max(budget.high, budget.spent)
    _check_rest_pose(name, scene, table)
    return scene


def _read_file(path: Path, budget: Budget, max_bytes: int | None) -> bytearray:
    """The bytes of the model file, charged to ``budget``: a regular file (read up to its size)
    whose size the default ``max_bytes`` grows with, up to :data:`DEFAULT_MAX_BYTES`."""
    name = path.name
    with open_regular_file(path, name=name, what="the file") as (f, size):
        # the default grows with the file, up to DEFAULT_MAX_BYTES: a larger file is not read
        budget.earn(json=size)
        if max_bytes is None and size > DEFAULT_MAX_BYTES:
            budget.explicit = DEFAULT_MAX_BYTES
        budget.charge(size, "", "the file")
        raw = read_at_most(f, size, name=name)
    budget.json_bytes = 0  # what the file brings is counted once its chunks are known
    return raw


def _too_many_joints(count: int) -> str:
    return (
        f"{count} joints; vkdqs reads skins of at most {MAX_JOINTS} joints "
        "(JOINTS_n are 8- or 16-bit, so no vertex can use more)"
    )


def _refuse_oversized_skin(name: str, text: bytes | bytearray | memoryview) -> None:
    """Refuse a skin of too many joints from the JSON text, before the parse builds it (and
    the nodes it names): :mod:`vkdqs.gltf.prescan`."""
    found = oversized_skin(text, MAX_JOINTS)
    if found is not None:
        raise GltfError(f"{name}: skins[{found[0]}].joints: {_too_many_joints(found[1])}")


def _parse_document(
    path: Path, raw: bytearray, budget: Budget, notes: list[str]
) -> tuple[dict, memoryview | None]:
    """The parsed JSON document and the GLB binary chunk (None for a ``.gltf``) of the file's
    bytes, what each chunk brings earned by ``budget``; the container's warnings go to
    ``notes``."""
    name = path.name
    glb_bin = None
    if raw[:4] == b"glTF":
        json_bytes, glb_bin = _parse_glb(raw, name, notes)
        budget.earn(json=len(json_bytes), data=0 if glb_bin is None else len(glb_bin))
    elif path.suffix.lower() == ".glb":
        raise GltfError(f"{name}: GLB header: magic {bytes(raw[:4])!r} is not b'glTF'")
    else:
        json_bytes = raw
        budget.earn(json=len(raw))
    doc = _parse_json(
        json_bytes,
        name,
        lambda n: budget.charge(n, "", "parsing the JSON"),
        notes,
        lambda text: _refuse_oversized_skin(name, text),
    )
    return doc, glb_bin


def _mesh_objects(r: _Reader, prims: list[list[Primitive]], table: _NodeTable) -> list[Mesh]:
    """A :class:`Mesh` per mesh of the file: its primitives, the nodes that draw it (node
    order) and the skins they use with it, all from one sort of the nodes by mesh."""
    placed = np.flatnonzero(table.mesh >= 0)
    placed = placed[np.argsort(table.mesh[placed], kind="stable")]
    bounds = np.searchsorted(table.mesh[placed], np.arange(len(prims) + 1)).tolist()
    users, user_skins = placed.tolist(), table.skin[placed].tolist()
    meshes = []
    for m, mesh_prims in enumerate(prims):  # over meshes, at load
        a, b = bounds[m], bounds[m + 1]
        used = dict.fromkeys(user_skins[a:b])
        used.pop(-1, None)
        skins_m = tuple(used)
        name_m = r.get_name(r.array("meshes")[m], f"meshes[{m}]")
        weights, target_names = r.mesh_morph_info(m)
        meshes.append(
            Mesh(
                m,
                name_m,
                tuple(mesh_prims),
                tuple(users[a:b]),
                skins_m[0] if skins_m else None,
                skins_m,
                weights,
                target_names,
            )
        )
    return meshes


def _log_weight_warnings(r: _Reader, name: str) -> None:
    """One log warning for all the vertices whose weights did not sum to 1 (renormalized),
    naming the first of them."""
    if not r.weight_warnings:
        return
    where, _, v, total = r.weight_warnings[0]
    vertices = sum(w[1] for w in r.weight_warnings)
    _log.warning(
        "%s: %d vertices have weights not summing to 1 (first: %s vertex %d, sum %.6g); "
        "they are renormalized",
        name,
        vertices,
        where,
        v,
        total,
    )


def _check_rest_pose(name: str, scene: GltfScene, table: _NodeTable) -> None:
    """Refuse a file whose rest pose places what it draws nowhere: scales and translations
    that multiply past float64 down the hierarchy to a joint or a node drawing a mesh rigidly
    (a skinned mesh's own node is not used; nodes that place nothing do not matter)."""
    used = np.zeros(len(scene.nodes), bool)
    used[(table.mesh >= 0) & (table.skin < 0)] = True
    for skin in scene.skins:  # over skins
        used[skin.joints] = True
    if not used.any():
        return
    finite = np.isfinite(scene.node_global_matrices(None)).all(axis=(1, 2)) | ~used
    if not finite.all():
        node = int(np.argmin(finite))
        raise GltfError(
            f"{name}: nodes[{node}]: its world matrix overflows float64 (the scales and "
            "translations of the nodes above it multiply past 1e308)"
        )
