"""Reductions and ARGMAX against tosa_reference_model on real one-op graphs."""

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
    FP8E4M3,
    FP8E5M2,
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

# op -> (element types, takes nan_mode, ulps allowed)
REDUCE = {
    "REDUCE_ALL": ([BOOL], False, 0),
    "REDUCE_ANY": ([BOOL], False, 0),
    "REDUCE_MAX": ([*INT_TYPES, *FLOAT_TYPES], True, 0),
    "REDUCE_MIN": ([*INT_TYPES, *FLOAT_TYPES], True, 0),
    "REDUCE_PRODUCT": (FLOAT_TYPES, False, 8),
    "REDUCE_SUM": ([I32, *FLOAT_TYPES], False, 8),
}


@st.composite
def reduce_case(draw, op):
    dtypes, has_nan_mode, _ = REDUCE[op]
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(shapes())
    axis = draw(st.integers(0, len(shape) - 1))
    rng = rng_from(draw)
    if op == "REDUCE_SUM" and dtype == I32:  # int32 overflow is a REQUIRE failure
        x = random_values(rng, dtype, shape, low=-(2**24), high=2**24)
    elif op in ("REDUCE_SUM", "REDUCE_PRODUCT"):
        x = random_values(rng, dtype, shape, scale=1.0, specials=draw(st.booleans()))
        x = np.abs(x) if op == "REDUCE_SUM" else x  # no cancellation: an ulp bound holds
    else:
        x = random_values(rng, dtype, shape)
    mode = draw(st.sampled_from([1, 2])) if has_nan_mode else None
    return x, axis, mode


def _check_reduce(op, x, axis, mode):
    g = Graph()
    xi = g.input(x)
    out_shape = x.shape[:axis] + (1,) + x.shape[axis + 1 :]
    result = TensorType(x.dtype, out_shape)
    attrs = {"axis": axis}
    text = f"axis = {axis} : i32"
    if mode is not None:
        attrs["nan_mode"] = mode
        text += f", nan_mode = {'PROPAGATE' if mode == 1 else 'IGNORE'}"
    ref = g.reference(
        f"tosa.{op.lower()} {xi} {{{text}}} : ({mlir_type(x.dtype, x.shape)})", result
    )
    assert_same(run_op(op, result, input=x, **attrs), ref, max_ulps=REDUCE[op][2])


@pytest.mark.parametrize("op", sorted(REDUCE))
@FEW
@given(data=st.data())
def test_reduce(op, data):
    _check_reduce(op, *data.draw(reduce_case(op)))


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(REDUCE))
@MANY
@given(data=st.data())
def test_reduce_many(op, data):
    _check_reduce(op, *data.draw(reduce_case(op)))


@st.composite
def argmax_case(draw):
    dtype = draw(st.sampled_from([I8, I16, *FLOAT_TYPES, FP8E4M3, FP8E5M2]))
    shape = draw(shapes())
    axis = draw(st.integers(0, len(shape) - 1))
    rng = rng_from(draw)
    x = random_values(
        rng,
        dtype,
        shape,
        low=-3 if dtype in (I8, I16) else None,
        high=3 if dtype in (I8, I16) else None,
    )
    return x, axis, draw(st.sampled_from([1, 2]))


def _check_argmax(x, axis, mode):
    g = Graph()
    xi = g.input(x)
    result = TensorType(I32, x.shape[:axis] + x.shape[axis + 1 :])
    text = f"axis = {axis} : i32, nan_mode = {'PROPAGATE' if mode == 1 else 'IGNORE'}"
    ref = g.reference(f"tosa.argmax {xi} {{{text}}} : ({mlir_type(x.dtype, x.shape)})", result)
    # SPIR-V has no rank-0 tensors: a rank-1 input's index comes as shape (1,) in pyvgf
    spirv_result = TensorType(I32, result.shape or (1,))
    ours = run_op("ARGMAX", spirv_result, axis=axis, nan_mode=mode, input=x)
    assert_same(ours.reshape(ref.shape), ref)


@FEW
@given(case=argmax_case())
def test_argmax(case):
    _check_argmax(*case)


@pytest.mark.slow
@MANY
@given(case=argmax_case())
def test_argmax_many(case):
    _check_argmax(*case)


def test_reduction_checks():
    with pytest.raises(TosaError, match=r"result shape must be \(2, 1\)"):
        run_op("REDUCE_SUM", TensorType(I32, (2,)), axis=1, input=np.zeros((2, 3), I32))
    with pytest.raises(TosaError, match=r"axis must be in \[0, 2\)"):
        run_op("REDUCE_MAX", TensorType(I8, (2, 1)), axis=2, nan_mode=1, input=np.zeros((2, 3), I8))
    with pytest.raises(TosaError, match="result element type must be one of i32"):
        run_op("ARGMAX", TensorType(I8, (2,)), axis=1, nan_mode=1, input=np.zeros((2, 3), I8))
