"""Run one TOSA operator through tosa_reference_model and through pyvgf, for the operator tests.

`Case` describes one operator call: its operands (function inputs or constants), attributes and
result types. `Case.reference()` writes the one-operator TOSA MLIR graph and runs it in
tosa_reference_model (tools/references.py; model-converter's output is cached by text, so data
travels as function inputs); `Case.ours()` runs the plan-time check and the pyvgf operator.
"""

from __future__ import annotations

import inspect
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

import fixtures
from pyvgf.elements import by_dtype
from pyvgf.tosa import OPS
from pyvgf.types import TensorType
from references import tosa_reference
from support.tosa import assert_executors_agree, fast_form


def _mlir(dtype: np.dtype) -> str:
    """The MLIR element type: int64 arrays hold int48 here, int4 is ml_dtypes' (not a VGF type)."""
    dtype = np.dtype(dtype)
    if dtype == np.int64:
        return "i48"
    return "i4" if dtype == np.dtype(ml_dtypes.int4) else by_dtype(dtype).mlir


def tensor_type(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{_mlir(dtype)}>"


def _literal(array: np.ndarray) -> str:
    """A dense literal, nested to the array's rank; every value written exactly."""
    integer = array.dtype.kind in "iu" or array.dtype == np.dtype(ml_dtypes.int4)

    def text(a: np.ndarray) -> str:
        if a.ndim == 0:
            return str(int(a)) if integer else repr(float(a))
        return "[" + ", ".join(text(sub) for sub in a) + "]"

    return f"dense<{text(array)}> : {tensor_type(array.shape, array.dtype)}"


def _reference_int48(mlir: str, inputs: list[np.ndarray],
                     results: list[TensorType]) -> list[np.ndarray]:
    """tosa_reference_model's command line, which (unlike its Python API that the shared
    tools/references.py uses) returns int48 results."""
    flatbuffer = fixtures.tosa_from_mlir(mlir)
    with tempfile.TemporaryDirectory() as tmp:
        ifm = [str(Path(tmp, f"in{i}.npy")) for i in range(len(inputs))]
        ofm = [str(Path(tmp, f"out{i}.npy")) for i in range(len(results))]
        for path, array in zip(ifm, inputs):
            np.save(path, array)
        proc = subprocess.run(
            [fixtures.tool("tosa_reference_model"), "--tosa_file", str(flatbuffer),
             "--ifm_name", ",".join(f"TosaInput_{i}" for i in range(len(inputs))),
             "--ifm_file", ",".join(ifm),
             "--ofm_name", ",".join(f"TosaOutput_{i}" for i in range(len(results))),
             "--ofm_file", ",".join(ofm)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return [np.load(path).astype(r.dtype) for path, r in zip(ofm, results)]


@dataclass
class Shape:
    """A !tosa.shape constant operand (RESIZE's scale, offset, border)."""

    values: tuple[int, ...]


@dataclass
class Case:
    op: str  # the TOSA operator name, e.g. "CONV2D"
    mlir_op: str  # its MLIR name, e.g. "tosa.conv2d"
    operands: list[tuple[str, object]]  # (name, value) in MLIR operand order
    attributes: dict[str, object]  # pyvgf attribute values, keyed by grammar name
    mlir_attributes: str  # the MLIR attribute dictionary text, "" for none
    results: list[TensorType]
    constants: set[str] = field(default_factory=set)  # operands written as tosa.const

    def mlir(self) -> str:
        args, lines, names, types = [], [], [], []
        for name, value in self.operands:
            if isinstance(value, Shape):
                ssa, stype = f"%{name}", f"!tosa.shape<{len(value.values)}>"
                vals = ", ".join(str(v) for v in value.values)
                lines.append(f"{ssa} = tosa.const_shape {{values = dense<[{vals}]> : "
                             f"tensor<{len(value.values)}xindex>}} : () -> {stype}")
            elif name in self.constants:
                ssa, stype = f"%{name}", tensor_type(value.shape, value.dtype)
                lines.append(f'{ssa} = "tosa.const"() {{values = {_literal(value)}}} : '
                             f"() -> {stype}")
            else:
                ssa, stype = f"%arg_{name}", tensor_type(value.shape, value.dtype)
                args.append(f"{ssa}: {stype}")
            names.append(ssa)
            types.append(stype)
        rtypes = [tensor_type(r.shape, r.dtype) for r in self.results]
        many = len(rtypes) > 1
        lhs = f"%r:{len(rtypes)}" if many else "%r"
        attrs = f" {{{self.mlir_attributes}}}" if self.mlir_attributes else ""
        rtext = f"({', '.join(rtypes)})" if many else rtypes[0]
        lines.append(f"{lhs} = {self.mlir_op} {', '.join(names)}{attrs} : "
                     f"({', '.join(types)}) -> {rtext}")
        outs = [f"%r#{i}" for i in range(len(rtypes))] if many else ["%r"]
        lines.append(f"return {', '.join(outs)} : {', '.join(rtypes)}")
        body = "\n    ".join(lines)
        return (f"module {{\n  func.func @main({', '.join(args)}) -> {rtext} {{\n    {body}\n"
                f"  }}\n}}\n")

    def reference(self) -> list[np.ndarray]:
        inputs = [v for n, v in self.operands
                  if not isinstance(v, Shape) and n not in self.constants]
        if any(r.dtype == np.dtype(np.int64) for r in self.results):
            return _reference_int48(self.mlir(), inputs, self.results)
        return tosa_reference(self.mlir(), inputs)

    def ours(self) -> list[np.ndarray]:
        values = {n: (np.array(v.values, np.int64) if isinstance(v, Shape) else v)
                  for n, v in self.operands}
        values.update(self.attributes)
        shapes = {n for n, v in self.operands if isinstance(v, Shape)}
        plan = {n: v if n in self.attributes or n in self.constants or n in shapes
                else TensorType(v.dtype, tuple(v.shape)) for n, v in values.items()}
        opdef = OPS[self.op]
        declared = self.results[0] if len(self.results) == 1 else tuple(self.results)
        extra = {}
        if "result_dtype" in inspect.signature(opdef.fn).parameters:
            extra["result_dtype"] = self.results[0].dtype  # as the graph interpreter passes it
        opdef.check(declared, **plan, **extra)
        frozen = dict(extra)
        for n, v in values.items():
            if isinstance(v, np.ndarray):
                v = v.copy()
                v.flags.writeable = False
            frozen[n] = v
        out = opdef.fn(**frozen)
        fast = fast_form(self.op)
        if fast is not None:  # the fast executor's override gives the reference's result
            for got, want in zip(_listed(fast(**frozen)), _listed(out)):
                assert_executors_agree(got, want, f"{self.op}: fast vs reference")
        return _listed(out)


def _listed(out: object) -> list[np.ndarray]:
    return list(out) if isinstance(out, tuple) else [out]  # type: ignore[list-item]


def assert_close(ours: np.ndarray, ref: np.ndarray, result: TensorType, rtol: float | None = None):
    """Integers bit-exact; floats within a tolerance for the result's precision."""
    assert ours.dtype == result.dtype, (ours.dtype, result.dtype)
    assert ours.shape == tuple(result.shape), (ours.shape, result.shape)
    if result.dtype.kind in "iu":
        np.testing.assert_array_equal(ours, ref)
        return
    a, b = ours.astype(np.float64), ref.astype(np.float64)
    eps = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3,
           np.dtype(ml_dtypes.bfloat16): 1.6e-2}.get(result.dtype, 0.13)
    tol = rtol if rtol is not None else eps
    finite = np.isfinite(b)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(a[~finite & ~np.isnan(b)], b[~finite & ~np.isnan(b)])
    scale = max(1.0, float(np.abs(b[finite]).max(initial=0)))
    np.testing.assert_allclose(a[finite], b[finite], rtol=tol, atol=tol * scale)


def run_case(case: Case, rtol: float | None = None) -> None:
    """Run `case` both ways and compare every result."""
    for ours, ref, result in zip(case.ours(), case.reference(), case.results):
        assert_close(ours, ref, result, rtol)
