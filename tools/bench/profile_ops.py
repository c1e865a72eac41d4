"""Where pyvgf cpu spends a model's run: wall time per planned step, by operator.

    python tools/bench/profile_ops.py mobilenet_v2_fp32 [--runs 20] [--threads 1] [--models-dir DIR]

Every registered operator function is wrapped in a timer before the model is planned, so each
step of the plan is timed as it runs. A step with fused band-wise ops (see
pyvgf/tosa/interpreter.py) is listed as its chain, e.g. "CONV2D + CLAMP": their time is one.
Prints, per operator or chain, the time per run, its share and the steps per run, then the
interpreter's own time around them (the run's wall time less the steps').
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path


def _timed(name: str, fn: Callable[..., object], spent: defaultdict[str, float],
           steps: Counter[str], depth: list[int], epilogue: object = None,
           by_shape: bool = False) -> Callable[..., object]:
    """fn timed under its op's name, and the names of the ops fused into it (its `epilogue`
    operand, or the one its plan-time form was made with); with `by_shape`, and the shape of
    its `input` operand."""
    @functools.wraps(fn)
    def step(**kwargs: object) -> object:
        if depth[0]:  # an op called by another (a fused epilogue's generic form)
            return fn(**kwargs)
        fused = getattr(kwargs.get("epilogue", epilogue), "ops", ())
        label = " + ".join((name, *fused))
        if by_shape and hasattr(kwargs.get("input"), "shape"):
            label += " " + "x".join(map(str, kwargs["input"].shape))  # type: ignore[union-attr]
        depth[0] += 1
        start = time.perf_counter()
        try:
            return fn(**kwargs)
        finally:
            spent[label] += time.perf_counter() - start
            steps[label] += 1
            depth[0] -= 1

    return step


def _prepared_timed(name: str, prepare: Callable[..., object], spent: defaultdict[str, float],
                    steps: Counter[str], depth: list[int], by_shape: bool) -> Callable[..., object]:
    def timed_prepare(**operands: object) -> object:
        made = prepare(**operands)
        return None if made is None else _timed(name, made, spent, steps, depth,  # type: ignore[arg-type]
                                               operands.get("epilogue"), by_shape)
    return timed_prepare


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--threads", type=int, default=0, help="BLAS and numba threads (0: their defaults)")
    p.add_argument("--models-dir", type=Path)
    p.add_argument("--by-shape", action="store_true",
                   help="list steps by their input's shape too, not only by operator")
    args = p.parse_args(argv)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root), str(root / "tools"), str(root / "tools" / "bench")]
    from suite import build, load_exported

    import pyvgf
    from pyvgf import fast
    from pyvgf.tosa import OPS

    spent: defaultdict[str, float] = defaultdict(float)
    steps: Counter[str] = Counter()
    depth = [0]
    for name, opdef in OPS.items():  # the reference's functions
        opdef.fn = _timed(name, opdef.fn, spent, steps, depth, by_shape=args.by_shape)
    if fast.available():  # and the fast executor's, which the cpu backend runs
        import pyvgf.fast.plan  # noqa: F401  (registers the fast forms)
        from pyvgf.fast.registry import FAST

        for name, extra in FAST.items():
            if extra.fn is not None:
                extra.fn = _timed(name, extra.fn, spent, steps, depth, by_shape=args.by_shape)
            if extra.prepare is not None:  # a step's plan-time form, timed as the op
                extra.prepare = _prepared_timed(name, extra.prepare, spent, steps, depth,
                                                args.by_shape)
    model = load_exported(args.model, args.models_dir) if args.models_dir else build(args.model)
    with pyvgf.load(model.vgf) as m:
        m.run(model.inputs)
        spent.clear()
        steps.clear()
        start = time.perf_counter()
        for _ in range(args.runs):
            m.run(model.inputs)
        total = (time.perf_counter() - start) / args.runs
    print(f"{model.name}: Model.run {total * 1e3:.2f} ms per run, mean of {args.runs}")
    width = max([34, *map(len, spent)])
    for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        per_run = seconds / args.runs
        print(f"  {label:{width}s} {per_run * 1e3:8.2f} ms  {100 * per_run / total:5.1f}%  "
              f"x{steps[label] // args.runs}")
    rest = total - sum(spent.values()) / args.runs
    print(f"  {'(interpreter and runtime)':{width}s} {rest * 1e3:8.2f} ms  {100 * rest / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
