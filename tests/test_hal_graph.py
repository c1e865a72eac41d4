"""Data graph pipelines on the HAL's cpu backend, driven by hand from a real VGF's graph module:
the Vulkan call sequence works, and wrong resources, constants and bindings raise HalError."""

from __future__ import annotations

import numpy as np
import pytest

import fixtures  # tools/fixtures.py
from pyvgf import HalError, hal
from pyvgf.format import Format, read

F32 = Format.R32_SFLOAT
SHAPES = {0: (2, 3), 1: (4,), 2: (2, 3), 3: (2, 3), 4: (2, 3)}
"""Binding -> shape of runtime_multi_io's graph (binding 1, the unused input, is int32)."""


@pytest.fixture
def graph():
    """The add/sub graph of runtime_multi_io (bindings 0..2 in, 3..4 out, set 0) on a cpu device."""
    vgf = read(fixtures.model("runtime_multi_io"))
    module = vgf.modules[0]
    with hal.request_adapter("cpu").request_device() as device:
        shader = device.create_shader_module(module.code, name=module.name)
        kinds = [hal.DescriptorSetLayoutBinding(b, hal.DescriptorType.TENSOR) for b in range(5)]
        set_layout = device.create_descriptor_set_layout(kinds)
        layout = device.create_pipeline_layout([set_layout])
        resources = [hal.DataGraphResource(0, b, device.tensor_description(Format.R32_SINT if b == 1 else F32, s))
                     for b, s in SHAPES.items()]
        yield device, shader, module.entry_point, layout, set_layout, resources


def _tensors(device, shapes):
    return {b: device.create_tensor(Format.R32_SINT if b == 1 else F32, s) for b, s in shapes.items()}


def test_data_graph_dispatch_computes_the_graph(graph):
    device, shader, entry, layout, set_layout, resources = graph
    pipeline = device.create_data_graph_pipeline(shader, entry, layout, resources)
    session = device.create_data_graph_session(pipeline)
    assert all(session.memory_requirements(r.bind_point, i).size >= 0
               for r in session.bind_point_requirements for i in range(r.num_objects))
    tensors = _tensors(device, SHAPES)
    dset = device.create_descriptor_set(set_layout, {b: t.create_view() for b, t in tensors.items()})
    encoder = device.create_command_encoder()
    encoder.bind_pipeline(pipeline)
    encoder.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
    encoder.dispatch_data_graph(session)
    commands = encoder.finish()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    device.queue.write_tensor(tensors[0], a)
    device.queue.write_tensor(tensors[2], np.ones((2, 3), np.float32))
    device.queue.submit([commands]).wait()
    np.testing.assert_array_equal(device.queue.read_tensor(tensors[3]), a - 1)
    np.testing.assert_array_equal(device.queue.read_tensor(tensors[4]), a + 1)


def _graph_commands(graph, tensors, timed: bool = False) -> hal.CommandBuffer:
    """One dispatch of the graph on `tensors` (by binding), with a timestamp after it if `timed`."""
    device, shader, entry, layout, set_layout, resources = graph
    pipeline = device.create_data_graph_pipeline(shader, entry, layout, resources)
    dset = device.create_descriptor_set(set_layout, {b: t.create_view() for b, t in tensors.items()})
    encoder = device.create_command_encoder()
    encoder.bind_pipeline(pipeline)
    encoder.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
    encoder.dispatch_data_graph(device.create_data_graph_session(pipeline))
    if timed:
        encoder.write_timestamp(device.create_query_pool(1), 0)
    return encoder.finish()


def test_prepared_run_without_kept_contents_reads_the_arrays_in_place(graph):
    device = graph[0]
    tensors = _tensors(device, SHAPES)
    commands = _graph_commands(graph, tensors)
    ins, outs = [tensors[0], tensors[1], tensors[2]], [tensors[4], tensors[3]]  # not in port order
    kept = device.prepare_run(commands, ins, outs)
    lent = device.prepare_run(commands, ins, outs, keep_contents=False)
    assert type(kept) is hal.PreparedRun and type(lent).__name__ == "CpuPreparedRun"
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6, 12, dtype=np.float32).reshape(2, 3)
    arrays = [a, np.zeros(4, np.int32), b[:, ::-1]]  # a strided array is read as its values
    np.testing.assert_array_equal(kept.run(arrays)[0], a + b[:, ::-1])
    got = lent.run(arrays)
    for out, want in zip(got, (a + b[:, ::-1], a - b[:, ::-1])):
        np.testing.assert_array_equal(out, want)
        assert out.flags.writeable and out.flags.c_contiguous and not np.shares_memory(out, a)
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))
    lent.run([a + 10, np.zeros(4, np.int32), b])
    np.testing.assert_array_equal(device.queue.read_tensor(tensors[0]), a)  # what `kept` wrote, untouched
    np.testing.assert_array_equal(device.queue.read_tensor(tensors[4]), a + b[:, ::-1])


def test_prepared_run_without_kept_contents_falls_back_to_the_tensors(graph):
    """Anything but one dispatch bound to the run's tensors alone goes through the tensors."""
    device = graph[0]
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)
    tensors = _tensors(device, SHAPES)
    ins = [tensors[0], tensors[1], tensors[2]]
    for commands, outs in ((_graph_commands(graph, tensors, timed=True), [tensors[3], tensors[4]]),
                           (_graph_commands(graph, tensors), [tensors[3]])):
        run = device.prepare_run(commands, ins, outs, keep_contents=False)
        assert type(run) is hal.PreparedRun
        np.testing.assert_array_equal(run.run([a, np.zeros(4, np.int32), b])[0], a - 1)


def test_bound_tensor_of_wrong_shape_or_format(graph):
    device, shader, entry, layout, set_layout, resources = graph
    pipeline = device.create_data_graph_pipeline(shader, entry, layout, resources)
    session = device.create_data_graph_session(pipeline)
    for binding, wrong in ((2, device.create_tensor(F32, (3, 2))),
                           (0, device.create_tensor(Format.R16_SFLOAT, (2, 3)))):
        tensors = _tensors(device, SHAPES)
        tensors[binding] = wrong
        dset = device.create_descriptor_set(set_layout, {b: t.create_view() for b, t in tensors.items()})
        encoder = device.create_command_encoder()
        encoder.bind_pipeline(pipeline)
        encoder.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
        with pytest.raises(HalError, match=rf"set 0 binding {binding} expects a tensor R32_SFLOAT\[2x3\]"):
            encoder.dispatch_data_graph(session)


def test_dispatch_needs_the_sessions_pipeline_and_a_bound_set(graph):
    device, shader, entry, layout, set_layout, resources = graph
    pipeline = device.create_data_graph_pipeline(shader, entry, layout, resources)
    other = device.create_data_graph_pipeline(shader, entry, layout, resources)
    session = device.create_data_graph_session(pipeline)
    encoder = device.create_command_encoder()
    with pytest.raises(HalError, match="without a DATA_GRAPH pipeline bound"):
        encoder.dispatch_data_graph(session)
    encoder.bind_pipeline(other)
    with pytest.raises(HalError, match="was created for"):
        encoder.dispatch_data_graph(session)
    encoder.bind_pipeline(pipeline)
    with pytest.raises(HalError, match="uses descriptor set 0, but none is bound"):
        encoder.dispatch_data_graph(session)


def test_pipeline_resources_must_match_the_graph(graph):
    device, shader, entry, layout, set_layout, resources = graph
    wrong = [r if r.binding != 3 else hal.DataGraphResource(0, 3, device.tensor_description(F32, (6,)))
             for r in resources]
    with pytest.raises(HalError, match=r"binding 3 is tensor<2x3 float32>, but the resource is described as"):
        device.create_data_graph_pipeline(shader, entry, layout, wrong)
    with pytest.raises(HalError, match="uses set 0 binding 4, which no pipeline resource describes"):
        device.create_data_graph_pipeline(shader, entry, layout, resources[:4])
    with pytest.raises(HalError, match="described twice"):
        device.create_data_graph_pipeline(shader, entry, layout, resources + resources[:1])


def test_graph_constants_are_checked(graph):
    device = graph[0]
    vgf = read(fixtures.model("runtime_constants"))
    module = vgf.modules[0]
    shader = device.create_shader_module(module.code, name=module.name)
    set_layout = device.create_descriptor_set_layout(
        [hal.DescriptorSetLayoutBinding(b, hal.DescriptorType.TENSOR) for b in (0, 1)])
    layout = device.create_pipeline_layout([set_layout])
    resources = [hal.DataGraphResource(0, b, device.tensor_description(F32, (4, 16))) for b in (0, 1)]
    desc = device.tensor_description(F32, (4, 16))
    constants = [hal.GraphConstant(i, vgf.constants[i].data, desc) for i in (0, 1)]
    device.create_data_graph_pipeline(shader, module.entry_point, layout, resources, constants)
    with pytest.raises(HalError, match="graph constant 1, which was not given"):
        device.create_data_graph_pipeline(shader, module.entry_point, layout, resources, constants[:1])
    with pytest.raises(HalError, match="graph constant id 0 given twice"):
        device.create_data_graph_pipeline(shader, module.entry_point, layout, resources, constants + constants[:1])
    small = [hal.GraphConstant(0, vgf.constants[0].data[:16], desc), constants[1]]
    with pytest.raises(HalError, match="graph constant 0 has 16 bytes"):
        device.create_data_graph_pipeline(shader, module.entry_point, layout, resources, small)
    retyped = [hal.GraphConstant(0, vgf.constants[0].data, device.tensor_description(F32, (64,))), constants[1]]
    with pytest.raises(HalError, match="graph constant 0 of"):
        device.create_data_graph_pipeline(shader, module.entry_point, layout, resources, retyped)
