"""The BLAS the compiled loops call for their GEMMs: Intel's MKL where the `mkl` extra is
installed, else the OpenBLAS that SciPy ships (numba's own np.dot calls that one).

The loops call `pyvgf_sgemm` and `pyvgf_dgemm`, BLAS's Fortran GEMM by name, and this module
binds those names, in each process before any loop is compiled or loaded, to the library's
functions (llvmlite's add_symbol): the machine code numba caches is then the same whichever
BLAS is installed, and each process links it to its own. MKL runs sequentially in each of the
loops' threads (its threading layer set to SEQUENTIAL before any other call).

On this project's machine (a 2-core Xeon with AVX-512) MKL's sgemm took 0.52-0.81x OpenBLAS's
time on one thread for MobileNetV2's pointwise layers and the transformer's projections, most
for the few input channels of its first layers (docs/performance.md). `PYVGF_BLAS=openblas`
keeps SciPy's where MKL is installed.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from typing import Any

import llvmlite.binding
import numpy as np
from numba.extending import get_cython_function_address

_SEQUENTIAL = 1
"""MKL_THREADING_SEQUENTIAL, for MKL_Set_Threading_Layer."""


def _mkl() -> ctypes.CDLL | None:
    """MKL's single dynamic library as the `mkl` package installs it, its threading layer
    set to sequential; None where it is not installed, cannot be loaded, or the user asked
    for OpenBLAS."""
    if os.environ.get("PYVGF_BLAS", "").lower() == "openblas" or not sys.platform.startswith("linux"):
        return None
    for path in sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*"))):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        library.MKL_Set_Threading_Layer.argtypes = [ctypes.c_int]
        library.MKL_Set_Threading_Layer.restype = ctypes.c_int
        if library.MKL_Set_Threading_Layer(_SEQUENTIAL) == _SEQUENTIAL:
            return library
    return None


def _bind() -> tuple[str, bool]:
    """Bind the loops' GEMM names to MKL's functions or SciPy's, and the int8 GEMM's to MKL's
    where it is exact here; returns the library's name and whether the int8 GEMM is bound."""
    mkl = _mkl()
    for name in ("sgemm", "dgemm"):
        if mkl is not None:
            address = ctypes.cast(getattr(mkl, name), ctypes.c_void_p).value
        else:
            address = get_cython_function_address("scipy.linalg.cython_blas", name)
        llvmlite.binding.add_symbol(f"pyvgf_{name}", address)
    exact = mkl is not None and _int8_exact(mkl.cblas_gemm_s8u8s32)
    if exact:
        llvmlite.binding.add_symbol("pyvgf_gemm_s8u8s32",
                                    ctypes.cast(mkl.cblas_gemm_s8u8s32, ctypes.c_void_p).value)
    return ("mkl" if mkl is not None else "openblas"), exact


_COL_MAJOR, _NO_TRANS, _FIX_OFFSET = 102, 111, 173
"""CBLAS's CblasColMajor, CblasNoTrans and CblasFixOffset."""


def _int8_exact(gemm: Any) -> bool:
    """Whether MKL's int8 GEMM sums exactly in int32 on this CPU: without VNNI or AMX it may
    saturate pairs of products at int16 (255 * 127 * 2 > 32767), which a product of the largest
    values shows."""
    c_int, c_int8 = ctypes.c_int, ctypes.c_int8
    gemm.argtypes = [c_int] * 7 + [ctypes.c_float, ctypes.c_void_p, c_int, c_int8, ctypes.c_void_p,
                                   c_int, c_int8, ctypes.c_float, ctypes.c_void_p, c_int, ctypes.c_void_p]
    gemm.restype = None
    k = 64
    w = np.full((k, 4), 127, np.int8)
    x = np.full((3, k), 255, np.uint8)
    acc, zero = np.zeros((3, 4), np.int32), np.zeros(1, np.int32)
    gemm(_COL_MAJOR, _NO_TRANS, _NO_TRANS, _FIX_OFFSET, 4, 3, k, 1.0, w.ctypes.data, 4, 0,
         x.ctypes.data, k, 0, 0.0, acc.ctypes.data, 4, zero.ctypes.data)
    return bool((acc == 255 * 127 * k).all())


LIBRARY, INT8 = _bind()
"""Which BLAS the loops call: "mkl" or "openblas" (SciPy's); and whether `pyvgf_gemm_s8u8s32`
is MKL's int8 GEMM (cblas_gemm_s8u8s32: int8 weights times uint8 inputs, summed exactly in
int32), which the integer 1x1 convolutions then call (compiled.gemm_rows_int8)."""
