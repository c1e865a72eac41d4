"""The fast executor (backend "cpu" with the fast extra) against the reference (backend
"reference"): drawn graphs give the same results, integers bit-exact, floats within
pyvgf.testing's tolerance; the real int8 models bit-exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyvgf
from pyvgf.build import Graph
from pyvgf.testing import FAMILIES, GraphCase, assert_backends_agree, graphs, ops
from pyvgf.testing import strategies as s

pytestmark = pytest.mark.fast

DRAWS = settings(max_examples=10, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _agree(case: GraphCase, seed: int = 0) -> None:
    assert_backends_agree(case.to_vgf(), case.random_inputs(seed), backends=("reference", "cpu"))


def test_cpu_runs_the_fast_executor():
    assert pyvgf.load(_one_clamp(), backend="cpu").device.adapter.executor == "fast"
    assert pyvgf.load(_one_clamp(), backend="reference").device.adapter.executor == "reference"


def _one_clamp() -> bytes:
    case = GraphCase(Graph(), description="one CLAMP")
    case.graph.output(case.graph.op("CLAMP", input=case.input(np.dtype(np.int8), (2, 3)),
                                    min_val=-3, max_val=5))
    return case.to_vgf()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fast_equals_reference_on_single_ops(family):
    DRAWS(given(ops([family]))(lambda case: _agree(case)))()


@DRAWS
@given(graphs(max_ops=6, dtypes=("float32", "float16", "bfloat16")))
def test_fast_equals_reference_on_graphs(case):
    _agree(case, seed=3)


@st.composite
def fused_chains(draw) -> GraphCase:
    """A convolution (CONV2D or DEPTHWISE_CONV2D, any type) whose result only a RESCALE (for
    integers) and a CLAMP read: the chains the fast executor fuses."""
    case = GraphCase(Graph(), description="convolution chain")
    y = s.conv2d(draw, case)
    if y.dtype.kind == "i":
        y = s.rescale(draw, case, y)
        if y.dtype.itemsize < 4 and draw(st.booleans()):
            y = s.clamp(draw, case, y)
    elif y.dtype in (np.float32, np.float16):
        y = s.clamp(draw, case, y)
    case.graph.output(y)
    return case


@DRAWS
@given(fused_chains())
def test_fast_equals_reference_on_fused_chains(case):
    _agree(case, seed=5)


def test_real_models_bit_exact(real_model):
    fast = pyvgf.load(real_model, backend="cpu")
    reference = pyvgf.load(real_model, backend="reference")
    rng = np.random.default_rng(11)
    inputs = [rng.integers(-128, 128, info.shape).astype(info.dtype) for info in fast.inputs]
    for got, want in zip(fast.run(inputs), reference.run(inputs)):
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 1  # scores, not a constant tensor


def test_doctor_says_which_executor_runs_and_where_its_cache_is():
    from pyvgf.fast.compiled import cache_status
    from pyvgf.hal.cpu import report

    text = report()
    assert "executor: fast (pyvgf/fast/: numba" in text
    path, cached, loops = cache_status()
    assert f"compiled-loop cache: {path} (" in text and f"{cached} of {loops} loops cached" in text


def test_without_the_fast_extra_cpu_runs_the_reference(monkeypatch):
    """Where numba, SciPy or threadpoolctl is missing, backend="cpu" plans on the reference and
    `pyvgf doctor` says so, naming the install command."""
    import importlib.util

    from pyvgf.hal import cpu

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba" else real(name, *a))
    assert pyvgf.load(_one_clamp(), backend="cpu").device.adapter.executor == "reference"
    assert "executor: reference (plain numpy; numba not installed: pip install 'pyvgf[fast]'" \
        in cpu.report()


@pytest.mark.parametrize("tiles, mkl, says", [
    ("avx512vnni", True, "AVX-512 VNNI's products (input channels in fours), else MKL's int8 GEMM"),
    ("avx2", False, "AVX2's products (input channels in fours)\n"),
    (None, True, "MKL's int8 GEMM\n"),
    (None, False, "the float GEMM\n"),
])
def test_doctor_says_what_makes_int8_convolutions_products(monkeypatch, tiles, mkl, says):
    from pyvgf.fast import blas, compiled
    from pyvgf.hal.cpu import report

    monkeypatch.setattr(compiled, "INT8_TILES", tiles)
    monkeypatch.setattr(blas, "INT8", mkl)
    assert f"  int8 1x1 convolutions: {says}" in report() + "\n"
