"""The fast executor's convolutions: CONV2D, CONV3D, DEPTHWISE_CONV2D and TRANSPOSE_CONV2D
(NHWC / NDHWC), with the results of pyvgf/tosa/conv.py's (integers bit-exact).

Integer convolutions subtract the zero points and accumulate exactly (int8 x int8 and int8 x int4
into int32, int16 x int8 into int48 held as int64); floating-point ones accumulate in float32 and
round once to the output type. CONV2D, CONV3D and TRANSPOSE_CONV2D run as a patch matrix times
the weight matrix in BLAS (see kernels.py for why the integer ones stay bit-exact); a CONV2D
of few input channels (FEW_CHANNELS: an image's 3) as one compiled loop over blocks
of output rows, each block's patches gathered transposed and multiplied in one BLAS call
(compiled.conv_blocks); DEPTHWISE_CONV2D as one compiled loop over each output's window
(compiled.depthwise_rows). Both loops have a twin that applies a following RESCALE.

A graph's step works out once, at its first run, everything that does not depend on the input's
values (geometry, the GEMM's type, the weight matrix, how the result is finished: _Conv,
_Depthwise); a call of the op itself does it per call. Each works a band of output rows at a
time: the band's patches, accumulator, bias and output type stay in cache, and so does the
`epilogue` the plan may fuse in (a CLAMP or RESCALE reading only this result; see plan.py),
which then finishes each band in place of a separate pass over the whole tensor.

The specification skips padded taps rather than multiplying them: with a non-finite float
weight (0 x inf is NaN) and padding, CONV2D and CONV3D instead accumulate each tap over the
outputs whose reads land inside the input (kernels.inside_taps); the depthwise loop always
skips them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol

import numpy as np

from ..errors import TosaError
from ..tosa._common import F64, I8, I32, is_float
from ..tosa.conv import out_dtype as _out_dtype
from ..types import TensorType
from . import compiled, kernels, memory, threads
from .compiled import (
    conv_blocks,
    conv_blocks_rescaled,
    conv_rows_direct,
    conv_rows_direct_rescaled,
    depthwise_gemm_rows,
    depthwise_gemm_rows_packed,
    depthwise_rows,
    depthwise_rows_rescaled,
    expanded_gemm_rows,
    expanded_gemm_rows_packed,
)
from .kernels import (
    F32,
    I64,
    NO_RESCALE,
    Finish,
    Rescale,
    along_rows,
    bands,
    bias_clamp,
    exact_dtype,
    gemm,
    gemm_call,
    im2col,
    inside_taps,
    int8_gemm,
    int8_gemm_call,
    max_offset,
    padded,
    per_channel,
    prepared,
    scalar,
    split_gemm_rescaled,
    tile_weight,
)
from .registry import fast_op


def _sum_bound(weight: np.ndarray, weight_zp: int, input_dtype: np.dtype, input_zp: int,
               per_output: Callable[[np.ndarray], np.ndarray]) -> int:
    """The bound of an integer convolution's output sums: max|x - input_zp| times the largest
    sum over an output's taps of |w - weight_zp|, `per_output(w)` laying the weight out as
    [taps, outputs]."""
    wsum = prepared(weight, ("abs-sum", per_output, weight_zp), lambda: int(
        np.abs(per_output(weight).astype(I64) - weight_zp).sum(axis=0).max(initial=0)))
    return max_offset(input_dtype, input_zp) * wsum


def _compute_dtype(weight: np.ndarray, weight_zp: int, input_dtype: np.dtype, input_zp: int,
                   per_output: Callable[[np.ndarray], np.ndarray]) -> np.dtype:
    """float32 for float types; for integers the fastest exact GEMM dtype (_sum_bound)."""
    if is_float(weight.dtype):
        return F32
    return exact_dtype(_sum_bound(weight, weight_zp, input_dtype, input_zp, per_output))


def _matrix(weight: np.ndarray, weight_zp: int, dtype: np.dtype,
            layout: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """layout(weight - weight_zp) as `dtype`, prepared once for a constant weight: a
    read-only C-contiguous copy on a cache line (memory.aligned). MKL's sgemm read
    MobileNetV2's 1x1 weights so 1.03-1.36x as fast as the transposed view of the constant
    they had been, 16 bytes past a line; the model took 0.98x the time in fp32."""
    def make() -> np.ndarray:
        if weight_zp == 0:
            m = layout(weight).astype(dtype, copy=False)
        else:
            m = (layout(weight).astype(I64) - weight_zp).astype(dtype)
        return memory.aligned(m, readonly=True)
    return prepared(weight, ("matrix", layout, dtype, weight_zp), make)


class Epilogue(Protocol):
    """What the interpreter fuses into a convolution: a band of its result -> that band of the
    final result, of element type `dtype`; it may overwrite the band it is given.
    `from_accumulator` may make the final band straight from the accumulator and the bias,
    whose sum the result would hold as `result_dtype`, overwriting the accumulator where it can
    (None: it cannot). `bounds`, when not None, says that for a float result the epilogue is a
    clamp, (low, high, nan_to_low) as kernels.Finish takes them, which the compiled loops may
    apply themselves. `rescale` likewise gives the first op, when it is a RESCALE the loops can
    apply to acc + bias, as kernels.Rescale for a result of `channels` columns (None: it is
    not); its result, of type `first_dtype`, then goes to `rest` for the ops after it."""

    dtype: np.dtype
    first_dtype: np.dtype
    bounds: tuple[float, float, bool] | None

    def __call__(self, band: np.ndarray) -> np.ndarray: ...

    def from_accumulator(self, acc: np.ndarray, bias: np.ndarray,
                         result_dtype: np.dtype) -> np.ndarray | None: ...

    def rescale(self, bias: np.ndarray, result_dtype: np.dtype, channels: int) -> Rescale | None: ...

    def rest(self, first: np.ndarray) -> np.ndarray: ...


class _Finishing:
    """How a convolution's result [N, OH, ..., C] is finished, worked out once: bias, output
    type, then the epilogue. When the accumulator's type is the final one (fp32, no epilogue
    or a CLAMP) and N is 1, bands accumulate in the result itself (`direct`).

    `finish` (kernels.Finish) is set when the result is the fp32 accumulator + bias, clamped or
    not, for a compiled loop to apply while each part is in cache; `rescale` (kernels.Rescale)
    when the epilogue's first op is a RESCALE such a loop can apply, its result then going to
    the epilogue's other ops."""

    def __init__(self, shape: tuple[int, ...], acc_dtype: np.dtype, bias: np.ndarray,
                 out_dtype: np.dtype, epilogue: Epilogue | None):
        self.shape, self.bias, self.out_dtype, self.epilogue = shape, bias, out_dtype, epilogue
        self.dtype = out_dtype if epilogue is None else epilogue.dtype
        self.direct = acc_dtype == out_dtype == self.dtype and shape[0] == 1
        self.finish: Finish | None = None
        self.rescale: Rescale | None = None
        if self.direct and self.dtype == F32:
            bounds = (-np.inf, np.inf, False) if epilogue is None else epilogue.bounds
            if bounds is not None:
                self.finish = (per_channel(bias, shape[-1], F32), *bounds)
        if self.finish is None and epilogue is not None:
            self.rescale = epilogue.rescale(bias, out_dtype, shape[-1])


class _Result:
    """One run's result, finished as its _Finishing says, a band of output rows at a time."""

    def __init__(self, how: _Finishing):
        self.how = how
        self.array = np.empty(how.shape, how.dtype)

    def rescale_target(self) -> np.ndarray:
        """Where a compiled loop applying `how.rescale` writes: an array of that RESCALE's
        result type, which then goes to `rescaled`."""
        first = self.how.epilogue.first_dtype  # type: ignore[union-attr]
        return self.array if first == self.array.dtype else np.empty(self.array.shape, first)

    def rescaled(self, first: np.ndarray) -> np.ndarray:
        """The result, from the array a loop wrote as rescale_target said."""
        return self.how.epilogue.rest(first)  # type: ignore[union-attr]

    def target(self, first: int, stop: int) -> np.ndarray | None:
        """Where to accumulate rows first..stop: a contiguous view of the result, or None (use
        a temporary)."""
        return self.array[:, first:stop] if self.how.direct else None

    def put(self, first: int, acc: np.ndarray) -> None:
        """Rows first.. of the result from their accumulator band (which this may overwrite)."""
        how, band = self.how, None
        if how.epilogue is not None:
            band = how.epilogue.from_accumulator(acc, how.bias, how.out_dtype)
        if band is None:
            band = _finish(acc, how.bias, how.out_dtype)
            if how.epilogue is not None:
                band = how.epilogue(band)
        if band.base is not self.array:  # not finished in place in the result (`target`)
            self.array[:, first:first + band.shape[1]] = band

    def finish(self, acc: np.ndarray) -> np.ndarray:
        """The result from the whole accumulator (the result itself when `direct`), a band of
        rows at a time."""
        for start, end in bands(0, acc.shape[1], 2 * acc.nbytes // max(1, acc.shape[1])):
            self.put(start, acc[:, start:end])
        return self.array


def _finish(acc: np.ndarray, bias: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    """acc + bias as the output type: integers are added after the exact cast."""
    if is_float(out_dtype):
        if out_dtype == F32 and (done := bias_clamp(acc, bias)) is not None:
            return done
        rows, tiled = along_rows(acc, bias.astype(F32, copy=False))
        rows += tiled
        return acc.astype(out_dtype, copy=False)
    out = acc.astype(out_dtype, copy=False)
    rows, tiled = along_rows(out, bias.astype(out_dtype, copy=False))
    rows += tiled
    return out


def _conv_matrix(w: np.ndarray) -> np.ndarray:
    return w.reshape(w.shape[0], -1).T


def _skip_padding(weight: np.ndarray, matrix: np.ndarray, pads: list[tuple[int, int]]) -> bool:
    """Whether padded taps must be skipped: a float weight with inf or NaN, and padding."""
    return (matrix.dtype == F32 and any(a or b for a, b in pads)
            and not prepared(weight, "finite", lambda: bool(np.isfinite(matrix).all())))


def _geometry(sizes: tuple[int, ...], kernel: tuple[int, ...], pad: np.ndarray,
              stride: np.ndarray, dilation: np.ndarray
              ) -> tuple[list[tuple[int, int]], list[int], list[int], list[int]]:
    """A convolution window's pads as (before, after) per spatial axis, strides, dilations and
    output sizes."""
    pads = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(sizes))]
    strides, dilations = [int(s) for s in stride], [int(d) for d in dilation]
    out = [(n - 1 + a + b - (k - 1) * d) // s + 1
           for n, (a, b), k, d, s in zip(sizes, pads, kernel, dilations, strides)]
    return pads, strides, dilations, out


FEW_CHANNELS = 16
"""A CONV2D of fewer input channels than this (not 1x1 of stride 1, which is a GEMM of its input
as it is) runs as compiled.conv_blocks rather than as patches times weights in BLAS: with so
few channels the GEMM gathers its patches transposed (kernels.im2col), and BLAS works on them
on one thread (the view is not contiguous), where conv_blocks gathers each block's patches in
vectorized runs along its rows and makes them in one BLAS call a block, the blocks over every
thread. On the 2-core project machine, on one thread, 3 to 12 channels ran 1.15-1.9x as fast
so (3x3 and 7x7 kernels, int8 and fp32; 16 and 32, left to the GEMM, 1.2-1.95x)."""


BLOCK_OUTPUTS = 448
"""About how many outputs (whole rows of them) conv_blocks makes in one BLAS call: 4 rows of
MobileNetV2's stem, 1.1x faster than 2 or 8 on one thread."""


class _Conv:
    """CONV2D or CONV3D on inputs of one shape and type, with everything that does not depend
    on the input's values worked out when made: geometry, the GEMM's type and weight matrix, how
    the result is finished. A graph's step makes one at its first run (`prepare`).
    Input [N, *S, IC], weight [OC, *K, IC], pad (before, after) per axis."""

    def __init__(self, shape: tuple[int, ...], in_dtype: np.dtype, weight: np.ndarray,
                 bias: np.ndarray, input_zp: np.ndarray, weight_zp: np.ndarray, pad: np.ndarray,
                 stride: np.ndarray, dilation: np.ndarray, epilogue: Epilogue | None):
        self.izp, wzp = scalar(input_zp), scalar(weight_zp)
        self.sizes, self.kernel = shape[1:-1], weight.shape[1:-1]
        self.pads, self.stride, self.dilation, self.out_size = _geometry(
            self.sizes, self.kernel, pad, stride, dilation)
        self.dtype = dtype = _compute_dtype(weight, wzp, in_dtype, self.izp, _conv_matrix)
        self.wmat = _matrix(weight, wzp, dtype, _conv_matrix)
        self.n, self.oc = shape[0], weight.shape[0]
        self.how = _Finishing((self.n, *self.out_size, self.oc), dtype, bias, _out_dtype(in_dtype),
                              epilogue)
        self.skip_padding = _skip_padding(weight, self.wmat, self.pads)
        self.pointwise = all(k == 1 for k in self.kernel) and all(s == 1 for s in self.stride)
        self.unpadded = not any(map(any, self.pads))
        self.as_is = self.unpadded and np.dtype(in_dtype) == dtype and self.izp == 0
        """Whether the GEMM reads the input as it is (padded() would return it)."""
        self.gemms: dict[tuple[bool, int], kernels.GemmCall | None] = {}
        """The pointwise GEMM (kernels.gemm_call, int8_gemm_call) for each thread count a run
        has had: (threads.spread(), threads.workers()) -> the call, None where it does not
        split."""
        self.int8 = None
        """kernels.int8_gemm's weight and rescale, where a 1x1 int8 convolution that a RESCALE
        finishes runs on the int8 tiles (AVX-512 VNNI or AVX2) or MKL's int8 GEMM."""
        if self.pointwise and self.unpadded and self.how.rescale is not None and wzp == 0 \
                and in_dtype == I8:
            self.int8 = int8_gemm(_conv_matrix(weight), self.izp, self.how.rescale)
        self.blocks: tuple | None = None
        """compiled.conv_blocks' arguments after the input, where it applies (FEW_CHANNELS)."""
        if (len(self.kernel) == 2 and not self.pointwise and not self.skip_padding
                and dtype in (F32, F64) and shape[-1] < FEW_CHANNELS):
            self.blocks = (dtype.type(self.izp), self.wmat, *self.kernel, self.pads[0][0],
                           self.pads[1][0], *self.stride, *self.dilation,
                           max(1, BLOCK_OUTPUTS // self.out_size[1]))
        self.direct_tiles = (
            self.blocks is not None and compiled.FLOAT_TILES and dtype == F32
            and self.dilation[1] == 1 and self.oc % compiled.FLOAT_LANES == 0
            and (self.how.finish is not None and np.dtype(in_dtype) == F32
                 or self.how.rescale is not None and np.dtype(in_dtype) == I8))
        """Whether compiled.conv_rows_direct makes the result rather than conv_blocks: its sums
        in fp32 (exact, for int8) on the FMA tiles, dilation 1 along the width, output channels
        in eights, then a bias and clamp (fp32) or a RESCALE (int8, conv_rows_direct_rescaled)."""

    @functools.cached_property
    def panels(self) -> np.ndarray:
        """The weight matrix as the fp32 FMA tiles read it (kernels.tile_weight) where the
        product is fp32; else wmat."""
        return tile_weight(self.wmat) if self.dtype == F32 else self.wmat

    def __call__(self, input: np.ndarray, residual: np.ndarray | None = None) -> np.ndarray:
        """The result; with `residual` (of a float result's shape and type), the result +
        residual, an ADD fused after it (patterns.py): made in each block of a pointwise GEMM
        as the block is finished, else in one pass after."""
        out, added = self._result(input, residual)
        if residual is not None and not added:
            np.add(out, residual, out=out)
        return out

    def _result(self, input: np.ndarray, residual: np.ndarray | None) -> tuple[np.ndarray, bool]:
        """The result, and whether `residual` was added to it."""
        if self.direct_tiles:
            x = (np.subtract(input, self.izp, dtype=F32, order="C") if self.izp
                 else np.ascontiguousarray(input, F32))
            window = (x, self.panels, *self.kernel, self.pads[0][0], self.pads[1][0],
                      *self.stride, self.dilation[0])
            result = _Result(self.how)
            if self.how.finish is None:
                into = result.rescale_target()
                conv_rows_direct_rescaled(*window, into, *self.how.rescale)  # type: ignore[misc]
                return result.rescaled(into), False
            bias, low, high, nan_to_low = self.how.finish
            conv_rows_direct(*window, result.array, bias, F32.type(low), F32.type(high),
                             nan_to_low)
            return result.array, False
        if self.blocks is not None:
            # The patches are read in the compute type: int8 converted as it is read took 1.8x
            # as long to gather (MobileNetV2's stem) as float32, converted first in one pass.
            x = np.ascontiguousarray(input, self.dtype)
            return _by_rows(conv_blocks, conv_blocks_rescaled, (x, *self.blocks), self.how,
                            self.dtype), False
        n, oc, out_size, wmat, dtype = self.n, self.oc, self.out_size, self.wmat, self.dtype
        result = _Result(self.how)
        if self.skip_padding:
            x = padded(input, dtype, [], self.izp)
            channels = input.shape[-1]
            acc = np.zeros((n, *out_size, oc), dtype)
            with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is the spec's NaN
                for tap, outs, ins in inside_taps(self.sizes, self.pads, self.kernel,
                                                  self.stride, self.dilation, out_size):
                    t = int(np.ravel_multi_index(tap, self.kernel))
                    rows = wmat[t * channels:(t + 1) * channels]
                    acc[(slice(None), *outs)] += x[(slice(None), *ins)] @ rows
            return result.finish(acc), False
        if self.int8 is not None:
            into = result.rescale_target()
            a, final = input.reshape(-1, input.shape[-1]), into.reshape(-1, oc)
            call = self._gemm(a, lambda: int8_gemm_call(a, self.int8[0], final, self.int8[1]))  # type: ignore[index]
            if call is not None:
                call(a, final)
                return result.rescaled(into), False
        if self.pointwise and self.unpadded and self.how.rescale is not None:
            # The integer input is the patches, converted block by block.
            into = result.rescale_target()
            if split_gemm_rescaled(input.reshape(-1, input.shape[-1]), wmat,
                                   into.reshape(-1, oc), self.how.rescale, self.izp):
                return result.rescaled(into), False
        xp = input if self.as_is else padded(input, dtype, self.pads, self.izp)
        if self.pointwise:
            patches, final = xp.reshape(-1, xp.shape[-1]), result.array.reshape(-1, oc)
            finish = self.how.finish
            call = None if finish is None else self._gemm(
                patches, lambda: gemm_call(patches, self.panels, final, finish))
            if call is not None:
                call(patches, final, None if residual is None else residual.reshape(final.shape))
                return result.array, residual is not None
            # Bands of one GEMM each: bias, type and epilogue finish a band while it is in cache.
            row_bytes = n * int(np.prod(out_size[1:])) * oc * 3 * dtype.itemsize
            band_bytes = SHARED_BAND_BYTES if threads.spread() else POINTWISE_BAND_BYTES
            for first, stop in bands(0, out_size[0], row_bytes, band_bytes):
                cols = xp[:, first:stop].reshape(-1, xp.shape[-1])
                acc = _gemm(cols, wmat, result.target(first, stop))
                result.put(first, acc.reshape(n, stop - first, *out_size[1:], oc))
            return result.array, False
        # Bands of output rows: each band's patch matrix is small enough to stay in cache.
        row_bytes = n * int(np.prod(out_size[1:])) * wmat.shape[0] * dtype.itemsize
        for first, stop in bands(0, out_size[0], row_bytes):
            cols = im2col(xp[:, first * self.stride[0]:], self.kernel, self.stride, self.dilation,
                          (stop - first, *out_size[1:]))
            acc = _gemm(cols, wmat, result.target(first, stop))
            result.put(first, acc.reshape(n, stop - first, *out_size[1:], oc))
        return result.array, False

    def _gemm(self, a: np.ndarray, make: Callable[[], kernels.GemmCall | None]
              ) -> kernels.GemmCall | None:
        """The pointwise GEMM for this run's thread count (`gemms`), made by `make` at the
        first run with it; None where it does not apply to `a` (not C-contiguous: a view) or
        does not split."""
        if not a.flags.c_contiguous:
            return None
        key = (threads.spread(), threads.workers())
        if key not in self.gemms:
            self.gemms[key] = make()
        return self.gemms[key]


def _prepared(make: Callable[..., Callable[[np.ndarray], np.ndarray]], *,
              input: TensorType, weight: object, bias: object, input_zp: object,
              weight_zp: object, **attributes: object) -> Callable[..., np.ndarray] | None:
    """A convolution's plan-time form (registry.py, `prepare`), when the weight, bias and zero
    points are constants (else None: run the op as it is): `make(shape, dtype, weight, bias,
    input_zp, weight_zp, pad, stride, dilation, epilogue)` once, at the step's first run, not
    at load, so that the constants stay unread until a run uses them. It takes a `residual`
    too where what `make` makes does (_Conv: an ADD fused after it, patterns.py)."""
    if not all(isinstance(v, np.ndarray) for v in (weight, bias, input_zp, weight_zp)):
        return None
    args = (input.shape, np.dtype(input.dtype), weight, bias, input_zp, weight_zp,
            attributes["pad"], attributes["stride"], attributes["dilation"],
            attributes.get("epilogue"))
    made: list[Callable[[np.ndarray], np.ndarray]] = []

    def run(*, input: np.ndarray, residual: np.ndarray | None = None) -> np.ndarray:
        if not made:  # two threads' first runs may both make one: either serves
            made.append(make(*args))
        return made[0](input) if residual is None else made[0](input, residual)  # type: ignore[call-arg]

    return run


def _gemm(cols: np.ndarray, wmat: np.ndarray, target: np.ndarray | None) -> np.ndarray:
    """cols @ wmat, written into `target` (same size, contiguous) when given."""
    if target is None:
        return gemm(cols, wmat)
    gemm(cols, wmat, target.reshape(cols.shape[0], wmat.shape[1]))
    return target


@fast_op("CONV2D", blas=True)
def conv2d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray, input_zp: np.ndarray,
           weight_zp: np.ndarray, pad: np.ndarray, stride: np.ndarray, dilation: np.ndarray,
           acc_type: int, local_bound: bool = False,
           epilogue: Epilogue | None = None) -> np.ndarray:
    """2-D convolution: input [N,IH,IW,IC], weight [OC,KH,KW,IC], pad [top,bottom,left,right]."""
    return _Conv(input.shape, input.dtype, weight, bias, input_zp, weight_zp, pad, stride,
                 dilation, epilogue)(input)


@fast_op("CONV3D", blas=True)
def conv3d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray, input_zp: np.ndarray,
           weight_zp: np.ndarray, pad: np.ndarray, stride: np.ndarray, dilation: np.ndarray,
           acc_type: int, local_bound: bool = False,
           epilogue: Epilogue | None = None) -> np.ndarray:
    """3-D convolution: input [N,ID,IH,IW,IC], weight [OC,KD,KH,KW,IC], pad [d0,d1,top,...]."""
    return _Conv(input.shape, input.dtype, weight, bias, input_zp, weight_zp, pad, stride,
                 dilation, epilogue)(input)


@conv2d.prepare
@conv3d.prepare
def _conv_prepare(**operands: object) -> Callable[..., np.ndarray] | None:
    return _prepared(_Conv, **operands)  # type: ignore[arg-type]


POINTWISE_BAND_BYTES = 1 << 20
"""Band size of a 1x1 convolution's accumulator and epilogue temporaries."""

DEPTHWISE_BAND_BYTES = 1 << 18
"""Band size of the accumulator of a depthwise convolution, or of a CONV2D by conv_blocks
(_by_rows)."""

SHARED_BAND_BYTES = 1 << 24
"""Band size of a 1x1 or depthwise convolution whose loops run on several threads
(threads.py): each band wakes them twice (the convolution, then its epilogue), so bands are
large, a whole layer of MobileNetV2; int8 ran 1.2x faster than with 1 MB bands."""

SPAN_VALUES = 512
"""About how many values of a row a 3x3 depthwise layer of stride 1 sums in one loop: a run of
outputs' channels (compiled._spans_3x3), its weights tiled as many times once (9 x 512 values:
18 kB in float32 or int32, within L1). Against 256, MobileNetV2 took 0.98x the time in fp32 and
0.96x in int8 (two plans alternating in one process); 56x56x144 alone, hot, 341 -> 278 us."""

_NATIVE = frozenset(map(np.dtype, (np.int8, np.int16, np.float32)))
"""Input types the compiled depthwise loop reads as they are; others become the compute type."""


def _by_rows(rows: Callable[..., None], rescaled: Callable[..., None], window: tuple,
             how: _Finishing, dtype: np.dtype) -> np.ndarray:
    """The result of a compiled loop over output rows, `rows` (compiled.depthwise_rows or
    conv_blocks, `window` its arguments up to `first`), finished as `how` says: bias and
    clamp, or the RESCALE by `rescaled` (its twin), applied by the loop to each output as it
    is made, over every row at once; else the sums (of `dtype`) in bands, each then put."""
    result = _Result(how)
    if how.finish is not None:
        bias, low, high, nan_to_low = how.finish
        rows(*window, 0, result.array, True, bias, F32.type(low), F32.type(high), nan_to_low)
        return result.array
    if how.rescale is not None:
        into = result.rescale_target()
        rescaled(*window, into, *how.rescale)
        return result.rescaled(into)
    unused = (np.empty(0, dtype), dtype.type(0), dtype.type(0), False)
    n, rows_out, *rest = how.shape
    row_bytes = n * int(np.prod(rest)) * dtype.itemsize
    band_bytes = SHARED_BAND_BYTES if threads.spread() else DEPTHWISE_BAND_BYTES
    for start, end in bands(0, rows_out, row_bytes, band_bytes):
        acc = result.target(start, end)
        if acc is None:
            acc = np.empty((n, end - start, *rest), dtype)
        rows(*window, start, acc, False, *unused)
        result.put(start, acc)
    return result.array


def _depthwise_taps(w: np.ndarray) -> np.ndarray:
    return w.reshape(-1, w.shape[2] * w.shape[3])


class _Depthwise:
    """DEPTHWISE_CONV2D on inputs of one shape and type, worked out when made as _Conv is.
    Input [N,IH,IW,C], weight [KH,KW,C,M], output [N,OH,OW,C*M]."""

    def __init__(self, shape: tuple[int, ...], in_dtype: np.dtype, weight: np.ndarray,
                 bias: np.ndarray, input_zp: np.ndarray, weight_zp: np.ndarray, pad: np.ndarray,
                 stride: np.ndarray, dilation: np.ndarray, epilogue: Epilogue | None):
        izp, wzp = scalar(input_zp), scalar(weight_zp)
        kh, kw, channels, self.mult = weight.shape
        pads, stride, dilation, self.out_size = _geometry(shape[1:3], (kh, kw), pad, stride,
                                                          dilation)
        self.dtype = dtype = _compute_dtype(weight, wzp, in_dtype, izp, _depthwise_taps)
        self.n, self.channels = shape[0], channels * self.mult
        self.how = _Finishing((self.n, *self.out_size, self.channels), dtype, bias,
                              _out_dtype(in_dtype), epilogue)
        if self.how.rescale is not None and _sum_bound(weight, wzp, in_dtype, izp,
                                                       _depthwise_taps) < 2**31:
            # The loop's sums go straight to RESCALE: int32 holds them exactly, and the loop
            # reads int8 without converting it to float, then rescales without converting back.
            self.dtype = dtype = I32
        # Read-only and on a cache line, as _matrix makes it, tiled or not (numba compiles a
        # loop once for each of read-only and writable, and a second copy of the depthwise
        # loops took 6-13 s more).
        w = _matrix(weight, wzp, dtype, _depthwise_taps).reshape(kh, kw, channels * self.mult)
        if (kh, kw, stride[1], dilation[1]) == (3, 3, 1, 1):  # compiled._spans_3x3's runs
            w = memory.aligned(np.tile(w, (1, 1, max(1, SPAN_VALUES // w.shape[2]))),
                               readonly=True)
        self.window = (dtype.type(izp), w, pads[0][0], pads[1][0], *stride, *dilation)
        self.native = np.dtype(in_dtype) in _NATIVE

    def __call__(self, input: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(input) if self.native else input.astype(self.dtype)
        if self.mult > 1:  # output channel c * M + m reads input channel c
            x = np.repeat(x, self.mult, axis=-1)
        return _by_rows(depthwise_rows, depthwise_rows_rescaled, (x, *self.window), self.how,
                        self.dtype)


@fast_op("DEPTHWISE_CONV2D")
def depthwise_conv2d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                     input_zp: np.ndarray, weight_zp: np.ndarray, pad: np.ndarray,
                     stride: np.ndarray, dilation: np.ndarray, acc_type: int,
                     local_bound: bool = False, epilogue: Epilogue | None = None) -> np.ndarray:
    """Depthwise convolution: input [N,IH,IW,C], weight [KH,KW,C,M], output [N,OH,OW,C*M]."""
    return _Depthwise(input.shape, input.dtype, weight, bias, input_zp, weight_zp, pad, stride,
                      dilation, epilogue)(input)


@depthwise_conv2d.prepare
def _depthwise_prepare(**operands: object) -> Callable[..., np.ndarray] | None:
    return _prepared(_Depthwise, **operands)  # type: ignore[arg-type]


DEPTHWISE_GEMM_BAND_BYTES = 1 << 20
"""The most bytes of a depthwise result a band of compiled.depthwise_gemm_rows makes before
multiplying it; a band is at most a thread's share of the rows. On two cores every layer of
MobileNetV2 then runs as one band a thread (but for EXPANSION_BAND_BYTES): against bands of
64 kB (two to four rows), fewer BLAS calls, each packing the whole weight, made fp32
MobileNetV2 3-4% faster again."""

EXPANSION_BAND_BYTES = 512 << 10
"""The most bytes of the expansion a band of an expanded depthwise + 1x1 step makes (the rows
its depthwise rows read, halo included), so that the band is still in L2 when the depthwise
layer reads it. On Zen 4 (1 MB of L2 a core), two threads, each step run after 32 MB of other
data: MobileNetV2's 112 x 112 x 16 -> 96 stride-2 step took 0.75-0.79x the time in bands of 5
depthwise rows (11 expansion rows, 473 kB) against one band a thread (57 rows, 2.4 MB; hot,
0.90x), its 56 x 56 x 24 -> 144 steps 0.84-0.90x; the smaller maps' bands already fit. The
whole model took 0.93-0.955x the time on two threads and 0.955x on one, in one process,
alternating. fp32 only: int8 MobileNetV2, whose expansion takes a quarter of the bytes, took
1.01-1.02x the time in such bands."""


def _band_rows(middle: tuple[int, ...], itemsize: int, window: tuple, widened: int | None) -> int:
    """The most depthwise rows a band of a depthwise + 1x1 step makes: those of
    DEPTHWISE_GEMM_BAND_BYTES of its depthwise result (`middle`, of `itemsize`-byte values),
    and with an expansion of `widened` bytes a row, those reading EXPANSION_BAND_BYTES of it
    (its _Depthwise `window`: b rows read b * stride + _reach's overlap rows of it)."""
    rows = max(1, DEPTHWISE_GEMM_BAND_BYTES // (middle[2] * middle[3] * itemsize))
    if widened is None:
        return rows
    overlap = _reach(0, window)[1]
    return min(rows, max(1, (EXPANSION_BAND_BYTES // widened - overlap) // window[4]))


Bounds = tuple[float, float, bool]
"""A CLAMP after a float convolution, as its result's finish takes it: (low, high,
nan_to_low); no CLAMP is (-inf, inf, False)."""


class _Blocks:
    """What DepthwiseConv and DepthwiseConvInt8 share: their call, one compiled loop
    (`loops`: without an expansion, with one) of x, `before`, the residual y, `between`, the
    result, then the band's rows, how the columns split (`_groups`, fp32 only) and, with an
    expansion, whether the bands make it (_halo).
    Which loop (threaded or serial) and its band are worked out once per thread count
    (threads.mode): a run's Python between its loops costs microseconds a call."""

    loops: tuple[compiled._RowLoop, compiled._RowLoop]
    shape: tuple[int, ...]
    dtype: np.dtype
    no_residual: np.ndarray
    expand: object
    before: tuple
    between: tuple
    band_rows: int
    reach: tuple[int, int]
    _ways: dict[tuple[bool, int], tuple[Callable[..., None], tuple]]

    def __call__(self, input: np.ndarray, residual: np.ndarray | None = None) -> np.ndarray:  # noqa: A002
        out = np.empty(self.shape, self.dtype)
        y = self.no_residual if residual is None else np.ascontiguousarray(residual, self.dtype)
        loop, last = self._ways.get(mode := threads.mode()) or self._way(mode)
        loop(np.ascontiguousarray(input), *self.before, y, *self.between, out, *last)
        return out

    def _way(self, mode: tuple[bool, int]) -> tuple[Callable[..., None], tuple]:
        spread, workers = mode
        rows = self.shape[1]
        groups = self._groups(workers if spread else 1)
        share = -(-rows // (workers // groups if spread else 1))  # a thread's rows
        bands = -(-share // self.band_rows)  # of at most band_rows each, even
        band = -(-share // bands)
        loop = self.loops[self.expand is not None]
        last = (band, *self._split(groups))
        if self.expand is not None:
            last = (*last, groups == 1 and _halo(rows, band, *self.reach))
        way = (loop.threaded if spread else loop.serial), last
        self._ways[mode] = way
        return way

    def _groups(self, workers: int) -> int:
        """Into how many groups of output columns the loop splits the result for `workers`
        threads (1: it splits rows only)."""
        return 1

    def _split(self, groups: int) -> tuple[int, ...]:
        """The loop's arguments after the band that say how it splits the columns."""
        return ()


class DepthwiseConv(_Blocks):
    """DEPTHWISE_CONV2D (multiplier 1), its bias and `first` CLAMP, then a 1x1 CONV2D of
    stride 1 without padding, its bias and `then` CLAMP, + a residual where given: fp32, one
    image, as one compiled call (compiled.depthwise_gemm_rows), each band of depthwise rows
    multiplied while in cache. With `expand` (a 1x1 CONV2D as the second, and its CLAMP), the
    depthwise layer's input is that convolution of the input (compiled.expanded_gemm_rows,
    _halo). The weights are worked out as the ops' own forms do (_Depthwise, _Conv); made at
    a step's first run; `shape` is the input's."""

    loops = (depthwise_gemm_rows, expanded_gemm_rows)
    dtype, no_residual, between = F32, np.empty((0, 0, 0, 0), F32), ()

    def __init__(self, shape: tuple[int, ...], depthwise: dict[str, np.ndarray], first: Bounds,
                 conv: dict[str, np.ndarray], then: Bounds,
                 expand: tuple[dict[str, np.ndarray], Bounds] | None = None):
        self.expand, self._ways = None, {}
        if expand is not None:
            widen = _Conv(shape, F32, epilogue=None, **expand[0])
            self.expand = (widen.panels, (widen.how.finish[0], *expand[1]))  # type: ignore[index]
            shape = (*shape[:-1], widen.oc)
        window = _Depthwise(shape, F32, epilogue=None, **depthwise)
        middle = (shape[0], *window.out_size, window.channels)
        product = _Conv(middle, F32, epilogue=None, **conv)
        self.window, self.matrix = window.window, product.panels
        self.first = (window.how.finish[0], *first)  # type: ignore[index]
        self.then = (product.how.finish[0], *then)  # type: ignore[index]
        self.shape = (shape[0], *window.out_size, product.oc)
        self.band_rows = _band_rows(middle, 4, self.window,
                                    None if expand is None else shape[2] * shape[3] * 4)
        self.reach = _reach(shape[1], self.window)
        self.before = (*(self.expand or ()), *self.window, self.first, self.matrix, self.then)

    def _groups(self, workers: int) -> int:
        """Every thread a group of the output columns where the result has so few pixels
        (COLUMN_GROUP_PIXELS) that bands of rows would share it out unevenly (a 7 x 7 map's
        rows over two threads: 4 and 3), and the weights are panels (each thread then reads
        its panels alone, whole rows of the input); else one group."""
        pixels = self.shape[1] * self.shape[2]
        return workers if self.matrix.ndim == 3 and pixels <= COLUMN_GROUP_PIXELS else 1

    def _split(self, groups: int) -> tuple[int, ...]:
        return (groups,)


COLUMN_GROUP_PIXELS = 64
"""The most pixels of a depthwise + 1x1 step's result for which DepthwiseConv splits its
columns over the threads rather than its rows."""


HALO_SHARE = 8
"""A depthwise + 1x1 step with an expansion before it makes the expansion in bands
(compiled.expanded_gemm_rows's halo) where the rows two bands beside each other both make are
at most 1/HALO_SHARE of the expansion's rows; else whole, first."""


def _reach(height: int, window: tuple) -> tuple[int, int]:
    """A depthwise layer's input rows (`height` of them) and how many of them two bands of its
    output rows beside each other both read (_halo), from its form's window (_Depthwise)."""
    w, stride_y, dilation_y = window[1], window[4], window[6]
    return height, (w.shape[0] - 1) * dilation_y + 1 - stride_y


def _halo(rows: int, band: int, height: int, overlap: int) -> bool:
    """Whether the bands of `band` rows of a result of `rows` make their expansion themselves
    (HALO_SHARE), the depthwise layer's input of `height` rows, `overlap` of them read by two
    bands at each edge between bands."""
    return (-(-rows // band) - 1) * max(0, overlap) * HALO_SHARE <= height


class DepthwiseConvInt8(_Blocks):
    """DepthwiseConv for int8: DEPTHWISE_CONV2D (multiplier 1) and its RESCALE to int8
    (`first`: the RESCALE's accumulator form, rescale.py), then a 1x1 CONV2D of stride 1
    without padding whose products the int8 tiles make, and its RESCALE to int8 (`then`), + a
    residual where given, added as a quantized residual ADD (`added`: its RESCALEs of the
    residual, first and then, of the projection and of the sum, as compiled.residual_rows
    takes them, one entry per channel), as one compiled call
    (compiled.depthwise_gemm_rows_packed), bit-exact.
    With `expand` (a 1x1 CONV2D as the second, and its RESCALE's form), the depthwise layer's
    input is that convolution of the input (compiled.expanded_gemm_rows_packed, _halo)."""

    loops = (depthwise_gemm_rows_packed, expanded_gemm_rows_packed)
    dtype, no_residual = I8, np.empty((0, 0, 0, 0), I8)

    def __init__(self, shape: tuple[int, ...], depthwise: dict[str, np.ndarray], first: object,
                 conv: dict[str, np.ndarray], then: object,
                 added: tuple[Rescale, Rescale, Rescale, Rescale] | None = None,
                 expand: tuple[dict[str, np.ndarray], object] | None = None):
        self.expand, self._ways = None, {}
        if expand is not None:
            widen = _Conv(shape, I8, epilogue=_Rescaled(expand[1]), **expand[0])
            if widen.int8 is None or widen.int8[0].dtype != compiled.PACKED:
                raise TosaError("expansion + depthwise + 1x1 int8 step: its expansion's form "
                                "does not take these operands")
            self.expand, shape = widen.int8, (*shape[:-1], widen.oc)
        window = _Depthwise(shape, I8, epilogue=_Rescaled(first), **depthwise)
        middle = (shape[0], *window.out_size, window.channels)
        product = _Conv(middle, I8, epilogue=_Rescaled(then), **conv)
        if window.dtype != I32 or product.int8 is None or product.int8[0].dtype != compiled.PACKED:
            raise TosaError("depthwise + 1x1 int8 step: its forms do not take these operands")
        self.window, (self.packed, self.then) = window.window, product.int8
        self.first = window.how.rescale
        self.shape = (shape[0], *window.out_size, product.oc)
        self.band_rows = _band_rows(middle, 1, self.window, None)  # EXPANSION_BAND_BYTES: fp32 only
        self.added = added or _NOT_ADDED
        self.reach = _reach(shape[1], self.window)
        self.before = (*(self.expand or ()), *self.window, self.first, self.packed, self.then)
        self.between = self.added


_NOT_ADDED = (NO_RESCALE,) * 4
"""DepthwiseConvInt8's `added` without a residual: Rescales of its types, never read."""


class _Rescaled:
    """The epilogue of one RESCALE to int8 fused after an integer convolution (its
    accumulator `form`), as DepthwiseConvInt8 gives it to _Depthwise and _Conv: they take its
    kernels.Rescale for their compiled loops."""

    bounds = None

    def __init__(self, form: object):
        self.form, self.dtype, self.first_dtype = form, I8, I8

    def rescale(self, bias: np.ndarray, result_dtype: np.dtype, channels: int) -> Rescale | None:
        return self.form.rescale(bias, result_dtype, channels)  # type: ignore[attr-defined]


def fusable(input: TensorType, depthwise: dict[str, np.ndarray],
            conv: dict[str, np.ndarray]) -> bool:
    """Whether DepthwiseConv (fp32) or DepthwiseConvInt8 (int8) takes a DEPTHWISE_CONV2D of
    `input` and the CONV2D after it, by their known operands: one image, a depthwise weight of
    multiplier 1, a 1x1 weight of stride 1 without padding or weight zero point, both of the
    input's type. fp32: no zero points at all. int8: sums that int32 holds, the 1x1 input
    channels in fours, on a CPU with the int8 tiles (compiled.INT8_TILES; kernels.int8_gemm)."""
    dtype, weight = np.dtype(input.dtype), depthwise["weight"]
    if not (input.shape[0] == 1 and weight.dtype == dtype and weight.ndim == 4
            and weight.shape[3] == 1 and _pointwise(conv, dtype)):
        return False
    if dtype == F32:
        return not (np.any(depthwise["input_zp"]) or np.any(depthwise["weight_zp"]))
    kh, kw = weight.shape[:2]
    return kh * kw * 255 * 255 < 1 << 31


def expandable(input: TensorType, conv: dict[str, np.ndarray]) -> bool:
    """Whether DepthwiseConv (fp32) or DepthwiseConvInt8 (int8) takes a CONV2D of `input` as
    its `expand`, by its known operands: one image, and _pointwise's 1x1 weight."""
    return input.shape[0] == 1 and _pointwise(conv, np.dtype(input.dtype))


def _pointwise(conv: dict[str, np.ndarray], dtype: np.dtype) -> bool:
    """Whether the depthwise + 1x1 steps take a CONV2D of these known operands as their
    expansion or projection: a 1x1 weight of `dtype`, of stride 1, without padding or weight
    zero point; fp32 without input zero point; int8 with its products the int8 tiles'
    (compiled.INT8_TILES; kernels.int8_gemm): its input channels in fours, its sums held by
    int32."""
    weight = conv["weight"]
    if not (weight.dtype == dtype and weight.ndim == 4 and weight.shape[1:3] == (1, 1)
            and not np.any(conv["pad"]) and all(int(v) == 1 for v in conv["stride"])
            and not np.any(conv["weight_zp"])):
        return False
    if dtype == F32:
        return not np.any(conv["input_zp"])
    channels = weight.shape[3]
    return (dtype == I8 and compiled.INT8_TILES is not None and channels % 4 == 0
            and channels * 255 * 128 < 1 << 31)


def _transpose_matrix(w: np.ndarray) -> np.ndarray:
    return w.transpose(3, 1, 2, 0).reshape(w.shape[3], -1)


@fast_op("TRANSPOSE_CONV2D", blas=True)
def transpose_conv2d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                     input_zp: np.ndarray, weight_zp: np.ndarray, out_pad: np.ndarray,
                     stride: np.ndarray, acc_type: int, local_bound: bool = False) -> np.ndarray:
    """Transposed convolution: input [N,IH,IW,IC], weight [OC,KH,KW,IC], out_pad may crop."""
    izp, wzp = scalar(input_zp), scalar(weight_zp)
    n, ih, iw, ic = input.shape
    oc, kh, kw, _ = weight.shape
    sy, sx = (int(s) for s in stride)
    top, bottom, left, right = (int(p) for p in out_pad)
    dtype = _compute_dtype(weight, wzp, input.dtype, izp, _conv_matrix)
    wmat = _matrix(weight, wzp, dtype, _transpose_matrix)
    xp = padded(input, dtype, [], izp)
    # Every input pixel times every tap, then each tap scattered to its strided output grid.
    taps_out = (xp.reshape(-1, ic) @ wmat).reshape(n, ih, iw, kh, kw, oc)
    full = np.zeros((n, (ih - 1) * sy + kh, (iw - 1) * sx + kw, oc), dtype)
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky:ky + (ih - 1) * sy + 1:sy, kx:kx + (iw - 1) * sx + 1:sx] += \
                taps_out[:, :, :, ky, kx]
    oh = (ih - 1) * sy + top + bottom + kh
    ow = (iw - 1) * sx + left + right + kw
    acc = np.zeros((n, oh, ow, oc), dtype)
    # Output row oy holds full row oy - top (a negative out_pad crops the full result).
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(oh, top + full.shape[1]), min(ow, left + full.shape[2])
    if y1 > y0 and x1 > x0:
        acc[:, y0:y1, x0:x1] = full[:, y0 - top:y1 - top, x0 - left:x1 - left]
    return _finish(acc, bias, _out_dtype(input.dtype))
