"""pyvgf: run VGF models (Arm ML SDK for Vulkan) from Python."""

from __future__ import annotations

from .errors import (
    HalError,
    ModelInputError,
    ProgramError,
    ProgramFormatError,
    SpirvError,
    TosaError,
    VGFError,
    VGFFormatError,
)
from .hal.shaders import register_shader, unregister_shader
from .runtime import Model, TensorInfo, load

__version__ = "0.1.0.dev0"

__all__ = [
    "HalError",
    "Model",
    "ModelInputError",
    "ProgramError",
    "ProgramFormatError",
    "SpirvError",
    "TensorInfo",
    "TosaError",
    "VGFError",
    "VGFFormatError",
    "__version__",
    "load",
    "register_shader",
    "unregister_shader",
]
