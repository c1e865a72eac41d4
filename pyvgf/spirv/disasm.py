"""A readable SPIR-V disassembly: ids, OpName names, enum names, TOSA op names and operand names."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..elements import by_spirv
from . import tables
from .binary import Instruction, Operand, decode

_INDENT = 14


def disassemble(words: bytes | bytearray | memoryview | np.ndarray | Sequence[int]) -> str:
    """The module as text, one instruction a line, like spirv-dis with TOSA operand names."""
    module = decode(words)
    names = {i.num(0): i.text(1) for i in module.instructions if i.opname == "OpName"}
    numbers: dict[int, np.dtype] = {}
    lines = [
        f"; SPIR-V {module.version[0]}.{module.version[1]}",
        f"; Generator: {module.generator:#010x}",
        f"; Bound: {module.bound}",
        f"; Schema: {module.schema}",
    ]
    for inst in module.instructions:
        _note_type(inst, numbers)
        text = _instruction(inst, module.ext_inst_sets, numbers)
        if inst.result:
            text = f"%{inst.result} = ".rjust(_INDENT) + text
            if inst.result in names:
                text += f"  ; {_quote(names[inst.result])}"
        else:
            text = " " * _INDENT + text
        lines.append(text)
    return "\n".join(lines) + "\n"


def tosa_op_counts(words: bytes | bytearray | memoryview | np.ndarray | Sequence[int]) -> Counter[str]:
    """How many times the module applies each TOSA operator (its OpExtInst into TOSA.001000.1)."""
    module = decode(words)
    tosa = {i for i, name in module.ext_inst_sets.items() if name == tables.TOSA_SET}
    return Counter(
        tables.TOSA_INSTRUCTIONS.get(inst.num(1), (f"TOSA op {inst.num(1)}",))[0]
        for inst in module.instructions
        if inst.opname == "OpExtInst" and inst.num(0) in tosa
    )


def _note_type(inst: Instruction, numbers: dict[int, np.dtype]) -> None:
    """Remember the numeric types, to print OpConstant values as numbers of their type."""
    if inst.opname == "OpTypeInt":
        width, signed = inst.num(0), inst.num(1)
        if width in (8, 16, 32, 64):
            numbers[inst.result] = np.dtype(f"{'i' if signed else 'u'}{width // 8}")
    elif inst.opname == "OpTypeFloat":
        width = inst.num(0)
        if len(inst.operands) > 1:
            try:
                numbers[inst.result] = by_spirv("float", width, inst.num(1)).dtype
            except KeyError:
                pass
        elif width in (16, 32, 64):
            numbers[inst.result] = np.dtype(f"f{width // 8}")


def _instruction(inst: Instruction, sets: dict[int, str], numbers: dict[int, np.dtype]) -> str:
    parts = [inst.opname]
    if inst.result_type:
        parts.append(f"%{inst.result_type}")
    if inst.opname == "OpExtInst":
        set_name = sets.get(inst.num(0))
        tosa = set_name == tables.TOSA_SET
        parts += [f"%{inst.num(0)}", tables.TOSA_INSTRUCTIONS[inst.num(1)][0] if tosa else str(inst.num(1))]
        parts += [f"{o.name}=%{o.value}" if tosa else f"%{o.value}" for o in inst.operands[2:]]
        return " ".join(parts)
    for o in inst.operands:
        if o.kind == "LiteralContextDependentNumber":
            parts.append(_number(o, numbers.get(inst.result_type)))
        else:
            parts.append(_operand(o))
    return " ".join(parts)


def _operand(o: Operand) -> str:
    category = tables.KIND_CATEGORY.get(o.kind)
    if isinstance(o.value, str):
        return _quote(o.value)
    if category == "Id":
        return f"%{o.value}"
    if o.kind == "LiteralSpecConstantOpInteger":
        return tables.INSTRUCTIONS[o.value][0]
    if category == "ValueEnum":
        return tables.ENUMS[o.kind][o.value][0]
    if category == "BitEnum":
        values = tables.ENUMS[o.kind]
        if o.value == 0:
            return values[0][0] if 0 in values else "0"
        return "|".join(values[1 << b][0] for b in range(32) if o.value >> b & 1)
    return str(o.value)


def _number(o: Operand, dtype: np.dtype | None) -> str:
    if dtype is None or isinstance(o.value, str):
        return str(o.value)
    bits = o.value & ((1 << (dtype.itemsize * 8)) - 1)
    value = np.array(bits, dtype=f"<u{dtype.itemsize}").view(dtype)
    return str(value.item() if dtype.kind in "iu" else float(value))


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
