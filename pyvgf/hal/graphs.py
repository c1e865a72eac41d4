"""The checks every backend makes on a data graph pipeline before it is created.

`plan_graph` decodes the SPIR-V graph module (unless the runtime already did at load), checks
each graph interface variable against the `DataGraphResource` at its (set, binding) and each
OpGraphConstantARM id against the given constants (`_classes.binds`: same Vulkan dimensions, a
format that carries the element type by `pyvgf.elements.format_carries`), and plans the graph (every op's operand
counts, types and shape rules, constant folding). The cpu backend runs the plan; the vulkan
backend creates its pipeline only after it succeeded, so no driver sees a graph pyvgf rejects.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from ..elements import canonical
from ..errors import HalError
from ._classes import binds, graph_views


def constant_array(c) -> np.ndarray:
    """A graph constant's data read as its description says, without copying when it is contiguous."""
    d = c.description
    data = c.data if c.data.flags.c_contiguous else np.ascontiguousarray(c.data)
    raw = data.reshape(-1).view(np.uint8)
    return np.ndarray(d.shape, d.dtype, buffer=raw, strides=d.byte_strides)


def planner(executor: str, threads: int | None = None) -> Callable:
    """What plans a graph, `make(graph, constants)`, for a TOSA executor: the fast executor's
    `FastPlan`, its runs split over `threads`; or the reference's `GraphPlan`, which also makes
    the checks of the graphs a vulkan device runs."""
    if executor == "fast":
        from ..fast.plan import FastPlan

        return functools.partial(FastPlan, threads=threads)
    from ..tosa.interpreter import GraphPlan

    return GraphPlan


def planner_of(adapter) -> Callable:
    """The `planner` of the executor an adapter's devices run graphs on (the reference's for
    adapters without one, such as vulkan's)."""
    return planner(getattr(adapter, "executor", "reference"), getattr(adapter, "threads", None))


def plan_graph(module, entry_point: str, resources: Sequence, constants: Sequence, label: str, plan=None,
               make: Callable | None = None):
    """The plan of `module`'s graph `entry_point` (made by `make`, see `planner`), checked against
    `resources` and `constants` (a `plan` made at load is checked against them and returned)."""
    from ..spirv import decode_graph

    graph = decode_graph(module.code, entry_point or None) if plan is None else plan.graph
    graph_views(label, (*graph.inputs, *graph.outputs), resources)
    given = {c.id: c for c in constants}
    arrays = {}
    for gid, ttype in graph.constants.items():
        c = given.get(gid)
        if c is None:
            raise HalError(f"graph {label!r} uses graph constant {gid}, which was not given")
        if not binds(c.description, ttype):
            raise HalError(f"graph constant {gid} of {label!r} is {ttype}, given {c.description}")
        if plan is None:  # seen as the graph's type: a rank-0 constant, or the other signedness
            arrays[gid] = canonical(constant_array(c).view(ttype.dtype).reshape(ttype.shape))
    return (make or planner("reference"))(graph, arrays) if plan is None else plan
