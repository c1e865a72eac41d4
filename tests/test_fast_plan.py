"""The fast executor's plan (pyvgf/fast/plan.py): plan-time forms and fusion give what the
reference's ops give one by one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from support.spirv import fixtures, random_input, vgf_graph

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf.fast import conv, kernels
from pyvgf.fast.plan import FastPlan
from pyvgf.fast.registry import fast_ops
from pyvgf.tosa import OPS as REFERENCE

pytestmark = pytest.mark.fast

FAST_OPS = fast_ops(REFERENCE)


# -- fusion ------------------------------------------------------------------------------------------


FUSED_CHAINS = {
    # every convolution path (im2col, depthwise with strides and multipliers, a depthwise layer
    # and the 1x1 one after it as one step: patterns._depthwise_conv) with a CLAMP;
    # the last CONV2D is also a graph result, so its CLAMP stays a step of its own
    "interpreter_fuse_f32": [["CONV2D", "CLAMP"], ["DEPTHWISE_CONV2D", "CLAMP", "CONV2D", "CLAMP"],
                             ["DEPTHWISE_CONV2D", "CLAMP"], ["DEPTHWISE_CONV2D", "CLAMP"],
                             ["DEPTHWISE_CONV2D", "CLAMP"]],
    "interpreter_fuse_i8": [["CONV2D", "RESCALE"], ["DEPTHWISE_CONV2D", "RESCALE", "CLAMP"],
                            ["CONV2D", "RESCALE"]],
    # a RESCALE made in the convolution's compiled loop (1x1 blocks, the depthwise window),
    # then a second one (a residual branch's, to int32 or int16) on its result; a first
    # RESCALE rounding twice, which the loops make as well
    "interpreter_fuse_rescales": [["CONV2D", "RESCALE", "RESCALE"], ["DEPTHWISE_CONV2D", "RESCALE"],
                                  ["CONV2D", "RESCALE", "RESCALE"],
                                  ["DEPTHWISE_CONV2D", "RESCALE", "RESCALE"],
                                  ["CONV2D", "RESCALE", "RESCALE"]],
}


@pytest.mark.parametrize("name", [*FUSED_CHAINS, "spirv_conv_add", "spirv_int8_conv_rescale"])
def test_plan_time_forms_give_what_the_ops_give(name, monkeypatch):
    """Convolutions bound to their plan-time forms (registry `prepare`) give the results of the
    ops called as they are; each works out its weights once, at its first run (not at load)."""
    graph, constants = vgf_graph(fixtures.model(name))
    worked_out: list[object] = []
    real = conv._compute_dtype
    monkeypatch.setattr(conv, "_compute_dtype", lambda *a: worked_out.append(a) or real(*a))
    convs = {"CONV2D", "CONV3D", "DEPTHWISE_CONV2D"}
    plan = FastPlan(graph, constants)
    steps = [s for s in plan._steps if s.node.op in convs]
    assert steps and all(s.fn is not REFERENCE[s.node.op].fn and not s.static for s in steps)
    assert worked_out == []
    rng = np.random.default_rng(9)
    inputs = [random_input(p.type, rng) for p in graph.inputs]
    convolutions = sum(node.op in convs for node in plan.schedule)  # (a step may make two)
    first = plan.run(inputs)
    assert len(worked_out) == convolutions
    again = plan.run(inputs)
    assert len(worked_out) == convolutions
    as_called = FastPlan(graph, constants, {k: replace(v, prepare=None) for k, v in FAST_OPS.items()})
    assert all(s.fn is FAST_OPS[s.node.op].fn for s in as_called._steps if s.node.op in convs)
    want = as_called.run(inputs)
    assert len(worked_out) == 2 * convolutions  # called as they are: every run works it out
    for got, more, expected in zip(first, again, want):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, more)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", FUSED_CHAINS)
@pytest.mark.parametrize("band_bytes", [None, 1], ids=["default-bands", "one-row-bands"])
def test_bandwise_consumers_fuse_into_convolutions(name, band_bytes, monkeypatch):
    """Fused chains give what the ops give one by one, whatever the band size."""
    if band_bytes is not None:
        for module, attr in ((kernels, "BAND_BYTES"), (conv, "DEPTHWISE_BAND_BYTES"),
                             (conv, "POINTWISE_BAND_BYTES"), (conv, "SHARED_BAND_BYTES")):
            monkeypatch.setattr(module, attr, band_bytes)
    graph, constants = vgf_graph(fixtures.model(name))
    plan = FastPlan(graph, constants)
    assert [[n.op for n in chain] for chain in plan.fused] == FUSED_CHAINS[name]
    assert len(plan.schedule) + len(plan.folded) == len(graph.nodes)
    apart = FastPlan(graph, constants, {k: replace(v, bandwise=False) for k, v in FAST_OPS.items()})
    assert apart.fused == ()
    rng = np.random.default_rng(5)
    inputs = [random_input(p.type, rng) for p in graph.inputs]
    for got, want in zip(plan.run(inputs), apart.run(inputs)):
        assert got.dtype == want.dtype and got.shape == want.shape
        if got.dtype.kind in "iu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# -- band-wise arithmetic with a constant ------------------------------------------------------------


def _conv_then(op: str, constant_shape: tuple[int, ...], *, matmul: bool = False, batch: int = 2):
    """A 3x3 CONV2D (or a MATMUL of `batch` products), then `op` of its result and a constant
    of `constant_shape`."""
    from pyvgf.build import Graph
    from pyvgf.testing import GraphCase

    case = GraphCase(Graph(), description=f"then {op}")
    g, rng = case.graph, np.random.default_rng(len(constant_shape))
    if matmul:
        x = case.input(np.float32, (batch, 9, 16))
        y = g.op("MATMUL", A=x, B=rng.standard_normal((batch, 16, 24)).astype(np.float32),
                 A_zp=np.zeros(1, np.float32), B_zp=np.zeros(1, np.float32),
                 result=(np.float32, (batch, 9, 24)))
    else:
        x = case.input(np.float32, (1, 12, 10, 8))
        y = g.op("CONV2D", input=x, weight=rng.standard_normal((24, 3, 3, 8)).astype(np.float32),
                 bias=rng.standard_normal(24).astype(np.float32), input_zp=np.zeros(1, np.float32),
                 weight_zp=np.zeros(1, np.float32), pad=(1, 1, 1, 1), stride=(1, 1), dilation=(1, 1),
                 acc_type="FP32", result=(np.float32, (1, 12, 10, 24)))
    other = rng.standard_normal(constant_shape).astype(np.float32)
    operands = {"input1": other, "input2": y} if op == "SUB" else {"input1": y, "input2": other}
    if op == "MUL":
        operands["shift"] = np.zeros(1, np.int8)
    g.output(g.op(op, **operands, result=(np.float32, y.shape)))
    return case


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("constant, fused", [((1, 1, 1, 24), True), ((1, 1, 1, 1), True),
                                             ((1, 12, 10, 24), False)],
                         ids=["per-channel", "scalar", "whole-tensor"])
@pytest.mark.parametrize("band_bytes", [None, 1], ids=["default-bands", "one-row-bands"])
def test_arithmetic_with_a_constant_fuses_where_it_broadcasts_along_channels(op, constant, fused,
                                                                             band_bytes, tmp_path,
                                                                             monkeypatch):
    """An ADD, SUB or MUL of a convolution's result and a constant runs in the convolution's
    bands where the constant is one value per channel or one in all (the same for every band);
    a constant of the whole tensor's shape would meet each band with its first rows, so that op
    runs as a step of its own. Either way, the reference's results."""
    from pyvgf.testing import assert_backends_agree

    monkeypatch.setattr(kernels, "BAND_BYTES", band_bytes or kernels.BAND_BYTES)
    case = _conv_then(op, constant)
    path = tmp_path / "case.vgf"
    path.write_bytes(case.to_vgf())
    plan = FastPlan(*vgf_graph(path))
    assert [[n.op for n in chain] for chain in plan.fused] == ([["CONV2D", op]] if fused else [])
    assert_backends_agree(case.to_vgf(), case.random_inputs(4), backends=("reference", "cpu"))


def test_a_matmul_takes_its_bias_into_its_result(tmp_path):
    """MATMUL then an ADD of one bias per column: one step, the reference's results."""
    from pyvgf.testing import assert_backends_agree

    case = _conv_then("ADD", (1, 1, 24), matmul=True)
    path = tmp_path / "case.vgf"
    path.write_bytes(case.to_vgf())
    assert [[n.op for n in chain] for chain in FastPlan(*vgf_graph(path)).fused] == [["MATMUL", "ADD"]]
    assert_backends_agree(case.to_vgf(), case.random_inputs(4), backends=("reference", "cpu"))


@pytest.mark.parametrize("block_rows", [None, 1], ids=["unsplit", "split"])
def test_one_matmuls_bias_is_added_in_its_blocks(block_rows, tmp_path, monkeypatch):
    """One product then an ADD of one bias per column: the GEMM adds the bias to each block as
    it is made (split_gemm's `finish`), or after it where it does not split; the reference's
    results either way."""
    from pyvgf.testing import assert_backends_agree

    monkeypatch.setattr(kernels, "GEMM_BLOCK_ROWS", block_rows or kernels.GEMM_BLOCK_ROWS)
    finished: list[bool] = []
    real = kernels.split_gemm  # (kernels.biased_product's)
    monkeypatch.setattr(kernels, "split_gemm", lambda a, b, out, finish=None, residual=None: finished.append(
        finish is not None) or real(a, b, out, finish, residual))
    case = _conv_then("ADD", (1, 1, 24), matmul=True, batch=1)
    assert_backends_agree(case.to_vgf(), case.random_inputs(4), backends=("reference", "cpu"))
    assert finished and all(finished)
