"""The graph IR of a SPIR-V graph module (SPV_ARM_graph, SPV_ARM_tensors, TOSA.001000.1).

`decode_graph(words)` decodes the module, evaluates every SPIR-V constant into numpy, and
returns the `Graph` of one entry point: its interface (inputs and outputs with descriptor set
and binding), the graph constants it uses (OpGraphConstantARM id -> declared type), and its
TOSA op nodes in order, each operand named as the TOSA.001000.1 grammar names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import SpirvError
from ..types import TensorType
from . import tables
from .binary import Instruction, as_words, decode
from .declarations import BINDING, DESCRIPTOR_SET, Declarations, GraphType, Pointer, Struct, Type, describe, same

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


Operand = Const | Input | GraphConstant | Result


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
    location: str | None = None
    """"FILE:LINE:COLUMN" of the OpLine in force at the node, if any."""

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
    """One graph entry point of a SPIR-V module, ready for planning.

    `inputs`/`outputs` are in graph input/output order; `constants` maps each graph constant id
    (the OpGraphConstantARM literal) the graph uses to its declared type; `nodes` are in
    module order, which is an order where every operand is computed before its use.
    """

    name: str
    inputs: list[GraphInterface]
    outputs: list[GraphInterface]
    constants: dict[int, TensorType]
    nodes: list[Node]
    results: list[Operand]
    """The value each output is set to, in output order."""


# -- building the graph --------------------------------------------------------------------------


def decode_graph(
    words: bytes | bytearray | memoryview | np.ndarray | Sequence[int], entry_point: str | None = None
) -> Graph:
    """Decode a SPIR-V graph module and return the graph of `entry_point` (or its only one)."""
    words = as_words(words)
    decls = Declarations(decode(words), 4 * len(words))
    entry = _entry_point(decls, entry_point)
    gid = entry.num(0)
    if gid not in decls.graphs:
        raise SpirvError(f"OpGraphEntryPointARM: %{gid} is not an OpGraphARM", word=entry.offset)
    head, body = decls.graphs[gid]
    gtype = decls.type(head.result_type, head, "Result Type")
    if not isinstance(gtype, GraphType):
        raise SpirvError(f"OpGraphARM: result type is {describe(gtype)}, not a graph type", word=head.offset)
    interface = [entry.num(i) for i in range(2, len(entry.operands))]
    types = gtype.inputs + gtype.outputs
    if len(interface) != len(types):
        raise SpirvError(
            f"OpGraphEntryPointARM: {len(interface)} interface variables for a graph of "
            f"{len(gtype.inputs)} inputs and {len(gtype.outputs)} outputs",
            word=entry.offset,
        )
    ports = [_interface(decls, entry, vid, t) for vid, t in zip(interface, types)]
    inputs = [GraphInterface(i, *p) for i, p in enumerate(ports[: len(gtype.inputs)])]
    outputs = [GraphInterface(i, *p) for i, p in enumerate(ports[len(gtype.inputs) :])]
    return _Body(decls, inputs, outputs).build(entry.text(1), head, body)


def _entry_point(decls: Declarations, name: str | None) -> Instruction:
    names = [e.text(1) for e in decls.entry_points]
    if name is None:
        if not decls.entry_points:
            raise SpirvError("the module has no graph entry point (OpGraphEntryPointARM)")
        if len(decls.entry_points) > 1:
            raise SpirvError(f"the module has graph entry points {names}: name one")
        return decls.entry_points[0]
    for entry in decls.entry_points:
        if entry.text(1) == name:
            return entry
    raise SpirvError(f"no graph entry point {name!r} (the module has {names})")


def _interface(decls: Declarations, entry: Instruction, vid: int, t: Type) -> tuple[int, int, TensorType]:
    """(descriptor set, binding, type) of interface variable `vid`, which must hold a `t`."""
    var = decls.variables.get(vid)
    if var is None:
        raise SpirvError(f"OpGraphEntryPointARM: interface %{vid} is not an OpVariable", word=entry.offset)
    ptr, inst = var
    if not isinstance(ptr, Pointer) or not isinstance(t, TensorType) or not same(ptr.pointee, t):
        raise SpirvError(
            f"OpVariable %{vid}: type {describe(ptr)} does not point to the graph's tensor type {describe(t)}",
            word=inst.offset,
        )
    dset = decls.decoration(vid, DESCRIPTOR_SET, inst, "DescriptorSet")
    binding = decls.decoration(vid, BINDING, inst, "Binding")
    return dset, binding, t


def _python(value: np.ndarray) -> np.ndarray | bool | int | float:
    """A constant as ops receive it: scalars as Python values, arrays (read-only) as they are."""
    if value.ndim == 0:
        return value.item() if value.dtype.kind in "biuf" else float(value)
    return value


class _Body:
    """Reads a graph body: inputs, TOSA nodes, result extraction, outputs."""

    def __init__(self, decls: Declarations, inputs: list[GraphInterface], outputs: list[GraphInterface]):
        self.decls = decls
        self.inputs = inputs
        self.outputs = outputs
        self.values: dict[int, Operand] = {}
        self.multi: dict[int, Node] = {}
        self.nodes: list[Node] = []
        self.results: list[Operand | None] = [None] * len(outputs)
        self.constants: dict[int, TensorType] = {}
        self.location: str | None = None

    def build(self, name: str, head: Instruction, body: list[Instruction]) -> Graph:
        handlers = {
            "OpGraphInputARM": self.graph_input,
            "OpExtInst": self.ext_inst,
            "OpCompositeExtract": self.composite_extract,
            "OpGraphSetOutputARM": self.set_output,
            "OpLine": self.line,
            "OpNoLine": self.no_line,
        }
        for inst in body:
            handler = handlers.get(inst.opname)
            if handler is None:
                raise SpirvError(f"{inst.opname} is not supported in a graph", word=inst.offset)
            handler(inst)
        missing = [i for i, r in enumerate(self.results) if r is None]
        if missing:
            raise SpirvError(f"OpGraphARM %{head.result}: outputs {missing} are never set", word=head.offset)
        declared = sum(t.size * t.dtype.itemsize for node in self.nodes
                       for t in (node.result_type if isinstance(node.result_type, tuple) else (node.result_type,)))
        if declared > self.decls.budget:
            raise SpirvError(f"OpGraphARM %{head.result}: its ops' results take {declared} bytes together, over "
                             f"the memory budget of {self.decls.budget} bytes (pyvgf.limits)", word=head.offset)
        results = [r for r in self.results if r is not None]
        return Graph(name, self.inputs, self.outputs, self.constants, self.nodes, results)

    def operand(self, vid: int, inst: Instruction, what: str) -> Operand:
        value = self.values.get(vid)
        if value is not None:
            return value
        gc = self.decls.graph_constants.get(vid)
        if gc is not None:
            self.constants[gc.constant_id] = gc.type
            return GraphConstant(vid, gc.constant_id, gc.type)
        c = self.decls.lookup(vid)
        if isinstance(c, np.ndarray):
            if vid in self.decls.arrays:  # TOSA.001000.1 takes tensors and scalars only
                raise SpirvError(f"{inst.opname}: operand {what} %{vid} is an OpTypeArray constant, not a tensor "
                                 "or scalar", word=inst.offset)
            return Const(vid, _python(c))
        if c is not None:
            raise SpirvError(f"{inst.opname}: operand {what} %{vid} is an {c.what}, which pyvgf does not evaluate",
                             word=inst.offset)
        if vid in self.multi:
            raise SpirvError(f"{inst.opname}: operand {what} %{vid} has several results: extract one", word=inst.offset)
        raise SpirvError(f"{inst.opname}: operand {what} %{vid} is not a value defined before it", word=inst.offset)

    def graph_input(self, inst: Instruction) -> None:
        index = self.decls.index(inst.num(0), inst, "InputIndex")
        if len(inst.operands) > 1:
            raise SpirvError("OpGraphInputARM: array inputs (ElementIndex) are not supported", word=inst.offset)
        if not 0 <= index < len(self.inputs):
            raise SpirvError(f"OpGraphInputARM: input index {index} outside 0..{len(self.inputs) - 1}",
                             word=inst.offset)
        t = self.decls.type(inst.result_type, inst, "Result Type")
        port = self.inputs[index]
        if not same(t, port.type):
            raise SpirvError(f"OpGraphInputARM: type {describe(t)} differs from input {index}'s {port.type}",
                             word=inst.offset)
        self.values[inst.result] = Input(inst.result, index, port.type)

    def ext_inst(self, inst: Instruction) -> None:
        sets = self.decls.module.ext_inst_sets
        if sets.get(inst.num(0)) != tables.TOSA_SET:
            name = sets.get(inst.num(0), f"%{inst.num(0)}")
            raise SpirvError(f"OpExtInst: instruction set {name} is not supported in a graph", word=inst.offset)
        op, layout = tables.TOSA_INSTRUCTIONS[inst.num(1)]
        rtype = self.decls.type(inst.result_type, inst, "Result Type")
        result_type: TensorType | tuple[TensorType, ...]
        if isinstance(rtype, Struct) and rtype.members and all(isinstance(t, TensorType) for t in rtype.members):
            result_type = tuple(t for t in rtype.members if isinstance(t, TensorType))
        elif isinstance(rtype, TensorType):
            result_type = rtype
        else:
            raise SpirvError(f"OpExtInst {op}: result type is {describe(rtype)}, not a shaped tensor", word=inst.offset)
        given: dict[str, list[Operand]] = {}
        for i in range(2, len(inst.operands)):
            name = inst.operands[i].name
            given.setdefault(name, []).append(self.operand(inst.num(i), inst, name))
        operands: dict[str, Operand | tuple[Operand, ...]] = {}
        for name, quantifier in layout:  # grammar order; a variadic operand becomes a tuple
            if quantifier == "*":
                operands[name] = tuple(given.get(name, ()))
            elif name in given:
                operands[name] = given[name][0]
        node = Node(inst.result, op, result_type, operands, self.decls.names.get(inst.result), inst.offset,
                    self.location)
        self.nodes.append(node)
        if isinstance(result_type, tuple):
            self.multi[inst.result] = node
        else:
            self.values[inst.result] = Result(inst.result, inst.result, result_type)

    def line(self, inst: Instruction) -> None:
        name = self.decls.strings.get(inst.num(0))
        if name is None:
            raise SpirvError(f"OpLine: File %{inst.num(0)} is not an OpString", word=inst.offset)
        self.location = f"{name}:{inst.num(1)}:{inst.num(2)}"

    def no_line(self, inst: Instruction) -> None:
        self.location = None

    def composite_extract(self, inst: Instruction) -> None:
        node = self.multi.get(inst.num(0))
        if node is None or len(inst.operands) != 2 or not isinstance(node.result_type, tuple):
            raise SpirvError(f"OpCompositeExtract: %{inst.num(0)} is not a multi-result op (or several indexes)",
                             word=inst.offset)
        element = inst.num(1)
        if not 0 <= element < len(node.result_type):
            raise SpirvError(f"OpCompositeExtract: index {element} outside {node.op}'s {len(node.result_type)} results",
                             word=inst.offset)
        t = node.result_type[element]
        declared = self.decls.type(inst.result_type, inst, "Result Type")
        if not same(declared, t):
            raise SpirvError(f"OpCompositeExtract: result type {describe(declared)} is not {node.op}'s "
                             f"result {element}: {t}", word=inst.offset)
        self.values[inst.result] = Result(inst.result, node.id, t, element)

    def set_output(self, inst: Instruction) -> None:
        value = self.operand(inst.num(0), inst, "Value")
        index = self.decls.index(inst.num(1), inst, "OutputIndex")
        if len(inst.operands) > 2:
            raise SpirvError("OpGraphSetOutputARM: array outputs (ElementIndex) are not supported", word=inst.offset)
        if not 0 <= index < len(self.outputs):
            raise SpirvError(f"OpGraphSetOutputARM: output index {index} outside 0..{len(self.outputs) - 1}",
                             word=inst.offset)
        if self.results[index] is not None:
            raise SpirvError(f"OpGraphSetOutputARM: output {index} is set twice", word=inst.offset)
        expected = self.outputs[index].type
        got = _const_type(value.value) if isinstance(value, Const) else value.type
        if not same(got, expected):
            raise SpirvError(f"OpGraphSetOutputARM: value %{value.id} is {got}, output {index} is {expected}",
                             word=inst.offset)
        self.results[index] = value


def _const_type(value: object) -> TensorType | str:
    return TensorType(value.dtype, value.shape) if isinstance(value, np.ndarray) else f"scalar {type(value).__name__}"
