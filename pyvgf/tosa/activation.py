"""TOSA activation functions (specification chapter "Activation Functions")."""

from __future__ import annotations

import math

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
from .registry import tosa_op


def _check_float_unary(op: str, result: object, input: object) -> None:
    res = result_type(op, result)
    t = tensor_type(op, "input", input)
    expect_dtype(op, "input", t, FLOATS)
    expect_same_dtype(op, "result", res, "input", t)
    expect_shape(op, "result", res, t.shape)


@tosa_op("CLAMP")
def clamp(
    *, min_val: float | int, max_val: float | int, nan_mode: int, input: np.ndarray
) -> np.ndarray:  # noqa: A002  (spec name)
    if input.dtype in FLOATS:
        return float_op(lambda x: _clip_float(x, min_val, max_val, nan_mode, None), input.dtype, input)
    return saturate(np.clip(input.astype(np.int64), min_val, max_val), input.dtype)


def _clip_float(x: np.ndarray, min_val: float, max_val: float, nan_mode: int,
                out: np.ndarray | None) -> np.ndarray:
    """The specification's apply_clip on fp32: NaN stays NaN, or becomes min_val when NaNs are
    ignored (max(NaN, min_val) is then min_val)."""
    out = np.clip(x, min_val, max_val, out=out)
    if nan_mode != NAN_PROPAGATE:
        np.copyto(out, min_val, where=np.isnan(out))
    return out


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


@tosa_op("ERF")
def erf(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    """erf in float64 (Python's math.erf per element), rounded to fp32 and then to the input's
    type."""
    wide = np.vectorize(math.erf, otypes=[np.float64])(input.astype(np.float64))
    return np.asarray(wide).astype(np.float32).astype(input.dtype)


@erf.check
def _erf_check(result, *, input):  # noqa: A002
    _check_float_unary("ERF", result, input)


@tosa_op("SIGMOID")
def sigmoid(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    return float_op(lambda x: 1.0 / (1.0 + np.exp(-x)), input.dtype, input)


@sigmoid.check
def _sigmoid_check(result, *, input):  # noqa: A002
    _check_float_unary("SIGMOID", result, input)


@tosa_op("TANH")
def tanh(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    return float_op(np.tanh, input.dtype, input)


@tanh.check
def _tanh_check(result, *, input):  # noqa: A002
    _check_float_unary("TANH", result, input)
