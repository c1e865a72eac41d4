"""The graph interpreter: check and plan a SPIR-V graph once, then run it on numpy arrays.

`GraphPlan(graph, constants)` binds the graph constants, checks every node against its op's
registered plan-time check, folds every node whose operands are all known (SPIR-V constants,
graph constants, folded results), and keeps a flat list of the steps left. `run(inputs)` walks
that list with a per-call value table, so one plan serves many threads at once.

Ops are called as pyvgf/tosa/registry.py says; an op whose function also declares a
`result_dtype` keyword (CAST) gets the declared element type of its result there.

This is the reference executor: each step calls one operator's function. The fast executor
(pyvgf/fast/plan.py) is this class with three methods overridden: `_rewrite` (plan-time
rewrites of the steps, such as fusion), `_step_fn` (an op's plan-time form) and `_running`
(what a run holds while it walks the steps); the step loop is this one.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Union

import numpy as np

from ..errors import ModelInputError, TosaError
from ..spirv.graph import Const, Graph, GraphConstant, Input, Node, Operand
from ..types import TensorType
from .registry import OPS, OpDef


@dataclass(frozen=True)
class Known:
    """An operand value known at plan time."""

    value: object


@dataclass(frozen=True)
class Slot:
    """An operand computed at run time: its index in the per-run value table."""

    index: int


Arg = Known | Slot
Args = dict[str, Union[Arg, "list[Arg]"]]  # a variadic operand is a list


@dataclass(frozen=True)
class Planned:
    """A node left for run time; `tail`: the nodes after it (each with its op and operands)
    whose results the step also makes, when a plan-time rewrite folded them in (fusion)."""

    node: Node
    opdef: OpDef
    args: Args
    tail: tuple[tuple[Node, OpDef, Args], ...] = ()

    @property
    def last(self) -> Node:
        """The node whose result the step produces."""
        return self.tail[-1][0] if self.tail else self.node


@dataclass(frozen=True)
class Step:
    """One step of a run: `fn` of its `static` operands and the `dynamic` (by name, slot) and
    `variadic` ones it reads, its results put in `outs`, checked against `types`."""
    node: Node
    fn: Callable[..., object]
    static: dict[str, object]
    dynamic: tuple[tuple[str, int], ...]
    variadic: tuple[tuple[str, tuple[Arg, ...]], ...]
    outs: tuple[int, ...]
    types: tuple[TensorType, ...]
    free: tuple[int, ...]
    """Slots last used here (or never): dropped after the step, so memory follows liveness."""


Observer = Callable[[Node, Sequence[np.ndarray], float, float], None]
"""Called after each step of an observed run with the step's first node, its results (those of
the last node of a fused chain: `GraphPlan.fused`) and its start and end `time.perf_counter()`."""


class GraphPlan:
    """A graph checked, folded and scheduled once; `run` executes it, thread-safely.

    `constants` maps each graph constant id of `graph.constants` to its array; `ops` is the
    operator table (the registry's `OPS` unless given). With `every_step`, nothing is folded or
    fused: every node is a step of its own, so an observer of `run` sees every result.
    """

    def __init__(self, graph: Graph, constants: Mapping[int, np.ndarray], ops: Mapping[str, OpDef] | None = None,
                 *, every_step: bool = False):
        self.graph = graph
        self.constants = constants
        self._ops = OPS if ops is None else ops
        self._bound = {cid: _bind_constant(cid, t, constants) for cid, t in graph.constants.items()}
        self._inputs = len(graph.inputs)
        self._slots = self._inputs
        self._values: dict[tuple[int, int | None], Arg] = {}  # (node id, element) -> its value
        planned: list[Planned] = []
        folded: list[Node] = []
        for node in graph.nodes:
            opdef, args = self._check(node)
            if not every_step and all(is_known(a) for a in args.values()):
                self._fold(node, opdef, args)
                folded.append(node)
            else:
                planned.append(Planned(node, opdef, args))
                for element in _elements(node):
                    self._values[(node.id, element)] = Slot(self._slots)
                    self._slots += 1
        self._results = [self._resolve(op) for op in graph.results]
        if not every_step:
            planned = self._rewrite(planned)
        self._steps = self._schedule(planned)
        self.folded: tuple[Node, ...] = tuple(folded)
        """The nodes computed at plan time (all their operands were known)."""
        self.schedule: tuple[Node, ...] = tuple(n for p in planned for n in (p.node, *(t[0] for t in p.tail)))
        """The nodes each run executes, in order (fused ones right after their producer)."""
        self.fused: tuple[tuple[Node, ...], ...] = tuple(
            (p.node, *(t[0] for t in p.tail)) for p in planned if p.tail)
        """Each fused chain: a producer and the ops a rewrite folded into it (none here)."""

    # -- planning --------------------------------------------------------------------------------

    def _resolve(self, op: Operand) -> Arg:
        if isinstance(op, Const):
            return Known(op.value)
        if isinstance(op, GraphConstant):
            return Known(self._bound[op.constant_id])
        if isinstance(op, Input):
            return Slot(op.index)
        return self._values[(op.node, op.element)]

    def _check(self, node: Node) -> tuple[OpDef, Args]:
        """The node's op and resolved operands, after the op's plan-time check passed."""
        opdef = self._ops.get(node.op)
        if opdef is None:
            raise TosaError(f"{node.label}: TOSA operator {node.op} is not implemented")
        args: Args = {}
        seen: dict[str, object] = {}  # what the check sees: values if known, else types
        for name, op in node.operands.items():
            if isinstance(op, tuple):
                parts = [self._resolve(o) for o in op]
                args[name] = parts
                seen[name] = [_seen(a, o) for a, o in zip(parts, op)]
            else:
                args[name] = arg = self._resolve(op)
                seen[name] = _seen(arg, op)
        check = opdef.check
        if check is not None:
            guard(node, lambda: check(node.result_type, **seen))
        if takes(opdef.fn, "result_dtype"):
            args["result_dtype"] = Known(result_types(node)[0].dtype)
        return opdef, args

    def _fold(self, node: Node, opdef: OpDef, args: Args) -> None:
        values = {name: known_value(arg) for name, arg in args.items()}
        out = guard(node, lambda: opdef.fn(**values))
        for element, value in zip(_elements(node), _checked(node, out, result_types(node))):
            value = value.view()
            value.flags.writeable = False
            self._values[(node.id, element)] = Known(value)

    # -- what an executor built on this one overrides -------------------------------------------

    def _rewrite(self, planned: list[Planned]) -> list[Planned]:
        """The steps to run, from one per node left: the reference runs them as they are."""
        return planned

    def _step_fn(self, node: Node, opdef: OpDef, static: dict[str, object],
                 runtime: dict[str, TensorType] | None
                 ) -> tuple[Callable[..., object], dict[str, object]]:
        """The function a step calls and the operands bound to it, from its op, its known
        operands and the types of its run-time ones (None for a variadic operand, or one its
        node does not have: a fused pattern's own): the reference calls the op's function."""
        return opdef.fn, static

    @contextmanager
    def _running(self) -> Iterator[None]:
        """Held while a run walks the steps: nothing here."""
        yield

    _deferred: tuple[type[BaseException], ...] = ()
    """What a step's function may raise to have `_instead` give its results: nothing here."""

    def _instead(self, step: Step, operands: dict[str, object]) -> object:
        """The results of a step whose function raised one of `_deferred` on `operands`."""
        raise NotImplementedError

    def _schedule(self, planned: list[Planned]) -> list[Step]:
        """Split each step's operands into static and per-run ones; free slots after last use."""
        last: dict[int, int] = {}
        for i, p in enumerate(planned):
            for arg in p.args.values():
                for part in arg if isinstance(arg, list) else [arg]:
                    if isinstance(part, Slot):
                        last[part.index] = i
        kept = {r.index for r in self._results if isinstance(r, Slot)}
        ends: dict[int, set[int]] = {}  # step -> the slots it reads last
        for slot, at in last.items():
            ends.setdefault(at, set()).add(slot)
        steps = []
        for i, p in enumerate(planned):
            node, opdef, args, out_node = p.node, p.opdef, p.args, p.last
            static: dict[str, object] = {}
            dynamic: list[tuple[str, int]] = []
            variadic: list[tuple[str, tuple[Arg, ...]]] = []
            for name, arg in args.items():
                if isinstance(arg, list):
                    if is_known(arg):
                        static[name] = known_value(arg)
                    else:
                        variadic.append((name, tuple(arg)))
                elif isinstance(arg, Known):
                    static[name] = arg.value
                else:
                    dynamic.append((name, arg.index))
            own = not variadic and all(name in node.operands for name, _ in dynamic)
            fn, static = self._step_fn(node, opdef, static, {
                name: node.operands[name].type for name, _ in dynamic} if own else None)
            outs = tuple(s.index for e in _elements(out_node)
                         if isinstance(s := self._values[(out_node.id, e)], Slot))
            used = ends.get(i, set()) | {s for s in outs if s not in last}
            free = tuple(sorted(used - kept))
            steps.append(Step(node, fn, static, tuple(dynamic), tuple(variadic), outs,
                               result_types(out_node), free))
        return steps

    # -- running ---------------------------------------------------------------------------------

    def run(self, inputs: Sequence[np.ndarray], observer: Observer | None = None) -> list[np.ndarray]:
        """Run the graph on `inputs` (graph input order, of the declared dtype and shape).

        Returns one new array per graph output, owned by the caller. Inputs are not modified.
        `observer` is called after each step (see `Observer`); the loop is chosen once per run,
        so a run without one pays nothing per step.
        """
        if len(inputs) != self._inputs:
            raise ModelInputError(f"graph {self.graph.name!r} takes {self._inputs} inputs, got {len(inputs)}")
        env: list[object] = [None] * self._slots
        env[: self._inputs] = inputs
        call = self._call if observer is None else functools.partial(self._observed, observer)
        # TOSA's float results are IEEE's: an overflow to inf or an invalid NaN is a result, not
        # something to warn the caller about, on either executor.
        with self._running(), np.errstate(all="ignore"):
            for step in self._steps:
                kwargs = dict(step.static)
                for name, slot in step.dynamic:
                    kwargs[name] = env[slot]
                for name, parts in step.variadic:
                    kwargs[name] = tuple(env[p.index] if isinstance(p, Slot) else p.value
                                         for p in parts)
                for slot, value in zip(step.outs, call(step, kwargs)):
                    env[slot] = value
                for slot in step.free:
                    env[slot] = None
        handed: list[np.ndarray] = []
        for result in self._results:
            if isinstance(result, Slot):
                value = env[result.index]
                fresh = result.index >= self._inputs
            else:
                value, fresh = result.value, False
            handed.append(_owned(value, fresh, inputs, handed))  # type: ignore[arg-type]
        return handed

    def _call(self, step: Step, operands: dict[str, object]) -> tuple[np.ndarray, ...]:
        """The step's results, checked against the graph's types. (A run's one Python call a
        step, beside the step's own function: with the caches each layer leaves cold, a call
        costs microseconds.)"""
        try:
            out = step.fn(**operands)
        except self._deferred:
            out = self._instead(step, operands)
        except Exception as exc:
            raise _naming(step.node, exc) from exc
        return _checked(step.node, out, step.types)

    def _observed(self, observer: Observer, step: Step, operands: dict[str, object]
                  ) -> tuple[np.ndarray, ...]:
        start = time.perf_counter()
        results = self._call(step, operands)
        observer(step.node, results, start, time.perf_counter())
        return results


def _elements(node: Node) -> Sequence[int | None]:
    return range(len(node.result_type)) if isinstance(node.result_type, tuple) else (None,)


def result_types(node: Node) -> tuple[TensorType, ...]:
    return node.result_type if isinstance(node.result_type, tuple) else (node.result_type,)


def _seen(arg: Arg, op: Operand) -> object:
    """What a plan-time check gets for an operand: its value if known, else its type."""
    return arg.value if isinstance(arg, Known) else op.type  # type: ignore[union-attr]


def is_known(arg: Arg | list[Arg]) -> bool:
    return all(isinstance(a, Known) for a in arg) if isinstance(arg, list) else isinstance(arg, Known)


def known_value(arg: Arg | list[Arg]) -> object:
    if isinstance(arg, list):
        return tuple(known_value(a) for a in arg)
    return arg.value  # type: ignore[union-attr]  (only called on known operands)


@functools.cache
def takes(fn: Callable[..., object], keyword: str) -> bool:
    """Whether an op function declares `keyword` (`result_dtype`: the declared result element
    type, which CAST cannot know otherwise)."""
    try:
        return keyword in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


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


def guard(node: Node, fn: Callable[[], object]) -> object:
    try:
        return fn()
    except Exception as exc:
        raise _naming(node, exc) from exc


def _naming(node: Node, exc: Exception) -> TosaError:
    """`exc`, raised by an op or check of `node` (failing on odd operands, say), as an error
    naming the node."""
    if isinstance(exc, TosaError):
        return TosaError(f"{node.label}: {exc}")
    return TosaError(f"{node.label}: {type(exc).__name__}: {exc}")


def _checked(node: Node, out: object, types: tuple[TensorType, ...]) -> tuple[np.ndarray, ...]:
    """An op's results (`out`: one, or a tuple), each checked against the graph's `types`."""
    results = out if isinstance(out, tuple) else (out,)
    if len(results) != len(types):
        raise TosaError(f"{node.label}: the op returned {len(results)} results, the graph declares {len(types)}")
    for i, (value, t) in enumerate(zip(results, types)):
        if not isinstance(value, np.ndarray) or value.dtype != t.dtype or value.shape != t.shape:
            got = TensorType(value.dtype, value.shape) if isinstance(value, np.ndarray) else type(value).__name__
            raise TosaError(f"{node.label}: result {i} is {got}, the graph declares {t}")
    return results  # type: ignore[return-value]


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
