"""The compiled loops' vector width and RESCALE's 32-bit factors (pyvgf/fast/compiled.py,
rescale.py): a loop marked by compiled._wide_vectors is compiled for 512-bit vectors where the
CPU has them, and RESCALE with its multiplier held as int32 gives the reference's results for
the extreme multipliers, shifts and values."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

import llvmlite.binding
from numba import njit

from pyvgf.fast import compiled, rescale
from pyvgf.tosa import type_conversion

pytestmark = pytest.mark.fast


def _scaled(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        out[i] = x[i] * w[i]


def test_a_marked_loop_is_compiled_for_wide_vectors() -> None:
    """The mark reaches LLVM as the function's prefer-vector-width, and on an AVX-512 CPU the
    loop then uses 512-bit registers."""
    inner = njit(inline="always")(_scaled)

    @njit
    def marked(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
        compiled._wide_vectors()
        inner(x, w, out)

    x = np.arange(64, dtype=np.float32)
    out = np.empty_like(x)
    marked(x, x, out)
    np.testing.assert_array_equal(out, x * x)
    signature = marked.signatures[0]
    assert '"prefer-vector-width"="512"' in marked.inspect_llvm(signature)
    if "+avx512f" in llvmlite.binding.get_host_cpu_features().flatten().split(","):
        assert "zmm" in marked.inspect_asm(signature)


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("shift", [2, 31, 40, 62])
def test_rescale_with_32_bit_multipliers_gives_the_references_results(per_channel, shift) -> None:
    """int32 inputs at their extremes (less the zero point) times the int32 multiplier's
    extremes, negative ones too, into int32 and int8 results."""
    values = np.array([-(1 << 31) + 5, -(1 << 24), -1, 0, 1, 3, (1 << 24) + 1, (1 << 31) - 1],
                      np.int32)
    multipliers = np.array([-(1 << 31), -(1 << 30) - 7, -1, 1, (1 << 30) + 3, (1 << 31) - 1],
                           np.int32)
    x = np.tile(values[:, None], (1, multipliers.size))
    for out_dtype in (np.int32, np.int8):
        operands = dict(
            scale32=True, rounding_mode=type_conversion.SINGLE_ROUND, per_channel=per_channel,
            input_unsigned=False, output_unsigned=False, input=x,
            multiplier=multipliers if per_channel else multipliers[-1:],
            shift=np.full(multipliers.size if per_channel else 1, shift, np.int8),
            input_zp=np.array([5], np.int32), output_zp=np.array([0], out_dtype))
        want = type_conversion.rescale(**operands)
        np.testing.assert_array_equal(rescale.rescale(**operands), want)


_OTHER_TARGET = textwrap.dedent("""
    import numba, numpy as np
    from pyvgf.fast import compiled, memory
    print(compiled.INT8_TILES, compiled.TILE_LANES, compiled.WINDOW_LANES, compiled.LANE_RESCALE,
          compiled.FLOAT_TILES, compiled.ROW_LANES)
    c = 32
    w32 = memory.aligned(np.zeros((3, 3, c), np.int32), readonly=True)
    rescale = (np.zeros(c, np.int64), np.zeros(c, np.int32), np.zeros(c, np.int64), 0, -128, 127, False)
    loops = [
        (compiled.depthwise_rows_rescaled, (np.zeros((1, 5, 6, c), np.int8), np.int32(0), w32,
                                            1, 1, 1, 1, 1, 1, np.zeros((1, 5, 6, c), np.int8), *rescale)),
        (compiled.depthwise_rows, (np.zeros((1, 5, 6, c), np.float32), np.float32(0),
                                   memory.aligned(np.zeros((3, 3, c), np.float32), readonly=True),
                                   1, 1, 1, 1, 1, 1, 0, np.zeros((1, 5, 6, c), np.float32), True,
                                   np.zeros(c, np.float32), np.float32(0), np.float32(6), False)),
        (compiled.gemm_rows_packed, (np.zeros((10, 32), np.int8),
                                     compiled.int8_packed(np.zeros((32, c), np.int8)),
                                     np.zeros((10, c), np.int8), 1, *rescale)),
    ]
    for loop, args in loops:
        loop.serial.compile(tuple(numba.typeof(a) for a in args))
    f32 = np.zeros((96, 16), np.float32)
    compiled._finished_product.compile(tuple(numba.typeof(a) for a in (
        f32, f32[:16], f32, f32[0], np.float32(0), np.float32(6), False, f32[:0])))
    compiled.gemm_panels.serial.compile(tuple(numba.typeof(a) for a in (
        f32, compiled.float_panels(f32[:16]), f32, 1, 1, f32[0], np.float32(0), np.float32(6),
        False, f32[:0])))
    print("compiled")
""")


_AVX512 = "+avx2,+fma,+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx512vnni"


@pytest.mark.parametrize("cpu, features, says", [
    ("cascadelake", _AVX512, "avx512vnni 16 0 False False 8"),
    ("znver4", _AVX512, "avx512vnni 16 16 True True 16"),
    ("alderlake", "+avx2,+fma,+avxvnni", "avxvnni 8 8 True True 8"),
])
def test_the_loops_compile_for_other_cpus(tmp_path: Path, cpu: str, features: str, says: str) -> None:
    """The module's vector constants and the loops naming their instructions (the int8 and fp32
    tiles, the lane RESCALE's packing, the depthwise windows) are made for the CPU numba compiles for,
    not this one: imported and compiled (not run) for a Xeon with AVX-512 VNNI, an AMD Zen 4
    (the same instructions, with the fp32 tiles, the lane RESCALE and the depthwise windows)
    and a client CPU with AVX-VNNI. A constant of AVX2's eight lanes once stopped the import on AVX-512."""
    env = {**os.environ, "NUMBA_CPU_NAME": cpu, "NUMBA_CPU_FEATURES": features,
           "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _OTHER_TARGET], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == [says, "compiled"]
