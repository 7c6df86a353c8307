"""Make the pictures of docs/velocity.md (``make figures``): strips of stills of the candy wrapper
twisting and (``--fox path/to/Fox.glb``) the Khronos Fox running, DQS beside velocity skinning
over DQS, as the viewer shows them (key 0).

Each still is the viewer's scene drawn offscreen (:class:`vkdqs.app.scenes.CandyWrapperScene`,
:class:`vkdqs.app.scenes.GltfScenePlayer`): the velocity copy is skinned by its compute Skinner
with the motion the scene gives it (the twist's rate, or the clip at t and MOTION_STEP before)
and checked against the float64 reference first (:func:`check`: 1e-5 of the mesh's extent).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from vkdqs import methods as registry
from vkdqs.engine.passes import MOTION_STEP

DOCS = Path(__file__).resolve().parent
#: One still's size in pixels; a strip is STILLS of them side by side.
SIZE = (360, 300)
STILLS = 4
#: Largest GPU vs float64 difference accepted, relative to the mesh's extent.
TOLERANCE = 1e-5


def check(skinner, mesh, bones, previous, dt, velocity) -> float:
    """The velocity copy's vertices for this motion against the float64 reference; raises past
    :data:`TOLERANCE`. Returns the largest difference over the extent."""
    got, _ = skinner.skin(bones, previous=previous, dt=dt)
    want, _ = registry.get("velocity").reference(
        mesh, bones, previous=previous, dt=dt, velocity=velocity
    )
    err = float(np.abs(got - want).max() / mesh.extent)
    if err > TOLERANCE:
        raise SystemExit(f"velocity skinning is {err:.2e} of the extent from float64")
    return err


def strip(images: list[np.ndarray]) -> np.ndarray:
    """The stills side by side, RGB."""
    return np.ascontiguousarray(np.concatenate([im[..., :3] for im in images], axis=1))


def candy(device, out: Path) -> Path:
    """The candy wrapper at STILLS phases of its twist (the fastest in the middle)."""
    from vkdqs.app.compare import rest_inputs
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.skinner import Skinner
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.images import write_png

    images = []
    with (
        OffscreenTarget(device, *SIZE, samples=4) as target,
        Renderer(device, target) as renderer,
    ):
        scene = CandyWrapperScene(renderer, methods="dqs,velocity")
        inputs = rest_inputs("velocity", scene.mesh, 2)
        with Skinner(device, scene.mesh, bone_count=2, method="velocity", inputs=inputs) as sk:
            for k in range(STILLS):
                scene.phase = 0.0
                scene.update((k + 1) * 0.5 * scene.period / (STILLS + 1))
                motion = scene._motion(scene.instances["velocity"])
                check(sk, scene.mesh, scene.pose(), **motion, velocity=inputs["velocity"])
                images.append(renderer.render_image())
    return write_png(out, strip(images))


def fox(device, model: Path, out: Path) -> Path:
    """The Fox moving (its "Run" clip, or its first) at STILLS times of the clip."""
    from vkdqs.app.scenes import GltfScenePlayer
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.skinner import Skinner
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.gltf import load_gltf
    from vkdqs.gltf.parts import scene_parts, skin_matrices, skinning_inputs
    from vkdqs.images import write_png

    scene = load_gltf(model)
    names = [a.name for a in scene.animations]
    run = names.index("Run") if "Run" in names else 0  # the Khronos file's; else its one clip
    images = []
    with (
        OffscreenTarget(device, *SIZE, samples=4) as target,
        Renderer(device, target) as renderer,
    ):
        player = GltfScenePlayer(renderer, scene, methods="dqs,velocity", animation=run)
        (part,) = [p for p in scene_parts(scene) if p.kind == "skinned"]
        geometry, extra = skinning_inputs(scene, part, "velocity")
        try:
            with Skinner(
                device, geometry, bone_count=part.bone_count, method="velocity", inputs=extra
            ) as sk:
                for k in range(STILLS):
                    t = player.duration * k / STILLS
                    player.set_time(t)
                    now = skin_matrices(scene, (part.skin,), scene.node_global_matrices(run, t))
                    then = scene.node_global_matrices(run, t - MOTION_STEP)
                    before = skin_matrices(scene, (part.skin,), then)
                    check(
                        sk,
                        geometry,
                        now[part.skin],
                        before[part.skin],
                        MOTION_STEP,
                        extra["velocity"],
                    )
                    images.append(renderer.render_image())
        finally:
            player.close()
    return write_png(out, strip(images))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNGs")
    parser.add_argument("--fox", type=Path, help="the Khronos Fox.glb, for its strip")
    args = parser.parse_args(argv)
    from vkdqs.gpu import Device

    with Device() as device:
        print(candy(device, args.out / "velocity-candy.png"))
        if args.fox is not None:
            print(fox(device, args.fox, args.out / "velocity-fox.png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
