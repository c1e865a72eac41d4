"""The fast executor's ERF (compiled._erf, through activation.erf) against erf in float64:
within FP32_ULPS of it, inside TOSA's bound (5 ulp of the result's type, the conformance
suite's ERF compliance), and never more than one fp32 value from the reference's result (erf
rounded to fp32)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from ulps import fp32_sweep, ulps  # tools/ulps.py

pytestmark = pytest.mark.fast

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
TOSA_ULPS = 5
"""TOSA 1.0's ERF accuracy: within 5 ulp (the conformance generator's `compliance: ulp 5`)."""
FP32_ULPS = 1.373
"""compiled._erf's bound over every fp32 value (1.3729, at x = 1.009305: the far polynomial
next to where the two meet)."""


def _fast_erf(x: np.ndarray) -> np.ndarray:
    from pyvgf.fast.activation import erf

    return erf(input=x)


def _reference_erf(x: np.ndarray) -> np.ndarray:
    from pyvgf.tosa.activation import erf

    with np.errstate(invalid="ignore"):  # signalling NaNs widened
        return erf(input=x)


def _assert_next_to_reference(got: np.ndarray, x: np.ndarray) -> None:
    """got, of x's type, is the reference's erf of x or one of the values next to it."""
    want = _reference_erf(x)
    differ = (got != want) & ~(np.isnan(got.astype(F32)) & np.isnan(want.astype(F32)))
    assert ulps(got[differ], want[differ].astype(np.float64)).max(initial=0) <= 1


def _exact(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def test_fp32_is_within_its_bound_on_a_dense_sweep():
    x = fp32_sweep(1 << 11, ((0.5, 1.0), (1.0, 1.0 + 2**-10), (3.9, 4.0), (0, 2**-140)))  # near 0, 1 and 4
    got = _fast_erf(x)
    assert got.dtype == F32 and got.shape == x.shape
    errors = ulps(got, _exact(x))
    assert errors.max() <= FP32_ULPS, (errors.max(), x[errors.argmax()])
    _assert_next_to_reference(got, x)


def test_special_values():
    tiny, subnormal = np.float32(2**-149), np.float32(2**-126 - 2**-149)
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, tiny, -tiny, subnormal, 1.0, -1.0,
                  3.91923, -3.91923, 4.0, 1e30, -3.4e38], F32)
    got = _fast_erf(x)
    exact = np.ones(x.size, bool)
    exact[9:11] = False  # +-1, where the polynomials meet: within FP32_ULPS (the sweeps)
    np.testing.assert_array_equal(got[exact], _reference_erf(x)[exact])  # NaNs equal NaNs here
    _assert_next_to_reference(got, x)
    assert np.signbit(got).tolist() == np.signbit(x).tolist()  # erf(-0) is -0; NaN's sign too
    assert got[2:4].tolist() == [1, -1] and got[11:].tolist() == [1, -1, 1, 1, -1]
    assert got[6] == np.float32(2 / math.sqrt(math.pi) * 2**-149)  # a subnormal result


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_every_fp16_and_bf16_value(dtype):
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)
    got = _fast_erf(x)
    assert got.dtype == dtype
    assert ulps(got, _exact(x)).max() <= TOSA_ULPS
    _assert_next_to_reference(got, x)


def test_shapes_and_forms_agree():
    """Any rank (0 too), a view that is not contiguous, a read-only array, one block or many
    (threads), in place: each gives what the loop gives the same values as one contiguous run
    on one thread; the loop is only ever compiled for writable arrays."""
    from pyvgf.fast.activation import _erf_inplace
    from pyvgf.fast.compiled import ERF_BLOCK, erf_blocks

    rng = np.random.default_rng(7)
    constant = rng.normal(0, 2, (2, 9)).astype(F32)
    constant.flags.writeable = False
    for x in (np.array(0.75, F32), np.zeros((0, 3), F32), rng.normal(0, 2, (5, 7)).astype(F32),
              rng.normal(0, 2, (3, ERF_BLOCK + 5, 2)).astype(F32)[:, ::2], constant,
              rng.normal(0, 2, (4, ERF_BLOCK)).astype(F32)):
        flat = np.ascontiguousarray(x).reshape(-1)
        want = np.empty_like(flat)
        erf_blocks.serial(flat.copy(), want, ERF_BLOCK)
        want = want.reshape(x.shape)
        got = _fast_erf(x)
        assert got.shape == x.shape
        np.testing.assert_array_equal(got, want)
        _assert_next_to_reference(got, x)
        band = x.copy()
        assert _erf_inplace(input=band) is band
        np.testing.assert_array_equal(band, want)
    loops = (erf_blocks.serial, erf_blocks.threaded)
    assert all(types[0].mutable for loop in loops for types in loop.signatures)


@pytest.mark.slow
def test_every_fp32_value():
    """The whole fp32 line, 2**24 patterns at a time: the bound the sweep above samples."""
    from numba import njit, prange

    @njit(parallel=True)
    def worst(x: np.ndarray, got: np.ndarray) -> float:
        errors = np.zeros(x.shape[0])
        for i in prange(x.shape[0]):
            exact = math.erf(np.float64(x[i]))
            if exact != exact:
                errors[i] = 0.0 if got[i] != got[i] else np.inf
            else:
                binade = max(math.frexp(exact)[1] - 1, -126)
                errors[i] = abs(np.float64(got[i]) - exact) / math.ldexp(1.0, binade - 23)
        return errors.max()

    chunk = 1 << 24
    for first in range(0, 1 << 32, chunk):
        x = np.arange(first, first + chunk, dtype=np.uint64).astype(np.uint32).view(F32)
        assert worst(x, _fast_erf(x)) <= FP32_ULPS, hex(first)
