"""How the fast executor shares the machine's cores.

Idle, its threads sleep. numba runs them on GNU OpenMP (where no TBB is installed), whose
worker threads spin after each parallel loop before they sleep: 300,000 turns unless told
otherwise, milliseconds in which they take a core from whatever runs next (onnxruntime or torch
in the same process, another process). Importing this module sets GOMP_SPINCOUNT to
`SPIN_COUNT`, unless the user set it or OMP_WAIT_POLICY: a spin as long as the gaps between the
loops of one run, so a run's loops still find their threads awake, while after the run they
sleep within a fraction of a millisecond. (OMP_WAIT_POLICY=PASSIVE, no spin at all, made pyvgf
alone up to 1.5x slower: every loop then waits for its threads to wake.) It takes effect where
numba loads OpenMP first in the process, as it does when pyvgf's loops run before any other
OpenMP user.

The thread count follows `pyvgf.set_num_threads(n)` (process) or `load(..., threads=n)` (a
Model), applied to each run in the thread that runs it (`run_threads`); else numba's default.

The depthwise loop, float GEMMs and the RESCALE fused after a convolution (compiled.py,
kernels.split_gemm) split their rows over numba's threads: numba.get_num_threads(), one per core
unless NUMBA_NUM_THREADS or numba.set_num_threads says otherwise. While a graph that calls BLAS runs with more than one
such thread, BLAS runs one thread of its own (`one_blas_thread`): the GEMM blocks call it from
every worker at once, and two pools of busy-waiting threads on the same cores slowed
MobileNetV2 by 15x when tried. (Python's own threads were tried too: handing a range to a
worker and back took 80-230 us, against 3-30 for numba's.)

numba runs those threads with GNU OpenMP where no TBB is installed, and GNU OpenMP cannot be
used again in a process forked from one that used it (numba ends such a process). A forked
child therefore runs the loops on its one thread: the same arithmetic, in the same order per
element, so the same results. So does a process where numba has neither (its own "workqueue"
threads end the process when two Python threads start parallel work at once).
"""

from __future__ import annotations

import functools
import importlib
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


def spread() -> bool:
    """Whether the loops split their rows over several threads now."""
    return not _forked and numba.get_num_threads() > 1 and _thread_safe_layer()


@functools.cache
def _thread_safe_layer() -> bool:
    """Whether numba will run its threads on TBB or OpenMP (the first of them it can load,
    unless NUMBA_THREADING_LAYER names another)."""
    if numba.config.THREADING_LAYER == "workqueue":
        return False
    for layer in ("tbbpool", "omppool"):
        try:
            importlib.import_module(f"numba.np.ufunc.{layer}")
        except ImportError:
            continue
        return True
    return False


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
        self._saved: list[int | None] = []

    def enter(self) -> None:
        with self._lock:
            self._users += 1
            if self._users == 1:
                if not self._libraries:
                    import scipy.linalg.cython_blas  # noqa: F401  (numba's BLAS: load it first)
                    from threadpoolctl import ThreadpoolController
                    self._libraries = ThreadpoolController().select(user_api="blas").lib_controllers
                self._saved = [library.get_num_threads() for library in self._libraries]
                for library in self._libraries:
                    _set_threads(library, 1)

    def exit(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                for library, count in zip(self._libraries, self._saved):
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
    if count is None:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(before)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread inside the block when the loops run on several; else nothing."""
    if not spread():
        yield
        return
    _BLAS.enter()
    try:
        yield
    finally:
        _BLAS.exit()
