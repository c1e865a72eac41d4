"""TOSA comparison operators (specification chapter "Comparison Operators")."""

from __future__ import annotations

import numpy as np

from ._common import BOOL, FLOATS, I32
from .checking import (
    expect_broadcast_result,
    expect_dtype,
    expect_same_dtype,
    result_type,
    tensor_type,
)
from .registry import tosa_op


def _check_compare(op: str, result: object, input1: object, input2: object) -> None:
    res = result_type(op, result)
    t1, t2 = tensor_type(op, "input1", input1), tensor_type(op, "input2", input2)
    expect_dtype(op, "input1", t1, (I32, *FLOATS))
    expect_same_dtype(op, "input2", t2, "input1", t1)
    expect_dtype(op, "result", res, (BOOL,))
    expect_broadcast_result(op, res, {"input1": t1, "input2": t2})


def _wide(x: np.ndarray) -> np.ndarray:
    """Compare fp16/bf16 in fp32 (exact); integers as they are."""
    return x if x.dtype == I32 else x.astype(np.float32)


@tosa_op("EQUAL")
def equal(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.equal(_wide(input1), _wide(input2)))


@equal.check
def _equal_check(result, *, input1, input2):
    _check_compare("EQUAL", result, input1, input2)


@tosa_op("GREATER")
def greater(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.greater(_wide(input1), _wide(input2)))


@greater.check
def _greater_check(result, *, input1, input2):
    _check_compare("GREATER", result, input1, input2)


@tosa_op("GREATER_EQUAL")
def greater_equal(*, input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    return np.asarray(np.greater_equal(_wide(input1), _wide(input2)))


@greater_equal.check
def _greater_equal_check(result, *, input1, input2):
    _check_compare("GREATER_EQUAL", result, input1, input2)
