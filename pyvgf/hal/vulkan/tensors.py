"""Device memory, VkTensorARM (with its view) and VkBuffer.

Host-visible memory comes from a host-visible, coherent type (cached preferred, see
context.rank_memory_types) and stays mapped for its whole life; device-local memory (a discrete
GPU's own) is never mapped, and the host reaches it through copies to host-visible resources.
LINEAR tensors in host-visible memory lay their elements out at the byte strides of their description,
so writing an input is one numpy copy into the mapping and reading an output one copy out of it;
the fence wait and the host barrier recorded at the end of every command buffer make the
device's writes visible. Tensors and buffers bound to the same memory alias.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...elements import by_format
from ...errors import HalError
from . import _ffi
from ._ffi import ffi
from ._vk import call, check, new_struct, to_arm, vk
from .context import VulkanContext

DEFAULT_USAGE = (
    _ffi.TENSOR_USAGE_SHADER_BIT_ARM
    | _ffi.TENSOR_USAGE_DATA_GRAPH_BIT_ARM
    | _ffi.TENSOR_USAGE_TRANSFER_SRC_BIT_ARM
    | _ffi.TENSOR_USAGE_TRANSFER_DST_BIT_ARM
)


def element_size(vk_format: int) -> int:
    """Bytes per element of a VkFormat a VGF tensor may have (from pyvgf.elements)."""
    try:
        return by_format(vk_format).size
    except KeyError:
        raise HalError(f"VkFormat {vk_format} is not a tensor format pyvgf knows") from None


def packed_strides(vk_format: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], element_size(vk_format)
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def tensor_description(
    vk_format: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...] | None = None,
    usage: int = DEFAULT_USAGE,
    tiling: int = _ffi.TENSOR_TILING_LINEAR_ARM,
) -> Any:
    """A VkTensorDescriptionARM that keeps its dimension and stride arrays alive
    (strides None = packed)."""
    if not shape:
        shape = (1,)
    if any(d <= 0 for d in shape):
        raise HalError(f"tensor shape {shape} has a dimension that is not positive")
    element_size(vk_format)
    dims = ffi.new("int64_t[]", list(shape))
    stride_array = ffi.new("int64_t[]", list(strides)) if strides is not None else ffi.NULL
    return new_struct(
        "VkTensorDescriptionARM",
        sType=_ffi.STRUCTURE_TYPE_TENSOR_DESCRIPTION_ARM,
        tiling=tiling,
        format=vk_format,
        dimensionCount=len(shape),
        pDimensions=dims,
        pStrides=stride_array,
        usage=usage,
    )


def _tensor_create_info(description: Any) -> Any:
    return new_struct(
        "VkTensorCreateInfoARM",
        sType=_ffi.STRUCTURE_TYPE_TENSOR_CREATE_INFO_ARM,
        pDescription=description,
        sharingMode=0,
    )


def tensor_memory_requirements(ctx: VulkanContext, description: Any) -> tuple[int, int, int]:
    """(size, alignment, memoryTypeBits) of a tensor of `description`
    (vkGetDeviceTensorMemoryRequirementsARM)."""
    info = new_struct(
        "VkDeviceTensorMemoryRequirementsARM",
        sType=_ffi.STRUCTURE_TYPE_DEVICE_TENSOR_MEMORY_REQUIREMENTS_ARM,
        pCreateInfo=_tensor_create_info(description),
    )
    req = new_struct("VkMemoryRequirements2", sType=_ffi.STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2)
    ctx.fn.vkGetDeviceTensorMemoryRequirementsARM(ctx.arm_device, info, req)
    r = req.memoryRequirements
    return int(r.size), int(r.alignment), int(r.memoryTypeBits)


BUFFER_USAGE = 0x1 | 0x2 | 0x10 | 0x20  # TRANSFER_SRC | TRANSFER_DST | UNIFORM | STORAGE


def buffer_memory_requirements(ctx: VulkanContext, size: int, usage: int = BUFFER_USAGE) -> tuple[int, int, int]:
    """(size, alignment, memoryTypeBits) of a buffer (vkGetDeviceBufferMemoryRequirements)."""
    mod = vk()
    create = mod.VkBufferCreateInfo(size=size, usage=usage, sharingMode=mod.VK_SHARING_MODE_EXCLUSIVE)
    info = mod.VkDeviceBufferMemoryRequirements(pCreateInfo=create)
    out = mod.ffi.new("VkMemoryRequirements2*", {"sType": mod.VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2})
    mod.vkGetDeviceBufferMemoryRequirements(ctx.device, info, out)
    r = out.memoryRequirements
    return int(r.size), int(r.alignment), int(r.memoryTypeBits)


def shared_memory_bits(ctx: VulkanContext) -> int:
    """Memory types that every tensor and buffer accepts, so that one VkDeviceMemory can hold
    aliased tensors and buffers alike."""
    _, _, tensor_bits = tensor_memory_requirements(ctx, tensor_description(100, (4,)))
    _, _, buffer_bits = buffer_memory_requirements(ctx, 16)
    return tensor_bits & buffer_bits


class Memory:
    """VkDeviceMemory: of a host-visible coherent type, mapped for its whole life, or (with
    `device_local`) of the device's own type, not mapped."""

    def __init__(self, ctx: VulkanContext, size: int, type_bits: int, *, device_local: bool = False, label: str = ""):
        self.ctx = ctx
        self.size = int(size)
        self.label = label
        self.mapped = None
        self.handle, self.type_index = ctx.allocate(self.size, type_bits, host_visible=not device_local)
        if device_local:
            return
        try:
            self.mapped = call("vkMapMemory", vk().vkMapMemory, ctx.device, self.handle, 0, self.size, 0)
        except BaseException:
            ctx.free(self.handle)
            self.handle = None
            raise

    def array(self, shape: tuple[int, ...], dtype: np.dtype, offset: int, strides: tuple[int, ...]) -> np.ndarray:
        """A writable numpy view of the mapped bytes (no copy)."""
        self._require_mapped()
        return np.ndarray(shape, dtype, buffer=self.mapped, offset=offset, strides=strides)

    def _require_mapped(self) -> None:
        if self.mapped is None:
            raise HalError(f"{self.label or 'memory'} is device-local: the host reaches it through a copy")

    def bytes(self, offset: int, size: int) -> np.ndarray:
        self._require_mapped()
        return np.frombuffer(self.mapped, np.uint8, count=size, offset=offset)

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            if self.mapped is not None:
                vk().vkUnmapMemory(self.ctx.device, self.handle)
            self.mapped = None
            self.ctx.free(self.handle)
            self.handle = None


def _bind_target(ctx: VulkanContext, memory: Memory | None, offset: int, req: tuple[int, int, int], what: str,
                 device_local: bool) -> tuple[Memory, int, bool]:
    """The memory a resource is bound to: `memory` at `offset`, or new memory of its own."""
    size, alignment, type_bits = req
    if memory is None:
        return Memory(ctx, size, type_bits, device_local=device_local, label=what), 0, True
    if not type_bits & (1 << memory.type_index):
        raise HalError(f"{what} cannot live in {memory.label or 'this memory'}: memory type {memory.type_index} is not in its allowed types {type_bits:#x}")
    if offset % alignment or offset + size > memory.size:
        raise HalError(f"{what} needs {size} bytes aligned to {alignment} at offset {offset} of {memory.size}-byte memory")
    return memory, offset, False


class Tensor:
    """A VkTensorARM bound to memory (its own, host-visible unless `device_local`, or shared),
    with one view unless `with_view` is False."""

    def __init__(
        self,
        ctx: VulkanContext,
        vk_format: int,
        shape: tuple[int, ...],
        *,
        strides: tuple[int, ...] | None = None,
        usage: int = DEFAULT_USAGE,
        tiling: int = _ffi.TENSOR_TILING_LINEAR_ARM,
        memory: Memory | None = None,
        offset: int = 0,
        with_view: bool = True,
        device_local: bool = False,
        label: str = "",
    ):
        self.ctx = ctx
        self.device_local = device_local
        self.with_view = with_view
        self.format = vk_format
        self.shape = tuple(int(d) for d in shape)
        self.strides = tuple(strides) if strides is not None else None
        self.usage = usage
        self.tiling = tiling
        self.label = label
        self.byte_strides = self.strides or packed_strides(vk_format, self.shape)
        self.nbytes = sum((d - 1) * s for d, s in zip(self.shape, self.byte_strides)) + element_size(vk_format)
        self.handle = None
        self.view = None
        self.memory: Memory | None = None
        self._owns_memory = False
        try:
            self._create(memory, offset)
        except BaseException:
            self.destroy()
            raise

    def description(self) -> Any:
        """A fresh VkTensorDescriptionARM equal to the one the tensor was created with."""
        return tensor_description(self.format, self.shape, self.strides, self.usage, self.tiling)

    def _create(self, memory: Memory | None, offset: int) -> None:
        ctx, fn = self.ctx, self.ctx.fn
        out = ffi.new("VkTensorARM*")
        info = _tensor_create_info(self.description())
        check(fn.vkCreateTensorARM(ctx.arm_device, info, ffi.NULL, out), f"vkCreateTensorARM({self.label})")
        self.handle = out[0]
        ctx.live.add("VkTensorARM", 1)
        req_info = new_struct(
            "VkTensorMemoryRequirementsInfoARM",
            sType=_ffi.STRUCTURE_TYPE_TENSOR_MEMORY_REQUIREMENTS_INFO_ARM,
            tensor=self.handle,
        )
        req = new_struct("VkMemoryRequirements2", sType=_ffi.STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2)
        fn.vkGetTensorMemoryRequirementsARM(ctx.arm_device, req_info, req)
        r = req.memoryRequirements
        requirement = (max(int(r.size), self.nbytes), int(r.alignment), int(r.memoryTypeBits))
        self.memory, self.offset, self._owns_memory = _bind_target(ctx, memory, offset, requirement, f"tensor {self.label}",
                                                                        self.device_local)
        bind = new_struct(
            "VkBindTensorMemoryInfoARM",
            sType=_ffi.STRUCTURE_TYPE_BIND_TENSOR_MEMORY_INFO_ARM,
            tensor=self.handle,
            memory=to_arm("VkDeviceMemory", self.memory.handle),
            memoryOffset=self.offset,
        )
        check(fn.vkBindTensorMemoryARM(ctx.arm_device, 1, bind), f"vkBindTensorMemoryARM({self.label})")
        if self.with_view:
            self.view = create_tensor_view(ctx, self)

    def array(self, dtype: np.dtype | str = np.uint8) -> np.ndarray:
        """A writable view of the tensor's elements in mapped memory (LINEAR tiling only)."""
        if self.tiling != _ffi.TENSOR_TILING_LINEAR_ARM:
            raise HalError(f"tensor {self.label}: OPTIMAL tiling has no host layout; copy it to a LINEAR tensor")
        dtype = np.dtype(dtype)
        if dtype.itemsize != element_size(self.format):
            raise HalError(f"tensor {self.label}: {dtype} does not match the element size of VkFormat {self.format}")
        return self.memory.array(self.shape, dtype, self.offset, self.byte_strides)

    def write(self, data: np.ndarray | bytes) -> None:
        """Copy packed bytes (C order, exactly the tensor's element count) into the tensor."""
        raw = np.frombuffer(memoryview(np.ascontiguousarray(data) if isinstance(data, np.ndarray) else data).cast("B"), np.uint8)
        itemsize = element_size(self.format)
        count = int(np.prod(self.shape, dtype=np.int64))
        if raw.size != count * itemsize:
            raise HalError(f"tensor {self.label or self.shape}: {raw.size} bytes written, {count * itemsize} expected")
        self.array(f"V{itemsize}")[...] = raw.view(f"V{itemsize}").reshape(self.shape)

    def read(self) -> bytes:
        """The tensor's elements, packed in C order."""
        return np.ascontiguousarray(self.array(f"V{element_size(self.format)}")).tobytes()

    def destroy(self) -> None:
        """Destroy the view and tensor, and free memory of its own (idempotent)."""
        ctx = self.ctx
        if ctx.device is None:
            return
        if self.view is not None:
            destroy_tensor_view(ctx, self.view)
            self.view = None
        if self.handle is not None:
            ctx.fn.vkDestroyTensorARM(ctx.arm_device, self.handle, ffi.NULL)
            self.handle = None
            ctx.live.add("VkTensorARM", -1)
        if self._owns_memory and self.memory is not None:
            self.memory.destroy()
        self.memory = None


def create_tensor_view(ctx: VulkanContext, tensor: Tensor) -> Any:
    """A new VkTensorViewARM of the whole tensor, in its format."""
    info = new_struct(
        "VkTensorViewCreateInfoARM",
        sType=_ffi.STRUCTURE_TYPE_TENSOR_VIEW_CREATE_INFO_ARM,
        tensor=tensor.handle,
        format=tensor.format,
    )
    view = ffi.new("VkTensorViewARM*")
    check(ctx.fn.vkCreateTensorViewARM(ctx.arm_device, info, ffi.NULL, view), f"vkCreateTensorViewARM({tensor.label})")
    ctx.live.add("VkTensorViewARM", 1)
    return view[0]


def destroy_tensor_view(ctx: VulkanContext, view: Any) -> None:
    ctx.fn.vkDestroyTensorViewARM(ctx.arm_device, view, ffi.NULL)
    ctx.live.add("VkTensorViewARM", -1)


class Buffer:
    """A VkBuffer bound to memory (its own, host-visible unless `device_local`, or shared)."""

    def __init__(self, ctx: VulkanContext, size: int, *, usage: int = BUFFER_USAGE, memory: Memory | None = None, offset: int = 0,
                 device_local: bool = False, label: str = ""):
        mod = vk()
        self.ctx = ctx
        self.nbytes = int(size)
        self.label = label
        self.handle = None
        self.memory: Memory | None = None
        self._owns_memory = False
        try:
            info = mod.VkBufferCreateInfo(size=self.nbytes, usage=usage, sharingMode=mod.VK_SHARING_MODE_EXCLUSIVE)
            self.handle = call("vkCreateBuffer", mod.vkCreateBuffer, ctx.device, info, None)
            ctx.live.add("VkBuffer", 1)
            r = mod.vkGetBufferMemoryRequirements(ctx.device, self.handle)
            requirement = (int(r.size), int(r.alignment), int(r.memoryTypeBits))
            self.memory, self.offset, self._owns_memory = _bind_target(ctx, memory, offset, requirement, f"buffer {label}",
                                                                        device_local)
            call("vkBindBufferMemory", mod.vkBindBufferMemory, ctx.device, self.handle, self.memory.handle, self.offset)
        except BaseException:
            self.destroy()
            raise

    def array(self) -> np.ndarray:
        """A writable flat uint8 view of the buffer in mapped memory."""
        return self.memory.bytes(self.offset, self.nbytes)

    def destroy(self) -> None:
        ctx = self.ctx
        if ctx.device is None:
            return
        if self.handle is not None:
            vk().vkDestroyBuffer(ctx.device, self.handle, None)
            self.handle = None
            ctx.live.add("VkBuffer", -1)
        if self._owns_memory and self.memory is not None:
            self.memory.destroy()
        self.memory = None
