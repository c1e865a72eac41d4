"""pyvgf: run VGF models (Arm ML SDK for Vulkan) from Python.

`import pyvgf` loads only the exceptions; the runtime (numpy, the container reader, the
executor) loads on first use of `load`, `Model` or a subpackage, so that tools which merely
import pyvgf stay fast to start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    HalError,
    ModelInputError,
    ProgramError,
    ProgramFormatError,
    ScenarioError,
    SpirvError,
    TosaError,
    VGFError,
    VGFFormatError,
)

if TYPE_CHECKING:
    from .fast import set_num_threads
    from .hal.shaders import register_shader, unregister_shader
    from .runtime import Model, TensorInfo, load

__version__ = "0.1.0.dev0"

_LAZY = {
    "Model": "runtime",
    "TensorInfo": "runtime",
    "load": "runtime",
    "register_shader": "hal.shaders",
    "set_num_threads": "fast",
    "unregister_shader": "hal.shaders",
}
_SUBPACKAGES = {"build", "executorch", "format", "hal", "runtime", "scenario", "spirv", "testing", "tosa"}

__all__ = [
    "HalError",
    "Model",
    "ModelInputError",
    "ProgramError",
    "ProgramFormatError",
    "ScenarioError",
    "SpirvError",
    "TensorInfo",
    "TosaError",
    "VGFError",
    "VGFFormatError",
    "__version__",
    "load",
    "register_shader",
    "set_num_threads",
    "unregister_shader",
]


def __getattr__(name: str) -> Any:
    """The public names and subpackages, each imported when first asked for."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBPACKAGES})
