"""TOSA elementwise ternary operators (specification chapter "Elementwise Ternary Operators")."""

from __future__ import annotations

import numpy as np

from ._common import BOOL, FLOATS, INTS
from .checking import (
    expect_broadcast_result,
    expect_dtype,
    expect_same_dtype,
    result_type,
    tensor_type,
)
from .registry import tosa_op


@tosa_op("SELECT")
def select(*, input1: np.ndarray, input2: np.ndarray, input3: np.ndarray) -> np.ndarray:
    return np.where(input1, input2, input3)


@select.check
def _select_check(result, *, input1, input2, input3):
    op = "SELECT"
    res = result_type(op, result)
    t1, t2, t3 = (
        tensor_type(op, n, v)
        for n, v in (("input1", input1), ("input2", input2), ("input3", input3))
    )
    expect_dtype(op, "input1", t1, (BOOL,))
    expect_dtype(op, "input2", t2, (BOOL, *INTS, *FLOATS))
    expect_same_dtype(op, "input3", t3, "input2", t2)
    expect_same_dtype(op, "result", res, "input2", t2)
    expect_broadcast_result(op, res, {"input1": t1, "input2": t2, "input3": t3})
