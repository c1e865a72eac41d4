"""The graph IR of a SPIR-V graph module (SPV_ARM_graph, SPV_ARM_tensors, TOSA.001000.1).

`decode_graph(words)` decodes the module, evaluates every SPIR-V constant into numpy, and
returns the `Graph` of one entry point: its interface (inputs and outputs with descriptor set
and binding), the graph constants it uses (OpGraphConstantARM id -> declared type), and its
TOSA op nodes in order, each operand named as the TOSA.001000.1 grammar names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import ml_dtypes
import numpy as np

from ..errors import SpirvError
from ..types import TensorType
from . import tables
from .binary import Instruction, Module, decode

#: The most elements a tensor type may declare (beyond it the module is taken as malformed).
MAX_ELEMENTS = 1 << 40

_BINDING, _DESCRIPTOR_SET = 33, 34
_FP_ENCODINGS = {0: ml_dtypes.bfloat16, 4214: ml_dtypes.float8_e4m3fn, 4215: ml_dtypes.float8_e5m2}


# -- the IR --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphInterface:
    """One graph input or output: its index, descriptor set and binding, and tensor type."""

    index: int
    descriptor_set: int
    binding: int
    type: TensorType


@dataclass(frozen=True)
class Const:
    """An operand known when the module is decoded: a SPIR-V constant, evaluated.

    `value` is a Python bool/int/float for a scalar, a read-only numpy array otherwise.
    """

    id: int
    value: np.ndarray | bool | int | float = field(compare=False)


@dataclass(frozen=True)
class Input:
    """The value of graph input `index`."""

    id: int
    index: int
    type: TensorType


@dataclass(frozen=True)
class GraphConstant:
    """A graph constant (OpGraphConstantARM): data the runtime binds by `constant_id`."""

    id: int
    constant_id: int
    type: TensorType


@dataclass(frozen=True)
class Result:
    """The result of node `node` (its `element`-th result for ops with several)."""

    id: int
    node: int
    type: TensorType
    element: int | None = None


Operand = Union[Const, Input, GraphConstant, Result]


@dataclass(frozen=True)
class Node:
    """One TOSA operator application (an OpExtInst into TOSA.001000.1).

    `operands` maps each grammar operand name to its operand, or to a tuple of operands for
    a variadic one (CONCAT's input1). `result_type` is a tuple for ops with several results.
    """

    id: int
    op: str
    result_type: TensorType | tuple[TensorType, ...]
    operands: dict[str, Operand | tuple[Operand, ...]]
    name: str | None
    word: int

    def __repr__(self) -> str:
        def ref(o: Operand | tuple[Operand, ...]) -> str:
            return "(" + ", ".join(ref(x) for x in o) + ")" if isinstance(o, tuple) else f"%{o.id}"

        args = ", ".join(f"{k}={ref(v)}" for k, v in self.operands.items())
        return f"Node({self.op} %{self.id} -> {self.result_type}: {args})"

    @property
    def label(self) -> str:
        """How errors name the node: `ADD %18 "name" (word 174)`."""
        name = f' "{self.name}"' if self.name else ""
        return f"{self.op} %{self.id}{name} (word {self.word})"


@dataclass(frozen=True)
class Graph:
    """One graph entry point of a SPIR-V module, ready for planning."""

    name: str
    inputs: list[GraphInterface]
    outputs: list[GraphInterface]
    constants: dict[int, TensorType]
    nodes: list[Node]
    results: list[Operand]
    """The value each output is set to, in output order."""


# -- internal types ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Array:
    element: object
    length: int


@dataclass(frozen=True)
class _Pointer:
    storage: int
    pointee: object


@dataclass(frozen=True)
class _GraphType:
    inputs: tuple[object, ...]
    outputs: tuple[object, ...]


@dataclass(frozen=True)
class _Struct:
    members: tuple[object, ...]


@dataclass(frozen=True)
class _Opaque:
    """A type or constant pyvgf does not model (used only outside graphs, or an error if used)."""

    what: str


_Type = Union[np.dtype, _Array, _Pointer, _GraphType, _Struct, TensorType, _Opaque]


class _Module:
    """The module-level facts graphs need: types, constants, names, decorations, graphs."""

    def __init__(self, module: Module):
        self.module = module
        self.types: dict[int, _Type] = {}
        self.constants: dict[int, np.ndarray | _Opaque] = {}
        self.graph_constants: dict[int, GraphConstant] = {}
        self.variables: dict[int, tuple[_Type, Instruction]] = {}
        self.names: dict[int, str] = {}
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
                continue
            handler = _HANDLERS.get(inst.opname)
            if handler is not None:
                handler(self, inst)
            elif inst.opname == "OpGraphARM":
                body = []
                self.graphs[inst.result] = (inst, body)  # type: ignore[index]
            elif inst.opname in _OPAQUE_CONSTANTS and inst.result is not None:
                self.constants[inst.result] = _Opaque(inst.opname)
            elif inst.opname.startswith("OpType") and inst.result is not None:
                self.types[inst.result] = _Opaque(inst.opname)
        for head, rest in self.graphs.values():
            if rest is body:
                raise SpirvError(f"OpGraphARM %{head.result} has no OpGraphEndARM", word=head.offset)

    # -- lookups ---------------------------------------------------------------------------------

    def type(self, tid: int, inst: Instruction, what: str) -> _Type:
        t = self.types.get(tid)
        if t is None:
            raise SpirvError(f"{inst.opname}: {what} %{tid} is not a type defined before it", word=inst.offset)
        return t

    def tensor(self, tid: int, inst: Instruction, what: str) -> TensorType:
        t = self.type(tid, inst, what)
        if not isinstance(t, TensorType):
            raise SpirvError(f"{inst.opname}: {what} %{tid} is not a shaped tensor type ({_describe(t)})", word=inst.offset)
        return t

    def constant(self, cid: int, inst: Instruction, what: str) -> np.ndarray:
        c = self.constants.get(cid)
        if c is None:
            raise SpirvError(f"{inst.opname}: {what} %{cid} is not a constant defined before it", word=inst.offset)
        if isinstance(c, _Opaque):
            raise SpirvError(f"{inst.opname}: {what} %{cid} is an {c.what}, which pyvgf does not evaluate", word=inst.offset)
        return c

    def index(self, cid: int, inst: Instruction, what: str) -> int:
        c = self.constant(cid, inst, what)
        if c.ndim != 0 or c.dtype.kind not in "iu":
            raise SpirvError(f"{inst.opname}: {what} %{cid} is not an integer scalar constant", word=inst.offset)
        return int(c)

    def decoration(self, target: int, decoration: int, inst: Instruction, what: str) -> int:
        value = self.decorations.get(target, {}).get(decoration)
        if value is None:
            raise SpirvError(f"{inst.opname}: {what} %{target} has no {what} decoration", word=inst.offset)
        return value

    # -- types -----------------------------------------------------------------------------------

    def op_type_bool(self, inst: Instruction) -> None:
        self.types[inst.result] = np.dtype(np.bool_)  # type: ignore[index]

    def op_type_int(self, inst: Instruction) -> None:
        width = inst.operands[0].value
        # TOSA integers are signless and read as two's complement whatever Signedness says.
        dtype = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}.get(width)  # type: ignore[call-overload]
        self.types[inst.result] = np.dtype(dtype) if dtype else _Opaque(f"{width}-bit integer type")  # type: ignore[index]

    def op_type_float(self, inst: Instruction) -> None:
        width = inst.operands[0].value
        if len(inst.operands) > 1:
            encoding = inst.operands[1].value
            dtype = _FP_ENCODINGS.get(encoding)  # type: ignore[call-overload]
            bits = 16 if encoding == 0 else 8
            if dtype is None or width != bits:
                self.types[inst.result] = _Opaque(f"{width}-bit float with encoding {encoding}")  # type: ignore[index]
                return
        else:
            dtype = {16: np.float16, 32: np.float32, 64: np.float64}.get(width)  # type: ignore[call-overload]
            if dtype is None:
                self.types[inst.result] = _Opaque(f"{width}-bit float type")  # type: ignore[index]
                return
        self.types[inst.result] = np.dtype(dtype)  # type: ignore[index]

    def op_type_array(self, inst: Instruction) -> None:
        element = self.type(inst.operands[0].value, inst, "Element Type")  # type: ignore[arg-type]
        length = self.index(inst.operands[1].value, inst, "Length")  # type: ignore[arg-type]
        if length < 1:
            raise SpirvError(f"OpTypeArray: length {length} is not positive", word=inst.offset)
        self.types[inst.result] = _Array(element, length)  # type: ignore[index]

    def op_type_struct(self, inst: Instruction) -> None:
        members = tuple(self.type(op.value, inst, "member") for op in inst.operands)  # type: ignore[arg-type]
        self.types[inst.result] = _Struct(members)  # type: ignore[index]

    def op_type_pointer(self, inst: Instruction) -> None:
        pointee = self.types.get(inst.operands[1].value, _Opaque("forward pointer"))  # type: ignore[arg-type]
        self.types[inst.result] = _Pointer(inst.operands[0].value, pointee)  # type: ignore[index, arg-type]

    def op_type_tensor(self, inst: Instruction) -> None:
        ops = inst.operands
        element = self.type(ops[0].value, inst, "Element Type")  # type: ignore[arg-type]
        if len(ops) < 3:
            self.types[inst.result] = _Opaque("tensor type without a shape")  # type: ignore[index]
            return
        if not isinstance(element, np.dtype):
            raise SpirvError(f"OpTypeTensorARM: element type is {_describe(element)}, not a scalar", word=inst.offset)
        rank = self.index(ops[1].value, inst, "Rank")  # type: ignore[arg-type]
        shape = self.constant(ops[2].value, inst, "Shape")  # type: ignore[arg-type]
        if shape.ndim != 1 or shape.dtype.kind not in "iu" or shape.size != rank:
            raise SpirvError(f"OpTypeTensorARM: Shape %{ops[2].value} is not {rank} integers", word=inst.offset)
        dims = tuple(int(d) for d in shape)
        if any(d < 1 for d in dims):
            raise SpirvError(f"OpTypeTensorARM: shape {dims} has a dimension below 1", word=inst.offset)
        count = 1
        for d in dims:
            count *= d
        if count > MAX_ELEMENTS:
            raise SpirvError(f"OpTypeTensorARM: shape {dims} has more than {MAX_ELEMENTS} elements", word=inst.offset)
        self.types[inst.result] = TensorType(element, dims)  # type: ignore[index]

    def op_type_graph(self, inst: Instruction) -> None:
        count = inst.operands[0].value
        types = tuple(self.type(op.value, inst, "InOutTypes") for op in inst.operands[1:])  # type: ignore[arg-type]
        if count > len(types):  # type: ignore[operator]
            raise SpirvError(f"OpTypeGraphARM: {count} inputs but {len(types)} types", word=inst.offset)
        self.types[inst.result] = _GraphType(types[:count], types[count:])  # type: ignore[index, misc]

    # -- constants -------------------------------------------------------------------------------

    def _result_type(self, inst: Instruction) -> _Type:
        return self.type(inst.result_type, inst, "Result Type")  # type: ignore[arg-type]

    def _set(self, inst: Instruction, value: np.ndarray) -> None:
        value.flags.writeable = False
        self.constants[inst.result] = value  # type: ignore[index]

    def op_constant(self, inst: Instruction) -> None:
        dtype = self._result_type(inst)
        if not isinstance(dtype, np.dtype) or dtype.kind == "b":
            self.constants[inst.result] = _Opaque(f"OpConstant of {_describe(dtype)}")  # type: ignore[index]
            return
        literal = inst.operands[0]
        width = dtype.itemsize * 8
        if literal.words != (2 if width == 64 else 1):
            raise SpirvError(f"OpConstant: a {width}-bit value takes {2 if width == 64 else 1} words, found {literal.words}", word=inst.offset)
        bits = literal.value & ((1 << width) - 1)  # type: ignore[operator]
        raw = np.array(bits, dtype=f"<u{dtype.itemsize}")
        self._set(inst, raw.view(dtype))

    def op_constant_bool(self, inst: Instruction) -> None:
        dtype = self._result_type(inst)
        if not _same(dtype, np.dtype(np.bool_)):
            raise SpirvError(f"{inst.opname}: result type is {_describe(dtype)}, not bool", word=inst.offset)
        self._set(inst, np.array(inst.opname == "OpConstantTrue"))

    def _zeros(self, t: _Type, inst: Instruction) -> np.ndarray:
        if isinstance(t, np.dtype):
            return np.zeros((), t)
        if isinstance(t, TensorType):
            return np.broadcast_to(np.zeros((), t.dtype), t.shape)
        if isinstance(t, _Array) and isinstance(t.element, np.dtype):
            return np.broadcast_to(np.zeros((), t.element), (t.length,))
        raise _OpaqueConstant(f"{inst.opname} of {_describe(t)}")

    def op_constant_null(self, inst: Instruction) -> None:
        try:
            self._set(inst, self._zeros(self._result_type(inst), inst))
        except _OpaqueConstant as exc:
            self.constants[inst.result] = _Opaque(str(exc))  # type: ignore[index]

    def op_constant_composite(self, inst: Instruction) -> None:
        t = self._result_type(inst)
        parts = [self.constants.get(op.value) for op in inst.operands]  # type: ignore[arg-type]
        if isinstance(t, TensorType):
            element, shape = t.dtype, t.shape
        elif isinstance(t, _Array) and isinstance(t.element, np.dtype):
            element, shape = t.element, (t.length,)
        else:
            self.constants[inst.result] = _Opaque(f"OpConstantComposite of {_describe(t)}")  # type: ignore[index]
            return
        if len(parts) != shape[0]:
            raise SpirvError(f"OpConstantComposite: {len(parts)} constituents for shape {shape}", word=inst.offset)
        for op, part in zip(inst.operands, parts):
            self._check_part(inst, op.value, part, element, shape[1:])  # type: ignore[arg-type]
        self._set(inst, np.stack(parts))  # type: ignore[arg-type]

    def op_constant_replicate(self, inst: Instruction) -> None:
        t = self._result_type(inst)
        vid = inst.operands[0].value
        value = self.constant(vid, inst, "Value")  # type: ignore[arg-type]
        if isinstance(t, TensorType):
            element, shape = t.dtype, t.shape
        elif isinstance(t, _Array) and isinstance(t.element, np.dtype):
            element, shape = t.element, (t.length,)
        else:
            self.constants[inst.result] = _Opaque(f"OpConstantCompositeReplicateEXT of {_describe(t)}")  # type: ignore[index]
            return
        if value.ndim != 0:  # a scalar fills the tensor; otherwise one constituent is repeated
            self._check_part(inst, vid, value, element, shape[1:])  # type: ignore[arg-type]
        elif value.dtype != element:
            raise SpirvError(f"OpConstantCompositeReplicateEXT: value %{vid} is {value.dtype}, not {element}", word=inst.offset)
        self._set(inst, np.broadcast_to(value, shape))

    def _check_part(self, inst: Instruction, cid: int, part: object, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        if part is None:
            raise SpirvError(f"{inst.opname}: constituent %{cid} is not a constant defined before it", word=inst.offset)
        if isinstance(part, _Opaque) or part.dtype != dtype or part.shape != shape:  # type: ignore[attr-defined]
            got = part.what if isinstance(part, _Opaque) else f"{part.dtype}{list(part.shape)}"  # type: ignore[attr-defined]
            raise SpirvError(f"{inst.opname}: constituent %{cid} is {got}, expected {dtype}{list(shape)}", word=inst.offset)

    def op_graph_constant(self, inst: Instruction) -> None:
        t = self.tensor(inst.result_type, inst, "Result Type")  # type: ignore[arg-type]
        cid = inst.operands[0].value
        for other in self.graph_constants.values():
            if other.constant_id == cid and other.type != t:
                raise SpirvError(f"OpGraphConstantARM: graph constant {cid} declared as {other.type} and {t}", word=inst.offset)
        self.graph_constants[inst.result] = GraphConstant(inst.result, cid, t)  # type: ignore[index, arg-type]

    # -- debug, annotations, globals -------------------------------------------------------------

    def op_name(self, inst: Instruction) -> None:
        self.names[inst.operands[0].value] = inst.operands[1].value  # type: ignore[index, assignment]

    def op_decorate(self, inst: Instruction) -> None:
        ops = inst.operands
        if ops[1].value in (_BINDING, _DESCRIPTOR_SET):
            self.decorations.setdefault(ops[0].value, {})[ops[1].value] = ops[2].value  # type: ignore[arg-type, index]

    def op_variable(self, inst: Instruction) -> None:
        self.variables[inst.result] = (self._result_type(inst), inst)  # type: ignore[index]

    def op_graph_entry_point(self, inst: Instruction) -> None:
        self.entry_points.append(inst)


class _OpaqueConstant(Exception):
    pass


_HANDLERS = {
    "OpTypeBool": _Module.op_type_bool,
    "OpTypeInt": _Module.op_type_int,
    "OpTypeFloat": _Module.op_type_float,
    "OpTypeArray": _Module.op_type_array,
    "OpTypeStruct": _Module.op_type_struct,
    "OpTypePointer": _Module.op_type_pointer,
    "OpTypeTensorARM": _Module.op_type_tensor,
    "OpTypeGraphARM": _Module.op_type_graph,
    "OpConstant": _Module.op_constant,
    "OpConstantTrue": _Module.op_constant_bool,
    "OpConstantFalse": _Module.op_constant_bool,
    "OpConstantNull": _Module.op_constant_null,
    "OpConstantComposite": _Module.op_constant_composite,
    "OpConstantCompositeReplicateEXT": _Module.op_constant_replicate,
    "OpGraphConstantARM": _Module.op_graph_constant,
    "OpName": _Module.op_name,
    "OpDecorate": _Module.op_decorate,
    "OpVariable": _Module.op_variable,
    "OpGraphEntryPointARM": _Module.op_graph_entry_point,
}
_OPAQUE_CONSTANTS = {
    "OpSpecConstant",
    "OpSpecConstantTrue",
    "OpSpecConstantFalse",
    "OpSpecConstantComposite",
    "OpSpecConstantOp",
    "OpSpecConstantCompositeReplicateEXT",
    "OpUndef",
    "OpConstantSampler",
}


def _same(a: object, b: object) -> bool:
    """Type equality that never lets numpy coerce a TensorType (it has .dtype) into a dtype."""
    return type(a) is type(b) and a == b


def _describe(t: object) -> str:
    if isinstance(t, np.dtype):
        return f"scalar {t}"
    if isinstance(t, _Opaque):
        return t.what
    if isinstance(t, TensorType):
        return str(t)
    return type(t).__name__.strip("_").lower()


def _python(value: np.ndarray) -> np.ndarray | bool | int | float:
    """A constant as ops receive it: scalars as Python values, arrays read-only."""
    if value.ndim == 0:
        return value.item() if value.dtype.kind in "biuf" else float(value)
    return value


# -- the graph -----------------------------------------------------------------------------------


def decode_graph(
    words: bytes | bytearray | memoryview | np.ndarray | Sequence[int], entry_point: str | None = None
) -> Graph:
    """Decode a SPIR-V graph module and return the graph of `entry_point` (or its only one)."""
    return _build(_Module(decode(words)), entry_point)


def _build(m: _Module, entry_point: str | None) -> Graph:
    entry = _entry_point(m, entry_point)
    gid = entry.operands[0].value
    if gid not in m.graphs:
        raise SpirvError(f"OpGraphEntryPointARM: %{gid} is not an OpGraphARM", word=entry.offset)
    head, body = m.graphs[gid]  # type: ignore[index]
    gtype = m.type(head.result_type, head, "Result Type")  # type: ignore[arg-type]
    if not isinstance(gtype, _GraphType):
        raise SpirvError(f"OpGraphARM: result type is {_describe(gtype)}, not a graph type", word=head.offset)
    interface = [op.value for op in entry.operands[2:]]
    if len(interface) != len(gtype.inputs) + len(gtype.outputs):
        raise SpirvError(
            f"OpGraphEntryPointARM: {len(interface)} interface variables for a graph of "
            f"{len(gtype.inputs)} inputs and {len(gtype.outputs)} outputs",
            word=entry.offset,
        )
    slots = [_interface(m, entry, i, vid, t) for i, (vid, t) in enumerate(zip(interface, gtype.inputs + gtype.outputs))]  # type: ignore[arg-type]
    inputs = slots[: len(gtype.inputs)]
    outputs = [GraphInterface(i, s.descriptor_set, s.binding, s.type) for i, s in enumerate(slots[len(gtype.inputs) :])]
    return _Body(m, inputs, outputs).build(entry.operands[1].value, body, head)  # type: ignore[arg-type]


def _entry_point(m: _Module, name: str | None) -> Instruction:
    names = [e.operands[1].value for e in m.entry_points]
    if name is None:
        if len(m.entry_points) != 1:
            raise SpirvError(f"the module has {len(names)} graph entry points {names}: name one")
        return m.entry_points[0]
    for entry in m.entry_points:
        if entry.operands[1].value == name:
            return entry
    raise SpirvError(f"no graph entry point {name!r} (the module has {names})")


def _interface(m: _Module, entry: Instruction, index: int, vid: int, t: _Type) -> GraphInterface:
    var = m.variables.get(vid)
    if var is None:
        raise SpirvError(f"OpGraphEntryPointARM: interface %{vid} is not an OpVariable", word=entry.offset)
    ptr, inst = var
    if not isinstance(ptr, _Pointer) or not isinstance(t, TensorType) or not _same(ptr.pointee, t):
        raise SpirvError(
            f"OpVariable %{vid}: type {_describe(ptr)} does not point to the graph's tensor type {_describe(t)}",
            word=inst.offset,
        )
    dset = m.decoration(vid, _DESCRIPTOR_SET, inst, "DescriptorSet")
    binding = m.decoration(vid, _BINDING, inst, "Binding")
    return GraphInterface(index, dset, binding, t)


class _Body:
    def __init__(self, m: _Module, inputs: list[GraphInterface], outputs: list[GraphInterface]):
        self.m = m
        self.inputs = inputs
        self.outputs = outputs
        self.values: dict[int, Operand] = {}
        self.structs: dict[int, Node] = {}
        self.nodes: list[Node] = []
        self.results: list[Operand | None] = [None] * len(outputs)
        self.used_constants: dict[int, TensorType] = {}

    def build(self, name: str, body: list[Instruction], head: Instruction) -> Graph:
        for inst in body:
            handler = self.HANDLERS.get(inst.opname)
            if handler is None:
                raise SpirvError(f"{inst.opname} is not supported in a graph", word=inst.offset)
            handler(self, inst)
        missing = [i for i, r in enumerate(self.results) if r is None]
        if missing:
            raise SpirvError(f"OpGraphARM %{head.result}: outputs {missing} are never set", word=head.offset)
        return Graph(name, self.inputs, self.outputs, self.used_constants, self.nodes, self.results)  # type: ignore[arg-type]

    def operand(self, vid: int, inst: Instruction, what: str) -> Operand:
        value = self.values.get(vid)
        if value is not None:
            return value
        gc = self.m.graph_constants.get(vid)
        if gc is not None:
            self.used_constants[gc.constant_id] = gc.type
            return gc
        c = self.m.constants.get(vid)
        if isinstance(c, np.ndarray):
            return Const(vid, _python(c))
        if isinstance(c, _Opaque):
            raise SpirvError(f"{inst.opname}: operand {what} %{vid} is an {c.what}, which pyvgf does not evaluate", word=inst.offset)
        if vid in self.structs:
            raise SpirvError(f"{inst.opname}: operand {what} %{vid} has several results: extract one", word=inst.offset)
        raise SpirvError(f"{inst.opname}: operand {what} %{vid} is not a value defined before it", word=inst.offset)

    def graph_input(self, inst: Instruction) -> None:
        index = self.m.index(inst.operands[0].value, inst, "InputIndex")  # type: ignore[arg-type]
        if len(inst.operands) > 1:
            raise SpirvError("OpGraphInputARM: array inputs (ElementIndex) are not supported", word=inst.offset)
        if not 0 <= index < len(self.inputs):
            raise SpirvError(f"OpGraphInputARM: input index {index} outside 0..{len(self.inputs) - 1}", word=inst.offset)
        t = self.m.type(inst.result_type, inst, "Result Type")  # type: ignore[arg-type]
        if not _same(t, self.inputs[index].type):
            raise SpirvError(f"OpGraphInputARM: type {_describe(t)} differs from input {index}'s {self.inputs[index].type}", word=inst.offset)
        self.values[inst.result] = Input(inst.result, index, self.inputs[index].type)  # type: ignore[index, arg-type]

    def ext_inst(self, inst: Instruction) -> None:
        set_id, number = inst.operands[0].value, inst.operands[1].value
        if self.m.module.ext_inst_sets.get(set_id) != tables.TOSA_SET:  # type: ignore[arg-type]
            name = self.m.module.ext_inst_sets.get(set_id, f"%{set_id}")  # type: ignore[arg-type]
            raise SpirvError(f"OpExtInst: instruction set {name} is not supported in a graph", word=inst.offset)
        op, layout = tables.TOSA_INSTRUCTIONS[number]  # type: ignore[index]
        rtype = self.m.type(inst.result_type, inst, "Result Type")  # type: ignore[arg-type]
        if isinstance(rtype, _Struct) and rtype.members and all(isinstance(t, TensorType) for t in rtype.members):
            result_type: TensorType | tuple[TensorType, ...] = rtype.members  # type: ignore[assignment]
        elif isinstance(rtype, TensorType):
            result_type = rtype
        else:
            raise SpirvError(f"OpExtInst {op}: result type is {_describe(rtype)}, not a shaped tensor", word=inst.offset)
        operands: dict[str, Operand | tuple[Operand, ...]] = {}
        variadic = {name for name, q in layout if q == "*"}
        for o in inst.operands[2:]:
            value = self.operand(o.value, inst, o.name)  # type: ignore[arg-type]
            if o.name in variadic:
                operands[o.name] = operands.get(o.name, ()) + (value,)  # type: ignore[operator]
            else:
                operands[o.name] = value
        for name in variadic:
            operands.setdefault(name, ())
        node = Node(inst.result, op, result_type, operands, self.m.names.get(inst.result), inst.offset)  # type: ignore[arg-type]
        self.nodes.append(node)
        if isinstance(result_type, tuple):
            self.structs[inst.result] = node  # type: ignore[index]
        else:
            self.values[inst.result] = Result(inst.result, inst.result, result_type)  # type: ignore[index, arg-type]

    def composite_extract(self, inst: Instruction) -> None:
        sid = inst.operands[0].value
        node = self.structs.get(sid)  # type: ignore[arg-type]
        if node is None or len(inst.operands) != 2:
            raise SpirvError(f"OpCompositeExtract: %{sid} is not a multi-result op (or several indexes)", word=inst.offset)
        element = inst.operands[1].value
        types = node.result_type
        if not 0 <= element < len(types):  # type: ignore[arg-type, operator]
            raise SpirvError(f"OpCompositeExtract: index {element} outside {node.op}'s {len(types)} results", word=inst.offset)  # type: ignore[arg-type]
        t = types[element]  # type: ignore[index]
        declared = self.m.type(inst.result_type, inst, "Result Type")  # type: ignore[arg-type]
        if not _same(declared, t):
            raise SpirvError(f"OpCompositeExtract: result type {_describe(declared)} is not {node.op}'s result {element}: {t}", word=inst.offset)
        self.values[inst.result] = Result(inst.result, node.id, t, element)  # type: ignore[index, arg-type]

    def set_output(self, inst: Instruction) -> None:
        value = self.operand(inst.operands[0].value, inst, "Value")  # type: ignore[arg-type]
        index = self.m.index(inst.operands[1].value, inst, "OutputIndex")  # type: ignore[arg-type]
        if len(inst.operands) > 2:
            raise SpirvError("OpGraphSetOutputARM: array outputs (ElementIndex) are not supported", word=inst.offset)
        if not 0 <= index < len(self.outputs):
            raise SpirvError(f"OpGraphSetOutputARM: output index {index} outside 0..{len(self.outputs) - 1}", word=inst.offset)
        if self.results[index] is not None:
            raise SpirvError(f"OpGraphSetOutputARM: output {index} is set twice", word=inst.offset)
        expected = self.outputs[index].type
        got = value.type if not isinstance(value, Const) else _const_type(value)
        if not _same(got, expected):
            raise SpirvError(f"OpGraphSetOutputARM: value %{value.id} is {got}, output {index} is {expected}", word=inst.offset)
        self.results[index] = value

    HANDLERS = {
        "OpGraphInputARM": graph_input,
        "OpExtInst": ext_inst,
        "OpCompositeExtract": composite_extract,
        "OpGraphSetOutputARM": set_output,
    }


def _const_type(c: Const) -> TensorType | str:
    v = c.value
    return TensorType(v.dtype, v.shape) if isinstance(v, np.ndarray) else f"scalar {type(v).__name__}"
