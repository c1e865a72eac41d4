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
    apply_scale_16,
    apply_scale_32,
    dtype_name,
    int_max,
    int_min,
    wrap,
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
from .kernels import prepared
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
    in_dtype = input.dtype
    out_dtype = np.asarray(output_zp).dtype
    if scale32 and rounding_mode != DOUBLE_ROUND and not input_unsigned and not output_unsigned:
        izp, ozp = _zero_point(input_zp, in_dtype, False), _zero_point(output_zp, out_dtype, False)
        return _scale32(multiplier, shift, per_channel, izp, ozp).apply(input, out_dtype)
    value = input.astype(np.int64)
    if input_unsigned:
        value &= (1 << (8 * in_dtype.itemsize)) - 1
    value -= _zero_point(input_zp, in_dtype, input_unsigned)
    mult = np.asarray(multiplier, dtype=np.int64).reshape(-1)
    shifts = np.asarray(shift, dtype=np.int64).reshape(-1)
    if not per_channel:
        mult, shifts = mult[:1], shifts[:1]
    if scale32:
        scaled = apply_scale_32(value, mult, shifts, rounding_mode == DOUBLE_ROUND)
    else:
        scaled = apply_scale_16(value, mult, shifts)
    # Results outside int32 break a REQUIRE of the spec (unpredictable); they saturate here.
    scaled += _zero_point(output_zp, out_dtype, output_unsigned)
    if output_unsigned:
        np.clip(scaled, 0, (1 << (8 * out_dtype.itemsize)) - 1, out=scaled)
        return wrap(scaled, out_dtype)
    np.clip(scaled, int_min(out_dtype), int_max(out_dtype), out=scaled)
    return scaled.astype(out_dtype)


def _scale32(multiplier: np.ndarray, shift: np.ndarray, per_channel: bool, izp: int,
             ozp: int) -> _Scale32:
    """The prepared common case, made once per constant multiplier and shift."""
    return prepared(multiplier, ("rescale32", per_channel, np.asarray(shift).tobytes(), izp, ozp),
                    lambda: _Scale32(multiplier, shift, per_channel, izp, ozp))


class _Scale32:
    """RESCALE's common case (scale32, single rounding, signed), prepared once per multiplier
    and shift, with the general path's arithmetic: for v = input and per-channel m, s,

        (((v - izp) * m + 2**(s-1)) >> s) + ozp  ==  floor((v * m + k) / 2**s),
        k = 2**(s-1) - izp * m + ozp * 2**s

    (an arithmetic shift is a floor division, so whole multiples of 2**s pass through it).
    When every v * m + k is an integer below 2**53 in magnitude, float64 computes
    v * (m / 2**s) + k / 2**s exactly (scaling by a power of two is exact, and so is a sum
    whose exact value is representable), and floor gives the same integer. Otherwise int64
    does it. Per-channel factors are repeated along each row of the input, so every pass runs
    along whole rows rather than one channel count at a time."""

    def __init__(self, multiplier: np.ndarray, shift: np.ndarray, per_channel: bool, izp: int,
                 ozp: int):
        count = None if per_channel else 1
        self.mult = np.asarray(multiplier, dtype=np.int64).reshape(-1)[:count]
        self.shifts = np.asarray(shift, dtype=np.int64).reshape(-1)[:count]
        self.izp, self.ozp, self.per_channel = izp, ozp, per_channel
        self.top = int(self.shifts.max(initial=2))
        self.widest = int(np.abs(self.mult).max(initial=0))
        self.scale = np.ldexp(self.mult.astype(np.float64), -self.shifts)
        self.offset = 0.5 - izp * self.scale + ozp  # k / 2**s, each term exact under the bound
        self._rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _along(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """x as float64 rows of its last two axes, and the factors repeated to match."""
        if not self.per_channel or x.ndim < 2 or x.size == 0:
            return x.astype(np.float64), self.scale, self.offset
        reps = x.shape[-2]
        tiled = self._rows.get(reps)
        if tiled is None:
            tiled = self._rows[reps] = (np.tile(self.scale, reps), np.tile(self.offset, reps))
        return x.reshape(-1, reps * x.shape[-1]).astype(np.float64), *tiled

    def apply(self, input: np.ndarray, out_dtype: np.dtype) -> np.ndarray:  # noqa: A002
        lo, hi = int_min(out_dtype), int_max(out_dtype)
        reach = ((1 << (self.top - 1)) + (abs(self.izp) + _magnitude(input)) * self.widest
                 + (abs(self.ozp) << self.top))  # bounds every |v * m + k|
        if reach < 2**53:
            value, scale, offset = self._along(input)
            value *= scale
            value += offset
            np.floor(value, out=value)
        else:
            value = np.multiply(input, self.mult, dtype=np.int64)
            addend = np.left_shift(np.int64(1), self.shifts - 1) - self.izp * self.mult
            fold = abs(self.ozp).bit_length() + self.top <= 60
            if fold:
                addend += np.left_shift(np.int64(self.ozp), self.shifts)
            value += addend
            value >>= self.shifts
            if not fold:
                value += self.ozp
        np.clip(value, lo, hi, out=value)
        return value.astype(out_dtype).reshape(input.shape)


class _FromAccumulator:
    """RESCALE of an integer convolution's result acc + bias, taken from its float accumulator
    (exact integers) and bias without making that int32 tensor: the bias joins the per-channel
    offset. Declines (None) where acc + bias may leave int32 or some v * m + k reach 2**53."""

    def __init__(self, scaling: _Scale32, out_dtype: np.dtype):
        self.scaling, self.out_dtype = scaling, out_dtype
        self._factors: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}

    def _prepare(self, bias: np.ndarray, channels: int,
                 reps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        biases = np.broadcast_to(np.asarray(bias, np.int64).reshape(-1), (channels,))
        scale = np.broadcast_to(self.scaling.scale, (channels,))
        offset = self.scaling.offset + biases * scale  # (k + bias * m) / 2**s, exact under the bound
        return bias, np.tile(scale, reps), np.tile(offset, reps), int(np.abs(biases).max())

    def __call__(self, acc: np.ndarray, bias: np.ndarray) -> np.ndarray | None:
        if acc.ndim < 2 or acc.size == 0 or not acc.flags.c_contiguous:
            return None
        reps, s = acc.shape[-2], self.scaling
        entry = self._factors.get((reps, id(bias)))
        if entry is None or entry[0] is not bias:
            entry = self._factors[(reps, id(bias))] = self._prepare(bias, acc.shape[-1], reps)
        _, scale, offset, widest_bias = entry
        value = max(-float(acc.min()), float(acc.max())) + widest_bias
        reach = (1 << (s.top - 1)) + (abs(s.izp) + value) * s.widest + (abs(s.ozp) << s.top)
        if value >= 2**31 or reach >= 2**53:
            return None
        rows = acc.reshape(-1, reps * acc.shape[-1]).astype(np.float64)
        rows *= scale
        rows += offset
        np.floor(rows, out=rows)
        np.clip(rows, int_min(self.out_dtype), int_max(self.out_dtype), out=rows)
        return rows.astype(self.out_dtype).reshape(acc.shape)


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
) -> _FromAccumulator | None:
    """RESCALE fused after an integer convolution, prepared at plan time: the common case
    only (scale32, single rounding, signed)."""
    if not scale32 or rounding_mode == DOUBLE_ROUND or input_unsigned or output_unsigned:
        return None
    out_dtype = np.asarray(output_zp).dtype
    izp = _zero_point(input_zp, np.asarray(input_zp).dtype, False)
    ozp = _zero_point(output_zp, out_dtype, False)
    return _FromAccumulator(_scale32(multiplier, shift, per_channel, izp, ozp), out_dtype)


def _magnitude(x: np.ndarray) -> int:
    """The largest |x|: from the dtype for narrow integers, else from the values."""
    if x.dtype.itemsize <= 2 or x.size == 0:
        info = np.iinfo(x.dtype)
        return max(-int(info.min), int(info.max)) if x.size else 0
    return max(-int(x.min()), int(x.max()))


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
