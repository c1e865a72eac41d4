"""The table of TOSA operators: one function per op, named as the TOSA specification names it.

This is the reference: each function computes its operator as the specification describes it,
in plain numpy, to be read beside the spec. What makes a run fast (fusion, compiled loops,
threads) lives apart, in pyvgf/fast/, registered over this table.

Call convention (the graph interpreter relies on it):
  * Every operand is passed as a keyword argument named as the TOSA.001000.1 grammar names it
    (`input`, `weight`, `input_zp`, `pad`, `acc_type`, ...).
  * Tensor values arrive as numpy arrays of the tensor's dtype (int48 as int64, bf16 and fp8
    as ml_dtypes types, bool as numpy bool). Attributes arrive evaluated: scalars as Python
    int/bool/float, rank-1 attribute tensors (pad, stride, kernel, perms, ...) as numpy arrays.
    Zero points, shifts, multipliers, tables, shapes and padding arrive as numpy arrays.
  * A variadic operand (CONCAT's `input1`) arrives as a tuple of arrays.
  * An op whose result type does not follow from its operands (CAST) declares a keyword
    `result_dtype`: the interpreter then passes the declared result's numpy dtype there.
  * The function returns one numpy array (a tuple of arrays for FFT2D and RFFT2D) whose dtype
    and shape are exactly the result type the graph declares. Operands are read-only: never
    modify them (constants are shared by every run).

Plan-time checks: `@fn.check` registers `check(result, **operands)`. There each operand is a
`TensorType` when its value is known only at run time, or its value when it is a constant;
`result` is the declared result type (a tuple for two results). It raises `TosaError` naming
the operand when the spec's constraints do not hold; it never computes the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

OpFn = Callable[..., object]


@dataclass
class OpDef:
    name: str
    fn: OpFn
    check: OpFn | None = None


OPS: dict[str, OpDef] = {}


def tosa_op(name: str) -> Callable[[OpFn], OpFn]:
    """Register `fn` as the implementation of the TOSA operator `name` (e.g. "CONV2D");
    `@fn.check` then registers its plan-time check."""

    def register(fn: OpFn) -> OpFn:
        if name in OPS:
            raise RuntimeError(f"TOSA operator {name} registered twice")
        opdef = OPS[name] = OpDef(name, fn)

        def check(checker: OpFn) -> OpFn:
            opdef.check = checker
            return checker

        fn.check = check  # type: ignore[attr-defined]
        return fn

    return register
