"""The graph interpreter: plan-time checks and folding, runs, output ownership, thread safety.

Most tests use small test-only ops in a registry of their own (`TEST_OPS`), so they exercise
the interpreter whatever ops pyvgf implements; `test_matches_tosa_reference_model` runs the real
ops on model-converter graphs against Arm's tosa_reference_model.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pyvgf.errors import ModelInputError, TosaError
from pyvgf.spirv import Const, Graph, GraphConstant, GraphInterface, Input, Node, Result, decode_graph
from pyvgf.tosa.interpreter import GraphPlan
from pyvgf.tosa.registry import OpDef
from pyvgf.types import TensorType
from support.spirv import REAL_MODELS, fixtures, model_words, random_input, vgf_graph

F32 = np.dtype(np.float32)
TEST_OPS: dict[str, OpDef] = {}
CALLS: list[str] = []


def fake_op(name):
    def register(fn):
        TEST_OPS[name] = OpDef(name, fn)

        def check(checker):
            TEST_OPS[name].check = checker
            return checker

        fn.check = check
        return fn

    return register


@fake_op("ADD")
def _add(*, input1, input2):
    CALLS.append("ADD")
    return np.add(input1, input2, dtype=input1.dtype)


@_add.check
def _add_check(result, *, input1, input2):
    for name, v in (("input1", input1), ("input2", input2)):
        dtype = v.dtype
        if dtype != result.dtype:
            raise TosaError(f"ADD: {name} is {dtype}, the result {result.dtype}")


@fake_op("CONV2D")
def _conv1x1(*, pad, stride, dilation, acc_type, local_bound, input, weight, bias, input_zp, weight_zp):
    return (np.einsum("nhwc,oijc->nhwo", input - input_zp, weight - weight_zp) + bias).astype(input.dtype)


@fake_op("CONCAT")
def _concat(*, axis, input1):
    return np.concatenate(input1, axis=axis)


@fake_op("SPLIT2")  # a two-result op: the halves of the last axis
def _split(*, input):
    half = input.shape[-1] // 2
    return input[..., :half].copy(), input[..., half:].copy()


@fake_op("IDENTITY")  # returns its operand itself (as an op may for a no-op reshape)
def _identity(*, input1):
    return input1


@fake_op("CAST")
def _cast(*, input, result_dtype):
    return input.astype(result_dtype)


@fake_op("WRONG_SHAPE")
def _wrong_shape(*, input1):
    return input1[..., :1].copy()


@fake_op("RAISES")
def _raises(*, input1):
    raise ZeroDivisionError("divisor 0")


def t(*shape, dtype=F32) -> TensorType:
    return TensorType(np.dtype(dtype), shape)


def node(nid, op, result_type, name=None, **operands) -> Node:
    return Node(nid, op, result_type, operands, name, 100 + nid)


def make_graph(inputs, nodes, results, constants=None) -> Graph:
    ins = [GraphInterface(i, 0, i, ty) for i, ty in enumerate(inputs)]
    outs = [GraphInterface(i, 0, len(inputs) + i, r.type if not isinstance(r, Const) else t(*r.value.shape))
            for i, r in enumerate(results)]
    return Graph("g", ins, outs, constants or {}, nodes, results)


def res(n: Node, element=None) -> Result:
    ty = n.result_type[element] if element is not None else n.result_type
    return Result(n.id, n.id, ty, element)


X = t(2, 3)
x_in = Input(1, 0, X)


def test_runs_a_model_converter_graph():
    g = decode_graph(model_words("spirv_conv_add"))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    b = rng.standard_normal((1, 4, 4, 2)).astype(np.float32)
    c0 = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    out = GraphPlan(g, {0: c0}, TEST_OPS).run([a, b])
    w = g.nodes[0].operands["weight"].value
    np.testing.assert_allclose(out[0], np.einsum("nhwc,oijc->nhwo", a, w) + [0.5, -0.5] + b, rtol=1e-6)
    np.testing.assert_array_equal(out[1], a + c0)


def test_nodes_with_known_operands_are_folded_at_plan_time():
    k = Const(50, np.arange(6, dtype=np.float32).reshape(2, 3))
    gc = GraphConstant(51, 7, X)
    folded = node(1, "ADD", X, input1=k, input2=gc)
    live = node(2, "ADD", X, input1=x_in, input2=res(folded))
    g = make_graph([X], [folded, live], [res(live)], {7: X})
    CALLS.clear()
    plan = GraphPlan(g, {7: np.full((2, 3), 10, np.float32)}, TEST_OPS)
    assert plan.folded == (folded,) and plan.schedule == (live,)
    assert CALLS == ["ADD"]
    x = np.ones((2, 3), np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(plan.run([x])[0], x + 10 + k.value)
    assert CALLS == ["ADD"] * 4


def test_check_sees_types_for_run_time_operands_and_values_for_known_ones():
    seen = {}
    ops = dict(TEST_OPS)
    ops["ADD"] = OpDef("ADD", _add, lambda result, **kw: seen.update(kw, result=result))
    k = Const(50, np.ones((2, 3), np.float32))
    n = node(1, "ADD", X, input1=x_in, input2=k)
    GraphPlan(make_graph([X], [n], [res(n)]), {}, ops)
    assert seen["result"] == X and seen["input1"] == X
    assert seen["input2"] is k.value


def test_variadic_operands_mix_known_and_run_time_values():
    k = Const(50, np.full((2, 1), 7, np.float32))
    n = node(1, "CONCAT", t(2, 7), axis=Const(51, 1), input1=(x_in, k, x_in))
    plan = GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(plan.run([x])[0], np.concatenate([x, k.value, x], axis=1))


def test_ops_with_two_results():
    n = node(1, "SPLIT2", (t(2, 2), t(2, 2)), input=Input(1, 0, t(2, 4)))
    after = node(2, "ADD", t(2, 2), input1=res(n, 1), input2=res(n, 1))
    plan = GraphPlan(make_graph([t(2, 4)], [n, after], [res(n, 0), res(after)]), {}, TEST_OPS)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    lo, doubled = plan.run([x])
    np.testing.assert_array_equal(lo, x[:, :2])
    np.testing.assert_array_equal(doubled, 2 * x[:, 2:])


def test_ops_declaring_result_dtype_get_the_declared_element_type():
    n = node(1, "CAST", t(2, 3, dtype=np.int16), input=x_in)
    folded = node(2, "CAST", t(2, dtype=np.int8), input=Const(9, np.array([1.0, 2.0], np.float32)))
    plan = GraphPlan(make_graph([X], [n, folded], [res(n), res(folded)]), {}, TEST_OPS)
    assert plan.folded == (folded,)
    out, small = plan.run([np.full((2, 3), 3.0, np.float32)])
    assert out.dtype == np.int16 and (out == 3).all()
    assert small.dtype == np.int8 and small.tolist() == [1, 2]


# -- errors ------------------------------------------------------------------------------------------


def test_unknown_op_is_named():
    n = node(1, "NOT_AN_OP", X, name="conv_1", input1=x_in)
    with pytest.raises(TosaError,
                       match=r'NOT_AN_OP %1 "conv_1" \(word 101\): TOSA operator NOT_AN_OP is not implemented'):
        GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)


def test_check_errors_name_the_node_and_operand():
    n = node(3, "ADD", X, name="sum", input1=x_in, input2=Const(9, np.ones((2, 3), np.int32)))
    with pytest.raises(TosaError, match=r'^ADD %3 "sum" \(word 103\): ADD: input2 is int32, the result float32$'):
        GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)


def test_check_crashing_on_odd_operands_is_a_tosa_error():
    n = node(3, "ADD", X, input1=x_in, input2=Const(9, 2.5))  # a Python float has no dtype
    with pytest.raises(TosaError, match=r"ADD %3 \(word 103\): AttributeError"):
        GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)


def test_failing_fold_names_the_node():
    n = node(4, "RAISES", X, input1=Const(9, np.ones((2, 3), np.float32)))
    with pytest.raises(TosaError, match=r"RAISES %4 \(word 104\): ZeroDivisionError: divisor 0"):
        GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)


def test_failing_run_names_the_node():
    n = node(4, "RAISES", X, input1=x_in)
    plan = GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)
    with pytest.raises(TosaError, match=r"RAISES %4 \(word 104\): ZeroDivisionError"):
        plan.run([np.ones((2, 3), np.float32)])


def test_op_result_of_the_wrong_shape():
    n = node(5, "WRONG_SHAPE", X, input1=x_in)
    plan = GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)
    with pytest.raises(TosaError, match=r"WRONG_SHAPE %5 \(word 105\): result 0 is tensor<2x1 float32>, "
                                        r"the graph declares tensor<2x3 float32>"):
        plan.run([np.ones((2, 3), np.float32)])


@pytest.mark.parametrize(
    "given, match",
    [
        ({}, r"graph constant 7 \(tensor<2x3 float32>\) is not given"),
        ({7: np.ones((2, 3), np.float64)}, "graph constant 7 is tensor<2x3 float32>, given tensor<2x3 float64>"),
        ({7: np.ones((3, 2), np.float32)}, "given tensor<3x2 float32>"),
        ({7: [[1.0] * 3] * 2}, "must be a numpy array, got list"),
    ],
)
def test_graph_constants_are_checked(given, match):
    n = node(1, "ADD", X, input1=x_in, input2=GraphConstant(51, 7, X))
    with pytest.raises(TosaError, match=match):
        GraphPlan(make_graph([X], [n], [res(n)], {7: X}), given, TEST_OPS)


def test_wrong_number_of_inputs():
    n = node(1, "ADD", X, input1=x_in, input2=x_in)
    plan = GraphPlan(make_graph([X], [n], [res(n)]), {}, TEST_OPS)
    with pytest.raises(ModelInputError, match="takes 1 inputs, got 2"):
        plan.run([np.ones((2, 3), np.float32)] * 2)


# -- ownership and threads ---------------------------------------------------------------------------


def test_outputs_are_new_arrays_the_caller_owns():
    k = Const(50, np.ones((2, 3), np.float32))
    k.value.flags.writeable = False
    ident = node(1, "IDENTITY", X, input1=x_in)
    add = node(2, "ADD", X, input1=x_in, input2=k)
    g = make_graph([X], [ident, add], [res(ident), x_in, k, res(add), res(add)])
    plan = GraphPlan(g, {}, TEST_OPS)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    outs = plan.run([x])
    for out in outs:
        assert out.flags.writeable and out.flags.owndata
        assert not np.shares_memory(out, x) and not np.shares_memory(out, k.value)
    assert outs[3] is not outs[4] and not np.shares_memory(outs[3], outs[4])
    np.testing.assert_array_equal(outs[0], x)
    np.testing.assert_array_equal(outs[2], k.value)
    outs[2][0, 0] = 99  # the plan's constant is untouched
    np.testing.assert_array_equal(plan.run([x])[2], k.value)


def test_inputs_and_given_constants_are_not_modified():
    gc = GraphConstant(51, 7, X)
    n = node(1, "ADD", X, input1=x_in, input2=gc)
    c = np.full((2, 3), 2, np.float32)
    plan = GraphPlan(make_graph([X], [n], [res(n)], {7: X}), {7: c}, TEST_OPS)
    x = np.ones((2, 3), np.float32)
    plan.run([x])
    assert c.flags.writeable and (c == 2).all() and (x == 1).all()


def test_concurrent_runs_share_one_plan():
    g = decode_graph(model_words("spirv_conv_add"))
    rng = np.random.default_rng(1)
    c0 = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    plan = GraphPlan(g, {0: c0}, TEST_OPS)
    cases = [[rng.standard_normal((1, 4, 4, 8)).astype(np.float32),
              rng.standard_normal((1, 4, 4, 2)).astype(np.float32)] for _ in range(16)]
    expected = [plan.run(c) for c in cases]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            for got, want in zip(pool.map(plan.run, cases), expected):
                for a, b in zip(got, want):
                    np.testing.assert_array_equal(a, b)


# -- the real ops against Arm's reference model ------------------------------------------------------


REFERENCE_MODELS = [
    "spirv_conv_add",
    "spirv_int_clamp",
    "spirv_int8_conv_rescale",
    "spirv_layout",
    "spirv_rfft",
    "spirv_fp16_bf16",
    "interpreter_fuse_f32",
    "interpreter_fuse_i8",
    "interpreter_fuse_rescales",
]  # not spirv_int48_fp8: tosa_reference_model cannot hand back INT48 outputs


def _executor(name: str) -> type[GraphPlan]:
    """The plan class of an executor: the reference, or the fast one (skipped without it)."""
    if name == "reference":
        return GraphPlan
    from pyvgf.fast.plan import FastPlan

    return FastPlan


EXECUTORS = ["reference", pytest.param("fast", marks=pytest.mark.fast)]


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("name", REFERENCE_MODELS)
def test_matches_tosa_reference_model(name, executor):
    from references import tosa_reference  # tools/references.py

    graph, constants = vgf_graph(fixtures.model(name))
    plan = _executor(executor)(graph, constants)
    rng = np.random.default_rng(7)
    inputs = [random_input(p.type, rng) for p in graph.inputs]
    ours = plan.run(inputs)
    theirs = tosa_reference((fixtures.MODELS / f"{name}.mlir").read_text(), inputs)
    assert len(theirs) == len(ours)
    for got, want, port in zip(ours, theirs, graph.outputs):
        assert (got.dtype, got.shape) == (want.dtype, want.shape) == (port.type.dtype, port.type.shape)
        if port.type.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("name", [pytest.param("mobilenet_v2", marks=pytest.mark.slow), "vww4"])
def test_real_models_plan_and_run(name, executor):
    graph, constants = vgf_graph(REAL_MODELS[name])
    plan = _executor(executor)(graph, constants)
    assert len(plan.schedule) + len(plan.folded) == len(graph.nodes)
    rng = np.random.default_rng(3)
    (x,) = [random_input(p.type, rng) for p in graph.inputs]
    first = plan.run([x])
    (out,) = first
    assert (out.dtype, out.shape) == (graph.outputs[0].type.dtype, graph.outputs[0].type.shape)
    np.testing.assert_array_equal(plan.run([x])[0], out)
    assert len(np.unique(out)) > 1  # a classifier's int8 scores, not a constant tensor
