"""``vkdqs demo``: the candy-wrapper table of every method's radius and volume per twist angle,
then the viewer, or a PNG without a display."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from ... import methods as registry
from ...errors import VkdqsError
from .options import SubParsers, _add_command, _number
from .render import render
from .running import _need_vulkan
from .view import view

#: --step: at least 0.1 degree keeps the demo's table (one row per angle in 0...170) bounded.
_step = _number("the twist step", 0.1, 170.0, "degrees")


def demo(
    step: float = 10.0,
    path: str = "compute",
    device: str | int | None = None,
    no_window: bool = False,
) -> int:
    """Print the candy-wrapper table (every method scenes show: LBS, DQS, the 50% LBS/DQS
    blend, CoR, Blender's DQS, DDM, Delta Mush; twists 0...170 degrees every ``step``; the
    mushes on the compute path whatever ``path``), then open the viewer, or render
    ``vkdqs-demo.png`` without a display (not with ``no_window``)."""
    _need_vulkan()
    from ... import procedural
    from ...gpu import Device
    from ...methods.cor.gpu import centers_of_rotation
    from ...methods.cor.reference import centers_of_rotation_reference
    from ..compare import compared_methods, reference, skin_methods

    angles = step * np.arange(int(170.0 / step + 1e-9) + 1)  # 0...170, no further
    mesh = procedural.candy_wrapper().with_dqs_blend(registry.DEFAULT_DQS_BLEND)
    rest_radius = procedural.ring_radii(mesh.positions).min()
    rest_volume = procedural.mesh_volume(mesh.positions, mesh.indices)
    poses = np.stack([procedural.twist_pose(a) for a in angles])
    compared = compared_methods()
    with Device(device=device) as dev:
        print(f"device: {dev.info.name} ({dev.info.device_type})")
        print(
            f"mesh: candy-wrapper cylinder, {mesh.vertex_count} vertices, 2 bones, "
            f"rest radius {rest_radius:.3f}, rest volume {rest_volume:.3f}"
        )
        centers = centers_of_rotation(mesh, bone_count=2, device=dev, progress=False)
        # a method without shaders on ``path`` (the mushes have no vertex shader) skins on the
        # compute path, as the renderer draws it
        elsewhere = [m for m in compared if path not in registry.get(m).paths]
        results = {}
        for on, these in (
            (path, [m for m in compared if m not in elsewhere]),
            ("compute", elsewhere),
        ):
            if these:
                results |= skin_methods(
                    dev, mesh, poses, these, bone_count=2, path=on, centers=centers
                )
    center_err = np.abs(centers - centers_of_rotation_reference(mesh, bone_count=2)).max()
    errors = {
        m: np.abs(results[m] - reference(m, mesh, poses, centers=centers)).max() for m in compared
    }
    names = [registry.label(m) for m in compared]
    width = max(7, *(len(n) for n in names))
    half = len(compared) * (width + 1)
    print()
    print(f"twist   | {'smallest ring radius / rest':^{half}}| {'volume / rest':^{half}}")
    header = " ".join(f"{n:>{width}}" for n in names)
    print(f"  (deg) | {header} | {header}")
    print("-" * 8 + "+" + "-" * (half + 1) + "+" + "-" * (half + 1))
    for i, angle in enumerate(angles):
        r = [procedural.ring_radii(results[m][i]).min() / rest_radius for m in compared]
        v = [procedural.mesh_volume(results[m][i], mesh.indices) / rest_volume for m in compared]
        print(
            f"{angle:7.0f} | "
            + " ".join(f"{x:{width}.3f}" for x in r)
            + " | "
            + " ".join(f"{x:{width}.3f}" for x in v)
        )
    print()
    if elsewhere:
        names_elsewhere = ", ".join(registry.label(m) for m in elsewhere)
        has = "they have" if len(elsewhere) > 1 else "it has"
        print(f"({names_elsewhere}: skinned on the compute path; {has} no {path} shader)")
    print(
        f"GPU vs float64 reference, max |error| (mesh extent {mesh.extent:.2f}):\n  "
        + ", ".join(f"{n} {errors[m]:.1e}" for n, m in zip(names, compared, strict=True))
        + f", CoR centers {center_err:.1e}"
    )
    print("LBS collapses the twisted middle (the candy-wrapper artifact); DQS, CoR (optimized")
    print("centers of rotation) and Blender's DQS keep its radius and volume; blend (50% DQS)")
    print("lies in between. DDM (Direct Delta Mush) and Delta Mush (over LBS) smooth the pinch:")
    print("more of the middle than LBS, far less than DQS, and neither gives back the volume.")
    print()
    if no_window:
        return 0
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        print("opening the viewer (H for help, Esc to quit)")
        try:
            return view()
        except VkdqsError as exc:  # e.g. DISPLAY set but unreachable: fall back to a PNG
            print(f"the viewer could not open ({exc}); rendering a PNG instead")
    return render(Path("vkdqs-demo.png"), twist=170.0)


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``vkdqs demo`` to the command line's ``subparsers``."""
    p = _add_command(
        subparsers, "demo", demo, "candy-wrapper twist: DQS, LBS, CoR and blend on the GPU"
    )
    p.add_argument("--step", type=_step, default=10.0, help="twist step in degrees, 0.1...170")
    p.add_argument(
        "--path",
        choices=("compute", "vertex"),
        default="compute",
        help="skin with the compute shader or the rendering vertex shader",
    )
    p.add_argument(
        "--device",
        default=None,
        help="device name substring or index (default: $VKDQS_DEVICE, else the first discrete "
        "GPU, then integrated, then CPU)",
    )
    p.add_argument("--no-window", action="store_true", help="only print the table")
