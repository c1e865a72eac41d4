"""What a VulkanDevice's finalizer needs: the device's raw handles and, per HAL object, how to
release its Vulkan objects, held apart from every HAL object so that a device dropped without
destroy() can still be collected and cleaned up (weakref.finalize)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._vk import vk
from .instance import LiveCounts, VulkanInstance

Release = Callable[[], None]
"""Destroys one HAL object's Vulkan objects; refers to handles only, never to a HAL object."""


class DeviceHandles:
    """The VkDevice (with its ARM-FFI twin `arm` and ARM entry points `fn`), its VkQueue and
    VkCommandPool, the live-object counts, the instance it was made on, and `owned`: the
    release of every HAL object's Vulkan objects (and of every VkFence the queue and prepared
    runs keep) by the owner's id, in creation order."""

    def __init__(self, instance: VulkanInstance, live: LiveCounts):
        self.instance: VulkanInstance | None = instance
        self.live = live
        self.device: Any = None
        self.arm: Any = None
        self.fn: Any = None  # an instance.DeviceFunctions: untyped ARM-FFI function pointers
        self.queue: Any = None
        self.pool: Any = None
        self.owned: dict[int, Release] = {}

    def teardown(self) -> None:
        """Release what is left in `owned`, newest first, then destroy the command pool and the
        device and release the instance (idempotent)."""
        mod = vk()
        if self.device is not None:
            mod.vkDeviceWaitIdle(self.device)
            for release in reversed(list(self.owned.values())):
                release()
            self.owned.clear()
            if self.pool is not None:
                mod.vkDestroyCommandPool(self.device, self.pool, None)
                self.pool = None
                self.live.add("VkCommandPool", -1)
            mod.vkDestroyDevice(self.device, None)
            self.device = None
            self.live.add("VkDevice", -1)
        if self.instance is not None:
            self.instance.release()
            self.instance = None


class Owned:
    """Mixin of the vulkan HAL classes: `_owns(release)` once the object's Vulkan objects exist
    (an object whose construction failed, and which its device still lists, releases nothing);
    `destroy()` runs the release."""

    device: Any

    def _owns(self, release: Release) -> None:
        self.device.handles.owned[id(self)] = release

    def _destroy(self) -> None:
        release = self.device.handles.owned.pop(id(self), None)
        if release is not None:
            release()
