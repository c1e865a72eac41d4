"""The `vulkan` HAL backend: every HAL object backed by the Vulkan object of the same name.

The HAL (pyvgf/hal/_classes.py) checks arguments and object state; this module turns each hook
into Vulkan calls through the objects of context.py, tensors.py, pipelines.py and commands.py.
spec/vulkan-backend.md maps every HAL call to the Vulkan calls it makes.

Threads: the command pool and the queue are externally synchronised in Vulkan, so a command
encoder records into a Python list and replays it into a VkCommandBuffer in `finish()` under
the device's lock; `Queue.submit`, a prepared run's vkQueueSubmit and fence bookkeeping hold the
queue's lock.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import HalError
from .. import _classes as hal
from . import _ffi, commands, pipelines, queries, tensors
from ._vk import new_struct, vk
from .context import DeviceReport, MessageSink, VulkanContext, VulkanInstance, is_unified_memory, pick_device

_DEVICE_TYPES = {0: "other", 1: "integrated-gpu", 2: "discrete-gpu", 3: "virtual-gpu", 4: "cpu"}


def request_adapter(
    *,
    device_index: int | None = None,
    emulation: str = "auto",
    validation: bool = False,
    on_message: MessageSink | None = None,
) -> VulkanAdapter:
    """The Vulkan adapter: the best usable physical device (or `device_index`), with Arm's
    emulation layer stacked when the driver lacks VK_ARM_tensors / VK_ARM_data_graph
    (`emulation` "auto", "always" or "never"). `validation` adds VK_LAYER_KHRONOS_validation and
    sends its messages to `on_message(severity, types, message_id, text)`."""
    instance = VulkanInstance(emulation=emulation, validation=validation, on_message=on_message)
    try:
        devices = instance.physical_devices()
        reports = [instance.describe(i, pd) for i, pd in enumerate(devices)]
        index = pick_device(reports, device_index)
        return VulkanAdapter(instance, devices[index], reports[index])
    except BaseException:
        instance.release()
        raise


def _limits(physical_device: Any) -> hal.Limits:
    mod = vk()
    tensor = new_struct("VkPhysicalDeviceTensorPropertiesARM", sType=_ffi.STRUCTURE_TYPE_PHYSICAL_DEVICE_TENSOR_PROPERTIES_ARM)
    props2 = mod.VkPhysicalDeviceProperties2(pNext=tensor)
    mod.vkGetPhysicalDeviceProperties2(physical_device, props2)
    core = props2.properties.limits
    return hal.Limits(
        max_tensor_dimension_count=int(tensor.maxTensorDimensionCount),
        max_tensor_elements=int(tensor.maxTensorElements),
        max_per_dimension_tensor_elements=int(tensor.maxPerDimensionTensorElements),
        max_tensor_stride=int(tensor.maxTensorStride),
        max_tensor_size=int(tensor.maxTensorSize),
        max_descriptor_set_storage_tensors=int(tensor.maxDescriptorSetStorageTensors),
        max_bound_descriptor_sets=int(core.maxBoundDescriptorSets),
        max_push_constants_size=int(core.maxPushConstantsSize),
        max_storage_buffer_range=int(core.maxStorageBufferRange),
        max_compute_work_group_count=tuple(int(n) for n in core.maxComputeWorkGroupCount),
    )


class VulkanAdapter(hal.Adapter):
    """A VkPhysicalDevice of a VulkanInstance shared with the devices it creates."""

    def __init__(self, instance: VulkanInstance, physical_device: Any, report: DeviceReport):
        mod = vk()
        props = mod.vkGetPhysicalDeviceProperties(physical_device)
        info = hal.AdapterInfo(
            backend="vulkan",
            name=report.name,
            vendor_id=int(props.vendorID),
            device_id=int(props.deviceID),
            device_type=_DEVICE_TYPES.get(report.device_type_code, "other"),
            driver=report.driver,
            api_version=tuple(int(x) for x in report.api_version.split(".")),
        )
        super().__init__(info, _limits(physical_device), frozenset(report.extensions))
        self.report = report
        self.uses_emulation = instance.uses_emulation
        self._instance = instance
        self._release = weakref.finalize(self, instance.release)

    def _destroy(self) -> None:
        self._release()

    def _request_device(self, shaders, label):
        return VulkanDevice(self, shaders, label)


class VulkanDevice(hal.Device):
    """A VkDevice with one queue and command pool (VulkanContext)."""

    def __init__(self, adapter: VulkanAdapter, shaders, label: str = ""):
        self.ctx = VulkanContext(instance=adapter._instance, device_index=adapter.report.index)
        self.lock = threading.Lock()
        """Guards the command pool (vkAllocate/Free/record command buffers)."""
        self._owned: dict[int, Any] = {}
        """The Vulkan objects of this device's HAL objects, by id (see `_Backed`)."""
        self._close = weakref.finalize(self, _teardown, self.ctx, self._owned)
        try:
            self._host_bits = self._host_memory_bits()
            self._unified = is_unified_memory(self.ctx.memory_types, self._host_bits)
            super().__init__(adapter, shaders, label)
        except BaseException:
            self._close()
            raise

    def _host_memory_bits(self) -> int:
        """Memory types that every tensor and buffer accepts, so one DeviceMemory can hold
        aliased tensors and buffers alike."""
        bits = tensors.shared_memory_bits(self.ctx)
        if not self.ctx.memory_types_for(bits, host_visible=True):
            raise HalError(f"{self.ctx.report.name} has no host-visible memory type shared by tensors and buffers")
        return bits

    @property
    def prefers_device_local(self) -> bool:
        """False on unified memory (lavapipe, integrated GPUs), True on a discrete GPU."""
        return not self._unified

    def _destroy(self) -> None:
        if self.ctx.device is not None:
            vk().vkDeviceWaitIdle(self.ctx.device)
        super()._destroy()
        self.queue._release_fences()
        self._close()

    def _create_queue(self):
        return VulkanQueue(self)

    def _allocate_memory(self, size, label, device_local):
        return VulkanMemory(self, size, label, device_local)

    def _tensor_memory_requirements(self, description):
        size, alignment, _ = tensors.tensor_memory_requirements(self.ctx, _vk_description(description))
        return hal.MemoryRequirements(max(size, description.nbytes), alignment)

    def _create_tensor(self, description, memory, offset, label, device_local):
        if description.strides is not None and description.strides != description.packed_strides and not self.ctx.tensor_non_packed:
            raise HalError(f"tensor {description} has non-packed strides {list(description.strides)}, but "
                           f"{self.ctx.report.name} lacks the tensorNonPacked feature")
        return VulkanTensor(self, description, memory, offset, label, device_local)

    def _buffer_memory_requirements(self, size, usage):
        size_, alignment, _ = tensors.buffer_memory_requirements(self.ctx, size, int(usage))
        return hal.MemoryRequirements(size_, alignment)

    def _create_buffer(self, size, usage, memory, offset, label, device_local):
        return VulkanBuffer(self, size, usage, memory, offset, label, device_local)

    def _create_descriptor_set_layout(self, bindings, label):
        return VulkanDescriptorSetLayout(self, bindings, label)

    def _create_pipeline_layout(self, set_layouts, push_constant_ranges, label):
        return VulkanPipelineLayout(self, set_layouts, push_constant_ranges, label)

    def _create_descriptor_set(self, layout, resources, label):
        return VulkanDescriptorSet(self, layout, resources, label)

    def _create_data_graph_pipeline(self, module, entry_point, layout, resources, constants, label, plan):
        return VulkanDataGraphPipeline(self, module, entry_point, layout, resources, constants, label)

    def _create_data_graph_session(self, pipeline, label):
        return VulkanDataGraphSession(self, pipeline, label)

    def _create_compute_pipeline(self, module, entry_point, layout, label):
        return VulkanComputePipeline(self, module, entry_point, layout, label)

    def _create_command_encoder(self, label):
        return VulkanCommandEncoder(self, label)

    @functools.cached_property
    def timestamp_period(self) -> float | None:
        clock = queries.timestamp_clock(self.ctx)
        return None if clock is None else clock[0]

    def _create_query_pool(self, count, label):
        return VulkanQueryPool(self, count, label)

    def _prepare_run(self, command_buffer, inputs, outputs, label):
        if all(_host_view(r) is not None for r in (*inputs, *outputs)):
            return VulkanPreparedRun(self, command_buffer, inputs, outputs, label)
        return super()._prepare_run(command_buffer, inputs, outputs, label)

    def live_objects(self) -> dict[str, int]:
        """Vulkan objects of this device not yet destroyed, by type (for leak checks)."""
        return {k: v for k, v in self.ctx.live.items() if v}


class _Backed:
    """A HAL object backed by a Vulkan object `vk` (None until made, so that an object whose
    construction failed, and which its device still lists, destroys nothing).

    Setting `vk` records the Vulkan object in its device's `owned` table, which holds Vulkan
    objects only (never HAL objects, so it keeps no device alive): a device dropped without
    destroy() destroys what is left there, newest first, before the VkDevice (`_teardown`)."""

    _vk: Any = None

    @property
    def vk(self) -> Any:
        return self._vk

    @vk.setter
    def vk(self, value: Any) -> None:
        owned = self.device._owned  # type: ignore[attr-defined]
        if self._vk is not None:
            owned.pop(id(self._vk), None)
        if value is not None:
            owned[id(value)] = value
        self._vk = value

    def _destroy(self) -> None:
        if self.vk is not None:
            self.vk.destroy()
            self.vk = None


def _teardown(ctx: VulkanContext, owned: dict[int, Any]) -> None:
    """Destroy a device's remaining Vulkan objects, newest first, then the device itself."""
    if ctx.device is not None:
        vk().vkDeviceWaitIdle(ctx.device)
        for obj in reversed(list(owned.values())):
            obj.destroy()
        owned.clear()
    ctx.destroy()


def _vk_description(d: hal.TensorDescription) -> Any:
    return tensors.tensor_description(d.format, d.shape, d.strides, usage=int(d.usage), tiling=int(d.tiling))


class VulkanMemory(_Backed, hal.DeviceMemory):
    def __init__(self, device: VulkanDevice, size: int, label: str = "", device_local: bool = False):
        super().__init__(device, size, label)
        self.vk = tensors.Memory(device.ctx, size, device._host_bits, device_local=device_local, label=label)


class VulkanTensor(_Backed, hal.Tensor):
    def __init__(self, device: VulkanDevice, description, memory, offset, label="", device_local=False):
        super().__init__(device, description, memory, offset, label)
        self.vk = tensors.Tensor(
            device.ctx,
            description.format,
            description.shape,
            strides=description.strides,
            usage=int(description.usage),
            tiling=int(description.tiling),
            memory=memory.vk if memory is not None else None,
            offset=offset,
            with_view=False,
            device_local=device_local,
            label=label,
        )

    def _create_view(self, label):
        return VulkanTensorView(self, label)

    @property
    def mapped(self) -> bool:
        """True when the tensor lives in host-visible (mapped) memory."""
        return self.vk.memory.mapped is not None

    def array(self) -> np.ndarray:
        """A writable typed view of the tensor in mapped memory (LINEAR tensors)."""
        return self.vk.array(self.dtype)


class _ViewHandle:
    """A VkTensorViewARM, as the device's `owned` table holds it."""

    def __init__(self, ctx: VulkanContext, handle: Any):
        self.ctx, self.handle = ctx, handle

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            tensors.destroy_tensor_view(self.ctx, self.handle)
        self.handle = None


class VulkanTensorView(hal.TensorView):
    handle: Any = None

    def __init__(self, tensor: VulkanTensor, label=""):
        super().__init__(tensor, label)
        self.handle = tensors.create_tensor_view(tensor.device.ctx, tensor.vk)
        self._owned = _ViewHandle(tensor.device.ctx, self.handle)
        self.device._owned[id(self._owned)] = self._owned

    def _destroy(self):
        if self.handle is not None:
            self.device._owned.pop(id(self._owned), None)
            self._owned.destroy()
        self.handle = None


class VulkanBuffer(_Backed, hal.Buffer):
    def __init__(self, device: VulkanDevice, size, usage, memory, offset, label="", device_local=False):
        super().__init__(device, size, usage, memory, offset, label)
        self.vk = tensors.Buffer(
            device.ctx, size, usage=int(usage), memory=memory.vk if memory is not None else None, offset=offset,
            device_local=device_local, label=label,
        )


class VulkanDescriptorSetLayout(_Backed, hal.DescriptorSetLayout):
    def __init__(self, device: VulkanDevice, bindings, label=""):
        super().__init__(device, bindings, label)
        stage_all = vk().VK_SHADER_STAGE_ALL
        # Data graph pipelines have no shader stage: their bindings are visible to all stages.
        self.vk = pipelines.DescriptorSetLayout(
            device.ctx,
            [(b.binding, int(b.descriptor_type), stage_all if b.descriptor_type == hal.DescriptorType.TENSOR else int(b.stages)) for b in bindings],
        )


class VulkanPipelineLayout(_Backed, hal.PipelineLayout):
    def __init__(self, device: VulkanDevice, set_layouts, push_constant_ranges, label=""):
        super().__init__(device, set_layouts, push_constant_ranges, label)
        self.vk = pipelines.PipelineLayout(
            device.ctx,
            [s.vk for s in set_layouts],
            [(int(r.stages), r.offset, r.size) for r in push_constant_ranges],
        )


class VulkanDescriptorSet(_Backed, hal.DescriptorSet):
    def __init__(self, device: VulkanDevice, layout: VulkanDescriptorSetLayout, resources, label=""):
        super().__init__(device, layout, resources, label)
        self.vk = pipelines.DescriptorSet(device.ctx, layout.vk)
        try:
            for binding, res in resources.items():
                if isinstance(res, VulkanTensorView):
                    self.vk.write_view(binding, res.handle)
                else:
                    self.vk.write_buffer(binding, res.vk)
        except BaseException:
            self.vk.destroy()
            raise


def _graph_resource(r: hal.DataGraphResource) -> pipelines.GraphResource:
    d = r.description
    return pipelines.GraphResource(r.descriptor_set, r.binding, d.format, d.shape, d.strides, int(d.usage), int(d.tiling))


def _graph_constant(c: hal.GraphConstant) -> pipelines.GraphConstant:
    d = c.description
    return pipelines.GraphConstant(c.id, d.format, d.shape, c.data, c.sparsity_dimension, d.strides)


class VulkanDataGraphPipeline(_Backed, hal.DataGraphPipeline):
    def __init__(self, device: VulkanDevice, module, entry_point, layout, resources, constants, label=""):
        super().__init__(device, module, entry_point, layout, resources, constants, label)
        self.vk = pipelines.DataGraphPipeline(
            device.ctx,
            module.code,
            entry_point,
            layout.vk,
            [_graph_resource(r) for r in resources],
            [_graph_constant(c) for c in constants],
            label=self.label,
        )


class VulkanDataGraphSession(_Backed, hal.DataGraphSession):
    def __init__(self, device: VulkanDevice, pipeline: VulkanDataGraphPipeline, label=""):
        super().__init__(device, pipeline, label)
        self.vk = pipelines.DataGraphSession(device.ctx, pipeline.vk)
        self._requirements = self.vk.requirements()
        for bind_point, _ in self._requirements:
            if bind_point not in hal.SessionBindPoint._value2member_map_:
                raise HalError(f"data graph session of {pipeline} asks for bind point {bind_point}, which pyvgf does not know")

    def _bind_point_requirements(self):
        return [hal.BindPointRequirement(hal.SessionBindPoint(bp), n) for bp, n in self._requirements]

    def _memory_requirements(self, bind_point, object_index):
        size, alignment, _ = self.vk.memory_requirements(int(bind_point), object_index)
        return hal.MemoryRequirements(size, alignment)

    def _bind_memory(self, memory, offset, bind_point, object_index):
        self.vk.bind(int(bind_point), object_index, memory.vk, offset)


class VulkanComputePipeline(_Backed, hal.ComputePipeline):
    def __init__(self, device: VulkanDevice, module, entry_point, layout, label=""):
        super().__init__(device, module, entry_point, layout, label)
        if module.language != "spirv":
            raise HalError(
                f"compute module {module.name!r} is {module.language.upper()} source: the vulkan backend runs SPIR-V "
                "only (compile it to SPIR-V, or run the model on the cpu backend with a Python stand-in)"
            )
        self.vk = pipelines.ComputePipeline(device.ctx, module.code, entry_point, layout.vk, label=self.label)


Command = Callable[[commands.CommandBuffer], None]


class VulkanCommandEncoder(hal.CommandEncoder):
    """Records into a list; `finish()` replays it into a VkCommandBuffer under the device lock
    and ends it with a barrier that makes every write visible to the host."""

    def __init__(self, device: VulkanDevice, label=""):
        super().__init__(device, label)
        self._commands: list[Command] = []
        self._timed: list[VulkanQueryPool] = []

    def _bind_pipeline(self, point, pipeline):
        self._commands.append(lambda cb: cb.bind_pipeline(int(point), pipeline.vk))

    def _bind_descriptor_set(self, point, layout, index, descriptor_set):
        self._commands.append(lambda cb: cb.bind_set(int(point), layout.vk, index, descriptor_set.vk))

    def _push_constants(self, layout, stages, offset, data):
        self._commands.append(lambda cb: cb.push_constants(layout.vk, int(stages), offset, data))

    def _dispatch_data_graph(self, session):
        self._commands.append(lambda cb: cb.dispatch_session(session.vk))

    def _dispatch(self, x, y, z):
        self._commands.append(lambda cb: cb.dispatch(x, y, z))

    def _copy_tensor(self, src, dst):
        self._commands.append(lambda cb: cb.copy_tensor(src.vk, dst.vk))

    def _copy_buffer(self, src, dst, src_offset, dst_offset, size):
        self._commands.append(lambda cb: cb.copy_buffer(src.vk, dst.vk, src_offset, dst_offset, size))

    def _barrier(self):
        self._commands.append(lambda cb: cb.memory_barrier())

    def _write_timestamp(self, pool, index):
        if pool not in self._timed:  # each submission starts with the pool's queries reset
            self._timed.append(pool)
            self._commands.insert(0, lambda cb: pool.vk.reset(cb.handle))
        self._commands.append(lambda cb: pool.vk.write(cb.handle, index))

    def _finish(self):
        device: VulkanDevice = self.device
        with device.lock:
            cb = commands.CommandBuffer(device.ctx)
            try:
                cb.begin()
                for command in self._commands:
                    command(cb)
                cb.host_barrier()
                cb.end()
            except BaseException:
                cb.destroy()
                raise
        self._commands = []
        return VulkanCommandBuffer(device, cb, self.label)


class VulkanQueryPool(_Backed, hal.QueryPool):
    def __init__(self, device: VulkanDevice, count: int, label=""):
        super().__init__(device, count, label)
        self.vk = queries.TimestampPool(device.ctx, count)

    def _results(self):
        return self.vk.results()


class VulkanCommandBuffer(hal.CommandBuffer):
    def __init__(self, device: VulkanDevice, cb: commands.CommandBuffer, label=""):
        super().__init__(device, label)
        self.vk = cb
        device._owned[id(cb)] = cb
        self.last: _Submission | None = None
        """The latest submission of this command buffer (it must finish before the next)."""

    def _destroy(self):
        if self.last is not None:
            self.last.wait(None)
        self.device._owned.pop(id(self.vk), None)
        with self.device.lock:
            self.vk.destroy()


class _Submission:
    """One vkQueueSubmit and its VkFence. Every wait on the fence goes through `lock`, so the
    fence can be recycled by the first wait that sees it signalled."""

    def __init__(self, queue: VulkanQueue, fence: commands.Fence):
        self.queue = queue
        self.fence: commands.Fence | None = fence
        self.lock = threading.Lock()
        self.done = False

    def wait(self, timeout: float | None) -> bool:
        with self.lock:
            if self.done:
                return True
            if timeout is not None and timeout <= 0:
                if not self.fence.signalled():
                    return False
            elif not self.fence.wait_for(timeout):
                return False
            self.done = True
            self.queue._retire(self)
            return True


class VulkanFence(hal.Fence):
    def __init__(self, submission: _Submission):
        super().__init__("fence")
        self._submission = submission

    def _wait(self, timeout):
        return self._submission.wait(timeout)


def _host_view(resource: hal.Tensor | hal.Buffer) -> np.ndarray | None:
    """A writable numpy view of a resource in mapped memory (typed for a LINEAR tensor, bytes
    for a buffer), or None when the host reaches it only through a staging copy."""
    if isinstance(resource, VulkanTensor):
        linear = resource.description.tiling == hal.TensorTiling.LINEAR
        return resource.array() if linear and resource.mapped else None
    return resource.vk.array() if resource.vk.memory.mapped is not None else None


class VulkanPreparedRun(hal.PreparedRun):
    """A prepared run whose inputs and outputs all live in mapped memory: persistent numpy views
    of them, the command buffer's VkSubmitInfo and a fence of its own, made once. A run is one
    numpy copy per input, vkQueueSubmit, vkWaitForFences, vkResetFences and one numpy copy per
    output."""

    def __init__(self, device: VulkanDevice, command_buffer, inputs, outputs, label=""):
        super().__init__(device, command_buffer, inputs, outputs, label)
        self._writes = [(_host_view(r), isinstance(r, hal.Tensor)) for r in inputs]
        self._reads = [_host_view(r) for r in outputs]
        self._buffers = [command_buffer.vk]
        self._fence = commands.Fence(device.ctx)
        device._owned[id(self._fence)] = self._fence
        self._in_flight = False
        """True from vkQueueSubmit until the fence is reset (a run interrupted between the two
        leaves it True: the next run, or destroy(), waits first)."""
        queue: VulkanQueue = device.queue
        with queue._lock:
            queue._runs.append(self)

    def _run(self, arrays):
        queue: VulkanQueue = self.device.queue
        if queue._pending:
            queue._finish_submissions()
        if self._in_flight:
            self._finish()
        for (view, is_tensor), data in zip(self._writes, arrays):
            if is_tensor:
                view[...] = data
            else:
                view[: data.size] = data
        with queue._lock:
            commands.submit(self.device.ctx, self._buffers, self._fence)
        self._in_flight = True
        self._finish()
        return [view.copy() for view in self._reads]

    def _finish(self) -> None:
        self._fence.wait_for(None)
        self._fence.reset()
        self._in_flight = False

    def wait_idle(self) -> None:
        """Return once no run of this PreparedRun is in flight."""
        with self._lock:
            if self._in_flight:
                self._finish()

    def _destroy(self) -> None:
        queue: VulkanQueue = self.device.queue
        with queue._lock:
            queue._runs.remove(self)
        with self._lock:
            if self._in_flight and self.device.ctx.device is not None:
                self._finish()
            self.device._owned.pop(id(self._fence), None)
            self._fence.destroy()


class VulkanQueue(hal.Queue):
    """The device's VkQueue. A host read or write first waits for every submission made
    before it, prepared runs' included (the HAL's synchronous transfer rule)."""

    def __init__(self, device: VulkanDevice):
        super().__init__(device)
        self._lock = threading.Lock()
        self._pending: list[_Submission] = []
        self._free: list[commands.Fence] = []
        self._runs: list[VulkanPreparedRun] = []

    def _submit(self, command_buffers):
        for cb in command_buffers:
            if cb.last is not None:
                cb.last.wait(None)
        ctx = self.device.ctx
        with self._lock:
            if self._free:
                fence = self._free.pop()
            else:
                fence = commands.Fence(ctx)
                self.device._owned[id(fence)] = fence
            sub = _Submission(self, fence)
            try:
                commands.submit(ctx, [cb.vk for cb in command_buffers], fence)
            except BaseException:
                self._free.append(fence)
                raise
            self._pending.append(sub)
        for cb in command_buffers:
            cb.last = sub
        return VulkanFence(sub)

    def _retire(self, sub: _Submission) -> None:
        """A submission finished: recycle its fence (called under the submission's lock)."""
        with self._lock:
            if sub in self._pending:
                self._pending.remove(sub)
            if sub.fence is not None:
                sub.fence.reset()
                self._free.append(sub.fence)
                sub.fence = None

    def _finish_submissions(self) -> None:
        """Wait for every `submit` made before (prepared runs apart)."""
        with self._lock:
            pending = list(self._pending)
        for sub in pending:
            sub.wait(None)

    def _finish_earlier_work(self) -> None:
        self._finish_submissions()
        with self._lock:
            runs = list(self._runs)
        for run in runs:
            run.wait_idle()

    def _write_tensor(self, tensor, data):
        self._finish_earlier_work()
        if tensor.description.tiling == hal.TensorTiling.LINEAR and tensor.mapped:
            tensor.array()[...] = data
        else:
            self._staged_tensor(tensor, data)

    def _read_tensor(self, tensor):
        self._finish_earlier_work()
        if tensor.description.tiling == hal.TensorTiling.LINEAR and tensor.mapped:
            return np.array(tensor.array(), copy=True, order="C")
        return self._staged_tensor(tensor, None)

    def _staged_tensor(self, tensor: VulkanTensor, data: np.ndarray | None) -> np.ndarray | None:
        """Host transfer of an OPTIMAL or device-local tensor through a LINEAR staging tensor
        in host-visible memory and a whole-tensor vkCmdCopyTensorARM: written when `data` is
        given, else read and returned. (A model run stages through persistent tensors copied
        in its own command buffer instead: runtime/schedule.py.)"""
        d = tensor.description
        usage = int(hal.TensorUsage.TRANSFER_SRC | hal.TensorUsage.TRANSFER_DST)
        staging = tensors.Tensor(self.device.ctx, d.format, d.shape, usage=usage, with_view=False, label="staging")
        try:
            if data is not None:
                staging.array(d.dtype)[...] = data
                self._copy_and_wait(lambda cb: cb.copy_tensor(staging, tensor.vk))
                return None
            self._copy_and_wait(lambda cb: cb.copy_tensor(tensor.vk, staging))
            return np.array(staging.array(d.dtype), copy=True, order="C")
        finally:
            staging.destroy()

    def _staged_buffer(self, buffer: VulkanBuffer, offset: int, data: np.ndarray | None, size: int) -> np.ndarray | None:
        """Host transfer of `size` bytes at `offset` of a device-local buffer through a
        host-visible staging buffer and vkCmdCopyBuffer (written when `data` is given)."""
        staging = tensors.Buffer(self.device.ctx, size, label="staging")
        try:
            if data is not None:
                staging.array()[...] = data
                self._copy_and_wait(lambda cb: cb.copy_buffer(staging, buffer.vk, 0, offset, size))
                return None
            self._copy_and_wait(lambda cb: cb.copy_buffer(buffer.vk, staging, offset, 0, size))
            return staging.array().copy()
        finally:
            staging.destroy()

    def _copy_and_wait(self, record: Command) -> None:
        """Record one copy into a one-off command buffer, submit it and wait for it."""
        device: VulkanDevice = self.device
        ctx = device.ctx
        cb = fence = None
        try:
            with device.lock:
                cb = commands.CommandBuffer(ctx)
                cb.begin()
                record(cb)
                cb.memory_barrier()
                cb.host_barrier()
                cb.end()
            fence = commands.Fence(ctx)
            with self._lock:
                commands.submit(ctx, [cb], fence)
            fence.wait()
        finally:
            if fence is not None:
                fence.destroy()
            if cb is not None:
                with device.lock:
                    cb.destroy()

    def _write_buffer(self, buffer, data, offset):
        self._finish_earlier_work()
        if buffer.vk.memory.mapped is None:
            self._staged_buffer(buffer, offset, data, data.size)
        else:
            buffer.vk.array()[offset : offset + data.size] = data

    def _read_buffer(self, buffer, offset, size):
        self._finish_earlier_work()
        if buffer.vk.memory.mapped is None:
            return self._staged_buffer(buffer, offset, None, size)
        return buffer.vk.array()[offset : offset + size].copy()

    def _wait_idle(self):
        self._finish_earlier_work()

    def _release_fences(self) -> None:
        """Destroy every VkFence (the device is idle)."""
        with self._lock:
            for sub in self._pending:
                sub.done = True
                if sub.fence is not None:
                    self._free.append(sub.fence)
                    sub.fence = None
            self._pending = []
            for fence in self._free:
                self.device._owned.pop(id(fence), None)
                fence.destroy()
            self._free = []
