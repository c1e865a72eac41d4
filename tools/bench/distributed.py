"""Dataset evaluation on Ray (pyvgf.distributed.evaluate) against a plain single-process loop.

    python tools/bench/distributed.py [--models add_one_op mobilenet_v2_int8] [--rows N]
                                      [--workers 1 2] [--rounds 2] [--batch-size 8] [--campaign 200]
                                      [--json FILE]

Per model, in one run on one machine (each executor in turn every round, so all see the same
stretches of a machine whose speed drifts):
    loop, 1 thread   pyvgf.load(vgf).run(row) for every row in a fresh process whose numba, BLAS
                     and OpenMP have one thread each (as a Ray worker with its one CPU has)
    loop, N threads  the same with every library's default threads (what one process gets)
    ray, W workers   evaluate(vgf, rows, workers=W) on a local Ray instance of os.cpu_count() CPUs

Each executor runs every row once a round. For the loops the rate is rows / time (the model
loaded before the clock starts); for Ray, evaluate's own figures: the start-up (until the first
results come back: actors start and load the model) and the steady rate after it. "ray no-op"
is evaluate with a backend that returns at once: the per-row cost of Ray Data itself (driver
ingest, scheduling, results back), which bounds what any number of machines can give one
driver. The last lines turn these into an estimate for N machines. --campaign N times a
campaign (cases/s) of single-operator cases against drawing and checking the same chunks in
this process.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["add_one_op", "mobilenet_v2_int8"]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="*", default=MODELS, choices=MODELS, help="(none: only the campaign)")
    p.add_argument("--rows", type=int, nargs="+", default=None,
                   help="rows per model, in --models order (default: 2000 for add_one_op, 160 for MobileNetV2)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8, help="evaluate's batch_size (rows per Ray Data batch)")
    p.add_argument("--campaign", type=int, default=200, metavar="N",
                   help="also time a campaign of N cases against the same chunks in one process (0: skip)")
    p.add_argument("--json", type=Path)
    return p.parse_args(argv)


def _rows(vgf: Path, count: int) -> list[list]:
    import numpy as np

    import pyvgf

    rng = np.random.default_rng(0)
    infos = pyvgf.load(vgf).inputs
    out = []
    for _ in range(count):
        row = []
        for info in infos:
            if np.issubdtype(info.dtype, np.integer):
                limits = np.iinfo(info.dtype)
                row.append(rng.integers(limits.min, limits.max, info.shape, endpoint=True).astype(info.dtype))
            else:
                row.append(rng.standard_normal(info.shape).astype(info.dtype))
        out.append(row)
    return out


def _loop(vgf: Path, rows_file: Path, threads: int | None) -> dict:
    """The plain loop, in a fresh process: with `threads`, numba, BLAS and OpenMP get that many
    threads (as a Ray worker with that many CPUs does); None leaves every library's default."""
    env = dict(os.environ)
    if threads is not None:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            env[var] = str(threads)
    done = subprocess.run([sys.executable, __file__, "--loop-child", str(vgf), str(rows_file)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"the loop process failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def _loop_child(vgf: str, rows_file: str) -> None:
    import numpy as np

    import pyvgf

    with np.load(rows_file) as data:
        width = int(data["width"])
        rows = [[data[f"{r}_{i}"] for i in range(width)] for r in range((len(data.files) - 1) // width)]
    model = pyvgf.load(vgf)
    model.run(rows[0])
    start = time.perf_counter()
    for row in rows:
        model.run(row)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "start_s": 0.0, "rows_per_s": len(rows) / seconds}))


def noop(model: bytes, inputs: list) -> list:
    """A backend that does nothing: Ray Data's own cost per row."""
    return [inputs[0][:1]]


def _ray(vgf: Path, rows: list[list], workers: int, backend: object, batch_size: int) -> dict:
    from pyvgf.distributed import evaluate

    start = time.perf_counter()
    summary = evaluate(vgf, rows, backend=backend, workers=workers, batch_size=batch_size)
    assert summary["rows"] == len(rows)
    return {"seconds": time.perf_counter() - start, "start_s": summary["start_seconds"],
            "rows_per_s": summary["steady_rows_per_second"]}


def _campaigns(n: int, workers: list[int], tmp: Path) -> dict[str, float]:
    """Cases/s of a campaign of `n` single-operator cases (every family), cpu against cpu: the
    same chunks drawn and checked in this process, then by `campaign` over Ray tasks."""
    import numba
    from threadpoolctl import threadpool_limits

    from pyvgf.distributed import CHUNK, _chunk, campaign
    from pyvgf.testing import ops

    strategy = ops()
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    with threadpool_limits(1):      # one thread of each library, as a Ray worker has
        start = time.perf_counter()
        done = sum(_chunk(strategy, ["cpu", "cpu"], 0, c, min(CHUNK, n - c * CHUNK), n)["cases"]
                   for c in range(-(-n // CHUNK)))
        rates = {"loop, 1 thread": done / (time.perf_counter() - start)}
    numba.set_num_threads(threads)
    for w in workers:
        start = time.perf_counter()
        summary = campaign(strategy, ["cpu", "cpu"], n=n, workers=w, out_dir=tmp / f"campaign{w}", progress=False)
        rates[f"ray, {w} worker{'s' * (w > 1)}"] = summary["cases"] / (time.perf_counter() - start)
    print(f"campaign: {n} cases of ops(), cpu against cpu")
    for label, rate in rates.items():
        print(f"  {label:24s} {rate:8.1f} cases/s")
    return rates


def main(argv: list[str] | None = None) -> int:
    sys.path[:0] = [str(ROOT), str(ROOT / "tools"), str(ROOT / "tools" / "bench")]
    if argv is None and sys.argv[1:2] == ["--loop-child"]:
        _loop_child(*sys.argv[2:4])
        return 0
    args = _parse(argv)
    import numpy as np
    import ray
    from suite import build

    cores = os.cpu_count() or 1
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    defaults = {"add_one_op": 2000, "mobilenet_v2_int8": 160}
    report: dict[str, dict] = {}
    tmp = tempfile.mkdtemp(prefix="pyvgf-bench-ray-")
    for i, name in enumerate(args.models):
        count = args.rows[i] if args.rows else defaults[name]
        vgf = build(name).vgf
        rows = _rows(vgf, count)
        rows_file = Path(tmp) / f"{name}.npz"
        np.savez(rows_file, width=np.array(len(rows[0])),
                 **{f"{r}_{i}": a for r, row in enumerate(rows) for i, a in enumerate(row)})
        executors = {"loop, 1 thread": functools.partial(_loop, vgf, rows_file, 1),
                     f"loop, {cores} threads": functools.partial(_loop, vgf, rows_file, None)}
        for w in args.workers:
            executors[f"ray, {w} worker{'s' * (w > 1)}"] = functools.partial(_ray, vgf, rows, w, "cpu", args.batch_size)
        noop_label = f"ray no-op, {max(args.workers)} workers"
        executors[noop_label] = functools.partial(_ray, vgf, rows, max(args.workers), noop, args.batch_size)
        runs: dict[str, list[dict]] = {k: [] for k in executors}
        print(f"{name}: {count} rows, {args.rounds} rounds", flush=True)
        for _ in range(args.rounds):
            for label, run in executors.items():
                runs[label].append(run())
        table = {label: {key: statistics.median(r[key] for r in rs) for key in ("seconds", "start_s", "rows_per_s")}
                 | {"runs": rs} for label, rs in runs.items()}
        report[name] = {"rows": count, "executors": table}
        print(f"  {'executor':24s} {'wall s':>8s} {'start s':>8s} {'rows/s':>9s} {'ms/row':>8s}")
        for label, r in table.items():
            print(f"  {label:24s} {r['seconds']:8.2f} {r['start_s']:8.2f} {r['rows_per_s']:9.1f} "
                  f"{1e3 / r['rows_per_s']:8.3f}")
        one = 1 / table["loop, 1 thread"]["rows_per_s"]
        for w in args.workers:
            label = f"ray, {w} worker{'s' * (w > 1)}"
            per_row = 1 / table[label]["rows_per_s"]
            print(f"  {label}: {one / per_row:.2f}x the 1-thread loop's rows/s; "
                  f"Ray's overhead {(per_row * w - one) * 1e3:+.3f} ms per row per worker")
        ceiling = table[noop_label]["rows_per_s"]
        print(f"  one driver moves at most ~{ceiling:.0f} rows/s (no-op backend): N machines of c cores "
              f"give ~min(N*c*{1 / one:.1f}, {ceiling:.0f}) rows/s once started; the ceiling is near "
              f"N*c = {ceiling * one:.1f} workers")
    if args.campaign:
        report["campaign"] = _campaigns(args.campaign, args.workers, Path(tmp))
    if args.json:
        args.json.write_text(json.dumps({"cores": cores, "load_average": os.getloadavg(), "models": report}, indent=1))
        print(f"wrote {args.json}")
    ray.shutdown()
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
