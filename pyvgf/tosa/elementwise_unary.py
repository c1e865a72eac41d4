"""TOSA elementwise unary operators (specification chapter "Elementwise Unary Operators")."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ._common import BOOL, FLOATS, I8, I16, I32, dtype_name, float_op, saturate, wrap
from .checking import (
    const_array,
    expect_dtype,
    expect_same_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
)
from .registry import tosa_op


def _check_unary(op: str, result: object, input1: object, allowed: Iterable[np.dtype]) -> None:
    """input1 and the result share one element type from `allowed` and one shape."""
    res = result_type(op, result)
    t1 = tensor_type(op, "input1", input1)
    expect_dtype(op, "input1", t1, allowed)
    expect_same_dtype(op, "result", res, "input1", t1)
    expect_shape(op, "result", res, t1.shape)


@tosa_op("ABS")
def abs(*, input1: np.ndarray) -> np.ndarray:  # noqa: A001  (spec name)
    if input1.dtype == I32:
        return np.asarray(np.abs(input1))  # abs(INT32_MIN) wraps to itself, as in two's complement
    return float_op(np.abs, input1.dtype, input1)


@abs.check
def _abs_check(result, *, input1):
    _check_unary("ABS", result, input1, (I32, *FLOATS))


@tosa_op("BITWISE_NOT")
def bitwise_not(*, input1: np.ndarray) -> np.ndarray:
    return np.asarray(np.invert(input1))


@bitwise_not.check
def _bitwise_not_check(result, *, input1):
    _check_unary("BITWISE_NOT", result, input1, (I8, I16, I32))


@tosa_op("CEIL")
def ceil(*, input1: np.ndarray) -> np.ndarray:
    return float_op(np.ceil, input1.dtype, input1)


@ceil.check
def _ceil_check(result, *, input1):
    _check_unary("CEIL", result, input1, FLOATS)


@tosa_op("CLZ")
def clz(*, input1: np.ndarray) -> np.ndarray:
    bits = np.asarray(input1, dtype=np.int64) & 0xFFFFFFFF
    # float64 holds every uint32 exactly; frexp's exponent is the bit length (0 for 0)
    _, length = np.frexp(bits.astype(np.float64))
    return np.asarray(32 - length).astype(np.int32)


@clz.check
def _clz_check(result, *, input1):
    _check_unary("CLZ", result, input1, (I32,))


@tosa_op("COS")
def cos(*, input1: np.ndarray) -> np.ndarray:
    return float_op(np.cos, input1.dtype, input1)


@cos.check
def _cos_check(result, *, input1):
    _check_unary("COS", result, input1, FLOATS)


@tosa_op("EXP")
def exp(*, input1: np.ndarray) -> np.ndarray:
    return float_op(np.exp, input1.dtype, input1)


@exp.check
def _exp_check(result, *, input1):
    _check_unary("EXP", result, input1, FLOATS)


@tosa_op("FLOOR")
def floor(*, input1: np.ndarray) -> np.ndarray:
    return float_op(np.floor, input1.dtype, input1)


@floor.check
def _floor_check(result, *, input1):
    _check_unary("FLOOR", result, input1, FLOATS)


@tosa_op("LOG")
def log(*, input1: np.ndarray) -> np.ndarray:
    return float_op(np.log, input1.dtype, input1)


@log.check
def _log_check(result, *, input1):
    _check_unary("LOG", result, input1, FLOATS)


@tosa_op("LOGICAL_NOT")
def logical_not(*, input1: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_not(input1))


@logical_not.check
def _logical_not_check(result, *, input1):
    _check_unary("LOGICAL_NOT", result, input1, (BOOL,))


@tosa_op("NEGATE")
def negate(*, input1: np.ndarray, input1_zp: np.ndarray, output_zp: np.ndarray) -> np.ndarray:
    dtype = input1.dtype
    if dtype in FLOATS:
        return float_op(np.negative, dtype, input1)
    in_zp = int(np.asarray(input1_zp).reshape(-1)[0])
    out_zp = int(np.asarray(output_zp).reshape(-1)[0])
    value = out_zp - (np.asarray(input1, dtype=np.int64) - in_zp)
    if dtype == I32:
        return wrap(value, I32)  # int32 arithmetic wraps
    return saturate(value, dtype)


@negate.check
def _negate_check(result, *, input1, input1_zp, output_zp):
    op = "NEGATE"
    _check_unary(op, result, input1, (I8, I16, I32, *FLOATS))
    dtype = tensor_type(op, "input1", input1).dtype
    for name, zp in (("input1_zp", input1_zp), ("output_zp", output_zp)):
        values = const_array(op, name, zp, dtype, 1)
        if values is not None and dtype != I8 and values[0] != 0:
            raise fail(op, f"{name} must be 0 for {dtype_name(dtype)}, got {values[0]}")


@tosa_op("RECIPROCAL")
def reciprocal(*, input1: np.ndarray) -> np.ndarray:
    return float_op(np.reciprocal, input1.dtype, input1)


@reciprocal.check
def _reciprocal_check(result, *, input1):
    _check_unary("RECIPROCAL", result, input1, FLOATS)


@tosa_op("RSQRT")
def rsqrt(*, input1: np.ndarray) -> np.ndarray:
    return float_op(lambda x: 1.0 / np.sqrt(x), input1.dtype, input1)


@rsqrt.check
def _rsqrt_check(result, *, input1):
    _check_unary("RSQRT", result, input1, FLOATS)


@tosa_op("SIN")
def sin(*, input1: np.ndarray) -> np.ndarray:
    return float_op(np.sin, input1.dtype, input1)


@sin.check
def _sin_check(result, *, input1):
    _check_unary("SIN", result, input1, FLOATS)
