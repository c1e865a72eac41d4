"""TOSA 1.0 operators in numpy: importing this package registers every operator in `OPS`."""

from __future__ import annotations

from . import conv  # noqa: F401
from . import image  # noqa: F401
from . import pool  # noqa: F401
from . import tensor  # noqa: F401
from .registry import OPS, OpDef, tosa_op

__all__ = ["OPS", "OpDef", "tosa_op"]
