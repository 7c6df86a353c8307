"""glTF materials, textures, samplers and images -> :class:`vkdqs.Material` objects.

Read: ``pbrMetallicRoughness.baseColorFactor`` and ``baseColorTexture`` (its ``texCoord`` and
``KHR_texture_transform``), ``alphaMode``/``alphaCutoff``, ``doubleSided``; ``textures``
(``source``, ``sampler``, ``EXT_texture_webp``'s source first, then ``KHR_texture_basisu``'s
when its transcoder is installed), ``samplers`` (filters with their mipmap modes, wrap modes) and
``images`` (a ``uri`` through :mod:`vkdqs.gltf.uris`, or a ``bufferView`` with a ``mimeType``;
PNG, JPEG, WebP, decoded by :mod:`vkdqs.gltf.images`; KTX 2 by :mod:`vkdqs.gltf.ktx2`). Other
material properties (metallic-roughness, normal, occlusion and emissive textures, other
``KHR_materials_*``) are ignored.

Malformed JSON is a :class:`GltfError` naming the JSON path. An image that cannot be used (bad
bytes, a missing file, a URI that leaves the model's folder, which is then not read) is a
:class:`GltfWarning` naming the image, and its materials draw untextured (factor only); a
texture on a UV set other than ``TEXCOORD_0`` also warns and draws untextured. Only images used
as a base-colour texture are read and decoded, once per source (images that share a bufferView,
a data: URI or a file share one decode); the URIs of the others are checked.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from vkdqs.gltf import ktx2
from vkdqs.gltf.errors import GltfError, GltfWarning, _show
from vkdqs.gltf.images import ImageProblem, decode_image
from vkdqs.gltf.uris import (
    data_uri_size,
    decode_data_uri,
    is_data_uri,
    open_regular_file,
    read_at_most,
    resolve_uri,
)
from vkdqs.material import Material, Sampler, uv_transform

if TYPE_CHECKING:
    from vkdqs.gltf.accessors import _AccessorReader

_MAG = {9728: "nearest", 9729: "linear"}
#: minFilter -> (min filter, mipmap mode or None)
_MIN = {
    9728: ("nearest", None),
    9729: ("linear", None),
    9984: ("nearest", "nearest"),
    9985: ("linear", "nearest"),
    9986: ("nearest", "linear"),
    9987: ("linear", "linear"),
}
_WRAP = {33071: "clamp", 33648: "mirror", 10497: "repeat"}
_ALPHA = ("OPAQUE", "MASK", "BLEND")
_WEBP = "EXT_texture_webp"
_BASISU = "KHR_texture_basisu"
_TRANSFORM = "KHR_texture_transform"


def _warn(reader: _AccessorReader, path: str, msg: str) -> None:
    """Note a :class:`GltfWarning` (:meth:`_AccessorReader.warn`)."""
    reader.warn(path, msg)


def _warn_error(reader: _AccessorReader, exc: GltfError, then: str) -> None:
    """A GltfError (which names the file and JSON path) as a warning ending in ``then``."""
    reader.notes.append(f"{exc}; {then}")


def issue_warnings(reader: _AccessorReader) -> None:
    """Issue the reader's notes as GltfWarnings, attributed to the caller of ``load_gltf``."""
    for note in reader.notes:
        warnings.warn(note, GltfWarning, stacklevel=3)


class _Materials:
    def __init__(self, reader: _AccessorReader) -> None:
        self.r = reader
        self._images: dict[int, np.ndarray | None] = {}
        # per source (kind, bufferView / URI / resolved file, mimeType): the decoded pixels, or
        # what is wrong with it (whether the message is about the URI, and the message)
        self._sources: dict[tuple, tuple[np.ndarray | None, tuple[bool, str] | None]] = {}
        self._samplers: dict[int, Sampler] = {}

    def sampler(self, i: int) -> Sampler:
        if i in self._samplers:
            return self._samplers[i]
        r, path = self.r, f"samplers[{i}]"
        s = r.array("samplers")[i]
        mag = r.get_int(s, "magFilter", path)
        minf = r.get_int(s, "minFilter", path)
        if mag is not None and mag not in _MAG:
            r.fail(f"{path}.magFilter", f"{mag} is not 9728 (NEAREST) or 9729 (LINEAR)")
        if minf is not None and minf not in _MIN:
            r.fail(f"{path}.minFilter", f"{minf} is not a glTF minification filter")
        wraps = []
        for key in ("wrapS", "wrapT"):
            w = r.get_int(s, key, path, default=10497)
            if w not in _WRAP:
                r.fail(f"{path}.{key}", f"{w} is not 33071, 33648 or 10497")
            wraps.append(_WRAP[w])
        min_filter, mipmap = _MIN[minf] if minf is not None else ("linear", "linear")
        out = Sampler(
            mag_filter=_MAG[mag] if mag is not None else "linear",
            min_filter=min_filter,
            mipmap=mipmap,
            wrap_s=wraps[0],
            wrap_t=wraps[1],
        )
        self._samplers[i] = out
        return out

    def check_image(self, i: int) -> tuple[dict, str]:
        """The image object and its path; checks its JSON (not its data)."""
        r, path = self.r, f"images[{i}]"
        image = r.array("images")[i]
        has_uri, has_view = "uri" in image, "bufferView" in image
        if has_uri == has_view:
            r.fail(path, "must have exactly one of uri and bufferView")
        mime = r.get_str(image, "mimeType", path) if "mimeType" in image else None
        if has_view:
            r.get_index(image, "bufferView", path, "bufferViews")
            if mime is None:
                r.fail(path, "an image in a bufferView needs a mimeType")
        else:
            r.get_str(image, "uri", path)
        return image, path

    def image(self, i: int) -> np.ndarray | None:
        """Decoded RGBA8 pixels of ``images[i]``, or None (with a warning) when unusable.

        Images with the same source (a bufferView, a data: URI, a file) and ``mimeType`` share
        one decode, and one outcome: a source that cannot be used warns for each image.
        """
        if i in self._images:
            return self._images[i]
        r = self.r
        image, path = self.check_image(i)
        mime = image.get("mimeType")
        out = None
        where, key = path, None
        try:
            if "bufferView" in image:
                key = ("bufferView", r.get_index(image, "bufferView", path, "bufferViews"), mime)
            else:
                uri, where = image["uri"], f"{path}.uri"
                if is_data_uri(uri):
                    key = ("data", uri, mime)
                else:
                    key = ("file", str(resolve_uri(r.base_dir, uri, where, name=r.name)), mime)
            if key in self._sources:
                out, problem = self._sources[key]
                if problem is not None:
                    _warn(r, where if problem[0] else path, problem[1])
            else:
                if key[0] == "bufferView":
                    v = r.view(key[1])
                    data = memoryview(v.data)[v.offset : v.offset + v.length]
                else:
                    data = self._read_uri(image["uri"], where)
                charge = lambda n, what: r.charge(n, path, what)  # noqa: E731
                if mime == ktx2.MIME_TYPE or bytes(data[: len(ktx2.MAGIC)]) == ktx2.MAGIC:
                    out = ktx2.decode_ktx2(data, charge)
                else:
                    out = decode_image(data, mime, charge)
                self._sources[key] = (out, None)
        except ImageProblem as exc:
            problem = f"{exc}; its materials draw untextured"
            _warn(r, path, problem)
            if key is not None:
                self._sources[key] = (None, (False, problem))
        except GltfError as exc:
            if "max_bytes" in str(exc):
                raise  # the file's budget is spent: that is an error, not a broken image
            _warn_error(r, exc, "its materials draw untextured")
            if key is not None:
                said = str(exc).removeprefix(f"{r.name}: ").removeprefix(f"{where}: ")
                self._sources[key] = (None, (True, f"{said}; its materials draw untextured"))
        self._images[i] = out
        return out

    def _read_uri(self, uri: str, path: str) -> bytes | bytearray:
        r = self.r
        if is_data_uri(uri):
            r.charge(data_uri_size(uri), path, "the decoded data: URI")
            return decode_data_uri(uri, path, name=r.name)
        file = resolve_uri(r.base_dir, uri, path, name=r.name)
        what = _show(uri)
        with open_regular_file(file, path, name=r.name, inside=r.base_dir, what=what) as (f, size):
            # a file the model brings: the default bound grows with it, then it is charged
            r.budget.earn(data=size)
            r.charge(size, path, f"reading {what} ({size} bytes)")
            return read_at_most(f, size, path, name=r.name)

    def texture_image(self, t: int, user: str) -> tuple[np.ndarray | None, Sampler]:
        r, path = self.r, f"textures[{t}]"
        tex = r.array("textures")[t]
        sampler_i = r.get_index(tex, "sampler", path, "samplers")
        sampler = Sampler() if sampler_i is None else self.sampler(sampler_i)
        source = r.get_index(tex, "source", path, "images")
        ext = r.get_obj(tex, "extensions", path) or {}
        webp = r.get_obj(ext, _WEBP, f"{path}.extensions")
        if webp is not None:
            webp_source = r.get_index(webp, "source", f"{path}.extensions.{_WEBP}", "images")
            source = webp_source if webp_source is not None else source
        basisu = r.get_obj(ext, _BASISU, f"{path}.extensions")
        if basisu is not None:
            ktx_source = r.get_index(basisu, "source", f"{path}.extensions.{_BASISU}", "images")
            if ktx_source is not None and (ktx2.available() or source is None):
                source = ktx_source  # the transcoder, or the HINT as a warning
        if source is None:
            _warn(r, path, f"has no PNG, JPEG or WebP source (used by {user}); drawn untextured")
            return None, sampler
        return self.image(source), sampler

    def number(self, parent: dict, key: str, path: str, default: float) -> float:
        """A finite number property (``default`` when absent)."""
        if key not in parent:
            return default
        value = parent[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.r.fail(f"{path}.{key}", f"must be a number, got {_show(value)}")
        try:
            x = float(value)
        except OverflowError:
            x = math.inf
        if not math.isfinite(x):
            self.r.fail(f"{path}.{key}", f"must be finite, got {_show(value)}")
        return x

    def material(self, m: int) -> Material:
        r, path = self.r, f"materials[{m}]"
        mat = r.array("materials")[m]
        pbr = r.get_obj(mat, "pbrMetallicRoughness", path) or {}
        ppath = f"{path}.pbrMetallicRoughness"
        factor = r.get_numbers(pbr, "baseColorFactor", ppath, 4, [1.0, 1.0, 1.0, 1.0])
        if not ((factor >= 0.0) & (factor <= 1.0)).all():
            r.fail(f"{ppath}.baseColorFactor", f"{factor.tolist()} has values outside [0, 1]")
        alpha = r.get_str(mat, "alphaMode", path, default="OPAQUE")
        if alpha not in _ALPHA:
            r.fail(f"{path}.alphaMode", f"{_show(alpha)} is not OPAQUE, MASK or BLEND")
        cutoff = self.number(mat, "alphaCutoff", path, 0.5)
        if cutoff < 0.0:
            r.fail(f"{path}.alphaCutoff", f"{cutoff} must be >= 0")
        double = r.get_bool(mat, "doubleSided", path)
        texture = None
        sampler = Sampler()
        transform = np.eye(3)
        info = r.get_obj(pbr, "baseColorTexture", ppath)
        if info is not None:
            tpath = f"{ppath}.baseColorTexture"
            t = r.get_index(info, "index", tpath, "textures", required=True)
            tex_coord = r.get_int(info, "texCoord", tpath, default=0, minimum=0)
            ext = r.get_obj(info, "extensions", tpath) or {}
            tt = r.get_obj(ext, _TRANSFORM, f"{tpath}.extensions")
            if tt is not None:
                xpath = f"{tpath}.extensions.{_TRANSFORM}"
                offset = r.get_numbers(tt, "offset", xpath, 2, [0.0, 0.0])
                rotation = self.number(tt, "rotation", xpath, 0.0)
                scale = r.get_numbers(tt, "scale", xpath, 2, [1.0, 1.0])
                tex_coord = r.get_int(tt, "texCoord", xpath, default=tex_coord, minimum=0)
                transform = uv_transform(offset, rotation, scale)
                if not np.isfinite(transform).all() or np.abs(transform).max() > 1e9:
                    r.fail(xpath, "the transform is not finite")
            texture, sampler = self.texture_image(t, tpath)
            if tex_coord != 0 and texture is not None:
                _warn(
                    r,
                    tpath,
                    f"uses TEXCOORD_{tex_coord}; vkdqs reads TEXCOORD_0 only, so this material "
                    "draws untextured",
                )
                texture = None
        return Material(
            base_color=tuple(float(x) for x in factor),
            texture=texture,
            sampler=sampler,
            uv_transform=transform,
            alpha_mode=alpha,
            alpha_cutoff=cutoff,
            double_sided=double,
            name=r.get_str(mat, "name", path),
        )


def read_materials(reader: _AccessorReader) -> tuple[Material, ...]:
    """Every material of the document (textures decoded), and every image's JSON checked."""
    m = _Materials(reader)
    for i in range(len(reader.array("images"))):  # over images, at load
        image, path = m.check_image(i)
        uri = image.get("uri")
        if uri is not None and not is_data_uri(uri):
            try:
                resolve_uri(reader.base_dir, uri, f"{path}.uri", name=reader.name)
            except GltfError as exc:
                _warn_error(reader, exc, "not read (its materials draw untextured)")
                m._images[i] = None
    for t in range(len(reader.array("textures"))):  # over textures, at load: JSON checks
        tex, tpath = reader.array("textures")[t], f"textures[{t}]"
        sampler = reader.get_index(tex, "sampler", tpath, "samplers")
        if sampler is not None:
            m.sampler(sampler)
        reader.get_index(tex, "source", tpath, "images")
        ext = reader.get_obj(tex, "extensions", tpath) or {}
        for name in (_WEBP, _BASISU):
            alternative = reader.get_obj(ext, name, f"{tpath}.extensions")
            if alternative is not None:
                reader.get_index(alternative, "source", f"{tpath}.extensions.{name}", "images")
    for s in range(len(reader.array("samplers"))):
        m.sampler(s)
    return tuple(m.material(i) for i in range(len(reader.array("materials"))))
