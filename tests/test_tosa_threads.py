"""The fast executor's threads (pyvgf/fast/threads.py): loops and GEMMs split over numba's
threads give what one thread gives, BLAS runs one thread only while a graph runs and is then
given back as the caller had it, and a process forked after a run still runs graphs."""

from __future__ import annotations

import importlib.metadata
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("numba", reason="the fast executor needs the fast extra")
import numba
import threadpoolctl

from pyvgf.fast import blas, compiled, conv, kernels, threads
from pyvgf.fast.plan import FastPlan as GraphPlan
from pyvgf.types import TensorType
from support.spirv import fixtures, random_input, vgf_graph
from support.tosa import run_op

pytestmark = [pytest.mark.fast, pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                                   reason="numba has one thread here: nothing is split")]

F32 = np.dtype(np.float32)


def on_one_thread(fn: Callable[[], object]) -> object:
    """fn() with numba's loops on one thread (so not split)."""
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return fn()
    finally:
        numba.set_num_threads(before)


def blas_threads() -> set[int]:
    """The thread counts of the BLAS libraries loaded, but for those that run sequentially
    whatever they are told (MKL, as pyvgf/fast/blas.py loads it)."""
    return {lib["num_threads"] for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas" and lib.get("threading_layer") != "sequential"}


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """GEMMs of a few rows split too, in blocks of a few bytes; returns the split kernels'
    names as they are called over the threads."""
    calls: list[str] = []
    monkeypatch.setattr(kernels, "GEMM_BLOCK_ROWS", 1)
    monkeypatch.setattr(kernels, "GEMM_BLOCK_BYTES", 64)
    for name in ("gemm_rows", "gemm_rows_rescaled", "gemm_columns", "gemm_columns_rescaled",
                 "gemm_batch", "gemm_rows_int8", "gemm_columns_int8", "gemm_rows_packed"):
        kernel = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *a, _k=kernel, _n=name: (
            threads.spread() and calls.append(_n), _k(*a)))
    loop = conv.depthwise_rows_rescaled  # split when threads.spread(), as every _RowLoop
    monkeypatch.setattr(conv, "depthwise_rows_rescaled", lambda *a: (
        threads.spread() and calls.append("depthwise_rows_rescaled"), loop(*a)))
    return calls


# -- split GEMMs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rows, cols, order, kernel", [
    (200, 24, "F", "gemm_rows"), (200, 24, "C", "gemm_rows"), (49, 300, "F", "gemm_columns"),
    (49, 300, "constant C", "gemm_columns"), (1, 35, "F", "gemm_columns")],
    ids=["F", "C", "7x7-map", "7x7-map-constant-C", "one-row"])
@pytest.mark.parametrize("bounds", [None, (-np.inf, np.inf, False), (0.0, 6.0, False), (0.0, 6.0, True)],
                         ids=["plain", "bias", "clamp", "clamp-nan-to-low"])
def test_split_gemm_is_the_whole_product_then_finished(rows, cols, order, kernel, bounds, small_blocks,
                                                       monkeypatch):
    """Split by rows, or by columns where that takes more threads and the result has at most
    half as many rows as columns (and b is laid out by columns, or cannot change). The 7x7
    map's 49 rows are a 16-thread machine's, where 3 threads would get 16 rows each."""
    if rows == 49:
        monkeypatch.setattr(threads, "workers", lambda: 16)
        monkeypatch.setattr(kernels, "GEMM_BLOCK_ROWS", 16)
    rng = np.random.default_rng(0)
    # Small integers: every partial sum is exact, so any split and order give the same bits.
    a = rng.integers(-8, 9, (rows, 40)).astype(F32)
    b = np.asarray(rng.integers(-8, 9, (40, cols)).astype(F32), order=order[-1])
    if order.startswith("constant"):
        b.flags.writeable = False
    bias = rng.integers(-30, 30, cols).astype(F32) + F32.type(0.5)
    bias[1] = np.nan
    out = np.full((rows, cols), -1.0, F32)
    finish = None if bounds is None else (bias, *bounds)
    assert kernels.split_gemm(a, b, out, finish)
    assert small_blocks == [kernel]
    want = a @ b
    if bounds is not None:
        low, high, nan_to_low = bounds
        want = np.clip(want + bias, low, high)
        if nan_to_low:
            want[np.isnan(want)] = low
    np.testing.assert_array_equal(out, want)


def test_on_one_thread_a_finished_gemm_runs_in_cache_sized_blocks(monkeypatch):
    """One thread: a GEMM with something to finish (bias, CLAMP, a RESCALE) still runs as
    blocks of rows, each finished while in cache, on the calling thread; one with nothing to
    finish is left to BLAS whole."""
    blocks: list[int] = []
    serial = kernels.gemm_rows.serial
    monkeypatch.setattr(kernels.gemm_rows, "serial", lambda *a: (blocks.append(a[3]), serial(*a)))
    monkeypatch.setattr(kernels, "GEMM_BLOCK_BYTES", 4096)
    rng = np.random.default_rng(6)
    a = rng.integers(-8, 9, (300, 40)).astype(F32)
    b = np.asfortranarray(rng.integers(-8, 9, (40, 24)).astype(F32))
    bias = rng.integers(-30, 30, 24).astype(F32)
    out = np.empty((300, 24), F32)
    assert on_one_thread(lambda: kernels.split_gemm(a, b, out, (bias, 0.0, 60.0, False)))
    np.testing.assert_array_equal(out, np.clip(a @ b + bias, 0, 60))
    assert blocks == [300 * 24 * 4 // 4096 + 1]
    assert not on_one_thread(lambda: kernels.split_gemm(a, b, out))


@pytest.mark.parametrize("case", ["int64", "strided", "few-rows", "few-rows-writable-C", "empty"])
def test_split_gemm_declines_what_it_cannot_split(case):
    a, b = np.ones((200, 40), F32), np.ones((40, 300), F32, order="F")
    if case == "int64":
        a, b = a.astype(np.int64), b.astype(np.int64)
    elif case == "strided":
        a = np.ones((400, 40), F32)[::2]
    elif case == "few-rows":  # and too few columns to split those
        a, b = np.ones((31, 40), F32), np.ones((40, 31), F32, order="F")
    elif case == "few-rows-writable-C":  # b's transpose would be made afresh on every call
        a, b = np.ones((31, 40), F32), np.ones((40, 300), F32)
    elif case == "empty":
        a = np.ones((0, 40), F32)
    out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    assert not kernels.split_gemm(a, b, out)
    assert not out.any()  # untouched
    np.testing.assert_array_equal(kernels.gemm(a, b), a @ b)


# -- whole graphs and ops: split against one thread --------------------------------------------------


@pytest.mark.parametrize("int8_gemm", [True, False], ids=["int8-gemm", "float-gemm"])
@pytest.mark.parametrize("name", ["interpreter_fuse_f32", "interpreter_fuse_i8",
                                  "interpreter_fuse_rescales", "spirv_conv_add"])
def test_split_runs_give_what_one_thread_gives(name, int8_gemm, small_blocks, monkeypatch):
    """Integer 1x1 convolutions on MKL's int8 GEMM where it is bound (blas.INT8), and on the
    float GEMM (the int8 tiles' loop, which these graphs' few channels would not take, is
    tested with split blocks in test_fast_blas.py)."""
    if int8_gemm and not blas.INT8:
        pytest.skip("MKL's int8 GEMM is not bound here")
    monkeypatch.setattr(blas, "INT8", int8_gemm)
    monkeypatch.setattr(compiled, "INT8_TILES", None)
    graph, constants = vgf_graph(fixtures.model(name))
    plan = GraphPlan(graph, constants)
    rng = np.random.default_rng(11)
    inputs = [random_input(p.type, rng) for p in graph.inputs]
    split = plan.run(inputs)
    assert small_blocks  # the GEMMs were split
    if name.startswith("interpreter_fuse_") and name != "interpreter_fuse_f32":
        # a 1x1 CONV2D + RESCALE in one compiled call
        assert ("gemm_rows_int8" if int8_gemm else "gemm_rows_rescaled") in small_blocks
    if name == "interpreter_fuse_rescales":  # and a DEPTHWISE_CONV2D + RESCALE
        assert "depthwise_rows_rescaled" in small_blocks
    del small_blocks[:]
    alone = on_one_thread(lambda: plan.run(inputs))
    assert not small_blocks
    for got, want in zip(split, alone):
        assert got.dtype == want.dtype and got.shape == want.shape
        if got.dtype.kind in "iu":
            np.testing.assert_array_equal(got, want)
        else:  # two BLAS builds may round a sum differently
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_split_matmul_gives_what_one_thread_gives(dtype, small_blocks):
    rng = np.random.default_rng(4)
    a = rng.integers(-100, 100, (3, 70, 40)).astype(dtype)
    b = rng.integers(-100, 100, (3, 40, 50)).astype(dtype)
    out_dtype = np.dtype(np.float32 if dtype == np.float32 else np.int32)
    zp = np.zeros(1, dtype)

    def product():
        return run_op("MATMUL", TensorType(out_dtype, (3, 70, 50)), A=a, B=b, A_zp=zp, B_zp=zp,
                      result_dtype=out_dtype)

    split = product()
    assert small_blocks == ["gemm_batch"]  # the three products over the threads
    np.testing.assert_array_equal(split, on_one_thread(product))
    np.testing.assert_array_equal(split, (a.astype(np.int64) @ b.astype(np.int64)).astype(out_dtype))


# -- BLAS threads --------------------------------------------------------------------------------


def _conv_plan() -> tuple[GraphPlan, list[np.ndarray]]:
    graph, constants = vgf_graph(fixtures.model("interpreter_fuse_f32"))
    rng = np.random.default_rng(2)
    return GraphPlan(graph, constants), [random_input(p.type, rng) for p in graph.inputs]


@pytest.fixture
def blas_during_convolutions(small_blocks, monkeypatch) -> list[set[int]]:
    """BLAS's thread counts as each 1x1 convolution of a run starts."""
    seen: list[set[int]] = []
    for name in ("gemm_rows", "gemm_columns"):
        loop = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *a, loop=loop: (seen.append(blas_threads()), loop(*a))[1])
    return seen


def test_blas_runs_one_thread_while_a_graph_runs_and_is_then_given_back(blas_during_convolutions):
    plan, inputs = _conv_plan()
    with threadpoolctl.threadpool_limits(2, user_api="blas"):  # the caller's own setting
        plan.run(inputs)
        assert blas_threads() == {2}
        with ThreadPoolExecutor(4) as pool:  # runs overlapping on several Python threads
            list(pool.map(lambda _: plan.run(inputs), range(16)))
        assert blas_threads() == {2}
    assert blas_during_convolutions and all(threads == {1} for threads in blas_during_convolutions)


def test_blas_runs_one_thread_when_the_run_does(blas_during_convolutions):
    """load(..., threads=1) or set_num_threads(1) holds BLAS to the caller's one thread too."""
    plan, inputs = _conv_plan()
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        on_one_thread(lambda: plan.run(inputs))
        assert blas_threads() == {2}
    assert blas_during_convolutions and all(threads == {1} for threads in blas_during_convolutions)


def test_blas_is_left_alone_where_the_loops_cannot_split(blas_during_convolutions, monkeypatch):
    """With several threads allowed but no threading layer for the loops (a forked child of
    an OpenMP process, numba's workqueue), BLAS's own threads are the run's only ones."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    monkeypatch.setattr(threads, "layer", lambda: None)
    plan, inputs = _conv_plan()
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        plan.run(inputs)
    assert blas_during_convolutions and all(threads == {2} for threads in blas_during_convolutions)


# -- fork --------------------------------------------------------------------------------------------


def _run_in_child(plan: GraphPlan, inputs: list[np.ndarray], want: list[np.ndarray]) -> None:
    same = all(np.allclose(g, w, rtol=1e-6, atol=1e-6) for g, w in zip(plan.run(inputs), want))
    os._exit(0 if same else 3)


def test_a_process_forked_after_a_run_still_runs_graphs():
    """GNU OpenMP ends a forked child that uses it again; the child runs on one thread."""
    plan, inputs = _conv_plan()
    want = plan.run(inputs)  # this process has now used numba's threads
    child = multiprocessing.get_context("fork").Process(target=_run_in_child, args=(plan, inputs, want))
    child.start()
    child.join(120)
    assert child.exitcode == 0  # not 3 (other results), nor killed, nor still running (None)


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.parametrize("name,want", [("workqueue", "None False"), ("omp", "omp True"), ("tbb", "tbb True")])
def test_the_loops_run_on_tbb_or_openmp_never_on_numba_s_workqueue(name, want):
    """The workqueue threads end the process when two Python threads start parallel work at
    once, so there the loops run on one thread; TBB (the fast extra's) and OpenMP are used."""
    import subprocess
    import sys

    if name == "tbb" and not _installed("tbb"):
        pytest.skip("the tbb package (the fast extra's, on x86-64) is not installed")
    code = "from pyvgf.fast import threads; print(threads.layer(), threads.spread())"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NUMBA_THREADING_LAYER": name,
                                                           "NUMBA_NUM_THREADS": "2"},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == want


def test_a_fused_gemm_rescale_is_the_rescale_of_the_wrapped_int32_sum(small_blocks):
    """A 1x1 int8 convolution's input less its zero point, GEMM, bias and RESCALE in one
    threaded call (its `rescale` form) against the RESCALE op on the int32 result, sums that
    wrap included."""
    from pyvgf.fast.rescale import _rescale_accumulated
    from pyvgf.tosa.type_conversion import SINGLE_ROUND, rescale

    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (70, 64)).astype(np.int8)  # an int8 input of zero point -7
    b = np.asfortranarray(rng.integers(-128, 128, (64, 40)).astype(F32))
    bias = rng.integers(-2**20, 2**20, 40).astype(np.int32)
    bias[:4] = [2**31 - 1, -2**31, 2**31 - 100, -2**31 + 50]  # sums past int32 wrap
    operands = dict(scale32=True, rounding_mode=SINGLE_ROUND, per_channel=True, input_unsigned=False,
                    output_unsigned=False, multiplier=rng.integers(1 << 30, 1 << 31, 40).astype(np.int32),
                    shift=rng.integers(36, 44, 40).astype(np.int8), input_zp=np.zeros(1, np.int32),
                    output_zp=np.array([-3], np.int8))
    total = (a.astype(np.int64) + 7) @ b.astype(np.int64) + bias
    wrapped = ((total + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert (wrapped != total).any()
    want = rescale(input=wrapped, **operands)
    assert len(np.unique(want)) > 100
    form = _rescale_accumulated(**operands).rescale(bias, np.dtype(np.int32), 40)
    out = np.empty((70, 40), np.int8)
    assert not kernels.split_gemm_rescaled(a.astype(F32), b, out, form, -7)  # not integers
    assert kernels.split_gemm_rescaled(a, b, out, form, -7)
    np.testing.assert_array_equal(out, want)
    # A result of one row is split by its columns: the same values.
    one = np.empty((1, 40), np.int8)
    assert kernels.split_gemm_rescaled(a[:1], b, one, form, -7)
    np.testing.assert_array_equal(one, want[:1])
    assert small_blocks == ["gemm_rows_rescaled", "gemm_columns_rescaled"]


# -- sharing the machine -------------------------------------------------------------------------


def test_runs_take_the_models_or_the_process_thread_count(monkeypatch):
    """load(..., threads=N) and pyvgf.set_num_threads(N) set numba's count for each run, in the
    thread that runs it, and give the caller's count back; the results do not change."""
    import pyvgf
    from pyvgf import fast

    counts: list[int] = []
    real = numba.set_num_threads
    monkeypatch.setattr(numba, "set_num_threads", lambda n: counts.append(n) or real(n))
    path = fixtures.model("interpreter_fuse_i8")
    default = pyvgf.load(path)
    rng = np.random.default_rng(1)
    inputs = [random_input(_type(t), rng) for t in default.inputs]
    want = default.run(inputs)
    assert counts == []  # nothing set: numba's default
    before = numba.get_num_threads()
    one = pyvgf.load(path, threads=1)
    got = one.run(inputs)
    assert counts == [1, before] and numba.get_num_threads() == before
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    del counts[:]
    monkeypatch.setattr(fast, "_threads", None)
    pyvgf.set_num_threads(1)
    default.run(inputs)
    assert counts == [1, before]
    with pytest.raises(pyvgf.HalError, match="positive integer"):
        pyvgf.set_num_threads(0)
    with pytest.raises(pyvgf.HalError, match="positive integer"):
        pyvgf.load(path, threads=-2)


def _type(info):
    return TensorType(info.dtype, info.shape)


@pytest.mark.parametrize("env,want", [({}, "20000"), ({"GOMP_SPINCOUNT": "7"}, "7"),
                                      ({"OMP_WAIT_POLICY": "PASSIVE"}, None)])
def test_openmp_threads_spin_briefly_unless_the_user_says_otherwise(env, want):
    """Idle OpenMP threads sleep after GOMP_SPINCOUNT spins: pyvgf sets a short count where the
    user set neither it nor OMP_WAIT_POLICY."""
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    code = "import os, pyvgf.fast.threads as t; print(os.environ.get('GOMP_SPINCOUNT'), t.SPIN_COUNT)"
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == str(want) and (want != "20000" or out[1] == want)


_IDLE_CPU = """
import sys, time
sys.path[:0] = sys.argv[1:]  # tests/ and tools/, as pytest has them
import numpy as np
from pyvgf import fast
from pyvgf.fast import kernels
from pyvgf.fast.plan import FastPlan
fast.set_background_compile(False)  # the runs below use the compiled loops, cache cold or not
from support.spirv import fixtures, random_input, vgf_graph
kernels.GEMM_BLOCK_ROWS, kernels.GEMM_BLOCK_BYTES = 1, 64  # every GEMM split over the threads
graph, constants = vgf_graph(fixtures.model("interpreter_fuse_f32"))
plan = FastPlan(graph, constants)
inputs = [random_input(p.type, np.random.default_rng(2)) for p in graph.inputs]
for _ in range(3):
    plan.run(inputs)
start = time.process_time()
time.sleep(0.25)
print(time.process_time() - start)
"""


@pytest.mark.parametrize("env,spins", [({}, False),
                                       ({"NUMBA_THREADING_LAYER": "omp", "OMP_WAIT_POLICY": "ACTIVE"}, True)],
                         ids=["default", "openmp-active"])
def test_idle_threads_sleep_after_a_run(env, spins):
    """After a run, the loops' threads sleep rather than spin: the process takes under 10 ms of
    CPU in the quarter second that follows (onnxruntime's workers spin about 30 ms after each
    of its runs). OpenMP told to wait actively spins the whole time, which the check sees."""
    import subprocess
    import sys
    from pathlib import Path

    if env.get("NUMBA_THREADING_LAYER") == "omp" and sys.platform != "linux":
        pytest.skip("GNU OpenMP is numba's OpenMP layer on Linux")
    base = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}  # set by this process's import
    paths = [str(Path(__file__).parents[1] / folder) for folder in ("tests", "tools")]
    out = subprocess.run([sys.executable, "-c", _IDLE_CPU, *paths], env={**base, "NUMBA_NUM_THREADS": "2", **env},
                         capture_output=True, text=True, check=True).stdout
    cpu = float(out)
    assert (cpu > 0.1) if spins else (cpu < 0.01), cpu


def _close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_batched_gemm_runs_its_products_in_one_threaded_loop(monkeypatch):
    """Attention's per-head products: one loop over the batch, each product one BLAS call, the
    values of numpy's (up to the order of a float sum, which BLAS libraries choose: MKL's and
    numpy's OpenBLAS agree bit for bit on some CPUs, not on others), its matrices laid out by
    rows or by columns; a batch smaller than the threads, or whose matrices have no unit
    stride, goes product by product."""
    calls: list[tuple[int, ...]] = []
    batch = kernels.gemm_batch
    monkeypatch.setattr(kernels, "gemm_batch", lambda a, b, out: (calls.append(a.shape), batch(a, b, out)))
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 37, 16)).astype(F32)
    b = rng.standard_normal((6, 16, 29)).astype(F32)
    _close(kernels.gemm(a, b), np.matmul(a, b))
    assert calls == ([(6, 37, 16)] if threads.spread() else [])
    del calls[:]
    _close(kernels.gemm(a[:1], b[:1]), np.matmul(a[:1], b[:1]))
    assert calls == []
    by_columns = b.transpose(0, 2, 1).copy().transpose(0, 2, 1)
    _close(kernels.gemm(a, by_columns), np.matmul(a, b))
    assert calls == ([(6, 37, 16)] if threads.spread() else [])
    del calls[:]
    wide = rng.standard_normal((6, 16, 58)).astype(F32)
    _close(kernels.gemm(a, wide[:, :, ::2]), np.matmul(a, wide[:, :, ::2]))
    assert calls == []
