"""Sharing the machine: pyvgf's speed beside other work, and other runtimes' speed beside pyvgf.

    python tools/bench/colocation.py --models-dir DIR [--models NAME ...] [--runs N] [--json F]
    python tools/bench/suite.py --colocation ...    # the same, in the suite's run and its JSON

For each model (NAME.vgf/.npz as `suite.py --export DIR` writes them), in one process, side by
side in one run, each figure the median of --runs timed runs after a warm-up:

    alone           pyvgf's Model.run back to back; each peer's run back to back
    one thread      pyvgf's runs with load(..., threads=1): what it can do on one core, alone
                    and alternating with each peer
    busy neighbour  pyvgf's runs with one CPU-bound process beside it (a Python busy loop)
    with PEER       pyvgf and PEER alternating run by run (a user comparing outputs), each timed:
                    onnxruntime with its default settings and torch eager (where installed)

and the ratios the project holds itself to (issue #16): beside a busy process pyvgf's median
within 3x of its median alone; alternating with a peer, each runtime within 1.5x of its own
speed alone. The modes are interleaved in rounds, as suite.py does, so a VM's drifting speed
falls on all of them alike.

Beside them, what bounds those ratios: each runtime's idle cores, the CPU its process takes in
the IDLE_WINDOW after one of its runs (threads that spin waiting for work hold a core that
long), and the floor of pyvgf's ratio with a peer: pyvgf on one thread alternating with it
against pyvgf alone, the best a pyvgf leaving the peer's spinning thread its core could do.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]

Run = Callable[[], object]

IDLE_WINDOW = 0.05
"""Seconds after a run in which its process's CPU time is taken (idle_cores)."""


def _timed(fn: Run) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def idle_cores(fn: Run) -> float:
    """Cores the process keeps busy in the IDLE_WINDOW after fn() returns (0: its threads
    sleep; 1: one thread spins all the while)."""
    fn()
    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(IDLE_WINDOW)
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


def _peers(model, work: Path) -> dict[str, Run]:
    """The peers installed here, as one forward pass each, with their default thread settings."""
    peers: dict[str, Run] = {}
    if model.torch_net is None:
        return peers
    try:
        from onnx_twins import onnx_session

        session, feed = onnx_session(model, work, threads=0)
        peers["onnxruntime"] = lambda: session.run(None, feed)
    except ImportError as exc:
        print(f"  onnxruntime: not measured ({exc})")
    try:
        from suite import torch_forward

        peers["torch"] = torch_forward(model, "cpu")
    except ImportError as exc:
        print(f"  torch: not measured ({exc})")
    return peers


def measure(model, runs: int, rounds: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds of each mode (see the module doc) for one model (suite.BenchModel), and
    the median idle_cores of pyvgf and each peer."""
    from suite import compiled

    import pyvgf

    loaded = pyvgf.load(model.vgf)
    one_thread = pyvgf.load(model.vgf, threads=1)

    def ours() -> object:
        return loaded.run(model.inputs)

    def ours_on_one_thread() -> object:
        return one_thread.run(model.inputs)

    with tempfile.TemporaryDirectory() as tmp:
        peers = _peers(model, Path(tmp))
        for fn in (ours, ours_on_one_thread, *peers.values()):  # warm-up: loops, first touches
            fn()
            fn()
        compiled(ours)
        compiled(ours_on_one_thread)
        times: dict[str, list[float]] = {}
        idle: dict[str, list[float]] = {}
        per_round = max(1, runs // rounds)
        for _ in range(rounds):
            times.setdefault("pyvgf alone", []).extend(_timed(ours) for _ in range(per_round))
            times.setdefault("pyvgf one thread", []).extend(
                _timed(ours_on_one_thread) for _ in range(per_round))
            for runtime, fn in (("pyvgf", ours), *peers.items()):
                idle.setdefault(runtime, []).append(idle_cores(fn))
            for peer, fn in peers.items():
                times.setdefault(f"{peer} alone", []).extend(_timed(fn) for _ in range(per_round))
                for _ in range(per_round):
                    times.setdefault(f"pyvgf with {peer}", []).append(_timed(ours))
                    times.setdefault(f"{peer} with pyvgf", []).append(_timed(fn))
                for _ in range(per_round):
                    fn()
                    times.setdefault(f"pyvgf one thread with {peer}", []).append(
                        _timed(ours_on_one_thread))
            busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                time.sleep(0.2)  # let it take its core
                times.setdefault("pyvgf busy neighbour", []).extend(
                    _timed(ours) for _ in range(per_round))
            finally:
                busy.kill()
                busy.wait()
    loaded.close()
    one_thread.close()
    return ({mode: statistics.median(values) for mode, values in times.items()},
            {runtime: statistics.median(values) for runtime, values in idle.items()})


def ratios(medians: dict[str, float]) -> list[tuple[str, float, str]]:
    """(what, ratio, target) of each mode against the runtime's median alone."""
    rows = [("pyvgf beside a busy process / alone",
             medians["pyvgf busy neighbour"] / medians["pyvgf alone"], "<= 3")]
    for mode, value in medians.items():
        if mode.startswith("pyvgf one thread with "):
            rows.append((f"{mode} / pyvgf alone", value / medians["pyvgf alone"],
                         "none: pyvgf leaving the peer a core"))
        elif " with " in mode:
            runtime = mode.split(" with ")[0]
            rows.append((f"{mode} / {runtime} alone", value / medians[f"{runtime} alone"],
                         "<= 1.5"))
    return rows


def measured(model, runs: int, rounds: int) -> dict:
    """`measure` and `ratios` of one model, printed; as JSON."""
    medians, idle = measure(model, runs, rounds)
    rows = ratios(medians)
    for mode, value in medians.items():
        print(f"  {mode:34s} {value * 1e3:8.2f} ms")
    for runtime, cores in idle.items():
        print(f"  {runtime + ' idle cores':34s} {cores:8.2f}    (in the {IDLE_WINDOW * 1e3:.0f} ms after a run)")
    for what, ratio, target in rows:
        print(f"  {what:48s} {ratio:5.2f}x  (target {target})")
    return {"median_ms": {k: v * 1e3 for k, v in medians.items()}, "idle_cores": idle,
            "ratios": {what: ratio for what, ratio, _ in rows}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models-dir", type=Path, required=True,
                   help="NAME.vgf/.npz as suite.py --export DIR writes them")
    p.add_argument("--models", nargs="+", default=["mobilenet_v2_int8", "mobilenet_v2_fp32"])
    p.add_argument("--runs", type=int, default=30, help="timed runs per mode")
    p.add_argument("--rounds", type=int, default=3, help="rounds the runs are spread over")
    p.add_argument("--json", type=Path, help="write the medians and ratios as JSON")
    args = p.parse_args(argv)
    report = {}
    from suite import load_exported

    for name in args.models:
        print(name)
        report[name] = measured(load_exported(name, args.models_dir), args.runs, args.rounds)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
