"""The `vulkan` backend of pyvgf.hal: real Vulkan with VK_ARM_tensors and VK_ARM_data_graph,
native or through Arm's ML emulation layer. Nothing here loads libvulkan until an adapter is
requested."""

from __future__ import annotations

from typing import Any


def request_adapter(**options: Any):
    """The Vulkan adapter (see pyvgf.hal.vulkan.backend.request_adapter for the options)."""
    from .backend import request_adapter as request

    return request(**options)
