"""TOSA activation functions (specification chapter "Activation Functions")."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ._common import (
    FLOATS,
    I8,
    I16,
    NAN_PROPAGATE,
    float_op,
    int_max,
    int_min,
    saturate,
)
from .checking import (
    expect_dtype,
    expect_nan_mode,
    expect_same_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
)
from .kernels import bias_clamp
from .registry import tosa_op

def _check_float_unary(op: str, result: object, input: object) -> None:
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, FLOATS)
    expect_same_dtype(op, "result", res, "input", t)
    expect_shape(op, "result", res, t.shape)


@tosa_op("CLAMP", bandwise=True)
def clamp(
    *, min_val: float | int, max_val: float | int, nan_mode: int, input: np.ndarray
) -> np.ndarray:  # noqa: A002  (spec name)
    if input.dtype in FLOATS:
        return float_op(lambda x: _clip_float(x, min_val, max_val, nan_mode, None), input.dtype, input)
    return saturate(np.clip(input.astype(np.int64), min_val, max_val), input.dtype)


@clamp.inplace
def _clamp_inplace(
    *, min_val: float | int, max_val: float | int, nan_mode: int, input: np.ndarray
) -> np.ndarray:  # noqa: A002
    """CLAMP into `input` (a temporary): fp32 and integers in place, fp16/bf16 as `clamp`."""
    if input.dtype in (I8, I16):
        return np.clip(input, min_val, max_val, out=input)  # the check keeps both in range
    if input.dtype == np.float32:
        return _clip_float(input, min_val, max_val, nan_mode, input)
    return clamp(min_val=min_val, max_val=max_val, nan_mode=nan_mode, input=input)


def _clip_float(x: np.ndarray, min_val: float, max_val: float, nan_mode: int,
                out: np.ndarray | None) -> np.ndarray:
    """The specification's apply_clip on fp32: NaN stays NaN, or becomes min_val when NaNs are
    ignored (max(NaN, min_val) is then min_val)."""
    out = np.clip(x, min_val, max_val, out=out)
    if nan_mode != NAN_PROPAGATE:
        np.copyto(out, min_val, where=np.isnan(out))
    return out


@clamp.from_accumulator
def _clamp_accumulated(*, min_val: float | int, max_val: float | int,
                       nan_mode: int) -> Callable[..., np.ndarray | None]:
    """CLAMP fused after a convolution: for an fp32 result, bias and clamp in one compiled
    pass over the accumulator (kernels.bias_clamp); its `bounds` let the convolution's own
    loops apply it instead (conv.Epilogue)."""
    nan_to_low = nan_mode != NAN_PROPAGATE

    def form(acc: np.ndarray, bias: np.ndarray, result_dtype: np.dtype) -> np.ndarray | None:
        if result_dtype != np.float32:
            return None
        return bias_clamp(acc, bias, min_val, max_val, nan_to_low)
    form.bounds = (min_val, max_val, nan_to_low)  # type: ignore[attr-defined]
    return form


@clamp.check
def _clamp_check(result, *, min_val, max_val, nan_mode, input):  # noqa: A002
    op = "CLAMP"
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, (I8, I16, *FLOATS))
    expect_same_dtype(op, "result", res, "input", t)
    expect_shape(op, "result", res, t.shape)
    expect_nan_mode(op, nan_mode)
    for name, value in (("min_val", min_val), ("max_val", max_val)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise fail(op, f"{name} must be a number, got {value!r}")
        if t.dtype in (I8, I16) and not (
            float(value).is_integer() and int_min(t.dtype) <= value <= int_max(t.dtype)
        ):
            raise fail(op, f"{name} must be an integer in the range of {t.dtype}, got {value!r}")
    if math.isnan(float(min_val)) or math.isnan(float(max_val)) or min_val > max_val:
        raise fail(op, f"min_val {min_val} must not exceed max_val {max_val}")


@tosa_op("ERF", bandwise=True)
def erf(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    """erf in float64 (SciPy's), rounded to fp32 and then to the input's type."""
    from scipy import special  # on first use: importing it takes a fifth of a second

    wide = input.astype(np.float64)
    special.erf(wide, out=wide)
    return wide.astype(np.float32).astype(input.dtype)


@erf.check
def _erf_check(result, *, input):  # noqa: A002
    _check_float_unary("ERF", result, input)


@tosa_op("SIGMOID", bandwise=True)
def sigmoid(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    return float_op(lambda x: 1.0 / (1.0 + np.exp(-x)), input.dtype, input)


@sigmoid.check
def _sigmoid_check(result, *, input):  # noqa: A002
    _check_float_unary("SIGMOID", result, input)


@tosa_op("TANH", bandwise=True)
def tanh(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    return float_op(np.tanh, input.dtype, input)


@tanh.check
def _tanh_check(result, *, input):  # noqa: A002
    _check_float_unary("TANH", result, input)
