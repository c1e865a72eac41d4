"""ExecuTorch's program FlatBuffer ("ET12") as `pyvgf.format.flatbuffers` tables.

Declared slot by slot after ExecuTorch 1.5.1's schema/program.fbs and scalar_type.fbs (a union
takes two slots: its type tag, then its value). Fields pyvgf does not use (stack traces,
container metadata, device placement) are left out: absent slots are never read. The extended
header is a fixed struct in front of the FlatBuffer's data. See spec/executorch.md.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
from construct import Bytes, Int32ul, Int64ul, Struct

from ..format.flatbuffers import Field, Scalar, String, Union, Vector, u8, u32
from ..format.flatbuffers import Table as _Table

FILE_IDENTIFIER = b"ET12"
"""Bytes 4-7 of every program."""

EXTENDED_HEADER_MAGIC = b"eh00"
"""Bytes 8-11 of a program with an extended header."""

EXTENDED_HEADER_MIN = 24
"""magic, length, program size, segment base offset; the segment data size follows from 32 bytes on."""

ExtendedHeader = Struct(
    "magic" / Bytes(4),
    "length" / Int32ul,  # bytes of this header
    "program_size" / Int64ul,  # bytes of the FlatBuffer data, this header included
    "segment_base_offset" / Int64ul,  # where segment offsets count from; 0 without segments
    "segment_data_size" / Int64ul,  # present when length >= 32
)



def Table(name: str, *items: Field | Union) -> _Table:
    """A table of ExecuTorch's schema: its vtables may declare too small a table size (seen in
    1.5.1's programs for tables holding a double), so fields are bounded by the section only."""
    return _Table(name, *items, sized=False)


i8 = Scalar("b")
i32 = Scalar("i")
u64 = Scalar("Q")
i64 = Scalar("q")
f64 = Scalar("d")


class ScalarType(IntEnum):
    """scalar_type.fbs's ScalarType (the element type of a tensor)."""

    BYTE = 0
    CHAR = 1
    SHORT = 2
    INT = 3
    LONG = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    QUINT4X2 = 16
    QUINT2X4 = 17
    BITS16 = 22
    FLOAT8E5M2 = 23
    FLOAT8E4M3FN = 24
    FLOAT8E5M2FNUZ = 25
    FLOAT8E4M3FNUZ = 26
    UINT16 = 27
    UINT32 = 28
    UINT64 = 29


DTYPES: dict[ScalarType, np.dtype] = {
    ScalarType.BYTE: np.dtype(np.uint8),
    ScalarType.CHAR: np.dtype(np.int8),
    ScalarType.SHORT: np.dtype(np.int16),
    ScalarType.INT: np.dtype(np.int32),
    ScalarType.LONG: np.dtype(np.int64),
    ScalarType.HALF: np.dtype(np.float16),
    ScalarType.FLOAT: np.dtype(np.float32),
    ScalarType.DOUBLE: np.dtype(np.float64),
    ScalarType.BOOL: np.dtype(np.bool_),
    ScalarType.UINT16: np.dtype(np.uint16),
    ScalarType.UINT32: np.dtype(np.uint32),
    ScalarType.UINT64: np.dtype(np.uint64),
}
"""The element types pyvgf runs, as numpy dtypes; the others are read and named, not run."""

# --- values ----------------------------------------------------------------------------------

Null = Table("Null")

AllocationDetails = Table(
    "AllocationDetails",
    Field(0, "memory_id", u32, 0),
    Field(1, "memory_offset_low", u32, 0),
    Field(2, "memory_offset_high", u32, 0),
)

ExtraTensorInfo = Table(
    "ExtraTensorInfo",
    Field(0, "mutable_data_segments_idx", u64, 0),
    Field(1, "fully_qualified_name", String()),
    Field(2, "location", i8, 0),  # TensorDataLocation: 0 SEGMENT, 1 EXTERNAL
)

Tensor = Table(
    "Tensor",
    Field(0, "scalar_type", i8, 0),
    Field(1, "storage_offset", i32, 0),
    Field(2, "sizes", Vector(i32)),
    Field(3, "dim_order", Vector(u8)),
    Field(4, "requires_grad", u8, 0),
    Field(5, "data_buffer_idx", u32, 0),
    Field(6, "allocation_info", AllocationDetails),
    Field(7, "layout", i8, 0),
    Field(8, "shape_dynamism", i8, 0),  # 0 STATIC, 1 DYNAMIC_BOUND, 2 DYNAMIC_UNBOUND
    Field(9, "extra_tensor_info", ExtraTensorInfo),
)

Int = Table("Int", Field(0, "int_val", i64, 0))
Bool = Table("Bool", Field(0, "bool_val", u8, 0))
Double = Table("Double", Field(0, "double_val", f64, 0.0))
StringValue = Table("String", Field(0, "string_val", String()))
IntList = Table("IntList", Field(0, "items", Vector(i64)))
DoubleList = Table("DoubleList", Field(0, "items", Vector(f64)))
BoolList = Table("BoolList", Field(0, "items", Vector(u8)))
TensorList = Table("TensorList", Field(0, "items", Vector(i32)))
OptionalTensorList = Table("OptionalTensorList", Field(0, "items", Vector(i32)))


class KernelTypes(IntEnum):
    """The KernelTypes union's tags (0 is NONE)."""

    NULL = 1
    INT = 2
    BOOL = 3
    DOUBLE = 4
    TENSOR = 5
    STRING = 6
    INT_LIST = 7
    DOUBLE_LIST = 8
    BOOL_LIST = 9
    TENSOR_LIST = 10
    OPTIONAL_TENSOR_LIST = 11


EValue = Table(
    "EValue",
    Union(0, "val", {
        KernelTypes.NULL: Null,
        KernelTypes.INT: Int,
        KernelTypes.BOOL: Bool,
        KernelTypes.DOUBLE: Double,
        KernelTypes.TENSOR: Tensor,
        KernelTypes.STRING: StringValue,
        KernelTypes.INT_LIST: IntList,
        KernelTypes.DOUBLE_LIST: DoubleList,
        KernelTypes.BOOL_LIST: BoolList,
        KernelTypes.TENSOR_LIST: TensorList,
        KernelTypes.OPTIONAL_TENSOR_LIST: OptionalTensorList,
    }),
)

# --- instructions ----------------------------------------------------------------------------

Operator = Table("Operator", Field(0, "name", String()), Field(1, "overload", String()))
KernelCall = Table("KernelCall", Field(0, "op_index", i32, 0), Field(1, "args", Vector(i32)))
DelegateCall = Table("DelegateCall", Field(0, "delegate_index", i32, 0), Field(1, "args", Vector(i32)))
MoveCall = Table("MoveCall", Field(0, "move_from", i32, 0), Field(1, "move_to", i32, 0))
JumpFalseCall = Table("JumpFalseCall", Field(0, "cond_value_index", i32, 0),
                      Field(1, "destination_instruction", i32, 0))
FreeCall = Table("FreeCall", Field(0, "value_index", i32, 0))


class InstructionKind(IntEnum):
    """The InstructionArguments union's tags."""

    KERNEL_CALL = 1
    DELEGATE_CALL = 2
    MOVE_CALL = 3
    JUMP_FALSE_CALL = 4
    FREE_CALL = 5


Instruction = Table(
    "Instruction",
    Union(0, "instr_args", {
        InstructionKind.KERNEL_CALL: KernelCall,
        InstructionKind.DELEGATE_CALL: DelegateCall,
        InstructionKind.MOVE_CALL: MoveCall,
        InstructionKind.JUMP_FALSE_CALL: JumpFalseCall,
        InstructionKind.FREE_CALL: FreeCall,
    }),
)

Chain = Table(
    "Chain",
    Field(0, "inputs", Vector(i32)),
    Field(1, "outputs", Vector(i32)),
    Field(2, "instructions", Vector(Instruction)),
    # slot 3: stacktrace (not read)
)

# --- delegates -------------------------------------------------------------------------------

DATA_INLINE, DATA_SEGMENT = 0, 1
"""BackendDelegateDataReference.location: Program.backend_delegate_data or Program.segments."""

BackendDelegateDataReference = Table(
    "BackendDelegateDataReference",
    Field(0, "location", i8, DATA_INLINE),
    Field(1, "index", u32, 0),
)
CompileSpec = Table("CompileSpec", Field(0, "key", String()), Field(1, "value", Vector(u8)))
BackendDelegate = Table(
    "BackendDelegate",
    Field(0, "id", String()),
    Field(1, "processed", BackendDelegateDataReference),
    Field(2, "compile_specs", Vector(CompileSpec)),
)

ContainerMetadata = Table(
    "ContainerMetadata",
    Field(0, "encoded_inp_str", String()),  # torch pytree spec of (args, kwargs), as JSON
    Field(1, "encoded_out_str", String()),
)

ExecutionPlan = Table(
    "ExecutionPlan",
    Field(0, "name", String()),
    Field(1, "container_meta_type", ContainerMetadata),
    Field(2, "values", Vector(EValue)),
    Field(3, "inputs", Vector(i32)),
    Field(4, "outputs", Vector(i32)),
    Field(5, "chains", Vector(Chain)),
    Field(6, "operators", Vector(Operator)),
    Field(7, "delegates", Vector(BackendDelegate)),
    Field(8, "non_const_buffer_sizes", Vector(i64)),
)

# --- data ------------------------------------------------------------------------------------

Buffer = Table("Buffer", Field(0, "storage", Vector(u8, raw=True)))
BackendDelegateInlineData = Table("BackendDelegateInlineData", Field(0, "data", Vector(u8, raw=True)))
DataSegment = Table("DataSegment", Field(0, "offset", u64, 0), Field(1, "size", u64, 0))
SubsegmentOffsets = Table("SubsegmentOffsets", Field(0, "segment_index", u32, 0), Field(1, "offsets", Vector(u64)))
NamedData = Table("NamedData", Field(0, "key", String()), Field(1, "segment_index", u32, 0))

Program = Table(
    "Program",
    Field(0, "version", u32, 0),
    Field(1, "execution_plan", Vector(ExecutionPlan)),
    Field(2, "constant_buffer", Vector(Buffer)),
    Field(3, "backend_delegate_data", Vector(BackendDelegateInlineData)),
    Field(4, "segments", Vector(DataSegment)),
    Field(5, "constant_segment", SubsegmentOffsets),
    Field(6, "mutable_data_segments", Vector(SubsegmentOffsets)),
    Field(7, "named_data", Vector(NamedData)),
)
