"""The tensor operators (convolutions, pooling, MATMUL, FFTs) against tosa_reference_model.

Each case is a one-operator TOSA graph; hypothesis draws shapes and attributes, numpy draws the
data. Integer results must match bit for bit, floating-point ones within the result's precision.
"""

from __future__ import annotations

import mmap
import re
import tempfile

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pyvgf.errors import TosaError
from pyvgf.tosa import OPS
from pyvgf.types import TensorType
from support.tosa import examples
from support.tosa_tensor import Case, assert_close, run_case

I4, I8, I16, I32, I48 = (np.dtype(t) for t in (ml_dtypes.int4, np.int8, np.int16, np.int32,
                                               np.int64))
F8, F16, BF16, F32 = (np.dtype(t) for t in (ml_dtypes.float8_e4m3fn, np.float16,
                                            ml_dtypes.bfloat16, np.float32))
ACC = {I32: (1, "i32"), F16: (2, "f16"), F32: (3, "f32"), I48: (4, "i48")}

FAST = examples(6)
SLOW = examples(150)


def data(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu" or dtype == I4:
        info = ml_dtypes.iinfo(dtype)
        return rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def arr(values) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in values)}>"


@st.composite
def windows(draw, spatial: int, kmax: int = 3, dilate: bool = True):
    """Sizes, kernel, pad, stride, dilation of a convolution whose output size is exact."""
    sizes, kernel, pad, stride, dilation = [], [], [], [], []
    for _ in range(spatial):
        n = draw(st.integers(1, 9))
        k = draw(st.integers(1, kmax))
        d = draw(st.integers(1, 2)) if dilate else 1
        s = draw(st.integers(1, 3))
        before = draw(st.integers(0, 2))
        span = n - 1 + before - (k - 1) * d
        after = (-span) % s + s * draw(st.integers(0, 1))
        assume(span + after >= 0)
        sizes.append(n), kernel.append(k), pad.extend([before, after])
        stride.append(s), dilation.append(d)
    return sizes, kernel, pad, stride, dilation


def conv_out(sizes, kernel, pad, stride, dilation):
    return [(n - 1 + pad[2 * i] + pad[2 * i + 1] - (k - 1) * d) // s + 1
            for i, (n, k, s, d) in enumerate(zip(sizes, kernel, stride, dilation))]


CONV_DTYPES = [
    (I8, I8, I32, I32), (I8, I4, I32, I32), (I16, I8, I48, I48), (F32, F32, F32, F32),
    (F16, F16, F16, F16), (F16, F16, F32, F16), (BF16, BF16, F32, BF16),
]
IDS = [f"{i}x{w}-acc{a}" for i, w, a, _ in CONV_DTYPES]


def zero_points(rng, in_dt, w_dt, nonzero: bool):
    izp = int(rng.integers(-128, 128)) if nonzero and in_dt == I8 else 0
    wzp = int(rng.integers(-128, 128)) if nonzero and w_dt == I8 else 0
    return np.array([izp], in_dt), np.array([wzp], w_dt)


def _constants(w_dt, out_dt) -> set[str]:
    """Zero points are constants; so is an int48 bias (the reference model takes no int48)."""
    return {"input_zp", "weight_zp"} | ({"bias"} if out_dt == I48 else set())


def run_conv_case(case: Case) -> None:
    """Compare with the reference; int4 weights are compared with the same values as int8.

    tosa_reference_model 2026.8 cannot load int4 tensors (it reads a packed constant of more
    than two elements as zeros, and takes no int4 inputs), so the int4 kernels are checked
    against the reference's int8 result on the same weight values.
    """
    reference_case = case
    if case.operands[1][1].dtype == I4:
        widened = [(n, v.astype(I8) if n in ("weight", "weight_zp") else v)
                   for n, v in case.operands]
        reference_case = Case(case.op, case.mlir_op, widened, case.attributes,
                              case.mlir_attributes, case.results, case.constants)
    for ours, ref, result in zip(case.ours(), reference_case.reference(), case.results):
        assert_close(ours, ref, result)


def conv_case(op: str, dtypes, geometry, n: int, ic: int, oc: int, seed: int, bias_one: bool,
              nonzero_zp: bool = True) -> Case:
    in_dt, w_dt, acc, out_dt = dtypes
    sizes, kernel, pad, stride, dilation = geometry
    rng = np.random.default_rng(seed)
    x = data(rng, (n, *sizes, ic), in_dt)
    if op == "DEPTHWISE_CONV2D":
        w = data(rng, (*kernel, ic, oc), w_dt)
        channels = ic * oc
    else:
        w = data(rng, (oc, *kernel, ic), w_dt)
        channels = oc
    if out_dt.kind in "iu":
        bias = rng.integers(-2**20, 2**20, (1 if bias_one else channels,)).astype(out_dt)
    else:
        bias = data(rng, (1 if bias_one else channels,), out_dt)
    izp, wzp = zero_points(rng, in_dt, w_dt, nonzero_zp)
    out = conv_out(sizes, kernel, pad, stride, dilation)
    acc_enum, acc_name = ACC[acc]
    return Case(
        op, f"tosa.{op.lower()}",
        [("input", x), ("weight", w), ("bias", bias), ("input_zp", izp), ("weight_zp", wzp)],
        {"pad": np.array(pad, np.int32), "stride": np.array(stride, np.int32),
         "dilation": np.array(dilation, np.int32), "acc_type": acc_enum, "local_bound": False},
        f"acc_type = {acc_name}, dilation = {arr(dilation)}, pad = {arr(pad)}, "
        f"stride = {arr(stride)}",
        [TensorType(out_dt, (n, *out, channels))],
        constants=_constants(w_dt, out_dt),
    )


def _conv_test(op, spatial, dtypes, draw, seed, slow=False):
    geometry = draw(windows(spatial))
    n = draw(st.integers(1, 2))
    ic, oc = draw(st.integers(1, 6)), draw(st.integers(1, 5 if op != "DEPTHWISE_CONV2D" else 3))
    run_conv_case(conv_case(op, dtypes, geometry, n, ic, oc, seed, draw(st.booleans())))


@pytest.mark.parametrize("dtypes", CONV_DTYPES, ids=IDS)
@FAST
@given(st.data(), st.integers(0, 2**32 - 1))
def test_conv2d(dtypes, data_, seed):
    _conv_test("CONV2D", 2, dtypes, data_.draw, seed)


@pytest.mark.parametrize("dtypes", CONV_DTYPES, ids=IDS)
@FAST
@given(st.data(), st.integers(0, 2**32 - 1))
def test_depthwise_conv2d(dtypes, data_, seed):
    _conv_test("DEPTHWISE_CONV2D", 2, dtypes, data_.draw, seed)


@pytest.mark.parametrize("dtypes", [CONV_DTYPES[0], CONV_DTYPES[2], CONV_DTYPES[3]],
                         ids=[IDS[0], IDS[2], IDS[3]])
@FAST
@given(st.data(), st.integers(0, 2**32 - 1))
def test_conv3d(dtypes, data_, seed):
    _conv_test("CONV3D", 3, dtypes, data_.draw, seed)


@pytest.mark.slow
@pytest.mark.parametrize("op,spatial", [("CONV2D", 2), ("DEPTHWISE_CONV2D", 2), ("CONV3D", 3)])
@pytest.mark.parametrize("dtypes", CONV_DTYPES, ids=IDS)
@SLOW
@given(st.data(), st.integers(0, 2**32 - 1))
def test_conv_sweep(op, spatial, dtypes, data_, seed):
    _conv_test(op, spatial, dtypes, data_.draw, seed)


WIDE = [("CONV2D", 20, 3), ("DEPTHWISE_CONV2D", 64, 1), ("DEPTHWISE_CONV2D", 70, 2)]


@pytest.mark.parametrize("op,ic,oc", WIDE, ids=[f"{o}-{i}x{c}" for o, i, c in WIDE])
@pytest.mark.parametrize("dtypes", [CONV_DTYPES[0], CONV_DTYPES[2], CONV_DTYPES[3]],
                         ids=[IDS[0], IDS[2], IDS[3]])
@examples(3)
@given(st.data(), st.integers(0, 2**32 - 1))
def test_wide_channels(op, ic, oc, dtypes, data_, seed):
    """Channel counts that take other paths (contiguous im2col; depthwise rows wider than a
    SIMD vector)."""
    geometry = data_.draw(windows(2))
    run_conv_case(conv_case(op, dtypes, geometry, 1, ic, oc, seed, data_.draw(st.booleans())))


@pytest.mark.parametrize("dtypes", [CONV_DTYPES[0], CONV_DTYPES[2], CONV_DTYPES[3]],
                         ids=[IDS[0], IDS[2], IDS[3]])
@pytest.mark.parametrize("n,ic", [(1, 3), (2, 20)], ids=["n1-transposed", "n2-contiguous"])
@pytest.mark.fast
def test_conv_in_bands_of_output_rows(dtypes, n, ic, monkeypatch):
    """Bands of one or two output rows (tiny BAND_BYTES) give the same result as one pass."""
    from pyvgf.fast import conv, kernels

    monkeypatch.setattr(kernels, "BAND_BYTES", 1 << 9)
    monkeypatch.setattr(conv, "DEPTHWISE_BAND_BYTES", 1 << 7)
    for op, geometry in (("CONV2D", ([9, 7], [3, 2], [1, 1, 0, 1], [2, 1], [1, 2])),
                         ("CONV3D", ([3, 7, 5], [2, 3, 1], [1, 0, 1, 1, 0, 0], [1, 2, 1],
                                     [1, 1, 1])),
                         ("DEPTHWISE_CONV2D", ([9, 7], [3, 2], [1, 1, 0, 1], [2, 1], [1, 2]))):
        run_conv_case(conv_case(op, dtypes, geometry, n, ic, 4, 11, False))


def transpose_case(dtypes, n, ih, iw, ic, oc, kh, kw, sy, sx, out_pad, seed, bias_one):
    in_dt, w_dt, acc, out_dt = dtypes
    rng = np.random.default_rng(seed)
    x = data(rng, (n, ih, iw, ic), in_dt)
    w = data(rng, (oc, kh, kw, ic), w_dt)
    if out_dt.kind in "iu":
        bias = rng.integers(-2**20, 2**20, (1 if bias_one else oc,)).astype(out_dt)
    else:
        bias = data(rng, (1 if bias_one else oc,), out_dt)
    izp, wzp = zero_points(rng, in_dt, w_dt, True)
    top, bottom, left, right = out_pad
    oh = (ih - 1) * sy + top + bottom + kh
    ow = (iw - 1) * sx + left + right + kw
    acc_enum, acc_name = ACC[acc]
    return Case(
        "TRANSPOSE_CONV2D", "tosa.transpose_conv2d",
        [("input", x), ("weight", w), ("bias", bias), ("input_zp", izp), ("weight_zp", wzp)],
        {"out_pad": np.array(out_pad, np.int32), "stride": np.array([sy, sx], np.int32),
         "acc_type": acc_enum, "local_bound": False},
        f"acc_type = {acc_name}, out_pad = {arr(out_pad)}, stride = {arr([sy, sx])}",
        [TensorType(out_dt, (n, oh, ow, oc))],
        constants=_constants(w_dt, out_dt),
    )


def _transpose_test(dtypes, draw, seed):
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    out_pad = [draw(st.integers(-k + 1, 2)) for k in (kh, kh, kw, kw)]
    case = transpose_case(dtypes, draw(st.integers(1, 2)), draw(st.integers(1, 5)),
                          draw(st.integers(1, 5)), draw(st.integers(1, 4)),
                          draw(st.integers(1, 4)), kh, kw, draw(st.integers(1, 3)),
                          draw(st.integers(1, 3)), out_pad, seed, draw(st.booleans()))
    assume(all(d > 0 for d in case.results[0].shape))
    run_conv_case(case)


@pytest.mark.parametrize("dtypes", CONV_DTYPES, ids=IDS)
@FAST
@given(st.data(), st.integers(0, 2**32 - 1))
def test_transpose_conv2d(dtypes, data_, seed):
    _transpose_test(dtypes, data_.draw, seed)


@pytest.mark.slow
@pytest.mark.parametrize("dtypes", CONV_DTYPES, ids=IDS)
@SLOW
@given(st.data(), st.integers(0, 2**32 - 1))
def test_transpose_conv2d_sweep(dtypes, data_, seed):
    _transpose_test(dtypes, data_.draw, seed)


# Pooling ------------------------------------------------------------------------------------

POOL_DTYPES = [(I8, I32), (I16, I32), (F32, F32), (F16, F16), (F16, F32), (BF16, F32)]


def pool_case(op, dtype, acc, geometry, n, c, seed, nan_mode=1, nans=False):
    sizes, kernel, pad, stride, _ = geometry
    rng = np.random.default_rng(seed)
    x = data(rng, (n, *sizes, c), dtype)
    if nans:
        x[rng.random(x.shape) < 0.3] = np.nan
    out = [(s + pad[2 * i] + pad[2 * i + 1] - k) // st_ + 1
           for i, (s, k, st_) in enumerate(zip(sizes, kernel, stride))]
    attrs = {"kernel": np.array(kernel, np.int32), "stride": np.array(stride, np.int32),
             "pad": np.array(pad, np.int32)}
    text = f"kernel = {arr(kernel)}, pad = {arr(pad)}, stride = {arr(stride)}"
    operands = [("input", x)]
    constants = set()
    if op == "AVG_POOL2D":
        izp = int(rng.integers(-128, 128)) if dtype == I8 else 0
        ozp = int(rng.integers(-128, 128)) if dtype == I8 else 0
        operands += [("input_zp", np.array([izp], dtype)), ("output_zp", np.array([ozp], dtype))]
        constants = {"input_zp", "output_zp"}
        acc_enum, acc_name = ACC[acc]
        attrs["acc_type"] = acc_enum
        text = f"acc_type = {acc_name}, " + text
    else:
        attrs["nan_mode"] = nan_mode
        text += f", nan_mode = {'PROPAGATE' if nan_mode == 1 else 'IGNORE'}"
    return Case(op, f"tosa.{op.lower()}", operands, attrs, text,
                [TensorType(dtype, (n, *out, c))], constants=constants)


@st.composite
def pool_windows(draw):
    sizes, kernel, pad, stride = [], [], [], []
    for _ in range(2):
        n, k, s = draw(st.integers(1, 9)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
        before = draw(st.integers(0, k - 1))
        span = n + before - k
        after = (-span) % s
        assume(after < k and span + after >= 0)
        sizes.append(n), kernel.append(k), pad.extend([before, after]), stride.append(s)
    return sizes, kernel, pad, stride, None


@pytest.mark.parametrize("dtype,acc", POOL_DTYPES, ids=[f"{d}-acc{a}" for d, a in POOL_DTYPES])
@FAST
@given(pool_windows(), st.integers(1, 2), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_avg_pool2d(dtype, acc, geometry, n, c, seed):
    run_case(pool_case("AVG_POOL2D", dtype, acc, geometry, n, c, seed))


@pytest.mark.parametrize("dtype", [I8, I16, F32, F16, BF16], ids=str)
@pytest.mark.parametrize("nan_mode", [1, 2], ids=["propagate", "ignore"])
@FAST
@given(pool_windows(), st.integers(1, 2), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_max_pool2d(dtype, nan_mode, geometry, n, c, seed):
    nans = dtype.kind == "f" or dtype == BF16
    run_case(pool_case("MAX_POOL2D", dtype, None, geometry, n, c, seed, nan_mode, nans))


@pytest.mark.slow
@pytest.mark.parametrize("dtype,acc", POOL_DTYPES, ids=[f"{d}-acc{a}" for d, a in POOL_DTYPES])
@SLOW
@given(pool_windows(), st.integers(1, 2), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_pool_sweep(dtype, acc, geometry, n, c, seed):
    run_case(pool_case("AVG_POOL2D", dtype, acc, geometry, n, c, seed))
    nans = dtype.kind == "f" or dtype == BF16
    for mode in (1, 2):
        run_case(pool_case("MAX_POOL2D", dtype, None, geometry, n, c, seed, mode, nans))


def test_avg_pool2d_large_window_rounding():
    """A 7x7 global average (MobileNetV2's) with padding-free divisor 49, int8 zero points."""
    run_case(pool_case("AVG_POOL2D", I8, I32, ([7, 7], [7, 7], [0, 0, 0, 0], [1, 1], None),
                       2, 16, 7))


# MATMUL and FFTs ----------------------------------------------------------------------------

MATMUL_DTYPES = [(I8, I32), (I16, I48), (F32, F32), (F16, F16), (F16, F32), (BF16, F32)]


def matmul_case(in_dt, out_dt, n, h, c, w, seed):
    rng = np.random.default_rng(seed)
    a, b = data(rng, (n, h, c), in_dt), data(rng, (n, c, w), in_dt)
    azp = int(rng.integers(-128, 128)) if in_dt == I8 else 0
    bzp = int(rng.integers(-128, 128)) if in_dt == I8 else 0
    return Case("MATMUL", "tosa.matmul",
                [("A", a), ("B", b), ("A_zp", np.array([azp], in_dt)),
                 ("B_zp", np.array([bzp], in_dt))], {}, "",
                [TensorType(out_dt, (n, h, w))], constants={"A_zp", "B_zp"})


@pytest.mark.parametrize("in_dt,out_dt", MATMUL_DTYPES,
                         ids=[f"{a}-{b}" for a, b in MATMUL_DTYPES])
@FAST
@given(st.integers(1, 3), st.integers(1, 7), st.integers(1, 40), st.integers(1, 7),
       st.integers(0, 2**32 - 1))
def test_matmul(in_dt, out_dt, n, h, c, w, seed):
    case = matmul_case(in_dt, out_dt, n, h, c, w, seed)
    rtol = None
    if out_dt == F16:
        # Summed in fp16, each of the c additions may round by half an ulp of its running sum:
        # a dot product's error is bounded by c * 2**-11 * sum |a * b| (the two executors
        # differed by 0.0026 on a sum near 0.055 of terms whose magnitudes summed to 9).
        a, b = (value.astype(np.float64) for _, value in case.operands[:2])
        rtol = max(2e-3, c * 2.0**-11 * float(np.matmul(np.abs(a), np.abs(b)).max()))
    run_case(case, rtol)


def test_matmul_int8_long_sum_stays_exact():
    """C = 2000 with extreme values: too long for float32, computed in float64."""
    case = matmul_case(I8, I32, 1, 3, 2000, 2, 1)
    a = case.operands[0][1]
    a[...] = -128
    run_case(case)


def test_matmul_fp16_to_fp32_keeps_what_fp16_cannot_hold():
    """fp16 x fp16 -> fp32: products beyond fp16's range (65504) stay finite, as in the
    reference model; the result type comes from `result_dtype`, not from the operands."""
    case = matmul_case(F16, F32, 1, 2, 3, 2, 5)
    case.operands[0][1][...] = 300
    case.operands[1][1][...] = 200  # each sum is 3 * 60000 = 180000 > fp16 max
    run_case(case)


def test_matmul_check_refuses_an_output_type_not_in_the_table():
    a = TensorType(BF16, (1, 2, 3))
    b = TensorType(BF16, (1, 3, 4))
    zp = np.zeros(1, BF16)
    with pytest.raises(TosaError, match="MATMUL: result element type must be one of fp32, got bf16"):
        OPS["MATMUL"].check(TensorType(BF16, (1, 2, 4)), A=a, B=b, A_zp=zp, B_zp=zp)


def fft_case(n, h, w, seed, inverse=None):
    rng = np.random.default_rng(seed)
    re = rng.standard_normal((n, h, w)).astype(np.float32)
    if inverse is None:
        return Case("RFFT2D", "tosa.rfft2d", [("input_real", re)], {"local_bound": False}, "",
                    [TensorType(F32, (n, h, w // 2 + 1))] * 2)
    im = rng.standard_normal((n, h, w)).astype(np.float32)
    return Case("FFT2D", "tosa.fft2d", [("input_real", re), ("input_imag", im)],
                {"inverse": inverse, "local_bound": False},
                f"inverse = {'true' if inverse else 'false'}", [TensorType(F32, (n, h, w))] * 2)


POW2 = st.sampled_from([1, 2, 4, 8, 16, 32])


@FAST
@given(st.integers(1, 2), POW2, POW2, st.booleans(), st.integers(0, 2**32 - 1))
def test_fft2d(n, h, w, inverse, seed):
    run_case(fft_case(n, h, w, seed, inverse), rtol=1e-4)


@FAST
@given(st.integers(1, 2), POW2, POW2, st.integers(0, 2**32 - 1))
def test_rfft2d(n, h, w, seed):
    run_case(fft_case(n, h, w, seed), rtol=1e-4)


# Plan-time checks ---------------------------------------------------------------------------


def _conv2d_operands(**change):
    operands = {
        "input": TensorType(I8, (1, 8, 8, 4)), "weight": np.zeros((6, 3, 3, 4), I8),
        "bias": np.zeros(6, I32), "input_zp": np.zeros(1, I8), "weight_zp": np.zeros(1, I8),
        "pad": np.array([1, 1, 1, 1]), "stride": np.array([1, 1]), "dilation": np.array([1, 1]),
        "acc_type": 1, "local_bound": False}
    operands.update(change)
    return operands


def test_conv2d_check_accepts_a_valid_node():
    OPS["CONV2D"].check(TensorType(I32, (1, 8, 8, 6)), **_conv2d_operands())


@pytest.mark.parametrize("change,message", [
    # (8 - 1 + 2 - 2) / 3 is not exact
    ({"stride": np.array([3, 3])}, "stride must divide 7 exactly (for an exact output size), got 3"),
    ({"pad": np.array([-1, 1, 1, 1])}, "pad must be >= 0, got [-1, 1, 1, 1]"),
    ({"acc_type": 3}, "weight element type i8 with i8 input and fp32 accumulator is not a supported"),
    ({"bias": np.zeros(5, I32)}, "bias must have 1 or 6 elements, got 5"),
    ({"weight": np.zeros((6, 3, 3, 5), I8)}, "weight has 5 input channels, input has 4"),
    ({"input_zp": np.zeros(1, I16)}, "input_zp must be i8 of shape (1,), got i16 of shape (1,)"),
    ({"dilation": np.array([0, 1])}, "dilation must be >= 1, got [0, 1]"),
])
def test_conv2d_check_names_the_bad_operand(change, message):
    with pytest.raises(TosaError, match=re.escape(f"CONV2D: {message}")):
        OPS["CONV2D"].check(TensorType(I32, (1, 8, 8, 6)), **_conv2d_operands(**change))


def test_conv2d_check_rejects_a_wrong_declared_result():
    with pytest.raises(TosaError, match=re.escape("CONV2D: result shape must be (1, 8, 8, 6), got (1, 7, 8, 6)")):
        OPS["CONV2D"].check(TensorType(I32, (1, 7, 8, 6)), **_conv2d_operands())


def test_zero_point_must_be_zero_for_float():
    operands = _conv2d_operands(input=TensorType(F32, (1, 8, 8, 4)),
                                weight=np.zeros((6, 3, 3, 4), F32), bias=np.zeros(6, F32),
                                input_zp=np.ones(1, F32), weight_zp=np.zeros(1, F32), acc_type=3)
    with pytest.raises(TosaError, match="CONV2D: input_zp must be 0 for fp32, got 1.0"):
        OPS["CONV2D"].check(TensorType(F32, (1, 8, 8, 6)), **operands)


def test_pool_check_rejects_padding_as_large_as_the_kernel():
    with pytest.raises(TosaError, match="MAX_POOL2D: pad must be smaller than the kernel"):
        OPS["MAX_POOL2D"].check(TensorType(F32, (1, 4, 4, 1)), input=TensorType(F32, (1, 4, 4, 1)),
                                kernel=np.array([2, 2]), stride=np.array([1, 1]),
                                pad=np.array([2, 0, 0, 1]), nan_mode=1)


def test_fft_check_requires_powers_of_two():
    t = TensorType(F32, (1, 6, 8))
    with pytest.raises(TosaError, match="FFT2D: input_real H = 6 must be a power of two"):
        OPS["FFT2D"].check((t, t), input_real=t, input_imag=t, inverse=False)


def test_operators_do_not_modify_their_operands():
    case = conv_case("CONV2D", CONV_DTYPES[0], ([5, 5], [3, 3], [1, 1, 1, 1], [1, 1], [1, 1]),
                     1, 3, 2, 0, False)
    before = {n: v.copy() for n, v in case.operands}
    values = {n: v for n, v in case.operands}
    OPS["CONV2D"].fn(**values, **case.attributes)
    for n, v in case.operands:
        np.testing.assert_array_equal(v, before[n])


@pytest.mark.fast
def test_constant_weights_are_prepared_once():
    """A read-only weight's preparation is reused; a writable weight's never is."""
    from pyvgf.fast.kernels import prepared

    calls = []

    def make():
        calls.append(1)
        return len(calls)

    frozen = np.frombuffer(bytes(range(8)), np.int8)
    assert prepared(frozen, "k", make) == prepared(frozen, "k", make) == 1
    writable = np.arange(8, dtype=np.int8)
    assert prepared(writable, "k", make) == 2
    assert prepared(writable, "k", make) == 3
    view = writable.view()
    view.flags.writeable = False  # read-only view of writable memory: not a constant
    assert prepared(view, "k", make) == 4
    behind = np.frombuffer(memoryview(bytearray(8)).toreadonly(), np.int8)
    assert prepared(behind, "k", make) == 5  # a read-only window on a bytearray
    with tempfile.TemporaryFile() as f:
        f.write(bytes(8))
        f.flush()
        mapped = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.int8)
        assert prepared(mapped, "k", make) == prepared(mapped, "k", make) == 6
    # A view made afresh on each call (one matrix of a batch) is the same weight each time;
    # another place in the same array is not.
    batch = np.frombuffer(bytes(range(24)), np.int8).reshape(3, 8)
    assert prepared(batch[1], "k", make) == prepared(batch[1], "k", make) == 7
    assert prepared(batch[2], "k", make) == 8
    assert prepared(batch[1].reshape(2, 4), "k", make) == 9  # another shape
    assert prepared(batch, "k", make) == 10


F8B = np.dtype(ml_dtypes.float8_e5m2)


@pytest.mark.parametrize("dtype", [F8, F8B], ids=str)
def test_fp8_operators(dtype):
    """fp8 inputs accumulate into fp16 in every operator that takes them."""
    dtypes = (dtype, dtype, F16, F16)
    geometry = ([5, 6], [3, 2], [1, 1, 0, 1], [2, 1], [1, 2])
    for op in ("CONV2D", "DEPTHWISE_CONV2D"):
        run_conv_case(conv_case(op, dtypes, geometry, 1, 3, 2, 1, False))
    run_conv_case(transpose_case(dtypes, 1, 3, 3, 2, 2, 2, 2, 2, 2, [0, 1, -1, 0], 1, False))
    run_case(matmul_case(dtype, F16, 2, 3, 5, 4, 1))
    pool = ([5, 5], [2, 2], [0, 1, 0, 1], [2, 2], None)
    run_case(pool_case("AVG_POOL2D", dtype, F16, pool, 1, 3, 1))
    run_case(pool_case("MAX_POOL2D", dtype, None, pool, 1, 3, 1))


# Non-finite values: padding is skipped, never multiplied ------------------------------------

FLOAT_CONV = [CONV_DTYPES[3], CONV_DTYPES[4], CONV_DTYPES[5], CONV_DTYPES[6]]
FLOAT_IDS = [f"{i}x{w}-acc{a}" for i, w, a, _ in FLOAT_CONV]


def _sprinkle(rng: np.random.Generator, array: np.ndarray, share: float) -> None:
    """Set a `share` of `array`'s elements to inf, -inf or NaN, in place."""
    mask = rng.random(array.shape) < share
    array[mask] = rng.choice([np.inf, -np.inf, np.nan], int(mask.sum()))


@pytest.mark.parametrize("dtypes", FLOAT_CONV, ids=FLOAT_IDS)
@pytest.mark.parametrize("op,geometry,ic,oc", [
    # the conformance cases conv2d_3x1_1x10x1x2_..._pad0001 and conv2d_3x1_1x1x15x7_..._pad0300
    ("CONV2D", ([10, 1], [3, 1], [0, 0, 0, 1], [1, 1], [1, 1]), 2, 3),
    ("CONV2D", ([1, 15], [3, 1], [3, 0, 0, 0], [1, 1], [1, 1]), 7, 2),
    ("CONV2D", ([5, 6], [3, 2], [2, 2, 1, 2], [2, 1], [1, 2]), 3, 4),
    ("CONV3D", ([3, 4, 2], [2, 3, 1], [1, 0, 2, 1, 0, 1], [1, 2, 1], [1, 1, 1]), 2, 3),
    ("DEPTHWISE_CONV2D", ([5, 4], [3, 3], [1, 1, 2, 0], [1, 1], [1, 1]), 3, 2),
    ("DEPTHWISE_CONV2D", ([4, 3], [2, 2], [1, 1, 1, 2], [1, 2], [2, 1]), 70, 1),
], ids=["conv2d-right", "conv2d-top", "conv2d-strided", "conv3d", "depthwise", "depthwise-wide"])
def test_inf_weights_skip_the_padding(op, geometry, ic, oc, dtypes):
    """An output reading only padding is the bias: 0 x inf must not make it NaN."""
    case = conv_case(op, dtypes, geometry, 1, ic, oc, 3, False)
    rng = np.random.default_rng(4)
    _sprinkle(rng, case.operands[1][1], 0.3)
    run_conv_case(case)


@pytest.mark.parametrize("op,geometry", [
    ("CONV2D", ([5, 6], [3, 3], [2, 1, 1, 2], [1, 1], [1, 1])),
    ("DEPTHWISE_CONV2D", ([5, 6], [3, 3], [2, 2, 1, 2], [2, 1], [1, 1])),
], ids=["conv2d", "depthwise"])
def test_non_finite_inputs_with_padding(op, geometry):
    """inf and NaN inputs reach only the outputs that read them, finite or infinite weights."""
    for seed, weights in ((5, False), (6, True)):
        case = conv_case(op, CONV_DTYPES[3], geometry, 1, 3, 2, seed, False)
        rng = np.random.default_rng(seed)
        _sprinkle(rng, case.operands[0][1], 0.05)
        if weights:
            _sprinkle(rng, case.operands[1][1], 0.1)
        run_conv_case(case)


def test_transpose_conv2d_inf_weights_leave_uncovered_outputs_as_bias():
    case = transpose_case(CONV_DTYPES[3], 1, 3, 2, 2, 3, 2, 2, 2, 3, [1, 2, -1, 2], 7, False)
    _sprinkle(np.random.default_rng(7), case.operands[1][1], 0.3)
    run_conv_case(case)


@pytest.mark.parametrize("op,nan_mode", [("AVG_POOL2D", 1), ("MAX_POOL2D", 1),
                                         ("MAX_POOL2D", 2)], ids=["avg", "max-propagate",
                                                                  "max-ignore"])
def test_pool_non_finite_inputs_with_padding(op, nan_mode):
    geometry = ([5, 6], [3, 3], [2, 1, 1, 2], [1, 2], None)
    case = pool_case(op, F32, F32 if op == "AVG_POOL2D" else None, geometry, 1, 3, 8, nan_mode)
    _sprinkle(np.random.default_rng(8), case.operands[0][1], 0.1)
    run_case(case)
