"""A texel buffer the host writes before each submission and that grows as needed
(:class:`HostTexels`): per-pose data of a pass after the skinning (velocity skinning's joints,
a recipe method's offsets), read by its recorded dispatches."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .calls import vk
from .memory.buffer import Buffer, BufferView

if TYPE_CHECKING:
    from .objects import ResourceOwner

__all__ = ["HostTexels"]


class HostTexels:
    """A host-visible uniform texel buffer of ``texel_format`` texels (``texel_bytes`` each)
    and its view, owned by ``owner`` (its objects are the owner's, destroyed by its ``close``).

    ``ensure(texels)`` grows it (waiting for the device first: recorded dispatches may read the
    old one) and says whether the view changed, so a descriptor set must point at it again.
    """

    def __init__(
        self, owner: ResourceOwner, texel_format: int, texel_bytes: int, label: str
    ) -> None:
        self.owner, self.format, self.texel_bytes, self.label = (
            owner,
            texel_format,
            texel_bytes,
            label,
        )
        self.buffer: Buffer | None = None
        self.view: BufferView | None = None
        self.capacity = 0  # texels

    def ensure(self, texels: int) -> bool:
        """Room for at least ``texels``; True where the buffer and view were replaced."""
        if texels <= self.capacity:
            return False
        owner = self.owner
        if self.buffer is not None:
            owner.device.wait_idle()
            owner.release(self.view)
            owner.release(self.buffer)
        usage = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        size = texels * self.texel_bytes
        self.buffer = owner.own(Buffer(owner.device, size, usage, label=self.label))
        self.view = owner.own(BufferView(owner.device, self.buffer, self.format, label=self.label))
        self.capacity = texels
        return True

    def write(self, data: np.ndarray) -> None:
        """Write ``data`` from the first texel (it must fit: :meth:`ensure` first)."""
        if self.buffer is None or data.nbytes > self.capacity * self.texel_bytes:
            raise ValueError(f"{self.label}: {data.nbytes} bytes do not fit; ensure() first")
        self.buffer.write(np.ascontiguousarray(data).reshape(-1))
