"""From a VGF model sequence to HAL objects and a recorded command buffer.

`Schedule(vgf, device, plans)` reads the sequence and resource tables once (the model was checked
whole at load: `pyvgf.runtime.check` made `plans`) and creates what every run
shares: shader modules, descriptor set layouts, pipeline layouts and one pipeline per segment,
with the graph constants bound as zero-copy views of the file. `Schedule.execution()` creates
what one run in flight needs: the resources (memory shared within each alias group), descriptor
sets, data graph sessions, the command buffer that dispatches every segment in order with a
barrier between segments, and that command buffer prepared to run between the writes of the
model's inputs and the reads of its outputs (`hal.PreparedRun`), optionally with a timestamp
around each segment (for pyvgf.debug's profiles). Nothing here depends on input values.

Where the device prefers device-local memory (a discrete GPU: `Device.prefers_device_local`),
every resource and session memory is device-local, and each model input and output also gets a
persistent host-visible staging twin: the command buffer copies the inputs' twins in before the
first segment and the outputs out to theirs after the last, so a run is one submission and the
host only touches host-visible (cached where the device has it) memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import hal
from ..errors import HalError, VGFFormatError
from ..format.model import (
    NO_INDEX,
    VGF,
    CodeType,
    DescriptorType,
    ModuleType,
    Resource,
    Segment,
)
from ..types import vulkan_shape

if TYPE_CHECKING:
    from .check import Checked

_LANGUAGES = {CodeType.SPIRV: "spirv", CodeType.GLSL: "glsl", CodeType.HLSL: "hlsl"}
_BUFFER_TYPES = {DescriptorType.STORAGE_BUFFER: hal.DescriptorType.STORAGE_BUFFER,
                 DescriptorType.UNIFORM_BUFFER: hal.DescriptorType.UNIFORM_BUFFER}


def _set_index(position: int, set_index: int) -> int:
    """A descriptor set's index: explicit, or its position when the file leaves it at the default."""
    return position if set_index == NO_INDEX else set_index


def _describe(device: hal.Device, resource: Resource, where: str) -> hal.TensorDescription:
    if any(d < 0 for d in resource.shape):
        raise HalError(f"{where} has a dynamic shape {resource.shape}: pyvgf runs static shapes only")
    try:
        return device.tensor_description(resource.format, vulkan_shape(resource.shape),
                                         resource.strides or None)
    except HalError as exc:
        raise HalError(f"{where}: {exc}") from None


@dataclass
class _SegmentPlan:
    segment: Segment
    pipeline: hal.DataGraphPipeline | hal.ComputePipeline
    layout: hal.PipelineLayout
    sets: dict[int, dict[int, int]]
    """set index -> binding -> MRT index."""


class Execution:
    """The resources, descriptor sets, sessions and command buffer of one run in flight, and
    `prepared`: the run itself, taking one array per input binding slot and returning one per
    output slot, in the sequence's slot order (a buffer output as its bytes)."""

    def __init__(self, schedule: Schedule, timestamps: hal.QueryPool | None = None):
        device = self.device = schedule.device
        local = self.device_local = device.prefers_device_local
        self.resources: dict[int, hal.Tensor | hal.Buffer] = {}
        groups: dict[int, list[int]] = {}
        for index in schedule.used:
            group = schedule.vgf.resources[index].alias_group_id
            groups.setdefault(index if group == NO_INDEX else -1 - group, []).append(index)
        for members in groups.values():
            memory = None
            if len(members) > 1:
                size = max(schedule.requirements[i].size for i in members)
                memory = device.allocate_memory(size, label=f"alias group of MRT {members}", device_local=local)
            for i in members:
                desc = schedule.descriptions[i]
                if schedule.is_tensor[i]:
                    self.resources[i] = device.create_tensor(desc.format, desc.shape, desc.strides, desc.usage,
                                                             memory=memory, device_local=local, label=f"MRT {i}")
                else:
                    self.resources[i] = device.create_buffer(desc.nbytes, hal.BUFFER_USAGE_ALL,
                                                             memory=memory, device_local=local, label=f"MRT {i}")
        self.host: dict[int, hal.Tensor | hal.Buffer] = {}
        """What the host writes inputs to and reads outputs from, by MRT index: the resource
        itself, or its host-visible staging twin."""
        for i in (*schedule.inputs, *schedule.outputs):
            self.host[i] = self._staging(self.resources[i], i) if local else self.resources[i]
        views = {i: r.create_view() if isinstance(r, hal.Tensor) else r for i, r in self.resources.items()}
        encoder = device.create_command_encoder(label="model run")
        if local:
            for i in schedule.inputs:
                self._copy(encoder, self.host[i], self.resources[i])
            encoder.barrier()
        if timestamps is not None:
            encoder.write_timestamp(timestamps, 0)
        for n, plan in enumerate(schedule.segments):
            point = hal.PipelineBindPoint.DATA_GRAPH if isinstance(plan.pipeline, hal.DataGraphPipeline) \
                else hal.PipelineBindPoint.COMPUTE
            if n:
                encoder.barrier()
            encoder.bind_pipeline(plan.pipeline)
            for index, bindings in plan.sets.items():
                dset = device.create_descriptor_set(plan.layout.set_layouts[index],
                                                    {b: views[m] for b, m in bindings.items()})
                encoder.bind_descriptor_set(point, plan.layout, index, dset)
            if point == hal.PipelineBindPoint.DATA_GRAPH:
                encoder.dispatch_data_graph(self._session(plan.pipeline))
            else:
                encoder.dispatch(*plan.segment.dispatch_shape)
            if timestamps is not None:
                encoder.write_timestamp(timestamps, n + 1)
        if local:
            encoder.barrier()
            for i in schedule.outputs:
                self._copy(encoder, self.resources[i], self.host[i])
        self.command_buffer = encoder.finish()
        seq = schedule.vgf.sequence
        self.prepared = device.prepare_run(self.command_buffer, [self.host[s.mrt_index] for s in seq.inputs],
                                           [self.host[s.mrt_index] for s in seq.outputs], label="model run",
                                           keep_contents=False)  # the host resources are this run's alone

    def _staging(self, resource: hal.Tensor | hal.Buffer, index: int) -> hal.Tensor | hal.Buffer:
        """A host-visible resource of the same layout as `resource`, for copies to and from it."""
        if isinstance(resource, hal.Tensor):
            d = resource.description
            return self.device.create_tensor(d.format, d.shape, d.strides,
                                             hal.TensorUsage.TRANSFER_SRC | hal.TensorUsage.TRANSFER_DST,
                                             label=f"MRT {index} staging")
        return self.device.create_buffer(resource.size, hal.BUFFER_USAGE_ALL, label=f"MRT {index} staging")

    @staticmethod
    def _copy(encoder: hal.CommandEncoder, src: hal.Tensor | hal.Buffer, dst: hal.Tensor | hal.Buffer) -> None:
        if isinstance(src, hal.Tensor):
            encoder.copy_tensor(src, dst)
        else:
            encoder.copy_buffer(src, dst, 0, 0, src.size)

    def _session(self, pipeline: hal.DataGraphPipeline) -> hal.DataGraphSession:
        session = self.device.create_data_graph_session(pipeline)
        for req in session.bind_point_requirements:
            for i in range(req.num_objects):
                size = session.memory_requirements(req.bind_point, i).size
                if size:
                    memory = self.device.allocate_memory(size, device_local=self.device_local)
                    session.bind_memory(memory, 0, req.bind_point, i)
        return session


class Schedule:
    """The shared, load-time part of a model on one device (see the module docstring).

    `plans` are what `check(vgf)` returned (made here when not given): the model is checked
    whole before anything is created on the device, so the schedule only adds what depends on
    the device (its limits, memory types).
    """

    def __init__(self, vgf: VGF, device: hal.Device, plans: dict[int, Checked] | None = None, *,
                 substitutes: Mapping[str, hal.ShaderModule] | None = None):
        from .check import check

        self.vgf = vgf
        self.device = device
        self.plans = check(vgf) if plans is None else plans
        self.substitutes = dict(substitutes or {})
        """Shader modules that compute segments run instead of the VGF's, by VGF module name
        (a scenario's shader substitutions)."""
        seq = vgf.sequence
        if not seq.segments:
            raise VGFFormatError("the model sequence has no segments", section="model_sequence")
        self.used: list[int] = []
        self.descriptions: dict[int, hal.TensorDescription] = {}
        self.is_tensor: dict[int, bool] = {}
        self.requirements: dict[int, hal.MemoryRequirements] = {}
        self.inputs = list(dict.fromkeys(slot.mrt_index for slot in seq.inputs))
        self.outputs = list(dict.fromkeys(slot.mrt_index for slot in seq.outputs))
        for slot in (*seq.inputs, *seq.outputs):
            self._use(slot.mrt_index)
        bindings = [self._bindings(n, seg) for n, seg in enumerate(seq.segments)]  # before any object
        modules: dict[int, hal.ShaderModule] = {}
        self.segments = [self._plan_segment(n, seg, sets, modules)
                         for (n, seg), sets in zip(enumerate(seq.segments), bindings)]
        self.plans = {}  # the pipelines hold what they run (the cpu one its plan, vulkan's nothing of it)

    def _use(self, index: int) -> None:
        res = self.vgf.resources[index]
        if index in self.descriptions:
            return
        desc = _describe(self.device, res, f"MRT entry {index}")
        if res.descriptor_type == DescriptorType.TENSOR_ARM:
            self.is_tensor[index] = True
            self.requirements[index] = self.device.get_tensor_memory_requirements(desc)
        elif res.descriptor_type in _BUFFER_TYPES:
            self.is_tensor[index] = False
            self.requirements[index] = self.device.get_buffer_memory_requirements(desc.nbytes)
        else:
            raise HalError(f"MRT entry {index} has descriptor type {res.descriptor_type}: pyvgf binds "
                           f"tensors and storage/uniform buffers only")
        self.used.append(index)
        self.descriptions[index] = desc

    def _graph_limits(self, n: int, seg: Segment) -> None:
        """Every tensor of segment `n`'s graph (results, constants) within the device's limits."""
        plan = self.plans.get(n)
        if seg.type != ModuleType.GRAPH or plan is None:
            return
        limits = self.device.limits
        graph = plan.graph
        types = [*graph.constants.values()]
        for node in graph.nodes:
            types.extend(node.result_type if isinstance(node.result_type, tuple) else (node.result_type,))
        for t in types:
            if (t.rank > limits.max_tensor_dimension_count or t.size > limits.max_tensor_elements
                    or any(d > limits.max_per_dimension_tensor_elements for d in t.shape)):
                raise HalError(f"segment {n} ({seg.name!r}): {t} is beyond the device's tensor limits "
                               f"({limits.max_tensor_dimension_count} dimensions, "
                               f"{limits.max_per_dimension_tensor_elements} per dimension, "
                               f"{limits.max_tensor_elements} elements)")

    def _bindings(self, n: int, seg: Segment) -> dict[int, dict[int, int]]:
        """Set index -> binding -> MRT index of segment `n`, each resource described for the device."""
        self._graph_limits(n, seg)
        where = f"segment {n} ({seg.name!r})"
        sets: dict[int, dict[int, int]] = {}
        for position, info in enumerate(seg.set_infos):
            index = _set_index(position, info.set_index)
            if index >= self.device.limits.max_bound_descriptor_sets:
                raise HalError(f"{where}: descriptor set {index} is beyond the device's "
                               f"{self.device.limits.max_bound_descriptor_sets} (maxBoundDescriptorSets)")
            sets[index] = {}
            for slot in info.bindings:
                self._use(slot.mrt_index)
                sets[index][slot.binding] = slot.mrt_index
        return sets

    def _module(self, seg: Segment, modules: dict[int, hal.ShaderModule], where: str) -> hal.ShaderModule:
        module = self.vgf.modules[seg.module_index]
        if seg.type == ModuleType.COMPUTE and module.name in self.substitutes:
            return self.substitutes[module.name]
        if seg.module_index not in modules:
            language = _LANGUAGES.get(module.code_type)
            if language is None:
                raise HalError(f"module {module.name!r} carries no code")
            modules[seg.module_index] = self.device.create_shader_module(module.code, name=module.name,
                                                                         language=language)
        return modules[seg.module_index]

    def _plan_segment(self, n: int, seg: Segment, sets: dict[int, dict[int, int]],
                      modules: dict[int, hal.ShaderModule]) -> _SegmentPlan:
        module = self._module(seg, modules, f"segment {n} ({seg.name!r})")
        set_layouts = []
        for index in range(max(sets, default=-1) + 1):
            bindings = [hal.DescriptorSetLayoutBinding(b, hal.DescriptorType.TENSOR if self.is_tensor[m]
                                                       else _BUFFER_TYPES[self.vgf.resources[m].descriptor_type])
                        for b, m in sorted(sets.get(index, {}).items())]
            set_layouts.append(self.device.create_descriptor_set_layout(bindings, label=f"{seg.name} set {index}"))
        ranges = [hal.PushConstantRange(hal.ShaderStage(r.stage_flags), r.offset, r.size)
                  for r in seg.push_constant_ranges]
        layout = self.device.create_pipeline_layout(set_layouts, ranges, label=seg.name)
        if seg.type == ModuleType.GRAPH:
            resources = [hal.DataGraphResource(i, b, self.descriptions[m])
                         for i, bindings in sets.items() for b, m in bindings.items() if self.is_tensor[m]]
            pipeline = self.device.create_data_graph_pipeline(
                module, self.vgf.modules[seg.module_index].entry_point, layout, resources,
                self._constants(seg), label=seg.name, plan=self.plans.get(n))
        else:
            source = self.vgf.modules[seg.module_index]
            decoded = None if source.name in self.substitutes else self.plans.get(n)  # at load
            pipeline = self.device.create_compute_pipeline(module, source.entry_point, layout,
                                                           label=seg.name, decoded=decoded)
        return _SegmentPlan(seg, pipeline, layout, sets)

    def _constants(self, seg: Segment) -> list[hal.GraphConstant]:
        constants = []
        for binding in seg.graph_constants():
            idx = binding.constant_table_index
            const = self.vgf.constants[idx]
            desc = _describe(self.device, self.vgf.resources[const.mrt_index],
                             f"constant {idx} (MRT entry {const.mrt_index})")
            data = const.data if isinstance(const.data, np.ndarray) else np.frombuffer(const.data, np.uint8)
            constants.append(hal.GraphConstant(binding.graph_constant_id, data, desc, const.sparsity_dimension))
        return constants

    def execution(self, timestamps: hal.QueryPool | None = None) -> Execution:
        """A new execution; with `timestamps` (a pool of one query more than there are
        segments), its command buffer writes query 0 before the first segment and query n + 1
        when segment n has finished."""
        return Execution(self, timestamps)
