"""Helpers for the TOSA operator tests: one-op TOSA MLIR graphs made from dtypes and shapes,
run both in pyvgf's op table and in tosa_reference_model, and compared.

A test describes its graph with `Graph`: runtime inputs (`graph.input(array)`), constants
(`graph.const(array)`, `graph.const_shape(values)`) and one op line written with the names these
return; `graph.reference(op_line, result)` runs it in tosa_reference_model, `run_op(...)` runs
pyvgf's op the way the interpreter calls it, and `assert_same` compares the two.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

import pyvgf.tosa  # noqa: F401  (fills OPS)
from pyvgf.elements import by_dtype
from pyvgf.tosa._common import (
    BF16,
    BOOL,
    FP8E4M3,
    FP8E5M2,
    FP16,
    FP32,
    I8,
    I16,
    I32,
    I48,
)
from pyvgf.tosa.registry import OPS
from pyvgf.types import TensorType
from references import ReferenceUnpredictable, tosa_reference  # tools/references.py


def mlir_type(dtype: np.dtype, shape: tuple[int, ...]) -> str:
    """The MLIR tensor type; int64 arrays hold int48 here (the only 64-bit TOSA 1.0 type)."""
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{'i48' if np.dtype(dtype) == I48 else by_dtype(dtype).mlir}>"


def _dense(array: np.ndarray) -> str:
    flat = np.asarray(array).reshape(-1)
    if flat.dtype == BOOL:
        items = ["true" if v else "false" for v in flat]
    elif flat.dtype.kind in "iu":
        items = [str(int(v)) for v in flat]
    else:
        items = [repr(float(v)) for v in flat.astype(np.float64)]
    if np.ndim(array) == 0:
        return items[0]
    return _nested(np.asarray(items).reshape(np.shape(array)))


def _nested(items: np.ndarray) -> str:
    if items.ndim == 1:
        return "[" + ", ".join(items) + "]"
    return "[" + ", ".join(_nested(sub) for sub in items) + "]"


class Graph:
    """A one-op TOSA graph under construction."""

    def __init__(self) -> None:
        self.args: list[tuple[str, np.ndarray]] = []
        self.lines: list[str] = []

    def input(self, array: np.ndarray) -> str:
        name = f"%in{len(self.args)}"
        self.args.append((name, array))
        return name

    def const(self, array: np.ndarray) -> str:
        name = f"%c{len(self.lines)}"
        t = mlir_type(array.dtype, array.shape)
        self.lines.append(
            f'{name} = "tosa.const"() <{{values = dense<{_dense(array)}> : {t}}}> : () -> {t}'
        )
        return name

    def const_shape(self, values) -> str:
        values = np.asarray(values, dtype=np.int64).reshape(-1)
        name = f"%s{len(self.lines)}"
        n = values.size
        self.lines.append(
            f"{name} = tosa.const_shape {{values = dense<{_dense(values)}> : "
            f"tensor<{n}xindex>}} : () -> !tosa.shape<{n}>"
        )
        return name

    def mlir(self, op_line: str, result: TensorType) -> str:
        rt = mlir_type(result.dtype, result.shape)
        params = ", ".join(f"{n}: {mlir_type(a.dtype, a.shape)}" for n, a in self.args)
        body = "\n    ".join([*self.lines, f"%out = {op_line} -> {rt}"])
        return (
            f"module {{\n  func.func @main({params}) -> ({rt}) {{\n    {body}\n"
            f"    return %out : {rt}\n  }}\n}}\n"
        )

    def reference(self, op_line: str, result: TensorType) -> np.ndarray:
        """The reference result; hypothesis discards the example when the spec's REQUIREs fail."""
        try:
            (out,) = tosa_reference(self.mlir(op_line, result), [a for _, a in self.args])
        except ReferenceUnpredictable:
            assume(False)
        return out


def run_op(name: str, result: TensorType, **operands) -> np.ndarray:
    """Plan-check and run one op from pyvgf's table, as the interpreter would."""
    opdef = OPS[name]
    check_operands = {
        k: (
            TensorType(v.dtype, v.shape)
            if isinstance(v, np.ndarray) and k.startswith(("input", "values", "indices"))
            else v
        )
        for k, v in operands.items()
    }
    if isinstance(operands.get("input1"), list):
        check_operands["input1"] = [TensorType(a.dtype, a.shape) for a in operands["input1"]]
    opdef.check(result, **check_operands)
    kept = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in operands.items()}
    out = opdef.fn(**operands)
    for k, v in operands.items():
        if isinstance(v, np.ndarray):
            assert v.tobytes() == kept[k].tobytes(), f"{name} modified its operand {k}"
    assert isinstance(out, np.ndarray), f"{name} returned {type(out).__name__}"
    assert out.dtype == np.dtype(result.dtype), f"{name}: dtype {out.dtype} != {result.dtype}"
    assert out.shape == tuple(result.shape), f"{name}: shape {out.shape} != {result.shape}"
    fast = fast_form(name)
    if fast is not None:  # the fast executor's override gives the reference's result
        assert_executors_agree(fast(**operands), out, f"{name}: fast vs reference")
    return out


def fast_form(name: str):
    """The fast executor's override of op `name`, where the fast extra is installed; else None."""
    from pyvgf import fast

    if not fast.available():
        return None
    import pyvgf.fast.plan  # noqa: F401  (registers the fast forms)
    from pyvgf.fast.registry import FAST

    extra = FAST.get(name)
    return None if extra is None else extra.fn


def assert_executors_agree(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Integers bit-exact, floats within pyvgf.testing's tolerance (NaN where NaN)."""
    from pyvgf.testing.compare import _mismatch, tolerance

    problem = _mismatch(np.asarray(got), np.asarray(want), tolerance(want.dtype))
    assert problem is None, f"{what}: {problem}"


def ulps(dtype: np.dtype) -> float:
    return {FP16: 2.0**-10, BF16: 2.0**-7, FP32: 2.0**-23, FP8E4M3: 2.0**-3, FP8E5M2: 2.0**-2}[
        np.dtype(dtype)
    ]


def assert_same(
    ours: np.ndarray, ref: np.ndarray, *, max_ulps: float | np.ndarray = 0.0, abs_tol: float = 0.0
) -> None:
    """Integers and bools exactly; floats within `max_ulps` (a number, or an array of the result
    shape) units in the last place of the reference value (plus `abs_tol`), NaN where the
    reference has NaN, infinities equal."""
    assert ours.dtype == ref.dtype and ours.shape == ref.shape, (
        ours.dtype,
        ours.shape,
        ref.dtype,
        ref.shape,
    )
    if ours.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, ref)
        return
    a, b = ours.astype(np.float64), ref.astype(np.float64)
    np.testing.assert_array_equal(
        np.isnan(a), np.isnan(b), err_msg=f"NaN positions differ\n{a}\n{b}"
    )
    finite = np.isfinite(b)
    np.testing.assert_array_equal(a[~finite & ~np.isnan(b)], b[~finite & ~np.isnan(b)])
    scale = np.maximum(
        np.abs(b[finite]), np.finfo(np.float32).tiny if ours.dtype == FP32 else 2.0**-14
    )
    tol = np.broadcast_to(max_ulps, b.shape)[finite] * ulps(ours.dtype) * scale + abs_tol
    bad = ~(np.abs(a[finite] - b[finite]) <= tol)
    assert not bad.any(), (
        f"{bad.sum()} values differ beyond tolerance:\n"
        f"ours {a[finite][bad][:8]}\nref  {b[finite][bad][:8]}"
    )


# ---------------------------------------------------------------------------- strategies


def examples(count: int) -> settings:
    """Hypothesis settings for an op test: `count` examples, no deadline (the reference model
    runs in a child process)."""
    return settings(max_examples=count, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def shapes(min_rank: int = 1, max_rank: int = 4, max_dim: int = 5) -> st.SearchStrategy:
    return st.lists(st.integers(1, max_dim), min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def broadcast_shapes(draw, count: int = 2, min_rank: int = 0, max_rank: int = 4):
    """`count` input shapes that broadcast (dims equal or 1) and their broadcast shape."""
    out = draw(shapes(min_rank, max_rank))
    ins = []
    for _ in range(count):
        mask = draw(st.lists(st.booleans(), min_size=len(out), max_size=len(out)))
        ins.append(tuple(1 if m else d for d, m in zip(out, mask)))
    full = tuple(max(dims) for dims in zip(*ins))
    return ins, full


def rng_from(draw) -> np.random.Generator:
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


def random_values(
    rng: np.random.Generator,
    dtype: np.dtype,
    shape,
    *,
    low=None,
    high=None,
    specials: bool = True,
    scale: float = 4.0,
) -> np.ndarray:
    """Random tensor values: integers over [low, high] (default: the dtype's range), floats
    normal * scale with some zeros, infinities and NaNs when `specials`."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "i":
        info = (
            (-(1 << 47), (1 << 47) - 1)
            if dtype == I48
            else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        )
        lo = info[0] if low is None else low
        hi = info[1] if high is None else high
        values = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
        edges = np.array([lo, hi, 0, -1, 1], dtype=np.int64)
        edges = edges[(edges >= lo) & (edges <= hi)]
        pick = rng.random(shape) < 0.1
        values = np.where(pick, rng.choice(edges, size=shape), values)
        return np.asarray(values).astype(dtype)
    values = rng.standard_normal(shape) * scale
    if low is not None or high is not None:
        values = np.clip(values, low, high)
    if specials:
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
        if dtype in (FP8E4M3,):
            special = special[[0, 1, 4]]
        pick = rng.random(shape) < 0.08
        values = np.where(pick, rng.choice(special, size=shape), values)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(values).astype(np.float32).astype(dtype)


FLOAT_TYPES = [FP16, BF16, FP32]
INT_TYPES = [I8, I16, I32]
