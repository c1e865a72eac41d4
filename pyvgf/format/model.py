"""The VGF object model: what a container holds, with the format's own names.

`pyvgf.format.read()` returns a `VGF`; `pyvgf.format.write()` turns one back into bytes.
Fields that FlatBuffers may omit carry the schema's default here, so a model read from a
file and one built by hand compare equal field for field.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..elements import FORMAT_VALUES, by_format
from ..vknames import DESCRIPTOR_TYPE

NO_INDEX = 0xFFFFFFFF
"""The schema default of `DescriptorSetInfo.set_index` and `ModelResource.alias_group_id`."""


class ModuleType(enum.IntEnum):
    COMPUTE = 0
    GRAPH = 1


class CodeType(enum.IntEnum):
    """The `ModuleCode` union tag."""

    NONE = 0
    SPIRV = 1
    GLSL = 2
    HLSL = 3


class Category(enum.IntEnum):
    INPUT = 0
    OUTPUT = 1
    INTERMEDIATE = 2
    CONSTANT = 3


if TYPE_CHECKING:
    DescriptorType: Any  # its members are made from vk.xml's table at import, which a type checker cannot see
else:
    DescriptorType = enum.IntEnum(
        "DescriptorType",
        {
            **{name.split(" / ")[0].removeprefix("VK_DESCRIPTOR_TYPE_"): value
               for value, name in DESCRIPTOR_TYPE.items()},
            "NONE": NO_INDEX,
        },
    )
"""The VkDescriptorType values (`pyvgf.vknames`, from vk.xml, without VK_DESCRIPTOR_TYPE_) a
model resource can have, and NONE (0xFFFFFFFF) for constants."""


if TYPE_CHECKING:
    Format: Any  # its members are made from a table at import, which a type checker cannot see
else:
    Format = enum.IntEnum("Format", {"UNDEFINED": 0, **dict(sorted(FORMAT_VALUES.items(), key=lambda kv: kv[1]))})
"""The VkFormat values of tensors (one component each) that VGF resources use: the formats of
`pyvgf.elements.TABLE`, named as vk.xml names them (without VK_FORMAT_)."""


@dataclass
class Header:
    """The 128-byte header (section offsets and sizes are derived when writing)."""

    version: tuple[int, int, int] = (0, 5, 0)
    vk_header_version: int = 0
    legacy_magic: bool = False
    """True for files that start with the older u32 magic 0xF0E1D2C3 instead of b'VGF1'."""


@dataclass
class Module:
    type: ModuleType
    name: str
    entry_point: str
    code_type: CodeType
    code: np.ndarray | str | None
    """SPIR-V words (uint32 array) for SPIRV, source text for GLSL/HLSL, None for NONE."""


@dataclass
class BindingSlot:
    binding: int = 0
    mrt_index: int = 0


@dataclass
class DescriptorSetInfo:
    bindings: list[BindingSlot] = field(default_factory=list)
    set_index: int = NO_INDEX
    """Explicit descriptor set index, or NO_INDEX: the set is its position in the list."""


@dataclass
class PushConstantRange:
    stage_flags: int = 0
    offset: int = 0
    size: int = 0


@dataclass
class ConstantBinding:
    """Format 0.5: a graph constant id (the SPIR-V OpGraphConstantARM literal) and the
    index of the constant in the constant section that feeds it."""

    graph_constant_id: int = 0
    constant_table_index: int = 0


@dataclass
class Segment:
    type: ModuleType = ModuleType.COMPUTE
    name: str = ""
    module_index: int = 0
    set_infos: list[DescriptorSetInfo] = field(default_factory=list)
    inputs: list[BindingSlot] = field(default_factory=list)
    outputs: list[BindingSlot] = field(default_factory=list)
    constants: list[int] = field(default_factory=list)
    dispatch_shape: list[int] | None = None
    push_constant_ranges: list[PushConstantRange] = field(default_factory=list)
    constant_bindings: list[ConstantBinding] | None = None
    """Present from format 0.5 on; None when the file has no such field."""

    def graph_constants(self) -> list[ConstantBinding]:
        """(graph constant id, constant index) pairs: explicit in 0.5, identity before."""
        if self.constant_bindings is not None:
            return list(self.constant_bindings)
        return [ConstantBinding(i, i) for i in self.constants]


@dataclass
class ModelSequence:
    segments: list[Segment] = field(default_factory=list)
    inputs: list[BindingSlot] = field(default_factory=list)
    outputs: list[BindingSlot] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)


@dataclass
class SamplerConfig:
    min_filter: int = 0
    mag_filter: int = 0
    address_mode_u: int = 0
    address_mode_v: int = 0
    border_color: int = 0


@dataclass
class Resource:
    """One entry of the model resource table."""

    descriptor_type: int = DescriptorType.NONE
    format: int = Format.UNDEFINED
    category: Category = Category.INPUT
    shape: list[int] = field(default_factory=list)
    """Dimensions; -1 marks an unknown (dynamic) dimension."""
    strides: list[int] = field(default_factory=list)
    """Strides in bytes, or empty for a packed tensor."""
    sampler: SamplerConfig | None = None
    alias_group_id: int = NO_INDEX


@dataclass
class Constant:
    mrt_index: int
    data: np.ndarray
    """The raw bytes (uint8, read-only, a view into the file when read from one)."""
    sparsity_dimension: int = -1
    """-1: dense; >= 0: the dimension of 2:4 semi-structured sparsity (data stored dense)."""


@dataclass
class VGF:
    header: Header = field(default_factory=Header)
    modules: list[Module] = field(default_factory=list)
    sequence: ModelSequence = field(default_factory=ModelSequence)
    resources: list[Resource] = field(default_factory=list)
    constants: list[Constant] = field(default_factory=list)
    legacy_constants: bool = False
    """True when the constant section uses the legacy FlatBuffers layout (format < 0.4)."""

    def constant_array(self, index: int) -> np.ndarray:
        """Constant `index` as an array with the dtype and shape of its resource table entry.

        A view of `Constant.data` (no copy; read-only when read from a file). Raises
        ValueError when the entry has no numpy dtype, an unknown dimension, or more elements
        (or strides reaching further) than the data holds.
        """
        constant = self.constants[index]
        resource = self.resources[constant.mrt_index]
        dtype = numpy_dtype(resource.format)
        shape = tuple(resource.shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"constant {index} has an unknown dimension in shape {list(shape)}")
        strides = tuple(resource.strides) or None
        if strides is not None and len(strides) != len(shape):
            raise ValueError(f"constant {index}: {len(strides)} strides for a rank-{len(shape)} shape")
        if strides is None:
            needed = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        else:
            needed = dtype.itemsize + sum((d - 1) * s for d, s in zip(shape, strides)) if all(shape) else 0
        if needed > constant.data.size or (strides and min(strides) < 0):
            raise ValueError(
                f"constant {index} holds {constant.data.size} bytes, its {dtype} tensor {list(shape)} needs {needed}"
            )
        return np.ndarray(shape, dtype=dtype, buffer=constant.data, strides=strides)


def numpy_dtype(vk_format: int) -> np.dtype:
    """The numpy dtype that holds one element of a tensor of this VkFormat."""
    try:
        return by_format(vk_format).dtype
    except KeyError:
        raise ValueError(f"VkFormat {vk_format} has no numpy dtype in pyvgf") from None
