"""Timestamp query pools: how long the GPU spent on a span of a command buffer.

A :class:`QueryPool` holds ``count`` timestamp queries. A command buffer resets the queries it
uses (``record_reset``, outside a render pass) before it writes them (``record_timestamp``);
the host reads them (``read``) only after the submission's fence has signalled, so the read
never blocks on the GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import vulkan as vk

from ..errors import CapabilityError, InputError
from .calls import vk_errors
from .device import Device
from .objects import DeviceObject


def check_timestamps(device: Device) -> None:
    """Raise :class:`CapabilityError` unless the device's queue can write timestamps."""
    info = device.info
    if info.timestamp_valid_bits == 0:
        raise CapabilityError(
            f"{info.name!r} has no timestamps on its queue family (timestampValidBits is 0); "
            "GPU timing is unavailable"
        )
    if not info.timestamp_compute_and_graphics:
        raise CapabilityError(
            f"{info.name!r} does not support timestamps on all graphics and compute queues "
            "(timestampComputeAndGraphics is false); GPU timing is unavailable"
        )


class QueryPool(DeviceObject):
    """``count`` timestamp queries (raises :class:`CapabilityError` if the device's queue
    has no timestamps)."""

    kind = "query pool"

    def __init__(self, device: Device, count: int, *, label: str) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InputError(f"a query pool needs count >= 1, got {count!r}")
        check_timestamps(device)
        vk_device = device.handle
        info = vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=count)
        with vk_errors(f"creating query pool {label!r}"):
            pool = vk.vkCreateQueryPool(vk_device, info, None)
        super().__init__(device, pool, label, lambda: vk.vkDestroyQueryPool(vk_device, pool, None))
        self.count = count
        bits = device.info.timestamp_valid_bits
        #: the valid bits of a timestamp: differences are taken modulo 2**bits
        self.mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        #: nanoseconds per tick
        self.period_ns = device.info.timestamp_period

    def record_reset(self, cmd: Any, first: int, count: int) -> None:
        """Reset queries ``first .. first + count - 1`` (outside a render pass)."""
        vk.vkCmdResetQueryPool(cmd, self.handle, first, count)

    def record_timestamp(self, cmd: Any, stage: int, query: int) -> None:
        """Write the time at which every earlier command has reached ``stage``."""
        vk.vkCmdWriteTimestamp(cmd, stage, self.handle, query)

    def read(self, first: int, count: int) -> np.ndarray:
        """Queries ``first ..`` as uint64 ticks; call only once the submission that wrote them
        has finished (its fence signalled), else this blocks until it does."""
        out = np.zeros(count, dtype=np.uint64)
        flags = vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT
        with vk_errors(f"reading query pool {self.label!r}"):
            vk.vkGetQueryPoolResults(
                self.device.handle,
                self.handle,
                first,
                count,
                out.nbytes,
                vk.ffi.from_buffer(out),
                8,
                flags,
            )
        return out

    def elapsed_ms(self, start: int, end: int) -> float:
        """Milliseconds between timestamp queries ``start`` and ``end`` (finished ones)."""
        lo, hi = int(self.read(start, 1)[0]), int(self.read(end, 1)[0])
        return ((hi - lo) & self.mask) * self.period_ns / 1e6
