"""The fast executor's MATMUL: integers (zero points subtracted) in the fastest float type
that sums them exactly (kernels.exact_dtype), so in BLAS, split over the threads
(kernels.gemm); the band-wise ops fused after it (an ADD of a bias) computed into its result."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tosa._common import F32, is_float, scalar
from .kernels import exact_dtype, gemm, max_offset
from .registry import fast_op


@fast_op("MATMUL", blas=True)
def matmul(*, A: np.ndarray, B: np.ndarray, A_zp: np.ndarray, B_zp: np.ndarray,
           result_dtype: np.dtype, epilogue: Callable[[np.ndarray], np.ndarray] | None = None
           ) -> np.ndarray:
    """Batched matrix product: A [N,H,C] times B [N,C,W] -> [N,H,W] of `result_dtype`, the
    declared result's element type (fp16 operands may give fp16 or fp32); then `epilogue`, the
    band-wise ops the plan fused after it (plan.py), on the whole of it."""
    product = _matmul(A, B, A_zp, B_zp, np.dtype(result_dtype))
    return product if epilogue is None else epilogue(product)


def _matmul(A: np.ndarray, B: np.ndarray, A_zp: np.ndarray, B_zp: np.ndarray,
            out_dtype: np.dtype) -> np.ndarray:
    if is_float(A.dtype):
        a = A.astype(F32, copy=False)
        b = B.astype(F32, copy=False)
        return gemm(a, b).astype(out_dtype, copy=False)
    azp, bzp = scalar(A_zp), scalar(B_zp)
    dtype = exact_dtype(A.shape[2] * max_offset(A.dtype, azp) * max_offset(B.dtype, bzp))
    a = A.astype(dtype)
    b = B.astype(dtype)
    if azp:
        a -= azp
    if bzp:
        b -= bzp
    return gemm(a, b).astype(out_dtype, copy=False)
