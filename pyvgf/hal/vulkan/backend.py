"""The `vulkan` HAL backend: one layer, as wgpu-py's backend is. Each HAL class of
pyvgf/hal/_classes.py has one subclass here or beside it (tensors.py, pipelines.py, commands.py,
queries.py) that owns its Vulkan handles and calls the driver itself; the HAL checks arguments
and object state. This module has the adapter and the device. spec/vulkan-backend.md maps every
HAL call to the Vulkan calls it makes.
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

from ...errors import HalError
from .. import _classes as hal
from . import _ffi, queries, tensors
from ._vk import call, new_struct, to_arm, vk
from .commands import VulkanCommandEncoder, VulkanPreparedRun, VulkanQueue, host_view
from .handles import DeviceHandles
from .instance import (
    OPTIONAL_EXTENSIONS,
    DeviceReport,
    LiveCounts,
    MessageSink,
    VulkanInstance,
    _FeatureChain,
    _load_device_functions,
    is_unified_memory,
    pick_device,
    rank_memory_types,
    shared_instance,
)
from .pipelines import (
    VulkanComputePipeline,
    VulkanDataGraphPipeline,
    VulkanDataGraphSession,
    VulkanDescriptorSet,
    VulkanDescriptorSetLayout,
    VulkanPipelineLayout,
)
from .tensors import VulkanBuffer, VulkanMemory, VulkanTensor

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
    sends its messages to `on_message(severity, types, message_id, text)`.

    Adapters share the process's instance for their options (`shared_instance`); one with its
    own `on_message` has an instance of its own, destroyed with its last device."""
    if on_message is None:
        instance = shared_instance(emulation=emulation, validation=validation)
    else:
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
    tensor = new_struct("VkPhysicalDeviceTensorPropertiesARM",
                        sType=_ffi.STRUCTURE_TYPE_PHYSICAL_DEVICE_TENSOR_PROPERTIES_ARM)
    props2 = mod.VkPhysicalDeviceProperties2(pNext=tensor)
    mod.vkGetPhysicalDeviceProperties2(physical_device, props2)
    core = props2.properties.limits
    x, y, z = (int(n) for n in core.maxComputeWorkGroupCount)
    sx, sy, sz = (int(n) for n in core.maxComputeWorkGroupSize)
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
        max_compute_work_group_count=(x, y, z),
        max_compute_work_group_size=(sx, sy, sz),
        max_compute_work_group_invocations=int(core.maxComputeWorkGroupInvocations),
    )


def _refuse_what_the_emulation_layer_crashes_on(graph: Any, label: str) -> None:
    """HalError for a graph that Arm's emulation layer 0.11.0 crashes the process on
    (vkCreateDataGraphPipelinesARM, SIGSEGV): an FFT2D or RFFT2D with a result that is not a
    graph output (spec/vulkan-backend.md, section 5)."""
    outputs = {(r.node, r.element) for r in graph.results if getattr(r, "element", None) is not None}
    for node in graph.nodes:
        if node.op in ("FFT2D", "RFFT2D") and any((node.id, i) not in outputs for i in range(2)):
            raise HalError(f"{label}: {node.op} %{node.id} has a result that is not a graph output, on which "
                           "Arm's ML emulation layer crashes the process; the cpu backend runs it")


class VulkanAdapter(hal.Adapter):
    """A VkPhysicalDevice of a VulkanInstance shared with the devices it creates."""

    def __init__(self, instance: VulkanInstance, physical_device: Any, report: DeviceReport):
        mod = vk()
        props = mod.vkGetPhysicalDeviceProperties(physical_device)
        major, minor, patch = (int(x) for x in report.api_version.split("."))
        info = hal.AdapterInfo(
            backend="vulkan",
            name=report.name,
            vendor_id=int(props.vendorID),
            device_id=int(props.deviceID),
            device_type=_DEVICE_TYPES.get(report.device_type_code, "other"),
            driver=report.driver,
            api_version=(major, minor, patch),
        )
        super().__init__(info, _limits(physical_device), frozenset(report.extensions))
        self.report = report
        self.uses_emulation = instance.uses_emulation
        self.layers = instance.layers
        """The instance layers, application side first."""
        self.physical_device = physical_device
        self._instance = instance
        self._release = weakref.finalize(self, instance.release)

    def _destroy(self) -> None:
        self._release()

    def _request_device(self, shaders, label):
        return VulkanDevice(self, shaders, label)


class VulkanDevice(hal.Device):
    """A VkDevice with one queue and one command pool. Its raw handles, and the release of
    every object it made, live in `handles` (DeviceHandles), which its finalizer tears down when
    it is dropped without destroy()."""

    adapter: VulkanAdapter
    queue: VulkanQueue

    def __init__(self, adapter: VulkanAdapter, shaders, label: str = ""):
        self.live = LiveCounts()
        """Live Vulkan objects of this device by type (for leak checks)."""
        self.handles = DeviceHandles(adapter._instance.acquire(), self.live)
        self.lock = threading.Lock()
        """Guards the command pool (vkAllocate/Free/record command buffers)."""
        self._close = weakref.finalize(self, self.handles.teardown)
        try:
            self.physical_device = adapter.physical_device
            self._create_device(adapter.report)
            props = vk().vkGetPhysicalDeviceMemoryProperties(self.physical_device)
            self.memory_types = [(props.memoryTypes[i].propertyFlags, props.memoryTypes[i].heapIndex)
                                 for i in range(props.memoryTypeCount)]
            """(propertyFlags, heapIndex) of each memory type."""
            self._host_bits = self._host_memory_bits(adapter.report)
            self._unified = is_unified_memory(self.memory_types, self._host_bits)
            super().__init__(adapter, shaders, label)
        except BaseException:
            self._close()
            raise

    def _create_device(self, report: DeviceReport) -> None:
        """vkCreateDevice with the ARM extensions and features (spec/vulkan-backend.md §2), its
        queue, command pool and ARM entry points."""
        mod = vk()
        h = self.handles
        exts = report.extensions
        query = _FeatureChain(_ffi.EXT_REPLICATED_COMPOSITES in exts)
        mod.vkGetPhysicalDeviceFeatures2(self.physical_device, query.features2)
        self.replicated_composites = bool(query.replicated and query.replicated.shaderReplicatedComposites)
        self.tensor_non_packed = bool(query.tensor.tensorNonPacked)
        chain = _FeatureChain(self.replicated_composites)
        chain.request_required()
        chain.tensor.tensorNonPacked = int(self.tensor_non_packed)
        enable = [_ffi.EXT_TENSORS, _ffi.EXT_DATA_GRAPH] + [e for e in OPTIONAL_EXTENSIONS if e in exts]
        if not self.replicated_composites and _ffi.EXT_REPLICATED_COMPOSITES in enable:
            enable.remove(_ffi.EXT_REPLICATED_COMPOSITES)
        self.enabled_extensions = enable
        self.queue_family = self._queue_family(report)
        queue = mod.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family, queueCount=1, pQueuePriorities=[1.0])
        info = mod.VkDeviceCreateInfo(
            pNext=mod.ffi.addressof(chain.features2),
            queueCreateInfoCount=1,
            pQueueCreateInfos=[queue],
            enabledExtensionCount=len(enable),
            ppEnabledExtensionNames=enable,
        )
        h.device = call("vkCreateDevice", mod.vkCreateDevice, self.physical_device, info, None)
        h.live.add("VkDevice", 1)
        h.arm = to_arm("VkDevice", h.device)
        h.fn = _load_device_functions(h.device)
        h.queue = mod.vkGetDeviceQueue(h.device, self.queue_family, 0)
        pool_info = mod.VkCommandPoolCreateInfo(flags=mod.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                                queueFamilyIndex=self.queue_family)
        h.pool = call("vkCreateCommandPool", mod.vkCreateCommandPool, h.device, pool_info, None)
        h.live.add("VkCommandPool", 1)

    def _queue_family(self, report: DeviceReport) -> int:
        """A family with DATA_GRAPH_BIT_ARM and COMPUTE, else any COMPUTE family."""
        mod = vk()
        families = mod.vkGetPhysicalDeviceQueueFamilyProperties(self.physical_device)
        compute = [i for i, f in enumerate(families) if f.queueFlags & mod.VK_QUEUE_COMPUTE_BIT]
        graph = [i for i in compute if families[i].queueFlags & _ffi.QUEUE_DATA_GRAPH_BIT_ARM]
        if graph or compute:
            return (graph or compute)[0]
        raise HalError(f"Vulkan device {report.name} has no compute queue")

    def _host_memory_bits(self, report: DeviceReport) -> int:
        """Memory types that every tensor and buffer accepts, so one DeviceMemory can hold
        aliased tensors and buffers alike."""
        bits = tensors.shared_memory_bits(self.handles)
        if not self.memory_types_for(bits, host_visible=True):
            raise HalError(f"{report.name} has no host-visible memory type shared by tensors and buffers")
        return bits

    def memory_types_for(self, type_bits: int, *, host_visible: bool) -> list[int]:
        """Indices of the memory types allowed by `type_bits`, best first (`rank_memory_types`)."""
        return rank_memory_types(self.memory_types, type_bits, host_visible=host_visible)

    @property
    def prefers_device_local(self) -> bool:
        """False on unified memory (lavapipe, integrated GPUs), True on a discrete GPU."""
        return not self._unified

    def _destroy(self) -> None:
        if self.handles.device is not None:
            vk().vkDeviceWaitIdle(self.handles.device)
        super()._destroy()
        self.queue._release_fences()
        self._close()

    def _create_queue(self):
        return VulkanQueue(self)

    def _allocate_memory(self, size, label, device_local):
        return VulkanMemory(self, size, label, device_local)

    def _tensor_memory_requirements(self, description):
        size, alignment, _ = tensors.tensor_memory_requirements(self.handles, description)
        return hal.MemoryRequirements(max(size, description.nbytes), alignment)

    def _create_tensor(self, description, memory, offset, label, device_local):
        non_packed = description.strides is not None and description.strides != description.packed_strides
        if non_packed and not self.tensor_non_packed:
            raise HalError(f"tensor {description} has non-packed strides {list(description.strides)}, but "
                           f"{self.adapter.report.name} lacks the tensorNonPacked feature")
        return VulkanTensor(self, description, memory, offset, label, device_local)

    def _buffer_memory_requirements(self, size, usage):
        size_, alignment, _ = tensors.buffer_memory_requirements(self.handles, size, int(usage))
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
        if plan is not None and self.adapter.uses_emulation:
            _refuse_what_the_emulation_layer_crashes_on(plan.graph, label)
        return VulkanDataGraphPipeline(self, module, entry_point, layout, resources, constants, label)

    def _create_data_graph_session(self, pipeline, label):
        return VulkanDataGraphSession(self, pipeline, label)

    def _create_compute_pipeline(self, module, entry_point, layout, label):
        return VulkanComputePipeline(self, module, entry_point, layout, label)

    def _create_command_encoder(self, label):
        return VulkanCommandEncoder(self, label)

    @functools.cached_property
    def timestamp_period(self) -> float | None:
        clock = queries.timestamp_clock(self)
        return None if clock is None else clock[0]

    def _create_query_pool(self, count, label):
        return queries.VulkanQueryPool(self, count, label)

    def _prepare_run(self, command_buffer, inputs, outputs, label, keep_contents):
        if all(host_view(r) is not None for r in (*inputs, *outputs)):
            return VulkanPreparedRun(self, command_buffer, inputs, outputs, label)
        return super()._prepare_run(command_buffer, inputs, outputs, label, keep_contents)

    def live_objects(self) -> dict[str, int]:
        """Vulkan objects of this device not yet destroyed, by type (for leak checks)."""
        return {k: v for k, v in self.live.items() if v}
