"""TOSA 1.0 pooling: AVG_POOL2D and MAX_POOL2D over NHWC tensors.

Both run one vectorised step per kernel tap over strided views of the padded input (an integer
average pool with fewer windows than taps, such as a global one, sums each window instead: the
int64 sums are exact in any order). Average pooling divides by the number of real (not padding)
elements under the window; integer average pooling does that division as the specification's
reciprocal_scale and apply_scale_32, bit-exact.
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
    I8,
    I16,
    I32,
    I64,
    dtype_name,
    is_float,
    padded,
    scalar,
    taps,
)
from .checking import (
    ACC_TYPES,
    attribute,
    enum,
    exact_div,
    expect_dtype,
    expect_result,
    fail,
    tensor_type,
    zero_point,
)
from .registry import tosa_op

AVG_POOL_TYPES = {
    (I8, I32), (I16, I32), (FP8E4M3, FP16), (FP8E5M2, FP16), (FP16, FP16), (FP16, FP32),
    (BF16, FP32), (FP32, FP32),
}
"""(input/output, accumulator) pairs that AVG_POOL2D supports."""

MAX_POOL_TYPES = (I8, I16, FP8E4M3, FP8E5M2, FP16, BF16, FP32)

NAN_PROPAGATE, NAN_IGNORE = 1, 2


def _geometry(input: np.ndarray, kernel: np.ndarray, stride: np.ndarray, pad: np.ndarray):
    kh, kw = (int(k) for k in kernel)
    sy, sx = (int(s) for s in stride)
    top, bottom, left, right = (int(p) for p in pad)
    oh = (input.shape[1] + top + bottom - kh) // sy + 1
    ow = (input.shape[2] + left + right - kw) // sx + 1
    return (kh, kw), (sy, sx), [(top, bottom), (left, right)], (oh, ow)


def _valid_counts(size: int, before: int, kernel: int, stride: int, out: int) -> np.ndarray:
    """For each output position along one axis, how many kernel taps land inside the input."""
    start = np.arange(out, dtype=np.int64) * stride - before
    return np.minimum(start + kernel, size) - np.maximum(start, 0)


def _reciprocal_scale(count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The specification's reciprocal_scale(count), elementwise: (multiplier, shift)."""
    k = np.zeros_like(count)
    rest = count - 1
    while np.any(rest):  # k = bit length of count - 1: at most 32 steps
        k += rest > 0
        rest >>= 1
    multiplier = (((1 << 30) + 1) << k) // count
    return multiplier, 30 + k


@tosa_op("AVG_POOL2D")
def avg_pool2d(*, input: np.ndarray, input_zp: np.ndarray, output_zp: np.ndarray,
               kernel: np.ndarray, stride: np.ndarray, pad: np.ndarray,
               acc_type: int) -> np.ndarray:
    """Average over each window, padding excluded from the divisor."""
    kern, strides, pads, out_size = _geometry(input, kernel, stride, pad)
    integer = not is_float(input.dtype)
    dtype = I64 if integer else F32
    xp = padded(input, dtype, pads, scalar(input_zp))
    acc = np.zeros((input.shape[0], *out_size, input.shape[3]), dtype)
    if integer and out_size[0] * out_size[1] < kern[0] * kern[1]:
        # Fewer windows than taps (a global pool): one exact int64 sum per window.
        for oy in range(out_size[0]):
            for ox in range(out_size[1]):
                y, x = oy * strides[0], ox * strides[1]
                np.sum(xp[:, y:y + kern[0], x:x + kern[1]], axis=(1, 2), out=acc[:, oy, ox])
    else:  # one pass per tap, adding in the specification's (ky, kx) order
        for _, window in taps(kern, strides, (1, 1), out_size):
            acc += xp[(slice(None), *window)]
    count = np.outer(_valid_counts(input.shape[1], pads[0][0], kern[0], strides[0], out_size[0]),
                     _valid_counts(input.shape[2], pads[1][0], kern[1], strides[1], out_size[1]))
    if not integer:
        acc /= count[:, :, None].astype(F32)
        return acc.astype(input.dtype, copy=False)
    multiplier, shift = _reciprocal_scale(count)
    acc *= multiplier[:, :, None]
    acc += (np.int64(1) << (shift - 1))[:, :, None]
    acc >>= shift[:, :, None]
    acc += scalar(output_zp)
    info = np.iinfo(input.dtype)
    return np.clip(acc, info.min, info.max).astype(input.dtype)


@tosa_op("MAX_POOL2D")
def max_pool2d(*, input: np.ndarray, kernel: np.ndarray, stride: np.ndarray, pad: np.ndarray,
               nan_mode: int = NAN_PROPAGATE) -> np.ndarray:
    """Maximum over each window; nan_mode IGNORE skips NaN unless the window is all NaN."""
    kern, strides, pads, out_size = _geometry(input, kernel, stride, pad)
    if is_float(input.dtype):
        dtype, fill = F32, (np.nan if nan_mode == NAN_IGNORE else -np.inf)
        combine = np.fmax if nan_mode == NAN_IGNORE else np.maximum
    else:
        dtype, fill, combine = input.dtype, np.iinfo(input.dtype).min, np.maximum
    xp = padded(input, dtype, pads, fill=fill)
    acc = None
    for _, window in taps(kern, strides, (1, 1), out_size):
        view = xp[(slice(None), *window)]
        if acc is None:
            acc = view.copy()
        else:
            combine(acc, view, out=acc)
    return acc.astype(input.dtype, copy=False)


# Plan-time checks ---------------------------------------------------------------------------


def _check_pool(op: str, result: object, input: object, kernel: object, stride: object,
                pad: object) -> tuple[int, int]:
    x = tensor_type(op, "input", input, 4)
    kh, kw = attribute(op, "kernel", kernel, 2)
    sy, sx = attribute(op, "stride", stride, 2)
    top, bottom, left, right = attribute(op, "pad", pad, 4)
    if min(kh, kw) < 1:
        raise fail(op, f"kernel must be >= 1, got {[kh, kw]}")
    if min(sy, sx) < 1:
        raise fail(op, f"stride must be >= 1, got {[sy, sx]}")
    if min(top, bottom, left, right) < 0:
        raise fail(op, f"pad must be >= 0, got {[top, bottom, left, right]}")
    if max(top, bottom) >= kh or max(left, right) >= kw:
        raise fail(op, f"pad must be smaller than the kernel {[kh, kw]}, got "
                       f"{[top, bottom, left, right]}")
    if x.shape[1] + top + bottom < kh or x.shape[2] + left + right < kw:
        raise fail(op, f"kernel {[kh, kw]} is larger than the padded input")
    oh = exact_div(op, "stride", x.shape[1] + top + bottom - kh, sy) + 1
    ow = exact_div(op, "stride", x.shape[2] + left + right - kw, sx) + 1
    expect_result(op, result, x.dtype, (x.shape[0], oh, ow, x.shape[3]))
    return oh, ow


@avg_pool2d.check
def _avg_pool2d_check(result: object, *, input: object, input_zp: object, output_zp: object,
                      kernel: object, stride: object, pad: object, acc_type: object) -> None:
    op = "AVG_POOL2D"
    dtype = tensor_type(op, "input", input).dtype
    acc = ACC_TYPES[enum(op, "acc_type", acc_type, ACC_TYPES)]
    if (dtype, acc) not in AVG_POOL_TYPES:
        raise fail(op, f"acc_type {dtype_name(acc)} is not supported for {dtype_name(dtype)} "
                       "input")
    zero_point(op, "input_zp", input_zp, dtype)
    zero_point(op, "output_zp", output_zp, dtype)
    _check_pool(op, result, input, kernel, stride, pad)


@max_pool2d.check
def _max_pool2d_check(result: object, *, input: object, kernel: object, stride: object,
                      pad: object, nan_mode: object = NAN_PROPAGATE) -> None:
    op = "MAX_POOL2D"
    expect_dtype(op, "input", tensor_type(op, "input", input), MAX_POOL_TYPES)
    enum(op, "nan_mode", nan_mode, (NAN_PROPAGATE, NAN_IGNORE))
    _check_pool(op, result, input, kernel, stride, pad)
