"""Types shared by the SPIR-V decoder, the TOSA executor and the runtime."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TensorType:
    """The element type and shape of a tensor (an OpTypeTensorARM, a VGF resource)."""

    dtype: np.dtype
    shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __str__(self) -> str:
        return f"tensor<{'x'.join(map(str, self.shape)) or 'scalar'} {self.dtype}>"
