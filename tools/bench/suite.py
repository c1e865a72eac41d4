"""The pyvgf benchmark suite: every executor on every model, in one run on one machine.

    python tools/bench/suite.py [--models M ...] [--backends B ...] [--json out.json]
    python -m pyvgf bench ...                      # the same, from a source checkout

Executors (--backends):
    pyvgf-cpu             pyvgf.load(vgf).run on numpy; "cold" (pyvgf cpu and vulkan) a fresh
                          process a round: import, load, first run, memory growth (the median
                          process by load + first run)
    pyvgf-vulkan          pyvgf.load(vgf, backend="vulkan") (lavapipe + the ML emulation layer here):
                          Model.run (input upload, one submission, wait, output readback) and
                          "dispatch only" (the run's recorded command buffer resubmitted and waited
                          for, no host I/O; on a discrete GPU it still holds the on-device copies
                          between the staging tensors and the model's own); on the one-op
                          model also its "host work", Model.run with the driver calls stubbed:
                          pyvgf's per-run Python overhead
    scenario_runner       Arm's scenario_runner + emulation layer: "dispatch" is the GPU time its
                          profiling dump gives each iteration after the first (timestamps around
                          the commands: no host work); "cold" one whole process with --repeat 1;
                          "wall per repeat" (median wall of processes with --repeat 1+n minus that
                          of --repeat 1) / n, n = N / rounds, shown only when positive and larger
                          than the spread of the process times (else "not measurable")
    tosa_reference_model  the TOSA reference model, in process, on the TOSA FlatBuffer
    torch                 the same network in PyTorch eager with the same weights (--torch-device)
    onnxruntime           the torch twin exported to ONNX, on onnxruntime's CPU provider with
                          --threads intra-op threads (default: every core); for the int8 model
                          also "onnxruntime-int8", onnxruntime's own static QDQ quantization of
                          that ONNX model (timed, not compared: other scales and rounding)

Models come from tools/bench/models.py (TOSA MLIR converted by model-converter, cached in
.cache/fixtures), or from --models-dir DIR holding NAME.vgf, NAME.tosa (optional) and NAME.npz
as written by --export DIR: a machine without model-converter runs the suite from those files.
Each executor's timed runs are spread over --rounds rounds, every round running each executor in
turn: on a machine whose speed drifts (a VM with busy neighbours) all of them then see the same
stretches, and the ratios between them hold. Each batch starts SETTLE_S after the one before, once
the last executor's threads are idle. Correctness is checked in the same run: pyvgf cpu
against torch (fp32: close) and against tosa_reference_model (fp32 close, int8 bit-exact), the
other executors against pyvgf cpu.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["pyvgf-cpu", "pyvgf-vulkan", "scenario_runner", "tosa_reference_model", "torch", "onnxruntime"]
ONE_OP = "add_one_op"
REAL_INT8 = "mobilenet_v2_int8_real"
"""Arm's MobileNetV2 int8 as model-converter wrote it from TFLite (tests/fixtures/real): its
RESCALEs round twice, as TFLite's lowering writes them, where the suite's own models round
once. It has no TOSA file and no torch twin: pyvgf cpu is checked against pyvgf's reference."""
REAL_VGF = ROOT / "tests" / "fixtures" / "real" / "mobilenet_v2_int8.vgf"
MODELS = ["mobilenet_v2_fp32", "mobilenet_v2_int8", REAL_INT8, "transformer_fp32", "conv2d_large_fp32",
          ONE_OP]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="pyvgf bench", description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=MODELS, choices=MODELS, metavar="NAME",
                   help=f"models to run (default: all): {', '.join(MODELS)}")
    p.add_argument("--backends", nargs="+", default=BACKENDS, choices=BACKENDS, metavar="B",
                   help=f"executors to time (default: all): {', '.join(BACKENDS)}")
    p.add_argument("--repeat", type=int, default=10, help="timed runs per executor (after one warm-up)")
    p.add_argument("--vulkan-repeat", type=int, default=3, help="timed pyvgf-vulkan runs (lavapipe is slow)")
    p.add_argument("--scenario-repeat", type=int, default=5, help="scenario_runner --repeat N for steady state")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds the timed runs are spread over, each running every executor in turn; "
                        "scenario_runner runs one --repeat 1 and one --repeat 1+N/rounds process a round")
    p.add_argument("--reference-repeat", type=int, default=3, help="timed tosa_reference_model runs")
    p.add_argument("--threads", type=int, default=0,
                   help="BLAS, numba (pyvgf cpu), torch and onnxruntime CPU threads "
                        "(0: each library's default; onnxruntime: one a core)")
    p.add_argument("--torch-device", default="cpu", help="torch device: cpu or cuda")
    p.add_argument("--models-dir", type=Path, help="use prebuilt NAME.vgf/.tosa/.npz from DIR")
    p.add_argument("--export", type=Path, metavar="DIR", help="write NAME.vgf/.tosa/.npz into DIR and exit")
    p.add_argument("--json", type=Path, metavar="FILE", help="write every measurement as JSON")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write the tables as Markdown")
    p.add_argument("--colocation", action="store_true",
                   help="also time pyvgf beside a busy process and alternating with onnxruntime and "
                        "torch in this process, each against its speed alone (colocation.py)")
    return p.parse_args(argv)


# -- models -----------------------------------------------------------------------------------

@dataclass
class BenchModel:
    """A model ready to time: its VGF, TOSA FlatBuffer, inputs, and its torch twin's recipe."""

    name: str
    vgf: Path
    tosa: Path | None
    inputs: list
    torch_net: str | None
    weights: dict = field(default_factory=dict)
    torch_inputs: list = field(default_factory=list)
    exact: bool = False


def _one_op_mlir() -> str:
    return (ROOT / "tests" / "models" / "add_f32.mlir").read_text()


def build(name: str) -> BenchModel:
    """Generate `name` (cached): TOSA MLIR -> model-converter -> VGF and TOSA FlatBuffer."""
    import numpy as np

    from fixtures import tosa_from_mlir, vgf_from_mlir
    from models import network

    if name == REAL_INT8:
        import pyvgf
        from pyvgf.cli import random_input

        rng = np.random.default_rng(0)
        inputs = [random_input(i, rng) for i in pyvgf.load(REAL_VGF).inputs]
        return BenchModel(name, REAL_VGF, None, inputs, None, exact=True)
    if name == ONE_OP:
        mlir = _one_op_mlir()
        x = np.random.default_rng(0).standard_normal((1, 4, 4, 8)).astype(np.float32)
        return BenchModel(name, vgf_from_mlir(mlir), tosa_from_mlir(mlir), [x, x], None)
    net = network(name)
    return BenchModel(name, vgf_from_mlir(net.mlir), tosa_from_mlir(net.mlir), net.inputs,
                      net.torch_net, net.weights, net.torch_inputs, net.exact)


def export(model: BenchModel, folder: Path) -> None:
    """Write NAME.vgf, NAME.tosa and NAME.npz (inputs, torch twin's weights and inputs, recipe)."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{model.name}.vgf").write_bytes(model.vgf.read_bytes())
    if model.tosa is not None:
        (folder / f"{model.name}.tosa").write_bytes(model.tosa.read_bytes())
    arrays = {f"input_{i}": x for i, x in enumerate(model.inputs)}
    arrays |= {f"torch_input_{i}": x for i, x in enumerate(model.torch_inputs)}
    arrays |= {f"weight:{k}": v for k, v in model.weights.items()}
    meta = {"torch_net": model.torch_net, "exact": model.exact}
    np.savez(folder / f"{model.name}.npz", meta=np.array(json.dumps(meta)), **arrays)


def load_exported(name: str, folder: Path) -> BenchModel:
    """A model written by `export`."""
    import numpy as np

    with np.load(folder / f"{name}.npz") as data:
        meta = json.loads(str(data["meta"]))

        def ordered(prefix: str) -> list:
            keys = sorted((k for k in data.files if k.startswith(prefix)), key=lambda k: int(k[len(prefix):]))
            return [data[k] for k in keys]

        weights = {k.removeprefix("weight:"): data[k] for k in data.files if k.startswith("weight:")}
        inputs, torch_inputs = ordered("input_"), ordered("torch_input_")
    tosa = folder / f"{name}.tosa"
    return BenchModel(name, folder / f"{name}.vgf", tosa if tosa.exists() else None, inputs,
                      meta["torch_net"], weights, torch_inputs, meta["exact"])


# -- timing -----------------------------------------------------------------------------------

@dataclass
class Timing:
    """Seconds of repeated runs: median and spread."""

    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def as_json(self) -> dict:
        return {"median_s": self.median, "min_s": min(self.samples), "max_s": max(self.samples),
                "n": len(self.samples), "samples_s": self.samples}

    def __str__(self) -> str:
        return f"{_ms(self.median)} [{_ms(min(self.samples))}..{_ms(max(self.samples))}] n={len(self.samples)}"


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    if ms >= 100:
        return f"{ms:.0f} ms"
    return f"{ms:.3g} ms" if ms >= 0.1 else f"{ms * 1e3:.3g} us"


class Batches:
    """Timed calls of fn, a batch at a time: one warm-up call when made (its result is `out`),
    then `take(n)` times n calls after one untimed call, inside `around()` when given, into
    `samples`. The untimed call takes the batch's first run after the machine did other work
    (another executor, a cold process): caches refilled, threads woken, for every executor
    alike (pyvgf cpu's transformer block took 2x its time in such runs on the 2-core project
    machine, onnxruntime's 1.2x)."""

    def __init__(self, fn: Callable[[], object], around: Callable[[], AbstractContextManager] = nullcontext):
        self.fn, self.around = fn, around
        self.out = fn()
        self.samples: list[float] = []

    def take(self, n: int) -> None:
        with self.around():
            self.fn()
            for _ in range(n):
                start = time.perf_counter()
                self.fn()
                self.samples.append(time.perf_counter() - start)

    def timing(self) -> Timing:
        return Timing(self.samples)


def compiled(run: Callable[[], object]) -> None:
    """Run until no run leaves the fast executor's compiler process loops to compile (a step
    calling two meets the second once the first is in), so that the timed runs are of the
    compiled loops, not of the reference standing in for them meanwhile (a cold cache, or
    loops the cache lacks, such as another BLAS's int8 path)."""
    try:
        from pyvgf.fast.background import busy, wait
    except ImportError:  # no fast extra: nothing compiles
        return
    while busy():
        wait()
        run()


# -- executors --------------------------------------------------------------------------------

_COLD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np, pyvgf
t1 = time.perf_counter()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
inputs = [np.load(p) for p in sys.argv[3:]]
r0 = rss(); t2 = time.perf_counter()
model = pyvgf.load(sys.argv[1], backend=sys.argv[2])
t3 = time.perf_counter(); r1 = rss()
model.run(inputs)
t4 = time.perf_counter(); r2 = rss()
print(json.dumps({"import_s": t1 - t0, "load_s": t3 - t2, "first_run_s": t4 - t3,
                  "rss_load_bytes": r1 - r0, "rss_first_run_bytes": r2 - r1}))
"""


@functools.cache
def _bytecode() -> None:
    """pyvgf's modules compiled to bytecode beside their sources, as pip does when it installs
    a package: a cold process then measures what an installed pyvgf does, even where the
    environment keeps Python from writing bytecode (PYTHONDONTWRITEBYTECODE), which would have
    every process compile all of pyvgf from source (0.1-0.15 s here)."""
    if not compileall.compile_dir(ROOT / "pyvgf", quiet=1):
        print("  (could not compile pyvgf's bytecode: cold processes compile it)", flush=True)


def child_json(script: str, args: list[object], what: str, root: Path = ROOT, **env: str) -> dict:
    """What a fresh `python -c script *args` prints as JSON on its last line, run in the
    checkout `root` with its pyvgf first on the path and `env` added to this process's
    environment; RuntimeError naming `what`, with the child's stderr, where it fails."""
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True,
                          text=True, cwd=root, env={**os.environ, "PYTHONPATH": path, **env},
                          timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def pyvgf_cold(model: BenchModel, backend: str, work: Path) -> dict:
    """A fresh process: import, pyvgf.load, first run (time) and resident memory growth."""
    import numpy as np

    _bytecode()
    paths = []
    for i, x in enumerate(model.inputs):
        paths.append(str(work / f"{model.name}_in{i}.npy"))
        np.save(paths[-1], x)
    return child_json(_COLD, [model.vgf, backend, *paths], "cold pyvgf run")


class ColdProcesses:
    """pyvgf_cold once a round; `summary()` is the process whose load + first run is the
    median, with every process's load + first run beside it (`load_first_run_s`)."""

    def __init__(self, model: BenchModel, backend: str, work: Path):
        self.model, self.backend, self.work = model, backend, work
        self.processes: list[dict] = []

    def take(self) -> None:
        self.processes.append(pyvgf_cold(self.model, self.backend, self.work))

    def summary(self) -> dict:
        ranked = sorted(self.processes, key=lambda p: p["load_s"] + p["first_run_s"])
        return {**ranked[(len(ranked) - 1) // 2],
                "load_first_run_s": [p["load_s"] + p["first_run_s"] for p in self.processes]}


@contextmanager
def pyvgf_dispatch(model: BenchModel) -> Iterator[Callable[[], object]]:
    """The vulkan backend's dispatch alone: the command buffer of one run (runtime.schedule),
    inputs written once, run as Model.run runs it (a hal.PreparedRun: submit, fence wait and
    reset) with no host transfers."""
    from pyvgf import hal
    from pyvgf.format import read
    from pyvgf.runtime.check import check
    from pyvgf.runtime.schedule import Schedule

    vgf = read(model.vgf)
    adapter = hal.request_adapter("vulkan")
    try:
        device = adapter.request_device()
        try:
            execution = Schedule(vgf, device, check(vgf)).execution()
            for slot, x in zip(vgf.sequence.inputs, model.inputs):
                target = execution.host[slot.mrt_index]
                if isinstance(target, hal.Tensor):
                    device.queue.write_tensor(target, x)
                else:
                    device.queue.write_buffer(target, x)
            bare = device.prepare_run(execution.command_buffer, [], [])
            yield lambda: bare.run([])
        finally:
            device.destroy()
    finally:
        adapter.destroy()


def wall_per_repeat(short: list[float], long: list[float], repeat: int) -> Timing | None:
    """(median(long) - median(short)) / repeat from process wall times with --repeat 1 and
    --repeat 1+repeat; None when not positive or not larger than the two sets' spreads (process
    start-up noise swamps the extra repeats)."""
    extra = statistics.median(long) - statistics.median(short)
    noise = (max(short) - min(short)) + (max(long) - min(long))
    if extra <= 0 or extra <= noise:
        return None
    return Timing([extra / repeat])


class Scenario:
    """scenario_runner on one model, a round at a time (the Batches interface): `take(n)` runs
    one --repeat 1 process (cold; the first gives `out`) and one --repeat 1+n process whose
    profiling dump gives the GPU dispatch time of each iteration after the first."""

    def __init__(self, model: BenchModel, work: Path):
        from references import scenario_prepare

        self.work = work
        self.scenario_json, self.outputs = scenario_prepare(model.vgf, model.inputs, work)
        self.short: list[float] = []
        self.long: list[float] = []
        self.samples: list[float] = []
        self.repeat = 0
        self.out: list | None = None

    def _process(self, n: int, profile: Path | None = None) -> float:
        from references import scenario_command

        extra = ["--repeat", str(n)] + (["--profiling-dump-path", str(profile)] if profile else [])
        cmd, env = scenario_command(self.scenario_json, self.work, *extra)
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"scenario_runner failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return wall

    def take(self, n: int) -> None:
        from references import scenario_outputs

        self.short.append(self._process(1))
        if self.out is None:
            self.out = scenario_outputs(self.outputs)
        profile = self.work / "profile.json"
        self.long.append(self._process(1 + n, profile))
        self.repeat = n
        per_iteration: dict[int, float] = {}
        for stamp in json.loads(profile.read_text()).get("Timestamps", []):
            it = stamp["Iteration"]
            per_iteration[it] = per_iteration.get(it, 0.0) + stamp["Time for command [ms]"] / 1e3
        self.samples += [t for it, t in sorted(per_iteration.items()) if it >= 1]

    def timing(self) -> Timing | None:
        return Timing(self.samples) if self.samples else None


def reference(model: BenchModel) -> Callable[[], list]:
    """One tosa_reference_model run of the model's TOSA FlatBuffer, in process."""
    import tosa_reference_model

    flatbuffer = model.tosa.read_bytes()

    def run() -> list:
        outputs, status = tosa_reference_model.run(flatbuffer, model.inputs)
        if status != tosa_reference_model.GraphStatus.TOSA_VALID:
            raise RuntimeError(f"tosa_reference_model: {status}")
        return outputs

    return run


def torch_forward(model: BenchModel, device: str) -> Callable[[], object]:
    """One forward pass of the model's torch twin (no_grad; synchronized on a GPU)."""
    import torch

    from models import TORCH_NETS

    if device.startswith("cuda"):
        # TF32 would round convolution and matmul inputs to 10 mantissa bits: compare fp32 with fp32.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    forward = TORCH_NETS[model.torch_net](model.weights, device)
    inputs = [torch.from_numpy(x).to(device) for x in model.torch_inputs]

    def run():
        with torch.no_grad():
            out = forward(*inputs)
        if device != "cpu":
            torch.cuda.synchronize()
        return out

    return run


# -- checks -----------------------------------------------------------------------------------

def compare(got, want, exact: bool) -> dict:
    """How close `got` is to `want`: bit-exact for int models, relative max error for floats."""
    import numpy as np

    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape and got.size == want.size:
        want = want.reshape(got.shape)
    if exact:
        diff = int(np.count_nonzero(got != want))
        return {"ok": diff == 0, "mismatches": diff, "max_abs_diff": int(np.abs(got.astype(np.int64) - want).max())}
    scale = float(np.abs(want).max()) or 1.0
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    return {"ok": err <= 1e-4, "max_rel_err": err}


# -- the run ----------------------------------------------------------------------------------

SETTLE_S = 0.1
"""Seconds between one executor's batch of timed runs and the next executor's: onnxruntime's
workers spin for about 30 ms after its last run, and a batch started inside that spin shares
the cores with it (pyvgf cpu's first four runs after an onnxruntime batch took 1.6x as long on
the 2-core project machine). `pyvgf bench --colocation` measures that sharing on purpose."""

def run_model(model: BenchModel, args: argparse.Namespace, work: Path) -> dict:
    """Every selected executor on one model, its timed runs and cold pyvgf processes spread over
    `args.rounds` rounds, each running every executor in turn, so that a machine whose speed
    drifts during the run slows them alike; then the outputs checked."""
    import pyvgf

    res: dict = {"model": model.name, "timings": {}, "checks": {}, "cold": {}}
    backends = args.backends
    one_op = model.name == ONE_OP  # microseconds a run: many samples cost nothing
    runs: dict[str, tuple[Batches | Scenario, int]] = {}
    colds: dict[str, ColdProcesses] = {}
    with ExitStack() as stack:
        for backend in ("cpu", "vulkan"):
            key = f"pyvgf-{backend}"
            if key not in backends:
                continue
            colds[key] = ColdProcesses(model, backend, work)
            repeat = max(args.repeat if backend == "cpu" else args.vulkan_repeat, 200 if one_op else 0)
            m = stack.enter_context(pyvgf.load(model.vgf, backend=backend))
            runs[key] = Batches(lambda m=m: m.run(model.inputs)), repeat
            if backend == "cpu":
                compiled(runs[key][0].fn)
            if backend == "vulkan":
                runs["pyvgf-vulkan-dispatch"] = Batches(stack.enter_context(pyvgf_dispatch(model))), repeat
                if one_op:
                    from bench_vulkan import driver_stubbed

                    runs["pyvgf-vulkan-host"] = Batches(lambda m=m: m.run(model.inputs), driver_stubbed), repeat
        if "scenario_runner" in backends:
            runs["scenario_runner"] = Scenario(model, work), args.scenario_repeat
        if "tosa_reference_model" in backends and model.tosa is not None:
            runs["tosa_reference_model"] = Batches(reference(model)), args.reference_repeat
        if "torch" in backends and model.torch_net is not None:
            runs["torch"] = Batches(torch_forward(model, args.torch_device)), args.repeat
        if "onnxruntime" in backends and model.torch_net is not None:
            from onnx_twins import onnx_session

            threads = args.threads or os.cpu_count() or 1
            for key, int8 in (("onnxruntime", False), ("onnxruntime-int8", True)):
                if int8 and not model.exact:
                    continue
                session, feed = onnx_session(model, work, threads, int8=int8)
                runs[key] = Batches(lambda s=session, f=feed: s.run(None, f)[0]), args.repeat
        rounds = max(1, args.rounds)
        for _ in range(rounds):
            for cold in colds.values():
                cold.take()
            for batches, total in runs.values():
                time.sleep(SETTLE_S)
                batches.take(-(-total // rounds))
    for key, cold in colds.items():
        res["cold"][key] = summary = cold.summary()
        print(f"  {key + ' cold':26s} " + ", ".join(
            f"{k} {_ms(v)}" for k, v in summary.items() if k.endswith("_s") and k != "load_first_run_s")
            + f"; load + first run of each process: {', '.join(_ms(v) for v in summary['load_first_run_s'])}",
            flush=True)
    t = res["timings"]
    for key, (batches, _) in runs.items():
        timing = batches.timing()
        if timing is not None:
            t[key] = timing
        print(f"  {_LABELS.get(key, key):26s} {timing or 'not in the profiling dump'}", flush=True)
    outputs: dict[str, object] = {}
    for key in ("pyvgf-cpu", "pyvgf-vulkan", "scenario_runner", "tosa_reference_model"):
        if key in runs:
            outputs[key] = runs[key][0].out[0]
    if "torch" in runs:
        outputs["torch"] = runs["torch"][0].out.cpu().numpy()
    if "onnxruntime" in runs:
        outputs["onnxruntime"] = runs["onnxruntime"][0].out
    if model.tosa is None and model.torch_net is None and "pyvgf-cpu" in outputs:
        outputs["pyvgf-reference"] = pyvgf.load(model.vgf, backend="reference").run(model.inputs)[0]
    if "scenario_runner" in runs:
        scen = runs["scenario_runner"][0]
        t["scenario_runner-cold"] = Timing(scen.short)
        wall = wall_per_repeat(scen.short, scen.long, scen.repeat)
        if wall is not None:
            t["scenario_runner-wall"] = wall
        print(f"  {'scenario_runner':26s} wall per repeat "
              f"{_ms(wall.median) if wall else 'not measurable (process noise exceeds the repeats)'}; "
              f"cold process {t['scenario_runner-cold']}", flush=True)
    base = "pyvgf-cpu" if "pyvgf-cpu" in outputs else next(iter(outputs), None)
    for other, out in outputs.items():
        if other == base or (other in ("torch", "onnxruntime") and model.exact):
            continue  # an int8 model's torch and onnx twins are the fp32 network: timed, not compared
        res["checks"][f"{base} vs {other}"] = check = compare(outputs[base], out, model.exact)
        print(f"  check {base} vs {other}: {check}", flush=True)
    return res


_LABELS = {
    "pyvgf-cpu": "pyvgf-cpu Model.run",
    "pyvgf-vulkan": "pyvgf-vulkan Model.run",
    "pyvgf-vulkan-dispatch": "pyvgf-vulkan dispatch",
    "pyvgf-vulkan-host": "pyvgf-vulkan host work",
    "scenario_runner": "scenario_runner dispatch",
    "tosa_reference_model": "tosa_reference_model",
    "torch": "torch",
    "onnxruntime": "onnxruntime",
    "onnxruntime-int8": "onnxruntime int8 (QDQ)",
}
"""What each timing is called in the run's printout."""


def ratios(results: dict[str, dict]) -> list[tuple[str, float, float, str]]:
    """(what, ratio of medians, ratio of minima, target) of the project's performance targets,
    from one run. The minima are the steadier figure on a machine whose timings wander."""
    rows = []

    def stat(model: str, key: str) -> tuple[float, float] | None:
        timing = results.get(model, {}).get("timings", {}).get(key)
        return (timing.median, min(timing.samples)) if timing else None

    def add(what: str, num: tuple[float, float] | None, den: tuple[float, float] | None,
            target: str) -> None:
        if num is not None and den is not None and min(den) > 0:
            rows.append((what, num[0] / den[0], num[1] / den[1], target))

    mnv2, int8 = "mobilenet_v2_fp32", "mobilenet_v2_int8"
    add("MobileNetV2 fp32: pyvgf cpu / torch", stat(mnv2, "pyvgf-cpu"), stat(mnv2, "torch"), "<= 1.5")
    add("MobileNetV2 int8: pyvgf cpu / torch fp32", stat(int8, "pyvgf-cpu"), stat(int8, "torch"), "<= 3")
    add("MobileNetV2 fp32: pyvgf cpu / onnxruntime", stat(mnv2, "pyvgf-cpu"), stat(mnv2, "onnxruntime"), "<= 1.2")
    add("MobileNetV2 int8: pyvgf cpu / onnxruntime fp32", stat(int8, "pyvgf-cpu"), stat(int8, "onnxruntime"),
        "<= 1.0")
    add("MobileNetV2 int8: pyvgf cpu / onnxruntime int8", stat(int8, "pyvgf-cpu"), stat(int8, "onnxruntime-int8"),
        "<= 1.5")
    add("transformer: pyvgf cpu / onnxruntime", stat("transformer_fp32", "pyvgf-cpu"),
        stat("transformer_fp32", "onnxruntime"), "<= 1.5")
    for name in (n for n in results if n != ONE_OP):
        add(f"{name}: scenario_runner / pyvgf cpu", stat(name, "scenario_runner"), stat(name, "pyvgf-cpu"), ">= 50")
        add(f"{name}: tosa_reference_model / pyvgf cpu", stat(name, "tosa_reference_model"),
            stat(name, "pyvgf-cpu"), ">= 15")
        add(f"{name}: pyvgf vulkan Model.run / scenario_runner dispatch", stat(name, "pyvgf-vulkan"),
            stat(name, "scenario_runner"), "<= 1.1")
        add(f"{name}: pyvgf vulkan dispatch / scenario_runner dispatch", stat(name, "pyvgf-vulkan-dispatch"),
            stat(name, "scenario_runner"), "")
        add(f"{name}: pyvgf cpu / torch", stat(name, "pyvgf-cpu"), stat(name, "torch"), "")
    cold = results.get(mnv2, {}).get("cold", {}).get("pyvgf-cpu")
    if cold:
        rows.append(("MobileNetV2 fp32: pyvgf load + first run [s]",
                     statistics.median(cold["load_first_run_s"]), min(cold["load_first_run_s"]), "< 1"))
    for key, what, target in (("pyvgf-cpu", "pyvgf-cpu per run", ""),
                              ("pyvgf-vulkan", "pyvgf-vulkan per run", ""),
                              ("pyvgf-vulkan-host", "pyvgf-vulkan Python overhead per run", "< 100")):
        one = stat(ONE_OP, key)
        if one is not None:
            rows.append((f"one-op model: {what} [us]", one[0] * 1e6, one[1] * 1e6, target))
    return rows


_COLUMNS = [("pyvgf-cpu", "pyvgf cpu"), ("pyvgf-vulkan", "pyvgf vulkan Model.run"),
            ("pyvgf-vulkan-dispatch", "pyvgf vulkan dispatch"),
            ("scenario_runner", "scenario_runner dispatch (GPU)"),
            ("scenario_runner-wall", "scenario_runner wall per repeat"),
            ("scenario_runner-cold", "scenario_runner cold process"),
            ("tosa_reference_model", "tosa_reference_model"), ("torch", "torch"),
            ("onnxruntime", "onnxruntime"), ("onnxruntime-int8", "onnxruntime int8")]


def markdown(results: dict[str, dict], rows: list[tuple[str, float, float, str]],
             args: argparse.Namespace) -> str:
    """The run as Markdown: per-inference medians [min..max] and the target ratios."""
    lines = ["| model | " + " | ".join(title for _, title in _COLUMNS) + " | pyvgf cpu load + first run |",
             "| --- |" + " ---: |" * (len(_COLUMNS) + 1)]
    for name, res in results.items():
        cells = []
        for key, _ in _COLUMNS:
            timing = res["timings"].get(key)
            cells.append("-" if timing is None else
                         f"{_ms(timing.median)} [{_ms(min(timing.samples))}..{_ms(max(timing.samples))}]")
        cold = res["cold"].get("pyvgf-cpu")
        cells.append("-" if cold is None else _ms(statistics.median(cold["load_first_run_s"])))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| ratio (this run) | of medians | of minima | target |", "| --- | ---: | ---: | --- |"]
    lines += [f"| {what} | {value:.3g} | {low:.3g} | {target or '-'} |" for what, value, low, target in rows]
    lines += ["", f"threads {args.threads or 'library default'}, torch device {args.torch_device}, "
              f"{os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}"]
    return "\n".join(lines) + "\n"


def _provenance() -> dict:
    """When, from which commit and with which command and libraries the run was made."""
    import platform

    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    versions = {name: getattr(sys.modules[name], "__version__", None)
                for name in ("numpy", "numba", "scipy", "torch", "onnxruntime") if name in sys.modules}
    if "pyvgf.fast.blas" in sys.modules:
        versions["blas"] = sys.modules["pyvgf.fast.blas"].LIBRARY
    return {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
            "command": [sys.executable, *sys.argv], "python": platform.python_version(), "versions": versions}


def main(argv: list[str] | None = None) -> int:
    sys.path[:0] = [str(ROOT), str(ROOT / "tools"), str(ROOT / "tools" / "bench")]
    args = _parse(argv)
    if args.threads:
        # BLAS and numba read their thread counts when first imported, so set them before that.
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    if "torch" in args.backends:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="pyvgf-bench-") as tmp:
        for name in args.models:
            model = load_exported(name, args.models_dir) if args.models_dir else build(name)
            if args.export:
                export(model, args.export)
                print(f"wrote {args.export / name}.vgf/.tosa/.npz")
                continue
            print(f"{name}  ({model.vgf.stat().st_size / 1e6:.1f} MB VGF)", flush=True)
            work = Path(tmp) / name
            work.mkdir()
            results[name] = run_model(model, args, work)
            if args.colocation:
                from colocation import measured

                print("  sharing the machine (colocation.py)")
                results[name]["colocation"] = measured(model, args.repeat, args.rounds)
    if args.export:
        return 0
    rows = ratios(results)
    print("\nratios of this run: of medians, of minima")
    for what, value, low, target in rows:
        print(f"  {what:60s} {value:10.3g} {low:10.3g}   target {target or '-'}")
    if args.markdown:
        args.markdown.write_text(markdown(results, rows, args))
        print(f"wrote {args.markdown}")
    if args.json:
        doc = {"machine": {"cpus": os.cpu_count(), "threads": args.threads, "torch_device": args.torch_device,
                           "load_average": os.getloadavg()},
               "run": _provenance(),
               "models": {n: {**r, "timings": {k: v.as_json() for k, v in r["timings"].items()}}
                          for n, r in results.items()},
               "ratios": [{"what": w, "value": v, "of_minima": low, "target": tg} for w, v, low, tg in rows]}
        args.json.write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {args.json}")
    failed = [f"{n}: {c}" for n, r in results.items() for c, v in r["checks"].items() if not v["ok"]]
    for line in failed:
        print(f"CHECK FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
