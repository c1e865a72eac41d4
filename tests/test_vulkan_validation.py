"""The backend's core flows under VK_LAYER_KHRONOS_validation: no error or warning except the
ones that only say the layer does not know the ARM extensions (spec/vulkan-backend.md lists
and explains them)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from support.vulkan import (
    GraphModel,
    add_pipeline,
    bound_session,
    chained_add,
    handle_value,
    read_vgf,
    require_vulkan,
)

pytestmark = pytest.mark.vulkan

ARM_STYPE = r"unknown VkStructureType \((1000460\d{3}|1000507\d{3})\)"
ARM_PIPELINE = r"(?:Invalid|Couldn't find) VkPipeline Object (0x[0-9a-f]+)"

ALLOWED: dict[str, str] = {
    # an ARM structure in a pNext chain
    "VUID-VkDeviceCreateInfo-pNext-pNext": ARM_STYPE,
    "VUID-VkPhysicalDeviceFeatures2-pNext-pNext": ARM_STYPE,
    "VUID-VkPhysicalDeviceProperties2-pNext-pNext": ARM_STYPE,
    "VUID-VkWriteDescriptorSet-pNext-pNext": ARM_STYPE,
    # the layer's notice that it does not know the ARM extensions
    "VUID_Undefined": r"Device Extension VK_ARM_(tensors|data_graph) is not supported by this layer",
    # VK_DESCRIPTOR_TYPE_TENSOR_ARM
    "VUID-VkDescriptorSetLayoutBinding-descriptorType-parameter": r"\(1000460000\) does not fall within",
    "VUID-VkDescriptorPoolSize-type-parameter": r"\(1000460000\) does not fall within",
    "VUID-VkWriteDescriptorSet-descriptorType-parameter": r"\(1000460000\) does not fall within",
    # VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM
    "VUID-vkCmdBindPipeline-pipelineBindPoint-parameter": r"\(1000507000\) does not fall within",
    "VUID-vkCmdBindDescriptorSets-pipelineBindPoint-parameter": r"\(1000507000\) does not fall within",
    # VK_PIPELINE_STAGE_2_DATA_GRAPH_BIT_ARM, VK_ACCESS_2_DATA_GRAPH_{READ,WRITE}_BIT_ARM
    "VUID-VkMemoryBarrier2-srcStageMask-parameter":
        r"contains flag bits that are not recognized members of VkPipelineStageFlagBits2",
    "VUID-VkMemoryBarrier2-dstStageMask-parameter":
        r"contains flag bits that are not recognized members of VkPipelineStageFlagBits2",
    "VUID-VkMemoryBarrier2-srcAccessMask-parameter":
        r"contains flag bits that are not recognized members of VkAccessFlagBits2",
    "VUID-VkMemoryBarrier2-dstAccessMask-parameter":
        r"contains flag bits that are not recognized members of VkAccessFlagBits2",
    # a pipeline made by vkCreateDataGraphPipelinesARM, which the layer never saw created
    "VUID-vkCmdBindPipeline-pipeline-parameter": ARM_PIPELINE,
    "VUID-vkDestroyPipeline-pipeline-parameter": ARM_PIPELINE,
    "UNASSIGNED-Threading-Info": ARM_PIPELINE,
}


class Messages:
    """Collects validation messages and tells the allowed ones from the rest."""

    def __init__(self):
        self.all: list[tuple[int, str, str]] = []
        self.graph_pipelines: set[int] = set()

    def __call__(self, severity: int, types: int, msg_id: str, text: str) -> None:
        self.all.append((severity, msg_id, text))

    def note_pipelines(self, objects) -> None:
        """Note the handles of the data graph pipelines among `objects`."""
        from pyvgf.hal.vulkan.pipelines import VulkanDataGraphPipeline

        for obj in objects:
            if isinstance(obj, VulkanDataGraphPipeline):
                self.graph_pipelines.add(handle_value(obj))

    def allowed(self, msg_id: str, text: str) -> bool:
        pattern = ALLOWED.get(msg_id)
        if pattern is None:
            return False
        match = re.search(pattern, text)
        if match is None:
            return False
        if pattern == ARM_PIPELINE:
            return int(match.group(1), 16) in self.graph_pipelines
        return True

    def unexpected(self) -> list[str]:
        return [f"{i}: {t}" for _, i, t in self.all if not self.allowed(i, t)]


def require_validation_layer() -> None:
    """Skip, saying why, where Vulkan or the Khronos validation layer cannot be had."""
    require_vulkan()
    from pyvgf.hal.vulkan._vk import vk

    if "VK_LAYER_KHRONOS_validation" not in {p.layerName for p in vk().vkEnumerateInstanceLayerProperties()}:
        pytest.skip("the Khronos validation layer is not installed (apt vulkan-validationlayers)")


@pytest.fixture(scope="module")
def validated():
    require_validation_layer()
    from pyvgf import hal

    messages = Messages()
    adapter = hal.request_adapter("vulkan", validation=True, on_message=messages)
    device = adapter.request_device()
    yield device, messages
    device.destroy()
    adapter.destroy()
    assert not messages.unexpected(), "\n".join(messages.unexpected())


def _run(device, messages, vgf, inputs):
    model = GraphModel(device, vgf)
    messages.note_pipelines(model.objects)
    try:
        return model.run(inputs)
    finally:
        model.destroy()


def test_add_under_validation(validated, vgf_model):
    device, messages = validated
    a = np.full((1, 4, 4, 8), 1.5, np.float32)
    b = np.full((1, 4, 4, 8), 2.25, np.float32)
    (out,) = _run(device, messages, read_vgf(vgf_model("add_f32")), [a, b])
    np.testing.assert_array_equal(out, a + b)
    assert not messages.unexpected(), "\n".join(messages.unexpected())


def test_graph_constants_under_validation(validated, vgf_model):
    device, messages = validated
    x = np.ones((1, 8, 8, 4), np.float32)
    (out,) = _run(device, messages, read_vgf(vgf_model("vulkan_conv2d_f32")), [x])
    assert out.shape == (1, 8, 8, 6)
    assert not messages.unexpected(), "\n".join(messages.unexpected())


def test_barrier_between_dispatches_under_validation(validated, vgf_model):
    device, messages = validated
    a = np.full((1, 4, 4, 8), 1.0, np.float32)
    b = np.full((1, 4, 4, 8), 0.5, np.float32)
    out = chained_add(device, read_vgf(vgf_model("add_f32")), a, b, messages.graph_pipelines)
    np.testing.assert_array_equal(out, a + b + b)
    assert not messages.unexpected(), "\n".join(messages.unexpected())


def test_hal_flows_under_validation(vgf_model):
    """The HAL on a validated adapter: graph dispatch, barrier, copies, aliasing, transfers."""
    require_validation_layer()
    from pyvgf import hal

    messages = Messages()
    adapter = hal.request_adapter("vulkan", validation=True, on_message=messages)
    device = adapter.request_device()
    try:
        pipeline, layout, set_layout = add_pipeline(device, read_vgf(vgf_model("add_f32")))
        messages.graph_pipelines.add(handle_value(pipeline))
        memory = device.allocate_memory(4 * 128 * 4)
        tensors = [device.create_tensor(100, (1, 4, 4, 8), memory=memory, memory_offset=512 * i) for i in range(3)]
        alias = device.create_buffer(512, memory=memory, memory_offset=1024)
        copy = device.create_tensor(100, (1, 4, 4, 8))
        dset = device.create_descriptor_set(set_layout, {b: t.create_view() for b, t in enumerate(tensors)})
        session = bound_session(device, pipeline)
        enc = device.create_command_encoder()
        enc.bind_pipeline(pipeline)
        enc.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
        enc.dispatch_data_graph(session)
        enc.barrier()
        enc.copy_tensor(tensors[2], copy)
        a = np.full((1, 4, 4, 8), 3.0, np.float32)
        device.queue.write_tensor(tensors[0], a)
        device.queue.write_tensor(tensors[1], a)
        assert device.queue.submit([enc.finish()]).wait(30)
        np.testing.assert_array_equal(device.queue.read_tensor(copy), a + a)
        assert device.queue.read_buffer(alias).tobytes() == (a + a).tobytes()
    finally:
        device.destroy()
        adapter.destroy()
    assert not messages.unexpected(), "\n".join(messages.unexpected())


@pytest.mark.parametrize("staged", [False, True], ids=["direct", "staged"])
@pytest.mark.parametrize("name", ["vulkan_conv2d_f32", "runtime_segments"])
def test_runtime_models_under_validation(name, staged, vgf_model, monkeypatch):
    """pyvgf.load() on a validated vulkan adapter: the runtime's whole schedule (graph, compute
    with aliased buffers, barriers, sessions, transfers) makes no unexpected message, on the
    direct path and on the discrete-GPU path (device-local resources, staging copies)."""
    require_validation_layer()
    from pyvgf import hal, load
    from pyvgf.hal.vulkan import request_adapter
    from pyvgf.hal.vulkan.backend import VulkanDevice

    monkeypatch.setattr(VulkanDevice, "prefers_device_local", property(lambda self: staged))

    messages = Messages()
    hal.register_backend("vulkan-validated", lambda: request_adapter(validation=True, on_message=messages))
    with load(vgf_model(name), backend="vulkan-validated") as model:
        messages.note_pipelines(model.device._children.values())
        rng = np.random.default_rng(9)
        model.run([rng.standard_normal(i.shape).astype(i.dtype) for i in model.inputs])
    assert not messages.unexpected(), "\n".join(messages.unexpected())


def test_the_filter_lets_real_errors_through(validated):
    """A real mistake (a buffer of size 0) is reported and not filtered."""
    device, messages = validated
    from pyvgf.hal.vulkan._vk import vk

    mod = vk()
    before = len(messages.all)
    info = mod.VkBufferCreateInfo(size=0, usage=mod.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)
    info.size = 0
    buffer = mod.vkCreateBuffer(device.handles.device, info, None)
    mod.vkDestroyBuffer(device.handles.device, buffer, None)
    new = messages.all[before:]
    assert any(i == "VUID-VkBufferCreateInfo-size-00912" for _, i, _ in new), new
    assert all(not messages.allowed(i, t) for _, i, t in new)
    del messages.all[before:]


def test_the_filter_needs_the_arm_value():
    """An allowed message ID with a core value in it is not filtered."""
    messages = Messages()
    text = "vkCmdBindPipeline: value of pipelineBindPoint (7) does not fall within the begin..end range"
    assert not messages.allowed("VUID-vkCmdBindPipeline-pipelineBindPoint-parameter", text)
    assert not messages.allowed("VUID-vkDestroyPipeline-pipeline-parameter", "Invalid VkPipeline Object 0x1234.")
