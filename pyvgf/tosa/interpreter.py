"""The graph interpreter: check and plan a SPIR-V graph once, then run it on numpy arrays.

`GraphPlan(graph, constants)` binds the graph constants, checks every node against its op's
registered plan-time check, folds every node whose operands are all known (SPIR-V constants,
graph constants, folded results), and keeps a flat list of the steps left. `run(inputs)` walks
that list with a per-call value table, so one plan serves many threads at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ModelInputError, TosaError
from ..spirv.graph import Const, Graph, GraphConstant, Input, Node, Operand, Result
from ..types import TensorType
from .registry import OPS, OpDef

# An operand of a step: ("k", value) for a value known at plan time, ("s", slot) otherwise;
# a variadic operand is a list of those.
_Arg = tuple[str, object]
_Args = dict[str, "_Arg | list[_Arg]"]
# A planned step before scheduling: node, op function, operands, out slots, result types.
_Planned = tuple[Node, Callable[..., object], _Args, tuple[int, ...], tuple[TensorType, ...]]


@dataclass(frozen=True)
class _Step:
    node: Node
    fn: Callable[..., object]
    static: dict[str, object]
    dynamic: tuple[tuple[str, int], ...]
    variadic: tuple[tuple[str, tuple[_Arg, ...]], ...]
    outs: tuple[int, ...]
    types: tuple[TensorType, ...]
    free: tuple[int, ...]


class GraphPlan:
    """A graph checked, folded and scheduled once; `run` executes it, thread-safely.

    `constants` maps each graph constant id of `graph.constants` to its array; `ops` is the
    operator table (the registry's `OPS` unless given).
    """

    def __init__(self, graph: Graph, constants: Mapping[int, np.ndarray], ops: Mapping[str, OpDef] | None = None):
        self.graph = graph
        table = OPS if ops is None else ops
        known: dict[tuple[int, int | None], object] = {}  # (node id, element) -> folded value
        slots: dict[tuple[int, int | None], int] = {}  # (node id, element) -> value slot
        bound = {cid: _bind_constant(cid, t, constants) for cid, t in graph.constants.items()}
        self._inputs = len(graph.inputs)
        self._slot_count = self._inputs
        steps: list[_Planned] = []
        folded: list[Node] = []

        def resolve(op: Operand) -> _Arg:
            if isinstance(op, Const):
                return ("k", op.value)
            if isinstance(op, GraphConstant):
                return ("k", bound[op.constant_id])
            if isinstance(op, Input):
                return ("s", op.index)
            key = (op.node, op.element)
            if key in known:
                return ("k", known[key])
            return ("s", slots[key])

        def plan_type(arg: _Arg, op: Operand) -> object:
            return arg[1] if arg[0] == "k" else op.type  # type: ignore[union-attr]

        for node in graph.nodes:
            opdef = table.get(node.op)
            if opdef is None:
                raise TosaError(f"{node.label}: TOSA operator {node.op} is not implemented")
            args: _Args = {}
            check_args: dict[str, object] = {}
            for name, op in node.operands.items():
                if isinstance(op, tuple):
                    resolved = [resolve(o) for o in op]
                    args[name] = resolved
                    check_args[name] = [plan_type(a, o) for a, o in zip(resolved, op)]
                else:
                    args[name] = resolve(op)
                    check_args[name] = plan_type(args[name], op)  # type: ignore[arg-type]
            types = node.result_type if isinstance(node.result_type, tuple) else (node.result_type,)
            if opdef.check is not None:
                _guard(node, lambda: opdef.check(node.result_type, **check_args))  # type: ignore[misc]
            elements = range(len(types)) if isinstance(node.result_type, tuple) else (None,)
            if all(_is_known(a) for a in args.values()):
                values = {n: _known_value(a) for n, a in args.items()}
                out = _call(node, opdef.fn, values, types)
                for element, value in zip(elements, out):
                    value = value.view()
                    value.flags.writeable = False
                    known[(node.id, element)] = value
                folded.append(node)
                continue
            outs = []
            for element in elements:
                slots[(node.id, element)] = self._slot_count
                outs.append(self._slot_count)
                self._slot_count += 1
            steps.append((node, opdef.fn, args, tuple(outs), types))

        self._results: list[_Arg] = []
        for op in graph.results:
            self._results.append(resolve(op))
        self._steps = _schedule(steps, self._results)
        self.folded: tuple[Node, ...] = tuple(folded)
        """The nodes computed at plan time (all their operands were known)."""
        self.schedule: tuple[Node, ...] = tuple(s.node for s in self._steps)
        """The nodes each run executes, in order."""

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run the graph on `inputs` (graph input order, of the declared dtype and shape).

        Returns one new array per graph output, owned by the caller. Inputs are not modified.
        """
        if len(inputs) != self._inputs:
            raise ModelInputError(f"graph {self.graph.name!r} takes {self._inputs} inputs, got {len(inputs)}")
        env: list[object] = [None] * self._slot_count
        env[: self._inputs] = inputs
        for step in self._steps:
            kwargs = dict(step.static)
            for name, slot in step.dynamic:
                kwargs[name] = env[slot]
            for name, parts in step.variadic:
                kwargs[name] = tuple(env[v] if k == "s" else v for k, v in parts)  # type: ignore[index]
            out = _call(step.node, step.fn, kwargs, step.types)
            for slot, value in zip(step.outs, out):
                env[slot] = value
            for slot in step.free:
                env[slot] = None
        handed: list[np.ndarray] = []
        for kind, ref in self._results:
            value = env[ref] if kind == "s" else ref  # type: ignore[index]
            fresh = kind == "s" and ref >= self._inputs  # type: ignore[operator]
            handed.append(_owned(value, fresh, inputs, handed))  # type: ignore[arg-type]
        return handed


def _bind_constant(cid: int, t: TensorType, constants: Mapping[int, np.ndarray]) -> np.ndarray:
    value = constants.get(cid)
    if value is None:
        raise TosaError(f"graph constant {cid} ({t}) is not given")
    if not isinstance(value, np.ndarray):
        raise TosaError(f"graph constant {cid} must be a numpy array, got {type(value).__name__}")
    if value.dtype != t.dtype or value.shape != t.shape:
        raise TosaError(f"graph constant {cid} is {t}, given {TensorType(value.dtype, value.shape)}")
    view = value.view()
    view.flags.writeable = False
    return view


def _is_known(arg: _Arg | list[_Arg]) -> bool:
    if isinstance(arg, list):
        return all(a[0] == "k" for a in arg)
    return arg[0] == "k"


def _known_value(arg: _Arg | list[_Arg]) -> object:
    if isinstance(arg, list):
        return tuple(a[1] for a in arg)
    return arg[1]


def _guard(node: Node, fn: Callable[[], object]) -> object:
    try:
        return fn()
    except TosaError as exc:
        raise TosaError(f"{node.label}: {exc}") from exc
    except Exception as exc:  # an op or check failing on odd operands still names the node
        raise TosaError(f"{node.label}: {type(exc).__name__}: {exc}") from exc


def _call(node: Node, fn: Callable[..., object], kwargs: dict[str, object], types: tuple[TensorType, ...]) -> tuple[np.ndarray, ...]:
    out = _guard(node, lambda: fn(**kwargs))
    results = out if isinstance(out, tuple) else (out,)
    if len(results) != len(types):
        raise TosaError(f"{node.label}: the op returned {len(results)} results, the graph declares {len(types)}")
    for i, (value, t) in enumerate(zip(results, types)):
        if not isinstance(value, np.ndarray) or value.dtype != t.dtype or value.shape != t.shape:
            got = TensorType(value.dtype, value.shape) if isinstance(value, np.ndarray) else type(value).__name__
            raise TosaError(f"{node.label}: result {i} is {got}, the graph declares {t}")
    return results  # type: ignore[return-value]


def _schedule(steps: list[_Planned], results: list[_Arg]) -> list[_Step]:
    """Split operands into static and per-run ones, and free each slot after its last use."""
    last: dict[int, int] = {}
    uses: list[list[int]] = []
    for i, (_, _, args, _, _) in enumerate(steps):
        used = []
        for arg in args.values():
            for kind, ref in arg if isinstance(arg, list) else [arg]:
                if kind == "s":
                    used.append(ref)
                    last[ref] = i  # type: ignore[index]
        uses.append(used)  # type: ignore[arg-type]
    kept = {ref for kind, ref in results if kind == "s"}
    out = []
    for i, (node, fn, args, outs, types) in enumerate(steps):
        static: dict[str, object] = {}
        dynamic: list[tuple[str, int]] = []
        variadic: list[tuple[str, tuple[_Arg, ...]]] = []
        for name, arg in args.items():
            if isinstance(arg, list):
                if _is_known(arg):
                    static[name] = _known_value(arg)
                else:
                    variadic.append((name, tuple(arg)))
            elif arg[0] == "k":
                static[name] = arg[1]
            else:
                dynamic.append((name, arg[1]))  # type: ignore[arg-type]
        dead = {ref for ref in uses[i] if last[ref] == i and ref not in kept}
        dead |= {slot for slot in outs if slot not in last and slot not in kept}
        out.append(_Step(node, fn, static, tuple(dynamic), tuple(variadic), outs, types, tuple(sorted(dead))))
    return out


def _owned(value: np.ndarray, fresh: bool, inputs: Sequence[np.ndarray], handed: list[np.ndarray]) -> np.ndarray:
    """`value` itself when only this run made and holds it, else a copy the caller may keep."""
    if (
        fresh
        and value.base is None
        and value.flags.writeable
        and value.flags.owndata
        and not any(value is x for x in inputs)
        and not any(value is x for x in handed)
    ):
        return value
    return np.array(value, copy=True)
