"""`pyvgf doctor`: what the Vulkan backend finds on this machine, and what is missing."""

from __future__ import annotations

from typing import cast

from ...errors import HalError
from . import _ffi, layers
from .instance import (
    DEVICE_LOCAL,
    HOST_CACHED,
    HOST_COHERENT,
    HOST_VISIBLE,
    VulkanInstance,
    native_arm_extensions,
)

_MEMORY_FLAGS = [(DEVICE_LOCAL, "DEVICE_LOCAL"), (HOST_VISIBLE, "HOST_VISIBLE"), (HOST_COHERENT, "HOST_COHERENT"),
                 (HOST_CACHED, "HOST_CACHED")]


def report() -> str:
    """A plain-text report: loader, emulation layer, each device with its driver, whether
    the ARM extensions are native or emulated, what it lacks, and which device pyvgf uses."""
    return diagnose()[0]


def diagnose() -> tuple[str, bool]:
    """(the report, whether pyvgf can run on Vulkan here)."""
    lines = ["Vulkan backend"]
    try:
        from ._vk import vk

        mod = vk()
        version = mod.vkEnumerateInstanceVersion()
        major, minor, patch = version >> 22, (version >> 12) & 0x3FF, version & 0xFFF
        lines.append(f"  loader: libvulkan, instance version {major}.{minor}.{patch}")
    except HalError as exc:
        lines.append(f"  not usable: {exc}")
        return "\n".join(lines), False
    el = layers.find_emulation_layer()
    if el is None:
        lines.append("  emulation layer: not installed (pip install ai-ml-emulation-layer-for-vulkan)")
    else:
        lines.append(f"  emulation layer: ai-ml-emulation-layer-for-vulkan {el.version} at {el.deploy}")
    try:
        native = native_arm_extensions()
        instance = VulkanInstance()
    except HalError as exc:
        lines.append(f"  not usable: {exc}")
        return "\n".join(lines), False
    try:
        if instance.layers:
            lines.append(f"  layers: {' > '.join(instance.layers)} (application side first)")
        reports = instance.reports()
        operations = [
            instance.data_graph_operations(pd) if r.usable else []
            for r, pd in zip(reports, instance.physical_devices())
        ]
    except HalError as exc:
        lines.append(f"  not usable: {exc}")
        return "\n".join(lines), False
    finally:
        instance.destroy()
    for r, ops in zip(reports, operations):
        lines.append(f"  device {r.index}: {r.name} ({r.device_type}), Vulkan {r.api_version}, driver {r.driver}")
        own = native[r.index] if r.index < len(native) else frozenset()
        for ext in (_ffi.EXT_TENSORS, _ffi.EXT_DATA_GRAPH):
            if ext in own:
                how = "native"
            elif ext in r.extensions:
                how = "emulated (Arm ML emulation layer)"
            else:
                how = "missing"
            lines.append(f"    {ext}: {how}")
        if ops:
            listed = ", ".join(f"{name} v{version} (queue family {family})" for family, name, version in ops)
            lines.append(f"    data graph operations: {listed}")
        replicated = "yes" if _ffi.EXT_REPLICATED_COMPOSITES in r.extensions else "no"
        lines.append(f"    {_ffi.EXT_REPLICATED_COMPOSITES}: {replicated}")
        lines.append("    status: ready" if r.usable else f"    status: lacks {r.missing_text()}")
    from .backend import VulkanDevice, request_adapter

    try:
        adapter = request_adapter()
    except HalError as exc:
        lines.append(f"  pyvgf cannot use Vulkan here: {exc}")
        return "\n".join(lines), False
    try:
        device = cast(VulkanDevice, adapter.request_device())
    except HalError as exc:
        adapter.destroy()
        lines.append(f"  pyvgf cannot use Vulkan here: {exc}")
        return "\n".join(lines), False
    mode = "emulated" if adapter.uses_emulation else "native"
    lines.append(f"  pyvgf uses device {adapter.report.index} ({adapter.report.name}), ARM ML extensions {mode}")
    for i, (flags, heap) in enumerate(device.memory_types):
        names = "|".join(name for bit, name in _MEMORY_FLAGS if flags & bit) or "-"
        lines.append(f"    memory type {i}: {names} (heap {heap})")
    lines.append("    model resources: " + ("device-local, inputs and outputs through host-visible staging copies"
                                          if device.prefers_device_local
                                          else "host-visible, no staging (unified memory)"))
    device.destroy()
    adapter.destroy()
    return "\n".join(lines), True
