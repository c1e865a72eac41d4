"""Command buffers (graph and compute dispatches, barriers), fences and queue submission."""

from __future__ import annotations

from ...errors import HalError
from . import _ffi
from ._ffi import ffi
from ._vk import call, new_array, new_struct, result_name, to_arm, vk
from .context import VulkanContext
from .pipelines import ComputePipeline, DataGraphPipeline, DataGraphSession, DescriptorSet, PipelineLayout
from .tensors import Tensor

GRAPH_STAGE = _ffi.PIPELINE_STAGE_2_DATA_GRAPH_BIT_ARM
GRAPH_ACCESS = _ffi.ACCESS_2_DATA_GRAPH_READ_BIT_ARM | _ffi.ACCESS_2_DATA_GRAPH_WRITE_BIT_ARM


def _stages() -> tuple[int, int, int, int]:
    mod = vk()
    compute = mod.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT
    shader_access = mod.VK_ACCESS_2_SHADER_STORAGE_READ_BIT | mod.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT
    return GRAPH_STAGE | compute, GRAPH_ACCESS | shader_access, mod.VK_PIPELINE_STAGE_2_HOST_BIT, mod.VK_ACCESS_2_HOST_READ_BIT


class CommandBuffer:
    """A primary command buffer from the context's pool, recorded once and submitted often."""

    def __init__(self, ctx: VulkanContext):
        mod = vk()
        self.ctx = ctx
        info = mod.VkCommandBufferAllocateInfo(
            commandPool=ctx.command_pool, level=mod.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
        )
        self.handle = call("vkAllocateCommandBuffers", mod.vkAllocateCommandBuffers, ctx.device, info)[0]
        ctx.live["VkCommandBuffer"] += 1
        self._recording = False

    def begin(self) -> None:
        mod = vk()
        call("vkBeginCommandBuffer", mod.vkBeginCommandBuffer, self.handle, mod.VkCommandBufferBeginInfo())
        self._recording = True

    def end(self) -> None:
        call("vkEndCommandBuffer", vk().vkEndCommandBuffer, self.handle)
        self._recording = False

    def _require_recording(self, what: str) -> None:
        if not self._recording:
            raise HalError(f"{what}: the command buffer is not recording (call begin() first)")

    def dispatch_graph(self, pipeline: DataGraphPipeline, layout: PipelineLayout, sets: dict[int, DescriptorSet], session: DataGraphSession) -> None:
        """Bind a data graph pipeline and its descriptor sets, then dispatch the session."""
        self._require_recording("dispatch_graph")
        mod = vk()
        point = _ffi.PIPELINE_BIND_POINT_DATA_GRAPH_ARM
        mod.vkCmdBindPipeline(self.handle, point, pipeline.handle)
        self._bind_sets(point, layout, sets)
        self.ctx.fn.vkCmdDispatchDataGraphARM(to_arm("VkCommandBuffer", self.handle), session.handle, ffi.NULL)

    def dispatch_compute(
        self,
        pipeline: ComputePipeline,
        layout: PipelineLayout,
        sets: dict[int, DescriptorSet],
        groups: tuple[int, int, int],
        push_constants: bytes = b"",
    ) -> None:
        """Bind a compute pipeline and its descriptor sets, then vkCmdDispatch `groups`."""
        self._require_recording("dispatch_compute")
        mod = vk()
        point = mod.VK_PIPELINE_BIND_POINT_COMPUTE
        mod.vkCmdBindPipeline(self.handle, point, pipeline.handle)
        self._bind_sets(point, layout, sets)
        if push_constants:
            data = mod.ffi.new("char[]", push_constants)
            mod.vkCmdPushConstants(self.handle, layout.handle, mod.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push_constants), data)
        mod.vkCmdDispatch(self.handle, *groups)

    def _bind_sets(self, point: int, layout: PipelineLayout, sets: dict[int, DescriptorSet]) -> None:
        mod = vk()
        for index in sorted(sets):
            mod.vkCmdBindDescriptorSets(self.handle, point, layout.handle, index, 1, [sets[index].handle], 0, None)

    def tensor_barrier(self, tensors: list[Tensor]) -> None:
        """Make the writes of earlier graph/compute work to `tensors` visible to later work."""
        self._require_recording("tensor_barrier")
        if not tensors:
            return
        mod = vk()
        stages, access, _, _ = _stages()
        barriers = [
            new_struct(
                "VkTensorMemoryBarrierARM",
                sType=_ffi.STRUCTURE_TYPE_TENSOR_MEMORY_BARRIER_ARM,
                srcStageMask=stages,
                srcAccessMask=access,
                dstStageMask=stages,
                dstAccessMask=access,
                srcQueueFamilyIndex=mod.VK_QUEUE_FAMILY_IGNORED,
                dstQueueFamilyIndex=mod.VK_QUEUE_FAMILY_IGNORED,
                tensor=t.handle,
            )
            for t in tensors
        ]
        dep = new_struct(
            "VkTensorDependencyInfoARM",
            sType=_ffi.STRUCTURE_TYPE_TENSOR_DEPENDENCY_INFO_ARM,
            tensorMemoryBarrierCount=len(barriers),
            pTensorMemoryBarriers=new_array("VkTensorMemoryBarrierARM", barriers),
        )
        mod.vkCmdPipelineBarrier2(self.handle, mod.VkDependencyInfo(pNext=dep))

    def memory_barrier(self) -> None:
        """A global barrier between graph/compute work (buffers and aliased memory)."""
        self._require_recording("memory_barrier")
        mod = vk()
        stages, access, _, _ = _stages()
        barrier = mod.VkMemoryBarrier2(srcStageMask=stages, srcAccessMask=access, dstStageMask=stages, dstAccessMask=access)
        mod.vkCmdPipelineBarrier2(self.handle, mod.VkDependencyInfo(memoryBarrierCount=1, pMemoryBarriers=[barrier]))

    def host_barrier(self) -> None:
        """Make every graph/compute write visible to host reads after the fence."""
        self._require_recording("host_barrier")
        mod = vk()
        stages, access, host_stage, host_read = _stages()
        barrier = mod.VkMemoryBarrier2(
            srcStageMask=stages, srcAccessMask=access, dstStageMask=host_stage, dstAccessMask=host_read
        )
        mod.vkCmdPipelineBarrier2(self.handle, mod.VkDependencyInfo(memoryBarrierCount=1, pMemoryBarriers=[barrier]))

    def destroy(self) -> None:
        ctx = self.ctx
        if self.handle is not None and ctx.device is not None:
            vk().vkFreeCommandBuffers(ctx.device, ctx.command_pool, 1, [self.handle])
            self.handle = None
            ctx.live["VkCommandBuffer"] -= 1


class Fence:
    """A VkFence signalled when a submission finishes."""

    def __init__(self, ctx: VulkanContext):
        mod = vk()
        self.ctx = ctx
        self.handle = call("vkCreateFence", mod.vkCreateFence, ctx.device, mod.VkFenceCreateInfo(), None)
        ctx.live["VkFence"] += 1

    def wait(self, timeout_s: float | None = None) -> None:
        """Block until signalled; HalError on timeout or device loss."""
        mod = vk()
        timeout = 0xFFFFFFFFFFFFFFFF if timeout_s is None else int(timeout_s * 1e9)
        result = mod.lib.vkWaitForFences(self.ctx.device, 1, [self.handle], mod.VK_TRUE, timeout)
        if result == mod.VK_TIMEOUT:
            raise HalError(f"the Vulkan submission did not finish within {timeout_s} s")
        if result != mod.VK_SUCCESS:
            raise HalError(f"vkWaitForFences failed: {result_name(result)} ({result})")

    def signalled(self) -> bool:
        mod = vk()
        return mod.lib.vkGetFenceStatus(self.ctx.device, self.handle) == mod.VK_SUCCESS

    def reset(self) -> None:
        vk().vkResetFences(self.ctx.device, 1, [self.handle])

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            vk().vkDestroyFence(self.ctx.device, self.handle, None)
            self.handle = None
            self.ctx.live["VkFence"] -= 1


def submit(ctx: VulkanContext, buffers: list[CommandBuffer], fence: Fence) -> None:
    """vkQueueSubmit the recorded command buffers; `fence` is signalled when they finish."""
    mod = vk()
    info = mod.VkSubmitInfo(commandBufferCount=len(buffers), pCommandBuffers=[b.handle for b in buffers])
    call("vkQueueSubmit", mod.vkQueueSubmit, ctx.queue, 1, [info], fence.handle)
