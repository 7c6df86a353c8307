"""Materials on the GPU: each :class:`~vkdqs.Material` a descriptor set (set 1) made once per
renderer, with its texture, sampler and uniform block; textures uploaded once per array,
samplers made once per description; and the checks of a mesh's material ranges (``groups``).

The renderer keeps one :class:`MaterialCache`; its crowds bind the same sets.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import shader_interface as si
from ..errors import InputError
from ..gpu import (
    Buffer,
    BufferWrite,
    DescriptorPool,
    DescriptorSetLayout,
    GpuSampler,
    ImageWrite,
    ResourceOwner,
    Texture,
    write_descriptors,
)
from ..gpu.calls import vk
from ..material import Material
from ..mesh import SkinnedMesh

_log = logging.getLogger("vkdqs.engine.renderer")
#: The material of meshes added without one: white, untextured, opaque (one object, so each
#: renderer makes its descriptor set once).
PLAIN = Material()


def check_groups(
    mesh: SkinnedMesh,
    material: Material | Sequence[Material] | None,
    groups: Sequence[tuple[int, int, int]] | None,
) -> tuple[list[Material], list[tuple[int, int, int]]]:
    """The materials and ``(first, count, material index)`` ranges of :meth:`Renderer.add_mesh`,
    checked."""
    if material is None:
        materials = [PLAIN]
    elif isinstance(material, Material):
        materials = [material]
    else:
        try:
            materials = list(material)
        except TypeError:
            raise InputError(
                f"material must be a vkdqs.Material or a list of them, got {material!r}"
            ) from None
        bad = [m for m in materials if not isinstance(m, Material)]
        if bad or not materials:
            raise InputError(
                f"material must be a vkdqs.Material or a non-empty list of them, got {bad[:1]}"
            )
    total = 0 if mesh.indices is None else int(mesh.indices.size)
    if groups is None:
        return materials, [(0, total, 0)]
    ranges = []
    for g, item in enumerate(groups):
        try:
            first, count, k = (int(x) for x in item)
            ok = tuple(item) == (first, count, k)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InputError(f"groups[{g}] must be (first index, index count, material index)")
        if first < 0 or count < 0 or first % 3 or count % 3 or first + count > total:
            raise InputError(
                f"groups[{g}] = {(first, count, k)} is not a range of whole triangles in the "
                f"mesh's {total} indices"
            )
        if not 0 <= k < len(materials):
            raise InputError(f"groups[{g}] uses material {k}; there are {len(materials)}")
        ranges.append((first, count, k))
    return materials, ranges


class GpuMaterial:
    """A material's descriptor set (set 1): its texture (or the renderer's white one), sampler
    and uniform block; made once per Material per renderer, by its :class:`MaterialCache`."""

    def __init__(self, cache: MaterialCache, material: Material, label: str) -> None:
        owner = cache.owner
        dev = owner.device
        self.material = material
        texture = cache.texture(material.texture, label)
        sampler = cache.sampler(material)
        block = np.zeros(1, si.MATERIAL_BLOCK)
        block["base_color"] = material.base_color
        block["uv_row0"][0, :3] = material.uv_transform[0]
        block["uv_row1"][0, :3] = material.uv_transform[1]
        block["alpha"][0, 0] = material.cutoff
        self.uniforms = owner.own(
            Buffer(
                dev,
                block.nbytes,
                vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                label=f"{label} block",
                memory="static",
            )
        )
        self.uniforms.write(block)
        self.pool = owner.own(
            DescriptorPool(dev, si.MATERIAL_BINDINGS, sets=1, label=f"{label} set")
        )
        self.set = self.pool.allocate(cache.layout)
        b = {x.binding: x for x in si.MATERIAL_BINDINGS}
        write_descriptors(
            dev,
            self.set,
            [
                ImageWrite(b[si.MATERIAL_TEXTURE], texture.view, sampler),
                BufferWrite(b[si.MATERIAL_UNIFORMS], self.uniforms, 0, block.nbytes),
            ],
        )


class MaterialCache:
    """The GPU side of a renderer's materials, each made once and owned by ``owner``: material
    sets by Material identity, textures by array identity (the array is kept, so its id stays
    unique), samplers by Sampler value, and one constant vertex row."""

    def __init__(self, owner: ResourceOwner) -> None:
        self.owner = owner
        #: the descriptor set layout of set 1
        self.layout = owner.own(
            DescriptorSetLayout(owner.device, si.MATERIAL_BINDINGS, label="material")
        )
        self.materials: dict[int, tuple[Material, GpuMaterial]] = {}
        self.textures: dict[int, tuple[np.ndarray | None, Texture]] = {}
        self.samplers: dict[Any, GpuSampler] = {}
        self._constant_row: Buffer | None = None
        self._blend_noted = False

    def material(self, material: Material, label: str) -> GpuMaterial:
        """``material``'s descriptor set, made on first use (a BLEND material is noted once:
        it draws as MASK)."""
        entry = self.materials.get(id(material))
        if entry is not None:
            return entry[1]
        if material.alpha_mode == "BLEND" and not self._blend_noted:
            self._blend_noted = True
            _log.warning(
                "material %r is alphaMode BLEND: vkdqs draws it as MASK (alpha cutoff 0.5), "
                "without sorting or blending",
                material.name or label,
            )
        gm = GpuMaterial(self, material, label)
        self.materials[id(material)] = (material, gm)
        return gm

    def texture(self, rgba: np.ndarray | None, label: str) -> Texture:
        """The texture of ``rgba`` (uploaded once), or a 1x1 white one for None."""
        entry = self.textures.get(id(rgba))
        if entry is None:
            pixels = np.full((1, 1, 4), 255, np.uint8) if rgba is None else rgba
            name = "white texture" if rgba is None else f"{label} texture"
            entry = (rgba, self.owner.own(Texture(self.owner.device, pixels, label=name)))
            self.textures[id(rgba)] = entry
        return entry[1]

    def sampler(self, material: Material) -> GpuSampler:
        """The sampler of ``material``'s texture (the default one when untextured)."""
        key = material.sampler if material.texture is not None else None
        if key not in self.samplers:
            desc = material.sampler if key is not None else Material().sampler
            sampler = GpuSampler(self.owner.device, desc, label=f"sampler {key}")
            self.samplers[key] = self.owner.own(sampler)
        return self.samplers[key]

    def constant_row(self) -> Buffer:
        """One vertex row of ones, read by every vertex (stride 0) of meshes without UVs or
        colours: white, and a UV that samples the white texture of untextured materials."""
        if self._constant_row is None:
            self._constant_row = self.owner.own(
                Buffer(
                    self.owner.device,
                    si.MESH_ROW_BYTES,
                    vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
                    label="constant vertex row",
                    memory="static",
                )
            )
            self._constant_row.write(np.ones(4, np.float32))
        return self._constant_row
