"""Point of interest: the viewer, LBS and DQS side by side on the twisting candy wrapper.

    python examples/viewer.py                   # a window (keys: H for help)
    python examples/viewer.py model.glb         # a glTF model, playing its first animation
    python examples/viewer.py --offscreen       # no display: render the 170-degree frame to a PNG

The same as the ``vkdqs view`` and ``vkdqs render`` commands.
"""

from __future__ import annotations

import sys

from vkdqs.app import cli

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--offscreen"]
    if "--offscreen" in sys.argv[1:]:
        out = "viewer-offscreen.png"
        sys.exit(cli.main(["render", *args, "--out", out, "--twist", "170", "--size", "640x360"]))
    sys.exit(cli.main(["view", *args]))
