"""Helpers of the Vulkan backend tests: skip rules and a VGF graph runner on the backend's
objects (scenario_runner, the reference, is tools/references.py)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from pyvgf.errors import HalError
from pyvgf import hal
from pyvgf.format.model import VGF, Category, ModuleType, numpy_dtype


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


def read_vgf(path: Path) -> VGF:
    from pyvgf.format import read

    return read(Path(path))


# -- running graph segments on the backend's objects ---------------------------------------


class GraphModel:
    """Every Vulkan object a graph-only VGF needs, made once; run() many times."""

    def __init__(self, ctx, vgf: VGF):
        self.ctx = ctx
        self.vgf = vgf
        self.objects: list = []
        try:
            self._build()
        except BaseException:
            self.destroy()
            raise

    def _build(self) -> None:
        from pyvgf.hal.vulkan import commands, pipelines, tensors

        ctx, vgf = self.ctx, self.vgf
        tensor_type = 1000460000
        self.tensors = {}
        for i, r in enumerate(vgf.resources):
            if r.category != Category.CONSTANT:
                self.tensors[i] = self._own(tensors.Tensor(ctx, r.format, tuple(r.shape), label=f"mrt{i}"))
        self.cmd = self._own(commands.CommandBuffer(ctx))
        self.cmd.begin()
        for k, seg in enumerate(vgf.sequence.segments):
            if seg.type != ModuleType.GRAPH:
                raise NotImplementedError("compute segments")
            layouts, sets, resources = {}, {}, []
            for pos, info in enumerate(seg.set_infos):
                index = pos if info.set_index == 0xFFFFFFFF else info.set_index
                layout = self._own(pipelines.DescriptorSetLayout(ctx, [(b.binding, tensor_type) for b in info.bindings]))
                layouts[index] = layout
                ds = self._own(pipelines.DescriptorSet(ctx, layout))
                sets[index] = ds
                for b in info.bindings:
                    r = vgf.resources[b.mrt_index]
                    ds.write(b.binding, self.tensors[b.mrt_index])
                    resources.append(pipelines.GraphResource(index, b.binding, r.format, tuple(r.shape)))
            pl = self._own(pipelines.PipelineLayout(ctx, [layouts[i] for i in sorted(layouts)]))
            consts = []
            for cb in seg.graph_constants():
                c = vgf.constants[cb.constant_table_index]
                r = vgf.resources[c.mrt_index]
                consts.append(pipelines.GraphConstant(cb.graph_constant_id, r.format, tuple(r.shape), c.data, c.sparsity_dimension))
            module = vgf.modules[seg.module_index]
            pipe = self._own(pipelines.DataGraphPipeline(ctx, module.code, module.entry_point, pl, resources, consts, label=seg.name))
            session = self._own(pipelines.DataGraphSession(ctx, pipe))
            session.bind_own_memory()
            if k:
                self.cmd.tensor_barrier([self.tensors[s.mrt_index] for s in seg.inputs])
            self.cmd.dispatch_graph(pipe, pl, sets, session)
        self.cmd.host_barrier()
        self.cmd.end()
        self.fence = self._own(commands.Fence(ctx))

    def _own(self, obj):
        self.objects.append(obj)
        return obj

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        from pyvgf.hal.vulkan import commands

        for slot, x in zip(self.vgf.sequence.inputs, inputs):
            self.tensors[slot.mrt_index].write(x)
        self.fence.reset()
        commands.submit(self.ctx, [self.cmd], self.fence)
        self.fence.wait(timeout_s=60)
        outs = []
        for slot in self.vgf.sequence.outputs:
            r = self.vgf.resources[slot.mrt_index]
            raw = self.tensors[slot.mrt_index].read()
            outs.append(np.frombuffer(raw, numpy_dtype(r.format)).reshape(r.shape).copy())
        return outs

    def destroy(self) -> None:
        for obj in reversed(self.objects):
            obj.destroy()
        self.objects = []


def chained_add(ctx, vgf: VGF, a: np.ndarray, b: np.ndarray, pipelines_seen: set | None = None) -> np.ndarray:
    """Two dispatches of the add graph in one command buffer, c = a + b then d = c + b, with
    a tensor memory barrier on c between them (the shape of a two-segment model)."""
    from pyvgf.hal.vulkan import commands, pipelines, tensors

    tensor_type = 1000460000
    module = vgf.modules[0]
    shape = tuple(vgf.resources[0].shape)
    objs: list = []
    try:
        ta, tb, tc, td = (tensors.Tensor(ctx, 100, shape, label=n) for n in "abcd")
        objs += [ta, tb, tc, td]
        layout = pipelines.DescriptorSetLayout(ctx, [(0, tensor_type), (1, tensor_type), (2, tensor_type)])
        objs.append(layout)
        pl = pipelines.PipelineLayout(ctx, [layout])
        objs.append(pl)
        res = [pipelines.GraphResource(0, i, 100, shape) for i in range(3)]
        cmd = commands.CommandBuffer(ctx)
        objs.append(cmd)
        cmd.begin()
        for k, (x, y, z) in enumerate(((ta, tb, tc), (tc, tb, td))):
            pipe = pipelines.DataGraphPipeline(ctx, module.code, module.entry_point, pl, res, [], label=f"add{k}")
            objs.append(pipe)
            if pipelines_seen is not None:
                pipelines_seen.add(int(ctx_ffi().cast("uintptr_t", pipe.handle)))
            session = pipelines.DataGraphSession(ctx, pipe)
            objs.append(session)
            session.bind_own_memory()
            ds = pipelines.DescriptorSet(ctx, layout)
            objs.append(ds)
            for binding, t in enumerate((x, y, z)):
                ds.write(binding, t)
            if k:
                cmd.tensor_barrier([tc])
            cmd.dispatch_graph(pipe, pl, {0: ds}, session)
        cmd.host_barrier()
        cmd.end()
        fence = commands.Fence(ctx)
        objs.append(fence)
        ta.write(a)
        tb.write(b)
        commands.submit(ctx, [cmd], fence)
        fence.wait(timeout_s=60)
        return np.frombuffer(td.read(), np.float32).reshape(shape).copy()
    finally:
        for obj in reversed(objs):
            obj.destroy()


def ctx_ffi():
    from pyvgf.hal.vulkan._vk import vk

    return vk().ffi


# -- HAL helpers ------------------------------------------------------------------------------


def add_pipeline(device, vgf: VGF):
    """The add graph of tests/models/add_f32.mlir as a HAL data graph pipeline (3 tensor bindings)."""
    module = vgf.modules[0]
    shader = device.create_shader_module(module.code, name=module.name)
    set_layout = device.create_descriptor_set_layout([hal.DescriptorSetLayoutBinding(b, hal.DescriptorType.TENSOR) for b in range(3)])
    layout = device.create_pipeline_layout([set_layout])
    desc = device.tensor_description(100, (1, 4, 4, 8))
    resources = [hal.DataGraphResource(0, b, desc) for b in range(3)]
    pipeline = device.create_data_graph_pipeline(shader, module.entry_point, layout, resources)
    return pipeline, layout, set_layout


def bound_session(device, pipeline):
    """A HAL data graph session with memory bound at every bind point object that needs it."""
    session = device.create_data_graph_session(pipeline)
    for r in session.bind_point_requirements:
        for i in range(r.num_objects):
            req = session.memory_requirements(r.bind_point, i)
            if req.size:
                session.bind_memory(device.allocate_memory(req.size), 0, r.bind_point, i)
    return session
