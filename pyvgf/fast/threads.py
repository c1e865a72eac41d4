"""How the fast executor shares the machine's cores.

numba runs the loops' threads on TBB, which the `fast` extra installs (the `tbb` package): a
loop's rows are tasks that idle threads steal, so a thread the OS has not scheduled yet (its
core taken by another process, or by another runtime's spinning threads in the same process)
leaves its share to the others instead of holding the whole loop at a barrier, and idle
workers yield their core while they wait, then sleep. Beside a CPU-bound process, or alternating
with onnxruntime, MobileNetV2 then took 1.5-1.7x its time alone, where GNU OpenMP's
static split with spinning workers took 2.3-4.9x (docs/performance.md, "Sharing the machine").

Where TBB cannot be loaded numba takes GNU OpenMP, whose worker threads spin after each loop
before they sleep: 300,000 turns unless told otherwise, milliseconds in which they take a core
from whatever runs next. Importing this module sets GOMP_SPINCOUNT to `SPIN_COUNT` for that
case, unless the user set it or OMP_WAIT_POLICY: a spin as long as the gaps between the loops
of one run, so a run's loops still find their threads awake.

The thread count follows `pyvgf.set_num_threads(n)` (process) or `load(..., threads=n)` (a
Model), applied to each run in the thread that runs it (`run_threads`); else numba's default.

The depthwise loop, float GEMMs and the RESCALE fused after a convolution (compiled.py,
kernels.split_gemm) split their rows over numba's threads: numba.get_num_threads(), one per core
unless NUMBA_NUM_THREADS or numba.set_num_threads says otherwise. While a graph that calls BLAS
runs, BLAS runs one thread of its own when the loops run on several (`blas_threads`): the GEMM
blocks call it from every worker at once, and two pools of busy-waiting threads on the same
cores slowed MobileNetV2 by 15x when tried; and when the run's count is one, as the caller
asked. (Python's own threads were tried too: handing a range to a worker and back
took 80-230 us, against 3-30 for numba's.)

GNU OpenMP cannot be used again in a process forked from one that used it (numba ends such a
process), so a forked child runs the loops on its one thread: the same arithmetic, in the same
order per element, so the same results. So does a process where numba has neither TBB nor
OpenMP (its own "workqueue" threads end the process when two Python threads start parallel
work at once).
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SPIN_COUNT = 20_000
"""GOMP_SPINCOUNT the fast executor sets where the user set neither it nor OMP_WAIT_POLICY."""

if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", str(SPIN_COUNT))

import numba  # noqa: E402  (after GOMP_SPINCOUNT: OpenMP reads it when loaded)

from . import num_threads  # noqa: E402

_forked = False


def _after_fork() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_after_fork)


_RUN: contextvars.ContextVar[tuple[bool, int] | None] = contextvars.ContextVar(
    "pyvgf_fast_run_threads", default=None)
"""Inside `run_threads`: (spread(), workers()) as the run set them, read by every step (numba's
own count takes a lock and a thread-local lookup, about 0.7 us, some 110 times a run)."""


def spread() -> bool:
    """Whether the loops split their rows over several threads now."""
    run = _RUN.get()
    return _spread(numba.get_num_threads()) if run is None else run[0]


def workers() -> int:
    """How many threads the loops split over now: numba.get_num_threads()."""
    run = _RUN.get()
    return numba.get_num_threads() if run is None else run[1]


def mode() -> tuple[bool, int]:
    """(spread(), workers()) in one call."""
    run = _RUN.get()
    if run is None:
        count = numba.get_num_threads()
        return _spread(count), count
    return run


def _spread(count: int) -> bool:
    """Whether loops on `count` threads split their rows over them."""
    return not _forked and count > 1 and layer() is not None


@functools.cache
def layer() -> str | None:
    """The threading layer numba runs the loops on: "tbb" or "omp"; None where it has neither
    (its "workqueue") or can load none. Starts numba's threads, as its first parallel loop does."""
    from numba.np.ufunc import parallel

    try:
        parallel._launch_threads()  # numba's own choice (NUMBA_THREADING_LAYER, its priority list)
    except (ImportError, ValueError):
        return None
    name = numba.threading_layer()
    return None if name == "workqueue" else name


class _BlasLimit:
    """BLAS held at one thread while any graph runs, counted so that graphs running at once on
    several Python threads give the caller's setting back only when the last one ends.

    threadpoolctl finds the BLAS libraries loaded (numpy's, and SciPy's, which numba calls)
    and sets their thread counts. For OpenBLAS it lets only the first Python thread that set
    a count set it again, which would leave runs on other threads with BLAS threads of their
    own; the count of runs here decides instead, so the library's own setter is called
    (threadpoolctl's `_real_set_num_threads`, where it has one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._libraries: list[Any] = []
        self._saved: list[tuple[Any, int | None]] = []
        """The libraries the run set to one thread, with the count each had before (those at
        one already, as MKL is on its sequential threading layer, are left alone)."""

    def enter(self) -> None:
        with self._lock:
            self._users += 1
            if self._users == 1:
                if not self._libraries:
                    import scipy.linalg.cython_blas  # noqa: F401  (numba's BLAS: load it first)
                    from threadpoolctl import ThreadpoolController
                    self._libraries = ThreadpoolController().select(user_api="blas").lib_controllers
                self._saved = [(library, count) for library in self._libraries
                               if (count := library.get_num_threads()) != 1]
                for library, _ in self._saved:
                    _set_threads(library, 1)

    def exit(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                for library, count in self._saved:
                    if count is not None:
                        _set_threads(library, count)


def _set_threads(library: Any, count: int) -> None:
    getattr(library, "_real_set_num_threads", library.set_num_threads)(count)


_BLAS = _BlasLimit()


@contextmanager
def run_threads(count: int | None) -> Iterator[None]:
    """The loops inside the block split over `count` threads (None: `pyvgf.set_num_threads`'s,
    else numba's default), at most numba's pool; in the calling thread only."""
    count = count or num_threads()
    before = numba.get_num_threads()
    now = before if count is None else min(count, numba.config.NUMBA_NUM_THREADS)
    if now != before:  # (numba's setter and getter cost microseconds each, more in a run's cold caches)
        numba.set_num_threads(now)
    token = _RUN.set((_spread(now), now))
    try:
        yield
    finally:
        _RUN.reset(token)
        if now != before:
            numba.set_num_threads(before)


@contextmanager
def blas_threads() -> Iterator[None]:
    """BLAS on one thread inside the block when the loops run on several, or on one as the
    run's thread count says (inside `run_threads`); else as the caller has it."""
    if not spread() and workers() > 1:
        yield
        return
    _BLAS.enter()
    try:
        yield
    finally:
        _BLAS.exit()
