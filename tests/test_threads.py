"""The thread model, under the validation layer (whose thread checks report unsynchronized
queue and command-pool use): one Skinner shared by threads, Skinners and Renderers on one Device
in parallel threads, all results checked against the float64 reference."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from vkdqs import dq, procedural
from vkdqs.engine.renderer import Renderer
from vkdqs.engine.skinner import Skinner
from vkdqs.engine.targets import OffscreenTarget

from .gpu_reference import twist_reference


def _run_threads(workers: list[Callable[[], None]]) -> None:
    """Start every worker at once; re-raise the first exception any of them raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def wrap(fn: Callable[[], None]) -> None:
        try:
            start.wait()
            fn()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    if errors:
        raise errors[0]


def _checker(skinner: Skinner, mesh, angles: np.ndarray, bad: list) -> Callable[[], None]:
    def work() -> None:
        for angle in angles:
            positions, normals = skinner.skin(dq.from_matrices(procedural.twist_pose(angle)))
            ref_p, ref_n = twist_reference(mesh, angle)
            if not (
                np.allclose(positions, ref_p, rtol=0, atol=1e-5 * mesh.extent)
                and np.allclose(normals, ref_n, rtol=0, atol=1e-5)
            ):
                bad.append(angle)

    return work


def test_one_skinner_from_four_threads(device):
    mesh = procedural.candy_wrapper()
    bad: list[float] = []
    with Skinner(device, mesh, bone_count=2) as skinner:
        rng = np.random.default_rng(7)
        _run_threads([_checker(skinner, mesh, rng.uniform(0, 180, 40), bad) for _ in range(4)])
    assert not bad, f"{len(bad)} of 160 calls returned another call's result"


def test_skinners_on_one_device_in_parallel(device):
    mesh = procedural.candy_wrapper()
    bad: list[float] = []
    skinners = [
        Skinner(device, mesh, bone_count=2, path=p, method="dqs")
        for p in ("compute", "vertex", "compute")
    ]
    try:
        rng = np.random.default_rng(8)
        _run_threads([_checker(s, mesh, rng.uniform(0, 180, 30), bad) for s in skinners])
    finally:
        for s in skinners:
            s.close()
    assert not bad


def test_skin_many_and_skin_interleaved_from_threads(device):
    mesh = procedural.candy_wrapper()
    angles = np.linspace(0, 170, 12)
    poses = np.stack([dq.from_matrices(procedural.twist_pose(a)) for a in angles])
    results: list = []
    with Skinner(device, mesh, bone_count=2) as skinner:

        def many() -> None:
            for _ in range(10):
                results.append(skinner.skin_many(poses))

        bad: list[float] = []
        _run_threads([many, _checker(skinner, mesh, angles, bad)])
    assert not bad
    for positions, _ in results:
        for i in (0, 5, 11):
            ref_p, _ = twist_reference(mesh, angles[i])
            np.testing.assert_allclose(positions[i], ref_p, rtol=0, atol=1e-5 * mesh.extent)


def test_renderers_on_one_device_in_parallel(device):
    """Two renderers drawing in two threads, a skinner in a third: every image is the same as
    the one drawn alone, and the validation layer reports nothing (the suite checks)."""
    mesh = procedural.candy_wrapper()
    pose = dq.from_matrices(procedural.twist_pose(120))
    targets = [OffscreenTarget(device, 96, 64) for _ in range(2)]
    renderers = [Renderer(device, t) for t in targets]
    try:
        for r in renderers:
            r.add_instance(r.add_mesh(mesh), bone_count=2, bones=pose)
            r.frame_scene()
        expected = renderers[0].render_image()
        images: list[list[np.ndarray]] = [[], []]

        def draw(i: int) -> Callable[[], None]:
            return lambda: images[i].extend(renderers[i].render_image() for _ in range(25))

        bad: list[float] = []
        with Skinner(device, mesh, bone_count=2) as skinner:
            _run_threads([draw(0), draw(1), _checker(skinner, mesh, np.linspace(0, 90, 20), bad)])
        assert not bad
        for frames in images:
            assert len(frames) == 25
            for img in frames:
                np.testing.assert_array_equal(img, expected)
    finally:
        for r in renderers:
            r.close()
        for t in targets:
            t.close()


def test_posing_an_instance_while_another_thread_renders(device):
    mesh = procedural.candy_wrapper()
    with OffscreenTarget(device, 64, 48) as target, Renderer(device, target) as renderer:
        inst = renderer.add_instance(renderer.add_mesh(mesh), bone_count=2)
        renderer.frame_scene()

        def pose() -> None:
            for a in np.linspace(0, 180, 200):
                inst.set_pose(dq.from_matrices(procedural.twist_pose(a)))

        def render() -> None:
            for _ in range(30):
                assert renderer.render_image().shape == (48, 64, 4)

        _run_threads([pose, render])
