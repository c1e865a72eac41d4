"""Lazy access to the `vulkan` package, Vulkan result checks and cffi struct lifetimes.

`import vulkan` loads libvulkan.so.1 at once and raises OSError without it, so nothing in
pyvgf imports it before a Vulkan object is asked for.
"""

from __future__ import annotations

import functools
import weakref
from types import ModuleType
from typing import Any

from ...errors import HalError
from . import INSTALL
from ._ffi import ffi


@functools.cache
def vk() -> ModuleType:
    """The `vulkan` package, imported on first use; HalError if it or libvulkan is missing."""
    try:
        import vulkan
    except ImportError as exc:
        raise HalError(f"the vulkan backend needs the `vulkan` Python package: {INSTALL}") from exc
    except OSError as exc:
        raise HalError(f"the Vulkan loader libvulkan.so.1 cannot be loaded: {exc}") from exc
    return vulkan


@functools.cache
def _result_names() -> dict[int, str]:
    mod = vk()
    names: dict[int, str] = {}
    for name in dir(mod):
        if name.startswith(("VK_ERROR_", "VK_SUCCESS", "VK_NOT_READY", "VK_TIMEOUT", "VK_INCOMPLETE")):
            value = getattr(mod, name)
            if isinstance(value, int):
                names.setdefault(value, name)
    return names


def result_name(code: int) -> str:
    return _result_names().get(code, f"VkResult {code}")


def check(result: int, call: str) -> None:
    """Raise HalError naming the call when a Vulkan command returned an error code."""
    if result < 0:
        raise HalError(f"{call} failed: {result_name(result)} ({result})")


def call(what: str, fn: Any, *args: Any) -> Any:
    """Call a `vulkan` package wrapper, turning its VkError exceptions into HalError."""
    mod = vk()
    try:
        return fn(*args)
    except (mod.VkError, mod.VkException) as exc:
        raise HalError(f"{what} failed: {type(exc).__name__}") from exc


_alive: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def new_struct(ctype: str, **fields: Any) -> Any:
    """A pointer to a new ARM struct (the ARM FFI); every cdata given as a field value stays
    alive as long as the struct does, so pointers inside it never dangle."""
    p = ffi.new(ctype + "*")
    keep = []
    for name, value in fields.items():
        if isinstance(value, ffi.CData):
            keep.append(value)
        setattr(p, name, value)
    _alive[p] = keep
    return p


def new_array(ctype: str, items: list) -> Any:
    """A C array of `ctype`. For a struct type the items are pointers made by new_struct:
    the structs are copied in, and the items (with what they point to) stay alive with the
    array."""
    if ffi.typeof(ctype).kind == "struct":
        arr = ffi.new(f"{ctype}[]", [item[0] for item in items])
    else:
        arr = ffi.new(f"{ctype}[]", items)
    _alive[arr] = list(items)
    return arr


def keep_alive(owner: Any, *objects: Any) -> None:
    """Keep `objects` alive as long as the cdata `owner` (e.g. a `vulkan` package struct)."""
    _alive.setdefault(owner, []).extend(objects)


def to_arm(ctype: str, handle: Any) -> Any:
    """A `vulkan`-package handle as the ARM FFI's handle type."""
    return ffi.cast(ctype, handle)


def to_vk(ctype: str, handle: Any) -> Any:
    """An ARM-FFI handle as the `vulkan` package's handle type."""
    return vk().ffi.cast(ctype, handle)
