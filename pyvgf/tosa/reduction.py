"""TOSA reduction operators (chapter "Reduction Operators") and ARGMAX (chapter "Tensor
Operators"): each reduces one axis."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ._common import BOOL, FLOATS, FP8, I8, I16, I32, INTS, NAN_PROPAGATE, wrap
from .checking import (
    expect_axis,
    expect_dtype,
    expect_nan_mode,
    expect_same_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
)
from .registry import tosa_op


def _check_reduce(
    op: str, result: object, axis: object, input: object, allowed: Iterable[np.dtype]
) -> None:
    """The result has the input's element type and shape with the reduced axis set to 1."""
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, allowed)
    if t.rank < 1:
        raise fail(op, "input must have rank 1 or more")
    ax = expect_axis(op, axis, t.rank)
    expect_same_dtype(op, "result", res, "input", t)
    expect_shape(op, "result", res, t.shape[:ax] + (1,) + t.shape[ax + 1 :])


def _fp32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32)


@tosa_op("ARGMAX")
def argmax(*, axis: int, nan_mode: int, input: np.ndarray) -> np.ndarray:  # noqa: A002
    """The result drops `axis`; a rank-1 input gives shape (1,), as SPIR-V has no rank-0
    tensors (model-converter declares tensor<1xi32> there)."""
    values = input if input.dtype in INTS else _fp32(input)
    if input.dtype not in INTS and nan_mode != NAN_PROPAGATE:
        values = np.where(np.isnan(values), np.float32(-np.inf), values)
    # numpy's argmax picks the first maximum, and the first NaN if there is one: as the spec
    index = np.asarray(np.argmax(values, axis=axis)).astype(I32)
    return index.reshape(1) if index.ndim == 0 else index


@argmax.check
def _argmax_check(result, *, axis, nan_mode, input):  # noqa: A002
    op = "ARGMAX"
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, (I8, I16, *FLOATS, *FP8))
    if t.rank < 1:
        raise fail(op, "input must have rank 1 or more")
    ax = expect_axis(op, axis, t.rank)
    expect_nan_mode(op, nan_mode)
    expect_dtype(op, "result", res, (I32,))
    expect_shape(op, "result", res, t.shape[:ax] + t.shape[ax + 1 :] or (1,))


@tosa_op("REDUCE_ALL")
def reduce_all(*, axis: int, input: np.ndarray) -> np.ndarray:  # noqa: A002
    return np.asarray(np.all(input, axis=axis, keepdims=True))


@reduce_all.check
def _reduce_all_check(result, *, axis, input):  # noqa: A002
    _check_reduce("REDUCE_ALL", result, axis, input, (BOOL,))


@tosa_op("REDUCE_ANY")
def reduce_any(*, axis: int, input: np.ndarray) -> np.ndarray:  # noqa: A002
    return np.asarray(np.any(input, axis=axis, keepdims=True))


@reduce_any.check
def _reduce_any_check(result, *, axis, input):  # noqa: A002
    _check_reduce("REDUCE_ANY", result, axis, input, (BOOL,))


@tosa_op("REDUCE_MAX")
def reduce_max(*, axis: int, nan_mode: int, input: np.ndarray) -> np.ndarray:  # noqa: A002
    if input.dtype in INTS:
        return np.asarray(np.max(input, axis=axis, keepdims=True))
    reducer = np.maximum if nan_mode == NAN_PROPAGATE else np.fmax
    return reducer.reduce(_fp32(input), axis=axis, keepdims=True).astype(input.dtype)


@reduce_max.check
def _reduce_max_check(result, *, axis, nan_mode, input):  # noqa: A002
    expect_nan_mode("REDUCE_MAX", nan_mode)
    _check_reduce("REDUCE_MAX", result, axis, input, (*INTS, *FLOATS))


@tosa_op("REDUCE_MIN")
def reduce_min(*, axis: int, nan_mode: int, input: np.ndarray) -> np.ndarray:  # noqa: A002
    if input.dtype in INTS:
        return np.asarray(np.min(input, axis=axis, keepdims=True))
    reducer = np.minimum if nan_mode == NAN_PROPAGATE else np.fmin
    return reducer.reduce(_fp32(input), axis=axis, keepdims=True).astype(input.dtype)


@reduce_min.check
def _reduce_min_check(result, *, axis, nan_mode, input):  # noqa: A002
    expect_nan_mode("REDUCE_MIN", nan_mode)
    _check_reduce("REDUCE_MIN", result, axis, input, (*INTS, *FLOATS))


@tosa_op("REDUCE_PRODUCT")
def reduce_product(*, axis: int, input: np.ndarray) -> np.ndarray:  # noqa: A002
    with np.errstate(all="ignore"):
        return np.prod(_fp32(input), axis=axis, keepdims=True).astype(input.dtype)


@reduce_product.check
def _reduce_product_check(result, *, axis, input):  # noqa: A002
    _check_reduce("REDUCE_PRODUCT", result, axis, input, FLOATS)


@tosa_op("REDUCE_SUM")
def reduce_sum(*, axis: int, input: np.ndarray) -> np.ndarray:  # noqa: A002
    if input.dtype == I32:
        return wrap(np.sum(input, axis=axis, keepdims=True, dtype=np.int64), I32)
    with np.errstate(all="ignore"):
        return np.sum(_fp32(input), axis=axis, keepdims=True, dtype=np.float32).astype(input.dtype)


@reduce_sum.check
def _reduce_sum_check(result, *, axis, input):  # noqa: A002
    _check_reduce("REDUCE_SUM", result, axis, input, (I32, *FLOATS))
