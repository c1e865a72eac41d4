"""TOSA 1.0 operators in numpy: importing this package registers every operator in `OPS`."""

from __future__ import annotations

from . import (  # noqa: F401  (each module registers its operators in OPS)
    activation,
    comparison,
    conv,
    data_layout,
    elementwise_binary,
    elementwise_ternary,
    elementwise_unary,
    image,
    pool,
    reduction,
    scatter_gather,
    tensor,
    type_conversion,
)
from .registry import OPS, OpDef, tosa_op

__all__ = ["OPS", "OpDef", "tosa_op"]
