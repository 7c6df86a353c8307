"""The ``.glb`` writer: the rest mesh, one primitive per material group (its range of the
vertices, TEXCOORD_0, COLOR_0, its material with the texture as an embedded PNG), one morph target
(position and normal deltas) per frame and a LINEAR ``weights`` animation that is one-hot at each
baked time, so glTF players show exactly the baked frames at those times. Deltas stream to a
temporary file; the JSON (which holds each target's min/max) is written once they are known."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError, LimitError
from ..gltf.save import GLB_MAX_BYTES, glb_length, json_bytes, write_glb
from ..material import Sampler
from .surface import Surface
from .writers import COPY_CHUNK, as_bytes, partial_path, png_bytes

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
    ) -> None:
        self.path, self.tmp = path, partial_path(path)
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
        self.images = [png_bytes(t) for t in textures]
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

    def write(self, positions: NDArray, normals: NDArray) -> None:
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

    def _document(self) -> dict:
        f, groups = len(self.times), self.groups
        views: list[dict[str, Any]] = []
        offset = 0

        def split(row_bytes: int, field: str, target: int) -> list[int]:
            """One view per group over its rows of the next array; their indices."""
            nonlocal offset
            out = []
            for g in groups:  # over material groups
                first, count = getattr(g, f"first_{field}"), getattr(g, f"{field}_count")
                views.append(
                    {
                        "buffer": 0,
                        "byteOffset": offset + row_bytes * first,
                        "byteLength": row_bytes * count,
                        "target": target,
                    }
                )
                out.append(len(views) - 1)
            offset += row_bytes * sum(getattr(g, f"{field}_count") for g in groups)
            return out

        pos_views = split(12, "vertex", 34962)
        nrm_views = split(12, "vertex", 34962)
        idx_views = split(12, "face", 34963)
        for size in (4 * f, 4 * f * f):  # times, one-hot weights
            views.append({"buffer": 0, "byteOffset": offset, "byteLength": size})
            offset += size
        # every target's accessors share the deltas' view: glTF then wants its stride spelled out
        delta_view = len(views)
        views.append(
            {
                "buffer": 0,
                "byteOffset": offset,
                "byteLength": f * self.frame_bytes,
                "byteStride": 12,
                "target": 34962,
            }
        )
        offset += f * self.frame_bytes
        uv_views = split(8, "vertex", 34962) if self.surface.uvs is not None else None
        color_views = split(16, "vertex", 34962) if self.surface.colors is not None else None
        material_json, transform_used = self._materials(views, offset)
        accessors: list[dict[str, Any]] = []

        def add(acc: dict[str, Any]) -> int:
            accessors.append(acc)
            return len(accessors) - 1

        prims = []
        for k, g in enumerate(groups):  # over material groups
            rest = self.rest_p[g.first_vertex : g.first_vertex + g.vertex_count]
            attrs = {
                "POSITION": add(
                    {
                        "bufferView": pos_views[k],
                        "componentType": 5126,
                        "count": g.vertex_count,
                        "type": "VEC3",
                        "min": rest.min(axis=0).tolist(),
                        "max": rest.max(axis=0).tolist(),
                    }
                ),
                "NORMAL": add(
                    {
                        "bufferView": nrm_views[k],
                        "componentType": 5126,
                        "count": g.vertex_count,
                        "type": "VEC3",
                    }
                ),
            }
            prim: dict[str, Any] = {
                "attributes": attrs,
                "indices": add(
                    {
                        "bufferView": idx_views[k],
                        "componentType": 5125,
                        "count": 3 * g.face_count,
                        "type": "SCALAR",
                    }
                ),
                "mode": 4,
            }
            for key, vs, type_ in (
                ("TEXCOORD_0", uv_views, "VEC2"),
                ("COLOR_0", color_views, "VEC4"),
            ):
                if vs is not None:
                    attrs[key] = add(
                        {
                            "bufferView": vs[k],
                            "componentType": 5126,
                            "count": g.vertex_count,
                            "type": type_,
                        }
                    )
            if g.material is not None:
                prim["material"] = g.material
            prims.append(prim)
        times = add(
            {
                "bufferView": 3 * len(groups),
                "componentType": 5126,
                "count": f,
                "type": "SCALAR",
                "min": [float(self.times[0])],
                "max": [float(self.times[-1])],
            }
        )
        weights = add(
            {
                "bufferView": 3 * len(groups) + 1,
                "componentType": 5126,
                "count": f * f,
                "type": "SCALAR",
            }
        )
        for k, g in enumerate(groups):  # over groups, then frames: two accessors each
            targets = []
            for i in range(f):
                base = i * self.frame_bytes + 12 * g.first_vertex
                targets.append(
                    {
                        "POSITION": add(
                            {
                                "bufferView": delta_view,
                                "byteOffset": base,
                                "componentType": 5126,
                                "count": g.vertex_count,
                                "type": "VEC3",
                                "min": self.lo[i, k].tolist(),
                                "max": self.hi[i, k].tolist(),
                            }
                        ),
                        "NORMAL": add(
                            {
                                "bufferView": delta_view,
                                "byteOffset": base + 12 * len(self.rest_p),
                                "componentType": 5126,
                                "count": g.vertex_count,
                                "type": "VEC3",
                            }
                        ),
                    }
                )
            prims[k]["targets"] = targets
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
            "animations": [
                {
                    "name": "bake",
                    "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}],
                    "samplers": [{"input": times, "output": weights, "interpolation": "LINEAR"}],
                }
            ],
            **material_json,
            "buffers": [{"byteLength": self.bin_bytes}],
            "bufferViews": views,
            "accessors": accessors,
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
        text = json_bytes(self._document())
        total = glb_length(len(text), self.bin_bytes)
        if total > GLB_MAX_BYTES:
            raise LimitError(f"the .glb would be {total} bytes, past GLB's 4 GiB; write .npz")
        with open(self.tmp, "wb") as out:
            write_glb(out, text, self.bin_bytes, self._bin_chunks())
        self.deltas.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.deltas.close()
        self.tmp.unlink(missing_ok=True)
