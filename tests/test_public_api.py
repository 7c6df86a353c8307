"""``import vkdqs`` is cheap and side-effect free; every public name resolves."""

from __future__ import annotations

import subprocess
import sys


def test_import_loads_no_vulkan_and_every_public_name_resolves():
    code = (
        "import sys, vkdqs\n"
        "assert 'vulkan' not in sys.modules and 'glfw' not in sys.modules\n"
        "import vkdqs.dq, vkdqs.gltf, vkdqs.mesh\n"
        "assert 'vulkan' not in sys.modules, 'math and glTF loading must not import vulkan'\n"
        "for name in vkdqs.__all__:\n"
        "    assert getattr(vkdqs, name) is not None, name\n"
        "assert 'glfw' not in sys.modules, 'only the viewer imports glfw'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
