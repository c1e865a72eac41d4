"""Property testing for VGF backends: hypothesis strategies for tensors, TOSA operators and
graphs; reference runners; `assert_backends_agree`; and `bisect`, which names the first
operator two backends disagree on.

hypothesis is needed here (and only here): `pip install 'pyvgf[testing]'`. Each name loads on
first use, so that the pytest plugin beside this package imports nothing test-only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bisection import Culprit, bisect
    from .case import Domain, GraphCase
    from .compare import assert_backends_agree, tolerance
    from .reference import reference_run
    from .strategies import FAMILIES, graphs, ops, tensors

_MODULE_OF = {
    "Culprit": "bisection",
    "bisect": "bisection",
    "Domain": "case",
    "GraphCase": "case",
    "assert_backends_agree": "compare",
    "tolerance": "compare",
    "reference_run": "reference",
    "FAMILIES": "strategies",
    "graphs": "strategies",
    "ops": "strategies",
    "tensors": "strategies",
}

__all__ = [
    "FAMILIES",
    "Culprit",
    "Domain",
    "GraphCase",
    "assert_backends_agree",
    "bisect",
    "graphs",
    "ops",
    "reference_run",
    "tensors",
    "tolerance",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        raise ModuleNotFoundError(
            f"pyvgf.testing.{name} needs hypothesis: pip install 'pyvgf[testing]'", name=exc.name
        ) from exc
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})
