"""GltfError, the one exception a malformed or unsupported glTF file raises, from whichever module
of vkdqs.gltf finds the problem."""

from __future__ import annotations

from typing import Any

from vkdqs.errors import InputError


class GltfError(InputError):
    """A glTF file is malformed or uses something vkdqs does not support.

    The message names the file, the JSON path (``meshes[0].primitives[1].indices``) and the problem.
    """


class _BudgetSpent(GltfError):
    """The file needs more than ``max_bytes``: always an error, never turned into a warning for
    a part vkdqs could draw without."""


class GltfWarning(UserWarning):
    """Something in a glTF file that does not change what vkdqs skins or draws, which it loads
    as three.js would: a broken, missing or refused image or a texture reference it cannot follow
    (that material draws untextured), a name that is not a string, a malformed ``scene``, a
    ``skin.skeleton`` that is not a root of its joints, a field glTF forbids but that reads the
    same (see docs/bad-input.md). The message names the file and the JSON path."""


def _show(value: Any) -> str:
    """A JSON value for an error message, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
