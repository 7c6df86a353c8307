"""Make the figures of docs/skinning.md (``make figures``): two renders of the candy wrapper
with every shown method side by side (twisted 170 degrees; bent 135 degrees) and one plot of
volume and bulge against angle for every shown method (DDM and Delta Mush included).

The numbers come from the GPU (:func:`vkdqs.app.compare.skin_methods`) and each one is checked
against the float64 reference first (:func:`curves` raises if any differs by more than 1e-5 of
the mesh's extent; DDM :data:`TOLERANCES`, each pose past 1e-5 printed, as in
docs/make_mush_figures.py). The plot needs matplotlib (``pip install 'vkdqs[docs]'``);
:func:`curves` does not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from vkdqs import centers_of_rotation, procedural
from vkdqs import methods as registry
from vkdqs.app.compare import bend_bulge, compared_methods, reference, skin_methods
from vkdqs.files import atomic_output

DOCS = Path(__file__).resolve().parent
#: Picture and plot size in pixels.
SIZE = (960, 360)
#: The plot's labels: the registry's, the blend's with its fraction.
NAMES = {m.name: m.label for m in registry.shown()} | {"blend": "blend (50% DQS)"}
#: Largest GPU vs float64 difference accepted, relative to the mesh's extent.
TOLERANCE = 1e-5
#: A method's own tolerance on the plot's poses: bent 150 degrees, a vertex of DDM's joint ring
#: is 4.2e-5 of the extent from the float64 posing of the GPU's own Ω on lavapipe (its nearest
#: rotation is nearly a tie that float32 breaks the other way: docs/delta-mush.md). Each pose
#: past :data:`TOLERANCE` is listed in ``beyond``.
TOLERANCES = {"ddm": 1e-3}
#: The plot's last angle: at a half turn the middle ring blends two bones turned opposite ways,
#: and DDM's rotation there is not defined (float32 and float64 pick different ones).
LAST_ANGLE = 175.0


def curves(device: object, angles: np.ndarray) -> dict[str, object]:
    """Volume (relative to rest) under a twist and a bend, and the bend's bulge
    (:func:`vkdqs.app.compare.bend_bulge`), at each of ``angles`` (degrees) for every method of
    :func:`vkdqs.app.compare.compared_methods`, skinned on ``device``; every position is checked
    against the float64 reference (RuntimeError beyond :data:`TOLERANCE`, or the method's own
    :data:`TOLERANCES`; ``beyond`` lists (method, pose, error / extent) past
    :data:`TOLERANCE`)."""
    mesh = procedural.candy_wrapper().with_dqs_blend(0.5)
    rest_volume = procedural.mesh_volume(mesh.positions, mesh.indices)
    centers = centers_of_rotation(mesh, bone_count=2, device=device, progress=False)
    out: dict[str, object] = {
        "angles": np.asarray(angles, np.float64),
        "max_error": {},
        "beyond": [],
    }
    for kind, make in (("twist", procedural.twist_pose), ("bend", procedural.bend_pose)):
        poses = np.stack([make(a) for a in angles])
        gpu = skin_methods(device, mesh, poses, bone_count=2, centers=centers)
        volume, bulge = {}, {}
        for m in compared_methods():
            diff = np.abs(gpu[m] - reference(m, mesh, poses, centers=centers, device=device))
            per_pose = diff.max(axis=(1, 2)) / mesh.extent
            err = float(per_pose.max())
            if not err <= TOLERANCES.get(m, TOLERANCE):
                raise RuntimeError(
                    f"{m} {kind}: GPU differs from float64 by {err:.2e} of the extent"
                )
            out["max_error"][f"{m} {kind}"] = err
            out["beyond"] += [
                (m, f"{kind} {angles[k]:g}", float(e))
                for k, e in enumerate(per_pose)
                if e > TOLERANCE
            ]
            volume[m] = np.array([procedural.mesh_volume(p, mesh.indices) for p in gpu[m]])
            volume[m] /= rest_volume
            if kind == "bend":
                bulge[m] = np.array([bend_bulge(p, a) for p, a in zip(gpu[m], angles, strict=True)])
        out[f"volume_{kind}"] = volume
        if kind == "bend":
            out["bulge_bend"] = bulge
    return out


def render(
    path: Path, device: object, *, twist: float, bend: float, view: tuple, zoom: float
) -> Path:
    """The candy wrapper, every method left to right, as ``vkdqs render --method all --twist
    TWIST --bend BEND`` draws it, seen from ``view`` (yaw, pitch) and ``zoom`` times as far as
    its framing (whose sphere is loose around a row of copies)."""
    from vkdqs.app.scenes import CandyWrapperScene
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.images import write_png

    with (
        OffscreenTarget(device, *SIZE, samples=4) as target,
        Renderer(device, target) as renderer,
    ):
        scene = CandyWrapperScene(renderer, methods="all")
        scene.set_twist(twist)
        scene.set_bend(bend)
        renderer.camera.yaw, renderer.camera.pitch = view
        scene.frame_camera()
        renderer.camera.zoom(zoom)
        image = renderer.render_image()
    return write_png(path, np.ascontiguousarray(image[..., :3]))


#: Line styles: Blender's DQS lies on DQS for rigid bones: dashed; Delta Mush (a green near
#: CoR's) dash-dotted.
STYLES = {"dqs_blender": (0, (4, 3)), "delta_mush": (0, (6, 2, 1.5, 2))}


def plot(
    path: Path,
    data: dict[str, object],
    methods: tuple[str, ...] | None = None,
    colors: dict[str, tuple[float, ...]] | None = None,
    names: dict[str, str] | None = None,
    styles: dict[str, object] | None = None,
) -> Path:
    """Volume / rest against twist and bend, and bulge against bend, one line per method
    (``compared_methods()`` in their registry colours and :data:`NAMES` unless given; the
    Delta Mush figures' script draws its own four with it)."""
    methods = compared_methods() if methods is None else methods
    colors = {m: registry.get(m).color for m in methods} if colors is None else colors
    names = NAMES if names is None else names
    styles = STYLES if styles is None else styles
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    angles = data["angles"]
    fig, axes = plt.subplots(1, 3, figsize=(SIZE[0] / 100, SIZE[1] / 100), dpi=100)
    panels = (
        ("volume_twist", "twist (degrees)", "volume / rest"),
        ("volume_bend", "bend (degrees)", "volume / rest"),
        ("bulge_bend", "bend (degrees)", "bulge / radius"),
    )
    for ax, (key, xlabel, ylabel) in zip(axes, panels, strict=True):
        for m in methods:
            ax.plot(
                angles,
                data[key][m],
                color=colors[m][:3],
                linestyle=styles.get(m, "-"),
                linewidth=1.6,
                label=names[m],
            )
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_xticks(np.arange(0, angles[-1] + 1, 45))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    with atomic_output(path) as f:  # as vkdqs writes every file
        fig.savefig(f, format="png")
    plt.close(fig)
    return path


def shrink(path: Path, colors: int = 256) -> None:
    """Re-save ``path`` as an optimized palette PNG (Pillow, which matplotlib brings)."""
    from PIL import Image

    with Image.open(path) as img:
        small = img.convert("RGB").quantize(colors, method=Image.Quantize.MEDIANCUT)
    with atomic_output(path) as f:
        small.save(f, format="PNG", optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNGs")
    parser.add_argument("--step", type=float, default=5.0, help="plot step in degrees")
    args = parser.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("make_figures: the plot needs matplotlib: pip install 'vkdqs[docs]'", file=sys.stderr)
        return 1
    from vkdqs.gpu import Device

    angles = np.arange(0.0, LAST_ANGLE + 1e-9, args.step)
    with Device() as device:
        data = curves(device, angles)
        written = [
            render(
                args.out / "methods-twist-170.png",
                device,
                twist=170,
                bend=0,
                view=(0.15, 0.2),
                zoom=0.5,
            ),
            render(
                args.out / "methods-bend-135.png",
                device,
                twist=0,
                bend=135,
                view=(0.0, 0.1),
                zoom=0.45,
            ),
        ]
    written.append(plot(args.out / "methods-volume-bulge.png", data))
    for path in written:
        shrink(path)
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    worst = {m: max(v for k, v in data["max_error"].items() if k.split()[0] == m) for m in NAMES}
    held = [e for m, e in worst.items() if m not in TOLERANCES]
    print(
        f"GPU vs float64 reference, max |error| / extent: {max(held):.1e} over the other "
        "methods and angles; "
        + ", ".join(f"{NAMES[m]} {worst[m]:.1e}" for m in TOLERANCES if m in worst)
    )
    for m, where, e in data["beyond"]:
        print(f"  beyond {TOLERANCE:g}: {m} at {where} degrees, {e:.1e} of the extent")
    i135 = int(np.argmin(np.abs(angles - 135.0)))
    for m in compared_methods():
        twisted = np.interp(170.0, angles, data["volume_twist"][m])
        print(
            f"{NAMES[m]:>16}: volume at twist 170 {twisted:.3f},"
            f" at bend 135 {data['volume_bend'][m][i135]:.3f}; bulge at bend 135 "
            f"{data['bulge_bend'][m][i135]:.3f}, largest {data['bulge_bend'][m].max():.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
