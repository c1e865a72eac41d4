"""TOSA conformance sweep: Arm's per-op test cases run through pyvgf, checked by Arm's verifier.

    python tools/tosa_conformance.py                    # fast selection, print the table
    python tools/tosa_conformance.py --selection full --write spec/tosa-coverage.md
    python tools/tosa_conformance.py --ops 'conv2d|add' --show-failures

For every operator of the TOSA.001000.1 SPIR-V instruction set:
  1. `tosa_verif_build_tests` (tosa-tools) generates positive test cases: a TOSA FlatBuffer,
     input .npy files and desc.json, whose `meta.compliance` says how to judge a result;
  2. `tosa_reference_model --precise_mode=1` computes the reference result (fp64 for float
     tests, plus a bounds tensor where the test needs one);
  3. `model-converter` turns the FlatBuffer into a VGF (a case it refuses is "rejected");
  4. pyvgf runs the VGF: pyvgf.format.read -> the GRAPH module's SPIR-V -> decode_graph ->
     GraphPlan with the segment's graph constants -> run on the test inputs;
  5. tosa-tools' verify library (`tvf_verify_data`, the code behind `tosa_verify`) judges the
     result with the test's compliance mode: EXACT for integers, ULP / ABS_ERROR / DOT_PRODUCT /
     REDUCE_PRODUCT / RESIZE... for floats, exactly as the TOSA conformance suite does.

Everything the tools produce is cached under .cache/conformance, keyed by the tools' versions
and arguments, so only pyvgf itself runs again on a second sweep.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fixtures import tool  # noqa: E402  (tools/fixtures.py, beside this file)

CACHE = Path(os.environ.get("PYVGF_CONFORMANCE_CACHE", ROOT / ".cache" / "conformance"))
TOSA_VERSION = "1.0.0"
TOOL_TIMEOUT_S = 300

EXTENSIONS = (
    "tosa-ext-int16",
    "tosa-ext-bf16",
    "tosa-ext-fp8e4m3",
    "tosa-ext-fp8e5m2",
    "tosa-ext-fft",
    "tosa-ext-doubleround",
    "tosa-ext-inexactround",
)
"""The TOSA 1.0 extensions whose tests are generated (besides the two profiles)."""

SELECTIONS: dict[str, list[str]] = {
    # One case per (op, type permutation), tensor dims 1..16 (fp dot-product tests need >= 1000
    # multiply-accumulates, so smaller ranges drop every float convolution).
    "fast": ["--tensor-dim-range", "1,16", "--no-special-tests"],
    # The conformance suite's own "default" selection (cts-config) over the same dims, with the
    # special full-range and FP special-value tests.
    "full": ["--tensor-dim-range", "1,16"],
}

FFT_OPS = ("FFT2D", "RFFT2D")
FFT_ARGS = ["--target-shape", "1,32,32", "2,16,64"]
"""FFT tests need power-of-two sizes and >= 1000 calculations: they get shapes of their own."""


# -- the operator set -------------------------------------------------------------------------


@functools.cache
def tosa_ops() -> tuple[str, ...]:
    """The 66 operators of the TOSA.001000.1 SPIR-V extended instruction set, in opcode order."""
    path = _site_file("cmeel.prefix/include/spirv/unified1/extinst.tosa.001000.1.grammar.json")
    insts = json.loads(path.read_text())["instructions"]
    return tuple(i["opname"] for i in sorted(insts, key=lambda i: i["opcode"]))


def _site_file(relative: str) -> Path:
    for entry in sys.path:
        candidate = Path(entry) / relative
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(relative)


@functools.cache
def _native(name: str) -> str:
    """The native executable behind a pip console script, run directly: the Python shims cost
    an interpreter start per call, which dominates a sweep of thousands of small cases."""
    if name == "tosa_reference_model":
        path = Path(importlib.metadata.distribution("tosa-tools").locate_file(f"bin/{name}"))
    elif name == "model-converter":
        import model_converter

        path = Path(model_converter.__file__).parent / "binaries" / "bin" / name
    else:
        path = None
    return str(path) if path is not None and path.is_file() else tool(name)


@functools.cache
def _versions() -> str:
    return ";".join(
        f"{p}={importlib.metadata.version(p)}"
        for p in ("tosa-tools", "ai-ml-sdk-model-converter")
    )


# -- 1. generation ----------------------------------------------------------------------------


def _selection_config(path: Path, criteria: str) -> Path:
    """The conformance suite's cts-config, or (fast) one test per dtype permutation per op."""
    if criteria == "default":
        return _site_file("conformance/cts-config_v1.0.json")
    config = {
        op.lower(): {"selection": {criteria: {"permutes": ["type"], "maximum": 1}}}
        for op in tosa_ops()
    }
    path.write_text(json.dumps(config, indent=1))
    return path


def generate(selection: str = "fast", ops: str | None = None) -> Path:
    """Generate (or reuse) the test cases of `selection` for the ops matching regex `ops`.

    Returns the folder whose tests/ holds one sub-folder per case (grouped by op).
    """
    names = [op for op in tosa_ops() if ops is None or re.search(ops, op.lower())]
    if not names:
        raise ValueError(f"no TOSA 1.0 operator matches {ops!r}")
    criteria = "default" if selection == "full" else selection
    common = [
        "--tosa-version", TOSA_VERSION,
        "--test-type", "positive",
        "--profile", "tosa-pro-int", "tosa-pro-fp",
        "--extension", *EXTENSIONS,
        *SELECTIONS[selection],
    ]  # fmt: skip
    groups = [
        ([n for n in names if n not in FFT_OPS], []),
        ([n for n in names if n in FFT_OPS], FFT_ARGS),
    ]
    runs = [
        [*common, *extra, "--filter", "^(" + "|".join(n.lower() for n in group) + ")$"]
        for group, extra in groups
        if group
    ]
    key = hashlib.sha256(f"{_versions()}\0{criteria}\0{runs}".encode()).hexdigest()[:16]
    out = CACHE / f"{selection}-{key}"
    if (out / ".done").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    config = _selection_config(out / "selection.json", criteria)
    log = []
    for args in runs:
        cmd = [
            tool("tosa_verif_build_tests"), "-o", str(out / "tests"), *args,
            "--test-selection-config", str(config), "--test-selection-criteria", criteria,
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        log.append(" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
        (out / "generate.log").write_text("\n".join(log))
        if proc.returncode != 0:
            raise RuntimeError(f"tosa_verif_build_tests failed, see {out / 'generate.log'}")
    (out / ".done").touch()
    return out


@dataclass
class Case:
    """One generated test case."""

    path: Path
    desc: dict

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def op(self) -> str:
        return self.desc["test_details"]["operator"]

    @property
    def dtypes(self) -> str:
        """The case's type signature: its input tensor types -> its output types."""
        ins = [t["data_type"] for t in self.desc["meta"]["data_gen"]["tensors"].values()]
        outs = self.desc["test_details"]["output_types"]
        return f"{'x'.join(dict.fromkeys(ins))}->{'x'.join(outs)}"


def cases(folder: Path) -> list[Case]:
    """Every test case under a generated folder, sorted by name."""
    found = []
    for desc in sorted((folder / "tests").glob("**/desc.json")):
        found.append(Case(desc.parent, json.loads(desc.read_text())))
    return found


# -- 2. reference -----------------------------------------------------------------------------


def reference(case: Case) -> tuple[list[np.ndarray], list[np.ndarray | None]]:
    """The reference model's results (precise mode) and bounds (None where not needed)."""
    ref = case.path / "ref"
    done = ref / ".done"
    if not done.exists():
        ref.mkdir(exist_ok=True)
        proc = subprocess.run(
            [
                _native("tosa_reference_model"), "--test_desc", str(case.path / "desc.json"),
                "--output_dir", str(ref), "--precise_mode=1",
            ],
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tosa_reference_model failed:\n{proc.stdout}\n{proc.stderr}")
        done.touch()
    results, bounds = [], []
    for name in case.desc["ofm_file"]:
        results.append(np.load(ref / name))
        bnd = ref / f"bounds_{name}"
        bounds.append(np.load(bnd) if bnd.exists() else None)
    return results, bounds


# -- 3. conversion ----------------------------------------------------------------------------


class ConverterRejected(Exception):
    """model-converter refused the TOSA FlatBuffer (its message is the exception's)."""


def convert(case: Case) -> Path:
    """The VGF that model-converter makes from the case's TOSA FlatBuffer (cached)."""
    vgf = case.path / "test.vgf"
    log = case.path / "convert.log"
    if vgf.exists():
        return vgf
    if log.exists():
        raise ConverterRejected(log.read_text())
    tmp = case.path / f"test.vgf.{os.getpid()}.tmp"
    proc = subprocess.run(
        [_native("model-converter"), "-i", str(case.path / case.desc["tosa_file"]), "-o", str(tmp)],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0 or not tmp.exists():
        message = _converter_message(proc.stdout + proc.stderr)
        log.write_text(message)
        tmp.unlink(missing_ok=True)
        raise ConverterRejected(message)
    tmp.replace(vgf)
    return vgf


def _converter_message(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and "VGF [debug]" not in ln]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return "\n".join(errors or lines[-3:]) or "model-converter failed without a message"


# -- 4. pyvgf ---------------------------------------------------------------------------------


def run_vgf(vgf_path: str | Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a single-graph-segment VGF through pyvgf's parts directly.

    pyvgf.format.read -> the segment's GRAPH module -> decode_graph -> GraphPlan bound to the
    segment's graph constants -> run. `inputs` follow the model sequence's input order; the
    outputs follow its output order. An input may differ from the declared shape only where
    the element count agrees (model-converter turns rank-0 tensors into shape [1]), and from the
    declared integer type only in signedness (the bits are kept).
    """
    import pyvgf.tosa  # noqa: F401  (registers the operators)
    from pyvgf.format import ModuleType, read
    from pyvgf.spirv import decode_graph
    from pyvgf.tosa.interpreter import GraphPlan

    vgf = read(vgf_path)
    segments = vgf.sequence.segments
    if len(segments) != 1 or segments[0].type != ModuleType.GRAPH:
        raise ValueError(f"{vgf_path}: run_vgf handles one GRAPH segment, not {segments}")
    segment = segments[0]
    graph = decode_graph(vgf.modules[segment.module_index].code)
    constants = {}
    for binding in segment.graph_constants():
        if binding.graph_constant_id not in graph.constants:
            continue
        ttype = graph.constants[binding.graph_constant_id]
        raw = vgf.constants[binding.constant_table_index].data
        constants[binding.graph_constant_id] = (
            np.frombuffer(raw, dtype=ttype.dtype).reshape(ttype.shape)
        )
    plan = GraphPlan(graph, constants)
    by_slot = {slot.mrt_index: k for k, slot in enumerate(vgf.sequence.inputs)}
    graph_inputs = []
    for slot, declared in zip(segment.inputs, graph.inputs):
        value = np.asarray(inputs[by_slot[slot.mrt_index]])
        ttype = declared.type
        same_width = value.dtype.itemsize == ttype.dtype.itemsize
        if value.dtype.kind in "iu" and ttype.dtype.kind in "iu" and same_width:
            value = value.view(ttype.dtype)  # same bits: unsigned RESCALE data
        if value.dtype != ttype.dtype or value.size != int(np.prod(ttype.shape)):
            raise ValueError(f"input {slot.mrt_index}: {value.dtype}{value.shape} given for {ttype}")
        graph_inputs.append(value.reshape(ttype.shape))  # the VGF stores rank 0 as shape [1]
    results = plan.run(graph_inputs)
    out_slot = {slot.mrt_index: i for i, slot in enumerate(segment.outputs)}
    return [results[out_slot[slot.mrt_index]] for slot in vgf.sequence.outputs]


_RAW_TYPES = {
    "BF16": ml_dtypes.bfloat16,
    "FP8E4M3": ml_dtypes.float8_e4m3fn,
    "FP8E5M2": ml_dtypes.float8_e5m2,
}


def case_inputs(case: Case) -> list[np.ndarray]:
    """The case's inputs as pyvgf takes them: the generator stores bf16 and fp8 as raw bytes
    (numpy void or uint8) and unsigned RESCALE inputs as uint8/uint16."""
    found = []
    tensors = case.desc["meta"]["data_gen"]["tensors"]
    for name, file in zip(case.desc["ifm_name"], case.desc["ifm_file"]):
        array = np.load(case.path / file)
        raw = _RAW_TYPES.get(tensors[name]["data_type"])
        if raw is not None:
            array = array.view(raw)
        found.append(array)
    return found


# -- 5. verification --------------------------------------------------------------------------


@functools.cache
def _verifier():
    from checker.verifier import VerifierLibrary

    return VerifierLibrary(_site_file("tosa_reference_model/libtosa_reference_verify_lib.so"))


def _verify_array(actual: np.ndarray, data_type: str) -> np.ndarray:
    """pyvgf's result in the numpy type checker.verifier maps to `data_type`'s client type."""
    a = np.ascontiguousarray(actual)
    if data_type == "BF16":
        return a.view(np.dtype("V2"))
    if data_type == "FP8E4M3":
        return a.view(np.dtype("V1"))
    if data_type == "FP8E5M2":
        return a.view(np.uint8)
    if data_type in ("INT48", "SHAPE"):
        return a.astype(np.int64)
    if a.dtype.kind == "u" and a.dtype.itemsize > 1:
        return a.view(a.dtype.str.replace("u", "i"))
    return a


def verify(case: Case, actual: list[np.ndarray]) -> str | None:
    """None when every output is compliant, otherwise what is wrong."""
    refs, bounds = reference(case)
    compliance = case.desc["meta"]["compliance"]
    problems = []
    for name, shape, ref, bnd, got in zip(
        case.desc["ofm_name"], case.desc["test_details"]["output_shapes"], refs, bounds, actual
    ):
        data_type = compliance["tensors"][name]["data_type"]
        if shape == [] and got.shape == (1,):
            got = got.reshape(())  # model-converter declares rank-0 results as shape [1]
        if tuple(got.shape) != tuple(shape):
            problems.append(f"{name}: shape {list(got.shape)}, expected {shape}")
            continue
        config = compliance
        if shape == []:
            # The verify library cannot compare rank-0 tensors (it reports a rank mismatch
            # even for the reference against itself): compare them as shape [1].
            config = json.loads(json.dumps(compliance))
            config["tensors"][name]["shape"] = [1]
            got, ref = got.reshape(1), ref.reshape(1)
            bnd = None if bnd is None else bnd.reshape(1)
        ok = _verifier().verify_data(name, config, _verify_array(got, data_type), ref, bnd)
        if not ok:
            problems.append(f"{name}: not compliant ({_first_difference(got, ref)})")
    if len(actual) != len(refs):
        problems.append(f"{len(actual)} outputs, expected {len(refs)}")
    return "; ".join(problems) or None


def _first_difference(got: np.ndarray, ref: np.ndarray) -> str:
    g = got.astype(np.float64) if got.dtype.kind != "b" else got.astype(np.int8)
    r = ref.astype(np.float64) if ref.dtype.kind != "b" else ref.astype(np.int8)
    diff = ~np.isclose(g, r, rtol=0, atol=0, equal_nan=True)
    if not diff.any():
        return "values equal within rounding of the reference type"
    idx = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return f"{int(diff.sum())}/{diff.size} differ, first at {list(idx)}: got {g[idx]}, ref {r[idx]}"


# -- the sweep --------------------------------------------------------------------------------

PASS, FAIL, REJECTED, ERROR, REF_ERROR = "pass", "fail", "rejected", "error", "ref-error"


@dataclass
class Outcome:
    case: Case
    status: str
    message: str = ""
    seconds: float = 0.0


def run_case(case: Case) -> Outcome:
    """Convert, run and verify one case."""
    start = time.perf_counter()
    try:
        reference(case)
    except Exception as exc:  # noqa: BLE001 - the reference model's own failure is recorded
        return Outcome(case, REF_ERROR, str(exc).strip().splitlines()[-1])
    try:
        vgf = convert(case)
    except ConverterRejected as exc:
        return Outcome(case, REJECTED, str(exc))
    try:
        got = run_vgf(vgf, case_inputs(case))
    except Exception as exc:  # noqa: BLE001 - every pyvgf failure is a finding to report
        return Outcome(case, ERROR, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    problem = verify(case, got)
    status = FAIL if problem else PASS
    return Outcome(case, status, problem or "", time.perf_counter() - start)


@dataclass
class OpRow:
    generated: int = 0
    converted: int = 0
    counts: Counter = field(default_factory=Counter)
    dtypes: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    causes: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def tabulate(outcomes: list[Outcome], ops: str | None = None) -> dict[str, OpRow]:
    """Per-op counts; every op matching `ops` gets a row, generated or not."""
    rows = {op: OpRow() for op in tosa_ops() if ops is None or re.search(ops, op.lower())}
    for o in outcomes:
        row = rows.setdefault(o.case.op, OpRow())
        row.generated += 1
        row.converted += o.status in (PASS, FAIL, ERROR)
        row.counts[o.status] += 1
        row.dtypes[o.case.dtypes][o.status] += 1
        if o.status != PASS:
            cause = f"{o.status}: {_cause(o.message)}"
            row.causes[cause] += 1
            row.examples[cause].append(o.case.name)
    return rows


def _cause(message: str) -> str:
    """A failure message with its case-specific parts blanked, to group alike failures."""
    text = message.splitlines()[0] if message else ""
    text = re.sub(r"^<unknown>:\d+: error: ", "model-converter: ", text)
    text = re.sub(r"\(\d+/\d+ differ, first at .*: got (nan|-?inf), ref (-?[\d.e+-]+)\)",
                  r"(values differ: pyvgf gives \1 where the reference is finite)", text)
    text = re.sub(r"\(\d+/\d+ differ, first at .*", "(values differ)", text)
    text = re.sub(r"\s*%\d+|\s*\(word \d+\)", "", text)
    text = re.sub(r"<(\d+x)+", "<", text)  # tensor<1x11x9xi1> -> tensor<i1>
    return text[:200]


def render(rows: dict[str, OpRow], selection: str) -> str:
    lines = [
        "# TOSA 1.0 conformance of pyvgf",
        "",
        (
            "Made by `python tools/tosa_conformance.py --selection "
            f"{selection} --write spec/tosa-coverage.md` ({_versions()}; TOSA {TOSA_VERSION}, "
            f"profiles PRO-INT and PRO-FP, extensions {', '.join(e[9:] for e in EXTENSIONS)})."
        ),
        "",
        (
            "Columns: cases generated by `tosa_verif_build_tests`; converted by `model-converter` "
            "(rejected = it refused the TOSA FlatBuffer); passed/failed = pyvgf's result judged "
            "by tosa-tools' verify library against `tosa_reference_model --precise_mode=1` "
            "(EXACT for integer results, the test's ULP/ABS_ERROR/DOT_PRODUCT/... mode for "
            "floats); error = pyvgf raised; ref-error = the reference model itself failed."
        ),
        "",
        (
            "| op | generated | converted | passed | failed | error | rejected | ref-error | "
            "dtypes (passed/generated) |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    totals = Counter()
    for op, row in rows.items():
        c = row.counts
        dt = ", ".join(
            f"{sig} {cnt[PASS]}/{sum(cnt.values())}" for sig, cnt in sorted(row.dtypes.items())
        )
        if row.generated == 0:
            dt = "no case generated"
        lines.append(
            f"| {op} | {row.generated} | {row.converted} | {c[PASS]} | {c[FAIL]} | {c[ERROR]} "
            f"| {c[REJECTED]} | {c[REF_ERROR]} | {dt} |"
        )
        totals.update({"generated": row.generated, "converted": row.converted, **c})
    lines.append(
        f"| **total** | {totals['generated']} | {totals['converted']} | {totals[PASS]} | "
        f"{totals[FAIL]} | {totals[ERROR]} | {totals[REJECTED]} | {totals[REF_ERROR]} | |"
    )
    lines += [
        "",
        (
            "Not swept: negative (ERROR_IF) tests; extensions int4, int64, shape, controlflow, "
            "variable, dynamic and the MX block-scaled ones (outside TOSA.001000.1 SPIR-V or "
            "without a VkFormat); tensor dimensions above 16 (level 8K sizes)."
        ),
        "",
        "## Known gaps and their causes",
        "",
    ]
    for op, row in rows.items():
        if row.generated == 0:
            lines.append(f"- {op}: the generator made no TOSA 1.0 case with these profiles.")
        for cause, n in row.causes.most_common():
            cases = ", ".join(f"`{name}`" for name in sorted(row.examples[cause])[:3])
            lines.append(f"- {op}: {n} × {cause} (e.g. {cases})")
    return "\n".join(lines) + "\n"


def _interleaved(found: list[Case]) -> list[Case]:
    """Cases round-robin over ops, so that a sweep cut short still covers every op."""
    by_op: dict[str, list[Case]] = defaultdict(list)
    for case in found:
        by_op[case.op].append(case)
    queues = [by_op[op] for op in sorted(by_op)]
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def sweep(
    folder: Path, ops: str | None, journal: Path | None = None, log=None
) -> list[Outcome]:
    """Run every case of `folder` (those of ops matching `ops`), round-robin over ops.

    With a `journal` (JSON lines), each outcome is appended as it is known and cases already
    in the journal are not run again, so a long sweep can be stopped and resumed.
    """
    done: dict[str, Outcome] = {}
    found = [c for c in cases(folder) if ops is None or re.search(ops, c.op.lower())]
    if journal is not None and journal.exists():
        by_path = {str(c.path.resolve()): c for c in found}
        for line in journal.read_text().splitlines():
            rec = json.loads(line)
            path = str(Path(rec["path"]).resolve())
            if path in by_path:
                done[path] = Outcome(by_path[path], rec["status"], rec["message"], rec["seconds"])
    outcomes = []
    for case in _interleaved(found):
        outcome = done.get(str(case.path.resolve()))
        if outcome is None:
            outcome = run_case(case)
            if journal is not None:
                with journal.open("a") as f:
                    rec = {"path": str(case.path.resolve()), "status": outcome.status,
                           "message": outcome.message, "seconds": outcome.seconds}  # fmt: skip
                    f.write(json.dumps(rec) + "\n")
            if log is not None:
                print(f"{outcome.status:9} {case.op:22} {case.name} {outcome.message[:200]}", file=log)
        outcomes.append(outcome)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--selection", choices=sorted(SELECTIONS), default="fast")
    parser.add_argument("--ops", help="regex on lower-case op names (default: all 66)")
    parser.add_argument("--folder", type=Path,
                        help="sweep the cases already in this folder (generated with --selection)")
    parser.add_argument("--journal", type=Path, help="append outcomes here (JSON lines), resume")
    parser.add_argument("--write", type=Path, help="write the Markdown table to this file")
    parser.add_argument("--show-failures", action="store_true", help="print every non-pass case")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    folder = args.folder or generate(args.selection, args.ops)
    log = sys.stderr if args.verbose else None
    outcomes = sweep(folder, args.ops, args.journal, log)
    print(f"swept {len(outcomes)} cases in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    table = render(tabulate(outcomes, args.ops), args.selection)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(table)
    print(table)
    if args.show_failures:
        for o in outcomes:
            if o.status != PASS:
                print(f"{o.status:9} {o.case.op:22} {o.case.path}\n          {o.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
