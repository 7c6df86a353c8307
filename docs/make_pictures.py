"""Make the pictures of a real model on docs/gltf.md (``make pictures FOX=path/to/Fox.glb``): the
Fox as LBS | DQS side by side (``docs/fox-lbs-dqs.png``) and coloured by |DQS - LBS| per vertex
(``docs/fox-diff.png``), as ``vkdqs render`` draws stills (:func:`vkdqs.app.stills.render_still`).

The Fox is not in this repository: it is Khronos glTF-Sample-Assets' ``Models/Fox/glTF-Binary/
Fox.glb`` (CC-BY 4.0: low-poly model by PixelMannen, rigged and animated by tomkranis, glTF
conversion by @AsoboStudio and @scurest). Pass its path. The pictures are deterministic: a
fixed animation time, view and size; on lavapipe every run writes the same pixels (full-colour
PNGs of about 70 KiB: a palette would band the heat map).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SIZE = (960, 540)
#: The Fox running (seconds into the one animation of the glTF-Binary file used here: the time
#: where DQS and LBS differ most, 99th percentile 0.12 of a 3.9 long fox), seen three-quarters
#: from its left front.
TIME = 14.75
VIEW = (0.95, 0.12)  # camera yaw and pitch, radians


def pictures(model: Path, out: Path, *, animation: str | int = 0, time: float = TIME) -> list:
    """Render both pictures of ``model`` into the folder ``out``; returns their paths."""
    from vkdqs.app.scenes import GltfScenePlayer
    from vkdqs.app.stills import render_still
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.gltf import load_gltf
    from vkdqs.gpu import Device
    from vkdqs.images import write_png

    scene = load_gltf(model)
    written = []
    with Device() as device:
        for methods, name in (("both", "fox-lbs-dqs.png"), ("diff", "fox-diff.png")):
            with (
                OffscreenTarget(device, *SIZE, samples=4) as target,
                Renderer(device, target) as renderer,
            ):
                player = GltfScenePlayer(renderer, scene, methods=methods, animation=animation)
                try:
                    player.set_time(time)
                    renderer.camera.yaw, renderer.camera.pitch = VIEW
                    image = render_still(player)
                finally:
                    player.close()
            written.append(write_png(out / name, image[..., :3].copy()))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="Fox.glb (glTF-Sample-Assets, CC-BY 4.0)")
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNGs")
    parser.add_argument("--animation", default="0", help="animation index or name")
    parser.add_argument("--time", type=float, default=TIME, help="seconds into the animation")
    args = parser.parse_args(argv)
    if not args.model.is_file():
        print(
            f"make_pictures: no such file: {args.model} (pass the path to Fox.glb)", file=sys.stderr
        )
        return 1
    animation = int(args.animation) if args.animation.isdigit() else args.animation
    for path in pictures(args.model, args.out, animation=animation, time=args.time):
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
