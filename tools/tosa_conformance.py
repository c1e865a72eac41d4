"""TOSA conformance sweep: Arm's per-op test cases run through pyvgf, checked by Arm's verifier.

    python tools/tosa_conformance.py                    # fast selection on cpu, print the table
    python tools/tosa_conformance.py --backend vulkan --jobs 16 --journal J.jsonl --write T.md
    python tools/tosa_conformance.py --selection full --write spec/tosa-coverage.md
    python tools/tosa_conformance.py --ops 'conv2d|add' --show-failures
    python tools/tosa_conformance.py --folder .cache/conformance/fast-KEY --backend vulkan

The cases are what the conformance suite's own generator (tosa_verif_conformance_generator)
makes: every generation group of tosa-tools' cts-config whose profiles/extensions we sweep, with
its generator arguments (ranks 0..6, rank-0 included; RESCALE's unsigned variants) and its
selection (SELECTIONS says how fast and full differ). A prepared `--folder` (generated,
converted and with reference results, e.g. copied from another machine) needs neither the
generator, model-converter nor tosa_reference_model, only tosa-tools' verify library.

For every operator of the TOSA.001000.1 SPIR-V instruction set:
  1. `tosa_verif_build_tests` (tosa-tools) generates positive test cases: a TOSA FlatBuffer,
     input .npy files and desc.json, whose `meta.compliance` says how to judge a result;
  2. `tosa_reference_model --precise_mode=1` computes the reference result (fp64 for float
     tests, plus a bounds tensor where the test needs one);
  3. `model-converter` turns the FlatBuffer into a VGF (a case it refuses is "rejected");
  4. pyvgf runs the VGF as a user does: `pyvgf.load(vgf, backend).run(inputs)` (--backend);
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fixtures import tool  # noqa: E402  (tools/fixtures.py, beside this file)
from pyvgf.elements import BY_TOSA  # noqa: E402

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

PROFILES = ("tosa-pro-int", "tosa-pro-fp")

SELECTIONS = ("fast", "full")
"""How many of the generator's cases are kept. Both make every generation group of the
conformance suite's cts-config whose profiles/extensions are among ours, with the group's own
generator arguments (ranks 0..6, its dtypes and shapes), as tosa_verif_conformance_generator
does. "full": the suite's own selection (its `selector`: every rank x type x rounding...
permutation, up to its maximum, with every value of its full_params such as RESCALE's
input_unsigned / output_unsigned, plus the special full-range and FP special-value tests).
"fast": one case per rank x type (x RESCALE's rounding modes and output types, convolutions'
accumulator types, FFT2D's inverse and the FFTs' local_bound), every unsigned RESCALE variant, no
special tests, and none of the huge-shape argument lists (above MAX_FAST_ELEMENTS elements)."""

MAX_FAST_ELEMENTS = 1 << 16

CTS_CONFIG = "conformance/cts-config_v1.0.json"
"""The conformance suite's test configuration (tosa-tools): generation groups per op."""

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
    def version(package: str) -> str:
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:  # a prepared --folder needs neither tool
            return "not installed"

    return ";".join(f"{p}={version(p)}" for p in ("tosa-tools", "ai-ml-sdk-model-converter"))


# -- 1. generation ----------------------------------------------------------------------------


def _version_ok(entry: dict) -> bool:
    def parse(text: str) -> tuple[int, ...]:
        return tuple(int(x) for x in text.lstrip("v").split("."))

    ours = parse(TOSA_VERSION)
    return parse(entry.get("from_version", "0.0.0")) <= ours <= parse(entry.get("to_version", "99.0.0"))


def _shape_elements(args: list[str]) -> int:
    """The most elements of any --target-shape in a generator argument list (0: none)."""
    if "--target-shape" not in args:
        return 0
    shapes = args[args.index("--target-shape") + 1:]
    shapes = shapes[:next((i for i, a in enumerate(shapes) if a.startswith("--")), len(shapes))]
    return max(int(np.prod([int(d) for d in shape.split(",")])) for shape in shapes)


@dataclass(frozen=True)
class Batch:
    """One tosa_verif_build_tests run: ops sharing a generation group's profiles and arguments."""

    ops: tuple[str, ...]
    profile_ext: str
    """The cts-config generation group's name, e.g. tosa-pro-int or tosa-ext-int16."""
    args: tuple[str, ...]
    random_const: bool
    selections: tuple[tuple[str, str], ...]
    """(op, JSON of its selection criteria) for the selection config of this run."""


FAST_PERMUTES = ("rank", "type", "rounding_mode", "output_dtype", "acc_type")
"""What the fast selection permutes over (where the op's own selection does)."""

FAST_ARGUMENTS = {"fft2d": ("inverse", "local_bound"), "rfft2d": ("local_bound",)}
"""Arguments the fast selection also permutes over for ops whose own selection keeps every
case: the FFTs, whose generator varies nothing else (FFT2D's inverse, each FFT's local_bound)."""


def _fast_criteria(op: str, criteria: dict) -> dict:
    """The fast selection's criteria: one case per rank x type (x RESCALE's rounding modes and
    output types, convolutions' accumulator types, the FFTs' inverse and local_bound), every
    unsigned RESCALE variant, and only test set 0 of the dot-product tests (no shape or kernel
    permutes, specifics or groups)."""
    own = criteria.get("permutes", [])
    permutes = ["rank", "type", *(p for p in FAST_PERMUTES[2:] if p in own), *FAST_ARGUMENTS.get(op, ())]
    unsigned = [p for p in criteria.get("full_params", []) if p in ("input_unsigned", "output_unsigned")]
    return {"permutes": permutes, "full_params": unsigned, "groups": [], "maximum": 1}


def batches(selection: str = "fast", ops: str | None = None) -> list[Batch]:
    """Every generator run of `selection` for the ops matching regex `ops` (lower-case names)."""
    config = json.loads(_site_file(CTS_CONFIG).read_text())
    chosen = set(PROFILES) | set(EXTENSIONS)
    names = [op.lower() for op in tosa_ops() if ops is None or re.search(ops, op.lower())]
    if not names:
        raise ValueError(f"no TOSA 1.0 operator matches {ops!r}")
    grouped: dict[tuple, list[tuple[str, str]]] = defaultdict(list)
    for op in names:
        entry = config.get(op)
        if entry is None or not _version_ok(entry):
            continue
        for gen_name, gen in entry["generation"].items():
            need_all, need_any = set(gen.get("supports_all", [])), set(gen.get("supports_any", []))
            if not need_all <= chosen or (need_any and not need_any & chosen) or not _version_ok(gen):
                continue
            criteria = dict(entry["selection"][gen.get("selector", "default")])
            if selection == "fast":
                criteria = _fast_criteria(op, criteria)
            random_const = "random_const_inputs" in entry.get("support_for", [])
            for args in gen["generator_args"]:
                if selection == "fast" and _shape_elements(args) > MAX_FAST_ELEMENTS:
                    continue
                if selection == "fast" and "--no-special-tests" not in args:
                    args = [*args, "--no-special-tests"]
                key = (gen_name, tuple(args), random_const)
                grouped[key].append((op, json.dumps(criteria, sort_keys=True)))
    return [Batch(tuple(op for op, _ in members), key[0], key[1], key[2], tuple(members))
            for key, members in grouped.items()]


def _generate_batch(batch: Batch, out: Path) -> str:
    """Run tosa_verif_build_tests for one batch into `out`; returns its log."""
    out.mkdir(parents=True, exist_ok=True)
    config = out / "selection.json"
    config.write_text(json.dumps(
        {op: {"selection": {"pyvgf": json.loads(criteria)}} for op, criteria in batch.selections}
    ))
    cmd = [
        tool("tosa_verif_build_tests"), "-o", str(out),
        "--filter", "^(" + "|".join(batch.ops) + ")$",
        *(["--random-const-inputs"] if batch.random_const else []),
        "--tosa-version", TOSA_VERSION,
        "--test-selection-config", str(config), "--test-selection-criteria", "pyvgf",
        "--profile", *PROFILES, "--extension", *EXTENSIONS,
        "--test-type", "positive", *batch.args,
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    log = " ".join(cmd) + "\n" + proc.stdout + proc.stderr
    if proc.returncode != 0 or "ERROR:" in proc.stderr:
        raise RuntimeError(f"tosa_verif_build_tests failed:\n{log[-3000:]}")
    return log


def generate(selection: str = "fast", ops: str | None = None, jobs: int = 1) -> Path:
    """Generate (or reuse) the test cases of `selection` for the ops matching regex `ops`.

    Returns the folder whose tests/ holds one sub-folder per generator run, each holding one
    folder per case (grouped by op). `jobs` generator runs go at once.
    """
    runs = batches(selection, ops)
    key = hashlib.sha256(f"{_versions()}\0{selection}\0{runs}".encode()).hexdigest()[:16]
    out = CACHE / f"{selection}-{key}"
    if (out / ".done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    todo = []
    for batch in runs:
        folder = out / "tests" / hashlib.sha256(repr(batch).encode()).hexdigest()[:12]
        if not (folder / ".done").exists():
            todo.append((batch, folder))

    def one(item: tuple[Batch, Path]) -> str:
        batch, folder = item
        if folder.exists():
            shutil.rmtree(folder)
        log = _generate_batch(batch, folder)
        (folder / ".done").touch()
        return log

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        logs = list(pool.map(one, todo))
    with (out / "generate.log").open("a") as f:
        f.write("\n".join(logs))
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
    def rank0(self) -> bool:
        """Whether an input or output of the case is a rank-0 (scalar) tensor."""
        shapes = [t["shape"] for t in self.desc["meta"]["data_gen"]["tensors"].values()]
        return [] in shapes or [] in self.desc["test_details"]["output_shapes"]

    @property
    def unsigned(self) -> bool:
        """Whether the case reads or writes unsigned values (RESCALE's input/output_unsigned)."""
        return bool(re.search(r"_iu1|_ou1", self.name))

    @property
    def dtypes(self) -> str:
        """The case's type signature: its input tensor types -> its output types."""
        ins = [t["data_type"] for t in self.desc["meta"]["data_gen"]["tensors"].values()]
        outs = self.desc["test_details"]["output_types"]
        return f"{'x'.join(dict.fromkeys(ins))}->{'x'.join(outs)}"


def cases(folder: Path) -> list[Case]:
    """Every test case of the finished generator runs under a generated folder, sorted by name
    (so a sweep can start on a folder whose generation is still going on)."""
    found = []
    for batch in sorted((folder / "tests").iterdir()) if (folder / "tests").is_dir() else []:
        if (batch / ".done").exists():
            for desc in sorted(batch.glob("*/*/desc.json")):
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


def run_model(vgf_path: str | Path, inputs: list[np.ndarray], backend: str = "cpu") -> list[np.ndarray]:
    """Run a VGF the way a user does: `pyvgf.load(path, backend).run(inputs)`.

    `inputs` follow the model's input order (model-converter keeps the TOSA graph's order).
    """
    import pyvgf

    with pyvgf.load(vgf_path, backend=backend) as model:
        return model.run(inputs)


def case_inputs(case: Case) -> list[np.ndarray]:
    """The case's inputs as the generator wrote them; bf16 and fp8, which it stores as raw bytes
    (numpy void or uint8), viewed as their ml_dtypes type. Unsigned RESCALE inputs stay as
    stored: the model takes an integer array of either signedness for them."""
    found = []
    tensors = case.desc["meta"]["data_gen"]["tensors"]
    for name, file in zip(case.desc["ifm_name"], case.desc["ifm_file"]):
        array = np.load(case.path / file)
        row = BY_TOSA.get(tensors[name]["data_type"])
        if row is not None and row.is_float and array.dtype != row.dtype:
            array = array.view(row.dtype)
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
    if a.dtype.kind == "u":  # an unsigned RESCALE result: the verifier takes the signed bits
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


def run_case(case: Case, backend: str = "cpu") -> Outcome:
    """Convert, run (on `backend`) and verify one case."""
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
        got = run_model(vgf, case_inputs(case), backend)
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
    rank0: Counter = field(default_factory=Counter)
    """Status counts of the cases with a rank-0 input or output."""
    unsigned: Counter = field(default_factory=Counter)
    """Status counts of the cases with unsigned inputs or outputs (RESCALE)."""


def tabulate(outcomes: list[Outcome], ops: str | None = None) -> dict[str, OpRow]:
    """Per-op counts; every op matching `ops` gets a row, generated or not."""
    rows = {op: OpRow() for op in tosa_ops() if ops is None or re.search(ops, op.lower())}
    for o in outcomes:
        row = rows.setdefault(o.case.op, OpRow())
        row.generated += 1
        row.converted += o.status in (PASS, FAIL, ERROR)
        row.counts[o.status] += 1
        row.dtypes[o.case.dtypes][o.status] += 1
        if o.case.rank0:
            row.rank0[o.status] += 1
        if o.case.unsigned:
            row.unsigned[o.status] += 1
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


def _ratio(counts: Counter) -> str:
    return f"{counts[PASS]}/{sum(counts.values())}" if counts else "-"


def render(rows: dict[str, OpRow], selection: str, backend: str = "cpu") -> str:
    lines = [
        f"# TOSA 1.0 conformance of pyvgf ({backend} backend)",
        "",
        (
            f"Made by `python tools/tosa_conformance.py --selection {selection} --backend "
            f"{backend} --write FILE` ({_versions()}; TOSA {TOSA_VERSION}, the generation groups "
            f"of the conformance suite's cts-config for profiles PRO-INT and PRO-FP and "
            f"extensions {', '.join(e[9:] for e in EXTENSIONS)})."
        ),
        "",
        (
            "Columns: cases generated by `tosa_verif_build_tests`; converted by `model-converter` "
            "(rejected = it refused the TOSA FlatBuffer); passed/failed = pyvgf's result judged "
            "by tosa-tools' verify library against `tosa_reference_model --precise_mode=1` "
            "(EXACT for integer results, the test's ULP/ABS_ERROR/DOT_PRODUCT/... mode for "
            "floats); error = pyvgf raised; ref-error = the reference model itself failed; "
            "rank 0 and unsigned: passed/generated of the cases with a rank-0 tensor or with "
            "RESCALE's unsigned input or output."
        ),
        "",
        (
            "| op | generated | converted | passed | failed | error | rejected | ref-error | "
            "rank 0 | unsigned | dtypes (passed/generated) |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    rank0, unsigned = Counter(), Counter()
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
            f"| {c[REJECTED]} | {c[REF_ERROR]} | {_ratio(row.rank0)} | {_ratio(row.unsigned)} | {dt} |"
        )
        totals.update({"generated": row.generated, "converted": row.converted, **c})
        rank0.update(row.rank0)
        unsigned.update(row.unsigned)
    lines.append(
        f"| **total** | {totals['generated']} | {totals['converted']} | {totals[PASS]} | "
        f"{totals[FAIL]} | {totals[ERROR]} | {totals[REJECTED]} | {totals[REF_ERROR]} | "
        f"{_ratio(rank0)} | {_ratio(unsigned)} | |"
    )
    lines += [
        "",
        (
            "Not swept: negative (ERROR_IF) tests; extensions int4, int64, shape, controlflow, "
            "variable, dynamic and the MX block-scaled ones (outside TOSA.001000.1 SPIR-V or "
            "without a VkFormat); level 8K sizes"
            + ("; in the fast selection, argument lists with shapes above "
               f"{MAX_FAST_ELEMENTS} elements and special tests." if selection == "fast" else ".")
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


def prepare(found: list[Case], jobs: int = 1) -> None:
    """Convert every case and run the reference model on it, `jobs` at a time (cached)."""

    def one(case: Case) -> None:
        try:
            reference(case)
            convert(case)
        except Exception:  # noqa: BLE001, S110 - run_case records these failures per case
            pass

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, found))


def sweep(
    folder: Path, ops: str | None, journal: Path | None = None, log=None, backend: str = "cpu",
    jobs: int = 1,
) -> list[Outcome]:
    """Run every case of `folder` (those of ops matching `ops`) on `backend`, round-robin over ops.

    With a `journal` (JSON lines), each outcome is appended as it is known and cases already
    in the journal (for this backend) are not run again, so a long sweep can be stopped and
    resumed. The tools' work (conversion, reference results) runs `jobs` cases at a time first.
    """
    done: dict[str, Outcome] = {}
    found = [c for c in cases(folder) if ops is None or re.search(ops, c.op.lower())]
    if journal is not None and journal.exists():
        by_path = {str(c.path.resolve()): c for c in found}
        for line in journal.read_text().splitlines():
            rec = json.loads(line)
            path = str(Path(rec["path"]).resolve())
            if path in by_path and rec.get("backend", "cpu") == backend:
                done[path] = Outcome(by_path[path], rec["status"], rec["message"], rec["seconds"])
    prepare([c for c in found if str(c.path.resolve()) not in done], jobs)
    outcomes = []
    for case in _interleaved(found):
        outcome = done.get(str(case.path.resolve()))
        if outcome is None:
            outcome = run_case(case, backend)
            if journal is not None:
                with journal.open("a") as f:
                    rec = {"path": str(case.path.resolve()), "backend": backend, "status": outcome.status,
                           "message": outcome.message, "seconds": outcome.seconds}  # fmt: skip
                    f.write(json.dumps(rec) + "\n")
            if log is not None:
                print(f"{outcome.status:9} {case.op:22} {case.name} {outcome.message[:200]}", file=log)
        outcomes.append(outcome)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--selection", choices=SELECTIONS, default="fast")
    parser.add_argument("--backend", choices=("cpu", "vulkan"), default="cpu")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="generator, converter and reference-model processes at once")
    parser.add_argument("--ops", help="regex on lower-case op names (default: all 66)")
    parser.add_argument("--folder", type=Path,
                        help="sweep the cases already in this folder (generated with --selection)")
    parser.add_argument("--journal", type=Path, help="append outcomes here (JSON lines), resume")
    parser.add_argument("--write", type=Path, help="write the Markdown table to this file")
    parser.add_argument("--show-failures", action="store_true", help="print every non-pass case")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    folder = args.folder or generate(args.selection, args.ops, args.jobs)
    print(f"generated in {time.perf_counter() - start:.0f} s: {folder}", file=sys.stderr)
    log = sys.stderr if args.verbose else None
    outcomes = sweep(folder, args.ops, args.journal, log, args.backend, args.jobs)
    print(f"swept {len(outcomes)} cases in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    table = render(tabulate(outcomes, args.ops), args.selection, args.backend)
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
