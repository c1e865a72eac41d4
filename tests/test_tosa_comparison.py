"""Comparison ops and SELECT against tosa_reference_model on real one-op graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvgf.errors import TosaError
from pyvgf.types import TensorType
from support.tosa import (
    BOOL,
    FLOAT_TYPES,
    I8,
    I16,
    I32,
    Graph,
    assert_same,
    broadcast_shapes,
    examples,
    mlir_type,
    random_values,
    rng_from,
    run_op,
)

FEW = examples(12)
MANY = examples(300)


@st.composite
def compare_case(draw):
    dtype = draw(st.sampled_from([I32, *FLOAT_TYPES]))
    (s1, s2), out = draw(broadcast_shapes())
    rng = rng_from(draw)
    a = random_values(
        rng, dtype, s1, low=-3 if dtype == I32 else None, high=3 if dtype == I32 else None
    )
    b = random_values(
        rng, dtype, s2, low=-3 if dtype == I32 else None, high=3 if dtype == I32 else None
    )
    if dtype != I32:  # many ties
        a, b = (np.asarray(np.round(v.astype(np.float32))).astype(dtype) for v in (a, b))
    return a, b, out


def _check_compare(op, a, b, out):
    g = Graph()
    x, y = g.input(a), g.input(b)
    result = TensorType(BOOL, out)
    ref = g.reference(
        f"tosa.{op.lower()} {x}, {y} : ({mlir_type(a.dtype, a.shape)}, "
        f"{mlir_type(b.dtype, b.shape)})",
        result,
    )
    assert_same(run_op(op, result, input1=a, input2=b), ref)


@pytest.mark.parametrize("op", ["EQUAL", "GREATER", "GREATER_EQUAL"])
@FEW
@given(case=compare_case())
def test_compare(op, case):
    _check_compare(op, *case)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["EQUAL", "GREATER", "GREATER_EQUAL"])
@MANY
@given(case=compare_case())
def test_compare_many(op, case):
    _check_compare(op, *case)


@st.composite
def select_case(draw):
    dtype = draw(st.sampled_from([BOOL, I8, I16, I32, *FLOAT_TYPES]))
    (s1, s2, s3), out = draw(broadcast_shapes(3))
    rng = rng_from(draw)
    return (
        random_values(rng, BOOL, s1),
        random_values(rng, dtype, s2),
        random_values(rng, dtype, s3),
        out,
    )


def _check_select(c, a, b, out):
    g = Graph()
    ci, x, y = g.input(c), g.input(a), g.input(b)
    result = TensorType(a.dtype, out)
    ref = g.reference(
        f"tosa.select {ci}, {x}, {y} : ({mlir_type(c.dtype, c.shape)}, "
        f"{mlir_type(a.dtype, a.shape)}, {mlir_type(b.dtype, b.shape)})",
        result,
    )
    assert_same(run_op("SELECT", result, input1=c, input2=a, input3=b), ref)


@FEW
@given(case=select_case())
def test_select(case):
    _check_select(*case)


@pytest.mark.slow
@MANY
@given(case=select_case())
def test_select_many(case):
    _check_select(*case)


def test_comparison_checks():
    with pytest.raises(TosaError, match="result element type must be one of bool"):
        run_op("EQUAL", TensorType(I32, (2,)), input1=np.zeros(2, I32), input2=np.zeros(2, I32))
    with pytest.raises(TosaError, match="input1 element type must be one of bool"):
        run_op(
            "SELECT",
            TensorType(I8, (2,)),
            input1=np.zeros(2, I8),
            input2=np.zeros(2, I8),
            input3=np.zeros(2, I8),
        )
    with pytest.raises(TosaError, match="input3 element type i16 differs from input2"):
        run_op(
            "SELECT",
            TensorType(I8, (2,)),
            input1=np.zeros(2, BOOL),
            input2=np.zeros(2, I8),
            input3=np.zeros(2, I16),
        )
