"""A machine's first runs (numba's cache empty) of the fast executor: the steps whose loops are
not compiled yet run the reference while a compiler process fills the cache
(pyvgf/fast/background.py), with the results the compiled loops give (integers bit-exact)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fixtures  # tools/fixtures.py
from pyvgf.testing.compare import tolerance

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]

_COLD = r"""
import json, sys
import numpy as np
from support.spirv import random_input, vgf_graph
from pyvgf.fast import background
from pyvgf.fast.plan import FastPlan
from pyvgf.tosa.interpreter import GraphPlan

out, figures, arrays = sys.argv[1], {}, {}
for name in sys.argv[2:]:
    graph, constants = vgf_graph(name)
    inputs = [random_input(p.type, np.random.default_rng(5)) for p in graph.inputs]
    arrays[f"{name}:reference"] = GraphPlan(graph, constants).run(inputs)[0]
    for threads in (1, 2):
        plan = FastPlan(graph, constants, threads=threads)
        arrays[f"{name}:{threads}:first"] = plan.run(inputs)[0]
        figures[f"{name}:{threads}:first"] = plan.interim_steps
        figures[f"{name}:{threads}:busy"] = background.busy()
        for _ in range(3):  # a step calling two loops meets the second once the first is in
            background.wait()
            arrays[f"{name}:{threads}:compiled"] = plan.run(inputs)[0]
            if not background.busy():
                break
        figures[f"{name}:{threads}:compiled"] = plan.interim_steps
        figures[f"{name}:{threads}:busy after"] = background.busy()
        arrays[f"{name}:{threads}:again"] = plan.run(inputs)[0]
        figures[f"{name}:{threads}:again"] = plan.interim_steps
np.savez(out, **arrays)
print(json.dumps(figures))
"""


def _process(code: str, cache: Path, *args: str) -> str:
    """stdout of `code` run by a fresh Python with numba's cache at `cache`."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(ROOT / "tools")])}
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name", ["interpreter_fuse_i8", "interpreter_fuse_f32"])
def test_a_cold_cache_runs_the_reference_until_the_loops_are_compiled(name, tmp_path):
    """The first run, with numba's cache empty, does not wait for the compiler: its fused
    steps run the reference and a compiler process fills the cache; once it is done, every
    step runs the compiled loops, on one thread or two, giving the same results (integers
    bit-exact, floats within pyvgf.testing's tolerance)."""
    model = str(fixtures.model(name))
    figures = json.loads(_process(_COLD, tmp_path / "cache", str(tmp_path / "out.npz"), model))
    with np.load(tmp_path / "out.npz") as data:
        results = {key.split(":", 1)[1]: data[key] for key in data.files}
    first = f"{model}:1:first"
    assert figures[first] > 0 and figures[f"{model}:1:busy"]  # it found every loop missing
    for threads in (1, 2):
        key = f"{model}:{threads}"
        assert not figures[f"{key}:busy after"]
        assert figures[f"{key}:again"] == figures[f"{key}:compiled"]  # no step ran the reference
    reference = results["reference"]
    rtol = tolerance(reference.dtype)
    for run in ("1:first", "1:compiled", "1:again", "2:first", "2:compiled", "2:again"):
        if rtol:
            np.testing.assert_allclose(results[run], reference, rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(results[run], reference)


_ONE_RUN = r"""
import sys
import numpy as np
from support.spirv import random_input, vgf_graph
from pyvgf.fast import background
from pyvgf.fast.plan import FastPlan

graph, constants = vgf_graph(sys.argv[1])
plan = FastPlan(graph, constants)
plan.run([random_input(p.type, np.random.default_rng(0)) for p in graph.inputs])
print(plan.interim_steps, background._COMPILER._process.pid if background.busy() else 0)
"""


def test_a_process_ending_leaves_its_loops_compiled_for_the_next(tmp_path):
    """A process that ends right after its first run neither waits for the compiler process
    nor stops it: the compiler finishes, and the next process finds every loop cached."""
    model, cache = str(fixtures.model("interpreter_fuse_i8")), tmp_path / "cache"
    interim, compiler = map(int, _process(_ONE_RUN, cache, model).split())
    assert interim > 0 and compiler > 0
    deadline = time.monotonic() + 600  # a bound on a hang, not a timing
    while _state(compiler) not in ("gone", "Z") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _process(_ONE_RUN, cache, model).split() == ["0", "0"]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
