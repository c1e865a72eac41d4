"""pyvgf.testing: drawn graphs are valid TOSA (model-converter and tosa_reference_model accept
them), built files are the graphs model-converter makes, and the comparison helpers work."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fixtures
from pyvgf.build.dtypes import SUPPORTED
from pyvgf.testing import (
    FAMILIES,
    GraphCase,
    assert_backends_agree,
    graphs,
    ops,
    reference_run,
    tensors,
)
from support.build import canonical_graph

FAST = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_drawn_ops_are_accepted_by_model_converter_and_the_reference_model(family):
    @FAST
    @given(ops([family]))
    def check(case: GraphCase) -> None:
        fixtures.vgf_from_mlir(case.to_mlir())
        outputs = reference_run(case, case.random_inputs(0))
        assert [o.shape for o in outputs] == [v.shape for v in case.graph.outputs]
        assert [o.dtype for o in outputs] == [v.dtype for v in case.graph.outputs]

    check()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_built_op_is_the_graph_model_converter_makes_of_its_mlir(family):
    @FAST
    @given(ops([family]))
    def check(case: GraphCase) -> None:
        built = canonical_graph(case.to_vgf())
        theirs = canonical_graph(fixtures.vgf_from_mlir(case.to_mlir()))
        # model-converter folds no-op ops and turns some transposes into reshapes
        assume([n[0] for n in theirs[1]] == [n[0] for n in built[1]])
        assert built == theirs

    check()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(max_ops=6))
def test_drawn_graphs_are_valid_tosa(case):
    fixtures.vgf_from_mlir(case.to_mlir())
    outputs = reference_run(case, case.random_inputs(1))
    assert len(outputs) == len(case.graph.outputs) >= 1
    assert len([n for n in case.graph.nodes if n.kind == "op"]) >= 1


@settings(max_examples=20, deadline=None)
@given(ops(), st.integers(0, 2**32 - 1))
def test_random_inputs_are_reproducible_and_inside_their_domains(case, seed):
    first, again = case.random_inputs(seed), case.random_inputs(seed)
    assert len(first) == len(case.graph.inputs)
    for a, b, value, domain in zip(first, again, case.graph.inputs, case.domains):
        assert a.dtype == value.dtype and a.shape == value.shape
        assert np.array_equal(a, b)
        if a.dtype != np.bool_:
            assert domain.low <= a.astype(np.float64).min() and a.astype(np.float64).max() <= domain.high
        if domain.nonzero:
            assert (a != 0).all()


@settings(max_examples=30, deadline=None)
@given(tensors())
def test_tensors_have_supported_dtypes_and_finite_values(array):
    assert array.dtype in SUPPORTED
    assert 1 <= array.ndim <= 4
    if array.dtype.kind not in "biu":
        assert np.isfinite(array.astype(np.float32)).all()


@pytest.mark.parametrize("dtype", SUPPORTED, ids=str)
def test_tensors_of_each_supported_dtype(dtype):
    @settings(max_examples=5, deadline=None)
    @given(tensors(dtype, shape=(2, 3)))
    def check(array):
        assert array.dtype == dtype and array.shape == (2, 3)

    check()


@settings(max_examples=3, deadline=None)
@given(ops(["conv2d"]))
def test_a_case_prints_as_its_mlir(case):
    assert repr(case).endswith(case.to_mlir())
    assert 'conv2d"(%arg0' in repr(case)


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="unknown operator families"):
        ops(["conv7d"])


def test_graphs_of_integers_are_refused():
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        graphs(dtypes=["int8"])


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(max_ops=3, dtypes=["float16", "bfloat16"]))
def test_half_precision_graphs_are_valid_tosa(case):
    assert {v.dtype.name for v in case.graph.inputs} <= {"float16", "bfloat16"}
    reference_run(case, case.random_inputs(2))


def _returns(*arrays):
    return lambda model, inputs: [np.array(a) for a in arrays]


def test_backends_agree_within_the_dtype_tolerance():
    want = np.array([1.0, 1000.0, np.nan], np.float32)
    close = want * np.float32(1 + 2e-5)
    got = assert_backends_agree(b"", [], backends=(_returns(want), _returns(close)))
    assert np.array_equal(got[0], want, equal_nan=True)


@pytest.mark.parametrize(
    ("want", "got", "message"),
    [
        (np.array([1, 2], np.int8), np.array([1, 3], np.int8), "1 of 2 elements differ; first at \\(1,\\)"),
        (np.array([1.0], np.float32), np.array([1.01], np.float32), "elements differ"),
        (np.array([np.nan], np.float32), np.array([0.0], np.float32), "elements differ"),
        (np.array([0.0, 1.0], np.float32), np.array([0.0, np.nan], np.float32), "first at \\(1,\\)"),
        (np.array([1, 2], np.int8), np.array([1, 2], np.int16), "dtype"),
        (np.array([1, 2], np.int8), np.array([[1, 2]], np.int8), "shape"),
    ],
)
def test_backends_that_disagree_fail_naming_the_difference(want, got, message):
    with pytest.raises(AssertionError, match=message):
        assert_backends_agree(b"", [], backends=(_returns(want), _returns(got)))


def test_backends_are_given_copies_of_the_inputs():
    inputs = [np.arange(3, dtype=np.float32)]

    def scribble(model, arrays):
        arrays[0][:] = 7
        return [arrays[0]]

    with pytest.raises(AssertionError):
        assert_backends_agree(b"", inputs, backends=(_returns(np.arange(3, dtype=np.float32)), scribble))
    assert np.array_equal(inputs[0], np.arange(3, dtype=np.float32))
