"""Types shared by the SPIR-V decoder, the TOSA executor and the runtime."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def vulkan_shape(shape: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """The dimensions a tensor of this shape has in Vulkan: a rank-0 (scalar) tensor is a
    one-element tensor of rank 1, since VkTensorDescriptionARM's dimensionCount must be greater
    than 0 (Arm's scenario runner and model-converter do the same; see spec/runtime.md)."""
    return tuple(shape) or (1,)


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


def immutable(array: np.ndarray) -> bool:
    """Whether nothing can change `array`: read-only views down to read-only memory (bytes, a
    read-only mmap such as a VGF file's) or to a read-only array owning its data."""
    base: object = array
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    return base is None or _readonly_memory(base)


def _readonly_memory(obj: object) -> bool:
    if isinstance(obj, memoryview):
        return obj.readonly and _readonly_memory(obj.obj)
    try:
        return memoryview(obj).readonly  # type: ignore[arg-type]
    except TypeError:
        return False
