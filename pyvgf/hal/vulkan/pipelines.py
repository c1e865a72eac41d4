"""Descriptor sets, data graph pipelines with their sessions, and compute pipelines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import HalError
from . import _ffi
from ._ffi import ffi
from ._vk import call, check, keep_alive, new_array, new_struct, to_arm, to_vk, vk
from .context import VulkanContext
from .tensors import DEFAULT_USAGE, Buffer, Memory, Tensor, element_size, packed_strides, tensor_description


class DescriptorSetLayout:
    """A VkDescriptorSetLayout of (binding, VkDescriptorType[, stage flags]) entries, one
    descriptor each (stage flags default to VK_SHADER_STAGE_ALL)."""

    def __init__(self, ctx: VulkanContext, bindings: list[tuple[int, ...]]):
        mod = vk()
        self.ctx = ctx
        self.bindings = [(b[0], b[1]) for b in bindings]
        items = [
            mod.VkDescriptorSetLayoutBinding(
                binding=b[0], descriptorType=b[1], descriptorCount=1, stageFlags=b[2] if len(b) > 2 else mod.VK_SHADER_STAGE_ALL
            )
            for b in bindings
        ]
        info = mod.VkDescriptorSetLayoutCreateInfo(bindingCount=len(items), pBindings=items or None)
        self.handle = call("vkCreateDescriptorSetLayout", mod.vkCreateDescriptorSetLayout, ctx.device, info, None)
        ctx.live.add("VkDescriptorSetLayout", 1)

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            vk().vkDestroyDescriptorSetLayout(self.ctx.device, self.handle, None)
            self.handle = None
            self.ctx.live.add("VkDescriptorSetLayout", -1)


class DescriptorSet:
    """A VkDescriptorSet from a pool of its own, for one layout."""

    def __init__(self, ctx: VulkanContext, layout: DescriptorSetLayout):
        mod = vk()
        self.ctx = ctx
        self.layout = layout
        self.handle = None
        counts: dict[int, int] = {}
        for _, t in layout.bindings:
            counts[t] = counts.get(t, 0) + 1
        sizes = [mod.VkDescriptorPoolSize(type=t, descriptorCount=n) for t, n in counts.items()]
        info = mod.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=len(sizes), pPoolSizes=sizes or None)
        self.pool = call("vkCreateDescriptorPool", mod.vkCreateDescriptorPool, ctx.device, info, None)
        ctx.live.add("VkDescriptorPool", 1)
        alloc = mod.VkDescriptorSetAllocateInfo(
            descriptorPool=self.pool, descriptorSetCount=1, pSetLayouts=[layout.handle]
        )
        try:
            self.handle = call("vkAllocateDescriptorSets", mod.vkAllocateDescriptorSets, ctx.device, alloc)[0]
        except HalError:
            self.destroy()
            raise

    def _kind(self, binding: int) -> int:
        kinds = dict(self.layout.bindings)
        if binding not in kinds:
            raise HalError(f"descriptor set has no binding {binding} (has {sorted(kinds)})")
        return kinds[binding]

    def write(self, binding: int, resource: Tensor | Buffer) -> None:
        """Point `binding` at a tensor (its view) or a buffer."""
        if isinstance(resource, Tensor):
            self.write_view(binding, resource.view)
        else:
            self.write_buffer(binding, resource)

    def write_view(self, binding: int, view: Any) -> None:
        """Point a TENSOR_ARM binding at a VkTensorViewARM (VkWriteDescriptorSetTensorARM)."""
        mod = vk()
        kind = self._kind(binding)
        if kind != _ffi.DESCRIPTOR_TYPE_TENSOR_ARM:
            raise HalError(f"binding {binding} is descriptor type {kind}, not a tensor")
        views = new_array("VkTensorViewARM", [view])
        ext = new_struct(
            "VkWriteDescriptorSetTensorARM",
            sType=_ffi.STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_TENSOR_ARM,
            tensorViewCount=1,
            pTensorViews=views,
        )
        write = mod.VkWriteDescriptorSet(
            pNext=ext,
            dstSet=self.handle,
            dstBinding=binding,
            dstArrayElement=0,
            descriptorCount=1,
            descriptorType=_ffi.DESCRIPTOR_TYPE_TENSOR_ARM,
        )
        mod.vkUpdateDescriptorSets(self.ctx.device, 1, [write], 0, None)

    def write_buffer(self, binding: int, buffer: Buffer) -> None:
        """Point a storage or uniform buffer binding at the whole of `buffer`."""
        mod = vk()
        kind = self._kind(binding)
        if kind not in (mod.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, mod.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER):
            raise HalError(f"binding {binding} is descriptor type {kind}, not a buffer")
        info = mod.VkDescriptorBufferInfo(buffer=buffer.handle, offset=0, range=buffer.nbytes)
        write = mod.VkWriteDescriptorSet(
            dstSet=self.handle, dstBinding=binding, descriptorCount=1, descriptorType=kind, pBufferInfo=[info]
        )
        mod.vkUpdateDescriptorSets(self.ctx.device, 1, [write], 0, None)

    def destroy(self) -> None:
        if self.pool is not None and self.ctx.device is not None:
            vk().vkDestroyDescriptorPool(self.ctx.device, self.pool, None)
            self.pool = None
            self.handle = None
            self.ctx.live.add("VkDescriptorPool", -1)


class PipelineLayout:
    """A VkPipelineLayout over descriptor set layouts (index = set number) and push ranges."""

    def __init__(
        self,
        ctx: VulkanContext,
        set_layouts: list[DescriptorSetLayout],
        push_constant_ranges: list[tuple[int, int, int]] = (),
    ):
        mod = vk()
        self.ctx = ctx
        ranges = [mod.VkPushConstantRange(stageFlags=s, offset=o, size=n) for s, o, n in push_constant_ranges]
        info = mod.VkPipelineLayoutCreateInfo(
            setLayoutCount=len(set_layouts),
            pSetLayouts=[s.handle for s in set_layouts] or None,
            pushConstantRangeCount=len(ranges),
            pPushConstantRanges=ranges or None,
        )
        self.handle = call("vkCreatePipelineLayout", mod.vkCreatePipelineLayout, ctx.device, info, None)
        ctx.live.add("VkPipelineLayout", 1)

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            vk().vkDestroyPipelineLayout(self.ctx.device, self.handle, None)
            self.handle = None
            self.ctx.live.add("VkPipelineLayout", -1)


def _shader_module(ctx: VulkanContext, words: np.ndarray, what: str) -> Any:
    mod = vk()
    code = np.ascontiguousarray(words, dtype="<u4").tobytes()
    if not code:
        raise HalError(f"{what}: the SPIR-V module is empty")
    info = mod.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
    module = call(f"vkCreateShaderModule({what})", mod.vkCreateShaderModule, ctx.device, info, None)
    ctx.live.add("VkShaderModule", 1)
    return module


def _destroy_shader_module(ctx: VulkanContext, module: Any) -> None:
    vk().vkDestroyShaderModule(ctx.device, module, None)
    ctx.live.add("VkShaderModule", -1)


@dataclass
class GraphResource:
    """A tensor interface of a graph: where it is bound and what it looks like."""

    set: int
    binding: int
    format: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    usage: int = DEFAULT_USAGE
    tiling: int = _ffi.TENSOR_TILING_LINEAR_ARM


@dataclass
class GraphConstant:
    """A graph constant: OpGraphConstantARM id, its tensor description and raw data."""

    id: int
    format: int
    shape: tuple[int, ...]
    data: np.ndarray
    sparsity_dimension: int = -1
    strides: tuple[int, ...] | None = None


class DataGraphPipeline:
    """A data graph pipeline (vkCreateDataGraphPipelinesARM) from a SPIR-V graph module."""

    def __init__(
        self,
        ctx: VulkanContext,
        words: np.ndarray,
        entry_point: str,
        layout: PipelineLayout,
        resources: list[GraphResource],
        constants: list[GraphConstant],
        *,
        label: str = "graph",
    ):
        self.ctx = ctx
        self.label = label
        self.handle = None
        module = _shader_module(ctx, words, label)
        try:
            self._create(module, entry_point, layout, resources, constants)
        finally:
            _destroy_shader_module(ctx, module)

    def _create(self, module, entry_point, layout, resources, constants) -> None:
        ctx = self.ctx
        infos = [
            new_struct(
                "VkDataGraphPipelineResourceInfoARM",
                sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_RESOURCE_INFO_ARM,
                pNext=tensor_description(r.format, r.shape, r.strides, usage=r.usage, tiling=r.tiling),
                descriptorSet=r.set,
                binding=r.binding,
                arrayElement=0,
            )
            for r in resources
        ]
        consts = []
        for c in constants:
            desc = tensor_description(c.format, c.shape, c.strides, usage=_ffi.TENSOR_USAGE_DATA_GRAPH_BIT_ARM)
            if c.sparsity_dimension >= 0:
                sparsity = new_struct(
                    "VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM",
                    sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_TENSOR_SEMI_STRUCTURED_SPARSITY_INFO_ARM,
                    dimension=c.sparsity_dimension,
                    zeroCount=2,
                    groupSize=4,
                )
                desc.pNext = sparsity
                keep_alive(desc, sparsity)
            data = np.ascontiguousarray(c.data).reshape(-1).view(np.uint8)
            strides = c.strides or packed_strides(c.format, c.shape)
            expected = sum((d - 1) * s for d, s in zip(c.shape, strides)) + element_size(c.format)
            if data.nbytes < expected:
                raise HalError(
                    f"{self.label}: graph constant {c.id} has {data.nbytes} bytes, its description {c.shape} format {c.format} needs {expected}"
                )
            buf = ffi.from_buffer("uint8_t[]", data)
            consts.append(
                new_struct(
                    "VkDataGraphPipelineConstantARM",
                    sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_ARM,
                    pNext=desc,
                    id=c.id,
                    pConstantData=buf,
                )
            )
            keep_alive(consts[-1], data)
        const_array = new_array("VkDataGraphPipelineConstantARM", consts) if consts else ffi.NULL
        name = ffi.new("char[]", entry_point.encode())
        shader = new_struct(
            "VkDataGraphPipelineShaderModuleCreateInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM,
            module=to_arm("VkShaderModule", module),
            pName=name,
            constantCount=len(consts),
            pConstants=const_array,
        )
        info = new_struct(
            "VkDataGraphPipelineCreateInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CREATE_INFO_ARM,
            pNext=shader,
            flags=0,
            layout=to_arm("VkPipelineLayout", layout.handle),
            resourceInfoCount=len(infos),
            pResourceInfos=new_array("VkDataGraphPipelineResourceInfoARM", infos) if infos else ffi.NULL,
        )
        out = ffi.new("VkPipeline*")
        result = ctx.fn.vkCreateDataGraphPipelinesARM(ctx.arm_device, ffi.NULL, ffi.NULL, 1, info, ffi.NULL, out)
        check(result, f"vkCreateDataGraphPipelinesARM({self.label})")
        self.handle = to_vk("VkPipeline", out[0])
        ctx.live.add("VkPipeline", 1)

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            vk().vkDestroyPipeline(self.ctx.device, self.handle, None)
            self.handle = None
            self.ctx.live.add("VkPipeline", -1)


class DataGraphSession:
    """A VkDataGraphPipelineSessionARM: its bind point requirements, and memory bound to them."""

    def __init__(self, ctx: VulkanContext, pipeline: DataGraphPipeline):
        self.ctx = ctx
        self.pipeline = pipeline
        self.handle = None
        self._own: list[Memory] = []
        info = new_struct(
            "VkDataGraphPipelineSessionCreateInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_CREATE_INFO_ARM,
            flags=0,
            dataGraphPipeline=to_arm("VkPipeline", pipeline.handle),
        )
        out = ffi.new("VkDataGraphPipelineSessionARM*")
        check(ctx.fn.vkCreateDataGraphPipelineSessionARM(ctx.arm_device, info, ffi.NULL, out), "vkCreateDataGraphPipelineSessionARM")
        self.handle = out[0]
        ctx.live.add("VkDataGraphPipelineSessionARM", 1)

    def requirements(self) -> list[tuple[int, int]]:
        """(bind point, number of objects) of every bind point (all of type MEMORY)."""
        ctx, fn = self.ctx, self.ctx.fn
        info = new_struct(
            "VkDataGraphPipelineSessionBindPointRequirementsInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENTS_INFO_ARM,
            session=self.handle,
        )
        count = ffi.new("uint32_t*")
        what = "vkGetDataGraphPipelineSessionBindPointRequirementsARM"
        check(fn.vkGetDataGraphPipelineSessionBindPointRequirementsARM(ctx.arm_device, info, count, ffi.NULL), what)
        reqs = ffi.new("VkDataGraphPipelineSessionBindPointRequirementARM[]", count[0])
        for i in range(count[0]):
            reqs[i].sType = _ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENT_ARM
        check(fn.vkGetDataGraphPipelineSessionBindPointRequirementsARM(ctx.arm_device, info, count, reqs), what)
        out = []
        for i in range(count[0]):
            if reqs[i].bindPointType != _ffi.DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_TYPE_MEMORY_ARM:
                raise HalError(f"data graph session bind point {reqs[i].bindPoint} has type {reqs[i].bindPointType}, not memory")
            out.append((int(reqs[i].bindPoint), int(reqs[i].numObjects)))
        return out

    def memory_requirements(self, bind_point: int, obj: int) -> tuple[int, int, int]:
        """(size, alignment, memoryTypeBits) of one bind point object."""
        ctx = self.ctx
        info = new_struct(
            "VkDataGraphPipelineSessionMemoryRequirementsInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_MEMORY_REQUIREMENTS_INFO_ARM,
            session=self.handle,
            bindPoint=bind_point,
            objectIndex=obj,
        )
        req = new_struct("VkMemoryRequirements2", sType=_ffi.STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2)
        ctx.fn.vkGetDataGraphPipelineSessionMemoryRequirementsARM(ctx.arm_device, info, req)
        r = req.memoryRequirements
        return int(r.size), int(r.alignment), int(r.memoryTypeBits)

    def bind(self, bind_point: int, obj: int, memory: Memory, offset: int) -> None:
        """vkBindDataGraphPipelineSessionMemoryARM for one bind point object."""
        size, alignment, type_bits = self.memory_requirements(bind_point, obj)
        if not type_bits & (1 << memory.type_index):
            raise HalError(f"session bind point {bind_point}[{obj}] cannot use memory type {memory.type_index} (allowed {type_bits:#x})")
        bind = new_struct(
            "VkBindDataGraphPipelineSessionMemoryInfoARM",
            sType=_ffi.STRUCTURE_TYPE_BIND_DATA_GRAPH_PIPELINE_SESSION_MEMORY_INFO_ARM,
            session=self.handle,
            bindPoint=bind_point,
            objectIndex=obj,
            memory=to_arm("VkDeviceMemory", memory.handle),
            memoryOffset=offset,
        )
        check(self.ctx.fn.vkBindDataGraphPipelineSessionMemoryARM(self.ctx.arm_device, 1, bind), "vkBindDataGraphPipelineSessionMemoryARM")

    def bind_own_memory(self) -> None:
        """Allocate and bind memory of its own at every bind point object of non-zero size."""
        for bind_point, count in self.requirements():
            for obj in range(count):
                size, _, type_bits = self.memory_requirements(bind_point, obj)
                if size:
                    memory = Memory(self.ctx, size, type_bits, label=f"session {bind_point}[{obj}]")
                    self._own.append(memory)
                    self.bind(bind_point, obj, memory, 0)

    def destroy(self) -> None:
        ctx = self.ctx
        if ctx.device is None:
            return
        if self.handle is not None:
            ctx.fn.vkDestroyDataGraphPipelineSessionARM(ctx.arm_device, self.handle, ffi.NULL)
            self.handle = None
            ctx.live.add("VkDataGraphPipelineSessionARM", -1)
        for memory in self._own:
            memory.destroy()
        self._own = []


class ComputePipeline:
    """A compute pipeline from a SPIR-V compute module (a VGF compute segment)."""

    def __init__(self, ctx: VulkanContext, words: np.ndarray, entry_point: str, layout: PipelineLayout, *, label: str = "compute"):
        mod = vk()
        self.ctx = ctx
        self.handle = None
        module = _shader_module(ctx, words, label)
        try:
            stage = mod.VkPipelineShaderStageCreateInfo(
                stage=mod.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName=entry_point
            )
            info = mod.VkComputePipelineCreateInfo(stage=stage, layout=layout.handle)
            pipes = call(f"vkCreateComputePipelines({label})", mod.vkCreateComputePipelines, ctx.device, None, 1, [info], None)
            self.handle = pipes[0]
            ctx.live.add("VkPipeline", 1)
        finally:
            _destroy_shader_module(ctx, module)

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            vk().vkDestroyPipeline(self.ctx.device, self.handle, None)
            self.handle = None
            self.ctx.live.add("VkPipeline", -1)
