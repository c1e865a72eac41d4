"""Cut a disagreement between two backends down to the first operator that causes it.

`bisect(model, inputs, backends=(a, b))` runs the whole model on both backends; when their
outputs differ beyond the tolerance (`tolerance`, as `assert_backends_agree` compares), it
captures every intermediate value on the reference executor, then runs each operator alone on
both backends, as a one-operator VGF written by `pyvgf.build` and fed the reference's values of
its operands, and names the first operator, in graph order, whose results differ.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..build import Graph
from ..build.signatures import ENUMERATIONS, Kind, signature
from ..debug.capture import storable
from ..errors import TosaError
from ..spirv.graph import Const, GraphConstant, Input, Node, Operand, Result
from .compare import Backend, _mismatch, _run, tolerance


@dataclass
class Culprit:
    """The first operator the two backends disagree on, run alone (see `bisect`).

    `op_index` is its position among its segment graph's operators (module order), `op` its
    TOSA name, `id` its SPIR-V result id, `name` its OpName and `location` its OpLine, if any;
    `attributes` its non-tensor operands (by grammar name, enumerations by spec name); `shapes`
    each tensor operand's type and the result's; `max_error` the largest absolute difference of the results;
    `reproducer` the folder holding the one-op VGF, its MLIR, its inputs and both results.
    `op_index` is None when the whole model disagreed but no operator did alone (`mismatch` says
    how the whole model disagreed, `skipped` which operators could not be run alone)."""

    backends: tuple[str, str]
    segment: int | None
    op_index: int | None
    op: str | None
    id: int | None = None
    name: str | None = None
    attributes: dict[str, object] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)
    max_error: float = 0.0
    mismatch: str = ""
    reproducer: Path | None = None
    skipped: list[str] = field(default_factory=list)
    location: str | None = None

    def __str__(self) -> str:
        a, b = self.backends
        if self.op_index is None:
            lines = [f"{a} and {b} disagree on the model's outputs ({self.mismatch}), but on no operator alone"]
        else:
            name = (f' "{self.name}"' if self.name else "") + (f" at {self.location}" if self.location else "")
            lines = [f"first operator where {a} and {b} disagree: segment {self.segment} op {self.op_index} "
                     + f"{self.op} %{self.id}{name}",
                     f"  {self.mismatch}; max error {self.max_error:g}"]
            lines += [f"  {k}: {v}" for k, v in self.shapes.items()]
            if self.attributes:
                lines.append("  attributes: " + ", ".join(f"{k}={v}" for k, v in self.attributes.items()))
            if self.reproducer is not None:
                lines.append(f"  reproducer: {self.reproducer}")
        if self.skipped:
            lines.append(f"  not run alone: {'; '.join(self.skipped)}")
        return "\n".join(lines)


def _name(backend: Backend) -> str:
    return backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))


def _first_mismatch(got: Sequence[np.ndarray], want: Sequence[np.ndarray], rtol: float | None) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} outputs against {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        problem = _mismatch(g, w, tolerance(w.dtype) if rtol is None else rtol)
        if problem:
            return f"output {k}: {problem}"
    return None


def _max_error(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> float:
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape == w.shape and g.size:
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
            worst = max(worst, float(np.nanmax(diff)) if not np.isnan(diff).all() else float("nan"))
    return worst


def bisect(model: bytes | str | Path, inputs: Sequence[np.ndarray], backends: Sequence[Backend] = ("cpu", "vulkan"),
           *, rtol: float | None = None, out: str | Path | None = None, reference: str = "reference") -> Culprit | None:
    """None when `backends` (two names or functions (model bytes, inputs) -> outputs, as
    `assert_backends_agree` takes them) agree on `model`'s outputs for `inputs`; else the first
    operator, in graph order, whose results differ when it runs alone on both, fed the values the
    `reference` executor (the plain numpy interpreter unless given) computed for its operands.
    The reproducer of that operator is written under `out` (a new temporary folder when not
    given)."""
    if len(backends) != 2:
        raise ValueError("bisect compares exactly two backends")
    data = model if isinstance(model, bytes) else Path(model).read_bytes()
    inputs = [np.asarray(a) for a in inputs]
    first, second = backends
    names = (_name(first), _name(second))
    whole = _disagreement(_run(first, data, inputs), _attempt(second, data, inputs), names[1], rtol)
    if whole is None:
        return None
    from ..debug.capture import capture
    from ..runtime import load

    skipped: list[str] = []
    with load(data, backend=reference) as ref:
        cap = capture(ref, inputs)
        for segment, plan in enumerate(ref._schedule.segments):
            graph_plan = getattr(plan.pipeline, "plan", None)  # None: a compute segment
            if graph_plan is None:
                continue
            graph, constants = graph_plan.graph, graph_plan.constants
            for op_index, node in enumerate(graph.nodes):
                try:
                    one = _one_op(node, functools.partial(_value, cap, segment), constants)
                except (TosaError, KeyError) as exc:
                    skipped.append(f"op {op_index} {node.op}: {exc}")
                    continue
                g, feeds, attributes = one
                blob = g.to_bytes()
                got_a, got_b = _attempt(first, blob, feeds), _attempt(second, blob, feeds)
                if isinstance(got_a, str) and isinstance(got_b, str):  # neither runs it alone
                    skipped.append(f"op {op_index} {node.op}: both backends failed ({got_a})")
                    continue
                problem: str | None
                if isinstance(got_a, str) or isinstance(got_b, str):  # one fails: a finding
                    problem = f"{names[0]} {got_a}" if isinstance(got_a, str) else f"{names[1]} {got_b}"
                    error = float("nan")
                else:
                    problem = _first_mismatch(got_b, got_a, rtol)
                    error = _max_error(got_b, got_a)
                if problem is None:
                    continue
                culprit = Culprit(names, segment, op_index, node.op, node.id, node.name, attributes, _shapes(g),
                                  error, problem, skipped=skipped, location=node.location)
                culprit.reproducer = _reproducer(culprit, g, blob, feeds, (got_a, got_b), out)
                return culprit
    return Culprit(names, None, None, None, mismatch=whole, skipped=skipped)


def _attempt(backend: Backend, model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray] | str:
    """The backend's outputs, or what it raised ("raised TYPE: MESSAGE")."""
    try:
        return _run(backend, model, inputs)
    except Exception as exc:  # noqa: BLE001 - a backend failing on an operator is a finding
        return f"raised {type(exc).__name__}: {exc}"


def _disagreement(want: list[np.ndarray], got: list[np.ndarray] | str, name: str, rtol: float | None) -> str | None:
    if isinstance(got, str):
        return f"{name} {got}"
    return _first_mismatch(got, want, rtol)


def _value(cap, segment: int, operand: Operand) -> np.ndarray:
    if isinstance(operand, Input):
        return cap.inputs[segment][operand.index]
    assert isinstance(operand, Result)
    return cap.find(segment, operand.node, operand.element).value


def _shapes(g: Graph) -> dict[str, str]:
    """The type of each tensor operand of a one-op graph's op (constants marked), and its result's."""
    node = g.nodes[g.outputs[0].node]
    shapes = {}
    for name, value in node.operands.items():
        for i, part in enumerate(value if isinstance(value, list) else [value]):
            if hasattr(part, "spec"):
                key = f"{name}[{i}]" if isinstance(value, list) else name
                kind = g.nodes[part.node].kind
                shapes[key] = str(part.spec) + (" (constant)" if kind == "constant" else "")
    results = node.result if isinstance(node.result, tuple) else (node.result,)
    shapes["result"] = ", ".join(map(str, results))
    return shapes


def _one_op(node: Node, value_of: Callable[[Operand], np.ndarray],
            constants: dict[int, np.ndarray]) -> tuple[Graph, list[np.ndarray], dict[str, object]]:
    """A graph of `node` alone: its run-time operands become inputs (fed `value_of` them),
    its constants constants; with the inputs and the attributes it was given."""
    g = Graph()
    feeds: list[np.ndarray] = []
    made: dict[int, object] = {}
    attributes: dict[str, object] = {}
    operands: dict[str, object] = {}

    def tensor(part: Operand) -> object:
        if isinstance(part, (Input, Result)):
            if part.id not in made:
                made[part.id] = g.input(part.type.dtype, part.type.shape)
                feeds.append(value_of(part))
            return made[part.id]
        if isinstance(part, GraphConstant):
            return np.asarray(constants[part.constant_id])
        return np.asarray(part.value)  # type: ignore[union-attr]

    for name, kind in signature(node.op):
        given = node.operands.get(name)
        if given is None:
            continue
        if kind is Kind.TENSOR:
            operands[name] = [tensor(p) for p in given] if isinstance(given, tuple) else tensor(given)
            continue
        if not isinstance(given, Const):
            raise TosaError(f"{node.op} attribute {name} is not a constant")
        operands[name] = attributes[name] = _attribute(name, kind, given.value)
    if not feeds:
        raise TosaError("all its operands are constants (pyvgf folds it when planning)")
    rtype = node.result_type
    result = [(t.dtype, t.shape) for t in rtype] if isinstance(rtype, tuple) else (rtype.dtype, rtype.shape)
    results = g.op(node.op, result=result, debug_name=node.name, **operands)
    g.output(*(results if isinstance(results, tuple) else (results,)))  # FFT2D, RFFT2D: both
    return g, feeds, attributes


def _attribute(name: str, kind: Kind, value: object) -> object:
    if kind is Kind.ENUM:
        names = {v: k for k, v in ENUMERATIONS[name].items()}
        return names.get(int(value), int(value))  # type: ignore[call-overload]
    if kind is Kind.BOOL:
        return bool(value)
    if kind is Kind.INT:
        return int(value)  # type: ignore[call-overload]
    if kind is Kind.VALUE:
        return np.asarray(value).reshape(-1)[0].item()
    return tuple(int(v) for v in np.asarray(value).reshape(-1))


def _reproducer(culprit: Culprit, g: Graph, blob: bytes, feeds: list[np.ndarray],
                results: tuple[list[np.ndarray] | str, list[np.ndarray] | str], out: str | Path | None) -> Path:
    """Write the one-op VGF, its MLIR, its inputs, both backends' results (or error.NAME.txt,
    what one raised) and culprit.json."""
    root = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="pyvgf-bisect-"))
    folder = root / f"s{culprit.segment}_op{culprit.op_index:04d}_{culprit.op}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "op.vgf").write_bytes(blob)
    (folder / "op.mlir").write_text(g.to_mlir())
    for k, array in enumerate(feeds):
        np.save(folder / f"input_{k}.npy", storable(array)[0])
    for backend, got in zip(culprit.backends, results):
        safe = re.sub(r"[^\w.-]", "_", backend)
        if isinstance(got, str):
            (folder / f"error.{safe}.txt").write_text(got + "\n")
            continue
        for k, array in enumerate(got):
            np.save(folder / f"output_{k}.{safe}.npy", storable(array)[0])
    facts = {"backends": list(culprit.backends), "segment": culprit.segment, "op_index": culprit.op_index,
             "op": culprit.op, "id": culprit.id, "name": culprit.name, "location": culprit.location,
             "attributes": culprit.attributes,
             "shapes": culprit.shapes, "max_error": culprit.max_error, "mismatch": culprit.mismatch}
    (folder / "culprit.json").write_text(json.dumps(facts, indent=1, default=str) + "\n")
    return folder
