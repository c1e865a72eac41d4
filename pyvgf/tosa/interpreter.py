"""The graph interpreter: check and plan a SPIR-V graph once, then run it on numpy arrays.

`GraphPlan(graph, constants)` binds the graph constants, checks every node against its op's
registered plan-time check, folds every node whose operands are all known (SPIR-V constants,
graph constants, folded results), fuses band-wise consumers into the op producing their input,
and keeps a flat list of the steps left. `run(inputs)` walks that list with a per-call value
table, so one plan serves many threads at once.

Ops are called as pyvgf/tosa/registry.py says; an op whose function also declares a
`result_dtype` keyword (CAST) gets the declared element type of its result there.

Fusion: when an op declaring an `epilogue` keyword (the convolutions) has a result that only
one band-wise op reads (CLAMP, RESCALE, ...: `OpDef.bandwise`), with every other operand of
that op known, the pair runs as one step: the producer applies the consumer to each band of
its result while the band is still in cache, and the intermediate tensor never exists. Chains
(CONV2D -> RESCALE -> CLAMP) fuse whole. Results are those of running the ops one by one.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Union

import numpy as np

from ..errors import ModelInputError, TosaError
from ..spirv.graph import Const, Graph, GraphConstant, Input, Node, Operand
from ..types import TensorType
from .kernels import Rescale
from .registry import OPS, OpDef
from .threads import one_blas_thread


@dataclass(frozen=True)
class _Known:
    """An operand value known at plan time."""

    value: object


@dataclass(frozen=True)
class _Slot:
    """An operand computed at run time: its index in the per-run value table."""

    index: int


_Arg = Union[_Known, _Slot]
_Args = dict[str, Union[_Arg, "list[_Arg]"]]  # a variadic operand is a list


@dataclass(frozen=True)
class _Planned:
    """A node left for run time, with the band-wise consumers fused into it (`tail`)."""

    node: Node
    opdef: OpDef
    args: _Args
    tail: tuple[tuple[Node, OpDef, _Args], ...] = ()

    @property
    def last(self) -> Node:
        """The node whose result the step produces."""
        return self.tail[-1][0] if self.tail else self.node


class _Epilogue:
    """Band-wise ops applied in turn to a band of a producer's result, each with its known
    operands bound; the band is the producer's temporary, so in-place forms are used.

    `dtype` is the element type of the last op's result."""

    def __init__(self, chain: Sequence[tuple[Node, OpDef, dict[str, object]]]):
        self.chain = tuple(chain)
        self.ops = tuple(node.op for node, _, _ in chain)
        """The fused ops' names, in order."""
        self.dtype = _types(chain[-1][0])[0].dtype
        node, opdef, static = chain[0]
        factory = opdef.from_accumulator
        self._accumulated = None if factory is None else _guard(node, lambda: factory(**static))
        self.bounds = getattr(self._accumulated, "bounds", None) if len(chain) == 1 else None
        """The form's `bounds` when it is the whole epilogue (see conv.Epilogue)."""
        self.first_dtype = _types(node)[0].dtype
        """The element type of the first op's result."""

    def __call__(self, band: np.ndarray) -> np.ndarray:
        return self._rest(band, 0)

    def from_accumulator(self, acc: np.ndarray, bias: np.ndarray,
                         result_dtype: np.dtype) -> np.ndarray | None:
        """The finished band from a convolution's accumulator and bias (its result would be
        acc + bias as `result_dtype`), when the first op has that form for them; else None."""
        form = self._accumulated
        if form is None:
            return None
        band = _guard(self.chain[0][0], lambda: form(acc, bias, result_dtype))  # type: ignore[operator]
        return None if band is None else self._rest(band, 1)  # type: ignore[arg-type]

    def rescale(self, bias: np.ndarray, result_dtype: np.dtype, channels: int) -> Rescale | None:
        """The first op as kernels.Rescale, when its accumulator form has that (see
        conv.Epilogue); else None."""
        form = getattr(self._accumulated, "rescale", None)
        return None if form is None else _guard(self.chain[0][0],
                                                lambda: form(bias, result_dtype, channels))

    def rest(self, first: np.ndarray) -> np.ndarray:
        """The final result from the first op's result: the ops after it, in turn."""
        return self._rest(first, 1)

    def _rest(self, band: np.ndarray, start: int) -> np.ndarray:
        for node, opdef, static in self.chain[start:]:
            fn = opdef.inplace or opdef.fn
            band = _guard(node, lambda: fn(input=band, **static))  # type: ignore[assignment]
        return band

    def __repr__(self) -> str:
        return "_Epilogue(" + " -> ".join(self.ops) + ")"


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
        self._values: dict[tuple[int, int | None], _Arg] = {}  # (node id, element) -> its value
        planned: list[_Planned] = []
        folded: list[Node] = []
        for node in graph.nodes:
            opdef, args = self._check(node)
            if not every_step and all(_is_known(a) for a in args.values()):
                self._fold(node, opdef, args)
                folded.append(node)
            else:
                planned.append(_Planned(node, opdef, args))
                for element in _elements(node):
                    self._values[(node.id, element)] = _Slot(self._slots)
                    self._slots += 1
        self._results = [self._resolve(op) for op in graph.results]
        if not every_step:
            planned = self._fuse(planned)
        self._calls_blas = any(p.opdef.blas for p in planned)
        self._steps = self._schedule(planned)
        self.folded: tuple[Node, ...] = tuple(folded)
        """The nodes computed at plan time (all their operands were known)."""
        self.schedule: tuple[Node, ...] = tuple(n for p in planned for n in (p.node, *(t[0] for t in p.tail)))
        """The nodes each run executes, in order (fused ones right after their producer)."""
        self.fused: tuple[tuple[Node, ...], ...] = tuple(
            (p.node, *(t[0] for t in p.tail)) for p in planned if p.tail)
        """Each fused chain: a producer and the band-wise ops it applies to its result."""

    # -- planning --------------------------------------------------------------------------------

    def _resolve(self, op: Operand) -> _Arg:
        if isinstance(op, Const):
            return _Known(op.value)
        if isinstance(op, GraphConstant):
            return _Known(self._bound[op.constant_id])
        if isinstance(op, Input):
            return _Slot(op.index)
        return self._values[(op.node, op.element)]

    def _check(self, node: Node) -> tuple[OpDef, _Args]:
        """The node's op and resolved operands, after the op's plan-time check passed."""
        opdef = self._ops.get(node.op)
        if opdef is None:
            raise TosaError(f"{node.label}: TOSA operator {node.op} is not implemented")
        args: _Args = {}
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
            _guard(node, lambda: check(node.result_type, **seen))
        if _takes(opdef.fn, "result_dtype"):
            args["result_dtype"] = _Known(_types(node)[0].dtype)
        return opdef, args

    def _fold(self, node: Node, opdef: OpDef, args: _Args) -> None:
        values = {name: _known_value(arg) for name, arg in args.items()}
        for element, value in zip(_elements(node), _call(node, opdef.fn, values, _types(node))):
            value = value.view()
            value.flags.writeable = False
            self._values[(node.id, element)] = _Known(value)

    def _fuse(self, planned: list[_Planned]) -> list[_Planned]:
        """Fold each band-wise op whose input only it reads into that input's producer."""
        readers: dict[int, list[tuple[int, str]]] = {}
        for i, p in enumerate(planned):
            for name, arg in p.args.items():
                for part in arg if isinstance(arg, list) else [arg]:
                    if isinstance(part, _Slot):
                        readers.setdefault(part.index, []).append((i, name))
        results = {r.index for r in self._results if isinstance(r, _Slot)}
        slot_of = {p.node.id: self._values.get((p.node.id, None)) for p in planned}
        taken: set[int] = set()  # indices of the nodes fused into an earlier one
        fused = []
        for i, p in enumerate(planned):
            if i in taken:
                continue
            while _takes(p.opdef.fn, "epilogue") and not isinstance(p.last.result_type, tuple):
                slot = slot_of[p.last.id]
                users = readers.get(slot.index, []) if isinstance(slot, _Slot) else []
                if slot is None or slot.index in results or len(users) != 1 or users[0][1] != "input":
                    break
                j = users[0][0]
                consumer = planned[j]
                if not consumer.opdef.bandwise or not all(
                        _is_known(a) for name, a in consumer.args.items() if name != "input"):
                    break
                p = _Planned(p.node, p.opdef, p.args,
                             (*p.tail, (consumer.node, consumer.opdef, consumer.args)))
                taken.add(j)
            if p.tail:
                chain = [(node, opdef, {k: _known_value(a) for k, a in args.items() if k != "input"})
                         for node, opdef, args in p.tail]
                p = _Planned(p.node, p.opdef, {**p.args, "epilogue": _Known(_Epilogue(chain))}, p.tail)
            fused.append(p)
        return fused

    def _schedule(self, planned: list[_Planned]) -> list[_Step]:
        """Split each step's operands into static and per-run ones; free slots after last use."""
        last: dict[int, int] = {}
        for i, p in enumerate(planned):
            for arg in p.args.values():
                for part in arg if isinstance(arg, list) else [arg]:
                    if isinstance(part, _Slot):
                        last[part.index] = i
        kept = {r.index for r in self._results if isinstance(r, _Slot)}
        ends: dict[int, set[int]] = {}  # step -> the slots it reads last
        for slot, at in last.items():
            ends.setdefault(at, set()).add(slot)
        steps = []
        for i, p in enumerate(planned):
            node, opdef, args, out_node = p.node, p.opdef, p.args, p.last
            static: dict[str, object] = {}
            dynamic: list[tuple[str, int]] = []
            variadic: list[tuple[str, tuple[_Arg, ...]]] = []
            for name, arg in args.items():
                if isinstance(arg, list):
                    if _is_known(arg):
                        static[name] = _known_value(arg)
                    else:
                        variadic.append((name, tuple(arg)))
                elif isinstance(arg, _Known):
                    static[name] = arg.value
                else:
                    dynamic.append((name, arg.index))
            fn = opdef.fn
            if opdef.prepare is not None and not variadic:
                seen = {**static, **{name: node.operands[name].type for name, _ in dynamic}}
                made = _guard(node, lambda: opdef.prepare(**seen))  # type: ignore[misc]
                if made is not None:
                    fn, static = made, {}  # type: ignore[assignment]
            outs = tuple(s.index for e in _elements(out_node)
                         if isinstance(s := self._values[(out_node.id, e)], _Slot))
            used = ends.get(i, set()) | {s for s in outs if s not in last}
            free = tuple(sorted(used - kept))
            steps.append(_Step(node, fn, static, tuple(dynamic), tuple(variadic), outs,
                               _types(out_node), free))
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
        call = _call if observer is None else functools.partial(_observed, observer)
        with one_blas_thread() if self._calls_blas else nullcontext():
            for step in self._steps:
                kwargs = dict(step.static)
                for name, slot in step.dynamic:
                    kwargs[name] = env[slot]
                for name, parts in step.variadic:
                    kwargs[name] = tuple(env[p.index] if isinstance(p, _Slot) else p.value
                                         for p in parts)
                for slot, value in zip(step.outs, call(step.node, step.fn, kwargs, step.types)):
                    env[slot] = value
                for slot in step.free:
                    env[slot] = None
        handed: list[np.ndarray] = []
        for result in self._results:
            if isinstance(result, _Slot):
                value = env[result.index]
                fresh = result.index >= self._inputs
            else:
                value, fresh = result.value, False
            handed.append(_owned(value, fresh, inputs, handed))  # type: ignore[arg-type]
        return handed


def _elements(node: Node) -> Sequence[int | None]:
    return range(len(node.result_type)) if isinstance(node.result_type, tuple) else (None,)


def _types(node: Node) -> tuple[TensorType, ...]:
    return node.result_type if isinstance(node.result_type, tuple) else (node.result_type,)


def _seen(arg: _Arg, op: Operand) -> object:
    """What a plan-time check gets for an operand: its value if known, else its type."""
    return arg.value if isinstance(arg, _Known) else op.type  # type: ignore[union-attr]


def _is_known(arg: _Arg | list[_Arg]) -> bool:
    return all(isinstance(a, _Known) for a in arg) if isinstance(arg, list) else isinstance(arg, _Known)


def _known_value(arg: _Arg | list[_Arg]) -> object:
    if isinstance(arg, list):
        return tuple(_known_value(a) for a in arg)
    return arg.value  # type: ignore[union-attr]  (only called on known operands)


@functools.cache
def _takes(fn: Callable[..., object], keyword: str) -> bool:
    """Whether an op function declares `keyword`: `result_dtype` (the declared result element
    type, which CAST cannot know otherwise) or `epilogue` (band-wise consumers fused in)."""
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


def _observed(observer: Observer, node: Node, fn: Callable[..., object], kwargs: dict[str, object],
              types: tuple[TensorType, ...]) -> tuple[np.ndarray, ...]:
    start = time.perf_counter()
    results = _call(node, fn, kwargs, types)
    observer(node, results, start, time.perf_counter())
    return results


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
