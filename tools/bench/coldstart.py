"""A machine's first run after install: MobileNetV2's first result with numba's cache empty.

    python tools/bench/coldstart.py [--models M ...] [--rounds 1] [--runs 10] [--json FILE]
                                    [--pyvgf DIR]    # the pyvgf of another checkout (A/B)
    pyvgf bench coldstart ...                      # the same, from a source checkout
    python tools/bench/coldstart.py --ab [--runs 200] [--rounds 10]

Each round of each model runs two fresh processes on the cpu backend (the fast executor), with
NUMBA_CACHE_DIR at a new empty folder: "cold", as on a machine where pyvgf was just installed,
then "warm", on the same folder once the first and whatever compiling it started are done. Each
times its import, `pyvgf.load(path)` and the first `run()` ("first result": import + load +
first run), then waits for the compiler process (pyvgf.fast.background.wait) and runs, in turn,
until a run asks it for nothing more ("all compiled": the time from the process's start to
that run's end), then times `--runs` more ("steady": their median). "same" says whether the
first result equals that run's (integers bit-exact, floats within 1e-3). Before background
compiling (an older --pyvgf), the first run compiled everything itself.

With --ab, instead: in this process (numba's cache as it is: warm), each model planned with
background compiling and without (pyvgf.fast.set_background_compile), their runs taken in turn
over --rounds rounds of --runs / rounds each: the steady-state cost of the interim steps'
wrapper, as the ratio of the medians.

Models: mobilenet_v2_int8_real (tests/fixtures/real/mobilenet_v2_int8.vgf, a random int8
input) and the benchmark suite's mobilenet_v2_fp32 and mobilenet_v2_int8 (suite.build: made by
model-converter from the torch twin's weights, cached in .cache/fixtures; or from --models-dir
as `suite.py --export DIR` writes them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODELS = ["mobilenet_v2_int8_real", "mobilenet_v2_fp32", "mobilenet_v2_int8"]

_CHILD = r"""
import json, statistics, sys, time
t0 = time.perf_counter()
import numpy as np, pyvgf
t1 = time.perf_counter()
inputs = [np.load(p) for p in sys.argv[3:]]
t2 = time.perf_counter()
model = pyvgf.load(sys.argv[1])
t3 = time.perf_counter()
first = model.run(inputs)
t4 = time.perf_counter()
try:
    from pyvgf.fast.background import busy, wait
except ImportError:  # before the loops were compiled in the background: nothing to wait for
    wait = busy = lambda: False
while True:  # a step calling two loops meets the second once the first is in
    wait()
    again = model.run(inputs)
    if not busy():
        break
t6 = time.perf_counter()
steady = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    model.run(inputs)
    steady.append(time.perf_counter() - start)
same = all(np.array_equal(a, b) if a.dtype.kind in "iub" else np.allclose(a, b, rtol=1e-3, atol=1e-3)
           for a, b in zip(first, again))
print(json.dumps({"import_s": t1 - t0, "load_s": t3 - t2, "first_run_s": t4 - t3,
                  "first_result_s": t1 - t0 + t4 - t2,
                  "all_compiled_s": t1 - t0 + t6 - t2, "steady_s": statistics.median(steady),
                  "same": same}))
"""


def _model(name: str, work: Path, folder: Path | None = None) -> tuple[Path, list[Path]]:
    """The model's VGF and its inputs saved as .npy files in `work` (from `folder` as
    `suite.py --export` writes it, when given)."""
    import numpy as np
    from suite import REAL_INT8, build, load_exported

    model = load_exported(name, folder) if folder and name != REAL_INT8 else build(name)
    vgf, inputs = model.vgf, model.inputs
    paths = []
    for i, x in enumerate(inputs):
        paths.append(work / f"{name}_in{i}.npy")
        np.save(paths[-1], x)
    return vgf, paths


def process(vgf: Path, inputs: list[Path], cache: Path, runs: int, root: Path = ROOT) -> dict:
    """One fresh process on `cache` as numba's cache folder, importing the pyvgf of the
    checkout `root` (see the module doc)."""
    from suite import child_json

    return child_json(_CHILD, [vgf, runs, *inputs], "the cold-start process", root,
                      NUMBA_CACHE_DIR=str(cache))


def _line(kind: str, p: dict) -> str:
    return (f"  {kind:5s} first result {p['first_result_s']:6.2f} s (import {p['import_s']:.2f}, "
            f"load {p['load_s']:.2f}, first run {p['first_run_s']:.2f}); all compiled "
            f"{p['all_compiled_s']:6.2f} s; steady {p['steady_s'] * 1e3:6.1f} ms; same {p['same']}")


def ab(vgf: Path, inputs: list[Path], runs: int, rounds: int) -> tuple[float, float]:
    """Median run time of the model planned with background compiling and without (see the
    module doc), in turn in this process."""
    import time

    import numpy as np

    import pyvgf
    from pyvgf import fast

    arrays = [np.load(p) for p in inputs]
    models = []
    for enabled in (True, False):
        fast.set_background_compile(enabled)
        models.append(pyvgf.load(vgf))
        models[-1].run(arrays)
    fast.set_background_compile(True)
    from pyvgf.fast.background import wait

    wait()  # a compiler process the first run started (cache cold) would share the cores
    times: list[list[float]] = [[], []]
    for _ in range(rounds):
        for model, spent in zip(models, times):
            for _ in range(max(1, runs // rounds)):
                start = time.perf_counter()
                model.run(arrays)
                spent.append(time.perf_counter() - start)
    on, off = (statistics.median(t) for t in times)
    return on, off


def main(argv: list[str] | None = None) -> int:
    sys.path[:0] = [str(ROOT), str(ROOT / "tools"), str(HERE)]
    p = argparse.ArgumentParser(prog="pyvgf bench coldstart", description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=MODELS, choices=MODELS, metavar="NAME",
                   help=f"models (default: all): {', '.join(MODELS)}")
    p.add_argument("--rounds", type=int, default=1, help="cold + warm process pairs per model")
    p.add_argument("--runs", type=int, default=10, help="steady-state runs per process")
    p.add_argument("--json", type=Path, metavar="FILE", help="write every process's figures as JSON")
    p.add_argument("--models-dir", type=Path, metavar="DIR",
                   help="the suite's models from DIR (suite.py --export DIR), not model-converter")
    p.add_argument("--pyvgf", type=Path, default=ROOT, metavar="DIR",
                   help="the checkout whose pyvgf the processes import (default: this one)")
    p.add_argument("--ab", action="store_true",
                   help="in this process: runs with background compiling against runs without")
    args = p.parse_args(argv)
    args.pyvgf = args.pyvgf.resolve()
    args.models_dir = args.models_dir and args.models_dir.resolve()
    if args.ab:
        with tempfile.TemporaryDirectory(prefix="pyvgf-coldstart-") as tmp:
            for name in args.models:
                on, off = ab(*_model(name, Path(tmp), args.models_dir), args.runs, args.rounds)
                print(f"{name}: with background compiling {on * 1e3:.2f} ms, without "
                      f"{off * 1e3:.2f} ms (medians): x{on / off:.3f}; load average "
                      f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
        return 0
    import compileall

    from suite import _provenance

    # As pip leaves an install: the processes time pyvgf, not Python compiling it.
    compileall.compile_dir(args.pyvgf / "pyvgf", quiet=1)
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="pyvgf-coldstart-") as tmp:
        for name in args.models:
            vgf, inputs = _model(name, Path(tmp), args.models_dir)
            print(f"{name}  ({vgf.name})", flush=True)
            for r in range(args.rounds):
                cache = Path(tmp) / f"{name}-cache-{r}"
                cache.mkdir()
                pair = {kind: process(vgf, inputs, cache, args.runs, args.pyvgf)
                        for kind in ("cold", "warm")}
                for kind, figures in pair.items():
                    print(_line(kind, figures), flush=True)
                results.setdefault(name, []).append(pair)
    for name, pairs in results.items():
        cold = statistics.median(p["cold"]["first_result_s"] for p in pairs)
        warm = statistics.median(p["warm"]["first_result_s"] for p in pairs)
        print(f"{name}: first result cold {cold:.2f} s, warm {warm:.2f} s (medians of {len(pairs)}); "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps({"machine": {"cpus": os.cpu_count(),
                                                     "load_average": os.getloadavg()},
                                         "run": _provenance(), "pyvgf": str(args.pyvgf),
                                         "models": results}, indent=1))
        print(f"wrote {args.json}")
    return 0 if all(p[k]["same"] for ps in results.values() for p in ps for k in p) else 1


if __name__ == "__main__":
    sys.exit(main())
