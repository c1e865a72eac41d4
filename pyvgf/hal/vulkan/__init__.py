"""The `vulkan` backend of pyvgf.hal: real Vulkan with VK_ARM_tensors and VK_ARM_data_graph,
native or through Arm's ML emulation layer. Nothing here loads libvulkan until an adapter is
requested; without the `vulkan` extra (the `vulkan` and `cffi` packages) asking for one raises
HalError naming the install command."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ...errors import HalError

if TYPE_CHECKING:
    from .backend import request_adapter
    from .doctor import diagnose

INSTALL = "pip install 'pyvgf[vulkan]'"
"""The command that installs what the vulkan backend needs."""

_LAZY = {"request_adapter": "backend", "diagnose": "doctor"}

__all__ = ["INSTALL", "diagnose", "request_adapter", "require"]


def require() -> None:
    """HalError naming the install command unless the `vulkan` extra is installed."""
    for package in ("cffi", "vulkan"):
        try:
            importlib.import_module(package)
        except ImportError as exc:
            raise HalError(f"the vulkan backend needs the `{package}` Python package: {INSTALL}") from exc
        except OSError:  # `vulkan` is there but libvulkan is not: said by whoever uses it
            pass


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require()
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
