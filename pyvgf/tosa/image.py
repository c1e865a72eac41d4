"""TOSA 1.0 RESIZE (NHWC), NEAREST and BILINEAR, with the specification's integer geometry.

Output position o maps to input coordinate (o * scale_d + offset) / scale_n: an integer part and
a remainder r in [0, scale_n). Integer BILINEAR weights the four neighbours by r and scale_n - r
exactly (int8 -> int32, int16 -> int48 held as int64, scaled by scale_y_n * scale_x_n); float
BILINEAR weights them by r / scale_n. NEAREST picks the upper neighbour when 2r >= scale_n.
"""

from __future__ import annotations

import numpy as np

from ._common import BF16, F32, FP16, FP32, I8, I16, I32, I48, I64, dtype_name, is_float
from .checking import attribute, enum, exact_div, expect_result, fail, tensor_type
from .registry import tosa_op

NEAREST, BILINEAR = 1, 2

RESIZE_TYPES = {
    (I8, BILINEAR): I32, (I8, NEAREST): I8, (I16, BILINEAR): I48, (I16, NEAREST): I16,
    (FP16, BILINEAR): FP16, (FP16, NEAREST): FP16, (BF16, BILINEAR): BF16, (BF16, NEAREST): BF16,
    (FP32, BILINEAR): FP32, (FP32, NEAREST): FP32,
}
"""(input type, mode) -> output type."""


def _axis(size: int, out: int, numerator: int, denominator: int, offset: int):
    """Per output position along one axis: lower and upper input index, remainder."""
    coord = np.arange(out, dtype=np.int64) * denominator + offset
    index = coord // numerator
    remainder = coord - index * numerator
    return np.maximum(index, 0), np.minimum(index + 1, size - 1), remainder


def _out_size(size: int, numerator: int, denominator: int, offset: int, border: int) -> int:
    return ((size - 1) * numerator - offset + border) // denominator + 1


@tosa_op("RESIZE")
def resize(*, input: np.ndarray, scale: np.ndarray, offset: np.ndarray, border: np.ndarray,
           mode: int) -> np.ndarray:
    """Resize the H and W axes of input [N,IH,IW,C] by scale_n / scale_d."""
    yn, yd, xn, xd = (int(v) for v in scale)
    oy_off, ox_off = (int(v) for v in offset)
    by, bx = (int(v) for v in border)
    _, ih, iw, _ = input.shape
    y0, y1, ry = _axis(ih, _out_size(ih, yn, yd, oy_off, by), yn, yd, oy_off)
    x0, x1, rx = _axis(iw, _out_size(iw, xn, xd, ox_off, bx), xn, xd, ox_off)
    if mode == NEAREST:
        rows = np.where(2 * ry >= yn, y1, y0)
        cols = np.where(2 * rx >= xn, x1, x0)
        return input[:, rows][:, :, cols]
    if is_float(input.dtype):
        dtype = F32
        wy1, wx1 = (ry / yn).astype(F32), (rx / xn).astype(F32)
        wy0, wx0 = 1 - wy1, 1 - wx1
    else:
        dtype = I64
        wy1, wx1, wy0, wx0 = ry, rx, yn - ry, xn - rx
    top = input[:, y0].astype(dtype)
    bottom = input[:, y1].astype(dtype)
    wx0, wx1 = wx0[:, None], wx1[:, None]
    top = top[:, :, x0] * wx0 + top[:, :, x1] * wx1
    bottom = bottom[:, :, x0] * wx0 + bottom[:, :, x1] * wx1
    acc = top * wy0[:, None, None] + bottom * wy1[:, None, None]
    return acc.astype(RESIZE_TYPES[input.dtype, BILINEAR], copy=False)


@resize.check
def _resize_check(result: object, *, input: object, scale: object, offset: object,
                  border: object, mode: object) -> None:
    op = "RESIZE"
    x = tensor_type(op, "input", input, 4)
    mode = enum(op, "mode", mode, (NEAREST, BILINEAR))
    out_dtype = RESIZE_TYPES.get((x.dtype, mode))
    if out_dtype is None:
        raise fail(op, f"input element type {dtype_name(x.dtype)} is not supported")
    yn, yd, xn, xd = attribute(op, "scale", scale, 4)
    oy, ox = attribute(op, "offset", offset, 2)
    by, bx = attribute(op, "border", border, 2)
    if min(yn, yd, xn, xd) <= 0:
        raise fail(op, f"scale must be > 0, got {[yn, yd, xn, xd]}")
    if yn > 1 << 11 or xn > 1 << 11:
        raise fail(op, f"scale numerators must be <= 2048, got {[yn, xn]}")
    if yd >= 16 * yn or xd >= 16 * xn:
        raise fail(op, f"scale must downscale less than 16x, got {[yn, yd, xn, xd]}")
    if not (-yn <= oy < 16 * yn and -xn <= ox < 16 * xn):
        raise fail(op, f"offset must be in [-scale_n, 16 * scale_n), got {[oy, ox]}")
    if not (-16 * yn <= by < yn and -16 * xn <= bx < xn):
        raise fail(op, f"border must be in [-16 * scale_n, scale_n), got {[by, bx]}")
    _, ih, iw, _ = x.shape
    oh = exact_div(op, "scale", (ih - 1) * yn - oy + by, yd) + 1
    ow = exact_div(op, "scale", (iw - 1) * xn - ox + bx, xd) + 1
    if min(oh, ow) < 1:
        raise fail(op, f"scale gives an empty output {oh}x{ow}")
    if max(oh, ow, ih, iw) >= 16384:
        raise fail(op, f"input sizes must be below 16384, got input {ih}x{iw}, output {oh}x{ow}")
    expect_result(op, result, out_dtype, (x.shape[0], oh, ow, x.shape[3]))
