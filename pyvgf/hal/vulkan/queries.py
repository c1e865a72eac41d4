"""Timestamp queries: a VkQueryPool of VK_QUERY_TYPE_TIMESTAMP queries, written into command
buffers and read back as seconds on the device's clock."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .. import _classes as hal
from ._vk import call, vk
from .handles import DeviceHandles, Owned

if TYPE_CHECKING:
    from .backend import VulkanDevice


def timestamp_clock(device: VulkanDevice) -> tuple[float, int] | None:
    """(seconds per tick, valid bits) of the device queue's timestamps, or None when its queue
    family has none (timestampValidBits 0)."""
    mod = vk()
    family = mod.vkGetPhysicalDeviceQueueFamilyProperties(device.physical_device)[device.queue_family]
    bits = int(family.timestampValidBits)
    if not bits:
        return None
    period_ns = float(mod.vkGetPhysicalDeviceProperties(device.physical_device).limits.timestampPeriod)
    return period_ns * 1e-9, bits


def _release(h: DeviceHandles, pool: Any) -> None:
    vk().vkDestroyQueryPool(h.device, pool, None)
    h.live.add("VkQueryPool", -1)


class VulkanQueryPool(Owned, hal.QueryPool):
    """`count` timestamp queries; `reset` and `write` record into a VkCommandBuffer."""

    def __init__(self, device: VulkanDevice, count: int, label: str = ""):
        super().__init__(device, count, label)
        mod = vk()
        clock = timestamp_clock(device)
        if clock is None:
            raise ValueError("the queue family has no timestamps")
        self._period, bits = clock
        self._mask = (1 << bits) - 1
        h = device.handles
        info = mod.VkQueryPoolCreateInfo(queryType=mod.VK_QUERY_TYPE_TIMESTAMP, queryCount=count)
        self.handle = call("vkCreateQueryPool", mod.vkCreateQueryPool, h.device, info, None)
        h.live.add("VkQueryPool", 1)
        self._owns(functools.partial(_release, h, self.handle))
        self._data = mod.ffi.new("uint64_t[]", 2 * count)

    def reset(self, command_buffer: Any) -> None:
        vk().vkCmdResetQueryPool(command_buffer, self.handle, 0, self.count)

    def write(self, command_buffer: Any, index: int) -> None:
        mod = vk()
        mod.vkCmdWriteTimestamp(command_buffer, mod.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.handle, index)

    def _results(self) -> list[float | None]:
        """Seconds of each query, None where it is unavailable (never written)."""
        mod = vk()
        flags = mod.VK_QUERY_RESULT_64_BIT | mod.VK_QUERY_RESULT_WITH_AVAILABILITY_BIT
        result = mod.lib.vkGetQueryPoolResults(self.device.handles.device, self.handle, 0, self.count,
                                               mod.ffi.sizeof(self._data), self._data, 16, flags)
        if result not in (mod.VK_SUCCESS, mod.VK_NOT_READY):
            raise RuntimeError(f"vkGetQueryPoolResults failed ({result})")
        data = self._data
        return [(data[2 * i] & self._mask) * self._period if data[2 * i + 1] else None for i in range(self.count)]
