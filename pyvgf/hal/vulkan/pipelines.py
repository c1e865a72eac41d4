"""Descriptor set layouts, pipeline layouts, descriptor sets, data graph pipelines with their
sessions, and compute pipelines: the HAL classes and the Vulkan calls they make."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...errors import HalError
from .. import _classes as hal
from . import _ffi
from ._ffi import ffi
from ._vk import call, check, keep_alive, new_array, new_struct, to_arm, to_vk, vk
from .handles import DeviceHandles, Owned
from .tensors import VulkanBuffer, VulkanTensorView, vk_description

if TYPE_CHECKING:
    from .backend import VulkanDevice


def _release(h: DeviceHandles, destroy: str, handle: Any, kind: str) -> None:
    """vkDestroy<kind>(device, handle) of a core Vulkan object."""
    getattr(vk(), destroy)(h.device, handle, None)
    h.live.add(kind, -1)


class VulkanDescriptorSetLayout(Owned, hal.DescriptorSetLayout):
    """vkCreateDescriptorSetLayout, one descriptor per binding. A data graph pipeline has no
    shader stage: TENSOR bindings are visible to all stages, buffer bindings to their own."""

    def __init__(self, device: VulkanDevice, bindings: tuple[hal.DescriptorSetLayoutBinding, ...], label: str = ""):
        super().__init__(device, bindings, label)
        mod = vk()
        h = device.handles
        items = [
            mod.VkDescriptorSetLayoutBinding(
                binding=b.binding, descriptorType=int(b.descriptor_type), descriptorCount=1,
                stageFlags=mod.VK_SHADER_STAGE_ALL if b.descriptor_type == hal.DescriptorType.TENSOR else int(b.stages))
            for b in bindings
        ]
        info = mod.VkDescriptorSetLayoutCreateInfo(bindingCount=len(items), pBindings=items or None)
        self.handle = call("vkCreateDescriptorSetLayout", mod.vkCreateDescriptorSetLayout, h.device, info, None)
        h.live.add("VkDescriptorSetLayout", 1)
        self._owns(functools.partial(_release, h, "vkDestroyDescriptorSetLayout", self.handle, "VkDescriptorSetLayout"))


class VulkanPipelineLayout(Owned, hal.PipelineLayout):
    """vkCreatePipelineLayout over descriptor set layouts (index = set number) and push ranges."""

    def __init__(self, device: VulkanDevice, set_layouts: tuple[VulkanDescriptorSetLayout, ...],
                 push_constant_ranges: tuple[hal.PushConstantRange, ...], label: str = ""):
        super().__init__(device, set_layouts, push_constant_ranges, label)
        mod = vk()
        h = device.handles
        ranges = [mod.VkPushConstantRange(stageFlags=int(r.stages), offset=r.offset, size=r.size)
                  for r in push_constant_ranges]
        info = mod.VkPipelineLayoutCreateInfo(
            setLayoutCount=len(set_layouts),
            pSetLayouts=[s.handle for s in set_layouts] or None,
            pushConstantRangeCount=len(ranges),
            pPushConstantRanges=ranges or None,
        )
        self.handle = call("vkCreatePipelineLayout", mod.vkCreatePipelineLayout, h.device, info, None)
        h.live.add("VkPipelineLayout", 1)
        self._owns(functools.partial(_release, h, "vkDestroyPipelineLayout", self.handle, "VkPipelineLayout"))


class VulkanDescriptorSet(Owned, hal.DescriptorSet):
    """A VkDescriptorSet from a VkDescriptorPool of its own, every binding written once
    (`VkWriteDescriptorSetTensorARM` chained for tensor views, `VkDescriptorBufferInfo` for
    buffers)."""

    def __init__(self, device: VulkanDevice, layout: VulkanDescriptorSetLayout,
                 resources: dict[int, VulkanTensorView | VulkanBuffer], label: str = ""):
        super().__init__(device, layout, resources, label)
        mod = vk()
        h = device.handles
        counts: dict[int, int] = {}
        for b in layout.bindings:
            counts[int(b.descriptor_type)] = counts.get(int(b.descriptor_type), 0) + 1
        sizes = [mod.VkDescriptorPoolSize(type=t, descriptorCount=n) for t, n in counts.items()]
        info = mod.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=len(sizes), pPoolSizes=sizes or None)
        pool = call("vkCreateDescriptorPool", mod.vkCreateDescriptorPool, h.device, info, None)
        h.live.add("VkDescriptorPool", 1)
        release = functools.partial(_release, h, "vkDestroyDescriptorPool", pool, "VkDescriptorPool")
        try:
            alloc = mod.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1,
                                                    pSetLayouts=[layout.handle])
            self.handle = call("vkAllocateDescriptorSets", mod.vkAllocateDescriptorSets, h.device, alloc)[0]
            kinds = {b.binding: int(b.descriptor_type) for b in layout.bindings}
            for binding, res in resources.items():
                self._write(binding, kinds[binding], res)
        except BaseException:
            release()
            raise
        self._owns(release)

    def _write(self, binding: int, kind: int, resource: VulkanTensorView | VulkanBuffer) -> None:
        mod = vk()
        if isinstance(resource, VulkanTensorView):  # kind is TENSOR_ARM: the device checked the binding's resource
            ext = new_struct("VkWriteDescriptorSetTensorARM", sType=_ffi.STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET_TENSOR_ARM,
                             tensorViewCount=1, pTensorViews=new_array("VkTensorViewARM", [resource.handle]))
            write = mod.VkWriteDescriptorSet(pNext=ext, dstSet=self.handle, dstBinding=binding, dstArrayElement=0,
                                             descriptorCount=1, descriptorType=kind)
        else:
            info = mod.VkDescriptorBufferInfo(buffer=resource.handle, offset=0, range=resource.size)
            write = mod.VkWriteDescriptorSet(dstSet=self.handle, dstBinding=binding, descriptorCount=1,
                                             descriptorType=kind, pBufferInfo=[info])
        mod.vkUpdateDescriptorSets(self.device.handles.device, 1, [write], 0, None)


def _shader_module(h: DeviceHandles, module: hal.ShaderModule, what: str) -> Any:
    """The VkShaderModule of a SPIR-V module (its pipeline checked the language: the code is words)."""
    mod = vk()
    code = np.ascontiguousarray(cast(np.ndarray, module.code), dtype="<u4").tobytes()
    info = mod.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
    module = call(f"vkCreateShaderModule({what})", mod.vkCreateShaderModule, h.device, info, None)
    h.live.add("VkShaderModule", 1)
    return module


def _destroy_shader_module(h: DeviceHandles, module: Any) -> None:
    vk().vkDestroyShaderModule(h.device, module, None)
    h.live.add("VkShaderModule", -1)


def _graph_constant(c: hal.GraphConstant) -> Any:
    """The VkDataGraphPipelineConstantARM of `c` (its data passed as given, no copy), with its
    description (usage DATA_GRAPH) and, for 2:4 sparse data, the sparsity info chained."""
    desc = vk_description(c.description, usage=_ffi.TENSOR_USAGE_DATA_GRAPH_BIT_ARM)
    if c.sparsity_dimension >= 0:
        sparsity = new_struct(
            "VkDataGraphPipelineConstantTensorSemiStructuredSparsityInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_TENSOR_SEMI_STRUCTURED_SPARSITY_INFO_ARM,
            dimension=c.sparsity_dimension, zeroCount=2, groupSize=4,
        )
        desc.pNext = sparsity
        keep_alive(desc, sparsity)
    data = np.ascontiguousarray(c.data).reshape(-1).view(np.uint8)
    const = new_struct("VkDataGraphPipelineConstantARM", sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CONSTANT_ARM,
                       pNext=desc, id=c.id, pConstantData=ffi.from_buffer("uint8_t[]", data))
    keep_alive(const, data)
    return const


class VulkanDataGraphPipeline(Owned, hal.DataGraphPipeline):
    """vkCreateDataGraphPipelinesARM from a SPIR-V graph module: one resource info per
    (set, binding), one constant per graph constant id, the module chained by
    VkDataGraphPipelineShaderModuleCreateInfoARM (the VkShaderModule is destroyed after)."""

    def __init__(self, device: VulkanDevice, module: hal.ShaderModule, entry_point: str,
                 layout: VulkanPipelineLayout, resources: tuple[hal.DataGraphResource, ...],
                 constants: tuple[hal.GraphConstant, ...], label: str = ""):
        super().__init__(device, module, entry_point, layout, resources, constants, label)
        h = device.handles
        infos = [
            new_struct("VkDataGraphPipelineResourceInfoARM",
                       sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_RESOURCE_INFO_ARM,
                       pNext=vk_description(r.description), descriptorSet=r.descriptor_set, binding=r.binding,
                       arrayElement=0)
            for r in resources
        ]
        consts = [_graph_constant(c) for c in constants]
        shader = _shader_module(h, module, self.label)
        try:
            stage = new_struct(
                "VkDataGraphPipelineShaderModuleCreateInfoARM",
                sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SHADER_MODULE_CREATE_INFO_ARM,
                module=to_arm("VkShaderModule", shader),
                pName=ffi.new("char[]", entry_point.encode()),
                constantCount=len(consts),
                pConstants=new_array("VkDataGraphPipelineConstantARM", consts) if consts else ffi.NULL,
            )
            info = new_struct(
                "VkDataGraphPipelineCreateInfoARM",
                sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_CREATE_INFO_ARM,
                pNext=stage,
                flags=0,
                layout=to_arm("VkPipelineLayout", layout.handle),
                resourceInfoCount=len(infos),
                pResourceInfos=new_array("VkDataGraphPipelineResourceInfoARM", infos) if infos else ffi.NULL,
            )
            out = ffi.new("VkPipeline*")
            check(h.fn.vkCreateDataGraphPipelinesARM(h.arm, ffi.NULL, ffi.NULL, 1, info, ffi.NULL, out),
                  f"vkCreateDataGraphPipelinesARM({self.label})")
        finally:
            _destroy_shader_module(h, shader)
        self.handle = to_vk("VkPipeline", out[0])
        h.live.add("VkPipeline", 1)
        self._owns(functools.partial(_release, h, "vkDestroyPipeline", self.handle, "VkPipeline"))


def _release_session(h: DeviceHandles, session: Any) -> None:
    h.fn.vkDestroyDataGraphPipelineSessionARM(h.arm, session, ffi.NULL)
    h.live.add("VkDataGraphPipelineSessionARM", -1)


class VulkanDataGraphSession(Owned, hal.DataGraphSession):
    """A VkDataGraphPipelineSessionARM: its bind point requirements (read once; a bind point
    pyvgf does not know is an error) and the memory bound to them."""

    def __init__(self, device: VulkanDevice, pipeline: VulkanDataGraphPipeline, label: str = ""):
        super().__init__(device, pipeline, label)
        h = device.handles
        info = new_struct(
            "VkDataGraphPipelineSessionCreateInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_CREATE_INFO_ARM,
            flags=0,
            dataGraphPipeline=to_arm("VkPipeline", pipeline.handle),
        )
        out = ffi.new("VkDataGraphPipelineSessionARM*")
        check(h.fn.vkCreateDataGraphPipelineSessionARM(h.arm, info, ffi.NULL, out),
              "vkCreateDataGraphPipelineSessionARM")
        self.handle = out[0]
        h.live.add("VkDataGraphPipelineSessionARM", 1)
        self._owns(functools.partial(_release_session, h, self.handle))
        self._requirements = self._read_requirements()
        for bind_point, _ in self._requirements:
            if bind_point not in hal.SessionBindPoint._value2member_map_:
                raise HalError(f"data graph session of {pipeline} asks for bind point {bind_point}, "
                               "which pyvgf does not know")

    def _read_requirements(self) -> list[tuple[int, int]]:
        """(bind point, number of objects) of every bind point (all of type MEMORY)."""
        h = self.device.handles
        info = new_struct(
            "VkDataGraphPipelineSessionBindPointRequirementsInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENTS_INFO_ARM,
            session=self.handle,
        )
        count = ffi.new("uint32_t*")
        what = "vkGetDataGraphPipelineSessionBindPointRequirementsARM"
        check(h.fn.vkGetDataGraphPipelineSessionBindPointRequirementsARM(h.arm, info, count, ffi.NULL), what)
        reqs = ffi.new("VkDataGraphPipelineSessionBindPointRequirementARM[]", count[0])
        for i in range(count[0]):
            reqs[i].sType = _ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_REQUIREMENT_ARM
        check(h.fn.vkGetDataGraphPipelineSessionBindPointRequirementsARM(h.arm, info, count, reqs), what)
        out = []
        for i in range(count[0]):
            if reqs[i].bindPointType != _ffi.DATA_GRAPH_PIPELINE_SESSION_BIND_POINT_TYPE_MEMORY_ARM:
                raise HalError(f"data graph session bind point {reqs[i].bindPoint} has type "
                               f"{reqs[i].bindPointType}, not memory")
            out.append((int(reqs[i].bindPoint), int(reqs[i].numObjects)))
        return out

    def _bind_point_requirements(self) -> list[hal.BindPointRequirement]:
        return [hal.BindPointRequirement(hal.SessionBindPoint(bp), n) for bp, n in self._requirements]

    def _vk_requirements(self, bind_point: int, object_index: int) -> tuple[int, int, int]:
        h = self.device.handles
        info = new_struct(
            "VkDataGraphPipelineSessionMemoryRequirementsInfoARM",
            sType=_ffi.STRUCTURE_TYPE_DATA_GRAPH_PIPELINE_SESSION_MEMORY_REQUIREMENTS_INFO_ARM,
            session=self.handle,
            bindPoint=bind_point,
            objectIndex=object_index,
        )
        req = new_struct("VkMemoryRequirements2", sType=_ffi.STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2)
        h.fn.vkGetDataGraphPipelineSessionMemoryRequirementsARM(h.arm, info, req)
        r = req.memoryRequirements
        return int(r.size), int(r.alignment), int(r.memoryTypeBits)

    def _memory_requirements(self, bind_point: hal.SessionBindPoint, object_index: int) -> hal.MemoryRequirements:
        size, alignment, _ = self._vk_requirements(int(bind_point), object_index)
        return hal.MemoryRequirements(size, alignment)

    def _bind_memory(self, memory: Any, offset: int, bind_point: hal.SessionBindPoint, object_index: int) -> None:
        h = self.device.handles
        _, _, type_bits = self._vk_requirements(int(bind_point), object_index)
        if not type_bits & (1 << memory.type_index):
            raise HalError(f"session bind point {int(bind_point)}[{object_index}] cannot use memory type "
                           f"{memory.type_index} (allowed {type_bits:#x})")
        bind = new_struct(
            "VkBindDataGraphPipelineSessionMemoryInfoARM",
            sType=_ffi.STRUCTURE_TYPE_BIND_DATA_GRAPH_PIPELINE_SESSION_MEMORY_INFO_ARM,
            session=self.handle,
            bindPoint=int(bind_point),
            objectIndex=object_index,
            memory=to_arm("VkDeviceMemory", memory.handle),
            memoryOffset=offset,
        )
        check(h.fn.vkBindDataGraphPipelineSessionMemoryARM(h.arm, 1, bind), "vkBindDataGraphPipelineSessionMemoryARM")


class VulkanComputePipeline(Owned, hal.ComputePipeline):
    """vkCreateComputePipelines from a SPIR-V compute module (a VGF compute segment)."""

    def __init__(self, device: VulkanDevice, module: hal.ShaderModule, entry_point: str,
                 layout: VulkanPipelineLayout, label: str = ""):
        super().__init__(device, module, entry_point, layout, label)
        if module.language != "spirv":
            raise HalError(
                f"compute module {module.name!r} is {module.language.upper()} source: the vulkan backend runs SPIR-V "
                "only (compile it to SPIR-V, or run the model on the cpu backend with a Python stand-in)"
            )
        mod = vk()
        h = device.handles
        shader = _shader_module(h, module, self.label)
        try:
            stage = mod.VkPipelineShaderStageCreateInfo(stage=mod.VK_SHADER_STAGE_COMPUTE_BIT, module=shader,
                                                        pName=entry_point)
            info = mod.VkComputePipelineCreateInfo(stage=stage, layout=layout.handle)
            pipes = call(f"vkCreateComputePipelines({self.label})", mod.vkCreateComputePipelines, h.device, None, 1,
                         [info], None)
        finally:
            _destroy_shader_module(h, shader)
        self.handle = pipes[0]
        h.live.add("VkPipeline", 1)
        self._owns(functools.partial(_release, h, "vkDestroyPipeline", self.handle, "VkPipeline"))
