"""pyvgf: run VGF models (Arm ML SDK for Vulkan) from Python."""

from __future__ import annotations

from .errors import HalError, ModelInputError, SpirvError, TosaError, VGFError, VGFFormatError

__version__ = "0.1.0.dev0"

__all__ = [
    "HalError",
    "ModelInputError",
    "SpirvError",
    "TosaError",
    "VGFError",
    "VGFFormatError",
    "__version__",
]
