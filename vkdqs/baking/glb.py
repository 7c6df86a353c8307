"""The ``.glb`` writer: the rest mesh, one primitive per material group (its range of the
vertices, TEXCOORD_0, COLOR_0, its material with the texture as an embedded PNG), one morph target
(position and normal deltas) per frame and a LINEAR ``weights`` animation that is one-hot at each
baked time, so glTF players show exactly the baked frames at those times. Deltas stream to a
temporary file; the JSON (which holds each target's min/max) is written once they are known."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError, LimitError
from ..files import AtomicFile, check_output
from ..gltf.save import GLB_MAX_BYTES, glb_length, json_bytes, write_glb
from ..images import encode_png
from ..material import Sampler
from .surface import Surface
from .writers import COPY_CHUNK, as_bytes

_GLTF_MAG = {"nearest": 9728, "linear": 9729}
_GLTF_MIN = {
    ("nearest", None): 9728,
    ("linear", None): 9729,
    ("nearest", "nearest"): 9984,
    ("linear", "nearest"): 9985,
    ("nearest", "linear"): 9986,
    ("linear", "linear"): 9987,
}
_GLTF_WRAP = {"clamp": 33071, "mirror": 33648, "repeat": 10497}
_TRANSFORM = "KHR_texture_transform"


def _gltf_sampler(s: Sampler) -> dict[str, int]:
    return {
        "magFilter": _GLTF_MAG[s.mag_filter],
        "minFilter": _GLTF_MIN[(s.min_filter, s.mipmap)],
        "wrapS": _GLTF_WRAP[s.wrap_s],
        "wrapT": _GLTF_WRAP[s.wrap_t],
    }


def _texture_transform(m: NDArray[np.float64]) -> dict[str, Any] | None:
    """``KHR_texture_transform`` (offset, rotation, scale) of a uv matrix
    (:func:`vkdqs.material.uv_transform`: what glTF materials load as), None for the identity.
    A hand-made matrix with a shear, which the extension cannot express, loses the shear."""
    if np.array_equal(m, np.eye(3)):
        return None
    # T R S: column 0 of the 2x2 part is sx (cos, -sin), column 1 is sy (sin, cos)
    sx = float(np.hypot(m[0, 0], m[1, 0]))
    rotation = float(np.arctan2(-m[1, 0], m[0, 0]))
    c, s = np.cos(rotation), np.sin(rotation)
    sy = float(s * m[0, 1] + c * m[1, 1])
    out: dict[str, Any] = {}
    if m[0, 2] != 0.0 or m[1, 2] != 0.0:
        out["offset"] = [float(m[0, 2]), float(m[1, 2])]
    if rotation != 0.0:
        out["rotation"] = rotation
    if sx != 1.0 or sy != 1.0:
        out["scale"] = [sx, sy]
    return out


class _Views(NamedTuple):
    """bufferView indices of the binary buffer's arrays: one per material group for the rest
    mesh, uvs and colours (None without them), one each for times, weights and every delta."""

    positions: list[int]
    normals: list[int]
    indices: list[int]
    times: int
    weights: int
    deltas: int
    uvs: list[int] | None
    colors: list[int] | None


class _Accessors:
    """The document's accessors in order of :meth:`add`."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(
        self,
        view: int,
        count: int,
        type_: str,
        *,
        component: int = 5126,
        offset: int | None = None,
        bounds: tuple[list[float], list[float]] | None = None,
    ) -> int:
        """An accessor of ``count`` elements of ``type_`` (float32 unless ``component``) from
        byte ``offset`` of ``view``, with ``bounds`` as its min and max; its index."""
        acc: dict[str, Any] = {"bufferView": view}
        if offset is not None:
            acc["byteOffset"] = offset
        acc.update(componentType=component, count=count, type=type_)
        if bounds is not None:
            acc["min"], acc["max"] = bounds
        self.items.append(acc)
        return len(self.items) - 1


class GlbWriter:
    """The rest mesh, one morph target per frame, a one-hot LINEAR weights animation; one
    primitive per material group (its own range of the vertex arrays), with TEXCOORD_0,
    COLOR_0 and the materials (base-colour textures as embedded PNGs)."""

    def __init__(
        self,
        path: Path,
        times: NDArray,
        faces: NDArray,
        rest_p: NDArray,
        rest_n: NDArray,
        fps: float,
        surface: Surface,
        inputs: Sequence[Path] = (),
    ) -> None:
        self.path, self.inputs = check_output(path, inputs), inputs
        self.times = np.asarray(times, np.float32)
        if len(self.times) > 1 and not np.all(np.diff(self.times) > 0):
            raise InputError(
                "frame times are too close together for glTF's float32 times; "
                "lower the fps or bake an earlier time range"
            )
        self.surface = surface
        self.groups = surface.groups
        # each primitive's indices count from the start of its own vertex range
        shift = np.repeat(
            np.array([g.first_vertex for g in self.groups], np.int64),
            [g.face_count for g in self.groups],
        )
        self.faces = np.ascontiguousarray(np.asarray(faces, np.int64) - shift[:, None], np.uint32)
        self.rest_p = np.ascontiguousarray(rest_p, np.float32)
        self.rest_n = np.ascontiguousarray(rest_n, np.float32)
        textures, self.texture_of = surface.textures()
        self.images = [encode_png(t) for t in textures]
        # the blobs after the deltas: uvs, colours, images (each padded to 4 bytes)
        self.tail: list[bytes | memoryview] = [
            as_bytes(a) for a in (surface.uvs, surface.colors) if a is not None
        ] + self.images
        f, v = len(self.times), len(self.rest_p)
        self.frame_bytes = 24 * v
        self.head = [self.rest_p.nbytes, self.rest_n.nbytes, self.faces.nbytes, 4 * f, 4 * f * f]
        tail_bytes = sum(len(b) + (-len(b) % 4) for b in self.tail)
        self.bin_bytes = sum(self.head) + f * self.frame_bytes + tail_bytes
        json_estimate = 400 * f * len(self.groups) + 4096 + 1024 * len(self.surface.materials)
        if glb_length(json_estimate, self.bin_bytes) > GLB_MAX_BYTES:
            raise LimitError(
                f"{f} frames of {v} vertices make a .glb of about "
                f"{(self.bin_bytes + json_estimate) / 2**30:.1f} GiB, past GLB's 4 GiB; "
                "bake fewer frames or write .npz or .usdc"
            )
        self.lo = np.empty((f, len(self.groups), 3), np.float32)
        self.hi = np.empty((f, len(self.groups), 3), np.float32)
        self.done = 0
        self.deltas = tempfile.TemporaryFile(dir=path.parent)

    def write(self, positions: NDArray, normals: NDArray, boxes: NDArray) -> None:
        """Append a batch of frames' deltas from the rest mesh (one morph target each). A morph
        target's accessor bounds are those of its deltas per material group, not of the
        positions, so they are taken here from the deltas (``boxes`` is not used)."""
        d_p = positions - self.rest_p
        d_n = normals - self.rest_n
        i = self.done
        for k, g in enumerate(self.groups):  # over material groups: whole frames inside
            rows = d_p[:, g.first_vertex : g.first_vertex + g.vertex_count]
            self.lo[i : i + len(d_p), k] = rows.min(axis=1)
            self.hi[i : i + len(d_p), k] = rows.max(axis=1)
        self.done += len(d_p)
        for k in range(len(d_p)):  # over frames: position deltas, then normal deltas
            self.deltas.write(as_bytes(d_p[k]))
            self.deltas.write(as_bytes(d_n[k]))

    def _materials(self, views: list[dict], offset: int) -> tuple[dict[str, Any], bool]:
        """images/samplers/textures/materials JSON (image views appended to ``views`` from
        byte ``offset``), and whether KHR_texture_transform is used."""
        out: dict[str, list] = {"images": [], "samplers": [], "textures": [], "materials": []}
        for data in self.images:  # over distinct images: one view each
            out["images"].append({"bufferView": len(views), "mimeType": "image/png"})
            views.append({"buffer": 0, "byteOffset": offset, "byteLength": len(data)})
            offset += len(data) + (-len(data) % 4)
        samplers: dict[Sampler, int] = {}
        textures: dict[tuple[int, int], int] = {}
        transform_used = False
        for m, t in zip(self.surface.materials, self.texture_of, strict=True):  # few
            pbr: dict[str, Any] = {
                "baseColorFactor": list(m.base_color),
                # vkdqs keeps no metallic-roughness: a rough non-metal, as vkdqs draws it
                "metallicFactor": 0.0,
            }
            if t is not None:
                s = samplers.setdefault(m.sampler, len(samplers))
                if s == len(out["samplers"]):
                    out["samplers"].append(_gltf_sampler(m.sampler))
                tex = textures.setdefault((t, s), len(textures))
                if tex == len(out["textures"]):
                    out["textures"].append({"source": t, "sampler": s})
                info: dict[str, Any] = {"index": tex}
                transform = _texture_transform(m.uv_transform)
                if transform is not None:
                    info["extensions"] = {_TRANSFORM: transform}
                    transform_used = True
                pbr["baseColorTexture"] = info
            mat: dict[str, Any] = {"pbrMetallicRoughness": pbr}
            if m.name:
                mat["name"] = m.name
            if m.alpha_mode != "OPAQUE":
                mat["alphaMode"] = m.alpha_mode
            if m.alpha_mode == "MASK":
                mat["alphaCutoff"] = m.alpha_cutoff
            if m.double_sided:
                mat["doubleSided"] = True
            out["materials"].append(mat)
        return {k: v for k, v in out.items() if v}, transform_used

    def _buffer_views(self) -> tuple[list[dict[str, Any]], _Views, int]:
        """The bufferViews of the buffer's arrays in the order :meth:`_bin_chunks` writes them
        (the rest mesh, uvs and colours split by group), their indices, and the byte offset of
        the images that follow them."""
        f, groups = len(self.times), self.groups
        views: list[dict[str, Any]] = []
        offset = 0

        def split(row_bytes: int, field: str, target: int) -> list[int]:
            """One view per group over its rows of the next array; their indices."""
            nonlocal offset
            first = len(views)
            for g in groups:  # over material groups
                start, count = getattr(g, f"first_{field}"), getattr(g, f"{field}_count")
                views.append(
                    {
                        "buffer": 0,
                        "byteOffset": offset + row_bytes * start,
                        "byteLength": row_bytes * count,
                        "target": target,
                    }
                )
            offset += row_bytes * sum(getattr(g, f"{field}_count") for g in groups)
            return list(range(first, len(views)))

        def whole(length: int, **extra: int) -> int:
            """One view over the next ``length`` bytes; its index."""
            nonlocal offset
            views.append({"buffer": 0, "byteOffset": offset, "byteLength": length, **extra})
            offset += length
            return len(views) - 1

        positions, normals = split(12, "vertex", 34962), split(12, "vertex", 34962)
        indices = split(12, "face", 34963)
        times, weights = whole(4 * f), whole(4 * f * f)
        # every target's accessors share the deltas' view: glTF then wants its stride spelled out
        deltas = whole(f * self.frame_bytes, byteStride=12, target=34962)
        uvs = split(8, "vertex", 34962) if self.surface.uvs is not None else None
        colors = split(16, "vertex", 34962) if self.surface.colors is not None else None
        at = _Views(positions, normals, indices, times, weights, deltas, uvs, colors)
        return views, at, offset

    def _primitives(self, at: _Views, acc: _Accessors) -> list[dict[str, Any]]:
        """One primitive per material group: its range of the rest mesh, uvs and colours."""
        prims = []
        for k, g in enumerate(self.groups):  # over material groups
            n = g.vertex_count
            rest = self.rest_p[g.first_vertex : g.first_vertex + n]
            bounds = (rest.min(axis=0).tolist(), rest.max(axis=0).tolist())
            attrs = {
                "POSITION": acc.add(at.positions[k], n, "VEC3", bounds=bounds),
                "NORMAL": acc.add(at.normals[k], n, "VEC3"),
            }
            prim: dict[str, Any] = {
                "attributes": attrs,
                "indices": acc.add(at.indices[k], 3 * g.face_count, "SCALAR", component=5125),
                "mode": 4,
            }
            for key, vs, type_ in (("TEXCOORD_0", at.uvs, "VEC2"), ("COLOR_0", at.colors, "VEC4")):
                if vs is not None:
                    attrs[key] = acc.add(vs[k], n, type_)
            if g.material is not None:
                prim["material"] = g.material
            prims.append(prim)
        return prims

    def _animation(self, at: _Views, acc: _Accessors) -> dict[str, Any]:
        """The LINEAR ``weights`` animation: at each baked time, weight 1 on that frame's target
        and 0 on the others (a frame-by-frame matrix, one row per key time)."""
        f = len(self.times)
        bounds = ([float(self.times[0])], [float(self.times[-1])])
        times = acc.add(at.times, f, "SCALAR", bounds=bounds)
        weights = acc.add(at.weights, f * f, "SCALAR")
        return {
            "name": "bake",
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}],
            "samplers": [{"input": times, "output": weights, "interpolation": "LINEAR"}],
        }

    def _targets(self, at: _Views, acc: _Accessors) -> list[list[dict[str, int]]]:
        """Each group's morph targets, one per frame: its rows of the frame's position deltas
        (with their bounds, which glTF requires) and normal deltas."""
        out = []
        normals = 12 * len(self.rest_p)  # a frame's normal deltas follow its position deltas
        for k, g in enumerate(self.groups):  # over groups, then frames: two accessors each
            targets = []
            for i in range(len(self.times)):
                base = i * self.frame_bytes + 12 * g.first_vertex
                bounds = (self.lo[i, k].tolist(), self.hi[i, k].tolist())
                position = acc.add(at.deltas, g.vertex_count, "VEC3", offset=base, bounds=bounds)
                normal = acc.add(at.deltas, g.vertex_count, "VEC3", offset=base + normals)
                targets.append({"POSITION": position, "NORMAL": normal})
            out.append(targets)
        return out

    def _document(self) -> dict[str, Any]:
        """The glTF JSON: one node drawing the one mesh, its weights animation, the materials,
        and the views and accessors of the binary buffer."""
        views, at, images_at = self._buffer_views()
        material_json, transform_used = self._materials(views, images_at)
        acc = _Accessors()
        prims = self._primitives(at, acc)
        animation = self._animation(at, acc)
        for prim, targets in zip(prims, self._targets(at, acc), strict=True):
            prim["targets"] = targets
        f = len(self.times)
        names = [f"frame {i} ({t:.6g} s)" for i, t in enumerate(self.times.tolist())]
        doc: dict[str, Any] = {
            "asset": {"version": "2.0", "generator": "vkdqs bake"},
            "scene": 0,
            "scenes": [{"nodes": [0]}],
            "nodes": [{"name": "bake", "mesh": 0}],
            "meshes": [
                {
                    "name": "bake",
                    "primitives": prims,
                    "weights": [0.0] * f,
                    "extras": {"targetNames": names},
                }
            ],
            "animations": [animation],
            **material_json,
            "buffers": [{"byteLength": self.bin_bytes}],
            "bufferViews": views,
            "accessors": acc.items,
        }
        if transform_used:
            doc["extensionsUsed"] = [_TRANSFORM]
        return doc

    def _bin_chunks(self) -> Iterator[bytes | memoryview]:
        """The binary buffer in order, a piece at a time: the rest mesh, times, one-hot weights,
        the deltas (read back from the temporary file), then uvs, colours and images."""
        f = len(self.times)
        for arr in (self.rest_p, self.rest_n, self.faces):
            yield as_bytes(arr, arr.dtype.newbyteorder("<").str)
        yield as_bytes(self.times)
        rows = max(1, COPY_CHUNK // (4 * f))
        for r in range(0, f, rows):  # the one-hot weights, a block of rows at a time
            block = np.zeros((min(rows, f - r), f), np.float32)
            block[np.arange(len(block)), r + np.arange(len(block))] = 1.0
            yield as_bytes(block)
        self.deltas.seek(0)
        yield from iter(lambda: self.deltas.read(COPY_CHUNK), b"")
        for blob in self.tail:  # uvs, colours, images
            yield blob
            yield b"\0" * (-len(blob) % 4)

    def finish(self) -> None:
        """Write the file: the JSON (with each target's bounds), then the rest mesh and deltas."""
        text = json_bytes(self._document())
        total = glb_length(len(text), self.bin_bytes)
        if total > GLB_MAX_BYTES:
            raise LimitError(f"the .glb would be {total} bytes, past GLB's 4 GiB; write .npz")
        out = AtomicFile(self.path, inputs=self.inputs)
        try:
            assert out.file is not None
            write_glb(out, text, self.bin_bytes, self._bin_chunks())  # type: ignore[arg-type]
        except OSError as exc:
            out.discard()
            raise out.error(exc) from None
        except BaseException:
            out.discard()
            raise
        self.deltas.close()
        out.commit()

    def abort(self) -> None:
        """Drop the deltas written so far; nothing is left behind."""
        try:
            self.deltas.close()
        except OSError:  # its buffer cannot be flushed (a full disk): it is unnamed, so gone
            pass
