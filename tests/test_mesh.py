"""vkdqs.mesh.SkinnedMesh validation and normalization (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from vkdqs.errors import InputError, LimitError
from vkdqs.mesh import SkinnedMesh


def make(n: int = 6, k: int = 2, **override):
    """Valid arguments for an n-vertex mesh with k slots; ``override`` replaces some."""
    rng = np.random.default_rng(7)
    args = {
        "positions": rng.normal(size=(n, 3)),
        "normals": rng.normal(size=(n, 3)),
        "joints": rng.integers(0, 5, size=(n, k)),
        "weights": rng.uniform(0.1, 1.0, size=(n, k)),
    }
    args.update(override)
    return args


def with_value(name: str, index, value, **kw):
    args = make(**kw)
    arr = np.array(args[name])
    arr[index] = value
    args[name] = arr
    return args


# ---------------------------------------------------------------------------------------------
# shape and dtype errors
# ---------------------------------------------------------------------------------------------


def test_positions_shape():
    with pytest.raises(InputError, match=r"positions must have shape \(N, 3\).*got shape \(6, 2\)"):
        SkinnedMesh(**make(positions=np.zeros((6, 2))))


def test_positions_empty():
    with pytest.raises(InputError, match=r"N >= 1, got shape \(0, 3\)"):
        SkinnedMesh(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 1), int), np.zeros((0, 1)))


def test_positions_dtype():
    with pytest.raises(InputError, match=r"positions must be a real numeric array, got .* <U1"):
        SkinnedMesh(**make(positions=np.full((6, 3), "a")))


def test_normals_count_mismatch_names_both():
    with pytest.raises(InputError, match=r"normals has 5 rows but positions has 6"):
        SkinnedMesh(**make(normals=np.ones((5, 3))))


def test_joints_count_mismatch_names_both():
    with pytest.raises(InputError, match=r"joints has 4 rows but positions has 6"):
        SkinnedMesh(**make(joints=np.zeros((4, 2), int)))


def test_joints_must_be_integer():
    with pytest.raises(InputError, match="joints must be an integer array, got float64"):
        SkinnedMesh(**make(joints=np.zeros((6, 2))))
    with pytest.raises(InputError, match="joints must be an integer array, got bool"):
        SkinnedMesh(**make(joints=np.zeros((6, 2), bool)))


def test_joints_need_a_slot():
    with pytest.raises(InputError, match=r"joints must have shape \(N, K\) with K >= 1"):
        SkinnedMesh(**make(joints=np.zeros((6, 0), int), weights=np.zeros((6, 0))))


def test_weights_shape_must_match_joints():
    with pytest.raises(InputError, match=r"weights must have the shape of joints \(6, 2\), got"):
        SkinnedMesh(**make(weights=np.ones((6, 3))))


# ---------------------------------------------------------------------------------------------
# value errors naming vertex / slot / value
# ---------------------------------------------------------------------------------------------


def test_positions_non_finite():
    with pytest.raises(InputError, match=r"positions\[4, 1\] = inf"):
        SkinnedMesh(**with_value("positions", (4, 1), np.inf))


def test_normals_non_finite():
    with pytest.raises(InputError, match=r"normals\[2, 0\] = nan"):
        SkinnedMesh(**with_value("normals", (2, 0), np.nan))


def test_normals_zero_length():
    with pytest.raises(InputError, match=r"normals\[3\] = \[0\.0, 0\.0, 0\.0\] has zero length"):
        SkinnedMesh(**with_value("normals", 3, 0.0))


def test_negative_joint():
    args = with_value("joints", (5, 2), -1, k=3)
    with pytest.raises(InputError, match=r"joints\[5, 2\] = -1: joint indices must be >= 0"):
        SkinnedMesh(**args)


def test_weights_non_finite():
    with pytest.raises(InputError, match=r"weights\[1, 1\] = nan: weights must be finite"):
        SkinnedMesh(**with_value("weights", (1, 1), np.nan))


def test_weights_negative():
    with pytest.raises(InputError, match=r"weights\[3, 0\] = -0.5: weights must be >= 0"):
        SkinnedMesh(**with_value("weights", (3, 0), -0.5))


def test_more_than_eight_non_zero_weights_is_a_limit_error():
    args = make(n=20, k=10)
    w = np.zeros((20, 10))
    w[:, :3] = 1.0
    w[12] = 1.0
    w[15] = 1.0
    args["weights"] = w
    with pytest.raises(
        LimitError, match="vertex 12 has 10 non-zero weights; vkdqs takes at most 8"
    ):
        SkinnedMesh(**args)


def test_more_than_four_influences_use_eight_slots():
    w = np.array([[0.1, 0.0, 0.2, 0.05, 0.3, 0.15, 0.2], [1.0, 0, 0, 0, 0, 0, 0]])
    j = np.arange(14).reshape(2, 7)
    mesh = SkinnedMesh(np.zeros((2, 3)), [[1, 0, 0]] * 2, j, w)
    assert mesh.slots == 8 and mesh.influence_count == 6
    np.testing.assert_array_equal(mesh.joints, [[4, 2, 6, 5, 0, 3, 0, 0], [7, 0, 0, 0, 0, 0, 0, 0]])
    np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0, rtol=1e-6)
    assert mesh.first_vertex_over(4) == (0, 6)
    assert mesh.first_vertex_over(8) is None


def test_indices_out_of_range_flat():
    with pytest.raises(InputError, match=r"indices\[4\] = 6 \(triangle 1\) is out of range for 6"):
        SkinnedMesh(**make(), indices=[0, 1, 2, 3, 6, 5])


def test_indices_out_of_range_2d_and_negative():
    with pytest.raises(InputError, match=r"indices\[1, 2\] = 9 \(triangle 1\)"):
        SkinnedMesh(**make(), indices=[[0, 1, 2], [3, 4, 9]])
    with pytest.raises(InputError, match=r"indices\[0, 0\] = -1 \(triangle 0\)"):
        SkinnedMesh(**make(), indices=[[-1, 1, 2]])


def test_indices_shape_and_dtype():
    with pytest.raises(InputError, match=r"M divisible by 3.*got shape \(4,\)"):
        SkinnedMesh(**make(), indices=[0, 1, 2, 3])
    with pytest.raises(InputError, match=r"indices must have shape \(M,\) or \(T, 3\)"):
        SkinnedMesh(**make(), indices=np.zeros((2, 4), int))
    with pytest.raises(InputError, match="indices must be an integer array, got float64"):
        SkinnedMesh(**make(), indices=[0.0, 1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# normalization of the stored data
# ---------------------------------------------------------------------------------------------


def test_sorting_padding_renormalization():
    mesh = SkinnedMesh(
        np.zeros((3, 3)),
        [[0, 0, 2.0]] * 3,
        np.array([[3, 7, 9], [1, 2, 0], [4, 5, 6]], dtype=np.uint8),
        [[1.0, 3.0, 0.0], [2.0, 2.0, 4.0], [0.0, 0.0, 0.0]],
    )
    np.testing.assert_array_equal(mesh.joints, [[7, 3, 0, 0], [0, 1, 2, 0], [0, 0, 0, 0]])
    np.testing.assert_allclose(
        mesh.weights, [[0.75, 0.25, 0, 0], [0.5, 0.25, 0.25, 0], [0, 0, 0, 0]]
    )
    assert mesh.joints.dtype == np.uint32 and mesh.joints.shape == (3, 4)
    assert mesh.weights.dtype == np.float32 and mesh.weights.shape == (3, 4)
    assert mesh.positions.dtype == np.float32 and mesh.normals.dtype == np.float32
    np.testing.assert_array_equal(mesh.normals, [[0, 0, 1]] * 3)
    assert mesh.influence_count == 3
    assert mesh.max_joint == 7  # joint 9 has weight 0


def test_sort_matches_stable_argsort_on_random_data():
    rng = np.random.default_rng(3)
    n = 2000
    for k in (1, 2, 3, 4, 7):
        w = rng.integers(0, 4, size=(n, k)).astype(float)  # many ties and zeros
        if k > 4:
            w[:, 4:] = 0.0
        j = rng.integers(0, 50, size=(n, k))
        mesh = SkinnedMesh(rng.normal(size=(n, 3)), np.ones((n, 3)), j, w)
        order = np.argsort(-w, axis=1, kind="stable")[:, :4]
        ws = np.take_along_axis(w, order, axis=1)
        js = np.take_along_axis(j, order, axis=1)
        total = ws.sum(axis=1, keepdims=True)
        ws = np.divide(ws, total, out=np.zeros_like(ws), where=total > 0)
        js = np.where(ws > 0, js, 0)
        m = min(k, 4)
        np.testing.assert_allclose(mesh.weights[:, :m], ws, rtol=1e-6)
        np.testing.assert_array_equal(mesh.joints[:, :m], js)
        assert not mesh.weights[:, m:].any() and not mesh.joints[:, m:].any()


def test_zero_weight_vertex_is_allowed():
    args = with_value("weights", 2, 0.0)
    args["joints"] = np.array(args["joints"]) + 100
    mesh = SkinnedMesh(**args)
    np.testing.assert_array_equal(mesh.weights[2], 0.0)
    np.testing.assert_array_equal(mesh.joints[2], 0)
    np.testing.assert_allclose(mesh.weights.sum(axis=1)[[0, 1, 3, 4, 5]], 1.0, rtol=1e-6)


def test_more_than_four_slots_compact_when_at_most_four_are_used():
    w = np.array([[0.0, 0.1, 0.0, 0.2, 0.3, 0.4, 0.0]])
    j = np.arange(7)[None] + 10
    mesh = SkinnedMesh([[0, 0, 0]], [[1, 0, 0]], j, w)
    np.testing.assert_array_equal(mesh.joints, [[15, 14, 13, 11]])
    np.testing.assert_allclose(mesh.weights, [[0.4, 0.3, 0.2, 0.1]], rtol=1e-6)


def test_arrays_are_read_only():
    mesh = SkinnedMesh(**make(), indices=[[0, 1, 2]])
    for name in ("positions", "normals", "joints", "weights", "indices"):
        arr = getattr(mesh, name)
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 0


def test_inputs_are_not_modified_or_aliased():
    args = make()
    copies = {k: np.array(v) for k, v in args.items()}
    mesh = SkinnedMesh(**args)
    for k, v in args.items():
        np.testing.assert_array_equal(v, copies[k])
    assert not np.shares_memory(mesh.positions, args["positions"])


def test_indices_stored_flat_uint32():
    mesh = SkinnedMesh(**make(), indices=np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int16))
    assert mesh.indices.dtype == np.uint32
    np.testing.assert_array_equal(mesh.indices, np.arange(6))
    assert SkinnedMesh(**make()).indices is None


def test_properties():
    pos = np.array([[0.0, 0, 0], [1, 2, 2], [-1, 0, 1]])
    mesh = SkinnedMesh(pos, np.ones((3, 3)), [[0], [3], [1]], [[1.0], [1.0], [0.0]])
    assert mesh.vertex_count == 3
    assert mesh.influence_count == 1
    assert mesh.max_joint == 3
    lo, hi = mesh.bounds
    np.testing.assert_array_equal(lo, [-1, 0, 0])
    np.testing.assert_array_equal(hi, [1, 2, 2])
    assert mesh.extent == pytest.approx(np.sqrt(4 + 4 + 4))
    empty = SkinnedMesh(pos, np.ones((3, 3)), [[5]] * 3, np.zeros((3, 1)))
    assert empty.max_joint == -1 and empty.influence_count == 0
    assert "3 vertices" in repr(mesh)


def test_check_joints():
    mesh = SkinnedMesh(
        np.zeros((8, 3)),
        np.ones((8, 3)),
        [[0, 1]] * 7 + [[31, 2]],
        [[1.0, 1.0]] * 7 + [[0.3, 0.7]],
    )
    mesh.check_joints(32)
    with pytest.raises(InputError, match="vertex 7 slot 1 uses joint 31 but the skeleton has 30"):
        mesh.check_joints(30)
    with pytest.raises(InputError, match="bone_count must be an int"):
        mesh.check_joints(30.0)


def test_huge_weights_renormalize_without_overflow():
    mesh = SkinnedMesh([[0, 0, 0]], [[1, 0, 0]], [[0, 1, 2]], [[1e308, 1e308, 0.0]])
    np.testing.assert_allclose(mesh.weights, [[0.5, 0.5, 0.0, 0.0]])
