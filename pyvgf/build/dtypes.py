"""The element types a built graph can use, and how each is spelled in MLIR, SPIR-V and VGF."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import TosaError
from ..format.model import Format


@dataclass(frozen=True)
class ElementType:
    dtype: np.dtype
    mlir: str
    """The MLIR element type (f32, i8, i1, bf16, ...)."""
    spirv: tuple
    """("bool",), ("int", width) or ("float", width, fp_encoding or None)."""
    vk_format: Format | None
    """The VkFormat of a VGF resource of this type; None: cannot cross the graph interface."""



@functools.cache
def _table() -> tuple[ElementType, ...]:
    """The element types, built on first use (ml_dtypes loads then, not at import)."""
    import ml_dtypes

    return (
        ElementType(np.dtype(np.float32), "f32", ("float", 32, None), Format.R32_SFLOAT),
        ElementType(np.dtype(np.float16), "f16", ("float", 16, None), Format.R16_SFLOAT),
        ElementType(
            np.dtype(ml_dtypes.bfloat16), "bf16", ("float", 16, "BFloat16KHR"),
            Format.R16_SFLOAT_FPENCODING_BFLOAT16_ARM,
        ),
        ElementType(
            np.dtype(ml_dtypes.float8_e4m3fn), "f8E4M3FN", ("float", 8, "Float8E4M3EXT"),
            Format.R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM,
        ),
        ElementType(
            np.dtype(ml_dtypes.float8_e5m2), "f8E5M2", ("float", 8, "Float8E5M2EXT"),
            Format.R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM,
        ),
        ElementType(np.dtype(np.int8), "i8", ("int", 8), Format.R8_SINT),
        ElementType(np.dtype(np.int16), "i16", ("int", 16), Format.R16_SINT),
        ElementType(np.dtype(np.int32), "i32", ("int", 32), Format.R32_SINT),
        ElementType(np.dtype(np.bool_), "i1", ("bool",), Format.R8_BOOL_ARM),
    )


@functools.cache
def _by_name() -> dict[str, ElementType]:
    return {t.mlir: t for t in _table()} | {str(t.dtype): t for t in _table()}


@functools.cache
def _by_dtype() -> dict[np.dtype, ElementType]:
    return {t.dtype: t for t in _table()}


INT48_TYPE = ElementType(np.dtype(np.int64), "i48", ("int", 64), Format.R64_SINT)
"""int48 (the accumulator of int16 convolutions): held in int64 arrays, written as a 64-bit
integer in SPIR-V and R64_SINT in VGF, as model-converter does. Named "int48" or "i48"."""


def element_type(dtype: object) -> ElementType:
    """The ElementType of a numpy dtype, or of a name ("float32", "f32", "int48", ...)."""
    if isinstance(dtype, str):
        if dtype in ("int48", "i48"):
            return INT48_TYPE
        if dtype in _by_name():
            return _by_name()[dtype]
    try:
        return _by_dtype()[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise TosaError(f"element type {dtype!r} is not supported in built graphs") from None


def __getattr__(name: str) -> tuple[np.dtype, ...]:
    if name == "SUPPORTED":  # every numpy dtype a graph input, output or constant can have
        return tuple(t.dtype for t in _table())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
