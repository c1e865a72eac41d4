"""Run pyvgf's mutation fuzzing campaign (pyvgf.testing.fuzz) and print its figures.

    python tools/fuzz.py --cases 100000                        # every target, 100k cases each
    python tools/fuzz.py --target load-cpu spirv-cpu --cases 5000 --jobs 2 --out fuzz-out
    python tools/fuzz.py --target load-vulkan --replay fuzz-out/load-vulkan-0-17.bin

Seeds: the VGF targets (read, load-*, cli) mutate the real int8 models of tests/fixtures/real,
model-converter fixtures of tests/models and the bundled example; the SPIR-V targets (spirv-*)
mutate the SPIR-V words of graphs built with pyvgf.build (tests/support/graphs.py); the scenario
target mutates the bytes of scenario files naming such fixtures (scenario_seeds); the pte targets
(pyvgf.load + run, and the CLI) mutate the ExecuTorch programs of tests/fixtures/pte. The targets
run at once; `--jobs N` splits each target's cases over N workers. Prints, per target: cases by
outcome, failures (escapes, crashes, hangs; each saved to --out as a reproducer), the slowest case and the workers' peak
resident memory; exits 1 when there was a failure. SIGTERM or Ctrl-C ends the campaign after the
cases in flight and still prints (and writes) the figures of what ran.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

from pyvgf.testing import fuzz  # noqa: E402

FIXTURES = ["add_f32", "format_segments", "format_const_dtypes", "runtime_segments", "runtime_constants",
            "vulkan_conv2d_f32", "spirv_int8_conv_rescale", "runtime_multi_io"]


def vgf_seeds() -> list[bytes]:
    """Real VGFs: Arm's model-converter output and ExecuTorch-made models, and the example."""
    import fixtures

    seeds = [(ROOT / "pyvgf" / "examples" / "tiny_convnet.vgf").read_bytes()]
    seeds += [fixtures.model(name).read_bytes() for name in FIXTURES]
    seeds += [p.read_bytes() for p in sorted(fixtures.REAL.glob("*.vgf"))]
    return seeds


def spirv_seeds() -> list[bytes]:
    """VGFs of graphs built with pyvgf.build, whose SPIR-V words the spirv-* targets mutate."""
    from support.graphs import GRAPHS

    return [make().to_bytes() for make in GRAPHS.values()]


def scenario_seeds() -> list[bytes]:
    """Scenario files naming real files by absolute path (written once to the fixture cache): the
    vgf_dump templates of fixtures with their inputs, and one with memory groups and barriers."""
    import numpy as np

    import fixtures
    from pyvgf.format import read
    from pyvgf.format.model import numpy_dtype
    from pyvgf.scenario import template
    from pyvgf.scenario.parse import FORMATS

    folder = fixtures.CACHE / "scenario-seeds"
    folder.mkdir(parents=True, exist_ok=True)
    seeds = []
    for name in ("add_f32", "runtime_int8", "runtime_multi_io", "runtime_segments"):
        vgf = fixtures.model(name)
        doc = template(read(vgf), str(vgf))
        for entry in doc["resources"]:
            ((kind, body),) = entry.items()
            if kind in ("tensor", "buffer") and "src" in body:
                if kind == "buffer":
                    array = np.ones(body["size"], np.int8)
                else:
                    array = np.ones(body["dims"], numpy_dtype(FORMATS[body["format"]]))
                path = folder / f"{name}-{body['uid']}.npy"
                np.save(path, array)
                body["src"] = str(path)
            elif kind == "shader":
                path = folder / f"{name}-{body['uid']}.spv"
                path.write_bytes(np.asarray(read(vgf).modules[int(body["uid"].split("_")[1])].code, "<u4").tobytes())
                body["src"] = str(path)
        seeds.append(json.dumps(doc, indent=1).encode())
    add = str(fixtures.model("add_f32"))
    tensor = {"dims": [1, 4, 4, 8], "format": "VK_FORMAT_R32_SFLOAT", "shader_access": "readwrite"}
    np.save(folder / "ones.npy", np.ones((1, 4, 4, 8), np.float32))
    ones = str(folder / "ones.npy")
    seeds.append(json.dumps({
        "resources": [
            {"graph": {"uid": "g", "src": add}},
            {"tensor": {"uid": "a", "src": ones, **tensor}},
            {"tensor": {"uid": "b", "src": ones, **tensor, "memory_group": {"id": "m", "offset": 0}}},
            {"buffer": {"uid": "bb", "size": 512, "shader_access": "readwrite", "memory_group": {"id": "m"}}},
            {"tensor": {"uid": "c", "dst": "c.npy", **tensor}},
            {"memory_barrier": {"uid": "mb", "src_access": "graph_write", "dst_access": "graph_read"}},
            {"buffer_barrier": {"uid": "bar", "buffer_resource": "bb", "size": 512, "offset": 0,
                                "src_access": "graph_write", "dst_access": "memory_read"}},
        ],
        "commands": [
            {"dispatch_graph": {"graph_ref": "g", "bindings": [{"set": 0, "id": i, "resource_ref": r}
                                                               for i, r in enumerate("abc")]}},
            {"dispatch_barrier": {"memory_barrier_refs": ["mb"], "buffer_barrier_refs": ["bar"],
                                  "image_barrier_refs": []}},
            {"dispatch_vgf": {"graph_ref": "g", "implicit_barrier": False,
                              "bindings": [{"set": 0, "id": i, "resource_ref": r} for i, r in enumerate("cbc")]}},
            {"mark_boundary": {"resources": ["c"]}},
        ],
    }, indent=1).encode())
    return seeds


def pte_seeds() -> list[bytes]:
    """ExecuTorch programs made by ExecuTorch's own export (tests/fixtures/pte), the small ones."""
    paths = sorted((ROOT / "tests" / "fixtures" / "pte").glob("*/model.pte"))
    return [p.read_bytes() for p in paths if p.stat().st_size < 100_000]


def seeds_for(target: str) -> list[bytes]:
    if target == "scenario":
        return scenario_seeds()
    if target.startswith("pte"):
        return pte_seeds()
    return spirv_seeds() if target.startswith("spirv") else vgf_seeds()


STOP = threading.Event()
"""Set by SIGTERM or SIGINT: the campaigns end after their cases in flight and report."""


def run(target: str, cases: int, seed: int, jobs: int, out: Path | None, timeout: float, memory_mb: int) -> fuzz.Report:
    seeds = seeds_for(target)
    share = -(-cases // jobs)
    parts = [(start, min(share, cases - start)) for start in range(0, cases, share)]

    def part(span: tuple[int, int]) -> fuzz.Report:
        return fuzz.campaign(target, seeds, span[1], seed=seed, out=out, timeout=timeout, start=span[0],
                             memory_limit=memory_mb << 20, stop=STOP,
                             progress=lambda r: print(f"  ... {r.summary()}", file=sys.stderr, flush=True))

    with ThreadPoolExecutor(len(parts)) as pool:
        reports = list(pool.map(part, parts))
    total = fuzz.Report(target)
    for r in reports:
        total.cases += r.cases
        for k, v in r.counts.items():
            total.counts[k] = total.counts.get(k, 0) + v
        total.slowest = max(total.slowest, r.slowest)
        total.peak_rss = max(total.peak_rss, r.peak_rss)
        total.failures += r.failures
    return total


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", nargs="+", default=list(fuzz.TARGETS), choices=list(fuzz.TARGETS))
    p.add_argument("--cases", type=int, default=1000, help="cases per target (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="workers per target, run at once")
    p.add_argument("--out", type=Path, default=Path("fuzz-out"), help="where reproducers go")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="CPU seconds a case may take (or 10 times as long in wall time) before it is a hang")
    p.add_argument("--memory-limit-mb", type=int, default=8192, help="each worker's address space (0: none)")
    p.add_argument("--replay", type=Path, help="run this reproducer in the foreground, traceback and all")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    if args.replay:
        fuzz.TARGETS[args.target[0]].load()(args.replay.read_bytes())
        print("no failure")
        return 0
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: STOP.set())
    with ThreadPoolExecutor(len(args.target)) as pool:  # the targets at once, each in its workers
        reports = list(pool.map(lambda t: run(t, args.cases, args.seed, args.jobs, args.out, args.timeout,
                                              args.memory_limit_mb), args.target))
    for report in reports:
        print(report.summary(), flush=True)
        for path in report.failures:
            print(f"  reproducer {path}: {path.with_suffix('.txt').read_text().splitlines()[1][:200]}")
    if args.json:
        args.json.write_text(json.dumps([{"target": r.target, "cases": r.cases, "counts": r.counts,
                                          "failures": r.escapes, "slowest_s": r.slowest[0],
                                          "slowest_case": r.slowest[1], "peak_rss": r.peak_rss,
                                          "reproducers": [str(f) for f in r.failures]} for r in reports], indent=2))
    return 1 if any(r.escapes for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
