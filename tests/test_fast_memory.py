"""Freed memory kept for the next run (pyvgf/fast/memory.py): after keep_freed, glibc's malloc
serves a run's large arrays from its heap instead of faulting fresh pages in every time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from support.spirv import fixtures, vgf_graph

pytest.importorskip("numba", reason="the fast executor needs the fast extra: pip install 'pyvgf[fast]'")

from pyvgf.fast import memory
from pyvgf.fast.plan import FastPlan

pytestmark = pytest.mark.fast

_FAULTS = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from pyvgf.fast import memory
    if sys.argv[1] == "keep":
        memory.keep_freed(8 << 20)
    faults = []
    for _ in range(12):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        arrays = [np.ones(2 << 20, np.uint8) for _ in range(4)]
        del arrays
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    print(min(faults[2:]))
""")


def _faults_per_round(mode: str) -> int:
    """Fewest page faults of a round (after two) that makes and frees four arrays of 2 MB, in a
    fresh process whose malloc has its defaults."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and not k.startswith("GLIBC_")}
    out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True,
                         env=env, check=True).stdout
    return int(out)


@pytest.mark.skipif(not memory._GLIBC, reason="keep_freed acts on glibc's malloc only")
def test_keep_freed_stops_the_page_faults_of_each_run():
    """Without it, each round faults its 8 MB (2,048 pages) in afresh: glibc gives the free top
    of its heap back beyond twice the largest block freed; with it, none."""
    assert _faults_per_round("default") > 1800
    assert _faults_per_round("keep") < 50


def test_a_plan_keeps_as_much_as_its_results_take(monkeypatch):
    """At load, the plan calls keep_freed with the bytes of every step's results."""
    asked: list[int] = []
    monkeypatch.setattr(memory, "keep_freed", asked.append)
    graph, constants = vgf_graph(fixtures.model("interpreter_fuse_f32"))
    plan = FastPlan(graph, constants)
    total = sum(t.size * t.dtype.itemsize for step in plan._steps for t in step.types)
    assert asked == [total] and total > 0


@pytest.mark.parametrize("dtype", ["float32", "int8", "int32", "float64"])
def test_aligned_copies_start_on_a_cache_line(dtype):
    """memory.aligned: the same values, shape and type, C-contiguous, from a line boundary,
    whatever the source's layout (a transposed view, as a convolution's weight matrix is)."""
    import numpy as np

    source = np.arange(7 * 13, dtype=dtype).reshape(13, 7).T
    for _ in range(8):  # numpy's own arrays start anywhere on 16 bytes
        copy = memory.aligned(source)
        assert copy.ctypes.data % memory.LINE == 0
        assert copy.flags.c_contiguous and copy.dtype == source.dtype
        np.testing.assert_array_equal(copy, source)


def test_the_depthwise_and_1x1_forms_read_weights_on_cache_lines():
    """The weights the compiled loops read in 512-bit vectors (a depthwise layer's tiled taps,
    a 1x1 convolution's matrix) start on a cache line, read-only as the constants they come
    from (a GEMM splits its columns over the threads only for an immutable weight)."""
    import numpy as np

    from pyvgf.fast import conv
    from pyvgf.types import immutable

    rng = np.random.default_rng(3)
    zero = np.zeros(1, np.float32)
    form = conv.DepthwiseConv(
        (1, 8, 8, 16),
        dict(weight=rng.standard_normal((3, 3, 48, 1)).astype(np.float32),
             bias=rng.standard_normal(48).astype(np.float32), input_zp=zero, weight_zp=zero,
             pad=np.array([1, 1, 1, 1]), stride=np.array([1, 1]), dilation=np.array([1, 1])),
        (0.0, 6.0, False),
        dict(weight=rng.standard_normal((24, 1, 1, 48)).astype(np.float32),
             bias=rng.standard_normal(24).astype(np.float32), input_zp=zero, weight_zp=zero,
             pad=np.zeros(4, np.int64), stride=np.array([1, 1]), dilation=np.array([1, 1])),
        (-np.inf, np.inf, False),
        (dict(weight=rng.standard_normal((48, 1, 1, 16)).astype(np.float32),
              bias=rng.standard_normal(48).astype(np.float32), input_zp=zero, weight_zp=zero,
              pad=np.zeros(4, np.int64), stride=np.array([1, 1]), dilation=np.array([1, 1])),
         (0.0, 6.0, False)))
    for weights in (form.window[1], form.matrix, form.expand[0]):
        assert weights.ctypes.data % memory.LINE == 0
        assert immutable(weights)
