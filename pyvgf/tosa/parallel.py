"""Threads for the cpu backend's elementwise work.

numpy releases the GIL inside its loops, so an operator whose output rows are independent
(depthwise convolutions, the bias, CLAMP and RESCALE finishing a convolution) runs its rows in
one contiguous part per thread. GEMMs are left to BLAS and its own threads.

The count is `PYVGF_NUM_THREADS` from the environment, else the CPUs this process may use;
`set_num_threads` changes it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

MIN_PART_BYTES = 1 << 17
"""Work below this many bytes of output per thread stays on the calling thread."""


def _default_threads() -> int:
    env = os.environ.get("PYVGF_NUM_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"PYVGF_NUM_THREADS must be a whole number, got {env!r}") from None
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_threads = _default_threads()
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def set_num_threads(count: int) -> None:
    """Use `count` threads (1: none besides the caller's) for the cpu backend's elementwise work."""
    global _threads, _pool
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"the thread count must be a whole number >= 1, got {count!r}")
    with _lock:
        _threads = count
        old, _pool = _pool, None
    if old is not None:
        old.shutdown(wait=False)


def num_threads() -> int:
    """The number of threads the cpu backend splits elementwise work over."""
    return _threads


def split(rows: int, row_bytes: int, work: Callable[[int, int], None]) -> None:
    """work(first, stop) over rows 0..rows, as one contiguous part per thread when each part
    has MIN_PART_BYTES of output (`row_bytes` a row); the calling thread takes the first part.
    Parts must write disjoint memory. The first exception raised is raised here, after every
    part has ended."""
    parts = min(_threads, rows, rows * row_bytes // MIN_PART_BYTES)
    if parts <= 1:
        work(0, rows)
        return
    bounds = [rows * i // parts for i in range(parts + 1)]
    pool = _executor()
    futures = [pool.submit(work, a, b) for a, b in zip(bounds[1:-1], bounds[2:])]
    try:
        work(bounds[0], bounds[1])
    finally:
        wait(futures)
    for future in futures:
        future.result()


def _executor() -> ThreadPoolExecutor:
    """The shared pool of `num_threads() - 1` workers (a part never waits on another, so one
    pool serves every thread running a model)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, _threads - 1), thread_name_prefix="pyvgf")
        return _pool
