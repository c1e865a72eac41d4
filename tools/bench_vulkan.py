"""Benchmark the vulkan backend: load (plan + pipelines), first run and steady runs of a model,
beside the cpu backend on the same inputs (and whether both give the same outputs).

    python tools/bench_vulkan.py [VGF ...] [--repeat N] [--no-cpu]
    # default: the real models in shared/fixtures/real

Prints the device pyvgf uses, then per model the wall times in ms.
"""

from __future__ import annotations

import argparse
import sys
import time
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-cpu", action="store_true", help="skip the cpu backend comparison")
    args = parser.parse_args(argv)
    adapter = hal.request_adapter("vulkan")
    mode = "emulated" if adapter.uses_emulation else "native"
    print(f"device: {adapter.info.name} ({adapter.info.driver}), ARM ML extensions {mode}")
    adapter.destroy()
    for path in args.models or real_models():
        print(bench(path, args.repeat, not args.no_cpu), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
