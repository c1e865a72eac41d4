"""What each TOSA.001000.1 operand is: a tensor value, a shape, or a compile-time attribute.

Operand names and order come from the grammar; the kinds follow the TOSA 1.0 specification
(attributes are SPIR-V constants; tensors are graph values or constant tensors; shapes are
constant rank-1 int32 tensors). Enumerations are named as the specification names them.
"""

from __future__ import annotations

import enum

from ._grammar import TOSA_OPERANDS


class Kind(enum.Enum):
    TENSOR = "tensor"
    """A tensor: a graph value, or a constant (numpy array)."""
    SHAPE = "shape"
    """A shape_t operand: a constant list of ints (rank-1 int32 tensor in SPIR-V)."""
    ENUM = "enum"
    """A scalar enumeration attribute (u32 in SPIR-V)."""
    BOOL = "bool"
    INT = "int"
    """A scalar i32 attribute (axis)."""
    VALUE = "value"
    """A scalar of the input's element type (clamp bounds)."""
    ARRAY = "array"
    """A rank-1 int32 attribute tensor (pad, stride, kernel, perms, ...)."""


ENUMERATIONS: dict[str, dict[str, int]] = {
    "acc_type": {"INT32": 1, "FP16": 2, "FP32": 3, "INT48": 4},
    "nan_mode": {"PROPAGATE": 1, "IGNORE": 2},
    "rounding_mode": {"SINGLE_ROUND": 1, "INEXACT_ROUND": 2, "DOUBLE_ROUND": 3},
    "mode": {"NEAREST_NEIGHBOR": 1, "BILINEAR": 2},
}
"""Spec names of the enumeration attributes and their values in TOSA.001000.1 modules."""

_KINDS_BY_NAME: dict[str, Kind] = {
    **{name: Kind.ENUM for name in ENUMERATIONS},
    **{
        name: Kind.BOOL
        for name in (
            "local_bound",
            "scale32",
            "per_channel",
            "input_unsigned",
            "output_unsigned",
            "round",
            "inverse",
        )
    },
    "axis": Kind.INT,
    "min_val": Kind.VALUE,
    "max_val": Kind.VALUE,
    **{name: Kind.ARRAY for name in ("pad", "stride", "dilation", "kernel", "out_pad", "perms")},
    **{name: Kind.SHAPE for name in ("padding", "start", "size", "multiples", "scale", "offset", "border")},
}

_SHAPE_OPERANDS = {("RESHAPE", "shape")}

DEFAULTS: dict[str, object] = {"nan_mode": "PROPAGATE", "local_bound": False}
"""Attributes that may be left out, with the value TOSA gives them."""

VARIADIC = {"CONCAT": "input1"}
"""Ops whose (last) tensor operand takes a list of tensors."""

MULTI_RESULT = {"FFT2D": 2, "RFFT2D": 2}
"""Ops with several results (output_real, output_imag), and how many."""


def operand_kind(op: str, name: str) -> Kind:
    """The kind of operand `name` of TOSA op `op`."""
    if (op, name) in _SHAPE_OPERANDS:
        return Kind.SHAPE
    return _KINDS_BY_NAME.get(name, Kind.TENSOR)


def signature(op: str) -> tuple[tuple[str, Kind], ...]:
    """(name, kind) of each operand of `op`, in grammar order."""
    return tuple((name, operand_kind(op, name)) for name in TOSA_OPERANDS[op])
