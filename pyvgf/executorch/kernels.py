"""ExecuTorch's portable kernels that pyvgf runs between delegate calls, in numpy.

One small function per kernel, keyed by ExecuTorch's qualified operator name (`name.overload`).
A kernel gets the values of its inputs (tensors as numpy arrays, Scalars as Python numbers,
Null as None, int lists as tuples, ScalarType arguments as ints) and returns its result; the
method's runner casts the result to the out tensor's declared dtype and checks its shape.

The set: quantize/dequantize per tensor and per channel (rounding and clamping exactly as
ExecuTorch's quantized kernels: float32 reciprocal of the scale, float32 multiply, round half
to even, zero point added in float, clamp; dequantize `(float)(q - zp) * (float)scale`), the
elementwise math and the data movement Arm's VGF partitioner leaves on the CPU. See
spec/executorch.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ProgramError
from .schema import DTYPES, ScalarType


@dataclass(frozen=True)
class Kernel:
    fn: Callable[..., np.ndarray]
    outs: int = 1
    """Out tensors at the end of the argument list (each listed again as the return value);
    0 for a kernel whose one out argument is a tensor list."""


KERNELS: dict[str, Kernel] = {}


def kernel(*names: str, outs: int = 1):
    def register(fn):
        for name in names:
            KERNELS[name] = Kernel(fn, outs)
        return fn

    return register


def scalar_dtype(code: int | None, default: np.dtype | None = None) -> np.dtype:
    """A ScalarType argument (an Int value) as a numpy dtype."""
    if code is None:
        if default is None:
            raise ProgramError("a ScalarType argument is None")
        return default
    try:
        return DTYPES[ScalarType(code)]
    except (ValueError, KeyError):
        raise ProgramError(f"ScalarType {code} is not one pyvgf runs") from None


# --- type promotion (torch's rules for tensors and Python scalars) --------------------------


def _category(dtype: np.dtype) -> int:
    return 0 if dtype.kind == "b" else 1 if dtype.kind in "iu" else 2


def _scalar_category(value: object) -> int:
    return 0 if isinstance(value, (bool, np.bool_)) else 1 if isinstance(value, (int, np.integer)) else 2


_DEFAULT = {0: np.dtype(np.bool_), 1: np.dtype(np.int64), 2: np.dtype(np.float32)}


def _promote(*operands: object) -> np.dtype:
    """torch.result_type of tensors and Python scalars: tensors decide unless a scalar is of a
    higher category (bool < integer < float), which then gives that category's default."""
    tensors = [x.dtype for x in operands if isinstance(x, np.ndarray)]
    dtype = np.result_type(*tensors) if tensors else np.dtype(np.float32)
    top = max((_scalar_category(x) for x in operands if not isinstance(x, np.ndarray)), default=-1)
    if top > _category(dtype):
        return _DEFAULT[top]
    return dtype


def _as(value: object, dtype: np.dtype) -> np.ndarray:
    return np.asarray(value).astype(dtype, copy=False)


def _binary(op: Callable) -> Callable:
    def fn(a, b, *rest):
        dtype = _promote(a, b)
        return op(_as(a, dtype), _as(b, dtype), *rest)

    return fn


def _float_unary(op: Callable) -> Callable:
    def fn(x):
        dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
        return op(x.astype(dtype, copy=False))

    return fn


# --- quantization --------------------------------------------------------------------------


def _quantize(x: np.ndarray, scale, zero_point, qmin: int, qmax: int, dtype: int) -> np.ndarray:
    inv = np.float32(1.0) / np.asarray(scale, dtype=np.float64).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.rint(x.astype(np.float32) * inv) + np.asarray(zero_point).astype(np.float32)
    v = np.where(np.isnan(v), qmin, np.clip(v, qmin, qmax))
    return v.astype(scalar_dtype(dtype))


def _dequantize(q: np.ndarray, scale, zero_point, out_dtype: np.dtype) -> np.ndarray:
    diff = (q.astype(np.int64) - np.asarray(zero_point, dtype=np.int64)).astype(np.float32)
    return (diff * np.asarray(scale, dtype=np.float64).astype(np.float32)).astype(out_dtype)


def _channel(values: np.ndarray | None, x: np.ndarray, axis: int, default: int = 0) -> np.ndarray:
    axis = _axis(axis, x.ndim)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    if values is None:
        return np.full(shape, default)
    if values.size != x.shape[axis]:
        raise ProgramError(f"{values.size} per-channel parameters for {x.shape[axis]} channels on axis {axis}")
    return values.reshape(shape)


@kernel("quantized_decomposed::quantize_per_tensor.out")
def quantize_per_tensor(x, scale, zero_point, qmin, qmax, dtype):
    return _quantize(x, scale, zero_point, qmin, qmax, dtype)


@kernel("quantized_decomposed::quantize_per_tensor.tensor_out")
def quantize_per_tensor_tensor(x, scale, zero_point, qmin, qmax, dtype):
    return _quantize(x, scale.reshape(()), zero_point.reshape(()), qmin, qmax, dtype)


@kernel("quantized_decomposed::dequantize_per_tensor.out")
def dequantize_per_tensor(q, scale, zero_point, qmin, qmax, dtype, out_dtype=None):
    return _dequantize(q, scale, zero_point, scalar_dtype(out_dtype, np.dtype(np.float32)))


@kernel("quantized_decomposed::dequantize_per_tensor.tensor_out")
def dequantize_per_tensor_tensor(q, scale, zero_point, qmin, qmax, dtype, out_dtype=None):
    return _dequantize(q, scale.reshape(()), zero_point.reshape(()), scalar_dtype(out_dtype, np.dtype(np.float32)))


@kernel("quantized_decomposed::quantize_per_channel.out")
def quantize_per_channel(x, scales, zero_points, axis, qmin, qmax, dtype):
    return _quantize(x, _channel(scales, x, axis), _channel(zero_points, x, axis), qmin, qmax, dtype)


@kernel("quantized_decomposed::dequantize_per_channel.out")
def dequantize_per_channel(q, scales, zero_points, axis, qmin, qmax, dtype, out_dtype=None):
    return _dequantize(q, _channel(scales, q, axis), _channel(zero_points, q, axis),
                       scalar_dtype(out_dtype, np.dtype(np.float32)))


# --- elementwise ---------------------------------------------------------------------------

def _libm(op: Callable) -> Callable:
    """A transcendental as ExecuTorch's portable kernel gets it from the C library (expf, logf,
    sinf, cosf: correctly rounded): numpy's float32 loops are a ulp off at times, the float64
    result rounded to float32 is not. (tanhf is not correctly rounded: this is within a ulp.)"""

    def fn(x):
        return op(x.astype(np.float64)).astype(x.dtype)

    return fn


for _name, _op in {
    "trunc": np.trunc, "floor": np.floor, "ceil": np.ceil, "round": np.rint, "sqrt": np.sqrt,
    "exp": _libm(np.exp), "log": _libm(np.log), "sin": _libm(np.sin), "cos": _libm(np.cos),
    "tanh": _libm(np.tanh), "reciprocal": np.reciprocal, "rsqrt": lambda x: np.reciprocal(np.sqrt(x)),
    "sigmoid": lambda x: np.reciprocal(x.dtype.type(1) + _libm(np.exp)(-x)),
}.items():
    kernel(f"aten::{_name}.out")(_float_unary(_op))


@kernel("aten::abs.out")
def abs_(x):
    return np.abs(x)


@kernel("aten::neg.out")
def neg(x):
    return np.negative(x)


@kernel("aten::sign.out")
def sign(x):
    return np.sign(x)


@kernel("aten::relu.out")
def relu(x):
    return np.maximum(x, x.dtype.type(0))


@kernel("aten::logical_not.out")
def logical_not(x):
    return np.logical_not(x)


@kernel("aten::bitwise_not.out")
def bitwise_not(x):
    return np.invert(x)


@kernel("aten::add.out", "aten::add.Scalar_out")
def add(a, b, alpha=1):
    dtype = _promote(a, b)
    a, b = _as(a, dtype), _as(b, dtype)
    return a + (b if alpha == 1 else b * _as(alpha, dtype))


@kernel("aten::sub.out", "aten::sub.Scalar_out")
def sub(a, b, alpha=1):
    dtype = _promote(a, b)
    a, b = _as(a, dtype), _as(b, dtype)
    return a - (b if alpha == 1 else b * _as(alpha, dtype))


@kernel("aten::rsub.Scalar_out")
def rsub(a, b, alpha=1):
    return sub(b, a, alpha)


@kernel("aten::div.out", "aten::div.Scalar_out")
def div(a, b):
    dtype = _promote(a, b, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _as(a, dtype) / _as(b, dtype)


@kernel("aten::div.out_mode", "aten::div.Scalar_mode_out")
def div_mode(a, b, mode=None):
    dtype = _promote(a, b)
    a, b = _as(a, dtype), _as(b, dtype)
    if dtype.kind in "iu" and mode is not None:
        if np.any(b == 0):
            raise ProgramError("integer division by zero")
        q = np.floor_divide(a, b)
        return q if mode == "floor" else np.where((q < 0) & (q * b != a), q + 1, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = a / b
    return q if mode is None else np.floor(q) if mode == "floor" else np.trunc(q)


for _name, _op in {"mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum, "pow": np.power,
                   "fmod": np.fmod, "remainder": np.remainder, "bitwise_and": np.bitwise_and,
                   "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}.items():
    kernel(f"aten::{_name}.out", f"aten::{_name}.Scalar_out", f"aten::{_name}.Tensor_out",
           f"aten::{_name}.Tensor_Scalar_out", f"aten::{_name}.Tensor_Tensor_out")(_binary(_op))

for _name, _op in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                   "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
                   "logical_or": np.logical_or, "logical_xor": np.logical_xor}.items():
    kernel(f"aten::{_name}.out", f"aten::{_name}.Scalar_out", f"aten::{_name}.Tensor_out")(_binary(_op))


@kernel("aten::where.self_out")
def where(cond, a, b):
    dtype = _promote(a, b)
    return np.where(cond.astype(bool), _as(a, dtype), _as(b, dtype))


@kernel("aten::clamp.out", "aten::clamp.Tensor_out")
def clamp(x, lo=None, hi=None):
    dtype = _promote(x, *(v for v in (lo, hi) if v is not None))
    out = x.astype(dtype)
    if lo is not None:
        out = np.maximum(out, _as(lo, dtype))
    if hi is not None:
        out = np.minimum(out, _as(hi, dtype))
    return out


@kernel("aten::hardtanh.out")
def hardtanh(x, lo=-1.0, hi=1.0):
    return np.clip(x, x.dtype.type(lo), x.dtype.type(hi))


# --- data movement -------------------------------------------------------------------------


def _axis(dim: int, rank: int) -> int:
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise ProgramError(f"dimension {dim} out of range for rank {rank}")
    return dim % max(rank, 1)


@kernel("aten::view_copy.out", "aten::_unsafe_view.out", "aten::reshape.out")
def view_copy(x, shape):
    return x.reshape(shape)


@kernel("aten::clone.out", "dim_order_ops::_clone_dim_order.out", "aten::alias_copy.out", "aten::detach_copy.out",
        "aten::lift_fresh_copy.out")
def clone(x, *_):
    return x.copy()


@kernel("dim_order_ops::_to_dim_order_copy.out", "aten::_to_copy.out")
def to_copy(x, non_blocking=False, *_):
    return x.copy()  # the dtype change, if any, is the out tensor's: the runner casts to it


@kernel("aten::permute_copy.out")
def permute_copy(x, dims):
    return np.transpose(x, [_axis(d, x.ndim) for d in dims])


@kernel("aten::transpose_copy.int_out")
def transpose_copy(x, dim0, dim1):
    return np.swapaxes(x, _axis(dim0, x.ndim), _axis(dim1, x.ndim))


@kernel("aten::t_copy.out")
def t_copy(x):
    return x.T


@kernel("aten::squeeze_copy.dims_out", "aten::squeeze_copy.dim_out")
def squeeze_copy(x, dims):
    dims = (dims,) if isinstance(dims, int) else dims
    axes = tuple(a for a in (_axis(d, x.ndim) for d in dims) if x.ndim and x.shape[a] == 1)
    return np.squeeze(x, axes)


@kernel("aten::unsqueeze_copy.out")
def unsqueeze_copy(x, dim):
    return np.expand_dims(x, _axis(dim, x.ndim + 1))


@kernel("aten::expand_copy.out")
def expand_copy(x, sizes, implicit=False):
    lead = len(sizes) - x.ndim
    shape = [x.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes)]
    return np.broadcast_to(x, shape).copy()


@kernel("aten::cat.out")
def cat(tensors, dim=0):
    tensors = [t for t in tensors if not (t.ndim == 1 and t.size == 0)]
    dtype = np.result_type(*tensors)
    return np.concatenate([t.astype(dtype) for t in tensors], axis=_axis(dim, tensors[0].ndim))


@kernel("aten::slice_copy.Tensor_out")
def slice_copy(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.ndim
    index[_axis(dim, x.ndim)] = slice(start, end, step)
    return x[tuple(index)]


@kernel("aten::select_copy.int_out")
def select_copy(x, dim, index):
    axis = _axis(dim, x.ndim)
    if not -x.shape[axis] <= index < x.shape[axis]:
        raise ProgramError(f"select index {index} out of range for size {x.shape[axis]}")
    return np.take(x, index, axis=axis)


@kernel("aten::flip.out")
def flip(x, dims):
    return np.flip(x, [_axis(d, x.ndim) for d in dims])


@kernel("aten::repeat.out")
def repeat(x, repeats):
    lead = len(repeats) - x.ndim
    return np.tile(x.reshape((1,) * lead + x.shape), repeats)


@kernel("aten::full.out")
def full(size, fill_value):
    return np.full(size, fill_value)


@kernel("aten::full_like.out")
def full_like(x, fill_value, *_):
    return np.full(x.shape, fill_value)


@kernel("aten::split_copy.Tensor_out", outs=0)
def split_copy(x, split_size, dim=0):
    axis = _axis(dim, x.ndim)
    if split_size <= 0:
        raise ProgramError(f"split size {split_size} is not positive")
    return np.split(x, range(split_size, x.shape[axis], split_size), axis=axis)


@kernel("aten::split_with_sizes_copy.out", outs=0)
def split_with_sizes_copy(x, sizes, dim=0):
    axis = _axis(dim, x.ndim)
    if sum(sizes) != x.shape[axis] or min(sizes, default=0) < 0:
        raise ProgramError(f"split sizes {list(sizes)} do not add up to {x.shape[axis]}")
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
