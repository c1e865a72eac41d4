"""The fast executor's row-wise fusions (pyvgf/fast/patterns.py): layer normalization and GELU, as
the TOSA ops a framework lowers them to, run as one step each, with the reference's results
(within pyvgf.testing's tolerance); where a pattern does not hold, its ops run one by one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyvgf.build import Graph
from pyvgf.testing import GraphCase, assert_backends_agree
from pyvgf.testing.case import Domain
from support.spirv import vgf_graph

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf import fast
from pyvgf.fast import background, compiled, kernels, patterns
from pyvgf.fast.plan import FastPlan

pytestmark = pytest.mark.fast

F32 = np.dtype(np.float32)
NO_SHIFT = np.array([0], np.int8)


def _const(value: float, rank: int) -> np.ndarray:
    return np.full((1,) * rank, value, F32)


def _mul(g: Graph, a, b, shape):
    return g.op("MUL", input1=a, input2=b, shift=NO_SHIFT, result=(F32, shape))


def _layer_norm(case: GraphCase, shape: tuple[int, ...], affine: bool, *, also_out: bool = False,
                axis: int | None = None):
    """x normalized along its last axis (or `axis`) as torch's layer_norm is lowered to TOSA;
    with `also_out`, x - mean is a graph output too (so it must be kept)."""
    g, rank = case.graph, len(shape)
    axis = rank - 1 if axis is None else axis
    n = shape[axis]
    reduced = tuple(1 if i == axis else d for i, d in enumerate(shape))
    x = case.input(F32, shape)
    total = g.op("REDUCE_SUM", input=x, axis=axis, result=(F32, reduced))
    mean = _mul(g, total, _const(1 / n, rank), reduced)
    d = g.op("SUB", input1=x, input2=mean, result=(F32, shape))
    squares = g.op("REDUCE_SUM", input=_mul(g, d, d, shape), axis=axis, result=(F32, reduced))
    variance = g.op("ADD", input1=_mul(g, squares, _const(1 / n, rank), reduced),
                    input2=_const(1e-5, rank), result=(F32, reduced))
    y = _mul(g, d, g.op("RSQRT", input1=variance, result=(F32, reduced)), shape)
    if affine:
        rng = np.random.default_rng(n)
        scale = rng.standard_normal((1,) * (rank - 1) + (shape[-1],)).astype(F32)
        y = g.op("ADD", input1=_mul(g, y, scale, shape),
                 input2=rng.standard_normal(scale.shape).astype(F32), result=(F32, shape))
    if also_out:
        g.output(d)
    return y


def _gelu(case: GraphCase, shape: tuple[int, ...], biased: bool, *, swap: bool = False):
    """0.5 * h * (1 + erf(h / sqrt 2)) for h = x (+ a bias per column), as ExecuTorch's Arm
    backend lowers GELU; `swap` gives the commutative ops' operands the other way round."""
    g, rank = case.graph, len(shape)
    h = case.input(F32, shape)
    if biased:
        bias = np.random.default_rng(3).standard_normal((1,) * (rank - 1) + (shape[-1],)).astype(F32)
        h = g.op("ADD", input1=h, input2=bias, result=(F32, shape))
    pair = (lambda a, b: (b, a)) if swap else (lambda a, b: (a, b))
    e = g.op("ERF", input=_mul(g, *pair(h, _const(0.7071067811865476, rank)), shape), result=(F32, shape))
    one_plus = g.op("ADD", **dict(zip(("input1", "input2"), pair(e, _const(1.0, rank)))), result=(F32, shape))
    half = _mul(g, *pair(h, _const(0.5, rank)), shape)
    return _mul(g, *pair(one_plus, half), shape)


def _softmax(case: GraphCase, shape: tuple[int, ...], nan_mode: str = "PROPAGATE"):
    """softmax along the last axis as torch's softmax is lowered to TOSA."""
    g = case.graph
    reduced = (*shape[:-1], 1)
    x = case.input(F32, shape)
    top = g.op("REDUCE_MAX", input=x, axis=len(shape) - 1, nan_mode=nan_mode, result=(F32, reduced))
    e = g.op("EXP", input1=g.op("SUB", input1=x, input2=top, result=(F32, shape)), result=(F32, shape))
    total = g.op("REDUCE_SUM", input=e, axis=len(shape) - 1, result=(F32, reduced))
    return _mul(g, e, g.op("RECIPROCAL", input1=total, result=(F32, reduced)), shape)


def _plan(case: GraphCase, tmp_path) -> FastPlan:
    path = tmp_path / "case.vgf"
    path.write_bytes(case.to_vgf())
    return FastPlan(*vgf_graph(path))


def _fused(case: GraphCase, tmp_path) -> list[tuple[str, ...]]:
    return [tuple(node.op for node in chain) for chain in _plan(case, tmp_path).fused]


def _agree(case: GraphCase, seed: int = 7) -> None:
    results = assert_backends_agree(case.to_vgf(), case.random_inputs(seed), backends=("reference", "cpu"))
    assert len(np.unique(results[0])) > 1  # not a constant result


@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_a_softmax_runs_as_one_step(nan_mode, tmp_path):
    """Rows holding NaN, +-inf, all-equal and large values too, under either NaN mode (a NaN
    makes its row's softmax all NaN under both)."""
    case = GraphCase(Graph(), description="softmax")
    case.graph.output(_softmax(case, (2, 9, 31), nan_mode))
    assert _fused(case, tmp_path) == [("REDUCE_MAX", "SUB", "EXP", "REDUCE_SUM", "RECIPROCAL", "MUL")]
    (x,) = case.random_inputs(5)
    x[0, 0, 3] = np.nan
    x[0, 1, :] = np.nan
    x[0, 2, 7] = np.inf
    x[0, 3, 2] = -np.inf
    x[1, 0, :] = 2.5
    x[1, 1, :] *= 500  # exp overflows fp32 unless the row's maximum is taken off first
    results = assert_backends_agree(case.to_vgf(), [x], backends=("reference", "cpu"))
    assert np.isfinite(results[0][1]).all() and len(np.unique(results[0])) > 100


@settings(max_examples=15, deadline=None)
@given(rows_=st.integers(1, 40), columns=st.integers(1, 300), seed=st.integers(0, 2**16))
def test_softmaxes_of_any_shape_agree(rows_, columns, seed):
    case = GraphCase(Graph(), description="softmax")
    case.graph.output(_softmax(case, (rows_, columns)))
    assert_backends_agree(case.to_vgf(), case.random_inputs(seed), backends=("reference", "cpu"))


LAYER_NORM = ("REDUCE_SUM", "MUL", "SUB", "MUL", "REDUCE_SUM", "MUL", "ADD", "RSQRT", "MUL")


@pytest.mark.parametrize("affine", [False, True], ids=["plain", "affine"])
def test_a_layer_norm_runs_as_one_step(affine, tmp_path):
    case = GraphCase(Graph(), description="layer norm")
    case.graph.output(_layer_norm(case, (2, 9, 24), affine))
    assert _fused(case, tmp_path) == [LAYER_NORM + (("MUL", "ADD") if affine else ())]
    _agree(case)


@pytest.mark.parametrize("biased", [False, True], ids=["plain", "biased"])
@pytest.mark.parametrize("swap", [False, True], ids=["as-exported", "operands-swapped"])
def test_gelu_runs_as_one_step(biased, swap, tmp_path):
    case = GraphCase(Graph(), description="gelu")
    case.graph.output(_gelu(case, (1, 7, 40), biased, swap=swap))
    bias = ("ADD",) if biased else ()
    assert _fused(case, tmp_path) == [bias + ("MUL", "ERF", "ADD", "MUL", "MUL")]
    _agree(case)


@settings(max_examples=15, deadline=None)
@given(rows_=st.integers(1, 40), columns=st.integers(1, 300), affine=st.booleans(),
       seed=st.integers(0, 2**16))
def test_layer_norms_of_any_shape_agree(rows_, columns, affine, seed):
    case = GraphCase(Graph(), description="layer norm")
    case.graph.output(_layer_norm(case, (rows_, columns), affine))
    _agree_any(case, seed)


@settings(max_examples=15, deadline=None)
@given(rows_=st.integers(1, 40), columns=st.integers(1, 300), biased=st.booleans(),
       seed=st.integers(0, 2**16))
def test_gelus_of_any_shape_agree(rows_, columns, biased, seed):
    case = GraphCase(Graph(), description="gelu")
    case.graph.output(_gelu(case, (1, rows_, columns), biased))
    _agree_any(case, seed)


def _agree_any(case: GraphCase, seed: int) -> None:
    assert_backends_agree(case.to_vgf(), case.random_inputs(seed), backends=("reference", "cpu"))


def test_a_pattern_whose_intermediate_is_also_read_elsewhere_runs_op_by_op(tmp_path):
    case = GraphCase(Graph(), description="layer norm, x - mean an output too")
    case.graph.output(_layer_norm(case, (3, 16), True, also_out=True))
    assert not any(chain[:len(LAYER_NORM)] == LAYER_NORM for chain in _fused(case, tmp_path))
    _agree(case)


def test_a_norm_along_another_axis_runs_op_by_op(tmp_path):
    case = GraphCase(Graph(), description="normalized along axis 0")
    case.graph.output(_layer_norm(case, (16, 3), False, axis=0))
    assert _fused(case, tmp_path) == []
    _agree(case)


@pytest.mark.parametrize("pattern", ["layer_norm", "gelu", "residual", "softmax"])
def test_a_pattern_whose_loop_is_not_compiled_yet_runs_the_reference_ops(pattern, tmp_path, monkeypatch):
    """While the compiler process makes its loop (background.py), the fused step runs the
    reference operators it stands for, in turn."""
    case = GraphCase(Graph(), description=pattern)
    make = {"layer_norm": lambda: _layer_norm(case, (4, 32), True),
            "gelu": lambda: _gelu(case, (1, 4, 32), True),
            "residual": lambda: _residual(case, (1, 4, 5, 8), per_channel=True),
            "softmax": lambda: _softmax(case, (4, 32))}
    case.graph.output(make[pattern]())
    inputs = case.random_inputs(3)
    plan = _plan(case, tmp_path)
    compiled = plan.run(inputs)[0]

    loop = f"{pattern}_rows"
    reference = _meanwhile(patterns, loop, inputs, tmp_path, monkeypatch)
    np.testing.assert_allclose(compiled, reference, rtol=1e-5, atol=1e-6)
    assert len(np.unique(reference)) > 1


def _meanwhile(module: object, loop: str, inputs: list[np.ndarray], tmp_path, monkeypatch) -> np.ndarray:
    """With `module`'s `loop` not compiled yet (as the compiler process makes it), a plan of
    tmp_path's case.vgf has its fused step run the reference operators it stands for, once,
    and gives the reference's result: which this returns."""
    def not_yet(*args: object) -> None:
        raise background.NotCompiled(loop)
    target = getattr(module, loop)
    if isinstance(target, compiled._RowLoop):  # (a form may hold the loop itself: patch its two)
        monkeypatch.setattr(target, "serial", not_yet)
        monkeypatch.setattr(target, "threaded", not_yet)
    else:
        monkeypatch.setattr(module, loop, not_yet)
    monkeypatch.setattr(fast, "_background", True)  # (the tests' conftest turns it off)
    interim = FastPlan(*vgf_graph(tmp_path / "case.vgf"))
    meanwhile = interim.run(inputs)[0]
    assert interim.interim_steps == 1
    reference = FastPlan.__mro__[1](*vgf_graph(tmp_path / "case.vgf")).run(inputs)[0]
    np.testing.assert_array_equal(meanwhile, reference)
    return reference


I8, I32 = np.dtype(np.int8), np.dtype(np.int32)


def _rescale(g: Graph, x, to: np.dtype, shape, shift: int, *, channels: int | None = None,
             input_zp: int = 0, output_zp: int = 0, rounding: str = "SINGLE_ROUND"):
    """RESCALE by about 2**(30 - shift): multipliers in [2**30, 2**31), shifts shift..shift+1."""
    rng = np.random.default_rng(shift)
    count = channels or 1
    return g.op("RESCALE", input=x, multiplier=rng.integers(1 << 30, 1 << 31, count).astype(np.int32),
                shift=rng.integers(shift, shift + 2, count).astype(np.int8),
                input_zp=np.array([input_zp], x.dtype), output_zp=np.array([output_zp], to),
                scale32=True, rounding_mode=rounding, per_channel=channels is not None,
                input_unsigned=False, output_unsigned=False, result=(to, shape))


WITHIN_INT8 = Domain(-2**16, 2**16)
"""y's values that the residual's last RESCALE maps onto most of int8."""


RESCALED_Y = {"rescaled-within-int8": 21, "rescaled-saturating-int32": 6}
"""y as an int8 tensor, rescaled to int32 by about 2**(30 - shift) for these shifts: its
+-2**16 reaching most of int8 at the end; or saturating int32, sums wrapping."""

TWICE = "rescaled-twice"
"""y as an int8 tensor rescaled to int32 by about 2**20, then int32 to int32 by about 2**-11
(TFLite's lowering: Arm's real models): about RESCALED_Y's within-int8."""


def _rescaled_twice(g: Graph, y, shape, channels: int | None):
    return _rescale(g, _rescale(g, y, I32, shape, 10, channels=channels, input_zp=7), I32, shape,
                    41, channels=channels)


def _residual(case: GraphCase, shape, *, per_channel: bool, rounding: str = "SINGLE_ROUND",
              y: Domain | str = WITHIN_INT8):
    """RESCALE(x) to int32 (x * 2**4, less its zero point -5), ADD to y, RESCALE to int8 (by
    2**-9, so that y's +-2**16 reach most of int8): a quantized residual ADD. y is an int32
    tensor of a Domain, or an int8 one rescaled as RESCALED_Y says (less its zero point 7)."""
    g = case.graph
    channels = shape[-1] if per_channel else None
    if y == TWICE:
        y_value = _rescaled_twice(g, case.input(I8, shape), shape, channels)
    elif isinstance(y, str):
        y_value = _rescale(g, case.input(I8, shape), I32, shape, RESCALED_Y[y], channels=channels,
                           input_zp=7)
    else:
        y_value = case.input(I32, shape, y)
    return _added(g, y_value, case.input(I8, shape), shape, channels, rounding)


def _added(g: Graph, y, x, shape, channels: int | None, rounding: str = "SINGLE_ROUND",
           swap: bool = False):
    """_residual's RESCALE of x, ADD to y (x first with `swap`) and RESCALE to int8."""
    inner = _rescale(g, x, I32, shape, 26, channels=channels, input_zp=-5)
    operands = (inner, y) if swap else (y, inner)
    total = g.op("ADD", input1=operands[0], input2=operands[1], result=(I32, shape))
    return _rescale(g, total, I8, shape, 39, channels=channels, output_zp=3, rounding=rounding)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("y", [WITHIN_INT8, Domain(2**31 - 2**11, 2**31 - 1), *RESCALED_Y, TWICE],
                         ids=["within-int8", "sums-wrapping-int32", *RESCALED_Y, TWICE])
@pytest.mark.parametrize("rounding", ["SINGLE_ROUND", "DOUBLE_ROUND"])
def test_a_quantized_residual_add_runs_as_one_step_bit_exact(per_channel, y, rounding, tmp_path):
    """The sum wraps as ADD wraps it: near int32's top, y + x * 2**4 wraps to its bottom and
    the result saturates low, where the unwrapped sum would saturate high. The last RESCALE
    rounds once, or twice as TFLite's lowering writes it (Arm's real models). Where y is
    rescaled too, its RESCALE is part of the step."""
    case = GraphCase(Graph(), description="residual add")
    case.graph.output(_residual(case, (1, 6, 5, 12), per_channel=per_channel, y=y, rounding=rounding))
    rescales = ("RESCALE",) * (4 if y == TWICE else 3 if isinstance(y, str) else 2)
    assert _fused(case, tmp_path) == [("ADD", *rescales)]
    results = assert_backends_agree(case.to_vgf(), case.random_inputs(7), backends=("reference", "cpu"))
    values = np.unique(results[0])
    wide = y in (WITHIN_INT8, "rescaled-within-int8", TWICE)
    assert len(values) > (100 if wide else 1)  # neither saturated nor constant


def test_a_single_op_whose_loop_is_not_compiled_yet_runs_its_reference(tmp_path, monkeypatch):
    """A fast form without a plan-time form (here RESCALE's) is called with its known
    operands as well as its run-time one; meanwhile the reference gets each once."""
    from pyvgf.fast import rescale

    case = GraphCase(Graph(), description="rescale")
    x = case.input(I32, (1, 6, 6, 4))
    case.graph.output(_rescale(case.graph, x, I8, (1, 6, 6, 4), 38, channels=4, output_zp=-3))
    inputs = case.random_inputs(2)

    class NotYet:  # the loop, serial or threaded, not compiled yet
        def __call__(self, *args: object) -> None:
            raise background.NotCompiled("rescale_common_rows")
        serial = threaded = __call__
    monkeypatch.setattr(rescale, "rescale_common_rows", NotYet())
    monkeypatch.setattr(fast, "_background", True)
    interim = _plan(case, tmp_path)
    meanwhile = interim.run(inputs)[0]
    assert interim.interim_steps == 1
    reference = FastPlan.__mro__[1](*vgf_graph(tmp_path / "case.vgf")).run(inputs)[0]
    np.testing.assert_array_equal(meanwhile, reference)



def _conv_add(case: GraphCase, size: tuple[int, int], channels: int, kernel: int, *,
              swap: bool = False, y_after: bool = False):
    """CONV2D (of `kernel` x `kernel`, padded to keep the size, with a bias) -> ADD(that, y):
    a float residual ADD; with `y_after`, y is made after the convolution (y' = x + 1)."""
    g = case.graph
    rng = np.random.default_rng(channels)
    shape = (1, *size, channels)
    x = case.input(F32, (1, *size, 8))
    y = None if y_after else case.input(F32, shape)
    pad = kernel // 2
    conv = g.op("CONV2D", input=x, weight=rng.standard_normal((channels, kernel, kernel, 8)).astype(F32),
                bias=rng.standard_normal(channels).astype(F32), input_zp=np.zeros(1, F32),
                weight_zp=np.zeros(1, F32), pad=np.array([pad] * 4, np.int32),
                stride=np.array([1, 1], np.int32), dilation=np.array([1, 1], np.int32),
                acc_type="FP32", result=(F32, shape))
    if y_after:
        y = g.op("ADD", input1=case.input(F32, shape), input2=_const(1.0, 4), result=(F32, shape))
    pair = (y, conv) if swap else (conv, y)
    return g.op("ADD", input1=pair[0], input2=pair[1], result=(F32, shape))


@pytest.mark.parametrize("size, channels, kernel", [((9, 7), 24, 1), ((2, 2), 64, 1), ((6, 5), 16, 3)],
                         ids=["pointwise-by-rows", "pointwise-by-columns", "3x3"])
@pytest.mark.parametrize("swap", [False, True], ids=["conv-first", "y-first"])
def test_a_float_residual_add_after_a_convolution_runs_in_it(size, channels, kernel, swap, tmp_path):
    """The ADD made in each block of the pointwise GEMM as it is finished (by rows, or by
    columns for few rows), after the whole result for other convolutions."""
    case = GraphCase(Graph(), description="conv + residual add")
    case.graph.output(_conv_add(case, size, channels, kernel, swap=swap))
    assert _fused(case, tmp_path) == [("CONV2D", "ADD")]
    _agree(case)


def test_a_residual_made_after_the_convolution_runs_op_by_op(tmp_path):
    """The fused step takes the convolution's place, where y does not exist yet."""
    case = GraphCase(Graph(), description="conv + residual add, y made after it")
    case.graph.output(_conv_add(case, (4, 4), 16, 1, y_after=True))
    assert _fused(case, tmp_path) == []
    _agree(case)


@pytest.mark.parametrize("producer", ["conv", "matmul"])
def test_a_residual_add_whose_loop_is_not_compiled_yet_runs_the_reference_ops(producer, tmp_path,
                                                                               monkeypatch):
    case = GraphCase(Graph(), description=f"{producer} + residual add")
    case.graph.output(_conv_add(case, (9, 7), 24, 1) if producer == "conv" else _matmul_add(case, 40, 24))
    (tmp_path / "case.vgf").write_bytes(case.to_vgf())
    # A 1x1 convolution's or a MATMUL's constant weight is panels where the fp32 tiles run
    # (kernels.tile_weight).
    loop = "gemm_panels" if compiled.FLOAT_TILES else "gemm_rows"
    _meanwhile(kernels, loop, case.random_inputs(3), tmp_path, monkeypatch)


def _matmul_add(case: GraphCase, rows: int, columns: int, *, y_after: bool = False):
    """MATMUL [1, rows, 16] @ constant [1, 16, columns] -> ADD of a bias per column -> ADD(y,
    that): a transformer's projection and its residual; with `y_after`, y is made after the
    MATMUL."""
    g, rng = case.graph, np.random.default_rng(columns)
    shape = (1, rows, columns)
    x = case.input(F32, (1, rows, 16))
    y = None if y_after else case.input(F32, shape)
    product = g.op("MATMUL", A=x, B=rng.standard_normal((1, 16, columns)).astype(F32),
                   A_zp=np.zeros(1, F32), B_zp=np.zeros(1, F32), result=(F32, shape))
    biased = g.op("ADD", input1=product, input2=rng.standard_normal((1, 1, columns)).astype(F32),
                  result=(F32, shape))
    if y_after:
        y = g.op("ADD", input1=case.input(F32, shape), input2=_const(1.0, 3), result=(F32, shape))
    return g.op("ADD", input1=y, input2=biased, result=(F32, shape))


@pytest.mark.parametrize("rows, columns", [(40, 24), (3, 64)], ids=["by-rows", "by-columns"])
def test_a_projection_its_bias_and_a_residual_add_run_as_one_gemm(rows, columns, tmp_path):
    case = GraphCase(Graph(), description="matmul + bias + residual add")
    case.graph.output(_matmul_add(case, rows, columns))
    assert _fused(case, tmp_path) == [("MATMUL", "ADD", "ADD")]
    _agree(case)


@pytest.mark.skipif(not compiled.FLOAT_TILES, reason="the FMA tiles do not run on this CPU")
@pytest.mark.parametrize("after", ["", "CLAMP", "ADD"])
def test_a_product_by_a_constant_weight_runs_on_its_panels(after, monkeypatch):
    """MATMUL [1, 40, 16] @ constant [1, 16, 24], alone, before a CLAMP or before a bias ADD:
    its weight laid out once as panels (kernels.tile_weight), the product on the FMA tiles."""
    calls = []
    loop = kernels.gemm_panels
    monkeypatch.setattr(kernels, "gemm_panels", lambda *args: calls.append(1) or loop(*args))
    case = GraphCase(Graph(), description=f"matmul by a constant, then {after or 'nothing'}")
    g, shape = case.graph, (1, 40, 24)
    y = g.op("MATMUL", A=case.input(F32, (1, 40, 16)),
             B=np.random.default_rng(5).standard_normal((1, 16, 24)).astype(F32),
             A_zp=np.zeros(1, F32), B_zp=np.zeros(1, F32), result=(F32, shape))
    if after == "CLAMP":
        y = g.op("CLAMP", input=y, min_val=np.float32(-1), max_val=np.float32(1.5),
                 result=(F32, shape))
    elif after == "ADD":
        y = g.op("ADD", input1=y, input2=np.full((1, 1, 24), 0.25, F32), result=(F32, shape))
    case.graph.output(y)
    _agree(case)
    assert calls


def test_a_projections_residual_made_after_it_runs_op_by_op(tmp_path):
    """The bias ADD is fused into the MATMUL as an epilogue; the residual ADD runs alone."""
    case = GraphCase(Graph(), description="matmul + bias + residual add, y made after it")
    case.graph.output(_matmul_add(case, 40, 24, y_after=True))
    assert _fused(case, tmp_path) == [("MATMUL", "ADD")]
    _agree(case)


def _depthwise_conv(case: GraphCase, size: tuple[int, int], channels: int, columns: int, *,
                    clamp: bool = True, after: str = "", stride: int = 1, dilation: int = 1,
                    kernel: int = 3, images: int = 1, multiplier: int = 1, pointwise: int = 1,
                    expand_from: int = 0, expansion: int = 1, also_out: bool = False):
    """[CONV2D `expansion` x `expansion` from `expand_from` channels (padded to keep the size,
    its bias) -> CLAMP to [0, 6], where expand_from is given; its result also a graph output
    with `also_out`] -> DEPTHWISE_CONV2D (`kernel`, padded by one, its bias) [-> CLAMP to
    [0, 6]] -> CONV2D of `pointwise` x `pointwise` to `columns` (its bias) -> `after`: "clamp",
    "add" (a residual ADD of an input), "add-x" (of the block's input), "add-made-after" (of
    one made after the depthwise layer) or nothing."""
    g, rng = case.graph, np.random.default_rng(channels + columns)
    zero = np.zeros(1, F32)
    x = block = case.input(F32, (images, *size, expand_from or channels))
    if expand_from:
        pad = (expansion - 1) // 2
        x = g.op("CONV2D", input=x,
                 weight=rng.standard_normal((channels, expansion, expansion, expand_from)).astype(F32),
                 bias=rng.standard_normal(channels).astype(F32), input_zp=zero, weight_zp=zero,
                 pad=np.full(4, pad, np.int32), stride=np.ones(2, np.int32),
                 dilation=np.ones(2, np.int32), acc_type="FP32", result=(F32, (images, *size, channels)))
        x = g.op("CLAMP", input=x, min_val=0.0, max_val=6.0, nan_mode="PROPAGATE",
                 result=(F32, (images, *size, channels)))
        if also_out:
            g.output(x)
    inner = channels * multiplier
    rows, cols = ((n + 2 - dilation * (kernel - 1) - 1) // stride + 1 for n in size)
    h = g.op("DEPTHWISE_CONV2D", input=x,
             weight=rng.standard_normal((kernel, kernel, channels, multiplier)).astype(F32),
             bias=rng.standard_normal(inner).astype(F32), input_zp=zero, weight_zp=zero,
             pad=np.ones(4, np.int32), stride=np.array([stride] * 2, np.int32),
             dilation=np.array([dilation] * 2, np.int32), acc_type="FP32",
             result=(F32, (images, rows, cols, inner)))
    if clamp:
        h = g.op("CLAMP", input=h, min_val=0.0, max_val=6.0, nan_mode="PROPAGATE",
                 result=(F32, (images, rows, cols, inner)))
    shape = (images, rows - pointwise + 1, cols - pointwise + 1, columns)
    y = g.op("CONV2D", input=h,
             weight=rng.standard_normal((columns, pointwise, pointwise, inner)).astype(F32),
             bias=rng.standard_normal(columns).astype(F32), input_zp=zero, weight_zp=zero,
             pad=np.zeros(4, np.int32), stride=np.ones(2, np.int32), dilation=np.ones(2, np.int32),
             acc_type="FP32", result=(F32, shape))
    if after == "clamp":
        return g.op("CLAMP", input=y, min_val=-1.0, max_val=1.0, nan_mode="PROPAGATE",
                    result=(F32, shape))
    if after == "add":
        return g.op("ADD", input1=case.input(F32, shape), input2=y, result=(F32, shape))
    if after == "add-x":
        return g.op("ADD", input1=block, input2=y, result=(F32, shape))
    if after == "add-made-after":
        made = g.op("ADD", input1=case.input(F32, shape), input2=_const(1.0, 4), result=(F32, shape))
        return g.op("ADD", input1=y, input2=made, result=(F32, shape))
    return y


@pytest.mark.parametrize("size, channels, columns, options, chain", [
    ((12, 10), 32, 16, {}, ("DEPTHWISE_CONV2D", "CLAMP", "CONV2D")),
    ((9, 9), 24, 40, {"after": "add"}, ("DEPTHWISE_CONV2D", "CLAMP", "CONV2D", "ADD")),
    ((8, 11), 16, 8, {"after": "clamp", "clamp": False}, ("DEPTHWISE_CONV2D", "CONV2D", "CLAMP")),
    ((13, 7), 20, 12, {"stride": 2}, ("DEPTHWISE_CONV2D", "CLAMP", "CONV2D")),
    ((10, 10), 8, 8, {"dilation": 2, "kernel": 2}, ("DEPTHWISE_CONV2D", "CLAMP", "CONV2D")),
    ((5, 5), 40, 24, {"after": "add-made-after"}, ("DEPTHWISE_CONV2D", "CLAMP", "CONV2D")),
], ids=["mobilenet-block", "residual", "clamp-after", "stride-2", "dilated-2x2", "residual-made-after"])
@pytest.mark.parametrize("bands", ["whole", "two-rows", "column-groups"])
def test_a_depthwise_layer_and_the_projection_after_it_run_as_one_step(size, channels, columns, options,
                                                                        chain, bands, tmp_path,
                                                                        monkeypatch):
    """The depthwise result made a band of rows at a time and multiplied while in cache, or
    whole by every thread for its group of columns (where the weights are panels); a residual
    made after the depthwise layer stays an ADD of its own."""
    from pyvgf.fast import conv

    monkeypatch.setattr(conv, "COLUMN_GROUP_PIXELS", 10**9 if bands == "column-groups" else 0)
    if bands == "two-rows":
        monkeypatch.setattr(conv, "DEPTHWISE_GEMM_BAND_BYTES", 2 * size[1] * channels * 4)
    case = GraphCase(Graph(), description="depthwise + pointwise")
    case.graph.output(_depthwise_conv(case, size, channels, columns, **options))
    assert _fused(case, tmp_path)[0] == chain
    _agree(case)


@pytest.mark.parametrize("options", [{"images": 2}, {"multiplier": 2}, {"pointwise": 3}],
                         ids=["two-images", "multiplier-2", "3x3-after"])
def test_other_depthwise_layers_and_convolutions_run_as_two_steps(options, tmp_path):
    case = GraphCase(Graph(), description="depthwise + conv")
    case.graph.output(_depthwise_conv(case, (8, 8), 8, 8, **options))
    assert all(chain[0] != "DEPTHWISE_CONV2D" or "CONV2D" not in chain
               for chain in _fused(case, tmp_path))
    _agree(case)


EXPANDED = ("CONV2D", "CLAMP", "DEPTHWISE_CONV2D", "CLAMP", "CONV2D")


@pytest.mark.parametrize("size, channels, columns, options, chain", [
    ((12, 10), 24, 8, {"after": "add-x"}, (*EXPANDED, "ADD")),
    ((13, 7), 16, 12, {"stride": 2}, EXPANDED),
    ((10, 9), 12, 8, {"dilation": 2, "kernel": 2, "after": "clamp"}, (*EXPANDED, "CLAMP")),
], ids=["mobilenet-block", "stride-2", "dilated-2x2"])
@pytest.mark.parametrize("bands", ["whole", "two-rows", "expansion-rows"])
@pytest.mark.parametrize("halo", ["bands-make-it", "made-whole", "column-groups"])
def test_an_expansion_depthwise_layer_and_projection_run_as_one_step(size, channels, columns,
                                                                    options, chain, bands, halo,
                                                                    tmp_path, monkeypatch):
    """MobileNetV2's block: each band makes the rows of the expansion its windows read (a row
    at the edge of two bands made by both), or the expansion is made whole first, by bands of
    rows or (where the weights are panels) by every thread for its group of columns."""
    from pyvgf.fast import conv

    monkeypatch.setattr(conv, "HALO_SHARE", 0 if halo == "bands-make-it" else 10**9)
    monkeypatch.setattr(conv, "COLUMN_GROUP_PIXELS", 10**9 if halo == "column-groups" else 0)
    if bands == "two-rows":
        monkeypatch.setattr(conv, "DEPTHWISE_GEMM_BAND_BYTES", 2 * size[1] * channels * 4)
    if bands == "expansion-rows":  # bands of 1-3 rows, a thread's share split evenly
        monkeypatch.setattr(conv, "EXPANSION_BAND_BYTES", 5 * size[1] * channels * 4)
    case = GraphCase(Graph(), description="expansion + depthwise + pointwise")
    case.graph.output(_depthwise_conv(case, size, channels, columns, expand_from=8, **options))
    assert _fused(case, tmp_path)[0] == chain
    _agree(case)


@pytest.mark.parametrize("options", [{"also_out": True}, {"expansion": 3}, {"images": 2}],
                         ids=["expansion-also-an-output", "3x3-expansion", "two-images"])
def test_other_expansions_run_as_steps_of_their_own(options, tmp_path):
    case = GraphCase(Graph(), description="conv + depthwise + pointwise")
    case.graph.output(_depthwise_conv(case, (8, 8), 16, 8, expand_from=8, **options))
    assert all(chain[0] != "CONV2D" or "DEPTHWISE_CONV2D" not in chain
               for chain in _fused(case, tmp_path))
    _agree(case)


def test_an_expanded_fp32_steps_bands_read_at_most_expansion_band_bytes_of_its_expansion():
    """_band_rows: MobileNetV2's 112 x 112 x 96 stride-2 expansion in bands of 5 depthwise rows
    (11 expansion rows of 43 kB), its 56 x 56 x 144 stride-1 one in bands of 14 (16 rows of
    32 kB); without an expansion, the rows of DEPTHWISE_GEMM_BAND_BYTES of the result."""
    from pyvgf.fast import conv

    def window(stride: int, kernel: int = 3, dilation: int = 1) -> tuple:
        return (0.0, np.zeros((kernel, kernel, 8)), 1, 1, stride, stride, dilation, dilation)

    assert conv._band_rows((1, 56, 56, 96), 4, window(2), 112 * 96 * 4) == 5
    assert conv._band_rows((1, 56, 56, 144), 4, window(1), 56 * 144 * 4) == 14
    assert conv._band_rows((1, 56, 56, 144), 4, window(1), None) == (1 << 20) // (56 * 144 * 4)
    assert conv._band_rows((1, 8, 8, 8), 4, window(1, 2, 2), conv.EXPANSION_BAND_BYTES // 5) == 3
    assert conv._band_rows((1, 8, 8, 8), 4, window(1), conv.EXPANSION_BAND_BYTES) == 1


@pytest.mark.parametrize("halo", [0, 10**9], ids=["bands-make-it", "made-whole"])
def test_the_halo_rule_takes_bands_where_few_rows_are_made_twice(halo, monkeypatch):
    """_halo: on two bands, a stride-1 3x3 layer's input of 16 rows or more is made in bands,
    not one of 15; three bands need 32."""
    from pyvgf.fast import conv

    assert conv._halo(16, 8, 16, 2) and not conv._halo(15, 8, 15, 2)
    assert conv._halo(32, 11, 32, 2) and not conv._halo(31, 11, 31, 2)
    assert conv._halo(20, 20, 20, 2)  # one band makes nothing twice
    monkeypatch.setattr(conv, "HALO_SHARE", halo)
    assert conv._halo(7, 4, 7, 2) == (halo == 0)


def test_a_depthwise_and_projection_step_whose_loop_is_not_compiled_yet_runs_the_reference_ops(
        tmp_path, monkeypatch):
    from pyvgf.fast import conv

    case = GraphCase(Graph(), description="depthwise + pointwise + residual")
    case.graph.output(_depthwise_conv(case, (9, 7), 24, 16, after="add"))
    (tmp_path / "case.vgf").write_bytes(case.to_vgf())
    _meanwhile(conv, "depthwise_gemm_rows", case.random_inputs(3), tmp_path, monkeypatch)


def test_an_expanded_depthwise_step_whose_loop_is_not_compiled_yet_runs_the_reference_ops(
        tmp_path, monkeypatch):
    from pyvgf.fast import conv

    case = GraphCase(Graph(), description="expansion + depthwise + pointwise + residual")
    case.graph.output(_depthwise_conv(case, (9, 7), 24, 8, expand_from=8, after="add-x"))
    (tmp_path / "case.vgf").write_bytes(case.to_vgf())
    _meanwhile(conv, "expanded_gemm_rows", case.random_inputs(3), tmp_path, monkeypatch)


def _int8_depthwise_conv(case: GraphCase, size: tuple[int, int], channels: int, columns: int, *,
                         stride: int = 1, input_zp: int = -7, rounding: str = "SINGLE_ROUND",
                         also_out: bool = False, residual: str = "", swap: bool = False,
                         expand_from: int = 0):
    """An int8 MobileNet block's depthwise layer and projection as TFLite lowers them:
    DEPTHWISE_CONV2D (3x3, padded by one) -> RESCALE to int8 -> CONV2D 1x1 -> RESCALE to int8;
    with `also_out`, the first RESCALE's result is a graph output too; with `residual`, then a
    quantized residual ADD (_added) of y: "int8" (an input, rescaled after the projection, as
    RESCALED_Y's within-int8), "int8-twice" (rescaled twice, as TWICE says), "int8-first"
    (rescaled before the depthwise layer), "int32" (an
    input not rescaled), "made-after" (an int8 tensor made after the depthwise layer) or
    "x" (the block's input, rescaled), the projection the ADD's first operand with `swap`;
    with `expand_from`, the depthwise layer's input is a CONV2D 1x1 from that many channels
    and its RESCALE to int8 (with `also_out`, its result is the graph output instead)."""
    g, rng = case.graph, np.random.default_rng(channels * columns)
    x = block = case.input(I8, (1, *size, expand_from or channels))
    rows, cols = ((n + 2 - 3) // stride + 1 for n in size)
    shape = (1, rows, cols, columns)
    if expand_from:
        x = g.op("CONV2D", input=x,
                 weight=rng.integers(-128, 128, (channels, 1, 1, expand_from)).astype(I8),
                 bias=rng.integers(-5000, 5000, channels).astype(I32),
                 input_zp=np.array([3], I8), weight_zp=np.zeros(1, I8), pad=np.zeros(4, np.int32),
                 stride=np.ones(2, np.int32), dilation=np.ones(2, np.int32), acc_type="INT32",
                 result=(I32, (1, *size, channels)))
        x = _rescale(g, x, I8, (1, *size, channels), 36, channels=channels, output_zp=-9)
        if also_out:
            g.output(x)

    def rescaled(y):
        return _rescale(g, y, I32, shape, RESCALED_Y["rescaled-within-int8"], channels=columns,
                        input_zp=7)
    y = rescaled(case.input(I8, shape)) if residual == "int8-first" else None
    h = g.op("DEPTHWISE_CONV2D", input=x,
             weight=rng.integers(-128, 128, (3, 3, channels, 1)).astype(I8),
             bias=rng.integers(-5000, 5000, channels).astype(I32),
             input_zp=np.array([input_zp], I8), weight_zp=np.zeros(1, I8),
             pad=np.ones(4, np.int32), stride=np.array([stride] * 2, np.int32),
             dilation=np.ones(2, np.int32), acc_type="INT32", result=(I32, (1, rows, cols, channels)))
    h = _rescale(g, h, I8, (1, rows, cols, channels), 38, channels=channels, output_zp=-128,
                 rounding=rounding)
    if also_out and not expand_from:
        g.output(h)
    p = g.op("CONV2D", input=h, weight=rng.integers(-128, 128, (columns, 1, 1, channels)).astype(I8),
             bias=rng.integers(-5000, 5000, columns).astype(I32), input_zp=np.array([-128], I8),
             weight_zp=np.zeros(1, I8), pad=np.zeros(4, np.int32), stride=np.ones(2, np.int32),
             dilation=np.ones(2, np.int32), acc_type="INT32", result=(I32, shape))
    out = g.op("RESCALE", input=p, multiplier=rng.integers(1 << 30, 1 << 31, columns).astype(I32),
               shift=rng.integers(38, 40, columns).astype(np.int8), input_zp=np.zeros(1, I32),
               output_zp=np.array([5], I8), scale32=True, rounding_mode=rounding,
               per_channel=True, input_unsigned=False, output_unsigned=False, result=(I8, shape))
    if residual == "int8":
        y = rescaled(case.input(I8, shape))
    elif residual == "int8-twice":
        y = _rescaled_twice(g, case.input(I8, shape), shape, columns)
    elif residual == "x":
        y = rescaled(block)
    elif residual == "int32":
        y = case.input(I32, shape, WITHIN_INT8)
    elif residual == "made-after":
        y = rescaled(g.op("CLAMP", input=case.input(I8, shape), min_val=-100, max_val=100,
                          nan_mode="PROPAGATE", result=(I8, shape)))
    return out if residual == "" else _added(g, y, out, shape, columns, rounding, swap)


def _int8_tiles() -> None:
    from pyvgf.fast import compiled

    if not compiled.INT8_TILES:
        pytest.skip("this CPU has neither AVX-512 VNNI nor AVX2")


@pytest.mark.parametrize("size, channels, columns, options", [
    ((12, 10), 32, 16, {}), ((9, 9), 24, 40, {"rounding": "DOUBLE_ROUND"}),
    ((13, 7), 20, 12, {"stride": 2, "input_zp": 0}), ((5, 5), 8, 70, {})],
    ids=["mobilenet-block", "double-round", "stride-2", "wide-projection"])
@pytest.mark.parametrize("bands", ["whole", "two-rows"])
def test_an_int8_depthwise_layer_and_its_projection_run_as_one_step_bit_exact(
        size, channels, columns, options, bands, tmp_path, monkeypatch):
    from pyvgf.fast import conv

    _int8_tiles()
    if bands == "two-rows":
        monkeypatch.setattr(conv, "DEPTHWISE_GEMM_BAND_BYTES", 2 * size[1] * channels)
    case = GraphCase(Graph(), description="int8 depthwise + pointwise")
    case.graph.output(_int8_depthwise_conv(case, size, channels, columns, **options))
    assert _fused(case, tmp_path) == [INT8_BLOCK]
    _agree(case)


INT8_BLOCK = ("DEPTHWISE_CONV2D", "RESCALE", "CONV2D", "RESCALE")


@pytest.mark.parametrize("size, residual, rounding, swap", [
    ((12, 10), "int8", "SINGLE_ROUND", False), ((9, 7), "int8-first", "DOUBLE_ROUND", False),
    ((7, 7), "int8", "DOUBLE_ROUND", True), ((8, 9), "int8-twice", "DOUBLE_ROUND", True)],
    ids=["y-rescaled-after", "y-rescaled-first", "7x7-projection-first", "y-rescaled-twice"])
@pytest.mark.parametrize("bands", ["whole", "two-rows"])
def test_an_int8_depthwise_layer_its_projection_and_residual_add_run_as_one_step_bit_exact(
        size, residual, rounding, swap, bands, tmp_path, monkeypatch):
    """The residual's RESCALE of y is part of the step wherever the plan has it; the
    projection may be either operand of the ADD (as in the benchmark suite's MobileNetV2)."""
    from pyvgf.fast import conv

    _int8_tiles()
    if bands == "two-rows":
        monkeypatch.setattr(conv, "DEPTHWISE_GEMM_BAND_BYTES", 2 * size[1] * 24)
    case = GraphCase(Graph(), description="int8 depthwise + pointwise + residual")
    case.graph.output(_int8_depthwise_conv(case, size, 24, 16, rounding=rounding,
                                           residual=residual, swap=swap))
    [step] = _fused(case, tmp_path)
    assert step[0] == "DEPTHWISE_CONV2D"
    twice = ("RESCALE",) if residual == "int8-twice" else ()
    assert sorted(step) == sorted((*INT8_BLOCK, *twice, "RESCALE", "RESCALE", "ADD", "RESCALE"))
    _agree(case)


@pytest.mark.parametrize("size, expand_from, columns, options", [
    ((12, 10), 16, 16, {"residual": "x"}), ((13, 7), 8, 12, {"stride": 2}),
    ((9, 9), 12, 12, {"residual": "x", "rounding": "DOUBLE_ROUND", "swap": True})],
    ids=["mobilenet-block", "stride-2", "double-round"])
@pytest.mark.parametrize("bands", ["whole", "two-rows"])
@pytest.mark.parametrize("halo", ["bands-make-it", "made-whole"])
def test_an_int8_expansion_depthwise_layer_and_projection_run_as_one_step_bit_exact(
        size, expand_from, columns, options, bands, halo, tmp_path, monkeypatch):
    from pyvgf.fast import conv

    _int8_tiles()
    monkeypatch.setattr(conv, "HALO_SHARE", 0 if halo == "bands-make-it" else 10**9)
    if bands == "two-rows":
        monkeypatch.setattr(conv, "DEPTHWISE_GEMM_BAND_BYTES", 2 * size[1] * 32)
    case = GraphCase(Graph(), description="int8 expansion + depthwise + pointwise")
    case.graph.output(_int8_depthwise_conv(case, size, 32, columns, expand_from=expand_from,
                                           **options))
    [step] = _fused(case, tmp_path)
    assert step[:3] == ("CONV2D", "RESCALE", "DEPTHWISE_CONV2D")
    assert len(step) == (10 if "residual" in options else 6)
    _agree(case)


@pytest.mark.parametrize("expand_from, options", [(6, {}), (8, {"also_out": True})],
                         ids=["input-channels-not-in-fours", "expansion-also-an-output"])
def test_other_int8_expansions_run_as_steps_of_their_own(expand_from, options, tmp_path):
    _int8_tiles()
    case = GraphCase(Graph(), description="int8 conv + depthwise + pointwise")
    case.graph.output(_int8_depthwise_conv(case, (6, 6), 8, 8, expand_from=expand_from, **options))
    fused = _fused(case, tmp_path)
    assert ("CONV2D", "RESCALE") in fused and INT8_BLOCK in fused
    _agree(case)


@pytest.mark.parametrize("residual", ["int32", "made-after"])
def test_other_int8_residual_adds_stay_steps_of_their_own(residual, tmp_path):
    """An int32 y, or one made after the depthwise layer: the residual ADD is a step of its own
    (_residual's) after the depthwise + 1x1 step."""
    _int8_tiles()
    case = GraphCase(Graph(), description="int8 depthwise + pointwise, residual apart")
    case.graph.output(_int8_depthwise_conv(case, (6, 6), 8, 8, residual=residual))
    fused = _fused(case, tmp_path)
    assert INT8_BLOCK in fused
    assert any("ADD" in step for step in fused) and all("ADD" not in step or "CONV2D" not in step
                                                         for step in fused)
    _agree(case)


@pytest.mark.parametrize("channels, options", [(6, {}), (8, {"also_out": True})],
                         ids=["input-channels-not-in-fours", "depthwise-result-also-an-output"])
def test_other_int8_depthwise_and_projections_run_as_two_steps(channels, options, tmp_path):
    case = GraphCase(Graph(), description="int8 depthwise + conv")
    case.graph.output(_int8_depthwise_conv(case, (6, 6), channels, 8, **options))
    assert len(_fused(case, tmp_path)) == 2
    _agree(case)


def test_an_int8_depthwise_and_projection_step_whose_loop_is_not_compiled_yet_runs_the_reference_ops(
        tmp_path, monkeypatch):
    from pyvgf.fast import conv

    _int8_tiles()
    case = GraphCase(Graph(), description="int8 depthwise + pointwise + residual")
    case.graph.output(_int8_depthwise_conv(case, (9, 7), 24, 16, residual="int8-first"))
    (tmp_path / "case.vgf").write_bytes(case.to_vgf())
    _meanwhile(conv, "depthwise_gemm_rows_packed", case.random_inputs(3), tmp_path, monkeypatch)


def test_an_int8_expanded_step_whose_loop_is_not_compiled_yet_runs_the_reference_ops(
        tmp_path, monkeypatch):
    from pyvgf.fast import conv

    _int8_tiles()
    case = GraphCase(Graph(), description="int8 expansion + depthwise + pointwise + residual")
    case.graph.output(_int8_depthwise_conv(case, (9, 7), 24, 16, expand_from=16, residual="x"))
    (tmp_path / "case.vgf").write_bytes(case.to_vgf())
    _meanwhile(conv, "expanded_gemm_rows_packed", case.random_inputs(3), tmp_path, monkeypatch)
