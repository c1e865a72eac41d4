"""TOSA scatter/gather operators (specification chapter "Scatter/Gather Operators")."""

from __future__ import annotations

import numpy as np

from ..errors import TosaError
from ._common import BOOL, FLOATS, FP8, I32, INTS
from .checking import (
    expect_dtype,
    expect_rank,
    expect_same_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
)
from .registry import tosa_op

VALUE_TYPES = (BOOL, *INTS, *FLOATS, *FP8)


def _checked_indices(op: str, indices: np.ndarray, k: int) -> np.ndarray:
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= k):
        bad = idx[(idx < 0) | (idx >= k)][0]
        raise TosaError(f"{op}: indices must lie in [0, {k}), found {bad}")
    return idx


@tosa_op("GATHER")
def gather(*, values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    idx = _checked_indices("GATHER", indices, values.shape[1])
    return np.take_along_axis(values, idx[:, :, None], axis=1)


@gather.check
def _gather_check(result, *, values, indices):
    op = "GATHER"
    res = result_type(op, result)
    tv, ti = tensor_type(op, "values", values), tensor_type(op, "indices", indices)
    expect_dtype(op, "values", tv, VALUE_TYPES)
    expect_rank(op, "values", tv, 3)
    expect_dtype(op, "indices", ti, (I32,))
    expect_rank(op, "indices", ti, 2)
    n, _, c = tv.shape
    if ti.shape[0] != n:
        raise fail(op, f"indices batch {ti.shape[0]} differs from values batch {n}")
    expect_same_dtype(op, "result", res, "values", tv)
    expect_shape(op, "result", res, (n, ti.shape[1], c))


@tosa_op("SCATTER")
def scatter(*, values_in: np.ndarray, indices: np.ndarray, input: np.ndarray) -> np.ndarray:  # noqa: A002
    n, k, _ = values_in.shape
    idx = _checked_indices("SCATTER", indices, k)
    flat = idx + (np.arange(n, dtype=np.int64) * k)[:, None]
    if np.unique(flat).size != flat.size:
        raise TosaError("SCATTER: indices write one output position more than once")
    out = values_in.copy()
    out[np.arange(n)[:, None], idx] = input
    return out


@scatter.check
def _scatter_check(result, *, values_in, indices, input):  # noqa: A002
    op = "SCATTER"
    res = result_type(op, result)
    tv = tensor_type(op, "values_in", values_in)
    ti, tin = tensor_type(op, "indices", indices), tensor_type(op, "input", input)
    expect_dtype(op, "values_in", tv, VALUE_TYPES)
    expect_rank(op, "values_in", tv, 3)
    expect_dtype(op, "indices", ti, (I32,))
    expect_rank(op, "indices", ti, 2)
    n, k, c = tv.shape
    expect_same_dtype(op, "input", tin, "values_in", tv)
    expect_shape(op, "indices", ti, (n, ti.shape[1]))
    expect_shape(op, "input", tin, (n, ti.shape[1], c))
    if ti.shape[1] > k:
        raise fail(op, f"indices width {ti.shape[1]} exceeds values_in K {k}")
    expect_same_dtype(op, "result", res, "values_in", tv)
    expect_shape(op, "result", res, tv.shape)
