"""The same Model on the vulkan backend (the ML emulation layer on any Vulkan 1.3 driver) gives
the cpu backend's results: the runtime's schedule is backend-neutral."""

from __future__ import annotations

from importlib import resources

import ml_dtypes
import numpy as np
import pytest

import fixtures  # tools/fixtures.py
import pyvgf
from pyvgf.format import read
from support.graphs import build_fft
from support.runtime import check_threads
from support.vulkan import require_vulkan

pytestmark = pytest.mark.vulkan

MODELS = ["runtime_fp16", "runtime_int8", "runtime_int16", "runtime_int32", "runtime_int64", "runtime_bool",
          "runtime_constants", "runtime_multi_io"]


def _random(info, rng):
    if not info.live:
        return np.zeros(4, np.int32)
    if info.dtype == np.bool_:
        return rng.integers(0, 2, info.shape).astype(np.bool_)
    if info.dtype.kind in "iu":
        return rng.integers(-100, 100, info.shape, endpoint=True).astype(info.dtype)
    return rng.standard_normal(info.shape).astype(info.dtype)


def _compare(source):
    with pyvgf.load(source) as cpu, pyvgf.load(source, backend="vulkan") as gpu:
        assert [(i.name, i.shape, i.dtype) for i in cpu.inputs] == [(i.name, i.shape, i.dtype) for i in gpu.inputs]
        inputs = [_random(i, np.random.default_rng(6)) for i in cpu.inputs]
        for want, got in zip(cpu.run(inputs), gpu.run(inputs)):
            assert (got.dtype, got.shape) == (want.dtype, want.shape)
            if want.dtype.kind == "f" or want.dtype == ml_dtypes.bfloat16:
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-3)
            else:
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", MODELS)
def test_vulkan_backend_matches_cpu(name):
    _compare(fixtures.model(name))


def test_vulkan_backend_runs_the_example():
    _compare((resources.files("pyvgf") / "examples" / "tiny_convnet.vgf").read_bytes())


def test_vulkan_model_from_several_threads():
    source = (resources.files("pyvgf") / "examples" / "tiny_convnet.vgf").read_bytes()
    with pyvgf.load(source, backend="vulkan") as model:
        check_threads(model, lambda r: [r.standard_normal(i.shape).astype(np.float32) for i in model.inputs],
                      threads=4, runs=3)


def test_compute_segment_runs_the_real_shader_on_vulkan():
    """graph -> compute -> graph: the vulkan backend runs the module's SPIR-V, the cpu backend a
    Python stand-in of it; both give the same result."""
    path = fixtures.model("runtime_segments")
    vgf = read(path)
    name = vgf.modules[vgf.sequence.segments[1].module_index].name

    def double(resources, workgroups):
        resources[(0, 1)].view(np.float32)[:] = 2 * resources[(0, 0)].view(np.float32)

    rng = np.random.default_rng(8)
    inputs = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2)]
    with pyvgf.load(path, shaders={name: double}) as cpu, pyvgf.load(path, backend="vulkan") as gpu:
        np.testing.assert_allclose(gpu.run(inputs)[0], cpu.run(inputs)[0], rtol=1e-6, atol=1e-6)


def test_graphs_the_emulation_layer_crashes_on_are_refused():
    """An FFT result that is not a graph output crashes the emulation layer 0.11.0 in
    vkCreateDataGraphPipelinesARM: pyvgf refuses the graph with a HalError instead."""
    require_vulkan()
    from pyvgf.errors import HalError

    data = build_fft().to_bytes()
    with pytest.raises(HalError, match=r"FFT2D %\d+ has a result that is not a graph output"):
        pyvgf.load(data, backend="vulkan", adapter_options={"emulation": "always"})
    with pyvgf.load(data) as model:
        assert len(model.run([np.ones(i.shape, i.dtype) for i in model.inputs])) == 3
