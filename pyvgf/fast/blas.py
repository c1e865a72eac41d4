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

import llvmlite.binding
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


def _bind() -> str:
    """Bind the loops' GEMM names to MKL's functions or SciPy's; returns the library's name."""
    mkl = _mkl()
    for name in ("sgemm", "dgemm"):
        if mkl is not None:
            address = ctypes.cast(getattr(mkl, name), ctypes.c_void_p).value
        else:
            address = get_cython_function_address("scipy.linalg.cython_blas", name)
        llvmlite.binding.add_symbol(f"pyvgf_{name}", address)
    return "mkl" if mkl is not None else "openblas"


LIBRARY = _bind()
"""Which BLAS the loops call: "mkl" or "openblas" (SciPy's)."""
