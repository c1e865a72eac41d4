"""RESIZE against tosa_reference_model: NEAREST and BILINEAR, integer and float, with scale,
offset and border drawn by hypothesis over the specification's allowed ranges."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pyvgf.errors import TosaError
from pyvgf.tosa import OPS
from pyvgf.types import TensorType
from support.tosa import examples
from support.tosa_tensor import Case, Shape, run_case

I8, I16, I32, I48 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
F16, BF16, F32 = (np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, np.float32))
NEAREST, BILINEAR = 1, 2
OUT = {(I8, BILINEAR): I32, (I16, BILINEAR): I48}

FAST = examples(8)
SLOW = examples(200)


@st.composite
def axes(draw):
    """(size, scale_n, scale_d, offset, border, out) for one axis, output size exact."""
    size = draw(st.integers(1, 8))
    n = draw(st.integers(1, 12))
    d = draw(st.integers(1, min(12, 16 * n - 1)))
    offset = draw(st.integers(-n, min(16 * n - 1, 3 * n)))
    base = (size - 1) * n - offset
    border = (-base) % d - d * draw(st.integers(0, 2))
    assume(-16 * n <= border < n and base + border >= 0)
    return size, n, d, offset, border, (base + border) // d + 1


def resize_case(dtype, mode, y, x, batch, channels, seed):
    rng = np.random.default_rng(seed)
    ih, yn, yd, yo, yb, oh = y
    iw, xn, xd, xo, xb, ow = x
    shape = (batch, ih, iw, channels)
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max + 1, shape).astype(dtype)
    else:
        values = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    out_dtype = OUT.get((dtype, mode), dtype)
    return Case("RESIZE", "tosa.resize",
                [("input", values), ("scale", Shape((yn, yd, xn, xd))),
                 ("offset", Shape((yo, xo))), ("border", Shape((yb, xb)))],
                {"mode": mode}, f"mode = {'NEAREST_NEIGHBOR' if mode == NEAREST else 'BILINEAR'}",
                [TensorType(out_dtype, (batch, oh, ow, channels))])


DTYPES = [I8, I16, F32, F16, BF16]


@pytest.mark.parametrize("mode", [NEAREST, BILINEAR], ids=["nearest", "bilinear"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@FAST
@given(axes(), axes(), st.integers(1, 2), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_resize(dtype, mode, y, x, batch, channels, seed):
    run_case(resize_case(dtype, mode, y, x, batch, channels, seed))


@pytest.mark.slow
@pytest.mark.parametrize("mode", [NEAREST, BILINEAR], ids=["nearest", "bilinear"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@SLOW
@given(axes(), axes(), st.integers(1, 2), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_resize_sweep(dtype, mode, y, x, batch, channels, seed):
    run_case(resize_case(dtype, mode, y, x, batch, channels, seed))


def test_resize_upscale_2x_align_corners_style():
    """The common 2x bilinear upscale (scale 4/2, offset -1, border 1) on int8."""
    run_case(resize_case(I8, BILINEAR, (4, 4, 2, -1, 1, 8), (5, 4, 2, -1, 1, 10), 1, 3, 3))


def _operands(**change):
    operands = {"input": TensorType(I8, (1, 4, 4, 1)), "scale": np.array([2, 1, 2, 1]),
                    "offset": np.array([0, 0]), "border": np.array([0, 0]), "mode": NEAREST}
    operands.update(change)
    return operands


def test_resize_check_accepts_a_valid_node():
    OPS["RESIZE"].check(TensorType(I8, (1, 7, 7, 1)), **_operands())


@pytest.mark.parametrize("change,message", [
    ({"scale": np.array([0, 1, 2, 1])}, "scale must be > 0, got [0, 1, 2, 1]"),
    ({"scale": np.array([1, 16, 2, 1])}, "scale must downscale less than 16x, got [1, 16, 2, 1]"),
    ({"offset": np.array([-3, 0])}, "offset must be in [-scale_n, 16 * scale_n), got [-3, 0]"),
    ({"border": np.array([2, 0])}, "border must be in [-16 * scale_n, scale_n), got [2, 0]"),
    ({"mode": 3}, "mode must be one of (1, 2), got 3"),
    ({"input": TensorType(I32, (1, 4, 4, 1))}, "input element type i32 is not supported"),
])
def test_resize_check_names_the_bad_operand(change, message):
    with pytest.raises(TosaError, match=re.escape(f"RESIZE: {message}")):
        OPS["RESIZE"].check(TensorType(I8, (1, 7, 7, 1)), **_operands(**change))


def test_resize_check_rejects_a_wrong_result_type():
    with pytest.raises(TosaError, match="RESIZE: result element type must be one of i32, got i8"):
        OPS["RESIZE"].check(TensorType(I8, (1, 7, 7, 1)), **_operands(mode=BILINEAR))
