"""TOSA type conversion operators (specification chapter "Type Conversion"): CAST, RESCALE."""

from __future__ import annotations

import numpy as np

from ._common import (
    BF16,
    BOOL,
    FLOATS,
    FP8,
    FP16,
    FP32,
    I8,
    I16,
    I32,
    I48,
    INTS,
    dtype_name,
    int_max,
    int_min,
)
from .checking import (
    const_array,
    expect_bool_attr,
    expect_dtype,
    expect_int_attr,
    expect_result_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
)
from .compiled import rescale_common_rows, rescale_rows
from .kernels import I64, Rescale, per_channel, prepared
from .registry import tosa_op

SINGLE_ROUND = 1
INEXACT_ROUND = 2
DOUBLE_ROUND = 3

_CASTS: dict[np.dtype, tuple[np.dtype, ...]] = {
    BOOL: INTS,
    I8: (BOOL, I16, I32, *FLOATS),
    I16: (BOOL, I8, I32, *FLOATS),
    I32: (BOOL, I8, I16, *FLOATS),
    FP16: (*INTS, FP32, *FP8),
    BF16: (*INTS, FP32, *FP8),
    FP32: (*INTS, FP16, BF16, *FP8),
    **{fp8: (FP16, BF16, FP32) for fp8 in FP8},
}


@tosa_op("CAST", bandwise=True)
def cast(*, input: np.ndarray, result_dtype: np.dtype) -> np.ndarray:  # noqa: A002
    """CAST's operands do not determine its result type, so besides `input` (the grammar's only
    operand) it takes `result_dtype`, the element type of the declared result."""
    out = np.dtype(result_dtype)
    src = input.dtype
    if src == BOOL or src in INTS and out in INTS:
        return input.astype(out)  # integer narrowing truncates, widening sign-extends
    if out == BOOL:
        return np.asarray(input != 0)
    if out in INTS:
        wide = input.astype(np.float64)  # holds every int32 exactly, so clipping is exact
        # NaN becomes 0 for i8/i16 and INT32_MIN for i32, as tosa_reference_model gives
        np.copyto(wide, 0.0 if out != I32 else float(int_min(I32)), where=np.isnan(wide))
        np.rint(wide, out=wide)
        np.clip(wide, int_min(out), int_max(out), out=wide)
        return wide.astype(out)
    return input.astype(np.float32).astype(out)


@cast.check
def _cast_check(result, *, input, result_dtype=None):  # noqa: A002
    op = "CAST"
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, tuple(_CASTS))
    expect_dtype(op, "result", res, _CASTS[np.dtype(t.dtype)])
    expect_result_dtype(op, result_dtype, res)
    expect_shape(op, "result", res, t.shape)


def _zero_point(value: np.ndarray, dtype: np.dtype, unsigned: bool) -> int:
    zp = int(np.asarray(value).reshape(-1)[0])
    return zp & ((1 << (8 * dtype.itemsize)) - 1) if unsigned else zp


@tosa_op("RESCALE", bandwise=True)
def rescale(
    *,
    scale32: bool,
    rounding_mode: int,
    per_channel: bool,
    input_unsigned: bool,
    output_unsigned: bool,
    input: np.ndarray,  # noqa: A002
    multiplier: np.ndarray,
    shift: np.ndarray,
    input_zp: np.ndarray,
    output_zp: np.ndarray,
) -> np.ndarray:
    """Per channel c: apply_scale(input - input_zp, multiplier[c], shift[c]) + output_zp,
    saturated to the result type; one compiled pass in int64 (compiled.rescale_rows, or its
    common case rescale_common_rows).
    apply_scale_32 and apply_scale_16 are the same arithmetic: scale32 sets only the
    multiplier's width and whether DOUBLE_ROUND is allowed, both checked at plan time. Results
    outside int32 break a REQUIRE of the specification (unpredictable); they saturate here."""
    in_dtype = input.dtype
    izp = _zero_point(input_zp, in_dtype, input_unsigned)
    scaling = _rescaling(multiplier, shift, per_channel, rounding_mode == DOUBLE_ROUND,
                         np.asarray(output_zp), output_unsigned)
    if input_unsigned:
        input = input.view(np.dtype(f"u{in_dtype.itemsize}"))  # noqa: A001
    return scaling.apply(input, -izp, 0)


def _rescaling(multiplier: np.ndarray, shift: np.ndarray, per_channel: bool, double_round: bool,
               output_zp: np.ndarray, output_unsigned: bool) -> _Rescaling:
    """The prepared factors, made once per constant multiplier and shift."""
    key = ("rescale", np.asarray(shift).tobytes(), per_channel, double_round, output_zp.dtype,
           _zero_point(output_zp, output_zp.dtype, output_unsigned), output_unsigned)
    return prepared(multiplier, key, lambda: _Rescaling(multiplier, shift, per_channel,
                                                        double_round, output_zp, output_unsigned))


class _Rescaling:
    """RESCALE's factors as int64 vectors of one entry per channel (one for all when not
    per_channel), its output zero point and saturation bounds."""

    def __init__(self, multiplier: np.ndarray, shift: np.ndarray, per_channel: bool,
                 double_round: bool, output_zp: np.ndarray, output_unsigned: bool):
        count = None if per_channel else 1
        self.multiplier = np.asarray(multiplier, dtype=np.int64).reshape(-1)[:count]
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
        """The multiplier and shift as int64 vectors of `channels` entries (made once)."""
        factors = self._factors.get(channels)
        if factors is None:
            factors = self._factors[channels] = (per_channel(self.multiplier, channels, I64),
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
        if self.double_round or wrap_bits not in (0, 32):
            rescale_rows(rows, offset, wrap_bits, *factors, self.double_round, self.output_zp,
                         self.low, self.high, out.reshape(rows.shape))
        else:
            loop = rescale_common_rows if shared else rescale_common_rows.serial
            loop(rows, offset, wrap_bits == 32, *factors, self.output_zp, self.low, self.high,
                 out.reshape(rows.shape))
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
        for the compiled loops to apply (prepared once for a constant bias); None for double
        rounding or an int48 result."""
        scaling = self.scaling
        if scaling.double_round or result_dtype != I32:
            return None
        return prepared(bias, ("rescale", scaling, channels), lambda: (
            per_channel(bias, channels, I64), *scaling.factors(channels), scaling.output_zp,
            scaling.low, scaling.high))


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


@rescale.check
def _rescale_check(
    result,
    *,
    scale32,
    rounding_mode,
    per_channel,
    input_unsigned,
    output_unsigned,
    input,
    multiplier,
    shift,
    input_zp,
    output_zp,
):  # noqa: A002
    op = "RESCALE"
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, (I8, I16, I32, I48))
    expect_dtype(op, "result", res, (I8, I16, I32))
    expect_shape(op, "result", res, t.shape)
    scale32 = expect_bool_attr(op, "scale32", scale32)
    per_channel = expect_bool_attr(op, "per_channel", per_channel)
    in_u = expect_bool_attr(op, "input_unsigned", input_unsigned)
    out_u = expect_bool_attr(op, "output_unsigned", output_unsigned)
    mode = expect_int_attr(op, "rounding_mode", rounding_mode)
    if mode not in (SINGLE_ROUND, INEXACT_ROUND, DOUBLE_ROUND):
        raise fail(op, f"rounding_mode must be 1, 2 or 3, got {mode}")
    if mode == DOUBLE_ROUND and not scale32:
        raise fail(op, "rounding_mode DOUBLE_ROUND needs scale32")
    if scale32 and t.dtype == I48:
        raise fail(op, "scale32 must be false for an i48 input")
    if in_u and out_u:
        raise fail(op, "input_unsigned and output_unsigned cannot both be true")
    if in_u and t.dtype not in (I8, I16):
        raise fail(op, f"input_unsigned needs an i8 or i16 input, got {dtype_name(t.dtype)}")
    if out_u and res.dtype not in (I8, I16):
        raise fail(op, f"output_unsigned needs an i8 or i16 result, got {dtype_name(res.dtype)}")
    if in_u and res.dtype == I32:
        raise fail(op, "input_unsigned needs an i8 or i16 result, got i32")
    if out_u and t.dtype in (I32, I48):
        raise fail(op, f"output_unsigned needs an i8 or i16 input, got {dtype_name(t.dtype)}")
    if per_channel and t.rank < 1:
        raise fail(op, "per_channel needs an input of rank 1 or more")
    channels = t.shape[-1] if per_channel else 1
    const_array(op, "multiplier", multiplier, I32 if scale32 else I16, channels)
    shifts = const_array(op, "shift", shift, I8, channels)
    if shifts is not None and ((shifts < 2) | (shifts > 62)).any():
        raise fail(op, f"shift values must lie in [2, 62], got {shifts.tolist()}")
    for name, zp, dtype, unsigned in (
        ("input_zp", input_zp, t.dtype, in_u),
        ("output_zp", output_zp, res.dtype, out_u),
    ):
        values = const_array(op, name, zp, dtype, 1)
        if values is None or values[0] == 0 or dtype == I8:
            continue
        if not (dtype == I16 and unsigned and _zero_point(values, dtype, True) == 32768):
            raise fail(
                op,
                f"{name} must be 0 for {dtype_name(dtype)}"
                f"{' (or 32768 when unsigned)' if dtype == I16 else ''}, got {values[0]}",
            )
