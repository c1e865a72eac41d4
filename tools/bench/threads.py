"""pyvgf cpu by thread count: each model's median run at each count, checkouts alternating.

    python tools/bench/threads.py --models-dir DIR [--models M ...] [--threads 16 8 4 2 1]
                                  [--runs 30] [--rounds 2] [--pyvgf DIR ...] [--json FILE]

DIR holds the models as `suite.py --export DIR` writes them. Each round runs, for each checkout
given by --pyvgf (default: this one) in turn, one process importing that checkout's pyvgf; it
runs every model at each thread count (`load(..., threads=N)`) until its loops are compiled
(suite.compiled), then three warm-up runs and --runs timed ones. Prints each checkout's
median per model and count over the rounds, and the ratio of each checkout to the first: where
a many-core host stops gaining (issue #23), and what a change to the split did there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

_CHILD = r"""
import json, sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[1]]
import suite
import pyvgf
folder, runs, counts, names = Path(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5:]
found = {}
for name in names:
    model = suite.load_exported(name, folder)
    for count in counts:
        m = pyvgf.load(model.vgf, threads=count)
        run = lambda: m.run(model.inputs)
        run()
        suite.compiled(run)  # one thread runs loops of its own
        for _ in range(3):
            run()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            m.run(model.inputs)
            times.append(time.perf_counter() - start)
        found[f"{name} {count}"] = times
print(json.dumps(found))
"""


def sweep(root: Path, folder: Path, models: list[str], counts: list[int], runs: int) -> dict:
    """One process of checkout `root`: {"model count": [seconds of each run]}."""
    from suite import child_json

    return child_json(_CHILD, [HERE, folder, runs, json.dumps(counts), *models], f"the sweep of {root}", root)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models-dir", type=Path, required=True, metavar="DIR")
    p.add_argument("--models", nargs="+", default=["mobilenet_v2_fp32", "mobilenet_v2_int8", "transformer_fp32"])
    p.add_argument("--threads", nargs="+", type=int, default=[16, 8, 4, 2, 1])
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--pyvgf", nargs="+", type=Path, default=[ROOT], metavar="DIR",
                   help="checkouts whose pyvgf to time, in turn (default: this one)")
    p.add_argument("--json", type=Path, metavar="FILE")
    args = p.parse_args(argv)
    sys.path[:0] = [str(HERE)]
    samples: dict[str, dict[str, list[float]]] = {str(r): {} for r in args.pyvgf}
    for _ in range(args.rounds):
        for root in args.pyvgf:
            for key, times in sweep(root, args.models_dir, args.models, args.threads, args.runs).items():
                samples[str(root)].setdefault(key, []).extend(times)
    medians = {root: {k: statistics.median(v) * 1e3 for k, v in found.items()} for root, found in samples.items()}
    first = medians[str(args.pyvgf[0])]
    print("model threads " + " ".join(f"{Path(r).name or r}[ms]" for r in medians) + "  ratios to the first")
    for key in first:
        row = [medians[r][key] for r in medians]
        print(f"{key} " + " ".join(f"{v:.2f}" for v in row) + "  " + " ".join(f"{v / row[0]:.2f}" for v in row[1:]))
    if args.json:
        args.json.write_text(json.dumps({"command": sys.argv, "medians_ms": medians, "samples_s": samples}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
