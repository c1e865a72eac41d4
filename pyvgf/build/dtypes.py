"""The element types a built graph can use: the rows of `pyvgf.elements` that TOSA 1.0 tensors
of a built graph may have, looked up by numpy dtype or name."""

from __future__ import annotations

import numpy as np

from ..elements import BY_MLIR, BY_TOSA, ElementType, by_dtype
from ..errors import TosaError

_GRAPH_TYPES = ("FP32", "FP16", "BF16", "FP8E4M3", "FP8E5M2", "INT8", "INT16", "INT32", "BOOL")

INT48_TYPE = BY_TOSA["INT48"]
"""int48 (the accumulator of int16 convolutions): held in int64 arrays, written as a 64-bit
integer in SPIR-V and R64_SINT in VGF, as model-converter does. Named "int48" or "i48"."""

def element_type(dtype: object) -> ElementType:
    """The ElementType of a numpy dtype, or of a name ("float32", "f32", "int48", ...)."""
    if isinstance(dtype, str):
        if dtype in ("int48", "i48"):
            return INT48_TYPE
        if dtype in BY_MLIR and BY_MLIR[dtype].tosa in _GRAPH_TYPES:
            return BY_MLIR[dtype]
    try:
        row = by_dtype(dtype)
    except KeyError:
        row = None
    if row is None or row.tosa not in _GRAPH_TYPES:
        raise TosaError(f"element type {dtype!r} is not supported in built graphs")
    return row

def __getattr__(name: str) -> tuple[np.dtype, ...]:
    if name == "SUPPORTED":  # resolved on first use: bfloat16 and fp8 are ml_dtypes' dtypes
        return tuple(BY_TOSA[t].dtype for t in _GRAPH_TYPES)
    raise AttributeError(name)
