"""Differential tests on drawn graphs: pyvgf's backends against tosa_reference_model, and
built VGF files against model-converter's files of the same graph on scenario_runner."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import fixtures
import pyvgf
import references
from pyvgf.testing import (
    FAMILIES,
    GraphCase,
    assert_backends_agree,
    graphs,
    ops,
    pytest_plugin,
    reference_run,
)
from support.graphs import GRAPHS
from support.vulkan import require_vulkan

FAST = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
pytest_plugin.register_profiles()
LONG = settings.get_profile("long")
"""The plugin's nightly profile (1000 examples), for the tests marked slow."""


def _reference(case: GraphCase):
    def tosa_reference_model(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return reference_run(case, inputs)

    return tosa_reference_model


def _agree(case: GraphCase, backend: str, seed: int = 0) -> None:
    if any(n.op in ("FFT2D", "RFFT2D") for n in case.graph.nodes if n.kind == "op"):
        _agree_on_fft(case, backend, seed)
    else:
        assert_backends_agree(case.to_vgf(), case.random_inputs(seed), backends=(_reference(case), backend))


def _fft_bound(case: GraphCase, inputs: list[np.ndarray]) -> np.ndarray:
    """The error each result of a one-op FFT2D or RFFT2D graph may have, per batch: ks * 2**-24
    (half an fp32 ulp) times the sum of every |input| of the batch, which bounds the sum of
    |x * twiddle| of any output. ks is 2 * H * W for FFT2D, H * W for RFFT2D, as tosa-tools'
    generator counts it for the conformance suite's DOT_PRODUCT check (whose abs_bound for fp32
    is 2 * 3 * ks of these units)."""
    (node,) = [n for n in case.graph.nodes if n.kind == "op"]
    _, h, w = inputs[0].shape
    ks = (2 if node.op == "FFT2D" else 1) * h * w
    total = sum(np.abs(a.astype(np.float64)).sum(axis=(1, 2)) for a in inputs)
    return ks * 2.0**-24 * total[:, None, None]


def _agree_on_fft(case: GraphCase, backend: str, seed: int) -> None:
    """FFT results are held to a dot-product error bound (`_fft_bound`, as the conformance
    suite checks FFTs), not to the float32 tolerance of elementwise results: tosa_reference_model
    computes them in float32 (at 16x16, errors 20 times those of the cpu backend, which computes
    in float64), as the emulation layer does, so a backend may differ from it by twice the bound
    each side is held to."""
    inputs = case.random_inputs(seed)
    want = reference_run(case, inputs)
    got = pyvgf.load(case.to_vgf(), backend=backend).run(inputs)
    bound = 2 * _fft_bound(case, inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape
        error = np.abs(g.astype(np.float64) - w)
        assert (error <= bound).all(), f"error {error.max()} over the bound {bound.min()}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_cpu_agrees_with_the_reference_model_on_single_ops(family):
    FAST(given(ops([family]))(lambda case: _agree(case, "cpu")))()


@FAST
@given(graphs(max_ops=6))
def test_cpu_agrees_with_the_reference_model_on_graphs(case):
    _agree(case, "cpu", seed=3)


@pytest.mark.slow
@LONG
@given(ops())
def test_cpu_agrees_with_the_reference_model_on_many_ops(case):
    _agree(case, "cpu")


@pytest.mark.slow
@LONG
@given(graphs(max_ops=8))
def test_cpu_agrees_with_the_reference_model_on_many_graphs(case):
    _agree(case, "cpu")


@pytest.mark.vulkan
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(max_ops=4))
def test_vulkan_backend_agrees_with_the_reference_model_on_graphs(case):
    _agree(case, "vulkan", seed=5)


@pytest.mark.vulkan
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops(["fft"]))
def test_vulkan_backend_agrees_with_the_reference_model_on_ffts(case):
    require_vulkan()
    _agree(case, "vulkan", seed=7)


def _scenario(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "built.vgf"
        path.write_bytes(data)
        return references.scenario_run(path, inputs)


EMULATION_CRASHES = {
    "build_fft": "the emulation layer 0.11.0 crashes (SIGSEGV in vkCreateDataGraphPipelinesARM) on an FFT2D or "
                 "RFFT2D whose results are not all graph outputs; on model-converter's file too",
}
"""Built graphs the emulation layer cannot run, and why."""


@pytest.mark.vulkan
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.skip(reason=EMULATION_CRASHES[n]))
                                  if n in EMULATION_CRASHES else n for n in sorted(GRAPHS)])
def test_built_files_run_on_scenario_runner_as_model_converter_files_do(name):
    graph = GRAPHS[name]()
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-100, 100, v.shape).astype(v.dtype) for v in graph.inputs]
    built = _scenario(graph.to_bytes(), inputs)
    theirs = references.scenario_run(fixtures.vgf_from_mlir(graph.to_mlir()), inputs)
    assert len(built) == len(theirs) == len(graph.outputs)
    for a, b in zip(built, theirs):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.vulkan
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops(["conv2d", "rescale", "reduction", "data_layout", "fft"]))
def test_drawn_ops_built_run_on_scenario_runner_as_model_converter_files_do(case):
    inputs = case.random_inputs(2)
    built = _scenario(case.to_vgf(), inputs)
    theirs = references.scenario_run(fixtures.vgf_from_mlir(case.to_mlir()), inputs)
    for a, b in zip(built, theirs):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
