"""ExecuTorch programs (`.pte`) with VGF delegates: read, inspect and run them.

`pyvgf.load("model.pte")` returns a `ProgramModel`; `read()` gives the program's objects.
"""

from .model import ProgramModel, QuantParams, load
from .program import (
    VGF_BACKEND,
    Delegate,
    Method,
    Program,
    TensorSpec,
    is_program,
    read,
)

__all__ = [
    "VGF_BACKEND",
    "Delegate",
    "Method",
    "Program",
    "ProgramModel",
    "QuantParams",
    "TensorSpec",
    "is_program",
    "load",
    "read",
]
