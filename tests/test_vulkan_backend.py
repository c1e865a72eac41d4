"""The vulkan backend on a real driver (lavapipe + Arm's emulation layer here), through the HAL."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import references  # tools/references.py
from pyvgf import hal
from pyvgf.errors import HalError
from support.vulkan import (
    GraphModel,
    bound_session,
    chained_add,
    objects_left,
    read_vgf,
    require_vulkan,
)

pytestmark = pytest.mark.vulkan
TENSOR = hal.DescriptorType.TENSOR


def test_add_equals_numpy(device, vgf_model):
    model = GraphModel(device, read_vgf(vgf_model("add_f32")))
    try:
        rng = np.random.default_rng(0)
        for _ in range(3):
            a = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
            b = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
            (out,) = model.run([a, b])
            np.testing.assert_array_equal(out, a + b)
    finally:
        model.destroy()
    assert objects_left(device) == {}


def test_two_dispatches_with_a_barrier(device, vgf_model):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    b = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    out = chained_add(device, read_vgf(vgf_model("add_f32")), a, b)
    np.testing.assert_array_equal(out, (a + b) + b)
    assert objects_left(device) == {}


def test_graph_constants_equal_scenario_runner(device, vgf_model):
    path = vgf_model("vulkan_conv2d_f32")
    vgf = read_vgf(path)
    assert vgf.constants and vgf.constants[0].data.nbytes == 6 * 3 * 3 * 4 * 4
    x = np.random.default_rng(1).standard_normal((1, 8, 8, 4)).astype(np.float32)
    model = GraphModel(device, vgf)
    try:
        (out,) = model.run([x])
    finally:
        model.destroy()
    (ref,) = references.scenario_run(path, [x])
    np.testing.assert_array_equal(out, ref)


def test_device_uses_emulation_layer_on_lavapipe(adapter, device):
    if adapter.report.native_arm:
        pytest.skip(f"{adapter.report.name} has the ARM extensions natively")
    assert adapter.uses_emulation
    assert adapter.layers[-2:] == ["VK_LAYER_ML_Graph_Emulation", "VK_LAYER_ML_Tensor_Emulation"]
    assert {"VK_ARM_tensors", "VK_ARM_data_graph"} <= set(device.enabled_extensions)


def test_without_emulation_the_missing_extensions_are_named(adapter):
    if adapter.report.native_arm:
        pytest.skip(f"{adapter.report.name} has the ARM extensions natively")
    with pytest.raises(HalError, match="lacks extensions VK_ARM_tensors, VK_ARM_data_graph"):
        hal.request_adapter("vulkan", emulation="never")


def test_bad_emulation_choice(adapter):
    with pytest.raises(HalError, match="emulation must be"):
        hal.request_adapter("vulkan", emulation="sometimes")


def test_graph_constant_of_wrong_size_is_refused(device, vgf_model):
    vgf = read_vgf(vgf_model("vulkan_conv2d_f32"))
    set_layout = device.create_descriptor_set_layout([hal.DescriptorSetLayoutBinding(b, TENSOR) for b in range(2)])
    layout = device.create_pipeline_layout([set_layout])
    res = [hal.DataGraphResource(0, 0, device.tensor_description(100, (1, 8, 8, 4))),
           hal.DataGraphResource(0, 1, device.tensor_description(100, (1, 8, 8, 6)))]
    const = hal.GraphConstant(0, np.zeros(10, np.uint8), device.tensor_description(100, (6, 3, 3, 4)))
    module = device.create_shader_module(vgf.modules[0].code)
    with pytest.raises(HalError, match="graph constant 0 has 10 bytes"):
        device.create_data_graph_pipeline(module, vgf.modules[0].entry_point, layout, res, [const])
    assert device.live["VkShaderModule"] == 0 and device.live["VkPipeline"] == 0


def test_descriptor_set_of_missing_binding_is_refused(device):
    set_layout = device.create_descriptor_set_layout([hal.DescriptorSetLayoutBinding(0, TENSOR)])
    view = device.create_tensor(100, (4,)).create_view()
    with pytest.raises(HalError, match=r"needs bindings \[0\], got \[3\]"):
        device.create_descriptor_set(set_layout, {3: view})
    assert device.live["VkDescriptorPool"] == 0


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


def _conv_once(device, vgf, weights: np.ndarray, sparsity_dimension: int, x: np.ndarray) -> np.ndarray:
    set_layout = device.create_descriptor_set_layout([hal.DescriptorSetLayoutBinding(b, TENSOR) for b in range(2)])
    layout = device.create_pipeline_layout([set_layout])
    a = device.create_tensor(100, (1, 8, 8, 4))
    c = device.create_tensor(100, (1, 8, 8, 6))
    resources = [hal.DataGraphResource(0, 0, a.description), hal.DataGraphResource(0, 1, c.description)]
    const = hal.GraphConstant(0, weights, device.tensor_description(100, (6, 3, 3, 4)), sparsity_dimension)
    module = device.create_shader_module(vgf.modules[0].code)
    pipeline = device.create_data_graph_pipeline(module, vgf.modules[0].entry_point, layout, resources, [const])
    dset = device.create_descriptor_set(set_layout, {0: a.create_view(), 1: c.create_view()})
    enc = device.create_command_encoder()
    enc.bind_pipeline(pipeline)
    enc.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
    enc.dispatch_data_graph(bound_session(device, pipeline))
    device.queue.write_tensor(a, x)
    assert device.queue.submit([enc.finish()]).wait(60)
    return device.queue.read_tensor(c)


def test_semi_structured_sparsity_info_is_chained(device, vgf_model):
    """Weights with 2 zeros in every group of 4 along dimension 3, declared 2:4 sparse
    (VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM): same result as dense."""
    vgf = read_vgf(vgf_model("vulkan_conv2d_f32"))
    weights = vgf.constants[0].data.view(np.float32).reshape(6, 3, 3, 4).copy()
    weights[..., 1] = 0
    weights[..., 3] = 0
    x = np.random.default_rng(9).standard_normal((1, 8, 8, 4)).astype(np.float32)
    dense = _conv_once(device, vgf, weights, -1, x)
    sparse = _conv_once(device, vgf, weights, 3, x)
    assert np.abs(dense).max() > 0
    np.testing.assert_array_equal(sparse, dense)


def test_native_probe_ignores_layers_enabled_by_the_environment(tmp_path):
    """With the emulation layers exported as toolchain.md's scenario_runner recipe does, the
    driver is still reported as lacking the ARM extensions, and the backend still works."""
    require_vulkan()
    from pyvgf.hal.vulkan import layers

    env = dict(os.environ, **layers.emulation_layer_env(tmp_path))
    code = (
        "from pyvgf.hal.vulkan.instance import native_arm_extensions\n"
        "from pyvgf.hal.vulkan import request_adapter\n"
        "print(sorted(native_arm_extensions()[0]))\n"
        "a = request_adapter(); d = a.request_device(); print(a.uses_emulation); d.destroy(); a.destroy()\n"
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
