"""Where pyvgf cpu spends a model's run: wall time per planned step, by operator.

    python tools/bench/profile_ops.py mobilenet_v2_fp32 [--runs 20] [--threads 1] [--models-dir DIR]
    python tools/bench/profile_ops.py mobilenet_v2_int8 --onnxruntime   # beside onnxruntime's own profile
    python tools/bench/profile_ops.py transformer_fp32 --by-step        # every step, in plan order

Every registered operator function is wrapped in a timer before the model is planned, so each
step of the plan is timed as it runs. A step with fused band-wise ops (see
pyvgf/tosa/interpreter.py) is listed as its chain, e.g. "CONV2D + CLAMP": their time is one.
Prints, per operator or chain, the time per run, its share and the steps per run, then the
interpreter's own time around them (the run's wall time less the steps').

With --onnxruntime, the same network's onnxruntime twin (tools/bench/onnx_twins.py: fp32, or
its static QDQ int8 model for an int8 VGF) runs with onnxruntime's own profiler on as many
threads, and both profiles are summed by kind of work (pointwise, depthwise and other
convolutions told apart by their weights' shapes, matrix products, then operators by name), so
the table says which kind of work makes up the difference between the two runtimes.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path


def _kind(op: str, weight: object) -> str:
    """The kind of work of a TOSA op given its weight (CONV2D: OHWI; DEPTHWISE_CONV2D: HWCM)."""
    shape = getattr(weight, "shape", None)
    if op == "DEPTHWISE_CONV2D":
        return "depthwise convolution"
    if op == "CONV2D" and shape is not None:
        return "pointwise convolution" if shape[1] == shape[2] == 1 else "other convolution"
    if op in ("MATMUL", "FULLY_CONNECTED"):
        return "matrix product"
    return {"LAYER_NORM": "layernormalization"}.get(op, op.lower())


def _conv_weights(path: Path) -> dict[str, list[int]]:
    """Each Conv node's weight shape (OIHW) in an ONNX model (an initializer or a Constant
    node's, through a DequantizeLinear in a QDQ model), by the Conv node's name and by the
    tensors it produces directly or through the activations and sums onnxruntime fuses into
    it (its NCHWc nodes are named after those)."""
    import onnx

    graph = onnx.load(str(path)).graph
    dims = {i.name: list(i.dims) for i in graph.initializer}
    dims.update({n.output[0]: list(a.t.dims) for n in graph.node if n.op_type == "Constant"
                 for a in n.attribute if a.name == "value"})
    dequantized = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "DequantizeLinear"}
    producers = {out: n for n in graph.node for out in n.output}
    found: dict[str, list[int]] = {}
    for node in graph.node:
        conv = node
        while conv is not None and conv.op_type in ("Clip", "Relu", "Add"):
            conv = producers.get(conv.input[0])
        if conv is not None and conv.op_type == "Conv":
            weight = dims[dequantized.get(conv.input[1], conv.input[1])]
            found[node.name] = found[node.output[0]] = weight
    return found


def _onnx_kind(op: str, node: str, weights: dict[str, list[int]]) -> str:
    """The kind of work of an onnxruntime node, from its op type and, for a convolution (named
    as the model's Conv node with a `_token_N` suffix where onnxruntime fused it, or after the
    tensor it makes with `_nchwc`), the weight shape of that Conv."""
    if op in ("Conv", "FusedConv", "QLinearConv", "NhwcFusedConv"):
        w = weights.get(re.sub(r"(_token_\d+|_nchwc)$", "", node))
        if w is None:
            return "other convolution"
        if w[1] == 1:
            return "depthwise convolution"
        return "pointwise convolution" if w[2:] == [1, 1] else "other convolution"
    if op in ("MatMul", "Gemm", "FusedMatMul", "QLinearMatMul", "MatMulInteger", "FusedGemm"):
        return "matrix product"
    return op.lower()


def onnxruntime_profile(model: object, runs: int, threads: int) -> tuple[float, defaultdict[str, float]]:
    """onnxruntime's mean run time and its kernels' time per run by kind of work, from its own
    profiler (the first run, a warm-up, left out)."""
    import json
    import tempfile

    import onnxruntime as ort
    from onnx_twins import onnx_session

    work = Path(tempfile.mkdtemp(prefix="pyvgf-profile-"))
    session, feed = onnx_session(model, work, threads, int8=bool(getattr(model, "exact", False)))
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(work / "ort")
    if threads:
        options.intra_op_num_threads = threads
    weights = _conv_weights(Path(session._model_path))
    session = ort.InferenceSession(session._model_path, options, providers=["CPUExecutionProvider"])
    for _ in range(1 + runs):
        session.run(None, feed)
    events = json.loads(Path(session.end_profiling()).read_text())
    model_runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "model_run")[1:]
    kinds: defaultdict[str, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and any(
                a <= e["ts"] <= b for a, b in model_runs):
            kind = _onnx_kind(e["args"]["op_name"], e["name"].removesuffix("_kernel_time"), weights)
            kinds[kind] += e["dur"] * 1e-6 / runs
    return sum(b - a for a, b in model_runs) * 1e-6 / runs, kinds


ORDER: list[tuple[str, float]] = []
"""Every top-level step's label and seconds, in the order the runs called them (--by-step)."""


def _shape(value: object) -> str:
    return "x".join(map(str, value.shape)) if hasattr(value, "shape") else "?"  # type: ignore[attr-defined]


def _timed(name: str, fn: Callable[..., object], spent: defaultdict[str, float],
           steps: Counter[str], depth: list[int], epilogue: object = None,
           by_shape: bool = False, kinds: defaultdict[str, float] | None = None,
           weight: object = None) -> Callable[..., object]:
    """fn timed under its op's name, and the names of the ops fused into it (its `epilogue`
    operand, or the one its plan-time form was made with); with `by_shape`, and the shape of
    its `input` operand (a MATMUL's A, then B). Each call is also kept in ORDER."""
    @functools.wraps(fn)
    def step(*args: object, **kwargs: object) -> object:
        if depth[0]:  # an op called by another (a fused epilogue's generic form)
            return fn(*args, **kwargs)
        fused = getattr(kwargs.get("epilogue", epilogue), "ops", ())
        label = " + ".join((name, *fused))
        first = kwargs.get("input", kwargs.get("A", args[0] if args else None))
        if by_shape and hasattr(first, "shape"):
            label += " " + _shape(first)
            if "B" in kwargs:
                label += " @ " + _shape(kwargs["B"])
        depth[0] += 1
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            spent[label] += seconds
            steps[label] += 1
            ORDER.append((label, seconds))
            depth[0] -= 1
            if kinds is not None:
                kinds[_kind(name.split(" + ")[0], kwargs.get("weight", weight))] += seconds

    return step


def _by_step(runs: int) -> list[tuple[str, float]]:
    """Each step of a run in plan order (ORDER over `runs` runs) and its median seconds."""
    count = len(ORDER) // runs
    return [(ORDER[i][0], sorted(ORDER[r * count + i][1] for r in range(runs))[runs // 2])
            for i in range(count)]


def _prepared_timed(name: str, prepare: Callable[..., object], spent: defaultdict[str, float],
                    steps: Counter[str], depth: list[int], by_shape: bool,
                    kinds: defaultdict[str, float]) -> Callable[..., object]:
    def timed_prepare(**operands: object) -> object:
        made = prepare(**operands)
        return None if made is None else _timed(name, made, spent, steps, depth,  # type: ignore[arg-type]
                                               operands.get("epilogue"), by_shape, kinds,
                                               operands.get("weight"))
    return timed_prepare


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--threads", type=int, default=0, help="BLAS and numba threads (0: their defaults)")
    p.add_argument("--models-dir", type=Path)
    p.add_argument("--by-shape", action="store_true",
                   help="list steps by their input's shape too, not only by operator")
    p.add_argument("--by-step", action="store_true",
                   help="also list every step of a run in plan order, its median time (implies --by-shape)")
    p.add_argument("--onnxruntime", action="store_true",
                   help="also profile the onnxruntime twin and compare by kind of work")
    args = p.parse_args(argv)
    args.by_shape = args.by_shape or args.by_step
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root), str(root / "tools"), str(root / "tools" / "bench")]
    from suite import build, compiled, load_exported

    import pyvgf
    from pyvgf import fast
    from pyvgf.tosa import OPS

    spent: defaultdict[str, float] = defaultdict(float)
    steps: Counter[str] = Counter()
    kinds: defaultdict[str, float] = defaultdict(float)
    depth = [0]
    for name, opdef in OPS.items():  # the reference's functions
        opdef.fn = _timed(name, opdef.fn, spent, steps, depth, by_shape=args.by_shape, kinds=kinds)
    if fast.available():  # and the fast executor's, which the cpu backend runs
        import pyvgf.fast.plan
        from pyvgf.fast.registry import FAST

        for name, extra in FAST.items():
            if extra.fn is not None:
                extra.fn = _timed(name, extra.fn, spent, steps, depth, by_shape=args.by_shape, kinds=kinds)
            if extra.prepare is not None:  # a step's plan-time form, timed as the op
                extra.prepare = _prepared_timed(name, extra.prepare, spent, steps, depth,
                                                args.by_shape, kinds)
        from pyvgf.fast import patterns

        make_step = patterns._step  # a pattern's step, timed under the pattern's name

        def timed_step(name: str, make: Callable[[], Callable[..., object]],
                       found: patterns.Steps, indices: list[int], *rest: object,
                       **named: object) -> object:
            weight = found.planned[indices[0]].args.get("weight")  # a convolution's (CONV2D + ADD)
            return make_step(name, lambda: _timed(name, make(), spent, steps, depth,
                                                  by_shape=args.by_shape, kinds=kinds,
                                                  weight=getattr(weight, "value", None)),
                             found, indices, *rest, **named)
        patterns._step = timed_step
    model = load_exported(args.model, args.models_dir) if args.models_dir else build(args.model)
    with pyvgf.load(model.vgf) as m:
        m.run(model.inputs)
        compiled(lambda: m.run(model.inputs))
        spent.clear()
        steps.clear()
        kinds.clear()
        ORDER.clear()
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
    if args.by_step:
        print("\nby step, in plan order (median ms of the runs):")
        for index, (label, seconds) in enumerate(_by_step(args.runs)):
            print(f"  {index:3d} {label:{width}s} {seconds * 1e3:8.3f}")
    if args.onnxruntime and model.torch_net is not None:
        ort_total, ort_kinds = onnxruntime_profile(model, args.runs, args.threads or os.cpu_count() or 1)
        kinds["(interpreter and runtime)"] = rest * args.runs
        ort_kinds["(session overhead)"] = ort_total - sum(ort_kinds.values())
        print(f"\nby kind of work, ms per run: pyvgf {total * 1e3:.2f}, onnxruntime {ort_total * 1e3:.2f} "
              f"({'int8 QDQ' if model.exact else 'fp32'} twin, its own profiler)")
        print(f"  {'kind':30s} {'pyvgf':>8s} {'onnxruntime':>12s} {'ratio':>6s}")
        for kind in sorted(set(kinds) | set(ort_kinds), key=lambda k: -kinds.get(k, 0.0)):
            ours, theirs = kinds.get(kind, 0.0) / args.runs, ort_kinds.get(kind, 0.0)
            ratio = f"{ours / theirs:5.2f}x" if ours and theirs > 1e-6 else ""
            print(f"  {kind:30s} {ours * 1e3:8.2f} {theirs * 1e3:12.2f} {ratio:>6s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
