"""Make the figures and the table of docs/delta-mush.md (``make figures``): the candy wrapper
twisted 170 degrees and bent 135 degrees with LBS, DQS, Delta Mush (over LBS) and Direct Delta
Mush side by side, a plot of volume and bulge against angle for the four, and the table of how
far DDM is from Delta Mush (``--fox path/to/Fox.glb`` adds the Khronos Fox to it).

The pictures and the plot come from the GPU (:class:`vkdqs.Skinner`,
:class:`vkdqs.DeltaMushSkinner`, :func:`vkdqs.direct_delta_mush`) and each position is checked
against its float64 reference first (:func:`skin_checked` raises if any differs by more than
1e-5 of the mesh's extent; the plot allows DDM :data:`DDM_PLOT_TOLERANCE` and prints each pose
past 1e-5). Every copy is skinned on the compute path and drawn as an unskinned mesh of its
posed vertices, as the renderer draws an instance of a mush ("compute, then draw"), so that
the pictures show exactly the positions checked. The table is float64 throughout
(:mod:`vkdqs.methods.delta_mush.reference`, :mod:`vkdqs.methods.ddm.reference`). The plot needs
matplotlib (``pip install 'vkdqs[docs]'``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from vkdqs import dq, procedural, reference
from vkdqs import methods as registry
from vkdqs.app.compare import bend_bulge
from vkdqs.geometry import weld as weld_positions
from vkdqs.mesh import SkinnedMesh
from vkdqs.methods.ddm import reference as ddm_ref
from vkdqs.methods.delta_mush import reference as dm_ref

sys.path.insert(0, str(Path(__file__).resolve().parent))  # make_figures.py beside it
from make_figures import plot, shrink  # the plot and the PNG shrinking they share

DOCS = Path(__file__).resolve().parent
#: Picture and plot size in pixels.
SIZE = (960, 360)
#: Largest GPU vs float64 difference accepted, relative to the mesh's extent.
TOLERANCE = 1e-5
#: The methods shown, left to right.
SHOWN = ("lbs", "dqs", "dm", "ddm")
NAMES = {"lbs": "LBS", "dqs": "DQS", "dm": "Delta Mush (LBS)", "ddm": "DDM"}
#: The registry's tints ("dm": method="delta_mush", as the viewer tints it).
COLORS = {m: registry.get({"dm": "delta_mush"}.get(m, m)).color for m in SHOWN}
#: The pictures' and the plot's Delta Mush: the defaults (method="delta_mush",
#: DeltaMushSkinner), over LBS.
DM = dict(dm_ref.DEFAULTS)
#: The pictures' and the plot's DDM: vkdqs.direct_delta_mush's defaults (p, λ, κ, α).
DDM = dict(ddm_ref.DEFAULTS)
#: DDM's tolerance on the plot's poses: at one of them (bent 150 degrees) a vertex of the joint
#: ring is 8.2e-5 of the extent from float64 on lavapipe: its covariance has det < 0 and its two
#: smaller singular values 0.15 % apart, so the nearest rotation is nearly a tie that the shader's
#: float32 sums break the other way. Each pose past :data:`TOLERANCE` is printed; the
#: pictures are held to :data:`TOLERANCE`.
DDM_PLOT_TOLERANCE = 1e-3
#: The table's Delta Mush steps n (step 0.5); DDM matched with p = n, λ = κ = 0.5, α = 0.
TABLE_ITERATIONS = (5, 10, 20)
TABLE_STEP = 0.5
#: The Fox's animation times (seconds into the one animation of Fox.glb) of the table.
FOX_TIMES = (1.0, 5.0, 9.0, 14.75)
#: The plot's last angle: at a half turn (180 degrees) the middle of the candy wrapper blends
#: two bones turned opposite ways, DDM's rotation (the polar rotation of a near-singular
#: covariance) is ill-defined there, and float32 and float64 pick different ones (0.1 of the
#: extent apart).
LAST_ANGLE = 175.0


# ---------------------------------------------------------------------------------------------
# Float64 references


def lbs64(mesh: SkinnedMesh, pose: np.ndarray) -> np.ndarray:
    """LBS positions (N, 3), float64."""
    return reference.skin_lbs(mesh.positions, mesh.normals, mesh.joints, mesh.weights, pose)[0]


def dqs64(mesh: SkinnedMesh, pose: np.ndarray) -> np.ndarray:
    """DQS positions (N, 3), float64."""
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    return reference.skin_dqs(*args, dq.from_matrices(pose))[0]


def dm64(bind: dm_ref.DeltaMush, mesh: SkinnedMesh, pose: np.ndarray) -> np.ndarray:
    """Delta Mush over LBS (N, 3), float64."""
    return dm_ref.delta_mush_reference(bind, lbs64(mesh, pose))[0]


def ddm_omega64(mesh: SkinnedMesh, bone_count: int, **params: float) -> np.ndarray:
    """DDM's Ω of every bone (no truncation), float64."""
    return ddm_ref.precompute_reference(
        mesh.positions, mesh.indices, mesh.joints, mesh.weights, bone_count, **params
    )


def ddm64(mesh: SkinnedMesh, omega: np.ndarray, pose: np.ndarray, bones=None, origin=None):
    """DDM positions (N, 3) from ``omega``, float64."""
    positions, _ = ddm_ref.skin_reference(
        mesh.positions, mesh.normals, omega, pose, bones, origin=origin
    )
    return positions


def implicit_cotangent_dm(mesh: SkinnedMesh, iterations: int, step: float):
    """Delta Mush whose smoothing is DDM's operator: ``iterations`` implicit steps
    ``(I + step D⁻¹ L) x_new = x`` with the cotangent Laplacian ``L`` of the rest mesh (see
    :mod:`vkdqs.methods.ddm.reference`), frames and deltas as
    :mod:`vkdqs.methods.delta_mush.reference`. Returns ``pose(skinned)``, the Delta Mush positions
    of skinned positions (N, 3), float64."""
    p = np.asarray(mesh.positions, np.float64)
    tri = np.asarray(mesh.indices, np.int64).reshape(-1, 3)
    unique, inverse, first = weld_positions(p)  # over the seams, as both mushes
    canonical = first[inverse]
    indptr, indices, weights, diagonal = ddm_ref.cotangent_laplacian(unique, inverse[tri])
    m = len(unique)
    inv = np.divide(1.0, diagonal, out=np.zeros(m), where=diagonal != 0)
    lap = sp.csr_matrix((-weights, indices, indptr), shape=(m, m)) + sp.diags(diagonal)
    solve = spla.splu(sp.csc_matrix(sp.identity(m) + step * (sp.diags(inv) @ lap))).solve

    def smooth(x: np.ndarray) -> np.ndarray:
        x = x[first]
        for _ in range(iterations):
            x = solve(x)
        return x[inverse]

    offsets, neighbours = dm_ref.adjacency(canonical[tri], len(p))
    offsets, neighbours = dm_ref.expand_rows(offsets, neighbours, canonical)
    s = smooth(p)
    frame_neighbour = dm_ref.farthest_neighbours(s, offsets, neighbours)
    f = dm_ref.frames(s, tri, frame_neighbour, canonical)
    deltas = np.einsum("nji,nj->ni", f, p - s)

    def pose(skinned: np.ndarray) -> np.ndarray:
        s = smooth(np.asarray(skinned, np.float64))
        f = dm_ref.frames(s, tri, frame_neighbour, canonical)
        return s + np.einsum("nij,nj->ni", f, deltas)

    return pose


# ---------------------------------------------------------------------------------------------
# GPU, checked


def skin_checked(
    device: object, mesh: SkinnedMesh, poses: np.ndarray, *, ddm_tolerance: float = TOLERANCE
) -> dict[str, object]:
    """GPU positions and normals ``(P, N, 3)`` of the candy wrapper ``mesh`` under ``poses``
    (P, 2, 4, 4) for each of :data:`SHOWN`, each checked against its float64 reference: LBS and
    DQS against :mod:`vkdqs.reference`, Delta Mush against
    :func:`vkdqs.methods.delta_mush.reference. delta_mush_reference` of the float64 LBS, DDM against
    :func:`vkdqs.methods.ddm.reference.skin_reference` of the float64 Ω
    (:func:`vkdqs.methods.ddm.reference.precompute_reference`; 2 bones, none truncated). Raises
    RuntimeError beyond :data:`TOLERANCE` of the extent (DDM: beyond ``ddm_tolerance``);
    ``max_error`` holds each largest difference (relative to the extent), ``beyond`` the (method,
    pose index, difference) of each pose past :data:`TOLERANCE`."""
    import vkdqs

    out: dict[str, object] = {"positions": {}, "normals": {}, "max_error": {}, "beyond": []}
    gpu = {}
    for m in ("lbs", "dqs"):
        with vkdqs.Skinner(device, mesh, bone_count=2, method=m) as skinner:
            gpu[m] = skinner.skin_many(poses)
    with vkdqs.DeltaMushSkinner(device, mesh, bone_count=2, method="lbs", **DM) as skinner:
        gpu["dm"] = skinner.skin_many(poses)
    ddm = vkdqs.direct_delta_mush(mesh, bone_count=2, device=device, **DDM)
    with vkdqs.Skinner(device, mesh, bone_count=2, method="ddm", ddm=ddm) as skinner:
        gpu["ddm"] = skinner.skin_many(poses)
    bind = dm_ref.delta_mush_bind(mesh.positions, mesh.indices, **DM)
    omega = ddm_omega64(mesh, 2, **DDM)
    refs = {
        "lbs": lambda pose: lbs64(mesh, pose),
        "dqs": lambda pose: dqs64(mesh, pose),
        "dm": lambda pose: dm64(bind, mesh, pose),
        "ddm": lambda pose: ddm64(mesh, omega, pose),
    }
    for m in SHOWN:
        ref = np.stack([refs[m](pose) for pose in poses])
        per_pose = np.abs(gpu[m][0] - ref).max(axis=(1, 2)) / mesh.extent
        err = float(per_pose.max())
        if not err <= (ddm_tolerance if m == "ddm" else TOLERANCE):
            raise RuntimeError(f"{m}: GPU differs from float64 by {err:.2e} of the extent")
        out["max_error"][m] = err
        out["beyond"] += [(m, int(k), float(e)) for k, e in enumerate(per_pose) if e > TOLERANCE]
        out["positions"][m], out["normals"][m] = gpu[m]
    return out


def curves(device: object, angles: np.ndarray) -> dict[str, object]:
    """Volume (relative to rest) under a twist and a bend, and the bend's bulge
    (:func:`vkdqs.app.compare.bend_bulge`), at each of ``angles`` (degrees) for each of
    :data:`SHOWN`, skinned on ``device`` and checked (:func:`skin_checked`; DDM to
    :data:`DDM_PLOT_TOLERANCE`, each pose past :data:`TOLERANCE` listed in ``beyond``)."""
    mesh = procedural.candy_wrapper()
    rest_volume = procedural.mesh_volume(mesh.positions, mesh.indices)
    out: dict[str, object] = {
        "angles": np.asarray(angles, np.float64),
        "max_error": {},
        "beyond": [],
    }
    for kind, make in (("twist", procedural.twist_pose), ("bend", procedural.bend_pose)):
        poses = np.stack([make(a) for a in angles])
        skinned = skin_checked(device, mesh, poses, ddm_tolerance=DDM_PLOT_TOLERANCE)
        out["beyond"] += [(m, f"{kind} {angles[k]:g}", e) for m, k, e in skinned["beyond"]]
        volume, bulge = {}, {}
        for m in SHOWN:
            out["max_error"][f"{m} {kind}"] = skinned["max_error"][m]
            pos = skinned["positions"][m]
            volume[m] = np.array([procedural.mesh_volume(p, mesh.indices) for p in pos])
            volume[m] /= rest_volume
            if kind == "bend":
                bulge[m] = np.array([bend_bulge(p, a) for p, a in zip(pos, angles, strict=True)])
        out[f"volume_{kind}"] = volume
        if kind == "bend":
            out["bulge_bend"] = bulge
    return out


def render(
    path: Path,
    device: object,
    *,
    twist: float,
    bend: float,
    view: tuple,
    zoom: float,
    spacing: float,
) -> tuple[Path, dict[str, float]]:
    """The candy wrapper under ``twist`` then ``bend``, :data:`SHOWN` left to right, standing
    up as ``vkdqs render`` draws it, seen from ``view`` (yaw, pitch); each copy is skinned on
    the GPU, checked (:func:`skin_checked`) and drawn as an unskinned mesh of its posed
    vertices. Returns the path and each method's largest error."""
    from vkdqs.engine.renderer import Renderer
    from vkdqs.engine.targets import OffscreenTarget
    from vkdqs.images import write_png

    mesh = procedural.candy_wrapper()
    pose = procedural.bend_pose(bend) @ procedural.twist_pose(twist)
    skinned = skin_checked(device, mesh, pose[None])
    upright = np.eye(4)
    upright[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    upright[:3, 3] = (0.0, -1.0, 0.0)
    corners = []
    with (
        OffscreenTarget(device, *SIZE, samples=4) as target,
        Renderer(device, target) as renderer,
    ):
        for k, m in enumerate(SHOWN):
            posed = SkinnedMesh(
                skinned["positions"][m][0],
                skinned["normals"][m][0],
                np.zeros(mesh.vertex_count, np.uint32),
                np.ones(mesh.vertex_count, np.float32),
                mesh.indices,
            )
            model = upright.copy()
            model[0, 3] = (k - 0.5 * (len(SHOWN) - 1)) * spacing
            rm = renderer.add_mesh(posed, label=NAMES[m])
            renderer.add_instance(rm, bone_count=1, method="none", model=model, color=COLORS[m])
            corners.append(posed.positions @ model[:3, :3].T + model[:3, 3])
        pts = np.vstack(corners)
        camera = renderer.camera
        camera.yaw, camera.pitch = view
        camera.frame(pts.min(axis=0), pts.max(axis=0), aspect=SIZE[0] / SIZE[1])
        camera.zoom(zoom)
        image = renderer.render_image()
    return write_png(path, np.ascontiguousarray(image[..., :3])), skinned["max_error"]


# ---------------------------------------------------------------------------------------------
# The table: how far DDM is from Delta Mush (float64)


def weld(mesh: SkinnedMesh) -> SkinnedMesh:
    """``mesh`` with the vertices of equal position (and influences) merged: the smoothing of
    both Delta Mushes runs over the triangles' edges, and a flat-shaded glTF (the Fox: every
    triangle its own three vertices) has none between its triangles. Normals: area-weighted."""
    key = np.c_[mesh.positions, mesh.joints, mesh.weights]
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return SkinnedMesh(
        mesh.positions[first],
        None,
        mesh.joints[first],
        mesh.weights[first],
        inverse.reshape(-1)[np.asarray(mesh.indices).reshape(-1)],
    )


def distances(a: np.ndarray, b: np.ndarray, extent: float) -> tuple[float, float]:
    """Largest and mean |a - b| over the vertices (and poses), relative to ``extent``."""
    d = np.linalg.norm(np.asarray(a) - np.asarray(b), axis=-1)
    return float(d.max()) / extent, float(d.mean()) / extent


def settings() -> list[tuple[str, dict, dict]]:
    """The table's rows: (name, Delta Mush parameters, DDM parameters)."""
    rows = []
    for n in TABLE_ITERATIONS:
        dm = {"iterations": n, "step": TABLE_STEP}
        ddm = {
            "iterations": n,
            "rotation_step": TABLE_STEP,
            "translation_step": TABLE_STEP,
            "alpha": 0.0,
        }
        rows.append((f"n = p = {n}, matched", dm, ddm))
    rows.append(("DM n = 10; DDM defaults", dict(DM), dict(DDM)))
    return rows


def table_rows(
    name: str, mesh: SkinnedMesh, poses: np.ndarray, bone_count: int
) -> list[dict[str, object]]:
    """For each of :func:`settings`: (max, mean) of |DDM - DM|, |DM - LBS|, |DDM - LBS| and
    |DDM - DM with DDM's operator| over every vertex of ``poses``, relative to the rest extent;
    float64, all bones kept."""
    lbs = np.stack([lbs64(mesh, pose) for pose in poses])
    rows = []
    for label, dm_params, ddm_params in settings():
        bind = dm_ref.delta_mush_bind(mesh.positions, mesh.indices, **dm_params)
        dm = np.stack([dm_ref.delta_mush_reference(bind, q)[0] for q in lbs])
        omega = ddm_omega64(mesh, bone_count, **ddm_params)
        ddm = np.stack([ddm64(mesh, omega, pose) for pose in poses])
        same_op = implicit_cotangent_dm(mesh, ddm_params["iterations"], ddm_params["rotation_step"])
        dm_cot = np.stack([same_op(q) for q in lbs])
        rows.append(
            {
                "mesh": name,
                "setting": label,
                "ddm_dm": distances(ddm, dm, mesh.extent),
                "dm_lbs": distances(dm, lbs, mesh.extent),
                "ddm_lbs": distances(ddm, lbs, mesh.extent),
                "ddm_dmcot": distances(ddm, dm_cot, mesh.extent),
            }
        )
    return rows


def fox_inputs(model: Path) -> tuple[SkinnedMesh, np.ndarray, int]:
    """The welded first mesh of ``model`` and its skin's matrices at :data:`FOX_TIMES` of
    animation 0."""
    from vkdqs.gltf import load_gltf

    scene = load_gltf(model)
    mesh = weld(scene.skinned_mesh(0))
    poses = np.stack([scene.skinning_matrices(0, 0, t) for t in FOX_TIMES])
    return mesh, poses, poses.shape[1]


def table(model: Path | None) -> list[dict[str, object]]:
    """Every row: the candy wrapper twisted 170 and bent 135 degrees, and ``model`` (the Fox)
    at :data:`FOX_TIMES` when given."""
    candy = procedural.candy_wrapper()
    rows = table_rows("candy wrapper, twist 170°", candy, procedural.twist_pose(170)[None], 2)
    rows += table_rows("candy wrapper, bend 135°", candy, procedural.bend_pose(135)[None], 2)
    if model is not None:
        mesh, poses, bones = fox_inputs(model)
        times = ", ".join(f"{t:g}" for t in FOX_TIMES)
        rows += table_rows(f"{model.name} (welded), t = {times} s", mesh, poses, bones)
    return rows


def markdown(rows: list[dict[str, object]]) -> str:
    """The rows as the Markdown table of docs/delta-mush.md (max / mean, % of the extent)."""

    def cell(pair: tuple[float, float]) -> str:
        return f"{100 * pair[0]:.3f} / {100 * pair[1]:.3f}"

    lines = [
        "| mesh | setting | DDM − DM | DM − LBS | DDM − LBS | DDM − DM (DDM's smoothing) |",
        "|---|---|---|---|---|---|",
    ]
    last = None
    for r in rows:
        mesh = "" if r["mesh"] == last else r["mesh"]
        last = r["mesh"]
        cells = " | ".join(cell(r[k]) for k in ("ddm_dm", "dm_lbs", "ddm_lbs", "ddm_dmcot"))
        lines.append(f"| {mesh} | {r['setting']} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNGs")
    parser.add_argument("--step", type=float, default=5.0, help="plot step in degrees")
    parser.add_argument(
        "--fox", type=Path, help="Fox.glb (glTF-Sample-Assets, CC-BY 4.0) for the table"
    )
    parser.add_argument("--no-figures", action="store_true", help="the table only")
    args = parser.parse_args(argv)
    if args.fox is not None and not args.fox.is_file():
        print(f"make_mush_figures: no such file: {args.fox}", file=sys.stderr)
        return 1
    if not args.no_figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(
                "make_mush_figures: the plot needs matplotlib: pip install 'vkdqs[docs]'",
                file=sys.stderr,
            )
            return 1
        figures(args.out, args.step)
    print(markdown(table(args.fox)))
    return 0


def figures(out: Path, step: float) -> None:
    """Write the two pictures and the plot into ``out``; print what they show."""
    from vkdqs.gpu import Device

    angles = np.arange(0.0, LAST_ANGLE + 1e-9, step)
    with Device() as device:
        data = curves(device, angles)
        written = []
        for name, kw in (
            ("mush-twist-170.png", {"twist": 170, "bend": 0, "view": (0.15, 0.2), "zoom": 0.55}),
            ("mush-bend-135.png", {"twist": 0, "bend": 135, "view": (0.0, 0.1), "zoom": 0.5}),
        ):
            spacing = 1.8 if kw["bend"] == 0 else 2.6
            path, errors = render(out / name, device, spacing=spacing, **kw)
            written.append(path)
            data["max_error"] |= {f"{m} {name}": e for m, e in errors.items()}
    written.append(plot(out / "mush-volume-bulge.png", data, SHOWN, COLORS, NAMES, styles={}))
    for path in written:
        shrink(path)
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    worst = max(data["max_error"].values())
    print(f"GPU vs float64 reference: max |error| {worst:.1e} of the extent, every method/angle")
    for m, where, e in data["beyond"]:
        print(f"  beyond {TOLERANCE:g}: {m} at {where} degrees, {e:.1e} of the extent")
    i135 = int(np.argmin(np.abs(data["angles"] - 135.0)))
    for m in SHOWN:
        twisted = np.interp(170.0, data["angles"], data["volume_twist"][m])
        print(
            f"{NAMES[m]:>16}: volume at twist 170 {twisted:.3f},"
            f" at bend 135 {data['volume_bend'][m][i135]:.3f}; bulge at bend 135 "
            f"{data['bulge_bend'][m][i135]:.3f}, largest {data['bulge_bend'][m].max():.3f}"
        )


if __name__ == "__main__":
    sys.exit(main())
