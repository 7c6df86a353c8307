"""vkdqs.shader_interface agrees with the committed SPIR-V, read out of the modules themselves.

CPU only, no tools: tests/spirv_reflect.py parses the words. Each ``check_*`` returns the
problems it finds for one variant and its module (an empty list when they agree), so the same
functions run over every variant and, fed a wrong module, show that they can fail.

What ``glslc -O`` keeps decides how strict a check can be. Every compute and readback module
keeps every binding its host layout declares, so those match exactly. The rendering variants
share one layout (``RENDER_BINDINGS``) and each uses part of it (skin_none and skin.frag only
the instance block, dqs and lbs no scale block), so per module the rule is Vulkan's: what the
shader uses must be in the layout with a compatible type and stage; and together the render
modules use exactly that layout. Freshness of the .spv files is build_shaders.py --check's job
(tests/test_shaders_fresh.py).
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.spirv_reflect import (
    ARRAY_STRIDE,
    DESCRIPTOR_SET,
    DIM_BUFFER,
    LOCATION,
    OFFSET,
    OP_DECORATE,
    OP_ENTRY_POINT,
    OP_MEMBER_DECORATE,
    OP_TYPE_IMAGE,
    SPEC_ID,
    Descriptor,
    Member,
    Module,
    instructions,
    words_of,
)
from vkdqs import methods
from vkdqs.shader_interface import (
    ALPHA_MASK_ID,
    BONE_SCALES,
    BONES,
    BOUNDS_EDGES_ID,
    BOUNDS_POSITIONS,
    BOUNDS_TEXEL_FORMAT,
    CENTERS_OUT,
    CENTERS_TEXELS,
    COMPUTE_OUT,
    COMPUTE_OUT_FORMAT,
    COMPUTE_OUT_NORMALS,
    COMPUTE_OUTPUT_ID,
    CROWD_BONES,
    CROWD_BONES_OUT,
    CROWD_COLOR_LOCATION,
    CROWD_COLORS_ID,
    CROWD_COPIES,
    CROWD_FRAMES,
    CROWD_TEXEL_FORMAT,
    CROWD_UVS_ID,
    DDM_NEXT,
    DDM_OUT_FORMAT,
    DDM_SUM,
    DDM_TEXELS,
    DELTA_MUSH_DST,
    DELTA_MUSH_DST_OUT,
    DELTA_MUSH_FROM_OUT_ID,
    DELTA_MUSH_OVERFLOW_ID,
    DELTA_MUSH_PASS_ID,
    DELTA_MUSH_SCRATCH_FORMAT,
    DELTA_MUSH_SRC,
    DELTA_MUSH_SRC_OUT,
    DELTA_MUSH_TEXELS,
    INSTANCE,
    INSTANCE_BLOCK,
    LOCAL_SIZE_ID,
    MATERIAL_BINDINGS,
    MATERIAL_BLOCK,
    MATERIAL_SET,
    MATERIAL_UNIFORMS,
    MAX_BONES_ID,
    MORPH_BLOCK,
    MORPH_DELTAS,
    MORPH_TARGETS_ID,
    MORPH_TEXEL_FORMAT,
    MORPH_WEIGHTS,
    OCT_NORMALS_ID,
    OUTPUT_STRIDE_ID,
    PACKED_ROWS_ID,
    RENDER_BINDINGS,
    SAMPLE_COUNTS,
    SCALE_STRIDE,
    TEXTURED_ID,
    VARIANTS,
    VELOCITY_SLOT_TEXELS_ID,
    VELOCITY_TEXELS,
    VELOCITY_VERTICES,
    VERTEX_COLORS_ID,
    DescriptorType,
    Format,
    Stage,
    Variant,
    attributes,
    bindings_of,
    bone_stride,
    crowd_render_inputs,
    crowd_surface,
    has_second_block,
    mesh_inputs,
    push_bytes_of,
    render_inputs,
    sample_bit,
    surface_variant,
)

SPIRV_DIR = Path(__file__).resolve().parents[1] / "shaders" / "spirv"
BY_NAME = {v.name: v for v in VARIANTS}
STAGE_OF_KIND = {
    "render": Stage.VERTEX,
    "readback": Stage.VERTEX,
    "compute": Stage.COMPUTE,
    "fragment": Stage.FRAGMENT,
    "centers": Stage.COMPUTE,
    "ddm_smooth": Stage.COMPUTE,
    "crowd_sample": Stage.COMPUTE,
    "crowd_cull": Stage.COMPUTE,
    "crowd_render": Stage.VERTEX,
    "crowd_fragment": Stage.FRAGMENT,
    "overlay": Stage.VERTEX,
    "overlay_fragment": Stage.FRAGMENT,
    "delta_mush": Stage.COMPUTE,
    "bounds": Stage.COMPUTE,
    "velocity": Stage.COMPUTE,
}
#: Kinds whose pipeline layout serves that one module, which keeps every binding of it.
EXACT_KINDS = (
    "compute",
    "readback",
    "centers",
    "ddm_smooth",
    "crowd_sample",
    "crowd_cull",
    "overlay_fragment",
    "delta_mush",
    "bounds",
    "velocity",
)
#: The descriptor type a shader sees for a host descriptor type.
SHADER_TYPE = {DescriptorType.UNIFORM_BUFFER_DYNAMIC: DescriptorType.UNIFORM_BUFFER}
#: Vertex format -> (scalar, components, bits) of the GLSL input reading it.
VERTEX_INPUT_TYPES = {
    Format.R32_SFLOAT: ("float", 1, 32),
    Format.R32G32_SFLOAT: ("float", 2, 32),
    Format.R32G32B32_SFLOAT: ("float", 3, 32),
    Format.R32G32B32A32_SFLOAT: ("float", 4, 32),
    Format.R32G32B32A32_SINT: ("int", 4, 32),
    Format.R32G32B32A32_UINT: ("uint", 4, 32),
}
#: Texel format -> (sampled scalar, SPIR-V Image Format: 0 Unknown, 3 R32f) of its texel buffer.
TEXEL_TYPES = {
    Format.R32G32B32A32_SFLOAT: ("float", 0),
    Format.R32G32B32A32_SINT: ("int", 0),
    Format.R32_SFLOAT: ("float", 3),
    Format.R32G32B32A32_UINT: ("uint", 0),
    Format.R32_UINT: ("uint", 0),  # sampled (usamplerBuffer): no image format
}
NUMPY_SCALARS = {"f": "float", "i": "int", "u": "uint"}


@functools.cache
def module(name: str) -> Module:
    return Module.from_file(SPIRV_DIR / f"{name}.spv")


def set0(mod: Module) -> dict[int, Descriptor]:
    """The module's set-0 descriptors by binding (vkdqs uses one set; check_bindings says so)."""
    return {b: d for (s, b), d in mod.descriptors().items() if s == 0}


# -- checks: one variant against its module -------------------------------------------------


def check_stage(v: Variant, mod: Module) -> list[str]:
    want = STAGE_OF_KIND[v.kind]
    return [] if mod.stage == want.name else [f"entry point is {mod.stage}, not {want.name}"]


def check_bindings(v: Variant, mod: Module) -> list[str]:
    """Module bindings ⊆ host layout, with compatible types and stages; equal for EXACT_KINDS."""
    stage, exact = Stage[mod.stage], v.kind in EXACT_KINDS
    host = {b.binding: b for b in bindings_of(v)}
    problems = [] if len(host) == len(bindings_of(v)) else ["host layout repeats a binding"]
    # the renderer's pipelines also have the material set (set 1)
    materials = (
        {b.binding: b for b in MATERIAL_BINDINGS}
        if v.kind in ("render", "fragment", "crowd_render", "crowd_fragment")
        else {}
    )
    for (set_, n), d in sorted(mod.descriptors().items()):
        b = host.get(n) if set_ == 0 else materials.get(n) if set_ == MATERIAL_SET else None
        if b is None:
            problems.append(f"set {set_} binding {n} ({d.type}) is not in the host layout")
            continue
        if SHADER_TYPE.get(b.type, b.type).name != d.type:
            problems.append(f"binding {n}: shader has {d.type}, host declares {b.type.name}")
        if stage not in b.stages or (exact and b.stages != stage):
            problems.append(f"binding {n}: host stages {b.stages!r}, shader stage {stage.name}")
    if exact:
        problems += [f"binding {n} is not in the module" for n in sorted(host.keys() - set0(mod))]
    return problems


def check_texel_formats(v: Variant, mod: Module) -> list[str]:
    """The compute shader's texel buffers read and write what the host's buffer views hold."""
    if v.kind == "centers":
        want = [*CENTERS_TEXELS, (CENTERS_OUT, COMPUTE_OUT_FORMAT)]
    elif v.kind == "ddm_smooth":
        want = list(DDM_TEXELS)
        assert DDM_OUT_FORMAT == Format.R32G32B32A32_SFLOAT
        for n in (DDM_NEXT, DDM_SUM):
            scalar, _, _, image_format = mod.image(set0(mod)[n].type_id)
            if (scalar, image_format) != ("float", 1):  # SPIR-V Image Format 1: Rgba32f
                return [f"binding {n}: shader has {scalar}/format {image_format}, host rgba32f"]
    elif v.kind == "delta_mush":  # the texels, the Skinner's output, the scratch it reads
        out = COMPUTE_OUT_FORMAT
        want = [*DELTA_MUSH_TEXELS, (DELTA_MUSH_SRC_OUT, out), (DELTA_MUSH_DST_OUT, out)]
        want.append((DELTA_MUSH_SRC, DELTA_MUSH_SCRATCH_FORMAT))
    elif v.kind == "bounds":  # the Skinner's output, as rgba32f texels
        want = [(BOUNDS_POSITIONS, BOUNDS_TEXEL_FORMAT)]
    elif v.kind == "velocity":  # the Skinner's output (r32f), the mesh's rows, the joints
        want = list(VELOCITY_TEXELS)
        assert dict(want)[VELOCITY_VERTICES] == COMPUTE_OUT_FORMAT
    elif v.kind == "compute":
        want = [(m.binding, m.texel_format) for m in mesh_inputs(v.slots, v.method)]
        want += [(COMPUTE_OUT, COMPUTE_OUT_FORMAT), (COMPUTE_OUT_NORMALS, COMPUTE_OUT_FORMAT)]
    elif v.kind in ("render", "readback", "crowd_render") and v.method != "none":
        # the mesh's inputs read as texels on every path (Direct Delta Mush's Ω and bones)
        texels = mesh_inputs(v.slots, v.method)
        want = [(m.binding, m.texel_format) for m in texels if m.location < 0]
        if not want:
            return []
    else:
        return []
    ds, problems = set0(mod), []
    for n, fmt in want:
        if n not in ds:
            problems.append(f"texel buffer binding {n} is not in the module")
            continue
        scalar, _, _, image_format = mod.image(ds[n].type_id)
        if (scalar, image_format) != TEXEL_TYPES[fmt]:
            problems.append(f"binding {n}: shader has {scalar}/format {image_format}, host {fmt!r}")
    return problems


def check_bone_blocks(v: Variant, mod: Module) -> list[str]:
    """Bone (and scale) block array stride, and its length being the MAX_BONES constant."""
    if v.method == "none" or v.kind.startswith("crowd"):
        return []
    want = {BONES: bone_stride(v.method)}
    if has_second_block(v.method):
        want[BONE_SCALES] = SCALE_STRIDE
    ds, problems = set0(mod), []
    for n, stride in want.items():
        if n not in ds or ds[n].type != "UNIFORM_BUFFER":
            problems.append(f"no uniform block at binding {n}")
            continue
        got, length_id = mod.member_array(ds[n].type_id)
        if got != stride:
            problems.append(f"binding {n}: array stride {got}, shader_interface says {stride}")
        if length_id != MAX_BONES_ID:
            problems.append(f"binding {n}: array length has SpecId {length_id}, not MAX_BONES_ID")
    return problems


def check_vertex_inputs(v: Variant, mod: Module) -> list[str]:
    """Vertex inputs ⊆ mesh_inputs(slots) (render_inputs for rendering variants: with the
    scalar at location 9; crowd_render_inputs for crowds: with the material's UV and colour)
    by location and type; equal where the shader skins.

    skin_none reads all four today (the heat map uses joints and weights) but needs none of the
    influences, so for it only the Vulkan rule (every input fed) is asserted.
    """
    if v.kind == "overlay":
        return [f"location {n} is read by the overlay" for n in sorted(mod.inputs())]
    if v.kind not in ("render", "readback", "crowd_render"):
        return []
    if v.kind == "crowd_render":
        host_inputs = crowd_render_inputs(v.slots, v.method, crowd_surface(v))
    else:
        host_inputs = (
            render_inputs(v.slots, v.method, surface_variant(v))
            if v.kind == "render"
            else attributes(mesh_inputs(v.slots, v.method))
        )
    host = {m.location: m for m in host_inputs}
    shader, problems = mod.inputs(), []
    for loc, got in sorted(shader.items()):
        m = host.get(loc)
        if m is None:
            problems.append(f"location {loc} {got} is not a mesh input")
        elif VERTEX_INPUT_TYPES.get(m.vertex_format) != got:
            problems.append(f"location {loc} ({m.name}): shader {got}, host {m.vertex_format!r}")
    if v.method != "none":
        problems += [f"location {n} is not in the module" for n in sorted(host.keys() - shader)]
    return problems


def check_specialization(v: Variant, mod: Module) -> list[str]:
    """Exactly the SpecIds the host sets; the compute local_size_x is LOCAL_SIZE_ID; every
    skin.* variant has MORPH_TARGETS_ID."""
    compute = v.kind in (
        "compute",
        "centers",
        "ddm_smooth",
        "crowd_sample",
        "crowd_cull",
        "delta_mush",
        "bounds",
    )
    bones = v.method != "none" and not v.kind.startswith("crowd")  # crowds: runtime arrays
    want = ({MAX_BONES_ID} if bones else set()) | ({LOCAL_SIZE_ID} if compute else set())
    if v.kind in ("render", "readback", "compute"):
        want |= {MORPH_TARGETS_ID}
    if v.kind in ("render", "readback", "compute", "crowd_render"):  # include/vertex_data.glsl
        want |= {OCT_NORMALS_ID}
    if v.kind == "compute":  # skin.comp: vertices, their box, or both; the rows' stride
        want |= {COMPUTE_OUTPUT_ID, OUTPUT_STRIDE_ID}
    if v.kind == "compute" and "SKIN_DDM" not in v.defines:  # the lean layout's packed rows
        want |= {PACKED_ROWS_ID}
    if v.kind == "delta_mush":  # delta_mush.comp: which pass, reading what
        want |= {DELTA_MUSH_PASS_ID, DELTA_MUSH_FROM_OUT_ID, DELTA_MUSH_OVERFLOW_ID}
    if v.kind == "bounds":  # bounds.comp: the edge dispatch or the main one
        want |= {BOUNDS_EDGES_ID}
    if v.kind == "velocity":  # velocity.comp: one influence texel a vertex or two
        want |= {VELOCITY_SLOT_TEXELS_ID}
    surface = surface_variant(v)  # with the UV and colour inputs
    if v.kind == "crowd_render" and surface:  # crowd.vert: UV and colour passed on or constant
        want |= {CROWD_UVS_ID, CROWD_COLORS_ID}
    if v.kind in ("fragment", "crowd_fragment"):  # skin.frag: texture, colour, alpha test
        want |= {ALPHA_MASK_ID} | ({TEXTURED_ID, VERTEX_COLORS_ID} if surface else set())
    problems = [] if set(mod.spec_ids()) == want else [f"SpecIds {set(mod.spec_ids())} != {want}"]
    if compute and mod.workgroup_size_spec_ids() != (LOCAL_SIZE_ID, None, None):
        problems.append(f"workgroup size SpecIds are {mod.workgroup_size_spec_ids()}")
    return problems


def block_problems(members: list[Member], dtype: np.dtype) -> list[str]:
    """Block members against a numpy dtype's fields: offset, size and scalar kind, in order."""
    fields = [(name, dtype.fields[name]) for name in dtype.names]
    problems = (
        [] if len(members) == len(fields) else [f"{len(members)} members, {len(fields)} fields"]
    )
    for m, (name, (ftype, offset)) in zip(members, fields, strict=False):
        want = Member(offset, ftype.itemsize, NUMPY_SCALARS[ftype.base.kind])
        if m != want:
            problems.append(f"{name}: shader {m}, host {want}")
    end = max((m.offset + m.size for m in members), default=0)
    if end != dtype.itemsize:
        problems.append(f"block ends at {end}, dtype itemsize is {dtype.itemsize}")
    return problems


def check_instance_block(v: Variant, mod: Module) -> list[str]:
    if v.kind not in ("render", "fragment", "crowd_render", "crowd_fragment"):
        return []
    d = set0(mod).get(INSTANCE)
    if d is None and v.kind == "crowd_render" and not methods.get(v.method).influences:
        return []  # crowd.vert reads it for the bone heat map only: no weights to show (DDM)
    if d is None or d.type != "UNIFORM_BUFFER":
        return [f"no uniform block at binding {INSTANCE}"]
    return block_problems(mod.members(d.type_id), INSTANCE_BLOCK)


def check_morph_bindings(v: Variant, mod: Module) -> list[str]:
    """Every skin.* variant (not crowds, not skin.frag) reads morph deltas from an rgba32f
    texel buffer at MORPH_DELTAS and the MorphBlock at MORPH_WEIGHTS, laid out as MORPH_BLOCK."""
    if v.kind not in ("render", "readback", "compute"):
        return []
    ds, problems = set0(mod), []
    d = ds.get(MORPH_WEIGHTS)
    if d is None or d.type != "UNIFORM_BUFFER":
        problems.append(f"no uniform block at binding {MORPH_WEIGHTS}")
    else:
        problems += block_problems(mod.members(d.type_id), MORPH_BLOCK)
    t = ds.get(MORPH_DELTAS)
    if t is None:
        problems.append(f"no texel buffer at binding {MORPH_DELTAS}")
    else:
        scalar, dim, _, _ = mod.image(t.type_id)
        assert MORPH_TEXEL_FORMAT == Format.R32G32B32A32_SFLOAT
        if (scalar, dim) != ("float", DIM_BUFFER):
            problems.append(f"binding {MORPH_DELTAS}: {scalar}/dim {dim}, host rgba32f texels")
    return problems


def check_material_block(v: Variant, mod: Module) -> list[str]:
    """skin.frag's MaterialBlock (set 1) is MATERIAL_BLOCK, in its crowd variant too; no other
    module reads set 1."""
    d = mod.descriptors().get((MATERIAL_SET, MATERIAL_UNIFORMS))
    if v.kind not in ("fragment", "crowd_fragment"):
        return [] if d is None else ["reads the material block"]
    if d is None or d.type != "UNIFORM_BUFFER":
        return [f"no uniform block at set {MATERIAL_SET} binding {MATERIAL_UNIFORMS}"]
    return block_problems(mod.members(d.type_id), MATERIAL_BLOCK)


def check_push_constants(v: Variant, mod: Module) -> list[str]:
    """The push block is exactly the host range; skin.frag has none.

    skin.frag shares the render layout, whose range is the vertex stage's (shader_interface
    records no push-constant stages), so a push block there would need a host change.
    """
    size, host = mod.push_constant_size(), push_bytes_of(v)
    want = None if v.kind in ("fragment", "crowd_fragment", "overlay") else host
    return [] if size == want else [f"push block is {size} bytes, expected {want}"]


def check_crowd_texels(v: Variant, mod: Module) -> list[str]:
    """Crowd frames, bones and copies are float texel buffers; the sampled bones are written as
    rgba32f (SPIR-V Image Format 1), what CROWD_TEXEL_FORMAT views hold."""
    if v.kind == "crowd_sample":
        want = {CROWD_FRAMES: 0, CROWD_BONES_OUT: 1}
    elif v.kind == "crowd_render":
        want = {CROWD_BONES: 0, CROWD_COPIES: 0}
    else:
        return []
    assert CROWD_TEXEL_FORMAT == Format.R32G32B32A32_SFLOAT
    ds, problems = set0(mod), []
    for n, image_format in want.items():
        if n not in ds:
            problems.append(f"texel buffer binding {n} is not in the module")
            continue
        scalar, dim, _, got = mod.image(ds[n].type_id)
        if (scalar, dim, got) != ("float", DIM_BUFFER, image_format):
            problems.append(f"binding {n}: {scalar}/dim {dim}/format {got}, host rgba32f texels")
    return problems


def check_delta_mush_scratch(v: Variant, mod: Module) -> list[str]:
    """delta_mush.comp writes its scratch buffer as rgba32f (SPIR-V Image Format 1), what its
    DELTA_MUSH_SCRATCH_FORMAT views hold."""
    if v.kind != "delta_mush":
        return []
    assert DELTA_MUSH_SCRATCH_FORMAT == Format.R32G32B32A32_SFLOAT
    d = set0(mod).get(DELTA_MUSH_DST)
    if d is None:
        return [f"texel buffer binding {DELTA_MUSH_DST} is not in the module"]
    scalar, dim, _, got = mod.image(d.type_id)
    if (scalar, dim, got) != ("float", DIM_BUFFER, 1):
        return [f"binding {DELTA_MUSH_DST}: {scalar}/dim {dim}/format {got}, host rgba32f texels"]
    return []


CHECKS = (
    check_delta_mush_scratch,
    check_crowd_texels,
    check_stage,
    check_bindings,
    check_texel_formats,
    check_bone_blocks,
    check_vertex_inputs,
    check_specialization,
    check_instance_block,
    check_morph_bindings,
    check_material_block,
    check_push_constants,
)


def _name(f: Callable) -> str:
    return f.__name__.removeprefix("check_")


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.name)
def test_every_variant_has_a_module(v: Variant) -> None:
    assert (SPIRV_DIR / f"{v.name}.spv").is_file()


def test_every_module_is_a_variant() -> None:
    assert len(BY_NAME) == len(VARIANTS), "two variants share a name"
    assert {p.name.removesuffix(".spv") for p in SPIRV_DIR.glob("*.spv")} == set(BY_NAME)


@pytest.mark.parametrize("check", CHECKS, ids=_name)
@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.name)
def test_module_matches_shader_interface(v: Variant, check: Callable) -> None:
    assert check(v, module(v.name)) == []


def test_render_modules_use_exactly_the_render_layout() -> None:
    """Together the render variants and skin.frag use every RENDER_BINDINGS entry and stage."""
    used: dict[int, tuple[str, Stage]] = {}
    for v in VARIANTS:
        if v.kind in ("render", "fragment"):
            mod = module(v.name)
            for n, d in set0(mod).items():
                stages = used.get(n, (d.type, Stage(0)))[1]
                used[n] = (d.type, stages | Stage[mod.stage])
    host = {b.binding: (SHADER_TYPE.get(b.type, b.type).name, b.stages) for b in RENDER_BINDINGS}
    assert used == host


def test_the_fragment_shader_uses_exactly_the_material_set() -> None:
    """skin_surface.frag and skin_crowd_surface.frag read every MATERIAL_BINDINGS entry of set 1
    (the texture as a combined image sampler), with its type; the variants without the UV and
    colour inputs read only the block; no vertex shader reads set 1."""
    for name in ("skin_surface.frag", "skin.frag", "skin_crowd_surface.frag", "skin_crowd.frag"):
        used = {n: d.type for (s, n), d in module(name).descriptors().items() if s == 1}
        want = {b.binding: b.type.name for b in MATERIAL_BINDINGS}
        if not name.endswith("_surface.frag"):
            want = {MATERIAL_UNIFORMS: want[MATERIAL_UNIFORMS]}
        assert used == want, name
    for v in VARIANTS:
        if v.kind in ("render", "crowd_render"):
            assert all(s == 0 for s, _ in module(v.name).descriptors()), v.name


def test_crowd_fragment_reads_what_the_crowd_vertex_shaders_write() -> None:
    """skin_crowd_surface.frag has skin.frag's inputs (UV at 3, vertex colour at 4, ...) but the
    copy's flat colour at CROWD_COLOR_LOCATION instead of the heat-map scalar at 6;
    skin_crowd.frag the same without UV and colour (the crowd.vert variants without
    CROWD_SURFACE write neither)."""
    instance = module("skin_surface.frag").inputs()
    crowd, bare = module("skin_crowd_surface.frag").inputs(), module("skin_crowd.frag").inputs()
    # the instance shader without SURFACE: neither UV, colour nor the scalar
    assert module("skin.frag").inputs() == {k: v for k, v in instance.items() if k not in (3, 4, 6)}
    assert crowd[CROWD_COLOR_LOCATION] == ("float", 4, 32)
    assert {k: v for k, v in crowd.items() if k != CROWD_COLOR_LOCATION} == {
        k: v for k, v in instance.items() if k != 6
    }
    assert bare == {k: v for k, v in crowd.items() if k not in (3, 4)}
    for v in VARIANTS:
        if v.kind == "crowd_render":
            assert (
                set(crowd_render_inputs(v.slots, v.method, True))
                > set(crowd_render_inputs(v.slots, v.method, False))
            ) and crowd_surface(v) == v.name.endswith("_surface.vert"), v.name


def test_vulkan_enum_values() -> None:
    """The numbers shader_interface writes out equal the ``vulkan`` binding's VK_* constants."""
    try:
        import vulkan as vk
    except OSError as exc:  # the binding loads libvulkan.so.1 when imported
        if os.environ.get("VKDQS_REQUIRE_DEVICE", "") not in ("", "0"):
            pytest.fail(f"VKDQS_REQUIRE_DEVICE=1 but the Vulkan loader is missing: {exc}")
        pytest.skip(f"no Vulkan loader: {exc}")
    for t in DescriptorType:
        assert getattr(vk, f"VK_DESCRIPTOR_TYPE_{t.name}") == t, t
    for f in Format:
        assert getattr(vk, f"VK_FORMAT_{f.name}") == f, f
    for s in (Stage.VERTEX, Stage.FRAGMENT, Stage.COMPUTE):
        assert getattr(vk, f"VK_SHADER_STAGE_{s.name}_BIT") == s, s
    for n in SAMPLE_COUNTS:
        assert getattr(vk, f"VK_SAMPLE_COUNT_{n}_BIT") == sample_bit(n), n


# -- the checks can fail --------------------------------------------------------------------


def patched(name: str, opcode: int, match: Callable, operand: int, value: int) -> Module:
    """Module ``name`` with one operand of the first ``opcode`` instruction matching replaced."""
    words = list(words_of((SPIRV_DIR / f"{name}.spv").read_bytes()))
    for at, op, operands in instructions(words):
        if op == opcode and match(operands):
            words[at + 1 + operand] = value
            return Module(struct.pack(f"<{len(words)}I", *words))
    raise AssertionError(f"{name} has no such instruction")


def _patch(name: str, opcode: int, match: Callable, operand: int, value: int) -> Callable:
    return lambda: patched(name, opcode, match, operand, value)


def _given(name: str) -> Callable[[], Module]:
    return lambda: module(name)


#: case: (check, the variant expected, a module that does not match it, part of the problem)
MISMATCHES: dict[str, tuple[Callable, str, Callable[[], Module], str]] = {
    "compute-given-vertex": (check_stage, "skin_dqs.comp", _given("skin_dqs.vert"), "VERTEX"),
    "scale-block-not-in-layout": (
        check_bindings,
        "skin_dqs.comp",
        _given("skin_dqs_scale.comp"),
        "binding 6 (UNIFORM_BUFFER) is not in the host layout",
    ),
    "sampled-becomes-storage": (
        check_bindings,
        "skin_dqs.comp",
        _patch("skin_dqs.comp", OP_TYPE_IMAGE, lambda a: a[2] == DIM_BUFFER, 6, 2),
        "shader has STORAGE_TEXEL_BUFFER, host declares UNIFORM_TEXEL_BUFFER",
    ),
    "compute-entry-becomes-vertex": (
        check_bindings,
        "skin_dqs.comp",
        _patch("skin_dqs.comp", OP_ENTRY_POINT, lambda a: True, 0, 0),
        "shader stage VERTEX",
    ),
    "descriptor-set-1": (
        check_bindings,
        "skin_dqs_readback.vert",
        _patch("skin_dqs_readback.vert", OP_DECORATE, lambda a: a[1] == DESCRIPTOR_SET, 2, 1),
        "set 1 binding 0",
    ),
    "missing-8-slot-texels": (
        check_texel_formats,
        "skin_dqs_8.comp",
        _given("skin_dqs.comp"),
        "binding 7 is not in the module",
    ),
    "lbs-stride-given-dqs": (
        check_bone_blocks,
        "skin_lbs.vert",
        _given("skin_dqs.vert"),
        "array stride 32, shader_interface says 48",
    ),
    "stride-48-to-32": (
        check_bone_blocks,
        "skin_dqs_scale.vert",
        _patch("skin_dqs_scale.vert", OP_DECORATE, lambda a: a[1:] == (ARRAY_STRIDE, 48), 2, 32),
        "binding 6: array stride 32",
    ),
    "8-slot-inputs-missing": (
        check_vertex_inputs,
        "skin_dqs_8.vert",
        _given("skin_dqs.vert"),
        "location 4 is not in the module",
    ),
    "weights-at-location-6": (
        check_vertex_inputs,
        "skin_dqs.vert",
        _patch("skin_dqs.vert", OP_DECORATE, lambda a: a[1:] == (LOCATION, 3), 2, 6),
        "location 6 ('float', 4, 32) is not a mesh input",
    ),
    "local-size-spec-id": (
        check_specialization,
        "skin_dqs.comp",
        _patch("skin_dqs.comp", OP_DECORATE, lambda a: a[1:] == (SPEC_ID, 1), 2, 2),
        "workgroup size SpecIds are (2, None, None)",
    ),
    "debug-offset": (
        check_instance_block,
        "skin.frag",
        _patch("skin.frag", OP_MEMBER_DECORATE, lambda a: a[1:3] == (7, OFFSET), 3, 200),
        "debug: shader Member(offset=200",
    ),
    "material-alpha-offset": (
        check_material_block,
        "skin.frag",
        _patch("skin.frag", OP_MEMBER_DECORATE, lambda a: a[1:4] == (3, OFFSET, 48), 3, 52),
        "alpha: shader Member(offset=52",
    ),
    "material-block-in-crowd-vert": (
        check_material_block,
        "crowd_dqs.vert",
        _given("skin_crowd.frag"),
        "reads the material block",
    ),
    "readback-push-given-render": (
        check_push_constants,
        "skin_dqs_readback.vert",
        _given("skin_dqs.vert"),
        "push block is 64 bytes, expected 72",
    ),
}


@pytest.mark.parametrize("case", MISMATCHES)
def test_checks_report_a_mismatch(case: str) -> None:
    """Each check passes its own module and names the problem in a wrong one."""
    check, name, wrong, problem = MISMATCHES[case]
    v = BY_NAME[name]
    assert check(v, module(name)) == []
    assert any(problem in line for line in check(v, wrong())), check(v, wrong())


def test_block_problems_report_a_wrong_dtype() -> None:
    d = set0(module("skin.frag"))[INSTANCE]
    members = module("skin.frag").members(d.type_id)
    debug_as_float = [
        ("debug", "<f4", (4,)) if f[0] == "debug" else f for f in INSTANCE_BLOCK.descr
    ]
    assert block_problems(members, INSTANCE_BLOCK) == []
    problems = block_problems(members, np.dtype(debug_as_float))
    assert len(problems) == 1 and problems[0].startswith("debug:")
    assert block_problems(members[:-1], INSTANCE_BLOCK) != []


def test_reflector_rejects_what_is_not_spirv() -> None:
    with pytest.raises(ValueError, match="magic"):
        Module(bytes(20))
    data = (SPIRV_DIR / "skin.frag.spv").read_bytes()
    with pytest.raises(ValueError, match="truncated"):
        Module(data + struct.pack("<I", 5 << 16 | OP_DECORATE))
