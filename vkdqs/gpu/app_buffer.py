"""An app's ``VkBuffer`` that vkdqs writes into (:class:`AppBuffer`).

Vulkan has no query for a buffer's size or usage flags, so the app states them once, with the
handle, and vkdqs checks every range it is asked to write against them before recording
anything (docs/vulkan-app.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .calls import vk

if TYPE_CHECKING:
    from .device import Device

__all__ = ["AppBuffer", "destination"]


class AppBuffer:
    """The app's ``VkBuffer`` ``handle``, created on ``device``'s ``VkDevice`` with ``size``
    bytes and ``usage`` (``VkBufferUsageFlags``). vkdqs never destroys it; the app keeps it
    alive while command buffers that vkdqs recorded into use it."""

    def __init__(
        self, device: Device, handle: Any, *, size: int, usage: int, label: str = "app buffer"
    ) -> None:
        if handle is None:
            raise InputError(f"{label}: the VkBuffer handle is None")
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise InputError(f"{label}: size must be an int > 0, got {size!r}")
        if isinstance(usage, bool) or not isinstance(usage, int) or usage < 0:
            raise InputError(f"{label}: usage must be VkBufferUsageFlags (an int), got {usage!r}")
        device.handle  # noqa: B018  (raises on a closed Device)
        self.device = device
        self.handle = handle
        self.size = size
        self.usage = usage
        self.label = label

    def __repr__(self) -> str:
        return f"<AppBuffer {self.label!r} {self.size} bytes>"


def destination(
    device: Device, value: object, what: str, nbytes: int, usage: int, alignment: int
) -> tuple[Any, int]:
    """``(buffer, offset)`` checked as a place vkdqs writes ``nbytes`` into with ``usage``
    (``VK_BUFFER_USAGE_*``): an :class:`AppBuffer` or a vkdqs Buffer of ``device``, an offset
    that is a multiple of ``alignment``, the range inside the buffer. One clear
    :class:`~vkdqs.errors.InputError` (or ``OwnershipError``) before anything is recorded."""
    if not (isinstance(value, tuple) and len(value) == 2):
        raise InputError(f"{what} must be a (buffer, offset) pair, got {type(value).__name__}")
    buffer, offset = value
    from .memory.buffer import Buffer

    if not isinstance(buffer, (AppBuffer, Buffer)):
        raise InputError(
            f"{what}: {type(buffer).__name__} is not an AppBuffer or a vkdqs Buffer; wrap the "
            "app's VkBuffer as vkdqs.gpu.AppBuffer(device, handle, size=..., usage=...) (Vulkan "
            "cannot be asked a buffer's size or usage)"
        )
    device.check_owns(buffer, what)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise InputError(f"{what}: offset must be an int, got {offset!r}")
    if offset < 0 or offset % alignment:
        raise InputError(f"{what}: offset {offset} is not a multiple of {alignment} bytes (>= 0)")
    if offset + nbytes > buffer.size:
        raise InputError(
            f"{what}: {nbytes} bytes at offset {offset} do not fit {buffer!r}'s {buffer.size} bytes"
        )
    if isinstance(buffer, AppBuffer) and not buffer.usage & usage:
        names = [n for n in dir(vk) if n.startswith("VK_BUFFER_USAGE_") and getattr(vk, n) == usage]
        raise InputError(
            f"{what}: {buffer!r} was not created with {names[0] if names else usage} usage"
        )
    return buffer, offset
