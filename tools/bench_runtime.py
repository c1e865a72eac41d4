"""Benchmark pyvgf.load() and Model.run() on a VGF (the bundled example by default).

    python tools/bench_runtime.py [MODEL.vgf] [--backend cpu] [--runs 20] [--threads 2]

Prints the load time, the median and best single-run time, and the throughput of --threads
threads running the same Model at once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from importlib import resources
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyvgf  # noqa: E402
from pyvgf.cli import random_input  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    source = args.model or (resources.files("pyvgf") / "examples" / "tiny_convnet.vgf").read_bytes()

    start = time.perf_counter()
    model = pyvgf.load(source, backend=args.backend)
    load_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    inputs = [random_input(i, rng) if i.live else np.zeros(0) for i in model.inputs]
    model.run(inputs)  # warm up

    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        model.run(inputs)
        times.append(time.perf_counter() - start)

    def worker() -> None:
        for _ in range(args.runs):
            model.run(inputs)

    pool = [threading.Thread(target=worker) for _ in range(args.threads)]
    start = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    threaded_s = time.perf_counter() - start

    print(f"model: {args.model or 'example tiny_convnet.vgf'} on {args.backend}")
    print(f"load: {load_s * 1e3:.1f} ms")
    print(f"run: median {statistics.median(times) * 1e3:.2f} ms, best {min(times) * 1e3:.2f} ms ({args.runs} runs)")
    print(f"{args.threads} threads: {args.threads * args.runs / threaded_s:.1f} runs/s "
          f"(one thread: {1 / statistics.median(times):.1f} runs/s)")
    model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
