"""Transforms that multiply past float64 down a hierarchy (scales of 1e25 on each of twelve
nodes, at rest or by an animation): one line naming the node and the time, from the loader or
from each command, and none of numpy's "overflow encountered" warnings on the way."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import vkdqs
from vkdqs import GltfError, InputError
from vkdqs.app import cli
from vkdqs.methods import SkinTraits

from .test_hostile_usdskel import _model

JOINTS = 12


def _rest_overflow(tmp_path):
    b = _model(JOINTS)
    for node in b.document["nodes"][:JOINTS]:
        node["scale"] = [1e38, 1e38, 1e38]  # 1e38 ** 9 is past 1e308 at the ninth node
    b.save(tmp_path / "rest.glb")
    return tmp_path / "rest.glb"


def _animated_overflow(tmp_path):
    """Every joint's scale keyed from 1 at 0 s to 1e30 at 1 s (one sampler, twelve channels):
    finite at rest, past float64 by 0.5 s from the eleventh joint down."""
    keys = np.array([[1.0] * 3, [1e30] * 3], np.float32)
    b = _model(JOINTS, key_times=[0.0, 1.0], values=keys, path="scale")
    anim = b.document["animations"][0]
    sampler = anim["channels"][0]["sampler"]
    anim["channels"] = [
        {"sampler": sampler, "target": {"node": i, "path": "scale"}} for i in range(JOINTS)
    ]
    b.save(tmp_path / "animated.glb")
    return tmp_path / "animated.glb"


def _one_line(capsys, argv):
    capsys.readouterr()
    status = cli.main(argv)
    err = capsys.readouterr().err
    assert status == 1, err
    assert err.startswith("vkdqs: error: ") and err.count("\n") == 1, err
    return err


def test_a_rest_pose_past_float64_is_refused_when_the_file_loads(tmp_path):
    path = _rest_overflow(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings included
        with pytest.raises(GltfError, match=r"nodes\[8\]: its world matrix overflows float64"):
            vkdqs.load_gltf(path)


@pytest.mark.parametrize("command", ["info", "export"])
def test_a_rest_pose_past_float64_is_one_line_from_the_cli(tmp_path, capsys, command):
    path = _rest_overflow(tmp_path)
    argv = [command, str(path)] + (["--out", str(tmp_path / "o.usda")] if command != "info" else [])
    assert "nodes[8]: its world matrix overflows float64" in _one_line(capsys, argv)
    assert not (tmp_path / "o.usda").exists()


def test_animated_matrices_past_float64_are_inf_without_numpy_warnings(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene = vkdqs.load_gltf(_animated_overflow(tmp_path))
        assert np.isfinite(scene.node_global_matrices(0, 0.0)).all()
        late = scene.node_global_matrices(0, 1.0)
    finite = np.isfinite(late).all(axis=(1, 2))
    assert finite[:10].all() and not finite[10:JOINTS].any()


def test_info_on_an_animation_past_float64_says_nothing_about_numpy(tmp_path, capsys):
    capsys.readouterr()
    assert cli.main(["info", str(_animated_overflow(tmp_path))]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.gpu
def test_a_bake_through_an_animation_past_float64_names_the_node_and_the_time(tmp_path, capsys):
    path, out = _animated_overflow(tmp_path), tmp_path / "out.npz"
    err = _one_line(capsys, ["bake", str(path), "--out", str(out), "--fps", "2"])
    assert "nodes[10] ('j10'): its world matrix at 0.5 s overflows float64" in err, err
    assert not out.exists()
    with pytest.raises(InputError, match=r"nodes\[10\].* at 0.5 s overflows float64"):
        vkdqs.bake(path, fps=2)


@pytest.mark.gpu
def test_a_render_at_a_time_past_float64_is_one_line(tmp_path, capsys):
    path, out = _animated_overflow(tmp_path), tmp_path / "out.png"
    err = _one_line(capsys, ["render", str(path), "--out", str(out), "--time", "1"])
    assert "joint matrices must be finite" in err and "warning" not in err, err
    assert not out.exists()


def test_skin_traits_say_which_matrix_is_not_finite():
    m = np.repeat(np.eye(4)[None], 3, axis=0)
    m[2, 0, 0] = np.inf
    with pytest.raises(InputError, match=r"the one at \[2\] is not"):
        SkinTraits.of_matrices(m)
    with pytest.raises(InputError, match=r"of shape \[\.\.\., 4, 4\], got shape \(3, 4, 3\)"):
        SkinTraits.of_matrices(np.zeros((3, 4, 3)))


def test_nodes_that_place_nothing_may_overflow(tmp_path):
    """A chain of 1100 empty nodes scaled by 2 each (2**1100 is past float64) beside the rig:
    nothing drawn depends on them, so the file loads (as three.js and Blender load it)."""
    b = _model(2)
    first = len(b.document["nodes"])
    b.document["nodes"] += [
        {"scale": [2.0, 2.0, 2.0], **({"children": [first + i + 1]} if i < 1099 else {})}
        for i in range(1100)
    ]
    b.document["scenes"][0]["nodes"].append(first)
    b.save(tmp_path / "empty_chain.glb")
    scene = vkdqs.load_gltf(tmp_path / "empty_chain.glb")
    assert not np.isfinite(scene.node_global_matrices(None)[-1]).all()
    assert np.isfinite(scene.skinning_matrices(0)).all()
