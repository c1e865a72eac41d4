"""Helpers shared by the TOSA operator modules: dtype classes and names, integer
wrap/saturation, and NaN-mode aware min/max.
(The plan-time checks are in checking.py.)"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

BOOL = np.dtype(np.bool_)
I8 = np.dtype(np.int8)
I16 = np.dtype(np.int16)
I32 = np.dtype(np.int32)
I48 = np.dtype(np.int64)  # int48 values travel as int64
FP16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
FP32 = np.dtype(np.float32)
FP8E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
FP8E5M2 = np.dtype(ml_dtypes.float8_e5m2)
I4 = np.dtype(ml_dtypes.int4)

INTS = (I8, I16, I32)
FLOATS = (FP16, BF16, FP32)
FP8 = (FP8E4M3, FP8E5M2)
ALL_FLOATS = FLOATS + FP8
# The element types that data layout, gather and scatter accept.
LAYOUT_TYPES = (BOOL, *INTS, *FLOATS, *FP8)

NAN_PROPAGATE = 1
NAN_IGNORE = 2
NAN_MODES = (NAN_PROPAGATE, NAN_IGNORE)

_NAMES = {
    BOOL: "bool",
    I4: "i4",
    I8: "i8",
    I16: "i16",
    I32: "i32",
    I48: "i48",
    FP16: "fp16",
    BF16: "bf16",
    FP32: "fp32",
    FP8E4M3: "fp8e4m3",
    FP8E5M2: "fp8e5m2",
}


def dtype_name(dtype: np.dtype) -> str:
    """The TOSA name of an element type (int64 is TOSA's int48)."""
    return _NAMES.get(np.dtype(dtype), str(dtype))


def is_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype) in ALL_FLOATS


def int_min(dtype: np.dtype) -> int:
    return -(1 << 47) if np.dtype(dtype) == I48 else int(np.iinfo(dtype).min)


def int_max(dtype: np.dtype) -> int:
    return (1 << 47) - 1 if np.dtype(dtype) == I48 else int(np.iinfo(dtype).max)


# ---------------------------------------------------------------------------- run-time helpers


def wrap(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Two's complement wrap-around of integer values to `dtype` (int48 wraps at 48 bits)."""
    dtype = np.dtype(dtype)
    values = np.asarray(values, dtype=np.int64)
    if dtype == I48:
        return np.asarray(((values + (1 << 47)) & ((1 << 48) - 1)) - (1 << 47))
    return values.astype(dtype)


def saturate(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Clip integer values to the range of `dtype` and convert."""
    return np.asarray(np.clip(values, int_min(dtype), int_max(dtype))).astype(dtype)


def float_op(fn: Callable[..., np.ndarray], out_dtype: np.dtype, *inputs: np.ndarray) -> np.ndarray:
    """Compute `fn` in fp32 for fp16/bf16/fp32 inputs and round once to `out_dtype`."""
    args = [np.asarray(x).astype(np.float32, copy=False) for x in inputs]
    with np.errstate(all="ignore"):
        out = np.asarray(fn(*args)).astype(np.float32, copy=False)
    return out.astype(out_dtype, copy=False)


def nan_maximum(a: np.ndarray, b: np.ndarray, nan_mode: int) -> np.ndarray:
    return np.maximum(a, b) if nan_mode == NAN_PROPAGATE else np.fmax(a, b)


def nan_minimum(a: np.ndarray, b: np.ndarray, nan_mode: int) -> np.ndarray:
    return np.minimum(a, b) if nan_mode == NAN_PROPAGATE else np.fmin(a, b)

