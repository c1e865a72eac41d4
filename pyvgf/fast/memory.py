"""Freed memory kept for the next run, where the C library is glibc; arrays on cache lines.

numpy takes its arrays from malloc. glibc's malloc serves a block above its mmap threshold
with a fresh mapping, unmapped again when freed, and gives the free top of its heap back to the
system beyond its trim threshold (twice the mmap threshold); either way the next run faults its
pages in afresh, zeroed by the kernel. Both thresholds start at 128 kB and rise, by glibc's own
rule (mallopt(3), M_MMAP_THRESHOLD), to the size of each mapped block freed, up to 32 MB: after a
model with larger arrays, or not at all. A transformer block whose temporaries are 0.3-1.2 MB,
alone in a process, took 1,230 page faults a run, a quarter of its time (docs/performance.md).

`keep_freed(nbytes)` frees one mapped block of `nbytes` (at most glibc's ceiling), raising both
thresholds as a larger array would have: the memory a run frees then stays in the heap for the
next run, in exchange for a process that keeps up to twice that much freed memory. The plan calls
it at load with the bytes of its graph's results, so what it sets follows the model. Where the
user set a threshold (mallopt, or MALLOC_MMAP_THRESHOLD_ and its kin), glibc's rule is off and
this changes nothing; elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import os
import threading

import numpy as np

CEILING = (32 << 20) - (1 << 16)
"""The largest block whose freeing raises glibc's thresholds (its DEFAULT_MMAP_THRESHOLD_MAX,
32 MB on 64-bit systems, less the block's header, rounded to pages)."""


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return False


_GLIBC = _glibc()
_lock = threading.Lock()
_kept = 128 << 10
"""The largest block freed here so far (at first, glibc's initial threshold): a smaller one
would change nothing."""


def keep_freed(nbytes: int) -> None:
    """Raise glibc's mmap and trim thresholds to min(nbytes, CEILING) and twice that, where
    glibc's own rule still sets them (see the module doc)."""
    global _kept
    if not _GLIBC:
        return
    size = min(int(nbytes), CEILING)
    with _lock:
        if size <= _kept:
            return
        _kept = size
        block = np.empty(size, np.uint8)  # mapped, untouched; freed below, which raises them
        del block


LINE = 64
"""Bytes in a cache line: `aligned` starts arrays on a multiple of it."""


def aligned(a: np.ndarray, *, readonly: bool = False) -> np.ndarray:
    """A C-contiguous copy of `a` whose first element is on a LINE boundary (numpy aligns to
    16 bytes): a compiled loop reading it in 512-bit vectors then never reads across two cache
    lines where its rows are a whole number of lines (compiled._aligned is the loops' own).
    `readonly`: the copy and the memory under it are read-only, so that the copy counts as
    immutable (types.immutable), as a view of a constant does."""
    buf = np.empty(a.nbytes + LINE, np.uint8)
    skip = -buf.ctypes.data % LINE
    out = buf[skip:skip + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    if readonly:
        out.flags.writeable = buf.flags.writeable = False
    return out
