"""The seed corpus, made in code from the test fixtures: every container and decoding path.

``python -m tests.fuzz.corpus DIR`` writes one file per seed into DIR. The seeds: the rig of
tests/gltf_fixtures.py as GLB and as ``.gltf`` with data: URIs and with a ``data.bin``-style
external buffer (skins, a matrix joint, LINEAR/STEP/CUBICSPLINE animations, strips and fans,
8 influences, interleaved and sparse accessors, morph targets and a weights channel), the morph
model (quantized deltas too), a KHR_mesh_quantization rig, meshopt (EXT, KHR codec v1 with
filters) and Draco files, and textured files (PNG, JPEG, WebP, a sampler and a UV transform, an
image naming ``texture.png`` beside the model).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np


def seeds() -> dict[str, bytes]:
    """Seed name -> file bytes."""
    from tests.gltf_fixtures import SHORT, UNSIGNED_SHORT, make_rig
    from tests.gltf_fixtures_compressed import KHR, draco_file, meshopt_file
    from tests.gltf_fixtures_material import encode, quad_document, textured_rig
    from tests.gltf_fixtures_morph import make_morph_model
    from tests.test_gltf_quantization import _quantized_rig

    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)

        def keep(name: str, path: Path) -> None:
            out[name] = path.read_bytes()

        rigs = {
            "rig": make_rig(),
            "rig8": make_rig(eight=True, interleaved=True, joints_type=UNSIGNED_SHORT),
            "rig_sparse_morph": make_rig(sparse=True, morph_channel=True),
            "rig_quantized_rotations": make_rig(rotation_type=SHORT, weights_type=UNSIGNED_SHORT),
        }
        for name, rig in rigs.items():
            rig.save(folder / f"{name}.glb")
            keep(f"{name}.glb", folder / f"{name}.glb")
        rigs["rig"].save(folder / "rig_embedded.gltf", embed=True)
        keep("rig_embedded.gltf", folder / "rig_embedded.gltf")
        # a .gltf whose buffer is the data.bin beside it (the harness writes the rig's there)
        doc = json.loads(json.dumps(rigs["rig"].document))
        doc["buffers"] = [{"uri": "data.bin", "byteLength": len(rigs["rig"].builder.binary)}]
        out["rig_external.gltf"] = json.dumps(doc).encode()
        for name, model in {
            "morph.glb": make_morph_model(),
            "morph_cubic.glb": make_morph_model(interpolation="CUBICSPLINE"),
            "morph_quantized.glb": make_morph_model(quantized=(SHORT, True)),
        }.items():
            model.save(folder / name)
            keep(name, folder / name)
        rig, _, _ = _quantized_rig()
        rig.save(folder / "quantized.glb")
        keep("quantized.glb", folder / "quantized.glb")
        source = make_rig(scaled=False)
        binary = bytes(source.builder.binary)
        meshopt_file(folder / "meshopt_ext.glb", source.document, binary)
        meshopt_file(folder / "meshopt_khr.glb", source.document, binary, extension=KHR, version=1)
        meshopt_file(
            folder / "meshopt_fallback.glb",
            source.document,
            binary,
            fallback="data",
            required=False,
            index_mode="INDICES",
        )
        draco_file(folder / "draco.glb", source.document, binary)
        for name in ("meshopt_ext.glb", "meshopt_khr.glb", "meshopt_fallback.glb", "draco.glb"):
            keep(name, folder / name)
        rgba = np.zeros((16, 16, 4), np.uint8)
        rgba[..., 1] = np.arange(16)[None, :] * 16
        rgba[..., 3] = 255
        textured_rig(rgba).save(folder / "textured.glb")
        keep("textured.glb", folder / "textured.glb")
        for fmt, mime in (("JPEG", "image/jpeg"), ("WEBP", "image/webp")):
            b = quad_document(image=encode(rgba, fmt), mime=mime)
            b.save(folder / f"quad_{fmt.lower()}.gltf", embed=True)
            keep(f"quad_{fmt.lower()}.gltf", folder / f"quad_{fmt.lower()}.gltf")
        b = quad_document(
            image_uri="texture.png",
            sampler={"magFilter": 9728, "minFilter": 9987, "wrapS": 33648, "wrapT": 33071},
            texture_info={
                "index": 0,
                "extensions": {"KHR_texture_transform": {"offset": [0.5, 0], "rotation": 0.3}},
            },
            material={"alphaMode": "MASK", "alphaCutoff": 0.3, "doubleSided": True},
        )
        b.save(folder / "quad_beside.gltf", embed=True)
        keep("quad_beside.gltf", folder / "quad_beside.gltf")
    return out


def write_corpus(folder: Path) -> list[Path]:
    """Write every seed into ``folder`` (made if missing); returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in seeds().items():
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_corpus(Path(sys.argv[1])):
        print(p)
