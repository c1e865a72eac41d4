"""Process-wide Python stand-ins for compute shader modules (the analogue of the scenario
runner's shader substitution), looked up by VGF module name."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..errors import HalError
from ._classes import PythonShader

_SHADERS: dict[str, PythonShader] = {}
_LOCK = threading.Lock()


def register_shader(name: str, fn: PythonShader) -> None:
    """Run `fn(resources, workgroups)` wherever the cpu backend meets compute module `name`."""
    if not callable(fn):
        raise HalError(f"shader stand-in for module {name!r} is not callable")
    with _LOCK:
        _SHADERS[name] = fn


def unregister_shader(name: str) -> None:
    """Forget the stand-in registered for module `name` (no error if there is none)."""
    with _LOCK:
        _SHADERS.pop(name, None)


def find_shader(name: str, overrides: Mapping[str, PythonShader]) -> PythonShader:
    """The stand-in for module `name`: from `overrides` first, then the registry."""
    fn = overrides.get(name) or _SHADERS.get(name)
    if fn is None:
        raise HalError(
            f"compute module {name!r} has no Python implementation on the cpu backend: register "
            f"one with pyvgf.register_shader({name!r}, fn) (or pass shaders={{{name!r}: fn}} to "
            f"pyvgf.load), or run the model with backend='vulkan'"
        )
    return fn
