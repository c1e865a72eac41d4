"""How decoding and planning grow with the module: hostile sizes, timed at N and 2N in one run.

    python tools/bench/scaling.py [--repeat 3] [--json out.json]

Cases (issue 15's targets on the project machine, 2 cores):
    chain-plan     decode_graph + GraphPlan of a chain of 20,000 ADDs            < 2 s
    nop-decode     spirv.decode of 1,000,000 OpNop                                < 1 s
    name-decode    spirv.decode of 100,000 OpName                                 < 1 s
    null-decode    decode_graph with an unused OpConstantNull of 2^30 int8       (lazy: no GiB made)
Each case is also timed at half its size: "x2 ratio" = CPU time(N) / CPU time(N/2) is about 2
where the work is linear (4 where it is quadratic), whatever the machine's speed. Prints the
best of --repeat wall and CPU seconds per case.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pyvgf.build import Graph  # noqa: E402
from pyvgf.spirv import decode, decode_graph  # noqa: E402
from pyvgf.tosa.interpreter import GraphPlan  # noqa: E402

HEADER = [0x07230203, 0x00010600, 0, 2, 0]


def chain(n: int) -> np.ndarray:
    g = Graph()
    x = y = g.input("float32", (1, 4))
    for _ in range(n):
        y = g.op("ADD", input1=y, input2=x)
    g.output(y)
    return g.to_spirv()


def nops(n: int) -> np.ndarray:
    return np.array(HEADER + [1 << 16] * n, dtype=np.uint32)


def names(n: int) -> np.ndarray:
    return np.array(HEADER + [(3 << 16) | 5, 1, 0x00616161] * n, dtype=np.uint32)


def null_module(n: int) -> np.ndarray:
    """A one-ADD graph with an unused OpConstantNull of n x 2^15 int8 elements."""
    g = Graph()
    a = g.input("float32", (1, 4))
    g.output(g.op("ADD", input1=a, input2=a))
    words = [int(w) for w in g.to_spirv()]
    first = words[3]
    i32, i8, arr, rank, d0, d1, shape, tensor, null = range(first, first + 9)
    extra = [(4 << 16) | 21, i32, 32, 0, (4 << 16) | 21, i8, 8, 0, (4 << 16) | 43, i32, rank, 2,
             (4 << 16) | 28, arr, i32, rank, (4 << 16) | 43, i32, d0, n, (4 << 16) | 43, i32, d1, 1 << 15,
             (5 << 16) | 44, arr, shape, d0, d1, (5 << 16) | 4163, tensor, i8, rank, shape,
             (3 << 16) | 46, tensor, null]
    pos = 5
    while words[pos] & 0xFFFF != 4182:  # before OpGraphEntryPointARM
        pos += words[pos] >> 16
    words[3] = first + 9
    return np.array(words[:pos] + extra + words[pos:], dtype=np.uint32)


CASES = {
    "chain-plan": (20_000, chain, lambda w: GraphPlan(decode_graph(w), {})),
    "nop-decode": (1_000_000, nops, decode),
    "name-decode": (100_000, names, decode),
    "null-decode": (1 << 15, null_module, decode_graph),
}


def best(fn, words: np.ndarray, repeat: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) of `repeat` calls (CPU time: what a machine shared
    with other work still measures)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn(words)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    rows = {}
    print(f"{'case':14} {'N':>10} {'wall s':>9} {'CPU s':>9} {'N/2 CPU s':>10} {'x2 ratio':>9}")
    for name, (n, make, fn) in CASES.items():
        full, full_cpu = best(fn, make(n), args.repeat)
        _, half_cpu = best(fn, make(n // 2), args.repeat)
        ratio = full_cpu / max(half_cpu, 1e-6)
        rows[name] = {"n": n, "seconds": full, "cpu_seconds": full_cpu, "half_cpu_seconds": half_cpu, "ratio": ratio}
        print(f"{name:14} {n:>10} {full:>9.3f} {full_cpu:>9.3f} {half_cpu:>10.3f} {ratio:>9.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
