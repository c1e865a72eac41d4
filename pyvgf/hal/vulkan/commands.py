"""Command buffers (graph and compute dispatches, copies, barriers), fences and queue submission."""

from __future__ import annotations

from ...errors import HalError
from . import _ffi
from ._ffi import ffi
from ._vk import call, check, new_array, new_struct, result_name, to_arm, vk
from .context import VulkanContext
from .pipelines import ComputePipeline, DataGraphPipeline, DataGraphSession, DescriptorSet, PipelineLayout
from .tensors import Buffer, Tensor

GRAPH_STAGE = _ffi.PIPELINE_STAGE_2_DATA_GRAPH_BIT_ARM
GRAPH_ACCESS = _ffi.ACCESS_2_DATA_GRAPH_READ_BIT_ARM | _ffi.ACCESS_2_DATA_GRAPH_WRITE_BIT_ARM
FOREVER = 0xFFFFFFFFFFFFFFFF
"""vkWaitForFences timeout: no timeout."""


def _stages() -> tuple[int, int, int, int]:
    """(device stages, device accesses, host stage, host read) that barriers join."""
    mod = vk()
    stages = GRAPH_STAGE | mod.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | mod.VK_PIPELINE_STAGE_2_TRANSFER_BIT
    access = (
        GRAPH_ACCESS
        | mod.VK_ACCESS_2_SHADER_STORAGE_READ_BIT
        | mod.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT
        | mod.VK_ACCESS_2_TRANSFER_READ_BIT
        | mod.VK_ACCESS_2_TRANSFER_WRITE_BIT
    )
    return stages, access, mod.VK_PIPELINE_STAGE_2_HOST_BIT, mod.VK_ACCESS_2_HOST_READ_BIT


class CommandBuffer:
    """A primary command buffer from the context's pool, recorded once and submitted often
    (`submit_info`: the VkSubmitInfo of it alone, made once)."""

    def __init__(self, ctx: VulkanContext):
        mod = vk()
        self.ctx = ctx
        info = mod.VkCommandBufferAllocateInfo(
            commandPool=ctx.command_pool, level=mod.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
        )
        self.handle = call("vkAllocateCommandBuffers", mod.vkAllocateCommandBuffers, ctx.device, info)[0]
        ctx.live.add("VkCommandBuffer", 1)
        self._recording = False
        self._handles = mod.ffi.new("VkCommandBuffer[1]", [self.handle])
        self.submit_info = mod.ffi.new("VkSubmitInfo*", {"sType": mod.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                                         "commandBufferCount": 1, "pCommandBuffers": self._handles})

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

    def bind_pipeline(self, point: int, pipeline: DataGraphPipeline | ComputePipeline) -> None:
        self._require_recording("bind_pipeline")
        vk().vkCmdBindPipeline(self.handle, point, pipeline.handle)

    def bind_set(self, point: int, layout: PipelineLayout, index: int, descriptor_set: DescriptorSet) -> None:
        self._require_recording("bind_set")
        vk().vkCmdBindDescriptorSets(self.handle, point, layout.handle, index, 1, [descriptor_set.handle], 0, None)

    def dispatch_session(self, session: DataGraphSession) -> None:
        """vkCmdDispatchDataGraphARM of the bound data graph pipeline."""
        self._require_recording("dispatch_session")
        self.ctx.fn.vkCmdDispatchDataGraphARM(to_arm("VkCommandBuffer", self.handle), session.handle, ffi.NULL)

    def dispatch(self, x: int, y: int, z: int) -> None:
        self._require_recording("dispatch")
        vk().vkCmdDispatch(self.handle, x, y, z)

    def push_constants(self, layout: PipelineLayout, stages: int, offset: int, data: bytes) -> None:
        self._require_recording("push_constants")
        mod = vk()
        mod.vkCmdPushConstants(self.handle, layout.handle, stages, offset, len(data), mod.ffi.new("char[]", data))

    def copy_tensor(self, src: Tensor, dst: Tensor) -> None:
        """vkCmdCopyTensorARM of the whole tensor (the one region VK_ARM_tensors allows)."""
        self._require_recording("copy_tensor")
        zeros = [0] * len(src.shape)
        items = [
            new_struct(
                "VkTensorCopyARM",
                sType=_ffi.STRUCTURE_TYPE_TENSOR_COPY_ARM,
                dimensionCount=len(zeros),
                pSrcOffset=ffi.new("uint64_t[]", zeros),
                pDstOffset=ffi.new("uint64_t[]", zeros),
                pExtent=ffi.new("uint64_t[]", list(src.shape)),
            )
        ]
        info = new_struct(
            "VkCopyTensorInfoARM",
            sType=_ffi.STRUCTURE_TYPE_COPY_TENSOR_INFO_ARM,
            srcTensor=src.handle,
            dstTensor=dst.handle,
            regionCount=len(items),
            pRegions=new_array("VkTensorCopyARM", items),
        )
        self.ctx.fn.vkCmdCopyTensorARM(to_arm("VkCommandBuffer", self.handle), info)

    def copy_buffer(self, src: Buffer, dst: Buffer, src_offset: int, dst_offset: int, size: int) -> None:
        self._require_recording("copy_buffer")
        mod = vk()
        region = mod.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)
        mod.vkCmdCopyBuffer(self.handle, src.handle, dst.handle, 1, [region])

    def dispatch_graph(self, pipeline: DataGraphPipeline, layout: PipelineLayout, sets: dict[int, DescriptorSet], session: DataGraphSession) -> None:
        """Bind a data graph pipeline and its descriptor sets, then dispatch the session."""
        point = _ffi.PIPELINE_BIND_POINT_DATA_GRAPH_ARM
        self.bind_pipeline(point, pipeline)
        for index in sorted(sets):
            self.bind_set(point, layout, index, sets[index])
        self.dispatch_session(session)

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
        """A global barrier: every earlier graph, compute and transfer write is visible to every
        later graph, compute and transfer access (tensors, buffers and aliased memory)."""
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
            ctx.live.add("VkCommandBuffer", -1)


class Fence:
    """A VkFence signalled when a submission finishes. Waits and resets call the driver through
    raw cffi with a handle array made once: they run on every inference."""

    def __init__(self, ctx: VulkanContext):
        mod = vk()
        self.ctx = ctx
        self._lib = mod.lib
        self.handle = call("vkCreateFence", mod.vkCreateFence, ctx.device, mod.VkFenceCreateInfo(), None)
        self._handles = mod.ffi.new("VkFence[1]", [self.handle])
        ctx.live.add("VkFence", 1)

    def wait_for(self, timeout_s: float | None = None) -> bool:
        """Block until signalled (True) or `timeout_s` seconds pass (False); HalError when the
        device is lost."""
        timeout = FOREVER if timeout_s is None else max(0, int(timeout_s * 1e9))
        result = self._lib.vkWaitForFences(self.ctx.device, 1, self._handles, 1, timeout)
        if result == 0:  # VK_SUCCESS
            return True
        if result == vk().VK_TIMEOUT:
            return False
        raise HalError(f"vkWaitForFences failed: {result_name(result)} ({result})")

    def wait(self, timeout_s: float | None = None) -> None:
        """Block until signalled; HalError on timeout or device loss."""
        if not self.wait_for(timeout_s):
            raise HalError(f"the Vulkan submission did not finish within {timeout_s} s")

    def signalled(self) -> bool:
        return self._lib.vkGetFenceStatus(self.ctx.device, self.handle) == 0  # VK_SUCCESS

    def reset(self) -> None:
        check(self._lib.vkResetFences(self.ctx.device, 1, self._handles), "vkResetFences")

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            vk().vkDestroyFence(self.ctx.device, self.handle, None)
            self.handle = None
            self.ctx.live.add("VkFence", -1)


def submit(ctx: VulkanContext, buffers: list[CommandBuffer], fence: Fence) -> None:
    """vkQueueSubmit the recorded command buffers; `fence` is signalled when they finish."""
    mod = vk()
    # Raw cffi, not the `vulkan` package's struct wrappers: this runs on every inference.
    if len(buffers) == 1:
        info = buffers[0].submit_info
    else:
        handles = mod.ffi.new("VkCommandBuffer[]", [b.handle for b in buffers])
        info = mod.ffi.new("VkSubmitInfo*", {"sType": mod.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                             "commandBufferCount": len(buffers), "pCommandBuffers": handles})
    result = mod.lib.vkQueueSubmit(ctx.queue, 1, info, fence.handle)
    if result != 0:  # VK_SUCCESS
        raise HalError(f"vkQueueSubmit failed: {result_name(result)} ({result})")
