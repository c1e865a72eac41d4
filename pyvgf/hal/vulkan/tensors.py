"""VkTensorARM with its memory and view, and VkBuffer, both readable and writable by the host.

Tensors use LINEAR tiling with packed strides, so their memory holds the elements in numpy's
C order. Memory comes from a host-visible, coherent type (device-local preferred) and stays
mapped for the tensor's life: writing an input is one copy into the mapping, reading an output
one copy out of it; the fence wait and the host barrier recorded after the last dispatch make
the device's writes visible.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import HalError
from . import _ffi
from ._ffi import ffi
from ._vk import check, new_array, new_struct, to_arm, vk
from .context import VulkanContext

ELEMENT_SIZE = {
    9: 1, 10: 1, 13: 1, 14: 1,  # R8 UNORM/SNORM/UINT/SINT
    74: 2, 75: 2, 76: 2,  # R16 UINT/SINT/SFLOAT
    98: 4, 99: 4, 100: 4,  # R32 UINT/SINT/SFLOAT
    110: 8, 111: 8, 112: 8,  # R64 UINT/SINT/SFLOAT
    1000460000: 1,  # R8_BOOL_ARM
    1000460001: 2,  # R16_SFLOAT_FPENCODING_BFLOAT16_ARM
    1000460002: 1,  # R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM
    1000460003: 1,  # R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM
}
"""Bytes per element of each VkFormat a VGF tensor may have."""

DEFAULT_USAGE = (
    _ffi.TENSOR_USAGE_SHADER_BIT_ARM
    | _ffi.TENSOR_USAGE_DATA_GRAPH_BIT_ARM
    | _ffi.TENSOR_USAGE_TRANSFER_SRC_BIT_ARM
    | _ffi.TENSOR_USAGE_TRANSFER_DST_BIT_ARM
)


def element_size(vk_format: int) -> int:
    try:
        return ELEMENT_SIZE[vk_format]
    except KeyError:
        raise HalError(f"VkFormat {vk_format} is not a tensor format pyvgf knows") from None


def tensor_description(vk_format: int, shape: tuple[int, ...], usage: int = DEFAULT_USAGE) -> Any:
    """A VkTensorDescriptionARM (LINEAR, packed) that keeps its dimension array alive."""
    if not shape:
        shape = (1,)
    if any(d <= 0 for d in shape):
        raise HalError(f"tensor shape {shape} has a dimension that is not positive")
    element_size(vk_format)
    dims = ffi.new("int64_t[]", list(shape))
    return new_struct(
        "VkTensorDescriptionARM",
        sType=_ffi.STRUCTURE_TYPE_TENSOR_DESCRIPTION_ARM,
        tiling=_ffi.TENSOR_TILING_LINEAR_ARM,
        format=vk_format,
        dimensionCount=len(shape),
        pDimensions=dims,
        pStrides=ffi.NULL,
        usage=usage,
    )


class Tensor:
    """A VkTensorARM bound to host-visible memory, with one VkTensorViewARM."""

    def __init__(self, ctx: VulkanContext, vk_format: int, shape: tuple[int, ...], *, label: str = ""):
        self.ctx = ctx
        self.format = vk_format
        self.shape = tuple(int(d) for d in shape)
        self.label = label
        self.nbytes = int(np.prod(self.shape or (1,), dtype=np.int64)) * element_size(vk_format)
        self.handle = None
        self.memory = None
        self.view = None
        self._mapped = None
        try:
            self._create()
        except BaseException:
            self.destroy()
            raise

    def description(self) -> Any:
        """A fresh VkTensorDescriptionARM equal to the one the tensor was created with."""
        return tensor_description(self.format, self.shape)

    def _create(self) -> None:
        ctx, fn, mod = self.ctx, self.ctx.fn, vk()
        info = new_struct(
            "VkTensorCreateInfoARM",
            sType=_ffi.STRUCTURE_TYPE_TENSOR_CREATE_INFO_ARM,
            pDescription=self.description(),
            sharingMode=0,
        )
        out = ffi.new("VkTensorARM*")
        check(fn.vkCreateTensorARM(ctx.arm_device, info, ffi.NULL, out), f"vkCreateTensorARM({self.label})")
        self.handle = out[0]
        ctx.live["VkTensorARM"] += 1
        req_info = new_struct(
            "VkTensorMemoryRequirementsInfoARM",
            sType=_ffi.STRUCTURE_TYPE_TENSOR_MEMORY_REQUIREMENTS_INFO_ARM,
            tensor=self.handle,
        )
        req = new_struct("VkMemoryRequirements2", sType=_ffi.STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2)
        fn.vkGetTensorMemoryRequirementsARM(ctx.arm_device, req_info, req)
        size = max(int(req.memoryRequirements.size), self.nbytes)
        self.memory = ctx.allocate(size, req.memoryRequirements.memoryTypeBits, host_visible=True)
        bind = new_struct(
            "VkBindTensorMemoryInfoARM",
            sType=_ffi.STRUCTURE_TYPE_BIND_TENSOR_MEMORY_INFO_ARM,
            tensor=self.handle,
            memory=to_arm("VkDeviceMemory", self.memory),
            memoryOffset=0,
        )
        check(fn.vkBindTensorMemoryARM(ctx.arm_device, 1, bind), f"vkBindTensorMemoryARM({self.label})")
        view_info = new_struct(
            "VkTensorViewCreateInfoARM",
            sType=_ffi.STRUCTURE_TYPE_TENSOR_VIEW_CREATE_INFO_ARM,
            tensor=self.handle,
            format=self.format,
        )
        view = ffi.new("VkTensorViewARM*")
        check(fn.vkCreateTensorViewARM(ctx.arm_device, view_info, ffi.NULL, view), f"vkCreateTensorViewARM({self.label})")
        self.view = view[0]
        ctx.live["VkTensorViewARM"] += 1
        self._mapped = mod.vkMapMemory(ctx.device, self.memory, 0, self.nbytes, 0)

    def write(self, data: np.ndarray | bytes) -> None:
        """Copy `data` (exactly the tensor's byte size, C order) into the tensor."""
        raw = memoryview(np.ascontiguousarray(data)).cast("B") if isinstance(data, np.ndarray) else memoryview(data).cast("B")
        if raw.nbytes != self.nbytes:
            raise HalError(f"tensor {self.label or self.shape}: {raw.nbytes} bytes written, {self.nbytes} expected")
        self._mapped[0 : self.nbytes] = raw

    def read(self) -> bytes:
        """The tensor's bytes (C order)."""
        return bytes(self._mapped[0 : self.nbytes])

    def destroy(self) -> None:
        """Destroy the view and tensor and free the memory (idempotent)."""
        ctx, mod = self.ctx, vk()
        if ctx.device is None:
            return
        if self._mapped is not None:
            mod.vkUnmapMemory(ctx.device, self.memory)
            self._mapped = None
        if self.view is not None:
            ctx.fn.vkDestroyTensorViewARM(ctx.arm_device, self.view, ffi.NULL)
            self.view = None
            ctx.live["VkTensorViewARM"] -= 1
        if self.handle is not None:
            ctx.fn.vkDestroyTensorARM(ctx.arm_device, self.handle, ffi.NULL)
            self.handle = None
            ctx.live["VkTensorARM"] -= 1
        if self.memory is not None:
            ctx.free(self.memory)
            self.memory = None


class Buffer:
    """A host-visible VkBuffer for storage-buffer bindings of compute segments."""

    def __init__(self, ctx: VulkanContext, size: int, *, label: str = ""):
        mod = vk()
        self.ctx = ctx
        self.nbytes = int(size)
        self.label = label
        self.handle = None
        self.memory = None
        self._mapped = None
        try:
            info = mod.VkBufferCreateInfo(
                size=max(self.nbytes, 4),
                usage=mod.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
                | mod.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                | mod.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                sharingMode=mod.VK_SHARING_MODE_EXCLUSIVE,
            )
            self.handle = mod.vkCreateBuffer(ctx.device, info, None)
            ctx.live["VkBuffer"] += 1
            req = mod.vkGetBufferMemoryRequirements(ctx.device, self.handle)
            self.memory = ctx.allocate(req.size, req.memoryTypeBits, host_visible=True)
            mod.vkBindBufferMemory(ctx.device, self.handle, self.memory, 0)
            self._mapped = mod.vkMapMemory(ctx.device, self.memory, 0, max(self.nbytes, 4), 0)
        except BaseException:
            self.destroy()
            raise

    def write(self, data: np.ndarray | bytes) -> None:
        raw = memoryview(np.ascontiguousarray(data)).cast("B") if isinstance(data, np.ndarray) else memoryview(data).cast("B")
        if raw.nbytes != self.nbytes:
            raise HalError(f"buffer {self.label}: {raw.nbytes} bytes written, {self.nbytes} expected")
        self._mapped[0 : self.nbytes] = raw

    def read(self) -> bytes:
        return bytes(self._mapped[0 : self.nbytes])

    def destroy(self) -> None:
        ctx, mod = self.ctx, vk()
        if ctx.device is None:
            return
        if self._mapped is not None:
            mod.vkUnmapMemory(ctx.device, self.memory)
            self._mapped = None
        if self.handle is not None:
            mod.vkDestroyBuffer(ctx.device, self.handle, None)
            self.handle = None
            ctx.live["VkBuffer"] -= 1
        if self.memory is not None:
            ctx.free(self.memory)
            self.memory = None


def tensor_views(tensors: list[Tensor]) -> Any:
    """A C array of the tensors' views (for VkWriteDescriptorSetTensorARM)."""
    return new_array("VkTensorViewARM", [t.view for t in tensors])
