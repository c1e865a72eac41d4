"""The hardware abstraction layer: Vulkan with VK_ARM_tensors and VK_ARM_data_graph, in Python.

One object per Vulkan object, in the shape of wgpu-py: `request_adapter()` gives an `Adapter`
(a VkPhysicalDevice), `Adapter.request_device()` a `Device` (a VkDevice with one `Queue`); the
device creates tensors, buffers, memory, layouts, descriptor sets, pipelines, data graph
sessions and command encoders. Every public method checks its arguments and the state of the
objects it is given here, in this module, so that every backend refuses wrong use with the same
`HalError`; backends implement the `_`-prefixed hooks only.

Objects are destroyed with `destroy()` (idempotent) or by leaving a `with` block; using a
destroyed object raises `HalError`. Destroying a device destroys what it created.

Backends: `cpu` (pyvgf.hal.cpu, the default) and `vulkan` (pyvgf.hal.vulkan, imported only when
asked for). `register_backend()` adds one.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np

from ..elements import format_carries
from ..errors import HalError
from ..format.model import Format, numpy_dtype
from ..types import TensorType, vulkan_shape

if TYPE_CHECKING:
    from ..spirv import GraphInterface, Module

# --------------------------------------------------------------------------------------------
# Enumerations and flags (values are Vulkan's)


class DescriptorType(enum.IntEnum):
    """VkDescriptorType values a HAL descriptor set can hold."""

    UNIFORM_BUFFER = 6
    STORAGE_BUFFER = 7
    TENSOR = 1000460000


class TensorUsage(enum.IntFlag):
    """VkTensorUsageFlagBitsARM."""

    SHADER = 0x2
    TRANSFER_SRC = 0x4
    TRANSFER_DST = 0x8
    IMAGE_ALIASING = 0x10
    DATA_GRAPH = 0x20


class BufferUsage(enum.IntFlag):
    """VkBufferUsageFlagBits (the ones a model uses)."""

    TRANSFER_SRC = 0x1
    TRANSFER_DST = 0x2
    UNIFORM_BUFFER = 0x10
    STORAGE_BUFFER = 0x20


class TensorTiling(enum.IntEnum):
    """VkTensorTilingARM. Only LINEAR tensors have host-visible strides and can alias buffers."""

    OPTIMAL = 0
    LINEAR = 1


class PipelineBindPoint(enum.IntEnum):
    """VkPipelineBindPoint."""

    COMPUTE = 1
    DATA_GRAPH = 1000507000


class SessionBindPoint(enum.IntEnum):
    """VkDataGraphPipelineSessionBindPointARM."""

    TRANSIENT = 0


class ShaderStage(enum.IntFlag):
    """VkShaderStageFlagBits (the compute stage; data graphs have no stage bit)."""

    COMPUTE = 0x20


TENSOR_USAGE_ALL = (
    TensorUsage.SHADER | TensorUsage.TRANSFER_SRC | TensorUsage.TRANSFER_DST | TensorUsage.DATA_GRAPH
)
BUFFER_USAGE_ALL = BufferUsage.TRANSFER_SRC | BufferUsage.TRANSFER_DST | BufferUsage.STORAGE_BUFFER

# --------------------------------------------------------------------------------------------
# Plain descriptions (the create-info structures)


@dataclass(frozen=True)
class AdapterInfo:
    """What VkPhysicalDeviceProperties says about the adapter."""

    backend: str
    name: str
    vendor_id: int = 0
    device_id: int = 0
    device_type: str = "cpu"
    """"integrated-gpu", "discrete-gpu", "virtual-gpu", "cpu" or "other"."""
    driver: str = ""
    api_version: tuple[int, int, int] = (1, 3, 0)


@dataclass(frozen=True)
class Limits:
    """VkPhysicalDeviceTensorPropertiesARM and the core limits a model run depends on."""

    max_tensor_dimension_count: int = 8
    max_tensor_elements: int = 2**40
    max_per_dimension_tensor_elements: int = 2**31 - 1
    max_tensor_stride: int = 2**62
    max_tensor_size: int = 2**42
    max_descriptor_set_storage_tensors: int = 2**20
    max_bound_descriptor_sets: int = 32
    max_push_constants_size: int = 256
    max_storage_buffer_range: int = 2**32 - 1
    max_compute_work_group_count: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_compute_work_group_size: tuple[int, int, int] = (2**31 - 1, 2**31 - 1, 2**31 - 1)
    max_compute_work_group_invocations: int = 2**31 - 1


@dataclass(frozen=True)
class TensorDescription:
    """VkTensorDescriptionARM: a tensor's format, dimensions and (byte) strides.

    `strides=None` means packed (row-major, innermost stride = element size). Vulkan requires
    every dimension > 0, the innermost stride to equal the element size, every stride to be a
    multiple of it and `strides[i] >= strides[i+1] * shape[i+1]`, and usage != 0.
    """

    format: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    usage: TensorUsage = TENSOR_USAGE_ALL
    tiling: TensorTiling = TensorTiling.LINEAR

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.format)

    @property
    def packed_strides(self) -> tuple[int, ...]:
        strides, step = [], self.dtype.itemsize
        for dim in reversed(self.shape):
            strides.append(step)
            step *= dim
        return tuple(reversed(strides))

    @property
    def byte_strides(self) -> tuple[int, ...]:
        return self.strides if self.strides is not None else self.packed_strides

    @property
    def nbytes(self) -> int:
        """The bytes the tensor spans: last element's offset plus one element."""
        if not self.shape:
            return self.dtype.itemsize
        last = sum((d - 1) * s for d, s in zip(self.shape, self.byte_strides))
        return last + self.dtype.itemsize

    def __str__(self) -> str:
        try:
            fmt = Format(self.format).name
        except ValueError:
            fmt = str(self.format)
        return f"{fmt}[{'x'.join(map(str, self.shape)) or 'scalar'}]"


@dataclass(frozen=True)
class MemoryRequirements:
    """VkMemoryRequirements: bytes and alignment a resource needs."""

    size: int
    alignment: int = 16


@dataclass(frozen=True)
class DescriptorSetLayoutBinding:
    """VkDescriptorSetLayoutBinding (descriptorCount is always 1 here)."""

    binding: int
    descriptor_type: DescriptorType
    stages: ShaderStage = ShaderStage.COMPUTE


@dataclass(frozen=True)
class PushConstantRange:
    """VkPushConstantRange."""

    stages: ShaderStage
    offset: int
    size: int


@dataclass(frozen=True)
class DataGraphResource:
    """VkDataGraphPipelineResourceInfoARM: the tensor a graph expects at (set, binding)."""

    descriptor_set: int
    binding: int
    description: TensorDescription


@dataclass(frozen=True)
class GraphConstant:
    """VkDataGraphPipelineConstantARM: the data of OpGraphConstantARM `id`.

    `data` holds the constant's bytes (any dtype; a uint8 view into a VGF file is typical and
    is never copied by the cpu backend); `description` says how to read them.
    `sparsity_dimension >= 0` declares 2:4 semi-structured sparsity along that dimension
    (VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM, zeroCount 2, groupSize 4);
    the data stays dense.
    """

    id: int
    data: np.ndarray
    description: TensorDescription
    sparsity_dimension: int = -1


@dataclass(frozen=True)
class BindPointRequirement:
    """VkDataGraphPipelineSessionBindPointRequirementARM (bindPointType MEMORY)."""

    bind_point: SessionBindPoint
    num_objects: int


PythonShader = Callable[[Mapping[tuple[int, int], np.ndarray], tuple[int, int, int]], None]
"""A Python stand-in for a compute shader: `fn(resources, workgroups)`.

`resources[(set, binding)]` is a writable numpy view of what is bound there: a typed array of
the tensor's shape for a tensor, a flat uint8 array for a buffer. `workgroups` is the dispatch
size. The function writes its outputs into those views and returns None.
"""

# --------------------------------------------------------------------------------------------
# Backends


_BACKENDS: dict[str, Callable[[], Callable[..., Adapter]] | str] = {
    "cpu": "pyvgf.hal.cpu",
    "reference": "pyvgf.hal.reference",
    "vulkan": "pyvgf.hal.vulkan",
}


def register_backend(name: str, adapter_factory: Callable[..., Adapter] | str) -> None:
    """Make `request_adapter(backend=name)` use `adapter_factory(**options)`.

    A string names a module that is imported on first use and must define
    `request_adapter(**options) -> Adapter`.
    """
    _BACKENDS[name] = adapter_factory if isinstance(adapter_factory, str) else lambda: adapter_factory


def backends() -> list[str]:
    """The names `request_adapter()` accepts."""
    return sorted(_BACKENDS)


def request_adapter(backend: str = "cpu", **options: object) -> Adapter:
    """The adapter (physical device) of a backend. Options are backend specific."""
    entry = _BACKENDS.get(backend)
    if entry is None:
        raise HalError(f"unknown backend {backend!r}; known: {', '.join(backends())}")
    if isinstance(entry, str):
        try:
            module = importlib.import_module(entry)
        except ImportError as exc:
            raise HalError(f"backend {backend!r} cannot be loaded: {exc}") from exc
        factory = getattr(module, "request_adapter", None)
        if factory is None:
            raise HalError(f"backend {backend!r}: module {entry} defines no request_adapter()")
    else:
        factory = entry()
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise HalError(f"backend {backend!r} does not take these options: {exc}") from None
    return factory(**options)


# --------------------------------------------------------------------------------------------
# Objects


def _kind_of(obj: object) -> str:
    """The HAL class name of an object (not the backend subclass), for error messages."""
    return getattr(obj, "_kind", type(obj).__name__)


class HalObject:
    """Base of every HAL object: a label, destroy(), and use as a context manager."""

    _kind = "object"

    def __init__(self, label: str = ""):
        self.label = label
        self._destroyed = False

    @property
    def destroyed(self) -> bool:
        return self._destroyed

    def destroy(self) -> None:
        """Release the object (vkDestroy*). Calling it again does nothing."""
        if not self._destroyed:
            self._destroyed = True
            self._destroy()

    def _destroy(self) -> None:
        """Backend hook: free what the object holds."""

    def _check(self) -> None:
        if self._destroyed:
            raise HalError(f"{self} was destroyed and cannot be used")

    def __enter__(self):
        self._check()
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        label = f" {self.label!r}" if self.label else ""
        return f"<{self._kind}{label}>"


class _DeviceChild(HalObject):
    def __init__(self, device: Device, label: str = ""):
        super().__init__(label)
        self.device = device
        device._children[id(self)] = self

    def destroy(self) -> None:
        """Release the object (vkDestroy*). Calling it again does nothing."""
        self.device._children.pop(id(self), None)
        super().destroy()

    def _check(self) -> None:
        super()._check()
        if self.device.destroyed:
            raise HalError(f"{self}: its device was destroyed")

    def _check_device(self, other: HalObject) -> None:
        if getattr(other, "device", self.device) is not self.device:
            raise HalError(f"{other} belongs to another device than {self}")


class Adapter(HalObject):
    """A physical device (VkPhysicalDevice): its info, limits and features."""

    _kind = "Adapter"

    def __init__(self, info: AdapterInfo, limits: Limits, features: frozenset[str]):
        super().__init__(info.name)
        self.info = info
        self.limits = limits
        self.features = features
        """Vulkan extension names the adapter supports (VK_ARM_tensors, VK_ARM_data_graph, ...)."""

    def request_device(self, shaders: Mapping[str, PythonShader] | None = None, label: str = "") -> Device:
        """Create the logical device (vkCreateDevice) with its one queue.

        `shaders` maps compute shader module names to Python stand-ins (see `PythonShader`);
        backends that cannot run a module's code (cpu) use them, before the process-wide
        ones of `register_shader()`. Backends that run the real shader ignore them.
        """
        self._check()
        for name, fn in (shaders or {}).items():
            if not callable(fn):
                raise HalError(f"shader stand-in for module {name!r} is not callable")
        return self._request_device(dict(shaders or {}), label)

    def _request_device(self, shaders: dict[str, PythonShader], label: str) -> Device:
        raise NotImplementedError


class Device(HalObject):
    """A logical device (VkDevice). Creates every other object; `queue` runs their work."""

    _kind = "Device"

    def __init__(self, adapter: Adapter, shaders: Mapping[str, PythonShader] | None = None, label: str = ""):
        super().__init__(label)
        self.adapter = adapter
        self.limits = adapter.limits
        self.shaders = dict(shaders or {})
        """Python stand-ins for compute shader modules, by module name."""
        self._children: dict[int, HalObject] = {}
        """Live objects created by this device, in creation order (destroyed with it)."""
        self.queue = self._create_queue()

    def _destroy(self) -> None:
        for child in reversed(list(self._children.values())):
            child.destroy()

    # -- memory, tensors, buffers

    @property
    def prefers_device_local(self) -> bool:
        """True when resources the device works on belong in device-local memory, with host
        transfers through host-visible staging resources and copies (a discrete GPU); False
        when host-visible memory serves the device at full speed (CPU, unified memory)."""
        return False

    def allocate_memory(self, size: int, label: str = "", *, device_local: bool = False) -> DeviceMemory:
        """Allocate `size` bytes of device memory (vkAllocateMemory): host-visible, or the
        device's own with `device_local` (then the host reaches what lives there only through
        queue transfers, which stage it, or copies)."""
        self._check()
        if not isinstance(size, int) or size <= 0:
            raise HalError(f"memory size must be a positive int, got {size!r}")
        return self._allocate_memory(size, label, device_local)

    def tensor_description(
        self,
        format: int,
        shape: Sequence[int],
        strides: Sequence[int] | None = None,
        usage: TensorUsage = TENSOR_USAGE_ALL,
        tiling: TensorTiling = TensorTiling.LINEAR,
    ) -> TensorDescription:
        """A checked TensorDescription: the rules of VkTensorDescriptionARM and the limits."""
        try:
            itemsize = numpy_dtype(format).itemsize
        except ValueError:
            raise HalError(f"tensor format {format} is not a one-component format pyvgf knows") from None
        shape = tuple(int(d) for d in shape)
        lim = self.limits
        if not 0 < len(shape) <= lim.max_tensor_dimension_count:
            raise HalError(f"tensor rank {len(shape)} is outside 1..{lim.max_tensor_dimension_count}")
        if any(d <= 0 for d in shape):
            raise HalError(f"tensor dimensions must be > 0, got {list(shape)}")
        if any(d > lim.max_per_dimension_tensor_elements for d in shape):
            raise HalError(f"tensor dimension above maxPerDimensionTensorElements: {list(shape)}")
        if int(np.prod(shape, dtype=object)) > lim.max_tensor_elements:
            raise HalError(f"tensor {list(shape)} has more than maxTensorElements elements")
        if not usage:
            raise HalError("tensor usage must not be empty")
        if strides is not None:
            strides = tuple(int(s) for s in strides)
            if len(strides) != len(shape):
                raise HalError(f"{len(strides)} strides for a rank-{len(shape)} tensor")
            if tiling != TensorTiling.LINEAR:
                raise HalError("strides are only allowed for LINEAR tiling")
            if strides[-1] != itemsize or any(s % itemsize for s in strides):
                raise HalError(f"strides {list(strides)} must be multiples of the element size "
                               f"{itemsize}, the innermost equal to it")
            for i in range(len(shape) - 1):
                if strides[i] < strides[i + 1] * shape[i + 1]:
                    raise HalError(f"stride {i} ({strides[i]}) is smaller than stride {i + 1} × "
                                   f"dimension {i + 1}: tensors must not overlap themselves")
            if max(strides) > lim.max_tensor_stride:
                raise HalError(f"tensor stride above maxTensorStride: {list(strides)}")
        desc = TensorDescription(int(format), shape, strides, TensorUsage(usage), TensorTiling(tiling))
        if desc.nbytes > lim.max_tensor_size:
            raise HalError(f"tensor {desc} spans {desc.nbytes} bytes, above maxTensorSize")
        return desc

    def get_tensor_memory_requirements(self, description: TensorDescription) -> MemoryRequirements:
        """vkGetDeviceTensorMemoryRequirementsARM: what a tensor of this description needs."""
        self._check()
        return self._tensor_memory_requirements(description)

    def create_tensor(
        self,
        format: int,
        shape: Sequence[int],
        strides: Sequence[int] | None = None,
        usage: TensorUsage = TENSOR_USAGE_ALL,
        *,
        tiling: TensorTiling = TensorTiling.LINEAR,
        memory: DeviceMemory | None = None,
        memory_offset: int = 0,
        device_local: bool = False,
        label: str = "",
    ) -> Tensor:
        """Create a tensor (vkCreateTensorARM) and bind memory to it (vkBindTensorMemoryARM).

        Without `memory` the tensor gets memory of its own (device-local with `device_local`,
        see `allocate_memory`). With it, the tensor lives at
        `memory_offset` in that memory, which it may share with other tensors and buffers:
        that is how resources alias.
        """
        self._check()
        desc = self.tensor_description(format, shape, strides, usage, tiling)
        req = self._tensor_memory_requirements(desc)
        self._check_binding(memory, memory_offset, req, f"tensor {desc}")
        return self._create_tensor(desc, memory, memory_offset, label, device_local)

    def get_buffer_memory_requirements(self, size: int, usage: BufferUsage = BUFFER_USAGE_ALL) -> MemoryRequirements:
        """vkGetDeviceBufferMemoryRequirements."""
        self._check()
        return self._buffer_memory_requirements(size, usage)

    def create_buffer(
        self,
        size: int,
        usage: BufferUsage = BUFFER_USAGE_ALL,
        *,
        memory: DeviceMemory | None = None,
        memory_offset: int = 0,
        device_local: bool = False,
        label: str = "",
    ) -> Buffer:
        """Create a buffer (vkCreateBuffer) with memory of its own (device-local with
        `device_local`) or bound in `memory`."""
        self._check()
        if not isinstance(size, int) or size <= 0:
            raise HalError(f"buffer size must be a positive int, got {size!r}")
        if not usage:
            raise HalError("buffer usage must not be empty")
        req = self._buffer_memory_requirements(size, BufferUsage(usage))
        self._check_binding(memory, memory_offset, req, f"buffer of {size} bytes")
        return self._create_buffer(size, BufferUsage(usage), memory, memory_offset, label, device_local)

    def _check_binding(self, memory: DeviceMemory | None, offset: int, req: MemoryRequirements, what: str) -> None:
        if memory is None:
            return
        if not isinstance(memory, DeviceMemory):
            raise HalError(f"memory must be a DeviceMemory, got {_kind_of(memory)}")
        memory._check()
        self._check_owner(memory)
        if offset < 0 or offset % req.alignment:
            raise HalError(f"memory offset {offset} of {what} is not a multiple of {req.alignment}")
        if offset + req.size > memory.size:
            raise HalError(f"{what} needs {req.size} bytes at offset {offset}, "
                           f"but {memory} has {memory.size}")

    def _check_owner(self, obj: HalObject) -> None:
        if getattr(obj, "device", self) is not self:
            raise HalError(f"{obj} was created by another device")

    # -- shaders, layouts, descriptor sets

    def create_shader_module(self, code: np.ndarray | Sequence[int] | str, *, name: str = "",
                             language: str = "spirv", label: str = "") -> ShaderModule:
        """vkCreateShaderModule. `code` is SPIR-V words (language "spirv") or GLSL/HLSL source.

        `name` is the VGF module name; backends that cannot run a module look up a Python
        stand-in by it (see `register_shader`).
        """
        self._check()
        if language not in ("spirv", "glsl", "hlsl"):
            raise HalError(f"shader language must be spirv, glsl or hlsl, got {language!r}")
        if language == "spirv":
            words = np.asarray(code)
            if words.ndim != 1 or words.size < 5 or words.dtype.kind not in "iu":
                raise HalError(f"SPIR-V code of module {name!r} must be a flat array of >= 5 words")
            code = words.astype(np.uint32, copy=False)
            if int(code[0]) != 0x07230203:
                raise HalError(f"module {name!r} does not start with the SPIR-V magic number")
        elif not isinstance(code, str):
            raise HalError(f"{language} code of module {name!r} must be a str")
        return self._create_shader_module(code, name, language, label or name)

    def create_descriptor_set_layout(self, bindings: Sequence[DescriptorSetLayoutBinding],
                                     label: str = "") -> DescriptorSetLayout:
        """vkCreateDescriptorSetLayout: the binding numbers and descriptor types of one set."""
        self._check()
        seen: set[int] = set()
        for b in bindings:
            if not isinstance(b, DescriptorSetLayoutBinding):
                raise HalError(f"layout bindings must be DescriptorSetLayoutBinding, got {b!r}")
            if b.binding in seen:
                raise HalError(f"binding {b.binding} appears twice in a descriptor set layout")
            seen.add(b.binding)
            DescriptorType(b.descriptor_type)
        return self._create_descriptor_set_layout(tuple(bindings), label)

    def create_pipeline_layout(self, set_layouts: Sequence[DescriptorSetLayout],
                               push_constant_ranges: Sequence[PushConstantRange] = (),
                               label: str = "") -> PipelineLayout:
        """vkCreatePipelineLayout: set layout i describes descriptor set i."""
        self._check()
        if len(set_layouts) > self.limits.max_bound_descriptor_sets:
            raise HalError(f"{len(set_layouts)} descriptor sets exceed maxBoundDescriptorSets")
        for layout in set_layouts:
            if not isinstance(layout, DescriptorSetLayout):
                raise HalError(f"set layouts must be DescriptorSetLayout, got {layout!r}")
            layout._check()
            self._check_owner(layout)
        for r in push_constant_ranges:
            if r.offset % 4 or r.size % 4 or r.size <= 0 or r.offset + r.size > self.limits.max_push_constants_size:
                raise HalError(f"push constant range {r} breaks the 4-byte rule or maxPushConstantsSize")
        return self._create_pipeline_layout(tuple(set_layouts), tuple(push_constant_ranges), label)

    def create_descriptor_set(self, layout: DescriptorSetLayout,
                              resources: Mapping[int, TensorView | Buffer], label: str = "") -> DescriptorSet:
        """Allocate a descriptor set of `layout` and write every binding (vkUpdateDescriptorSets).

        Tensor bindings take a TensorView, buffer bindings a Buffer (whole range). Every binding
        of the layout must be written, and nothing else.
        """
        self._check()
        layout._check()
        self._check_owner(layout)
        expected = {b.binding: b.descriptor_type for b in layout.bindings}
        if set(resources) != set(expected):
            raise HalError(f"descriptor set of {layout} needs bindings {sorted(expected)}, "
                           f"got {sorted(resources)}")
        for binding, res in resources.items():
            kind = expected[binding]
            want = TensorView if kind == DescriptorType.TENSOR else Buffer
            if not isinstance(res, want):
                hint = " (use tensor.create_view())" if isinstance(res, Tensor) else ""
                raise HalError(f"binding {binding} is a {kind.name} descriptor and takes a "
                               f"{want.__name__}, got {_kind_of(res)}{hint}")
            res._check()
            self._check_owner(res)
        return self._create_descriptor_set(layout, dict(resources), label)

    # -- pipelines and sessions

    def create_data_graph_pipeline(
        self,
        module: ShaderModule,
        entry_point: str,
        layout: PipelineLayout,
        resources: Sequence[DataGraphResource],
        constants: Sequence[GraphConstant] = (),
        label: str = "",
        plan: object = None,
    ) -> DataGraphPipeline:
        """vkCreateDataGraphPipelinesARM from a SPIR-V graph module.

        `resources` describe the tensor at every (set, binding) the graph uses; `constants`
        feed its OpGraphConstantARM ids. Every backend decodes, checks and plans the graph
        against both here (`pyvgf.hal.graphs.plan_graph`) before its driver sees the module;
        `plan` is the `GraphPlan` pyvgf.load made of it at load, which is then only checked
        against them.
        """
        self._check()
        for obj in (module, layout):
            obj._check()
            self._check_owner(obj)
        if module.language != "spirv":
            raise HalError(f"data graph module {module.name!r} must be SPIR-V, not {module.language}")
        seen: set[tuple[int, int]] = set()
        for r in resources:
            key = (r.descriptor_set, r.binding)
            if key in seen:
                raise HalError(f"resource (set {key[0]}, binding {key[1]}) described twice")
            seen.add(key)
            kind = layout.binding_type(*key)
            if kind != DescriptorType.TENSOR:
                raise HalError(f"graph resource (set {key[0]}, binding {key[1]}) is not a TENSOR "
                               f"binding of {layout}")
        ids: set[int] = set()
        for c in constants:
            if c.id in ids:
                raise HalError(f"graph constant id {c.id} given twice")
            ids.add(c.id)
            if c.data.nbytes < c.description.nbytes:
                raise HalError(f"graph constant {c.id} has {c.data.nbytes} bytes, its description "
                               f"{c.description} needs {c.description.nbytes}")
            if not -1 <= c.sparsity_dimension < len(c.description.shape):
                raise HalError(f"graph constant {c.id}: sparsity dimension {c.sparsity_dimension} "
                               f"is not a dimension of {c.description}")
        from .graphs import plan_graph, planner_of

        plan = plan_graph(module, entry_point, resources, constants, label or module.name, plan,
                          planner_of(self.adapter))
        return self._create_data_graph_pipeline(module, entry_point, layout, tuple(resources),
                                                tuple(constants), label, plan)

    def create_data_graph_session(self, pipeline: DataGraphPipeline, label: str = "") -> DataGraphSession:
        """vkCreateDataGraphPipelineSessionARM: the state one execution of the graph needs.

        Bind memory to each of its bind point requirements before dispatching it.
        """
        self._check()
        pipeline._check()
        self._check_owner(pipeline)
        return self._create_data_graph_session(pipeline, label)

    def create_compute_pipeline(self, module: ShaderModule, entry_point: str, layout: PipelineLayout,
                                label: str = "", decoded: Module | None = None) -> ComputePipeline:
        """vkCreateComputePipelines; a SPIR-V module's workgroup size (LocalSize) within the
        device's limits, read from `decoded`, the module's SPIR-V as pyvgf.load decoded it at
        load (`pyvgf.spirv.decode`), or where not given decoded here."""
        self._check()
        for obj in (module, layout):
            obj._check()
            self._check_owner(obj)
        if module.language == "spirv" and not isinstance(module.code, str):
            from ..spirv import decode, local_size

            size = local_size(decode(module.code) if decoded is None else decoded, entry_point or None)
            limit, most = self.limits.max_compute_work_group_size, self.limits.max_compute_work_group_invocations
            if size is not None and (any(not 1 <= n <= m for n, m in zip(size, limit)) or math.prod(size) > most):
                raise HalError(f"{module.name!r}: workgroup size {size} is outside the device's limits "
                               f"(1..{limit} and {most} invocations at most)")
        return self._create_compute_pipeline(module, entry_point, layout, label)

    def create_command_encoder(self, label: str = "") -> CommandEncoder:
        """A command encoder: records into a new command buffer (vkBeginCommandBuffer)."""
        self._check()
        return self._create_command_encoder(label)

    @property
    def timestamp_period(self) -> float | None:
        """Seconds per tick of the queue's timestamps, or None when its queue family has none
        (timestampValidBits 0): then `create_query_pool` raises HalError."""
        return None

    def create_query_pool(self, count: int, label: str = "") -> QueryPool:
        """A pool of `count` timestamp queries (vkCreateQueryPool, VK_QUERY_TYPE_TIMESTAMP)."""
        self._check()
        if self.timestamp_period is None:
            raise HalError(f"{self}: its queue family writes no timestamps (timestampValidBits is 0)")
        if count < 1:
            raise HalError(f"a query pool needs at least one query, got {count}")
        return self._create_query_pool(count, label)

    def _create_query_pool(self, count: int, label: str) -> QueryPool:
        raise NotImplementedError

    def prepare_run(self, command_buffer: CommandBuffer, inputs: Sequence[Tensor | Buffer],
                    outputs: Sequence[Tensor | Buffer], label: str = "", *,
                    keep_contents: bool = True) -> PreparedRun:
        """A `PreparedRun`: `command_buffer` run again and again between host writes of
        `inputs` and host reads of `outputs`.

        With `keep_contents=False` the caller promises to use `inputs` and `outputs` only
        through the prepared run, so what they hold after a run is unspecified: a backend may
        then read the run's arrays in place and hand its results back without passing them
        through the resources (the cpu backend does, for a command buffer of one data graph
        dispatch).
        """
        self._check()
        if not isinstance(command_buffer, CommandBuffer):
            raise HalError(f"prepare_run takes a CommandBuffer, got {_kind_of(command_buffer)}")
        for res in (*inputs, *outputs):
            if not isinstance(res, (Tensor, Buffer)):
                raise HalError(f"prepare_run inputs and outputs are Tensors or Buffers, got {_kind_of(res)}")
        for obj in (command_buffer, *inputs, *outputs):
            obj._check()
            self._check_owner(obj)
        return self._prepare_run(command_buffer, tuple(inputs), tuple(outputs), label, keep_contents)

    # -- backend hooks

    def _create_queue(self) -> Queue:
        raise NotImplementedError

    def _allocate_memory(self, size: int, label: str, device_local: bool) -> DeviceMemory:
        raise NotImplementedError

    def _tensor_memory_requirements(self, description: TensorDescription) -> MemoryRequirements:
        raise NotImplementedError

    def _create_tensor(self, description: TensorDescription, memory: DeviceMemory | None,
                       offset: int, label: str, device_local: bool) -> Tensor:
        raise NotImplementedError

    def _buffer_memory_requirements(self, size: int, usage: BufferUsage) -> MemoryRequirements:
        raise NotImplementedError

    def _create_buffer(self, size: int, usage: BufferUsage, memory: DeviceMemory | None,
                       offset: int, label: str, device_local: bool) -> Buffer:
        raise NotImplementedError

    def _create_shader_module(self, code: np.ndarray | str, name: str, language: str, label: str) -> ShaderModule:
        return ShaderModule(self, code, name, language, label)

    def _create_descriptor_set_layout(self, bindings: tuple[DescriptorSetLayoutBinding, ...],
                                      label: str) -> DescriptorSetLayout:
        return DescriptorSetLayout(self, bindings, label)

    def _create_pipeline_layout(self, set_layouts: tuple[DescriptorSetLayout, ...],
                                push_constant_ranges: tuple[PushConstantRange, ...], label: str) -> PipelineLayout:
        return PipelineLayout(self, set_layouts, push_constant_ranges, label)

    def _create_descriptor_set(self, layout: DescriptorSetLayout,
                               resources: dict[int, TensorView | Buffer], label: str) -> DescriptorSet:
        return DescriptorSet(self, layout, resources, label)

    def _create_data_graph_pipeline(self, module: ShaderModule, entry_point: str, layout: PipelineLayout,
                                    resources: tuple[DataGraphResource, ...],
                                    constants: tuple[GraphConstant, ...], label: str,
                                    plan: object) -> DataGraphPipeline:
        raise NotImplementedError

    def _create_data_graph_session(self, pipeline: DataGraphPipeline, label: str) -> DataGraphSession:
        raise NotImplementedError

    def _create_compute_pipeline(self, module: ShaderModule, entry_point: str, layout: PipelineLayout,
                                 label: str) -> ComputePipeline:
        raise NotImplementedError

    def _create_command_encoder(self, label: str) -> CommandEncoder:
        raise NotImplementedError

    def _prepare_run(self, command_buffer: CommandBuffer, inputs: tuple[Tensor | Buffer, ...],
                     outputs: tuple[Tensor | Buffer, ...], label: str, keep_contents: bool) -> PreparedRun:
        return PreparedRun(self, command_buffer, inputs, outputs, label)


class DeviceMemory(_DeviceChild):
    """VkDeviceMemory: bytes that tensors and buffers are bound to (host-visible unless
    allocated `device_local`)."""

    _kind = "DeviceMemory"

    def __init__(self, device: Device, size: int, label: str = ""):
        super().__init__(device, label)
        self.size = size


class _Bound(_DeviceChild):
    """A tensor or buffer: unusable once the memory it is bound to is destroyed."""

    memory: DeviceMemory | None

    def _check(self) -> None:
        super()._check()
        if self.memory is not None and self.memory.destroyed:
            raise HalError(f"{self}: the memory it is bound to was destroyed")


class Tensor(_Bound):
    """VkTensorARM bound to memory. `description` gives format, shape, strides, usage."""

    _kind = "Tensor"

    def __init__(self, device: Device, description: TensorDescription, memory: DeviceMemory | None,
                 offset: int, label: str = ""):
        super().__init__(device, label)
        self.description = description
        self.memory = memory
        """The memory given at creation, or None when the tensor has memory of its own."""
        self.memory_offset = offset

    format = property(lambda self: self.description.format)
    shape = property(lambda self: self.description.shape)
    dtype = property(lambda self: self.description.dtype)

    def create_view(self, format: int | None = None, label: str = "") -> TensorView:
        """vkCreateTensorViewARM. A view's format must be the tensor's (MUTABLE_FORMAT is not
        supported)."""
        self._check()
        if format is not None and format != self.format:
            raise HalError(f"view format {format} differs from {self}'s format {self.format}")
        return self._create_view(label)

    def _create_view(self, label: str) -> TensorView:
        return TensorView(self, label)

    def __repr__(self) -> str:
        return f"<Tensor {self.label + ' ' if self.label else ''}{self.description}>"


class TensorView(_DeviceChild):
    """VkTensorViewARM: how a descriptor set refers to a tensor."""

    _kind = "TensorView"

    def __init__(self, tensor: Tensor, label: str = ""):
        super().__init__(tensor.device, label)
        self.tensor = tensor

    def _check(self) -> None:
        super()._check()
        self.tensor._check()

    def __repr__(self) -> str:
        return f"<TensorView of {self.tensor!r}>"


class Buffer(_Bound):
    """VkBuffer bound to memory."""

    _kind = "Buffer"

    def __init__(self, device: Device, size: int, usage: BufferUsage, memory: DeviceMemory | None,
                 offset: int, label: str = ""):
        super().__init__(device, label)
        self.size = size
        self.usage = usage
        self.memory = memory
        self.memory_offset = offset


class ShaderModule(_DeviceChild):
    """VkShaderModule: SPIR-V words (or GLSL/HLSL source) and the VGF module name."""

    _kind = "ShaderModule"

    def __init__(self, device: Device, code: np.ndarray | str, name: str, language: str, label: str = ""):
        super().__init__(device, label)
        self.code = code
        self.name = name
        self.language = language


class DescriptorSetLayout(_DeviceChild):
    """VkDescriptorSetLayout."""

    _kind = "DescriptorSetLayout"

    def __init__(self, device: Device, bindings: tuple[DescriptorSetLayoutBinding, ...], label: str = ""):
        super().__init__(device, label)
        self.bindings = bindings


class PipelineLayout(_DeviceChild):
    """VkPipelineLayout: the set layouts (set i = set_layouts[i]) and push constant ranges."""

    _kind = "PipelineLayout"

    def __init__(self, device: Device, set_layouts: tuple[DescriptorSetLayout, ...],
                 push_constant_ranges: tuple[PushConstantRange, ...], label: str = ""):
        super().__init__(device, label)
        self.set_layouts = set_layouts
        self.push_constant_ranges = push_constant_ranges

    def binding_type(self, set_index: int, binding: int) -> DescriptorType | None:
        """The descriptor type at (set, binding), or None when the layout has no such binding."""
        if not 0 <= set_index < len(self.set_layouts):
            return None
        for b in self.set_layouts[set_index].bindings:
            if b.binding == binding:
                return b.descriptor_type
        return None


class DescriptorSet(_DeviceChild):
    """A written VkDescriptorSet (a wgpu bind group): binding number -> TensorView or Buffer."""

    _kind = "DescriptorSet"

    def __init__(self, device: Device, layout: DescriptorSetLayout,
                 resources: Mapping[int, TensorView | Buffer], label: str = ""):
        super().__init__(device, label)
        self.layout = layout
        self.resources = resources

    def _check(self) -> None:
        super()._check()
        for res in self.resources.values():
            res._check()


class DataGraphPipeline(_DeviceChild):
    """A VkPipeline of bind point DATA_GRAPH_ARM."""

    _kind = "DataGraphPipeline"

    def __init__(self, device: Device, module: ShaderModule, entry_point: str, layout: PipelineLayout,
                 resources: tuple[DataGraphResource, ...], constants: tuple[GraphConstant, ...],
                 label: str = ""):
        super().__init__(device, label or module.name)
        self.module = module
        self.entry_point = entry_point
        self.layout = layout
        self.resources = resources
        self.constants = constants


def binds(description: TensorDescription, ttype: TensorType) -> bool:
    """Whether a tensor of `description` can be bound where a graph expects `ttype`: the same
    dimensions (a rank-0 graph tensor is a one-element tensor in Vulkan, whose dimensionCount
    is at least 1) and a format that carries the element type (`pyvgf.elements`)."""
    return vulkan_shape(ttype.shape) == description.shape and format_carries(description.format, ttype.dtype)


def graph_views(label: str, ports: Sequence[GraphInterface],
                resources: Sequence[DataGraphResource]) -> list[TensorType | None]:
    """Check every graph input and output against the resource described at its (set, binding);
    returns per port the type to view the tensor's memory as where it differs from the
    tensor's own (None where it is the same). A mismatch is a HalError naming both."""
    described = {(r.descriptor_set, r.binding): r.description for r in resources}
    views: list[TensorType | None] = []
    for port in ports:
        key = (port.descriptor_set, port.binding)
        desc = described.get(key)
        if desc is None:
            raise HalError(f"graph {label!r} uses set {key[0]} binding {key[1]}, "
                           f"which no pipeline resource describes")
        if not binds(desc, port.type):
            raise HalError(f"graph {label!r} set {key[0]} binding {key[1]} is {port.type}, "
                           f"but the resource is described as {desc}")
        same = (desc.dtype, desc.shape) == (port.type.dtype, tuple(port.type.shape))
        views.append(None if same else port.type)
    return views


class ComputePipeline(_DeviceChild):
    """A VkPipeline of bind point COMPUTE."""

    _kind = "ComputePipeline"

    def __init__(self, device: Device, module: ShaderModule, entry_point: str, layout: PipelineLayout,
                 label: str = ""):
        super().__init__(device, label or module.name)
        self.module = module
        self.entry_point = entry_point
        self.layout = layout


class DataGraphSession(_DeviceChild):
    """VkDataGraphPipelineSessionARM: the memory one execution of a data graph pipeline uses.

    Query `bind_point_requirements`, get each object's `memory_requirements()`, bind memory to
    those of non-zero size with `bind_memory()`, then dispatch.
    """

    _kind = "DataGraphSession"

    def __init__(self, device: Device, pipeline: DataGraphPipeline, label: str = ""):
        super().__init__(device, label or pipeline.label)
        self.pipeline = pipeline
        self._bound: set[tuple[SessionBindPoint, int]] = set()

    @property
    def bind_point_requirements(self) -> list[BindPointRequirement]:
        """vkGetDataGraphPipelineSessionBindPointRequirementsARM."""
        self._check()
        return self._bind_point_requirements()

    def memory_requirements(self, bind_point: SessionBindPoint = SessionBindPoint.TRANSIENT,
                            object_index: int = 0) -> MemoryRequirements:
        """vkGetDataGraphPipelineSessionMemoryRequirementsARM."""
        self._check()
        self._requirement(bind_point, object_index)
        return self._memory_requirements(bind_point, object_index)

    def bind_memory(self, memory: DeviceMemory, offset: int = 0,
                    bind_point: SessionBindPoint = SessionBindPoint.TRANSIENT, object_index: int = 0) -> None:
        """vkBindDataGraphPipelineSessionMemoryARM (once per bind point object)."""
        self._check()
        self._requirement(bind_point, object_index)
        if (bind_point, object_index) in self._bound:
            raise HalError(f"{self}: memory already bound to {bind_point.name}[{object_index}]")
        req = self._memory_requirements(bind_point, object_index)
        self.device._check_binding(memory, offset, req, f"{self} {bind_point.name}[{object_index}]")
        self._bind_memory(memory, offset, bind_point, object_index)
        self._bound.add((bind_point, object_index))

    def _requirement(self, bind_point: SessionBindPoint, object_index: int) -> None:
        for r in self._bind_point_requirements():
            if r.bind_point == bind_point and 0 <= object_index < r.num_objects:
                return
        raise HalError(f"{self} has no bind point {bind_point!r} object {object_index}")

    def _check_ready(self) -> None:
        self._check()
        for r in self._bind_point_requirements():
            for i in range(r.num_objects):
                if (r.bind_point, i) not in self._bound and self._memory_requirements(r.bind_point, i).size:
                    raise HalError(f"{self}: no memory bound to {r.bind_point.name}[{i}]")

    def _bind_point_requirements(self) -> list[BindPointRequirement]:
        raise NotImplementedError

    def _memory_requirements(self, bind_point: SessionBindPoint, object_index: int) -> MemoryRequirements:
        raise NotImplementedError

    def _bind_memory(self, memory: DeviceMemory, offset: int, bind_point: SessionBindPoint,
                     object_index: int) -> None:
        raise NotImplementedError


@dataclass
class _BindState:
    pipelines: dict[PipelineBindPoint, DataGraphPipeline | ComputePipeline] = field(default_factory=dict)
    sets: dict[PipelineBindPoint, dict[int, DescriptorSet]] = field(default_factory=dict)


class CommandEncoder(_DeviceChild):
    """Records commands into one command buffer; `finish()` ends it (vkEndCommandBuffer).

    Bind state follows Vulkan: a pipeline and descriptor sets are bound per bind point and stay
    bound for the later dispatches of that bind point.
    """

    _kind = "CommandEncoder"

    def __init__(self, device: Device, label: str = ""):
        super().__init__(device, label)
        self._state = _BindState()
        self._finished = False

    def _check(self) -> None:
        super()._check()
        if self._finished:
            raise HalError(f"{self} is finished: record into a new encoder")

    def bind_pipeline(self, pipeline: DataGraphPipeline | ComputePipeline) -> None:
        """vkCmdBindPipeline at the pipeline's bind point."""
        self._check()
        pipeline._check()
        self._check_device(pipeline)
        point = _bind_point(pipeline)
        self._state.pipelines[point] = pipeline
        self._bind_pipeline(point, pipeline)

    def bind_descriptor_set(self, bind_point: PipelineBindPoint, layout: PipelineLayout, index: int,
                            descriptor_set: DescriptorSet) -> None:
        """vkCmdBindDescriptorSets for one set: `descriptor_set` becomes set `index`."""
        self._check()
        for obj in (layout, descriptor_set):
            obj._check()
            self._check_device(obj)
        bind_point = PipelineBindPoint(bind_point)
        if not 0 <= index < len(layout.set_layouts):
            raise HalError(f"{layout} has no descriptor set {index}")
        if layout.set_layouts[index] is not descriptor_set.layout and \
                layout.set_layouts[index].bindings != descriptor_set.layout.bindings:
            raise HalError(f"{descriptor_set} is not compatible with set {index} of {layout}")
        self._state.sets.setdefault(bind_point, {})[index] = descriptor_set
        self._bind_descriptor_set(bind_point, layout, index, descriptor_set)

    def push_constants(self, layout: PipelineLayout, stages: ShaderStage, offset: int, data: bytes) -> None:
        """vkCmdPushConstants."""
        self._check()
        layout._check()
        if not any(r.offset <= offset and offset + len(data) <= r.offset + r.size and r.stages & stages
                   for r in layout.push_constant_ranges):
            raise HalError(f"push constants [{offset}, {offset + len(data)}) are outside the "
                           f"ranges of {layout}")
        self._push_constants(layout, ShaderStage(stages), offset, bytes(data))

    def dispatch_data_graph(self, session: DataGraphSession) -> None:
        """vkCmdDispatchDataGraphARM: run the bound data graph pipeline with `session`."""
        self._check()
        session._check_ready()
        self._check_device(session)
        pipeline = self._bound(PipelineBindPoint.DATA_GRAPH)
        if session.pipeline is not pipeline:
            raise HalError(f"{session} was created for {session.pipeline}, but {pipeline} is bound")
        sets = self._state.sets.get(PipelineBindPoint.DATA_GRAPH, {})
        for r in pipeline.resources:
            view = self._bound_resource(sets, r.descriptor_set, r.binding, pipeline)
            got = view.tensor.description
            want = r.description
            if (got.format, got.shape) != (want.format, want.shape) or got.byte_strides != want.byte_strides:
                raise HalError(f"{pipeline}: set {r.descriptor_set} binding {r.binding} expects a "
                               f"tensor {want}, but {view.tensor!r} is bound")
        self._dispatch_data_graph(session)

    def dispatch(self, x: int, y: int = 1, z: int = 1) -> None:
        """vkCmdDispatch of the bound compute pipeline."""
        self._check()
        pipeline = self._bound(PipelineBindPoint.COMPUTE)
        limit = self.device.limits.max_compute_work_group_count
        if any(not 0 <= n <= m for n, m in zip((x, y, z), limit)):
            raise HalError(f"workgroup count {(x, y, z)} is outside 0..{limit}")
        sets = self._state.sets.get(PipelineBindPoint.COMPUTE, {})
        for index, set_layout in enumerate(pipeline.layout.set_layouts):
            for b in set_layout.bindings:
                self._bound_resource(sets, index, b.binding, pipeline)
        self._dispatch(x, y, z)

    def copy_tensor(self, src: Tensor, dst: Tensor) -> None:
        """vkCmdCopyTensorARM. VK_ARM_tensors copies whole tensors only: one region, zero
        offsets, the extent equal to both tensors' shape (VUID-VkCopyTensorInfoARM-regionCount-09686
        to -09689), between tensors of one format."""
        self._check()
        for t in (src, dst):
            t._check()
            self._check_device(t)
        if src.format != dst.format:
            raise HalError(f"copy between tensors of different formats: {src!r} -> {dst!r}")
        if src.shape != dst.shape:
            raise HalError(f"vkCmdCopyTensorARM copies whole tensors of equal shape only: {src!r} -> {dst!r}")
        if not src.description.usage & TensorUsage.TRANSFER_SRC or not dst.description.usage & TensorUsage.TRANSFER_DST:
            raise HalError("copy_tensor needs TRANSFER_SRC usage on src and TRANSFER_DST on dst")
        self._copy_tensor(src, dst)

    def copy_buffer(self, src: Buffer, dst: Buffer, src_offset: int = 0, dst_offset: int = 0,
                    size: int | None = None) -> None:
        """vkCmdCopyBuffer of one region."""
        self._check()
        for b in (src, dst):
            b._check()
            self._check_device(b)
        size = src.size - src_offset if size is None else size
        if (size <= 0 or src_offset < 0 or dst_offset < 0
                or src_offset + size > src.size or dst_offset + size > dst.size):
            raise HalError(f"buffer copy of {size} bytes at {src_offset} -> {dst_offset} is out of range")
        self._copy_buffer(src, dst, src_offset, dst_offset, size)

    def barrier(self) -> None:
        """vkCmdPipelineBarrier2: all earlier writes (data graph, compute, transfer) become
        visible to all later reads."""
        self._check()
        self._barrier()

    def write_timestamp(self, pool: QueryPool, index: int) -> None:
        """vkCmdWriteTimestamp at the bottom of the pipe: query `index` of `pool` gets the time
        at which every earlier command has finished. Each submission of the command buffer
        resets the pool's queries first, so `pool.results()` are those of the latest one."""
        self._check()
        pool._check()
        self._check_device(pool)
        if not 0 <= index < pool.count:
            raise HalError(f"query {index} out of range of {pool} ({pool.count} queries)")
        self._write_timestamp(pool, index)

    def _write_timestamp(self, pool: QueryPool, index: int) -> None:
        raise NotImplementedError

    def finish(self) -> CommandBuffer:
        """End recording; the encoder cannot record any more."""
        self._check()
        self._finished = True
        return self._finish()

    def _bound(self, point: PipelineBindPoint):
        pipeline = self._state.pipelines.get(point)
        if pipeline is None:
            raise HalError(f"dispatch without a {point.name} pipeline bound")
        pipeline._check()
        return pipeline

    def _bound_resource(self, sets: dict[int, DescriptorSet], index: int, binding: int, pipeline: HalObject):
        dset = sets.get(index)
        if dset is None:
            raise HalError(f"{pipeline} uses descriptor set {index}, but none is bound")
        dset._check()
        res = dset.resources.get(binding)
        if res is None:
            raise HalError(f"{pipeline} uses set {index} binding {binding}, absent from {dset}")
        return res

    def _bind_pipeline(self, point: PipelineBindPoint, pipeline: DataGraphPipeline | ComputePipeline) -> None:
        raise NotImplementedError

    def _bind_descriptor_set(self, point: PipelineBindPoint, layout: PipelineLayout, index: int,
                             descriptor_set: DescriptorSet) -> None:
        raise NotImplementedError

    def _push_constants(self, layout: PipelineLayout, stages: ShaderStage, offset: int, data: bytes) -> None:
        raise NotImplementedError

    def _dispatch_data_graph(self, session: DataGraphSession) -> None:
        raise NotImplementedError

    def _dispatch(self, x: int, y: int, z: int) -> None:
        raise NotImplementedError

    def _copy_tensor(self, src: Tensor, dst: Tensor) -> None:
        raise NotImplementedError

    def _copy_buffer(self, src: Buffer, dst: Buffer, src_offset: int, dst_offset: int, size: int) -> None:
        raise NotImplementedError

    def _barrier(self) -> None:
        raise NotImplementedError

    def _finish(self) -> CommandBuffer:
        raise NotImplementedError


def _bind_point(pipeline: HalObject) -> PipelineBindPoint:
    if isinstance(pipeline, DataGraphPipeline):
        return PipelineBindPoint.DATA_GRAPH
    if isinstance(pipeline, ComputePipeline):
        return PipelineBindPoint.COMPUTE
    raise HalError(f"{pipeline!r} is not a pipeline")


class CommandBuffer(_DeviceChild):
    """A finished, re-submittable command buffer (no ONE_TIME_SUBMIT)."""

    _kind = "CommandBuffer"


class QueryPool(_DeviceChild):
    """VkQueryPool of `count` timestamp queries (see `Device.create_query_pool`)."""

    _kind = "QueryPool"

    def __init__(self, device: Device, count: int, label: str = ""):
        super().__init__(device, label)
        self.count = count

    def results(self) -> list[float | None]:
        """Each query's timestamp in seconds on the device's clock (None where the latest
        submission wrote none); call it once that submission has finished."""
        self._check()
        return self._results()

    def _results(self) -> list[float | None]:
        raise NotImplementedError


class Fence(HalObject):
    """VkFence signalled when a submission completes."""

    _kind = "Fence"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until signalled (True) or `timeout` seconds pass (False). Raises HalError if
        the submission failed on the device."""
        self._check()
        return self._wait(timeout)

    @property
    def signaled(self) -> bool:
        return self.wait(0)

    def _wait(self, timeout: float | None) -> bool:
        raise NotImplementedError


class Queue(HalObject):
    """The device's queue (VkQueue with COMPUTE and DATA_GRAPH_BIT_ARM).

    `submit` may be called from several threads at once (backends serialise what Vulkan
    requires to be externally synchronised); command buffers that touch the same resources
    must not run concurrently, as in Vulkan. Host transfers (`write_*`, `read_*`) are synchronous: a read
    waits for all work submitted before it.
    """

    _kind = "Queue"

    def __init__(self, device: Device):
        super().__init__("queue")
        self.device = device

    def _check(self) -> None:
        super()._check()
        self.device._check()

    def submit(self, command_buffers: Sequence[CommandBuffer]) -> Fence:
        """vkQueueSubmit: run the command buffers in order; returns a fence to wait on."""
        self._check()
        for cb in command_buffers:
            if isinstance(cb, CommandEncoder):
                raise HalError(f"{cb} is an encoder: call finish() and submit the command buffer")
            if not isinstance(cb, CommandBuffer):
                raise HalError(f"submit takes CommandBuffers, got {_kind_of(cb)}")
            cb._check()
            if cb.device is not self.device:
                raise HalError(f"{cb} belongs to another device")
        return self._submit(list(command_buffers))

    def write_tensor(self, tensor: Tensor, data: np.ndarray) -> None:
        """Copy host data into a tensor. `data` must have the tensor's shape and dtype."""
        self._check()
        tensor._check()
        data = np.asarray(data)
        if data.shape != tensor.shape or data.dtype != tensor.dtype:
            raise HalError(f"write_tensor: {tensor!r} takes {tensor.dtype}{list(tensor.shape)}, "
                           f"got {data.dtype}{list(data.shape)}")
        self._write_tensor(tensor, data)

    def read_tensor(self, tensor: Tensor) -> np.ndarray:
        """A new array holding the tensor's contents, after all submitted work completed."""
        self._check()
        tensor._check()
        return self._read_tensor(tensor)

    def write_buffer(self, buffer: Buffer, data: bytes | np.ndarray, offset: int = 0) -> None:
        """Copy host bytes into a buffer at `offset`."""
        self._check()
        buffer._check()
        if isinstance(data, (bytes, bytearray, memoryview)):
            raw = np.frombuffer(data, np.uint8)
        else:
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if offset < 0 or offset + raw.size > buffer.size:
            raise HalError(f"write of {raw.size} bytes at {offset} overflows {buffer} ({buffer.size} bytes)")
        self._write_buffer(buffer, raw, offset)

    def read_buffer(self, buffer: Buffer, offset: int = 0, size: int | None = None) -> np.ndarray:
        """A new uint8 array with `size` bytes of the buffer from `offset`."""
        self._check()
        buffer._check()
        size = buffer.size - offset if size is None else size
        if offset < 0 or size < 0 or offset + size > buffer.size:
            raise HalError(f"read of {size} bytes at {offset} is outside {buffer} ({buffer.size} bytes)")
        return self._read_buffer(buffer, offset, size)

    def wait_idle(self) -> None:
        """vkQueueWaitIdle."""
        self._check()
        self._wait_idle()

    def _submit(self, command_buffers: list[CommandBuffer]) -> Fence:
        raise NotImplementedError

    def _write_tensor(self, tensor: Tensor, data: np.ndarray) -> None:
        raise NotImplementedError

    def _read_tensor(self, tensor: Tensor) -> np.ndarray:
        raise NotImplementedError

    def _write_buffer(self, buffer: Buffer, data: np.ndarray, offset: int) -> None:
        raise NotImplementedError

    def _read_buffer(self, buffer: Buffer, offset: int, size: int) -> np.ndarray:
        raise NotImplementedError

    def _wait_idle(self) -> None:
        raise NotImplementedError


class PreparedRun(_DeviceChild):
    """A command buffer prepared to run again and again between host transfers.

    `run(arrays)` does what `Queue.write_tensor` / `write_buffer` of each array into its input,
    `submit([command_buffer]).wait()` and `read_tensor` / `read_buffer` of each output would,
    and raises the same `HalError`s; what does not change between runs (argument checks, views
    of mapped memory, submission structures) is done once, when the run is prepared. Calls on
    one PreparedRun are serialised; its command buffer must not be submitted elsewhere while a
    run is in flight. The default hook composes the queue calls; a backend may do the same work
    faster.
    """

    _kind = "PreparedRun"

    def __init__(self, device: Device, command_buffer: CommandBuffer, inputs: tuple[Tensor | Buffer, ...],
                 outputs: tuple[Tensor | Buffer, ...], label: str = ""):
        super().__init__(device, label)
        self.command_buffer = command_buffer
        self.inputs = inputs
        self.outputs = outputs
        self._lock = threading.Lock()
        resources = (*inputs, *outputs)
        self._uses = tuple({id(o): o for o in (command_buffer, *resources, *(r.memory for r in resources))
                            if o is not None}.values())
        """Every object the run needs alive, for the check of each run."""
        self._takes = tuple((r.shape, r.dtype) if isinstance(r, Tensor) else None for r in inputs)
        """(shape, dtype) of each tensor input; None for a buffer (it takes any bytes that fit)."""

    def run(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Write `arrays` into the inputs (a tensor takes exactly its shape and dtype, a buffer
        the bytes of any array that fit), submit the command buffer, wait for it, and return
        a new array per output (a tensor's typed array, a buffer's bytes)."""
        if self._destroyed or self.device._destroyed:
            self._check()
        for obj in self._uses:
            if obj._destroyed:
                raise HalError(f"{self}: {obj} was destroyed")
        if len(arrays) != len(self.inputs):
            raise HalError(f"{self} takes {len(self.inputs)} arrays, got {len(arrays)}")
        checked = []
        for res, takes, data in zip(self.inputs, self._takes, arrays):
            if takes is None:  # a buffer
                size = cast(Buffer, res).size
                raw = (np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview))
                       else np.ascontiguousarray(data).reshape(-1).view(np.uint8))
                if raw.size > size:
                    raise HalError(f"write of {raw.size} bytes at 0 overflows {res} ({size} bytes)")
                checked.append(raw)
                continue
            if not isinstance(data, np.ndarray):
                data = np.asarray(data)
            if data.shape != takes[0] or data.dtype != takes[1]:
                raise HalError(f"write_tensor: {res!r} takes {takes[1]}{list(takes[0])}, "
                               f"got {data.dtype}{list(data.shape)}")
            checked.append(data)
        with self._lock:
            return self._run(checked)

    def _run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Backend hook: the run of checked arrays (a buffer's as flat uint8), under the lock.
        The default calls the queue's hooks: `run` and `prepare_run` made every check the
        queue's public calls would make again."""
        queue = self.device.queue
        for res, data in zip(self.inputs, arrays):
            if isinstance(res, Tensor):
                queue._write_tensor(res, data)
            else:
                queue._write_buffer(res, data, 0)
        queue._submit([self.command_buffer]).wait()
        return [queue._read_tensor(r) if isinstance(r, Tensor) else queue._read_buffer(r, 0, r.size)
                for r in self.outputs]
