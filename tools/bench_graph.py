"""Benchmark the SPIR-V graph path: decode_graph, GraphPlan (checks + folding) and GraphPlan.run.

    python tools/bench_graph.py [VGF ...]     # default: the real models in tests/fixtures/real

Prints, per model, the best of --repeat wall-clock and CPU times of each stage, in ms.
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
from pyvgf.fast.plan import FastPlan as GraphPlan  # noqa: E402  (the cpu backend's)
from pyvgf.format import read  # noqa: E402
from pyvgf.spirv import decode_graph  # noqa: E402


def real_models() -> list[Path]:
    return sorted(fixtures.REAL.glob("*.vgf"))


def best(fn, repeat: int) -> tuple[float, float, object]:
    """(best wall ms, best CPU ms, last result) of `repeat` calls."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls) * 1e3, min(cpus) * 1e3, out


def bench(path: Path, repeat: int) -> None:
    vgf = read(path)
    (segment,) = [s for s in vgf.sequence.segments if s.type == 1]
    module = vgf.modules[segment.module_index]
    constants = {b.graph_constant_id: vgf.constant_array(b.constant_table_index) for b in segment.graph_constants()}
    dw, dc, graph = best(lambda: decode_graph(module.code, module.entry_point), repeat)
    pw, pc, plan = best(lambda: GraphPlan(graph, constants), repeat)
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-100, 100, p.type.shape).astype(p.type.dtype) for p in graph.inputs]
    rw, rc, _ = best(lambda: plan.run(inputs), repeat)
    print(
        f"{path.name:28} {len(module.code):7} words {len(graph.nodes):4} nodes | "
        f"decode {dw:7.1f} ms ({dc:7.1f} cpu) | plan {pw:7.1f} ms ({pc:7.1f} cpu) | "
        f"run {rw:7.1f} ms ({rc:7.1f} cpu)"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vgf", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    for path in args.vgf or real_models():
        bench(path, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
