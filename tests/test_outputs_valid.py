"""Every model file vkdqs writes is valid where other tools read it: the baked ``.glb`` of every
method passes the glTF-Validator's rules (tests/gltf_validation.py) and loads again in vkdqs
without a warning; the baked USD and the UsdSkel export pass every validator registered in
OpenUSD's ``UsdValidation`` (what ``usdchecker`` runs). Each checker is shown to find a broken
file first, so a checker that finds nothing cannot pass."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from pxr import Sdf, Usd, UsdValidation  # usd-core: in the test extra

import vkdqs
from vkdqs import methods

from . import gltf_validation
from .gltf_fixtures import make_rig
from .gltf_fixtures_morph import make_morph_model
from .test_bake_materials import look  # noqa: F401  (the module fixture: a textured rig)

FPS = 6.0
END = 0.5


@pytest.fixture(scope="module")
def models(tmp_path_factory, look):  # noqa: F811
    folder = tmp_path_factory.mktemp("outputs")
    make_rig(scaled=False).save(folder / "rig.glb")  # rigid joints: every method takes it
    make_rig().save(folder / "scaled.glb")  # scaled joints
    make_morph_model().save(folder / "morph.glb")
    return {n: folder / f"{n}.glb" for n in ("rig", "scaled", "morph")} | {"look": look}


def _bake(source, out, method, device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rig's half-float scales, said elsewhere
        vkdqs.bake_to_file(source, out, method=method, fps=FPS, end=END, device=device)
    return out


def _reloads_silently(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = vkdqs.load_gltf(path)
    assert scene.meshes and scene.animations


# ------------------------------------------------------------------------------------------------
# glTF
# ------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("method", list(methods.METHODS))
def test_a_baked_glb_of_every_method_is_valid_gltf(models, method, device, tmp_path):
    out = _bake(models["rig"], tmp_path / f"{method}.glb", method, device)
    assert gltf_validation.problems(out) == []
    _reloads_silently(out)


@pytest.mark.gpu
@pytest.mark.parametrize("model", ["look", "morph", "scaled"])
def test_baked_materials_and_morphs_are_valid_gltf(models, model, device, tmp_path):
    """Textures, a texture transform, COLOR_0, alpha modes and several primitives (the look);
    a model whose own morph targets are animated (morph); joints with scale keys (scaled)."""
    out = _bake(models[model], tmp_path / f"{model}.glb", "lbs", device)
    assert gltf_validation.problems(out) == []
    _reloads_silently(out)


def _split(path):
    found, doc, binary = gltf_validation.glb_problems(path.read_bytes())
    assert found == [] and doc is not None
    return doc, binary


@pytest.fixture(scope="module")
def baked(models, device, tmp_path_factory):
    """A valid baked .glb with materials: its JSON and BIN chunk, for the broken variants."""
    out = _bake(models["look"], tmp_path_factory.mktemp("baked") / "look.glb", "lbs", device)
    return _split(out)


def _position_accessor(doc):
    return doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]


def _normal_rows(doc):
    acc = doc["accessors"][doc["meshes"][0]["primitives"][0]["attributes"]["NORMAL"]]
    view = doc["bufferViews"][acc["bufferView"]]
    return view.get("byteOffset", 0) + acc.get("byteOffset", 0), acc["count"]


def _break_max(doc, binary):
    acc = doc["accessors"][_position_accessor(doc)]
    acc["max"][0] = float(np.nextafter(np.float32(acc["max"][0]), np.float32(np.inf)))
    return doc, binary


def _break_times(doc, binary):
    sampler = doc["animations"][0]["samplers"][0]
    acc = doc["accessors"][sampler["input"]]
    view = doc["bufferViews"][acc["bufferView"]]
    b = bytearray(binary)
    start = view.get("byteOffset", 0)
    b[start + 4 : start + 8] = b[start : start + 4]  # the second key at the first's time
    return doc, bytes(b)


def _break_normal(doc, binary):
    start, _ = _normal_rows(doc)
    b = bytearray(binary)
    b[start : start + 12] = np.array([0.5, 0.0, 0.0], np.float32).tobytes()
    return doc, bytes(b)


def _break_index(doc, binary):
    prim = doc["meshes"][0]["primitives"][0]
    acc = doc["accessors"][prim["indices"]]
    view = doc["bufferViews"][acc["bufferView"]]
    b = bytearray(binary)
    start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    count = doc["accessors"][prim["attributes"]["POSITION"]]["count"]
    b[start : start + 4] = np.array([count], np.uint32).tobytes()
    return doc, bytes(b)


def _break_alignment(doc, binary):
    doc["accessors"][_position_accessor(doc)]["byteOffset"] = 2
    return doc, binary


def _break_weights_count(doc, binary):
    sampler = doc["animations"][0]["samplers"][0]
    doc["accessors"][sampler["output"]]["count"] -= 1
    return doc, binary


def _break_image(doc, binary):
    doc["images"][0]["mimeType"] = "image/jpeg"
    return doc, binary


def _break_extension(doc, binary):
    del doc["extensionsUsed"]
    return doc, binary


def _break_nan(doc, binary):
    start, _ = _normal_rows(doc)
    b = bytearray(binary)
    b[start : start + 4] = np.array([np.nan], np.float32).tobytes()
    return doc, bytes(b)


def _break_empty(doc, binary):
    doc["extensionsUsed"] = []
    return doc, binary


BREAKS = {
    "ACCESSOR_MAX_MISMATCH": _break_max,
    "ACCESSOR_ANIMATION_INPUT_NON_INCREASING": _break_times,
    "ACCESSOR_VECTOR3_NON_UNIT": _break_normal,
    "ACCESSOR_INDEX_OOB": _break_index,
    "ACCESSOR_OFFSET_ALIGNMENT": _break_alignment,
    "ANIMATION_SAMPLER_OUTPUT_ACCESSOR_INVALID_COUNT": _break_weights_count,
    "IMAGE_MIME_TYPE_INVALID": _break_image,
    "UNDECLARED_EXTENSION": _break_extension,
    "ACCESSOR_INVALID_FLOAT": _break_nan,
    "EMPTY_ENTITY": _break_empty,
}


@pytest.mark.gpu
@pytest.mark.parametrize("code", list(BREAKS))
def test_the_gltf_checker_finds_what_the_validator_reports(baked, code):
    doc, binary = baked
    assert gltf_validation.document_problems(copy.deepcopy(doc), binary) == []
    found = gltf_validation.document_problems(*BREAKS[code](copy.deepcopy(doc), binary))
    assert any(p.startswith(code + " ") for p in found), found


def test_the_glb_container_checker_finds_a_torn_file(tmp_path):
    make_rig().save(tmp_path / "rig.glb")
    data = (tmp_path / "rig.glb").read_bytes()
    assert gltf_validation.problems(tmp_path / "rig.glb") == []
    (tmp_path / "torn.glb").write_bytes(data[:-4])
    found = gltf_validation.problems(tmp_path / "torn.glb")
    assert any(p.startswith("GLB_LENGTH_MISMATCH ") for p in found), found


# ------------------------------------------------------------------------------------------------
# USD
# ------------------------------------------------------------------------------------------------


def _usd_errors(path):
    """What every validator registered in this OpenUSD finds in the stage at ``path``."""
    validators = UsdValidation.ValidationRegistry().GetOrLoadAllValidators()
    assert len(validators) >= 20, "usd-core's validators did not load"
    stage = Usd.Stage.Open(str(path))
    errors = UsdValidation.ValidationContext(validators).Validate(stage)
    return [f"{e.GetName()}: {e.GetMessage()}" for e in errors]


@pytest.mark.gpu
@pytest.mark.parametrize("suffix", [".usda", ".usdc"])
@pytest.mark.parametrize("model", ["rig", "look", "morph", "scaled"])
def test_baked_usd_passes_openusds_validators(models, model, suffix, device, tmp_path):
    out = _bake(models[model], tmp_path / f"{model}{suffix}", "lbs", device)
    assert _usd_errors(out) == []


EXPORTS = [m.name for m in methods.METHODS.values() if m.usdskel and "dqs_blend" not in m.needs]


@pytest.mark.parametrize("method", EXPORTS)
@pytest.mark.parametrize("model", ["rig", "look", "morph", "scaled"])
def test_a_usdskel_export_passes_openusds_validators(models, model, method, tmp_path):
    out = tmp_path / f"{model}.usda"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rig's half-float scales, said elsewhere
        vkdqs.export_usdskel(models[model], out, method=method)
    assert _usd_errors(out) == []


def test_the_usd_validators_find_a_broken_stage(models, tmp_path):
    """The export without its stage metadata and with a skinned mesh that lost its
    SkelBindingAPI: OpenUSD's validators say so."""
    out = tmp_path / "rig.usda"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vkdqs.export_usdskel(models["rig"], out, method="lbs")
    layer = Sdf.Layer.FindOrOpen(str(out))
    layer.ClearDefaultPrim()
    for key in ("metersPerUnit", "upAxis"):
        layer.pseudoRoot.ClearInfo(key)
    layer.Save()
    stage = Usd.Stage.Open(str(out))
    mesh = next(
        p for p in stage.Traverse() if p.HasAPI("SkelBindingAPI") and p.GetTypeName() == "Mesh"
    )
    mesh.RemoveAPI("SkelBindingAPI")
    stage.Save()
    found = _usd_errors(out)
    assert any("defaultPrim" in e for e in found), found
    assert any(e.startswith("MissingSkelBindingAPI:") for e in found), found
