"""The loops numpy cannot run in one pass, compiled by numba.

A depthwise window, RESCALE's 64-bit integer arithmetic and a convolution's bias + CLAMP are a
handful of operations per element; as numpy calls each is one pass over memory per operation
(17 for a 3x3 window), as a loop it is one. numba compiles each function for the argument types
it first meets and caches the machine code on disk, so a model's first run in a new process
loads it rather than compiling again. The loops keep the specification's order of operations:
floats are multiplied and added one step at a time in kernel-tap order (no fused multiply-add,
no reassociation), integers are exact in int64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
from numba import njit

F = TypeVar("F", bound=Callable[..., object])


def _compiled(fn: F) -> F:
    """fn compiled by numba (without the GIL), its machine code cached on disk; where numba
    finds no writable cache directory (a read-only install and home), compiled in every
    process instead."""
    try:
        return njit(cache=True, nogil=True)(fn)
    except RuntimeError as error:
        if "cannot cache" not in str(error):
            raise
        return njit(nogil=True)(fn)


@_compiled
def depthwise_rows(x: np.ndarray, zero_point: float, w: np.ndarray, pad_top: int, pad_left: int,
                   stride_y: int, stride_x: int, dilation_y: int, dilation_x: int, first: int,
                   acc: np.ndarray) -> None:
    """Output rows first.. of a depthwise convolution (multiplier 1) of x [N, H, W, C] with
    weights w [KH, KW, C] into acc [N, rows, OW, C]. Each output is the sum, from zero and in
    (ky, kx) order, of (x - zero_point) * w over the taps that land inside x: padded taps are
    skipped, as the specification does, so nothing is padded."""
    n, rows, width, channels = acc.shape
    height, in_width = x.shape[1], x.shape[2]
    kh, kw = w.shape[0], w.shape[1]
    for b in range(n):
        for r in range(rows):
            top = (first + r) * stride_y - pad_top
            for ox in range(width):
                left = ox * stride_x - pad_left
                out = acc[b, r, ox]
                out[:] = 0
                for ky in range(kh):
                    iy = top + ky * dilation_y
                    if iy < 0 or iy >= height:
                        continue
                    for kx in range(kw):
                        ix = left + kx * dilation_x
                        if ix < 0 or ix >= in_width:
                            continue
                        row, wt = x[b, iy, ix], w[ky, kx]
                        for c in range(channels):
                            out[c] += (row[c] - zero_point) * wt[c]


@_compiled
def rescale_rows(x: np.ndarray, offset: np.ndarray, wrap_bits: int, multiplier: np.ndarray,
                 shift: np.ndarray, double_round: bool, output_zp: int, low: int, high: int,
                 out: np.ndarray) -> None:
    """RESCALE of x [rows, C] (integers, or floats holding integers) into out [rows, C].

    Per element of channel c, in int64: v = x + offset[c], wrapped to a signed `wrap_bits`
    integer when wrap_bits is not 0; then the specification's apply_scale
    (v * multiplier[c] + 2**(shift[c]-1), with double rounding's +-2**30 when shift > 31,
    arithmetically shifted right by shift[c]), plus output_zp, clamped to [low, high] and
    stored with out's type (an unsigned result is stored as its bit pattern)."""
    rows, channels = x.shape
    half = np.int64(1) << (wrap_bits - 1) if wrap_bits else np.int64(0)
    mask = (half << 1) - 1
    for i in range(rows):
        for c in range(channels):
            v = np.int64(x[i, c]) + offset[c]
            if wrap_bits:
                v = ((v + half) & mask) - half
            s = shift[c]
            rounding = np.int64(1) << (s - 1)
            if double_round and s > 31:
                rounding += (np.int64(1) << 30) if v >= 0 else -(np.int64(1) << 30)
            y = ((v * multiplier[c] + rounding) >> s) + output_zp
            out[i, c] = min(max(y, low), high)


@_compiled
def rescale_common_rows(x: np.ndarray, offset: np.ndarray, wrap32: bool, multiplier: np.ndarray,
                        shift: np.ndarray, output_zp: int, low: int, high: int,
                        out: np.ndarray) -> None:
    """rescale_rows without double rounding, wrapping to int32 (wrap32) or not at all: nearly
    every RESCALE, in a loop free of the other cases' branches (about a fifth faster)."""
    rows, channels = x.shape
    for i in range(rows):
        for c in range(channels):
            v = np.int64(x[i, c]) + offset[c]
            if wrap32:
                v = np.int64(np.int32(v))
            s = shift[c]
            y = ((v * multiplier[c] + (np.int64(1) << (s - 1))) >> s) + output_zp
            out[i, c] = min(max(y, low), high)


@_compiled
def bias_clamp_rows(x: np.ndarray, bias: np.ndarray, low: float, high: float,
                    nan_to_low: bool) -> None:
    """In place on x [rows, C]: x + bias[c], clamped to [low, high] in x's type; NaN stays NaN
    (or becomes low when nan_to_low), as numpy's clip followed by copyto does."""
    rows, channels = x.shape
    for i in range(rows):
        for c in range(channels):
            v = x[i, c] + bias[c]
            if v < low:
                v = low
            elif v > high:
                v = high
            elif nan_to_low and v != v:
                v = low
            x[i, c] = v
