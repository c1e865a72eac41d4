"""The Vulkan instance (layers, validation messages), physical device reports and choice, and
what device creation and memory placement need: the feature chain, the ARM device entry points,
the ranking of memory types. The HAL classes that use them are in backend.py and beside it.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import HalError
from . import _ffi, layers
from ._ffi import ffi
from ._vk import call, check, new_struct, to_arm, vk

API_VERSION = (1, 3, 0)

REQUIRED_FEATURES = (
    "tensors",
    "shaderTensorAccess",
    "dataGraph",
    "synchronization2",
    "maintenance4",
    "vulkanMemoryModel",
    "shaderInt8",
    "shaderInt16",
    "shaderInt64",
    "storageBuffer8BitAccess",
)
"""Features every pyvgf device enables; a device without one of them is refused."""

OPTIONAL_EXTENSIONS = (
    "VK_KHR_maintenance5",
    "VK_KHR_deferred_host_operations",
    _ffi.EXT_REPLICATED_COMPOSITES,
)
"""Enabled when the device has them (VK_ARM_data_graph lists maintenance5 and deferred host
operations as dependencies; the emulation layer works without them on older drivers)."""

MessageSink = Callable[[int, int, str, str], None]
"""(severity bits, type bits, message id name, message text) of a debug-utils message."""


@dataclass
class DeviceReport:
    """What one physical device offers pyvgf."""

    index: int
    name: str
    device_type: str
    api_version: str
    driver: str
    extensions: set[str] = field(repr=False)
    native_arm: set[str] = field(default_factory=set)
    """The ARM extensions the driver itself has (without the emulation layer)."""
    missing_features: list[str] = field(default_factory=list)
    missing_extensions: list[str] = field(default_factory=list)
    device_type_code: int = 0

    @property
    def usable(self) -> bool:
        return not self.missing_features and not self.missing_extensions

    def missing_text(self) -> str:
        """What the device lacks, in words (with a hint when the ARM extensions are absent)."""
        what = []
        if self.missing_extensions:
            what.append("extensions " + ", ".join(self.missing_extensions))
        if self.missing_features:
            what.append("features " + ", ".join(self.missing_features))
        text = " and ".join(what) or "nothing"
        if _ffi.EXT_TENSORS in self.missing_extensions:
            text += " (install Arm's emulation layer: pip install ai-ml-emulation-layer-for-vulkan)"
        return text


_TYPE_NAMES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
_TYPE_RANK = {2: 0, 1: 1, 3: 2, 4: 3, 0: 4}


def _version(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def _make_version(major: int, minor: int, patch: int) -> int:
    return (major << 22) | (minor << 12) | patch


@functools.cache
def native_arm_extensions() -> tuple[frozenset[str], ...]:
    """Per physical device, the ARM ML extensions its driver has with no layer enabled (layers
    that the environment enables, as the scenario_runner recipe does, are held off)."""
    mod = vk()
    app = mod.VkApplicationInfo(
        pApplicationName="pyvgf-probe", apiVersion=_make_version(*API_VERSION)
    )
    with layers.without_environment_layers():
        inst = call("vkCreateInstance", mod.vkCreateInstance, mod.VkInstanceCreateInfo(pApplicationInfo=app), None)
    try:
        out = []
        for pd in mod.vkEnumeratePhysicalDevices(inst):
            names = {e.extensionName for e in mod.vkEnumerateDeviceExtensionProperties(pd, None)}
            out.append(frozenset(names & {_ffi.EXT_TENSORS, _ffi.EXT_DATA_GRAPH}))
        return tuple(out)
    finally:
        mod.vkDestroyInstance(inst, None)


class LiveCounts(Counter):
    """Live Vulkan objects by type; `add` is safe from several threads (runs in flight create
    and destroy objects concurrently)."""

    def __init__(self, *args: Any, **kwargs: int) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()

    def add(self, kind: str, delta: int) -> None:
        with self._lock:
            self[kind] += delta


_sinks: dict[int, MessageSink] = {}
_sink_ids = itertools.count(1)
_log = logging.getLogger("pyvgf.vulkan")


def _log_message(severity: int, types: int, msg_id: str, text: str) -> None:
    _log.warning("%s", text)


def _route_message(severity, types, data, user_data):
    """The one debug-utils callback of the process (the `vulkan` package keeps a single Python
    callback per callback type); `pUserData` says which instance's sink gets the message."""
    mod = vk()
    sink = _sinks.get(int(mod.ffi.cast("uintptr_t", user_data)))
    if sink is not None:
        msg_id = mod.ffi.string(data.pMessageIdName).decode() if data.pMessageIdName else ""
        text = mod.ffi.string(data.pMessage).decode(errors="replace") if data.pMessage else ""
        sink(int(severity), int(types), msg_id, text)
    return 0


class _FeatureChain:
    """The VkPhysicalDeviceFeatures2 chain pyvgf queries and enables."""

    def __init__(self, replicated: bool):
        mod = vk()
        self.tensor = new_struct(
            "VkPhysicalDeviceTensorFeaturesARM", sType=_ffi.STRUCTURE_TYPE_PHYSICAL_DEVICE_TENSOR_FEATURES_ARM
        )
        self.graph = new_struct(
            "VkPhysicalDeviceDataGraphFeaturesARM",
            sType=_ffi.STRUCTURE_TYPE_PHYSICAL_DEVICE_DATA_GRAPH_FEATURES_ARM,
            pNext=self.tensor,
        )
        head: Any = self.graph
        self.replicated = None
        if replicated:
            self.replicated = new_struct(
                "VkPhysicalDeviceShaderReplicatedCompositesFeaturesEXT",
                sType=_ffi.STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_REPLICATED_COMPOSITES_FEATURES_EXT,
                pNext=self.graph,
            )
            head = self.replicated
        self.v13 = mod.VkPhysicalDeviceVulkan13Features(pNext=head)
        self.v12 = mod.VkPhysicalDeviceVulkan12Features(pNext=mod.ffi.addressof(self.v13))
        self.features2 = mod.VkPhysicalDeviceFeatures2(pNext=mod.ffi.addressof(self.v12))
        self._owners = (self.v13, self.v12)

    def _fields(self) -> dict[str, tuple[Any, str]]:
        return {
            "tensors": (self.tensor, "tensors"),
            "shaderTensorAccess": (self.tensor, "shaderTensorAccess"),
            "dataGraph": (self.graph, "dataGraph"),
            "synchronization2": (self.v13, "synchronization2"),
            "maintenance4": (self.v13, "maintenance4"),
            "vulkanMemoryModel": (self.v12, "vulkanMemoryModel"),
            "shaderInt8": (self.v12, "shaderInt8"),
            "storageBuffer8BitAccess": (self.v12, "storageBuffer8BitAccess"),
            "shaderInt16": (self.features2.features, "shaderInt16"),
            "shaderInt64": (self.features2.features, "shaderInt64"),
        }

    def missing(self) -> list[str]:
        return [name for name, (s, f) in self._fields().items() if not getattr(s, f)]

    def request_required(self) -> None:
        """Set every feature pyvgf needs (on a fresh, zeroed chain used to create a device)."""
        for struct, name in self._fields().values():
            setattr(struct, name, 1)
        if self.replicated is not None:
            self.replicated.shaderReplicatedComposites = 1


def pick_device(reports: list[DeviceReport], device_index: int | None) -> int:
    """The index of the device to use: `device_index`, or the best usable one (discrete GPU,
    integrated, virtual, CPU); HalError naming what it lacks when it is not usable."""
    if device_index is not None:
        if not 0 <= device_index < len(reports):
            raise HalError(f"Vulkan device index {device_index} out of range 0..{len(reports) - 1}")
        index = device_index
    else:
        index = min(
            range(len(reports)),
            key=lambda i: (not reports[i].usable, _TYPE_RANK.get(reports[i].device_type_code, 9), i),
        )
    report = reports[index]
    if not report.usable:
        raise HalError(f"Vulkan device {index} ({report.name}) lacks {report.missing_text()}")
    return index


class VulkanInstance:
    """A VkInstance with the emulation layers stacked when needed, and its physical devices.

    emulation: "auto" (the emulation layer only when no driver has the ARM extensions),
    "always" or "never". validation: also enable VK_LAYER_KHRONOS_validation (above the
    emulation layers) and send its messages to `on_message`.
    """

    def __init__(
        self,
        *,
        emulation: str = "auto",
        validation: bool = False,
        on_message: MessageSink | None = None,
        live: LiveCounts | None = None,
    ):
        if emulation not in ("auto", "always", "never"):
            raise HalError(f"emulation must be 'auto', 'always' or 'never', not {emulation!r}")
        self.live = LiveCounts() if live is None else live
        self.handle = None
        self._users = 1
        self._messenger = None
        self._on_message = on_message
        self.uses_emulation = False
        self.emulation_layer: layers.EmulationLayer | None = None
        self.layers: list[str] = []
        try:
            self._create(emulation, validation)
        except BaseException:
            self.destroy()
            raise

    def _create(self, emulation: str, validation: bool) -> None:
        mod = vk()
        enabled: list[str] = []
        folders = []
        native = native_arm_extensions()
        full = frozenset({_ffi.EXT_TENSORS, _ffi.EXT_DATA_GRAPH})
        if emulation == "always" or (emulation == "auto" and not any(n == full for n in native)):
            el = layers.find_emulation_layer()
            if el is None:
                if emulation == "always":
                    raise HalError(
                        "Arm's ML emulation layer is not installed: pip install ai-ml-emulation-layer-for-vulkan"
                    )
            else:
                folders += layers.manifest_folders(el)
                enabled += list(layers.EMULATION_LAYERS)
                self.uses_emulation = True
                self.emulation_layer = el
        if validation:
            enabled.insert(0, layers.VALIDATION_LAYER)
        extensions = []
        with layers.layer_search_path(folders):
            available = {p.layerName for p in mod.vkEnumerateInstanceLayerProperties()}
            missing = [name for name in enabled if name not in available]
            if missing:
                raise HalError(f"Vulkan layers not found by the loader: {', '.join(missing)}")
            if validation or self._on_message is not None:
                extensions.append("VK_EXT_debug_utils")
            if validation:
                extensions.append("VK_EXT_validation_features")
            app = mod.VkApplicationInfo(
                pApplicationName="pyvgf",
                pEngineName="pyvgf",
                apiVersion=_make_version(*API_VERSION),
            )
            features = None
            if validation:
                # Validation layers that predate the ARM extensions (Debian 12: 1.3.239) crash
                # on them unless two parts are off: handle wrapping (the ARM commands they do
                # not know would pass wrapped handles down to the emulation layers) and the
                # core state tracker (it dereferences descriptor data of unknown types).
                # Parameter, object-lifetime and thread-safety checks stay on.
                disabled = [
                    mod.VK_VALIDATION_FEATURE_DISABLE_UNIQUE_HANDLES_EXT,
                    mod.VK_VALIDATION_FEATURE_DISABLE_CORE_CHECKS_EXT,
                ]
                features = mod.VkValidationFeaturesEXT(
                    disabledValidationFeatureCount=len(disabled), pDisabledValidationFeatures=disabled
                )
            info = mod.VkInstanceCreateInfo(
                pNext=features,
                pApplicationInfo=app,
                enabledLayerCount=len(enabled),
                ppEnabledLayerNames=enabled or None,
                enabledExtensionCount=len(extensions),
                ppEnabledExtensionNames=extensions or None,
            )
            self.handle = call("vkCreateInstance", mod.vkCreateInstance, info, None)
        self.live.add("VkInstance", 1)
        self.layers = enabled
        if extensions:
            self._create_messenger()

    def _create_messenger(self) -> None:
        mod = vk()
        key = next(_sink_ids)
        _sinks[key] = self._on_message or _log_message
        self._sink_key = key
        info = mod.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=mod.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
            | mod.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            messageType=mod.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
            | mod.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
            | mod.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            pfnUserCallback=_route_message,
            pUserData=mod.ffi.cast("void*", key),
        )
        create = mod.vkGetInstanceProcAddr(self.handle, "vkCreateDebugUtilsMessengerEXT")
        self._messenger = create(self.handle, info, None)
        self.live.add("VkDebugUtilsMessengerEXT", 1)

    def physical_devices(self) -> list[Any]:
        devices = vk().vkEnumeratePhysicalDevices(self.handle)
        if not devices:
            raise HalError("the Vulkan loader found no physical device (no driver installed?)")
        return list(devices)

    def data_graph_operations(self, pd: Any) -> list[tuple[int, str, int]]:
        """(queue family, operation set name, version) of every data graph operation the
        device's queue families offer (vkGetPhysicalDeviceQueueFamilyDataGraphPropertiesARM)."""
        mod = vk()
        name = _ffi.INSTANCE_FUNCTIONS[0]
        ptr = mod.lib.vkGetInstanceProcAddr(self.handle, name.encode())
        if ptr == mod.ffi.NULL:
            return []
        query = ffi.cast(f"PFN_{name}", ptr)
        arm_pd = to_arm("VkPhysicalDevice", pd)
        out = []
        for family in range(len(mod.vkGetPhysicalDeviceQueueFamilyProperties(pd))):
            count = ffi.new("uint32_t*")
            check(query(arm_pd, family, count, ffi.NULL), name)
            props = ffi.new("VkQueueFamilyDataGraphPropertiesARM[]", count[0])
            for i in range(count[0]):
                props[i].sType = _ffi.STRUCTURE_TYPE_QUEUE_FAMILY_DATA_GRAPH_PROPERTIES_ARM
            check(query(arm_pd, family, count, props), name)
            for i in range(count[0]):
                op = props[i].operation
                out.append((family, ffi.string(op.name).decode(errors="replace"), int(op.version)))
        return out

    def reports(self) -> list[DeviceReport]:
        """What each physical device offers, in enumeration order."""
        return [self.describe(i, pd) for i, pd in enumerate(self.physical_devices())]

    def describe(self, index: int, pd: Any) -> DeviceReport:
        """What physical device `pd` offers: name, driver, ARM extensions, missing features."""
        mod = vk()
        driver = mod.VkPhysicalDeviceDriverProperties()
        props2 = mod.VkPhysicalDeviceProperties2(pNext=mod.ffi.addressof(driver))
        mod.vkGetPhysicalDeviceProperties2(pd, props2)
        p = props2.properties
        exts = {e.extensionName for e in mod.vkEnumerateDeviceExtensionProperties(pd, None)}
        chain = _FeatureChain(_ffi.EXT_REPLICATED_COMPOSITES in exts)
        missing_ext = [e for e in (_ffi.EXT_TENSORS, _ffi.EXT_DATA_GRAPH) if e not in exts]
        if not missing_ext:
            mod.vkGetPhysicalDeviceFeatures2(pd, chain.features2)
            missing_feat = chain.missing()
        else:
            missing_feat = []
        if p.apiVersion < _make_version(*API_VERSION):
            missing_ext.insert(0, "Vulkan 1.3")
        native = native_arm_extensions()
        return DeviceReport(
            index=index,
            name=mod.ffi.string(p.deviceName).decode(),
            device_type=_TYPE_NAMES.get(p.deviceType, str(p.deviceType)),
            api_version=_version(p.apiVersion),
            driver=f"{mod.ffi.string(driver.driverName).decode()} {mod.ffi.string(driver.driverInfo).decode()}".strip(),
            extensions=exts,
            native_arm=set(native[index]) if index < len(native) else set(),
            missing_features=missing_feat,
            missing_extensions=missing_ext,
            device_type_code=p.deviceType,
        )

    @property
    def users(self) -> int:
        """How many users (adapters, devices, the process's share) hold the instance."""
        return self._users

    def acquire(self) -> VulkanInstance:
        """One more user (an adapter, a device): destroy() takes effect after the last one."""
        if self.handle is None:
            raise HalError("the Vulkan instance was destroyed")
        self._users += 1
        return self

    def release(self) -> None:
        """One user fewer; the last one destroys the instance."""
        self._users -= 1
        if self._users <= 0:
            self.destroy()

    def destroy(self) -> None:
        """Destroy the messenger and instance now (idempotent)."""
        mod = vk()
        if self.handle is None:
            return
        if self._messenger is not None:
            destroy = mod.vkGetInstanceProcAddr(self.handle, "vkDestroyDebugUtilsMessengerEXT")
            destroy(self.handle, self._messenger, None)
            self._messenger = None
            _sinks.pop(self._sink_key, None)
            self.live.add("VkDebugUtilsMessengerEXT", -1)
        mod.vkDestroyInstance(self.handle, None)
        self.handle = None
        self.live.add("VkInstance", -1)


_shared: dict[tuple[str, bool], VulkanInstance] = {}
_shared_lock = threading.Lock()


def shared_instance(*, emulation: str = "auto", validation: bool = False) -> VulkanInstance:
    """The process's VulkanInstance for these options, acquired for one more user.

    It is made at its first use and kept until the process exits, whatever its users do: some
    drivers refuse a process's later vkCreateInstance calls after a few dozen (NVIDIA 580
    refuses about the 30th, even when every earlier instance was destroyed), so every adapter
    of a process draws on one instance per option set, as an application keeps one instance.
    A forked child makes its own: the parent's handles are not valid there.
    """
    key = (emulation, validation)
    with _shared_lock:
        instance = _shared.get(key)
        if instance is None or instance.handle is None:
            instance = _shared[key] = VulkanInstance(emulation=emulation, validation=validation)
        return instance.acquire()


def _release_shared() -> None:
    """At exit: the process lets go of its instances (each is destroyed with its last user)."""
    for instance in _shared.values():
        instance.release()
    _shared.clear()


def _forget_shared() -> None:
    """In a forked child: the parent's instances are not the child's to use or destroy."""
    global _shared_lock
    _shared.clear()
    _shared_lock = threading.Lock()


atexit.register(_release_shared)
os.register_at_fork(after_in_child=_forget_shared)


DEVICE_LOCAL = 0x1
HOST_VISIBLE = 0x2
HOST_COHERENT = 0x4
HOST_CACHED = 0x8


def rank_memory_types(memory_types: list[tuple[int, int]], type_bits: int, *, host_visible: bool) -> list[int]:
    """Indices of the memory types (propertyFlags, heapIndex) allowed by `type_bits`, best first.

    Host-visible (the host maps it): HOST_VISIBLE|HOST_COHERENT only; HOST_CACHED first, because
    the host reads uncached (write-combined) memory very slowly; among cached types device-local
    first (unified memory), among uncached ones system memory first (host reads of a discrete
    GPU's BAR cross PCIe). Not host-visible (the device's own): DEVICE_LOCAL first, and
    among those the types the host cannot map, so that a discrete GPU's small or write-combined
    host-visible window (BAR) stays free.
    """
    candidates = [i for i in range(len(memory_types)) if type_bits >> i & 1]
    if host_visible:
        want = HOST_VISIBLE | HOST_COHERENT
        candidates = [i for i in candidates if memory_types[i][0] & want == want]
        def host_rank(i: int) -> tuple[bool, bool]:
            cached, local = bool(memory_types[i][0] & HOST_CACHED), bool(memory_types[i][0] & DEVICE_LOCAL)
            return not cached, local != cached

        return sorted(candidates, key=host_rank)
    return sorted(candidates, key=lambda i: (not memory_types[i][0] & DEVICE_LOCAL,
                                             bool(memory_types[i][0] & HOST_VISIBLE)))


def is_unified_memory(memory_types: list[tuple[int, int]], type_bits: int) -> bool:
    """True when the best host-visible type is also DEVICE_LOCAL and HOST_CACHED (a CPU device
    such as lavapipe, or an integrated GPU): resources then live in mapped memory the device
    works on at full speed and the host reads quickly. False on a discrete GPU, whose resources
    belong in device-local memory with host transfers through staging copies."""
    host = rank_memory_types(memory_types, type_bits, host_visible=True)
    both = DEVICE_LOCAL | HOST_CACHED
    return bool(host) and memory_types[host[0]][0] & both == both


class DeviceFunctions:
    """The ARM device commands, as ARM-FFI function pointers."""

    def __init__(self, table: dict[str, Any]):
        self.__dict__.update(table)


def _load_device_functions(device: Any) -> DeviceFunctions:
    mod = vk()
    table = {}
    missing = []
    for name in _ffi.DEVICE_FUNCTIONS:
        ptr = mod.lib.vkGetDeviceProcAddr(device, name.encode())
        if ptr == mod.ffi.NULL:
            missing.append(name)
            continue
        table[name] = ffi.cast(f"PFN_{name}", ptr)
    if missing:
        raise HalError(f"the Vulkan device returns no entry point for {', '.join(missing)}")
    return DeviceFunctions(table)
