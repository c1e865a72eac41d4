"""Where pyvgf cpu spends a model's run: time per TOSA operator, from cProfile.

    python tools/bench/profile_ops.py mobilenet_v2_fp32 [--runs 5] [--threads 1] [--models-dir DIR]

Prints, for each TOSA operator, the time inside its implementation per run (cProfile's
cumulative time of the registered function, so profiler overhead included) and its share,
then the interpreter's own time around them.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="BLAS threads (0: numpy's default)")
    p.add_argument("--models-dir", type=Path)
    args = p.parse_args(argv)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root), str(root / "tools"), str(root / "tools" / "bench")]
    import pyvgf
    from pyvgf.tosa import OPS
    from suite import build, load_exported

    model = load_exported(args.model, args.models_dir) if args.models_dir else build(args.model)
    with pyvgf.load(model.vgf) as m:
        m.run(model.inputs)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.runs):
            m.run(model.inputs)
        profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    by_code = {(fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__name__): name
               for name, op in OPS.items() for fn in [op.fn]}
    rows, total = [], 0.0
    for key, (_, calls, _, cumtime, _) in stats.items():
        if key in by_code:
            rows.append((cumtime / args.runs, calls // args.runs, by_code[key]))
        if key[2] == "run" and key[0].endswith("interpreter.py"):
            total = cumtime / args.runs
    rows.sort(reverse=True)
    print(f"{model.name}: interpreter run {total * 1e3:.1f} ms per run (under cProfile)")
    for seconds, calls, name in rows:
        print(f"  {name:20s} {seconds * 1e3:8.2f} ms  {100 * seconds / total:5.1f}%  x{calls}")
    rest = total - sum(r[0] for r in rows)
    print(f"  {'(interpreter)':20s} {rest * 1e3:8.2f} ms  {100 * rest / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
