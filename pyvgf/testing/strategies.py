"""Hypothesis strategies: tensors, single TOSA operators, and graphs of several operators.

    from pyvgf.testing import ops, graphs
    @given(ops(families=["conv2d"]))
    def test_conv(case): ...

Each drawn case is a `GraphCase`: `.to_vgf()`, `.to_mlir()`, `.random_inputs(seed)`. Shapes and
attributes are valid for TOSA 1.0 (output sizes divide exactly, zero points only where the
specification allows them) and input ranges keep every operator inside its defined domain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..build import Graph, Value
from ..build._grammar import TOSA_OPERANDS
from ..build.dtypes import SUPPORTED
from .case import Domain, GraphCase

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I8, I16, I32, BOOL = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.bool_)
INT48 = "int48"
"""The int48 element type (held in int64): the accumulator and result of int16 convolutions."""
F8E4M3, F8E5M2 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
FLOATS = (F32, F16, BF16)


def _is_float(dtype: np.dtype) -> bool:
    """Any floating-point dtype, bfloat16 and fp8 included (numpy gives those kind 'V')."""
    return dtype in FLOATS or dtype in (F8E4M3, F8E5M2)
SMALL_INT = Domain(-1000, 1000)
EXACT = Domain(-1.0, 1.0, step=0.25)
"""Float inputs of dot products: with weights in steps of 1/8, every partial sum of a
convolution or matmul of this package's sizes is exact in float16, so no summation order
can change a result."""


def tensors(dtype: object = None, shape: Sequence[int] | None = None, *, max_rank: int = 4,
            max_side: int = 6) -> st.SearchStrategy[np.ndarray]:
    """numpy arrays of a supported dtype (every one when `dtype` is None); floats are finite."""
    dtypes = st.sampled_from(SUPPORTED) if dtype is None else st.just(np.dtype(dtype))
    shapes = st.just(tuple(shape)) if shape is not None else hnp.array_shapes(
        min_dims=1, max_dims=max_rank, min_side=1, max_side=max_side)

    @st.composite
    def draw_array(draw):
        dt, sh = draw(dtypes), draw(shapes)
        if _is_float(dt):
            values = draw(hnp.arrays(np.float32, sh, elements=st.floats(-100, 100, width=32)))
            return values.astype(dt)
        return draw(hnp.arrays(dt, sh))

    return draw_array()


def _shape(draw, min_rank: int = 1, max_rank: int = 4, max_side: int = 5) -> tuple[int, ...]:
    return draw(hnp.array_shapes(min_dims=min_rank, max_dims=max_rank, min_side=1, max_side=max_side))


def _any_rank(draw) -> tuple[int, ...]:
    """A shape of rank 0..4 (elementwise operators take rank-0 operands too), rank 0 often."""
    return () if draw(st.integers(0, 4)) == 0 else _shape(draw)


def _broadcast_pair(draw, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes of the same rank that broadcast to `shape` (TOSA: equal dims or 1)."""
    masks = draw(st.lists(st.sampled_from([0, 1, 2]), min_size=len(shape), max_size=len(shape)))
    a = tuple(1 if m == 1 else d for d, m in zip(shape, masks))
    b = tuple(1 if m == 2 else d for d, m in zip(shape, masks))
    return a, b


def _zp(dtype: np.dtype, value: float = 0) -> np.ndarray:
    return np.array([value], dtype=dtype)


# --- single-operator families: each returns the result Value, adding inputs to `case` ---

_FLOAT_DOMAINS = {
    "EXP": Domain(-8.0, 8.0), "LOG": Domain(0.05, 50.0), "RSQRT": Domain(0.05, 50.0),
    "RECIPROCAL": Domain(-8.0, 8.0, nonzero=True), "SIN": Domain(-6.0, 6.0),
    "COS": Domain(-6.0, 6.0),
}
_UNARY = {
    "ABS": (*FLOATS, I32), "NEGATE": (*FLOATS, I8, I16, I32), "CEIL": FLOATS, "FLOOR": FLOATS,
    "EXP": FLOATS, "LOG": FLOATS, "SIN": FLOATS, "COS": FLOATS, "TANH": FLOATS,
    "SIGMOID": FLOATS, "ERF": FLOATS, "RECIPROCAL": FLOATS, "RSQRT": FLOATS, "CLZ": (I32,),
    "BITWISE_NOT": (I8, I16, I32), "LOGICAL_NOT": (BOOL,),
}
_BINARY = {
    "ADD": (*FLOATS, I32), "SUB": (*FLOATS, I32), "MUL": (*FLOATS, I32),
    "MAXIMUM": (*FLOATS, I32), "MINIMUM": (*FLOATS, I32), "POW": FLOATS, "INTDIV": (I32,),
    "BITWISE_AND": (I8, I16, I32), "BITWISE_OR": (I8, I16, I32), "BITWISE_XOR": (I8, I16, I32),
    "LOGICAL_LEFT_SHIFT": (I8, I16, I32), "LOGICAL_RIGHT_SHIFT": (I8, I16, I32),
    "ARITHMETIC_RIGHT_SHIFT": (I8, I16, I32), "EQUAL": (*FLOATS, I32),
    "GREATER": (*FLOATS, I32), "GREATER_EQUAL": (*FLOATS, I32), "LOGICAL_AND": (BOOL,),
    "LOGICAL_OR": (BOOL,), "LOGICAL_XOR": (BOOL,), "MUL_INT": (I8, I16, I32),
}
"""Elementwise binary operators and their operand types; MUL_INT is MUL of int8 / int16 (result
int32) and of int32 with a non-zero shift."""


def _int_domain(dtype: np.dtype, name: str) -> Domain:
    if name in ("ADD", "SUB", "MUL", "MUL_INT", "INTDIV", "ABS", "NEGATE") and dtype == I32:
        return SMALL_INT
    if name == "NEGATE":
        info = np.iinfo(dtype)
        return Domain(int(info.min) + 1, int(info.max))
    return Domain(int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))


def _domain(dtype: np.dtype, name: str) -> Domain | None:
    if dtype == BOOL:
        return None
    if _is_float(dtype):
        return _FLOAT_DOMAINS.get(name, Domain(-4.0, 4.0))
    return _int_domain(dtype, name)


def _unary_op(case: GraphCase, name: str, x: Value) -> Value:
    """A one-input elementwise op (its operand is `input` or `input1`, as the grammar says)."""
    if name == "NEGATE":
        return case.graph.op(name, input1=x, input1_zp=_zp(x.dtype), output_zp=_zp(x.dtype))
    return case.graph.op(name, **{TOSA_OPERANDS[name][0]: x})


def unary(draw, case: GraphCase, x: Value | None = None) -> Value:
    name = draw(st.sampled_from(sorted(_UNARY)))
    dtype = x.dtype if x is not None else draw(st.sampled_from(_UNARY[name]))
    if x is None:
        x = case.input(dtype, _any_rank(draw), _domain(dtype, name))
    return _unary_op(case, name, x)


def binary(draw, case: GraphCase, x: Value | None = None, names: Sequence[str] | None = None) -> Value:
    name = draw(st.sampled_from(sorted(names or _BINARY)))
    dtype = x.dtype if x is not None else draw(st.sampled_from(_BINARY[name]))
    shape = x.shape if x is not None else _any_rank(draw)
    sa, sb = _broadcast_pair(draw, shape)
    if x is None:
        x = case.input(dtype, sa, Domain(0.1, 4.0) if name == "POW" else _domain(dtype, name))
    else:
        sb = tuple(d if d == 1 else s for d, s in zip(sb, shape))
    second = {
        "INTDIV": Domain(-1000, 1000, nonzero=True),
        "POW": Domain(-2.0, 2.0),
    }.get(name, _domain(dtype, name))
    if name in ("LOGICAL_LEFT_SHIFT", "LOGICAL_RIGHT_SHIFT", "ARITHMETIC_RIGHT_SHIFT"):
        second = Domain(0, dtype.itemsize * 8 - 1)
    y = case.input(dtype, sb, second)
    if name == "MUL":
        return case.graph.op(name, input1=x, input2=y, shift=_zp(I8))
    if name == "MUL_INT":  # int8 / int16 operands give int32; int32 ones take a shift
        shift = draw(st.integers(0, 20)) if dtype == I32 else 0
        return case.graph.op("MUL", input1=x, input2=y, shift=_zp(I8, shift), result=(I32, shape))
    if name == "ARITHMETIC_RIGHT_SHIFT":
        return case.graph.op(name, input1=x, input2=y, round=draw(st.booleans()))
    if name in ("MAXIMUM", "MINIMUM"):
        return case.graph.op(name, input1=x, input2=y, nan_mode=draw(st.sampled_from(["PROPAGATE", "IGNORE"])))
    return case.graph.op(name, input1=x, input2=y)


def clamp(draw, case: GraphCase, x: Value | None = None) -> Value:
    dtype = x.dtype if x is not None else draw(st.sampled_from([*FLOATS, I8, I16]))
    if x is None:
        x = case.input(dtype, _any_rank(draw))
    if dtype in FLOATS:
        lo, hi = sorted(draw(st.lists(st.floats(-4, 4, width=16), min_size=2, max_size=2)))
    else:
        info = np.iinfo(dtype)
        lo, hi = sorted(draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=2, max_size=2)))
    return case.graph.op("CLAMP", input=x, min_val=lo, max_val=hi)


def rescale(draw, case: GraphCase, x: Value | None = None) -> Value:
    in_dtype = x.dtype if x is not None else draw(st.sampled_from([I8, I16, I32]))
    out_dtype = draw(st.sampled_from([I8, I16, I32]))
    if x is None:
        # with shift >= 31 the spec requires |value| < 2**(shift - 1)
        x = case.input(in_dtype, _any_rank(draw), Domain(-(1 << 24), 1 << 24) if in_dtype == I32 else None)
    channels = x.shape[-1] if x.shape else 1
    per_channel = draw(st.booleans()) if x.shape else False
    n = channels if per_channel else 1
    scale32 = draw(st.booleans()) if in_dtype != I32 else True
    if scale32:
        mult = draw(hnp.arrays(np.int32, n, elements=st.integers(1 << 30, (1 << 31) - 1)))
        shift = draw(hnp.arrays(np.int8, n, elements=st.integers(30, 40)))
    else:
        mult = draw(hnp.arrays(np.int16, n, elements=st.integers(1 << 14, (1 << 15) - 1)))
        shift = draw(hnp.arrays(np.int8, n, elements=st.integers(14, 24)))
    # unsigned: RESCALE reads int8 / int16 bits as uint8 / uint16 (input_unsigned) or writes them
    # (output_unsigned), never both nor beside int32; a uint16 zero point is 0 or 32768, a uint8
    # one any byte
    sign = draw(st.sampled_from(["signed", "input_unsigned", "output_unsigned"]))
    in_u = sign == "input_unsigned" and in_dtype in (I8, I16) and out_dtype != I32
    out_u = sign == "output_unsigned" and out_dtype in (I8, I16) and in_dtype != I32
    in_zp = _rescale_zp(draw, in_dtype, in_u)
    out_zp = _rescale_zp(draw, out_dtype, out_u)
    rounding = draw(st.sampled_from(["SINGLE_ROUND", "DOUBLE_ROUND"] if scale32 else ["SINGLE_ROUND"]))
    return case.graph.op(
        "RESCALE", input=x, multiplier=mult, shift=shift, input_zp=_zp(in_dtype, in_zp),
        output_zp=_zp(out_dtype, out_zp), scale32=scale32, rounding_mode=rounding,
        per_channel=per_channel, input_unsigned=in_u, output_unsigned=out_u,
        result=(out_dtype, x.shape),
    )


def _rescale_zp(draw, dtype: np.dtype, unsigned: bool) -> int:
    """A RESCALE zero point as its int8 / int16 bits."""
    if dtype == I16 and unsigned:
        return draw(st.sampled_from([0, -32768]))  # uint16 0 or 32768
    return draw(st.integers(-128, 127)) if dtype == I8 else 0


def _factor(draw, size: int, rank: int) -> tuple[int, ...]:
    dims = []
    for _ in range(rank - 1):
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        size //= d
    return tuple(dims + [size])


def reshape(draw, case: GraphCase, x: Value | None = None) -> Value:
    if x is None:
        x = case.input(draw(st.sampled_from([*FLOATS, I8, I32, BOOL])), _shape(draw))
    new = _factor(draw, int(np.prod(x.shape)), draw(st.integers(1, 4)))
    return case.graph.op("RESHAPE", input1=x, shape=new, result=(x.dtype, new))


def transpose(draw, case: GraphCase, x: Value | None = None) -> Value:
    if x is None:
        x = case.input(draw(st.sampled_from([*FLOATS, I8, I32, BOOL])), _shape(draw))
    perms = tuple(draw(st.permutations(range(len(x.shape)))))
    return case.graph.op("TRANSPOSE", input1=x, perms=perms,
                         result=(x.dtype, tuple(x.shape[p] for p in perms)))


def _conv_types(draw, dtype: np.dtype | None):
    """(input dtype, weight dtype, bias/result dtype, acc_type) of a convolution."""
    options = [(F32, F32, F32, "FP32"), (F16, F16, F16, "FP16"), (F16, F16, F16, "FP32"), (BF16, BF16, BF16, "FP32"),
               (I8, I8, I32, "INT32"), (I16, I8, INT48, "INT48")]
    if dtype is not None:
        options = [o for o in options if o[0] == dtype]
    return draw(st.sampled_from(options))


def _window(draw, case: GraphCase, x: Value | None, in_t: np.dtype, channels: int, dilate: bool,
            pad_below_kernel: bool):
    """Draw a 2-D window (kernel, stride, dilation, pad) and an NHWC input it fits exactly.

    Returns (x, (kh, kw), (sy, sx), (dy, dx), pad, (oh, ow))."""
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sy, sx = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    dy, dx = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) if dilate else (1, 1)
    limit = (kh - 1, kh - 1, kw - 1, kw - 1) if pad_below_kernel else (1, 1, 1, 1)
    pad = tuple(draw(st.integers(0, min(1, m))) for m in limit)
    if x is None:
        oh, ow = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        while sy * (oh - 1) + (kh - 1) * dy + 1 - pad[0] - pad[1] < 1:
            oh += 1
        while sx * (ow - 1) + (kw - 1) * dx + 1 - pad[2] - pad[3] < 1:
            ow += 1
        h = sy * (oh - 1) + (kh - 1) * dy + 1 - pad[0] - pad[1]
        w = sx * (ow - 1) + (kw - 1) * dx + 1 - pad[2] - pad[3]
        x = case.input(in_t, (draw(st.integers(1, 2)), h, w, channels), EXACT if _is_float(in_t) else None)
    else:  # fit the window to the given input: no padding beyond what the sizes need
        kh, kw = min(kh, x.shape[1]), min(kw, x.shape[2])
        dy, dx, sy, sx, pad = 1, 1, 1, 1, (0, 0, 0, 0)
    h, w = x.shape[1], x.shape[2]
    if not pad_below_kernel:
        pad = _fit_pad(h, kh, dy, sy, pad[0], pad[1]) + _fit_pad(w, kw, dx, sx, pad[2], pad[3])
    oh = (h - 1 + pad[0] + pad[1] - (kh - 1) * dy) // sy + 1
    ow = (w - 1 + pad[2] + pad[3] - (kw - 1) * dx) // sx + 1
    return x, (kh, kw), (sy, sx), (dy, dx), pad, (oh, ow)


def _bias(case: GraphCase, draw, dtype, n: int) -> Value | np.ndarray:
    if dtype == INT48:
        return case.graph.constant(draw(hnp.arrays(np.int64, n, elements=st.integers(-1000, 1000))), INT48)
    return _weights(draw, dtype, (n,), small=True)


def _zp_value(draw, dtype: np.dtype) -> int:
    return draw(st.integers(-128, 127)) if dtype == I8 else 0


def conv2d(draw, case: GraphCase, x: Value | None = None) -> Value:
    if x is not None and (len(x.shape) != 4 or x.dtype not in (F32, F16)):
        return _unary_safe(draw, case, x) if _is_float(x.dtype) else clamp(draw, case, x)
    in_t, w_t, out_t, acc = _conv_types(draw, None if x is None else x.dtype)
    depthwise = draw(st.booleans())
    x, (kh, kw), stride, dilation, pad, (oh, ow) = _window(
        draw, case, x, in_t, draw(st.integers(1, 4)), dilate=True, pad_below_kernel=False)
    n, _, _, ic = x.shape
    m = draw(st.integers(1, 3))
    out_c = ic * m if depthwise else draw(st.integers(1, 4))
    weight = _weights(draw, w_t, (kh, kw, ic, m) if depthwise else (out_c, kh, kw, ic))
    y = case.graph.op(
        "DEPTHWISE_CONV2D" if depthwise else "CONV2D", input=x, weight=weight,
        bias=_bias(case, draw, out_t, out_c), input_zp=_zp(in_t, _zp_value(draw, in_t)), weight_zp=_zp(w_t),
        pad=pad, stride=stride, dilation=dilation, acc_type=acc, result=(out_t, (n, oh, ow, out_c)),
    )
    if out_t == INT48:  # as real models do (and tosa_reference_model returns no int48): to int32
        y = case.graph.op(
            "RESCALE", input=y, multiplier=np.array([1 << 14], np.int16), shift=np.array([14], np.int8),
            input_zp=case.graph.constant([0], INT48), output_zp=_zp(I32), scale32=False, rounding_mode="SINGLE_ROUND",
            per_channel=False, input_unsigned=False, output_unsigned=False, result=(I32, y.shape),
        )
    return y


def pool2d(draw, case: GraphCase, x: Value | None = None) -> Value:
    """MAX_POOL2D and AVG_POOL2D (padding smaller than the kernel, as the spec requires)."""
    if x is not None and (len(x.shape) != 4 or x.dtype not in (F32, F16)):
        return _unary_safe(draw, case, x) if _is_float(x.dtype) else clamp(draw, case, x)
    name = draw(st.sampled_from(["MAX_POOL2D", "AVG_POOL2D"]))
    options = {"MAX_POOL2D": [(F32, None), (F16, None), (I8, None), (I16, None)],
               "AVG_POOL2D": [(F32, "FP32"), (F16, "FP16"), (F16, "FP32"), (I8, "INT32"), (I16, "INT32")]}[name]
    if x is not None:
        options = [o for o in options if o[0] == x.dtype]
    in_t, acc = draw(st.sampled_from(options))
    x, kernel, stride, _, pad, (oh, ow) = _window(
        draw, case, x, in_t, draw(st.integers(1, 4)), dilate=False, pad_below_kernel=True)
    result = (in_t, (x.shape[0], oh, ow, x.shape[3]))
    if name == "MAX_POOL2D":
        return case.graph.op(name, input=x, kernel=kernel, stride=stride, pad=pad, result=result)
    zps = _zp(in_t, _zp_value(draw, in_t)), _zp(in_t, _zp_value(draw, in_t))
    return case.graph.op(name, input=x, kernel=kernel, stride=stride, pad=pad, acc_type=acc,
                         input_zp=zps[0], output_zp=zps[1], result=result)


def select(draw, case: GraphCase, x: Value | None = None) -> Value:
    dtype = x.dtype if x is not None else draw(st.sampled_from([*FLOATS, I8, I16, I32, BOOL]))
    shape = x.shape if x is not None else _shape(draw)
    s_cond, s_x = _broadcast_pair(draw, shape)
    if x is None:
        x = case.input(dtype, s_x)
    cond = case.input(BOOL, s_cond)
    other = case.input(dtype, shape)
    return case.graph.op("SELECT", input1=cond, input2=x, input3=other)


def _fit_pad(size: int, k: int, dil: int, stride: int, before: int, after: int) -> tuple[int, int]:
    """Paddings near (before, after) that make the output size an exact positive integer."""
    span = (k - 1) * dil
    after += max(0, span - (size - 1 + before + after))
    after += (-(size - 1 + before + after - span)) % stride
    return before, after


def _weights(draw, dtype: np.dtype, shape: tuple[int, ...], small: bool = False) -> np.ndarray:
    if _is_float(dtype):
        elements = st.integers(-8, 8).map(lambda v: v / 8)
        return draw(hnp.arrays(np.float32, shape, elements=elements)).astype(dtype)
    bound = 1000 if small else 127
    info = np.iinfo(dtype)
    return draw(hnp.arrays(dtype, shape, elements=st.integers(max(-bound, info.min), min(bound, info.max))))


def matmul(draw, case: GraphCase, x: Value | None = None) -> Value:
    if x is not None and (len(x.shape) != 3 or x.dtype not in (F32, F16, I8)):
        return reshape(draw, case, x)
    options = [(F32, F32), (F16, F16), (F16, F32), (BF16, F32), (I8, I32)]
    if x is not None:
        options = [o for o in options if o[0] == x.dtype]
    in_t, out_t = draw(st.sampled_from(options))
    if x is None:
        n, h, c = draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
        x = case.input(in_t, (n, h, c), EXACT if _is_float(in_t) else None)
    n, h, c = x.shape
    w = draw(st.integers(1, 5))
    b = case.input(in_t, (n, c, w), EXACT if _is_float(in_t) else None)
    zps = (draw(st.integers(-128, 127)), draw(st.integers(-128, 127))) if in_t == I8 else (0, 0)
    return case.graph.op("MATMUL", A=x, B=b, A_zp=_zp(in_t, zps[0]), B_zp=_zp(in_t, zps[1]),
                         result=(out_t, (n, h, w)))


_REDUCE = {
    "REDUCE_SUM": (F32, BF16, I32), "REDUCE_MAX": (*FLOATS, I8, I16, I32),
    "REDUCE_MIN": (*FLOATS, I8, I16, I32), "REDUCE_PRODUCT": (F32,),
    "REDUCE_ALL": (BOOL,), "REDUCE_ANY": (BOOL,),
}


def reduction(draw, case: GraphCase, x: Value | None = None) -> Value:
    names = sorted(_REDUCE) if x is None else [n for n in sorted(_REDUCE) if x.dtype in _REDUCE[n]]
    if not names:
        return transpose(draw, case, x)
    name = draw(st.sampled_from(names + ["ARGMAX"] if x is None else names))
    if name == "ARGMAX":
        if x is None:
            x = case.input(draw(st.sampled_from([F32, I8])), _shape(draw, min_rank=2))
        if len(x.shape) < 2:
            return transpose(draw, case, x)
        axis = draw(st.integers(0, len(x.shape) - 1))
        shape = x.shape[:axis] + x.shape[axis + 1:]
        return case.graph.op("ARGMAX", input=x, axis=axis, result=(I32, shape))
    if x is None:
        dtype = draw(st.sampled_from(_REDUCE[name]))
        domain = {"REDUCE_PRODUCT": Domain(0.5, 1.5), "REDUCE_SUM": Domain(-1000, 1000) if dtype == I32 else None}
        x = case.input(dtype, _shape(draw), domain.get(name))
    axis = draw(st.integers(0, len(x.shape) - 1))
    shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    extra = {"nan_mode": draw(st.sampled_from(["PROPAGATE", "IGNORE"]))} if name in ("REDUCE_MAX", "REDUCE_MIN") else {}
    return case.graph.op(name, input=x, axis=axis, result=(x.dtype, shape), **extra)


def data_layout(draw, case: GraphCase, x: Value | None = None) -> Value:
    """PAD, SLICE, TILE, REVERSE, CONCAT."""
    name = draw(st.sampled_from(["PAD", "SLICE", "TILE", "REVERSE", "CONCAT"]))
    if x is None:
        x = case.input(draw(st.sampled_from([*FLOATS, I8, I32, BOOL])), _shape(draw))
    rank = len(x.shape)
    if name == "PAD":
        padding = tuple(draw(st.lists(st.integers(0, 2), min_size=2 * rank, max_size=2 * rank)))
        shape = tuple(d + padding[2 * i] + padding[2 * i + 1] for i, d in enumerate(x.shape))
        return case.graph.op("PAD", input1=x, padding=padding, pad_const=np.zeros(1, x.dtype),
                             result=(x.dtype, shape))
    if name == "SLICE":
        start = tuple(draw(st.integers(0, d - 1)) for d in x.shape)
        size = tuple(draw(st.integers(1, d - s)) for d, s in zip(x.shape, start))
        return case.graph.op("SLICE", input1=x, start=start, size=size, result=(x.dtype, size))
    if name == "TILE":
        multiples = tuple(draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank)))
        return case.graph.op("TILE", input1=x, multiples=multiples,
                             result=(x.dtype, tuple(d * m for d, m in zip(x.shape, multiples))))
    axis = draw(st.integers(0, rank - 1))
    if name == "REVERSE":
        return case.graph.op("REVERSE", input1=x, axis=axis, result=(x.dtype, x.shape))
    other = x.shape[:axis] + (draw(st.integers(1, 3)),) + x.shape[axis + 1:]
    y = case.input(x.dtype, other)
    shape = x.shape[:axis] + (x.shape[axis] + other[axis],) + x.shape[axis + 1:]
    return case.graph.op("CONCAT", input1=[x, y], axis=axis, result=(x.dtype, shape))


def cast(draw, case: GraphCase, x: Value | None = None) -> Value:
    kinds = [*FLOATS, I8, I16, I32, BOOL]
    fp8 = [F8E4M3, F8E5M2]
    src = x.dtype if x is not None else draw(st.sampled_from(kinds + fp8))
    if x is None:
        domain = Domain(-100.0, 100.0) if src in FLOATS else None
        x = case.input(src, _shape(draw), domain)
    if src in fp8:  # fp8 casts only to and from the wider float types
        targets = list(FLOATS)
    else:
        targets = [k for k in kinds if k != src and not (src == BOOL and k in FLOATS)
                   and not (src in FLOATS and k == BOOL) and {src, k} != {F16, BF16}]
        targets += fp8 if src in FLOATS else []
    dst = draw(st.sampled_from(targets))
    return case.graph.op("CAST", input=x, result=(dst, x.shape))


def table(draw, case: GraphCase, x: Value | None = None) -> Value:
    """TABLE: int8 through a 256-entry int8 table, or int16 through a 513-entry int16 table
    (interpolated, int32 result) whose slopes fit in int16, as TOSA requires."""
    if x is not None and x.dtype not in (I8, I16):
        return clamp(draw, case, x)
    dtype = x.dtype if x is not None else draw(st.sampled_from([I8, I16]))
    if x is None:
        x = case.input(dtype, _any_rank(draw))
    size, out = (256, I8) if dtype == I8 else (513, I32)
    values = draw(hnp.arrays(dtype, size, elements=st.integers(int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))))
    if dtype == I16:  # TOSA REQUIREs each slope (next entry less this one) to fit in int16
        entries = values.astype(np.int64)
        for i in range(1, size):
            entries[i] = min(max(entries[i], entries[i - 1] - 32768), entries[i - 1] + 32767)
        values = entries.astype(I16)
    return case.graph.op("TABLE", input1=x, table=values, result=(out, x.shape))


_GATHER_TYPES = (F32, F16, BF16, I8, I16, I32)


def gather(draw, case: GraphCase, x: Value | None = None) -> Value:
    """GATHER values[N, K, C] by int32 indices[N, W] in [0, K): result [N, W, C]."""
    if x is not None and (len(x.shape) != 3 or x.dtype not in _GATHER_TYPES):
        return reshape(draw, case, x)
    if x is None:
        dtype = draw(st.sampled_from(_GATHER_TYPES))
        x = case.input(dtype, (draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 4))))
    n, k, c = x.shape
    w = draw(st.integers(1, 6))
    indices = case.input(I32, (n, w), Domain(0, k - 1))
    return case.graph.op("GATHER", values=x, indices=indices, result=(x.dtype, (n, w, c)))


def scatter(draw, case: GraphCase, x: Value | None = None) -> Value:
    """SCATTER input[N, W, C] into values_in[N, K, C] at distinct indices[N, W] (W <= K)."""
    if x is not None and (len(x.shape) != 3 or x.dtype not in _GATHER_TYPES):
        return reshape(draw, case, x)
    if x is None:
        dtype = draw(st.sampled_from(_GATHER_TYPES))
        x = case.input(dtype, (draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 4))))
    n, k, c = x.shape
    w = draw(st.integers(1, k))
    rows = [draw(st.permutations(range(k)))[:w] for _ in range(n)]  # the spec requires distinct indices
    updates = case.input(x.dtype, (n, w, c))
    return case.graph.op("SCATTER", values_in=x, indices=np.array(rows, np.int32), input=updates,
                         result=(x.dtype, x.shape))


_RESIZE_TYPES = {  # (input, mode) -> result
    (I8, "NEAREST_NEIGHBOR"): I8, (I8, "BILINEAR"): I32, (I16, "NEAREST_NEIGHBOR"): I16,
    (F32, "NEAREST_NEIGHBOR"): F32, (F32, "BILINEAR"): F32, (F16, "NEAREST_NEIGHBOR"): F16,
    (F16, "BILINEAR"): F16, (BF16, "NEAREST_NEIGHBOR"): BF16, (BF16, "BILINEAR"): BF16,
}


def resize(draw, case: GraphCase, x: Value | None = None) -> Value:
    """RESIZE (nearest or bilinear) of an NHWC input by scale n/d per axis, with an offset and a
    border that make the output size exact. int16 bilinear (an int48 result) is left out."""
    if x is not None and (len(x.shape) != 4 or x.dtype not in (F32, F16)):
        return _unary_safe(draw, case, x) if _is_float(x.dtype) else clamp(draw, case, x)
    options = [k for k in _RESIZE_TYPES if x is None or k[0] == x.dtype]
    in_t, mode = draw(st.sampled_from(options))
    scale, offset, border, sizes = [], [], [], []
    for axis in range(2):
        # power-of-two numerators keep bilinear weights dyadic: exact in float16 and bfloat16
        num, den = draw(st.sampled_from([1, 2, 4])), draw(st.integers(1, 4))
        off = draw(st.integers(-num + 1, num - 1)) if draw(st.booleans()) else 0
        size = x.shape[1 + axis] if x is not None else draw(st.integers(1, 5))
        # output = ((size - 1) * num - off + border) / den + 1, exactly: pick the border for it
        border_ = (-((size - 1) * num - off)) % den
        if border_ >= num:  # the spec bounds border by [-16 * num, num): go below instead
            border_ -= den
        if border_ < -16 * num or (size - 1) * num - off + border_ < 0:
            off, border_ = 0, (-((size - 1) * num)) % den - (den if (-((size - 1) * num)) % den >= num else 0)
        scale += [num, den]
        offset.append(off)
        border.append(border_)
        sizes.append(size)
    if x is None:
        x = case.input(in_t, (draw(st.integers(1, 2)), *sizes, draw(st.integers(1, 3))),
                       EXACT if _is_float(in_t) else None)
    out = [((s - 1) * scale[2 * i] - offset[i] + border[i]) // scale[2 * i + 1] + 1 for i, s in enumerate(sizes)]
    return case.graph.op("RESIZE", input=x, mode=mode, scale=scale, offset=offset, border=border,
                         result=(_RESIZE_TYPES[in_t, mode], (x.shape[0], *out, x.shape[3])))


def transpose_conv2d(draw, case: GraphCase, x: Value | None = None) -> Value:
    """TRANSPOSE_CONV2D: output (IH - 1) * stride + out_pad_top + out_pad_bottom + KH."""
    if x is not None and (len(x.shape) != 4 or x.dtype not in (F32, F16)):
        return _unary_safe(draw, case, x) if _is_float(x.dtype) else clamp(draw, case, x)
    in_t, w_t, out_t, acc = _conv_types(draw, None if x is None else x.dtype)
    if x is None:
        x = case.input(in_t, (draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 4)),
                              draw(st.integers(1, 3))), EXACT if _is_float(in_t) else None)
    n, ih, iw, ic = x.shape
    kh, kw, oc = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    out_pad = tuple(draw(st.integers(-(k - 1), 1)) for k in (kh, kh, kw, kw))
    oh = (ih - 1) * stride[0] + out_pad[0] + out_pad[1] + kh
    ow = (iw - 1) * stride[1] + out_pad[2] + out_pad[3] + kw
    if oh < 1 or ow < 1:
        out_pad, oh, ow = (0, 0, 0, 0), (ih - 1) * stride[0] + kh, (iw - 1) * stride[1] + kw
    y = case.graph.op(
        "TRANSPOSE_CONV2D", input=x, weight=_weights(draw, w_t, (oc, kh, kw, ic)),
        bias=_bias(case, draw, out_t, oc), input_zp=_zp(in_t, _zp_value(draw, in_t)), weight_zp=_zp(w_t),
        out_pad=out_pad, stride=stride, acc_type=acc, result=(out_t, (n, oh, ow, oc)),
    )
    return _int48_to_int32(case, y)


def conv3d(draw, case: GraphCase, x: Value | None = None) -> Value:
    """CONV3D of an NDHWC input, with paddings that make every output size exact."""
    if x is not None and (len(x.shape) != 5 or x.dtype not in (F32, F16)):
        return _unary_safe(draw, case, x) if _is_float(x.dtype) else clamp(draw, case, x)
    in_t, w_t, out_t, acc = _conv_types(draw, None if x is None else x.dtype)
    if x is None:
        dims = [draw(st.integers(1, 4)) for _ in range(3)]
        x = case.input(in_t, (1, *dims, draw(st.integers(1, 3))), EXACT if _is_float(in_t) else None)
    n, *dims, ic = x.shape
    kernel = [draw(st.integers(1, 2)) for _ in range(3)]
    stride = [draw(st.integers(1, 2)) for _ in range(3)]
    dilation = [draw(st.integers(1, 2)) for _ in range(3)]
    pad: list[int] = []
    out = []
    for size, k, s, d in zip(dims, kernel, stride, dilation):
        before, after = _fit_pad(size, k, d, s, draw(st.integers(0, 1)), draw(st.integers(0, 1)))
        pad += [before, after]
        out.append((size - 1 + before + after - (k - 1) * d) // s + 1)
    oc = draw(st.integers(1, 3))
    y = case.graph.op(
        "CONV3D", input=x, weight=_weights(draw, w_t, (oc, *kernel, ic)), bias=_bias(case, draw, out_t, oc),
        input_zp=_zp(in_t, _zp_value(draw, in_t)), weight_zp=_zp(w_t), pad=pad, stride=stride,
        dilation=dilation, acc_type=acc, result=(out_t, (n, *out, oc)),
    )
    return _int48_to_int32(case, y)


def _power_of_two(size: int) -> bool:
    return size & (size - 1) == 0


def fft(draw, case: GraphCase, x: Value | None = None) -> Value | tuple[Value, ...]:
    """FFT2D (forward or inverse) of a float32 [N, H, W] real and imaginary pair, or RFFT2D of a
    real one; H and W powers of two (1 to 32). Returns both results (output_real, output_imag)."""
    if x is not None and (x.dtype != F32 or len(x.shape) != 3 or not all(map(_power_of_two, x.shape[1:]))):
        return _unary_safe(draw, case, x) if _is_float(x.dtype) else clamp(draw, case, x)
    if x is None:
        x = case.input(F32, (draw(st.integers(1, 2)), 1 << draw(st.integers(0, 5)), 1 << draw(st.integers(0, 5))))
    local_bound = draw(st.booleans())
    if draw(st.booleans()):
        return case.graph.op("RFFT2D", input_real=x, local_bound=local_bound)
    return case.graph.op("FFT2D", input_real=x, input_imag=case.input(F32, x.shape), inverse=draw(st.booleans()),
                         local_bound=local_bound)


def _int48_to_int32(case: GraphCase, y: Value) -> Value:
    """An int48 result rescaled to int32, as real models do (tosa_reference_model returns no int48)."""
    if y.dtype != np.int64:
        return y
    return case.graph.op(
        "RESCALE", input=y, multiplier=np.array([1 << 14], np.int16), shift=np.array([14], np.int8),
        input_zp=case.graph.constant([0], INT48), output_zp=_zp(I32), scale32=False, rounding_mode="SINGLE_ROUND",
        per_channel=False, input_unsigned=False, output_unsigned=False, result=(I32, y.shape),
    )


FAMILIES: dict[str, Callable] = {
    "binary": binary, "unary": unary, "clamp": clamp, "rescale": rescale, "reshape": reshape,
    "transpose": transpose, "conv2d": conv2d, "pool2d": pool2d, "matmul": matmul,
    "reduction": reduction, "data_layout": data_layout, "cast": cast, "select": select,
    "table": table, "gather": gather, "scatter": scatter, "resize": resize,
    "transpose_conv2d": transpose_conv2d, "conv3d": conv3d, "fft": fft,
}
"""Operator families `ops()` draws from, by name: each adds its inputs to the case and returns
its result (or results: every one becomes a graph output)."""


def ops(families: Sequence[str] | None = None) -> st.SearchStrategy[GraphCase]:
    """Graphs of one TOSA operator (of the given families, or any), fed by graph inputs."""
    chosen = list(families or FAMILIES)
    unknown = [f for f in chosen if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown operator families {unknown}; known: {sorted(FAMILIES)}")

    @st.composite
    def draw_op(draw) -> GraphCase:
        family = draw(st.sampled_from(chosen))
        case = GraphCase(Graph(), description=f"family {family}")
        result = FAMILIES[family](draw, case)
        case.graph.output(*(result if isinstance(result, tuple) else (result,)))
        return case

    return draw_op()


_CHAIN_OPS = ("unary_safe", "binary_safe", "clamp", "reshape", "transpose", "reduction", "conv2d", "pool2d", "matmul")


def _unary_safe(draw, case: GraphCase, x: Value) -> Value:
    name = draw(st.sampled_from(["ABS", "NEGATE", "TANH", "SIGMOID", "FLOOR", "CEIL"]))
    return _unary_op(case, name, x)


def graphs(max_ops: int = 5, dtypes: Sequence[object] = ("float32",)) -> st.SearchStrategy[GraphCase]:
    """Well-formed graphs of 1..max_ops operators (chains and DAGs) over floating-point tensors
    of one of `dtypes` (float32, float16, bfloat16).

    Each operator takes an earlier value (an input or a result) as its first operand; binary
    operators take a second earlier value of a broadcast-compatible shape, or a new input. Only
    operators total on their inputs are used, so every drawn graph has defined results.
    """
    float_dtypes = [np.dtype(d) for d in dtypes]
    if not float_dtypes or any(d not in FLOATS for d in float_dtypes):
        raise ValueError(f"graphs() draws float32, float16 or bfloat16 graphs, not {list(dtypes)}")

    @st.composite
    def draw_graph(draw) -> GraphCase:
        dtype = draw(st.sampled_from(float_dtypes))
        case = GraphCase(Graph(), description="random graph")
        rank = draw(st.integers(1, 4))
        values = [case.input(dtype, _shape(draw, rank, rank))]
        n_ops = draw(st.integers(1, max_ops))
        for _ in range(n_ops):
            x = draw(st.sampled_from(values))
            kind = draw(st.sampled_from(_CHAIN_OPS))
            if kind == "unary_safe":
                y = _unary_safe(draw, case, x)
            elif kind == "binary_safe":
                partners = [v for v in values if v is not x and v.dtype == x.dtype and len(v.shape) == len(x.shape)
                            and all(a == b or b == 1 for a, b in zip(x.shape, v.shape))]
                name = draw(st.sampled_from(["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"]))
                if partners and draw(st.booleans()):
                    other = draw(st.sampled_from(partners))
                    extra = {"shift": _zp(I8)} if name == "MUL" else {}
                    y = case.graph.op(name, input1=x, input2=other, **extra)
                else:
                    y = binary(draw, case, x, names=[name])
            else:
                y = {"clamp": clamp, "reshape": reshape, "transpose": transpose, "reduction": reduction,
                     "conv2d": conv2d, "pool2d": pool2d, "matmul": matmul}[kind](draw, case, x)
            values.append(y)
        results = values[1:]
        used = {o.node for n in case.graph.nodes for o in n.operands.values() if isinstance(o, Value)}
        case.graph.output(*[v for v in results if v.node not in used])
        return case

    return draw_graph()
