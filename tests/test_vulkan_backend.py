"""The Vulkan backend's objects on a real driver (lavapipe + Arm's emulation layer here)."""

from __future__ import annotations

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


def test_graph_constants_equal_scenario_runner(ctx, vgf_model, tmp_path):
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
    assert "pyvgf uses device" in text


def test_doctor_command(capsys):
    require_vulkan()
    from pyvgf.cli import main

    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Vulkan backend") and "status: ready" in out
