"""Property testing for VGF backends: hypothesis strategies for tensors, TOSA operators and
graphs; reference runners; and `assert_backends_agree`.

hypothesis is needed here (and only here): `pip install hypothesis`.
"""

from __future__ import annotations

from .case import Domain, GraphCase
from .compare import assert_backends_agree, tolerance
from .reference import reference_run
from .strategies import FAMILIES, graphs, ops, tensors

__all__ = [
    "FAMILIES",
    "Domain",
    "GraphCase",
    "assert_backends_agree",
    "graphs",
    "ops",
    "reference_run",
    "tensors",
    "tolerance",
]
