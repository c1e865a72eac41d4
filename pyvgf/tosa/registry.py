"""The table of TOSA operators: one function per op, named as the TOSA specification names it.

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
  * An op that can finish its result a band at a time declares a keyword `epilogue` (the
    convolutions): when given, a function mapping a band of its result (a range along axis 1,
    every other axis whole) to that band of the final result, which it returns instead.
  * A band-wise op (`tosa_op(name, bandwise=True)`: CLAMP, RESCALE, ...) reads only `input` at
    run time and gives each element from the same element of it, broadcasting its known
    operands along the last axis at most: applied to a band of `input`, it gives that band of
    its result, so the interpreter may fuse it into its producer as that epilogue.
    `@fn.inplace` registers its form for temporaries: the same result, computed into `input`
    where the result dtype allows (the interpreter uses it on the bands a producer hands over).
    `@fn.from_accumulator` registers, for an op fused after a convolution, a factory called
    once at plan time with the op's other operands: it returns None, or a function
    `(acc, bias, result_dtype)` taking the convolution's accumulator (for integers float or
    int64 holding exact integers) and bias in place of the tensor of `result_dtype` they make,
    which returns the same result (it may overwrite acc), or None where it does not apply.
    That function may carry `bounds`, (low, high, nan_to_low): for a float result it is then a
    clamp of acc + bias, which the convolution may apply inside its own loops instead; and
    `rescale(bias, result_dtype, channels)`, the same for a RESCALE: kernels.Rescale, or None
    where the loops cannot apply it.
  * `@fn.prepare` registers an op's plan-time form: called once per step with the known
    operands as values and the run-time ones as `TensorType`s (as a check sees them, `epilogue`
    included), it returns a function of the run-time operands (keyword arguments) that gives
    the op's result, working out once what does not depend on their values (at its first call:
    plans are made at load, when constants must stay unread); or None, and the step calls the
    op as it is.
  * An op that calls BLAS (`tosa_op(name, blas=True)`: the convolutions made of GEMMs, MATMUL)
    makes the interpreter hold BLAS at one thread while a run splits its loops over numba's
    threads (threads.py).
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
    bandwise: bool = False
    blas: bool = False
    inplace: OpFn | None = None
    from_accumulator: OpFn | None = None
    prepare: OpFn | None = None


OPS: dict[str, OpDef] = {}


def tosa_op(name: str, *, bandwise: bool = False, blas: bool = False) -> Callable[[OpFn], OpFn]:
    """Register `fn` as the implementation of the TOSA operator `name` (e.g. "CONV2D")."""

    def register(fn: OpFn) -> OpFn:
        if name in OPS:
            raise RuntimeError(f"TOSA operator {name} registered twice")
        opdef = OPS[name] = OpDef(name, fn, bandwise=bandwise, blas=blas)

        def check(checker: OpFn) -> OpFn:
            opdef.check = checker
            return checker

        def inplace(form: OpFn) -> OpFn:
            opdef.inplace = form
            return form

        def from_accumulator(form: OpFn) -> OpFn:
            opdef.from_accumulator = form
            return form

        def prepare(factory: OpFn) -> OpFn:
            opdef.prepare = factory
            return factory

        fn.check = check  # type: ignore[attr-defined]
        fn.inplace = inplace  # type: ignore[attr-defined]
        fn.from_accumulator = from_accumulator  # type: ignore[attr-defined]
        fn.prepare = prepare  # type: ignore[attr-defined]
        return fn

    return register
