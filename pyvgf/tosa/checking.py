"""Plan-time operand checks: the vocabulary every TOSA operator's `check` is written in.

A check sees each operand as a `TensorType` (value known only at run time) or as its value (a
constant: a numpy array, or a Python scalar for a scalar attribute). These helpers read either form
and raise `TosaError` as "OP: what is wrong", naming the operand, what the specification expects
and what was given. `require_range` is the one check that runs on run-time values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..errors import TosaError
from ..types import TensorType
from ._common import FP16, FP32, I8, I32, I48, NAN_MODES, dtype_name

ACC_TYPES = {1: I32, 2: FP16, 3: FP32, 4: I48}
"""The acc_type attribute's encoding (SPIR-V TOSA.001000.1)."""


def fail(op: str, message: str) -> TosaError:
    """The error for operator `op`, reading "OP: message" (raise it)."""
    return TosaError(f"{op}: {message}")


def tensor_type(op: str, name: str, value: object, rank: int | None = None) -> TensorType:
    """The type of an operand that must be a tensor (a TensorType or a constant array), checked
    to have rank `rank` when given."""
    if isinstance(value, TensorType):
        t = value
    elif isinstance(value, np.ndarray):
        t = TensorType(value.dtype, tuple(value.shape))
    else:
        raise fail(op, f"operand {name} must be a tensor, got {type(value).__name__}")
    if rank is not None:
        expect_rank(op, name, t, rank)
    return t


def result_type(op: str, result: object) -> TensorType:
    if not isinstance(result, TensorType):
        raise fail(op, f"expected one result tensor type, got {result!r}")
    return result


def expect_dtype(op: str, name: str, t: TensorType, allowed: Iterable[np.dtype]) -> None:
    allowed = tuple(allowed)
    if np.dtype(t.dtype) not in allowed:
        names = ", ".join(dtype_name(d) for d in allowed)
        raise fail(op, f"{name} element type must be one of {names}, got {dtype_name(t.dtype)}")


def expect_same_dtype(op: str, name: str, t: TensorType, ref_name: str, ref: TensorType) -> None:
    if np.dtype(t.dtype) != np.dtype(ref.dtype):
        raise fail(
            op,
            f"{name} element type {dtype_name(t.dtype)} differs from {ref_name} "
            f"element type {dtype_name(ref.dtype)}",
        )


def expect_shape(op: str, name: str, t: TensorType, shape: Sequence[int]) -> None:
    if tuple(t.shape) != tuple(shape):
        raise fail(op, f"{name} shape must be {tuple(shape)}, got {tuple(t.shape)}")


def expect_rank(op: str, name: str, t: TensorType, rank: int) -> None:
    if t.rank != rank:
        raise fail(op, f"{name} rank must be {rank}, got {t.rank} (shape {tuple(t.shape)})")


def expect_int_attr(op: str, name: str, value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise fail(op, f"attribute {name} must be an integer, got {value!r}")
    return int(value)


def expect_bool_attr(op: str, name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise fail(op, f"attribute {name} must be a boolean, got {value!r}")
    return bool(value)


def expect_nan_mode(op: str, nan_mode: object) -> int:
    mode = expect_int_attr(op, "nan_mode", nan_mode)
    if mode not in NAN_MODES:
        raise fail(op, f"nan_mode must be 1 (PROPAGATE) or 2 (IGNORE), got {mode}")
    return mode


def expect_axis(op: str, axis: object, rank: int) -> int:
    axis = expect_int_attr(op, "axis", axis)
    if not 0 <= axis < rank:
        raise fail(op, f"axis must be in [0, {rank}), got {axis}")
    return axis


def broadcast_shape(op: str, operands: dict[str, TensorType]) -> tuple[int, ...]:
    """TOSA broadcasting: equal ranks, each dimension equal or 1 in the inputs."""
    items = list(operands.items())
    rank = items[0][1].rank
    for name, t in items:
        if t.rank != rank:
            raise fail(op, f"{name} rank {t.rank} differs from {items[0][0]} rank {rank}")
    shape = []
    for d in range(rank):
        sizes = {t.shape[d] for _, t in items} - {1}
        if len(sizes) > 1:
            desc = ", ".join(f"{n}{tuple(t.shape)}" for n, t in items)
            raise fail(op, f"shapes cannot broadcast in dimension {d}: {desc}")
        shape.append(sizes.pop() if sizes else 1)
    return tuple(shape)


def expect_broadcast_result(op: str, result: TensorType, operands: dict[str, TensorType]) -> None:
    expect_shape(op, "result", result, broadcast_shape(op, operands))


def const_array(
    op: str, name: str, value: object, dtype: np.dtype | None = None, size: int | None = None
) -> np.ndarray | None:
    """A constant operand as a flat array (None when only known at run time), checked."""
    if isinstance(value, TensorType):
        t = value
        arr = None
    else:
        arr = np.asarray(value)
        t = TensorType(arr.dtype, tuple(arr.shape))
    if dtype is not None and np.dtype(t.dtype) != np.dtype(dtype):
        raise fail(
            op, f"{name} element type must be {dtype_name(dtype)}, got {dtype_name(t.dtype)}"
        )
    if size is not None and t.size != size:
        raise fail(op, f"{name} must hold {size} element(s), got shape {tuple(t.shape)}")
    return None if arr is None else arr.reshape(-1)


def shape_operand(op: str, name: str, value: object, length: int) -> np.ndarray | None:
    """A shape operand (padding, start, size, multiples, shape): integers, `length` of them."""
    if isinstance(value, TensorType):
        if value.size != length:
            raise fail(op, f"{name} must hold {length} values, got shape {tuple(value.shape)}")
        return None
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise fail(op, f"{name} must hold integers, got {arr.dtype}")
    arr = arr.reshape(-1).astype(np.int64)
    if arr.size != length:
        raise fail(op, f"{name} must hold {length} values, got {arr.size}")
    return arr


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
        raise fail(op, f"{name} must be {length} integers, got {array.dtype} shape "
                       f"{tuple(array.shape)}")
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


def require_range(op: str, name: str, values: np.ndarray, low: int, high: int) -> None:
    """Raise when run-time values leave [low, high] (the specification leaves it unpredictable)."""
    if values.size and (values.min() < low or values.max() > high):
        bad = values[(values < low) | (values > high)].reshape(-1)[0]
        raise fail(op, f"{name} values must lie in [{low}, {high}], found {bad}")
