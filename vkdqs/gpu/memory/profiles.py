"""Memory profiles: the memory types, heaps and limits of real devices, for lavapipe to wear.

vkdqs's CI has no GPU. Under a profile (``Device(memory_profile=NAME)``,
``$VKDQS_MEMORY_PROFILE``) a Device sees a real device's memory table and limits while it
allocates on the device it has, and the allocator simulates the table strictly
(:mod:`.allocator`): what the profile's device would refuse or get wrong (mapping memory that
is not host-visible, forgetting a flush or an invalidate, overfilling a heap, too many
allocations, a limit passed) fails here too.

Each table is copied from a published ``vulkaninfo`` report, named in its profile's
``source``. Heap sizes are the reports'; the allocation count, atom size and alignments are the
reports' where given (the profile says where one is not).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InputError
from .classes import (
    DEVICE_LOCAL,
    HEAP_DEVICE_LOCAL,
    HOST_CACHED,
    HOST_COHERENT,
    HOST_VISIBLE,
    LAZILY_ALLOCATED,
    MemoryHeap,
    MemoryTable,
    MemoryType,
)

DL, HV, COHERENT, CACHED = DEVICE_LOCAL, HOST_VISIBLE, HOST_COHERENT, HOST_CACHED


@dataclass(frozen=True)
class MemoryProfile:
    """A real device's memory table and limits (``limits``: :class:`~vkdqs.gpu.DeviceInfo`
    field names and values), with where they come from."""

    name: str
    description: str
    source: str
    table: MemoryTable
    limits: dict[str, object] = field(default_factory=dict)


def _table(heaps: list[tuple[int, int]], types: list[tuple[int, int]]) -> MemoryTable:
    return MemoryTable(
        tuple(MemoryType(flags, heap) for heap, flags in types),
        tuple(MemoryHeap(size, flags) for size, flags in heaps),
    )


def _limits(
    allocations: int,
    atom: int,
    granularity: int,
    uniform_range: int,
    storage_range: int,
    texels: int,
    push: int,
    invocations: int,
    storage_align: int,
    uniform_align: int,
) -> dict[str, object]:
    return {
        "max_memory_allocation_count": allocations,
        "non_coherent_atom_size": atom,
        "buffer_image_granularity": granularity,
        "max_uniform_buffer_range": uniform_range,
        "max_storage_buffer_range": storage_range,
        "max_texel_buffer_elements": texels,
        "max_push_constants_size": push,
        "max_compute_work_group_invocations": invocations,
        "min_storage_buffer_offset_alignment": storage_align,
        "min_uniform_buffer_offset_alignment": uniform_align,
    }


_DL_HEAP = HEAP_DEVICE_LOCAL

_DISCRETE = _table(
    [(8408530944, _DL_HEAP), (17145450496, 0), (224395264, _DL_HEAP)],
    [(1, 0), (0, DL), (1, HV | COHERENT), (1, HV | COHERENT | CACHED), (2, DL | HV | COHERENT)],
)
_DISCRETE_LIMITS = _limits(4096, 64, 1024, 65536, 2**32 - 1, 2**27, 256, 1024, 16, 64)

_PROFILES = (
    MemoryProfile(
        "discrete",
        "a discrete desktop GPU with resizable BAR off: 7.8 GiB of VRAM the host cannot map, "
        "system memory with and without HOST_CACHED, and a 214 MiB host-visible window of VRAM",
        "NVIDIA GeForce RTX 2060 SUPER, driver 536.23, Windows (vulkaninfo in "
        "github.com/olokreaz/oloproxx-game, vulkaninfo.md, commit 286004d); the GTX 1660 "
        "with driver 546.65 reports the same types and limits",
        _DISCRETE,
        _DISCRETE_LIMITS,
    ),
    MemoryProfile(
        "discrete-rebar",
        "the same kind of GPU with resizable BAR on: the host-visible device-local type covers "
        "the whole VRAM heap",
        "NVIDIA GeForce RTX 4060, driver 550.144.03, Linux (vulkaninfo in "
        "github.com/bushman77/bushbot, vulkaninfo.log, commit 438e419)",
        _table(
            [(8585740288, _DL_HEAP), (25013726208, 0)],
            [
                (1, 0),
                (0, DL),
                (1, HV | COHERENT),
                (1, HV | COHERENT | CACHED),
                (0, DL | HV | COHERENT),
            ],
        ),
        _limits(2**32 - 1, 64, 1024, 65536, 2**32 - 1, 2**27, 256, 1024, 16, 64),
    ),
    MemoryProfile(
        "integrated",
        "an integrated GPU: one device-local heap of system memory, a device-local type the "
        "host cannot map beside coherent and cached ones",
        "Intel UHD Graphics (0xa7a8), driver 101.4502, Windows (vulkaninfo in "
        "github.com/heintjepeintje/nexus, vulkaninfo.txt, commit 6cda5f2)",
        _table(
            [(8401381376, _DL_HEAP)],
            [(0, DL), (0, DL | HV | COHERENT), (0, DL | HV | COHERENT | CACHED)],
        ),
        _limits(2083886, 1, 1, 134217724, 1073741820, 2**27, 256, 1024, 64, 64),
    ),
    MemoryProfile(
        "mobile",
        "a mobile GPU whose only cached host memory is not coherent (flush after host writes, "
        "invalidate before host reads), one device-local heap, and a lazily allocated type",
        "ARM Mali-G52 MC2, driver 32.1.0, Android: memory types as printed in a DXVK log "
        "(github.com/brunodev85/winlator issue 1117; one 4096 MiB heap); limits of the "
        "Mali-G615 MC6 (github.com/leegao/bionic-vulkan-wrapper issue 124) but "
        "nonCoherentAtomSize, which neither shows: 64, what Mali drivers report",
        _table(
            [(4096 * 2**20, _DL_HEAP)],
            [(0, DL | HV | COHERENT), (0, DL | HV | CACHED), (0, DL | LAZILY_ALLOCATED)],
        ),
        _limits(0x4000, 64, 1, 2**31, 2**31, 0x10000000, 256, 512, 64, 64),
    ),
    MemoryProfile(
        "vulkan-minimum",
        "the limits the Vulkan specification requires of every device (its table of required "
        "limits: the smallest maxima, the largest alignments), with the discrete profile's "
        "memory",
        "Vulkan 1.1 specification, 'Required Limits'; memory as the discrete profile",
        _DISCRETE,
        {
            **_limits(4096, 256, 131072, 16384, 2**27, 65536, 128, 128, 256, 256),
            "max_compute_work_group_count": (65535, 65535, 65535),
            "max_bound_descriptor_sets": 4,
        },
    ),
)

_BY_NAME = {p.name: p for p in _PROFILES}


def memory_profiles() -> dict[str, MemoryProfile]:
    """The memory profiles by name: ``discrete``, ``discrete-rebar``, ``integrated``,
    ``mobile``, ``vulkan-minimum``."""
    return dict(_BY_NAME)


def get_profile(name: str) -> MemoryProfile:
    """The profile called ``name``; an :class:`~vkdqs.errors.InputError` listing the names for
    an unknown one."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InputError(
            f"unknown memory profile {name!r} (VKDQS_MEMORY_PROFILE / memory_profile=); one of "
            f"{', '.join(_BY_NAME)}"
        ) from None
