"""Memory types by usage class, on the tables of real devices (no device): what goes where on
a discrete GPU with and without resizable BAR, an integrated and a mobile GPU, and lavapipe;
the allocator's first-fit blocks."""

from __future__ import annotations

import itertools
import random

import pytest

from vkdqs.errors import InputError
from vkdqs.gpu.memory import classes as c
from vkdqs.gpu.memory.allocator import Block, block_size
from vkdqs.gpu.memory.profiles import get_profile, memory_profiles

LAVAPIPE = c.MemoryTable(
    (c.MemoryType(c.DEVICE_LOCAL | c.HOST_VISIBLE | c.HOST_COHERENT | c.HOST_CACHED, 0),),
    (c.MemoryHeap(2**31, c.HEAP_DEVICE_LOCAL),),
)


def first(table: c.MemoryTable, memory_class: str) -> c.MemoryType:
    order = c.ranked_types(table, table.all_types, c.rule(memory_class, table))
    return table.types[order[0]]


def test_the_profiles_are_the_five_the_issue_names():
    assert set(memory_profiles()) == {
        "discrete",
        "discrete-rebar",
        "integrated",
        "mobile",
        "vulkan-minimum",
    }
    for profile in memory_profiles().values():
        assert profile.source and profile.description
        for t in profile.table.types:
            assert 0 <= t.heap < len(profile.table.heaps)


def test_an_unknown_profile_names_the_known_ones():
    with pytest.raises(InputError, match=r"unknown memory profile 'gtx'.*discrete, "):
        get_profile("gtx")


def test_discrete_without_bar_keeps_static_data_out_of_the_bar_window():
    t = get_profile("discrete").table
    heaps = t.heaps
    static = first(t, "static")
    assert static.flags == c.DEVICE_LOCAL and heaps[static.heap].size > 2**32
    assert first(t, "gpu") == static
    dynamic = first(t, "dynamic")  # the 214 MiB BAR window
    assert dynamic.flags & c.DEVICE_LOCAL and dynamic.flags & c.HOST_VISIBLE
    assert heaps[dynamic.heap].size == 224395264
    readback = first(t, "readback")  # cached system memory, never uncached
    assert readback.flags & c.HOST_CACHED and not readback.flags & c.DEVICE_LOCAL
    staging = first(t, "staging")  # system memory, not cached, not the window
    assert staging.flags == c.HOST_VISIBLE | c.HOST_COHERENT
    assert not t.unified


def test_the_dynamic_class_falls_back_from_the_bar_window_to_system_memory():
    t = get_profile("discrete").table
    order = c.ranked_types(t, t.all_types, c.rule("dynamic", t))
    assert [t.types[i].heap for i in order[:2]] == [2, 1]
    assert all(t.types[i].flags & c.HOST_VISIBLE for i in order)


def test_with_bar_the_window_is_all_of_vram_but_static_data_still_stages():
    t = get_profile("discrete-rebar").table
    dynamic = first(t, "dynamic")
    assert dynamic.heap == 0 and dynamic.flags & c.HOST_VISIBLE
    assert first(t, "static").flags == c.DEVICE_LOCAL


def test_unified_devices_map_static_data_directly():
    for table in (get_profile("integrated").table, get_profile("mobile").table, LAVAPIPE):
        assert table.unified
        static = first(table, "static")
        assert static.flags & c.HOST_VISIBLE and static.flags & c.DEVICE_LOCAL


def test_unified_devices_keep_gpu_data_where_the_host_reads_it_cached():
    for name in ("integrated", "mobile"):
        gpu = first(get_profile(name).table, "gpu")
        assert gpu.flags & c.DEVICE_LOCAL and gpu.flags & c.HOST_VISIBLE
        assert gpu.flags & c.HOST_CACHED
    # a discrete GPU keeps it out of the host's reach (and out of the BAR window)
    assert first(get_profile("discrete").table, "gpu").flags == c.DEVICE_LOCAL


def test_mobile_readback_is_cached_and_not_coherent():
    t = get_profile("mobile").table
    readback = first(t, "readback")
    assert readback.flags & c.HOST_CACHED and not readback.flags & c.HOST_COHERENT
    # the lazily allocated type (transient attachments) is never chosen
    for memory_class in c.MEMORY_CLASSES:
        assert not first(t, memory_class).flags & c.LAZILY_ALLOCATED


def test_scores_are_lexicographic_not_all_or_nothing():
    # no type has every preferred flag: the one with the first preference wins
    t = c.MemoryTable(
        (
            c.MemoryType(c.HOST_VISIBLE | c.HOST_COHERENT, 0),
            c.MemoryType(c.HOST_VISIBLE | c.HOST_CACHED, 0),
        ),
        (c.MemoryHeap(2**30),),
    )
    assert first(t, "readback") == t.types[1]
    assert first(t, "staging") == t.types[0]
    # the allowed bits are respected
    assert c.ranked_types(t, 0b01, c.rule("readback", t)) == [0]
    assert c.ranked_types(t, 0, c.rule("readback", t)) == []


def test_a_type_without_a_required_flag_is_never_ranked():
    t = get_profile("discrete").table
    for memory_class in ("dynamic", "readback", "staging"):
        for i in c.ranked_types(t, t.all_types, c.rule(memory_class, t)):
            assert t.types[i].flags & c.HOST_VISIBLE


def test_flag_names_and_descriptions():
    assert c.flag_names(0) == "0"
    assert c.flag_names(c.DEVICE_LOCAL | c.HOST_CACHED) == "DEVICE_LOCAL|HOST_CACHED"
    text = c.describe_types(get_profile("discrete").table, [4])
    assert text == "#4 DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT (heap 2, 214 MiB)"


def test_block_sizes_follow_the_heap():
    assert block_size(224395264) == 224395264 // 8  # a small heap: an eighth
    assert block_size(2**33) == 64 * 2**20


def test_first_fit_placement_aligns_and_merges_free_ranges():
    b = Block(None, 0, 0, 1024, "buffer", False)
    a = b.place(100, 1)
    assert a == 0
    x = b.place(100, 256)
    assert x == 256  # aligned; [100, 256) stays free
    y = b.place(50, 4)
    assert y == 100  # first fit uses the gap
    assert b.place(2000, 1) is None
    b.give_back(x, 100)
    b.give_back(a, 100)
    b.give_back(y, 50)
    assert b.free == [[0, 1024]] and b.empty


def test_placement_never_overlaps():
    rng = random.Random(1)
    b = Block(None, 0, 0, 1 << 16, "buffer", False)
    live: dict[int, int] = {}
    for _ in range(2000):
        if live and rng.random() < 0.45:
            offset = rng.choice(list(live))
            b.give_back(offset, live.pop(offset))
        else:
            size, align = rng.randint(1, 3000), 1 << rng.randint(0, 8)
            offset = b.place(size, align)
            if offset is not None:
                assert offset % align == 0
                live[offset] = size
        spans = sorted(live.items())
        for (o1, s1), (o2, _) in itertools.pairwise(spans):
            assert o1 + s1 <= o2
        assert b.used == sum(live.values())
        assert sum(s for _, s in b.free) == b.size - b.used
