"""Staging copies: how bytes reach memory the host cannot map, and come back from it.

On a discrete GPU static data lives in device-local memory the CPU cannot see. Writing it
goes through a host-visible staging buffer (``staging`` class: coherent system memory) and a
``vkCmdCopyBuffer`` that the call submits and waits for; reading a GPU-only buffer copies it
into host-cached ``readback`` memory the same way. Each copy is fenced by barriers against
every earlier and later use of the buffer, so it is correct wherever it is called between
submissions. Within :func:`batched_uploads` (the Skinner and the renderer's meshes use it)
the copies of many buffers share one submission. These are for data written once or read
rarely; per-frame data is ``dynamic`` and written in place, and the Skinner reads its results
back through a copy recorded in its own submission.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import vulkan as vk

from ..commands import CommandBuffer, memory_barrier
from ..device import BEFORE_SUBMIT

if TYPE_CHECKING:
    from .buffer import Buffer

_ANY = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
_ANY_ACCESS = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
_TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
_HOST_READ = vk.VK_ACCESS_HOST_READ_BIT


#: A batch submits its copies once this many bytes are staged (bounds the staging memory).
BATCH_BYTES = 64 * 2**20


def record_copies(
    cmd: Any,
    copies: list[tuple[Buffer, Buffer, int, int, int]],
    *,
    after: tuple[int, int] = (_ANY, _ANY_ACCESS),
    before: tuple[int, int] = (_ANY | vk.VK_PIPELINE_STAGE_HOST_BIT, _ANY_ACCESS | _HOST_READ),
) -> None:
    """Record buffer copies ``(src, dst, src_offset, dst_offset, nbytes)`` (empty ones left
    out) between two barriers: after the writes of ``after`` (stages, accesses), before the
    uses of ``before``. The defaults order them against any earlier and any later use."""
    memory_barrier(
        cmd,
        after[0],
        _TRANSFER,
        after[1],
        vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
    )
    for src, dst, src_offset, dst_offset, nbytes in copies:
        if nbytes:
            region = vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=nbytes)
            vk.vkCmdCopyBuffer(cmd, src.handle, dst.handle, 1, [region])
    memory_barrier(cmd, _TRANSFER, before[0], vk.VK_ACCESS_TRANSFER_WRITE_BIT, before[1])


def _submit(
    device: Any,
    copies: list[tuple[Buffer, Buffer, int, int, int]],
    label: str,
    recordings: Sequence[Callable[[Any], None]] = (),
) -> None:
    """One command buffer: the buffer copies, then each recording; submitted and waited for."""
    with CommandBuffer(device, label=label) as cb:
        cmd = cb.begin(one_time=True)
        if copies:
            record_copies(cmd, copies)
        for record in recordings:
            record(cmd)
        cb.end()
        cb.submit_and_wait()


class _Batch:
    """The staged copies of one thread on one device, and the image uploads recorded with
    them (:func:`defer_recording`), submitted together."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.copies: list[tuple[Buffer, Buffer, int, int, int]] = []
        #: (record(cmd), its staging buffer, whether its destination still exists)
        self.recordings: list[tuple[Callable[[Any], None], Buffer, Callable[[], bool]]] = []
        self.bytes = 0

    def add(self, staging: Buffer, dst: Buffer, offset: int, nbytes: int) -> None:
        self.copies.append((staging, dst, 0, offset, nbytes))
        self.bytes += nbytes
        if self.bytes >= BATCH_BYTES:
            self.flush()

    def record(
        self, record: Callable[[Any], None], staging: Buffer, alive: Callable[[], bool]
    ) -> None:
        self.recordings.append((record, staging, alive))
        self.bytes += staging.size
        if self.bytes >= BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Submit the pending copies and recordings (those to objects destroyed since are
        dropped) in one command buffer and free their staging buffers."""
        copies, self.copies, self.bytes = self.copies, [], 0
        recordings, self.recordings = self.recordings, []
        try:
            live = [c for c in copies if not c[1].destroyed]
            recorded = [r for r, _, alive in recordings if alive()]
            if (live or recorded) and not self.device.closed:
                _submit(self.device, live, f"{len(live) + len(recorded)} uploads", recorded)
        finally:
            for staging, *_ in copies:
                staging.destroy()
            for _, staging, _ in recordings:
                staging.destroy()


_local = threading.local()


def _batch(device: Any) -> _Batch | None:
    return getattr(_local, "batches", {}).get(id(device))


def flush_pending(device: Any) -> None:
    """Submit this thread's batched uploads to ``device`` now (every other submission on the
    device calls this first, so no work reads a buffer before its upload)."""
    batch = _batch(device)
    if batch is not None and (batch.copies or batch.recordings):
        batch.flush()


def defer_recording(
    device: Any, record: Callable[[Any], None], staging: Buffer, alive: Callable[[], bool]
) -> bool:
    """Hand an upload that ``record(cmd)`` records out of ``staging`` (an image's: copies,
    layout transitions, mip blits) to this thread's :func:`batched_uploads` block, which
    submits it with the others and then destroys ``staging``; dropped if ``alive()`` is false
    by then. False (nothing taken) outside such a block: the caller submits it itself."""
    batch = _batch(device)
    if batch is None:
        return False
    batch.record(record, staging, alive)
    return True


BEFORE_SUBMIT.append(flush_pending)


@contextmanager
def batched_uploads(device: Any) -> Iterator[None]:
    """Within the block, writes to buffers the host cannot map (static data on a discrete GPU)
    are staged and copied in one submission at its end (or every 64 MiB staged) instead of one
    each; a read of such a buffer submits what is pending first. Per thread; nests. Where the
    host maps static data (unified memory) nothing is staged and this does nothing."""
    batches = _local.__dict__.setdefault("batches", {})
    if id(device) in batches:
        yield
        return
    batch = batches[id(device)] = _Batch(device)
    try:
        yield
    finally:
        del batches[id(device)]
        batch.flush()


def upload(buffer: Buffer, data: np.ndarray, offset: int) -> None:
    """Write ``data`` (uint8) into ``buffer`` at ``offset`` through a staging buffer: copied
    now, or with the other copies of a :func:`batched_uploads` block."""
    if data.nbytes == 0:
        return
    staging = type(buffer)(
        buffer.device,
        data.nbytes,
        vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
        label=f"{buffer.label} staging",
        memory="staging",
    )
    batch = _batch(buffer.device)
    if batch is not None:
        try:
            staging.write(data)
        except BaseException:
            staging.destroy()
            raise
        batch.add(staging, buffer, offset, data.nbytes)
        return
    with staging:
        staging.write(data)
        _submit(
            buffer.device, [(staging, buffer, 0, offset, data.nbytes)], f"{buffer.label} upload"
        )


def download(buffer: Buffer, offset: int, nbytes: int) -> np.ndarray:
    """A uint8 copy of ``nbytes`` of ``buffer`` at ``offset``, through host-cached memory
    (after this thread's pending uploads)."""
    if nbytes == 0:
        return np.empty(0, np.uint8)
    batch = _batch(buffer.device)
    if batch is not None:
        batch.flush()
    with type(buffer)(
        buffer.device,
        nbytes,
        vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        label=f"{buffer.label} readback",
        memory="readback",
    ) as host:
        _submit(buffer.device, [(buffer, host, offset, 0, nbytes)], f"{buffer.label} readback")
        return host.read(np.uint8, nbytes)
