"""The HAL on the cpu backend: objects do what Vulkan says, and wrong use raises HalError."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from pyvgf import HalError, hal
from pyvgf.format import Format

F32 = Format.R32_SFLOAT
SPIRV_HEADER = np.array([0x07230203, 0x00010600, 0, 1, 0], np.uint32)
"""The five-word header of a SPIR-V module: enough for a compute module run by a Python stand-in."""


@pytest.fixture
def device():
    with hal.request_adapter("cpu").request_device() as dev:
        yield dev


def _storage_layout(device, *bindings):
    return device.create_descriptor_set_layout(
        [hal.DescriptorSetLayoutBinding(b, t) for b, t in bindings])


def _compute(device, fn, name="shader", kinds=(hal.DescriptorType.STORAGE_BUFFER, hal.DescriptorType.STORAGE_BUFFER)):
    device.shaders[name] = fn
    set_layout = _storage_layout(device, *enumerate(kinds))
    layout = device.create_pipeline_layout([set_layout])
    module = device.create_shader_module(SPIRV_HEADER, name=name)
    return device.create_compute_pipeline(module, "main", layout), layout, set_layout


def test_adapter_describes_the_cpu_backend():
    adapter = hal.request_adapter()
    assert adapter.info.backend == "cpu"
    assert {"VK_ARM_tensors", "VK_ARM_data_graph"} <= adapter.features
    assert adapter.limits.max_tensor_dimension_count >= 6
    assert set(hal.backends()) >= {"cpu", "vulkan"}


def test_unknown_backend_is_named():
    with pytest.raises(HalError, match="unknown backend 'metal'.*cpu"):
        hal.request_adapter("metal")


def test_unknown_backend_option_is_named():
    with pytest.raises(HalError, match="backend 'cpu' does not take these options:.*device_index"):
        hal.request_adapter("cpu", device_index=1)


def test_importing_pyvgf_does_not_import_vulkan():
    code = ("import sys, pyvgf, pyvgf.hal, pyvgf.runtime; "
            "assert 'vulkan' not in sys.modules and 'pyvgf.hal.vulkan' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tensor_round_trip_and_strides(device):
    t = device.create_tensor(F32, (2, 3), strides=(16, 4))
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    device.queue.write_tensor(t, data)
    out = device.queue.read_tensor(t)
    np.testing.assert_array_equal(out, data)
    out[0, 0] = 99  # the caller owns what read_tensor returns
    assert device.queue.read_tensor(t)[0, 0] == 0
    assert t.description.nbytes == 16 + 12


@pytest.mark.parametrize("shape, strides, message", [
    ((0, 3), None, "dimensions must be > 0"),
    ((), None, "rank 0"),
    ((2, 3), (12, 8), "innermost equal"),
    ((2, 3), (8, 4), "must not overlap"),
    ((2, 3), (12,), "1 strides for a rank-2"),
])
def test_bad_tensor_descriptions(device, shape, strides, message):
    with pytest.raises(HalError, match=message):
        device.create_tensor(F32, shape, strides)


def test_unknown_format_is_refused(device):
    with pytest.raises(HalError, match="format 12345"):
        device.create_tensor(12345, (4,))


def test_write_tensor_refuses_wrong_dtype_and_shape(device):
    t = device.create_tensor(F32, (4,))
    with pytest.raises(HalError, match=r"takes float32\[4\], got float64\[4\]"):
        device.queue.write_tensor(t, np.zeros(4))
    with pytest.raises(HalError, match=r"got float32\[5\]"):
        device.queue.write_tensor(t, np.zeros(5, np.float32))


def test_tensor_and_buffer_alias_through_shared_memory(device):
    memory = device.allocate_memory(64)
    t = device.create_tensor(F32, (2, 4), memory=memory)
    b = device.create_buffer(32, memory=memory)
    device.queue.write_tensor(t, np.full((2, 4), 1.5, np.float32))
    np.testing.assert_array_equal(device.queue.read_buffer(b).view(np.float32), np.full(8, 1.5, np.float32))


def test_write_buffer_takes_bytes_or_any_array(device):
    buf = device.create_buffer(8)
    device.queue.write_buffer(buf, np.array([1.5, -2, 3, 0.25], ml_dtypes.bfloat16))
    np.testing.assert_array_equal(device.queue.read_buffer(buf).view(ml_dtypes.bfloat16), [1.5, -2, 3, 0.25])
    device.queue.write_buffer(buf, b"\x07\x08", offset=6)
    assert list(device.queue.read_buffer(buf, 6, 2)) == [7, 8]
    with pytest.raises(HalError, match="write of 9 bytes at 0 overflows"):
        device.queue.write_buffer(buf, bytes(9))


def test_binding_outside_memory_is_refused(device):
    memory = device.allocate_memory(16)
    with pytest.raises(HalError, match="needs 32 bytes at offset 0"):
        device.create_tensor(F32, (8,), memory=memory)
    with pytest.raises(HalError, match="not a multiple of 16"):
        device.create_buffer(4, memory=device.allocate_memory(64), memory_offset=4)


def test_compute_dispatch_runs_the_python_stand_in(device):
    seen = {}

    def double(resources, workgroups):
        seen["workgroups"] = workgroups
        resources[(0, 1)].view(np.float32)[:] = 2 * resources[(0, 0)].view(np.float32)

    pipeline, layout, set_layout = _compute(device, double)
    src, dst = device.create_buffer(16), device.create_buffer(16)
    dset = device.create_descriptor_set(set_layout, {0: src, 1: dst})
    encoder = device.create_command_encoder()
    encoder.bind_pipeline(pipeline)
    encoder.bind_descriptor_set(hal.PipelineBindPoint.COMPUTE, layout, 0, dset)
    encoder.dispatch(3, 2, 1)
    commands = encoder.finish()
    device.queue.write_buffer(src, np.arange(4, dtype=np.float32))
    assert device.queue.submit([commands]).wait() is True
    np.testing.assert_array_equal(device.queue.read_buffer(dst).view(np.float32), [0, 2, 4, 6])
    assert seen["workgroups"] == (3, 2, 1)


def test_missing_python_shader_names_both_ways_out(device):
    layout = device.create_pipeline_layout([])
    module = device.create_shader_module(SPIRV_HEADER, name="grid_sampler")
    with pytest.raises(HalError, match=r"'grid_sampler'.*register_shader.*backend='vulkan'"):
        device.create_compute_pipeline(module, "main", layout)


def test_registered_shader_is_found_by_module_name(device):
    calls = []
    hal.register_shader("registered_one", lambda resources, wg: calls.append(wg))
    try:
        layout = device.create_pipeline_layout([])
        module = device.create_shader_module(SPIRV_HEADER, name="registered_one")
        pipeline = device.create_compute_pipeline(module, "main", layout)
        encoder = device.create_command_encoder()
        encoder.bind_pipeline(pipeline)
        encoder.dispatch(1)
        device.queue.submit([encoder.finish()]).wait()
    finally:
        hal.unregister_shader("registered_one")
    assert calls == [(1, 1, 1)]


def test_failing_shader_surfaces_as_hal_error_at_wait(device):
    def broken(resources, workgroups):
        raise KeyError("oops")

    pipeline, layout, set_layout = _compute(device, broken, name="broken")
    dset = device.create_descriptor_set(set_layout, {0: device.create_buffer(4), 1: device.create_buffer(4)})
    encoder = device.create_command_encoder()
    encoder.bind_pipeline(pipeline)
    encoder.bind_descriptor_set(hal.PipelineBindPoint.COMPUTE, layout, 0, dset)
    encoder.dispatch(1)
    fence = device.queue.submit([encoder.finish()])
    with pytest.raises(HalError, match="module 'broken' failed: KeyError"):
        fence.wait()


def test_dispatch_without_pipeline_or_set(device):
    pipeline, layout, _ = _compute(device, lambda r, wg: None)
    encoder = device.create_command_encoder()
    with pytest.raises(HalError, match="without a COMPUTE pipeline bound"):
        encoder.dispatch(1)
    encoder.bind_pipeline(pipeline)
    with pytest.raises(HalError, match="uses descriptor set 0, but none is bound"):
        encoder.dispatch(1)


def test_descriptor_set_checks_bindings_and_kinds(device):
    set_layout = _storage_layout(device, (0, hal.DescriptorType.TENSOR), (1, hal.DescriptorType.STORAGE_BUFFER))
    tensor = device.create_tensor(F32, (4,))
    buf = device.create_buffer(16)
    with pytest.raises(HalError, match=r"needs bindings \[0, 1\], got \[0\]"):
        device.create_descriptor_set(set_layout, {0: tensor.create_view()})
    with pytest.raises(HalError, match=r"takes a TensorView, got Tensor \(use tensor.create_view\(\)\)"):
        device.create_descriptor_set(set_layout, {0: tensor, 1: buf})
    with pytest.raises(HalError, match="takes a Buffer, got TensorView"):
        device.create_descriptor_set(set_layout, {0: tensor.create_view(), 1: tensor.create_view()})
    assert device.create_descriptor_set(set_layout, {0: tensor.create_view(), 1: buf}).resources[1] is buf


def test_incompatible_set_is_refused(device):
    pipeline, layout, _ = _compute(device, lambda r, wg: None)
    other = _storage_layout(device, (0, hal.DescriptorType.TENSOR))
    dset = device.create_descriptor_set(other, {0: device.create_tensor(F32, (1,)).create_view()})
    encoder = device.create_command_encoder()
    with pytest.raises(HalError, match="not compatible with set 0"):
        encoder.bind_descriptor_set(hal.PipelineBindPoint.COMPUTE, layout, 0, dset)


def test_submitting_an_unfinished_encoder(device):
    encoder = device.create_command_encoder()
    with pytest.raises(HalError, match="call finish"):
        device.queue.submit([encoder])
    commands = encoder.finish()
    with pytest.raises(HalError, match="is finished"):
        encoder.barrier()
    device.queue.submit([commands]).wait()
    device.queue.submit([commands]).wait()  # a command buffer is re-submittable


def test_destroyed_objects_refuse_use(device):
    tensor = device.create_tensor(F32, (4,))
    view = tensor.create_view()
    tensor.destroy()
    tensor.destroy()  # idempotent
    with pytest.raises(HalError, match="was destroyed"):
        device.queue.read_tensor(tensor)
    set_layout = _storage_layout(device, (0, hal.DescriptorType.TENSOR))
    with pytest.raises(HalError, match="was destroyed"):
        device.create_descriptor_set(set_layout, {0: view})
    memory = device.allocate_memory(16)
    buf = device.create_buffer(16, memory=memory)
    memory.destroy()
    with pytest.raises(HalError, match="memory it is bound to was destroyed"):
        device.queue.read_buffer(buf)


def test_destroying_the_device_destroys_its_children():
    device = hal.request_adapter().request_device()
    with device.create_tensor(F32, (4,)) as tensor:
        assert not tensor.destroyed
    assert tensor.destroyed
    buf = device.create_buffer(8)
    device.destroy()
    assert buf.destroyed
    with pytest.raises(HalError, match="was destroyed"):
        device.create_buffer(8)


def test_objects_of_another_device_are_refused(device):
    other = hal.request_adapter().request_device()
    set_layout = _storage_layout(device, (0, hal.DescriptorType.STORAGE_BUFFER))
    with pytest.raises(HalError, match="created by another device"):
        device.create_descriptor_set(set_layout, {0: other.create_buffer(4)})


def test_copies_between_tensors_and_buffers(device):
    a = device.create_tensor(F32, (3, 4))
    b = device.create_tensor(F32, (3, 4))
    src, dst = device.create_buffer(8), device.create_buffer(8)
    device.queue.write_tensor(a, np.arange(12, dtype=np.float32).reshape(3, 4))
    device.queue.write_buffer(src, np.arange(8, dtype=np.uint8))
    encoder = device.create_command_encoder()
    encoder.copy_tensor(a, b)
    encoder.copy_buffer(src, dst, 2, 0, 4)
    with pytest.raises(HalError, match="whole tensors of equal shape only"):
        encoder.copy_tensor(a, device.create_tensor(F32, (4, 3)))
    device.queue.submit([encoder.finish()]).wait()
    np.testing.assert_array_equal(device.queue.read_tensor(b), np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(device.queue.read_buffer(dst, 0, 4), [2, 3, 4, 5])


def test_push_constants_outside_ranges(device):
    layout = device.create_pipeline_layout([], [hal.PushConstantRange(hal.ShaderStage.COMPUTE, 0, 8)])
    encoder = device.create_command_encoder()
    with pytest.raises(HalError, match=r"push constants \[4, 16\) are outside"):
        encoder.push_constants(layout, hal.ShaderStage.COMPUTE, 4, bytes(12))


def _copy_run(device, **tensor_options):
    """A prepared run of one command buffer that copies a tensor and 4 bytes of a buffer."""
    src, dst = (device.create_tensor(F32, (3, 4), **tensor_options) for _ in range(2))
    a, b = device.create_buffer(8), device.create_buffer(8)
    encoder = device.create_command_encoder()
    encoder.copy_tensor(src, dst)
    encoder.copy_buffer(a, b, 2, 0, 4)
    return device.prepare_run(encoder.finish(), [src, a], [dst, b])


def test_prepared_run_writes_submits_and_reads(device):
    run = _copy_run(device)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y, raw = run.run([x, np.arange(8, dtype=np.uint8)])
    np.testing.assert_array_equal(y, x)
    assert raw.tolist()[:4] == [2, 3, 4, 5]
    y[...] = 0  # the caller owns what a run returns
    np.testing.assert_array_equal(run.run([x + 1, bytes(range(8))])[0], x + 1)
    np.testing.assert_array_equal(x, np.arange(12, dtype=np.float32).reshape(3, 4))


def test_prepared_run_refuses_what_the_queue_refuses(device):
    run = _copy_run(device)
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(HalError, match="takes 2 arrays, got 1"):
        run.run([x])
    with pytest.raises(HalError, match=r"takes float32\[3, 4\], got float64\[3, 4\]"):
        run.run([x.astype(np.float64), bytes(8)])
    with pytest.raises(HalError, match="write of 9 bytes at 0 overflows"):
        run.run([x, bytes(9)])
    with pytest.raises(HalError, match="prepare_run takes a CommandBuffer"):
        device.prepare_run(device.create_command_encoder(), [], [])
    run.outputs[1].destroy()
    with pytest.raises(HalError, match="was destroyed"):
        run.run([x, bytes(8)])
