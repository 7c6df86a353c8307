"""The USD writer (``.usd``, ``.usda``, ``.usdc``): a ``UsdGeom.Mesh`` with time-sampled points,
normals and extent, its primvars and UsdPreviewSurface materials, written with usd-core (the
``usd`` extra), which keeps the samples in memory until it saves."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..errors import CapabilityError
from ..files import AtomicFile, check_output, output_error
from ..images import encode_png
from .surface import BakeGroup, Surface

if TYPE_CHECKING:
    from ..material import Material

USD_HINT = "writing USD needs usd-core: pip install 'vkdqs[usd]' (or pip install usd-core)"


def import_pxr() -> Any:
    """Import usd-core's (Usd, UsdGeom, Vt), or raise a CapabilityError saying what to install."""
    try:
        from pxr import Usd, UsdGeom, Vt
    except ImportError as exc:
        raise CapabilityError(f"{USD_HINT} ({exc})") from None
    return Usd, UsdGeom, Vt


class UsdWriter:
    """A UsdGeom.Mesh at /Bake/Mesh with time-sampled points, normals and extent."""

    def __init__(
        self,
        path: Path,
        times: NDArray,
        faces: NDArray,
        rest_positions: NDArray,
        rest_normals: NDArray,
        fps: float,
        surface: Surface,
        inputs: Sequence[Path] = (),
    ) -> None:
        Usd, UsdGeom, Vt = import_pxr()
        self.Usd, self.Vt = Usd, Vt
        self.path, self.inputs = check_output(path, inputs), inputs
        self.codes = (np.asarray(times, np.float64) * fps).tolist()
        self.done = 0
        # in memory until finish(): nothing is written under a name anyone could predict
        stage = self.stage = Usd.Stage.CreateInMemory()
        stage.SetTimeCodesPerSecond(fps)
        stage.SetFramesPerSecond(fps)
        stage.SetStartTimeCode(self.codes[0])
        stage.SetEndTimeCode(self.codes[-1])
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)  # glTF is +y up, in metres
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        root = UsdGeom.Xform.Define(stage, "/Bake")
        stage.SetDefaultPrim(root.GetPrim())
        mesh = UsdGeom.Mesh.Define(stage, "/Bake/Mesh")
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        faces = np.ascontiguousarray(faces, np.int32)
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), 3, np.int32)))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(faces.reshape(-1)))
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
        self.points = mesh.CreatePointsAttr()
        self.normals = mesh.CreateNormalsAttr()
        self.extent = mesh.CreateExtentAttr()
        self.textures: list[tuple[Path, NDArray[np.uint8]]] = []
        usd_surface(stage, mesh, surface, path, self.textures)
        for file, _ in self.textures:  # refused before baking, not after
            check_output(file, inputs)

    def write(self, positions: NDArray, normals: NDArray, boxes: NDArray) -> None:
        """Add a batch of frames as time samples of points, normals and extent (the frames'
        boxes, as the GPU reduced them)."""
        Vt, Usd = self.Vt, self.Usd
        lo, hi = boxes[:, 0], boxes[:, 1]
        for k in range(len(positions)):  # over frames: one time sample each
            code = Usd.TimeCode(self.codes[self.done + k])
            self.points.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(positions[k])), code)
            self.normals.Set(Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(normals[k])), code)
            self.extent.Set(Vt.Vec3fArray.FromNumpy(np.stack([lo[k], hi[k]])), code)
        self.done += len(positions)

    def finish(self) -> None:
        """Export the stage and its textures, each under a temporary name, then rename them."""
        stage, self.stage = self.stage, None
        save_stage(stage, self.path, self.textures, self.inputs)

    def abort(self) -> None:
        """Drop the stage in memory; nothing was written yet."""
        self.stage = None


def save_stage(
    stage: Any,
    path: Path,
    textures: Sequence[tuple[Path, NDArray[np.uint8]]],
    inputs: Sequence[Path] = (),
) -> None:
    """Write ``stage``'s root layer to ``path`` and each texture to its PNG file: every file
    under a temporary name first (:class:`~vkdqs.files.AtomicFile`), then the textures renamed
    and the layer last, so a reader never finds the layer without its textures."""
    outputs: list[AtomicFile] = []
    try:
        for file, rgba in textures:  # the PNGs the materials read, next to the file
            out = AtomicFile(file, inputs=inputs)
            outputs.append(out)
            assert out.file is not None
            try:
                out.file.write(encode_png(rgba))
            except OSError as exc:
                raise out.error(exc) from None
        layer = AtomicFile(path, inputs=inputs, want_path=True)
        outputs.append(layer)
        export(stage.GetRootLayer(), layer)
        for out in outputs:
            out.commit()
    finally:
        for out in outputs:
            out.discard()


#: usd-core's message for each writing error it reports (it gives strerror's text, not errno).
_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EPERM, errno.EROFS)


def export(layer: Any, out: AtomicFile) -> None:
    """``layer.Export`` to ``out``'s temporary path, with usd-core's diagnostics (C++ errors,
    warnings) captured: a failure is one :class:`~vkdqs.OutputError` line naming the file."""
    from pxr import Tf

    trap = getattr(Tf, "DiagnosticTrap", None)  # in recent usd-core; older ones raise alike
    try:
        if trap is None:
            ok = layer.Export(str(out.temporary))
        else:
            with trap() as diagnostics:
                try:
                    ok = layer.Export(str(out.temporary))
                finally:
                    diagnostics.Clear()  # not re-posted (printed) on leaving
    except Tf.ErrorException as exc:
        text = str(exc)
        code = next((e for e in _ERRNOS if os.strerror(e) in text), None)
        if code is None:  # the innermost message is the one that says why
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            why = lines[0].rsplit(" : ", 1)[-1].strip("'") if lines else "usd-core failed"
            raise output_error(
                OSError(errno.EIO, f"usd-core: {why}"), out.path, existed=out.existed
            ) from None
        raise output_error(
            OSError(code, os.strerror(code)), out.path, existed=out.existed
        ) from None
    if not ok:
        raise output_error(
            OSError(errno.EIO, "usd-core could not write it"), out.path, existed=out.existed
        )


def usd_surface(
    stage: Any,
    mesh: Any,
    surface: Surface,
    path: Path,
    textures: list[tuple[Path, NDArray[np.uint8]]],
    *,
    scope: str = "/Bake/Materials",
    defined: dict[int, Any] | None = None,
) -> None:
    """``primvars:st`` and ``primvars:displayColor`` of ``mesh``, and a UsdPreviewSurface
    material per source material (a UsdUVTexture reading ``<stem>_texture<i>.png`` next to
    ``path``, appended to ``textures`` for the writer to save), bound to the mesh or, with
    several, to one ``materialBind`` GeomSubset of faces each.

    Several meshes of one stage share their materials and textures: pass the same ``textures``
    and ``defined`` (``id(material)`` -> its ``UsdShade.Material``, filled here) to each call;
    materials are defined under ``scope``."""
    from pxr import UsdGeom

    groups, materials = surface.groups, surface.materials
    primvars = UsdGeom.PrimvarsAPI(mesh)
    vertex = np.repeat(np.arange(len(groups)), [g.vertex_count for g in groups])
    faces = np.repeat(np.arange(len(groups)), [g.face_count for g in groups])
    if surface.uvs is not None:
        _texcoords(primvars, surface, vertex)
    _display_color(primvars, surface, vertex, faces)
    if any(m.double_sided for m in materials):
        mesh.CreateDoubleSidedAttr(True)
    if not materials:
        return
    texture_of, file_of = _texture_files(surface, path, textures)
    defined = {} if defined is None else defined
    UsdGeom.Scope.Define(stage, scope)
    shaded = []
    for m, t in zip(materials, texture_of, strict=True):  # a few materials
        if id(m) in defined:
            shaded.append(defined[id(m)])
            continue
        file = None if t is None else textures[file_of[t]][0].name
        mat = _preview_material(stage, f"{scope}/Material{len(defined)}", m, file, surface)
        shaded.append(mat)
        defined[id(m)] = mat
    _bind_materials(mesh, groups, faces, shaded)


def _texcoords(primvars: Any, surface: Surface, vertex: NDArray[np.int64]) -> None:
    """``primvars:st``: each vertex's UV through the texture transform of its material
    (``vertex``: each vertex's group), then flipped to USD's ``t = 1 - v``."""
    from pxr import Sdf, UsdGeom, Vt

    groups, materials = surface.groups, surface.materials
    # the texture transform of each vertex's material, then USD's t = 1 - v
    mats = np.stack(
        [np.eye(3)] + [m.uv_transform if m.texture is not None else np.eye(3) for m in materials]
    )
    which = np.array([0 if g.material is None else g.material + 1 for g in groups])[vertex]
    uv = surface.uvs.astype(np.float64)
    m = mats[which]
    st = np.stack(
        [
            m[:, 0, 0] * uv[:, 0] + m[:, 0, 1] * uv[:, 1] + m[:, 0, 2],
            1.0 - (m[:, 1, 0] * uv[:, 0] + m[:, 1, 1] * uv[:, 1] + m[:, 1, 2]),
        ],
        axis=1,
    ).astype(np.float32)
    primvars.CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.vertex).Set(
        Vt.Vec2fArray.FromNumpy(st)
    )


def _display_color(
    primvars: Any, surface: Surface, vertex: NDArray[np.int64], faces: NDArray[np.int64]
) -> None:
    """``primvars:displayColor``: ``COLOR_0`` times the base colour factor per vertex, else
    the factor per face group (constant for a single group), so a viewer without the
    materials still draws the colours."""
    from pxr import Sdf, UsdGeom, Vt

    groups, materials = surface.groups, surface.materials
    # displayColor: COLOR_0 x the base colour factor (linear, as both are)
    factors = np.array([[1.0, 1.0, 1.0]] + [m.base_color[:3] for m in materials], np.float32)[
        np.array([0 if g.material is None else g.material + 1 for g in groups])
    ]
    if surface.colors is not None:
        color, how = surface.colors[:, :3] * factors[vertex], UsdGeom.Tokens.vertex
    elif len(groups) == 1:
        color, how = factors, UsdGeom.Tokens.constant
    else:
        color, how = factors[faces], UsdGeom.Tokens.uniform
    primvars.CreatePrimvar("displayColor", Sdf.ValueTypeNames.Color3fArray, how).Set(
        Vt.Vec3fArray.FromNumpy(np.ascontiguousarray(color, np.float32))
    )


def _texture_files(
    surface: Surface, path: Path, textures: list[tuple[Path, NDArray[np.uint8]]]
) -> tuple[list[int | None], list[int]]:
    """Each material's texture (an index into the surface's distinct textures, or None) and
    each distinct texture's entry of ``textures``, where a texture not already there (from
    another mesh of the stage) is appended with its PNG's path."""
    images, texture_of = surface.textures()
    known = {id(rgba): i for i, (_, rgba) in enumerate(textures)}
    file_of: list[int] = []  # each of this surface's textures -> its entry of ``textures``
    for rgba in images:  # over distinct textures
        if id(rgba) not in known:
            known[id(rgba)] = len(textures)
            textures.append((path.with_name(f"{path.stem}_texture{len(textures)}.png"), rgba))
        file_of.append(known[id(rgba)])
    return texture_of, file_of


def _preview_material(
    stage: Any, where: str, m: Material, file: str | None, surface: Surface
) -> Any:
    """Define the ``UsdShade.Material`` at ``where`` drawing ``m`` with a UsdPreviewSurface:
    its diffuse colour from the texture ``file`` (next to the layer) when it has one, else
    from ``primvars:displayColor`` when the surface has vertex colours, else its factor; an
    opacity (and threshold) for MASK and BLEND."""
    from pxr import Gf, Sdf, UsdShade

    mat = UsdShade.Material.Define(stage, where)
    if m.name:  # prim names are identifiers; the glTF name is kept as the display name
        mat.GetPrim().SetDisplayName(m.name)
    pbr = UsdShade.Shader.Define(stage, f"{where}/PreviewSurface")
    pbr.CreateIdAttr("UsdPreviewSurface")
    pbr.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(0.0)
    pbr.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(1.0)
    mat.CreateSurfaceOutput().ConnectToSource(pbr.ConnectableAPI(), "surface")
    diffuse = pbr.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f)
    # glTF's OPAQUE ignores alpha: only MASK and BLEND set an opacity
    see_through = m.alpha_mode != "OPAQUE"
    opacity = pbr.CreateInput("opacity", Sdf.ValueTypeNames.Float) if see_through else None
    if file is not None:
        _base_color_texture(stage, where, m, file, diffuse, opacity)
    elif surface.colors is not None:
        reader = UsdShade.Shader.Define(stage, f"{where}/DisplayColorReader")
        reader.CreateIdAttr("UsdPrimvarReader_float3")
        reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set("displayColor")
        reader.CreateOutput("result", Sdf.ValueTypeNames.Float3)
        diffuse.ConnectToSource(reader.ConnectableAPI(), "result")
    else:
        diffuse.Set(Gf.Vec3f(*m.base_color[:3]))
    if opacity is not None and file is None:
        opacity.Set(m.base_color[3])
    if m.alpha_mode == "MASK":
        pbr.CreateInput("opacityThreshold", Sdf.ValueTypeNames.Float).Set(m.alpha_cutoff)
    return mat


def _base_color_texture(
    stage: Any, where: str, m: Material, file: str, diffuse: Any, opacity: Any
) -> None:
    """The UsdUVTexture reading ``file`` at ``primvars:st`` (its sampler's wrap modes, sRGB,
    scaled by the base colour factor) under the material at ``where``, connected to its
    ``diffuse`` input and, for MASK and BLEND, its ``opacity`` (None for OPAQUE)."""
    from pxr import Gf, Sdf, UsdShade

    reader = UsdShade.Shader.Define(stage, f"{where}/TexCoordReader")
    reader.CreateIdAttr("UsdPrimvarReader_float2")
    reader.CreateInput("varname", Sdf.ValueTypeNames.String).Set("st")
    reader.CreateOutput("result", Sdf.ValueTypeNames.Float2)
    tex = UsdShade.Shader.Define(stage, f"{where}/BaseColorTexture")
    tex.CreateIdAttr("UsdUVTexture")
    tex.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(Sdf.AssetPath(f"./{file}"))
    tex.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(
        reader.ConnectableAPI(), "result"
    )
    tex.CreateInput("wrapS", Sdf.ValueTypeNames.Token).Set(m.sampler.wrap_s)
    tex.CreateInput("wrapT", Sdf.ValueTypeNames.Token).Set(m.sampler.wrap_t)
    tex.CreateInput("sourceColorSpace", Sdf.ValueTypeNames.Token).Set("sRGB")
    tex.CreateInput("scale", Sdf.ValueTypeNames.Float4).Set(Gf.Vec4f(*m.base_color))
    tex.CreateOutput("rgb", Sdf.ValueTypeNames.Float3)
    tex.CreateOutput("a", Sdf.ValueTypeNames.Float)
    diffuse.ConnectToSource(tex.ConnectableAPI(), "rgb")
    if opacity is not None:
        opacity.ConnectToSource(tex.ConnectableAPI(), "a")


def _bind_materials(
    mesh: Any, groups: Sequence[BakeGroup], faces: NDArray[np.int64], shaded: list
) -> None:
    """Bind ``shaded[k]`` (material ``k``'s) to the mesh, or with several groups to one
    ``materialBind`` GeomSubset of the faces of each material used (``faces``: each face's
    group)."""
    from pxr import UsdGeom, UsdShade, Vt

    used = sorted({g.material for g in groups if g.material is not None})
    binding = UsdShade.MaterialBindingAPI.Apply(mesh.GetPrim())
    if len(groups) == 1 and used:
        binding.Bind(shaded[used[0]])
        return
    for k in used:  # one subset of faces per material
        ids = np.flatnonzero(np.array([g.material == k for g in groups])[faces]).astype(np.int32)
        subset = binding.CreateMaterialBindSubset(
            f"Material{k}", Vt.IntArray.FromNumpy(ids), UsdGeom.Tokens.face
        )
        UsdShade.MaterialBindingAPI.Apply(subset.GetPrim()).Bind(shaded[k])
