"""The fast executor's fp32 EXP (compiled._exp, the softmax loop's) against e**x in float64:
within EXP_ULPS of it, as close as numpy's own fp32 exp (the reference's EXP) comes, with
NaN, infinities, overflow and subnormal results as the reference gives them."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

from ulps import fp32_sweep, ulps  # tools/ulps.py

pytestmark = pytest.mark.fast

F32 = np.dtype(np.float32)
EXP_ULPS = 2.27
"""compiled._exp's bound over every fp32 value (2.2688, at x = 5.199); numpy's exp is 2.52 from
e**x on every 31st fp32 pattern."""


@functools.cache
def _each() -> Callable[[np.ndarray, np.ndarray], None]:
    """A loop out[i] = compiled._exp(x[i]), compiled once (as compiled.softmax_rows is)."""
    from numba import njit

    from pyvgf.fast.compiled import _exp

    @njit(fastmath={"contract"})
    def each(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.shape[0]):
            out[i] = _exp(x[i])
    return each


def _fast_exp(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _each()(x, out)
    return out


def _exact(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(x.astype(np.float64))


def test_within_its_bound_on_a_dense_sweep():
    # with every pattern near the edges where e**x leaves fp32's normal range (-87.3), rounds
    # to 0 (-103.9) and overflows (88.7)
    x = fp32_sweep(1 << 11, ((88.0, 88.75), (87.0, 87.5), (103.5, 104.5)))
    got = _fast_exp(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.exp(x.astype(np.float64)).astype(F32)
    inside = np.isfinite(want) & ~np.isnan(x)
    errors = ulps(got[inside], _exact(x[inside]))
    assert errors.max() <= EXP_ULPS, (errors.max(), x[inside][errors.argmax()])
    np.testing.assert_array_equal(got[~inside], want[~inside])  # NaN, and inf past 88.72
    assert (got[want == 0] == 0).all() and (got[want > 0] > 0).all()


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 88.72, 88.73, -87.5, -103.28,
                  -103.98, -1e30, 1e30], F32)
    got = _fast_exp(x)
    assert got[:3].tolist() == [1, 1, np.inf] and got[3] == 0 and np.isnan(got[4])
    assert np.isfinite(got[6]) and got[7] == np.inf  # fp32's largest e**x, then past it
    assert ulps(got[5:7], _exact(x[5:7])).max() <= EXP_ULPS
    assert 0 < got[8] < np.finfo(F32).tiny and got[9] == np.float32(2**-149)  # subnormals
    assert got[10:12].tolist() == [0, 0] and got[12] == np.inf


@pytest.mark.slow
def test_every_fp32_value():
    """The whole fp32 line, 2**24 patterns at a time: the bound the sweep above samples."""
    chunk = 1 << 24
    for first in range(0, 1 << 32, chunk):
        x = np.arange(first, first + chunk, dtype=np.uint64).astype(np.uint32).view(F32)
        got = _fast_exp(x)
        with np.errstate(over="ignore", invalid="ignore"):
            want = np.exp(x.astype(np.float64)).astype(F32)
        inside = np.isfinite(want) & ~np.isnan(x)
        assert ulps(got[inside], _exact(x[inside])).max(initial=0) <= EXP_ULPS, hex(first)
        np.testing.assert_array_equal(got[~inside], want[~inside])
