"""Numeric building blocks of the convolution, matmul and pooling operators.

Integer dot products must be bit-exact, yet integer matmul in numpy does not use BLAS. A float
GEMM is exact when every partial sum is an integer below the float's 2**mantissa: then no order
of summation can round. `exact_dtype` picks float32 or float64 from a bound on the sum of
absolute products and falls back to int64 only when neither is exact.

Weight preparation (zero-point subtraction, layout for the GEMM) is cached for weights that
cannot change: read-only arrays whose memory is read-only too (a VGF file's constants).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import NamedTuple, TypeVar

import ml_dtypes
import numpy as np

from ..tosa._common import F32, F64, I8, I32, I64, inside_taps, padded, scalar, taps  # noqa: F401
from ..types import immutable
from . import blas, compiled, threads
from .compiled import (
    bias_clamp_rows,
    gemm_batch,
    gemm_columns,
    gemm_columns_int8,
    gemm_columns_rescaled,
    gemm_panels,
    gemm_rows,
    gemm_rows_int8,
    gemm_rows_packed,
    gemm_rows_rescaled,
)
from .memory import aligned

T = TypeVar("T")


def exact_dtype(bound: int) -> np.dtype:
    """The fastest dtype whose GEMM sums integers of absolute sum below `bound` exactly."""
    if bound < 2**24:
        return F32
    if bound < 2**53:
        return F64
    return I64


def max_offset(dtype: np.dtype, zero_point: int) -> int:
    """The largest |x - zero_point| over every value x of the integer `dtype` (int4 included)."""
    info = ml_dtypes.iinfo(dtype)
    return max(int(info.max) - zero_point, zero_point - int(info.min))


_CACHE: dict[tuple[int, Hashable], tuple[weakref.ref, object]] = {}


def prepared(weight: np.ndarray, key: Hashable, make: Callable[[], T]) -> T:
    """make(), computed once per immutable `weight` and `key`; every call for other weights.
    A view counts as the array it views, at its place in it: one made afresh on every call
    (a batch's one matrix) finds what an earlier one made."""
    if not immutable(weight):
        return make()
    owner = weight
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if owner is not weight:
        offset = weight.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
        key = (key, offset, weight.shape, weight.strides, weight.dtype)
    slot = (id(owner), key)
    hit = _CACHE.get(slot)
    if hit is not None and hit[0]() is owner:
        return hit[1]  # type: ignore[return-value]
    value = make()
    _CACHE[slot] = (weakref.ref(owner, lambda _, slot=slot, cache=_CACHE: cache.pop(slot, None)),
                    value)
    return value


def along_rows(x: np.ndarray, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A C-contiguous `x` [..., W, C] as a view [-1, W * C], and the per-channel `vector` [C]
    repeated W times (prepared once for a constant): an op broadcasting the vector then runs
    along whole rows instead of one loop of C values per position."""
    if x.ndim < 2 or vector.size < 2 or not x.flags.c_contiguous or x.size == 0:
        return x, vector
    reps = x.shape[-2]
    return (x.reshape(-1, reps * x.shape[-1]),
            prepared(vector, ("along_rows", reps), lambda: aligned(np.tile(vector, reps))))


def per_channel(values: np.ndarray, channels: int, dtype: np.dtype) -> np.ndarray:
    """values (one, or one per channel) as a contiguous vector of `channels` entries of `dtype`
    (prepared once for a constant)."""
    return prepared(values, ("per_channel", channels, np.dtype(dtype)), lambda: aligned(
        np.broadcast_to(np.asarray(values, dtype).reshape(-1), (channels,))))


def bias_clamp(acc: np.ndarray, bias: np.ndarray, low: float = -np.inf, high: float = np.inf,
               nan_to_low: bool = False) -> np.ndarray | None:
    """acc + bias (one, or one per channel), clamped to [low, high] with NaN kept (or made low
    when nan_to_low), computed into an fp32 C-contiguous `acc` in one compiled pass and
    returned; None, untouched, for any other accumulator."""
    if acc.dtype != F32 or not acc.flags.c_contiguous:
        return None
    channels = acc.shape[-1] if acc.ndim else 1
    bias_clamp_rows(acc.reshape(-1, channels), per_channel(bias, channels, F32), F32.type(low),
                    F32.type(high), nan_to_low)
    return acc


GEMM_BLOCK_ROWS = 16
"""The fewest rows (or, split by columns, columns) of a GEMM's result worth a thread of their
own (a 7x7 map's 49 rows split in two still take about a quarter off)."""

GEMM_BLOCK_BYTES = 1 << 18
"""The most bytes of a GEMM's result in one block, so that finishing it finds it in cache."""

Finish = tuple[np.ndarray, float, float, bool]
"""What finishes a float GEMM's result in place: + bias (one per column), clamped to
[low, high], NaN made low or not: (bias, low, high, nan_to_low)."""


class _Split(NamedTuple):
    """How a GEMM out = a @ b is cut over the threads: `blocks` blocks of out's rows, or, when
    `bt` (b transposed, C-contiguous) is given, of its columns."""

    blocks: int
    bt: np.ndarray | None = None


def _split(a: np.ndarray, b: np.ndarray, out: np.ndarray, finishing: bool) -> _Split | None:
    """How split_gemm cuts out = a @ b, or None where it does not (see split_gemm).

    By rows: one block per thread (each of GEMM_BLOCK_ROWS rows at least, so that on many
    cores a small product takes fewer threads rather than none) or, when each is then finished,
    blocks small enough to be finished in cache (on one thread too: the loop then runs on the
    calling thread). By columns, one block per thread, when that takes more threads than rows
    do (_column_parts: a classifier's one row, a 7x7 map's 49 rows on many cores), out has at
    most half as many rows as columns and b is laid out by columns or cannot change (its
    transpose is then made once): each thread's BLAS call then packs its share of b rather
    than all of it."""
    workers = threads.workers() if threads.spread() else 1
    rows, cols = out.shape
    if (b.dtype not in (F32, F64) or not a.flags.c_contiguous or not out.flags.c_contiguous
            or not (b.flags.c_contiguous or b.flags.f_contiguous) or not rows):
        return None
    parts = _column_parts(rows, cols, workers, b.nbytes)
    if parts:
        if b.flags.f_contiguous:
            return _Split(parts, b.T)
        if immutable(b):
            return _Split(parts, prepared(b, "transposed", lambda: aligned(b.T)))
    blocks = _row_blocks(rows, cols * b.itemsize, finishing, workers)
    return None if blocks is None else _Split(blocks)


def _parts(extent: int, workers: int) -> int:
    """How many of the `workers` threads share `extent` rows (or columns): each at least
    GEMM_BLOCK_ROWS of them, so a small product on a many-core machine splits over fewer
    threads rather than none."""
    return min(workers, extent // GEMM_BLOCK_ROWS)


COLUMN_SPLIT_BYTES = 1 << 20
"""The size of a GEMM's right operand from which a split by columns pays even where rows
would give every thread its share: each thread then packs half of it or less, not all."""


def _column_parts(rows: int, cols: int, workers: int, b_bytes: int) -> int:
    """Over how many threads a GEMM's result of `rows` x `cols` splits by columns, one block
    a thread; 0 where it splits by rows. By columns where that takes more threads than rows
    do, or where b (of `b_bytes`) is large (COLUMN_SPLIT_BYTES); else by rows. Split by rows,
    each thread finishes a block of whole rows; by columns, a strip of every row, which took
    longer: on two threads 196 x 96 @ 96 x 576 took 0.100 ms by rows and 0.128 by columns,
    49 x 960 @ 960 x 160 0.080 and 0.094 (MKL, bias and clamp after); but 49 x 320 @ 320 x
    1280 0.239 and 0.207, and the transformer's 197 x 384 @ 384 x 1536 was faster by columns."""
    parts = _parts(cols, workers)
    if parts < 2 or 2 * rows > cols:
        return 0
    return parts if parts > _parts(rows, workers) or b_bytes >= COLUMN_SPLIT_BYTES else 0


def _row_blocks(rows: int, row_bytes: int, finishing: bool, workers: int) -> int | None:
    """How many blocks of rows a GEMM's result splits into (see _split), or None."""
    cached = -(-rows * row_bytes // GEMM_BLOCK_BYTES)  # blocks finished in cache
    if workers == 1:
        return max(1, min(rows // GEMM_BLOCK_ROWS, cached)) if finishing else None
    parts = _parts(rows, workers)
    if parts < 2:
        return None
    blocks = -(-cached // parts) if finishing else 1
    return min(rows // GEMM_BLOCK_ROWS, blocks * parts)


GemmCall = Callable[..., None]
"""A GEMM worked out once for its operands' shapes, types and layouts and the thread count:
call(a, out) or call(a, out, residual) makes out = a @ b (then finished, + residual) as
split_gemm would, or int8_gemm_call's out."""


def gemm_call(a: np.ndarray, b: np.ndarray, out: np.ndarray,
              finish: Finish | None = None) -> GemmCall | None:
    """How split_gemm makes out = a @ b, finished as `finish` says, for operands like these and
    the calling thread's thread count (threads.spread(), workers()): everything but the run's
    arrays decided once, for callers that keep it (conv._Conv, once per thread count); None
    where split_gemm does not apply. b may be an fp32 weight's compiled.float_panels (with a
    and out fp32, C-contiguous): its products then run on the FMA tiles (_panel_cut)."""
    dtype = out.dtype
    if b.ndim == 3:
        loop, matrix, cut = gemm_panels, b, _panel_cut(b, out)
        bias, low, high, nan_to_low = finish or (np.zeros(out.shape[1], dtype), -np.inf, np.inf,
                                                 False)
    else:
        split = _split(a, b, out, finish is not None) if out.dtype == a.dtype == b.dtype else None
        if split is None:
            return None
        loop, matrix = (gemm_rows, b) if split.bt is None else (gemm_columns, split.bt)
        cut = (split.blocks, finish is not None)
        bias, low, high, nan_to_low = finish or (np.empty(0, dtype), 0, 0, False)
    static = (*cut, bias.astype(dtype, copy=False), dtype.type(low), dtype.type(high), nan_to_low)
    none = np.empty((0, 0), dtype)

    def call(a: np.ndarray, out: np.ndarray, residual: np.ndarray | None = None) -> None:
        loop(a, matrix, out, *static,
             none if residual is None else np.ascontiguousarray(residual, dtype))
    return call


def _panel_cut(panels: np.ndarray, out: np.ndarray) -> tuple[int, int]:
    """How compiled.gemm_panels cuts out = a @ panels over the threads: (blocks of rows,
    groups of panels), a group a thread where split_gemm would split by columns, else its
    blocks of rows."""
    workers = threads.workers() if threads.spread() else 1
    rows, cols = out.shape
    groups = _column_parts(rows, cols, workers, panels.nbytes) or 1
    return (1 if groups > 1 else _row_blocks(rows, cols * 4, True, workers) or 1), groups


def split_gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray,
               finish: Finish | None = None, residual: np.ndarray | None = None) -> bool:
    """out = a @ b of 2-D matrices, then finished as `finish` says (kernels.Finish) when
    given, then + `residual` (out's shape and type; only with `finish`) when given, in blocks
    of out's rows (or columns: `_split`) over numba's threads, one single-threaded BLAS call
    each; True when done. False, with nothing done, where this does not apply: the matrices
    are not all float32 or all float64 or not contiguous (a and out by rows), out is too small
    to split, or the loops run on one thread (threads.py) and there is nothing to finish."""
    call = gemm_call(a, b, out, finish)
    if call is None:
        return False
    call(a, out, residual)
    return True


def tile_weight(matrix: np.ndarray) -> np.ndarray:
    """A constant fp32 weight matrix [K, N] as the FMA tiles read it (compiled.float_panels),
    made once (read-only, on a cache line), where they run here (compiled.FLOAT_TILES) and N
    is a multiple of their vectors' eight lanes; else the matrix itself."""
    if not compiled.FLOAT_TILES or matrix.shape[1] % compiled.FLOAT_LANES:
        return matrix
    return prepared(matrix, "float panels",
                    lambda: aligned(compiled.float_panels(matrix), readonly=True))


def biased_product(a: np.ndarray, b: np.ndarray, bias: np.ndarray,
                   residual: np.ndarray | None = None) -> np.ndarray:
    """a @ b + bias (+ residual, where given) for fp32 a [1, H, C], b [C, W] (or its
    tile_weight), bias [W] and residual [1, H, W]: the bias, then the residual, added to each
    block of the GEMM as it is made where split_gemm applies, else after numpy's product, in
    the same order."""
    out = np.empty((1, a.shape[1], bias.shape[0]), F32)
    if not split_gemm(np.ascontiguousarray(a[0]), b, out[0], (bias, -np.inf, np.inf, False),
                      None if residual is None else residual[0]):
        np.matmul(a[0], b, out=out[0])
        out += bias
        if residual is not None:
            out += residual
    return out


Rescale = tuple[np.ndarray, np.ndarray, np.ndarray, int, int, int, bool]
"""A RESCALE in its common case (the sum wrapped to int32), as the compiled loops take it:
(offset, multiplier, shift, output_zp, low, high, double_round), the vectors of one entry per
column (offset and shift int64, multiplier int32)."""

NO_RESCALE: Rescale = (np.zeros(0, I64), np.zeros(0, I32), np.zeros(0, I64), 0, 0, 0, False)
"""A Rescale of no columns: where a loop takes an optional one (compiled.residual_rows's
y_first), none."""


def split_gemm_rescaled(a: np.ndarray, b: np.ndarray, out: np.ndarray, rescale: Rescale,
                        a_offset: int = 0) -> bool:
    """out = `rescale` of (a - a_offset) @ b, for integers `a` and a float32 or float64 `b` in
    which every such sum is exact (exact_dtype), as split_gemm does it: each block of rows
    (or columns) converted, made and rescaled while in cache, on the threads; True when
    done, False (nothing done) where split_gemm would not split or `a` is not of integers."""
    split = _split(a, b, out, True) if a.dtype.kind in "iu" else None
    if split is None:
        return False
    if split.bt is None:
        gemm_rows_rescaled(a, b.dtype.type(a_offset), b, out, split.blocks, *rescale)
    else:
        gemm_columns_rescaled(a, b.dtype.type(a_offset), split.bt, out, split.blocks, *rescale)
    return True


def int8_gemm(weight: np.ndarray, input_zp: int, rescale: Rescale) -> tuple[np.ndarray, Rescale] | None:
    """For int8_gemm_call: a constant int8 weight matrix [K, N] as it takes it (int8_packed
    where the int8 tiles make its products: K a multiple of 4 on a CPU with them; else
    C-contiguous for MKL's int8 GEMM) and `rescale` with its offsets less (128 + input_zp)
    times each column's sum, which its inputs' 128 adds to each product; None where neither
    applies (for MKL: blas.INT8) or a sum could pass int32 (K * 255 * 128 >= 2**31).

    MobileNetV2 ran faster with every 1x1 layer on the tiles' loop (VNNI) than with those of 64
    input channels or more on MKL's int8 GEMM (the suite's int8 model 5.58 -> 5.36 ms, Arm's
    6.92 -> 6.46, in one process, alternating), though MKL's was the faster on such layers
    alone, their data hot in cache."""
    k = weight.shape[0]
    if weight.dtype != I8 or k * 255 * 128 >= 1 << 31:
        return None
    if compiled.INT8_TILES and k % 4 == 0:
        matrix = prepared(weight, "int8 packed", lambda: aligned(compiled.int8_packed(weight)))
    elif blas.INT8:
        matrix = prepared(weight, "int8 matrix", lambda: aligned(weight))
    else:
        return None
    sums = prepared(weight, "int8 column sums", lambda: weight.sum(axis=0, dtype=I64))
    offset, *rest = rescale
    return matrix, (aligned(offset - (128 + input_zp) * sums), *rest)  # type: ignore[return-value]


def int8_gemm_call(a: np.ndarray, weight: np.ndarray, out: np.ndarray,
                   rescale: Rescale) -> GemmCall | None:
    """How out = `rescale` of a @ weight is made for int8 a [M, K] and the weight and rescale
    int8_gemm made, worked out once as gemm_call is: a + 128 as uint8 times the weight, exact
    in int32, by compiled.gemm_rows_packed (a packed weight: compiled.PACKED words) or MKL's
    int8 GEMM, in blocks of rows (for MKL, or of columns) cut as split_gemm cuts them, over the
    threads (one block where split_gemm would not split), each rescaled while in cache; None
    where a or out is not C-contiguous int8."""
    if a.dtype != I8 or not a.flags.c_contiguous or not out.flags.c_contiguous:
        return None
    workers = threads.workers() if threads.spread() else 1
    rows, cols = out.shape
    packed = weight.dtype == compiled.PACKED
    parts = 0 if packed else _column_parts(rows, cols, workers, weight.nbytes)
    if parts:
        return lambda a, out: gemm_columns_int8(a, weight, out, parts, *rescale)
    blocks = _row_blocks(rows, cols * 4, True, workers) or 1
    loop = gemm_rows_packed if packed else gemm_rows_int8
    return lambda a, out: loop(a, weight, out, blocks, *rescale)


def _batch_splits(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """Whether a batched GEMM runs as one threaded loop over its products (gemm_batch): a batch
    of at least one product a thread, all float32 or all float64, out C-contiguous and each
    matrix of a and b with a unit stride along one of its axes (a view of heads, transposed
    or not)."""
    return (a.shape[0] >= threads.workers() and a.dtype == b.dtype == out.dtype
            and a.dtype in (F32, F64) and _strided(a) and _strided(b) and out.flags.c_contiguous)


def _strided(x: np.ndarray) -> bool:
    """Whether each matrix of a batch x [B, M, N] has unit stride along its rows or columns."""
    return x.itemsize in (x.strides[1], x.strides[2]) or 1 in x.shape[1:]


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """a @ b of matrices [M, K] @ [K, N], or of batches of them [B, M, K] @ [B, K, N], into
    `out` (C-contiguous) when given: a batch's products over the threads (gemm_batch) where
    _batch_splits says, else each one as a matrix; split_gemm where it applies to a matrix,
    else numpy's matmul."""
    if out is None:
        out = np.empty((*a.shape[:-1], b.shape[-1]), np.result_type(a, b))
    if a.ndim == 3 and threads.spread():
        if _batch_splits(a, b, out):
            gemm_batch(a, b, out)
        else:
            for x, y, z in zip(a, b, out):
                gemm(x, y, z)
    elif a.ndim == 3 or not split_gemm(a, b, out):
        np.matmul(a, b, out=out)
    return out


def im2col(xp: np.ndarray, kernel: Sequence[int], stride: Sequence[int],
           dilation: Sequence[int], out_size: Sequence[int]) -> np.ndarray:
    """The patch matrix [N * prod(out_size), prod(kernel) * C] of padded input xp [N, *S, C].

    With many channels each tap copies runs of C contiguous values; with few, runs that short
    would cost a loop step each, so the patches are gathered transposed (runs along the output
    width) and the transposed view returned: BLAS takes either layout without a copy.
    """
    n, channels = xp.shape[0], xp.shape[-1]
    spatial = len(kernel)
    rows = n * int(np.prod(out_size))
    if channels >= _SHORT_RUN:
        cols = np.empty((n, *out_size, *kernel, channels), xp.dtype)
        lead = (slice(None),) * (1 + spatial)
        for index, window in taps(kernel, stride, dilation, out_size):
            cols[lead + index] = xp[(slice(None), *window)]
        return cols.reshape(rows, -1)
    cols_t = np.empty((*kernel, channels, n, *out_size), xp.dtype)
    order = (1 + spatial, 0, *range(1, 1 + spatial))
    for index, window in taps(kernel, stride, dilation, out_size):
        cols_t[index] = xp[(slice(None), *window)].transpose(order)
    return cols_t.reshape(-1, rows).T


_SHORT_RUN = 16
"""Channel counts below this gather im2col patches transposed."""

BAND_BYTES = 1 << 20
"""Working-set size of one band of output rows: large temporaries stay in cache, and are reused
from the allocator's free lists rather than page-faulted in afresh on every call. For a 3x3
convolution's patch matrix, 1 MB gives each GEMM enough rows: conv2d_large (56x56x128 ->
256) ran in 13.2 ms against 20.6 ms with 256 kB bands of one output row each (two threads)."""


def bands(first: int, stop: int, row_bytes: int,
          band_bytes: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) ranges covering output rows first..stop, each of at most `band_bytes`
    (default BAND_BYTES; one row at least) when one row's temporaries take `row_bytes`."""
    step = max(1, (BAND_BYTES if band_bytes is None else band_bytes) // max(1, row_bytes))
    for start in range(first, stop, step):
        yield start, min(stop, start + step)
