"""TOSA 1.0 operators in numpy: importing this package registers every operator in `OPS`."""

from __future__ import annotations

from . import activation  # noqa: F401
from . import comparison  # noqa: F401
from . import conv  # noqa: F401
from . import data_layout  # noqa: F401
from . import elementwise_binary  # noqa: F401
from . import elementwise_ternary  # noqa: F401
from . import elementwise_unary  # noqa: F401
from . import image  # noqa: F401
from . import pool  # noqa: F401
from . import reduction  # noqa: F401
from . import scatter_gather  # noqa: F401
from . import tensor  # noqa: F401
from . import type_conversion  # noqa: F401
from .registry import OPS, OpDef, tosa_op

__all__ = ["OPS", "OpDef", "tosa_op"]
