"""Device memory, tensors (VkTensorARM), their views and buffers: the HAL classes and the
Vulkan calls they make.

Host-visible memory comes from a host-visible, coherent type (cached preferred, see
instance.rank_memory_types) and stays mapped for its whole life; device-local memory (a
discrete GPU's own) is never mapped, and the host reaches it through copies to host-visible
resources. LINEAR tensors in host-visible memory lay their elements out at the byte strides of
their description, so writing an input is one numpy copy into the mapping and reading an output
one copy out of it; the fence wait and the host barrier recorded at the end of every command
buffer make the device's writes visible. Tensors and buffers bound to the same memory alias.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import HalError
from .. import _classes as hal
from . import _ffi
from ._ffi import ffi
from ._vk import call, check, new_struct, to_arm, vk
from .handles import DeviceHandles, Owned

if TYPE_CHECKING:
    from .backend import VulkanDevice


def vk_description(d: hal.TensorDescription, usage: int | None = None) -> Any:
    """The VkTensorDescriptionARM of `d` (usage overridden by `usage`), keeping its dimension
    and stride arrays alive (strides None = packed)."""
    shape = d.shape or (1,)
    return new_struct(
        "VkTensorDescriptionARM",
        sType=_ffi.STRUCTURE_TYPE_TENSOR_DESCRIPTION_ARM,
        tiling=int(d.tiling),
        format=d.format,
        dimensionCount=len(shape),
        pDimensions=ffi.new("int64_t[]", list(shape)),
        pStrides=ffi.new("int64_t[]", list(d.strides)) if d.strides is not None else ffi.NULL,
        usage=int(d.usage) if usage is None else usage,
    )


def _tensor_create_info(description: Any) -> Any:
    return new_struct("VkTensorCreateInfoARM", sType=_ffi.STRUCTURE_TYPE_TENSOR_CREATE_INFO_ARM,
                      pDescription=description, sharingMode=0)


def _requirements(req: Any) -> tuple[int, int, int]:
    r = req.memoryRequirements
    return int(r.size), int(r.alignment), int(r.memoryTypeBits)


def tensor_memory_requirements(h: DeviceHandles, d: hal.TensorDescription) -> tuple[int, int, int]:
    """(size, alignment, memoryTypeBits) of a tensor of `d` (vkGetDeviceTensorMemoryRequirementsARM)."""
    info = new_struct(
        "VkDeviceTensorMemoryRequirementsARM",
        sType=_ffi.STRUCTURE_TYPE_DEVICE_TENSOR_MEMORY_REQUIREMENTS_ARM,
        pCreateInfo=_tensor_create_info(vk_description(d)),
    )
    req = new_struct("VkMemoryRequirements2", sType=_ffi.STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2)
    h.fn.vkGetDeviceTensorMemoryRequirementsARM(h.arm, info, req)
    return _requirements(req)


def buffer_memory_requirements(h: DeviceHandles, size: int, usage: int) -> tuple[int, int, int]:
    """(size, alignment, memoryTypeBits) of a buffer (vkGetDeviceBufferMemoryRequirements)."""
    mod = vk()
    create = mod.VkBufferCreateInfo(size=size, usage=usage, sharingMode=mod.VK_SHARING_MODE_EXCLUSIVE)
    info = mod.VkDeviceBufferMemoryRequirements(pCreateInfo=create)
    out = mod.ffi.new("VkMemoryRequirements2*", {"sType": mod.VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2})
    mod.vkGetDeviceBufferMemoryRequirements(h.device, info, out)
    return _requirements(out)


def shared_memory_bits(h: DeviceHandles) -> int:
    """Memory types that every tensor and buffer accepts, so that one VkDeviceMemory can hold
    aliased tensors and buffers alike."""
    _, _, tensor_bits = tensor_memory_requirements(h, hal.TensorDescription(int(hal.Format.R32_SFLOAT), (4,)))
    _, _, buffer_bits = buffer_memory_requirements(h, 16, int(hal.BUFFER_USAGE_ALL | hal.BufferUsage.UNIFORM_BUFFER))
    return tensor_bits & buffer_bits


def _allocate(device: VulkanDevice, size: int, type_bits: int, device_local: bool) -> tuple[Any, int, Any]:
    """(VkDeviceMemory, memory type index, mapping or None) of `size` bytes: host-visible and
    mapped for its life, or device-local and not mapped. When the preferred heap is full, the
    next allowed type is tried."""
    mod = vk()
    h = device.handles
    candidates = device.memory_types_for(type_bits, host_visible=not device_local)
    if not candidates:
        kind = "" if device_local else "host-visible coherent "
        raise HalError(f"no {kind}memory type fits the bits {type_bits:#x} on {device.adapter.report.name}")
    failure = None
    for index in candidates:
        info = mod.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=index)
        try:
            memory = mod.vkAllocateMemory(h.device, info, None)
        except (mod.VkErrorOutOfDeviceMemory, mod.VkErrorOutOfHostMemory) as exc:
            failure = exc
            continue
        except mod.VkError as exc:
            raise HalError(f"vkAllocateMemory of {size} bytes failed: {type(exc).__name__}") from exc
        h.live.add("VkDeviceMemory", 1)
        if device_local:
            return memory, index, None
        try:
            return memory, index, call("vkMapMemory", mod.vkMapMemory, h.device, memory, 0, size, 0)
        except BaseException:
            _free(h, memory, False)
            raise
    raise HalError(f"vkAllocateMemory of {size} bytes failed in every allowed memory type: {type(failure).__name__}")


def _free(h: DeviceHandles, memory: Any, mapped: bool) -> None:
    mod = vk()
    if mapped:
        mod.vkUnmapMemory(h.device, memory)
    mod.vkFreeMemory(h.device, memory, None)
    h.live.add("VkDeviceMemory", -1)


class VulkanMemory(Owned, hal.DeviceMemory):
    """VkDeviceMemory: of a host-visible coherent type allowed for tensors and buffers alike,
    mapped for its whole life, or (`device_local`) of the device's own, not mapped."""

    def __init__(self, device: VulkanDevice, size: int, label: str = "", device_local: bool = False):
        super().__init__(device, size, label)
        self.handle, self.type_index, self._mapping = _allocate(device, size, device._host_bits, device_local)
        self._owns(functools.partial(_free, device.handles, self.handle, self._mapping is not None))

    @property
    def mapped(self) -> bool:
        """True when the memory is host-visible (and mapped)."""
        return self._mapping is not None


def _bind_target(device: VulkanDevice, memory: VulkanMemory | None, offset: int, req: tuple[int, int, int],
                 what: str, device_local: bool) -> tuple[Any, int, Any, bool]:
    """(VkDeviceMemory, offset, mapping or None, whether the memory is the resource's own):
    `memory` at `offset`, or new memory of its own."""
    size, alignment, type_bits = req
    if memory is None:
        handle, _, mapped = _allocate(device, size, type_bits, device_local)
        return handle, 0, mapped, True
    if not type_bits & (1 << memory.type_index):
        raise HalError(f"{what} cannot live in {memory.label or 'this memory'}: memory type {memory.type_index} "
                       f"is not in its allowed types {type_bits:#x}")
    if offset % alignment or offset + size > memory.size:
        raise HalError(f"{what} needs {size} bytes aligned to {alignment} at offset {offset} "
                       f"of {memory.size}-byte memory")
    return memory.handle, offset, memory._mapping, False


def _release_tensor(h: DeviceHandles, tensor: Any, memory: Any, mapped: bool) -> None:
    """Destroy a VkTensorARM and free `memory`, its own (None when it has none)."""
    h.fn.vkDestroyTensorARM(h.arm, tensor, ffi.NULL)
    h.live.add("VkTensorARM", -1)
    if memory is not None:
        _free(h, memory, mapped)


class VulkanTensor(Owned, hal.Tensor):
    """A VkTensorARM bound to memory: its own (host-visible unless `device_local`) or the given
    memory at its offset (`vkGetTensorMemoryRequirementsARM`, `vkBindTensorMemoryARM`)."""

    def __init__(self, device: VulkanDevice, description: hal.TensorDescription, memory: VulkanMemory | None,
                 offset: int, label: str = "", device_local: bool = False):
        super().__init__(device, description, memory, offset, label)
        h = device.handles
        out = ffi.new("VkTensorARM*")
        check(h.fn.vkCreateTensorARM(h.arm, _tensor_create_info(vk_description(description)), ffi.NULL, out),
              f"vkCreateTensorARM({label})")
        self.handle = out[0]
        h.live.add("VkTensorARM", 1)
        own = None
        try:
            info = new_struct("VkTensorMemoryRequirementsInfoARM",
                              sType=_ffi.STRUCTURE_TYPE_TENSOR_MEMORY_REQUIREMENTS_INFO_ARM, tensor=self.handle)
            req = new_struct("VkMemoryRequirements2", sType=_ffi.STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2)
            h.fn.vkGetTensorMemoryRequirementsARM(h.arm, info, req)
            size, alignment, bits = _requirements(req)
            target, self._offset, self._mapping, owns = _bind_target(
                device, memory, offset, (max(size, description.nbytes), alignment, bits), f"tensor {label}",
                device_local)
            own = target if owns else None
            bind = new_struct("VkBindTensorMemoryInfoARM", sType=_ffi.STRUCTURE_TYPE_BIND_TENSOR_MEMORY_INFO_ARM,
                              tensor=self.handle, memory=to_arm("VkDeviceMemory", target), memoryOffset=self._offset)
            check(h.fn.vkBindTensorMemoryARM(h.arm, 1, bind), f"vkBindTensorMemoryARM({label})")
        except BaseException:
            _release_tensor(h, self.handle, own, own is not None and self._mapping is not None)
            raise
        self._owns(functools.partial(_release_tensor, h, self.handle, own,
                                     own is not None and self._mapping is not None))

    def _create_view(self, label: str) -> VulkanTensorView:
        return VulkanTensorView(self, label)

    @property
    def mapped(self) -> bool:
        """True when the tensor lives in host-visible (mapped) memory."""
        return self._mapping is not None

    def array(self) -> np.ndarray:
        """A writable typed view of the tensor in mapped memory (LINEAR tensors)."""
        if self.description.tiling != hal.TensorTiling.LINEAR:
            raise HalError(f"{self!r}: OPTIMAL tiling has no host layout; copy it to a LINEAR tensor")
        if self._mapping is None:
            raise HalError(f"{self!r} is device-local: the host reaches it through a copy")
        d = self.description
        return np.ndarray(d.shape, d.dtype, buffer=self._mapping, offset=self._offset, strides=d.byte_strides)


def _release_view(h: DeviceHandles, view: Any) -> None:
    h.fn.vkDestroyTensorViewARM(h.arm, view, ffi.NULL)
    h.live.add("VkTensorViewARM", -1)


class VulkanTensorView(Owned, hal.TensorView):
    """A VkTensorViewARM of the whole tensor, in its format."""

    def __init__(self, tensor: VulkanTensor, label: str = ""):
        super().__init__(tensor, label)
        h = tensor.device.handles
        info = new_struct("VkTensorViewCreateInfoARM", sType=_ffi.STRUCTURE_TYPE_TENSOR_VIEW_CREATE_INFO_ARM,
                          tensor=tensor.handle, format=tensor.format)
        out = ffi.new("VkTensorViewARM*")
        check(h.fn.vkCreateTensorViewARM(h.arm, info, ffi.NULL, out), f"vkCreateTensorViewARM({tensor.label})")
        self.handle = out[0]
        h.live.add("VkTensorViewARM", 1)
        self._owns(functools.partial(_release_view, h, self.handle))


def _release_buffer(h: DeviceHandles, buffer: Any, memory: Any, mapped: bool) -> None:
    vk().vkDestroyBuffer(h.device, buffer, None)
    h.live.add("VkBuffer", -1)
    if memory is not None:
        _free(h, memory, mapped)


class VulkanBuffer(Owned, hal.Buffer):
    """A VkBuffer bound to memory (its own, host-visible unless `device_local`, or the given)."""

    def __init__(self, device: VulkanDevice, size: int, usage: hal.BufferUsage, memory: VulkanMemory | None,
                 offset: int, label: str = "", device_local: bool = False):
        super().__init__(device, size, usage, memory, offset, label)
        mod = vk()
        h = device.handles
        info = mod.VkBufferCreateInfo(size=size, usage=int(usage), sharingMode=mod.VK_SHARING_MODE_EXCLUSIVE)
        self.handle = call("vkCreateBuffer", mod.vkCreateBuffer, h.device, info, None)
        h.live.add("VkBuffer", 1)
        own = None
        try:
            r = mod.vkGetBufferMemoryRequirements(h.device, self.handle)
            target, self._offset, self._mapping, owns = _bind_target(
                device, memory, offset, (int(r.size), int(r.alignment), int(r.memoryTypeBits)), f"buffer {label}",
                device_local)
            own = target if owns else None
            call("vkBindBufferMemory", mod.vkBindBufferMemory, h.device, self.handle, target, self._offset)
        except BaseException:
            _release_buffer(h, self.handle, own, own is not None and self._mapping is not None)
            raise
        self._owns(functools.partial(_release_buffer, h, self.handle, own,
                                     own is not None and self._mapping is not None))

    @property
    def mapped(self) -> bool:
        """True when the buffer lives in host-visible (mapped) memory."""
        return self._mapping is not None

    def array(self) -> np.ndarray:
        """A writable flat uint8 view of the buffer in mapped memory."""
        if self._mapping is None:
            raise HalError(f"{self!r} is device-local: the host reaches it through a copy")
        return np.frombuffer(self._mapping, np.uint8, count=self.size, offset=self._offset)
