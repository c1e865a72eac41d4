"""TOSA elementwise binary operators (specification chapter "Elementwise Binary Operators")."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import TosaError
from ._common import (
    BOOL,
    FLOATS,
    I8,
    I16,
    I32,
    INTS,
    dtype_name,
    float_op,
    nan_maximum,
    nan_minimum,
    saturate,
    wrap,
)
from .checking import (
    const_array,
    expect_bool_attr,
    expect_broadcast_result,
    expect_dtype,
    expect_nan_mode,
    expect_same_dtype,
    expect_shape,
    fail,
    require_range,
    result_type,
    tensor_type,
)
from .registry import tosa_op

ARITH = (I32, *FLOATS)


def _check_binary(
    op: str, result: object, input1: object, input2: object, allowed: Iterable[np.dtype]
) -> None:
    """input1, input2 and the result share one element type from `allowed`, and broadcast."""
    res = result_type(op, result)
    t1, t2 = tensor_type(op, "input1", input1), tensor_type(op, "input2", input2)
    expect_dtype(op, "input1", t1, allowed)
    expect_same_dtype(op, "input2", t2, "input1", t1)
    expect_same_dtype(op, "result", res, "input1", t1)
    expect_broadcast_result(op, res, {"input1": t1, "input2": t2})


def _int64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def _wrapping(ufunc: np.ufunc, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """ufunc of two int32 tensors in one pass, wrapped to int32 as two's complement wraps: numpy's
    integer arithmetic on arrays is modular (the sum in int64, then wrapped, is the same)."""
    return np.asarray(ufunc(input1, input2))


def _shift_amount(op: str, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    bits = input1.dtype.itemsize * 8
    amount = _int64(input2)
    require_range(op, "input2", amount, 0, bits - 1)
    return amount


@tosa_op("ADD")
def add(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    if input1.dtype == I32:
        return _wrapping(np.add, input1, input2)
    return float_op(np.add, input1.dtype, input1, input2)


@add.check
def _add_check(result, *, input1, input2):
    _check_binary("ADD", result, input1, input2, ARITH)


@tosa_op("SUB")
def sub(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    if input1.dtype == I32:
        return _wrapping(np.subtract, input1, input2)
    return float_op(np.subtract, input1.dtype, input1, input2)


@sub.check
def _sub_check(result, *, input1, input2):
    _check_binary("SUB", result, input1, input2, ARITH)


@tosa_op("ARITHMETIC_RIGHT_SHIFT")
def arithmetic_right_shift(*, round: bool, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    amount = _shift_amount("ARITHMETIC_RIGHT_SHIFT", input1, input2)
    value = _int64(input1)
    out = value >> amount
    if round:
        carry = (value >> np.maximum(amount - 1, 0)) & 1
        out = out + np.where(amount > 0, carry, 0)
    return saturate(out, input1.dtype)


@arithmetic_right_shift.check
def _arithmetic_right_shift_check(result, *, round, input1, input2):
    expect_bool_attr("ARITHMETIC_RIGHT_SHIFT", "round", round)
    _check_binary("ARITHMETIC_RIGHT_SHIFT", result, input1, input2, INTS)


@tosa_op("BITWISE_AND")
def bitwise_and(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.bitwise_and(input1, input2))


@bitwise_and.check
def _bitwise_and_check(result, *, input1, input2):
    _check_binary("BITWISE_AND", result, input1, input2, INTS)


@tosa_op("BITWISE_OR")
def bitwise_or(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.bitwise_or(input1, input2))


@bitwise_or.check
def _bitwise_or_check(result, *, input1, input2):
    _check_binary("BITWISE_OR", result, input1, input2, INTS)


@tosa_op("BITWISE_XOR")
def bitwise_xor(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.bitwise_xor(input1, input2))


@bitwise_xor.check
def _bitwise_xor_check(result, *, input1, input2):
    _check_binary("BITWISE_XOR", result, input1, input2, INTS)


@tosa_op("INTDIV")
def intdiv(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    num, den = np.broadcast_arrays(_int64(input1), _int64(input2))
    if np.any(den == 0):
        raise TosaError("INTDIV: input2 holds a zero divisor")
    quotient = np.abs(num) // np.abs(den)
    return wrap(np.where((num < 0) != (den < 0), -quotient, quotient), I32)


@intdiv.check
def _intdiv_check(result, *, input1, input2):
    _check_binary("INTDIV", result, input1, input2, (I32,))


@tosa_op("LOGICAL_AND")
def logical_and(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_and(input1, input2))


@logical_and.check
def _logical_and_check(result, *, input1, input2):
    _check_binary("LOGICAL_AND", result, input1, input2, (BOOL,))


@tosa_op("LOGICAL_OR")
def logical_or(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_or(input1, input2))


@logical_or.check
def _logical_or_check(result, *, input1, input2):
    _check_binary("LOGICAL_OR", result, input1, input2, (BOOL,))


@tosa_op("LOGICAL_XOR")
def logical_xor(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_xor(input1, input2))


@logical_xor.check
def _logical_xor_check(result, *, input1, input2):
    _check_binary("LOGICAL_XOR", result, input1, input2, (BOOL,))


@tosa_op("LOGICAL_LEFT_SHIFT")
def logical_left_shift(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    amount = _shift_amount("LOGICAL_LEFT_SHIFT", input1, input2)
    return wrap(_int64(input1) << amount, input1.dtype)


@logical_left_shift.check
def _logical_left_shift_check(result, *, input1, input2):
    _check_binary("LOGICAL_LEFT_SHIFT", result, input1, input2, INTS)


@tosa_op("LOGICAL_RIGHT_SHIFT")
def logical_right_shift(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    amount = _shift_amount("LOGICAL_RIGHT_SHIFT", input1, input2)
    bits = input1.dtype.itemsize * 8
    unsigned = _int64(input1) & ((1 << bits) - 1)
    return wrap(unsigned >> amount, input1.dtype)


@logical_right_shift.check
def _logical_right_shift_check(result, *, input1, input2):
    _check_binary("LOGICAL_RIGHT_SHIFT", result, input1, input2, INTS)


@tosa_op("MAXIMUM")
def maximum(*, nan_mode: int, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    if input1.dtype == I32:
        return np.asarray(np.maximum(input1, input2))
    return float_op(lambda a, b: nan_maximum(a, b, nan_mode), input1.dtype, input1, input2)


@maximum.check
def _maximum_check(result, *, nan_mode, input1, input2):
    expect_nan_mode("MAXIMUM", nan_mode)
    _check_binary("MAXIMUM", result, input1, input2, ARITH)


@tosa_op("MINIMUM")
def minimum(*, nan_mode: int, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    if input1.dtype == I32:
        return np.asarray(np.minimum(input1, input2))
    return float_op(lambda a, b: nan_minimum(a, b, nan_mode), input1.dtype, input1, input2)


@minimum.check
def _minimum_check(result, *, nan_mode, input1, input2):
    expect_nan_mode("MINIMUM", nan_mode)
    _check_binary("MINIMUM", result, input1, input2, ARITH)


@tosa_op("MUL")
def mul(*, input1: np.ndarray, input2: np.ndarray, shift: np.ndarray) -> np.ndarray:
    if input1.dtype in FLOATS:
        return float_op(np.multiply, input1.dtype, input1, input2)
    product = _int64(input1) * _int64(input2)
    amount = int(np.asarray(shift).reshape(-1)[0])
    if input1.dtype == I32 and amount > 0:
        # The spec rounds half up before the shift; the product of two int32 fits int64.
        product = (product + (np.int64(1) << np.int64(amount - 1))) >> np.int64(amount)
    return wrap(product, I32)


@mul.check
def _mul_check(result, *, input1, input2, shift):
    op = "MUL"
    res = result_type(op, result)
    t1, t2 = tensor_type(op, "input1", input1), tensor_type(op, "input2", input2)
    expect_dtype(op, "input1", t1, (I8, I16, I32, *FLOATS))
    expect_same_dtype(op, "input2", t2, "input1", t1)
    expect_dtype(op, "result", res, (I32,) if t1.dtype in INTS else (t1.dtype,))
    expect_broadcast_result(op, res, {"input1": t1, "input2": t2})
    values = const_array(op, "shift", shift, I8, 1)
    if values is not None:
        amount = int(values[0])
        if t1.dtype == I32 and not 0 <= amount <= 63:
            raise fail(op, f"shift must be in [0, 63], got {amount}")
        if t1.dtype != I32 and amount != 0:
            raise fail(op, f"shift must be 0 for {dtype_name(t1.dtype)} inputs, got {amount}")


@tosa_op("POW")
def pow(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:  # noqa: A001  (spec name)
    return float_op(np.power, input1.dtype, input1, input2)


@pow.check
def _pow_check(result, *, input1, input2):
    _check_binary("POW", result, input1, input2, FLOATS)


@tosa_op("TABLE")
def table(*, input1: np.ndarray, table: np.ndarray) -> np.ndarray:
    entries = np.asarray(table).reshape(-1)
    if input1.dtype == I8:
        return np.asarray(entries[_int64(input1) + 128]).astype(I8)
    value = _int64(input1) + 32768
    index, fraction = value >> 7, value & 0x7F
    base = entries.astype(np.int64)[index]
    slope = entries.astype(np.int64)[index + 1] - base
    return np.asarray((base << 7) + slope * fraction).astype(I32)


@table.check
def _table_check(result, *, input1, table):
    op = "TABLE"
    res = result_type(op, result)
    t1 = tensor_type(op, "input1", input1)
    expect_dtype(op, "input1", t1, (I8, I16))
    tt = tensor_type(op, "table", table)
    expect_same_dtype(op, "table", tt, "input1", t1)
    expect_shape(op, "table", tt, (256,) if t1.dtype == I8 else (513,))
    expect_dtype(op, "result", res, (I8,) if t1.dtype == I8 else (I32,))
    expect_shape(op, "result", res, t1.shape)
