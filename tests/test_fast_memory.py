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
