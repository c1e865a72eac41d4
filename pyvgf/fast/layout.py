"""The fast executor's TRANSPOSE and SLICE: views of their input, not copies. The ops reading
them take strided operands where they can (a batched MATMUL's GEMMs read each matrix with its
own strides: compiled._gemm) and make them contiguous where they cannot, so a transformer's
attention heads are read where the QKV projection wrote them. The results are the reference's
values; a graph result that is a view is copied when it is handed to the caller."""

from __future__ import annotations

import numpy as np

from ..tosa.data_layout import slice_window, transpose_order
from .registry import fast_op


@fast_op("TRANSPOSE")
def transpose(*, perms: np.ndarray, input1: np.ndarray) -> np.ndarray:
    return np.transpose(input1, transpose_order(perms))


@fast_op("SLICE")
def slice_view(*, input1: np.ndarray, start: np.ndarray, size: np.ndarray) -> np.ndarray:
    return input1[slice_window(start, size)]
