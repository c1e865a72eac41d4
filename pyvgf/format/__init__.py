"""The VGF container: a declarative construct schema, the object model, read and write."""

from .model import (
    NO_INDEX,
    VGF,
    BindingSlot,
    Category,
    CodeType,
    Constant,
    ConstantBinding,
    DescriptorSetInfo,
    DescriptorType,
    Format,
    Header,
    ModelSequence,
    Module,
    ModuleType,
    PushConstantRange,
    Resource,
    SamplerConfig,
    Segment,
    numpy_dtype,
)
from .read import read
from .validate import validate
from .write import write

__all__ = [
    "NO_INDEX",
    "VGF",
    "BindingSlot",
    "Category",
    "CodeType",
    "Constant",
    "ConstantBinding",
    "DescriptorSetInfo",
    "DescriptorType",
    "Format",
    "Header",
    "ModelSequence",
    "Module",
    "ModuleType",
    "PushConstantRange",
    "Resource",
    "SamplerConfig",
    "Segment",
    "numpy_dtype",
    "read",
    "validate",
    "write",
]
