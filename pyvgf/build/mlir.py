"""Write a Graph as TOSA MLIR (generic op syntax) that model-converter and tosa-opt accept."""

from __future__ import annotations

import math

import numpy as np

from .graph import Graph, Node, TensorSpec, Value
from .signatures import Kind, signature

_ENUM_ATTRS = {"nan_mode": "nan_mode", "rounding_mode": "rounding_mode", "mode": "resize_mode"}
_ACC_TYPES = {"INT32": "i32", "FP16": "f16", "FP32": "f32", "INT48": "i48"}


def _scalar(value: object, spec: TensorSpec) -> str:
    """An MLIR typed scalar attribute of the element type of `spec`."""
    etype = spec.etype
    if etype.spirv[0] == "float":
        f = float(np.array(value, dtype=etype.dtype).astype(np.float64))
        if math.isfinite(f):
            return f"{f!r} : {etype.mlir}"
        bits = int(np.array(value, dtype=etype.dtype).view(f"<u{etype.dtype.itemsize}"))
        return f"0x{bits:X} : {etype.mlir}"
    return f"{int(value)} : {etype.mlir}"


def dense(data: np.ndarray, spec: TensorSpec) -> str:
    """A `dense<"0x...">` attribute holding `data` (one element when all are equal: a splat)."""
    if spec.etype.mlir == "i48":  # hex data would need 6-byte elements: write decimals
        values = np.asarray(data, dtype=np.int64)
        body = str(int(values.flat[0])) if (values == values.flat[0]).all() else str(values.tolist())
        return f"dense<{body}> : {spec}"
    flat = np.ascontiguousarray(data, dtype=spec.dtype).reshape(-1)
    if flat.size > 1 and (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all():
        flat = flat[:1]
    raw = flat.astype(spec.dtype.newbyteorder("<")).tobytes()
    return f'dense<"0x{raw.hex().upper()}"> : {spec}'


def _shape_const(name: str, values: tuple[int, ...]) -> str:
    joined = ", ".join(map(str, values))
    n = len(values)
    return (f'{name} = "tosa.const_shape"() <{{values = dense<[{joined}]> : tensor<{n}xindex>}}> '
            f": () -> !tosa.shape<{n}>")


def _attribute(name: str, kind: Kind, value: object, node: Node) -> str:
    if kind is Kind.ENUM:
        if name == "acc_type":
            return _ACC_TYPES[value]
        return f"#tosa.{_ENUM_ATTRS[name]}<{value}>"
    if kind is Kind.BOOL:
        return "true" if value else "false"
    if kind is Kind.INT:
        return f"{value} : i32"
    if kind is Kind.VALUE:
        first = next(v for v in node.operands.values() if isinstance(v, Value))
        return _scalar(value, first.spec)
    width = "i32" if name == "perms" else "i64"
    return f"array<{width}: {', '.join(map(str, value))}>"


def emit(graph: Graph) -> str:
    """The MLIR module text of `graph` (one func.func @main)."""
    names: dict[tuple[int, int], str] = {}
    """(node, element) -> the SSA name of that value."""
    lines: list[str] = []
    args = []
    for i, value in enumerate(graph.inputs):
        names[value.node, 0] = f"%arg{i}"
        args.append(f"%arg{i}: {value.spec}")
    counter = 0

    def fresh() -> str:
        nonlocal counter
        counter += 1
        return f"%{counter - 1}"

    def ref(value: Value) -> str:
        key = (value.node, value.element)
        if key not in names:
            node = graph.nodes[value.node]
            name = names[key] = fresh()
            lines.append(f'{name} = "tosa.const"() <{{values = {dense(node.data, node.result)}}}> '
                         f": () -> {node.result}")
        return names[key]

    for index, node in enumerate(graph.nodes):
        if node.kind != "op":
            continue
        operands: list[str] = []
        types: list[str] = []
        attrs: list[str] = []
        for name, kind in signature(node.op):
            value = node.operands[name]
            if kind is Kind.TENSOR:
                for v in value if isinstance(value, list) else [value]:
                    operands.append(ref(v))
                    types.append(str(v.spec))
            elif kind is Kind.SHAPE:
                shape_name = fresh()
                lines.append(_shape_const(shape_name, value))
                operands.append(shape_name)
                types.append(f"!tosa.shape<{len(value)}>")
            else:
                attrs.append(f"{name} = {_attribute(name, kind, value, node)}")
        result = fresh()
        if isinstance(node.result, tuple):  # %N:2, whose results are %N#0 and %N#1
            names.update({(index, k): f"{result}#{k}" for k in range(len(node.result))})
            result_types = f"({', '.join(map(str, node.result))})"
            result += f":{len(node.result)}"
        else:
            names[index, 0] = result
            result_types = str(node.result)
        props = f" <{{{', '.join(sorted(attrs))}}}>" if attrs else ""
        lines.append(f'{result} = "tosa.{node.op.lower()}"({", ".join(operands)}){props} : '
                     f"({', '.join(types)}) -> {result_types}")
    outs = [ref(v) for v in graph.outputs]
    out_types = ", ".join(str(v.spec) for v in graph.outputs)
    lines.append(f"return {', '.join(outs)} : {out_types}")
    result_types = out_types if len(graph.outputs) == 1 else f"({out_types})"
    body = "\n".join(f"    {line}" for line in lines)
    return (f"module {{\n  func.func @main({', '.join(args)}) -> {result_types} {{\n{body}\n  }}\n}}\n")
