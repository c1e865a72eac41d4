"""Throughput of pyvgf's non-tensor TOSA ops on a MobileNet-sized activation (1x112x112x32).

    python tools/bench_tosa_elementwise.py [--repeat N]

Prints milliseconds per call (best of N) and millions of elements per second for each case.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyvgf.tosa  # noqa: E402,F401  (fills OPS)
from pyvgf.tosa.registry import OPS  # noqa: E402

SHAPE = (1, 112, 112, 32)


def cases() -> dict[str, tuple[str, dict]]:
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal(SHAPE).astype(np.float32)
    bf16 = f32.astype(ml_dtypes.bfloat16)
    i32 = rng.integers(-(2**20), 2**20, SHAPE).astype(np.int32)
    i8 = rng.integers(-128, 128, SHAPE).astype(np.int8)
    channels = SHAPE[-1]
    rescale = dict(
        scale32=True,
        rounding_mode=3,
        per_channel=True,
        input_unsigned=False,
        output_unsigned=False,
        input=i32,
        multiplier=rng.integers(2**30, 2**31 - 1, channels).astype(np.int32),
        shift=np.full(channels, 38, np.int8),
        input_zp=np.zeros(1, np.int32),
        output_zp=np.array([3], np.int8),
    )
    return {
        "ADD fp32": ("ADD", dict(input1=f32, input2=f32)),
        "ADD bf16": ("ADD", dict(input1=bf16, input2=bf16)),
        "MUL i32 shift=10": ("MUL", dict(input1=i32, input2=i32, shift=np.array([10], np.int8))),
        "RESCALE i32->i8 per-channel": ("RESCALE", rescale),
        "TABLE i8": ("TABLE", dict(input1=i8, table=rng.integers(-128, 128, 256).astype(np.int8))),
        "CAST fp32->i8": ("CAST", dict(input=f32 * 50, result_dtype=np.int8)),
        "CLAMP i8": ("CLAMP", dict(min_val=-100, max_val=100, nan_mode=1, input=i8)),
        "SIGMOID fp32": ("SIGMOID", dict(input=f32)),
        "ERF fp32": ("ERF", dict(input=f32)),
        "CLZ i32": ("CLZ", dict(input1=i32)),
        "REDUCE_SUM fp32 axis 1": ("REDUCE_SUM", dict(axis=1, input=f32)),
        "TRANSPOSE fp32 NHWC->NCHW": (
            "TRANSPOSE",
            dict(perms=np.array([0, 3, 1, 2], np.int32), input1=f32),
        ),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    elements = int(np.prod(SHAPE))
    for label, (op, operands) in cases().items():
        fn = OPS[op].fn
        best = min(timeit.repeat(lambda: fn(**operands), number=1, repeat=args.repeat))  # noqa: B023 (called here)
        print(f"{label:32s} {best * 1e3:8.2f} ms  {elements / best / 1e6:8.1f} Melem/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
