"""Property testing for VGF backends: hypothesis strategies for tensors, TOSA operators and
graphs; reference runners; `assert_backends_agree`; and `bisect`, which names the first
operator two backends disagree on.

hypothesis is needed here (and only here): `pip install hypothesis`.
"""

from __future__ import annotations

from .bisect import Culprit, bisect
from .case import Domain, GraphCase
from .compare import assert_backends_agree, tolerance
from .reference import reference_run
from .strategies import FAMILIES, graphs, ops, tensors

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
