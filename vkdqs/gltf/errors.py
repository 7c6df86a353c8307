"""GltfError, the one exception a malformed or unsupported glTF file raises, from whichever module
of vkdqs.gltf finds the problem."""

from __future__ import annotations

from typing import Any

from vkdqs.errors import InputError


class GltfError(InputError):
    """A glTF file is malformed or uses something vkdqs does not support.

    The message names the file, the JSON path (``meshes[0].primitives[1].indices``) and the problem.
    """


class GltfWarning(UserWarning):
    """Something in a glTF file vkdqs skips but can draw without: a broken, missing or refused
    image (that material draws untextured), a texture on a second UV set. The message names the
    file and the JSON path."""


def _show(value: Any) -> str:
    """A JSON value for an error message, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
