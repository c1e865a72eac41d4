"""Rank-0 (scalar) tensors and unsigned RESCALE resources end to end, on cpu and vulkan.

The models are tests/models/runtime_rank0.mlir and runtime_unsigned.mlir, converted by Arm's
model-converter: it writes a scalar as a resource of shape [] (its graph tensor is shape [1]) and
RESCALE's unsigned side as an R16_UINT / R8_UINT resource of an int16 / int8 graph tensor.
Expected values come from tosa_reference_model on the same MLIR.
"""

from __future__ import annotations

import numpy as np
import pytest

import fixtures  # tools/fixtures.py
import pyvgf
from pyvgf import ModelInputError
from pyvgf.format import Format, read
from pyvgf.spirv import decode_graph
from references import tosa_reference
from support.vulkan import require_vulkan

BACKENDS = ["cpu", pytest.param("vulkan", marks=pytest.mark.vulkan)]


def _load(name: str, backend: str) -> pyvgf.Model:
    if backend == "vulkan":
        require_vulkan()
    return pyvgf.load(fixtures.model(name), backend=backend)


def test_the_converter_writes_scalars_as_shape_empty_resources():
    vgf = read(fixtures.model("runtime_rank0"))
    assert [r.shape for r in vgf.resources] == [[], [2, 3], [], [], [2, 3], []]
    graph = decode_graph(vgf.modules[0].code)
    assert [tuple(p.type.shape) for p in graph.inputs] == [(1,), (2, 3), (1,)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_rank0_inputs_and_outputs_are_0d_arrays(backend):
    text = (fixtures.MODELS / "runtime_rank0.mlir").read_text()
    a, b, k = np.array(0.75, np.float32), np.arange(6, dtype=np.float32).reshape(2, 3), np.array(-21, np.int32)
    with _load("runtime_rank0", backend) as model:
        assert [i.shape for i in model.inputs] == [(), (2, 3), ()]
        assert [o.shape for o in model.outputs] == [(), (2, 3), ()]
        got = model.run([a, b, k])
        again = model.run({"input_0": a, "input_1": b, "input_2": k})
        with pytest.raises(ModelInputError, match="expected shape \\[\\], got \\[1\\]"):
            model.run([a.reshape(1), b, k])
    expected = tosa_reference(text, [a, b, k])
    for g, r, e in zip(got, again, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-6)
        np.testing.assert_array_equal(g, r)
    assert got[2] == np.int32(-42)
    assert a.shape == () and a == np.float32(0.75)  # never modified


@pytest.mark.parametrize("backend", BACKENDS)
def test_unsigned_rescale_resources_run_on_both_backends(backend):
    text = (fixtures.MODELS / "runtime_unsigned.mlir").read_text()
    rng = np.random.default_rng(7)
    x = rng.integers(0, 65536, (2, 5)).astype(np.uint16)
    y = rng.integers(-128, 128, 7).astype(np.int8)
    with _load("runtime_unsigned", backend) as model:
        assert [i.format for i in model.inputs] == [Format.R16_UINT, Format.R8_SINT]
        assert [o.dtype for o in model.outputs] == [np.int8, np.uint8]
        got = model.run([x, y])
        same_bits = model.run([x.view(np.int16), y])  # the other signedness: the same bits
        with pytest.raises(ModelInputError, match="expected dtype uint16, got int8"):
            model.run([x.astype(np.int8), y])
        with pytest.raises(ModelInputError, match="expected dtype uint16, got float16"):
            model.run([x.view(np.float16), y])
    expected = tosa_reference(text, [x.view(np.int16), y])
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1].view(np.uint8))
    for g, s in zip(got, same_bits):
        np.testing.assert_array_equal(g, s)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("fmt", "shape"),
                         [(Format.R16_SFLOAT, [2, 5]), (Format.R8_UINT, [2, 5]), (Format.R16_UINT, [10])])
def test_a_real_mismatch_is_an_error_naming_both(backend, fmt, shape):
    """Checked at load (pyvgf.runtime.check), before either backend sees the model."""
    if backend == "vulkan":
        require_vulkan()
    vgf = read(fixtures.model("runtime_unsigned"))
    vgf.resources[0].format, vgf.resources[0].shape = int(fmt), shape
    with pytest.raises(pyvgf.VGFError, match=r"binding 0\)? is tensor<2x5 int16>, but (the )?resource"):
        pyvgf.load(vgf, backend=backend)


def test_a_built_rank0_graph_runs_like_the_converters_file():
    from support.graphs import runtime_rank0

    graph = runtime_rank0()
    vgf = graph.to_vgf()
    assert [r.shape for r in vgf.resources] == [[], [2, 3], [], [], [2, 3], []]
    inputs = [np.array(-1.25, np.float32), np.ones((2, 3), np.float32), np.array(5, np.int32)]
    with pyvgf.load(vgf) as built, pyvgf.load(fixtures.model("runtime_rank0")) as theirs:
        for g, t in zip(built.run(inputs), theirs.run(inputs)):
            assert g.shape == t.shape and g.dtype == t.dtype
            np.testing.assert_array_equal(g, t)
