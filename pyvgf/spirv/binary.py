"""Decode a SPIR-V binary into instructions, with operand layouts from the generated grammar tables.

Every check that needs no meaning is done here: the header (magic, version, id bound), word
counts, literal strings, enum values, the ids' range and single definition. Anything malformed
raises SpirvError naming the word offset of the instruction (or header word) at fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

import numpy as np

from ..errors import SpirvError
from . import tables

#: The largest id bound a module may declare (SPIR-V "Universal Limits": 4 194 303 ids).
MAX_BOUND = 0x3FFFFF + 1
HEADER_WORDS = 5
_SWAPPED_MAGIC = int.from_bytes(tables.MAGIC.to_bytes(4, "little"), "big")
_OP_EXT_INST_IMPORT = 11
_OP_TYPE_INT = 21
_OP_TYPE_FLOAT = 22
_NOP = 1 << 16  # OpNop: one word, opcode 0


class Operand(NamedTuple):
    """One decoded operand: its grammar kind and name, and its value.

    `value` is an id or an integer literal (int), a literal string (str), or an enum value
    (int; its parameters follow as operands of their own). A context-dependent number
    (OpConstant, OpSpecConstant) is the integer its words spell, low word first; `words` tells
    how many words it took.
    """

    kind: str
    name: str
    value: int | str
    words: int = 1


class Instruction(NamedTuple):
    """One SPIR-V instruction: its word offset, opcode, result type and result ids, operands.

    `result_type` and `result` are 0 when the instruction has none (0 is never a valid id).
    """

    offset: int
    opcode: int
    opname: str
    result_type: int
    result: int
    operands: tuple[Operand, ...]

    def num(self, index: int) -> int:
        """Operand `index` as an integer: an id, a literal number or an enum value."""
        return cast(int, self.operands[index].value)

    def text(self, index: int) -> str:
        """Operand `index` as a literal string."""
        return cast(str, self.operands[index].value)


@dataclass(frozen=True)
class Module:
    """A decoded SPIR-V module: header fields and instructions in order."""

    version: tuple[int, int]
    generator: int
    bound: int
    schema: int
    instructions: tuple[Instruction, ...]
    ext_inst_sets: dict[int, str]


def _fixed_layouts() -> dict[int, tuple[tuple[str, str], ...]]:
    """Opcode -> (kind, name) of each operand, for instructions whose every operand is one
    required id, literal word or string (what `_Decoder.fixed` decodes)."""
    simple = {"IdRef", "IdResultType", "IdResult", "LiteralInteger", "LiteralString"}
    out = {}
    for opcode, (_, layout) in tables.INSTRUCTIONS.items():
        if all(q == "" and kind in simple for kind, q, _ in layout):
            out[opcode] = tuple((kind, name or kind) for kind, _, name in layout)
    return out


_FIXED = _fixed_layouts()


def as_words(data: bytes | bytearray | memoryview | np.ndarray | Sequence[int]) -> np.ndarray:
    """The module's words as a native uint32 array (the caller's data is never modified)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if len(raw) % 4:
            raise SpirvError(f"a SPIR-V binary is whole 32-bit words, got {len(raw)} bytes", word=len(raw) // 4)
        words = np.frombuffer(raw, dtype="<u4").astype(np.uint32)
    elif isinstance(data, np.ndarray):
        if data.ndim != 1 or data.dtype.kind not in "ui":
            raise SpirvError(f"SPIR-V words must be a 1-D integer array, got {data.dtype} {data.shape}")
        if data.dtype.itemsize != 4:
            raise SpirvError(f"SPIR-V words must be 32-bit, got {data.dtype}")
        words = data.astype(np.uint32, copy=False)
    else:
        try:
            words = np.array(list(data), dtype=np.int64)
        except (TypeError, ValueError, OverflowError) as exc:
            raise SpirvError(f"SPIR-V words must be integers: {exc}") from None
        if words.ndim != 1 or (words.size and (words.min() < 0 or words.max() > 0xFFFFFFFF)):
            raise SpirvError("SPIR-V words must be a flat sequence of 32-bit unsigned integers")
        words = words.astype(np.uint32)
    if words.size and int(words[0]) == _SWAPPED_MAGIC:
        words = words.byteswap()
    return words


def decode(data: bytes | bytearray | memoryview | np.ndarray | Sequence[int]) -> Module:
    """Decode a whole SPIR-V module (bytes in either byte order, or 32-bit words)."""
    words = as_words(data)
    return _Decoder(words.tolist(), words.astype("<u4").tobytes()).module()


_MEMBER_OPS = ("OpMemberDecorate", "OpMemberName", "OpMemberDecorateString")


def _check_members(instructions: list[Instruction]) -> None:
    """Each member an OpMemberDecorate or OpMemberName names is a member of an OpTypeStruct
    (drivers index the struct's members with it: lavapipe aborted on member 4278190080 of a
    one-member struct, fuzz case load-vulkan-0-46061)."""
    members = {i.result: len(i.operands) for i in instructions if i.opname == "OpTypeStruct"}
    for inst in instructions:
        if inst.opname in _MEMBER_OPS:
            struct, member = inst.operands[0].value, inst.operands[1].value
            if struct not in members:
                raise SpirvError(f"{inst.opname}: %{struct} is not an OpTypeStruct", word=inst.offset)
            if not 0 <= member < members[struct]:
                raise SpirvError(f"{inst.opname}: member {member} of %{struct}, a struct of {members[struct]} "
                                 "members", word=inst.offset)


class _Decoder:
    def __init__(self, words: list[int], raw: bytes):
        self.words = words
        self.raw = raw  # the same words as little-endian bytes, for literal strings
        self.defined: set[int] = set()
        self.ext_sets: dict[int, str] = {}
        self.widths: dict[int, int] = {}  # scalar numeric type id -> bit width
        self.types: dict[int, int] = {}  # result id -> its result type id

    def module(self) -> Module:
        w = self.words
        if len(w) < HEADER_WORDS:
            raise SpirvError(f"truncated header: {len(w)} of {HEADER_WORDS} words", word=len(w))
        if w[0] != tables.MAGIC:
            raise SpirvError(f"bad magic number {w[0]:#010x}, expected {tables.MAGIC:#010x}", word=0)
        version = w[1]
        major, minor = (version >> 16) & 0xFF, (version >> 8) & 0xFF
        if version & 0xFF0000FF or major != 1 or minor > tables.GRAMMAR_VERSION[1]:
            raise SpirvError(f"unsupported SPIR-V version word {version:#010x}", word=1)
        self.bound = w[3]
        if not 0 < self.bound <= MAX_BOUND:
            raise SpirvError(f"id bound {self.bound} is outside 1..{MAX_BOUND}", word=3)
        out = []
        pos = HEADER_WORDS
        end = len(w)
        while pos < end:
            first = w[pos]
            if first == _NOP:  # no meaning: dropped (SPIR-V: it "can safely be removed")
                pos += 1
                continue
            count, opcode = first >> 16, first & 0xFFFF
            if count == 0:
                raise SpirvError(f"instruction word count 0 (opcode {opcode})", word=pos)
            if pos + count > end:
                raise SpirvError(
                    f"instruction (opcode {opcode}) declares {count} words, only {end - pos} remain",
                    word=pos,
                )
            out.append(self.instruction(pos, opcode, pos + count))
            pos += count
        _check_members(out)
        return Module((major, minor), w[2], self.bound, w[4], tuple(out), dict(self.ext_sets))

    # -- one instruction ------------------------------------------------------------------------

    def instruction(self, start: int, opcode: int, end: int) -> Instruction:
        entry = tables.INSTRUCTIONS.get(opcode)
        if entry is None:
            raise SpirvError(f"unknown opcode {opcode}", word=start)
        opname, layout = entry
        self.at, self.start, self.end, self.opname = start + 1, start, end, opname
        self.result_type = 0
        self.result = 0
        operands: list[Operand] = []
        fast = _FIXED.get(opcode)
        if fast is not None:
            self.fixed(fast, operands)
        else:
            self.layout(layout, operands)
        if self.at != end:
            raise SpirvError(f"{opname} has {end - self.at} words after its last operand", word=start)
        result = Instruction(start, opcode, opname, self.result_type, self.result, tuple(operands))
        if self.result:
            if self.result_type:
                self.types[self.result] = self.result_type
            if opcode in (_OP_TYPE_INT, _OP_TYPE_FLOAT):
                self.widths[self.result] = result.num(0)
            elif opcode == _OP_EXT_INST_IMPORT:
                self.ext_sets[self.result] = result.text(0)
        return result

    def fixed(self, layout: tuple[tuple[str, str], ...], out: list[Operand]) -> None:
        """`layout` for instructions whose operands are each one id, one literal word or one
        string (most of a module): the same checks as `operand`, in one loop."""
        words, bound, end = self.words, self.bound, self.end
        at = self.at
        for kind, what in layout:
            if at >= end:
                self.at = at
                raise self.fail(f"instruction ends before operand {what}")
            value = words[at]
            if kind == "LiteralString":
                self.at = at
                out.append(Operand(kind, what, self.string(what)))
                at = self.at
                continue
            at += 1
            if kind == "LiteralInteger":
                out.append(Operand(kind, what, value))
                continue
            if not 0 < value < bound:
                raise self.fail(f"operand {what} id {value} is outside 1..{bound - 1}")
            if kind == "IdRef":
                out.append(Operand(kind, what, value))
            elif kind == "IdResultType":
                self.result_type = value
            else:  # IdResult
                if value in self.defined:
                    raise self.fail(f"id {value} is defined twice")
                self.defined.add(value)
                self.result = value
        self.at = at

    def fail(self, message: str) -> SpirvError:
        return SpirvError(f"{self.opname}: {message}", word=self.start)

    def layout(self, layout: tuple[tuple[str, str, str], ...], out: list[Operand]) -> None:
        for kind, quantifier, name in layout:
            if quantifier == "":
                self.operand(kind, name, out)
            elif quantifier == "?":
                if self.at < self.end:
                    self.operand(kind, name, out)
            else:
                while self.at < self.end:
                    self.operand(kind, name, out)

    def word(self, what: str) -> int:
        if self.at >= self.end:
            raise self.fail(f"instruction ends before operand {what}")
        value = self.words[self.at]
        self.at += 1
        return value

    def ref(self, what: str) -> int:
        if self.at >= self.end:
            raise self.fail(f"instruction ends before operand {what}")
        value = self.words[self.at]
        self.at += 1
        if not 0 < value < self.bound:
            raise self.fail(f"operand {what} id {value} is outside 1..{self.bound - 1}")
        return value

    def operand(self, kind: str, name: str, out: list[Operand]) -> None:
        if kind == "IdRef":
            out.append(Operand(kind, name, self.ref(name or kind)))
        elif kind == "IdResultType":
            self.result_type = self.ref(name or kind)
        elif kind == "IdResult":
            rid = self.ref(name or kind)
            if rid in self.defined:
                raise self.fail(f"id {rid} is defined twice")
            self.defined.add(rid)
            self.result = rid
        elif kind in ("IdScope", "IdMemorySemantics"):
            out.append(Operand(kind, name, self.ref(name or kind)))
        elif kind == "LiteralString":
            out.append(Operand(kind, name, self.string(name or kind)))
        elif kind in ("LiteralInteger", "LiteralFloat"):
            out.append(Operand(kind, name, self.word(name or kind)))
        elif kind == "LiteralContextDependentNumber":
            n = self.end - self.at
            if n not in (1, 2):
                raise self.fail(f"operand {name or kind} takes 1 or 2 words, found {n}")
            value = self.word(name) | (self.word(name) << 32 if n == 2 else 0)
            out.append(Operand(kind, name, value, n))
        elif kind == "LiteralExtInstInteger":
            self.ext_inst(out)
        elif kind == "LiteralSpecConstantOpInteger":
            self.spec_constant_op(name, out)
        elif kind in tables.COMPOSITE_BASES:
            self.pair(kind, name, out)
        elif kind in tables.ENUMS:
            self.enum(kind, name, out)
        else:
            raise self.fail(f"operand kind {kind} is not supported")

    def string(self, what: str) -> str:
        nul = self.raw.find(0, 4 * self.at, 4 * self.end)
        if nul < 0:
            raise self.fail(f"literal string {what} has no terminating NUL")
        raw = self.raw[4 * self.at : nul]
        self.at = nul // 4 + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"literal string {what} is not UTF-8") from None

    def enum(self, kind: str, name: str, out: list[Operand]) -> None:
        values = tables.ENUMS[kind]
        value = self.word(name or kind)
        out.append(Operand(kind, name, value))
        if tables.KIND_CATEGORY[kind] == "ValueEnum":
            if value not in values:
                raise self.fail(f"{value} is not a {kind} value")
            self.layout(values[value][1], out)
            return
        rest = value
        bit = 1
        while rest:
            if rest & bit:
                if bit not in values:
                    raise self.fail(f"bit {bit:#x} is not a {kind} flag")
                self.layout(values[bit][1], out)
                rest &= ~bit
            bit <<= 1

    def pair(self, kind: str, name: str, out: list[Operand]) -> None:
        for base in tables.COMPOSITE_BASES[kind]:
            if base == "IdRef":
                out.append(Operand(base, name, self.ref(name or kind)))
            elif kind == "PairLiteralIntegerIdRef" and self.opname == "OpSwitch":
                self.switch_literal(name, out)
            else:
                out.append(Operand(base, name, self.word(name or kind)))

    def switch_literal(self, name: str, out: list[Operand]) -> None:
        selector = cast(int, out[0].value)
        width = self.widths.get(self.types.get(selector, 0), 32)
        if width > 32:
            out.append(Operand("LiteralInteger", name, self.word(name) | self.word(name) << 32, 2))
        else:
            out.append(Operand("LiteralInteger", name, self.word(name)))

    def ext_inst(self, out: list[Operand]) -> None:
        number = self.word("Instruction")
        out.append(Operand("LiteralExtInstInteger", "Instruction", number))
        set_id = cast(int, out[0].value)
        if self.ext_sets.get(set_id) != tables.TOSA_SET:
            while self.at < self.end:
                out.append(Operand("IdRef", "Operand", self.ref("Operand")))
            return
        entry = tables.TOSA_INSTRUCTIONS.get(number)
        if entry is None:
            raise self.fail(f"unknown {tables.TOSA_SET} instruction {number}")
        op, layout = entry
        self.opname = f"OpExtInst {tables.TOSA_SET} {op}"
        for name, quantifier in layout:
            if quantifier == "*":
                while self.at < self.end:
                    out.append(Operand("IdRef", name, self.ref(name)))
            elif quantifier == "" or self.at < self.end:
                out.append(Operand("IdRef", name, self.ref(name)))
        if self.at < self.end:
            raise self.fail(f"{self.end - self.at} operand(s) more than the {len(layout)} {op} takes")
        self.opname = "OpExtInst"

    def spec_constant_op(self, name: str, out: list[Operand]) -> None:
        opcode = self.word(name)
        entry = tables.INSTRUCTIONS.get(opcode)
        if entry is None:
            raise self.fail(f"unknown opcode {opcode} in OpSpecConstantOp")
        out.append(Operand("LiteralSpecConstantOpInteger", name, opcode))
        self.layout(tuple(op for op in entry[1] if op[0] not in ("IdResultType", "IdResult")), out)


def enum_value(kind: str, name: str) -> int:
    """The value of operand kind `kind`'s enumerant `name` in the SPIR-V grammar (tables.ENUMS)."""
    return next(value for value, (enumerant, _) in tables.ENUMS[kind].items() if enumerant == name)


_GL_COMPUTE = enum_value("ExecutionModel", "GLCompute")
_LOCAL_SIZE = enum_value("ExecutionMode", "LocalSize")


def local_size(module: Module, entry_point: str | None = None) -> tuple[int, int, int] | None:
    """The LocalSize execution mode (x, y, z) of the GLCompute entry point `entry_point` (or the
    module's first), or None where it has none (LocalSizeId, set by constants, is not read)."""
    entry = None
    for inst in module.instructions:
        values = [op.value for op in inst.operands]
        if inst.opname == "OpEntryPoint" and values[0] == _GL_COMPUTE and (
                entry_point is None or (len(values) > 2 and values[2] == entry_point)):
            entry = values[1] if entry is None else entry
        elif inst.opname == "OpExecutionMode" and entry is not None and values[:2] == [entry, _LOCAL_SIZE]:
            return (values[2], values[3], values[4]) if len(values) == 5 else None
    return None
