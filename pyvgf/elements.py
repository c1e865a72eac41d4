"""The element types pyvgf knows, stated once: numpy dtype, TOSA name, MLIR name, SPIR-V
encoding, VkFormat(s) and size.

Every layer looks element types up here: format (a resource's VkFormat -> numpy dtype), spirv
(OpTypeInt / OpTypeFloat -> numpy dtype), build (numpy dtype -> MLIR, SPIR-V and VkFormat), hal
(element sizes), testing and tools. The VkFormat values and names come from the generated
`vknames.py` (tools/gen_vknames.py, from the Khronos registry).

bfloat16 and the fp8 types are ml_dtypes' numpy dtypes; ml_dtypes is imported the first time
one of them is asked for (`ElementType.dtype`), never when this module is imported.

**A resource's format and its graph tensor's element type** (`format_carries`): a VGF resource
or a Vulkan tensor of VkFormat F carries a graph tensor of element type T when F is T's own
format, or when both are integers of the same width that differ only in signedness. SPIR-V
integer types used by graphs have no signedness (OpTypeInt's signedness operand is 0) and TOSA
1.0 has only signed integer tensors; unsigned values exist only as RESCALE's `input_unsigned` /
`output_unsigned` reading of int8 / int16 bits, and Arm's model-converter then describes the
resource as R8_UINT / R16_UINT. Vulkan copies the bits either way. Anything else (an integer in
a float format, float16 in a bfloat16 format, a width mismatch) is a real mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import vknames


class SpirvType(NamedTuple):
    """How SPIR-V spells an element type: OpTypeBool, OpTypeInt width, or OpTypeFloat width
    with its FP encoding (None: IEEE; else the FPEncoding operand's enumerant name and value)."""

    kind: str
    """"bool", "int" or "float"."""
    width: int = 0
    encoding: str | None = None
    encoding_value: int | None = None


@dataclass(frozen=True)
class ElementType:
    """One row of the table."""

    tosa: str
    """The TOSA name (INT8, FP32, BOOL, ...; UINT8/UINT16 for RESCALE's unsigned reading)."""
    mlir: str
    """The MLIR element type (i8, f32, i1, bf16, ui8, ...)."""
    numpy_name: str
    """numpy's name of the dtype that holds one element (bfloat16 and fp8: ml_dtypes')."""
    spirv: SpirvType
    formats: tuple[str, ...]
    """The VkFormat names (without VK_FORMAT_) of resources of this type; the first is the one
    pyvgf writes, an empty tuple: no resource of this type can cross the graph interface."""
    size: int
    """Bytes per element in memory."""
    _dtype: list = field(default_factory=list, compare=False, repr=False)

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype (ml_dtypes' for bfloat16 and fp8, imported on first use)."""
        if not self._dtype:
            if hasattr(np, self.numpy_name):
                self._dtype.append(np.dtype(self.numpy_name))
            else:
                import ml_dtypes

                self._dtype.append(np.dtype(getattr(ml_dtypes, self.numpy_name)))
        return self._dtype[0]

    @property
    def raw(self) -> np.dtype:
        """A plain numpy dtype for the bits: uint of the same size for ml_dtypes' types (what
        tools that know only numpy, such as tosa_reference_model, exchange), else `dtype`."""
        return self.dtype if hasattr(np, self.numpy_name) else np.dtype(f"u{self.size}")

    @property
    def vk_format(self) -> int | None:
        """The VkFormat value pyvgf writes for a resource of this type (None: none)."""
        return FORMAT_VALUES[self.formats[0]] if self.formats else None

    @property
    def is_float(self) -> bool:
        return self.spirv.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.spirv.kind == "int"


_BF16 = ("BFloat16KHR", 0)
_F8E4M3 = ("Float8E4M3EXT", 4214)
_F8E5M2 = ("Float8E5M2EXT", 4215)

TABLE: tuple[ElementType, ...] = (
    ElementType("BOOL", "i1", "bool", SpirvType("bool"), ("R8_BOOL_ARM",), 1),
    ElementType("INT8", "i8", "int8", SpirvType("int", 8), ("R8_SINT",), 1),
    ElementType("INT16", "i16", "int16", SpirvType("int", 16), ("R16_SINT",), 2),
    ElementType("INT32", "i32", "int32", SpirvType("int", 32), ("R32_SINT",), 4),
    ElementType("INT48", "i48", "int64", SpirvType("int", 64), ("R64_SINT",), 8),
    ElementType("INT64", "i64", "int64", SpirvType("int", 64), ("R64_SINT",), 8),
    ElementType("UINT8", "ui8", "uint8", SpirvType("int", 8), ("R8_UINT",), 1),
    ElementType("UINT16", "ui16", "uint16", SpirvType("int", 16), ("R16_UINT",), 2),
    ElementType("UINT32", "ui32", "uint32", SpirvType("int", 32), ("R32_UINT",), 4),
    ElementType("UINT64", "ui64", "uint64", SpirvType("int", 64), ("R64_UINT",), 8),
    ElementType("FP16", "f16", "float16", SpirvType("float", 16), ("R16_SFLOAT",), 2),
    ElementType("BF16", "bf16", "bfloat16", SpirvType("float", 16, *_BF16),
                ("R16_SFLOAT_FPENCODING_BFLOAT16_ARM",), 2),
    ElementType("FP32", "f32", "float32", SpirvType("float", 32), ("R32_SFLOAT",), 4),
    ElementType("FP64", "f64", "float64", SpirvType("float", 64), ("R64_SFLOAT",), 8),
    ElementType("FP8E4M3", "f8E4M3FN", "float8_e4m3fn", SpirvType("float", 8, *_F8E4M3),
                ("R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM",), 1),
    ElementType("FP8E5M2", "f8E5M2", "float8_e5m2", SpirvType("float", 8, *_F8E5M2),
                ("R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM",), 1),
)
"""Every element type. INT48 (the accumulator of int16 convolutions) is held in int64 arrays,
written as a 64-bit integer in SPIR-V and R64_SINT in VGF, as model-converter does; it shares
those with INT64, which therefore wins the reverse look-ups (by dtype, format, SPIR-V)."""

_VK_NAMES = {name[len("VK_FORMAT_"):]: value for value, name in vknames.FORMAT.items()}
FORMAT_VALUES: dict[str, int] = {
    name: _VK_NAMES[name] for row in TABLE for name in row.formats
}
"""VkFormat name (without VK_FORMAT_) -> value, for every format of the table (from vk.xml)."""

BY_TOSA = {row.tosa: row for row in TABLE}
BY_MLIR = {row.mlir: row for row in TABLE}
_BY_NUMPY = {row.numpy_name: row for row in TABLE if row.tosa != "INT48"}
_BY_FORMAT = {FORMAT_VALUES[name]: row for row in TABLE if row.tosa != "INT48" for name in row.formats}
_BY_SPIRV = {(row.spirv.kind, row.spirv.width, row.spirv.encoding_value): row
             for row in TABLE if not row.tosa.startswith(("UINT", "INT48"))}


def by_dtype(dtype: object) -> ElementType:
    """The row of a numpy dtype (or anything np.dtype takes); KeyError when none."""
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise KeyError(dtype) from None
    return _BY_NUMPY[name]


def by_format(vk_format: int) -> ElementType:
    """The row of a VkFormat value; KeyError when pyvgf has no element type for it."""
    return _BY_FORMAT[int(vk_format)]


def by_spirv(kind: str, width: int = 0, encoding_value: int | None = None) -> ElementType:
    """The row of a SPIR-V scalar type (integers read as signed); KeyError when none."""
    return _BY_SPIRV[(kind, width, encoding_value)]


def raw_view(array: np.ndarray) -> np.ndarray:
    """`array` viewed as its `ElementType.raw` dtype (bfloat16/fp8 as uint bits), else as is."""
    array = np.ascontiguousarray(array)
    try:
        return array.view(by_dtype(array.dtype).raw)
    except KeyError:
        return array


def canonical(array: np.ndarray) -> np.ndarray:
    """`array` with bool elements as numpy's 0 / 1 bytes: a bool tensor's memory (a file's
    constant, Vulkan's R8_BOOL_ARM) may hold any non-zero byte for true, and numpy's logical
    reductions on such bytes give them back unchanged. Other arrays are returned as they are."""
    if array.dtype != np.bool_:
        return array
    return array.view(np.uint8).astype(np.bool_)


def format_name(vk_format: int) -> str:
    """The VkFormat's Vulkan name (VK_FORMAT_...), or its number when vk.xml has none."""
    return vknames.FORMAT.get(int(vk_format), str(vk_format))


def format_carries(vk_format: int, dtype: np.dtype) -> bool:
    """Whether a resource of `vk_format` carries a graph tensor of `dtype` (the rule in the
    module docstring: the same element type, or integers of one width differing in sign)."""
    try:
        held = by_format(vk_format)
        graph = by_dtype(dtype)
    except KeyError:
        return False
    if held is graph:
        return True
    return held.is_int and graph.is_int and held.size == graph.size
