"""vkdqs.shaders: each skinning variant's SPIR-V and its interface as data, checked against the
module's own reflection (tests/spirv_reflect.py), and ``vkdqs shaders --json``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from vkdqs import methods, procedural, shaders
from vkdqs.errors import InputError
from vkdqs.shader_interface import DescriptorType
from vkdqs.shader_interface.mesh_inputs import SCALAR_INPUT, SURFACE_INPUTS
from vkdqs.shaders.modules import spirv

from .spirv_reflect import PUSH_CONSTANT, Module

VARIANTS = shaders.variants()
_DYNAMIC = {DescriptorType.UNIFORM_BUFFER_DYNAMIC.name: DescriptorType.UNIFORM_BUFFER.name}


def _ids(v):
    return v["name"]


@pytest.fixture(params=VARIANTS, ids=_ids, scope="module")
def described(request):
    v = request.param
    args = (v["method"], v["kind"], v["slots"], v["surface"])
    return shaders.interface(*args), Module(shaders.module(*args))


def test_every_skinning_variant_is_described():
    kinds = {(v["kind"], v["method"]) for v in VARIANTS}
    for name in methods.names():  # a method with a base (Delta Mush) skins with its base's
        kinds_of = {k for k, m in kinds if m == methods.get(name).shaders}
        assert "compute" in kinds_of or "render" in kinds_of, name
    assert {v["kind"] for v in VARIANTS} == set(shaders.KINDS)


def test_the_descriptors_are_the_modules(described):
    face, mod = described
    reflected = {n: d.type for (s, n), d in mod.descriptors().items() if s == 0}
    listed = {d["binding"]: _DYNAMIC.get(d["type"], d["type"]) for d in face["descriptors"]}
    assert listed == reflected
    assert all(d["set"] == 0 for d in face["descriptors"])


def test_the_push_constants_are_the_modules(described):
    face, mod = described
    blocks = [mod.pointee(p) for _, p, s in mod.variables if s == PUSH_CONSTANT]
    assert len(blocks) == 1
    offsets = [m.offset for m in mod.members(blocks[0])]
    assert [m["offset"] for m in face["push_constants"]["members"]] == offsets
    assert mod.push_constant_size() == face["push_constants"]["size"]


def test_the_specialization_constants_are_the_modules(described):
    face, mod = described
    assert {s["id"] for s in face["specialization"]} == set(mod.spec_ids())
    assert all(s["name"] and s["meaning"] for s in face["specialization"])


def test_the_vertex_inputs_are_the_modules(described):
    face, mod = described
    listed = {v["location"] for v in face["vertex_inputs"]}
    reflected = set(mod.inputs())
    if face["kind"] == "compute":
        assert not listed and not reflected
    elif face["method"] == "none":
        assert reflected <= listed  # the unskinned variant need not read its influences
    else:
        assert listed == reflected


def test_the_module_is_the_shipped_spirv():
    for v in VARIANTS:
        assert shaders.module(v["method"], v["kind"], v["slots"], v["surface"]) == spirv(v["name"])


def test_the_lean_layout_changes_the_formats_only():
    exact = shaders.interface("dqs", "compute")
    lean = shaders.interface("dqs", "compute", layout="lean")
    assert [d["binding"] for d in exact["descriptors"]] == [
        d["binding"] for d in lean["descriptors"]
    ]
    assert lean["layout"] == "lean" and exact["layout"] == "exact"
    assert exact["descriptors"] != lean["descriptors"]


def test_a_variant_that_does_not_exist_is_one_clear_error():
    with pytest.raises(InputError, match="methods with one"):
        shaders.interface("delta_mush", "render")  # classic Delta Mush draws computed vertices
    with pytest.raises(InputError, match="kind must be one of"):
        shaders.interface("dqs", "geometry")


def test_the_packing_is_what_the_skinner_uploads():
    pose = procedural.twist_pose(60)
    packed = shaders.pack_bones("dqs", pose, 2)
    want = methods.get("dqs").pack(pose, 2)
    np.testing.assert_array_equal(packed.bones, want.bones)
    face = shaders.interface("dqs", "render")
    assert packed.bones.reshape(2, -1).shape[1] * 4 == face["bones"]["stride"]
    rows = shaders.pack_vertices(procedural.candy_wrapper())
    surface = {m.name for m in (*SURFACE_INPUTS, SCALAR_INPUT)}
    named = {v["input"] for v in face["vertex_inputs"]} - surface
    assert named <= set(rows)


def test_the_library_needs_no_vulkan_loader():
    code = (
        "import sys, vkdqs.shaders as s; s.interface('dqs'); s.module('lbs', 'compute'); "
        "assert 'vulkan' not in sys.modules, 'vulkan imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "vkdqs", "shaders", *args], capture_output=True, text=True
    )


def test_vkdqs_shaders_json_is_the_interface():
    one = _cli("--method", "dqs", "--kind", "compute", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == shaders.interface("dqs", "compute")
    every = _cli("--json")
    assert every.returncode == 0, every.stderr
    assert [d["name"] for d in json.loads(every.stdout)] == [v["name"] for v in VARIANTS]
    listing = _cli()
    assert listing.returncode == 0 and "skin_dqs.comp" in listing.stdout
    text = _cli("--method", "lbs", "--kind", "render")
    assert text.returncode == 0 and "push constant view_projection" in text.stdout


def test_vkdqs_shaders_refuses_an_unknown_method_without_a_traceback():
    bad = _cli("--method", "nope")
    assert bad.returncode != 0
    assert "Traceback" not in bad.stderr and "nope" in bad.stderr
