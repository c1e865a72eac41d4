"""Activation functions against tosa_reference_model on real one-op graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvgf.errors import TosaError
from pyvgf.types import TensorType
from support.tosa import (
    FLOAT_TYPES,
    FP32,
    I8,
    I16,
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

# op -> (allowed error in ulps of the reference value, absolute error allowed)
FLOAT_ACTIVATIONS = {"ERF": (4, 2.0**-23), "SIGMOID": (4, 2.0**-23), "TANH": (4, 2.0**-23)}


def _check_activation(op, x):
    g = Graph()
    xi = g.input(x)
    result = TensorType(x.dtype, x.shape)
    ref = g.reference(f"tosa.{op.lower()} {xi} : ({mlir_type(x.dtype, x.shape)})", result)
    max_ulps, abs_tol = FLOAT_ACTIVATIONS[op]
    assert_same(run_op(op, result, input=x), ref, max_ulps=max_ulps, abs_tol=abs_tol)


@st.composite
def float_case(draw):
    dtype = draw(st.sampled_from(FLOAT_TYPES))
    return random_values(
        rng_from(draw), dtype, draw(shapes(min_rank=0)), scale=draw(st.sampled_from([1.0, 4.0]))
    )


@pytest.mark.parametrize("op", sorted(FLOAT_ACTIVATIONS))
@FEW
@given(x=float_case())
def test_activation_matches_reference(op, x):
    _check_activation(op, x)


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(FLOAT_ACTIVATIONS))
@MANY
@given(x=float_case())
def test_activation_matches_reference_many(op, x):
    _check_activation(op, x)


@st.composite
def clamp_case(draw):
    dtype = draw(st.sampled_from([I8, I16, *FLOAT_TYPES]))
    x = random_values(rng_from(draw), dtype, draw(shapes()))
    if dtype in (I8, I16):
        info = np.iinfo(dtype)
        lo, hi = sorted(draw(st.integers(info.min, info.max)) for _ in range(2))
    else:
        lo, hi = sorted(float(np.float32(draw(st.integers(-16, 16))) / 4) for _ in range(2))
    return x, lo, hi, draw(st.sampled_from([1, 2]))


def _check_clamp(x, lo, hi, mode):
    g = Graph()
    xi = g.input(x)
    et = mlir_type(x.dtype, ()).removeprefix("tensor<").removesuffix(">")
    attr = (
        f"min_val = {lo} : {et}, max_val = {hi} : {et}, "
        f"nan_mode = {'PROPAGATE' if mode == 1 else 'IGNORE'}"
    )
    result = TensorType(x.dtype, x.shape)
    ref = g.reference(f"tosa.clamp {xi} {{{attr}}} : ({mlir_type(x.dtype, x.shape)})", result)
    assert_same(run_op("CLAMP", result, min_val=lo, max_val=hi, nan_mode=mode, input=x), ref)


@FEW
@given(case=clamp_case())
def test_clamp(case):
    _check_clamp(*case)


@pytest.mark.slow
@MANY
@given(case=clamp_case())
def test_clamp_many(case):
    _check_clamp(*case)


def test_erf_values():
    x = np.array([0.0, 0.5, -1.0, 2.0, 3.9, 4.0, -10.0, np.inf, np.nan], FP32)
    out = run_op("ERF", TensorType(FP32, x.shape), input=x)
    import math

    expected = [math.erf(v) if not math.isnan(v) else math.nan for v in x.tolist()]
    np.testing.assert_allclose(out, np.array(expected, np.float32), rtol=2e-7, equal_nan=True)


def test_erf_is_float64_erf_rounded_once_to_fp32():
    """Near +-1 too, where a power series loses float64 bits to cancellation (3.91923 gave
    0.99999994 instead of 1)."""
    import math

    x = np.linspace(-5, 5, 20001, dtype=FP32)
    out = run_op("ERF", TensorType(FP32, x.shape), input=x)
    np.testing.assert_array_equal(out, np.array([math.erf(v) for v in x.tolist()]).astype(FP32))
    assert run_op("ERF", TensorType(FP32, (2,)), input=np.array([3.91923, -3.91923], FP32)).tolist() == [1, -1]


def test_clamp_checks():
    with pytest.raises(TosaError, match="min_val 3 must not exceed max_val 2"):
        run_op(
            "CLAMP", TensorType(I8, (2,)), min_val=3, max_val=2, nan_mode=1, input=np.zeros(2, I8)
        )
    with pytest.raises(TosaError, match="min_val must be an integer in the range"):
        run_op(
            "CLAMP",
            TensorType(I8, (2,)),
            min_val=-300,
            max_val=2,
            nan_mode=1,
            input=np.zeros(2, I8),
        )
    with pytest.raises(TosaError, match="input element type must be one of"):
        run_op("SIGMOID", TensorType(I8, (2,)), input=np.zeros(2, I8))


@pytest.mark.fast
@pytest.mark.parametrize("nan_mode", [1, 2], ids=["propagate", "ignore"])
@pytest.mark.parametrize("bias_size", [1, 5])
def test_clamp_fused_after_a_convolution_equals_clamp_of_its_result(nan_mode, bias_size):
    """CLAMP's accumulator form (bias and clamp in one pass, in place) gives CLAMP of
    accumulator + bias for an fp32 result, NaN and infinities included, and declines others."""
    from pyvgf.fast.activation import _clamp_accumulated
    from pyvgf.tosa.activation import clamp

    rng = np.random.default_rng(bias_size)
    acc = (rng.standard_normal((2, 3, 4, 5)) * 8).astype(np.float32)
    acc[0, 0, 0] = [np.nan, np.inf, -np.inf, -0.0, 6.0]
    bias = rng.standard_normal(bias_size).astype(np.float32)
    bounds = dict(min_val=0.0, max_val=6.0, nan_mode=nan_mode)
    want = clamp(input=acc + bias, **bounds)
    form = _clamp_accumulated(**bounds)
    got = form(acc.copy(), bias, np.dtype(np.float32))
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got).tolist() == np.signbit(want).tolist()
    assert form(acc.astype(np.float64), bias, np.dtype(np.float64)) is None
    assert form(acc, bias, np.dtype(np.float16)) is None
