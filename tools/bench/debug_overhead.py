"""What pyvgf.debug costs: a model's plain cpu run against the same run profiled and captured.

    python tools/bench/debug_overhead.py MODEL.vgf [--runs 30] [--rounds 5] [--seed 0]
    python tools/bench/debug_overhead.py --chain 200 ...   # 200 ADDs on 1x4 floats: all overhead

Prints the median wall time of a plain `Model.run`, of a run under `pyvgf.debug.profile` (every
step timed) and of one under `pyvgf.debug.capture` (every result copied, unfused plan), each
median taken over --runs runs spread over --rounds rounds that take the three in turn (so a
machine whose speed drifts slows all three alike), and the ratios to the plain run; with
--chain N, on a model of N tiny ADDs, whose run is nearly all per-step overhead, also the cost
per step. Run it with PYTHONPATH at two source trees (one without the observer hook) for the A/B
of the plain run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", type=Path, nargs="?")
    p.add_argument("--chain", type=int, metavar="N", help="time a model of N chained ADDs instead")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plain-only", action="store_true", help="time the plain run only (for a tree without debug)")
    args = p.parse_args(argv)
    import numpy as np
    from suite import compiled

    import pyvgf
    from pyvgf.cli import random_input

    if args.chain:
        from pyvgf.build import Graph

        g = Graph()
        x = value = g.input("float32", (1, 4))
        for _ in range(args.chain):
            value = g.op("ADD", input1=value, input2=x)
        g.output(value)
        model = pyvgf.load(g.to_bytes())
        name = f"{args.chain} chained ADDs"
    elif args.model:
        model = pyvgf.load(args.model)
        name = args.model.name
    else:
        p.error("give a MODEL or --chain N")
    rng = np.random.default_rng(args.seed)
    inputs = [random_input(i, rng) for i in model.inputs]
    def timed(fn) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    kinds = {"plain": lambda: timed(lambda: model.run(inputs))}
    if not args.plain_only:
        from pyvgf import debug
        from pyvgf.debug.profile import _CpuTimer
        from pyvgf.debug.watch import watching

        def profiled() -> None:  # a run as profile() times it, without its untimed first run
            with watching(_CpuTimer(model)):
                model.run(inputs)

        kinds["profile"] = lambda: timed(profiled)
        kinds["capture"] = lambda: timed(lambda: debug.capture(model, inputs))
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for fn in kinds.values():
        fn()  # warm: one-time work out of the figures
    compiled(lambda: model.run(inputs))
    per_round = max(1, args.runs // args.rounds)
    for _ in range(args.rounds):
        for kind, fn in kinds.items():
            for _ in range(per_round):
                times[kind].append(fn())
    plain = statistics.median(times["plain"])
    print(f"{name}: {len(times['plain'])} runs each, pyvgf at {Path(pyvgf.__file__).parent}")
    for kind, spent in times.items():
        median = statistics.median(spent)
        note = "" if kind == "plain" else f"  x{median / plain:.3f} of plain"
        if kind != "plain" and args.chain:
            note += f", {(median - plain) / args.chain * 1e6:+.2f} us per step"
        print(f"  {kind:<8} median {median * 1e3:9.3f} ms{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
