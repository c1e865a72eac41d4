"""Helpers shared by the TOSA operator modules: dtype classes, plan-time checks, integer
wrap/saturation, the specification's apply_scale_32/16, and NaN-mode aware min/max."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import ml_dtypes
import numpy as np

from ..errors import TosaError
from ..types import TensorType

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


# ---------------------------------------------------------------------------- plan-time checks


def fail(op: str, message: str) -> TosaError:
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


def apply_scale_32(
    value: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, double_round: bool
) -> np.ndarray:
    """The specification's apply_scale_32, elementwise on int64 arrays (multiplier and shift
    broadcast against value)."""
    value = np.asarray(value, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    result = value * np.asarray(multiplier, dtype=np.int64)
    result += np.left_shift(np.int64(1), shift - 1)
    if double_round:
        adjust = np.where(shift > 31, np.int64(1 << 30), np.int64(0))
        if adjust.any():
            result += adjust
            np.subtract(result, 2 * adjust, out=result, where=value < 0)
    result >>= shift
    return result


def apply_scale_16(value: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The specification's apply_scale_16, elementwise on int64 arrays."""
    shift = np.asarray(shift, dtype=np.int64)
    result = np.asarray(value, dtype=np.int64) * np.asarray(multiplier, dtype=np.int64)
    result += np.left_shift(np.int64(1), shift - 1)
    result >>= shift
    return result


def nan_maximum(a: np.ndarray, b: np.ndarray, nan_mode: int) -> np.ndarray:
    return np.maximum(a, b) if nan_mode == NAN_PROPAGATE else np.fmax(a, b)


def nan_minimum(a: np.ndarray, b: np.ndarray, nan_mode: int) -> np.ndarray:
    return np.minimum(a, b) if nan_mode == NAN_PROPAGATE else np.fmin(a, b)


def require_range(op: str, name: str, values: np.ndarray, low: int, high: int) -> None:
    """Raise when run-time values leave [low, high] (the specification leaves it unpredictable)."""
    if values.size and (values.min() < low or values.max() > high):
        bad = values[(values < low) | (values > high)].reshape(-1)[0]
        raise TosaError(f"{op}: {name} values must lie in [{low}, {high}], found {bad}")
