"""The fast executor's type conversions: RESCALE in compiled loops (compiled.rescale_rows, or
its common case rescale_common_rows) and fused after a convolution straight from its
accumulator; CAST and RESCALE band-wise (registry.py)."""

from __future__ import annotations

import numpy as np

from ..tosa._common import I32, I48, I64, int_max, int_min
from ..tosa.type_conversion import DOUBLE_ROUND, _zero_point
from .compiled import rescale_common_rows, rescale_rows
from .kernels import Rescale, per_channel, prepared
from .registry import declare, fast_op

declare("CAST", bandwise=True)


@fast_op("RESCALE", bandwise=True)
def rescale(
    *,
    scale32: bool,
    rounding_mode: int,
    per_channel: bool,
    input_unsigned: bool,
    output_unsigned: bool,
    input: np.ndarray,
    multiplier: np.ndarray,
    shift: np.ndarray,
    input_zp: np.ndarray,
    output_zp: np.ndarray,
) -> np.ndarray:
    """RESCALE as pyvgf/tosa/type_conversion.py computes it, in one compiled pass in int64."""
    in_dtype = input.dtype
    izp = _zero_point(input_zp, in_dtype, input_unsigned)
    scaling = _rescaling(multiplier, shift, per_channel, rounding_mode == DOUBLE_ROUND,
                         np.asarray(output_zp), output_unsigned)
    if input_unsigned:
        input = input.view(np.dtype(f"u{in_dtype.itemsize}"))
    return scaling.apply(input, -izp, 0)


def _rescaling(multiplier: np.ndarray, shift: np.ndarray, per_channel: bool, double_round: bool,
               output_zp: np.ndarray, output_unsigned: bool) -> _Rescaling:
    """The prepared factors, made once per constant multiplier and shift."""
    key = ("rescale", np.asarray(shift).tobytes(), per_channel, double_round, output_zp.dtype,
           _zero_point(output_zp, output_zp.dtype, output_unsigned), output_unsigned)
    return prepared(multiplier, key, lambda: _Rescaling(multiplier, shift, per_channel,
                                                        double_round, output_zp, output_unsigned))


class _Rescaling:
    """RESCALE's factors as vectors of one entry per channel (one for all when not
    per_channel), its output zero point and saturation bounds.

    The multiplier is int32 (the RESCALE check holds it to int32 or int16): the loops' int64
    products are then of a 32-bit factor, which AVX-512 makes one instruction for each 8
    lanes (vpmuldq) where a 64-bit one takes three; MobileNetV2 int8's rescales ran 1.2x as
    fast. The shift is int64."""

    def __init__(self, multiplier: np.ndarray, shift: np.ndarray, per_channel: bool,
                 double_round: bool, output_zp: np.ndarray, output_unsigned: bool):
        count = None if per_channel else 1
        self.multiplier = np.asarray(multiplier).astype(I32).reshape(-1)[:count]
        self.shift = np.asarray(shift, dtype=np.int64).reshape(-1)[:count]
        self.double_round = double_round
        self.out_dtype = output_zp.dtype
        self.output_zp = _zero_point(output_zp, self.out_dtype, output_unsigned)
        if output_unsigned:
            self.low, self.high = 0, (1 << (8 * self.out_dtype.itemsize)) - 1
        else:
            self.low, self.high = int_min(self.out_dtype), int_max(self.out_dtype)
        self._factors: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def factors(self, channels: int) -> tuple[np.ndarray, np.ndarray]:
        """The multiplier and shift as vectors of `channels` entries (made once)."""
        factors = self._factors.get(channels)
        if factors is None:
            factors = self._factors[channels] = (per_channel(self.multiplier, channels, I32),
                                                 per_channel(self.shift, channels, I64))
        return factors

    def apply(self, x: np.ndarray, add: int | np.ndarray, wrap_bits: int,
              shared: bool = False) -> np.ndarray:
        """The rescaled x + add (an integer, or a vector of one per channel), x + add first
        wrapped to `wrap_bits` bits unless 0; the common case's rows over numba's threads when
        `shared` (threads.py)."""
        channels = x.shape[-1] if x.ndim else 1
        rows = x.reshape(-1, channels)
        out = np.empty(x.shape, self.out_dtype)
        factors = self.factors(channels)
        if isinstance(add, np.ndarray):
            offset = per_channel(add, channels, I64)
        else:
            offset = np.full(channels, add, I64)
        if wrap_bits not in (0, 32):
            rescale_rows(rows, offset, wrap_bits, *factors, self.double_round, self.output_zp,
                         self.low, self.high, out.reshape(rows.shape))
        else:
            loop = rescale_common_rows if shared else rescale_common_rows.serial
            loop(rows, offset, wrap_bits == 32, *factors, self.output_zp, self.low, self.high,
                 self.double_round, out.reshape(rows.shape))
        return out


class _FromAccumulator:
    """RESCALE of an integer convolution's result acc + bias, straight from its accumulator
    (float or int64, holding exact integers) and bias: the sum wraps as the convolution's
    int32 (or int48) result would, without that tensor being made. The RESCALE check holds
    input_zp at 0 for those types."""

    def __init__(self, scaling: _Rescaling):
        self.scaling = scaling

    def __call__(self, acc: np.ndarray, bias: np.ndarray, result_dtype: np.dtype) -> np.ndarray:
        return self.scaling.apply(acc, bias, 48 if result_dtype == I48 else 32, shared=True)

    def rescale(self, bias: np.ndarray, result_dtype: np.dtype, channels: int) -> Rescale | None:
        """This RESCALE of acc + bias as kernels.Rescale for a result of `channels` columns,
        for the compiled loops to apply (prepared once for a constant bias); None for an int48
        result."""
        scaling = self.scaling
        if result_dtype != I32:
            return None
        return prepared(bias, ("rescale", scaling, channels), lambda: (
            per_channel(bias, channels, I64), *scaling.factors(channels), scaling.output_zp,
            scaling.low, scaling.high, scaling.double_round))


@rescale.from_accumulator
def _rescale_accumulated(
    *,
    scale32: bool,
    rounding_mode: int,
    per_channel: bool,
    input_unsigned: bool,
    output_unsigned: bool,
    multiplier: np.ndarray,
    shift: np.ndarray,
    input_zp: np.ndarray,
    output_zp: np.ndarray,
) -> _FromAccumulator:
    """RESCALE fused after an integer convolution, prepared at plan time."""
    return _FromAccumulator(_rescaling(multiplier, shift, per_channel,
                                       rounding_mode == DOUBLE_ROUND, np.asarray(output_zp),
                                       output_unsigned))


