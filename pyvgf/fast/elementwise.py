"""The fast executor's elementwise arithmetic: ADD, SUB and MUL band-wise (registry.py), so
that an ADD of a bias, or a SUB or MUL by a constant, is fused after the op making its other
operand (a MATMUL, a convolution: plan.py) and computed into that op's temporary result."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tosa import OPS
from ..tosa._common import F32
from .registry import declare


def _into(ufunc: np.ufunc, name: str) -> Callable[..., np.ndarray]:
    """The op's form for temporaries: fp32 computed into whichever input is the band (the
    one not read-only, of the result's shape); else the reference's."""
    reference = OPS[name].fn

    def inplace(*, input1: np.ndarray, input2: np.ndarray, **rest: object) -> np.ndarray:
        shape = np.broadcast_shapes(input1.shape, input2.shape)
        for band in (input1, input2):
            if band.dtype == F32 and band.shape == shape and band.flags.writeable \
                    and input1.dtype == input2.dtype:
                return ufunc(input1, input2, out=band)
        return reference(input1=input1, input2=input2, **rest)  # type: ignore[no-any-return]
    return inplace


for _name, _ufunc in (("ADD", np.add), ("SUB", np.subtract), ("MUL", np.multiply)):
    declare(_name, bandwise=True).inplace(_into(_ufunc, _name))
