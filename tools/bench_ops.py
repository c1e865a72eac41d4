"""Benchmark pyvgf's tensor operators against PyTorch CPU eager at MobileNetV2 layer sizes.

    python tools/bench_ops.py [--repeat N] [--threads T]

--threads T runs numpy's BLAS and torch on T threads (default: each library's own default).
On a loaded machine use --threads 1: spinning BLAS threads then time the load, not the kernels.

A benchmark, not a test: it prints the median and minimum time of each operator call (constant
weights, prepared once, as the interpreter holds them) and the same computation in torch (NCHW,
eager, no grad). torch is a benchmark-only dependency (torch==2.13.0, CPU build); RESCALE is timed
when pyvgf.tosa registers it (against torch.quantize_per_channel) and skipped otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark pyvgf tensor operators vs torch")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=0,
                        help="BLAS and torch threads (0: each library's default)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    # BLAS reads its thread count when numpy is imported, so it is set before the import.
    _THREADS = _parse(sys.argv[1:]).threads
    if _THREADS:
        for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[_var] = str(_THREADS)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyvgf.fast.plan import fast_ops  # noqa: E402
from pyvgf.tosa import OPS as REFERENCE  # noqa: E402

OPS = fast_ops(REFERENCE)  # the fast executor's operators, which the cpu backend runs

# (name, H=W, input channels, output channels, kernel, stride) of MobileNetV2 (224x224) layers.
CONV_LAYERS = [
    ("conv0 3x3/2", 224, 3, 32, 3, 2),
    ("pw 112 32->16", 112, 32, 16, 1, 1),
    ("pw 56 24->144", 56, 24, 144, 1, 1),
    ("pw 28 192->32", 28, 192, 32, 1, 1),
    ("pw 14 384->64", 14, 384, 64, 1, 1),
    ("pw 7 960->320", 7, 960, 320, 1, 1),
    ("pw 7 320->1280", 7, 320, 1280, 1, 1),
]
DEPTHWISE_LAYERS = [
    ("dw 112 c32", 112, 32, 1), ("dw 112 c96 /2", 112, 96, 2), ("dw 56 c144", 56, 144, 1),
    ("dw 28 c192", 28, 192, 1), ("dw 14 c576", 14, 576, 1), ("dw 7 c960", 7, 960, 1),
]
MATMUL_SIZES = [("fc 1x1280x1000", 1, 1, 1280, 1000), ("mm 196x384x64", 1, 196, 384, 64),
                ("mm 8x197x64x197", 8, 197, 64, 197)]


Call = Callable[[], object]
Row = tuple[str, Call, Call | None]


def bind(fn: Callable[..., object], *args: object, **kwargs: object) -> Call:
    return lambda: fn(*args, **kwargs)


def timings_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, minimum) milliseconds of `repeat` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3


def frozen(array: np.ndarray) -> np.ndarray:
    """A constant as the interpreter holds it: read-only memory (weights are prepared once)."""
    return np.frombuffer(array.tobytes(), array.dtype).reshape(array.shape)


def same_pad(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TOSA pads for a 'same' window whose output size divides exactly."""
    out = -(-size // stride)
    total = (out - 1) * stride + kernel - size
    return total // 2, total - total // 2


def conv_rows(dtype: str, torch) -> list[Row]:
    rng = np.random.default_rng(0)
    rows = []
    for name, hw, ic, oc, k, s in CONV_LAYERS:
        top, bottom = same_pad(hw, k, s)
        if dtype == "f32":
            x = rng.standard_normal((1, hw, hw, ic), np.float32)
            w = rng.standard_normal((oc, k, k, ic), np.float32)
            b = rng.standard_normal(oc, np.float32)
            zp = np.zeros(1, np.float32), np.zeros(1, np.float32)
            acc = 3
        else:
            x = rng.integers(-128, 128, (1, hw, hw, ic), dtype=np.int8)
            w = rng.integers(-127, 128, (oc, k, k, ic), dtype=np.int8)
            b = rng.integers(-1000, 1000, oc, dtype=np.int32)
            zp = np.array([-3], np.int8), np.zeros(1, np.int8)
            acc = 1
        kwargs = {"input": x, "weight": frozen(w), "bias": frozen(b), "input_zp": zp[0],
                      "weight_zp": zp[1], "pad": np.array([top, bottom, top, bottom]),
                      "stride": np.array([s, s]), "dilation": np.array([1, 1]), "acc_type": acc}
        theirs = None
        if dtype == "f32":
            tx = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
            tw = torch.from_numpy(w.transpose(0, 3, 1, 2).copy())
            tb = torch.from_numpy(b)
            theirs = bind(torch.nn.functional.conv2d, tx, tw, tb, s, k // 2)
        rows.append((f"conv2d {dtype} {name}", bind(OPS["CONV2D"].fn, **kwargs), theirs))
    return rows


def depthwise_rows(dtype: str, torch) -> list[Row]:
    rng = np.random.default_rng(1)
    rows = []
    for name, hw, c, s in DEPTHWISE_LAYERS:
        top, bottom = same_pad(hw, 3, s)
        if dtype == "f32":
            x = rng.standard_normal((1, hw, hw, c), np.float32)
            w = rng.standard_normal((3, 3, c, 1), np.float32)
            b = rng.standard_normal(c, np.float32)
            zp, acc = (np.zeros(1, np.float32), np.zeros(1, np.float32)), 3
        else:
            x = rng.integers(-128, 128, (1, hw, hw, c), dtype=np.int8)
            w = rng.integers(-127, 128, (3, 3, c, 1), dtype=np.int8)
            b = rng.integers(-1000, 1000, c, dtype=np.int32)
            zp, acc = (np.array([5], np.int8), np.zeros(1, np.int8)), 1
        kwargs = {"input": x, "weight": frozen(w), "bias": frozen(b), "input_zp": zp[0],
                      "weight_zp": zp[1], "pad": np.array([top, bottom, top, bottom]),
                      "stride": np.array([s, s]), "dilation": np.array([1, 1]), "acc_type": acc}
        theirs = None
        if dtype == "f32":
            tx = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
            tw = torch.from_numpy(w.transpose(2, 3, 0, 1).copy())
            tb = torch.from_numpy(b)
            theirs = bind(torch.nn.functional.conv2d, tx, tw, tb, s, 1, groups=c)
        rows.append((f"depthwise {dtype} {name}", bind(OPS["DEPTHWISE_CONV2D"].fn, **kwargs),
                     theirs))
    return rows


def matmul_rows(dtype: str, torch) -> list[Row]:
    rng = np.random.default_rng(2)
    rows = []
    for name, n, h, c, w in MATMUL_SIZES:
        if dtype == "f32":
            a = rng.standard_normal((n, h, c), np.float32)
            b = rng.standard_normal((n, c, w), np.float32)
            zp = np.zeros(1, np.float32)
        else:
            a = rng.integers(-128, 128, (n, h, c), dtype=np.int8)
            b = rng.integers(-128, 128, (n, c, w), dtype=np.int8)
            zp = np.zeros(1, np.int8)
        theirs = None
        if dtype == "f32":
            theirs = bind(torch.matmul, torch.from_numpy(a), torch.from_numpy(b))
        out = np.dtype(np.float32 if dtype == "f32" else np.int32)
        rows.append((f"matmul {dtype} {name}",
                     bind(OPS["MATMUL"].fn, A=a, B=b, A_zp=zp, B_zp=zp, result_dtype=out),
                     theirs))
    return rows


def rescale_rows(torch) -> list[Row]:
    if "RESCALE" not in OPS:
        print("RESCALE: not registered in pyvgf.tosa.OPS (the elementwise operators are not "
              "merged here); skipped")
        return []
    rng = np.random.default_rng(3)
    rows = []
    for name, shape in [("112x112x32", (1, 112, 112, 32)), ("56x56x144", (1, 56, 56, 144)),
                        ("7x7x1280", (1, 7, 7, 1280))]:
        x = rng.integers(-2**20, 2**20, shape, dtype=np.int32)
        channels = shape[-1]
        multiplier = rng.integers(2**30, 2**31 - 1, channels).astype(np.int32)
        kwargs = {"input": x, "multiplier": multiplier, "shift": np.full(channels, 38, np.int8),
                  "input_zp": np.zeros(1, np.int32), "output_zp": np.array([-4], np.int8),
                  "scale32": True, "rounding_mode": 1, "per_channel": True,
                  "input_unsigned": False, "output_unsigned": False}
        # torch has no int rescale: the closest eager equivalent is quantize_per_channel.
        tx = torch.from_numpy(x.astype(np.float32))
        scales = torch.from_numpy((kwargs["multiplier"] / 2.0**38).astype(np.float64))
        zps = torch.zeros(channels, dtype=torch.int64)
        rows.append((f"rescale i32->i8 {name}", bind(OPS["RESCALE"].fn, **kwargs),
                     bind(torch.quantize_per_channel, tx, 1 / scales, zps, 3, torch.qint8)))
    return rows


def main(argv: list[str]) -> int:
    args = _parse(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: pip install torch==2.13.0 (benchmark-only)")
        return 1
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    rows: list[Row] = []
    for dtype in ("f32", "i8"):
        rows += conv_rows(dtype, torch)
        rows += depthwise_rows(dtype, torch)
        rows += matmul_rows(dtype, torch)
    rows += rescale_rows(torch)
    # Each side runs as its own phase: OpenBLAS and torch's OpenMP threads spin after a call,
    # and interleaving them on few cores would time one library's spinning against the other.
    ours = [timings_ms(fn, args.repeat) for _, fn, _ in rows]
    time.sleep(1)
    theirs = [timings_ms(fn, args.repeat) if fn else None for _, _, fn in rows]
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy "
          f"{np.__version__}, BLAS threads {blas}; {args.repeat} runs each")
    print("median and minimum ms; on a loaded machine the minimum is the steadier figure")
    print(f"{'operator':34} {'pyvgf med':>9} {'torch med':>9} {'ratio':>6} "
          f"{'pyvgf min':>9} {'torch min':>9} {'ratio':>6}")
    for (name, _, _), mine, other in zip(rows, ours, theirs):
        if other is None:
            print(f"{name:34} {mine[0]:9.3f} {'-':>9} {'-':>6} {mine[1]:9.3f} {'-':>9} {'-':>6}")
        else:
            print(f"{name:34} {mine[0]:9.3f} {other[0]:9.3f} {mine[0] / other[0]:6.2f} "
                  f"{mine[1]:9.3f} {other[1]:9.3f} {mine[1] / other[1]:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
