"""One fuzz input: a model file, loaded and used as callers use it; only GltfError may come out.

The input's bytes are the model file (``model.glb`` when they start with the GLB magic,
``model.gltf`` otherwise) in a folder that also holds ``data.bin`` (the test rig's buffer) and
``texture.png``, which a ``.gltf`` input may name. It is loaded under the default
``max_bytes``, then the scene is used as ``vkdqs info``, the player and the bake use it: its
summary, each skinned mesh, the parts it draws, every skin's matrices at rest and at a time of
each animation, and each mesh's morph weights. Any exception other than
:class:`vkdqs.gltf.GltfError` escapes: that is a crash.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

#: Files beside the model that a ``.gltf`` input may name (made by :func:`prepare`).
BESIDE = ("data.bin", "texture.png")


def prepare(folder: Path) -> Path:
    """Write the files a ``.gltf`` input may name into ``folder``; returns it."""
    from tests.gltf_fixtures import make_rig
    from tests.gltf_fixtures_material import encode

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.bin").write_bytes(bytes(make_rig().builder.binary))  # the rig's buffer

    rgba = np.zeros((8, 8, 4), np.uint8)
    rgba[..., 0] = np.arange(8)[:, None] * 32
    rgba[..., 3] = 255
    (folder / "texture.png").write_bytes(encode(rgba))
    return folder


def one_input(data: bytes, folder: Path) -> None:
    """Load ``data`` as a model file in ``folder`` and use the scene; raises only GltfError."""
    from vkdqs.gltf import GltfError, load_gltf
    from vkdqs.gltf.prescan import oversized_skin

    # the joints pre-scan on any bytes, with a limit that every skin passes: None or a place,
    # never an exception (the loader runs it only past MAX_JOINTS)
    found = oversized_skin(data, 2)
    assert found is None or (found[0] >= 0 and found[1] > 2), found
    path = folder / ("model.glb" if data[:4] == b"glTF" else "model.gltf")
    path.write_bytes(data)
    with warnings.catch_warnings():
        # GltfWarnings (broken images) are expected; absurd but finite transforms (1e300
        # scales) may overflow to inf in float64 math, which is not an error either.
        warnings.simplefilter("ignore")
        try:
            scene = load_gltf(path)
        except GltfError:
            return
        use(scene)


def use(scene) -> None:
    """What callers do with a loaded scene; only GltfError may come out."""
    from vkdqs.gltf import GltfError
    from vkdqs.gltf.parts import scene_parts

    scene.summary()
    for mesh in scene.meshes:
        scene.morph_weights(mesh.index)
        if mesh.skinned:
            try:
                scene.skinned_mesh(mesh.index)
            except GltfError:
                pass
    try:
        scene_parts(scene)
    except GltfError:
        pass
    for animation in [None, *range(len(scene.animations))]:
        scene.rigid_meshes(animation, 0.3)
        for skin in range(len(scene.skins)):
            scene.skinning_matrices(skin, animation, 0.7)
        for mesh in scene.meshes:
            scene.morph_weights(mesh.index, animation=animation, time=0.4)
