"""The fast executor's activations: CLAMP fused after a convolution and applied in place on
its bands; ERF through SciPy's vectorised erf; ERF, SIGMOID and TANH band-wise (registry.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tosa._common import I8, I16, NAN_PROPAGATE
from ..tosa.activation import _clip_float, clamp
from .kernels import bias_clamp
from .registry import declare, fast_op

_CLAMP = declare("CLAMP", bandwise=True)
declare("SIGMOID", bandwise=True)
declare("TANH", bandwise=True)


@_CLAMP.inplace
def _clamp_inplace(
    *, min_val: float | int, max_val: float | int, nan_mode: int, input: np.ndarray
) -> np.ndarray:  # noqa: A002
    """CLAMP into `input` (a temporary): fp32 and integers in place, fp16/bf16 as `clamp`."""
    if input.dtype in (I8, I16):
        return np.clip(input, min_val, max_val, out=input)  # the check keeps both in range
    if input.dtype == np.float32:
        return _clip_float(input, min_val, max_val, nan_mode, input)
    return clamp(min_val=min_val, max_val=max_val, nan_mode=nan_mode, input=input)


@_CLAMP.from_accumulator
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


@fast_op("ERF", bandwise=True)
def erf(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    """erf in float64 (SciPy's), rounded to fp32 and then to the input's type."""
    from scipy import special  # on first use: importing it takes a fifth of a second

    wide = input.astype(np.float64)
    special.erf(wide, out=wide)
    return wide.astype(np.float32).astype(input.dtype)
