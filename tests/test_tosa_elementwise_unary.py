"""Elementwise unary ops against tosa_reference_model on real one-op graphs."""

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
    INT_TYPES,
    Graph,
    assert_same,
    examples,
    mlir_type,
    random_values,
    rng_from,
    run_op,
    shapes,
)

FEW = examples(12)
MANY = examples(300)

# op -> (element types, allowed error in ulps of the reference value, absolute error allowed)
UNARY = {
    "ABS": ([I32, *FLOAT_TYPES], 0, 0),
    "BITWISE_NOT": (INT_TYPES, 0, 0),
    "CEIL": (FLOAT_TYPES, 0, 0),
    "CLZ": ([I32], 0, 0),
    "COS": (FLOAT_TYPES, 4, 2.0**-22),
    "EXP": (FLOAT_TYPES, 4, 0),
    "FLOOR": (FLOAT_TYPES, 0, 0),
    "LOG": (FLOAT_TYPES, 4, 0),
    "LOGICAL_NOT": ([BOOL], 0, 0),
    "RECIPROCAL": (FLOAT_TYPES, 1, 0),
    "RSQRT": (FLOAT_TYPES, 2, 0),
    "SIN": (FLOAT_TYPES, 4, 2.0**-22),
}


@st.composite
def unary_case(draw, op: str):
    dtype = draw(st.sampled_from(UNARY[op][0]))
    shape = draw(shapes(min_rank=0))
    x = random_values(rng_from(draw), dtype, shape)
    if op == "ABS" and dtype == I32:  # abs(INT32_MIN) overflows: a REQUIRE failure
        x = np.where(x == np.iinfo(np.int32).min, 0, x).astype(I32)
    return x


def _check_unary(op: str, x: np.ndarray) -> None:
    g = Graph()
    xi = g.input(x)
    result = TensorType(x.dtype, x.shape)
    ref = g.reference(f"tosa.{op.lower()} {xi} : ({mlir_type(x.dtype, x.shape)})", result)
    _, max_ulps, abs_tol = UNARY[op]
    assert_same(run_op(op, result, input1=x), ref, max_ulps=max_ulps, abs_tol=abs_tol)


@pytest.mark.parametrize("op", sorted(UNARY))
@FEW
@given(data=st.data())
def test_unary_matches_reference(op, data):
    _check_unary(op, data.draw(unary_case(op)))


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(UNARY))
@MANY
@given(data=st.data())
def test_unary_matches_reference_many(op, data):
    _check_unary(op, data.draw(unary_case(op)))


@st.composite
def negate_case(draw):
    dtype = draw(st.sampled_from([I8, I16, I32, *FLOAT_TYPES]))
    x = random_values(rng_from(draw), dtype, draw(shapes(min_rank=0)))
    if dtype == I8:
        zps = (draw(st.integers(-128, 127)), draw(st.integers(-128, 127)))
    else:
        zps = (0, 0)
    if dtype == I32:
        x = np.where(x == np.iinfo(np.int32).min, 0, x).astype(I32)
    return x, zps


def _check_negate(x, zps):
    g = Graph()
    xi = g.input(x)
    zp_in, zp_out = (np.array([z], dtype=x.dtype) for z in zps)
    a, b = g.const(zp_in), g.const(zp_out)
    zt = mlir_type(x.dtype, (1,))
    result = TensorType(x.dtype, x.shape)
    ref = g.reference(
        f"tosa.negate {xi}, {a}, {b} : ({mlir_type(x.dtype, x.shape)}, {zt}, {zt})", result
    )
    assert_same(run_op("NEGATE", result, input1=x, input1_zp=zp_in, output_zp=zp_out), ref)


@FEW
@given(case=negate_case())
def test_negate(case):
    _check_negate(*case)


@pytest.mark.slow
@MANY
@given(case=negate_case())
def test_negate_many(case):
    _check_negate(*case)


def test_clz_edges():
    x = np.array([0, 1, -1, 2**31 - 1, -(2**31), 0x00010000], I32)
    out = run_op("CLZ", TensorType(I32, (6,)), input1=x)
    assert out.tolist() == [32, 31, 0, 1, 0, 15]


def test_unary_checks():
    with pytest.raises(TosaError, match="input1 element type must be one of i32"):
        run_op("CLZ", TensorType(I8, (2,)), input1=np.zeros(2, I8))
    with pytest.raises(TosaError, match="result shape must be"):
        run_op("EXP", TensorType(np.float32, (3,)), input1=np.zeros(2, np.float32))
    with pytest.raises(TosaError, match="output_zp must be 0 for i16"):
        run_op(
            "NEGATE",
            TensorType(I16, (2,)),
            input1=np.zeros(2, I16),
            input1_zp=np.zeros(1, I16),
            output_zp=np.ones(1, I16),
        )
    with pytest.raises(TosaError, match="input1_zp element type must be i8"):
        run_op(
            "NEGATE",
            TensorType(I8, (2,)),
            input1=np.zeros(2, I8),
            input1_zp=np.zeros(1, I32),
            output_zp=np.zeros(1, I8),
        )
