"""Every operator's result in a run on the cpu executor, keyed so a person can find it in the
model: segment, operator index, TOSA op, SPIR-V result id, and the OpName where there is one.

A capture runs each graph segment on a plan of its own where nothing is folded or fused
(`GraphPlan(..., every_step=True)`, made once per pipeline and kept while it lives), so the
values a fused step never materialises exist; a run without a capture is not touched.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import VGFError
from .watch import watching

if TYPE_CHECKING:
    from ..runtime import Model
    from ..runtime.model import Inputs
    from ..tosa.interpreter import GraphPlan

_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PLANS_LOCK = threading.Lock()


def every_step_plan(pipeline: object) -> GraphPlan:
    """The plan of a cpu data graph pipeline that runs every node as a step of its own."""
    with _PLANS_LOCK:
        plan = _PLANS.get(pipeline)
        if plan is None:
            fast = pipeline.plan  # type: ignore[attr-defined]
            plan = _PLANS[pipeline] = type(fast)(fast.graph, fast.constants, every_step=True)
        return plan


@dataclass(frozen=True)
class Intermediate:
    """One result of one operator in one run.

    `op_index` is the operator's position among its segment graph's TOSA operators, in module
    order (the order `pyvgf inspect --spirv` lists them); `id` the SPIR-V result id of its
    OpExtInst; `name` its OpName and `location` its OpLine ("FILE:LINE:COLUMN"), where the module
    has them; `element` which result of an operator with several (None for one)."""

    segment: int
    segment_name: str
    op_index: int
    op: str
    id: int
    name: str | None
    element: int | None
    value: np.ndarray
    location: str | None = None

    @property
    def key(self) -> str:
        """A file-name-safe key: `s0_op0012_CONV2D_6012` (and `_r1` for a second result)."""
        key = f"s{self.segment}_op{self.op_index:04d}_{self.op}_{self.id}"
        return key if self.element is None else f"{key}_r{self.element}"

    def __str__(self) -> str:
        name = f' "{self.name}"' if self.name else ""
        where = f" at {self.location}" if self.location else ""
        shape = "x".join(map(str, self.value.shape))
        return (f"segment {self.segment} op {self.op_index} {self.op} %{self.id}{name}{where}: "
                f"{self.value.dtype}[{shape}]")


def _segments(model: Model) -> dict[int, tuple[int, str]]:
    """id(pipeline) -> (segment index, segment name) for each segment of a loaded model."""
    return {id(p.pipeline): (n, p.segment.name) for n, p in enumerate(model._schedule.segments)}


def require_cpu(model: Model, what: str) -> None:
    from ..hal.cpu import CpuDevice

    if not isinstance(model.device, CpuDevice):
        raise VGFError(f"{what} needs a model on the cpu executor; this one runs on {model.backend}")


class Capture:
    """The intermediate values of one run (see `capture`).

    `values` lists every operator result in execution order; `inputs[segment]` holds the values
    each graph segment was given; `outputs` are the run's outputs (as `Model.run` returns them).
    """

    def __init__(self, model: Model):
        self._segments = _segments(model)
        self.values: list[Intermediate] = []
        self.inputs: dict[int, list[np.ndarray]] = {}
        self.outputs: list[np.ndarray] = []

    def graph(self, pipeline: object, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if id(pipeline) not in self._segments:  # another model run inside the capture
            return pipeline.plan.run(inputs)  # type: ignore[attr-defined]
        segment, segment_name = self._segments[id(pipeline)]
        plan = every_step_plan(pipeline)
        index = {node.id: i for i, node in enumerate(plan.graph.nodes)}
        self.inputs[segment] = [np.array(a, copy=True) for a in inputs]

        def observe(node, results, start, end):
            elements = range(len(results)) if isinstance(node.result_type, tuple) else (None,)
            for element, value in zip(elements, results):
                self.values.append(Intermediate(segment, segment_name, index[node.id], node.op, node.id,
                                                node.name, element, np.array(value, copy=True), node.location))

        return plan.run(inputs, observe)

    def find(self, segment: int, id: int, element: int | None = None) -> Intermediate:
        """The value of SPIR-V result `id` of `segment`."""
        for value in self.values:
            if (value.segment, value.id, value.element) == (segment, id, element):
                return value
        raise KeyError(f"no captured result %{id} in segment {segment}")

    def dump(self, directory: str | Path) -> Path:
        """Write each value to DIRECTORY/<key>.npy and DIRECTORY/index.json describing them all;
        returns the index's path. bfloat16 and fp8 values (which .npy cannot type) are saved as
        their bit patterns, as the index says (`stored_as`)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        entries = []
        for v in self.values:
            array, stored = storable(v.value)
            path = out / f"{v.key}.npy"
            np.save(path, array)
            entry = {"file": path.name, "segment": v.segment, "segment_name": v.segment_name,
                     "op_index": v.op_index, "op": v.op, "id": v.id, "name": v.name, "location": v.location,
                     "element": v.element, "dtype": str(v.value.dtype), "shape": list(v.value.shape)}
            if stored is not None:
                entry["stored_as"] = stored
            entries.append(entry)
        index = out / "index.json"
        lines = ",\n".join("  " + json.dumps(entry) for entry in entries)  # one value a line
        index.write_text('{"values": [\n' + lines + "\n]}\n")
        return index


def storable(array: np.ndarray) -> tuple[np.ndarray, str | None]:
    """An array .npy can hold, and the dtype it is stored as where that is not its own:
    bfloat16 and fp8 as their bit patterns."""
    if array.dtype.kind == "V" or re.match(r"(bfloat|float8)", array.dtype.name):
        bits = array.view(f"<u{array.dtype.itemsize}")
        return bits, str(bits.dtype)
    return array, None


def capture(model: Model, inputs: Inputs) -> Capture:
    """Run `model` (loaded on the cpu backend) once on `inputs`, keeping every operator's result.

        cap = pyvgf.debug.capture(model, [x])
        for v in cap.values: print(v, v.value.max())
        cap.dump("intermediates/")
    """
    require_cpu(model, "capturing intermediate values")
    cap = Capture(model)
    with watching(cap):
        cap.outputs = model.run(inputs)
    return cap
