"""Sub-allocation: a few large ``VkDeviceMemory`` blocks per memory type, buffers and images
placed inside them.

Drivers allow only ``maxMemoryAllocationCount`` allocations (4096 on many), and each one is
slow to make, so a scene of a thousand meshes cannot give every buffer its own. The allocator
keeps blocks of :func:`block_size` bytes per memory type (64 MiB, or an eighth of a small heap,
as AMD's Vulkan Memory Allocator does), places each request first-fit at its alignment, and
gives a request over half a block a dedicated allocation of its own. Buffers and images never
share a block, which respects ``bufferImageGranularity`` without tracking neighbours. Memory
that is not coherent is handed out in whole ``nonCoherentAtomSize`` units, so flushing or
invalidating one allocation's range never touches another's bytes.

Blocks of host-visible types are mapped once, for their whole life. A block is freed when it
empties, except one spare per type and kind, which the next allocation reuses.

We write this small allocator rather than bind VMA: the one Python binding (pyvma) dates from
2017, has no wheels and does not build against current headers; what vkdqs needs (first-fit
blocks, dedicated large allocations, a budget check, a report) is a few hundred lines.

Under a memory profile (:mod:`vkdqs.gpu.memory.profiles`) the types, heaps and limits are the
profile's while the memory comes from the real device, and the simulation is strict: a type
the profile does not make host-visible is never mapped, and a non-coherent one is seen by the
host through a shadow copy that reaches the device only through :meth:`Allocation.flush` and
is refreshed from it only by :meth:`Allocation.invalidate`; heap sizes and the allocation count
are the profile's and are enforced.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import vulkan as vk

from ...errors import CapabilityError
from .classes import (
    HOST_COHERENT,
    HOST_VISIBLE,
    MEMORY_CLASSES,
    MemoryTable,
    describe_types,
    flag_names,
    ranked_types,
    rule,
)

MiB = 2**20
#: The size of an ordinary block on a large heap.
LARGE_HEAP_BLOCK = 64 * MiB


def block_size(heap_size: int) -> int:
    """Bytes per block on a heap of ``heap_size`` bytes: 64 MiB, an eighth of a heap of 512 MiB
    or less (a 256 MiB BAR window gets 32 MiB blocks)."""
    if heap_size <= 8 * LARGE_HEAP_BLOCK:
        return max(heap_size // 8, MiB)
    return LARGE_HEAP_BLOCK


def _align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


@dataclass(frozen=True)
class AllocatorLimits:
    """The limits the allocator obeys (the device's, or a profile's)."""

    max_allocations: int
    non_coherent_atom: int


class Block:
    """One ``VkDeviceMemory``: its free ranges and, when host-visible, the host's view of it."""

    def __init__(
        self, memory: Any, type_index: int, heap: int, size: int, kind: str, dedicated: bool
    ) -> None:
        self.memory = memory
        self.type_index, self.heap, self.size = type_index, heap, size
        self.kind, self.dedicated = kind, dedicated
        self.free: list[list[int]] = [[0, size]]  # [offset, size], sorted by offset
        self.used = 0
        self.host: np.ndarray | None = None  # what the host reads and writes
        self.device_view: np.ndarray | None = None  # the real mapping, when host is a shadow
        self.coherent = True

    def place(self, size: int, alignment: int) -> int | None:
        """First fit: the offset of ``size`` bytes at ``alignment``, taken; None if none."""
        for i, (start, length) in enumerate(self.free):
            offset = _align_up(start, alignment)
            end = offset + size
            if end > start + length:
                continue
            tail = start + length - end
            pieces = ([[start, offset - start]] if offset > start else []) + (
                [[end, tail]] if tail else []
            )
            self.free[i : i + 1] = pieces
            self.used += size
            return offset
        return None

    def give_back(self, offset: int, size: int) -> None:
        """Return a range, merged with free neighbours."""
        self.used -= size
        free = self.free
        i = 0
        while i < len(free) and free[i][0] < offset:
            i += 1
        free.insert(i, [offset, size])
        if i + 1 < len(free) and offset + size == free[i + 1][0]:
            free[i][1] += free.pop(i + 1)[1]
        if i > 0 and free[i - 1][0] + free[i - 1][1] == offset:
            free[i - 1][1] += free.pop(i)[1]

    @property
    def empty(self) -> bool:
        """Nothing is placed in the block."""
        return self.used == 0


class Allocation:
    """A range of a :class:`Block`: where a buffer or image is bound, and its host view."""

    def __init__(
        self, allocator: Allocator, block: Block, offset: int, size: int, memory_class: str
    ) -> None:
        self.allocator, self.block = allocator, block
        self.offset, self.size, self.memory_class = offset, size, memory_class
        self.freed = False

    @property
    def memory(self) -> Any:
        """The ``VkDeviceMemory`` the range is in."""
        return self.block.memory

    @property
    def type_index(self) -> int:
        """The memory type (the profile's index under a profile)."""
        return self.block.type_index

    @property
    def host_visible(self) -> bool:
        """The host maps the range (its type is host-visible)."""
        return self.block.host is not None

    @property
    def coherent(self) -> bool:
        """Host and device see each other's writes without flushes or invalidates."""
        return self.block.coherent

    def view(self, offset: int, nbytes: int) -> np.ndarray:
        """The host's uint8 view of ``nbytes`` at ``offset`` within the allocation."""
        host = self.block.host
        if host is None:
            raise CapabilityError(
                f"memory type #{self.type_index} is not host-visible: it cannot be mapped"
            )
        start = self.offset + offset
        return host[start : start + nbytes]

    def _atom_range(self, offset: int, nbytes: int) -> tuple[int, int]:
        atom = self.allocator.limits.non_coherent_atom
        start = (self.offset + offset) // atom * atom
        end = min(_align_up(self.offset + offset + nbytes, atom), self.block.size)
        return start, end

    def flush(self, offset: int, nbytes: int) -> None:
        """Make host writes to ``[offset, offset + nbytes)`` visible to the device (nothing to
        do on coherent memory)."""
        if self.block.coherent or nbytes <= 0:
            return
        start, end = self._atom_range(offset, nbytes)
        self.allocator.flush(self.block, start, end)

    def invalidate(self, offset: int, nbytes: int) -> None:
        """Make device writes to ``[offset, offset + nbytes)`` visible to the host."""
        if self.block.coherent or nbytes <= 0:
            return
        start, end = self._atom_range(offset, nbytes)
        self.allocator.invalidate(self.block, start, end)

    def free(self) -> None:
        """Give the range back (a destroyer calls this after destroying what is bound to it)."""
        self.allocator.free(self)


class Allocator:
    """The blocks of one device. ``table`` and ``limits`` are what vkdqs sees (a profile's under
    simulation); ``real_table`` is the device's own when they differ (then the memory comes from
    a host-visible real type and the profile's flags are simulated). ``budget(heap)``: the bytes
    this process may use in a heap (``VK_EXT_memory_budget``), or None to use the heap size."""

    def __init__(
        self,
        vk_device: Any,
        table: MemoryTable,
        limits: AllocatorLimits,
        *,
        real_table: MemoryTable | None = None,
        budget: Callable[[int], int] | None = None,
    ) -> None:
        self.vk_device = vk_device
        self.table = table
        self.real_table = real_table
        self.limits = limits
        self.budget = budget
        self.lock = threading.Lock()
        self.blocks: dict[tuple[int, str], list[Block]] = defaultdict(list)
        self.heap_bytes = [0] * len(table.heaps)  # bytes of VkDeviceMemory per heap
        self.count = 0  # VkDeviceMemory objects
        #: (heap, class) -> [bytes, allocations]
        self.in_use: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])

    @property
    def simulated(self) -> bool:
        """A memory profile's table is simulated on the device's own memory."""
        return self.real_table is not None

    def maps(self, memory_class: str) -> bool:
        """Whether memory of ``memory_class`` goes to a host-visible type (the first its rule
        ranks): what a caller plans copies by before it allocates."""
        order = ranked_types(self.table, self.table.all_types, rule(memory_class, self.table))
        return bool(order) and bool(self.table.types[order[0]].flags & HOST_VISIBLE)

    # -- allocation -------------------------------------------------------------------------

    def allocate(
        self, requirements: Any, memory_class: str, *, kind: str, label: str
    ) -> Allocation:
        """Place a ``kind`` ("buffer" or "image") resource of ``memory_class`` with
        ``requirements`` (the real device's ``VkMemoryRequirements``), trying the types its
        rule ranks in order until one's heap has room."""
        size, alignment = int(requirements.size), int(requirements.alignment)
        type_bits = int(requirements.memoryTypeBits)
        usage = rule(memory_class, self.table)
        bits = self.table.all_types if self.simulated else type_bits
        order = ranked_types(self.table, bits, usage)
        if not order:
            allowed = describe_types(
                self.table, [i for i in range(len(self.table.types)) if bits & (1 << i)]
            )
            raise CapabilityError(
                f"{label!r}: no memory type has the flags {flag_names(usage.requires)} that "
                f"{memory_class} memory needs (types allowed: {allowed})"
            )
        refused: list[str] = []
        with self.lock:
            for type_index in order:
                found = self._place(type_index, size, alignment, kind, type_bits, refused)
                if found is not None:
                    block, offset, taken = found
                    usage_row = self.in_use[(block.heap, memory_class)]
                    usage_row[0] += taken
                    usage_row[1] += 1
                    return Allocation(self, block, offset, taken, memory_class)
        raise CapabilityError(
            f"cannot allocate {size} bytes ({size / MiB:.1f} MiB) of {memory_class} memory for "
            f"{label!r}: " + "; ".join(refused)
        )

    def _place(
        self, type_index: int, size: int, alignment: int, kind: str, real_bits: int, refused: list
    ) -> tuple[Block, int, int] | None:
        t = self.table.types[type_index]
        if not t.flags & HOST_COHERENT and t.flags & HOST_VISIBLE:
            atom = self.limits.non_coherent_atom
            alignment = max(alignment, atom)
            size = _align_up(size, atom)
        for block in self.blocks[(type_index, kind)]:
            if not block.dedicated:
                offset = block.place(size, alignment)
                if offset is not None:
                    return block, offset, size
        heap = self.table.heaps[t.heap]
        ordinary = block_size(heap.size)
        dedicated = size > ordinary // 2
        want = _align_up(size, self.limits.non_coherent_atom) if dedicated else ordinary
        why = self._cannot_allocate(t.heap, want)
        if why:
            refused.append(f"type #{type_index} ({flag_names(t.flags)}): {why}")
            return None
        block = self._new_block(type_index, want, kind, dedicated, real_bits, refused)
        if block is None:
            return None
        offset = block.place(size, alignment)
        assert offset is not None
        return block, offset, size

    def _cannot_allocate(self, heap_index: int, nbytes: int) -> str | None:
        """Why a new allocation of ``nbytes`` cannot be made in a heap (None: it can)."""
        if self.count >= self.limits.max_allocations:
            return (
                f"{self.count} allocations made, the device's maxMemoryAllocationCount is "
                f"{self.limits.max_allocations}"
            )
        heap = self.table.heaps[heap_index]
        limit = heap.size if self.budget is None else min(heap.size, self.budget(heap_index))
        used = self.heap_bytes[heap_index]
        if used + nbytes > limit:
            kind = "budget" if self.budget is not None else "size"
            return (
                f"heap {heap_index} ({heap.size / MiB:.0f} MiB, {kind} {limit / MiB:.0f} MiB) has "
                f"{used / MiB:.1f} MiB in use and no room for {nbytes / MiB:.1f} MiB more"
            )
        return None

    def _real_type(self, type_index: int, real_bits: int) -> int:
        if self.real_table is None:
            return type_index
        for i, t in enumerate(self.real_table.types):
            if real_bits & (1 << i) and t.flags & HOST_VISIBLE:
                return i
        raise CapabilityError("memory profiles need a device whose memory is host-visible")

    def _new_block(
        self, type_index: int, size: int, kind: str, dedicated: bool, real_bits: int, refused: list
    ) -> Block | None:
        t = self.table.types[type_index]
        real = self._real_type(type_index, real_bits)
        info = vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=real)
        try:
            memory = vk.vkAllocateMemory(self.vk_device, info, None)
        except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory) as exc:
            refused.append(
                f"type #{type_index}: the driver refused {size / MiB:.1f} MiB "
                f"({type(exc).__name__})"
            )
            return None
        block = Block(memory, type_index, t.heap, size, kind, dedicated)
        try:
            if t.flags & HOST_VISIBLE:
                mapped = vk.vkMapMemory(self.vk_device, memory, 0, size, 0)
                view = np.frombuffer(mapped, dtype=np.uint8)
                block.coherent = bool(t.flags & HOST_COHERENT)
                real_coherent = self.real_table is None or bool(
                    self.real_table.types[real].flags & HOST_COHERENT
                )
                if not block.coherent and real_coherent:
                    # simulated: the host sees a shadow, the device the mapping
                    block.host, block.device_view = np.zeros(size, np.uint8), view
                else:
                    block.host = view
        except BaseException:
            vk.vkFreeMemory(self.vk_device, memory, None)
            raise
        self.blocks[(type_index, kind)].append(block)
        self.heap_bytes[t.heap] += size
        self.count += 1
        return block

    # -- coherence --------------------------------------------------------------------------

    def flush(self, block: Block, start: int, end: int) -> None:
        """Flush ``[start, end)`` of a non-coherent block (atom-aligned)."""
        if block.device_view is not None:
            assert block.host is not None
            block.device_view[start:end] = block.host[start:end]
            return
        rng = vk.VkMappedMemoryRange(memory=block.memory, offset=start, size=end - start)
        vk.vkFlushMappedMemoryRanges(self.vk_device, 1, [rng])

    def invalidate(self, block: Block, start: int, end: int) -> None:
        """Invalidate ``[start, end)`` of a non-coherent block (atom-aligned)."""
        if block.device_view is not None:
            assert block.host is not None
            block.host[start:end] = block.device_view[start:end]
            return
        rng = vk.VkMappedMemoryRange(memory=block.memory, offset=start, size=end - start)
        vk.vkInvalidateMappedMemoryRanges(self.vk_device, 1, [rng])

    # -- freeing ----------------------------------------------------------------------------

    def free(self, allocation: Allocation) -> None:
        """Give ``allocation``'s range back; free its block if it empties (but one spare)."""
        with self.lock:
            if allocation.freed:
                return
            allocation.freed = True
            block = allocation.block
            block.give_back(allocation.offset, allocation.size)
            row = self.in_use[(block.heap, allocation.memory_class)]
            row[0] -= allocation.size
            row[1] -= 1
            if block.empty:
                siblings = self.blocks[(block.type_index, block.kind)]
                spare = [b for b in siblings if b.empty and not b.dedicated and b is not block]
                if block.dedicated or spare:
                    siblings.remove(block)
                    self._free_block(block)

    def _free_block(self, block: Block) -> None:
        if block.host is not None:
            vk.vkUnmapMemory(self.vk_device, block.memory)
        block.host = block.device_view = None
        vk.vkFreeMemory(self.vk_device, block.memory, None)
        self.heap_bytes[block.heap] -= block.size
        self.count -= 1

    def release(self) -> None:
        """Free every block (the Device's close, after its children are destroyed)."""
        with self.lock:
            for blocks in self.blocks.values():
                for block in blocks:
                    self._free_block(block)
            self.blocks.clear()

    # -- the report -------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        """Per heap: its size, flags, budget, the bytes and count of ``VkDeviceMemory`` vkdqs
        holds there, and per usage class the bytes and allocations placed in it."""
        with self.lock:
            heaps = []
            for h, heap in enumerate(self.table.heaps):
                blocks = [b for bs in self.blocks.values() for b in bs if b.heap == h]
                classes = {
                    c: {"bytes": self.in_use[(h, c)][0], "allocations": self.in_use[(h, c)][1]}
                    for c in MEMORY_CLASSES
                    if self.in_use.get((h, c), [0, 0])[1]
                }
                budget = heap.size if self.budget is None else min(heap.size, self.budget(h))
                heaps.append(
                    {
                        "heap": h,
                        "size": heap.size,
                        "device_local": heap.device_local,
                        "budget": budget,
                        "memory_bytes": self.heap_bytes[h],
                        "memory_objects": len(blocks),
                        "classes": classes,
                    }
                )
            return {
                "heaps": heaps,
                "memory_objects": self.count,
                "max_memory_objects": self.limits.max_allocations,
                "simulated": self.simulated,
            }
