"""TOSA data layout operators (specification chapter "Data Layout")."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._common import LAYOUT_TYPES
from .checking import (
    const_array,
    expect_axis,
    expect_dtype,
    expect_same_dtype,
    expect_shape,
    fail,
    result_type,
    shape_operand,
    tensor_type,
)
from .registry import tosa_op


def _check_layout(op: str, result: object, input1: object) -> tuple:
    res = result_type(op, result)
    t = tensor_type(op, "input1", input1)
    expect_dtype(op, "input1", t, LAYOUT_TYPES)
    expect_same_dtype(op, "result", res, "input1", t)
    return res, t


@tosa_op("CONCAT")
def concat(*, axis: int, input1: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(list(input1), axis=axis)


@concat.check
def _concat_check(result, *, axis, input1):
    op = "CONCAT"
    if isinstance(input1, np.ndarray) or not isinstance(input1, Sequence) or not input1:
        raise fail(op, "input1 must be a non-empty list of tensors")
    res = result_type(op, result)
    types = [tensor_type(op, f"input1[{i}]", t) for i, t in enumerate(input1)]
    first = types[0]
    expect_dtype(op, "input1[0]", first, LAYOUT_TYPES)
    if first.rank < 1:
        raise fail(op, "inputs must have rank 1 or more")
    ax = expect_axis(op, axis, first.rank)
    for i, t in enumerate(types[1:], 1):
        expect_same_dtype(op, f"input1[{i}]", t, "input1[0]", first)
        if t.rank != first.rank or any(
            t.shape[d] != first.shape[d] for d in range(t.rank) if d != ax
        ):
            raise fail(
                op,
                f"input1[{i}] shape {t.shape} must match input1[0] shape "
                f"{first.shape} outside axis {ax}",
            )
    expect_same_dtype(op, "result", res, "input1[0]", first)
    total = sum(t.shape[ax] for t in types)
    expect_shape(op, "result", res, first.shape[:ax] + (total,) + first.shape[ax + 1 :])


@tosa_op("PAD")
def pad(*, input1: np.ndarray, padding: np.ndarray, pad_const: np.ndarray) -> np.ndarray:
    widths = np.asarray(padding, dtype=np.int64).reshape(-1, 2)
    value = np.asarray(pad_const).reshape(-1)[0]
    return np.pad(input1, [tuple(w) for w in widths.tolist()], constant_values=value)


@pad.check
def _pad_check(result, *, input1, padding, pad_const):
    op = "PAD"
    res, t = _check_layout(op, result, input1)
    const_array(op, "pad_const", pad_const, t.dtype, 1)
    widths = shape_operand(op, "padding", padding, 2 * t.rank)
    if widths is None:
        if res.rank != t.rank:
            raise fail(op, f"result rank {res.rank} differs from input1 rank {t.rank}")
        return
    if (widths < 0).any():
        raise fail(op, f"padding must not be negative, got {widths.tolist()}")
    pairs = widths.reshape(-1, 2)
    expect_shape(op, "result", res, tuple(int(d + a + b) for d, (a, b) in zip(t.shape, pairs)))


@tosa_op("RESHAPE")
def reshape(*, input1: np.ndarray, shape: np.ndarray) -> np.ndarray:
    return np.reshape(input1, tuple(int(d) for d in np.asarray(shape).reshape(-1)))


@reshape.check
def _reshape_check(result, *, input1, shape):
    op = "RESHAPE"
    res, t = _check_layout(op, result, input1)
    dims = shape_operand(op, "shape", shape, res.rank)
    if dims is not None:
        expect_shape(op, "result", res, tuple(int(d) for d in dims))
    if res.size != t.size:
        raise fail(
            op,
            f"result shape {res.shape} holds {res.size} elements, input1 shape "
            f"{t.shape} holds {t.size}",
        )


@tosa_op("REVERSE")
def reverse(*, axis: int, input1: np.ndarray) -> np.ndarray:
    return np.flip(input1, axis=axis).copy()


@reverse.check
def _reverse_check(result, *, axis, input1):
    op = "REVERSE"
    res, t = _check_layout(op, result, input1)
    if t.rank < 1:
        raise fail(op, "input1 must have rank 1 or more")
    expect_axis(op, axis, t.rank)
    expect_shape(op, "result", res, t.shape)


@tosa_op("SLICE")
def slice(*, input1: np.ndarray, start: np.ndarray, size: np.ndarray) -> np.ndarray:  # noqa: A001
    return input1[slice_window(start, size)].copy()


def slice_window(start: np.ndarray, size: np.ndarray) -> tuple[slice, ...]:
    """The index of SLICE's window: size[i] elements from start[i] along each axis i."""
    return tuple(np.s_[int(b) : int(b) + int(n)]
                 for b, n in zip(np.asarray(start).reshape(-1), np.asarray(size).reshape(-1)))


@slice.check
def _slice_check(result, *, input1, start, size):
    op = "SLICE"
    res, t = _check_layout(op, result, input1)
    begin = shape_operand(op, "start", start, t.rank)
    count = shape_operand(op, "size", size, t.rank)
    if count is not None:
        if (count <= 0).any():
            raise fail(op, f"size must be positive, got {count.tolist()}")
        expect_shape(op, "result", res, tuple(int(n) for n in count))
    if begin is not None:
        if (begin < 0).any():
            raise fail(op, f"start must not be negative, got {begin.tolist()}")
        end = begin + np.asarray(res.shape, dtype=np.int64)
        if (end > np.asarray(t.shape, dtype=np.int64)).any():
            raise fail(
                op,
                f"start {begin.tolist()} + size {list(res.shape)} exceeds input1 shape {t.shape}",
            )


@tosa_op("TILE")
def tile(*, input1: np.ndarray, multiples: np.ndarray) -> np.ndarray:
    return np.tile(input1, tuple(int(m) for m in np.asarray(multiples).reshape(-1)))


@tile.check
def _tile_check(result, *, input1, multiples):
    op = "TILE"
    res, t = _check_layout(op, result, input1)
    reps = shape_operand(op, "multiples", multiples, t.rank)
    if reps is None:
        return
    if (reps <= 0).any():
        raise fail(op, f"multiples must be positive, got {reps.tolist()}")
    expect_shape(op, "result", res, tuple(int(d * m) for d, m in zip(t.shape, reps)))


@tosa_op("TRANSPOSE")
def transpose(*, perms: np.ndarray, input1: np.ndarray) -> np.ndarray:
    return np.transpose(input1, transpose_order(perms)).copy()


def transpose_order(perms: np.ndarray) -> tuple[int, ...]:
    """TRANSPOSE's perms as the axis order numpy takes."""
    return tuple(int(p) for p in np.asarray(perms).reshape(-1))


@transpose.check
def _transpose_check(result, *, perms, input1):
    op = "TRANSPOSE"
    res, t = _check_layout(op, result, input1)
    order = np.asarray(perms).reshape(-1)
    if order.dtype.kind not in "iu" or sorted(order.tolist()) != list(range(t.rank)):
        raise fail(op, f"perms must be a permutation of 0..{t.rank - 1}, got {order.tolist()}")
    expect_shape(op, "result", res, tuple(t.shape[int(p)] for p in order))
