"""The compiled loops' GEMM (compiled._gemm) on the BLAS that pyvgf/fast/blas.py binds: every
layout the loops pass gives numpy's product, and MKL and OpenBLAS give the same products."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf.fast import blas, compiled, kernels
from pyvgf.tosa import type_conversion

pytestmark = pytest.mark.fast


def _integers(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Small integers as floats: every product and sum exact, so any order gives numpy's."""
    return rng.integers(-64, 64, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", [(5, 7, 3), (1, 7, 3), (5, 1, 3), (5, 7, 1), (1, 1, 1), (37, 65, 19)])
def test_every_layout_gives_numpys_product(dtype, m, k, n):
    """a and b by rows or by columns (a transposed view), into a whole result or a block of
    a wider one's columns, which is left alone around it."""
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a, b = _integers(rng, (m, k), dtype), _integers(rng, (k, n), dtype)
    want = a @ b
    for left in (a, np.asfortranarray(a)):
        for right in (b, np.asfortranarray(b)):
            out = np.empty((m, n), dtype)
            compiled._gemm(left, right, out)
            np.testing.assert_array_equal(out, want)
            wide = np.full((m, n + 5), 7, dtype)
            compiled._gemm(left, right, wide[:, 2:2 + n])
            np.testing.assert_array_equal(wide[:, 2:2 + n], want)
            assert (wide[:, :2] == 7).all() and (wide[:, 2 + n:] == 7).all()


def test_an_empty_sum_is_zero():
    out = np.full((3, 4), 5, np.float32)
    compiled._gemm(np.empty((3, 0), np.float32), np.empty((0, 4), np.float32), out)
    assert (out == 0).all()


_PRODUCTS = textwrap.dedent("""
    import hashlib
    import numpy as np
    from pyvgf.fast import blas, kernels
    rng = np.random.default_rng(5)
    digest = hashlib.sha256()
    for m, k, n in [(300, 64, 96), (40, 200, 500), (7, 9, 5)]:
        a = rng.integers(-64, 64, (m, k)).astype(np.float32)
        b = rng.integers(-64, 64, (k, n)).astype(np.float32)
        b.flags.writeable = False
        digest.update(kernels.gemm(a, b).tobytes())
    print(blas.LIBRARY, digest.hexdigest())
""")


def _products(library: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYVGF_BLAS"}
    if library:
        env["PYVGF_BLAS"] = library
    out = subprocess.run([sys.executable, "-c", _PRODUCTS], capture_output=True, text=True, env=env,
                         check=True).stdout
    return out.split()


def test_openblas_and_mkl_give_the_same_products():
    """PYVGF_BLAS=openblas binds SciPy's; without it MKL where installed. Both processes load
    the same cached machine code and give the same exact products."""
    openblas = _products("openblas")
    default = _products(None)
    assert openblas[0] == "openblas"
    assert default[0] == ("mkl" if _mkl_installed() and sys.platform.startswith("linux") else "openblas")
    assert default[1] == openblas[1]


def _mkl_installed() -> bool:
    try:
        importlib.metadata.distribution("mkl")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_this_process_runs_mkl_sequentially_where_it_is_bound():
    """MKL's own threads would fight the loops' (threads.py): each call runs on its caller's."""
    if blas.LIBRARY != "mkl":
        pytest.skip("MKL is not installed here (pip install 'pyvgf[mkl]')")
    import threadpoolctl

    mkl = [lib for lib in threadpoolctl.threadpool_info() if lib.get("internal_api") == "mkl"]
    assert mkl and all(lib["threading_layer"] == "sequential" for lib in mkl)
    a = np.ones((64, 64), np.float32)
    np.testing.assert_array_equal(kernels.gemm(a, a), a @ a)


# -- MKL's int8 GEMM ----------------------------------------------------------------------------------


class _FakeInt8Gemm:
    """cblas_gemm_s8u8s32 in numpy for blas._int8_exact's call, summing pairs of products at
    int16 with saturation where `saturating` (as a CPU without VNNI may), else exactly."""

    def __init__(self, saturating: bool):
        self.saturating = saturating

    def __call__(self, layout, ta, tb, offset, m, n, k, alpha, a, lda, ao, b, ldb, bo, beta, c, ldc, co):
        import ctypes

        w = np.ctypeslib.as_array((ctypes.c_int8 * (k * lda)).from_address(a)).reshape(k, lda)[:, :m]
        x = np.ctypeslib.as_array((ctypes.c_uint8 * (n * ldb)).from_address(b)).reshape(n, ldb)[:, :k]
        products = x.astype(np.int64)[:, :, None] * w.astype(np.int64)[None]
        if self.saturating:
            products = np.clip(products[:, 0::2] + products[:, 1::2], -32768, 32767)
        out = np.ctypeslib.as_array((ctypes.c_int32 * (n * ldc)).from_address(c)).reshape(n, ldc)
        out[:, :m] = products.sum(axis=1)


@pytest.mark.parametrize("saturating", [False, True])
def test_the_int8_gemm_is_used_only_where_it_sums_exactly(saturating):
    assert blas._int8_exact(_FakeInt8Gemm(saturating)) is not saturating


def _rescale(rng: np.random.Generator, columns: int, double_round: bool,
             shifts: tuple[int, int] = (30, 40)) -> kernels.Rescale:
    """Per-channel operands; the first column's multiplier the largest int32 and its shift the
    range's last."""
    multiplier = rng.integers(1 << 29, 1 << 30, columns).astype(np.int32)
    shift = rng.integers(*shifts, columns).astype(np.int64)
    multiplier[0], shift[0] = (1 << 31) - 1, shifts[1] - 1
    return (rng.integers(-5000, 5000, columns).astype(np.int64), multiplier, shift, -3, -128,
            127, double_round)


def _reference_rescale(exact: np.ndarray, rescale: kernels.Rescale) -> np.ndarray:
    """The reference's RESCALE of `exact` + offset, wrapped to int32, to int8."""
    offset, multiplier, shift, output_zp, _, _, double_round = rescale
    value = (exact + offset).astype(np.int32)
    return type_conversion.rescale(
        scale32=True, rounding_mode=type_conversion.DOUBLE_ROUND if double_round else
        type_conversion.SINGLE_ROUND, per_channel=True, input_unsigned=False,
        output_unsigned=False, input=value, multiplier=multiplier, shift=shift.astype(np.int8),
        input_zp=np.zeros(1, np.int32), output_zp=np.array([output_zp], np.int8))


@pytest.mark.parametrize("rows, k, columns", [(300, 24, 40), (7, 96, 80), (1, 16, 64), (49, 960, 160),
                                              (13, 4, 17)])
@pytest.mark.parametrize("input_zp", [0, -128, 37])
@pytest.mark.parametrize("double_round", [False, True], ids=["single-round", "double-round"])
@pytest.mark.parametrize("products, shifts", [("mkl", (30, 40)), ("tiles", (30, 40)),
                                              ("tiles", (32, 64))])
def test_the_int8_gemm_gives_the_float_gemms_rescaled_results(rows, k, columns, input_zp,
                                                              double_round, products, shifts,
                                                              monkeypatch):
    """int8_gemm_call (MKL's int8 GEMM, or compiled.gemm_rows_packed; the input's
    zero point and the 128 it adds folded into the offsets) gives bit for bit the RESCALE of
    the exact sums, as the float GEMM path's loop makes it, by rows and by columns, the extreme
    values included, rounding once or twice; the tiles' RESCALE with every shift 32..63 (a
    vector of lanes, compiled._RESCALE_LANES) and with some below (one channel at a time)."""
    if products == "mkl":
        if not blas.INT8:
            pytest.skip("MKL's int8 GEMM is not bound here (no mkl extra, or not exact on this CPU)")
        monkeypatch.setattr(compiled, "INT8_TILES", None)
    else:
        if not compiled.INT8_TILES:
            pytest.skip("this CPU has neither AVX-512 VNNI nor AVX2")
        monkeypatch.setattr(blas, "INT8", False)
    rng = np.random.default_rng(rows + k + 1000 + input_zp)
    a = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    a[0, :] = -128
    weight = rng.integers(-128, 128, (k, columns)).astype(np.int8)
    weight[:, 0] = 127
    weight.flags.writeable = False
    rescale = _rescale(rng, columns, double_round, shifts)
    exact = (a.astype(np.int64) - input_zp) @ weight.astype(np.int64)
    want = np.empty((rows, columns), np.int8)
    compiled.rescale_common_rows.serial(exact.astype(np.float64), *rescale[:1], True, *rescale[1:], want)
    np.testing.assert_array_equal(want, _reference_rescale(exact, rescale))
    matrix, folded = kernels.int8_gemm(weight, input_zp, rescale)
    assert (matrix.dtype == compiled.PACKED) is (products == "tiles")  # packed for the int8 tiles
    for block_rows in (1, kernels.GEMM_BLOCK_ROWS):
        monkeypatch.setattr(kernels, "GEMM_BLOCK_ROWS", block_rows)
        got = np.empty((rows, columns), np.int8)
        kernels.int8_gemm_call(a, matrix, got, folded)(a, got)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("double_round", [False, True], ids=["single-round", "double-round"])
def test_the_int8_tiles_split_over_the_threads_give_one_threads_results(double_round):
    """compiled.gemm_rows_packed's threaded form, its rows in blocks over numba's threads, gives
    its serial form's results bit for bit (each form is compiled on its own: a loop body that
    numba's parallel lowering refuses fails only the threaded one)."""
    if not compiled.INT8_TILES:
        pytest.skip("this CPU has neither AVX-512 VNNI nor AVX2")
    rng = np.random.default_rng(23)
    a = rng.integers(-128, 128, (53, 24)).astype(np.int8)
    weight = rng.integers(-128, 128, (24, 40)).astype(np.int8)
    weight.flags.writeable = False
    matrix, folded = kernels.int8_gemm(weight, 0, _rescale(rng, 40, double_round, (32, 64)))
    want = np.empty((53, 40), np.int8)
    compiled.gemm_rows_packed.serial(a, matrix, want, 1, *folded)
    for blocks in (2, 3):
        got = np.empty((53, 40), np.int8)
        compiled.gemm_rows_packed.threaded(a, matrix, got, blocks, *folded)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("workers, rows, columns, parts, by_columns", [
    (16, 196, 384, 12, False),  # 196 rows: 12 threads of 16 rows, not one thread
    (16, 196, 576, 16, True),   # by columns: 16 threads rather than 12
    (16, 49, 160, 10, True),    # a 7x7 map's few rows: its columns over 10 threads
    (16, 20, 24, None, False),  # too small to split at all
    (2, 196, 576, 2, False),    # rows give both threads their share: by rows
    (2, 49, 160, 2, False),
    (2, 1, 1000, 2, True),      # a classifier's one row: by columns
    (2, 197, 1536, 2, True),    # a weight of 2.4 MB (384 x 1536): each thread packs half
])
def test_a_product_splits_over_the_threads_that_get_16_rows_or_columns(monkeypatch, workers, rows,
                                                                         columns, parts, by_columns):
    """A GEMM splits by rows over the threads that get 16 rows each (on a many-core machine, a
    small one over fewer threads rather than none), by columns only where that takes more
    threads, and still gives numpy's product."""
    from pyvgf.fast import threads

    monkeypatch.setattr(threads, "workers", lambda: workers)
    monkeypatch.setattr(threads, "spread", lambda: True)
    rng = np.random.default_rng(rows)
    depth = 384 if columns == 1536 else 64
    a, b = _integers(rng, (rows, depth), np.float32), _integers(rng, (depth, columns), np.float32)
    b.flags.writeable = False
    out = np.empty((rows, columns), np.float32)
    split = kernels._split(a, b, out, False)
    assert (split and split.blocks, split is not None and split.bt is not None) == (parts, by_columns)
    if split is not None:
        kernels.gemm_call(a, b, out)(a, out)
        np.testing.assert_array_equal(out, a @ b)


@pytest.mark.parametrize("k, columns, tiles", [(16, 96, True), (960, 160, True), (32, 16, True),
                                              (18, 96, False)])
def test_int8_convolutions_take_the_tiles_loop_where_the_cpu_has_it(k, columns, tiles):
    """A 1x1 int8 convolution's products are made by compiled.gemm_rows_packed where its input
    channels come in fours (its input rows are read four bytes at a time)."""
    if not compiled.INT8_TILES:
        pytest.skip("this CPU has neither AVX-512 VNNI nor AVX2")
    weight = np.ones((k, columns), np.int8)
    weight.flags.writeable = False
    rescale = _rescale(np.random.default_rng(k), columns, False)
    made = kernels.int8_gemm(weight, 0, rescale)
    if tiles:
        assert made is not None and made[0].dtype == compiled.PACKED  # int8_packed's words
    else:
        assert made is None or made[0].dtype == np.int8  # MKL's, where bound


@pytest.mark.parametrize("name, features, tiles, lanes", [
    (None, "+avx2,+fma", "avx2", True),
    (None, "+avx2,+avx512f,+avx512vnni", "avx512vnni", False),
    (None, "+avx2,+avx512f,-avx512vnni", "avx2", False),
    (None, "+avx2,+avxvnni", "avxvnni", True),
    (None, "+avx2,+avx512f,+avx512vnni,+avxvnni", "avx512vnni", False),
    (None, "+sse4.2", None, False),
    ("generic", None, None, False),  # a CPU named alone (a portable cache): taken to lack both
])
def test_int8_tiles_only_where_numba_compiles_for_them(monkeypatch, name, features, tiles, lanes):
    """The int8 tiles use VNNI, else AVX2, only where the code numba makes may use the
    instructions: with the user's NUMBA_CPU_NAME or NUMBA_CPU_FEATURES, as those say, not as
    the host is; the int8 RESCALEs run in lanes only with the tiles and without Intel's AVX-512
    (on AMD's, in lanes)."""
    monkeypatch.setattr(compiled.numba_config, "CPU_NAME", name)
    monkeypatch.setattr(compiled.numba_config, "CPU_FEATURES", features)
    features = compiled._features()
    assert compiled._int8_tiles(features) == tiles
    assert compiled._lane_rescale(features, "cascadelake") is lanes
    assert compiled._lane_rescale(features, "znver4") is (tiles is not None)
