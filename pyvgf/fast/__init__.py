"""The fast executor: the reference interpreter of pyvgf/tosa/ with overrides and plan-time
rewrites registered over it (fusion, compiled loops, threads), giving the same results
(integers bit-exact, floats within pyvgf.testing's tolerance).

It needs the `fast` extra (`pip install 'pyvgf[fast]'`: numba, SciPy, threadpoolctl). This
module imports none of them: `available()` says whether they are installed, and the cpu
backend imports the executor itself (plan.py) only when it plans a graph on it.
"""

from __future__ import annotations

import importlib.util

REQUIRES = ("numba", "scipy", "threadpoolctl")
"""The packages of the `fast` extra that the executor imports."""


def missing() -> list[str]:
    """The packages of `REQUIRES` that are not installed."""
    return [name for name in REQUIRES if importlib.util.find_spec(name) is None]


def available() -> bool:
    """Whether the fast executor can run here (every package it needs is installed)."""
    return not missing()
