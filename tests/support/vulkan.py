"""Helpers of the Vulkan backend tests: skip rules, the `adapter` and `device` fixtures (a pytest
plugin of tests/conftest.py) and VGF graph runners on the HAL (scenario_runner, the reference, is
tools/references.py)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from pyvgf import hal
from pyvgf.errors import HalError
from pyvgf.format.model import VGF, Category, ModuleType


@functools.cache
def vulkan_unavailable() -> str | None:
    """Why Vulkan cannot be had on this machine (no loader, no device), or None."""
    try:
        from pyvgf.hal.vulkan._vk import vk

        mod = vk()
        app = mod.VkApplicationInfo(apiVersion=(1 << 22) | (3 << 12))
        inst = mod.vkCreateInstance(mod.VkInstanceCreateInfo(pApplicationInfo=app), None)
    except (HalError, Exception) as exc:  # noqa: BLE001 - any failure means no Vulkan
        return f"no Vulkan loader or instance: {exc!r}"
    try:
        if not mod.vkEnumeratePhysicalDevices(inst):
            return "the Vulkan loader finds no physical device"
    finally:
        mod.vkDestroyInstance(inst, None)
    return None


def require_vulkan() -> None:
    reason = vulkan_unavailable()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def adapter():
    """The Vulkan adapter, one a test module (skips where Vulkan cannot be had)."""
    require_vulkan()
    a = hal.request_adapter("vulkan")
    yield a
    a.destroy()


@pytest.fixture
def device(adapter):
    """A device whose every Vulkan object is gone once it is destroyed."""
    dev = adapter.request_device()
    yield dev
    dev.destroy()
    assert dev.live_objects() == {}, dev.live_objects()


def read_vgf(path: Path) -> VGF:
    from pyvgf.format import read

    return read(Path(path))


# -- running graph segments through the HAL ---------------------------------------------------


class GraphModel:
    """Every HAL object a graph-only VGF needs on `device`, made once; run() many times (the
    runtime's schedule without its planning: one tensor per resource, a barrier between
    segments)."""

    def __init__(self, device: hal.Device, vgf: VGF):
        self.device = device
        self.vgf = vgf
        self.objects: list = []
        try:
            self._build()
        except BaseException:
            self.destroy()
            raise

    def _build(self) -> None:
        device, vgf, own = self.device, self.vgf, self._own
        self.tensors = {}
        for i, r in enumerate(vgf.resources):
            if r.category != Category.CONSTANT:
                self.tensors[i] = own(device.create_tensor(r.format, tuple(r.shape), label=f"mrt{i}"))
        enc = device.create_command_encoder()
        for k, seg in enumerate(vgf.sequence.segments):
            if seg.type != ModuleType.GRAPH:
                raise NotImplementedError("compute segments")
            layouts, sets, resources = {}, {}, []
            for pos, info in enumerate(seg.set_infos):
                index = pos if info.set_index == 0xFFFFFFFF else info.set_index
                layouts[index] = own(device.create_descriptor_set_layout(
                    [hal.DescriptorSetLayoutBinding(b.binding, hal.DescriptorType.TENSOR) for b in info.bindings]))
                views = {b.binding: own(self.tensors[b.mrt_index].create_view()) for b in info.bindings}
                sets[index] = own(device.create_descriptor_set(layouts[index], views))
                for b in info.bindings:
                    r = vgf.resources[b.mrt_index]
                    resources.append(hal.DataGraphResource(index, b.binding,
                                                           device.tensor_description(r.format, r.shape)))
            layout = own(device.create_pipeline_layout([layouts[i] for i in sorted(layouts)]))
            consts = []
            for cb in seg.graph_constants():
                c = vgf.constants[cb.constant_table_index]
                r = vgf.resources[c.mrt_index]
                consts.append(hal.GraphConstant(cb.graph_constant_id, c.data,
                                                device.tensor_description(r.format, r.shape),
                                                c.sparsity_dimension))
            module = vgf.modules[seg.module_index]
            shader = own(device.create_shader_module(module.code, name=module.name))
            pipeline = own(device.create_data_graph_pipeline(shader, module.entry_point, layout, resources, consts,
                                                             label=seg.name))
            session = own(bound_session(device, pipeline, self.objects))
            if k:
                enc.barrier()
            enc.bind_pipeline(pipeline)
            for index in sorted(sets):
                enc.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, index, sets[index])
            enc.dispatch_data_graph(session)
        self.cmd = own(enc.finish())

    def _own(self, obj):
        self.objects.append(obj)
        return obj

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        queue = self.device.queue
        for slot, x in zip(self.vgf.sequence.inputs, inputs):
            queue.write_tensor(self.tensors[slot.mrt_index], x)
        assert queue.submit([self.cmd]).wait(60)
        return [queue.read_tensor(self.tensors[slot.mrt_index]) for slot in self.vgf.sequence.outputs]

    def destroy(self) -> None:
        for obj in reversed(self.objects):
            obj.destroy()
        self.objects = []


def chained_add(device: hal.Device, vgf: VGF, a: np.ndarray, b: np.ndarray,
                pipelines_seen: set | None = None) -> np.ndarray:
    """Two dispatches of the add graph in one command buffer, c = a + b then d = c + b, with
    a barrier between them (the shape of a two-segment model); every object destroyed after."""
    shape = tuple(vgf.resources[0].shape)
    before = len(device._children)
    try:
        pipeline, layout, set_layout = add_pipeline(device, vgf)
        if pipelines_seen is not None:
            pipelines_seen.add(handle_value(pipeline))
        ta, tb, tc, td = (device.create_tensor(100, shape, label=n) for n in "abcd")
        enc = device.create_command_encoder()
        for k, (x, y, z) in enumerate(((ta, tb, tc), (tc, tb, td))):
            dset = device.create_descriptor_set(set_layout, {i: t.create_view() for i, t in enumerate((x, y, z))})
            if k:
                enc.barrier()
            enc.bind_pipeline(pipeline)
            enc.bind_descriptor_set(hal.PipelineBindPoint.DATA_GRAPH, layout, 0, dset)
            enc.dispatch_data_graph(bound_session(device, pipeline))
        cb = enc.finish()
        device.queue.write_tensor(ta, a)
        device.queue.write_tensor(tb, b)
        assert device.queue.submit([cb]).wait(60)
        return device.queue.read_tensor(td)
    finally:
        for obj in list(device._children.values())[before:][::-1]:
            obj.destroy()


def objects_left(device: hal.Device) -> dict[str, int]:
    """Live Vulkan objects of a vulkan device beyond the VkDevice, its command pool and the
    fences its queue keeps for reuse (what the HAL objects made on it leave alive)."""
    return {k: v for k, v in device.live_objects().items() if k not in ("VkDevice", "VkCommandPool", "VkFence")}


def handle_value(obj) -> int:
    """The integer value of a vulkan HAL object's Vulkan handle (as validation messages print it)."""
    from pyvgf.hal.vulkan._vk import vk

    return int(vk().ffi.cast("uintptr_t", obj.handle))


# -- HAL helpers ------------------------------------------------------------------------------


def add_pipeline(device, vgf: VGF):
    """The add graph of tests/models/add_f32.mlir as a HAL data graph pipeline (3 tensor bindings)."""
    module = vgf.modules[0]
    shader = device.create_shader_module(module.code, name=module.name)
    bindings = [hal.DescriptorSetLayoutBinding(b, hal.DescriptorType.TENSOR) for b in range(3)]
    set_layout = device.create_descriptor_set_layout(bindings)
    layout = device.create_pipeline_layout([set_layout])
    desc = device.tensor_description(100, (1, 4, 4, 8))
    resources = [hal.DataGraphResource(0, b, desc) for b in range(3)]
    pipeline = device.create_data_graph_pipeline(shader, module.entry_point, layout, resources)
    return pipeline, layout, set_layout


def bound_session(device, pipeline, objects: list | None = None):
    """A HAL data graph session with memory bound at every bind point object that needs it
    (the memory appended to `objects` when given)."""
    session = device.create_data_graph_session(pipeline)
    for r in session.bind_point_requirements:
        for i in range(r.num_objects):
            req = session.memory_requirements(r.bind_point, i)
            if req.size:
                memory = device.allocate_memory(req.size)
                if objects is not None:
                    objects.append(memory)
                session.bind_memory(memory, 0, r.bind_point, i)
    return session
