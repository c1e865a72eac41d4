"""The fast executor's MATMUL: integers (zero points subtracted) in the fastest float type
that sums them exactly (kernels.exact_dtype), so in BLAS, split over the threads
(kernels.gemm); the band-wise ops fused after it computed into its result, and an fp32 ADD of
one value per column (a bias) first of them into each block of it while in cache."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tosa._common import F32, is_float, scalar
from ..tosa.interpreter import Known
from ..types import TensorType
from .kernels import biased_product, exact_dtype, gemm, max_offset, tile_weight
from .patterns import per_column
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


@matmul.prepare
def _matmul_prepare(*, A: np.ndarray | TensorType, B: np.ndarray | TensorType, A_zp: np.ndarray,
                    B_zp: np.ndarray, result_dtype: np.dtype, epilogue: object = None
                    ) -> Callable[..., np.ndarray] | None:
    """For one fp32 product ([1, H, C] @ [1, C, W]) whose epilogue starts with an ADD of one
    value per column, or whose B is a constant the FMA tiles take (kernels.tile_weight): the
    product with that ADD (or none) made in each block of rows or columns as it is made
    (kernels.biased_product), then the rest of the epilogue; None otherwise."""
    columns = B.shape[-1]
    bias = _bias(epilogue, columns)
    if A.shape[0] != 1 or np.dtype(result_dtype) != F32 or any(x.dtype != F32 for x in (A, B)):  # type: ignore[union-attr]
        return None
    weight = tile_weight(B[0]) if isinstance(B, np.ndarray) else None
    if bias is None and (weight is None or weight.ndim != 3):
        return None
    added = np.zeros(columns, F32) if bias is None else bias

    def run(**operands: np.ndarray) -> np.ndarray:
        a = operands.get("A", A)
        product = biased_product(a, operands["B"][0] if weight is None else weight, added)  # type: ignore[arg-type]
        if epilogue is None:
            return product
        return epilogue(product) if bias is None else epilogue.rest(product)  # type: ignore[operator, attr-defined]
    return run


def _bias(epilogue: object, columns: int) -> np.ndarray | None:
    """The fp32 vector of `columns` values that an epilogue's first op, an ADD of an fp32
    constant broadcast along the last axis, adds; else None."""
    chain = getattr(epilogue, "chain", ())
    if not chain or chain[0][0].op != "ADD":
        return None
    _, _, band, static = chain[0]
    return per_column(Known(static["input2" if band == "input1" else "input1"]), columns)
