"""glTF materials, textures, samplers and images -> :class:`vkdqs.Material` objects.

Read: ``pbrMetallicRoughness.baseColorFactor`` and ``baseColorTexture`` (its ``texCoord`` and
``KHR_texture_transform``), ``alphaMode``/``alphaCutoff``, ``doubleSided``; ``textures``
(``source``, ``sampler``, ``EXT_texture_webp``'s source first, then ``KHR_texture_basisu``'s
when its transcoder is installed), ``samplers`` (filters with their mipmap modes, wrap modes) and
``images`` (a ``uri`` through :mod:`vkdqs.gltf.uris`, or a ``bufferView`` with a ``mimeType``;
PNG, JPEG, WebP, decoded by :mod:`vkdqs.gltf.images`; KTX 2 by :mod:`vkdqs.gltf.ktx2`). Other
material properties (metallic-roughness, normal, occlusion and emissive textures, other
``KHR_materials_*``) are ignored.

What changes the colour a material draws (its ``baseColorFactor``, ``alphaMode``, a MASK
``alphaCutoff``, ``doubleSided``) is a :class:`GltfError` naming the JSON path when it is
malformed. An image or texture that cannot be used (bad bytes, a missing file, a URI that leaves
the model's folder, which is then not read, an image object without one place for its bytes, a
texture reference, ``texCoord`` or ``KHR_texture_transform`` vkdqs cannot read, a texture on a
UV set other than ``TEXCOORD_0``) is a :class:`GltfWarning` naming the JSON path, and its
materials draw untextured (factor only); a filter or wrap value glTF does not define warns and
the default is used. Only images used as a base-colour texture are read and decoded, once per
source (images that share a bufferView, a data: URI or a file share one decode); the URIs of
the others are checked.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from vkdqs.gltf import ktx2
from vkdqs.gltf.errors import GltfError, GltfWarning, _BudgetSpent, _show
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
        """``samplers[i]`` as a :class:`Sampler`. A filter or wrap value glTF does not define
        is a warning, and the default is used (as three.js does): it changes only how a
        texture is filtered."""
        if i in self._samplers:
            return self._samplers[i]
        r, path = self.r, f"samplers[{i}]"
        s = r.array("samplers")[i]
        mag = self._code(s, "magFilter", path, _MAG, "9728 (NEAREST) or 9729 (LINEAR)", "LINEAR")
        minf = self._code(
            s, "minFilter", path, _MIN, "a glTF minification filter", "LINEAR_MIPMAP_LINEAR"
        )
        wraps = []
        for key in ("wrapS", "wrapT"):
            w = self._code(s, key, path, _WRAP, "33071, 33648 or 10497", "REPEAT")
            wraps.append(_WRAP[10497 if w is None else w])
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

    def _code(
        self, obj: dict, key: str, path: str, codes: dict, what: str, default: str
    ) -> int | None:
        """``obj[key]`` when it is one of ``codes``; None when absent, or (a warning) when it
        is something else."""
        value = obj.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if value is None or (type(value) is int and value in codes):
            return value
        _warn(self.r, f"{path}.{key}", f"{_show(value)} is not {what}; {default} is used")
        return None

    def _index(self, obj: dict, key: str, path: str, target: str, then: str) -> int | None:
        """``obj[key]`` as an index into ``target``; None when absent, or (a warning ending in
        ``then``) when it is not such an index."""
        try:
            return self.r.get_index(obj, key, path, target)
        except GltfError as exc:
            self.r.warn_error(exc, then)
            return None

    def _obj(self, obj: dict, key: str, path: str, then: str) -> dict:
        """``obj[key]`` as an object; ``{}`` when absent, or (a warning ending in ``then``)
        when it is not an object."""
        try:
            return self.r.get_obj(obj, key, path) or {}
        except GltfError as exc:
            self.r.warn_error(exc, then)
            return {}

    def check_image(self, i: int) -> tuple[dict, str, str | None] | None:
        """The image object, its path and its ``mimeType`` (None when absent); checks its JSON
        (not its data). None, with a warning, for an image whose JSON does not say where its
        bytes are: its materials draw untextured."""
        r, path = self.r, f"images[{i}]"
        image = r.array("images")[i]
        untextured = "not read (its materials draw untextured)"
        has_uri, has_view = "uri" in image, "bufferView" in image
        if has_uri == has_view:
            _warn(r, path, f"must have exactly one of uri and bufferView; {untextured}")
            return None
        mime = image.get("mimeType")
        if mime is not None and not isinstance(mime, str):
            _warn(r, f"{path}.mimeType", f"must be a string, got {_show(mime)}; ignored")
            mime = None
        if has_view:
            if self._index(image, "bufferView", path, "bufferViews", untextured) is None:
                return None
            if mime is None:
                # the bytes say what they are (PNG, JPEG, WebP and KTX 2 are told apart by them)
                _warn(r, path, "an image in a bufferView needs a mimeType; read by its bytes")
        elif not isinstance(image["uri"], str):
            _warn(r, f"{path}.uri", f"must be a string, got {_show(image['uri'])}; {untextured}")
            return None
        return image, path, mime

    def image(self, i: int) -> np.ndarray | None:
        """Decoded RGBA8 pixels of ``images[i]``, or None (with a warning) when unusable.

        Images with the same source (a bufferView, a data: URI, a file) and ``mimeType`` share
        one decode, and one outcome: a source that cannot be used warns for each image.
        """
        if i in self._images:
            return self._images[i]
        r = self.r
        checked = self.check_image(i)
        if checked is None:
            self._images[i] = None
            return None
        image, path, mime = checked
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
                peak = lambda kept, n, what: r.charge_peak(kept, n, path, what)  # noqa: E731
                if mime == ktx2.MIME_TYPE or bytes(data[: len(ktx2.MAGIC)]) == ktx2.MAGIC:
                    out = ktx2.decode_ktx2(data, charge, peak)
                else:
                    out = decode_image(data, mime, charge, peak)
                self._sources[key] = (out, None)
        except ImageProblem as exc:
            problem = f"{exc}; its materials draw untextured"
            _warn(r, path, problem)
            if key is not None:
                self._sources[key] = (None, (False, problem))
        except _BudgetSpent:
            raise  # the file's budget is spent: that is an error, not a broken image
        except GltfError as exc:
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

    def texture(self, t: int) -> tuple[int | None, int | None]:
        """``textures[t]``'s sampler and the image it draws (``EXT_texture_webp``'s source
        first, then ``KHR_texture_basisu``'s when its transcoder is installed or there is no
        other), checking its JSON. A reference that is not an index, or an extension object
        that is not an object, is a warning and ignored: it changes only which image a
        material draws, and a material draws untextured without one."""
        path = f"textures[{t}]"
        tex = self.r.array("textures")[t]
        sampler = self._index(tex, "sampler", path, "samplers", "the default sampler is used")
        source = self._index(tex, "source", path, "images", "ignored")
        ext = self._obj(tex, "extensions", path, "ignored")
        webp = self._obj(ext, _WEBP, f"{path}.extensions", "ignored")
        webp_source = self._index(webp, "source", f"{path}.extensions.{_WEBP}", "images", "ignored")
        source = webp_source if webp_source is not None else source
        basisu = self._obj(ext, _BASISU, f"{path}.extensions", "ignored")
        ktx_path = f"{path}.extensions.{_BASISU}"
        ktx_source = self._index(basisu, "source", ktx_path, "images", "ignored")
        if ktx_source is not None and (ktx2.available() or source is None):
            source = ktx_source  # the transcoder, or the HINT as a warning
        return sampler, source

    def texture_image(self, t: int, user: str) -> tuple[np.ndarray | None, Sampler]:
        """The decoded image ``textures[t]`` draws (None, with a warning, when it has none or
        it cannot be used) and its sampler; ``user`` is the JSON path of the texture info."""
        sampler_i, source = self.texture(t)
        sampler = Sampler() if sampler_i is None else self.sampler(sampler_i)
        if source is None:
            _warn(
                self.r,
                f"textures[{t}]",
                f"has no PNG, JPEG or WebP source (used by {user}); drawn untextured",
            )
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
        """``materials[m]`` as a :class:`Material`, its texture decoded."""
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
        cutoff = self._cutoff(mat, path, alpha)
        double = r.get_bool(mat, "doubleSided", path)
        try:
            texture, sampler, transform = self._base_color_texture(pbr, ppath)
        except _BudgetSpent:
            raise
        except GltfError as exc:
            # a texture reference, texCoord or transform vkdqs cannot read: the texture is
            # not drawn, the factor is (as for a broken image)
            r.warn_error(exc, "this material draws untextured")
            texture, sampler, transform = None, Sampler(), np.eye(3)
        return Material(
            base_color=tuple(float(x) for x in factor),
            texture=texture,
            sampler=sampler,
            uv_transform=transform,
            alpha_mode=alpha,
            alpha_cutoff=cutoff,
            double_sided=double,
            name=r.get_name(mat, path),
        )

    def _cutoff(self, mat: dict, path: str, alpha: str) -> float:
        """``alphaCutoff``; only MASK reads it (BLEND is drawn as MASK at 0.5), so for another
        ``alphaMode`` one that is not a number >= 0 is a warning and 0.5."""
        try:
            cutoff = self.number(mat, "alphaCutoff", path, 0.5)
            if cutoff < 0.0:
                self.r.fail(f"{path}.alphaCutoff", f"{cutoff} must be >= 0")
        except GltfError as exc:
            if alpha == "MASK":
                raise
            self.r.warn_error(exc, f"ignored (alphaMode {alpha})")
            return 0.5
        return cutoff

    def _base_color_texture(
        self, pbr: dict, ppath: str
    ) -> tuple[np.ndarray | None, Sampler, np.ndarray]:
        """The base-colour texture's pixels (or None), sampler and UV transform."""
        r = self.r
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
        return texture, sampler, transform


def read_materials(reader: _AccessorReader) -> tuple[Material, ...]:
    """Every material of the document (textures decoded), and every image's, texture's and
    sampler's JSON checked."""
    m = _Materials(reader)
    for i in range(len(reader.array("images"))):  # over images, at load
        checked = m.check_image(i)
        if checked is None:
            m._images[i] = None
            continue
        image, path, _ = checked
        uri = image.get("uri")
        if uri is not None and not is_data_uri(uri):
            try:
                resolve_uri(reader.base_dir, uri, f"{path}.uri", name=reader.name)
            except GltfError as exc:
                _warn_error(reader, exc, "not read (its materials draw untextured)")
                m._images[i] = None
    for t in range(len(reader.array("textures"))):  # over textures, at load: JSON checks
        sampler, _ = m.texture(t)
        if sampler is not None:
            m.sampler(sampler)
    for s in range(len(reader.array("samplers"))):
        m.sampler(s)
    return tuple(m.material(i) for i in range(len(reader.array("materials"))))
