"""A TOSA graph under construction: inputs, constants, operators and outputs.

    g = Graph()
    x = g.input("float32", (1, 8, 8, 4))
    y = g.op("CONV2D", input=x, weight=w, bias=b, input_zp=zp, weight_zp=zp,
             pad=[1, 1, 1, 1], stride=[1, 1], dilation=[1, 1], acc_type="FP32",
             result=("float32", (1, 8, 8, 8)))
    g.output(g.op("CLAMP", input=y, min_val=0.0, max_val=6.0))
    data = g.to_bytes()          # a VGF file
    text = g.to_mlir()           # the same graph as TOSA MLIR

Operands are named as the TOSA.001000.1 grammar names them; enumeration attributes take the
specification's names ("FP32", "PROPAGATE", "SINGLE_ROUND", "BILINEAR"). A tensor operand takes
a graph value or a numpy array (which becomes a constant).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

import numpy as np

from ..errors import TosaError
from ..format.model import VGF
from ._grammar import TOSA_OPCODES
from .dtypes import ElementType, element_type
from .signatures import DEFAULTS, ENUMERATIONS, MULTI_RESULT, VARIADIC, Kind, signature


@dataclass(frozen=True)
class TensorSpec:
    """The element type and shape of a graph value."""

    etype: ElementType
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return self.etype.dtype

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.etype.mlir}>"


@dataclass(frozen=True, eq=False)
class Value:
    """A tensor of the graph: an input, a constant, or an operator's result (its `element`-th
    result for FFT2D and RFFT2D, which have two)."""

    graph: Graph
    node: int
    spec: TensorSpec
    element: int = 0

    @property
    def shape(self) -> tuple[int, ...]:
        return self.spec.shape

    @property
    def dtype(self) -> np.dtype:
        return self.spec.dtype


@dataclass
class Node:
    """One graph node: kind is "input", "constant" or "op"."""

    kind: str
    result: TensorSpec | tuple[TensorSpec, ...]
    """A tuple for ops with several results (FFT2D, RFFT2D)."""
    op: str = ""
    operands: dict[str, object] = field(default_factory=dict)
    """For ops: operand name -> Value, list of Values, or the attribute's Python value."""
    data: np.ndarray | None = None
    """For constants: the values (a private read-only copy)."""
    debug_name: str | None = None
    """For ops: the OpName the module gives the op's result, if any."""


def _dims(shape: Sequence[int]) -> tuple[int, ...]:
    dims = tuple(int(d) for d in shape)
    if any(d <= 0 for d in dims):
        raise TosaError(f"shape {dims} must have positive dimensions")
    return dims


def _spec(dtype: object, shape: Sequence[int]) -> TensorSpec:
    return TensorSpec(element_type(dtype), _dims(shape))


_BOOL_RESULT = {"EQUAL", "GREATER", "GREATER_EQUAL"}
_SAME_SHAPE = {
    "ADD", "ARITHMETIC_RIGHT_SHIFT", "BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "INTDIV",
    "LOGICAL_AND", "LOGICAL_LEFT_SHIFT", "LOGICAL_RIGHT_SHIFT", "LOGICAL_OR", "LOGICAL_XOR",
    "MAXIMUM", "MINIMUM", "MUL", "POW", "SUB", "EQUAL", "GREATER", "GREATER_EQUAL", "SELECT",
    "CLAMP", "ERF", "SIGMOID", "TANH", "ABS", "BITWISE_NOT", "CEIL", "CLZ", "COS", "EXP",
    "FLOOR", "LOG", "LOGICAL_NOT", "NEGATE", "RECIPROCAL", "RSQRT", "SIN",
}
"""Elementwise ops whose result shape is the broadcast of their tensor operands."""
_ELEMENTWISE_INPUTS = ("input", "input1", "input2", "input3")


class Graph:
    """A single-segment TOSA graph that can be written as a VGF file or as TOSA MLIR."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []

    def input(self, dtype: object, shape: Sequence[int]) -> Value:
        """Declare the next graph input."""
        value = self._add(Node("input", _spec(dtype, shape)))
        self.inputs.append(value)
        return value

    def constant(self, array: object, dtype: object = None) -> Value:
        """A constant tensor (copied: later changes to `array` do not affect the graph).

        `dtype` defaults to the array's; give "int48" for an int48 tensor held in int64."""
        etype = element_type(np.asarray(array).dtype if dtype is None else dtype)
        data = np.array(array, dtype=etype.dtype, copy=True)
        spec = TensorSpec(etype, _dims(data.shape))
        data.setflags(write=False)
        return self._add(Node("constant", spec, data=data))

    @overload
    def op(self, name: Literal["FFT2D", "RFFT2D"], *, result: object = None, debug_name: str | None = None,
           **operands: object) -> tuple[Value, ...]: ...

    @overload
    def op(self, name: str, *, result: object = None, debug_name: str | None = None,
           **operands: object) -> Value: ...

    def op(self, name: str, *, result: object = None, debug_name: str | None = None,
           **operands: object) -> Value | tuple[Value, ...]:
        """Add TOSA operator `name`; `result` is its (dtype, shape) or a TensorSpec.

        The result may be left out for elementwise operators: it is then the broadcast of the
        tensor operands, of the first operand's type (bool for comparisons). `debug_name` is
        written as the OpName of the op's result (debuggers and error messages show it).

        FFT2D and RFFT2D return their two results, (output_real, output_imag); their `result`
        is a pair of (dtype, shape) and may be left out (float32 of the shape TOSA gives them).
        """
        if name not in TOSA_OPCODES:
            raise TosaError(f"{name!r} is not a TOSA.001000.1 operator")
        sig = signature(name)
        unknown = set(operands) - {n for n, _ in sig}
        if unknown:
            raise TosaError(f"{name} has no operand {min(unknown)!r}; it takes {[n for n, _ in sig]}")
        resolved: dict[str, object] = {}
        for operand, kind in sig:
            if operand not in operands:
                if operand in DEFAULTS:
                    resolved[operand] = DEFAULTS[operand]
                    continue
                raise TosaError(f"{name}: operand {operand!r} is missing")
            resolved[operand] = self._operand(name, operand, kind, operands[operand])
        self._check_scalars(name, resolved)
        if name in MULTI_RESULT:
            specs = self._results(name, resolved, result)
            first = self._add(Node("op", specs, op=name, operands=resolved, debug_name=debug_name))
            return tuple(Value(self, first.node, spec, k) for k, spec in enumerate(specs))
        spec = self._result(name, resolved, result)
        return self._add(Node("op", spec, op=name, operands=resolved, debug_name=debug_name))

    def output(self, *values: Value) -> None:
        """Declare graph outputs, in order."""
        for value in values:
            self._own(value, "output")
            if self.nodes[value.node].kind == "constant":
                raise TosaError("a constant cannot be a graph output")
        self.outputs.extend(values)

    def to_spirv(self, **options: object) -> np.ndarray:
        """The SPIR-V graph module (uint32 words). See `pyvgf.build.spirv.emit`."""
        from .spirv import emit

        return emit(self, **options).words

    def to_vgf(self, **options: object) -> VGF:
        """The VGF object model (pyvgf.format.model.VGF) of this graph."""
        from .container import to_vgf

        return to_vgf(self, **options)

    def to_bytes(self, **options: object) -> bytes:
        """A VGF file (format 0.5) holding this graph."""
        from ..format import write

        return write(self.to_vgf(**options))

    def to_mlir(self) -> str:
        """This graph as TOSA MLIR text that model-converter accepts."""
        from .mlir import emit

        return emit(self)

    def _add(self, node: Node) -> Value:
        self.nodes.append(node)
        spec = node.result[0] if isinstance(node.result, tuple) else node.result
        return Value(self, len(self.nodes) - 1, spec)

    def _own(self, value: object, where: str) -> Value:
        if not isinstance(value, Value):
            raise TosaError(f"{where}: expected a graph value, got {type(value).__name__}")
        if value.graph is not self:
            raise TosaError(f"{where}: the value belongs to another graph")
        return value

    def _tensor(self, where: str, value: object) -> Value:
        if isinstance(value, Value):
            return self._own(value, where)
        if isinstance(value, np.ndarray):
            return self.constant(value)
        raise TosaError(f"{where}: expected a graph value or a numpy array, got {type(value).__name__}")

    def _operand(self, op: str, name: str, kind: Kind, value: object) -> object:
        where = f"{op} operand {name!r}"
        if kind is Kind.TENSOR:
            if op in VARIADIC and VARIADIC[op] == name:
                if not isinstance(value, (list, tuple)) or not value:
                    raise TosaError(f"{where}: expected a non-empty list of tensors")
                return [self._tensor(where, v) for v in value]
            return self._tensor(where, value)
        if kind is Kind.ENUM:
            if value not in ENUMERATIONS[name]:
                raise TosaError(f"{where}: {value!r} is not one of {sorted(ENUMERATIONS[name])}")
            return value
        if kind is Kind.BOOL:
            if not isinstance(value, (bool, np.bool_)):
                raise TosaError(f"{where}: expected a bool, got {value!r}")
            return bool(value)
        if kind is Kind.INT:
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise TosaError(f"{where}: expected an int, got {value!r}")
            return int(value)
        if kind is Kind.VALUE:
            if not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
                raise TosaError(f"{where}: expected a number, got {value!r}")
            return value
        try:
            ints = tuple(int(v) for v in value)  # ARRAY, SHAPE
        except (TypeError, ValueError):
            raise TosaError(f"{where}: expected a list of ints, got {value!r}") from None
        if not ints:
            raise TosaError(f"{where}: must not be empty")
        return ints

    @staticmethod
    def _check_scalars(op: str, operands: dict[str, object]) -> None:
        """Scalar attributes typed like the input (clamp bounds) must be representable in it."""
        first = next((v for v in operands.values() if isinstance(v, Value)), None)
        for name, kind in signature(op):
            value = operands[name]
            if kind is not Kind.VALUE or first is None or first.dtype.kind not in "iu":
                continue
            info = np.iinfo(first.dtype)
            if value != int(value) or not info.min <= value <= info.max:
                raise TosaError(f"{op} operand {name!r}: {value!r} is not a {first.spec.etype.mlir} value")

    def _result(self, op: str, operands: dict[str, object], result: object) -> TensorSpec:
        if isinstance(result, TensorSpec):
            return result
        if result is not None:
            try:
                dtype, shape = result
            except (TypeError, ValueError):
                raise TosaError(f"{op}: result must be (dtype, shape), got {result!r}") from None
            return _spec(dtype, shape)
        if op not in _SAME_SHAPE:
            raise TosaError(f"{op}: give the result type: result=(dtype, shape)")
        tensors = [operands[n] for n in _ELEMENTWISE_INPUTS if isinstance(operands.get(n), Value)]
        try:
            shape = np.broadcast_shapes(*(t.shape for t in tensors))
        except ValueError:
            raise TosaError(f"{op}: operand shapes {[t.shape for t in tensors]} do not broadcast") from None
        first = tensors[1] if op == "SELECT" else tensors[0]
        etype = element_type(np.bool_) if op in _BOOL_RESULT else first.spec.etype
        return TensorSpec(etype, tuple(shape))

    @staticmethod
    def _results(op: str, operands: dict[str, object], result: object) -> tuple[TensorSpec, ...]:
        """The results of an op with several: given, or float32 [N, H, W] for FFT2D and
        [N, H, W/2 + 1] for RFFT2D (N, H, W: input_real's shape)."""
        count = MULTI_RESULT[op]
        if result is None:
            real = operands["input_real"]
            assert isinstance(real, Value)
            if len(real.shape) != 3:
                raise TosaError(f"{op}: input_real must have rank 3 [N, H, W], got shape {real.shape}")
            n, h, w = real.shape
            shape = (n, h, w // 2 + 1) if op == "RFFT2D" else (n, h, w)
            return (TensorSpec(element_type(np.float32), shape),) * count
        try:
            specs = tuple(r if isinstance(r, TensorSpec) else _spec(*r) for r in result)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise TosaError(f"{op}: result must be {count} pairs (dtype, shape), got {result!r}") from None
        if len(specs) != count:
            raise TosaError(f"{op} has {count} results, {len(specs)} given")
        return specs
