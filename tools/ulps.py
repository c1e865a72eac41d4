"""Accuracy of a floating-point function, for the tests that bound one (ERF, EXP):

    fp32_sweep(step, spans)   every `step`-th fp32 bit pattern and every one inside `spans`, both signs
    ulps(got, exact)          |got - exact| in ulps of got's type at `exact`
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

_F32 = np.dtype(np.float32)


def fp32_sweep(step: int, spans: tuple[tuple[float, float], ...]) -> np.ndarray:
    """Every `step`-th fp32 bit pattern (zeros, subnormals, normals, infinities and NaNs), and
    every pattern from `low` up to `high` for each (low, high) of `spans` (non-negative), each
    with both signs."""
    bits = np.arange(0, 1 << 31, step, dtype=np.uint32)
    dense = [np.arange(*np.array(span, _F32).view(np.uint32), dtype=np.uint32) for span in spans]
    bits = np.concatenate([bits, *dense])
    return np.concatenate([bits, bits | np.uint32(1 << 31)]).view(_F32)


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in ulps of got's type at `exact` (float64; exact NaN: 0 where got is NaN
    too, else inf)."""
    info = ml_dtypes.finfo(got.dtype)
    binade = np.maximum(np.frexp(exact)[1] - 1, info.minexp)
    error = np.abs(got.astype(np.float64) - exact) / np.ldexp(1.0, binade - info.nmant)
    return np.where(np.isnan(exact), np.where(np.isnan(got), 0.0, np.inf), error)
