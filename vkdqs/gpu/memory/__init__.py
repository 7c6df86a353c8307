"""Device memory: usage classes and type choice (:mod:`.classes`), sub-allocation in blocks
(:mod:`.allocator`), buffers (:mod:`.buffer`), staging copies (:mod:`.transfer`) and the memory
profiles that make lavapipe behave like real devices (:mod:`.profiles`). docs/memory.md says
what goes where on which kind of device, and why."""

from .buffer import Buffer, BufferView, texel_buffer
from .classes import MEMORY_CLASSES, MemoryClass, MemoryHeap, MemoryTable, MemoryType
from .profiles import MemoryProfile, get_profile, memory_profiles
from .transfer import batched_uploads, record_copies

__all__ = [
    "MEMORY_CLASSES",
    "Buffer",
    "BufferView",
    "MemoryClass",
    "MemoryHeap",
    "MemoryProfile",
    "MemoryTable",
    "MemoryType",
    "batched_uploads",
    "get_profile",
    "memory_profiles",
    "record_copies",
    "texel_buffer",
]
