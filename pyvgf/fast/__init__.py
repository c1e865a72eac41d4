"""The fast executor: the reference interpreter of pyvgf/tosa/ with overrides and plan-time
rewrites registered over it (fusion, compiled loops, threads), giving the same results
(integers bit-exact, floats within pyvgf.testing's tolerance).

It needs the `fast` extra (`pip install 'pyvgf[fast]'`: numba, SciPy, threadpoolctl; and TBB,
which numba runs the threads on where it is installed: threads.py). This
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


_threads: int | None = None
_background = True


def set_background_compile(enabled: bool) -> None:
    """Whether fast plans made from now on leave a loop missing from numba's cache to a
    compiler process, running the reference operators in its place until it is compiled
    (True, the default: background.py), or compile it at its first call, as every run then
    runs the compiled loops (False: a machine's first run waits for them)."""
    global _background
    _background = bool(enabled)


def background_compile() -> bool:
    """What `set_background_compile` set (True unless told otherwise)."""
    return _background


def set_num_threads(count: int | None) -> None:
    """How many threads the fast executor's loops split over in this process (`pyvgf.
    set_num_threads`): at most numba's pool (one a core, or NUMBA_NUM_THREADS); None gives the
    pool's size back. A Model loaded with `threads=` keeps its own count."""
    global _threads
    _threads = check_threads(count)


def num_threads() -> int | None:
    """The count `set_num_threads` set (None: numba's default)."""
    return _threads


def check_threads(count: object) -> int | None:
    """`count` if it is None or a positive integer; else HalError."""
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        from ..errors import HalError

        raise HalError(f"threads must be a positive integer or None, got {count!r}")
    return count  # type: ignore[return-value]
