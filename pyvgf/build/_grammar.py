"""SPIR-V and TOSA.001000.1 numbers by name, for the builder: the inverse of pyvgf.spirv.tables."""

from __future__ import annotations

from ..spirv import tables

OPCODES: dict[str, int] = {name: number for number, (name, _) in tables.INSTRUCTIONS.items()}
"""Core opcodes by name."""
ENUMS: dict[str, dict[str, int]] = {
    kind: {name: value for value, (name, _) in values.items()} for kind, values in tables.ENUMS.items()
}
"""Operand-kind enumerants (Capability, Decoration, StorageClass, FPEncoding, ...) by name."""
TOSA_OPCODES: dict[str, int] = {name: number for number, (name, _) in tables.TOSA_INSTRUCTIONS.items()}
TOSA_OPERANDS: dict[str, tuple[str, ...]] = {
    name: tuple(operand for operand, _ in operands) for name, operands in tables.TOSA_INSTRUCTIONS.values()
}
"""The operand names of each TOSA.001000.1 instruction, in order."""
TOSA_SET = tables.TOSA_SET


def opcode(name: str) -> int:
    return OPCODES[name]


def enum(kind: str, name: str) -> int:
    return ENUMS[kind][name]
