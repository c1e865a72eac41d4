"""Command encoders and buffers (dispatches, copies, barriers, timestamps), the queue with its
submissions and fences, and prepared runs: the HAL classes and the Vulkan calls they make.

Threads: the command pool and the queue are externally synchronised in Vulkan, so a command
encoder records into a Python list and replays it into a VkCommandBuffer in `finish()` under
the device's lock; `Queue.submit`, a prepared run's vkQueueSubmit and fence bookkeeping hold the
queue's lock.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...errors import HalError
from .. import _classes as hal
from . import _ffi
from ._ffi import ffi
from ._vk import call, check, new_array, new_struct, result_name, to_arm, vk
from .handles import DeviceHandles, Owned
from .queries import VulkanQueryPool
from .tensors import VulkanBuffer, VulkanTensor

if TYPE_CHECKING:
    from .backend import VulkanDevice

GRAPH_STAGE = _ffi.PIPELINE_STAGE_2_DATA_GRAPH_BIT_ARM
GRAPH_ACCESS = _ffi.ACCESS_2_DATA_GRAPH_READ_BIT_ARM | _ffi.ACCESS_2_DATA_GRAPH_WRITE_BIT_ARM
FOREVER = 0xFFFFFFFFFFFFFFFF
"""vkWaitForFences timeout: no timeout."""

Command = Callable[[Any], None]
"""Records one command into a VkCommandBuffer handle."""


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


def memory_barrier(cb: Any) -> None:
    """A global barrier: every earlier graph, compute and transfer write is visible to every
    later graph, compute and transfer access (tensors, buffers and aliased memory)."""
    mod = vk()
    stages, access, _, _ = _stages()
    barrier = mod.VkMemoryBarrier2(srcStageMask=stages, srcAccessMask=access, dstStageMask=stages, dstAccessMask=access)
    mod.vkCmdPipelineBarrier2(cb, mod.VkDependencyInfo(memoryBarrierCount=1, pMemoryBarriers=[barrier]))


def host_barrier(cb: Any) -> None:
    """Make every graph/compute/transfer write visible to host reads after the fence."""
    mod = vk()
    stages, access, host_stage, host_read = _stages()
    barrier = mod.VkMemoryBarrier2(srcStageMask=stages, srcAccessMask=access, dstStageMask=host_stage,
                                   dstAccessMask=host_read)
    mod.vkCmdPipelineBarrier2(cb, mod.VkDependencyInfo(memoryBarrierCount=1, pMemoryBarriers=[barrier]))


def copy_tensor(h: DeviceHandles, cb: Any, src: VulkanTensor, dst: VulkanTensor) -> None:
    """vkCmdCopyTensorARM of the whole tensor (the one region VK_ARM_tensors allows)."""
    shape = src.shape or (1,)
    zeros = [0] * len(shape)
    region = new_struct(
        "VkTensorCopyARM",
        sType=_ffi.STRUCTURE_TYPE_TENSOR_COPY_ARM,
        dimensionCount=len(zeros),
        pSrcOffset=ffi.new("uint64_t[]", zeros),
        pDstOffset=ffi.new("uint64_t[]", zeros),
        pExtent=ffi.new("uint64_t[]", list(shape)),
    )
    info = new_struct("VkCopyTensorInfoARM", sType=_ffi.STRUCTURE_TYPE_COPY_TENSOR_INFO_ARM, srcTensor=src.handle,
                      dstTensor=dst.handle, regionCount=1, pRegions=new_array("VkTensorCopyARM", [region]))
    h.fn.vkCmdCopyTensorARM(to_arm("VkCommandBuffer", cb), info)


def copy_buffer(cb: Any, src: VulkanBuffer, dst: VulkanBuffer, src_offset: int, dst_offset: int, size: int) -> None:
    mod = vk()
    region = mod.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)
    mod.vkCmdCopyBuffer(cb, src.handle, dst.handle, 1, [region])


class Fence:
    """A VkFence of the device, reused from submission to submission (the queue keeps the free
    ones; a prepared run has its own). Listed in the device's `owned` table until destroyed, so
    that a dropped device destroys it too. Waits and resets call the driver through raw cffi
    with a handle array made once: they run on every inference."""

    def __init__(self, h: DeviceHandles):
        mod = vk()
        self.h = h
        self._lib = mod.lib
        self.handle = call("vkCreateFence", mod.vkCreateFence, h.device, mod.VkFenceCreateInfo(), None)
        self._handles = mod.ffi.new("VkFence[1]", [self.handle])
        h.live.add("VkFence", 1)
        h.owned[id(self)] = self.destroy

    def wait_for(self, timeout_s: float | None = None) -> bool:
        """Block until signalled (True) or `timeout_s` seconds pass (False); HalError when the
        device is lost."""
        timeout = FOREVER if timeout_s is None else max(0, int(timeout_s * 1e9))
        result = self._lib.vkWaitForFences(self.h.device, 1, self._handles, 1, timeout)
        if result == 0:  # VK_SUCCESS
            return True
        if result == vk().VK_TIMEOUT:
            return False
        raise HalError(f"vkWaitForFences failed: {result_name(result)} ({result})")

    def signalled(self) -> bool:
        return self._lib.vkGetFenceStatus(self.h.device, self.handle) == 0  # VK_SUCCESS

    def reset(self) -> None:
        check(self._lib.vkResetFences(self.h.device, 1, self._handles), "vkResetFences")

    def destroy(self) -> None:
        self.h.owned.pop(id(self), None)
        if self.handle is not None and self.h.device is not None:
            vk().vkDestroyFence(self.h.device, self.handle, None)
            self.handle = None
            self.h.live.add("VkFence", -1)


def submit_info(buffers: list[Any]) -> Any:
    """A VkSubmitInfo of VkCommandBuffer handles (raw cffi), with its handle array alive."""
    mod = vk()
    handles = mod.ffi.new("VkCommandBuffer[]", buffers)
    info = mod.ffi.new("VkSubmitInfo*", {"sType": mod.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                         "commandBufferCount": len(buffers), "pCommandBuffers": handles})
    return info, handles


def submit(h: DeviceHandles, info: Any, fence: Fence) -> None:
    """vkQueueSubmit of one VkSubmitInfo; `fence` is signalled when its command buffers finish.
    Raw cffi, not the `vulkan` package's wrappers: this runs on every inference."""
    result = vk().lib.vkQueueSubmit(h.queue, 1, info, fence.handle)
    if result != 0:  # VK_SUCCESS
        raise HalError(f"vkQueueSubmit failed: {result_name(result)} ({result})")


def _record(device: VulkanDevice, commands: list[Command]) -> Any:
    """A new primary VkCommandBuffer of the device's pool with `commands` recorded, ended by a
    host barrier (call under the device lock)."""
    mod = vk()
    h = device.handles
    info = mod.VkCommandBufferAllocateInfo(commandPool=h.pool, level=mod.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           commandBufferCount=1)
    cb = call("vkAllocateCommandBuffers", mod.vkAllocateCommandBuffers, h.device, info)[0]
    h.live.add("VkCommandBuffer", 1)
    try:
        call("vkBeginCommandBuffer", mod.vkBeginCommandBuffer, cb, mod.VkCommandBufferBeginInfo())
        for command in commands:
            command(cb)
        host_barrier(cb)
        call("vkEndCommandBuffer", mod.vkEndCommandBuffer, cb)
    except BaseException:
        _free_command_buffer(h, cb)
        raise
    return cb


def _free_command_buffer(h: DeviceHandles, cb: Any) -> None:
    vk().vkFreeCommandBuffers(h.device, h.pool, 1, [cb])
    h.live.add("VkCommandBuffer", -1)


class VulkanCommandEncoder(hal.CommandEncoder):
    """Records into a list; `finish()` replays it into a VkCommandBuffer under the device lock
    and ends it with a barrier that makes every write visible to the host."""

    device: VulkanDevice

    def __init__(self, device: VulkanDevice, label: str = ""):
        super().__init__(device, label)
        self._commands: list[Command] = []
        self._timed: list[VulkanQueryPool] = []

    def _bind_pipeline(self, point, pipeline):
        self._commands.append(lambda cb: vk().vkCmdBindPipeline(cb, int(point), pipeline.handle))

    def _bind_descriptor_set(self, point, layout, index, descriptor_set):
        self._commands.append(lambda cb: vk().vkCmdBindDescriptorSets(cb, int(point), layout.handle, index, 1,
                                                                      [descriptor_set.handle], 0, None))

    def _push_constants(self, layout, stages, offset, data):
        def record(cb: Any) -> None:
            mod = vk()
            mod.vkCmdPushConstants(cb, layout.handle, int(stages), offset, len(data), mod.ffi.new("char[]", data))

        self._commands.append(record)

    def _dispatch_data_graph(self, session):
        fn = self.device.handles.fn
        self._commands.append(lambda cb: fn.vkCmdDispatchDataGraphARM(to_arm("VkCommandBuffer", cb), session.handle,
                                                                      ffi.NULL))

    def _dispatch(self, x, y, z):
        self._commands.append(lambda cb: vk().vkCmdDispatch(cb, x, y, z))

    def _copy_tensor(self, src, dst):
        h = self.device.handles
        self._commands.append(lambda cb: copy_tensor(h, cb, src, dst))

    def _copy_buffer(self, src, dst, src_offset, dst_offset, size):
        self._commands.append(lambda cb: copy_buffer(cb, src, dst, src_offset, dst_offset, size))

    def _barrier(self):
        self._commands.append(memory_barrier)

    def _write_timestamp(self, pool, index):
        if pool not in self._timed:  # each submission starts with the pool's queries reset
            self._timed.append(pool)
            self._commands.insert(0, pool.reset)
        self._commands.append(lambda cb: pool.write(cb, index))

    def _finish(self):
        device: VulkanDevice = self.device
        with device.lock:
            cb = _record(device, self._commands)
        self._commands = []
        return VulkanCommandBuffer(device, cb, self.label)


class VulkanCommandBuffer(Owned, hal.CommandBuffer):
    """A recorded VkCommandBuffer with the VkSubmitInfo of it alone, made once."""

    def __init__(self, device: VulkanDevice, handle: Any, label: str = ""):
        super().__init__(device, label)
        self.handle = handle
        self._owns(functools.partial(_free_command_buffer, device.handles, handle))
        self.submit_info, self._handles = submit_info([handle])
        self.last: _Submission | None = None
        """The latest submission of this command buffer (it must finish before the next)."""

    def _destroy(self):
        if self.last is not None:
            self.last.wait(None)
        with self.device.lock:
            super()._destroy()


class _Submission:
    """One vkQueueSubmit and its VkFence. Every wait on the fence goes through `lock`, so the
    fence can be recycled by the first wait that sees it signalled."""

    def __init__(self, queue: VulkanQueue, fence: Fence):
        self.queue = queue
        self.fence: Fence | None = fence
        self.lock = threading.Lock()
        self.done = False

    def wait(self, timeout: float | None) -> bool:
        with self.lock:
            if self.done:
                return True
            fence = self.fence
            assert fence is not None  # dropped only once done
            if timeout is not None and timeout <= 0:
                if not fence.signalled():
                    return False
            elif not fence.wait_for(timeout):
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


def host_view(resource: hal.Tensor | hal.Buffer) -> np.ndarray | None:
    """A writable numpy view of a resource in mapped memory (typed for a LINEAR tensor, bytes
    for a buffer), or None when the host reaches it only through a staging copy."""
    if isinstance(resource, VulkanTensor):
        linear = resource.description.tiling == hal.TensorTiling.LINEAR
        return resource.array() if linear and resource.mapped else None
    buffer = cast(VulkanBuffer, resource)
    return buffer.array() if buffer.mapped else None


class VulkanPreparedRun(hal.PreparedRun):
    """A prepared run whose inputs and outputs all live in mapped memory: persistent numpy views
    of them, the command buffer's VkSubmitInfo and a fence of its own, made once. A run is one
    numpy copy per input, vkQueueSubmit, vkWaitForFences, vkResetFences and one numpy copy per
    output."""

    device: VulkanDevice

    def __init__(self, device: VulkanDevice, command_buffer, inputs, outputs, label=""):
        super().__init__(device, command_buffer, inputs, outputs, label)
        # every view is there: the device makes a VulkanPreparedRun only then
        self._writes = [(cast(np.ndarray, host_view(r)), isinstance(r, hal.Tensor)) for r in inputs]
        self._reads = [cast(np.ndarray, host_view(r)) for r in outputs]
        self._info = command_buffer.submit_info
        self._fence = Fence(device.handles)
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
            submit(self.device.handles, self._info, self._fence)
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
            if self._in_flight and self.device.handles.device is not None:
                self._finish()
            self._fence.destroy()


class VulkanQueue(hal.Queue):
    """The device's VkQueue. A host read or write first waits for every submission made
    before it, prepared runs' included (the HAL's synchronous transfer rule)."""

    device: VulkanDevice

    def __init__(self, device: VulkanDevice):
        super().__init__(device)
        self._lock = threading.Lock()
        self._pending: list[_Submission] = []
        self._free: list[Fence] = []
        self._runs: list[VulkanPreparedRun] = []

    def _submit(self, command_buffers):
        for cb in command_buffers:
            if cb.last is not None:
                cb.last.wait(None)
        h = self.device.handles
        with self._lock:
            fence = self._free.pop() if self._free else Fence(h)
            sub = _Submission(self, fence)
            try:
                if len(command_buffers) == 1:
                    submit(h, command_buffers[0].submit_info, fence)
                else:
                    info, _handles = submit_info([cb.handle for cb in command_buffers])
                    submit(h, info, fence)
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
        usage = hal.TensorUsage.TRANSFER_SRC | hal.TensorUsage.TRANSFER_DST
        h = self.device.handles
        staging = VulkanTensor(self.device, hal.TensorDescription(d.format, d.shape, usage=usage), None, 0, "staging")
        try:
            if data is not None:
                staging.array()[...] = data
                self._copy_and_wait(lambda cb: copy_tensor(h, cb, staging, tensor))
                return None
            self._copy_and_wait(lambda cb: copy_tensor(h, cb, tensor, staging))
            return np.array(staging.array(), copy=True, order="C")
        finally:
            staging.destroy()

    def _staged_buffer(self, buffer: VulkanBuffer, offset: int, data: np.ndarray | None,
                       size: int) -> np.ndarray | None:
        """Host transfer of `size` bytes at `offset` of a device-local buffer through a
        host-visible staging buffer and vkCmdCopyBuffer (written when `data` is given)."""
        usage = hal.BufferUsage.TRANSFER_SRC | hal.BufferUsage.TRANSFER_DST
        staging = VulkanBuffer(self.device, size, usage, None, 0, "staging")
        try:
            if data is not None:
                staging.array()[...] = data
                self._copy_and_wait(lambda cb: copy_buffer(cb, staging, buffer, 0, offset, size))
                return None
            self._copy_and_wait(lambda cb: copy_buffer(cb, buffer, staging, offset, 0, size))
            return staging.array().copy()
        finally:
            staging.destroy()

    def _copy_and_wait(self, record: Command) -> None:
        """Record one copy into a one-off command buffer, submit it and wait for it."""
        device: VulkanDevice = self.device
        h = device.handles
        cb = fence = None
        try:
            with device.lock:
                cb = _record(device, [record, memory_barrier])
            fence = Fence(h)
            info, _handles = submit_info([cb])
            with self._lock:
                submit(h, info, fence)
            fence.wait_for(None)
        finally:
            if fence is not None:
                fence.destroy()
            if cb is not None:
                with device.lock:
                    _free_command_buffer(h, cb)

    def _write_buffer(self, buffer, data, offset):
        self._finish_earlier_work()
        if not buffer.mapped:
            self._staged_buffer(buffer, offset, data, data.size)
        else:
            buffer.array()[offset : offset + data.size] = data

    def _read_buffer(self, buffer, offset, size):
        self._finish_earlier_work()
        if not buffer.mapped:
            return self._staged_buffer(buffer, offset, None, size)
        return buffer.array()[offset : offset + size].copy()

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
                fence.destroy()
            self._free = []
