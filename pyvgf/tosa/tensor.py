"""TOSA 1.0 MATMUL, FFT2D and RFFT2D.

MATMUL multiplies batches of matrices: floats in float32, integers (zero points subtracted)
exactly in int64. The FFTs are
numpy's, computed in float64 and rounded once to float32: the specification's unnormalised DFT,
forward with e^(-i...) and inverse with e^(+i...).
"""

from __future__ import annotations

import numpy as np

from ..types import TensorType
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
    I48,
    I64,
    dtype_name,
    is_float,
    scalar,
    wrap,
)
from .checking import (
    expect_dtype,
    expect_result,
    expect_result_dtype,
    expect_same_dtype,
    expect_shape,
    fail,
    result_type,
    tensor_type,
    zero_point,
)
from .registry import tosa_op

MATMUL_TYPES = {
    I8: (I32,), I16: (I48,), FP8E4M3: (FP16,), FP8E5M2: (FP16,), FP16: (FP16, FP32),
    BF16: (FP32,), FP32: (FP32,),
}
"""Input element type -> the output types MATMUL may declare."""



@tosa_op("MATMUL")
def matmul(*, A: np.ndarray, B: np.ndarray, A_zp: np.ndarray, B_zp: np.ndarray,
           result_dtype: np.dtype) -> np.ndarray:
    """Batched matrix product: A [N,H,C] times B [N,C,W] -> [N,H,W] of `result_dtype`, the
    declared result's element type (fp16 operands may give fp16 or fp32). Integers: (A - A_zp)
    times (B - B_zp), exact in int64; floats accumulate in float32."""
    if is_float(A.dtype):
        return (A.astype(F32) @ B.astype(F32)).astype(result_dtype)
    a = A.astype(I64) - scalar(A_zp)
    b = B.astype(I64) - scalar(B_zp)
    return wrap(a @ b, result_dtype)


@tosa_op("FFT2D")
def fft2d(*, input_real: np.ndarray, input_imag: np.ndarray, inverse: bool,
          local_bound: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """2-D DFT over the last two axes of [N,H,W] real/imaginary pairs (unnormalised)."""
    signal = input_real.astype(np.float64) + 1j * input_imag.astype(np.float64)
    spectrum = np.fft.fft2(signal) if not inverse else np.fft.ifft2(signal, norm="forward")
    return spectrum.real.astype(FP32), spectrum.imag.astype(FP32)


@tosa_op("RFFT2D")
def rfft2d(*, input_real: np.ndarray, local_bound: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """2-D DFT of a real [N,H,W] tensor: the W/2+1 non-redundant columns."""
    spectrum = np.fft.rfft2(input_real.astype(np.float64))
    return spectrum.real.astype(FP32), spectrum.imag.astype(FP32)


# Plan-time checks ---------------------------------------------------------------------------


@matmul.check
def _matmul_check(result: object, *, A: object, B: object, A_zp: object, B_zp: object,
                  result_dtype: object = None) -> None:
    op = "MATMUL"
    a = tensor_type(op, "A", A, 3)
    b = tensor_type(op, "B", B, 3)
    expect_dtype(op, "A", a, MATMUL_TYPES)
    expect_same_dtype(op, "B", b, "A", a)
    if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        raise fail(op, f"B shape {tuple(b.shape)} does not fit A shape {tuple(a.shape)}")
    zero_point(op, "A_zp", A_zp, a.dtype)
    zero_point(op, "B_zp", B_zp, b.dtype)
    res = result_type(op, result)
    expect_dtype(op, "result", res, MATMUL_TYPES[a.dtype])
    expect_result_dtype(op, result_dtype, res)
    expect_shape(op, "result", res, (a.shape[0], a.shape[1], b.shape[2]))


def _check_fft_shape(op: str, name: str, operand: object,
                     shape: tuple[int, ...] | None = None) -> TensorType:
    t = tensor_type(op, name, operand)
    if t.rank != 3 or t.dtype != FP32:
        raise fail(op, f"{name} must be a rank-3 fp32 tensor, got {dtype_name(t.dtype)} shape "
                       f"{tuple(t.shape)}")
    if shape is not None:
        expect_shape(op, name, t, shape)
    for axis, size in zip("HW", t.shape[1:]):
        if size < 1 or size & (size - 1):
            raise fail(op, f"{name} {axis} = {size} must be a power of two")
    return t


@fft2d.check
def _fft2d_check(result: tuple, *, input_real: object, input_imag: object, inverse: object,
                 local_bound: object = False) -> None:
    op = "FFT2D"
    re = _check_fft_shape(op, "input_real", input_real)
    _check_fft_shape(op, "input_imag", input_imag, tuple(re.shape))
    expect_result(op, result[0], FP32, re.shape, "output_real")
    expect_result(op, result[1], FP32, re.shape, "output_imag")


@rfft2d.check
def _rfft2d_check(result: tuple, *, input_real: object, local_bound: object = False) -> None:
    op = "RFFT2D"
    re = _check_fft_shape(op, "input_real", input_real)
    shape = (re.shape[0], re.shape[1], re.shape[2] // 2 + 1)
    expect_result(op, result[0], FP32, shape, "output_real")
    expect_result(op, result[1], FP32, shape, "output_imag")
