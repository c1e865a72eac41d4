"""The graphs of tests/models/{add_f32,build_*,runtime_rank0}.mlir written with pyvgf.build."""

from __future__ import annotations

import numpy as np

from pyvgf.build import Graph


def add_f32() -> Graph:
    g = Graph()
    a, b = g.input("float32", (1, 4, 4, 8)), g.input("float32", (1, 4, 4, 8))
    g.output(g.op("ADD", input1=a, input2=b))
    return g


def build_conv_clamp() -> Graph:
    g = Graph()
    x = g.input("float32", (1, 8, 8, 4))
    zp = np.zeros(1, np.float32)
    y = g.op(
        "CONV2D", input=x, weight=np.full((8, 3, 3, 4), 0.5, np.float32),
        bias=np.arange(1, 9, dtype=np.float32), input_zp=zp, weight_zp=zp, pad=[1, 1, 1, 1],
        stride=[1, 1], dilation=[1, 1], acc_type="FP32", result=("float32", (1, 8, 8, 8)),
    )
    g.output(g.op("CLAMP", input=y, min_val=0.0, max_val=6.0))
    return g


def build_int_mix() -> Graph:
    g = Graph()
    a, b = g.input("int8", (2, 3)), g.input("int32", (2, 3))
    r = g.op(
        "RESCALE", input=a, multiplier=np.array([1 << 30], np.int32), shift=np.array([31], np.int8),
        input_zp=np.array([3], np.int8), output_zp=np.array([-2], np.int8), scale32=True,
        rounding_mode="SINGLE_ROUND", per_channel=False, input_unsigned=False,
        output_unsigned=False, result=("int8", (2, 3)),
    )
    m = g.op("MUL", input1=b, input2=np.array([[1, 2, 3], [4, 5, 6]], np.int32), shift=np.zeros(1, np.int8))
    s = g.op("RESHAPE", input1=m, shape=[3, 2], result=("int32", (3, 2)))
    t = g.op("TRANSPOSE", input1=s, perms=[1, 0], result=("int32", (2, 3)))
    g.output(r, g.op("ADD", input1=t, input2=np.full((2, 3), 7, np.int32)))
    return g


def runtime_rank0() -> Graph:
    g = Graph()
    a, b, k = g.input("float32", ()), g.input("float32", (2, 3)), g.input("int32", ())
    total = g.op("ADD", input1=a, input2=np.array(2.5, np.float32))
    flat = g.op("RESHAPE", input1=total, shape=[1, 1], result=("float32", (1, 1)))
    g.output(g.op("EXP", input1=total), g.op("ADD", input1=b, input2=flat), g.op("ADD", input1=k, input2=k))
    return g


def build_fft() -> Graph:
    """FFT2D and RFFT2D: results used by another op, returned, or left unused."""
    g = Graph()
    re, im = g.input("float32", (2, 4, 8)), g.input("float32", (2, 4, 8))
    out_re, out_im = g.op("FFT2D", input_real=re, input_imag=im, inverse=True)
    total = g.op("ADD", input1=out_im, input2=re)
    _, rfft_im = g.op("RFFT2D", input_real=im, local_bound=True)
    g.output(out_re, total, rfft_im)
    return g


GRAPHS = {"add_f32": add_f32, "build_conv_clamp": build_conv_clamp, "build_fft": build_fft,
          "build_int_mix": build_int_mix, "runtime_rank0": runtime_rank0}
