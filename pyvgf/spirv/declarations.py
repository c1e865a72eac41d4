"""A SPIR-V module's declarations: types, constants evaluated into numpy, names, decorations,
interface variables, graph constants, graph entry points and graph bodies.

Types and constants are read in module order, so every reference must point back to an earlier
declaration: a forward or cyclic reference is an error, never a recursion. What pyvgf does not
model (vectors, specialization constants, ...) becomes `Opaque` and is an error only if a graph
uses it; what is malformed raises SpirvError at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, cast

import numpy as np

from ..elements import by_spirv
from ..errors import SpirvError
from ..limits import MAX_RANK, materialized_budget, memory_budget
from ..types import TensorType
from .binary import Instruction, Module

#: The most elements a tensor type may declare (beyond it the module is taken as malformed);
#: its bytes must also fit pyvgf.limits.memory_budget().
MAX_ELEMENTS = 1 << 40

BINDING, DESCRIPTOR_SET = 33, 34


@dataclass(frozen=True)
class Array:
    element: object
    length: int


@dataclass(frozen=True)
class Pointer:
    storage: int
    pointee: object


@dataclass(frozen=True)
class GraphType:
    inputs: tuple[object, ...]
    outputs: tuple[object, ...]


@dataclass(frozen=True)
class Struct:
    members: tuple[object, ...]


@dataclass(frozen=True)
class Opaque:
    """A type or constant pyvgf does not model; an error only where a graph uses it."""

    what: str


Type = np.dtype | Array | Pointer | GraphType | Struct | TensorType | Opaque

UNSHAPED_TENSOR = Opaque("tensor type without a shape")
"""An OpTypeTensorARM without a shape (a compute shader's tensor variables may have one)."""


class Bits(NamedTuple):
    """A scalar constant kept as its bits until used alone (most only feed composites)."""

    dtype: np.dtype
    bits: int

    def array(self) -> np.ndarray:
        value = np.array(self.bits, dtype=f"<u{self.dtype.itemsize}").view(self.dtype)
        value.flags.writeable = False
        return value


@dataclass(frozen=True)
class GraphConstantDecl:
    """An OpGraphConstantARM: the data bound by `constant_id`, of tensor type `type`."""

    id: int
    constant_id: int
    type: TensorType


def same(a: object, b: object) -> bool:
    """Type equality that never lets numpy coerce a TensorType (it has .dtype) into a dtype."""
    return type(a) is type(b) and a == b


def is_tensor(t: object) -> bool:
    """Whether `t` is an OpTypeTensorARM, with a shape or without."""
    return isinstance(t, TensorType) or same(t, UNSHAPED_TENSOR)


def describe(t: object) -> str:
    if isinstance(t, np.dtype):
        return f"scalar {t}"
    if isinstance(t, Opaque):
        return t.what
    if isinstance(t, TensorType):
        return str(t)
    return type(t).__name__.lower()


class Declarations:
    """Everything a graph refers to outside its body, read in one pass over the module."""

    def __init__(self, module: Module, module_bytes: int = 0):
        self.module = module
        self.budget = memory_budget()
        self.materialize_left = materialized_budget(module_bytes)
        """Bytes of constant data composites may still make concrete (nulls and replicated
        composites stay lazy broadcasts)."""
        self._constant_ids: dict[int, GraphConstantDecl] = {}
        self.arrays: set[int] = set()
        """Constants of OpTypeArray type: tensor shapes, never an operator's operand."""
        self.types: dict[int, Type] = {}
        self.constants: dict[int, np.ndarray | Bits | Opaque] = {}
        self.graph_constants: dict[int, GraphConstantDecl] = {}
        self.variables: dict[int, tuple[Type, Instruction]] = {}
        self.names: dict[int, str] = {}
        self.strings: dict[int, str] = {}
        """OpString id -> text (the file names OpLine refers to)."""
        self.decorations: dict[int, dict[int, int]] = {}
        self.entry_points: list[Instruction] = []
        self.graphs: dict[int, tuple[Instruction, list[Instruction]]] = {}
        body: list[Instruction] | None = None
        for inst in module.instructions:
            if body is not None:
                if inst.opname == "OpGraphEndARM":
                    body = None
                else:
                    body.append(inst)
            elif inst.opname in _HANDLERS:
                _HANDLERS[inst.opname](self, inst)
            elif inst.opname == "OpGraphARM":
                body = []
                self.graphs[inst.result] = (inst, body)
            elif inst.result and inst.opname.startswith("OpType"):
                self.types[inst.result] = Opaque(inst.opname)
            elif inst.result and (inst.opname.startswith("OpSpecConstant")
                                  or inst.opname in ("OpUndef", "OpConstantSampler")):
                self.constants[inst.result] = Opaque(inst.opname)
        for head, rest in self.graphs.values():
            if rest is body:
                raise SpirvError(f"OpGraphARM %{head.result} has no OpGraphEndARM", word=head.offset)

    # -- lookups ---------------------------------------------------------------------------------

    def type(self, tid: int, inst: Instruction, what: str) -> Type:
        """The type `tid`, declared before `inst` (whose operand `what` names it)."""
        t = self.types.get(tid)
        if t is None:
            raise SpirvError(f"{inst.opname}: {what} %{tid} is not a type defined before it", word=inst.offset)
        return t

    def tensor(self, tid: int, inst: Instruction, what: str) -> TensorType:
        t = self.type(tid, inst, what)
        if not isinstance(t, TensorType):
            raise SpirvError(f"{inst.opname}: {what} %{tid} is not a shaped tensor type ({describe(t)})",
                             word=inst.offset)
        return t

    def lookup(self, cid: int) -> np.ndarray | Opaque | None:
        """Constant `cid` evaluated (read-only), Opaque if pyvgf does not model it, or None."""
        c = self.constants.get(cid)
        return c.array() if isinstance(c, Bits) else c

    def constant(self, cid: int, inst: Instruction, what: str) -> np.ndarray:
        """The evaluated constant `cid`, declared before `inst`."""
        c = self.lookup(cid)
        if c is None:
            raise SpirvError(f"{inst.opname}: {what} %{cid} is not a constant defined before it", word=inst.offset)
        if isinstance(c, Opaque):
            raise SpirvError(f"{inst.opname}: {what} %{cid} is an {c.what}, which pyvgf does not evaluate",
                             word=inst.offset)
        return c

    def index(self, cid: int, inst: Instruction, what: str) -> int:
        """The integer scalar constant `cid`."""
        c = self.constant(cid, inst, what)
        if c.ndim != 0 or c.dtype.kind not in "iu":
            raise SpirvError(f"{inst.opname}: {what} %{cid} is not an integer scalar constant", word=inst.offset)
        return int(c)

    def decoration(self, target: int, decoration: int, inst: Instruction, what: str) -> int:
        value = self.decorations.get(target, {}).get(decoration)
        if value is None:
            raise SpirvError(f"{inst.opname}: %{target} has no {what} decoration", word=inst.offset)
        return value

    # -- types -----------------------------------------------------------------------------------

    def _bool(self, inst: Instruction) -> None:
        self.types[inst.result] = np.dtype(np.bool_)

    def _int(self, inst: Instruction) -> None:
        # TOSA integers are signless and read as two's complement, whatever Signedness says.
        width = inst.num(0)
        try:
            self.types[inst.result] = by_spirv("int", width).dtype
        except KeyError:
            self.types[inst.result] = Opaque(f"{width}-bit integer type")

    def _float(self, inst: Instruction) -> None:
        width = inst.num(0)
        encoding = inst.num(1) if len(inst.operands) > 1 else None
        try:
            self.types[inst.result] = by_spirv("float", width, encoding).dtype
        except KeyError:
            what = f" with encoding {encoding}" if encoding is not None else " type"
            self.types[inst.result] = Opaque(f"{width}-bit float{what}")

    def _array(self, inst: Instruction) -> None:
        element = self.type(inst.num(0), inst, "Element Type")
        if isinstance(self.constants.get(inst.num(1)), Opaque):
            self.types[inst.result] = Opaque("array of specialization-constant length")
            return
        length = self.index(inst.num(1), inst, "Length")
        if length < 1:
            raise SpirvError(f"OpTypeArray: length {length} is not positive", word=inst.offset)
        if isinstance(element, np.dtype) and length * element.itemsize > self.budget:
            raise SpirvError(f"OpTypeArray: {length} elements of {element} exceed the memory budget of "
                             f"{self.budget} bytes", word=inst.offset)
        self.types[inst.result] = Array(element, length)

    def _struct(self, inst: Instruction) -> None:
        members = (self.type(inst.num(i), inst, "member") for i in range(len(inst.operands)))
        self.types[inst.result] = Struct(tuple(members))

    def _forward_pointer(self, inst: Instruction) -> None:
        """A pointer type declared ahead of its OpTypePointer, so that a struct may hold it."""
        self.types[inst.num(0)] = Opaque("forward pointer")

    def _pointer(self, inst: Instruction) -> None:
        self.types[inst.result] = Pointer(inst.num(0), self.types.get(inst.num(1), Opaque("forward pointer")))

    def _tensor(self, inst: Instruction) -> None:
        element = self.type(inst.num(0), inst, "Element Type")
        if len(inst.operands) < 3:
            self.types[inst.result] = UNSHAPED_TENSOR
            return
        if not isinstance(element, np.dtype):
            raise SpirvError(f"OpTypeTensorARM: element type is {describe(element)}, not a scalar", word=inst.offset)
        rank = self.index(inst.num(1), inst, "Rank")
        if not 0 <= rank <= MAX_RANK:
            raise SpirvError(f"OpTypeTensorARM: rank {rank} is outside 0..{MAX_RANK}", word=inst.offset)
        shape = self.constant(inst.num(2), inst, "Shape")
        if shape.ndim != 1 or shape.dtype.kind not in "iu" or shape.size != rank:
            raise SpirvError(f"OpTypeTensorARM: Shape %{inst.num(2)} is not {rank} integers", word=inst.offset)
        dims = tuple(int(d) for d in shape)
        if any(d < 1 for d in dims):
            raise SpirvError(f"OpTypeTensorARM: shape {dims} has a dimension below 1", word=inst.offset)
        if math.prod(dims) > MAX_ELEMENTS:
            raise SpirvError(f"OpTypeTensorARM: shape {dims} has more than {MAX_ELEMENTS} elements", word=inst.offset)
        if math.prod(dims) * element.itemsize > self.budget:
            raise SpirvError(f"OpTypeTensorARM: shape {dims} of {element} exceeds the memory budget of "
                             f"{self.budget} bytes (pyvgf.limits)", word=inst.offset)
        self.types[inst.result] = TensorType(element, dims)

    def _graph_type(self, inst: Instruction) -> None:
        count = inst.num(0)
        types = tuple(self.type(inst.num(i), inst, "InOutTypes") for i in range(1, len(inst.operands)))
        if count > len(types):
            raise SpirvError(f"OpTypeGraphARM: {count} inputs but {len(types)} types", word=inst.offset)
        self.types[inst.result] = GraphType(types[:count], types[count:])

    # -- constants -------------------------------------------------------------------------------

    def _set(self, inst: Instruction, value: np.ndarray) -> None:
        if value.base is not None:  # a view: its own copy, so that no other name can change it
            value = value.copy()
        value.flags.writeable = False
        self.constants[inst.result] = value

    def _scalar(self, inst: Instruction) -> None:
        dtype = self.type(inst.result_type, inst, "Result Type")
        if not isinstance(dtype, np.dtype) or dtype.kind == "b":
            self.constants[inst.result] = Opaque(f"OpConstant of {describe(dtype)}")
            return
        literal = inst.operands[0]
        width = dtype.itemsize * 8
        words = 2 if width == 64 else 1
        if literal.words != words:
            raise SpirvError(f"OpConstant: a {width}-bit value takes {words} words, found {literal.words}",
                             word=inst.offset)
        self.constants[inst.result] = Bits(dtype, inst.num(0) & ((1 << width) - 1))

    def _boolean(self, inst: Instruction) -> None:
        dtype = self.type(inst.result_type, inst, "Result Type")
        if not same(dtype, np.dtype(np.bool_)):
            raise SpirvError(f"{inst.opname}: result type is {describe(dtype)}, not bool", word=inst.offset)
        self.constants[inst.result] = Bits(dtype, int(inst.opname == "OpConstantTrue"))

    def _aggregate(self, inst: Instruction) -> tuple[np.dtype, tuple[int, ...]] | None:
        """Element dtype and shape of a tensor or scalar-array result type; None if unmodelled."""
        t = self.type(inst.result_type, inst, "Result Type")
        if isinstance(t, TensorType):
            return t.dtype, t.shape
        if isinstance(t, Array) and isinstance(t.element, np.dtype):
            self.arrays.add(inst.result)
            return t.element, (t.length,)
        if isinstance(t, np.dtype) and inst.opname == "OpConstantNull":
            return t, ()
        self.constants[inst.result] = Opaque(f"{inst.opname} of {describe(t)}")
        return None

    def _materialize(self, inst: Instruction, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        """Charge the bytes of a constant about to be made concrete to the module's budget."""
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > self.materialize_left:
            raise SpirvError(f"{inst.opname}: {dtype}{list(shape)} would make more constant data concrete than "
                             f"a module of this size may ({self.materialize_left} bytes left)", word=inst.offset)
        self.materialize_left -= nbytes

    def _null(self, inst: Instruction) -> None:
        layout = self._aggregate(inst)
        if layout is not None:
            dtype, shape = layout
            if shape:  # a lazy, read-only broadcast of one zero: no memory whatever the shape
                zero = np.zeros((), dtype)
                zero.flags.writeable = False
                self.constants[inst.result] = np.broadcast_to(zero, shape)
            else:
                self.constants[inst.result] = Bits(dtype, 0)

    def _composite(self, inst: Instruction) -> None:
        layout = self._aggregate(inst)
        if layout is None:
            return
        dtype, shape = layout
        ids = cast("list[int]", [op.value for op in inst.operands])
        if not shape or len(ids) != shape[0]:
            raise SpirvError(f"OpConstantComposite: {len(ids)} constituents for shape {shape}", word=inst.offset)
        if any(isinstance(self.constants.get(cid), Opaque) for cid in ids):
            # An OpUndef or specialization constant among them (valid SPIR-V): a constant whose
            # value pyvgf does not model, refused only where an operand needs its value.
            self.constants[inst.result] = Opaque("composite of undefined or specialization constants")
            return
        self._materialize(inst, dtype, shape)
        if len(shape) > 1:
            self._set(inst, np.stack([self._part(inst, cid, dtype, shape[1:]) for cid in ids]))
            return
        raw = f"<u{dtype.itemsize}"
        bits = []  # scalar constituents: one array made from their bits
        for cid in ids:
            part = self.constants.get(cid)
            if isinstance(part, Bits) and part.dtype == dtype:
                bits.append(part.bits)
            else:
                bits.append(int(self._part(inst, cid, dtype, ()).view(raw)))
        self._set(inst, np.array(bits, dtype=raw).view(dtype))

    def _replicate(self, inst: Instruction) -> None:
        layout = self._aggregate(inst)
        if layout is None:
            return
        dtype, shape = layout
        value = self.constant(inst.num(0), inst, "Value")
        if value.ndim == 0:  # a scalar fills the whole tensor
            if value.dtype != dtype:
                raise SpirvError(f"{inst.opname}: value %{inst.num(0)} is {value.dtype}, not {dtype}", word=inst.offset)
        elif not shape:
            raise SpirvError(f"{inst.opname}: result type is a scalar", word=inst.offset)
        else:  # one constituent, repeated
            self._part(inst, inst.num(0), dtype, shape[1:])
        self.constants[inst.result] = np.broadcast_to(value, shape)  # lazy and read-only

    def _part(self, inst: Instruction, cid: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        part = self.lookup(cid)
        if part is None:
            raise SpirvError(f"{inst.opname}: constituent %{cid} is not a constant defined before it", word=inst.offset)
        if isinstance(part, Opaque) or part.dtype != dtype or part.shape != shape:
            got = part.what if isinstance(part, Opaque) else f"{part.dtype}{list(part.shape)}"
            raise SpirvError(f"{inst.opname}: constituent %{cid} is {got}, expected {dtype}{list(shape)}",
                             word=inst.offset)
        return part

    def _graph_constant(self, inst: Instruction) -> None:
        t = self.tensor(inst.result_type, inst, "Result Type")
        cid = inst.num(0)
        other = self._constant_ids.get(cid)
        if other is not None and other.type != t:
            raise SpirvError(f"OpGraphConstantARM: graph constant {cid} declared as {other.type} and {t}",
                             word=inst.offset)
        self.graph_constants[inst.result] = self._constant_ids[cid] = GraphConstantDecl(inst.result, cid, t)

    # -- debug, annotations, globals -------------------------------------------------------------

    def _name(self, inst: Instruction) -> None:
        self.names[inst.num(0)] = inst.text(1)

    def _string(self, inst: Instruction) -> None:
        self.strings[inst.result] = inst.text(0)

    def _decorate(self, inst: Instruction) -> None:
        if inst.num(1) in (BINDING, DESCRIPTOR_SET):
            self.decorations.setdefault(inst.num(0), {})[inst.num(1)] = inst.num(2)

    def _variable(self, inst: Instruction) -> None:
        self.variables[inst.result] = (self.type(inst.result_type, inst, "Result Type"), inst)

    def _entry_point(self, inst: Instruction) -> None:
        self.entry_points.append(inst)


_HANDLERS: dict[str, Callable[[Declarations, Instruction], None]] = {
    "OpTypeBool": Declarations._bool,
    "OpTypeInt": Declarations._int,
    "OpTypeFloat": Declarations._float,
    "OpTypeArray": Declarations._array,
    "OpTypeStruct": Declarations._struct,
    "OpTypeForwardPointer": Declarations._forward_pointer,
    "OpTypePointer": Declarations._pointer,
    "OpTypeTensorARM": Declarations._tensor,
    "OpTypeGraphARM": Declarations._graph_type,
    "OpConstant": Declarations._scalar,
    "OpConstantTrue": Declarations._boolean,
    "OpConstantFalse": Declarations._boolean,
    "OpConstantNull": Declarations._null,
    "OpConstantComposite": Declarations._composite,
    "OpConstantCompositeReplicateEXT": Declarations._replicate,
    "OpGraphConstantARM": Declarations._graph_constant,
    "OpName": Declarations._name,
    "OpString": Declarations._string,
    "OpDecorate": Declarations._decorate,
    "OpVariable": Declarations._variable,
    "OpGraphEntryPointARM": Declarations._entry_point,
}
