"""The loops numpy cannot run in one pass, compiled by numba.

A depthwise or pooling window, RESCALE's 64-bit integer arithmetic, a convolution's bias +
CLAMP, ERF's polynomials and the patterns of patterns.py (a layer norm, GELU, a quantized
residual ADD) are a handful of operations per element; as numpy calls each is one pass over
memory per operation (17 for a 3x3 window), as a loop it is one. numba compiles each function
for the argument types it first meets and caches the machine code on disk, so a model's first
run in a new process loads it rather than compiling again; while a plan runs, a loop not in
the cache yet is compiled by another process and the step runs the reference meanwhile
(background.py). The loops keep the specification's order of operations: floats are
multiplied and added one step at a time in kernel-tap order (no fused multiply-add, no
reassociation), integers are exact in int64; the GEMM blocks (gemm_rows, gemm_columns,
conv_blocks: a block of patches gathered, then one BLAS call) leave a sum's order to BLAS, as
a float GEMM does anywhere (integers stay exact: kernels.exact_dtype), or, for fp32 products
by a 1x1 convolution's weight laid out as panels (float_panels) or of few channels, on AVX2
(_own_vectors), to the FMA tiles (channel order, fused multiply-adds, the finish from
registers). Those tiles and the int8 tiles of
gemm_rows_packed (AVX-512 VNNI's or AVX2's products) name their instructions. ERF and the
softmax's EXP, which the specification defines by their values alone, are fp32
approximations with fused multiply-adds, checked against erf and e**x for every fp32 input.

The depthwise loop, the GEMM and patch blocks, RESCALE after a convolution, the patterns'
loops, large pools and ERF split their rows (a GEMM of few rows: its columns) over numba's threads
(threads.py); the others run on the calling thread. Compiling a threaded loop takes about a
second, once per machine: only the prange loops are made parallel.
"""

from __future__ import annotations

import functools
import math
import os
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import llvmlite.binding
import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.core import cgutils
from numba.core import config as numba_config
from numba.core import types as nbtypes
from numba.extending import intrinsic, overload
from numpy.lib.stride_tricks import as_strided

from . import (
    background,
    blas,  # noqa: F401  (binds the loops' GEMM names before any loop is compiled)
    threads,
)

LOOPS: dict[str, object] = {}
"""Every loop compiled on its own (not inlined), by name: for `cache_status`, and for the
compiler process (background.py), which compiles them by name."""


def _jit(fn: Callable[..., object], parallel: bool | dict[str, bool],
         fastmath: bool | set[str] = False) -> Callable[..., object]:
    """fn compiled by numba (without the GIL, with numba's `fastmath` flags), its machine code
    cached on disk: in the package's __pycache__ where that is writable, else under the user's
    cache directory ($XDG_CACHE_HOME/numba, ~/.cache/numba by default: numba's own fallback).
    A plan's run leaves compiling to the compiler process (background.py); where no cache is
    writable, the loop is compiled in every process instead, at its first call."""
    try:
        loop = njit(cache=True, nogil=True, parallel=parallel, fastmath=fastmath)(fn)
    except RuntimeError as error:
        if "cannot cache" not in str(error):
            raise
        loop = njit(nogil=True, parallel=parallel, fastmath=fastmath)(fn)
    else:
        background.defer(loop, fn.__qualname__)
    LOOPS[fn.__qualname__] = loop
    return loop


def cache_status() -> tuple[str | None, int, int]:
    """Where the compiled loops' machine code is cached (None: nowhere writable, so every
    process compiles them), how many loops have machine code there, and how many there are:
    warm when every one has (a machine's first run compiled them)."""
    path, cached = None, 0
    for loop in LOOPS.values():
        cache = getattr(loop, "_cache", None)
        index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
        if index is None:
            continue
        path = getattr(cache, "cache_path", path)
        cached += os.path.exists(index)
    return path, cached, len(LOOPS)


def _serial(fn: Callable[..., None], fastmath: bool | set[str] = False) -> Callable[..., None]:
    """fn compiled as written, run on the calling thread."""
    return _jit(fn, False, fastmath)


def _inlined(fn: Callable[..., None]) -> Callable[..., None]:
    """fn inlined into the loops that call it (in numba's IR, before LLVM): the views they pass
    it, a row or a pixel's channels, then cost nothing. Called per row or pixel, each view was
    a new array with its reference counts and LLVM could not optimize across the call: int8
    MobileNetV2's 112x112x32 depthwise layer took 1.5x as long, a standalone RESCALE of
    12544x96 1.7x; bias and clamp (_bias_clamp_row) called per pixel made the fp32 stem take
    1.7x as long, the fp32 depthwise layer 1.5x."""
    return njit(nogil=True, inline="always")(fn)


_PRANGE_ONLY = {"prange": True, "comprehension": False, "setitem": False, "reduction": False,
                "numpy": False, "stencil": False, "fusion": False, "inplace_binop": False}
"""numba's parallel options: only the explicit prange loops (compiles in about half the time)."""


def _threaded(fn: Callable[..., None], fastmath: bool | set[str] = False) -> Callable[..., None]:
    """fn with its prange split over numba's threads (for callers that check threads.spread())."""
    return _jit(fn, _PRANGE_ONLY, fastmath)


class _RowLoop:
    """A loop over rows (its `prange`) compiled twice, each on first use: as written, and with
    the rows split over numba's threads, which run it when threads.spread() says so. Each
    row's arithmetic is the same either way. `contract`: a multiply followed by an add may be
    one fused multiply-add (numba's fastmath "contract"; nothing else is reordered), for the
    loops whose floats need no specified order of operations."""

    def __init__(self, fn: Callable[..., None], *, contract: bool = False):
        fastmath = {"contract"} if contract else False
        self.serial = _serial(fn, fastmath)
        # Its own name, so numba's on-disk cache keeps the two apart.
        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        twin.__qualname__ = f"{fn.__qualname__}_threaded"
        self.threaded = _threaded(twin, fastmath)
        self.__doc__, self.__name__ = fn.__doc__, fn.__name__

    def __call__(self, *args: object) -> None:
        (self.threaded if threads.spread() else self.serial)(*args)


_POINTER = nbtypes.voidptr
_SGEMM = nbtypes.ExternalFunction("pyvgf_sgemm", nbtypes.void(*[_POINTER] * 13))
_DGEMM = nbtypes.ExternalFunction("pyvgf_dgemm", nbtypes.void(*[_POINTER] * 13))
"""BLAS's Fortran GEMMs (every operand by address), bound by blas.py to MKL's or OpenBLAS's."""
_INT = nbtypes.int32
_GEMM_INT8 = nbtypes.ExternalFunction("pyvgf_gemm_s8u8s32", nbtypes.void(
    *[_INT] * 7, nbtypes.float32, _POINTER, _INT, nbtypes.int8, _POINTER, _INT, nbtypes.int8,
    nbtypes.float32, _POINTER, _INT, _POINTER))
"""MKL's int8 GEMM (cblas_gemm_s8u8s32), bound by blas.py only where it is exact (blas.INT8):
the loops calling it are called only then."""


@intrinsic
def _wide_vectors(typingctx: object) -> tuple[object, Callable[..., object]]:
    """Marks the function it is called in (after numba's inlining: the loop body it lands
    in) as preferring 512-bit vectors where the CPU has them. LLVM's own choice for such
    CPUs is 256 bits, to spare their clock; per loop, not numba's whole process."""
    def codegen(context: object, builder: object, signature: object, args: object) -> object:
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')  # type: ignore[attr-defined]
        return context.get_dummy_value()  # type: ignore[attr-defined]
    return nbtypes.void(), codegen


@_inlined
def _operand(x: np.ndarray) -> tuple[int, int]:
    """How BLAS's column-major GEMM reads x.T from x's memory: ("N" or "T", its leading
    dimension); x has a unit stride along one of its axes."""
    rows, cols = x.shape
    row_step, col_step = x.strides[0] // x.itemsize, x.strides[1] // x.itemsize
    if col_step == 1 or cols == 1:
        return 78, max(row_step if rows > 1 else cols, cols, 1)
    return 84, max(col_step if cols > 1 else rows, rows, 1)


@_inlined
def _gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b for float32 or float64 matrices, each with a unit stride along one axis
    (out along its rows), on the calling thread: out.T = b.T @ a.T in BLAS's column-major
    terms, so row strides (a block of out's columns) and transposed views cost no copy."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        out[:] = 0
        return
    trans = np.empty(2, np.uint8)
    trans[0], lda = _operand(b)
    trans[1], ldb = _operand(a)
    sizes = np.empty(6, np.int32)
    sizes[0], sizes[1], sizes[2], sizes[3], sizes[4] = n, m, k, lda, ldb
    sizes[5] = max(out.strides[0] // out.itemsize if m > 1 else n, n, 1)
    scale = np.empty(2, out.dtype)
    scale[0], scale[1] = 1, 0
    operands = (trans[0:].ctypes, trans[1:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes,
                sizes[2:].ctypes, scale[0:].ctypes, b.ctypes, sizes[3:].ctypes, a.ctypes,
                sizes[4:].ctypes, scale[1:].ctypes, out.ctypes, sizes[5:].ctypes)
    if out.itemsize == 4:
        _SGEMM(*operands)
    else:
        _DGEMM(*operands)


@_inlined
def _gemm_int8(x: np.ndarray, w: np.ndarray, acc: np.ndarray) -> None:
    """acc = x @ w, exact in int32, for uint8 x [M, K] and int8 w [K, N] (each with a unit
    stride along its rows, as acc): in CBLAS's column-major terms acc.T = w.T @ x.T, with
    constant offsets 0."""
    m, k = x.shape
    n = w.shape[1]
    if m == 0 or n == 0:
        return
    zero = np.zeros(1, np.int32)
    _GEMM_INT8(np.int32(102), np.int32(111), np.int32(111), np.int32(173), np.int32(n),
               np.int32(m), np.int32(k), np.float32(1), w.ctypes,
               np.int32(max(w.strides[0] if k > 1 else n, n, 1)), np.int8(0), x.ctypes,
               np.int32(max(x.strides[0] if m > 1 else k, k, 1)), np.int8(0), np.float32(0),
               acc.ctypes, np.int32(max(acc.strides[0] // 4 if m > 1 else n, n, 1)), zero.ctypes)


@_inlined
def _aligned(shape: tuple, dtype: object) -> np.ndarray:
    """np.empty(shape, dtype) starting on a 64-byte boundary, a cache line, where numba
    aligns to 32 bytes: the loops' 512-bit loads and stores of a row then never straddle two
    lines (alone, 3x3 depthwise layers of MobileNetV2 took 0.70-0.75x the time so)."""
    size = 1
    for extent in shape:
        size *= extent
    buf = np.empty(size + 64, dtype)
    skip = (64 - buf.ctypes.data % 64) % 64 // buf.itemsize
    return buf[skip:skip + size].reshape(shape)


@_inlined
def _plus_128(x: np.ndarray) -> np.ndarray:
    """int8 x [M, K] + 128 as a new uint8 array: _gemm_int8's input, made a block at a time
    inside the loops, in cache and on their threads, where a numpy pass over the whole input
    before them ran on one thread."""
    out = np.empty(x.shape, np.uint8)
    for i in range(x.shape[0]):
        row, into = x[i], out[i]
        for j in range(row.shape[0]):
            into[j] = np.uint8(np.int32(row[j]) + 128)
    return out


@_inlined
def _bias_clamp_row(row: np.ndarray, bias: np.ndarray, low: float, high: float,
                    nan_to_low: bool) -> None:
    """In place: row + bias, clamped to [low, high] in row's type; NaN stays NaN (or becomes
    low when nan_to_low), as numpy's clip followed by copyto does."""
    for c in range(row.shape[0]):
        v = row[c] + bias[c]
        if v < low:
            v = low
        elif v > high:
            v = high
        elif nan_to_low and v != v:
            v = low
        row[c] = v


@_inlined
def _add_row(row: np.ndarray, other: np.ndarray) -> None:
    """In place: row + other, in row's type (a residual ADD fused after a GEMM's finish)."""
    for c in range(row.shape[0]):
        row[c] += other[c]


@_inlined
def _window(x: np.ndarray, zero_point: float, w: np.ndarray, b: int, top: int, left: int,
            dilation_y: int, dilation_x: int, out: np.ndarray) -> None:
    """out = the sum, from zero and in (ky, kx) order, of (x[b] - zero_point) * w over the
    window's taps from (top, left) that land inside x: padded taps are skipped, as the
    specification does, so nothing is padded."""
    height, width = x.shape[1], x.shape[2]
    out[:] = 0
    for ky in range(w.shape[0]):
        iy = top + ky * dilation_y
        if iy < 0 or iy >= height:
            continue
        for kx in range(w.shape[1]):
            ix = left + kx * dilation_x
            if ix < 0 or ix >= width:
                continue
            row, wt = x[b, iy, ix], w[ky, kx]
            for c in range(out.shape[0]):
                out[c] += (row[c] - zero_point) * wt[c]


@_inlined
def _windows_3x3(x: np.ndarray, zero_point: float, w: np.ndarray, b: int, top: int,
                 left: int, stride_x: int, dilation_y: int, dilation_x: int,
                 out: np.ndarray) -> None:
    """_window's sums for a 3x3 kernel into each out[i] (i along the row), the window of
    out[i] starting at (top, left + i * stride_x) and lying wholly inside x: every tap is
    summed, each channel's nine products in one register, from zero and in (ky, kx) order,
    the loop over contiguous channels vectorized (_span_3x3 of one pixel's channels). x is
    C-contiguous."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    xf = x.reshape(-1)
    row, pixel = width * channels * dilation_y, channels * dilation_x
    for i in range(out.shape[0]):
        first = ((b * height + top) * width + left + i * stride_x) * channels
        _span_3x3(xf, first, row, pixel, zero_point, w, channels, out[i])


@_inlined
def _spans_3x3(x: np.ndarray, zero_point: float, w: np.ndarray, b: int, top: int, left: int,
               dilation_y: int, out: np.ndarray) -> None:
    """_windows_3x3 for stride 1 and no dilation along the row: the windows of consecutive
    outputs are one input pixel apart, so each tap of a run of `span` outputs reads one
    contiguous span of span * C inputs, and one vectorized loop sums the run's channels at
    once (w holds each tap's C weights `span` times over: conv._Depthwise tiles them). The
    same sums in the same order; a pixel of few channels (MobileNetV2's first, 32) no longer
    pays a loop's setup for two vectors. x and out are C-contiguous."""
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    span = w.shape[2] // channels
    xf, of = x.reshape(-1), out.reshape(-1)
    row = width * channels * dilation_y
    for i in range(0, out.shape[0], span):
        count = min(span, out.shape[0] - i) * channels
        first = ((b * height + top) * width + left + i) * channels
        _span_3x3(xf, first, row, channels, zero_point, w, count,
                  of[i * channels:i * channels + count])


@_inlined
def _span_3x3(xf: np.ndarray, first: int, row: int, pixel: int, zero_point: float,
              w: np.ndarray, count: int, out: np.ndarray) -> None:
    """out[j] for j < count: the sum, from zero and in (ky, kx) order, of (xf[first + ky * row
    + kx * pixel + j] - zero_point) * w[ky, kx, j] over the nine taps."""
    zero = w.dtype.type(0)
    top, middle, bottom = first, first + row, first + 2 * row
    r0 = xf[top:top + count]
    r1 = xf[top + pixel:top + pixel + count]
    r2 = xf[top + 2 * pixel:top + 2 * pixel + count]
    r3 = xf[middle:middle + count]
    r4 = xf[middle + pixel:middle + pixel + count]
    r5 = xf[middle + 2 * pixel:middle + 2 * pixel + count]
    r6 = xf[bottom:bottom + count]
    r7 = xf[bottom + pixel:bottom + pixel + count]
    r8 = xf[bottom + 2 * pixel:bottom + 2 * pixel + count]
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = (w[0, 0], w[0, 1], w[0, 2], w[1, 0], w[1, 1],
                                          w[1, 2], w[2, 0], w[2, 1], w[2, 2])
    for j in range(count):
        s = zero
        s += (r0[j] - zero_point) * w0[j]
        s += (r1[j] - zero_point) * w1[j]
        s += (r2[j] - zero_point) * w2[j]
        s += (r3[j] - zero_point) * w3[j]
        s += (r4[j] - zero_point) * w4[j]
        s += (r5[j] - zero_point) * w5[j]
        s += (r6[j] - zero_point) * w6[j]
        s += (r7[j] - zero_point) * w7[j]
        s += (r8[j] - zero_point) * w8[j]
        out[j] = s


@_inlined
def _unfinished(w: np.ndarray) -> tuple:
    """_window_row's `finish` of sums left as they are: no bias (of w's type)."""
    return w[0, 0, :0], 0, 0, False


@_inlined
def _window_row(x: np.ndarray, zero_point: float, w: np.ndarray, b: int, top: int,
                pad_left: int, stride_x: int, dilation_y: int, dilation_x: int,
                out: np.ndarray, finish: tuple) -> None:
    """out [OW, C] = _window's sums for each output of the row whose windows start at row
    `top`, then each + bias[c], clamped as _bias_clamp_row says, where `finish` (bias, low,
    high, nan_to_low) has a bias: a 3x3 kernel's outputs by _WINDOWS_3X3, where it takes
    them; else those whose window lies inside x by _spans_3x3 or _windows_3x3, the others (at
    the borders, or every one for other kernels) by _window."""
    _wide_vectors()
    kh, kw, width = w.shape[0], w.shape[1], out.shape[0]
    height, columns, channels = x.shape[1], x.shape[2], x.shape[3]
    first = last = width  # the outputs first..last read no padding
    if kh == 3 and kw == 3:
        first = min(width, (pad_left + stride_x - 1) // stride_x)
        last = max(first, min(width, (columns - 1 - 2 * dilation_x + pad_left) // stride_x + 1))
        line = (b * height + top) * columns
        ox = 0
        while ox < width:  # each output at the borders, then the run first..last at once
            count = max(1, last - first) if ox == first else 1
            left = ox * stride_x - pad_left
            done = _WINDOWS_3X3(x, (line + left) * channels, columns * channels * dilation_y,
                                channels * dilation_x, channels * stride_x, zero_point, w,
                                out[ox:ox + count], count,
                                _taps_inside(top, height, dilation_y, left, columns, dilation_x),
                                finish)
            if done < channels:
                break
            ox += count
        if ox == width:
            return
        if top < 0 or top + 2 * dilation_y >= height:
            first = last = width
        elif stride_x == 1 and dilation_x == 1:
            _spans_3x3(x, zero_point, w, b, top, first - pad_left, dilation_y, out[first:last])
        else:
            _windows_3x3(x, zero_point, w, b, top, first * stride_x - pad_left, stride_x,
                         dilation_y, dilation_x, out[first:last])
    for ox in range(first):
        _window(x, zero_point, w, b, top, ox * stride_x - pad_left, dilation_y, dilation_x,
                out[ox])
    for ox in range(last, width):
        _window(x, zero_point, w, b, top, ox * stride_x - pad_left, dilation_y, dilation_x,
                out[ox])
    if finish[0].shape[0]:
        for ox in range(width):
            _bias_clamp_row(out[ox], finish[0], finish[1], finish[2], finish[3])


@_RowLoop
def depthwise_rows(x: np.ndarray, zero_point: float, w: np.ndarray, pad_top: int, pad_left: int,
                   stride_y: int, stride_x: int, dilation_y: int, dilation_x: int, first: int,
                   acc: np.ndarray, finish: bool, bias: np.ndarray, low: float, high: float,
                   nan_to_low: bool) -> None:
    """Output rows first.. of a depthwise convolution (multiplier 1) of x [N, H, W, C] with
    weights w [KH, KW, C] into acc [N, rows, OW, C], each row as _window_row sums it. With
    `finish`, each output then gets + bias[c], clamped as _bias_clamp_row says, while its
    row is in cache."""
    n, rows = acc.shape[:2]
    finishing = (bias if finish else bias[:0], low, high, nan_to_low)
    for j in prange(n * rows):
        b, r = j // rows, j % rows
        _window_row(x, zero_point, w, b, (first + r) * stride_y - pad_top, pad_left, stride_x,
                    dilation_y, dilation_x, acc[b, r], finishing)


@_RowLoop
def depthwise_rows_rescaled(x: np.ndarray, zero_point: float, w: np.ndarray, pad_top: int,
                            pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                            dilation_x: int, out: np.ndarray, offset: np.ndarray,
                            multiplier: np.ndarray, shift: np.ndarray, output_zp: int, low: int,
                            high: int, double_round: bool) -> None:
    """depthwise_rows of every output row, each row's sums (held as w's type) + offset
    wrapped to int32 and rescaled into out [N, OH, OW, C] as _rescale_block does, while they
    are in cache."""
    n, rows, width, channels = out.shape
    rescale = (offset, multiplier, shift, output_zp, low, high, double_round)
    lanes = _lanes(rescale)
    for j in prange(n * rows):
        b, r = j // rows, j % rows
        acc = _aligned((width, channels), w.dtype)
        _window_row(x, zero_point, w, b, r * stride_y - pad_top, pad_left, stride_x,
                    dilation_y, dilation_x, acc, _unfinished(w))
        _rescale_block(acc, width, rescale, lanes, out[b, r], 0)


@_RowLoop
def depthwise_gemm_rows(x: np.ndarray, zero_point: float, w: np.ndarray, pad_top: int,
                        pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                        dilation_x: int, first: tuple, matrix: np.ndarray, then: tuple,
                        residual: np.ndarray, out: np.ndarray, band: int, groups: int) -> None:
    """A depthwise convolution finished as `first` says (bias, low, high, nan_to_low: as
    depthwise_rows's finish), then a 1x1 convolution of its result by `matrix` ([C, OC], or
    its float_panels), finished as `then` says, + `residual`'s rows where it has any: out
    [N, OH, OW, OC], in bands of `band` output rows times `groups` groups of output columns
    over numba's threads (_depthwise_gemm_band; each group of a band makes the band's
    depthwise rows)."""
    n, rows = out.shape[0], out.shape[1]
    bands = -(-rows // band)
    for j in prange(n * bands * groups):
        b, k, g = j // (bands * groups), j // groups % bands, j % groups
        _depthwise_gemm_band(x, zero_point, w, pad_top, pad_left, stride_y, stride_x,
                             dilation_y, dilation_x, first, matrix, then, residual, out, b,
                             k * band, min(rows, k * band + band), g, groups)


@_inlined
def _group(g: int, groups: int, columns: int) -> tuple[int, int]:
    """The panels (PANEL columns each) of group g of `groups` of a product's `columns`."""
    count = -(-columns // PANEL)
    return g * count // groups, (g + 1) * count // groups


@_serial
def _depthwise_gemm_band(x: np.ndarray, zero_point: float, w: np.ndarray, pad_top: int,
                         pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                         dilation_x: int, first: tuple, matrix: np.ndarray, then: tuple,
                         residual: np.ndarray, out: np.ndarray, b: int, top: int,
                         stop: int, g: int, groups: int) -> None:
    """Output rows top..stop, column group g of `groups` (_group), of image b of
    depthwise_gemm_rows: their depthwise rows made into a block of their own and multiplied
    while in cache; the depthwise result is never whole. Called, not inlined, by both forms
    of the loop: compiled once, where inlined into each it took 5 s and 13 s to compile."""
    width, columns, channels = out.shape[2], out.shape[3], x.shape[3]
    made = _aligned((stop - top, width, channels), x.dtype)
    for r in range(top, stop):
        _window_row(x, zero_point, w, b, r * stride_y - pad_top, pad_left, stride_x,
                    dilation_y, dilation_x, made[r - top], first)
    part = out[b, top:stop].reshape(-1, columns)
    start, end = _group(g, groups, columns)
    _product(made.reshape(-1, channels), matrix, start, end, part, then[0], then[1], then[2],
             then[3], residual[b, top:stop].reshape(-1, columns)
             if residual.shape[0] else part[:0])


@_RowLoop
def expanded_gemm_rows(x: np.ndarray, expand: np.ndarray, widened: tuple, zero_point: float,
                       w: np.ndarray, pad_top: int, pad_left: int, stride_y: int,
                       stride_x: int, dilation_y: int, dilation_x: int, first: tuple,
                       matrix: np.ndarray, then: tuple, residual: np.ndarray, out: np.ndarray,
                       band: int, groups: int, halo: bool) -> None:
    """depthwise_gemm_rows of the 1x1 convolution of x [1, H, W, IC] by `expand` ([IC, C] or
    its float_panels), finished as `widened` says (bias, low, high, nan_to_low):
    MobileNetV2's expansion, depthwise layer and projection in one call. With `halo`, each
    band makes the rows of the expansion that its windows read into a block of its own
    (_expanded_band; a row at the edge of two bands is made by both), so that the expansion
    is never whole either; else the expansion is made whole first, in as many blocks of rows
    as there are bands times `groups` groups of its columns, then the bands and groups as
    depthwise_gemm_rows makes them."""
    rows, height, channels = out.shape[1], x.shape[1], x.shape[3]
    bands = -(-rows // band)
    if halo:
        for k in prange(bands):
            _expanded_band(x, expand, widened, zero_point, w, pad_top, pad_left, stride_y,
                           stride_x, dilation_y, dilation_x, first, matrix, then, residual, out,
                           k * band, min(rows, k * band + band))
        return
    wide = widened[0].shape[0]
    made = _aligned((1, height, x.shape[2], wide), x.dtype)
    step = -(-height // bands)
    for j in prange(bands * groups):
        k, g = j // groups, j % groups
        start, end = min(height, k * step), min(height, k * step + step)
        block = made[0, start:end].reshape(-1, wide)
        part_first, part_stop = _group(g, groups, wide)
        _product(x[0, start:end].reshape(-1, channels), expand, part_first, part_stop, block,
                 widened[0], widened[1], widened[2], widened[3], block[:0])
    for j in prange(bands * groups):
        k, g = j // groups, j % groups
        _depthwise_gemm_band(made, zero_point, w, pad_top, pad_left, stride_y, stride_x,
                             dilation_y, dilation_x, first, matrix, then, residual, out, 0,
                             k * band, min(rows, k * band + band), g, groups)


@_serial
def _expanded_band(x: np.ndarray, expand: np.ndarray, widened: tuple, zero_point: float,
                   w: np.ndarray, pad_top: int, pad_left: int, stride_y: int, stride_x: int,
                   dilation_y: int, dilation_x: int, first: tuple, matrix: np.ndarray,
                   then: tuple, residual: np.ndarray, out: np.ndarray, top: int,
                   stop: int) -> None:
    """Output rows top..stop of expanded_gemm_rows with `halo`: the rows of the expansion
    that their windows read (the rest of each window being padding) made into a block, then
    the band of depthwise_gemm_rows from that block, whose row 0 is the expansion's row
    `start` (called, not inlined, as _depthwise_gemm_band)."""
    start, end = _band_input(top, stop, w.shape[0], pad_top, stride_y, dilation_y, x.shape[1])
    wide = widened[0].shape[0]
    made = _aligned((1, end - start, x.shape[2], wide), x.dtype)
    block = made.reshape(-1, wide)
    group_first, group_stop = _group(0, 1, wide)
    _product(x[0, start:end].reshape(-1, x.shape[3]), expand, group_first, group_stop, block,
             widened[0], widened[1], widened[2], widened[3], block[:0])
    _depthwise_gemm_band(made, zero_point, w, pad_top + start, pad_left, stride_y, stride_x,
                         dilation_y, dilation_x, first, matrix, then, residual, out, 0, top,
                         stop, 0, 1)


@_inlined
def _band_input(top: int, stop: int, kernel: int, pad_top: int, stride_y: int, dilation_y: int,
                height: int) -> tuple[int, int]:
    """The rows start..end of a depthwise layer's input of `height` rows that the windows of
    its output rows top..stop read (the rest of each window being padding)."""
    return (max(0, top * stride_y - pad_top),
            min(height, (stop - 1) * stride_y - pad_top + (kernel - 1) * dilation_y + 1))


@_serial
def rescale_rows(x: np.ndarray, offset: np.ndarray, wrap_bits: int, multiplier: np.ndarray,
                 shift: np.ndarray, double_round: bool, output_zp: int, low: int, high: int,
                 out: np.ndarray) -> None:
    """RESCALE of x [rows, C] (integers, or floats holding integers) into out [rows, C].

    Per element of channel c, in int64: v = x + offset[c], wrapped to a signed `wrap_bits`
    integer when wrap_bits is not 0; then the specification's apply_scale
    (v * multiplier[c] + 2**(shift[c]-1), with double rounding's +-2**30 when shift > 31,
    arithmetically shifted right by shift[c]), plus output_zp, clamped to [low, high] and
    stored with out's type (an unsigned result is stored as its bit pattern): _rescaled."""
    rows, channels = x.shape
    half = np.int64(1) << (wrap_bits - 1) if wrap_bits else np.int64(0)
    mask = (half << 1) - 1
    for i in range(rows):
        for c in range(channels):
            v = np.int64(x[i, c]) + offset[c]
            if wrap_bits:
                v = ((v + half) & mask) - half
            out[i, c] = _rescaled(v, multiplier[c], shift[c], output_zp, low, high, double_round)


@_inlined
def _rescaled(v: np.int64, multiplier: np.int64, shift: np.int64, output_zp: int, low: int,
              high: int, double_round: bool) -> np.int64:
    """RESCALE of one int64 value: (v * multiplier + 2**(shift-1)) >> shift, with double
    rounding's +-2**30 (the sign of v's) added to the rounding when shift > 31, plus output_zp,
    clamped to [low, high]."""
    rounding = np.int64(1) << (shift - 1)
    if double_round and shift > 31:
        rounding += (np.int64(1) << 30) if v >= 0 else -(np.int64(1) << 30)
    y = ((v * multiplier + rounding) >> shift) + output_zp
    return min(max(y, low), high)


@_inlined
def _rescale_row(x: np.ndarray, offset: np.ndarray, wrap32: bool, multiplier: np.ndarray,
                 shift: np.ndarray, output_zp: int, low: int, high: int, double_round: bool,
                 out: np.ndarray) -> None:
    """One row of rescale_common_rows: out[c] from x[c] + offset[c]. Each rounding has a
    loop of its own (_rescaled_span with the flag a constant): with the choice inside the loop
    over the row, rounding once took 1.12x as long (MobileNetV2 int8)."""
    _wide_vectors()
    if double_round:
        _rescaled_span(x, offset, wrap32, multiplier, shift, output_zp, low, high, True, out)
    else:
        _rescaled_span(x, offset, wrap32, multiplier, shift, output_zp, low, high, False, out)


@_inlined
def _rescaled_span(x: np.ndarray, offset: np.ndarray, wrap32: bool, multiplier: np.ndarray,
                   shift: np.ndarray, output_zp: int, low: int, high: int, double_round: bool,
                   out: np.ndarray) -> None:
    """The loop of _rescale_row."""
    for c in range(x.shape[0]):
        v = np.int64(x[c]) + offset[c]
        if wrap32:
            v = np.int64(np.int32(v))
        out[c] = _rescaled(v, multiplier[c], shift[c], output_zp, low, high, double_round)


@_RowLoop
def rescale_common_rows(x: np.ndarray, offset: np.ndarray, wrap32: bool, multiplier: np.ndarray,
                        shift: np.ndarray, output_zp: int, low: int, high: int,
                        double_round: bool, out: np.ndarray) -> None:
    """rescale_rows wrapping to int32 (wrap32) or not at all: nearly every RESCALE, in a loop
    free of the other widths' branches (about a fifth faster), its rows over numba's threads."""
    for i in prange(x.shape[0]):
        _rescale_row(x[i], offset, wrap32, multiplier, shift, output_zp, low, high, double_round,
                     out[i])


@_serial
def bias_clamp_rows(x: np.ndarray, bias: np.ndarray, low: float, high: float,
                    nan_to_low: bool) -> None:
    """In place on each row of x [rows, C], as _bias_clamp_row says (on one thread: a band of
    a convolution's result is too little work to share)."""
    for i in range(x.shape[0]):
        _bias_clamp_row(x[i], bias, low, high, nan_to_low)


@_RowLoop
def gemm_rows(a: np.ndarray, b: np.ndarray, out: np.ndarray, blocks: int, finish: bool,
              bias: np.ndarray, low: float, high: float, nan_to_low: bool,
              residual: np.ndarray) -> None:
    """out = a @ b for float32 or float64 matrices (a and out C-contiguous, b C- or
    F-contiguous), one BLAS call per block of out's rows, `blocks` of them over numba's
    threads. With `finish`, each block's rows then get + bias, clamped as _bias_clamp_row
    says, then + residual's rows where it has any (C-contiguous, out's shape), while the
    block is in cache."""
    rows = out.shape[0]
    step = -(-rows // blocks)
    for k in prange(blocks):
        first, stop = k * step, min(rows, k * step + step)
        if first < stop:
            if finish:
                _finished_product(a[first:stop], b, out[first:stop], bias, low, high,
                                  nan_to_low, residual[first:stop])
            else:
                _gemm(a[first:stop], b, out[first:stop])


@_inlined
def _finish_rows(out: np.ndarray, bias: np.ndarray, low: float, high: float, nan_to_low: bool,
                 residual: np.ndarray) -> None:
    """In place, each row of out [rows, C] + bias, clamped as _bias_clamp_row says, then +
    residual's row where it has any (out's shape): a GEMM block's finish while in cache."""
    for i in range(out.shape[0]):
        _bias_clamp_row(out[i], bias, low, high, nan_to_low)
        if residual.shape[0]:
            _add_row(out[i], residual[i])


@_threaded
def gemm_columns(a: np.ndarray, bt: np.ndarray, out: np.ndarray, blocks: int, finish: bool,
                 bias: np.ndarray, low: float, high: float, nan_to_low: bool,
                 residual: np.ndarray) -> None:
    """gemm_rows with out's columns split instead of its rows, for results of few rows: each
    block's BLAS call then packs its own columns of b, not the whole of it. bt is b
    transposed, C-contiguous [N, K]; each block's columns are made in place (and finished,
    as gemm_rows does, while in cache)."""
    rows, cols = out.shape
    step = -(-cols // blocks)
    for k in prange(blocks):
        first, stop = k * step, min(cols, k * step + step)
        if first < stop:
            _gemm(a, bt[first:stop].T, out[:, first:stop])
            if finish:
                # out[i, first:stop] is typed contiguous, a row of out[:, first:stop] not: its
                # loop was not vectorized, and 96 -> 576 channels at 14x14 took 1.7x as long.
                for i in range(rows):
                    _bias_clamp_row(out[i, first:stop], bias[first:stop], low, high, nan_to_low)
                    if residual.shape[0]:
                        _add_row(out[i, first:stop], residual[i, first:stop])


@_threaded
def gemm_batch(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out[i] = a[i] @ b[i] for float32 or float64 batches [B, M, K] @ [B, K, N] (each matrix
    of a and b with a unit stride along one axis, out C-contiguous), the B products over
    numba's threads, one BLAS call each."""
    for i in prange(a.shape[0]):
        _gemm(a[i], b[i], out[i])


@_RowLoop
def gemm_rows_rescaled(a: np.ndarray, a_offset: float, b: np.ndarray, out: np.ndarray,
                       blocks: int, offset: np.ndarray, multiplier: np.ndarray, shift: np.ndarray,
                       output_zp: int, low: int, high: int, double_round: bool) -> None:
    """out = rescale_common_rows of (a - a_offset) @ b + offset wrapped to int32: a holds
    integers (an integer convolution's input), b is float32 or float64 and every such sum is
    exact in it (kernels.exact_dtype). `blocks` blocks of out's rows over numba's threads;
    each converts its rows of a to b's type, makes them times b in one BLAS call and
    rescales the result, all while in cache."""
    rows, cols = out.shape
    step = -(-rows // blocks)
    for k in prange(blocks):
        first, stop = k * step, min(rows, k * step + step)
        if first < stop:
            part = _aligned((stop - first, a.shape[1]), b.dtype)
            for i in range(stop - first):
                for j in range(a.shape[1]):
                    part[i, j] = a[first + i, j] - a_offset
            acc = _aligned((stop - first, cols), b.dtype)
            _gemm(part, b, acc)
            for i in range(stop - first):
                _rescale_row(acc[i], offset, True, multiplier, shift, output_zp, low, high,
                             double_round, out[first + i])


@_threaded
def gemm_columns_rescaled(a: np.ndarray, a_offset: float, bt: np.ndarray, out: np.ndarray,
                          blocks: int, offset: np.ndarray, multiplier: np.ndarray,
                          shift: np.ndarray, output_zp: int, low: int, high: int,
                          double_round: bool) -> None:
    """gemm_rows_rescaled with out's columns split instead of its rows (see gemm_columns;
    bt is b transposed, C-contiguous): each block converts all of a, makes its columns in
    one BLAS call and rescales them."""
    rows, cols = out.shape
    step = -(-cols // blocks)
    for k in prange(blocks):
        first, stop = k * step, min(cols, k * step + step)
        if first < stop:
            whole = _aligned(a.shape, bt.dtype)
            for i in range(rows):
                for j in range(a.shape[1]):
                    whole[i, j] = a[i, j] - a_offset
            part = _aligned((rows, stop - first), bt.dtype)
            _gemm(whole, bt[first:stop].T, part)
            for i in range(rows):
                _rescale_row(part[i], offset[first:stop], True, multiplier[first:stop],
                             shift[first:stop], output_zp, low, high, double_round,
                             out[i, first:stop])


@_RowLoop
def gemm_rows_int8(x: np.ndarray, w: np.ndarray, out: np.ndarray, blocks: int,
                   offset: np.ndarray, multiplier: np.ndarray, shift: np.ndarray,
                   output_zp: int, low: int, high: int, double_round: bool) -> None:
    """out = rescale_common_rows of (x + 128) @ w + offset wrapped to int32, for int8 x [M, K]
    and w [K, N] (_gemm_int8 of _plus_128(x)): `blocks` blocks of out's rows over numba's
    threads, each made in one call and rescaled while in cache."""
    rows, cols = out.shape
    step = -(-rows // blocks)
    for k in prange(blocks):
        first, stop = k * step, min(rows, k * step + step)
        if first < stop:
            acc = _aligned((stop - first, cols), np.int32)
            _gemm_int8(_plus_128(x[first:stop]), w, acc)
            for i in range(stop - first):
                _rescale_row(acc[i], offset, True, multiplier, shift, output_zp, low, high,
                             double_round, out[first + i])


def _features() -> set[str]:
    """The instruction sets the code numba makes here may use, by LLVM's names: those of
    NUMBA_CPU_FEATURES where the user set them, else this CPU's; none for a CPU named by
    NUMBA_CPU_NAME alone (a portable cache)."""
    if numba_config.CPU_FEATURES is not None:
        return {f[1:] for f in numba_config.CPU_FEATURES.split(",") if f.startswith("+")}
    if numba_config.CPU_NAME is not None:
        return set()
    return {name for name, on in llvmlite.binding.get_host_cpu_features().items() if on}


def _int8_tiles(features: set[str]) -> str | None:
    """The instruction set of the int8 tiles (_int8_products) in code that may use `features`
    (_features's): the first of _TILES they include, else None."""
    return next((isa for isa in _TILES if isa in features), None)


def _lane_rescale(features: set[str], cpu: str) -> bool:
    """Whether int8 RESCALEs run as _rescaled_lanes writes them: where the int8 tiles run and
    the CPU lacks Intel's AVX-512 (_own_vectors), whose 64-bit vector shifts and clamps LLVM
    uses for _rescaled as written (on a 16-core Xeon with AVX-512, Arm's int8 MobileNetV2 took
    1.06-1.15x as long in lanes; on an AMD EPYC with AVX2, 0.80-0.93x; on one with AVX-512
    (Zen 4), 0.88-0.98x)."""
    return _int8_tiles(features) is not None and _own_vectors(features, cpu)


def _own_vectors(features: set[str], cpu: str) -> bool:
    """Whether the loops' own 256-bit kernels (the fp32 tiles, the lane RESCALE) run in code
    that may use `features` on the CPU LLVM calls `cpu`: without AVX-512, or on AMD's CPUs
    (LLVM's "znver" names), whose Zen 4 runs 512-bit vectors as two 256-bit halves and to
    which MKL gives its AVX2 kernels; Intel's AVX-512 doubles the width of MKL's sgemm."""
    return "avx512f" not in features or cpu.startswith("znver")


def _widest(features: set[str]) -> int:
    """The fp32 lanes of the widest vector our own kernels take where _own_vectors lets them
    run: 16 with AVX-512 (there, AMD's), else AVX2's 8."""
    return 16 if "avx512f" in features else 8


def _cpu_name() -> str:
    """The CPU numba compiles for: NUMBA_CPU_NAME where set, else this one (LLVM's name)."""
    return numba_config.CPU_NAME or llvmlite.binding.get_host_cpu_name()


_TILES = {"avx512vnni": (16, 4, 4, 4, "llvm.x86.avx512.vpdpbusd.512"),
          "avxvnni": (8, 4, 6, 2, "llvm.x86.avx512.vpdpbusd.256"),
          "avx2": (8, 2, 6, 2, "llvm.x86.avx2.pmadd.wd")}
"""Per instruction set, best first: the int32 lanes of a register, the input channels of a
packed word, a tile's input rows and groups of lanes per row (its sums in rows x groups
registers: on AVX2's 16, on an AMD EPYC, 4 x 2 took 0.74-0.79x the time of 4 x 3 or 4 x 4
for 24-384 input channels, and 6 x 2 0.85-1.0x that of 4 x 2) and the LLVM intrinsic making
a lane's products: vpdpbusd adds four uint8 x int8 products to each int32 lane (AVX-VNNI:
the same instruction on 256-bit registers, as Intel's client CPUs have it); vpmaddwd,
without VNNI, sums two int16 x int16 products into each lane (exact: vpmaddubsw's int16 sums
would saturate), the weight's int8 pairs widened to int16 as they are loaded (stored as
int16, the weights of 960 or 1280 input channels took 1.2-1.5x the time: twice the bytes to
read)."""

_FEATURES, _CPU = _features(), _cpu_name()
"""_features and _cpu_name, read once at import."""

INT8_TILES = _int8_tiles(_FEATURES)
"""The instruction set gemm_rows_packed's tiles use here, or None where the CPU has none of
them (the loop is then never compiled nor run; numba's cache is keyed to the CPU, so a cached copy
never meets another)."""

LANE_RESCALE = _lane_rescale(_FEATURES, _CPU)
"""Whether the int8 RESCALEs run TILE_LANES int32 lanes a step (_rescaled_lanes) here."""

TILE_LANES, PACK_DEPTH, TILE_ROWS, _TILE_CHUNKS, _PRODUCTS = _TILES[INT8_TILES or "avx512vnni"]
"""The int32 lanes of a register (int8_packed's columns come in groups of as many), the input
channels a packed word holds, a tile's input rows and groups of lanes per row, and the
tiles' intrinsic."""

_WIDEN = PACK_DEPTH == 2
"""Whether a tile's input rows are widened first to int16 + 128 (vpmaddwd), else read as
int8 with their sign bits flipped (vpdpbusd's uint8 is int8 + 128)."""

PACKED = np.dtype(np.int16 if _WIDEN else np.int32)
"""The element type of int8_packed's words: a column's PACK_DEPTH int8 weights each."""

_LANE, _INDEX = ir.IntType(32), ir.IntType(64)
_VECTOR = ir.VectorType(_LANE, TILE_LANES)
_PAIRS = ir.VectorType(ir.IntType(16), 2 * TILE_LANES)
_ZEROS = ir.Constant(_VECTOR, [0] * TILE_LANES)
_SIGN_BITS = ir.Constant(_LANE, 0x80808080 - (1 << 32))


def int8_packed(weight: np.ndarray) -> np.ndarray:
    """An int8 weight [K, N] (K a multiple of PACK_DEPTH) as gemm_rows_packed reads it: PACKED
    words [K / PACK_DEPTH, N rounded up to TILE_LANES], word (g, n) holding
    weight[PACK_DEPTH * g:PACK_DEPTH * (g + 1), n], zero past N."""
    k, n = weight.shape
    width = -(-n // TILE_LANES) * TILE_LANES
    words = np.zeros((k // PACK_DEPTH, width, PACK_DEPTH), np.int8)
    words[:, :n] = weight.reshape(k // PACK_DEPTH, PACK_DEPTH, n).transpose(0, 2, 1)
    return words.view(PACKED).reshape(k // PACK_DEPTH, width)


def _at(builder: ir.IRBuilder, pointer: ir.Value, offset: ir.Value) -> ir.Value:
    """A pointer to TILE_LANES int32 from `offset` int32 past `pointer`."""
    return builder.bitcast(builder.gep(pointer, [offset]), _VECTOR.as_pointer())


def _words(builder: ir.IRBuilder, pointer: ir.Value, offset: ir.Value) -> ir.Value:
    """TILE_LANES packed words from `offset` words past `pointer` (int8_packed's), as the
    intrinsic takes them: int32 lanes of four int8, or int16 pairs widened from int8 ones."""
    if not _WIDEN:
        return builder.load(_at(builder, pointer, offset), align=4)
    int8s = ir.VectorType(ir.IntType(8), 2 * TILE_LANES)
    pairs = builder.bitcast(builder.gep(pointer, [offset]), int8s.as_pointer())
    return builder.sext(builder.load(pairs, align=2), _PAIRS)


def _int8_tile(rows: int, chunks: int) -> Callable[..., None]:
    """An intrinsic tile(x, x_first, x_step, w, column, groups, acc): for `rows` input rows
    (x flat bytes, row r from x_first + r * x_step: int8, or int16 + 128 where _WIDEN) and
    `chunks` groups of TILE_LANES columns from `column` of w [groups, width] (int8_packed),
    acc[r * width + column + ...] (flat int32) = the sums over the first PACK_DEPTH * groups
    input channels of (x + 128) * weight, held in rows x chunks registers while _PRODUCTS
    adds PACK_DEPTH products to each lane per group."""

    @intrinsic
    def tile(typingctx: object, x: object, x_first: object, x_step: object, w: object,
             column: object, groups: object, acc: object) -> tuple[object, Callable[..., object]]:
        def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: tuple) -> object:
            xs, first, step, ws, col, count, accs = args
            x_array, w_array, acc_array = (
                context.make_array(t)(context, builder, v)
                for t, v in zip(signature.args[::3], (xs, ws, accs)))
            x_data, acc_data = x_array.data, acc_array.data
            width = builder.extract_value(w_array.shape, 1)
            vector = _PAIRS if _WIDEN else _VECTOR
            products = _intrinsic(builder, _PRODUCTS, _VECTOR, [vector] * (2 if _WIDEN else 3))
            sums = [[cgutils.alloca_once_value(builder, _ZEROS) for _ in range(chunks)]
                    for _ in range(rows)]
            starts = [builder.gep(x_data, [builder.add(first, builder.mul(_INDEX(r), step))])
                      for r in range(rows)]
            with cgutils.for_range(builder, count) as loop:
                g = loop.index
                row = builder.add(builder.mul(g, width), col)
                words = [_words(builder, w_array.data, builder.add(row, _INDEX(TILE_LANES * c)))
                         for c in range(chunks)]
                for r in range(rows):
                    four = builder.bitcast(builder.gep(starts[r], [builder.mul(g, _INDEX(4))]),
                                           _LANE.as_pointer())
                    word = builder.load(four, align=1)
                    # The sign bits flipped before the broadcast: flipped after it, LLVM 22's
                    # instruction selection never ended.
                    inputs = _splat(builder, word if _WIDEN else builder.xor(word, _SIGN_BITS))
                    for c in range(chunks):
                        total = builder.load(sums[r][c])
                        if _WIDEN:
                            total = builder.add(total, builder.call(products, [
                                builder.bitcast(inputs, _PAIRS), words[c]]))
                        else:
                            total = builder.call(products, [total, inputs, words[c]])
                        builder.store(total, sums[r][c])
            for r in range(rows):
                out = builder.add(builder.mul(_INDEX(r), width), col)
                for c in range(chunks):
                    builder.store(builder.load(sums[r][c]),
                                  _at(builder, acc_data, builder.add(out, _INDEX(TILE_LANES * c))), align=4)
            return context.get_dummy_value()

        return nbtypes.void(x, x_first, x_step, w, column, groups, acc), codegen

    return tile


@_inlined
def _lane_scales(rescale: tuple, lowest: int, highest: int, wraps: bool, words: np.ndarray,
                 roundings: np.ndarray, limits: np.ndarray) -> bool:
    """A kernels.Rescale as the lane RESCALE (_rescaled_lanes) takes it, made once per block
    of rows into words int32 [4, C] (the offsets wrapped to int32, the multipliers, the left
    shifts, the right shifts), roundings int64 [2, C] (added to the product of a value >= 0
    and of one < 0) and limits int32 [3] (low and high less output_zp, within int32, and
    output_zp). Its input lies in lowest..highest; where it `wraps`, the value plus offset is
    wrapped to int32 (a convolution's RESCALE), else it must lie within int32 (a residual
    ADD's, which does not wrap). Returns whether it can: LANE_RESCALE holds, every multiplier
    is >= 0, every shift 1..63 and, where a shift is below 32, the value shifted left by
    32 - shift lies within int32 (the product's high 32 bits are then shifted right by
    shift - 32, or not at all)."""
    offset, multiplier, shift = rescale[0], rescale[1], rescale[2]
    if not LANE_RESCALE:
        return False
    bottom, top = np.int64(-(1 << 31)), np.int64((1 << 31) - 1)
    usable = True
    for c in range(offset.shape[0]):
        s = shift[c]
        left = max(0, 32 - s)
        low, high = (bottom, top) if wraps else (lowest + offset[c], highest + offset[c])
        fits = (1 <= s <= 63 and multiplier[c] >= 0 and bottom <= low and high <= top
                and -(np.int64(1) << (31 - left)) <= low and high < (np.int64(1) << (31 - left)))
        usable = usable and fits
        rounding = (np.int64(1) << (s - 1 + left)) if fits else np.int64(0)
        twice = (np.int64(1) << 30) if rescale[6] and s > 31 else np.int64(0)
        words[0, c], words[1, c] = np.int32(offset[c]), np.int32(multiplier[c] if fits else 0)
        words[2, c] = np.int32(left if fits else 0)
        words[3, c] = np.int32(s - 32 + left if fits else 0)
        roundings[0, c], roundings[1, c] = rounding + twice, rounding - twice
    limits[0] = np.int32(min(max(rescale[4] - rescale[3], bottom), top))
    limits[1] = np.int32(min(max(rescale[5] - rescale[3], bottom), top))
    limits[2] = np.int32(rescale[3])
    return usable


@_inlined
def _lanes(rescale: tuple) -> tuple:
    """_lane_scales of a convolution's `rescale` (its int32 sums wrapped) into arrays of their
    own: (whether it can, words, roundings, limits, whether any value < 0 rounds otherwise than
    one >= 0: the RESCALE rounds twice)."""
    n = rescale[0].shape[0]
    words, roundings = np.empty((4, n), np.int32), np.empty((2, n), np.int64)
    limits = np.empty(3, np.int32)
    usable = _lane_scales(rescale, 0, 0, True, words, roundings, limits)
    twice = False
    for c in range(n):  # a loop, not an array expression: numba's prange bodies take none
        twice = twice or roundings[0, c] != roundings[1, c]
    return usable, words, roundings, limits, twice


def _lane_loader(builder: ir.IRBuilder, at: ir.Value) -> Callable[..., ir.Value]:
    """load(array, row, type): TILE_LANES values of `type` from column `at` of `row` of a
    C-contiguous array taken as [rows, its last extent]."""
    def load(array: Any, row: int, type_: ir.Type) -> ir.Value:
        width = builder.extract_value(array.shape, array.shape.type.count - 1)
        start = builder.add(builder.mul(_INDEX(row), width), at)
        vector = ir.VectorType(type_, TILE_LANES)
        return builder.load(builder.bitcast(builder.gep(array.data, [start]), vector.as_pointer()),
                            align=1)
    return load


def _splat(builder: ir.IRBuilder, value: ir.Value, lanes: int = TILE_LANES) -> ir.Value:
    """`value` in every one of `lanes` lanes (of its type)."""
    undefined = ir.Constant(ir.VectorType(value.type, lanes), ir.Undefined)
    return builder.shuffle_vector(builder.insert_element(undefined, value, _LANE(0)), undefined,
                                  ir.Constant(ir.VectorType(_LANE, lanes), [0] * lanes))


def _clamped(builder: ir.IRBuilder, v: ir.Value, low: ir.Value, high: ir.Value,
             to_low: ir.Value) -> ir.Value:
    """A float vector `v` (a sum and its bias) finished as _bias_clamp_row finishes one: clamped
    to [low, high] (vectors of its type), a NaN kept, or made low in the lanes `to_low` (a
    vector of i1) sets."""
    v = builder.select(builder.fcmp_ordered("<", v, low), low, v)
    v = builder.select(builder.fcmp_ordered(">", v, high), high, v)
    return builder.select(builder.and_(to_low, builder.fcmp_unordered("uno", v, v)), low, v)


def _stage(builder: ir.IRBuilder, load: Callable[..., ir.Value], words: Any, roundings: Any,
           limits: Any, stage: int, twice: bool = True) -> tuple:
    """The vectors of one RESCALE (_lane_scales's arrays; `stage`: their first index where
    they hold several) for the columns `load` reads, as _rescaled_lanes takes them: loaded
    once per group of rows. Without `twice`, a value < 0 rounds as one >= 0 does (no RESCALE
    rounding twice), and the second rounding is not loaded (None)."""
    offset, multiplier, left, right = (load(words, 4 * stage + r, _LANE) for r in range(4))
    up, down = (load(roundings, 2 * stage + r, _INDEX) if r == 0 or twice else None
                for r in range(2))
    bounds = [_splat(builder, builder.load(builder.gep(limits.data, [_INDEX(3 * stage + r)])))
              for r in range(3)]
    return (offset, _halves(builder, multiplier), left, right,
            *((builder.shuffle_vector(r, r, _EVEN), builder.shuffle_vector(r, r, _ODD))
              if r is not None else (None, None) for r in (up, down)), *bounds)


_HALF = ir.VectorType(_INDEX, TILE_LANES // 2)
"""Half as many int64 lanes: vpmuldq's products."""
_THIRTY_TWO = ir.Constant(_HALF, [32] * (TILE_LANES // 2))
_NO_PRODUCT = ir.Constant(_HALF, [0] * (TILE_LANES // 2))
_EVEN, _ODD = (ir.Constant(ir.VectorType(_LANE, TILE_LANES // 2), list(range(k, TILE_LANES, 2)))
               for k in (0, 1))
"""Shuffles taking a vector's even lanes, and its odd ones."""
_ODD_DOWN = ir.Constant(_VECTOR, [i | 1 for i in range(TILE_LANES)])
"""A shuffle moving each odd int32 lane to the even one below it (vpshufd)."""
_HIGH_HALVES = ir.Constant(_VECTOR, [i if i % 2 == 0 else TILE_LANES + i for i in range(TILE_LANES)])
"""A shuffle of two vectors taking the first's even int32 lanes and the second's odd ones
(vpblendd): each even product's high half, shifted down, and each odd product's."""


def _halves(builder: ir.IRBuilder, v: ir.Value) -> tuple[ir.Value, ir.Value]:
    """int32 lanes v as int64 lanes: its even lanes, and its odd ones, each sign-extended from
    the low 32 bits of a 64-bit lane (the odd ones moved there first), which vpmuldq reads."""
    return tuple(builder.ashr(builder.shl(builder.bitcast(lanes, _HALF), _THIRTY_TWO), _THIRTY_TWO)
                 for lanes in (v, builder.shuffle_vector(v, v, _ODD_DOWN)))


def _rescaled_lanes(builder: ir.IRBuilder, v: ir.Value, stage: tuple) -> ir.Value:
    """The RESCALE of TILE_LANES int32 values as _rescaled makes them from v + offset wrapped
    to int32, by _stage's vectors: that shifted left, times the multiplier plus its rounding
    in int64, the even and the odd lanes apart (vpmuldq's products, the rounding for a value
    < 0 chosen by the product's sign: a multiplier is >= 0, and where it is 0 both roundings
    give 0), the high 32 bits of that shifted right (the same floor as the whole shift),
    clamped to [low, high] less output_zp (within int32), plus output_zp."""
    offset, multipliers, left, right, ups, downs, low, high, zp = stage
    products = []
    for half, multiplier, up, down in zip(_halves(builder, builder.shl(builder.add(v, offset), left)),
                                          multipliers, ups, downs):
        product = builder.mul(half, multiplier)
        if down is not None:
            up = builder.select(builder.icmp_signed("<", product, _NO_PRODUCT), down, up)
        products.append(builder.add(product, up))
    even = builder.bitcast(builder.lshr(products[0], _THIRTY_TWO), _VECTOR)
    y = builder.shuffle_vector(even, builder.bitcast(products[1], _VECTOR), _HIGH_HALVES)
    y = builder.ashr(y, right)
    y = builder.select(builder.icmp_signed("<", y, low), low, y)
    return builder.add(builder.select(builder.icmp_signed(">", y, high), high, y), zp)


def _lanes_of(builder: ir.IRBuilder, array: Any, row: ir.Value, at: ir.Value) -> ir.Value:
    """TILE_LANES values of a 2-D array with unit strides along its rows, from column `at`
    of `row`, as int32 (sign-extended, or truncated from float32 holding integers)."""
    element = array.data.type.pointee
    vector = ir.VectorType(element, TILE_LANES)
    values = builder.load(_row_at(builder, array, row, at, vector), align=1)
    if isinstance(element, ir.IntType):
        return values if element.width == 32 else builder.sext(values, _VECTOR)
    return builder.fptosi(values, _VECTOR)


def _store_lanes(builder: ir.IRBuilder, array: Any, row: ir.Value, at: ir.Value,
                 y: ir.Value) -> None:
    """int32 lanes y into a 2-D integer array with unit strides along its rows, from column
    `at` of `row`, truncated to its type (each value already within it)."""
    element = array.data.type.pointee
    if element.width < 32:
        y = builder.trunc(y, ir.VectorType(element, TILE_LANES))
    builder.store(y, _row_at(builder, array, row, at, y.type), align=1)


def _rescale_rows(builder: ir.IRBuilder, xs: Any, rows: list, at: ir.Value, stage: tuple,
                  outs: Any, out_row: ir.Value) -> None:
    """The lane RESCALE (_rescaled_lanes, by `stage`) of TILE_LANES values from column `at`
    of each of `rows` of xs, into the same rows of outs from `out_row` on (_store_rows)."""
    ys = [_rescaled_lanes(builder, _lanes_of(builder, xs, r, at), stage) for r in rows]
    _store_rows(builder, outs, [builder.add(out_row, r) for r in rows], at, ys)


def _store_rows(builder: ir.IRBuilder, array: Any, rows: list, at: ir.Value,
                ys: list) -> None:
    """_store_lanes of each of ys into its row of `rows`; two rows of int8 from eight lanes
    each (AVX2's), already within int8, packed together by saturating packs (vpackssdw,
    vpacksswb): 6 instructions for both with their stores, against 10 one row at a time
    (LLVM's truncation masks each row's lanes, then packs)."""
    element = array.data.type.pointee
    if element.width != 8 or len(ys) != 2 or TILE_LANES != 8:
        for row, y in zip(rows, ys):
            _store_lanes(builder, array, row, at, y)
        return
    words = ir.VectorType(ir.IntType(16), 16)
    packed = builder.call(_intrinsic(builder, "llvm.x86.avx2.packssdw", words, [_VECTOR] * 2), ys)
    bytes_ = ir.VectorType(ir.IntType(8), 32)
    packed = builder.call(_intrinsic(builder, "llvm.x86.avx2.packsswb", bytes_, [words] * 2),
                          [packed, packed])
    # dwords 0 and 4 now hold the first row's bytes, 1 and 5 the second's
    rows_first = builder.shuffle_vector(builder.bitcast(packed, _VECTOR), _ZEROS, _ROW_PAIRS)
    halves = builder.bitcast(rows_first, ir.VectorType(_INDEX, 4))
    for k, row in enumerate(rows):
        builder.store(builder.extract_element(halves, _LANE(k)),
                      _row_at(builder, array, row, at, _INDEX), align=1)


_ROW_PAIRS = ir.Constant(ir.VectorType(_LANE, 8), [0, 4, 1, 5, 2, 6, 3, 7])
"""_store_rows's shuffle of eight lanes (AVX2's: the only width it packs)."""


def _intrinsic(builder: ir.IRBuilder, name: str, result: ir.Type, operands: list) -> ir.Function:
    """The LLVM intrinsic `name` of that type, declared in the builder's module."""
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(result, operands), name)


def _row_at(builder: ir.IRBuilder, array: Any, row: ir.Value, at: ir.Value,
            vector: ir.VectorType) -> ir.Value:
    """A pointer to `vector` at column `at` of `row` of a 2-D array with unit strides along
    its rows (its elements of 32 bits or fewer)."""
    element = array.data.type.pointee
    size = element.width // 8 if isinstance(element, ir.IntType) else 4
    start = builder.add(builder.mul(row, builder.extract_value(array.strides, 0)),
                        builder.mul(at, _INDEX(size)))
    pointer = builder.gep(builder.bitcast(array.data, ir.IntType(8).as_pointer()), [start])
    return builder.bitcast(pointer, vector.as_pointer())


def _lane_types(*arrays: object) -> bool:
    """Whether the lane RESCALEs take these arrays: int8..int32 (float32 for the first)."""
    first, *rest = arrays
    return (first.dtype == nbtypes.float32 or isinstance(first.dtype, nbtypes.Integer)) and all(
        isinstance(a.dtype, nbtypes.Integer) for a in rest) and all(
        a.dtype.bitwidth <= 32 for a in arrays)


def _none(context: Any, builder: ir.IRBuilder, signature: Any, args: tuple) -> object:
    """The codegen of a lane loop for arrays it does not take: no channels made."""
    return _INDEX(0)


def _nothing(context: Any, builder: ir.IRBuilder, signature: Any, args: tuple) -> object:
    """The codegen of a tile for arrays it does not take: nothing done."""
    return context.get_dummy_value()


@intrinsic
def _RESCALE_LANES(typingctx: object, x: object, rows: object, words: object, roundings: object,
                   limits: object, out: object, out_row: object,
                   twice: object) -> tuple[object, Callable[..., object]]:
    """out[out_row + i, c] for i < rows and the whole groups of TILE_LANES channels c of
    _lane_scales's arrays, from x[i, c] (unit strides along the rows; integers of 32 bits or
    fewer, or float32 holding integers below 2**24: kernels.exact_dtype's), as _rescaled makes
    them (_rescaled_lanes), a value < 0 rounding as one >= 0 does unless `twice` (the
    RESCALE rounds twice: _lanes). Returns the channels made (none for other types). Written as
    _rescaled is, LLVM makes each lane's int64 shift and clamp one at a time where AVX2 has no
    64-bit ones: about 60 instructions per eight channels, here 16-18 with an int8 store."""
    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: tuple) -> object:
        xs, words_, roundings_, limits_, outs = (
            context.make_array(signature.args[i])(context, builder, args[i])
            for i in (0, 2, 3, 4, 5))
        groups = builder.sdiv(builder.extract_value(words_.shape, 1), _INDEX(TILE_LANES))
        twice = builder.icmp_signed("!=", args[7], ir.Constant(args[7].type, 0))
        with builder.if_else(twice) as ways:
            for way, rounds_twice in zip(ways, (True, False)):
                with way, cgutils.for_range(builder, groups) as group:
                    at = builder.mul(group.index, _INDEX(TILE_LANES))
                    stage = _stage(builder, _lane_loader(builder, at), words_, roundings_,
                                   limits_, 0, rounds_twice)
                    pairs = builder.sdiv(args[1], _INDEX(2))
                    with cgutils.for_range(builder, pairs) as pair:
                        first = builder.mul(pair.index, _INDEX(2))
                        _rescale_rows(builder, xs, [first, builder.add(first, _INDEX(1))], at,
                                      stage, outs, args[6])
                    with builder.if_then(builder.icmp_signed("!=", builder.mul(pairs, _INDEX(2)),
                                                             args[1])):  # the odd last row
                        _rescale_rows(builder, xs, [builder.sub(args[1], _INDEX(1))], at, stage,
                                      outs, args[6])
        return builder.mul(groups, _INDEX(TILE_LANES))

    return (nbtypes.intp(x, rows, words, roundings, limits, out, out_row, twice),
            codegen if _lane_types(x, out) else _none)


@_inlined
def _rescale_block(x: np.ndarray, rows: int, rescale: tuple, lanes: tuple, out: np.ndarray,
                   out_row: int) -> None:
    """out[out_row + i] = _rescale_row of x[i] (its first C columns) by `rescale` (a
    kernels.Rescale wrapping to int32) for i < rows: by _RESCALE_LANES where `lanes`
    (_lanes of it) can, the channels past its groups as _rescale_row makes them."""
    channels, done = out.shape[1], 0
    if lanes[0] and x.strides[1] == x.itemsize and out.strides[1] == out.itemsize:
        done = _RESCALE_LANES(x, rows, lanes[1], lanes[2], lanes[3], out, out_row, lanes[4])
    if done < channels:
        rest = _columns(rescale, done)  # sliced once, not per row: each slice is an array
        for i in range(rows):
            _rescale_row(x[i, done:channels], rest[0], True, rest[1], rest[2], rest[3], rest[4],
                         rest[5], rest[6], out[out_row + i, done:])


def _residual_lanes(twice: bool) -> Callable[..., int]:
    """An intrinsic residual(y, x, rows, words, roundings, limits, out): out[i, c] for i <
    rows and the whole groups of TILE_LANES channels c, the quantized residual ADD of
    y[i, c] and x[i, c] as _residual_row makes it, by the lane RESCALE (_rescaled_lanes):
    y's (after y's first where `twice`), x's, their sum wrapped to int32, and the sum's, by
    _residual_scales's arrays (stages 0-3: y's first, y's, x's, the sum's). Returns the
    channels made (none for other types)."""

    @intrinsic
    def residual(typingctx: object, y: object, x: object, rows: object, words: object,
                 roundings: object, limits: object,
                 out: object) -> tuple[object, Callable[..., object]]:
        def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: tuple) -> object:
            ys, xs, words_, roundings_, limits_, outs = (
                context.make_array(signature.args[i])(context, builder, args[i])
                for i in (0, 1, 3, 4, 5, 6))
            groups = builder.sdiv(builder.extract_value(ys.shape, 1), _INDEX(TILE_LANES))
            with cgutils.for_range(builder, groups) as group:
                at = builder.mul(group.index, _INDEX(TILE_LANES))
                load = _lane_loader(builder, at)
                first, y_stage, x_stage, sum_stage = (
                    _stage(builder, load, words_, roundings_, limits_, k) for k in range(4))
                with cgutils.for_range(builder, args[2]) as row:
                    v = _lanes_of(builder, ys, row.index, at)
                    if twice:
                        v = _rescaled_lanes(builder, v, first)
                    total = builder.add(_rescaled_lanes(builder, v, y_stage), _rescaled_lanes(
                        builder, _lanes_of(builder, xs, row.index, at), x_stage))
                    _store_lanes(builder, outs, row.index, at,
                                 _rescaled_lanes(builder, total, sum_stage))
            return builder.mul(groups, _INDEX(TILE_LANES))

        signature = nbtypes.intp(y, x, rows, words, roundings, limits, out)
        return signature, codegen if _lane_types(y, x, out) else _none

    return residual


_RESIDUAL_ONCE, _RESIDUAL_TWICE = _residual_lanes(False), _residual_lanes(True)


@_inlined
def _residual_scales(y: np.ndarray, x: np.ndarray, y_first: tuple, y_scale: tuple,
                     x_scale: tuple, out_scale: tuple) -> tuple:
    """The four RESCALEs of a quantized residual ADD of rows of y and x (their types' ranges
    bounding the values) as _residual_lanes takes them, made once per block of rows: (whether
    they can, words, roundings, limits), a stage each as _lane_scales makes it."""
    n = out_scale[0].shape[0]
    words, roundings = np.empty((4, 4, n), np.int32), np.empty((4, 2, n), np.int64)
    limits = np.empty((4, 3), np.int32)
    low, high = np.int64(np.iinfo(y.dtype).min), np.int64(np.iinfo(y.dtype).max)
    usable = True
    if y_first[0].shape[0]:
        usable = _lane_scales(y_first, low, high, False, words[0], roundings[0], limits[0])
        low, high = y_first[4], y_first[5]
    usable = usable and _lane_scales(y_scale, low, high, False, words[1], roundings[1], limits[1])
    x_low, x_high = np.int64(np.iinfo(x.dtype).min), np.int64(np.iinfo(x.dtype).max)
    usable = usable and _lane_scales(x_scale, x_low, x_high, False, words[2], roundings[2],
                                     limits[2])
    return (usable and _lane_scales(out_scale, 0, 0, True, words[3], roundings[3], limits[3]),
            words, roundings, limits)


@_inlined
def _residual_block(y: np.ndarray, x: np.ndarray, y_first: tuple, y_scale: tuple,
                    x_scale: tuple, out_scale: tuple, lanes: tuple, out: np.ndarray) -> None:
    """residual_rows of the rows of y and x [rows, C] into out (which may be x): by
    _residual_lanes where `lanes` (_residual_scales of them) can, the channels past its
    groups as _quantized_add_row makes them."""
    done = 0
    if lanes[0] and y.strides[1] == y.itemsize and x.strides[1] == x.itemsize and (
            out.strides[1] == out.itemsize):
        if y_first[0].shape[0]:
            done = _RESIDUAL_TWICE(y, x, y.shape[0], lanes[1], lanes[2], lanes[3], out)
        else:
            done = _RESIDUAL_ONCE(y, x, y.shape[0], lanes[1], lanes[2], lanes[3], out)
    if done < y.shape[1]:  # the vectors sliced once, not per row: each slice is an array
        _residual_columns(y, x, _columns(y_first, done), _columns(y_scale, done),
                          _columns(x_scale, done), _columns(out_scale, done), out, done)


@_inlined
def _residual_columns(y: np.ndarray, x: np.ndarray, y_first: tuple, y_scale: tuple,
                      x_scale: tuple, out_scale: tuple, out: np.ndarray, done: int) -> None:
    """_quantized_add_row of each row's columns from `done` on (the vectors already sliced)."""
    for i in range(y.shape[0]):
        _quantized_add_row(y[i, done:], x[i, done:], y_first, y_scale, x_scale, out_scale,
                           out[i, done:])


@_inlined
def _columns(scale: tuple, first: int) -> tuple:
    """A kernels.Rescale's vectors from column `first` on (none where it has none)."""
    start = min(first, scale[0].shape[0])
    return (scale[0][start:], scale[1][start:], scale[2][start:], scale[3], scale[4], scale[5],
            scale[6])


def _window_lanes(features: set[str], cpu: str) -> int:
    """The lanes of a vector of _WINDOWS_3X3 in code that may use `features` on the CPU LLVM
    calls `cpu`: where _own_vectors says, 16 with AVX-512 (AMD's: half the instructions of
    8-lane vectors for the same work, and no lower clock) and 8 with AVX2; else none (the loop
    is then not used). On a 16-core Xeon with AVX-512 VNNI, in sixteen lanes, int8 MobileNetV2
    took 1.06x the time on one thread (Arm's too; two rounds against 84bc883), so LLVM's loops
    over the channels stay there, as they stay for the RESCALEs. On Zen 4, in eight lanes, fp32
    MobileNetV2's 56 x 56 x 24 -> 144 -> 24 depthwise + 1x1 step took 0.72x the time alone on
    one thread (0.76x on two), the 112 x 112 x 96 stride-2 one 0.92x (0.95x)."""
    return _widest(features) if "avx2" in features and _own_vectors(features, cpu) else 0


WINDOW_LANES = _window_lanes(_FEATURES, _CPU)
_WINDOW_GROUPS = tuple(lanes for lanes in (16, 8) if lanes <= WINDOW_LANES)
"""The vector widths _WINDOWS_3X3 takes its channels in, widest first."""


@contextmanager
def _not_unrolled(builder: ir.IRBuilder, count: ir.Value) -> Iterator[ir.Value]:
    """A loop over i < count (its index yielded) that LLVM leaves rolled: unrolled, each copy
    of _WINDOWS_3X3's body took pointers of its own for the nine taps, more than x86 has
    registers for, and reloaded them from the stack every step (the windows of int8
    MobileNetV2's stride-1 layers alone took 0.84-0.97x the time rolled, its stride-2 one
    1.14x)."""
    before = builder.basic_block
    check, body, end = (builder.append_basic_block(f"rolled.{part}") for part in ("check", "body", "end"))
    builder.branch(check)
    builder.position_at_end(check)
    index = builder.phi(_INDEX)
    index.add_incoming(_INDEX(0), before)
    builder.cbranch(builder.icmp_signed("<", index, count), body, end)
    builder.position_at_end(body)
    yield index
    index.add_incoming(builder.add(index, _INDEX(1)), builder.basic_block)
    module = builder.module
    rolled = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    loop = module.add_metadata([ir.MetaDataString(module, f"pyvgf.loop.{len(module.metadata)}")])
    loop.operands = (loop, rolled)  # a loop's ID names itself first, as LLVM reads it
    builder.branch(check).set_metadata("llvm.loop", loop)
    builder.position_at_end(end)


def _window_types(x: object, w: object, out: object) -> bool:
    """Whether _WINDOWS_3X3 takes these arrays: x of int8..int32 with w and out int32, or all
    three float32."""
    if x.dtype == w.dtype == out.dtype == nbtypes.float32:
        return True
    return isinstance(x.dtype, nbtypes.Integer) and x.dtype.bitwidth <= 32 and (
        w.dtype == out.dtype == nbtypes.int32)


ALL_TAPS = (1 << 9) - 1
"""_WINDOWS_3X3's tap mask of a window lying wholly inside its input."""


@intrinsic
def _WINDOWS_3X3(typingctx: object, x: object, first: object, row: object, pixel: object,
                 step: object, zero_point: object, w: object, out: object, count: object,
                 taps: object, finish: object) -> tuple[object, Callable[..., object]]:
    """out[i, c] for i < count and the channels c of out [count, C] (unit strides along its
    rows): the sum over the taps (ky, kx) of a 3x3 window that `taps` holds (bit 3 * ky + kx;
    the others are padding, never read) of
    (x[at + ky * row + kx * pixel] - zero_point) * w[ky, kx, c], where at = first + i * step
    + c indexes the C-contiguous x flat; floats then finished as _bias_clamp_row does where
    `finish` (bias, low, high, nan_to_low) has a bias. Returns the channels made: none for
    other types, where WINDOW_LANES is 0, for a float zero point other than 0 (a float
    tensor's is 0) or an integer one with a bias; channels are taken in whole vectors of
    _WINDOW_GROUPS's widths, the rest left. Each group's nine weight vectors stay in
    registers while the window slides along the row: about 30 instructions per eight int8
    channels, against about 50 with 18 pointers reloaded from the stack as the loop over
    channels of _span_3x3 compiled. Integers: zero_point * the taps' sum is taken once per
    group, then each sum of products, in int32 and wrapping: conv._Depthwise makes the taps
    int32 only where int32 holds every sum, so the wrapped result is the sum. Floats: the
    sums are as _window makes them, from zero in (ky, kx) order."""
    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: tuple) -> object:
        xs, ws, outs = (context.make_array(signature.args[i])(context, builder, args[i])
                        for i in (0, 6, 7))
        _, first_, row_, pixel_, step_, zero_point_, _, _, count_, taps_, finish_ = args
        element = ws.data.type.pointee
        floats = not isinstance(element, ir.IntType)
        channels = builder.extract_value(outs.shape, 1)
        w_steps = [builder.sdiv(builder.extract_value(ws.strides, k), _INDEX(4)) for k in (0, 1)]
        out_step = builder.sdiv(builder.extract_value(outs.strides, 0), _INDEX(4))
        offsets = [builder.add(builder.mul(_INDEX(ky), row_), builder.mul(_INDEX(kx), pixel_))
                   for ky in range(3) for kx in range(3)]
        mask = context.cast(builder, taps_, signature.args[9], nbtypes.int64)
        held = [builder.icmp_signed("!=", builder.and_(mask, _INDEX(1 << k)), _INDEX(0))
                for k in range(9)]

        def scalar(value: ir.Value, type_: object) -> ir.Value:
            return context.cast(builder, value, type_, signature.args[6].dtype)

        zp = scalar(zero_point_, signature.args[5])
        finish_types = signature.args[10].types
        biases = context.make_array(finish_types[0])(context, builder, builder.extract_value(finish_, 0))
        low, high = (scalar(builder.extract_value(finish_, k), finish_types[k]) for k in (1, 2))
        nan_to_low = builder.extract_value(finish_, 3)
        nan_to_low = builder.icmp_unsigned("!=", nan_to_low, ir.Constant(nan_to_low.type, 0))
        has_bias = builder.icmp_signed(">", builder.extract_value(biases.shape, 0), _INDEX(0))
        paddings = {lanes: cgutils.alloca_once_value(builder, ir.Constant(
            ir.VectorType(xs.data.type.pointee, lanes), None)) for lanes in _WINDOW_GROUPS}

        def windows(c: ir.Value, lanes: int, every: bool, finishing: bool) -> None:
            """Channels c..c + lanes of every output: a group, its weights held in registers."""
            vector = ir.VectorType(element, lanes)
            zero = ir.Constant(vector, [0.0 if floats else 0] * lanes)

            def at(array: Any, offset: ir.Value) -> ir.Value:
                pointee = ir.VectorType(array.data.type.pointee, lanes)
                return builder.bitcast(builder.gep(array.data, [offset]), pointee.as_pointer())

            def product(total: ir.Value, base: ir.Value, k: int) -> ir.Value:
                pointer = at(xs, builder.add(base, offsets[k]))
                if not every:
                    pointer = builder.select(held[k], pointer, paddings[lanes])
                value = builder.load(pointer, align=1)
                if floats:
                    return builder.fadd(total, builder.fmul(value, weights[k]))
                if value.type != vector:
                    value = builder.sext(value, vector)
                return builder.add(total, builder.mul(value, weights[k]))

            weights = [builder.load(at(ws, builder.add(builder.add(
                builder.mul(_INDEX(k // 3), w_steps[0]), builder.mul(_INDEX(k % 3), w_steps[1])),
                c)), align=4) for k in range(9)]
            start = zero
            if not floats:  # the sum of (x - zp) * w as that of x * w less zp * the taps' sum
                summed = weights if every else [builder.select(held[k], weights[k], zero)
                                                for k in range(9)]
                start = builder.sub(zero, builder.mul(functools.reduce(builder.add, summed),
                                                      _splat(builder, zp, lanes)))
            if finishing:
                bias = builder.load(at(biases, c), align=4)
                lows, highs = _splat(builder, low, lanes), _splat(builder, high, lanes)
                to_low = _splat(builder, nan_to_low, lanes)
            with _not_unrolled(builder, count_) as i:
                base = builder.add(builder.add(first_, builder.mul(i, step_)), c)
                total = start
                for k in range(9):
                    made = product(total, base, k)
                    # a padded tap reads zeros, and a float sum skips its product
                    total = made if every or not floats else builder.select(held[k], made, total)
                if finishing:
                    total = _clamped(builder, builder.fadd(total, bias), lows, highs, to_low)
                builder.store(total, at(outs, builder.add(builder.mul(i, out_step), c)), align=4)

        spans, made = [], _INDEX(0)  # (first channel, groups, lanes): widest vectors first
        for lanes in _WINDOW_GROUPS:
            many = builder.sdiv(builder.sub(channels, made), _INDEX(lanes))
            spans.append((made, many, lanes))
            made = builder.add(made, builder.mul(many, _INDEX(lanes)))

        def groups(every: bool, finishing: bool) -> None:
            """Every group of the channels, of each width in `spans`."""
            for start, many, lanes in spans:
                with cgutils.for_range(builder, many) as group:
                    windows(builder.add(start, builder.mul(group.index, _INDEX(lanes))), lanes,
                            every, finishing)

        def either(finishing: bool) -> None:
            with builder.if_else(builder.icmp_signed("==", mask, _INDEX(ALL_TAPS))) as (
                    whole, padded):
                with whole:
                    groups(True, finishing)
                with padded:
                    groups(False, finishing)

        if floats:
            taken = builder.fcmp_ordered("==", zp, ir.Constant(element, 0.0))
            with builder.if_then(taken), builder.if_else(has_bias) as (finishing, plain):
                with finishing:
                    either(True)
                with plain:
                    either(False)
        else:
            taken = builder.not_(has_bias)
            with builder.if_then(taken):
                either(False)
        return builder.select(taken, made, _INDEX(0))

    signature = nbtypes.intp(x, first, row, pixel, step, zero_point, w, out, count, taps, finish)
    takes = WINDOW_LANES and _window_types(x, w, out) and finish.types[0].dtype == w.dtype
    return signature, codegen if takes else _none


@_inlined
def _taps_inside(top: int, height: int, dilation_y: int, left: int, width: int,
                 dilation_x: int) -> int:
    """_WINDOWS_3X3's tap mask of the 3x3 window from (top, left) in an input of height x
    width: the taps that land inside it."""
    taps = 0
    for k in range(9):
        iy, ix = top + k // 3 * dilation_y, left + k % 3 * dilation_x
        if 0 <= iy < height and 0 <= ix < width:
            taps |= 1 << k
    return taps


_ROWS_1, _ROWS_2, _ROWS_3, _ROWS_4 = (_int8_tile(TILE_ROWS, min(c, _TILE_CHUNKS)) for c in range(1, 5))
_ROW_1, _ROW_2, _ROW_3, _ROW_4 = (_int8_tile(1, min(c, _TILE_CHUNKS)) for c in range(1, 5))


@_inlined
def _int8_products(x: np.ndarray, first: int, count: int, w: np.ndarray, acc: np.ndarray,
                   wide: np.ndarray) -> None:
    """acc[r] = (x[first + r] + 128) @ the weight w was packed from, for r < count <= TILE_ROWS
    (x int8 [M, K] C-contiguous, w as int8_packed made it, acc int32 [TILE_ROWS, w's width];
    `wide` int16 [TILE_ROWS, K] where _WIDEN, for the rows widened): TILE_ROWS rows a tile
    where count is as many, else a row a tile."""
    k, width, sums = x.shape[1], w.shape[1], acc.reshape(-1)
    groups = k // PACK_DEPTH
    if _WIDEN:
        for r in range(count):
            row, into = x[first + r], wide[r]
            for j in range(k):
                into[j] = np.int16(row[j]) + 128
        flat, x_first, x_step = wide.reshape(-1).view(np.int8), 0, 2 * k
    else:
        flat, x_first, x_step = x.reshape(-1), first * k, k
    for column in range(0, width, TILE_LANES * _TILE_CHUNKS):
        chunks = min(_TILE_CHUNKS, (width - column) // TILE_LANES)
        if count == TILE_ROWS:
            if chunks == 4:
                _ROWS_4(flat, x_first, x_step, w, column, groups, sums)
            elif chunks == 3:
                _ROWS_3(flat, x_first, x_step, w, column, groups, sums)
            elif chunks == 2:
                _ROWS_2(flat, x_first, x_step, w, column, groups, sums)
            else:
                _ROWS_1(flat, x_first, x_step, w, column, groups, sums)
            continue
        for r in range(count):
            row_sums, at = sums[r * width:], x_first + r * x_step
            if chunks == 4:
                _ROW_4(flat, at, x_step, w, column, groups, row_sums)
            elif chunks == 3:
                _ROW_3(flat, at, x_step, w, column, groups, row_sums)
            elif chunks == 2:
                _ROW_2(flat, at, x_step, w, column, groups, row_sums)
            else:
                _ROW_1(flat, at, x_step, w, column, groups, row_sums)


def _float_tiles(features: set[str], cpu: str) -> bool:
    """Whether fp32 products by a convolution's weights run on the FMA tiles rather than BLAS
    in code that may use `features` (_features's) on the CPU LLVM calls `cpu`: with AVX2 and
    FMA, where _own_vectors says."""
    return {"avx2", "fma"} <= features and _own_vectors(features, cpu)


FLOAT_TILES = _float_tiles(_FEATURES, _CPU)
"""Whether _finished_product's FMA tiles run here (_float_tiles)."""

FLOAT_TILE_NARROW, FLOAT_TILE_DEPTH, FLOAT_TILE_ROWS = 32, 384, 96
"""The FMA tiles take products by a weight matrix [K, N] (the stem's patches; a 1x1
convolution's weight takes panels instead, _panel_product) of at most FLOAT_TILE_NARROW input
or output channels, at most FLOAT_TILE_DEPTH input channels and at least FLOAT_TILE_ROWS rows.
On an AMD EPYC (Zen 3, one thread, hot) they took 0.73-0.91x the time of MKL's sgemm and its
finish pass for MobileNetV2's such 1x1 layers (12544 x 16 -> 96: 655 against 829-843 us;
3136 x 144 -> 24: 270 against 367-370), but 0.95-1.07x for 64-96 input and 384-576 output
channels or the reverse (their weight's rows read N apart; as panels, on Zen 4, 0.87-1.01x),
and 1.04-1.34x for the transformer block's 384 x 384-1536, whose weights outgrow L2."""

_FLOAT_ROWS, FLOAT_LANES = 6, 8
"""A float tile: 6 input rows times one or two groups of 8 fp32 columns (12 of AVX2's 16
registers for the sums, 2 for a row's weights, one for an input broadcast; with AVX-512, a
row's 16 columns in one register, ROW_LANES)."""

_FLOAT_BLOCK = 16 * _FLOAT_ROWS
"""The rows of x the tiles run through for each group of columns before the next: at most
147 kB of x (384 channels) stays in L2 while a group's weights stay in L1, and the weight is
read from memory once per block of rows."""


def _row_lanes(features: set[str], cpu: str) -> int:
    """The lanes of the vectors a wide float tile holds each row's sums in, in code that may
    use `features` on the CPU LLVM calls `cpu` where the tiles run (_float_tiles): one vector
    of 16 with AVX-512 (AMD's, as _own_vectors has it), half the instructions for the same
    work, else two of FLOAT_LANES. On Zen 4, alone, MobileNetV2's 1x1 products and the
    transformer's took 0.5-0.95x the time on one thread, 0.55-0.9x on two."""
    return _widest(features) if _float_tiles(features, cpu) else FLOAT_LANES


ROW_LANES = _row_lanes(_FEATURES, _CPU)


def _broadcast(builder: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """A scalar in every one of `lanes` lanes (a float as fp32)."""
    if isinstance(value.type, ir.DoubleType):
        value = builder.fptrunc(value, ir.FloatType())
    return _splat(builder, value, lanes)


def _float_tile(rows: int, chunks: int) -> Callable[..., None]:
    """An intrinsic tile(x, first, w, at, column, out, bias, low, high, nan_to_low, y): rows
    first..first + `rows` of x [M, K] times `chunks` groups of FLOAT_LANES columns from `at`
    of w [K, W], summed in rows x chunks registers from zero, one fused multiply-add each per
    input channel in channel order (two groups in one vector of ROW_LANES where that is 16:
    the same sums); each sum then finished as _bias_clamp_row says (low and
    high as fp32) with bias from `column`, + y's element where y has rows, and stored into
    out [M, N] from `column`. Every array fp32 and C-contiguous (y as out, or of no rows) but
    x, read with its strides (a transposed view: conv_blocks's patches), and w, whose rows may
    be a panel of a larger weight's columns (float_panels).

    x may also be [M, S, J] and w [S, J, W] (each read with its strides, w's last unit): the
    input channels in S runs of J, each run read from its own place in memory, as
    conv_rows_direct reads a convolution's window straight from its input image."""

    @intrinsic
    def tile(typingctx: object, x: object, first: object, w: object, at: object, column: object,
             out: object, bias: object, low: object, high: object, nan_to_low: object,
             y: object) -> tuple[object, Callable[..., object]]:
        def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: tuple) -> object:
            xa, wa, oa, ba, ya = (context.make_array(signature.args[i])(context, builder, args[i])
                                  for i in (0, 2, 5, 6, 10))
            start, w_col, col = args[1], args[3], args[4]
            lanes, parts = (PANEL, 1) if chunks == 2 and ROW_LANES == PANEL else (FLOAT_LANES, chunks)
            vector = ir.VectorType(ir.FloatType(), lanes)
            low_v, high_v = _broadcast(builder, args[7], lanes), _broadcast(builder, args[8], lanes)
            to_low = _broadcast(builder, builder.icmp_unsigned(
                "!=", args[9], ir.Constant(args[9].type, 0)), lanes)
            added = builder.icmp_unsigned("!=", builder.extract_value(ya.shape, 0), _INDEX(0))
            width = builder.extract_value(oa.shape, 1)

            def stride(array: Any, axis: int) -> ir.Value:
                return builder.sdiv(builder.extract_value(array.strides, axis), _INDEX(4))

            if signature.args[0].ndim == 3:  # runs of channels, each from its own place
                runs, depth = (builder.extract_value(xa.shape, i) for i in (1, 2))
                row_step, run_step, step = (stride(xa, i) for i in (0, 1, 2))
                w_run, w_width = stride(wa, 0), stride(wa, 1)
            else:
                runs, run_step, w_run = _INDEX(1), _INDEX(0), _INDEX(0)
                depth, w_width = (builder.extract_value(a.shape, 1) for a in (xa, wa))
                row_step, step = stride(xa, 0), stride(xa, 1)
            fma = _intrinsic(builder, f"llvm.fma.v{lanes}f32", vector, [vector] * 3)

            def at(array: Any, offset: ir.Value) -> ir.Value:
                return builder.bitcast(builder.gep(array.data, [offset]), vector.as_pointer())

            sums = [[cgutils.alloca_once_value(builder, ir.Constant(vector, [0.0] * lanes))
                     for _ in range(parts)] for _ in range(rows)]
            inputs = [builder.gep(xa.data, [builder.mul(builder.add(start, _INDEX(r)),
                                                         row_step)]) for r in range(rows)]
            with cgutils.for_range(builder, runs) as run, \
                    cgutils.for_range(builder, depth) as loop:
                row = builder.add(builder.add(builder.mul(run.index, w_run),
                                              builder.mul(loop.index, w_width)), w_col)
                weights = [builder.load(at(wa, builder.add(row, _INDEX(lanes * c))),
                                        align=4) for c in range(parts)]
                channel = builder.add(builder.mul(run.index, run_step),
                                      builder.mul(loop.index, step))
                for r in range(rows):
                    value = _broadcast(builder, builder.load(builder.gep(inputs[r], [channel])),
                                       lanes)
                    for c in range(parts):
                        builder.store(builder.call(fma, [value, weights[c],
                                                         builder.load(sums[r][c])]), sums[r][c])
            for c in range(parts):
                columns = builder.add(col, _INDEX(lanes * c))
                b = builder.load(at(ba, columns), align=4)
                for r in range(rows):
                    v = _clamped(builder, builder.fadd(builder.load(sums[r][c]), b), low_v, high_v,
                                 to_low)
                    place = builder.add(builder.mul(builder.add(start, _INDEX(r)), width), columns)
                    with builder.if_else(added) as (plus, alone):
                        with plus:
                            builder.store(builder.fadd(v, builder.load(at(ya, place), align=4)),
                                          at(oa, place), align=4)
                        with alone:
                            builder.store(v, at(oa, place), align=4)
            return context.get_dummy_value()

        signature = nbtypes.void(x, first, w, at, column, out, bias, low, high, nan_to_low, y)
        if any(a.dtype != nbtypes.float32 for a in (x, w, out, bias, y)):
            return signature, _nothing  # float64: _tiles_take never calls it
        return signature, codegen

    return tile


_FLOAT_6X2, _FLOAT_6X1, _FLOAT_1X2, _FLOAT_1X1 = (
    _float_tile(rows, chunks) for rows in (_FLOAT_ROWS, 1) for chunks in (2, 1))


@_inlined
def _tiles_take(x: np.ndarray, w: np.ndarray, out: np.ndarray, bias: np.ndarray, low: float,
                high: float, residual: np.ndarray) -> bool:
    """Whether _finished_product's FMA tiles take out = x @ w: FLOAT_TILES, fp32, the shape
    (FLOAT_TILE_NARROW and its kin, columns in groups of FLOAT_LANES), x with a unit stride
    along one axis (and none negative), the others C-contiguous, a bias per column, and the
    CLAMP's bounds fp32 values."""
    m, k = x.shape
    n = w.shape[1]
    return (FLOAT_TILES and x.itemsize == w.itemsize == out.itemsize == 4
            and min(k, n) <= FLOAT_TILE_NARROW and k <= FLOAT_TILE_DEPTH
            and m >= FLOAT_TILE_ROWS and n % FLOAT_LANES == 0
            and (x.strides[1] == 4 or x.strides[0] == 4) and min(x.strides) >= 0
            and bias.shape[0] == n and bias.strides[0] == 4
            and w.strides[1] == 4 and w.strides[0] == 4 * n
            and out.strides[1] == 4 and out.strides[0] == 4 * n
            and (residual.shape[0] == 0 or (residual.strides[1] == 4
                                            and residual.strides[0] == 4 * n))
            and np.float32(low) == low and np.float32(high) == high)


@_serial
def _finished_product(x: np.ndarray, w: np.ndarray, out: np.ndarray, bias: np.ndarray,
                      low: float, high: float, nan_to_low: bool, residual: np.ndarray) -> None:
    """out = x @ w, each row then finished as _finish_rows says (+ bias, clamped, + residual's
    row where it has any): by the FMA tiles where _tiles_take says, _FLOAT_ROWS rows at a time
    and finished from their registers (each group of columns through a block of rows,
    _FLOAT_BLOCK), else one BLAS call and the finish."""
    if not _tiles_take(x, w, out, bias, low, high, residual):
        _gemm(x, w, out)
        _finish_rows(out, bias, low, high, nan_to_low, residual)
        return
    m, n = out.shape
    for top in range(0, m, _FLOAT_BLOCK):
        end = min(m, top + _FLOAT_BLOCK)
        for column in range(0, n, PANEL):
            _tile_rows(x, top, end, w, column, column, column + PANEL <= n, out, bias, low, high,
                       nan_to_low, residual)


@_inlined
def _tile_rows(x: np.ndarray, top: int, end: int, w: np.ndarray, at: int, column: int,
               wide: bool, out: np.ndarray, bias: np.ndarray, low: float, high: float,
               nan_to_low: bool, residual: np.ndarray) -> None:
    """Rows top..end of out's PANEL columns from `column` (FLOAT_LANES where not `wide`) =
    x @ w's from `at`, finished, by the tiles: _FLOAT_ROWS rows at a time; then two to five
    rows left by one more tile over out's last _FLOAT_ROWS rows up to `end`, where it has
    that many (rows made before made again, to the same values: out is neither x nor y),
    else one by one. A row alone makes each of its sums a chain of dependent multiply-adds,
    where a tile keeps twelve going at once."""
    full = end - (end - top) % _FLOAT_ROWS
    again = end - full > 1 and end >= _FLOAT_ROWS
    tiles, alone = (full - top) // _FLOAT_ROWS + again, end if again else full
    if wide:
        for i in range(tiles):  # (the last one back to end - _FLOAT_ROWS where `again`)
            _FLOAT_6X2(x, min(top + _FLOAT_ROWS * i, end - _FLOAT_ROWS), w, at, column, out,
                       bias, low, high, nan_to_low, residual)
        for row in range(alone, end):
            _FLOAT_1X2(x, row, w, at, column, out, bias, low, high, nan_to_low, residual)
    else:
        for i in range(tiles):
            _FLOAT_6X1(x, min(top + _FLOAT_ROWS * i, end - _FLOAT_ROWS), w, at, column, out,
                       bias, low, high, nan_to_low, residual)
        for row in range(alone, end):
            _FLOAT_1X1(x, row, w, at, column, out, bias, low, high, nan_to_low, residual)


PANEL = 2 * FLOAT_LANES
"""The columns of a weight panel (float_panels): one wide tile's, in two vectors or one
(ROW_LANES)."""


def float_panels(weight: np.ndarray) -> np.ndarray:
    """An fp32 weight [K, N] as the FMA tiles read it whole: panels [ceil(N / PANEL), K,
    PANEL], panel p holding columns PANEL * p.. (zero past N), so that a tile reads its
    weights in one run rather than a row of N apart per channel, and a thread's share of the
    columns is a run of panels."""
    k, n = weight.shape
    count = -(-n // PANEL)
    padded = np.zeros((k, count * PANEL), np.float32)
    padded[:, :n] = weight
    return np.ascontiguousarray(padded.reshape(k, count, PANEL).transpose(1, 0, 2))


@_inlined
def _panel_product(x: np.ndarray, panels: np.ndarray, first: int, stop: int, out: np.ndarray,
                   bias: np.ndarray, low: float, high: float, nan_to_low: bool,
                   residual: np.ndarray) -> None:
    """Columns of out [M, N] from panel `first` to panel `stop` (float_panels) = x @ those
    panels, finished as _finish_rows says, by the FMA tiles, _FLOAT_ROWS rows at a time and
    finished from their registers: each panel through a block of _FLOAT_BLOCK rows before the
    next. out and residual (or none) C-contiguous, x with a unit stride along one axis."""
    m, n = out.shape
    for top in range(0, m, _FLOAT_BLOCK):
        end = min(m, top + _FLOAT_BLOCK)
        for p in range(first, stop):
            column = PANEL * p
            _tile_rows(x, top, end, panels[p], 0, column, column + PANEL <= n, out, bias, low,
                       high, nan_to_low, residual)


def _product(x: np.ndarray, w: np.ndarray, first: int, stop: int, out: np.ndarray,
             bias: np.ndarray, low: float, high: float, nan_to_low: bool,
             residual: np.ndarray) -> None:
    """Columns PANEL * first..PANEL * stop of out = x @ w, finished as _finish_rows says: by
    _panel_product where w is panels (float_panels), else by _finished_product (a matrix
    [K, N]). Compiled code only: numba picks the form by w's dimensions."""
    raise NotImplementedError("compiled code only")


@overload(_product)
def _product_of(x: np.ndarray, w: np.ndarray, first: int, stop: int, out: np.ndarray,
                bias: np.ndarray, low: float, high: float, nan_to_low: bool,
                residual: np.ndarray) -> Callable[..., None]:
    """_product's implementation for w's type (numba's arguments are their types)."""
    def by_panels(x: np.ndarray, w: np.ndarray, first: int, stop: int, out: np.ndarray,
                  bias: np.ndarray, low: float, high: float, nan_to_low: bool,
                  residual: np.ndarray) -> None:
        _panel_product(x, w, first, stop, out, bias, low, high, nan_to_low, residual)

    def by_matrix(x: np.ndarray, w: np.ndarray, first: int, stop: int, out: np.ndarray,
                  bias: np.ndarray, low: float, high: float, nan_to_low: bool,
                  residual: np.ndarray) -> None:
        start, end = PANEL * first, min(out.shape[1], PANEL * stop)
        if start == 0 and end == out.shape[1]:  # unsliced: rows typed contiguous, vectorized
            _finished_product(x, w, out, bias, low, high, nan_to_low, residual)
        else:
            _finished_product(x, w[:, start:end], out[:, start:end], bias[start:end], low, high,
                              nan_to_low, residual[:, start:end])
    return by_panels if w.ndim == 3 else by_matrix  # type: ignore[attr-defined]


@_RowLoop
def gemm_panels(a: np.ndarray, panels: np.ndarray, out: np.ndarray, blocks: int, groups: int,
                bias: np.ndarray, low: float, high: float, nan_to_low: bool,
                residual: np.ndarray) -> None:
    """out = a @ panels (float_panels of an fp32 weight), each output finished as _finish_rows
    says (+ bias, clamped, + residual's where it has rows), by the FMA tiles: `blocks`
    blocks of out's rows times `groups` groups of its panels over numba's threads (a and out
    C-contiguous)."""
    rows, columns = out.shape
    step = -(-rows // blocks)
    for j in prange(blocks * groups):
        k, g = j // groups, j % groups
        first, stop = k * step, min(rows, k * step + step)
        if first < stop:
            start, end = _group(g, groups, columns)
            _panel_product(a[first:stop], panels, start, end, out[first:stop], bias, low, high,
                           nan_to_low, residual[first:stop])


@_RowLoop
def gemm_rows_packed(x: np.ndarray, w: np.ndarray, out: np.ndarray, blocks: int,
                     offset: np.ndarray, multiplier: np.ndarray, shift: np.ndarray,
                     output_zp: int, low: int, high: int, double_round: bool) -> None:
    """gemm_rows_int8 with its products made by the int8 tiles (w as int8_packed made it;
    only where INT8_TILES names their instructions), TILE_ROWS rows at a time into a block
    that stays in L1, each row then rescaled. MKL's int8 GEMM writes every int32 sum to memory for the RESCALE
    to read back, which for few input channels bounds it more than the products do; in
    MobileNetV2 this loop was the faster for every layer (kernels.int8_gemm)."""
    rows = out.shape[0]
    step = -(-rows // blocks)
    for k in prange(blocks):
        _packed_rows_rescaled(x, k * step, min(rows, k * step + step), w,
                              (offset, multiplier, shift, output_zp, low, high, double_round), out)


@_inlined
def _packed_rows_rescaled(x: np.ndarray, first: int, stop: int, w: np.ndarray,
                          rescale: tuple, out: np.ndarray) -> None:
    """out[r] for rows first..stop: (x[r] + 128) @ the weight w was packed from
    (_int8_products), TILE_ROWS rows at a time into a block that stays in L1, then rescaled
    by `rescale` (a kernels.Rescale wrapping to int32) as _rescale_block makes it
    (gemm_rows_packed's block, depthwise_gemm_rows_packed's band)."""
    acc = _aligned((TILE_ROWS, w.shape[1]), np.int32)
    wide = np.empty((TILE_ROWS, x.shape[1] if _WIDEN else 0), np.int16)
    lanes = _lanes(rescale)
    for start in range(first, stop, TILE_ROWS):
        count = min(TILE_ROWS, stop - start)
        _int8_products(x, start, count, w, acc, wide)
        _rescale_block(acc, count, rescale, lanes, out, start)


@_RowLoop
def depthwise_gemm_rows_packed(x: np.ndarray, zero_point: int, w: np.ndarray, pad_top: int,
                               pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                               dilation_x: int, first: tuple, packed: np.ndarray, then: tuple,
                               residual: np.ndarray, y_first: tuple, y_scale: tuple,
                               x_scale: tuple, out_scale: tuple, out: np.ndarray,
                               band: int) -> None:
    """depthwise_gemm_rows for int8: the depthwise sums (int32 w) rescaled by `first` (a
    kernels.Rescale) into an int8 block, then its products with a 1x1 convolution's weight
    as int8_packed made it, rescaled by `then` into out [N, OH, OW, OC], as
    depthwise_rows_rescaled and gemm_rows_packed make them (bit-exact), in bands of `band`
    rows over numba's threads (_depthwise_packed_band); only where INT8_TILES is set.
    Where `residual` [N, OH, OW, OC] has rows, each row of out then becomes the quantized
    residual ADD of residual's row and it, as residual_rows makes it (y, x and out there,
    y_first too)."""
    n, rows = out.shape[0], out.shape[1]
    bands = -(-rows // band)
    for j in prange(n * bands):
        b, k = j // bands, j % bands
        _depthwise_packed_band(x, zero_point, w, pad_top, pad_left, stride_y, stride_x,
                               dilation_y, dilation_x, first, packed, then, residual, y_first,
                               y_scale, x_scale, out_scale, out, b, k * band,
                               min(rows, k * band + band))


@_serial
def _depthwise_packed_band(x: np.ndarray, zero_point: int, w: np.ndarray, pad_top: int,
                           pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                           dilation_x: int, first: tuple, packed: np.ndarray, then: tuple,
                           residual: np.ndarray, y_first: tuple, y_scale: tuple,
                           x_scale: tuple, out_scale: tuple, out: np.ndarray, b: int, top: int,
                           stop: int) -> None:
    """Output rows top..stop of image b of depthwise_gemm_rows_packed (called, not inlined,
    as _depthwise_gemm_band)."""
    width, columns, channels = out.shape[2], out.shape[3], x.shape[3]
    made = _aligned(((stop - top) * width, channels), x.dtype)
    acc = _aligned((width, channels), w.dtype)
    lanes = _lanes(first)
    for r in range(top, stop):
        _window_row(x, zero_point, w, b, r * stride_y - pad_top, pad_left, stride_x,
                    dilation_y, dilation_x, acc, _unfinished(w))
        _rescale_block(acc, width, first, lanes, made, (r - top) * width)
    part = out[b, top:stop].reshape(-1, columns)
    _packed_rows_rescaled(made, 0, made.shape[0], packed, then, part)
    if residual.shape[0]:
        y = residual[b, top:stop].reshape(-1, columns)
        lanes = _residual_scales(y, part, y_first, y_scale, x_scale, out_scale)
        _residual_block(y, part, y_first, y_scale, x_scale, out_scale, lanes, part)


@_RowLoop
def expanded_gemm_rows_packed(x: np.ndarray, expand: np.ndarray, widened: tuple,
                              zero_point: int, w: np.ndarray, pad_top: int, pad_left: int,
                              stride_y: int, stride_x: int, dilation_y: int, dilation_x: int,
                              first: tuple, packed: np.ndarray, then: tuple, residual: np.ndarray,
                              y_first: tuple, y_scale: tuple, x_scale: tuple, out_scale: tuple,
                              out: np.ndarray, band: int, halo: bool) -> None:
    """expanded_gemm_rows for int8: depthwise_gemm_rows_packed of the 1x1 convolution of x
    [1, H, W, IC] by the weight `expand` was packed from (_int8_products), rescaled to int8
    by `widened` (a kernels.Rescale) as gemm_rows_packed makes it, in bands that make the rows
    of it their windows read with `halo`, else after it is made whole (bit-exact). Its
    channels are as many as `first`'s vectors have entries (w's rows may be tiled)."""
    rows, height, channels = out.shape[1], x.shape[1], first[0].shape[0]
    bands = -(-rows // band)
    if halo:
        for k in prange(bands):
            _expanded_packed_band(x, expand, widened, zero_point, w, pad_top, pad_left, stride_y,
                                  stride_x, dilation_y, dilation_x, first, packed, then, residual,
                                  y_first, y_scale, x_scale, out_scale, out, k * band,
                                  min(rows, k * band + band))
        return
    made = _aligned((1, height, x.shape[2], channels), x.dtype)
    pixels, block = x[0].reshape(-1, x.shape[3]), made.reshape(-1, channels)
    step = -(-height // bands) * x.shape[2]
    for k in prange(bands):
        _widen_packed(pixels, min(block.shape[0], k * step), min(block.shape[0], k * step + step),
                      expand, widened, block)
    for k in prange(bands):
        _depthwise_packed_band(made, zero_point, w, pad_top, pad_left, stride_y, stride_x,
                               dilation_y, dilation_x, first, packed, then, residual, y_first,
                               y_scale, x_scale, out_scale, out, 0, k * band,
                               min(rows, k * band + band))


@_serial
def _expanded_packed_band(x: np.ndarray, expand: np.ndarray, widened: tuple, zero_point: int,
                          w: np.ndarray, pad_top: int, pad_left: int, stride_y: int,
                          stride_x: int, dilation_y: int, dilation_x: int, first: tuple,
                          packed: np.ndarray, then: tuple, residual: np.ndarray, y_first: tuple,
                          y_scale: tuple, x_scale: tuple, out_scale: tuple, out: np.ndarray,
                          top: int, stop: int) -> None:
    """Output rows top..stop of expanded_gemm_rows_packed with `halo`, as _expanded_band makes
    those of expanded_gemm_rows."""
    start, end = _band_input(top, stop, w.shape[0], pad_top, stride_y, dilation_y, x.shape[1])
    made = _aligned((1, end - start, x.shape[2], first[0].shape[0]), x.dtype)
    block = made.reshape(-1, first[0].shape[0])
    _widen_packed(x[0, start:end].reshape(-1, x.shape[3]), 0, block.shape[0], expand, widened,
                  block)
    _depthwise_packed_band(made, zero_point, w, pad_top + start, pad_left, stride_y, stride_x,
                           dilation_y, dilation_x, first, packed, then, residual, y_first,
                           y_scale, x_scale, out_scale, out, 0, top, stop)


@_serial
def _widen_packed(x: np.ndarray, first: int, stop: int, expand: np.ndarray, widened: tuple,
                  out: np.ndarray) -> None:
    """_packed_rows_rescaled by the expansion's weight and `widened` (a kernels.Rescale): called,
    not inlined, by both forms of expanded_gemm_rows_packed and by _expanded_packed_band, so that
    its int8 tiles are compiled once."""
    _packed_rows_rescaled(x, first, stop, expand, widened, out)


@_threaded
def gemm_columns_int8(x: np.ndarray, w: np.ndarray, out: np.ndarray, blocks: int,
                      offset: np.ndarray, multiplier: np.ndarray, shift: np.ndarray,
                      output_zp: int, low: int, high: int, double_round: bool) -> None:
    """gemm_rows_int8 with out's columns split instead of its rows (see gemm_columns): each
    block makes x + 128 whole (few rows)."""
    rows, cols = out.shape
    step = -(-cols // blocks)
    for k in prange(blocks):
        first, stop = k * step, min(cols, k * step + step)
        if first < stop:
            acc = _aligned((rows, stop - first), np.int32)
            _gemm_int8(_plus_128(x), w[:, first:stop], acc)
            for i in range(rows):
                _rescale_row(acc[i], offset[first:stop], True, multiplier[first:stop],
                             shift[first:stop], output_zp, low, high, double_round,
                             out[i, first:stop])


ERF_BLOCK = 1 << 14
"""Elements of an ERF per task on numba's threads (about 20 us of work each)."""

_ERF_NEAR = np.array([
    0.12837916612625122, -0.3761262595653534, 0.11283594369888306, -0.02685421146452427,
    0.005189087241888046, -0.000801686430349946, 7.875874871388078e-05], np.float32)
"""erf(a) / a - 1 for 0 <= a < 1 as a polynomial in a * a (coefficients from the constant term
up): the interpolant of math.erf(a) / a - 1 at 7 Chebyshev nodes of a * a in [0, 1], rounded to
fp32; within 5.5e-9 of it there."""

_ERF_FAR = np.array([
    0.00040695248753763735, -0.0032674253452569246, 0.012252787128090858, -0.028181681409478188,
    0.04365212470293045, -0.046450886875391006, 0.03186476603150368, -0.009289363399147987,
    -0.006627765484154224, 0.009707038290798664, -0.004681335296481848, -0.0006245496333576739,
    0.0020429003052413464, -0.0007047926192171872, -0.0002608195645734668,
    0.00016206581494770944], np.float32)
"""erfc(a) = 1 - erf(a) for 1 <= a <= 4 as a polynomial in (a - 2.5) / 1.5: the interpolant of
math.erfc at 16 Chebyshev nodes of [1, 4], rounded to fp32; within 2.2e-9 of it there."""


@_inlined
def _polynomial(c: np.ndarray, v: float) -> float:
    """c[0] + c[1] v + c[2] v**2 + ..., as its even and odd terms in v * v: two chains of
    multiply-adds half as long, which the core runs side by side."""
    v2 = v * v
    last = c.shape[0] - 1
    even = c[last - last % 2]
    for k in range(last - last % 2 - 2, -1, -2):
        even = even * v2 + c[k]
    odd = c[last - 1 + last % 2]
    for k in range(last - 1 + last % 2 - 2, 0, -2):
        odd = odd * v2 + c[k]
    return even + v * odd


_ERF_ONE = np.float32(3.919206)
"""The least fp32 a whose erf rounds to 1 in fp32."""


@_inlined
def _erf(x: np.float32) -> np.float32:
    """erf(x) in fp32 vectors: a + a * P(a * a) below |x| = 1, 1 - Q(a) from 1, each a
    polynomial of _ERF_NEAR's or _ERF_FAR's with fused multiply-adds, and 1 from _ERF_ONE up;
    within 1.373 ulp of erf over every fp32 x (TOSA allows 5; tests/test_fast_erf.py sweeps them
    all). NaN stays NaN, and the sign of x is the result's (erf(-0) is -0)."""
    a, one = abs(x), np.float32(1.0)
    near = a + a * _polynomial(_ERF_NEAR, a * a)
    far = one - _polynomial(_ERF_FAR, (a - np.float32(2.5)) * np.float32(1 / 1.5))
    return np.float32(math.copysign(near if a < one else (one if a >= _ERF_ONE else far), x))


@_inlined
def _erf_span(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        out[i] = _erf(x[i])


def _erf_blocks(x: np.ndarray, out: np.ndarray, block: int) -> None:
    """out = erf(x) of fp32 vectors, as _erf gives it, in blocks of `block`
    elements (over numba's threads). Both of _erf's polynomials are computed and one chosen,
    without a branch, so the compiler makes the loop work on a vector of elements at a time."""
    for k in prange(-(-x.shape[0] // block)):
        stop = min(x.shape[0], k * block + block)
        _erf_span(x[k * block:stop], out[k * block:stop])


erf_blocks = _RowLoop(_erf_blocks, contract=True)


@_inlined
def _row_max(row: np.ndarray) -> float:
    """The largest of a row's values, in four interleaved running maxima (each step of one
    waits for its last, so four keep the core busy where one would leave it idle)."""
    n = row.shape[0]
    t0 = t1 = t2 = t3 = row[0]
    for j in range(0, n - n % 4, 4):
        t0, t1, t2, t3 = max(t0, row[j]), max(t1, row[j + 1]), max(t2, row[j + 2]), max(t3, row[j + 3])
    for j in range(n - n % 4, n):
        t0 = max(t0, row[j])
    return max(max(t0, t1), max(t2, t3))


@_inlined
def _row_sum(row: np.ndarray, squared: bool) -> float:
    """The sum in float64 of a row's values (or, `squared`, of their squares, each rounded to
    the row's type, as a MUL makes them), in four interleaved partial sums (as _row_max): a
    sum of float32 values rounds to the same float32 in any order but where it lies within
    about 1e-16 of halfway between two."""
    n = row.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    for j in range(0, n - n % 4, 4):
        a, b, c, d = row[j], row[j + 1], row[j + 2], row[j + 3]
        if squared:
            a, b, c, d = a * a, b * b, c * c, d * d
        s0, s1, s2, s3 = s0 + a, s1 + b, s2 + c, s3 + d
    for j in range(n - n % 4, n):
        s0 += row[j] * row[j] if squared else row[j]
    return (s0 + s1) + (s2 + s3)


_EXP = np.array([1.0, 1.0, 0.5, 0.16666415333747864, 0.04166635125875473, 0.00837512593716383,
                 0.0013941108481958508], np.float32)
"""e**r for |r| <= ln(2) / 2 as a polynomial in r (fp32 coefficients from the constant term up):
the interpolant of e**r at 7 Chebyshev nodes of that interval."""

_EXP_LOW, _EXP_HIGH = np.float32(-104), np.float32(89)
"""e**x rounds to 0 in fp32 below -104 and to inf above 89: x is taken within them."""

_LOG2_E = np.float32(1.4426950408889634)
_LN2_HIGH, _LN2_LOW = np.float32(0.693145751953125), np.float32(1.428606765330187e-06)
"""ln(2) as two fp32 values: the first with its low bits zero, so n * _LN2_HIGH is exact."""

_ROUNDING = np.float32(1.5 * 2**23)
"""Added to an fp32 value below 2**22 in size, rounds it to an integer held in the low bits."""


@intrinsic
def _times_power_of_two(typingctx: object, p: object, shifted: object
                        ) -> tuple[object, Callable[..., object]]:
    """p * 2**n (fp32), n the integer that `shifted` (n + _ROUNDING in fp32) holds in its low
    bits: two factors of 2**(n/2), each a normal fp32, so that a result below fp32's normal
    range is rounded once and one above it is inf."""
    def codegen(context: object, builder: ir.IRBuilder, signature: object, args: tuple) -> ir.Value:
        value, t = args
        word = ir.IntType(32)
        n = builder.sub(builder.bitcast(t, word), builder.bitcast(ir.Constant(ir.FloatType(), _ROUNDING), word))
        half = builder.ashr(n, ir.Constant(word, 1))

        def power(k: ir.Value) -> ir.Value:
            biased = builder.add(k, ir.Constant(word, 127))
            return builder.bitcast(builder.shl(biased, ir.Constant(word, 23)), ir.FloatType())
        return builder.fmul(builder.fmul(value, power(half)), power(builder.sub(n, half)))
    return nbtypes.float32(nbtypes.float32, nbtypes.float32), codegen


@_inlined
def _exp(x: np.float32) -> np.float32:
    """e**x in fp32, in vectors of fp32 where a loop is vectorized: x = n ln(2) + r, e**r by
    _EXP, times 2**n. Within 2.27 ulp of e**x for every fp32 x (tests/test_fast_exp.py), where
    numpy's own (the reference's EXP) is 2.52 from it on a sample of them; NaN stays NaN, -inf
    gives 0 and inf gives inf."""
    if x < _EXP_LOW:
        x = _EXP_LOW
    if x > _EXP_HIGH:
        x = _EXP_HIGH
    t = x * _LOG2_E + _ROUNDING
    n = t - _ROUNDING
    r = (x - n * _LN2_HIGH) - n * _LN2_LOW
    return _times_power_of_two(_polynomial(_EXP, r), t)


def _softmax_rows(x: np.ndarray, out: np.ndarray) -> None:
    """out [rows, C] = each row's softmax as its TOSA ops make it in fp32, one row at a time
    while it is in cache: REDUCE_MAX, SUB, EXP (_exp), REDUCE_SUM accumulated in float64
    (_row_sum) and rounded once, RECIPROCAL, MUL. Where a NaN is among a row's values,
    whatever maximum it gives, the row's softmax is all NaN, as under both of REDUCE_MAX's NaN
    modes, since the NaN reaches the row's sum."""
    for i in prange(x.shape[0]):
        row, res = x[i], out[i]
        top = _row_max(row)
        for j in range(row.shape[0]):
            res[j] = _exp(row[j] - top)
        scale = np.float32(1) / np.float32(_row_sum(res, False))
        for j in range(row.shape[0]):
            res[j] = res[j] * scale


softmax_rows = _RowLoop(_softmax_rows, contract=True)
"""_softmax_rows, its EXP's multiply-adds fused (the SUB before it and the MUL after are each
rounded alone, which contraction leaves alone)."""


@_RowLoop
def layer_norm_rows(x: np.ndarray, out: np.ndarray, inv_n: np.float32, inv_n2: np.float32,
                    eps: np.float32, scale: np.ndarray, scaled: bool, offset: np.ndarray,
                    offset_added: bool) -> None:
    """out [rows, C] = each row of x normalized as the layer norm's TOSA ops make it in fp32:
    mean = sum(x) * inv_n, d = x - mean, rstd = 1 / sqrt(sum(d * d) * inv_n2 + eps), d * rstd,
    then * scale[c] and + offset[c] where given; sums accumulated in float64 (_row_sum) and
    rounded once."""
    for i in prange(x.shape[0]):
        row, res = x[i], out[i]
        mean = np.float32(_row_sum(row, False)) * inv_n
        for j in range(row.shape[0]):
            res[j] = row[j] - mean
        squares = _row_sum(res, True)
        rstd = np.float32(1) / np.sqrt(np.float32(squares) * inv_n2 + eps)
        for j in range(row.shape[0]):
            v = res[j] * rstd
            if scaled:
                v = v * scale[j]
            if offset_added:
                v = v + offset[j]
            res[j] = v


def _gelu_rows(x: np.ndarray, out: np.ndarray, bias: np.ndarray, biased: bool, a: np.float32,
               k: np.float32, c: np.float32) -> None:
    """out [rows, C] = h * c * (erf(h * a) + k) for h = x (+ bias[c] where `biased`), as its
    TOSA ops make it in fp32, one at a time: (h * c) and (erf(h * a) + k) each rounded, then
    their product; erf as erf_blocks gives it."""
    for i in prange(x.shape[0]):
        row, res = x[i], out[i]
        for j in range(row.shape[0]):
            h = row[j] + bias[j] if biased else row[j]
            e = _erf(h * a) + k
            res[j] = e * (h * c)


gelu_rows = _RowLoop(_gelu_rows, contract=True)
"""_gelu_rows, with ERF's fused multiply-adds (erf_blocks's flags: the fp32 steps here are a
product and a sum each rounded alone, which contraction leaves alone)."""


@_RowLoop
def residual_rows(y: np.ndarray, x: np.ndarray, y_first: tuple, y_scale: tuple, x_scale: tuple,
                  out_scale: tuple, out: np.ndarray) -> None:
    """A quantized residual ADD, row by row ([rows, C], the vectors one entry per column):
    out = RESCALE(RESCALE(y) + RESCALE(x)), the sum wrapped to int32 as ADD wraps it, each
    RESCALE a kernels.Rescale (offset, multiplier, shift, output_zp, low, high, double_round)
    made as _rescaled makes it (a y already of int32 takes the identity, multiplier 2**30 and
    shift 30); y is rescaled by `y_first` before, where its vectors have entries (y rescaled
    twice, as TFLite's lowering writes it). In blocks of RESIDUAL_ROWS rows (_residual_block)."""
    lanes = _residual_scales(y, x, y_first, y_scale, x_scale, out_scale)
    for k in prange(-(-y.shape[0] // RESIDUAL_ROWS)):
        first, stop = k * RESIDUAL_ROWS, min(y.shape[0], k * RESIDUAL_ROWS + RESIDUAL_ROWS)
        _residual_block(y[first:stop], x[first:stop], y_first, y_scale, x_scale, out_scale,
                        lanes, out[first:stop])


RESIDUAL_ROWS = 64
"""The rows of residual_rows's blocks, each a call of its lane loop."""


@_inlined
def _quantized_add_row(y: np.ndarray, x: np.ndarray, y_first: tuple, y_scale: tuple,
                       x_scale: tuple, out_scale: tuple, out: np.ndarray) -> None:
    """One row of residual_rows (out may be x)."""
    if y_first[6] or y_scale[6] or x_scale[6] or out_scale[6]:
        _residual_row(y, x, y_first, y_scale, x_scale, out_scale, out)
    else:  # a loop of its own, as _rescale_row has
        _residual_row(y, x, _rounding_once(y_first), _rounding_once(y_scale),
                      _rounding_once(x_scale), _rounding_once(out_scale), out)


@_inlined
def _rounding_once(scale: tuple) -> tuple:
    """A kernels.Rescale with double_round the constant False."""
    return scale[0], scale[1], scale[2], scale[3], scale[4], scale[5], False


@_inlined
def _residual_row(y: np.ndarray, x: np.ndarray, y_first: tuple, y_scale: tuple,
                  x_scale: tuple, out_scale: tuple, out: np.ndarray) -> None:
    """_quantized_add_row's loop (LLVM makes one with y_first and one without)."""
    twice = y_first[0].shape[0] > 0
    for c in range(y.shape[0]):
        v = np.int64(y[c])
        if twice:
            v = _rescaled_at(v, c, y_first)
        total = np.int64(np.int32(_rescaled_at(v, c, y_scale) + _rescaled_at(x[c], c, x_scale)))
        out[c] = _rescaled_at(total, c, out_scale)


@_inlined
def _rescaled_at(v: np.int64, c: int, scale: tuple) -> np.int64:
    """The kernels.Rescale `scale` of v in column c."""
    return _rescaled(np.int64(v) + scale[0][c], scale[1][c], scale[2][c], scale[3], scale[4],
                     scale[5], scale[6])


@_inlined
def _pool_span(size: int, start: int, kernel: int) -> tuple[int, int]:
    """The indices start..start + kernel - 1 along an axis of `size` that land inside it."""
    return max(start, 0), min(start + kernel, size)


@_inlined
def _window_total(x: np.ndarray, b: int, r: int, ox: int, kernel_y: int, kernel_x: int,
                  pad_top: int, pad_left: int, stride_y: int, stride_x: int,
                  acc: np.ndarray) -> int:
    """acc = the sum, from zero and in (y, x) order, of x[b]'s pixels in the window of output
    (r, ox) that land inside x (padding adds 0); returns how many there are."""
    y0, y1 = _pool_span(x.shape[1], r * stride_y - pad_top, kernel_y)
    x0, x1 = _pool_span(x.shape[2], ox * stride_x - pad_left, kernel_x)
    acc[:] = 0
    for iy in range(y0, y1):
        for ix in range(x0, x1):
            pixel = x[b, iy, ix]
            for c in range(acc.shape[0]):
                acc[c] += pixel[c]
    return (y1 - y0) * (x1 - x0)


def _avg_pool_float_rows(x: np.ndarray, kernel_y: int, kernel_x: int, pad_top: int,
                         pad_left: int, stride_y: int, stride_x: int, out: np.ndarray) -> None:
    """AVG_POOL2D of fp32 x [N, H, W, C] into out [N, OH, OW, C]: each window's sum in fp32
    (_window_total: a padding tap adds +0, which changes no sum that starts from +0), divided
    in fp32 by the count of its taps inside x."""
    n, rows, width, channels = out.shape
    for j in prange(n * rows):
        b, r = j // rows, j % rows
        acc = np.empty(channels, np.float32)
        for ox in range(width):
            count = np.float32(_window_total(x, b, r, ox, kernel_y, kernel_x, pad_top, pad_left,
                                             stride_y, stride_x, acc))
            o = out[b, r, ox]
            for c in range(channels):
                o[c] = acc[c] / count


avg_pool_float_rows = _RowLoop(_avg_pool_float_rows)


def _avg_pool_int_rows(x: np.ndarray, zero_point: int, kernel_y: int, kernel_x: int,
                       pad_top: int, pad_left: int, stride_y: int, stride_x: int,
                       out: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray,
                       output_zp: int, low: int, high: int) -> None:
    """AVG_POOL2D of integer x [N, H, W, C] into out [N, OH, OW, C], in int64: each window's
    sum of x - zero_point over its taps inside x (_window_total), rescaled (_rescaled) by the
    specification's reciprocal_scale of their count: multipliers[count], shifts[count]."""
    n, rows, width, channels = out.shape
    for j in prange(n * rows):
        b, r = j // rows, j % rows
        acc = np.empty(channels, np.int64)
        for ox in range(width):
            count = _window_total(x, b, r, ox, kernel_y, kernel_x, pad_top, pad_left, stride_y,
                                  stride_x, acc)
            offset, multiplier, shift = count * zero_point, multipliers[count], shifts[count]
            o = out[b, r, ox]
            for c in range(channels):
                o[c] = _rescaled(acc[c] - offset, multiplier, shift, output_zp, low, high, False)


avg_pool_int_rows = _RowLoop(_avg_pool_int_rows)


def _max_pool_rows(x: np.ndarray, kernel_y: int, kernel_x: int, pad_top: int, pad_left: int,
                   stride_y: int, stride_x: int, out: np.ndarray, nan_ignore: bool) -> None:
    """MAX_POOL2D of x [N, H, W, C] (fp32 or integers) into out [N, OH, OW, C]: each window's
    maximum over the taps inside x (every window has one: padding is smaller than the
    kernel) in (ky, kx) order, as numpy's maximum (NaN wins) or, with `nan_ignore`, fmax (NaN
    loses unless all are NaN) gives it: of equal values the later tap (+0 or -0), and padding
    of -inf or NaN, which neither picks over a real tap, may as well be skipped."""
    n, rows, width, channels = out.shape
    for j in prange(n * rows):
        b, r = j // rows, j % rows
        y0, y1 = _pool_span(x.shape[1], r * stride_y - pad_top, kernel_y)
        for ox in range(width):
            x0, x1 = _pool_span(x.shape[2], ox * stride_x - pad_left, kernel_x)
            o = out[b, r, ox]
            o[:] = x[b, y0, x0]
            for iy in range(y0, y1):
                for ix in range(x0, x1):
                    pixel = x[b, iy, ix]
                    for c in range(channels):
                        v, m = pixel[c], o[c]
                        o[c] = v if v >= m or (m != m if nan_ignore else v != v) else m


max_pool_rows = _RowLoop(_max_pool_rows)


@_inlined
def _patches(x: np.ndarray, zero_point: float, kh: int, kw: int, b: int, top: int,
             pad_left: int, stride_y: int, stride_x: int, dilation_y: int, dilation_x: int,
             rows: int, width: int, into: np.ndarray) -> None:
    """into [KH * KW * IC, rows * OW] = the patches of `rows` output rows of `width` outputs,
    the first row's windows starting at row `top`, transposed: into[(ky * KW + kx) * IC + ic,
    r * OW + ox] = x[b, iy, ix, ic] - zero_point, 0 where (iy, ix) lies in the padding. Each
    is a run along a row's outputs, long however few the channels, read with unsigned indices:
    numba then leaves out its check for negative ones, and the compiler makes the run's loop
    work on a vector at a time (2.2x faster on MobileNetV2's stem)."""
    height, in_width, channels = x.shape[1], x.shape[2], x.shape[3]
    zero = into.dtype.type(0)
    step = np.uint64(stride_x * channels)
    for ky in range(kh):
        for kx in range(kw):
            shift = kx * dilation_x - pad_left  # ix = ox * stride_x + shift
            lo = min(width, max(0, (stride_x - 1 - shift) // stride_x))
            hi = max(lo, min(width, (in_width - 1 - shift) // stride_x + 1))
            for ic in range(channels):
                run = into[(ky * kw + kx) * channels + ic]
                first = np.uint64((lo * stride_x + shift) * channels + ic)
                for r in range(rows):
                    iy = top + r * stride_y + ky * dilation_y
                    start = r * width
                    if iy < 0 or iy >= height:
                        run[start:start + width] = zero
                        continue
                    row, inside = x[b, iy].reshape(-1), run[start + lo:start + hi]
                    run[start:start + lo] = zero
                    for i in range(hi - lo):
                        inside[np.uint64(i)] = row[first + np.uint64(i) * step] - zero_point
                    run[start + hi:start + width] = zero


@_inlined
def _block_patches(x: np.ndarray, zero_point: float, w: np.ndarray, kh: int, kw: int, b: int,
                   top: int, pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                   dilation_x: int, rows: int, width: int) -> np.ndarray:
    """The _patches of `rows` output rows (the first row's windows starting at row `top`),
    [rows * OW, KH * KW * IC] as a transposed view, for a product by w."""
    patches = _aligned((w.shape[0], rows * width), w.dtype)
    _patches(x, zero_point, kh, kw, b, top, pad_left, stride_y, stride_x, dilation_y,
             dilation_x, rows, width, patches)
    return patches.T


@_RowLoop
def conv_blocks(x: np.ndarray, zero_point: float, w: np.ndarray, kh: int, kw: int,
                pad_top: int, pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                dilation_x: int, block: int, first: int, acc: np.ndarray, finish: bool,
                bias: np.ndarray, low: float, high: float, nan_to_low: bool) -> None:
    """Output rows first.. of a 2-D convolution of x [N, H, W, IC] (C-contiguous) into
    acc [N, rows, OW, OC] (C-contiguous, of w's type), `block` rows at a time: their _patches
    times w [KH * KW * IC, OC] (float32 or float64, C- or F-contiguous) in one BLAS call, so a
    padded tap adds 0 x w (for finite weights only, then, as the specification skips it). With
    `finish`, _finished_product makes the block instead (its FMA tiles, where they take it),
    each output + bias[c] and clamped as _bias_clamp_row says while in cache."""
    n, rows, width, channels = acc.shape
    blocks = -(-rows // block)
    for j in prange(n * blocks):
        b, r = j // blocks, j % blocks * block
        count = min(block, rows - r)
        out = acc[b, r:r + count].reshape(count * width, channels)
        patches = _block_patches(x, zero_point, w, kh, kw, b, (first + r) * stride_y - pad_top,
                                 pad_left, stride_y, stride_x, dilation_y, dilation_x, count,
                                 width)
        if finish:
            _finished_product(patches, w, out, bias, low, high, nan_to_low, out[:0])
        else:
            _gemm(patches, w, out)


@_inlined
def _direct_row(x: np.ndarray, panels: np.ndarray, kh: int, kw: int, pad_top: int,
                pad_left: int, stride_y: int, stride_x: int, dilation_y: int, b: int, oy: int,
                line: np.ndarray, bias: np.ndarray, low: float, high: float,
                nan_to_low: bool) -> None:
    """Output row oy of image b of conv_rows_direct's convolution into line [OW, OC],
    finished as _finish_rows says: each output's window read straight from x by the FMA
    tiles as KH runs of KW * IC channels, the taps in the padding left out (a window's rows
    outside x by fewer runs, an output at the left or right edge by a shorter run and the
    weights' rows of its taps inside), as the specification skips them."""
    n, height, width, channels = x.shape
    columns, run, item = line.shape[0], kw * channels, x.itemsize
    flat = x.reshape(-1)
    weights = panels.reshape(panels.shape[0], kh, run, PANEL)
    first = min(columns, -(-pad_left // stride_x))  # the outputs whose taps are all inside
    stop = max(first, min(columns, (width - kw + pad_left) // stride_x + 1))
    top = oy * stride_y - pad_top
    ky0 = min(kh, -(-max(0, -top) // dilation_y))
    ky1 = max(ky0, min(kh, (height - 1 - top) // dilation_y + 1))
    pixel = ((b * height + top + ky0 * dilation_y) * width - pad_left) if ky1 > ky0 else 0
    taps = weights[:, ky0:ky1]
    if stop > first:
        window = as_strided(flat[max(0, pixel + first * stride_x) * channels:],
                            (stop - first, ky1 - ky0, run),
                            (stride_x * channels * item, dilation_y * width * channels * item,
                             item))
        _panel_product(window, taps, 0, panels.shape[0], line[first:stop], bias, low, high,
                       nan_to_low, line[:0])
    for ox in range(columns):
        if first <= ox < stop:
            continue
        left = ox * stride_x
        kx0 = min(kw, max(0, pad_left - left))
        kx1 = max(kx0, min(kw, width + pad_left - left))
        at = max(0, pixel + left + kx0) if kx1 > kx0 else 0
        window = as_strided(flat[at * channels:], (1, ky1 - ky0, (kx1 - kx0) * channels),
                            (item, dilation_y * width * channels * item, item))
        _panel_product(window, taps[:, :, kx0 * channels:kx1 * channels], 0, panels.shape[0],
                       line[ox:ox + 1], bias, low, high, nan_to_low, line[:0])


@_RowLoop
def conv_rows_direct(x: np.ndarray, panels: np.ndarray, kh: int, kw: int, pad_top: int,
                     pad_left: int, stride_y: int, stride_x: int, dilation_y: int,
                     out: np.ndarray, bias: np.ndarray, low: float, high: float,
                     nan_to_low: bool) -> None:
    """A 2-D convolution of fp32 x [N, H, W, IC] (C-contiguous), of dilation 1 along the
    width, by its weight as float_panels [P, KH * KW * IC, PANEL] (taps in KH, KW, IC order)
    into out [N, OH, OW, OC], each output + bias[c] and clamped as _bias_clamp_row says: an
    output row at a time (_direct_row), no patches gathered."""
    n, rows = out.shape[0], out.shape[1]
    for j in prange(n * rows):
        _direct_row(x, panels, kh, kw, pad_top, pad_left, stride_y, stride_x, dilation_y,
                    j // rows, j % rows, out[j // rows, j % rows], bias, low, high, nan_to_low)


@_RowLoop
def conv_rows_direct_rescaled(x: np.ndarray, panels: np.ndarray, kh: int, kw: int,
                              pad_top: int, pad_left: int, stride_y: int, stride_x: int,
                              dilation_y: int, out: np.ndarray, offset: np.ndarray,
                              multiplier: np.ndarray, shift: np.ndarray, output_zp: int,
                              low: int, high: int, double_round: bool) -> None:
    """conv_rows_direct's sums (x less its zero point, exact integers in fp32) of each output
    row + offset wrapped to int32 and rescaled into out [N, OH, OW, OC] as _rescale_block
    does, while they are in cache."""
    n, rows, columns, channels = out.shape
    rescale = (offset, multiplier, shift, output_zp, low, high, double_round)
    lanes = _lanes(rescale)
    zeros = np.zeros(channels, np.float32)
    for j in prange(n * rows):
        b, oy = j // rows, j % rows
        acc = _aligned((columns, channels), np.float32)
        _direct_row(x, panels, kh, kw, pad_top, pad_left, stride_y, stride_x, dilation_y, b,
                    oy, acc, zeros, -np.inf, np.inf, False)
        _rescale_block(acc, columns, rescale, lanes, out[b].reshape(-1, channels),
                       oy * columns)


@_RowLoop
def conv_blocks_rescaled(x: np.ndarray, zero_point: float, w: np.ndarray, kh: int, kw: int,
                         pad_top: int, pad_left: int, stride_y: int, stride_x: int,
                         dilation_y: int, dilation_x: int, block: int, out: np.ndarray,
                         offset: np.ndarray, multiplier: np.ndarray, shift: np.ndarray,
                         output_zp: int, low: int, high: int, double_round: bool) -> None:
    """conv_blocks of every output row, each block's sums (exact integers in w's type) +
    offset wrapped to int32 and rescaled into out [N, OH, OW, OC] as _rescale_block does,
    while they are in cache."""
    n, rows, width, channels = out.shape
    blocks = -(-rows // block)
    rescale = (offset, multiplier, shift, output_zp, low, high, double_round)
    lanes = _lanes(rescale)
    for j in prange(n * blocks):
        b, r = j // blocks, j % blocks * block
        count = min(block, rows - r)
        acc = _aligned((count * width, channels), w.dtype)
        _gemm(_block_patches(x, zero_point, w, kh, kw, b, r * stride_y - pad_top, pad_left,
                             stride_y, stride_x, dilation_y, dilation_x, count, width), w, acc)
        _rescale_block(acc, count * width, rescale, lanes, out[b].reshape(-1, channels),
                       r * width)
