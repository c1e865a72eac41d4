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
from ..types import TensorType
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
    pool = _avg_pool(input, input_zp, output_zp, kernel, stride, pad)
    if pool is None:
        return reference_avg_pool2d(input=input, input_zp=input_zp, output_zp=output_zp,
                                    kernel=kernel, stride=stride, pad=pad, acc_type=acc_type)
    return pool(input)


@avg_pool2d.prepare
def _avg_pool_prepare(*, input: TensorType, input_zp: np.ndarray, output_zp: np.ndarray,  # noqa: A002
                      kernel: np.ndarray, stride: np.ndarray, pad: np.ndarray,
                      acc_type: int) -> Callable[..., np.ndarray] | None:
    if not (isinstance(input_zp, np.ndarray) and isinstance(output_zp, np.ndarray)):
        return None  # zero points made at run time: the op as it is
    pool = _avg_pool(input, input_zp, output_zp, kernel, stride, pad)
    return None if pool is None else lambda *, input: pool(input)  # noqa: A002


def _avg_pool(x: np.ndarray | TensorType, input_zp: np.ndarray, output_zp: np.ndarray,
              kernel: np.ndarray, stride: np.ndarray, pad: np.ndarray) -> _Pool | None:
    """AVG_POOL2D of inputs like x, or None where the loops do not take it."""
    in_zp = scalar(input_zp)
    if x.dtype not in TYPES or (x.dtype == F32 and in_zp != 0):
        return None
    if x.dtype == F32:
        return _Pool(avg_pool_float_rows, x, kernel, stride, pad, (), ())
    info = np.iinfo(x.dtype)
    return _Pool(avg_pool_int_rows, x, kernel, stride, pad, (in_zp,),
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
    return _Pool(max_pool_rows, input, kernel, stride, pad, (), (nan_mode == NAN_IGNORE,))(input)


@max_pool2d.prepare
def _max_pool_prepare(*, input: TensorType, kernel: np.ndarray, stride: np.ndarray,  # noqa: A002
                      pad: np.ndarray, nan_mode: int = NAN_PROPAGATE
                      ) -> Callable[..., np.ndarray] | None:
    if input.dtype not in TYPES:
        return None
    pool = _Pool(max_pool_rows, input, kernel, stride, pad, (), (nan_mode == NAN_IGNORE,))
    return lambda *, input: pool(input)  # noqa: A002


class _Pool:
    """A pool of inputs of one shape and type, worked out once (a step's plan-time form: the
    per-run numpy scalars of the attributes took about 50 us a run in MobileNetV2, its
    global pool's own loop 15): `loop` (a compiled.py pool loop) called as loop(x, *first,
    kernel_y, kernel_x, pad_top, pad_left, stride_y, stride_x, out, *last), its rows over
    numba's threads where SPREAD_WORK says."""

    def __init__(self, loop: Callable[..., None], x: np.ndarray | TensorType,
                 kernel: np.ndarray, stride: np.ndarray, pad: np.ndarray,
                 first: tuple[object, ...], last: tuple[object, ...]):
        kh, kw = (int(k) for k in kernel)
        sy, sx = (int(s) for s in stride)
        top, bottom, left, right = (int(p) for p in pad)
        n, h, w, c = x.shape
        self.shape = (n, (h + top + bottom - kh) // sy + 1, (w + left + right - kw) // sx + 1, c)
        self.dtype = np.dtype(x.dtype)
        spread = self.shape[0] * self.shape[1] > 1 and int(np.prod(self.shape)) * kh * kw >= SPREAD_WORK
        self.loop = loop if spread else loop.serial  # type: ignore[attr-defined]
        self.first, self.last = (*first, kh, kw, top, left, sy, sx), last

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self.loop(x, *self.first, out, *self.last)
        return out
