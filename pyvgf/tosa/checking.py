"""Plan-time operand checks shared by the tensor, pooling and image operators.

A check sees each operand as a `TensorType` (value known only at run time) or as its value (a
constant: a numpy array, or a Python scalar for a scalar attribute). These helpers read either form
and raise `TosaError` naming the operator and the operand that breaks the specification.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..types import TensorType
from ._common import (
    FP16,
    FP32,
    I8,
    I32,
    I48,
    dtype_name,
    expect_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
)

ACC_TYPES = {1: I32, 2: FP16, 3: FP32, 4: I48}
"""The acc_type attribute's encoding (SPIR-V TOSA.001000.1)."""


def _value_of(operand: object) -> np.ndarray | None:
    """The constant value of an operand, or None when it is known only at run time."""
    if isinstance(operand, TensorType) or operand is None:
        return None
    return np.asarray(operand)


def attribute(op: str, name: str, value: object, length: int) -> tuple[int, ...]:
    """A rank-1 integer attribute (pad, stride, kernel, ...) of `length` elements."""
    array = _value_of(value)
    if array is None:
        raise fail(op, f"{name} must be a compile-time constant")
    if array.ndim != 1 or array.size != length or array.dtype.kind not in "iu":
        raise fail(op, f"{name} must be {length} integers, got {dtype_name(array.dtype)} "
                       f"shape {tuple(array.shape)}")
    return tuple(int(v) for v in array)


def enum(op: str, name: str, value: object, allowed: Iterable[int]) -> int:
    """A scalar enumeration attribute (acc_type, nan_mode, mode)."""
    allowed = tuple(allowed)
    if isinstance(value, (bool, TensorType)) or value is None:
        raise fail(op, f"{name} must be one of {allowed}, got {value}")
    number = int(np.asarray(value).reshape(-1)[0]) if np.ndim(value) else int(value)
    if number not in allowed:
        raise fail(op, f"{name} must be one of {allowed}, got {number}")
    return number


def zero_point(op: str, name: str, operand: object, dtype: np.dtype) -> None:
    """A zero point: a [1] tensor of `dtype`; non-zero only for int8 (when constant)."""
    t = tensor_type(op, name, operand)
    if t.dtype != dtype or t.shape != (1,):
        raise fail(op, f"{name} must be {dtype_name(dtype)} of shape (1,), got "
                       f"{dtype_name(t.dtype)} of shape {tuple(t.shape)}")
    value = _value_of(operand)
    if value is not None and dtype != I8 and value.reshape(-1)[0] != 0:
        raise fail(op, f"{name} must be 0 for {dtype_name(dtype)}, got {value.reshape(-1)[0]}")


def expect_result(op: str, result: object, dtype: np.dtype, shape: Sequence[int],
                  name: str = "result") -> TensorType:
    """The declared result type, which must be exactly `dtype` and `shape`."""
    res = result_type(op, result)
    expect_dtype(op, name, res, (dtype,))
    expect_shape(op, name, res, shape)
    return res


def expect_result_dtype(op: str, result_dtype: object, res: TensorType) -> None:
    """An op's `result_dtype` keyword (when given) must be the declared result's element type."""
    if result_dtype is not None and np.dtype(result_dtype) != np.dtype(res.dtype):
        raise fail(op, f"result_dtype {dtype_name(result_dtype)} differs from the declared "
                       f"result type {dtype_name(res.dtype)}")


def exact_div(op: str, name: str, numerator: int, divisor: int) -> int:
    """numerator / divisor, which the specification requires to divide exactly."""
    if divisor <= 0 or numerator % divisor != 0:
        raise fail(op, f"{name} must divide {numerator} exactly (for an exact output size), "
                       f"got {divisor}")
    return numerator // divisor
