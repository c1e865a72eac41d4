"""Helpers shared by the TOSA operator modules: dtype classes and names, integer
wrap/saturation, NaN-mode aware min/max, zero points and the taps of a window.
(The plan-time checks are in checking.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import product

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
F32 = FP32
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)

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



def scalar(zero_point: np.ndarray | None) -> int | float:
    """A zero point's value (absent or empty counts as 0)."""
    if zero_point is None:
        return 0
    array = np.asarray(zero_point).reshape(-1)
    if array.size == 0:
        return 0
    value = array[0]
    return float(value) if is_float(array.dtype) else int(value)


def padded(x: np.ndarray, dtype: np.dtype, pads: Sequence[tuple[int, int]],
           offset: float = 0, fill: float = 0) -> np.ndarray:
    """x - offset as `dtype`, with spatial axes 1.. padded by `pads` (before, after) with fill.

    Returns `x` itself when nothing needs doing (same dtype, no offset, no padding).
    """
    if not any(p for pair in pads for p in pair):
        if x.dtype == dtype and offset == 0:
            return x
        out = x.astype(dtype)
        if offset:
            out -= offset
        return out
    spatial = [n + a + b for n, (a, b) in zip(x.shape[1:], pads)]
    shape = (x.shape[0], *spatial, *x.shape[1 + len(pads):])
    out = np.full(shape, fill, dtype) if fill else np.zeros(shape, dtype)
    inner = out[(slice(None), *(slice(a, a + n) for n, (a, _) in zip(x.shape[1:], pads)))]
    inner[...] = x
    if offset:
        inner -= offset
    return out


def taps(kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
         out_size: Sequence[int]) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """For each kernel position, its index and the slices of the padded input it reads.

    The slices select, for every output position, the input element under that kernel tap.
    """
    for index in product(*(range(k) for k in kernel)):
        yield index, tuple(
            slice(k * d, k * d + (o - 1) * s + 1, s)
            for k, d, o, s in zip(index, dilation, out_size, stride))


def inside_taps(sizes: Sequence[int], pads: Sequence[tuple[int, int]], kernel: Sequence[int],
                stride: Sequence[int], dilation: Sequence[int], out_size: Sequence[int]
                ) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...], tuple[slice, ...]]]:
    """Per kernel tap that reads any real input: its index, the output slices whose reads
    land inside the unpadded input and the input slices they read there.

    This is the specification's `0 <= y < IH && 0 <= x < IW` guard: padding is skipped, not
    multiplied, so a non-finite weight never meets it.
    """
    for index in product(*(range(k) for k in kernel)):
        outs, ins = [], []
        for k, n, (before, _), s, d, o in zip(index, sizes, pads, stride, dilation, out_size):
            first = k * d - before  # the input coordinate output 0 reads
            lo = max(0, -(first // s))
            hi = min(o, (n - 1 - first) // s + 1)
            if hi <= lo:
                break
            start = lo * s + first
            outs.append(slice(lo, hi))
            ins.append(slice(start, start + (hi - lo - 1) * s + 1, s))
        else:
            yield index, tuple(outs), tuple(ins)
