"""The fast executor's activations: CLAMP fused after a convolution and applied in place on
its bands; ERF as a compiled loop (compiled.erf_blocks); ERF, SIGMOID and TANH band-wise
(registry.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tosa._common import F32, I8, I16, NAN_PROPAGATE
from ..tosa.activation import _clip_float, clamp
from .compiled import ERF_BLOCK, erf_blocks
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
    """erf rounded to fp32 and then to the input's type, as the reference gives it (within
    one fp32 ulp: compiled._erf says when they differ); fp16 and bf16 through fp32, which
    holds them exactly. A read-only input is copied: the loop is compiled for writable arrays
    only (numba compiles once more for each kind)."""
    x = input.astype(F32, order="C", copy=not input.flags.writeable)
    out = _erf_fp32(x, np.empty_like(x))
    return out if input.dtype == F32 else out.astype(input.dtype)


@erf.inplace
def _erf_inplace(*, input: np.ndarray) -> np.ndarray:  # noqa: A002
    """ERF into `input` (a temporary) where it is contiguous fp32; else as `erf`."""
    if input.dtype != F32 or not input.flags.c_contiguous:
        return erf(input=input)
    return _erf_fp32(input, input)


def _erf_fp32(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out = erf of the C-contiguous fp32 `x` (out may be x); one block runs on the calling
    thread, more over numba's threads."""
    flat, into = x.reshape(-1), out.reshape(-1)
    (erf_blocks.serial if flat.size <= ERF_BLOCK else erf_blocks)(flat, into, ERF_BLOCK)
    return out
