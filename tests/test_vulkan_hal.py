"""The HAL on the vulkan backend: the same calls as on the cpu backend, backed by Vulkan."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import references  # tools/references.py
from pyvgf import HalError, hal
from pyvgf.format import Format
from support.vulkan import add_pipeline, bound_session, read_vgf, require_vulkan

pytestmark = pytest.mark.vulkan
F32 = Format.R32_SFLOAT
TENSOR = hal.DescriptorType.TENSOR


def test_adapter_describes_the_device(adapter):
    assert adapter.info.backend == "vulkan"
    assert {"VK_ARM_tensors", "VK_ARM_data_graph"} <= adapter.features
    assert adapter.limits.max_tensor_dimension_count >= 4
    assert adapter.info.api_version >= (1, 3, 0)


def test_tensor_round_trip(device):
    t = device.create_tensor(F32, (2, 3))
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    device.queue.write_tensor(t, data)
    out = device.queue.read_tensor(t)
    np.testing.assert_array_equal(out, data)
    out[0, 0] = 99
    np.testing.assert_array_equal(device.queue.read_tensor(t), data)


def test_strided_tensor_round_trip(device):
    if not device.tensor_non_packed:
        with pytest.raises(HalError, match="tensorNonPacked"):
            device.create_tensor(F32, (2, 3), strides=(16, 4))
        return
    t = device.create_tensor(F32, (2, 3), strides=(16, 4))
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    device.queue.write_tensor(t, data)
    np.testing.assert_array_equal(device.queue.read_tensor(t), data)


def test_optimal_tensor_goes_through_staging(device):
    t = device.create_tensor(F32, (3, 5), tiling=hal.TensorTiling.OPTIMAL)
    data = np.arange(15, dtype=np.float32).reshape(3, 5)
    device.queue.write_tensor(t, data)
    np.testing.assert_array_equal(device.queue.read_tensor(t), data)
    assert device.live["VkTensorARM"] == 1 and device.live["VkCommandBuffer"] == 0


def test_tensor_and_buffer_in_one_memory_alias(device):
    req = device.get_tensor_memory_requirements(device.tensor_description(F32, (8,)))
    memory = device.allocate_memory(max(req.size, 64))
    t = device.create_tensor(F32, (8,), memory=memory)
    b = device.create_buffer(32, memory=memory)
    data = np.linspace(-1, 1, 8, dtype=np.float32)
    device.queue.write_tensor(t, data)
    assert device.queue.read_buffer(b).tobytes() == data.tobytes()
    device.queue.write_buffer(b, np.zeros(8, np.float32), 0)
    np.testing.assert_array_equal(device.queue.read_tensor(t), np.zeros(8, np.float32))


def test_copies_on_the_queue(device):
    src = device.create_tensor(F32, (4, 4))
    dst = device.create_tensor(F32, (4, 4))
    a = device.create_buffer(16)
    b = device.create_buffer(16)
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    device.queue.write_tensor(src, data)
    device.queue.write_tensor(dst, np.zeros((4, 4), np.float32))
    device.queue.write_buffer(a, np.arange(16, dtype=np.uint8))
    enc = device.create_command_encoder()
    enc.copy_tensor(src, dst)
    enc.copy_buffer(a, b, 4, 8, 8)
    fence = device.queue.submit([enc.finish()])
    assert fence.wait(10)
    np.testing.assert_array_equal(device.queue.read_tensor(dst), data)
    assert device.queue.read_buffer(b, 8, 8).tolist() == list(range(4, 12))


def test_tensor_copy_of_another_shape_is_refused(device):
    """Vulkan copies whole tensors only (VUID-VkCopyTensorInfoARM-regionCount-09686 ff.)."""
    src = device.create_tensor(F32, (4, 4))
    dst = device.create_tensor(F32, (2, 8))
    enc = device.create_command_encoder()
    with pytest.raises(HalError, match="copies whole tensors of equal shape only"):
        enc.copy_tensor(src, dst)


def test_graph_by_hand_resubmitted(device, vgf_model):
    pipeline, layout, set_layout = add_pipeline(device, read_vgf(vgf_model("add_f32")))
    tensors = [device.create_tensor(F32, (1, 4, 4, 8)) for _ in range(3)]
    dset = device.create_descriptor_set(set_layout, {b: t.create_view() for b, t in enumerate(tensors)})
    session = bound_session(device, pipeline)
    enc = device.create_command_encoder()
    enc.bind_pipeline(pipeline)
    enc.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
    enc.dispatch_data_graph(session)
    cb = enc.finish()
    rng = np.random.default_rng(4)
    for _ in range(3):
        a, b = (rng.standard_normal((1, 4, 4, 8)).astype(np.float32) for _ in range(2))
        device.queue.write_tensor(tensors[0], a)
        device.queue.write_tensor(tensors[1], b)
        fence = device.queue.submit([cb])
        assert fence.wait() and fence.signaled
        np.testing.assert_array_equal(device.queue.read_tensor(tensors[2]), a + b)
    fences = [device.queue.submit([cb]) for _ in range(3)]
    device.queue.wait_idle()
    assert all(f.signaled for f in fences)


def test_prepared_graph_run_in_mapped_memory(device, vgf_model):
    from pyvgf.hal.vulkan.commands import VulkanPreparedRun

    pipeline, layout, set_layout = add_pipeline(device, read_vgf(vgf_model("add_f32")))
    tensors = [device.create_tensor(F32, (1, 4, 4, 8)) for _ in range(3)]
    dset = device.create_descriptor_set(set_layout, {b: t.create_view() for b, t in enumerate(tensors)})
    enc = device.create_command_encoder()
    enc.bind_pipeline(pipeline)
    enc.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
    enc.dispatch_data_graph(bound_session(device, pipeline))
    run = device.prepare_run(enc.finish(), tensors[:2], tensors[2:])
    assert isinstance(run, VulkanPreparedRun)  # persistent views, no staging
    rng = np.random.default_rng(9)
    for _ in range(3):
        a, b = (rng.standard_normal((1, 4, 4, 8)).astype(np.float32) for _ in range(2))
        kept = a.copy()
        (out,) = run.run([a, b])
        np.testing.assert_array_equal(out, a + b)
        np.testing.assert_array_equal(a, kept)
        out[...] = 0  # the caller owns it
        np.testing.assert_array_equal(device.queue.read_tensor(tensors[2]), a + b)
    with pytest.raises(HalError, match=r"takes float32\[1, 4, 4, 8\], got float32\[4, 4, 8\]"):
        run.run([a[0], b])


def _copy_run(device, shape=(3, 4), **tensor_options):
    src, dst = (device.create_tensor(F32, shape, **tensor_options) for _ in range(2))
    enc = device.create_command_encoder()
    enc.copy_tensor(src, dst)
    return device.prepare_run(enc.finish(), [src], [dst])


def test_prepared_run_of_optimal_tensors_goes_through_staging(device):
    run = _copy_run(device, tiling=hal.TensorTiling.OPTIMAL)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run.run([x])[0], x)


def test_prepared_run_interrupted_before_its_wait(device, monkeypatch):
    """A run stopped between vkQueueSubmit and its fence wait (a KeyboardInterrupt) leaves the
    prepared run usable: the next run, or a queue read, waits for that work first (a copy
    large enough to be still running when it is not waited for)."""
    from pyvgf.hal.vulkan import commands

    run = _copy_run(device, (1024, 1024))
    x = np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024)
    wait_for = commands.Fence.wait_for

    def interrupted(fence, timeout_s=None):
        monkeypatch.setattr(commands.Fence, "wait_for", wait_for)
        raise KeyboardInterrupt

    for k in range(0, 12, 2):
        monkeypatch.setattr(commands.Fence, "wait_for", interrupted)
        with pytest.raises(KeyboardInterrupt):
            run.run([x + k])
        if k % 4:
            np.testing.assert_array_equal(device.queue.read_tensor(run.outputs[0]), x + k)
        np.testing.assert_array_equal(run.run([x + k + 1])[0], x + k + 1)


def test_glsl_compute_module_is_refused(device):
    binding = hal.DescriptorSetLayoutBinding(0, hal.DescriptorType.STORAGE_BUFFER)
    set_layout = device.create_descriptor_set_layout([binding])
    layout = device.create_pipeline_layout([set_layout])
    module = device.create_shader_module("void main() {}", name="glsl_op", language="glsl")
    with pytest.raises(HalError, match="'glsl_op' is GLSL source: the vulkan backend runs SPIR-V only"):
        device.create_compute_pipeline(module, "main", layout)


def test_device_destroy_frees_every_vulkan_object(adapter, vgf_model):
    device = adapter.request_device()
    pipeline, layout, set_layout = add_pipeline(device, read_vgf(vgf_model("add_f32")))
    tensors = [device.create_tensor(F32, (1, 4, 4, 8)) for _ in range(3)]
    device.create_descriptor_set(set_layout, {b: t.create_view() for b, t in enumerate(tensors)})
    bound_session(device, pipeline)
    assert device.live["VkPipeline"] == 1 and device.live["VkTensorARM"] == 3
    device.destroy()
    assert device.live_objects() == {}, device.live_objects()


def test_load_add_on_vulkan(vgf_model):
    require_vulkan()
    from pyvgf.runtime import load

    with load(vgf_model("add_f32"), backend="vulkan") as model:
        assert model.backend == "vulkan"
        rng = np.random.default_rng(5)
        a, b = (rng.standard_normal((1, 4, 4, 8)).astype(np.float32) for _ in range(2))
        (out,) = model.run([a, b])
        np.testing.assert_array_equal(out, a + b)


def test_load_conv2d_equals_scenario_runner(vgf_model):
    require_vulkan()
    from pyvgf.runtime import load

    path = vgf_model("vulkan_conv2d_f32")
    x = np.random.default_rng(6).standard_normal((1, 8, 8, 4)).astype(np.float32)
    with load(path, backend="vulkan") as model:
        (out,) = model.run([x])
    (ref,) = references.scenario_run(path, [x])
    np.testing.assert_array_equal(out, ref)


def test_runs_from_several_threads_equal_sequential_runs(vgf_model):
    require_vulkan()
    from pyvgf.runtime import load

    rng = np.random.default_rng(7)
    cases = [rng.standard_normal((1, 8, 8, 4)).astype(np.float32) for _ in range(12)]
    with load(vgf_model("vulkan_conv2d_f32"), backend="vulkan") as model:
        expected = [model.run([x])[0] for x in cases]
        got: dict[int, np.ndarray] = {}
        errors: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                for i in range(k, len(cases), 4):
                    got[i] = model.run([cases[i]])[0]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    for i, e in enumerate(expected):
        np.testing.assert_array_equal(got[i], e)


@pytest.mark.slow
def test_real_int8_models_equal_the_cpu_backend(real_model):
    require_vulkan()
    from pyvgf.runtime import load

    with load(real_model, backend="vulkan") as vk_model, load(real_model) as cpu_model:
        rng = np.random.default_rng(8)
        inputs = [rng.integers(-128, 128, i.shape).astype(i.dtype) for i in vk_model.inputs]
        for got, want in zip(vk_model.run(inputs), cpu_model.run(inputs)):
            np.testing.assert_array_equal(got, want)
