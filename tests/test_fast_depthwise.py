"""The fast executor's depthwise loops (pyvgf/fast/compiled.py) against the reference on the
cases their paths split on: outputs whose 3x3 window lies inside the input, border outputs
(top, bottom, left, right, corners), other kernel sizes, strides 1 and 2, dilation, padding
on some sides only, zero points, channel counts from a few to many vectors' width, and the
largest int8 sums. Integers bit-exact, floats within pyvgf.testing's tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from pyvgf.build import Graph
from pyvgf.testing import GraphCase, assert_backends_agree

pytestmark = pytest.mark.fast

numba = pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")
from pyvgf.fast import compiled  # noqa: E402

I8, I32, F32 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.float32)

# (input H, W, C), kernel (KH, KW), stride, dilation, pad [top, bottom, left, right]
SHAPES = [
    ((9, 11, 13), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),   # MobileNet's stride 1
    ((11, 10, 32), (3, 3), (2, 2), (1, 1), (1, 1, 0, 1)),   # MobileNet's stride 2
    ((9, 10, 8), (3, 3), (2, 1), (1, 1), (2, 0, 0, 2)),    # one-sided padding, mixed strides
    ((12, 12, 17), (3, 3), (1, 2), (2, 3), (2, 2, 3, 2)),  # dilated windows
    ((10, 12, 7), (3, 3), (1, 1), (2, 2), (2, 2, 1, 3)),   # dilated with stride 1
    ((4, 5, 3), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2)),     # no window wholly inside
    ((3, 3, 5), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0)),     # one window, no padding
    ((8, 7, 9), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),     # other kernels: _window only
    ((7, 8, 6), (2, 3), (2, 2), (1, 1), (0, 1, 1, 0)),
    ((4, 5, 200), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # many channels
    # whole vectors of channels (compiled._WINDOWS_3X3), with padded taps of every kind
    ((12, 12, 16), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2)),  # dilated, stride 1
    ((13, 11, 48), (3, 3), (2, 2), (2, 1), (3, 1, 0, 2)),  # dilated, stride 2, uneven pads
    ((4, 5, 32), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2)),    # no window wholly inside
    ((6, 7, 24), (3, 3), (1, 1), (1, 1), (3, 3, 3, 3)),    # outputs with no tap inside
]


def _depthwise(case: GraphCase, dtype: np.dtype, shape: tuple, kernel: tuple, stride: tuple,
               dilation: tuple, pad: tuple, zero_point: int, weight: np.ndarray | None = None,
               mult: int = 1, batch: int = 1):
    """A DEPTHWISE_CONV2D of a new input; its result Value."""
    (h, w, c), (kh, kw) = shape, kernel
    rng = np.random.default_rng(h * 100 + w * 10 + c)
    if weight is None:
        weight = (rng.integers(-128, 128, (kh, kw, c, mult)).astype(I8) if dtype == I8
                  else rng.standard_normal((kh, kw, c, mult)).astype(F32))
    acc_t, out_t = ("INT32", I32) if dtype == I8 else ("FP32", F32)
    bias = (rng.integers(-1000, 1000, c * mult) if dtype == I8
            else rng.standard_normal(c * mult)).astype(out_t)
    oh = (h - 1 + pad[0] + pad[1] - (kh - 1) * dilation[0]) // stride[0] + 1
    ow = (w - 1 + pad[2] + pad[3] - (kw - 1) * dilation[1]) // stride[1] + 1
    x = case.input(dtype, (batch, h, w, c))
    return case.graph.op(
        "DEPTHWISE_CONV2D", input=x, weight=weight, bias=bias,
        input_zp=np.array([zero_point], dtype), weight_zp=np.array([0], weight.dtype),
        pad=pad, stride=stride, dilation=dilation, acc_type=acc_t,
        result=(out_t, (batch, oh, ow, c * mult)))


def _rescaled(case: GraphCase, y, channels: int):
    """y RESCALEd per channel to int8: fused into the depthwise loop (its int32 sums)."""
    rng = np.random.default_rng(channels)
    return case.graph.op(
        "RESCALE", input=y, multiplier=rng.integers(1 << 30, 1 << 31, channels).astype(np.int32),
        shift=rng.integers(30, 40, channels).astype(np.int8), input_zp=np.array([0], I32),
        output_zp=np.array([-3], I8), scale32=True, rounding_mode="SINGLE_ROUND",
        per_channel=True, input_unsigned=False, output_unsigned=False, result=(I8, y.shape))


def _agree(case: GraphCase, y, inputs: list[np.ndarray] | None = None) -> None:
    case.graph.output(y)
    results = assert_backends_agree(case.to_vgf(), inputs or case.random_inputs(7),
                                    backends=("reference", "cpu"))
    assert len(np.unique(results[0])) > 1  # not a constant result


@pytest.mark.parametrize("geometry", SHAPES, ids=lambda g: f"{g[0]}k{g[1]}s{g[2]}d{g[3]}p{g[4]}")
@pytest.mark.parametrize("zero_point", [-128, 0, 77])
def test_int8_rescaled_in_the_loop(geometry, zero_point):
    case = GraphCase(Graph(), description="depthwise + rescale")
    y = _depthwise(case, I8, *geometry, zero_point)
    _agree(case, _rescaled(case, y, geometry[0][2]))


@pytest.mark.parametrize("geometry", SHAPES, ids=lambda g: f"{g[0]}k{g[1]}s{g[2]}d{g[3]}p{g[4]}")
def test_int8_int32_result(geometry):
    """No RESCALE after it: two images, the sums in bands, then + bias."""
    case = GraphCase(Graph(), description="depthwise int8")
    _agree(case, _depthwise(case, I8, *geometry, -5, batch=2))


@pytest.mark.parametrize("geometry", SHAPES, ids=lambda g: f"{g[0]}k{g[1]}s{g[2]}d{g[3]}p{g[4]}")
@pytest.mark.parametrize("clamped", [False, True])
def test_fp32_bias_and_clamp_in_the_loop(geometry, clamped):
    case = GraphCase(Graph(), description="depthwise fp32")
    y = _depthwise(case, F32, *geometry, 0)
    if clamped:
        y = case.graph.op("CLAMP", input=y, min_val=np.float32(-0.5), max_val=np.float32(0.75),
                          result=(F32, y.shape))
    _agree(case, y)


def test_fp32_in_bands_with_a_channel_multiplier():
    case = GraphCase(Graph(), description="depthwise fp32, multiplier 2")
    _agree(case, _depthwise(case, F32, *SHAPES[0], 0, mult=2, batch=2))


def test_fp32_non_finite_inputs_stay_where_they_are():
    """A NaN or inf at an input pixel reaches exactly the outputs whose windows read it."""
    case = GraphCase(Graph(), description="depthwise fp32, non-finite")
    y = _depthwise(case, F32, *SHAPES[0], 0)
    (x,) = case.random_inputs(3)
    x[0, 0, 0, 0], x[0, 4, 5, 1], x[0, 8, 10, 2] = np.nan, np.inf, -np.inf
    _agree(case, y, [x])


@pytest.mark.parametrize("nan_mode", ["PROPAGATE", "IGNORE"])
def test_fp32_clamp_in_the_loop_takes_nan_as_its_mode_says(nan_mode):
    """NaN and inf at inputs (borders and inside) of a layer whose CLAMP the loop applies as
    it makes each output: IGNORE makes a NaN output the CLAMP's low, PROPAGATE keeps it."""
    case = GraphCase(Graph(), description="depthwise fp32, clamped NaN")
    y = _depthwise(case, F32, (9, 10, 16), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 0)
    y = case.graph.op("CLAMP", input=y, min_val=np.float32(0), max_val=np.float32(6),
                      nan_mode=nan_mode, result=(F32, y.shape))
    (x,) = case.random_inputs(5)
    x[0, 0, 0, :3], x[0, 4, 5, 3:6], x[0, 8, 9, 8] = np.nan, np.inf, -np.inf
    case.graph.output(y)
    results = assert_backends_agree(case.to_vgf(), [x], backends=("reference", "cpu"))
    assert np.isnan(results[0]).any() == (nan_mode == "PROPAGATE")


@pytest.mark.parametrize("kernel", [(3, 3), (7, 7)])
def test_int8_largest_sums_are_exact(kernel):
    """Every product at its largest, |x - zp| = 255 times |w| = 128, all of one sign: the
    largest sums an int8 depthwise layer of this kernel makes, held exactly in int32."""
    h, w, c = 9, 10, 11
    case = GraphCase(Graph(), description="depthwise int8, largest sums")
    weight = np.full((*kernel, c, 1), -128, I8)
    weight[..., 1::2, :] = 127  # odd channels: the other sign
    y = _depthwise(case, I8, (h, w, c), kernel, (1, 1), (1, 1),
                   (kernel[0] // 2,) * 2 + (kernel[1] // 2,) * 2, 127, weight=weight)
    x = np.full((1, h, w, c), -128, I8)
    x[0, ::3, ::2] = 127  # some pixels add nothing (x - zp = 0)
    out = case.graph.op("RESCALE", input=y, multiplier=np.array([1 << 30], np.int32),
                        shift=np.array([40], np.int8), input_zp=np.array([0], I32),
                        output_zp=np.array([0], I8), scale32=True, rounding_mode="SINGLE_ROUND",
                        per_channel=False, input_unsigned=False, output_unsigned=False,
                        result=(I8, y.shape))
    windows = np.lib.stride_tricks.sliding_window_view(x[0].astype(np.int64) - 127, kernel,
                                                      axis=(0, 1))
    sums = np.einsum("hwcij,ijc->hwc", windows, weight[..., 0].astype(np.int64))
    assert np.abs(sums).max() > 255 * 128 * kernel[0] * kernel[1] // 2  # near the largest
    _agree(case, out, [x])


@numba.njit
def _vector_windows(x, zero_point, w, out, finish):
    """compiled._WINDOWS_3X3 on the outputs of x [1, 3, W, C] whose windows lie inside it."""
    channels = x.shape[3]
    return compiled._WINDOWS_3X3(x, 0, x.shape[2] * channels, channels, channels, zero_point, w,
                                 out, out.shape[0], compiled.ALL_TAPS, finish)


def _windows_sums(x: np.ndarray, zero_point, w: np.ndarray) -> np.ndarray:
    windows = np.lib.stride_tricks.sliding_window_view(x[0].astype(np.float64) - zero_point,
                                                       (3, 3), axis=(0, 1))[0]
    return np.einsum("wcij,ijc->wc", windows, w.astype(np.float64))


@pytest.mark.parametrize("features, cpu, lanes", [
    ({"avx2", "fma"}, "znver3", 8),
    ({"avx2", "fma", "avx512f"}, "cascadelake", 0),
    ({"avx2", "fma", "avx512f"}, "znver4", 16),
    ({"sse4.2"}, "", 0),
])
def test_the_vector_windows_run_with_avx2_or_amds_avx512_but_not_intels(features, cpu, lanes):
    assert compiled._window_lanes(features, cpu) == lanes


@pytest.mark.skipif(not compiled.WINDOW_LANES, reason="the loop runs where the CPU has AVX2, without Intel's AVX-512")
def test_the_vector_windows_take_the_layers_they_are_for():
    """The loop naming its vectors makes every channel of an int8 layer (int32 taps) and of an
    fp32 one, finished or not, and declines what the older loops make (it returns 0): an
    integer layer with a bias, a float zero point other than 0, a bias of another type. Its
    channels come in whole vectors of each width it has (24 on AVX-512: one of 16, one of 8);
    the rest it leaves, and says so."""
    rng = np.random.default_rng(3)
    channels = compiled.WINDOW_LANES + 8
    x8 = rng.integers(-128, 128, (1, 3, 6, channels), dtype=np.int8)
    w32 = rng.integers(-255, 256, (3, 3, channels)).astype(np.int32)
    out = np.empty((4, channels), np.int32)
    none = (np.empty(0, np.int32), 0, 0, False)
    assert _vector_windows(x8, np.int32(-7), w32, out, none) == channels
    np.testing.assert_array_equal(out, _windows_sums(x8, -7, w32))
    assert _vector_windows(x8, np.int32(-7), w32, out, (np.ones(channels, np.int32), 0, 0, False)) == 0

    xf = rng.standard_normal((1, 3, 6, channels)).astype(np.float32)
    wf = rng.standard_normal((3, 3, channels)).astype(np.float32)
    outf = np.empty((4, channels), np.float32)
    bias = rng.standard_normal(channels).astype(np.float32)
    assert _vector_windows(xf, np.float32(0), wf, outf, (bias, np.float32(0), np.float32(1), False)) == channels
    np.testing.assert_allclose(outf, np.clip(_windows_sums(xf, 0, wf) + bias, 0, 1), rtol=1e-5, atol=1e-5)
    assert _vector_windows(xf, np.float32(0.5), wf, outf, (bias[:0], np.float32(0), np.float32(1), False)) == 0
    more = rng.standard_normal((1, 3, 6, channels + 4)).astype(np.float32)
    wider = np.full((4, channels + 4), np.nan, np.float32)
    assert _vector_windows(more, np.float32(0), np.ascontiguousarray(np.pad(wf, ((0, 0), (0, 0), (0, 4)))),
                           wider, (bias[:0], np.float32(0), np.float32(1), False)) == channels
    np.testing.assert_allclose(wider[:, :channels], _windows_sums(more[..., :channels], 0, wf), rtol=1e-5, atol=1e-5)
    assert np.isnan(wider[:, channels:]).all()
    assert _vector_windows(xf, np.float32(0), wf, outf, (np.ones(channels, np.int32), 0, 1, False)) == 0
