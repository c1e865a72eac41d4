"""The fast executor's TRANSPOSE and SLICE: views of their input, not copies. The ops reading
them take strided operands where they can (a batched MATMUL's GEMMs read each matrix with its
own strides: compiled._gemm) and make them contiguous where they cannot, so a transformer's
attention heads are read where the QKV projection wrote them. The results are the reference's
values; a graph result that is a view is copied when it is handed to the caller.

Each of them and RESHAPE reads its shape operands once, at plan time (a `prepare` form): read
on every run, they took 20-40 us a step in a transformer block's run, with the caches its GEMMs
had left cold. For the same reason the forms call the array's own method, not numpy's function
of the same name, whose Python wrapper took 11-18 us a call there (1 us hot)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tosa.data_layout import slice_window, transpose_order
from ..types import TensorType
from .registry import declare, fast_op


@fast_op("TRANSPOSE")
def transpose(*, perms: np.ndarray, input1: np.ndarray) -> np.ndarray:
    return np.transpose(input1, transpose_order(perms))


@fast_op("SLICE")
def slice_view(*, input1: np.ndarray, start: np.ndarray, size: np.ndarray) -> np.ndarray:
    return input1[slice_window(start, size)]


@transpose.prepare
def _transpose_prepare(*, perms: np.ndarray, input1: TensorType) -> Callable[..., np.ndarray]:
    order = transpose_order(perms)
    return lambda *, input1: input1.transpose(order)


@slice_view.prepare
def _slice_prepare(*, input1: TensorType, start: np.ndarray | TensorType,
                   size: np.ndarray | TensorType) -> Callable[..., np.ndarray] | None:
    if not (isinstance(start, np.ndarray) and isinstance(size, np.ndarray)):
        return None  # a window made at run time
    window = slice_window(start, size)
    return lambda *, input1: input1[window]


@declare("RESHAPE").prepare
def _reshape_prepare(*, input1: TensorType, shape: np.ndarray | TensorType
                     ) -> Callable[..., np.ndarray] | None:
    if not isinstance(shape, np.ndarray):
        return None  # a shape made at run time
    dims = tuple(int(d) for d in shape.reshape(-1))
    return lambda *, input1: input1.reshape(dims)
