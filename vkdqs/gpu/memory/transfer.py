"""Staging copies: how bytes reach memory the host cannot map, and come back from it.

On a discrete GPU static data lives in device-local memory the CPU cannot see. Writing it
goes through a host-visible staging buffer (``staging`` class: coherent system memory) and a
``vkCmdCopyBuffer`` that the call submits and waits for; reading a GPU-only buffer copies it
into host-cached ``readback`` memory the same way. Each copy is fenced by barriers against
every earlier and later use of the buffer, so it is correct wherever it is called between
submissions. These are for data written once or read rarely; per-frame data is ``dynamic``
and written in place, and the Skinner reads its results back through a copy recorded in its
own submission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import vulkan as vk

from ..commands import CommandBuffer, memory_barrier

if TYPE_CHECKING:
    from .buffer import Buffer

_ANY = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
_ANY_ACCESS = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
_TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT


def _copy(src: Buffer, dst: Buffer, src_offset: int, dst_offset: int, nbytes: int) -> None:
    with CommandBuffer(dst.device, label=f"copy {src.label} -> {dst.label}") as cb:
        cmd = cb.begin(one_time=True)
        memory_barrier(
            cmd,
            _ANY,
            _TRANSFER,
            _ANY_ACCESS,
            vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
        )
        region = vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=nbytes)
        vk.vkCmdCopyBuffer(cmd, src.handle, dst.handle, 1, [region])
        memory_barrier(
            cmd,
            _TRANSFER,
            _ANY | vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            _ANY_ACCESS | vk.VK_ACCESS_HOST_READ_BIT,
        )
        cb.end()
        cb.submit_and_wait()


def upload(buffer: Buffer, data: np.ndarray, offset: int) -> None:
    """Write ``data`` (uint8) into ``buffer`` at ``offset`` through a staging buffer."""
    if data.nbytes == 0:
        return
    with type(buffer)(
        buffer.device,
        data.nbytes,
        vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
        label=f"{buffer.label} staging",
        memory="staging",
    ) as staging:
        staging.write(data)
        _copy(staging, buffer, 0, offset, data.nbytes)


def download(buffer: Buffer, offset: int, nbytes: int) -> np.ndarray:
    """A uint8 copy of ``nbytes`` of ``buffer`` at ``offset``, through host-cached memory."""
    if nbytes == 0:
        return np.empty(0, np.uint8)
    with type(buffer)(
        buffer.device,
        nbytes,
        vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        label=f"{buffer.label} readback",
        memory="readback",
    ) as host:
        _copy(buffer, host, offset, 0, nbytes)
        return host.read(np.uint8, nbytes)
