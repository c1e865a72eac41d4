"""Benchmark the vulkan backend: load (plan + pipelines), first run and steady runs of a model,
beside the cpu backend on the same inputs (and whether both give the same outputs); or, with
--split, where the time of one Model.run goes on the one-op model (tests/models/add_f32.mlir).

    python tools/bench_vulkan.py [VGF ...] [--repeat N] [--no-cpu]
    # default: the real models in tests/fixtures/real
    python tools/bench_vulkan.py --split [--runs N]

Prints the device pyvgf uses, then per model the wall times in ms. --split prints, as median
and min over N runs (after a warm-up), the wall time of Model.run; then, from a second series
with timers around the backend's three driver calls, the time blocked in vkWaitForFences (the
device's work and the wake-up), in vkQueueSubmit + vkResetFences, and the rest: pyvgf's own
host work (Python, input checks, numpy copies in and out). The timers themselves add about a
microsecond to the second series' wall and rest. A third series replaces those three calls with
no-ops: pyvgf's host work alone, free of the driver's noise (its outputs are not computed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import fixtures  # noqa: E402  (tools/fixtures.py)
import pyvgf  # noqa: E402
from pyvgf import hal  # noqa: E402


def real_models() -> list[Path]:
    return sorted(fixtures.REAL.glob("*.vgf"))


def random_inputs(model: pyvgf.Model, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for info in model.inputs:
        if info.dtype.kind in "iu":
            lo, hi = (-128, 128) if info.dtype.itemsize == 1 else (-1000, 1000)
            out.append(rng.integers(lo, hi, info.shape).astype(info.dtype))
        elif info.dtype == np.bool_:
            out.append(rng.integers(0, 2, info.shape).astype(np.bool_))
        else:
            out.append(rng.standard_normal(info.shape).astype(info.dtype))
    return out


def _difference(a: np.ndarray, b: np.ndarray) -> str:
    """'equal', or the largest absolute difference (floating outputs may differ in rounding)."""
    if np.array_equal(a, b):
        return "equal"
    return f"max |diff| {np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))):.3g}"


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1e3, result


def bench(path: Path, repeat: int, with_cpu: bool) -> str:
    load_ms, model = timed(lambda: pyvgf.load(path, backend="vulkan"))
    with model:
        inputs = random_inputs(model, np.random.default_rng(0))
        first_ms, outputs = timed(lambda: model.run(inputs))
        steady = min(timed(lambda: model.run(inputs))[0] for _ in range(repeat))
    line = f"{path.name}: load {load_ms:.0f} ms, first run {first_ms:.1f} ms, best of {repeat} runs {steady:.1f} ms"
    if with_cpu:
        with pyvgf.load(path) as cpu:
            cpu_ms = min(timed(lambda: cpu.run(inputs))[0] for _ in range(max(1, repeat // 4)))
            diffs = [_difference(a, b) for a, b in zip(outputs, cpu.run(inputs))]
        line += f"; cpu backend {cpu_ms:.1f} ms; outputs vs cpu: {', '.join(diffs)}"
    return line


@contextmanager
def driver_timers():
    """Accumulate, in ns, the time spent in the vulkan backend's fence wait ("wait") and in its
    submission and fence reset ("driver") while the block runs."""
    from pyvgf.hal.vulkan import commands

    spent = {"wait": 0, "driver": 0}
    originals = {"submit": commands.submit, "wait_for": commands.Fence.wait_for, "reset": commands.Fence.reset}

    def timer(fn, key):
        def timed_call(*args, **kwargs):
            start = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter_ns() - start
        return timed_call

    commands.submit = timer(originals["submit"], "driver")
    commands.Fence.wait_for = timer(originals["wait_for"], "wait")
    commands.Fence.reset = timer(originals["reset"], "driver")
    try:
        yield spent
    finally:
        commands.submit = originals["submit"]
        commands.Fence.wait_for = originals["wait_for"]
        commands.Fence.reset = originals["reset"]


@contextmanager
def driver_stubbed():
    """The vulkan backend's submission, fence wait and fence reset do nothing while the block runs."""
    from pyvgf.hal.vulkan import commands

    originals = (commands.submit, commands.Fence.wait_for, commands.Fence.reset)
    commands.submit = lambda *args: None
    commands.Fence.wait_for = lambda fence, timeout_s=None: True
    commands.Fence.reset = lambda fence: None
    try:
        yield
    finally:
        commands.submit, commands.Fence.wait_for, commands.Fence.reset = originals


def _us(samples: list[int]) -> str:
    return f"median {statistics.median(samples) / 1e3:7.1f} us, min {min(samples) / 1e3:6.1f} us"


def split(runs: int) -> str:
    """The per-run time split of Model.run on the one-op model (see the module docstring)."""
    clock = time.perf_counter_ns
    with pyvgf.load(fixtures.model("add_f32"), backend="vulkan") as model:
        inputs = random_inputs(model, np.random.default_rng(0))
        for _ in range(max(100, runs // 10)):
            model.run(inputs)
        wall = []
        for _ in range(runs):
            start = clock()
            model.run(inputs)
            wall.append(clock() - start)
        parts: dict[str, list[int]] = {"wall": [], "wait": [], "driver": [], "rest": []}
        with driver_timers() as spent:
            for _ in range(runs):
                before = dict(spent)
                start = clock()
                model.run(inputs)
                total = clock() - start
                wait, driver = spent["wait"] - before["wait"], spent["driver"] - before["driver"]
                for key, value in (("wall", total), ("wait", wait), ("driver", driver),
                                   ("rest", total - wait - driver)):
                    parts[key].append(value)
        host = []
        with driver_stubbed():
            for _ in range(runs):
                start = clock()
                model.run(inputs)
                host.append(clock() - start)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join([
        f"one-op Model.run on vulkan, {runs} runs each series, load average {load}",
        f"  wall per run                        {_us(wall)}",
        "  with timers:",
        f"    wall per run                      {_us(parts['wall'])}",
        f"    blocked in vkWaitForFences        {_us(parts['wait'])}",
        f"    in vkQueueSubmit + vkResetFences  {_us(parts['driver'])}",
        f"    rest: pyvgf host work             {_us(parts['rest'])}",
        f"  host work alone (driver stubbed)    {_us(host)}",
    ])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-cpu", action="store_true", help="skip the cpu backend comparison")
    parser.add_argument("--split", action="store_true", help="the per-run time split on the one-op model")
    parser.add_argument("--runs", type=int, default=5000, help="runs per series with --split")
    args = parser.parse_args(argv)
    adapter = hal.request_adapter("vulkan")
    mode = "emulated" if adapter.uses_emulation else "native"
    print(f"device: {adapter.info.name} ({adapter.info.driver}), ARM ML extensions {mode}")
    adapter.destroy()
    if args.split:
        print(split(args.runs))
        return 0
    for path in args.models or real_models():
        print(bench(path, args.repeat, not args.no_cpu), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
