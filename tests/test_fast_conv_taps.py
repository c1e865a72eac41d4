"""The fast executor's CONV2D by blocks of output rows (compiled.conv_blocks, for few products
per output: MobileNetV2's stem), and by output rows read in place by the FMA tiles
(compiled.conv_rows_direct), against the reference on the cases their windows split on:
windows inside the input and over its borders (top, bottom, left, right, corners, some sides
only, none wholly inside), strides, dilation, blocks of fewer rows at the end, zero points,
bias + CLAMP and RESCALE in the loop, the int32 result in bands, other input types, and the
largest int8 sums; non-finite weights beside padding keep the GEMM that skips padded taps.
Integers bit-exact; float weights and inputs are multiples of 1/8 and 1/4, so that
every sum is exact in float32 whatever its order and the results must be equal too (random
floats cancelling to near zero differ by their rounding, which pyvgf.testing's tolerance,
relative to the largest result, does not allow once a CLAMP has cut that down)."""

from __future__ import annotations

import numpy as np
import pytest

from pyvgf.build import Graph
from pyvgf.testing import GraphCase, assert_backends_agree

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf.fast import compiled, conv

pytestmark = pytest.mark.fast

I8, I16, I32, I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)

# (input H, W, IC), OC, kernel (KH, KW), stride, dilation, pad [top, bottom, left, right]
SHAPES = [
    ((18, 18, 3), 32, (3, 3), (2, 2), (1, 1), (0, 1, 0, 1)),   # MobileNetV2's stem
    ((9, 13, 3), 8, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((10, 23, 1), 5, (3, 3), (1, 2), (1, 1), (2, 0, 0, 2)),    # one-sided padding, mixed strides
    ((12, 19, 2), 16, (3, 3), (1, 1), (2, 3), (2, 2, 3, 2)),   # dilated windows
    ((11, 22, 4), 7, (5, 3), (2, 1), (1, 1), (0, 0, 0, 0)),    # no padding, every column inside
    ((4, 5, 3), 9, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2)),      # no window wholly inside
    ((3, 3, 6), 4, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0)),      # one window
    ((8, 14, 1), 3, (7, 7), (1, 1), (1, 1), (3, 3, 3, 3)),     # a large kernel, one channel
    ((7, 26, 2), 40, (2, 3), (2, 3), (1, 1), (0, 1, 1, 0)),    # even kernel height, stride 3
    ((6, 9, 15), 6, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),     # the most channels
    ((11, 12, 15), 4, (9, 9), (1, 1), (1, 1), (4, 4, 4, 4)),   # float64 sums for int8 zp -128
]

DIRECT_SHAPES = [
    ((17, 17, 3), 32, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),   # the stem, padded on every side
    ((9, 11, 3), 24, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),    # a half panel (16 + 8 channels)
    ((5, 6, 2), 16, (3, 3), (1, 1), (2, 1), (2, 2, 1, 1)),     # rows dilated, columns not
    ((4, 5, 3), 8, (7, 7), (1, 1), (1, 1), (3, 3, 3, 3)),      # no window wholly inside
    ((6, 20, 1), 8, (1, 5), (3, 2), (1, 1), (0, 1, 5, 0)),     # a last row in the padding
]
"""Geometries that compiled.conv_rows_direct takes (fp32, output channels in eights, dilation
1 along the width) besides SHAPES's first, second and ninth."""


def _ids(geometry: tuple) -> str:
    shape, oc, kernel, stride, dilation, pad = geometry
    return f"{shape}o{oc}k{kernel}s{stride}d{dilation}p{pad}"


def _conv(case: GraphCase, dtype: np.dtype, shape: tuple, oc: int, kernel: tuple,
          stride: tuple, dilation: tuple, pad: tuple, zero_point: int = 0,
          weight: np.ndarray | None = None, batch: int = 1, transposed: bool = False):
    """A CONV2D of a new input (with `transposed`, of the TRANSPOSE of an NCHW input: a view
    whose channels are not contiguous); its result Value."""
    (h, w, ic), (kh, kw) = shape, kernel
    rng = np.random.default_rng(h * 100 + w * 10 + ic)
    integer = dtype.kind == "i"
    if weight is None:
        weight = (rng.integers(-128, 128, (oc, kh, kw, ic)).astype(I8) if integer
                  else (rng.integers(-8, 9, (oc, kh, kw, ic)) / 8).astype(dtype))
    acc_t, out_t = {I8: ("INT32", I32), I16: ("INT48", "int48")}.get(dtype, ("FP32", dtype))
    bias = (rng.integers(-1000, 1000, oc) if integer else rng.integers(-8, 9, oc) / 4)
    bias = (case.graph.constant(bias.astype(I64), out_t) if out_t == "int48"
            else bias.astype(out_t))
    oh = (h - 1 + pad[0] + pad[1] - (kh - 1) * dilation[0]) // stride[0] + 1
    ow = (w - 1 + pad[2] + pad[3] - (kw - 1) * dilation[1]) // stride[1] + 1
    x = case.input(dtype, (batch, h, w, ic))
    if transposed:
        x = case.graph.op("TRANSPOSE", input1=case.input(dtype, (batch, ic, h, w)),
                          perms=[0, 2, 3, 1], result=(dtype, (batch, h, w, ic)))
    return case.graph.op(
        "CONV2D", input=x, weight=weight, bias=bias, input_zp=np.array([zero_point], dtype),
        weight_zp=np.array([0], weight.dtype), pad=pad, stride=stride, dilation=dilation,
        acc_type=acc_t, result=(out_t, (batch, oh, ow, oc)))


def _rescaled(case: GraphCase, y, channels: int, shift: tuple[int, int] = (30, 40)):
    """y RESCALEd per channel to int8: fused into the loop (its sums)."""
    rng = np.random.default_rng(channels)
    return case.graph.op(
        "RESCALE", input=y, multiplier=rng.integers(1 << 30, 1 << 31, channels).astype(np.int32),
        shift=rng.integers(*shift, channels).astype(np.int8), input_zp=np.array([0], I32),
        output_zp=np.array([-3], I8), scale32=True, rounding_mode="SINGLE_ROUND",
        per_channel=True, input_unsigned=False, output_unsigned=False, result=(I8, y.shape))


def _inputs(case: GraphCase, seed: int) -> list[np.ndarray]:
    """Random inputs, the float ones multiples of 1/4 in [-4, 4]."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-16, 17, x.shape) / 4).astype(x.dtype) if x.dtype.kind == "f" else x
            for x in case.random_inputs(seed)]


def _agree(case: GraphCase, y, inputs: list[np.ndarray] | None = None) -> None:
    case.graph.output(y)
    results = assert_backends_agree(case.to_vgf(), inputs or _inputs(case, 7),
                                    backends=("reference", "cpu"))
    assert len(np.unique(results[0])) > 1  # not a constant result


@pytest.fixture
def made(monkeypatch) -> list[bool]:
    """Whether each CONV2D made runs conv_blocks."""
    made = []
    init = conv._Conv.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self.blocks is not None)
    monkeypatch.setattr(conv._Conv, "__init__", spy)
    return made


@pytest.fixture
def by_blocks(made):
    """Every CONV2D the test makes runs conv_blocks."""
    yield
    assert made and all(made)


@pytest.mark.usefixtures("by_blocks")
@pytest.mark.parametrize("geometry", SHAPES, ids=_ids)
@pytest.mark.parametrize("zero_point", [-128, 0, 77])
def test_int8_rescaled_in_the_loop(geometry, zero_point):
    case = GraphCase(Graph(), description="conv + rescale")
    y = _conv(case, I8, *geometry, zero_point=zero_point)
    _agree(case, _rescaled(case, y, geometry[1]))


@pytest.mark.usefixtures("by_blocks")
@pytest.mark.parametrize("geometry", SHAPES, ids=_ids)
def test_int8_int32_result(geometry):
    """No RESCALE after it: two images, the sums in bands, then + bias."""
    case = GraphCase(Graph(), description="conv int8")
    _agree(case, _conv(case, I8, *geometry, zero_point=-5, batch=2))


@pytest.mark.usefixtures("by_blocks")
@pytest.mark.parametrize("geometry", SHAPES, ids=_ids)
@pytest.mark.parametrize("clamped", [False, True])
def test_fp32_bias_and_clamp_in_the_loop(geometry, clamped):
    case = GraphCase(Graph(), description="conv fp32")
    y = _conv(case, F32, *geometry)
    if clamped:
        y = case.graph.op("CLAMP", input=y, min_val=np.float32(-1.5), max_val=np.float32(2.25),
                          result=(F32, y.shape))
    _agree(case, y)


@pytest.mark.skipif(not compiled.FLOAT_TILES, reason="the FMA tiles do not run on this CPU")
@pytest.mark.parametrize("geometry", [SHAPES[0], SHAPES[1], SHAPES[8], *DIRECT_SHAPES], ids=_ids)
@pytest.mark.parametrize("dtype", [F32, I8], ids=str)
@pytest.mark.parametrize("transposed", [False, True], ids=["nhwc", "transposed"])
def test_windows_read_in_place(monkeypatch, geometry, dtype, transposed):
    """The FMA tiles read each window straight from the input (conv_rows_direct), its taps in
    the padding left out: fp32 with bias and CLAMP in the loop, int8 (its zero point
    subtracted first) with its RESCALE; the input as given or a transposed view of one."""
    direct = []
    init = conv._Conv.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        direct.append(self.direct_tiles)
    monkeypatch.setattr(conv._Conv, "__init__", spy)
    case = GraphCase(Graph(), description=f"conv {dtype}, windows in place")
    if dtype == I8:
        y = _conv(case, I8, *geometry, zero_point=-61, transposed=transposed)
        _agree(case, _rescaled(case, y, geometry[1]))
    else:
        y = _conv(case, F32, *geometry, transposed=transposed)
        _agree(case, case.graph.op("CLAMP", input=y, min_val=np.float32(-1.5),
                                   max_val=np.float32(2.25), result=(F32, y.shape)))
    assert direct == [True]


@pytest.mark.usefixtures("by_blocks")
@pytest.mark.parametrize("geometry", SHAPES[:4], ids=_ids)
def test_fp32_in_bands_of_two_images(geometry):
    case = GraphCase(Graph(), description="conv fp32, two images")
    _agree(case, _conv(case, F32, *geometry, batch=2))


@pytest.mark.usefixtures("by_blocks")
@pytest.mark.parametrize("geometry", SHAPES[:4], ids=_ids)
@pytest.mark.parametrize("outputs", [1, 20])
def test_blocks_of_few_rows(monkeypatch, geometry, outputs):
    """Blocks of one row each, and of 20 // OW rows (one at least) with fewer in the last."""
    monkeypatch.setattr(conv, "BLOCK_OUTPUTS", outputs)
    case = GraphCase(Graph(), description="conv fp32, small blocks")
    y = _conv(case, F32, *geometry)
    y = case.graph.op("CLAMP", input=y, min_val=np.float32(-1.5), max_val=np.float32(2.25),
                      result=(F32, y.shape))
    _agree(case, y)
    case = GraphCase(Graph(), description="conv int8 + rescale, small blocks")
    _agree(case, _rescaled(case, _conv(case, I8, *geometry, zero_point=9), geometry[1]))


@pytest.mark.usefixtures("by_blocks")
@pytest.mark.parametrize("geometry", SHAPES[:4], ids=_ids)
def test_other_input_types(geometry):
    """fp16 (read as float32) and int16 (an int48 result, the sums then + bias in int64, then
    RESCALEd to int32 as real models do)."""
    case = GraphCase(Graph(), description="conv fp16")
    _agree(case, _conv(case, F16, *geometry))
    case = GraphCase(Graph(), description="conv int16")
    y = _conv(case, I16, *geometry)
    _agree(case, case.graph.op(
        "RESCALE", input=y, multiplier=np.array([1 << 14], np.int16), shift=np.array([14], np.int8),
        input_zp=case.graph.constant([0], "int48"), output_zp=np.array([0], I32), scale32=False,
        rounding_mode="SINGLE_ROUND", per_channel=False, input_unsigned=False,
        output_unsigned=False, result=(I32, y.shape)))


def test_fp32_non_finite_weights_skip_padded_taps(made):
    """An inf weight multiplies only the inputs its taps read: a padded tap is skipped, not
    0 x inf = NaN, so the borders stay finite where the reference's do. (conv_blocks multiplies
    padded taps as zeros: such a weight keeps the GEMM.)"""
    geometry = SHAPES[1]
    shape, oc, kernel = geometry[:3]
    weight = np.random.default_rng(1).standard_normal((oc, *kernel, shape[2])).astype(F32)
    weight[0, 0, 0, 0], weight[1, 2, 2, 1] = np.inf, -np.inf
    case = GraphCase(Graph(), description="conv fp32, non-finite weights")
    y = _conv(case, F32, *geometry, weight=weight)
    case.graph.output(y)
    (x,) = _inputs(case, 3)
    (result,) = assert_backends_agree(case.to_vgf(), [x], backends=("reference", "cpu"))
    assert np.isfinite(result[0, 0, :, 0]).all()  # tap (0, 0) lies in the padding there
    assert not np.isfinite(result[0, 1:, 1:, 0]).any()
    assert made == [False]


@pytest.mark.usefixtures("by_blocks")
def test_fp32_non_finite_inputs_stay_where_they_are():
    """A NaN or inf at an input pixel reaches exactly the outputs whose windows read it."""
    case = GraphCase(Graph(), description="conv fp32, non-finite inputs")
    y = _conv(case, F32, *SHAPES[1])
    (x,) = _inputs(case, 3)
    x[0, 0, 0, 0], x[0, 4, 5, 1], x[0, 8, 12, 2] = np.nan, np.inf, -np.inf
    _agree(case, y, [x])


@pytest.mark.usefixtures("by_blocks")
@pytest.mark.parametrize("rescaled", [False, True])
def test_int8_largest_sums_are_exact(rescaled):
    """Every product at its largest, |x - zp| = 255 times |w| = 128, all of one sign: the
    largest sums an int8 convolution of 2 channels and a 5x5 kernel makes, exact as they are
    (int32 result) and RESCALEd in the loop."""
    h, w, ic, oc, kernel = 9, 14, 2, 6, (5, 5)
    weight = np.full((oc, *kernel, ic), -128, I8)
    weight[1::2] = 127  # odd output channels: the other sign
    case = GraphCase(Graph(), description="conv int8, largest sums")
    y = _conv(case, I8, (h, w, ic), oc, kernel, (1, 1), (1, 1), (2, 2, 2, 2), zero_point=127,
              weight=weight)
    x = np.full((1, h, w, ic), -128, I8)
    x[0, ::3, ::2] = 127  # some pixels add nothing (x - zp = 0)
    windows = np.lib.stride_tricks.sliding_window_view(x[0].astype(np.int64) - 127, kernel,
                                                      axis=(0, 1))
    sums = np.einsum("hwcij,oijc->hwo", windows, weight.astype(np.int64))
    assert np.abs(sums).max() > 255 * 128 * ic * kernel[0] * kernel[1] // 2  # near the largest
    _agree(case, _rescaled(case, y, oc, shift=(46, 48)) if rescaled else y, [x])
