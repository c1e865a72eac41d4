"""The Vulkan backend's objects on a real driver (lavapipe + Arm's emulation layer here)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import references  # tools/references.py
from conftest_vulkan import GraphModel, chained_add, read_vgf, require_vulkan
from pyvgf.errors import HalError

pytestmark = pytest.mark.vulkan


@pytest.fixture(scope="module")
def ctx():
    require_vulkan()
    from pyvgf.hal.vulkan.context import VulkanContext

    context = VulkanContext()
    yield context
    context.destroy()
    assert context.live_objects() == 0, +context.live


@pytest.fixture(autouse=True)
def no_objects_left(request):
    """Every test destroys what it created: only the instance, device and pool stay live."""
    yield
    if "ctx" in request.fixturenames:
        context = request.getfixturevalue("ctx")
        left = {k: v for k, v in context.live.items() if v and k not in ("VkInstance", "VkDevice", "VkCommandPool")}
        assert not left, f"Vulkan objects left alive: {left}"


def test_add_equals_numpy(ctx, vgf_model):
    model = GraphModel(ctx, read_vgf(vgf_model("add_f32")))
    try:
        rng = np.random.default_rng(0)
        for _ in range(3):
            a = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
            b = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
            (out,) = model.run([a, b])
            np.testing.assert_array_equal(out, a + b)
    finally:
        model.destroy()


def test_two_dispatches_with_a_tensor_barrier(ctx, vgf_model):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    b = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    out = chained_add(ctx, read_vgf(vgf_model("add_f32")), a, b)
    np.testing.assert_array_equal(out, (a + b) + b)


def test_graph_constants_equal_scenario_runner(ctx, vgf_model):
    path = vgf_model("vulkan_conv2d_f32")
    vgf = read_vgf(path)
    assert vgf.constants and vgf.constants[0].data.nbytes == 6 * 3 * 3 * 4 * 4
    x = np.random.default_rng(1).standard_normal((1, 8, 8, 4)).astype(np.float32)
    model = GraphModel(ctx, vgf)
    try:
        (out,) = model.run([x])
    finally:
        model.destroy()
    (ref,) = references.scenario_run(path, [x])
    np.testing.assert_array_equal(out, ref)


def test_context_uses_emulation_layer_on_lavapipe(ctx):
    if ctx.report.native_arm:
        pytest.skip(f"{ctx.report.name} has the ARM extensions natively")
    assert ctx.uses_emulation
    assert ctx.vi.layers[-2:] == ["VK_LAYER_ML_Graph_Emulation", "VK_LAYER_ML_Tensor_Emulation"]
    assert {"VK_ARM_tensors", "VK_ARM_data_graph"} <= set(ctx.enabled_extensions)


def test_without_emulation_the_missing_extensions_are_named(ctx):
    from pyvgf.hal.vulkan.context import VulkanContext

    if ctx.report.native_arm:
        pytest.skip(f"{ctx.report.name} has the ARM extensions natively")
    with pytest.raises(HalError, match="lacks extensions VK_ARM_tensors, VK_ARM_data_graph"):
        VulkanContext(emulation="never")


def test_bad_emulation_choice(ctx):
    from pyvgf.hal.vulkan.context import VulkanContext

    with pytest.raises(HalError, match="emulation must be"):
        VulkanContext(emulation="sometimes")


def test_tensor_write_of_wrong_size_is_refused(ctx):
    from pyvgf.hal.vulkan.tensors import Tensor

    t = Tensor(ctx, 100, (2, 3), label="t")
    try:
        with pytest.raises(HalError, match="t: 20 bytes written, 24 expected"):
            t.write(np.zeros(5, np.float32))
        data = np.arange(6, dtype=np.float32).reshape(2, 3)
        t.write(data)
        assert np.frombuffer(t.read(), np.float32).tolist() == data.ravel().tolist()
    finally:
        t.destroy()


def test_unknown_tensor_format_is_refused(ctx):
    from pyvgf.hal.vulkan.tensors import Tensor

    with pytest.raises(HalError, match="VkFormat 37 is not a tensor format"):
        Tensor(ctx, 37, (2,))


def test_graph_constant_of_wrong_size_is_refused(ctx, vgf_model):
    from pyvgf.hal.vulkan import pipelines

    vgf = read_vgf(vgf_model("vulkan_conv2d_f32"))
    layout = pipelines.DescriptorSetLayout(ctx, [(0, 1000460000), (1, 1000460000)])
    pl = pipelines.PipelineLayout(ctx, [layout])
    try:
        res = [pipelines.GraphResource(0, 0, 100, (1, 8, 8, 4)), pipelines.GraphResource(0, 1, 100, (1, 8, 8, 6))]
        const = pipelines.GraphConstant(0, 100, (6, 3, 3, 4), np.zeros(10, np.uint8))
        module = vgf.modules[0]
        with pytest.raises(HalError, match="graph constant 0 has 10 bytes"):
            pipelines.DataGraphPipeline(ctx, module.code, module.entry_point, pl, res, [const])
        assert ctx.live["VkShaderModule"] == 0
    finally:
        pl.destroy()
        layout.destroy()


def test_empty_spirv_is_refused(ctx):
    from pyvgf.hal.vulkan import pipelines

    pl = pipelines.PipelineLayout(ctx, [])
    try:
        with pytest.raises(HalError, match="the SPIR-V module is empty"):
            pipelines.DataGraphPipeline(ctx, np.zeros(0, np.uint32), "main", pl, [], [])
    finally:
        pl.destroy()


def test_descriptor_write_to_missing_binding(ctx):
    from pyvgf.hal.vulkan import pipelines
    from pyvgf.hal.vulkan.tensors import Tensor

    layout = pipelines.DescriptorSetLayout(ctx, [(0, 1000460000)])
    ds = pipelines.DescriptorSet(ctx, layout)
    t = Tensor(ctx, 100, (4,))
    try:
        with pytest.raises(HalError, match=r"no binding 3 \(has \[0\]\)"):
            ds.write(3, t)
    finally:
        t.destroy()
        ds.destroy()
        layout.destroy()


def test_recording_is_required(ctx):
    from pyvgf.hal.vulkan.commands import CommandBuffer

    cb = CommandBuffer(ctx)
    try:
        with pytest.raises(HalError, match="not recording"):
            cb.host_barrier()
    finally:
        cb.destroy()


def test_doctor_report_names_device_and_extension_origin():
    require_vulkan()
    from pyvgf.hal.vulkan.doctor import report

    text = report()
    assert "device 0:" in text
    assert "VK_ARM_tensors: " in text and "VK_ARM_data_graph: " in text
    assert "data graph operations: TOSA.001000.1" in text
    assert "pyvgf uses device" in text
    assert "memory type 0: " in text and "model resources: " in text


def test_doctor_command(capsys):
    require_vulkan()
    from pyvgf.cli import main

    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("CPU backend") and "\nVulkan backend" in out and "status: ready" in out


def _conv_once(ctx, vgf, weights: np.ndarray, sparsity_dimension: int, x: np.ndarray) -> np.ndarray:
    from pyvgf.hal.vulkan import commands, pipelines, tensors

    tensor_type = 1000460000
    objs = []
    try:
        a = tensors.Tensor(ctx, 100, (1, 8, 8, 4))
        c = tensors.Tensor(ctx, 100, (1, 8, 8, 6))
        layout = pipelines.DescriptorSetLayout(ctx, [(0, tensor_type), (1, tensor_type)])
        objs += [a, c, layout]
        pl = pipelines.PipelineLayout(ctx, [layout])
        objs.append(pl)
        resources = [pipelines.GraphResource(0, 0, 100, (1, 8, 8, 4)), pipelines.GraphResource(0, 1, 100, (1, 8, 8, 6))]
        const = pipelines.GraphConstant(0, 100, (6, 3, 3, 4), weights, sparsity_dimension)
        pipe = pipelines.DataGraphPipeline(ctx, vgf.modules[0].code, vgf.modules[0].entry_point, pl, resources, [const])
        objs.append(pipe)
        session = pipelines.DataGraphSession(ctx, pipe)
        objs.append(session)
        session.bind_own_memory()
        ds = pipelines.DescriptorSet(ctx, layout)
        objs.append(ds)
        ds.write(0, a)
        ds.write(1, c)
        cb = commands.CommandBuffer(ctx)
        objs.append(cb)
        cb.begin()
        cb.dispatch_graph(pipe, pl, {0: ds}, session)
        cb.host_barrier()
        cb.end()
        fence = commands.Fence(ctx)
        objs.append(fence)
        a.write(x)
        commands.submit(ctx, [cb], fence)
        fence.wait(timeout_s=60)
        return np.frombuffer(c.read(), np.float32).reshape(1, 8, 8, 6)
    finally:
        for obj in reversed(objs):
            obj.destroy()


def test_semi_structured_sparsity_info_is_chained(ctx, vgf_model):
    """Weights with 2 zeros in every group of 4 along dimension 3, declared 2:4 sparse
    (VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM): same result as dense."""
    vgf = read_vgf(vgf_model("vulkan_conv2d_f32"))
    weights = vgf.constants[0].data.view(np.float32).reshape(6, 3, 3, 4).copy()
    weights[..., 1] = 0
    weights[..., 3] = 0
    x = np.random.default_rng(9).standard_normal((1, 8, 8, 4)).astype(np.float32)
    dense = _conv_once(ctx, vgf, weights, -1, x)
    sparse = _conv_once(ctx, vgf, weights, 3, x)
    assert np.abs(dense).max() > 0
    np.testing.assert_array_equal(sparse, dense)


def test_native_probe_ignores_layers_enabled_by_the_environment(tmp_path):
    """With the emulation layers exported as toolchain.md's scenario_runner recipe does, the
    driver is still reported as lacking the ARM extensions, and the backend still works."""
    require_vulkan()
    from pyvgf.hal.vulkan import layers

    env = dict(os.environ, **layers.emulation_layer_env(tmp_path))
    code = (
        "from pyvgf.hal.vulkan.context import VulkanContext, native_arm_extensions\n"
        "print(sorted(native_arm_extensions()[0]))\n"
        "ctx = VulkanContext(); print(ctx.uses_emulation); ctx.destroy()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


def test_without_the_vulkan_package_the_error_says_what_to_install():
    code = (
        "import sys; sys.modules['vulkan'] = None\n"
        "from pyvgf import HalError, hal\n"
        "from pyvgf.hal.vulkan.doctor import diagnose\n"
        "text, ok = diagnose(); print(ok); print(text)\n"
        "try:\n    hal.request_adapter('vulkan')\nexcept HalError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "False"
    assert "not usable: the vulkan backend needs the `vulkan` Python package" in out
    assert lines[-1].startswith("the vulkan backend needs the `vulkan` Python package")
