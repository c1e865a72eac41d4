"""TOSA type conversion operators (specification chapter "Type Conversion"): CAST, RESCALE."""

from __future__ import annotations

import numpy as np

from ._common import (
    BF16,
    BOOL,
    FLOATS,
    FP8,
    FP16,
    FP32,
    I8,
    I16,
    I32,
    I48,
    I64,
    INTS,
    dtype_name,
    int_max,
    int_min,
)
from .checking import (
    const_array,
    expect_bool_attr,
    expect_dtype,
    expect_int_attr,
    expect_result_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
)
from .registry import tosa_op

SINGLE_ROUND = 1
INEXACT_ROUND = 2
DOUBLE_ROUND = 3

_CASTS: dict[np.dtype, tuple[np.dtype, ...]] = {
    BOOL: INTS,
    I8: (BOOL, I16, I32, *FLOATS),
    I16: (BOOL, I8, I32, *FLOATS),
    I32: (BOOL, I8, I16, *FLOATS),
    FP16: (*INTS, FP32, *FP8),
    BF16: (*INTS, FP32, *FP8),
    FP32: (*INTS, FP16, BF16, *FP8),
    **{fp8: (FP16, BF16, FP32) for fp8 in FP8},
}


@tosa_op("CAST")
def cast(*, input: np.ndarray, result_dtype: np.dtype) -> np.ndarray:
    """CAST's operands do not determine its result type, so besides `input` (the grammar's only
    operand) it takes `result_dtype`, the element type of the declared result."""
    out = np.dtype(result_dtype)
    src = input.dtype
    if src == BOOL or src in INTS and out in INTS:
        return input.astype(out)  # integer narrowing truncates, widening sign-extends
    if out == BOOL:
        return np.asarray(input != 0)
    if out in INTS:
        wide = input.astype(np.float64)  # holds every int32 exactly, so clipping is exact
        # NaN becomes 0 for i8/i16 and INT32_MIN for i32, as tosa_reference_model gives
        np.copyto(wide, 0.0 if out != I32 else float(int_min(I32)), where=np.isnan(wide))
        np.rint(wide, out=wide)
        np.clip(wide, int_min(out), int_max(out), out=wide)
        return wide.astype(out)
    return input.astype(np.float32).astype(out)


@cast.check
def _cast_check(result, *, input, result_dtype=None):
    op = "CAST"
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, tuple(_CASTS))
    expect_dtype(op, "result", res, _CASTS[np.dtype(t.dtype)])
    expect_result_dtype(op, result_dtype, res)
    expect_shape(op, "result", res, t.shape)


def _zero_point(value: np.ndarray, dtype: np.dtype, unsigned: bool) -> int:
    zp = int(np.asarray(value).reshape(-1)[0])
    return zp & ((1 << (8 * dtype.itemsize)) - 1) if unsigned else zp


@tosa_op("RESCALE")
def rescale(
    *,
    scale32: bool,
    rounding_mode: int,
    per_channel: bool,
    input_unsigned: bool,
    output_unsigned: bool,
    input: np.ndarray,
    multiplier: np.ndarray,
    shift: np.ndarray,
    input_zp: np.ndarray,
    output_zp: np.ndarray,
) -> np.ndarray:
    """Per channel c (the last axis when per_channel, else one for all): apply_scale(input -
    input_zp, multiplier[c], shift[c]) + output_zp, saturated to the result type.

    apply_scale_32 and apply_scale_16 are the same arithmetic, exact in int64: value times
    multiplier, plus 2**(shift - 1) (and +-2**30 for DOUBLE_ROUND when shift > 31), shifted
    right arithmetically by shift. scale32 sets only the multiplier's width and whether
    DOUBLE_ROUND is allowed, both checked at plan time. Results outside int32 break a REQUIRE
    of the specification (unpredictable); they saturate here. An unsigned operand is read (or
    stored) as the unsigned integer of its bits."""
    if input_unsigned:
        input = input.view(np.dtype(f"u{input.dtype.itemsize}"))
    value = input.astype(I64) - _zero_point(input_zp, input_zp.dtype, input_unsigned)
    m = np.asarray(multiplier, I64).reshape(-1)  # per channel: along the last axis
    s = np.asarray(shift, I64).reshape(-1)
    if not per_channel:
        m, s = m[0], s[0]
    rounding = np.left_shift(1, s - 1)
    if rounding_mode == DOUBLE_ROUND:
        rounding = rounding + np.where(s > 31, np.where(value >= 0, 1 << 30, -(1 << 30)), 0)
    result = ((value * m + rounding) >> s) + _zero_point(output_zp, output_zp.dtype,
                                                           output_unsigned)
    out = output_zp.dtype
    if output_unsigned:
        unsigned = np.dtype(f"u{out.itemsize}")
        return np.clip(result, 0, np.iinfo(unsigned).max).astype(unsigned).view(out)
    return np.clip(result, int_min(out), int_max(out)).astype(out)


@rescale.check
def _rescale_check(
    result,
    *,
    scale32,
    rounding_mode,
    per_channel,
    input_unsigned,
    output_unsigned,
    input,
    multiplier,
    shift,
    input_zp,
    output_zp,
):
    op = "RESCALE"
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, (I8, I16, I32, I48))
    expect_dtype(op, "result", res, (I8, I16, I32))
    expect_shape(op, "result", res, t.shape)
    scale32 = expect_bool_attr(op, "scale32", scale32)
    per_channel = expect_bool_attr(op, "per_channel", per_channel)
    in_u = expect_bool_attr(op, "input_unsigned", input_unsigned)
    out_u = expect_bool_attr(op, "output_unsigned", output_unsigned)
    mode = expect_int_attr(op, "rounding_mode", rounding_mode)
    if mode not in (SINGLE_ROUND, INEXACT_ROUND, DOUBLE_ROUND):
        raise fail(op, f"rounding_mode must be 1, 2 or 3, got {mode}")
    if mode == DOUBLE_ROUND and not scale32:
        raise fail(op, "rounding_mode DOUBLE_ROUND needs scale32")
    if scale32 and t.dtype == I48:
        raise fail(op, "scale32 must be false for an i48 input")
    if in_u and out_u:
        raise fail(op, "input_unsigned and output_unsigned cannot both be true")
    if in_u and t.dtype not in (I8, I16):
        raise fail(op, f"input_unsigned needs an i8 or i16 input, got {dtype_name(t.dtype)}")
    if out_u and res.dtype not in (I8, I16):
        raise fail(op, f"output_unsigned needs an i8 or i16 result, got {dtype_name(res.dtype)}")
    if in_u and res.dtype == I32:
        raise fail(op, "input_unsigned needs an i8 or i16 result, got i32")
    if out_u and t.dtype in (I32, I48):
        raise fail(op, f"output_unsigned needs an i8 or i16 input, got {dtype_name(t.dtype)}")
    if per_channel and t.rank < 1:
        raise fail(op, "per_channel needs an input of rank 1 or more")
    channels = t.shape[-1] if per_channel else 1
    const_array(op, "multiplier", multiplier, I32 if scale32 else I16, channels)
    shifts = const_array(op, "shift", shift, I8, channels)
    if shifts is not None and ((shifts < 2) | (shifts > 62)).any():
        raise fail(op, f"shift values must lie in [2, 62], got {shifts.tolist()}")
    for name, zp, dtype, unsigned in (
        ("input_zp", input_zp, t.dtype, in_u),
        ("output_zp", output_zp, res.dtype, out_u),
    ):
        values = const_array(op, name, zp, dtype, 1)
        if values is None or values[0] == 0 or dtype == I8:
            continue
        if not (dtype == I16 and unsigned and _zero_point(values, dtype, True) == 32768):
            raise fail(
                op,
                f"{name} must be 0 for {dtype_name(dtype)}"
                f"{' (or 32768 when unsigned)' if dtype == I16 else ''}, got {values[0]}",
            )
