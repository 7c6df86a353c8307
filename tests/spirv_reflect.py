"""A small SPIR-V reader: a module's interface, read from its binary words.

Enough of the SPIR-V specification to check vkdqs's shader interface without any tool: the
entry point's stage, descriptor bindings and their Vulkan descriptor types, block member offsets
and sizes, array strides, non-built-in inputs, specialization-constant ids, the workgroup size
and the push-constant block. A module is a 5-word header, then instructions whose first word is
``word_count << 16 | opcode``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MAGIC = 0x07230203

# opcodes
OP_ENTRY_POINT = 15
OP_EXECUTION_MODE = 16
OP_TYPE_BOOL = 20
OP_TYPE_INT = 21
OP_TYPE_FLOAT = 22
OP_TYPE_VECTOR = 23
OP_TYPE_MATRIX = 24
OP_TYPE_IMAGE = 25
OP_TYPE_SAMPLED_IMAGE = 27
OP_TYPE_ARRAY = 28
OP_TYPE_RUNTIME_ARRAY = 29
OP_TYPE_STRUCT = 30
OP_TYPE_POINTER = 32
OP_CONSTANT = 43
OP_CONSTANT_COMPOSITE = 44
OP_SPEC_CONSTANT = 50
OP_SPEC_CONSTANT_COMPOSITE = 51
OP_VARIABLE = 59
OP_DECORATE = 71
OP_MEMBER_DECORATE = 72
OP_EXECUTION_MODE_ID = 331
_TYPES = range(19, 40)  # OpTypeVoid .. OpTypeNamedBarrier: the result id is operand 0
_VALUES = (
    OP_CONSTANT,
    OP_CONSTANT_COMPOSITE,
    OP_SPEC_CONSTANT,
    OP_SPEC_CONSTANT_COMPOSITE,
    OP_VARIABLE,
)

# decorations
SPEC_ID = 1
BLOCK = 2
BUFFER_BLOCK = 3
ARRAY_STRIDE = 6
MATRIX_STRIDE = 7
BUILT_IN = 11
LOCATION = 30
BINDING = 33
DESCRIPTOR_SET = 34
OFFSET = 35

# storage classes
UNIFORM_CONSTANT = 0
INPUT = 1
UNIFORM = 2
PUSH_CONSTANT = 9
STORAGE_BUFFER = 12

DIM_BUFFER = 5
BUILT_IN_WORKGROUP_SIZE = 25
MODE_LOCAL_SIZE_ID = 38
#: execution model -> the ``VkShaderStageFlagBits`` name (without VK_SHADER_STAGE_ and _BIT)
STAGES = {0: "VERTEX", 4: "FRAGMENT", 5: "COMPUTE"}


def words_of(data: bytes) -> tuple[int, ...]:
    """A module's words, in either byte order (checked against the magic number)."""
    if len(data) < 20 or len(data) % 4:
        raise ValueError("not a SPIR-V module: too short or not whole words")
    order = "<" if struct.unpack_from("<I", data)[0] == MAGIC else ">"
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    if words[0] != MAGIC:
        raise ValueError(f"not a SPIR-V module: magic {words[0]:#010x}")
    return words


def instructions(words: Sequence[int]) -> Iterator[tuple[int, int, tuple[int, ...]]]:
    """(word index, opcode, operands) of each instruction after the 5-word header."""
    i = 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise ValueError(f"truncated or malformed instruction at word {i}")
        yield i, opcode, tuple(words[i + 1 : i + count])
        i += count


@dataclass(frozen=True)
class Member:
    """One member of a block: byte offset, size of its data and scalar kind."""

    offset: int
    size: int
    scalar: str  # "float", "int", "uint" or "bool"


@dataclass(frozen=True)
class Descriptor:
    """One descriptor variable: set, binding, ``VkDescriptorType`` name and its pointee type."""

    set: int
    binding: int
    type: str  # e.g. "UNIFORM_BUFFER", the VK_DESCRIPTOR_TYPE_ suffix
    type_id: int  # the block struct or the image type


class Module:
    """The parsed words of one SPIR-V module with one entry point."""

    def __init__(self, data: bytes) -> None:
        words = words_of(data)
        self.defs: dict[int, tuple[int, tuple[int, ...]]] = {}  # result id -> (opcode, operands)
        self.decorations: dict[int, dict[int, tuple[int, ...]]] = {}
        self.member_decorations: dict[tuple[int, int], dict[int, tuple[int, ...]]] = {}
        self.variables: list[tuple[int, int, int]] = []  # (id, pointer type, storage class)
        self.entry_points: list[tuple[int, int]] = []  # (execution model, function id)
        self.modes: list[tuple[int, int, tuple[int, ...]]] = []  # (opcode, mode, operands)
        for _, opcode, operands in instructions(words):
            self._read(opcode, operands)

    @classmethod
    def from_file(cls, path: str | Path) -> Module:
        return cls(Path(path).read_bytes())

    def _read(self, opcode: int, a: tuple[int, ...]) -> None:
        if opcode in _TYPES:
            self.defs[a[0]] = (opcode, a)
        elif opcode in _VALUES:
            self.defs[a[1]] = (opcode, a)
            if opcode == OP_VARIABLE:
                self.variables.append((a[1], a[0], a[2]))
        elif opcode == OP_DECORATE:
            self.decorations.setdefault(a[0], {})[a[1]] = a[2:]
        elif opcode == OP_MEMBER_DECORATE:
            self.member_decorations.setdefault((a[0], a[1]), {})[a[2]] = a[3:]
        elif opcode == OP_ENTRY_POINT:
            self.entry_points.append((a[0], a[1]))
        elif opcode in (OP_EXECUTION_MODE, OP_EXECUTION_MODE_ID):
            self.modes.append((opcode, a[1], a[2:]))

    # -- types ------------------------------------------------------------------------------

    def decoration(self, id_: int, decoration: int) -> tuple[int, ...] | None:
        """The operands of a decoration of ``id_``, or None when it is not decorated so."""
        return self.decorations.get(id_, {}).get(decoration)

    def pointee(self, pointer_type: int) -> int:
        return self.defs[pointer_type][1][2]

    def scalar(self, type_id: int) -> str:
        """The scalar kind of a scalar, vector, matrix or array type."""
        op, a = self.defs[type_id]
        if op in (OP_TYPE_VECTOR, OP_TYPE_MATRIX, OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY):
            return self.scalar(a[1])
        if op == OP_TYPE_INT:
            return "int" if a[2] else "uint"
        if op == OP_TYPE_FLOAT:
            return "float"
        if op == OP_TYPE_BOOL:
            return "bool"
        raise ValueError(f"%{type_id} (opcode {op}) has no scalar kind")

    def constant(self, id_: int) -> int:
        """The value of a 32-bit OpConstant, or the default of an OpSpecConstant."""
        op, a = self.defs[id_]
        if op not in (OP_CONSTANT, OP_SPEC_CONSTANT):
            raise ValueError(f"%{id_} is not a scalar constant")
        return a[2]

    def size_of(self, type_id: int, matrix_stride: int | None = None) -> int:
        """Bytes of data in an explicitly laid-out type (a struct: its last member's end)."""
        op, a = self.defs[type_id]
        if op in (OP_TYPE_INT, OP_TYPE_FLOAT):
            return a[1] // 8
        if op == OP_TYPE_VECTOR:
            return a[2] * self.size_of(a[1])
        if op == OP_TYPE_MATRIX:
            return a[2] * (matrix_stride or self.size_of(a[1]))
        if op == OP_TYPE_ARRAY:
            return self.constant(a[2]) * self.decoration(type_id, ARRAY_STRIDE)[0]
        if op == OP_TYPE_RUNTIME_ARRAY:
            return 0
        if op == OP_TYPE_STRUCT:
            return max((m.offset + m.size for m in self.members(type_id)), default=0)
        raise ValueError(f"%{type_id} (opcode {op}) has no explicit layout")

    def members(self, struct_id: int) -> list[Member]:
        """The members of a block, from their Offset (and MatrixStride) decorations."""
        op, a = self.defs[struct_id]
        if op != OP_TYPE_STRUCT:
            raise ValueError(f"%{struct_id} is not a struct")
        out = []
        for index, member_type in enumerate(a[1:]):
            dec = self.member_decorations.get((struct_id, index), {})
            stride = dec.get(MATRIX_STRIDE, (None,))[0]
            size = self.size_of(member_type, stride)
            out.append(Member(dec[OFFSET][0], size, self.scalar(member_type)))
        return out

    def member_array(self, struct_id: int, index: int = 0) -> tuple[int, int | None]:
        """(ArrayStride, SpecId of its length or None) of a block member's array type."""
        array = self.defs[struct_id][1][1 + index]
        op, a = self.defs[array]
        if op != OP_TYPE_ARRAY:
            raise ValueError(f"member {index} of %{struct_id} is not a sized array")
        spec = self.decoration(a[2], SPEC_ID)
        return self.decoration(array, ARRAY_STRIDE)[0], spec[0] if spec else None

    def image(self, type_id: int) -> tuple[str, int, int, int]:
        """(sampled scalar kind, Dim, Sampled, Image Format) of an image or sampled image type."""
        op, a = self.defs[type_id]
        if op == OP_TYPE_SAMPLED_IMAGE:
            op, a = self.defs[a[1]]
        if op != OP_TYPE_IMAGE:
            raise ValueError(f"%{type_id} is not an image")
        return self.scalar(a[1]), a[2], a[6], a[7]

    # -- the interface ----------------------------------------------------------------------

    @property
    def stage(self) -> str:
        """The entry point's stage, e.g. "VERTEX"."""
        if len(self.entry_points) != 1:
            raise ValueError(f"expected one entry point, found {len(self.entry_points)}")
        return STAGES[self.entry_points[0][0]]

    def descriptor_type(self, storage: int, type_id: int) -> str:
        """The ``VkDescriptorType`` a variable of this storage class and type needs."""
        op = self.defs[type_id][0]
        if storage == UNIFORM_CONSTANT and op in (OP_TYPE_IMAGE, OP_TYPE_SAMPLED_IMAGE):
            _, dim, sampled, _ = self.image(type_id)
            if dim == DIM_BUFFER and sampled in (1, 2):
                return ("UNIFORM_TEXEL_BUFFER", "STORAGE_TEXEL_BUFFER")[sampled - 1]
            if op == OP_TYPE_SAMPLED_IMAGE and sampled == 1:
                return "COMBINED_IMAGE_SAMPLER"
        if op == OP_TYPE_STRUCT:
            block = self.decoration(type_id, BLOCK) is not None
            if storage == UNIFORM and block:
                return "UNIFORM_BUFFER"
            buffer_block = self.decoration(type_id, BUFFER_BLOCK) is not None
            if (storage == UNIFORM and buffer_block) or (storage == STORAGE_BUFFER and block):
                return "STORAGE_BUFFER"
        raise ValueError(f"unsupported descriptor: storage class {storage}, type %{type_id}")

    def descriptors(self) -> dict[tuple[int, int], Descriptor]:
        """Every descriptor variable, by (set, binding)."""
        out = {}
        for id_, pointer, storage in self.variables:
            if storage not in (UNIFORM_CONSTANT, UNIFORM, STORAGE_BUFFER):
                continue
            set_, binding = self.decoration(id_, DESCRIPTOR_SET), self.decoration(id_, BINDING)
            if set_ is None or binding is None:
                raise ValueError(f"descriptor variable %{id_} lacks DescriptorSet or Binding")
            type_id = self.pointee(pointer)
            kind = self.descriptor_type(storage, type_id)
            if (set_[0], binding[0]) in out:
                raise ValueError(f"two variables at set {set_[0]} binding {binding[0]}")
            out[set_[0], binding[0]] = Descriptor(set_[0], binding[0], kind, type_id)
        return out

    def inputs(self) -> dict[int, tuple[str, int, int]]:
        """Non-built-in Input variables: location -> (scalar kind, components, bit width)."""
        out = {}
        for id_, pointer, storage in self.variables:
            if storage != INPUT or self.decoration(id_, BUILT_IN) is not None:
                continue
            type_id = self.pointee(pointer)
            op, a = self.defs[type_id]
            if op == OP_TYPE_STRUCT and any(
                BUILT_IN in self.member_decorations.get((type_id, m), {}) for m in range(len(a) - 1)
            ):
                continue  # a gl_PerVertex block
            if op not in (OP_TYPE_INT, OP_TYPE_FLOAT, OP_TYPE_VECTOR):
                raise ValueError(f"input %{id_}: only scalars and vectors are read (opcode {op})")
            components, component = (a[2], a[1]) if op == OP_TYPE_VECTOR else (1, type_id)
            width = self.defs[component][1][1]
            out[self.decoration(id_, LOCATION)[0]] = (self.scalar(type_id), components, width)
        return out

    def spec_ids(self) -> dict[int, int]:
        """SpecId -> the id of the constant it decorates."""
        return {dec[SPEC_ID][0]: id_ for id_, dec in self.decorations.items() if SPEC_ID in dec}

    def workgroup_size_spec_ids(self) -> tuple[int | None, ...]:
        """SpecId of each workgroup size component (None where it is a literal)."""
        # The WorkgroupSize built-in wins over any LocalSize(Id) execution mode.
        sizes = [
            self.defs[i][1][2:]
            for i, dec in self.decorations.items()
            if dec.get(BUILT_IN) == (BUILT_IN_WORKGROUP_SIZE,)
        ]
        sizes += [
            ids
            for op, mode, ids in self.modes
            if op == OP_EXECUTION_MODE_ID and mode == MODE_LOCAL_SIZE_ID
        ]
        if not sizes:
            return (None, None, None)  # literal LocalSize
        return tuple((self.decoration(c, SPEC_ID) or (None,))[0] for c in sizes[0])

    def push_constant_size(self) -> int | None:
        """Bytes of the push-constant block (its last member's end), None if there is none."""
        sizes = [self.size_of(self.pointee(p)) for _, p, s in self.variables if s == PUSH_CONSTANT]
        if len(sizes) > 1:
            raise ValueError("more than one push-constant block")
        return sizes[0] if sizes else None
