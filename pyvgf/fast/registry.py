"""The fast executor's table: what it adds to each reference operator of pyvgf/tosa/.

Each entry names a TOSA operator of the reference table (`pyvgf.tosa.OPS`) and may give:
  * `fn`: an override, called as the reference function is (registry.py there) and giving
    the same result: integers bit-exact, floats within pyvgf.testing's tolerance. Operators
    without one run the reference function. The plan-time checks are always the reference's.
  * `bandwise` (CLAMP, RESCALE, CAST, ...): the op reads only `input` at run time and gives
    each element from the same element of it, broadcasting its known operands along the last
    axis at most: applied to a band of `input`, it gives that band of its result, so the plan
    may fuse it into its producer as an `epilogue` (plan.py).
  * `inplace`: its form for temporaries: the same result, computed into `input` where the
    result dtype allows (used on the bands a producer hands over).
  * `from_accumulator`: for an op fused after a convolution, a factory called once at plan
    time with the op's other operands: it returns None, or a function `(acc, bias,
    result_dtype)` taking the convolution's accumulator (for integers float or int64 holding
    exact integers) and bias in place of the tensor of `result_dtype` they make, which returns
    the same result (it may overwrite acc), or None where it does not apply. That function may
    carry `bounds`, (low, high, nan_to_low): for a float result it is then a clamp of acc +
    bias, which the convolution may apply inside its own loops instead; and
    `rescale(bias, result_dtype, channels)`, the same for a RESCALE: kernels.Rescale, or None
    where the loops cannot apply it.
  * `prepare`: the op's plan-time form: called once per step with the known operands as
    values and the run-time ones as `TensorType`s (`epilogue` included), it returns a
    function of the run-time operands (keyword arguments) that gives the op's result, working
    out once what does not depend on their values (at its first call: plans are made at load,
    when constants must stay unread); or None, and the step calls the op as it is.
  * `blas` (the convolutions made of GEMMs, MATMUL): the op calls BLAS, so the plan holds
    BLAS at one thread while a run splits its loops over numba's threads (threads.py).
  * An override declaring a keyword `epilogue` (the convolutions) takes the band-wise ops
    fused after it: a function mapping a band of its result (a range along axis 1, every
    other axis whole) to that band of the final result, which it returns instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..tosa.registry import OpDef

OpFn = Callable[..., object]


@dataclass
class FastOpDef(OpDef):
    """A reference operator with what the fast executor adds to it (see the module doc)."""

    bandwise: bool = False
    blas: bool = False
    inplace: OpFn | None = None
    from_accumulator: OpFn | None = None
    prepare: OpFn | None = None


@dataclass
class _Extra:
    fn: OpFn | None = None
    bandwise: bool = False
    blas: bool = False
    inplace: OpFn | None = None
    from_accumulator: OpFn | None = None
    prepare: OpFn | None = None


FAST: dict[str, _Extra] = {}


class Forms:
    """Decorators registering an operator's fast forms (see the module doc)."""

    def __init__(self, extra: _Extra):
        self._extra = extra

    def inplace(self, form: OpFn) -> OpFn:
        self._extra.inplace = form
        return form

    def from_accumulator(self, form: OpFn) -> OpFn:
        self._extra.from_accumulator = form
        return form

    def prepare(self, form: OpFn) -> OpFn:
        self._extra.prepare = form
        return form


def declare(name: str, *, bandwise: bool = False, blas: bool = False,
            fn: OpFn | None = None) -> Forms:
    """Add to the reference operator `name`: an override `fn` (None: the reference's own),
    whether it is band-wise or calls BLAS; returns the decorators for its other forms."""
    if name in FAST:
        raise RuntimeError(f"fast form of {name} registered twice")
    FAST[name] = extra = _Extra(fn, bandwise, blas)
    return Forms(extra)


def fast_op(name: str, *, bandwise: bool = False, blas: bool = False) -> Callable[[OpFn], OpFn]:
    """Register `fn` as the fast form of the TOSA operator `name`; `@fn.inplace`,
    `@fn.from_accumulator` and `@fn.prepare` then register its other forms."""

    def register(fn: OpFn) -> OpFn:
        forms = declare(name, bandwise=bandwise, blas=blas, fn=fn)
        fn.inplace = forms.inplace  # type: ignore[attr-defined]
        fn.from_accumulator = forms.from_accumulator  # type: ignore[attr-defined]
        fn.prepare = forms.prepare  # type: ignore[attr-defined]
        return fn

    return register


def fast_ops(reference: Mapping[str, OpDef]) -> dict[str, FastOpDef]:
    """The fast executor's operator table: each reference operator with its fast form."""
    table = {}
    for name, opdef in reference.items():
        extra = FAST.get(name, _Extra())
        table[name] = FastOpDef(name, extra.fn or opdef.fn, opdef.check, extra.bandwise,
                                extra.blas, extra.inplace, extra.from_accumulator, extra.prepare)
    return table
