"""GATHER and SCATTER against tosa_reference_model on real one-op graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvgf.errors import TosaError
from pyvgf.types import TensorType
from support.tosa import (
    BF16,
    BOOL,
    FP8E4M3,
    FP8E5M2,
    FP16,
    FP32,
    I8,
    I16,
    I32,
    Graph,
    assert_same,
    examples,
    mlir_type,
    random_values,
    rng_from,
    run_op,
)

FEW = examples(12)
MANY = examples(200)
TYPES = [BOOL, I8, I16, I32, FP16, BF16, FP32, FP8E4M3, FP8E5M2]


@st.composite
def gather_case(draw):
    dtype = draw(st.sampled_from(TYPES))
    n, k, c, w = (draw(st.integers(1, 4)) for _ in range(4))
    rng = rng_from(draw)
    values = random_values(rng, dtype, (n, k, c))
    indices = rng.integers(0, k, (n, w)).astype(I32)
    return values, indices


def _check_gather(values, indices):
    g = Graph()
    v, i = g.input(values), g.input(indices)
    result = TensorType(values.dtype, (values.shape[0], indices.shape[1], values.shape[2]))
    ref = g.reference(
        f"tosa.gather {v}, {i} : ({mlir_type(values.dtype, values.shape)}, "
        f"{mlir_type(I32, indices.shape)})",
        result,
    )
    assert_same(run_op("GATHER", result, values=values, indices=indices), ref)


@FEW
@given(case=gather_case())
def test_gather(case):
    _check_gather(*case)


@pytest.mark.slow
@MANY
@given(case=gather_case())
def test_gather_many(case):
    _check_gather(*case)


@st.composite
def scatter_case(draw):
    dtype = draw(st.sampled_from(TYPES))
    n, k, c = (draw(st.integers(1, 4)) for _ in range(3))
    w = draw(st.integers(1, k))
    rng = rng_from(draw)
    values_in = random_values(rng, dtype, (n, k, c))
    indices = np.stack([rng.permutation(k)[:w] for _ in range(n)]).astype(I32)
    return values_in, indices, random_values(rng, dtype, (n, w, c))


def _check_scatter(values_in, indices, updates):
    g = Graph()
    v, i, u = g.input(values_in), g.input(indices), g.input(updates)
    result = TensorType(values_in.dtype, values_in.shape)
    ref = g.reference(
        f"tosa.scatter {v}, {i}, {u} : ({mlir_type(values_in.dtype, values_in.shape)}, "
        f"{mlir_type(I32, indices.shape)}, {mlir_type(updates.dtype, updates.shape)})",
        result,
    )
    assert_same(run_op("SCATTER", result, values_in=values_in, indices=indices, input=updates), ref)


@FEW
@given(case=scatter_case())
def test_scatter(case):
    _check_scatter(*case)


@pytest.mark.slow
@MANY
@given(case=scatter_case())
def test_scatter_many(case):
    _check_scatter(*case)


def test_index_errors_are_tosa_errors():
    values = np.zeros((1, 3, 2), FP32)
    with pytest.raises(TosaError, match=r"indices must lie in \[0, 3\), found 3"):
        run_op("GATHER", TensorType(FP32, (1, 1, 2)), values=values, indices=np.array([[3]], I32))
    with pytest.raises(TosaError, match="more than once"):
        run_op(
            "SCATTER",
            TensorType(FP32, (1, 3, 2)),
            values_in=values,
            indices=np.array([[1, 1]], I32),
            input=np.zeros((1, 2, 2), FP32),
        )
    with pytest.raises(TosaError, match="indices element type must be one of i32"):
        run_op("GATHER", TensorType(FP32, (1, 1, 2)), values=values, indices=np.array([[0]], I16))
