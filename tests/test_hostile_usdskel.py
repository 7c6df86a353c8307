"""Hostile input for ``vkdqs export`` / :func:`vkdqs.export_usdskel`, round four: names USD cannot
hold, 65,536 joints, deep and cyclic hierarchies, repeated joints, 10^7 keys, non-finite and
out-of-range keys, singular bind matrices, an output that is the input. Each ends in one clear
vkdqs error (one stderr line and status 1 through the CLI) with nothing written, or in a rig
that OpenUSD reads back as valid UsdSkel (topology, bind transforms, animation). CPU only."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
from pxr import Sdf, Usd, UsdSkel  # usd-core: in the test extra

import vkdqs
from vkdqs.app import cli
from vkdqs.baking import usdskel
from vkdqs.gltf import GltfWarning
from vkdqs.gltf.save import GltfBuilder


def _model(
    n: int = 2,
    *,
    names=None,
    chain: bool = True,
    key_times=None,
    interp: str = "LINEAR",
    path: str = "rotation",
    values=None,
    ibm=None,
    keys_node: int = 1,
) -> GltfBuilder:
    """``n`` joints (a chain, or all roots) skinning one triangle, with an optional clip of one
    channel on joint ``keys_node``."""
    b = GltfBuilder()
    names = [f"j{i}" for i in range(n)] if names is None else names
    nodes = [{"name": names[i], "translation": [0.0, 0.1, 0.0]} for i in range(n)]
    if chain:
        for i in range(n - 1):  # over joints
            nodes[i]["children"] = [i + 1]
    b.document["nodes"] = nodes
    pos = b.add_accessor(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32), min_max=True)
    j = b.add_accessor(np.array([[0, 0, 0, 0], [min(1, n - 1), 0, 0, 0]] * 2, np.uint16)[:3])
    w = b.add_accessor(np.array([[1, 0, 0, 0]] * 3, np.float32))
    idx = b.add_accessor(np.array([0, 1, 2], np.uint16))
    attributes = {"POSITION": pos, "JOINTS_0": j, "WEIGHTS_0": w}
    b.add("meshes", {"name": "tri", "primitives": [{"attributes": attributes, "indices": idx}]})
    if ibm is None:
        ibm = np.repeat(np.eye(4, dtype=np.float32)[None], n, axis=0)
    skin = {"joints": list(range(n)), "inverseBindMatrices": b.add_accessor(ibm), "name": "sk"}
    b.add("skins", skin)
    body = b.add("nodes", {"name": "body", "mesh": 0, "skin": 0})
    b.add("scenes", {"nodes": ([0] if chain else list(range(n))) + [body]})
    b.document["scene"] = 0
    if key_times is not None:
        t = np.asarray(key_times, np.float32)
        if values is None:
            k = len(t) * (3 if interp == "CUBICSPLINE" else 1)
            width = 4 if path == "rotation" else 3
            values = np.zeros((k, width), np.float32)
            values[:, -1] = 1.0
        ta, va = b.add_accessor(t, min_max=True), b.add_accessor(np.asarray(values, np.float32))
        sampler = {"input": ta, "output": va, "interpolation": interp}
        target = {"node": keys_node, "path": path}
        b.add("animations", {"samplers": [sampler], "channels": [{"sampler": 0, "target": target}]})
    return b


def _save(tmp_path, b: GltfBuilder, name: str = "model.glb"):
    path = tmp_path / name
    b.save(path)
    return path


def _valid_rig(out):
    """Open ``out`` with OpenUSD: every Skeleton's topology valid, joints distinct identifiers
    paths, bind and rest transforms one per joint and finite, its animation's local transforms
    finite; OpenUSD skins it. Returns the stage and each Skeleton's joints and jointNames."""
    stage = Usd.Stage.Open(str(out))
    root = UsdSkel.Root(stage.GetDefaultPrim())
    assert root
    cache = UsdSkel.Cache()
    cache.Populate(root, Usd.TraverseInstanceProxies())
    skels = []
    for prim in stage.Traverse():  # over prims
        if not prim.IsA(UsdSkel.Skeleton):
            continue
        skel = UsdSkel.Skeleton(prim)
        query = cache.GetSkelQuery(skel)
        assert query
        ok, why = query.GetTopology().Validate()
        assert ok, why
        joints = list(skel.GetJointsAttr().Get())
        assert len(set(joints)) == len(joints)
        leaves = {j.rsplit("/", 1)[-1] for j in joints}
        assert all(Sdf.Path.IsValidIdentifier(leaf) for leaf in leaves)
        bind = np.array(skel.GetBindTransformsAttr().Get())
        rest = np.array(skel.GetRestTransformsAttr().Get())
        assert len(bind) == len(rest) == len(joints)
        assert np.isfinite(bind).all() and np.isfinite(rest).all()
        anim = query.GetAnimQuery()
        if anim:
            for code in anim.GetJointTransformTimeSamples():  # a few keys here
                assert np.isfinite(np.array(query.ComputeJointLocalTransforms(code))).all()
        skels.append((joints, list(skel.GetJointNamesAttr().Get())))
    assert UsdSkel.BakeSkinning(root)
    return stage, skels


def _refused(tmp_path, path, error, match, capsys, **options):
    """The export of ``path`` raises ``error`` (API) and is one stderr line with status 1
    (CLI), writing nothing either way."""
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "out.usda"
    with pytest.raises(error, match=match):
        vkdqs.export_usdskel(path, out, method="lbs", **options)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    capsys.readouterr()
    assert cli.main(["export", str(path), "--out", str(out), "--method", "lbs"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vkdqs: error:") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_names_usd_cannot_hold_become_valid_distinct_joint_paths(tmp_path):
    names = ["", "/", "a b", "\u00e9", "1st", "\u00e9", "_", "a_b", "node0", "\U0001f9b4"]
    path = _save(tmp_path, _model(len(names), names=names, key_times=[0.0, 1.0]))
    info = vkdqs.export_usdskel(path, tmp_path / "n.usda", method="dqs")
    _, [(joints, kept)] = _valid_rig(tmp_path / "n.usda")
    assert info.joints == len(joints) == len(names)
    assert kept == names  # the names as they were
    assert all(joints[i].startswith(joints[i - 1] + "/") for i in range(1, len(joints)))


def test_a_nul_in_a_name_is_kept_as_u_fffd_with_a_warning(tmp_path):
    """USD strings end at a NUL: usd-core cut "a\\0b" to "a" silently, which made two joint
    names alike; each NUL is written as U+FFFD, with a warning."""
    names = ["a\0b", "a\0c", "\0"]
    path = _save(tmp_path, _model(len(names), names=names, key_times=[0.0, 1.0]))
    with pytest.warns(GltfWarning, match=r"3 name\(s\) .*jointNames hold a NUL"):
        vkdqs.export_usdskel(path, tmp_path / "n.usda", method="lbs")
    _, [(joints, kept)] = _valid_rig(tmp_path / "n.usda")
    assert kept == [n.replace("\0", "\ufffd") for n in names]
    assert len(set(joints)) == len(names)


def test_many_names_alike_are_made_distinct_in_linear_time(tmp_path):
    """20,000 joints all named "same" (a quadratic search for a free suffix took ~25 s)."""
    n = 20_000
    path = _save(tmp_path, _model(n, names=["same"] * n, chain=False))
    scene = vkdqs.load_gltf(path, max_bytes=2**30)
    start = time.perf_counter()
    vkdqs.export_usdskel(scene, tmp_path / "same.usdc", method="lbs")
    assert time.perf_counter() - start < 5.0
    _, [(joints, _)] = _valid_rig(tmp_path / "same.usdc")
    assert len(set(joints)) == n


def test_65536_joints(tmp_path, capsys):
    """The most a skin may have: refused by the default memory budget in one line, exported
    (valid) with a larger one; 65,537 refused."""
    n = 65_536
    path = _save(tmp_path, _model(n, chain=False))
    capsys.readouterr()
    status = cli.main(["export", str(path), "--out", str(tmp_path / "x.usdc"), "--method", "lbs"])
    err = capsys.readouterr().err
    if status:  # the default budget
        assert status == 1 and err.startswith("vkdqs: error:") and err.count("\n") == 1
        assert not (tmp_path / "x.usdc").exists()
    scene = vkdqs.load_gltf(path, max_bytes=2**31)
    info = vkdqs.export_usdskel(scene, tmp_path / "big.usdc", method="lbs")
    assert info.joints == n
    _, [(joints, _)] = _valid_rig(tmp_path / "big.usdc")
    assert len(joints) == n
    doc = json.loads(json.dumps(_model(2).document))
    doc["skins"][0]["joints"] = list(range(n + 1))
    (tmp_path / "over.gltf").write_text(json.dumps(doc))
    with pytest.raises(vkdqs.InputError, match="65536"):
        vkdqs.export_usdskel(tmp_path / "over.gltf", tmp_path / "over.usda", method="lbs")
    assert not (tmp_path / "over.usda").exists()


def test_a_chain_too_deep_for_joint_paths_is_refused_quickly(tmp_path, capsys):
    """A chain of 10,000 joints needs 3e8 characters of joint paths (gigabytes in usd-core)."""
    path = _save(tmp_path, _model(10_000))
    start = time.perf_counter()
    _refused(tmp_path, path, vkdqs.LimitError, "characters", capsys)
    assert time.perf_counter() - start < 10.0


@pytest.mark.parametrize(
    "case, match",
    [
        ("cycle", "cycle"),
        ("self", "own child"),
        ("two_parents", "already a child"),
        ("repeated_joint", "twice"),
    ],
)
def test_cyclic_or_repeated_joints_are_refused(tmp_path, capsys, case, match):
    b = _model(3)
    nodes, skin = b.document["nodes"], b.document["skins"][0]
    if case == "cycle":
        nodes[2]["children"] = [0]
    elif case == "self":
        nodes[1]["children"] = [1]
    elif case == "two_parents":
        nodes[0]["children"] = [1, 2]  # 2 is also 1's child
    else:
        skin["joints"] = [0, 1, 1]
    _refused(tmp_path, _save(tmp_path, b), vkdqs.InputError, match, capsys)


def test_ten_million_keys_are_refused_in_bounded_time(tmp_path, capsys):
    """By the loader's memory budget (a larger budget reaches MAX_TIMES, the next test)."""
    path = _save(tmp_path, _model(2, key_times=np.arange(10**7) / 30.0, path="translation"))
    start = time.perf_counter()
    _refused(tmp_path, path, vkdqs.InputError, "max_bytes", capsys)
    assert time.perf_counter() - start < 20.0


def test_more_key_times_than_max_times_are_refused_before_sampling(tmp_path, capsys):
    """1,000,001 keys of one channel passed MAX_SAMPLED (values) and took ~25 s and over a
    gigabyte in usd-core; 10^7 would have taken minutes and ~10 GB."""
    count = usdskel.MAX_TIMES + 1
    path = _save(tmp_path, _model(2, key_times=np.arange(count) / 1e4, path="translation"))
    start = time.perf_counter()
    _refused(tmp_path, path, vkdqs.LimitError, "key times", capsys)
    assert time.perf_counter() - start < 10.0


@pytest.mark.parametrize(
    "times, interp",
    [([0.0, 1e30], "CUBICSPLINE"), ([0.0, 3e38], "LINEAR"), ([0.0, 1e6], "CUBICSPLINE")],
)
def test_key_times_too_far_apart_are_refused(tmp_path, capsys, times, interp):
    """A CUBICSPLINE range sampled at the fps, or a timeline, of more than MAX_TIMES frames
    (1e30 s was a ValueError traceback from numpy; 3e38 a stage BakeSkinning cannot read)."""
    path = _save(tmp_path, _model(2, key_times=times, interp=interp))
    _refused(tmp_path, path, vkdqs.LimitError, "bake", capsys)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["times", "values"])
def test_non_finite_keys_are_refused(tmp_path, capsys, bad, where):
    times = np.array([0.0, 0.5, 1.0], np.float32)
    values = np.zeros((3, 3), np.float32)
    if where == "times":
        times[1] = bad
    else:
        values[1, 0] = bad
    b = _model(2, key_times=times, values=values, path="translation")
    acc = b.document["accessors"][-2]  # the times: their min and max as a writer had them
    acc["min"], acc["max"] = [0.0], [1.0]
    _refused(tmp_path, _save(tmp_path, b), vkdqs.InputError, "not finite", capsys)


def test_scales_past_a_half_are_refused_not_written_as_infinity(tmp_path, capsys):
    values = np.ones((3, 3), np.float32)
    values[2] = [1e5, 1.0, 1.0]
    b = _model(2, key_times=[0.0, 0.5, 1.0], values=values, path="scale")
    _refused(tmp_path, _save(tmp_path, b), vkdqs.InputError, "65504", capsys)


def test_a_singular_inverse_bind_matrix_is_refused(tmp_path, capsys):
    ibm = np.repeat(np.eye(4, dtype=np.float32)[None], 2, axis=0)
    ibm[0, :3, :3] = 0.0  # a collapsed joint: LBS skins it, but UsdSkel needs its inverse
    _refused(tmp_path, _save(tmp_path, _model(2, ibm=ibm)), vkdqs.InputError, "singular", capsys)


def test_transforms_overflowing_float64_are_refused(tmp_path, capsys):
    b = _model(12)
    for node in b.document["nodes"][:12]:
        node["scale"] = [1e38, 1e38, 1e38]
    _refused(tmp_path, _save(tmp_path, b), vkdqs.InputError, "overflows float64", capsys)


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(tmp_path, capsys):
    model = _save(tmp_path, _model(2, key_times=[0.0, 1.0]), "model.glb")
    data = model.read_bytes()
    link = tmp_path / "link.usda"
    link.symlink_to(model)
    hard = tmp_path / "hard.usdc"
    os.link(model, hard)
    for out in (link, hard):
        with pytest.raises(vkdqs.OutputError, match="same file"):
            vkdqs.export_usdskel(model, out, method="lbs")
        capsys.readouterr()
        assert cli.main(["export", str(model), "--out", str(out), "--method", "lbs"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("vkdqs: error:") and err.count("\n") == 1 and "same file" in err
    # the input itself, named as the output
    with pytest.raises(vkdqs.InputError):
        vkdqs.export_usdskel(model, model, method="lbs")
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", str(model), "--out", str(model)])
    assert exc.value.code == 2
    assert model.read_bytes() == data and link.is_symlink() and hard.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.usdc", "link.usda", "model.glb"]
