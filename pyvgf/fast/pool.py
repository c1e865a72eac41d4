"""The fast executor's pooling: AVG_POOL2D of fp32, int8 and int16 and MAX_POOL2D of the same
types, each one compiled pass over the input (compiled.avg_pool_float_rows,
avg_pool_int_rows, max_pool_rows) that skips padding taps, where the reference makes a padded
copy and then one numpy pass per kernel tap. Other types run the reference."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..tosa._common import F32, I8, I16, scalar
from ..tosa.pool import NAN_IGNORE, NAN_PROPAGATE, _reciprocal_scale
from ..tosa.pool import avg_pool2d as reference_avg_pool2d
from ..tosa.pool import max_pool2d as reference_max_pool2d
from .compiled import avg_pool_float_rows, avg_pool_int_rows, max_pool_rows
from .registry import fast_op

TYPES = (F32, I8, I16)
"""The input types the loops take."""

SPREAD_WORK = 1 << 16
"""The outputs times kernel taps of a pool from which its rows are split over numba's threads
(threads.py); a smaller one runs on the calling thread, as does one of a single row (a global
pool of one image)."""


@fast_op("AVG_POOL2D")
def avg_pool2d(*, input: np.ndarray, input_zp: np.ndarray, output_zp: np.ndarray,  # noqa: A002
               kernel: np.ndarray, stride: np.ndarray, pad: np.ndarray,
               acc_type: int) -> np.ndarray:
    """AVG_POOL2D as pyvgf/tosa/pool.py computes it: integers bit-exact, fp32 from the same
    sums in the same order."""
    in_zp = scalar(input_zp)
    if input.dtype not in TYPES or (input.dtype == F32 and in_zp != 0):
        return reference_avg_pool2d(input=input, input_zp=input_zp, output_zp=output_zp,
                                    kernel=kernel, stride=stride, pad=pad, acc_type=acc_type)
    if input.dtype == F32:
        return _pooled(avg_pool_float_rows, input, kernel, stride, pad, (), ())
    info = np.iinfo(input.dtype)
    return _pooled(avg_pool_int_rows, input, kernel, stride, pad, (in_zp,),
                   (*_reciprocals(int(np.prod(kernel))), scalar(output_zp), int(info.min),
                    int(info.max)))


@functools.cache
def _reciprocals(taps: int) -> tuple[np.ndarray, np.ndarray]:
    """The specification's reciprocal_scale of each count of taps a window may have, as the
    reference makes it (pyvgf/tosa/pool.py): (multiplier, shift), int64 vectors indexed by
    the count, 1..taps (entry 0 unused)."""
    return _reciprocal_scale(np.maximum(np.arange(taps + 1, dtype=np.int64), 1))


@fast_op("MAX_POOL2D")
def max_pool2d(*, input: np.ndarray, kernel: np.ndarray, stride: np.ndarray,  # noqa: A002
               pad: np.ndarray, nan_mode: int = NAN_PROPAGATE) -> np.ndarray:
    """MAX_POOL2D as pyvgf/tosa/pool.py computes it, bit-exact (a maximum is one of its
    operands; of +0 and -0, the one numpy picks)."""
    if input.dtype not in TYPES:
        return reference_max_pool2d(input=input, kernel=kernel, stride=stride, pad=pad,
                                    nan_mode=nan_mode)
    return _pooled(max_pool_rows, input, kernel, stride, pad, (), (nan_mode == NAN_IGNORE,))


def _pooled(loop: Callable[..., None], x: np.ndarray, kernel: np.ndarray, stride: np.ndarray,
            pad: np.ndarray, first: tuple[object, ...], last: tuple[object, ...]) -> np.ndarray:
    """The result of `loop` (a compiled.py pool loop), called as loop(x, *first, kernel_y,
    kernel_x, pad_top, pad_left, stride_y, stride_x, out, *last); its rows over numba's
    threads where SPREAD_WORK says."""
    kh, kw = (int(k) for k in kernel)
    sy, sx = (int(s) for s in stride)
    top, bottom, left, right = (int(p) for p in pad)
    n, h, w, c = x.shape
    out = np.empty((n, (h + top + bottom - kh) // sy + 1, (w + left + right - kw) // sx + 1, c),
                   x.dtype)
    spread = out.shape[0] * out.shape[1] > 1 and out.size * kh * kw >= SPREAD_WORK
    run = loop if spread else loop.serial  # type: ignore[attr-defined]
    run(x, *first, kh, kw, top, left, sy, sx, out, *last)
    return out
