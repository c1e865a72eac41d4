"""Plan-time operand checks shared by the tensor, pooling and image operators.

A check sees each operand as a `TensorType` (value known only at run time) or as its value (a
constant: a numpy array, or a Python scalar for a scalar attribute). These helpers read either form
and raise `TosaError` naming the operator and the operand that breaks the specification.
"""

from __future__ import annotations

from collections.abc import Iterable

import ml_dtypes
import numpy as np

from ..errors import TosaError
from ..types import TensorType
from ._common import BF16, FP8E4M3, FP8E5M2, FP16, FP32, I8, I16, I32, I48, is_float  # noqa: F401

I4 = np.dtype(ml_dtypes.int4)

ACC_TYPES = {1: I32, 2: FP16, 3: FP32, 4: I48}
"""The acc_type attribute's encoding (SPIR-V TOSA.001000.1)."""


def type_of(operand: object) -> TensorType:
    """The tensor type of an operand given as a `TensorType` or as a constant array."""
    if isinstance(operand, TensorType):
        return operand
    array = np.asarray(operand)
    return TensorType(array.dtype, tuple(array.shape))


def value_of(operand: object) -> np.ndarray | None:
    """The constant value of an operand, or None when it is known only at run time."""
    if isinstance(operand, TensorType) or operand is None:
        return None
    return np.asarray(operand)


def fail(op: str, operand: str, message: str) -> TosaError:
    """The error for operand `operand` of operator `op` (raise it)."""
    return TosaError(f"{op}: operand {operand}: {message}")


def attribute(op: str, name: str, value: object, length: int) -> tuple[int, ...]:
    """A rank-1 integer attribute (pad, stride, kernel, ...) of `length` elements."""
    array = value_of(value)
    if array is None:
        raise fail(op, name, "must be a compile-time constant")
    if array.ndim != 1 or array.size != length or array.dtype.kind not in "iu":
        raise fail(op, name, f"must be {length} integers, got {array.dtype} {list(array.shape)}")
    return tuple(int(v) for v in array)


def enum(op: str, name: str, value: object, allowed: Iterable[int]) -> int:
    """A scalar enumeration attribute (acc_type, nan_mode, mode)."""
    allowed = tuple(allowed)
    if isinstance(value, (bool, TensorType)) or value is None:
        raise fail(op, name, f"must be one of {allowed}, got {value}")
    number = int(np.asarray(value).reshape(-1)[0]) if np.ndim(value) else int(value)
    if number not in allowed:
        raise fail(op, name, f"must be one of {allowed}, got {number}")
    return number


def rank(op: str, name: str, operand: object, expected: int) -> TensorType:
    """The operand's type, checked to have rank `expected`."""
    ttype = type_of(operand)
    if ttype.rank != expected:
        raise fail(op, name, f"must have rank {expected}, got {ttype}")
    return ttype


def zero_point(op: str, name: str, operand: object, dtype: np.dtype) -> None:
    """A zero point: a [1] tensor of `dtype`; non-zero only for int8 (when constant)."""
    ttype = type_of(operand)
    if ttype.dtype != dtype or ttype.shape != (1,):
        raise fail(op, name, f"must be tensor<1 {dtype}>, got {ttype}")
    value = value_of(operand)
    if value is not None and dtype != I8 and value.reshape(-1)[0] != 0:
        raise fail(op, name, f"must be 0 for {dtype}, got {value.reshape(-1)[0]}")


def result(op: str, declared: object, dtype: np.dtype, shape: tuple[int, ...],
           name: str = "output") -> None:
    """The declared result type must be exactly `dtype` and `shape`."""
    ttype = type_of(declared)
    if ttype.dtype != dtype or tuple(ttype.shape) != tuple(shape):
        expected = TensorType(np.dtype(dtype), tuple(shape))
        raise fail(op, name, f"declared {ttype}, the operands give {expected}")


def exact_div(op: str, name: str, numerator: int, divisor: int) -> int:
    """numerator / divisor, which the specification requires to divide exactly."""
    if divisor <= 0 or numerator % divisor != 0:
        raise fail(op, name, f"{numerator} is not divisible by {divisor}: the output size "
                             "would not be exact")
    return numerator // divisor
