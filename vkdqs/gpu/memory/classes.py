"""Memory tables and usage classes: which memory type each kind of data goes to, in one place.

A device publishes memory *heaps* (pools of bytes: VRAM, system memory, the PCIe BAR window) and
memory *types* (a heap plus property flags). Where data should live depends on who writes it,
who reads it and how often, so vkdqs sorts every allocation into a usage class and ranks the
allowed types for it by scoring flags: a class states the flags it requires, then its
preferences one by one, most important first, each either "want" or "avoid". A type with more
of the earlier preferences wins whatever it has of the later ones; ties go to the lower index
(the order the driver lists them in, which the specification says puts the better type first).

The classes (:data:`RULES`; docs/memory.md explains each choice):

``static``
    Written once by the host, read by the GPU for the object's life: rest positions, normals,
    joints, weights, indices, morph deltas, DDM data, texture uploads' targets, crowd clips.
    Device-local memory that is *not* host-visible, filled through a staging buffer, wherever
    such a type exists; on unified-memory devices (every heap device-local: integrated and
    mobile GPUs, lavapipe) device-local host-visible memory written directly.
``dynamic``
    Written by the host every frame or call, read by the GPU: bones, uniforms, indirect
    commands. Host-visible, preferring device-local (the BAR window on a discrete GPU) while it
    fits its heap, then host-coherent.
``readback``
    Written by the GPU, read by the host: skinned vertices read back, boxes, captures.
    Host-visible and host-cached (CPU reads of uncached memory run at a fraction of the speed),
    then coherent.
``gpu``
    Written by the GPU: the Skinner's output, outputs drawn but not read, images. Device-local,
    not host-visible where possible (it keeps the small BAR heap for ``dynamic`` data); on
    unified memory host-visible and cached, so results are read back without a copy.
``staging``
    The host-visible source or destination of a copy to or from memory the host cannot map:
    coherent system memory, keeping the device-local heaps free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import vulkan as vk

DEVICE_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
HOST_VISIBLE = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
HOST_COHERENT = vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
HOST_CACHED = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
LAZILY_ALLOCATED = vk.VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT
PROTECTED = 0x20  # VK_MEMORY_PROPERTY_PROTECTED_BIT (Vulkan 1.1)
HEAP_DEVICE_LOCAL = vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT

_FLAG_NAMES = (
    (DEVICE_LOCAL, "DEVICE_LOCAL"),
    (HOST_VISIBLE, "HOST_VISIBLE"),
    (HOST_COHERENT, "HOST_COHERENT"),
    (HOST_CACHED, "HOST_CACHED"),
    (LAZILY_ALLOCATED, "LAZILY_ALLOCATED"),
    (PROTECTED, "PROTECTED"),
)

MemoryClass = Literal["static", "dynamic", "readback", "gpu", "staging"]
MEMORY_CLASSES: tuple[MemoryClass, ...] = ("static", "dynamic", "readback", "gpu", "staging")


def flag_names(flags: int) -> str:
    """``DEVICE_LOCAL|HOST_VISIBLE``-style names of memory property flags (``0`` for none)."""
    names = [name for bit, name in _FLAG_NAMES if flags & bit]
    return "|".join(names) or "0"


@dataclass(frozen=True)
class MemoryType:
    """One ``VkMemoryType``: property flags and the heap it allocates from."""

    flags: int
    heap: int


@dataclass(frozen=True)
class MemoryHeap:
    """One ``VkMemoryHeap``: its size in bytes and flags (``HEAP_DEVICE_LOCAL``)."""

    size: int
    flags: int = 0

    @property
    def device_local(self) -> bool:
        """The heap is the device's own memory (``VK_MEMORY_HEAP_DEVICE_LOCAL_BIT``)."""
        return bool(self.flags & HEAP_DEVICE_LOCAL)


@dataclass(frozen=True)
class MemoryTable:
    """A device's memory types and heaps, as ``vkGetPhysicalDeviceMemoryProperties`` reports
    them (or as a memory profile describes a real device's)."""

    types: tuple[MemoryType, ...]
    heaps: tuple[MemoryHeap, ...]

    @classmethod
    def from_vulkan(cls, props: Any) -> MemoryTable:
        """The table of a ``VkPhysicalDeviceMemoryProperties``."""
        types = tuple(
            MemoryType(int(props.memoryTypes[i].propertyFlags), int(props.memoryTypes[i].heapIndex))
            for i in range(props.memoryTypeCount)
        )
        heaps = tuple(
            MemoryHeap(int(props.memoryHeaps[i].size), int(props.memoryHeaps[i].flags))
            for i in range(props.memoryHeapCount)
        )
        return cls(types, heaps)

    @property
    def unified(self) -> bool:
        """Every heap is device-local: the GPU and the CPU share one memory (integrated and
        mobile GPUs, lavapipe), so there is nothing to stage data across."""
        return all(h.device_local for h in self.heaps)

    @property
    def all_types(self) -> int:
        """The ``memoryTypeBits`` mask of every type."""
        return (1 << len(self.types)) - 1


@dataclass(frozen=True)
class UsageRule:
    """A usage class's choice of memory type: the flags it ``requires``, then ``prefers`` in
    order of importance, each ``(flag, wanted)``: ``wanted`` False means "avoid"."""

    requires: int
    prefers: tuple[tuple[int, bool], ...]

    def score(self, flags: int) -> tuple[bool, ...] | None:
        """The lexicographic score of a type with ``flags`` (None: it lacks a required flag)."""
        if flags & self.requires != self.requires:
            return None
        return tuple(bool(flags & bit) == wanted for bit, wanted in self.prefers)


_STATIC_STAGED = UsageRule(0, ((DEVICE_LOCAL, True), (HOST_VISIBLE, False)))
_STATIC_UNIFIED = UsageRule(
    0, ((DEVICE_LOCAL, True), (HOST_VISIBLE, True), (HOST_COHERENT, True), (HOST_CACHED, False))
)
# On unified memory the GPU's own data costs the host nothing to see: where results are read
# back (the Skinner's output), cached host-visible memory saves the copy into readback memory.
_GPU_UNIFIED = UsageRule(0, ((DEVICE_LOCAL, True), (HOST_VISIBLE, True), (HOST_CACHED, True)))

#: The rule of each usage class; ``static`` has two (:func:`rule`).
RULES: dict[str, UsageRule] = {
    "static": _STATIC_STAGED,
    "dynamic": UsageRule(
        HOST_VISIBLE, ((DEVICE_LOCAL, True), (HOST_COHERENT, True), (HOST_CACHED, False))
    ),
    "readback": UsageRule(
        HOST_VISIBLE, ((HOST_CACHED, True), (HOST_COHERENT, True), (DEVICE_LOCAL, False))
    ),
    "gpu": UsageRule(0, ((DEVICE_LOCAL, True), (HOST_VISIBLE, False))),
    "staging": UsageRule(
        HOST_VISIBLE, ((HOST_COHERENT, True), (DEVICE_LOCAL, False), (HOST_CACHED, False))
    ),
}


def rule(memory_class: str, table: MemoryTable) -> UsageRule:
    """The rule for ``memory_class`` on a device with ``table``: static data is mapped directly
    on unified-memory devices and staged into memory the host cannot see elsewhere; GPU data
    goes to cached host-visible memory there, which results are read from without a copy."""
    if memory_class not in RULES:
        raise ValueError(f"unknown memory class {memory_class!r}; one of {MEMORY_CLASSES}")
    if table.unified and memory_class in ("static", "gpu"):
        return _STATIC_UNIFIED if memory_class == "static" else _GPU_UNIFIED
    return RULES[memory_class]


def ranked_types(table: MemoryTable, type_bits: int, usage: UsageRule) -> list[int]:
    """Indices of the types allowed by ``type_bits`` that meet ``usage``'s requirements, best
    first (the allocator tries them in this order until one's heap has room)."""
    scored = []
    for i, t in enumerate(table.types):
        if not type_bits & (1 << i) or t.flags & (LAZILY_ALLOCATED | PROTECTED):
            continue
        score = usage.score(t.flags)
        if score is not None:
            scored.append((score, -i, i))
    scored.sort(reverse=True)
    return [i for _, _, i in scored]


def describe_types(table: MemoryTable, indices: Sequence[int] | None = None) -> str:
    """``#i FLAGS (heap h, N MiB)`` for each type (all of them by default): error messages."""
    indices = range(len(table.types)) if indices is None else indices
    parts = []
    for i in indices:
        t = table.types[i]
        size = table.heaps[t.heap].size / 2**20
        parts.append(f"#{i} {flag_names(t.flags)} (heap {t.heap}, {size:.0f} MiB)")
    return ", ".join(parts)
