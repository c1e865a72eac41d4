"""Timestamp queries: a VkQueryPool of VK_QUERY_TYPE_TIMESTAMP queries, written into command
buffers and read back as seconds on the device's clock."""

from __future__ import annotations

from ._vk import call, vk
from .context import VulkanContext


def timestamp_clock(ctx: VulkanContext) -> tuple[float, int] | None:
    """(seconds per tick, valid bits) of the device queue's timestamps, or None when its queue
    family has none (timestampValidBits 0)."""
    mod = vk()
    family = mod.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical_device)[ctx.queue_family]
    bits = int(family.timestampValidBits)
    if not bits:
        return None
    period_ns = float(mod.vkGetPhysicalDeviceProperties(ctx.physical_device).limits.timestampPeriod)
    return period_ns * 1e-9, bits


class TimestampPool:
    """`count` timestamp queries; `reset` and `write` record into a command buffer."""

    def __init__(self, ctx: VulkanContext, count: int):
        mod = vk()
        clock = timestamp_clock(ctx)
        if clock is None:
            raise ValueError("the queue family has no timestamps")
        self.ctx = ctx
        self.count = count
        self._period, bits = clock
        self._mask = (1 << bits) - 1
        info = mod.VkQueryPoolCreateInfo(queryType=mod.VK_QUERY_TYPE_TIMESTAMP, queryCount=count)
        self.handle = call("vkCreateQueryPool", mod.vkCreateQueryPool, ctx.device, info, None)
        ctx.live.add("VkQueryPool", 1)
        self._data = mod.ffi.new("uint64_t[]", 2 * count)

    def reset(self, command_buffer: object) -> None:
        vk().vkCmdResetQueryPool(command_buffer, self.handle, 0, self.count)

    def write(self, command_buffer: object, index: int) -> None:
        mod = vk()
        mod.vkCmdWriteTimestamp(command_buffer, mod.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.handle, index)

    def results(self) -> list[float | None]:
        """Seconds of each query, None where it is unavailable (never written)."""
        mod = vk()
        flags = mod.VK_QUERY_RESULT_64_BIT | mod.VK_QUERY_RESULT_WITH_AVAILABILITY_BIT
        result = mod.lib.vkGetQueryPoolResults(self.ctx.device, self.handle, 0, self.count,
                                               mod.ffi.sizeof(self._data), self._data, 16, flags)
        if result not in (mod.VK_SUCCESS, mod.VK_NOT_READY):
            raise RuntimeError(f"vkGetQueryPoolResults failed ({result})")
        data = self._data
        return [(data[2 * i] & self._mask) * self._period if data[2 * i + 1] else None for i in range(self.count)]

    def destroy(self) -> None:
        if self.handle is not None and self.ctx.device is not None:
            vk().vkDestroyQueryPool(self.ctx.device, self.handle, None)
            self.handle = None
            self.ctx.live.add("VkQueryPool", -1)
