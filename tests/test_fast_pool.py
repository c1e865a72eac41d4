"""The fast executor's pooling loops (pyvgf/fast/pool.py) against the reference: AVG_POOL2D and
MAX_POOL2D of fp32, int8 and int16 bit-exact (the fp32 sums are the reference's, in its
order; a maximum is one of its operands, the same one), on global pools, windows with padding
on some sides only, strides above and below the kernel, zero points, non-finite inputs, each
run on the calling thread and over numba's threads; other types through the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyvgf
from pyvgf.build import Graph
from pyvgf.testing import GraphCase

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf.fast import pool

pytestmark = pytest.mark.fast

I8, I16, F16, F32 = (np.dtype(t) for t in (np.int8, np.int16, np.float16, np.float32))
ACC = {I8: "INT32", I16: "INT32", F16: "FP16", F32: "FP32"}

# (input N, H, W, C), kernel (KH, KW), stride, pad [top, bottom, left, right]
GEOMETRIES = [
    ((1, 7, 7, 1280), (7, 7), (1, 1), (0, 0, 0, 0)),   # MobileNetV2's global pool
    ((2, 5, 6, 19), (5, 6), (1, 1), (0, 0, 0, 0)),     # global, two images
    ((1, 11, 11, 32), (3, 3), (2, 2), (1, 1, 1, 1)),   # 3x3 stride 2
    ((2, 9, 10, 8), (3, 2), (2, 1), (2, 0, 0, 1)),     # one-sided padding, mixed strides
    ((1, 10, 7, 5), (2, 2), (3, 3), (0, 1, 1, 0)),      # stride above the kernel
    ((1, 4, 5, 3), (4, 5), (1, 1), (3, 3, 4, 4)),      # every window partly padding
    ((1, 6, 6, 70), (1, 1), (1, 1), (0, 0, 0, 0)),     # one tap
]
IDS = [f"{g[0]}k{g[1]}s{g[2]}p{g[3]}" for g in GEOMETRIES]


@pytest.fixture(autouse=True)
def looped(monkeypatch) -> list[str]:
    """The names of the compiled loops the fast forms ran, for the tests to check that they ran
    (rather than the reference)."""
    ran: list[str] = []
    real = pool._Pool.__call__

    def spy(self, x):
        ran.append(self.loop.__name__)
        return real(self, x)
    monkeypatch.setattr(pool._Pool, "__call__", spy)
    return ran


@pytest.fixture(params=["calling-thread", "threads"])
def spread(request, monkeypatch) -> None:
    """Each test on the calling thread, then with any pool of several rows over the threads."""
    monkeypatch.setattr(pool, "SPREAD_WORK", 1 << 62 if request.param == "calling-thread" else 0)


def _pool(case: GraphCase, op: str, dtype: np.dtype, shape: tuple, kernel: tuple, stride: tuple,
          pad: tuple, zero_points: tuple[int, int] = (0, 0), nan_mode: str = "PROPAGATE"):
    """`op` over a new input; its result Value."""
    (n, h, w, c), (kh, kw) = shape, kernel
    oh = (h + pad[0] + pad[1] - kh) // stride[0] + 1
    ow = (w + pad[2] + pad[3] - kw) // stride[1] + 1
    x = case.input(dtype, shape)
    result = (dtype, (n, oh, ow, c))
    if op == "MAX_POOL2D":
        return case.graph.op(op, input=x, kernel=kernel, stride=stride, pad=pad,
                             nan_mode=nan_mode, result=result)
    return case.graph.op(op, input=x, kernel=kernel, stride=stride, pad=pad, acc_type=ACC[dtype],
                         input_zp=np.array([zero_points[0]], dtype),
                         output_zp=np.array([zero_points[1]], dtype), result=result)


def _random(rng: np.random.Generator, dtype: np.dtype, shape: tuple, special: bool) -> np.ndarray:
    """Values over the whole range of an integer type; floats, with `special` some of them
    NaN, +-inf, +-0 and ties."""
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    if special:
        odd = rng.random(shape) < 0.2
        x[odd] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5], dtype), odd.sum())
    return x


def _agree(case: GraphCase, looped: list[str], special: bool = False, seed: int = 0
           ) -> np.ndarray:
    """The cpu backend gives the reference's result exactly (NaN where it has NaN, zeros of the
    same sign), through one pool loop where the type has one; returns it."""
    model = case.to_vgf()
    rng = np.random.default_rng(seed)
    inputs = [_random(rng, v.dtype, v.shape, special) for v in case.graph.inputs]
    want, = pyvgf.load(model, backend="reference").run([a.copy() for a in inputs])
    looped.clear()
    got, = pyvgf.load(model, backend="cpu").run([a.copy() for a in inputs])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":  # the signs of zeros (a NaN's own sign means nothing)
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
    assert len(looped) == (want.dtype in pool.TYPES)
    return want


def _same(case: GraphCase, y, looped: list[str], special: bool = False) -> None:
    """_agree on y as the graph's result, which is not a constant tensor."""
    case.graph.output(y)
    assert len(np.unique(_agree(case, looped, special))) > 1


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
@pytest.mark.parametrize("dtype, zero_points", [(I8, (0, 0)), (I8, (-128, -128)), (I8, (77, -5)),
                                                (I16, (0, 0))], ids=["i8", "i8-zp-low", "i8-zp",
                                                                     "i16"])
def test_int_avg_pool_is_bit_exact(geometry, dtype, zero_points, spread, looped):
    case = GraphCase(Graph(), description="avg pool")
    _same(case, _pool(case, "AVG_POOL2D", dtype, *geometry, zero_points), looped)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
@pytest.mark.parametrize("special", [False, True], ids=["finite", "non-finite"])
def test_fp32_avg_pool_sums_as_the_reference_does(geometry, special, spread, looped):
    case = GraphCase(Graph(), description="avg pool fp32")
    _same(case, _pool(case, "AVG_POOL2D", F32, *geometry), looped, special)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=IDS)
@pytest.mark.parametrize("dtype", [I8, I16, F32], ids=str)
@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_max_pool_is_bit_exact(geometry, dtype, nan_mode, spread, looped):
    case = GraphCase(Graph(), description="max pool")
    _same(case, _pool(case, "MAX_POOL2D", dtype, *geometry, nan_mode=nan_mode), looped,
          special=True)


def test_zero_points_made_at_run_time_pool_as_constants_do(looped):
    """The plan-time form takes constant zero points; zero points that are graph inputs run
    the op as it is, through the same loop."""
    case = GraphCase(Graph(), description="avg pool, zero points as inputs")
    (n, h, w, c), kernel, stride, pad = GEOMETRIES[2]
    y = case.graph.op("AVG_POOL2D", input=case.input(I8, (n, h, w, c)), kernel=kernel,
                      stride=stride, pad=pad, acc_type=ACC[I8], input_zp=case.input(I8, (1,)),
                      output_zp=case.input(I8, (1,)),
                      result=(I8, (n, (h + pad[0] + pad[1] - kernel[0]) // stride[0] + 1,
                                   (w + pad[2] + pad[3] - kernel[1]) // stride[1] + 1, c)))
    _same(case, y, looped)


@pytest.mark.parametrize("op", ["AVG_POOL2D", "MAX_POOL2D"])
def test_other_types_run_the_reference(op, looped):
    case = GraphCase(Graph(), description="fp16 pool")
    _same(case, _pool(case, op, F16, *GEOMETRIES[2]), looped)


@st.composite
def pools(draw) -> tuple[GraphCase, bool]:
    """Any pool the spec allows of the loops' types: kernel, stride, padding below the kernel,
    zero points, sizes from one window up; and whether the input has non-finite values."""
    op = draw(st.sampled_from(["AVG_POOL2D", "MAX_POOL2D"]))
    dtype = draw(st.sampled_from([I8, I16, F32]))
    kh, kw, sy, sx = (draw(st.integers(1, k)) for k in (5, 5, 3, 3))
    pad = tuple(draw(st.integers(0, k - 1)) for k in (kh, kh, kw, kw))
    oh, ow = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    h = max(1, sy * (oh - 1) + kh - pad[0] - pad[1])
    w = max(1, sx * (ow - 1) + kw - pad[2] - pad[3])
    h += (-(h + pad[0] + pad[1] - kh)) % sy  # the sizes the strides divide exactly
    w += (-(w + pad[2] + pad[3] - kw)) % sx
    shape = (draw(st.integers(1, 2)), h, w, draw(st.integers(1, 40)))
    zps = (draw(st.integers(-128, 127)), draw(st.integers(-128, 127))) if dtype == I8 else (0, 0)
    case = GraphCase(Graph(), description=f"{op} {dtype}")
    y = _pool(case, op, dtype, shape, (kh, kw), (sy, sx), pad, zps,
              draw(st.sampled_from(["PROPAGATE", "IGNORE"])))
    case.graph.output(y)
    return case, dtype == F32 and draw(st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(drawn=pools(), threaded=st.booleans())
def test_drawn_pools_are_bit_exact(drawn, threaded, looped, monkeypatch):
    case, special = drawn
    monkeypatch.setattr(pool, "SPREAD_WORK", 0 if threaded else 1 << 62)
    _agree(case, looped, special, seed=1)
