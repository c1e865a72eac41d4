"""Run one model on several backends and check that their results agree."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np

Backend = str | Callable[[bytes, list[np.ndarray]], Sequence[np.ndarray]]
"""A pyvgf backend name ("reference", "cpu", "vulkan") or a function (model bytes, inputs) -> outputs."""

_RTOL = {
    np.dtype(np.float32): 1e-4,
    np.dtype(np.float16): 4e-3,
    np.dtype(ml_dtypes.bfloat16): 3e-2,
    np.dtype(ml_dtypes.float8_e4m3fn): 0.25,
    np.dtype(ml_dtypes.float8_e5m2): 0.5,
}


def tolerance(dtype: np.dtype) -> float:
    """The relative tolerance results of this dtype are compared with (0: exact)."""
    return _RTOL.get(np.dtype(dtype), 0.0)


def _run(backend: Backend, model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    if callable(backend):
        return [np.asarray(o) for o in backend(model, [a.copy() for a in inputs])]
    import pyvgf

    return [np.asarray(o) for o in pyvgf.load(model, backend=backend).run([a.copy() for a in inputs])]


def _mismatch(got: np.ndarray, want: np.ndarray, rtol: float) -> str | None:
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype and got.dtype.kind in "iu" and want.dtype.kind in "iu" \
            and got.dtype.itemsize == want.dtype.itemsize:
        got = got.view(want.dtype)  # an unsigned RESCALE result: compare the bits
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if rtol == 0.0:
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        finite = np.isfinite(w)
        scale = np.abs(w[finite]).max(initial=1.0)
        with np.errstate(invalid="ignore"):  # inf - inf where w is not finite, judged below
            far = np.abs(g - w) > rtol * (np.abs(w) + scale * rtol * 10)
        bad = np.where(finite, far | np.isnan(g), ~((g == w) | (np.isnan(g) & np.isnan(w))))
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{int(bad.sum())} of {bad.size} elements differ; first at {where}: {got[where]!r} vs {want[where]!r}"


def assert_backends_agree(model: bytes, inputs: list[np.ndarray],
                          backends: Sequence[Backend] = ("reference", "cpu", "vulkan"),
                          *, rtol: float | None = None) -> list[np.ndarray]:
    """Run `model` on each backend and assert every result equals the first backend's: by
    default the plain numpy reference ("reference"), against which the cpu backend (the fast
    executor where installed) and the vulkan backend are checked.

    Integers and bools must match exactly; floats within `rtol` (default: `tolerance(dtype)`)
    of the reference, relative to each value plus a small fraction of the largest magnitude;
    NaNs must be NaN on both sides. Returns the first backend's results.
    """
    if len(backends) < 2:
        raise ValueError("assert_backends_agree needs at least two backends")
    results = [_run(b, model, inputs) for b in backends]
    reference = results[0]
    for backend, got in zip(backends[1:], results[1:]):
        name = getattr(backend, "__name__", backend)
        if len(got) != len(reference):
            raise AssertionError(f"backend {name} returned {len(got)} outputs, {backends[0]} {len(reference)}")
        for k, (g, w) in enumerate(zip(got, reference)):
            problem = _mismatch(g, w, tolerance(w.dtype) if rtol is None else rtol)
            if problem:
                first = getattr(backends[0], "__name__", backends[0])
                raise AssertionError(f"output {k}: backend {name} vs {first}: {problem}")
    return reference
