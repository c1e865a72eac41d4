"""TOSA 1.0 convolutions (specification chapter "Tensor Operators"): CONV2D, CONV3D,
DEPTHWISE_CONV2D and TRANSPOSE_CONV2D, NHWC / NDHWC.

As the specification computes them: for each output, the sum over the kernel's taps that land
inside the input (padded taps are skipped, not multiplied by zero) of (input - input_zp) times
(weight - weight_zp), plus the bias. Integers accumulate exactly in int64 and are then wrapped
to the accumulator type; floats accumulate in float32 and round once to the result type. Each
sum runs one kernel tap at a time over every output position: for a tap, the outputs whose
window reads the input there, and that input, are strided slices (`inside_taps`).
"""

from __future__ import annotations

import numpy as np

from ._common import (
    BF16,
    F32,
    FP8E4M3,
    FP8E5M2,
    FP16,
    FP32,
    I4,
    I8,
    I16,
    I32,
    I48,
    I64,
    dtype_name,
    inside_taps,
    is_float,
    scalar,
    wrap,
)
from .checking import (
    ACC_TYPES,
    attribute,
    enum,
    exact_div,
    expect_result,
    fail,
    tensor_type,
    zero_point,
)
from .registry import tosa_op

CONV_TYPES = {
    (I8, I8, I32): I32,
    (I8, I4, I32): I32,
    (I16, I8, I48): I48,
    (FP8E4M3, FP8E4M3, FP16): FP16,
    (FP8E5M2, FP8E5M2, FP16): FP16,
    (FP16, FP16, FP16): FP16,
    (FP16, FP16, FP32): FP16,
    (BF16, BF16, FP32): BF16,
    (FP32, FP32, FP32): FP32,
}
"""(input, weight, accumulator) -> output element type, per the specification's type tables."""

_OUT = {I8: I32, I16: I48, FP8E4M3: FP16, FP8E5M2: FP16}


def out_dtype(in_dtype: np.dtype) -> np.dtype:
    """The result element type of a convolution of `in_dtype` input."""
    return _OUT.get(np.dtype(in_dtype), np.dtype(in_dtype))




def _operands(input: np.ndarray, weight: np.ndarray, input_zp: np.ndarray,
              weight_zp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """input - input_zp and weight - weight_zp in the type they accumulate in: int64 for
    integers, float32 for floats."""
    if is_float(input.dtype):
        return input.astype(F32), weight.astype(F32)
    return (input.astype(I64) - scalar(input_zp), weight.astype(I64) - scalar(weight_zp))


def _window(sizes: tuple[int, ...], kernel: tuple[int, ...], pad: np.ndarray,
            stride: np.ndarray, dilation: np.ndarray
            ) -> tuple[list[tuple[int, int]], list[int], list[int], list[int]]:
    """A convolution window's pads as (before, after) per spatial axis, strides, dilations and
    output sizes: (size - 1 + pads - (kernel - 1) * dilation) / stride + 1."""
    pads = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(sizes))]
    strides, dilations = [int(s) for s in stride], [int(d) for d in dilation]
    out = [(n - 1 + a + b - (k - 1) * d) // s + 1
           for n, (a, b), k, d, s in zip(sizes, pads, kernel, dilations, strides)]
    return pads, strides, dilations, out


def _add_bias(acc: np.ndarray, bias: np.ndarray, result: np.dtype) -> np.ndarray:
    """acc + bias (one, or one per output channel) as the result type: integers wrap to it as
    the accumulator does (int48 at 48 bits), floats round once."""
    if is_float(result):
        return (acc + bias.astype(F32)).astype(result)
    return wrap(acc + bias.astype(I64), result)


def _convolve(input: np.ndarray, weight: np.ndarray, bias: np.ndarray, input_zp: np.ndarray,
              weight_zp: np.ndarray, pad: np.ndarray, stride: np.ndarray,
              dilation: np.ndarray) -> np.ndarray:
    """CONV2D and CONV3D: input [N, *S, IC], weight [OC, *K, IC] -> [N, *O, OC]."""
    x, w = _operands(input, weight, input_zp, weight_zp)
    sizes, kernel = input.shape[1:-1], weight.shape[1:-1]
    pads, strides, dilations, out = _window(sizes, kernel, pad, stride, dilation)
    acc = np.zeros((input.shape[0], *out, weight.shape[0]), x.dtype)
    for tap, outs, ins in inside_taps(sizes, pads, kernel, strides, dilations, out):
        w_tap = w[(slice(None), *tap)]  # [OC, IC]
        acc[(slice(None), *outs)] += x[(slice(None), *ins)] @ w_tap.T
    return _add_bias(acc, bias, out_dtype(input.dtype))


@tosa_op("CONV2D")
def conv2d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray, input_zp: np.ndarray,
           weight_zp: np.ndarray, pad: np.ndarray, stride: np.ndarray, dilation: np.ndarray,
           acc_type: int, local_bound: bool = False) -> np.ndarray:
    """2-D convolution: input [N,IH,IW,IC], weight [OC,KH,KW,IC], pad [top,bottom,left,right]."""
    return _convolve(input, weight, bias, input_zp, weight_zp, pad, stride, dilation)


@tosa_op("CONV3D")
def conv3d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray, input_zp: np.ndarray,
           weight_zp: np.ndarray, pad: np.ndarray, stride: np.ndarray, dilation: np.ndarray,
           acc_type: int, local_bound: bool = False) -> np.ndarray:
    """3-D convolution: input [N,ID,IH,IW,IC], weight [OC,KD,KH,KW,IC], pad [d0,d1,top,...]."""
    return _convolve(input, weight, bias, input_zp, weight_zp, pad, stride, dilation)


@tosa_op("DEPTHWISE_CONV2D")
def depthwise_conv2d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                     input_zp: np.ndarray, weight_zp: np.ndarray, pad: np.ndarray,
                     stride: np.ndarray, dilation: np.ndarray, acc_type: int,
                     local_bound: bool = False) -> np.ndarray:
    """Depthwise convolution: input [N,IH,IW,C], weight [KH,KW,C,M], output [N,OH,OW,C*M];
    output channel c * M + m is input channel c times weight [.., .., c, m]."""
    x, w = _operands(input, weight, input_zp, weight_zp)
    n, _, _, channels = input.shape
    kh, kw, _, mult = weight.shape
    pads, strides, dilations, out = _window(input.shape[1:3], (kh, kw), pad, stride, dilation)
    acc = np.zeros((n, *out, channels, mult), x.dtype)
    for (ky, kx), outs, ins in inside_taps(input.shape[1:3], pads, (kh, kw), strides, dilations,
                                           out):
        acc[(slice(None), *outs)] += x[(slice(None), *ins)][..., None] * w[ky, kx]
    return _add_bias(acc.reshape(n, *out, channels * mult), bias, out_dtype(input.dtype))


@tosa_op("TRANSPOSE_CONV2D")
def transpose_conv2d(*, input: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                     input_zp: np.ndarray, weight_zp: np.ndarray, out_pad: np.ndarray,
                     stride: np.ndarray, acc_type: int, local_bound: bool = False) -> np.ndarray:
    """Transposed convolution: input [N,IH,IW,IC], weight [OC,KH,KW,IC]. Input pixel (iy, ix)
    times tap (ky, kx) adds to output (iy * stride_y + out_pad_top + ky, ix * stride_x +
    out_pad_left + kx) where that lies inside the output (a negative out_pad crops)."""
    x, w = _operands(input, weight, input_zp, weight_zp)
    n, ih, iw, _ = input.shape
    oc, kh, kw, _ = weight.shape
    sy, sx = (int(s) for s in stride)
    top, bottom, left, right = (int(p) for p in out_pad)
    oh = (ih - 1) * sy + top + bottom + kh
    ow = (iw - 1) * sx + left + right + kw
    acc = np.zeros((n, oh, ow, oc), x.dtype)
    for ky in range(kh):
        ys = [iy for iy in range(ih) if 0 <= iy * sy + top + ky < oh]
        for kx in range(kw):
            xs = [ix for ix in range(iw) if 0 <= ix * sx + left + kx < ow]
            if not ys or not xs:
                continue
            contribution = x[:, ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1] @ w[:, ky, kx].T
            acc[:, ys[0] * sy + top + ky:ys[-1] * sy + top + ky + 1:sy,
                xs[0] * sx + left + kx:xs[-1] * sx + left + kx + 1:sx] += contribution
    return _add_bias(acc, bias, out_dtype(input.dtype))


# Plan-time checks ---------------------------------------------------------------------------


def _check_types(op: str, input: object, weight: object, bias: object, input_zp: object,
                 weight_zp: object, acc_type: object) -> tuple[np.dtype, int]:
    """Element types against the type table; returns (output dtype, bias channels)."""
    in_t = tensor_type(op, "input", input)
    w_t = tensor_type(op, "weight", weight)
    b_t = tensor_type(op, "bias", bias)
    acc = ACC_TYPES[enum(op, "acc_type", acc_type, ACC_TYPES)]
    out = CONV_TYPES.get((in_t.dtype, w_t.dtype, acc))
    if out is None:
        raise fail(op, f"weight element type {dtype_name(w_t.dtype)} with {dtype_name(in_t.dtype)} "
                       f"input and {dtype_name(acc)} accumulator is not a supported combination")
    if b_t.rank != 1 or b_t.dtype != out:
        raise fail(op, f"bias must be a rank-1 {dtype_name(out)} tensor, got "
                       f"{dtype_name(b_t.dtype)} shape {tuple(b_t.shape)}")
    zero_point(op, "input_zp", input_zp, in_t.dtype)
    zero_point(op, "weight_zp", weight_zp, w_t.dtype)
    return out, b_t.shape[0]


def _check_window(op: str, sizes: tuple[int, ...], kernel: tuple[int, ...], pad: object,
                  stride: object, dilation: object) -> list[int]:
    """Output spatial sizes of a convolution window, which must divide exactly."""
    spatial = len(sizes)
    pads = attribute(op, "pad", pad, 2 * spatial)
    strides = attribute(op, "stride", stride, spatial)
    dilations = attribute(op, "dilation", dilation, spatial)
    if min(pads) < 0:
        raise fail(op, f"pad must be >= 0, got {list(pads)}")
    if min(strides) < 1:
        raise fail(op, f"stride must be >= 1, got {list(strides)}")
    if min(dilations) < 1:
        raise fail(op, f"dilation must be >= 1, got {list(dilations)}")
    out = []
    for i, (n, k, d, s) in enumerate(zip(sizes, kernel, dilations, strides)):
        span = n - 1 + pads[2 * i] + pads[2 * i + 1] - (k - 1) * d
        if span < 0:
            raise fail(op, f"weight kernel {k} (dilation {d}) is larger than the padded input "
                           f"{n + pads[2 * i] + pads[2 * i + 1]}")
        out.append(exact_div(op, "stride", span, s) + 1)
    return out


def _check_bias(op: str, channels: int, bias_channels: int) -> None:
    if bias_channels not in (1, channels):
        raise fail(op, f"bias must have 1 or {channels} elements, got {bias_channels}")


def _check_conv(op: str, result: object, input: object, weight: object, bias: object,
                input_zp: object, weight_zp: object, pad: object, stride: object,
                dilation: object, acc_type: object, spatial: int) -> None:
    x = tensor_type(op, "input", input, spatial + 2)
    w = tensor_type(op, "weight", weight, spatial + 2)
    out_dtype, bias_channels = _check_types(op, input, weight, bias, input_zp, weight_zp, acc_type)
    if w.shape[-1] != x.shape[-1]:
        raise fail(op, f"weight has {w.shape[-1]} input channels, input has {x.shape[-1]}")
    _check_bias(op, w.shape[0], bias_channels)
    out = _check_window(op, x.shape[1:-1], w.shape[1:-1], pad, stride, dilation)
    expect_result(op, result, out_dtype, (x.shape[0], *out, w.shape[0]))


@conv2d.check
def _conv2d_check(result: object, *, input: object, weight: object, bias: object,
                  input_zp: object, weight_zp: object, pad: object, stride: object,
                  dilation: object, acc_type: object, local_bound: object = False) -> None:
    _check_conv("CONV2D", result, input, weight, bias, input_zp, weight_zp, pad, stride,
                dilation, acc_type, 2)


@conv3d.check
def _conv3d_check(result: object, *, input: object, weight: object, bias: object,
                  input_zp: object, weight_zp: object, pad: object, stride: object,
                  dilation: object, acc_type: object, local_bound: object = False) -> None:
    _check_conv("CONV3D", result, input, weight, bias, input_zp, weight_zp, pad, stride,
                dilation, acc_type, 3)


@depthwise_conv2d.check
def _depthwise_conv2d_check(result: object, *, input: object, weight: object, bias: object,
                            input_zp: object, weight_zp: object, pad: object, stride: object,
                            dilation: object, acc_type: object,
                            local_bound: object = False) -> None:
    op = "DEPTHWISE_CONV2D"
    x = tensor_type(op, "input", input, 4)
    w = tensor_type(op, "weight", weight, 4)
    out_dtype, bias_channels = _check_types(op, input, weight, bias, input_zp, weight_zp, acc_type)
    if w.shape[2] != x.shape[3]:
        raise fail(op, f"weight has {w.shape[2]} channels, input has {x.shape[3]}")
    _check_bias(op, w.shape[2] * w.shape[3], bias_channels)
    out = _check_window(op, x.shape[1:3], w.shape[:2], pad, stride, dilation)
    expect_result(op, result, out_dtype, (x.shape[0], *out, w.shape[2] * w.shape[3]))


@transpose_conv2d.check
def _transpose_conv2d_check(result: object, *, input: object, weight: object, bias: object,
                            input_zp: object, weight_zp: object, out_pad: object,
                            stride: object, acc_type: object,
                            local_bound: object = False) -> None:
    op = "TRANSPOSE_CONV2D"
    x = tensor_type(op, "input", input, 4)
    w = tensor_type(op, "weight", weight, 4)
    out_dtype, bias_channels = _check_types(op, input, weight, bias, input_zp, weight_zp, acc_type)
    if w.shape[3] != x.shape[3]:
        raise fail(op, f"weight has {w.shape[3]} input channels, input has {x.shape[3]}")
    _check_bias(op, w.shape[0], bias_channels)
    top, bottom, left, right = attribute(op, "out_pad", out_pad, 4)
    sy, sx = attribute(op, "stride", stride, 2)
    kh, kw = w.shape[1:3]
    if min(top, bottom) <= -kh or min(left, right) <= -kw:
        raise fail(op, f"out_pad must be > -kernel ({kh}, {kw}), got {[top, bottom, left, right]}")
    if min(sy, sx) < 1:
        raise fail(op, f"stride must be >= 1, got {[sy, sx]}")
    oh = (x.shape[1] - 1) * sy + top + bottom + kh
    ow = (x.shape[2] - 1) * sx + left + right + kw
    expect_result(op, result, out_dtype, (x.shape[0], oh, ow, w.shape[0]))
