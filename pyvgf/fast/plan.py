"""The fast executor's plan: the reference interpreter's (pyvgf/tosa/interpreter.py) with the
fast operator table (registry.py) and three of its methods overridden.

Fusion (`_rewrite`): when an op declaring an `epilogue` keyword (the convolutions, MATMUL) has a
result that only one band-wise op reads (CLAMP, RESCALE, an ADD of a bias, ...:
`FastOpDef.bandwise`), with every other operand of that op known and broadcast along the last
axis at most, the pair runs as one step: the producer applies the consumer to each
band of its result while the band is still in cache, and the intermediate tensor never exists.
Chains (CONV2D -> RESCALE -> CLAMP) fuse whole. Results are those of running the ops one by one.

Patterns (`_patterns`): a layer normalization or a GELU written as TOSA ops runs as one step
with a compiled loop of its own (patterns.py), before the fusion above.

Plan-time forms (`_step_fn`): an op with a `prepare` form gets it once per step.

Threads (`_running`): a run of a graph that calls BLAS holds BLAS at one thread while the
compiled loops split their rows over numba's threads (threads.py).

Memory: at load, the plan asks glibc's malloc to keep as much freed memory as its graph's
results take, so that a run's arrays are not faulted in afresh on every run (memory.py).

Interim steps (`_instead`): while a compiled loop a step calls is not compiled yet (a machine's
first runs: background.py), the step runs the reference operators it stands for instead, in
turn (a producer's and those fused into it, or a pattern's), with the same results (integers
bit-exact); a run after the compiler process is done loads the loop and runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext

import numpy as np

from ..spirv.graph import Graph, Node
from ..tosa import OPS
from ..tosa.interpreter import (
    Args,
    GraphPlan,
    Known,
    Planned,
    Slot,
    Step,
    guard,
    is_known,
    known_value,
    result_types,
    takes,
)
from ..types import TensorType
from . import (  # noqa: F401  (each registers its fast ops)
    activation,
    background,
    background_compile,
    conv,
    elementwise,
    layout,
    memory,
    patterns,
    pool,
    rescale,
    tensor,
)
from .kernels import Rescale
from .registry import FastOpDef, fast_ops
from .threads import blas_threads, run_threads


class FastPlan(GraphPlan):
    """A graph planned for the fast executor; runs as GraphPlan does, with the same results
    (integers bit-exact, floats within pyvgf.testing's tolerance)."""

    def __init__(self, graph: Graph, constants: Mapping[int, np.ndarray],
                 ops: Mapping[str, FastOpDef] | None = None, *, every_step: bool = False,
                 threads: int | None = None):
        self._calls_blas = False  # until _rewrite finds a step that calls BLAS
        self._groups: dict[int, tuple[Args, tuple[tuple[Node, Args], ...]]] = {}
        """For each fused step (by its node's id): its operands, and the nodes it stands for,
        in order, with theirs: what `_instead` runs meanwhile."""
        self.threads = threads
        """The threads each run splits its loops over (None: threads.run_threads's default)."""
        self.interim = background_compile()
        """Whether a step whose compiled loop is not compiled yet runs the reference meanwhile
        (pyvgf.fast.set_background_compile when the plan was made)."""
        self.interim_steps = 0
        """How many times a step has run the reference operators because a loop it calls was
        still being compiled (`_instead`)."""
        self._known: dict[int, dict[str, object]] = {}
        """The known operands of each step whose plan-time form stands in for them (by its
        node's id; the others' step passes them with its run-time ones): what `_instead` gives
        the reference."""
        super().__init__(graph, constants, fast_ops(OPS) if ops is None else ops,
                         every_step=every_step)
        memory.keep_freed(sum(t.size * t.dtype.itemsize for step in self._steps for t in step.types))

    def _rewrite(self, planned: list[Planned]) -> list[Planned]:  # type: ignore[override]
        """Run each pattern as one step (patterns.py), then fuse each band-wise op whose input
        only it reads into that input's producer."""
        results = {r.index for r in self._results if isinstance(r, Slot)}
        slot_of = {p.node.id: self._values.get((p.node.id, None)) for p in planned}
        inputs = [tuple(i.type.shape) for i in self.graph.inputs]
        planned = self._patterns(patterns.Steps(planned, slot_of, results, inputs))
        readers = patterns.Steps(planned, slot_of, results, inputs).readers
        taken: set[int] = set()  # indices of the nodes fused into an earlier one
        fused = []
        for i, p in enumerate(planned):
            if i in taken:
                continue
            chains = takes(p.opdef.fn, "epilogue")  # (a pattern's step has a tail of its own)
            while chains and not isinstance(p.last.result_type, tuple):
                slot = slot_of[p.last.id]
                users = readers.get(slot.index, []) if isinstance(slot, Slot) else []
                if slot is None or slot.index in results or len(users) != 1:
                    break
                j, band = users[0]
                consumer = planned[j]
                if not consumer.opdef.bandwise or not all(
                        is_known(a) and _along_last_axis(a, consumer.node)
                        for name, a in consumer.args.items() if name != band):
                    break
                p = Planned(p.node, p.opdef, p.args,
                             (*p.tail, (consumer.node, consumer.opdef, consumer.args)))
                taken.add(j)
            if chains and p.tail:
                self._groups[p.node.id] = (p.args, ((p.node, p.args), *((n, a) for n, _, a in p.tail)))
                chain = [(node, opdef, band, {k: known_value(a) for k, a in args.items() if k != band})
                         for node, opdef, args in p.tail
                         for band in [next(k for k, a in args.items() if isinstance(a, Slot))]]
                p = Planned(p.node, p.opdef, {**p.args, "epilogue": Known(_Epilogue(chain))}, p.tail)
            fused.append(p)
        self._calls_blas = any(p.opdef.blas for p in fused)
        return fused

    def _patterns(self, steps: patterns.Steps) -> list[Planned]:
        """The steps, each pattern patterns.find finds among them run as one step, placed where
        the node it is named for was."""
        planned = steps.planned
        found = patterns.find(steps)
        at = {next(i for i in hit.steps if planned[i].node is hit.step.node): hit for hit in found}
        gone = {i for hit in found for i in hit.steps}
        kept = []
        for i, p in enumerate(planned):
            if i in at:
                step = at[i].step
                self._groups[step.node.id] = (step.args, tuple((planned[j].node, planned[j].args)
                                                               for j in at[i].steps))
                kept.append(step)
            elif i not in gone:
                kept.append(p)
        return kept

    def _step_fn(self, node: Node, opdef: FastOpDef, static: dict[str, object],  # type: ignore[override]
                 runtime: dict[str, TensorType] | None
                 ) -> tuple[Callable[..., object], dict[str, object]]:
        """The op's plan-time form where it has one (registry.py, `prepare`)."""
        if opdef.prepare is not None and runtime is not None:
            made = guard(node, lambda: opdef.prepare(**static, **runtime))  # type: ignore[misc]
            if made is not None:
                self._known[node.id] = static
                return made, {}
        return opdef.fn, static

    _deferred = (background.NotCompiled,)

    def _instead(self, step: Step, operands: dict[str, object]) -> object:
        """While a compiled loop the step calls is not compiled yet (background.NotCompiled,
        raised only where the plan runs the reference meanwhile): the reference operators of
        the nodes the step stands for (`_groups`; its node alone, with its known operands,
        where it is not fused), in turn."""
        self.interim_steps += 1
        node = step.node
        group = self._groups.get(node.id)
        operands = {k: v for k, v in {**self._known.get(node.id, {}), **operands}.items()
                    if k != "epilogue"}
        if group is None:
            return guard(node, lambda: OPS[node.op].fn(**operands))
        return guard(node, lambda: self._reference(*group, operands))

    def _reference(self, step_args: Args, nodes: Sequence[tuple[Node, Args]],
                   operands: Mapping[str, object]) -> object:
        """The last result of `nodes` run in turn by the reference operators, from a fused
        step's run-time `operands` (by name, as its `step_args` name their slots)."""
        values: dict[int, object] = {arg.index: operands[name] for name, arg in step_args.items()
                                     if isinstance(arg, Slot)}
        result: object = None
        for node, args in nodes:
            kwargs = {name: arg.value if isinstance(arg, Known) else values[arg.index]  # type: ignore[union-attr]
                      for name, arg in args.items()}
            result = OPS[node.op].fn(**kwargs)
            slot = self._values.get((node.id, None))
            if isinstance(slot, Slot):
                values[slot.index] = result
        return result

    @contextmanager
    def _running(self) -> Iterator[None]:
        """The run's thread count; loops missing from numba's cache left to the compiler
        process (background.deferring, where the plan runs the reference meanwhile); BLAS held
        to one thread as threads.blas_threads says, where the graph calls BLAS."""
        with run_threads(self.threads), background.deferring() if self.interim else nullcontext():
            if not self._calls_blas:
                yield
                return
            with blas_threads():
                yield


def _along_last_axis(arg: object, node: Node) -> bool:
    """Whether a known operand of a band-wise op applies to any band of its run-time one: it
    broadcasts along the last axis at most (one value per channel, say), so that a band of
    rows meets the same values as the whole tensor."""
    value = known_value(arg)  # type: ignore[arg-type]
    shape = getattr(value, "shape", ())
    rank = len(result_types(node)[0].shape)
    return len(shape) != rank or all(d == 1 for d in shape[:-1])


class _Epilogue:
    """Band-wise ops applied in turn to a band of a producer's result, each with its known
    operands bound and the band as its run-time operand (`input`, or a binary op's input1 or
    input2); the band is the producer's temporary, so in-place forms are used.

    `dtype` is the element type of the last op's result."""

    def __init__(self, chain: Sequence[tuple[Node, FastOpDef, str, dict[str, object]]]):
        self.chain = tuple(chain)
        self.ops = tuple(link[0].op for link in chain)
        """The fused ops' names, in order."""
        self.dtype = result_types(chain[-1][0])[0].dtype
        node, opdef, _, static = chain[0]
        factory = opdef.from_accumulator
        self._accumulated = None if factory is None else guard(node, lambda: factory(**static))
        self.bounds = getattr(self._accumulated, "bounds", None) if len(chain) == 1 else None
        """The form's `bounds` when it is the whole epilogue (see conv.Epilogue)."""
        self.first_dtype = result_types(node)[0].dtype
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
        band = guard(self.chain[0][0], lambda: form(acc, bias, result_dtype))  # type: ignore[operator]
        return None if band is None else self._rest(band, 1)  # type: ignore[arg-type]

    def rescale(self, bias: np.ndarray, result_dtype: np.dtype, channels: int) -> Rescale | None:
        """The first op as kernels.Rescale, when its accumulator form has that (see
        conv.Epilogue); else None."""
        form = getattr(self._accumulated, "rescale", None)
        return None if form is None else guard(self.chain[0][0],
                                                lambda: form(bias, result_dtype, channels))

    def rest(self, first: np.ndarray) -> np.ndarray:
        """The final result from the first op's result: the ops after it, in turn."""
        return self._rest(first, 1)

    def _rest(self, band: np.ndarray, start: int) -> np.ndarray:
        for node, opdef, name, static in self.chain[start:]:
            fn = opdef.inplace or opdef.fn
            band = guard(node, lambda: fn(**{name: band}, **static))  # type: ignore[assignment]  # noqa: B023 (called at once)
        return band

    def __repr__(self) -> str:
        return "_Epilogue(" + " -> ".join(self.ops) + ")"


