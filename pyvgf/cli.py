"""The `pyvgf` command line: one small function per subcommand.

    pyvgf inspect MODEL.vgf [--all | --json] [--spirv N] [--dump-spirv N | --dump-constant N -o FILE]
    pyvgf inspect MODEL.pte [--extract DIR]
    pyvgf run MODEL.vgf --input a.npy --input b.npy --output-dir out/ [--backend cpu]
    pyvgf run MODEL.vgf --random-inputs --seed 0
    pyvgf run --example
    pyvgf run MODEL.vgf ... [--dump-intermediates DIR] [--profile] [--trace FILE] [--repeat N]
    pyvgf bisect MODEL.vgf --backends A B [--input ... | --random-inputs --seed N] [--out DIR]
    pyvgf bench [--models ...] [--backends ...] [--json FILE]   (source checkout: tools/bench)
    pyvgf bench distributed [--rows ...] [--workers 1 2] [--campaign N]   (Ray: tools/bench/distributed.py)
    pyvgf bench coldstart [--models ...] [--rounds N] [--ab]   (empty numba cache: tools/bench/coldstart.py)
    pyvgf bench threads --models-dir DIR [--threads 16 8 4] [--pyvgf DIR ...]   (tools/bench/threads.py)
    pyvgf scenario S.json --output DIR [--backend cpu] [--repeat N] [--dry-run] [--profiling-dump-path F]
    pyvgf inspect MODEL.vgf --scenario-template DIR

Errors: `main` turns every pyvgf error, MemoryError and OS error of any subcommand into one
line on stderr and exit status 1 (anything else, a pyvgf bug, into one line and status 2);
`--debug` (before or after the subcommand) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from importlib import resources
from pathlib import Path

import numpy as np

from . import __version__
from .errors import VGFError


def _inspect(args: argparse.Namespace) -> int:
    from .executorch import is_program
    from .format import CodeType, read
    from .format.dump import overview, summary, to_json

    if is_program(args.file):
        return _inspect_program(args)
    if args.extract is not None:
        raise SystemExit("pyvgf inspect: --extract is for ExecuTorch programs (.pte)")
    vgf = read(args.file)
    if args.dump_spirv is not None or args.dump_constant is not None:
        if args.output is None:
            raise SystemExit("pyvgf inspect: --dump-spirv/--dump-constant need -o FILE")
        out = Path(args.output)
        if args.dump_spirv is not None:
            index = _checked_index(args.dump_spirv, len(vgf.modules), "module")
            module = vgf.modules[index]
            if module.code_type != CodeType.SPIRV or module.code is None:
                raise VGFError(f"module {index} has no stored SPIR-V code")
            out.write_bytes(np.asarray(module.code, dtype="<u4").tobytes())
        else:
            index = _checked_index(args.dump_constant, len(vgf.constants), "constant")
            if out.suffix == ".npy":
                array = vgf.constant_array(index)
                if array.dtype.kind == "V":
                    print(
                        f"pyvgf inspect: .npy has no {array.dtype} type; saving its bit pattern as "
                        f"uint{8 * array.dtype.itemsize} (view it with ml_dtypes.{array.dtype})",
                        file=sys.stderr,
                    )
                    array = array.view(f"<u{array.dtype.itemsize}")
                np.save(out, array)
            else:
                out.write_bytes(vgf.constants[index].data.tobytes())
        return 0
    if args.scenario_template is not None:
        from .scenario import write_template

        print(write_template(vgf, args.file, args.scenario_template, boundaries=args.scenario_template_add_boundaries))
        return 0
    if args.spirv is not None:
        from .spirv import disassemble

        module = vgf.modules[_checked_index(args.spirv, len(vgf.modules), "module")]
        if module.code_type != CodeType.SPIRV or module.code is None:
            raise VGFError(f"module {args.spirv} has no stored SPIR-V code")
        print(disassemble(module.code))
        return 0
    if args.json:
        print(json.dumps(to_json(vgf), indent=4, sort_keys=True, ensure_ascii=False))
        return 0
    from .runtime.model import interface

    print(overview(vgf, *interface(vgf), _tosa_op_counts(vgf)))
    print()
    print(summary(vgf) if args.all else "(--all adds every module, segment binding, resource and constant)")
    return 0


def _tosa_op_counts(vgf) -> dict[int, dict[str, int] | str]:
    """Module index -> TOSA operator counts of each graph module, or why they are unknown."""
    from .format import ModuleType
    from .spirv import tosa_op_counts

    counts: dict[int, dict[str, int] | str] = {}
    for i, module in enumerate(vgf.modules):
        if module.type == ModuleType.GRAPH:
            try:
                counts[i] = tosa_op_counts(module.code) if module.code is not None else "no stored SPIR-V code"
            except VGFError as exc:
                counts[i] = f"SPIR-V not readable: {exc}"
    return counts


def _inspect_program(args: argparse.Namespace) -> int:
    """`pyvgf inspect model.pte`: the program's summary, or its VGF delegates as files."""
    from .executorch import read
    from .executorch.dump import extract, summary

    if args.json or args.spirv is not None or args.dump_spirv is not None or args.dump_constant is not None:
        raise VGFError("a .pte takes --extract DIR (its VGF delegates); --json, --spirv and --dump-* are for "
                       "those .vgf files")
    program = read(args.file)
    if args.extract is not None:
        for path in extract(program, args.extract):
            print(path)
    else:
        print(summary(program))
    return 0


def _checked_index(index: int, count: int, what: str) -> int:
    if not 0 <= index < count:
        raise VGFError(f"{what} index {index} out of range ({count} {what}s)")
    return index


def _add_inspect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="describe a VGF file (summary, --all the full listing, or vgf_dump's JSON) "
                                       "or an ExecuTorch .pte")
    p.add_argument("file", help="the .vgf or .pte file")
    p.add_argument("--json", action="store_true", help="print the JSON `vgf_dump -i FILE` prints")
    p.add_argument("--all", action="store_true", help="after the summary, list every module, resource and constant")
    p.add_argument("--spirv", type=int, metavar="N", help="print a disassembly of SPIR-V module N")
    p.add_argument("--dump-spirv", type=int, metavar="N", help="write module N's SPIR-V words to -o FILE")
    p.add_argument(
        "--dump-constant", type=int, metavar="N", help="write constant N to -o FILE (.npy: typed array, else raw)"
    )
    p.add_argument("-o", "--output", help="output file of --dump-spirv / --dump-constant")
    p.add_argument("--scenario-template", metavar="DIR",
                   help="write vgf_dump's scenario template to DIR/<model>.json, with the VGF and zero-filled "
                        "inputs under the placeholder names, so that DIR runs as it is")
    p.add_argument("--scenario-template-add-boundaries", action="store_true",
                   help="with --scenario-template: mark_boundary commands before and after the dispatch")
    p.add_argument("--extract", metavar="DIR", help="ExecuTorch program: write each VGF delegate to DIR as a .vgf")
    p.set_defaults(func=_inspect)


EXAMPLE = "tiny_convnet.vgf"


def random_input(info, rng: np.random.Generator) -> np.ndarray:
    """A random array for a model input: normal floats, small integers, random bools."""
    kind = np.dtype(info.dtype).kind
    if kind == "b":
        return rng.integers(0, 2, info.shape).astype(np.bool_)
    if kind in "iu":
        limits = np.iinfo(info.dtype)
        return rng.integers(max(limits.min, -100), min(limits.max, 100), info.shape, endpoint=True).astype(info.dtype)
    return rng.standard_normal(info.shape).astype(info.dtype)


def _load_inputs(paths: list[str]) -> dict[str, np.ndarray] | list[np.ndarray]:
    named = [p.partition("=") for p in paths]
    if all(sep for _, sep, _ in named):
        return {name: np.load(path, allow_pickle=False) for name, _, path in named}
    return [np.load(p, allow_pickle=False) for p in paths]


def _summary(name: str, array: np.ndarray) -> str:
    text = f"{name}: {array.dtype}[{', '.join(map(str, array.shape))}]"
    if array.size and (array.dtype.kind in "biuf" or array.dtype.name == "bfloat16"):
        values = array.astype(np.float64)
        text += f"  min {values.min():.6g}  max {values.max():.6g}  mean {values.mean():.6g}"
    return text


def _source(args: argparse.Namespace) -> tuple[str | bytes, str]:
    """The model to run (a path, or the bundled example's bytes) and how to name it."""
    if args.example:
        if args.model:
            raise SystemExit("pyvgf run: give a MODEL or --example, not both")
        args.random_inputs = True
        return (resources.files("pyvgf") / "examples" / EXAMPLE).read_bytes(), f"example {EXAMPLE}"
    if not args.model:
        raise SystemExit("pyvgf run: give a MODEL.vgf or --example")
    return args.model, args.model


def _inputs(args: argparse.Namespace, model) -> dict[str, np.ndarray] | list[np.ndarray]:
    """The inputs from --input files, or random ones; prints a line for each."""
    if args.input:
        inputs = _load_inputs(args.input)
    elif args.random_inputs:
        rng = np.random.default_rng(args.seed)
        inputs = [random_input(i, rng) if i.live else np.zeros(0) for i in model.inputs]
    else:
        raise SystemExit("pyvgf run: give --input FILE.npy for each input, or --random-inputs")
    given = inputs.items() if isinstance(inputs, dict) else zip([i.name for i in model.inputs], inputs)
    live = {i.name for i in model.inputs if i.live}
    for name, array in given:
        print("  in  " + (_summary(name, np.asarray(array)) if name in live else f"{name}: unused by the model"))
    return inputs


def _run(args: argparse.Namespace) -> int:
    from . import load

    source, label = _source(args)
    with load(source, backend=args.backend) as model:
        print(f"{label} on {args.backend}: {len(model.inputs)} input(s), {len(model.outputs)} output(s)")
        inputs = _inputs(args, model)
        outputs = model.run(inputs)
        out_dir = Path(args.output_dir) if args.output_dir else None
        if out_dir:
            out_dir.mkdir(parents=True, exist_ok=True)
        for info, array in zip(model.outputs, outputs):
            line = "  out " + _summary(info.name, array)
            if out_dir:
                path = out_dir / (re.sub(r"[^\w.-]", "_", info.name) + ".npy")
                np.save(path, array)
                line += f"  -> {path}"
            print(line)
        _look_inside(args, model, inputs)
    return 0


def _look_inside(args: argparse.Namespace, model, inputs) -> None:
    """--dump-intermediates, --profile and --trace: each a run of its own after the first."""
    from . import debug

    if args.dump_intermediates:
        cap = debug.capture(model, inputs)
        index = cap.dump(args.dump_intermediates)
        print(f"  intermediates: {len(cap.values)} values -> {index}")
    if args.profile or args.trace:
        prof = debug.profile(model, inputs, runs=args.repeat)
        if args.profile:
            print(prof.table())
        if args.trace:
            print(f"  trace: {len(prof.events)} events -> {prof.write_trace(args.trace)}")


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a VGF model on .npy inputs and write its outputs")
    p.add_argument("model", nargs="?", help="the .vgf file (or an ExecuTorch .pte with VGF delegates)")
    p.add_argument("--example", action="store_true", help="run the bundled example model on random inputs")
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                   help="an input, in model order (or NAME=FILE); repeat for each input")
    p.add_argument("--output-dir", metavar="DIR", help="write each output to DIR/<name>.npy")
    p.add_argument("--backend", default="cpu", help="cpu (default) or vulkan")
    p.add_argument("--random-inputs", action="store_true", help="feed random inputs instead of files")
    p.add_argument("--seed", type=int, default=0, help="seed of --random-inputs (default 0)")
    p.add_argument("--dump-intermediates", metavar="DIR",
                   help="write every operator's result to DIR (one .npy each, and index.json); cpu")
    p.add_argument("--profile", action="store_true",
                   help="print where the run's time goes: per operator (cpu), per segment (vulkan)")
    p.add_argument("--trace", metavar="FILE", help="write the profiled runs as a Chrome trace (Perfetto)")
    p.add_argument("--repeat", type=_positive, default=1, metavar="N",
                   help="profile N runs after an untimed one (default 1)")
    p.set_defaults(func=_run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive count")
    return value


def _bisect(args: argparse.Namespace) -> int:
    """Exit 0 when the backends agree, 1 with the first operator they disagree on."""
    from . import load
    from .testing.bisection import bisect

    with load(args.model) as model:
        inputs = _inputs(args, model)
        if isinstance(inputs, dict):
            inputs = [inputs.get(i.name, np.zeros(0)) for i in model.inputs]
    first, second = args.backends
    culprit = bisect(args.model, inputs, (_backend(first), _backend(second)), rtol=args.rtol, out=args.out)
    if culprit is None:
        print(f"{first} and {second} agree on every output")
        return 0
    print(culprit)
    return 1


def _backend(name: str):
    """A backend name, or MODULE:FUNCTION naming a function (model bytes, inputs) -> outputs."""
    if ":" not in name:
        return name
    import importlib

    module, _, attr = name.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise VGFError(f"backend {name!r}: {exc}") from None


def _add_bisect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="find the first operator two backends disagree on")
    p.add_argument("model", help="the .vgf file")
    p.add_argument("--backends", nargs=2, required=True, metavar=("A", "B"),
                   help="the two backends: names (cpu, reference, vulkan) or MODULE:FUNCTION, a function "
                   "(model bytes, inputs) -> outputs")
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                   help="an input, in model order (or NAME=FILE); repeat for each input")
    p.add_argument("--random-inputs", action="store_true", help="feed random inputs instead of files")
    p.add_argument("--seed", type=int, default=0, help="seed of --random-inputs (default 0)")
    p.add_argument("--rtol", type=float, help="relative tolerance of floats (default: per dtype)")
    p.add_argument("--out", metavar="DIR", help="where to write the reproducer (default: a new temporary folder)")
    p.set_defaults(func=_bisect)


def _doctor(args: argparse.Namespace) -> int:
    from .hal.cpu import report as cpu_report
    from .hal.vulkan import diagnose  # HalError naming the install command without the extra

    print(cpu_report())
    text, usable = diagnose()
    print(text)
    return 0 if usable else 1


def _add_doctor(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="show the Vulkan devices and whether pyvgf can run on them")
    p.set_defaults(func=_doctor)


BENCH_SUITE = Path(__file__).resolve().parents[1] / "tools" / "bench" / "suite.py"


_BENCH_TOOLS = {
    "distributed": "distributed.py",  # pyvgf.distributed on Ray against a plain loop
    "coldstart": "coldstart.py",  # a machine's first run, numba's cache empty
    "threads": "threads.py",  # pyvgf cpu by thread count, checkouts alternating
}
"""`pyvgf bench NAME ...`: the tool of tools/bench that runs it, else the suite."""


def _bench(args: argparse.Namespace) -> int:
    """Run the benchmark suite of a source checkout: it needs the test-only tools (Arm's
    converters and runners, torch), so it lives in tools/bench/ and is not installed. It runs in
    its own process, so that its --threads reaches BLAS before numpy is imported."""
    import subprocess

    if not BENCH_SUITE.is_file():
        raise SystemExit(
            "pyvgf bench: the benchmark suite is part of a source checkout, not of an installed pyvgf "
            "(it needs Arm's tools and torch): clone the repository and run `pyvgf bench` there"
        )
    tool = _BENCH_TOOLS.get(args.extra[0]) if args.extra else None
    if tool is not None:
        return subprocess.call([sys.executable, str(BENCH_SUITE.with_name(tool)), *args.extra[1:]])
    return subprocess.call([sys.executable, str(BENCH_SUITE), *args.extra])


def _add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", add_help=False,
                       help="benchmark pyvgf against Arm's tools and torch (source checkout; --help for options)")
    p.set_defaults(func=_bench)


def _scenario(args: argparse.Namespace) -> int:
    import runpy

    from . import scenario

    path = args.scenario or args.file
    if not path or (args.scenario and args.file and args.scenario != args.file):
        raise SystemExit(f"{args.prog}: give one scenario file (FILE.json or --scenario FILE.json)")
    if args.repeat < 1:
        raise SystemExit(f"{args.prog}: the repeat count must be at least 1, got {args.repeat}")
    shaders = {}
    for module in args.shaders:
        shaders.update(runpy.run_path(module).get("SHADERS", {}))
    output = Path(args.output) if args.output else Path(path).parent
    plan = scenario.load(path, output)
    result = scenario.run(plan, args.backend, repeat=args.repeat, dry_run=args.dry_run,
                          profiling_dump_path=args.profiling_dump_path, shaders=shaders)
    for out in result.outputs:
        print(out)
    return 0


def _scenario_arguments(p: argparse.ArgumentParser, positional: bool) -> None:
    if positional:
        p.add_argument("file", nargs="?", help="the scenario JSON file")
    p.add_argument("--scenario", required=not positional, metavar="FILE", help="the scenario JSON file")
    p.add_argument("--output", metavar="DIR", help="folder of the dst files (default: the scenario's folder)")
    p.add_argument("--backend", default="cpu", help="cpu (default) or vulkan")
    p.add_argument("--repeat", type=int, default=1, help="run the commands N times (default 1)")
    p.add_argument("--dry-run", action="store_true", help="set everything up; run and write nothing")
    p.add_argument("--profiling-dump-path", metavar="FILE",
                   help="write each repeat's time as pyvgf's profile, a Chrome trace (as pyvgf run --trace)")
    p.add_argument("--shaders", action="append", default=[], metavar="FILE.py",
                   help="Python file whose SHADERS dict maps shader uids or VGF compute module names to "
                        "stand-ins for the cpu backend (repeatable)")
    p.set_defaults(func=_scenario, file=None)


def _add_scenario(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scenario", help="run a scenario JSON file as Arm's scenario_runner does")
    _scenario_arguments(p, positional=True)


def scenario_runner_main(argv: list[str] | None = None) -> int:
    """`pyvgf-scenario-runner`: `pyvgf scenario` with scenario_runner's flags only."""
    parser = argparse.ArgumentParser(prog="pyvgf-scenario-runner",
                                     description="Run a scenario JSON file as Arm's scenario_runner does.")
    _scenario_arguments(parser, positional=False)
    args = parser.parse_args(argv)
    args.prog = parser.prog
    try:
        return args.func(args)
    except (VGFError, ValueError, OSError) as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """Run the `pyvgf` command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="pyvgf", description="Inspect and run VGF models.")
    parser.add_argument("--version", action="version", version=f"pyvgf {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an error, show the Python traceback instead of one line")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_inspect(sub)
    _add_run(sub)
    _add_doctor(sub)
    _add_bisect(sub)
    _add_bench(sub)
    _add_scenario(sub)
    args, args.extra = parser.parse_known_args(argv)
    if "--debug" in args.extra and args.command != "bench":  # also after the subcommand
        args.extra.remove("--debug")
        args.debug = True
    if args.extra and args.command != "bench":
        parser.error(f"unrecognized arguments: {' '.join(args.extra)}")
    args.prog = f"pyvgf {args.command}"
    try:
        return args.func(args)
    except (VGFError, ValueError, OSError, MemoryError, RecursionError) as exc:
        if args.debug:
            raise
        print(f"pyvgf {args.command}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"pyvgf {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the command line never shows a bare traceback
        if args.debug:
            raise
        print(f"pyvgf {args.command}: internal error, please report it with the output of --debug: "
              f"{_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    """An error as one line: its message (or its type when it has none), newlines folded."""
    text = " ".join(str(exc).split())
    if isinstance(exc, VGFError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
