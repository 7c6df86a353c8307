"""The one place where the ``vulkan`` binding's exceptions become vkdqs errors.

Importing it here first (``vkdqs.gpu`` imports this module before any other) turns a missing
Vulkan loader library into a :class:`~vkdqs.CapabilityError` that says what to install.

The binding raises message-less exception classes (``VkErrorOutOfDeviceMemory()``); every call
site wraps its Vulkan calls in :func:`vk_errors` with a sentence saying what was being done, so the
error a user sees names the call's purpose and the Vulkan result.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..errors import CapabilityError, VulkanError

#: What to say when the ``vulkan`` binding cannot load the Vulkan loader library.
LOADER_MISSING = (
    "the Vulkan loader (libvulkan.so.1) is not installed: install it and a Vulkan driver "
    "(Debian/Ubuntu: apt-get install libvulkan1 mesa-vulkan-drivers)"
)

try:
    import vulkan as vk
except OSError as exc:  # the binding dlopens libvulkan.so.1 when imported
    raise CapabilityError(LOADER_MISSING) from exc


@contextlib.contextmanager
def vk_errors(doing: str) -> Iterator[None]:
    """Re-raise the binding's exceptions as :class:`VulkanError` naming ``doing``."""
    try:
        yield
    except (vk.VkError, vk.VkException) as exc:
        raise VulkanError(f"{type(exc).__name__} while {doing}") from exc
    except vk.ProcedureNotFoundError as exc:
        raise VulkanError(f"a Vulkan entry point is missing while {doing}") from exc


def cstr(value: object) -> str:
    """A Python str from a fixed-size C char array of the binding (e.g. ``deviceName``)."""
    if isinstance(value, str):
        return value
    return vk.ffi.string(value).decode("utf-8", "replace")


def align(n: int, alignment: int) -> int:
    """``n`` rounded up to a multiple of ``alignment``."""
    return (n + alignment - 1) // alignment * alignment
