"""Real models made by model-converter from tests/models/runtime_*.mlir (and the bundled
example), run by pyvgf.load() on the cpu backend and checked against tosa_reference_model on the
same MLIR: every dtype the container describes, several inputs and outputs, an unused input,
graph constants, and a graph -> compute -> graph model with a Python shader."""

from __future__ import annotations

from dataclasses import replace
from importlib import resources

import ml_dtypes
import numpy as np
import pytest

import fixtures  # tools/fixtures.py
import pyvgf
from pyvgf import HalError
from pyvgf.format import read
from pyvgf.format.model import ConstantBinding, ModuleType
from references import tosa_reference
from support.runtime import check_threads, doubling_shader

MODELS = fixtures.MODELS
EXAMPLES = resources.files("pyvgf") / "examples"



def _random(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.kind in "iu":
        return rng.integers(-100, 100, shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


REFERENCE_MODELS = ["runtime_fp16", "runtime_bf16", "runtime_int8", "runtime_int16", "runtime_int32",
                    "runtime_bool", "runtime_constants", "runtime_multi_io"]


@pytest.mark.parametrize("name", REFERENCE_MODELS)
def test_real_model_matches_tosa_reference(name):
    text = (MODELS / f"{name}.mlir").read_text()
    with pyvgf.load(fixtures.model(name)) as model:
        rng = np.random.default_rng(1)
        inputs = [_random(i.shape, i.dtype, rng) if i.live else np.zeros(4, np.int32) for i in model.inputs]
        got = model.run(inputs)
        expected = tosa_reference(text, inputs)
    assert len(got) == len(expected) == len(model.outputs)
    for info, g, e in zip(model.outputs, got, expected):
        assert (g.dtype, g.shape) == (e.dtype, e.shape) == (info.dtype, info.shape)
        if g.dtype.kind == "f" or g.dtype == ml_dtypes.bfloat16:
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("name", REFERENCE_MODELS)
def test_cpu_runs_read_the_inputs_in_place_and_leave_them_alone(name, backend):
    """A one-graph model's run on the cpu backends skips the tensors (hal's keep_contents=False):
    the caller's arrays are read where they are, never changed, and no output shares their memory."""
    with pyvgf.load(fixtures.model(name), backend=backend) as model:
        rng = np.random.default_rng(2)
        inputs = [_random(i.shape, i.dtype, rng) if i.live else np.zeros(4, np.int32) for i in model.inputs]
        kept = [x.copy() for x in inputs]
        first = model.run(inputs)
        assert type(model._pool[0].prepared).__name__ == "CpuPreparedRun"
        want = [out.copy() for out in first]
        for out in first:
            assert out.flags.writeable and not any(np.shares_memory(out, x) for x in inputs)
            out[...] = 0  # the caller's to keep: the next run does not see it
        for x, k in zip(inputs, kept):
            np.testing.assert_array_equal(x, k)
        for again, w in zip(model.run(inputs), want):
            np.testing.assert_array_equal(again, w)


def test_multi_io_names_order_and_the_unused_input():
    with pyvgf.load(fixtures.model("runtime_multi_io")) as model:
        assert [i.name for i in model.inputs] == ["input_0", "input_1", "input_2"]
        assert [o.name for o in model.outputs] == ["output_0", "output_1"]
        a = np.full((2, 3), 5, np.float32)
        b = np.full((2, 3), 2, np.float32)
        unused = np.zeros(4, np.int32)
        diff, total = model.run({"input_0": a, "input_1": unused, "input_2": b})
        np.testing.assert_array_equal(diff, a - b)
        np.testing.assert_array_equal(total, a + b)


def test_int64_model_is_narrowed_and_runs():
    with pyvgf.load(fixtures.model("runtime_int64")) as model:
        assert [i.dtype for i in model.inputs] == [np.int32, np.int32]
        a = np.arange(21, dtype=np.int64).reshape(3, 7)
        (y,) = model.run([a, 3 * a])
        np.testing.assert_array_equal(y, 4 * a)


def _graph_compute_graph_reference(a, b):
    c1, c2 = (np.array(v, np.float32) for v in _segment_constants())
    return (2 * (a + c1) - c2 - b).astype(np.float32)


def _segment_constants():
    vgf = read(fixtures.model("runtime_segments"))
    return [c.data.view(np.float32).reshape(4, 8) for c in vgf.constants]


def _double_tensor(resources, workgroups):
    resources[(0, 1)].view(np.float32)[:] = 2 * resources[(0, 0)].view(np.float32)


def test_graph_compute_graph_with_a_python_shader():
    path = fixtures.model("runtime_segments")
    vgf = read(path)
    assert [s.type for s in vgf.sequence.segments] == [ModuleType.GRAPH, ModuleType.COMPUTE, ModuleType.GRAPH]
    compute = vgf.modules[vgf.sequence.segments[1].module_index]
    np.testing.assert_array_equal(compute.code, doubling_shader())
    compute_module = compute.name
    with pytest.raises(HalError, match=compute_module):
        pyvgf.load(path)
    with pyvgf.load(path, shaders={compute_module: _double_tensor}) as model:
        rng = np.random.default_rng(2)
        a, b = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
        (y,) = model.run([a, b])
        np.testing.assert_allclose(y, _graph_compute_graph_reference(a, b), rtol=1e-6, atol=1e-6)
        check_threads(model, lambda r: [r.standard_normal((4, 8)).astype(np.float32) for _ in range(2)],
                       threads=4, runs=3)


def test_graph_constants_bind_by_id_to_the_constant_index():
    """0.5 binds (graph constant id, constant index) pairs: reversing the constant table and the
    pairs with it changes nothing; the legacy identity rule applies when the pairs are absent."""
    vgf = read(fixtures.model("runtime_constants"))
    x = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
    with pyvgf.load(vgf) as model:
        expected = model.run([x])[0]
    seg = vgf.sequence.segments[0]
    assert [(b.graph_constant_id, b.constant_table_index) for b in seg.graph_constants()] == [(0, 0), (1, 1)]
    swapped = replace(vgf, constants=vgf.constants[::-1],
                      sequence=replace(vgf.sequence, segments=[replace(
                          seg, constants=[1, 0], constant_bindings=[ConstantBinding(0, 1), ConstantBinding(1, 0)])]))
    with pyvgf.load(swapped) as model:
        np.testing.assert_array_equal(model.run([x])[0], expected)
    legacy = replace(vgf, sequence=replace(vgf.sequence, segments=[replace(seg, constant_bindings=None)]))
    with pyvgf.load(legacy) as model:
        np.testing.assert_array_equal(model.run([x])[0], expected)
    wrong = replace(vgf, constants=vgf.constants[::-1])  # the pairs now point at the other data
    with pyvgf.load(wrong) as model:
        assert not np.allclose(model.run([x])[0], expected)


def test_graph_constants_are_not_copied():
    vgf = read(fixtures.model("runtime_constants"))
    with pyvgf.load(vgf) as model:
        pipeline = model._schedule.segments[0].pipeline
        index = {b.graph_constant_id: b.constant_table_index for b in vgf.sequence.segments[0].graph_constants()}
        for c in pipeline.constants:
            assert np.shares_memory(c.data, vgf.constants[index[c.id]].data)


def test_example_model_matches_tosa_reference_and_threads():
    base = EXAMPLES
    text = (base / "tiny_convnet.mlir").read_text()
    with pyvgf.load((base / "tiny_convnet.vgf").read_bytes()) as model:
        rng = np.random.default_rng(4)
        inputs = [rng.standard_normal(i.shape).astype(np.float32) for i in model.inputs]
        np.testing.assert_allclose(model.run(inputs)[0], tosa_reference(text, inputs)[0], rtol=1e-5, atol=1e-5)
        check_threads(model, lambda r: [r.standard_normal(i.shape).astype(np.float32) for i in model.inputs],
                       threads=4, runs=3)


def test_bundled_example_is_what_its_mlir_converts_to():
    base = EXAMPLES
    made = read(fixtures.vgf_from_mlir((base / "tiny_convnet.mlir").read_text()))
    bundled = read((base / "tiny_convnet.vgf").read_bytes())
    assert made.sequence == bundled.sequence and made.resources == bundled.resources


def test_real_int8_models_load_and_run(real_model):
    """The real 0.3.0 models (legacy constants, identity constant binding) plan and run."""
    vgf = read(real_model)
    with pyvgf.load(real_model) as model:
        assert [i.name for i in model.inputs] == vgf.sequence.input_names
        assert all(i.dtype == np.int8 for i in model.inputs + model.outputs)
        (graph,) = model._schedule.segments
        assert sorted(c.id for c in graph.pipeline.constants) == sorted(vgf.sequence.segments[0].constants)
        rng = np.random.default_rng(5)
        x = [rng.integers(-128, 128, i.shape, dtype=np.int8) for i in model.inputs]
        first, again = model.run(x)[0], model.run(x)[0]
        assert first.shape == model.outputs[0].shape
        np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_float_overflow_and_nan_are_results_not_warnings(backend, vgf_model):
    a = np.full((3, 5), 60000, np.float16)  # 60000 * 2 overflows fp16
    b = np.full((3, 5), 2, np.float16)
    a[0, 0], b[0, 0] = np.inf, 0  # inf * 0 is NaN
    with pyvgf.load(vgf_model("runtime_fp16"), backend=backend) as model:
        with np.errstate(all="raise"):
            (out,) = model.run([a, b])
    assert np.isnan(out[0, 0])
    assert np.isposinf(out.ravel()[1:]).all()
