"""Data layout ops against tosa_reference_model on real one-op graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvgf.errors import TosaError
from pyvgf.types import TensorType
from support.tosa import (
    BF16,
    BOOL,
    FP8E4M3,
    FP8E5M2,
    FP16,
    FP32,
    I8,
    I16,
    I32,
    Graph,
    assert_same,
    examples,
    mlir_type,
    random_values,
    rng_from,
    run_op,
    shapes,
)

FEW = examples(12)
MANY = examples(200)
TYPES = [BOOL, I8, I16, I32, FP16, BF16, FP32, FP8E4M3, FP8E5M2]


@st.composite
def tensor(draw, min_rank=1, max_rank=4):
    dtype = draw(st.sampled_from(TYPES))
    return random_values(rng_from(draw), dtype, draw(shapes(min_rank, max_rank)))


def _t(x: np.ndarray) -> str:
    return mlir_type(x.dtype, x.shape)


@st.composite
def layout_case(draw, op):
    x = draw(tensor())
    r = x.ndim
    if op == "CONCAT":
        axis = draw(st.integers(0, r - 1))
        count = draw(st.integers(1, 3))
        rng = rng_from(draw)
        parts = [x]
        for _ in range(count - 1):
            shape = list(x.shape)
            shape[axis] = draw(st.integers(1, 4))
            parts.append(random_values(rng, x.dtype, tuple(shape)))
        return {"axis": axis, "input1": parts}
    if op == "PAD":
        padding = np.array(
            draw(st.lists(st.integers(0, 3), min_size=2 * r, max_size=2 * r)), np.int64
        )
        value = random_values(rng_from(draw), x.dtype, (1,), specials=False)
        return {"input1": x, "padding": padding, "pad_const": value}
    if op == "RESHAPE":
        new = tuple(int(d) for d in draw(st.permutations(list(x.shape))))
        if draw(st.booleans()):
            new = (1, int(np.prod(x.shape)))
        return {"input1": x, "shape": np.array(new, np.int64)}
    if op == "REVERSE":
        return {"axis": draw(st.integers(0, r - 1)), "input1": x}
    if op == "SLICE":
        start = [draw(st.integers(0, d - 1)) for d in x.shape]
        size = [draw(st.integers(1, d - s)) for d, s in zip(x.shape, start)]
        return {"input1": x, "start": np.array(start, np.int64), "size": np.array(size, np.int64)}
    if op == "TILE":
        reps = np.array(draw(st.lists(st.integers(1, 3), min_size=r, max_size=r)), np.int64)
        return {"input1": x, "multiples": reps}
    assert op == "TRANSPOSE"
    return {"perms": np.array(draw(st.permutations(range(r))), np.int32), "input1": x}


def _result(op, k) -> TensorType:
    x = k["input1"][0] if op == "CONCAT" else k["input1"]
    if op == "CONCAT":
        shape = list(x.shape)
        shape[k["axis"]] = sum(p.shape[k["axis"]] for p in k["input1"])
        return TensorType(x.dtype, tuple(shape))
    if op == "PAD":
        pairs = k["padding"].reshape(-1, 2)
        return TensorType(x.dtype, tuple(int(d + a + b) for d, (a, b) in zip(x.shape, pairs)))
    if op == "RESHAPE":
        return TensorType(x.dtype, tuple(int(d) for d in k["shape"]))
    if op == "SLICE":
        return TensorType(x.dtype, tuple(int(d) for d in k["size"]))
    if op == "TILE":
        return TensorType(x.dtype, tuple(int(d * m) for d, m in zip(x.shape, k["multiples"])))
    if op == "TRANSPOSE":
        return TensorType(x.dtype, tuple(x.shape[p] for p in k["perms"]))
    return TensorType(x.dtype, x.shape)


def _line(op, g, k) -> str:
    if op == "CONCAT":
        names = [g.input(p) for p in k["input1"]]
        return (
            f"tosa.concat {', '.join(names)} {{axis = {k['axis']} : i32}} : "
            f"({', '.join(_t(p) for p in k['input1'])})"
        )
    x = k["input1"]
    xi = g.input(x)
    if op == "PAD":
        p, c = g.const_shape(k["padding"]), g.const(k["pad_const"])
        return (
            f"tosa.pad {xi}, {p}, {c} : ({_t(x)}, !tosa.shape<{2 * x.ndim}>, {_t(k['pad_const'])})"
        )
    if op == "RESHAPE":
        s = g.const_shape(k["shape"])
        return f"tosa.reshape {xi}, {s} : ({_t(x)}, !tosa.shape<{k['shape'].size}>)"
    if op == "REVERSE":
        return f"tosa.reverse {xi} {{axis = {k['axis']} : i32}} : ({_t(x)})"
    if op == "SLICE":
        a, b = g.const_shape(k["start"]), g.const_shape(k["size"])
        return (
            f"tosa.slice {xi}, {a}, {b} : ({_t(x)}, !tosa.shape<{x.ndim}>, !tosa.shape<{x.ndim}>)"
        )
    if op == "TILE":
        m = g.const_shape(k["multiples"])
        return f"tosa.tile {xi}, {m} : ({_t(x)}, !tosa.shape<{x.ndim}>)"
    perms = ", ".join(str(int(p)) for p in k["perms"])
    return f"tosa.transpose {xi} {{perms = array<i32: {perms}>}} : ({_t(x)})"


def _check_layout(op, k):
    g = Graph()
    result = _result(op, k)
    ref = g.reference(_line(op, g, k), result)
    assert_same(run_op(op, result, **k), ref)


OPS = ["CONCAT", "PAD", "RESHAPE", "REVERSE", "SLICE", "TILE", "TRANSPOSE"]


@pytest.mark.parametrize("op", OPS)
@FEW
@given(data=st.data())
def test_layout_matches_reference(op, data):
    _check_layout(op, data.draw(layout_case(op)))


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
@MANY
@given(data=st.data())
def test_layout_matches_reference_many(op, data):
    _check_layout(op, data.draw(layout_case(op)))


def test_layout_checks():
    x = np.zeros((2, 3), I8)
    with pytest.raises(TosaError, match=r"start \[1, 2\] \+ size \[2, 1\] exceeds input1 shape"):
        run_op(
            "SLICE", TensorType(I8, (2, 1)), input1=x, start=np.array([1, 2]), size=np.array([2, 1])
        )
    with pytest.raises(TosaError, match="perms must be a permutation of 0..1"):
        run_op("TRANSPOSE", TensorType(I8, (3, 2)), perms=np.array([1, 1], np.int32), input1=x)
    with pytest.raises(TosaError, match="padding must hold 4 values"):
        run_op(
            "PAD",
            TensorType(I8, (2, 3)),
            input1=x,
            padding=np.zeros(2, np.int64),
            pad_const=np.zeros(1, I8),
        )
    with pytest.raises(TosaError, match="pad_const element type must be i8"):
        run_op(
            "PAD",
            TensorType(I8, (2, 3)),
            input1=x,
            padding=np.zeros(4, np.int64),
            pad_const=np.zeros(1, I32),
        )
    with pytest.raises(TosaError, match=r"input1\[1\] shape \(2, 2\) must match input1\[0\] shape"):
        run_op("CONCAT", TensorType(I8, (4, 3)), axis=0, input1=[x, np.zeros((2, 2), I8)])
    with pytest.raises(
        TosaError, match=r"result shape \(7,\) holds 7 elements, input1 shape \(2, 3\) holds 6"
    ):
        run_op("RESHAPE", TensorType(I8, (7,)), input1=x, shape=np.array([7]))
