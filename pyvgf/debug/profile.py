"""Where a run's time goes: per operator step on the cpu executor, per segment on vulkan (GPU
timestamp queries), as a sorted table or a Chrome trace event file (Perfetto and
chrome://tracing open it).

On the cpu executor the plan that always runs is timed: a step with band-wise ops fused into it
is one row, named by its chain ("CONV2D + RESCALE + CLAMP"), as its time is one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .capture import _segments, require_cpu
from .watch import watching

if TYPE_CHECKING:
    from ..runtime import Model
    from ..runtime.model import Inputs


@dataclass(frozen=True)
class Event:
    """A timed span of a run: a step (`kind` "op"), a segment ("segment") or a whole run ("run").

    `start`/`end` are seconds on the run's clock (`time.perf_counter()` on the cpu executor, the
    GPU's timestamp counter converted to seconds on vulkan); for a step, `ops` are the TOSA ops
    it runs (several when fused), `op_index` and `id` those of its first node, `shape` its
    result's shape."""

    kind: str
    run: int
    segment: int | None
    segment_name: str
    start: float
    end: float
    ops: tuple[str, ...] = ()
    op_index: int | None = None
    id: int | None = None
    name: str | None = None
    shape: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        if self.kind == "op":
            return " + ".join(self.ops)
        if self.kind == "segment":
            return f"segment {self.segment} {self.segment_name}"
        return f"run {self.run}"

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Profile:
    """The timed events of `runs` runs of a model on `backend` (see `profile`)."""

    backend: str
    runs: int = 0
    events: list[Event] = field(default_factory=list)
    note: str = ""
    """What the profile could not time, where it says so (no GPU timestamps on the queue)."""

    def table(self) -> str:
        """Steps (cpu) or segments (vulkan) grouped by label, slowest first: time per run, share
        of the run, count per run, time per step."""
        runs = max(self.runs, 1)
        total = sum(e.seconds for e in self.events if e.kind == "run") / runs
        rows_of = "op" if any(e.kind == "op" for e in self.events) else "segment"
        spent: dict[str, float] = {}
        count: dict[str, int] = {}
        for e in self.events:
            if e.kind == rows_of:
                spent[e.label] = spent.get(e.label, 0.0) + e.seconds / runs
                count[e.label] = count.get(e.label, 0) + 1
        timed = sum(spent.values())
        where = "operator steps" if rows_of == "op" else "GPU segments"
        lines = [f"profile of {self.runs} run(s) on {self.backend}: {total * 1e3:.3f} ms per run, "
                 + f"{timed * 1e3:.3f} ms of it in {where}"]
        width = max([len(k) for k in spent] + [24])
        lines.append(f"  {'operator' if rows_of == 'op' else 'segment':<{width}}  {'ms/run':>9}  {'share':>6}  "
                     f"{'count/run':>9}  {'ms each':>8}")
        for label, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
            per = count[label] / runs
            lines.append(f"  {label:<{width}}  {seconds * 1e3:9.3f}  {_share(seconds, total):>6}  "
                         f"{per:9g}  {seconds * 1e3 / per:8.3f}")
        rest = total - timed
        if rows_of == "op":
            lines.append(f"  {'(interpreter, transfers)':<{width}}  {rest * 1e3:9.3f}  {_share(rest, total):>6}")
        else:
            lines.append(f"  {'(host: submit, transfers)':<{width}}  {rest * 1e3:9.3f}  {_share(rest, total):>6}")
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)

    def trace(self) -> dict:
        """The events in the Chrome trace event format (JSON object form): complete events
        ("ph": "X") in microseconds from the first run's start, runs, segments and steps nested
        on one track per clock (host, GPU)."""
        origin = min((e.start for e in self.events if e.kind == "run"), default=0.0)
        events: list[dict] = [
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": f"pyvgf on {self.backend}"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "host"}},
        ]
        gpu = [e for e in self.events if e.kind == "segment" and self.backend != "cpu"]
        if gpu:
            events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "GPU queue"}})
        gpu_origin = min((e.start for e in gpu), default=0.0)
        for e in self.events:
            on_gpu = e.kind == "segment" and self.backend != "cpu"
            zero = gpu_origin if on_gpu else origin
            args: dict[str, object] = {"run": e.run}
            if e.segment is not None:
                args["segment"] = e.segment
            if e.kind == "op":
                args.update(op_index=e.op_index, id=e.id, shape=list(e.shape))
                if e.name:
                    args["name"] = e.name
            events.append({"name": e.label, "cat": e.kind, "ph": "X", "pid": 1, "tid": 2 if on_gpu else 1,
                           "ts": round((e.start - zero) * 1e6, 3), "dur": round(e.seconds * 1e6, 3),
                           "args": args})
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"backend": self.backend, "runs": self.runs, **({"note": self.note} if self.note else {})}}

    def write_trace(self, path: str | Path) -> Path:
        """Write `trace()` as JSON to `path`."""
        path = Path(path)
        path.write_text(json.dumps(self.trace()) + "\n")
        return path


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f}%" if whole > 0 else "-"


class _CpuTimer:
    """Times each step of the plans the cpu executor always runs. A step only appends its
    node and times to a list; the events are made from them after the runs (`events`)."""

    def __init__(self, model: Model):
        self._segments = _segments(model)
        self._spans: list[tuple[int, object, list]] = []  # (run, pipeline, [(node, start, end, shape)])
        self.run = 0

    def graph(self, pipeline: object, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        plan = pipeline.plan  # type: ignore[attr-defined]
        if id(pipeline) not in self._segments:  # another model run inside the profile
            return plan.run(inputs)
        steps: list[tuple[object, float, float, tuple[int, ...]]] = []
        append = steps.append

        def observe(node, results, start, end):
            append((node, start, end, results[0].shape))

        start = time.perf_counter()
        outputs = plan.run(inputs, observe)
        append((None, start, time.perf_counter(), ()))
        self._spans.append((self.run, pipeline, steps))
        return outputs

    def events(self) -> list[Event]:
        """The step and segment events of the runs timed so far."""
        events = []
        for run, pipeline, steps in self._spans:
            segment, segment_name = self._segments[id(pipeline)]
            plan = pipeline.plan  # type: ignore[attr-defined]
            chains = {chain[0].id: tuple(n.op for n in chain) for chain in plan.fused}
            index = {node.id: i for i, node in enumerate(plan.graph.nodes)}
            for node, start, end, shape in steps:
                if node is None:
                    events.append(Event("segment", run, segment, segment_name, start, end))
                else:
                    events.append(Event("op", run, segment, segment_name, start, end,
                                        chains.get(node.id, (node.op,)), index[node.id], node.id,
                                        node.name, shape))
        return events


def profile(model: Model, inputs: Inputs, runs: int = 1) -> Profile:
    """Run `model` `runs` times on `inputs`, timing each operator step (cpu executor) or each
    segment on the GPU (vulkan, where its queue has timestamps). Runs once first, untimed, so
    that one-time work (compiling loops, first touches of memory) stays out of the figures."""
    if runs < 1:
        raise ValueError("profile needs at least one run")
    if model.backend == "vulkan":
        return _profile_segments(model, inputs, runs)
    require_cpu(model, "profiling")
    result = Profile(model.backend, runs)
    model.run(inputs)
    timer = _CpuTimer(model)
    with watching(timer):
        for run in range(runs):
            timer.run = run
            start = time.perf_counter()
            model.run(inputs)
            result.events.append(Event("run", run, None, "", start, time.perf_counter()))
    result.events += timer.events()
    return result


def _profile_segments(model: Model, inputs: Inputs, runs: int) -> Profile:
    """Per-segment times from the device's timestamp queries (see `Schedule.execution`), on an
    execution of its own, with each run's wall time on the host; host times alone, and a note
    saying why, where the device's queue has no timestamps."""
    result = Profile(model.backend, runs)
    device = model.device
    if device.timestamp_period is None:
        result.note = (f"{device.adapter.info.name}: the queue family has no timestamps "
                       "(timestampValidBits 0), so no per-segment times")
        model.run(inputs)
        for run in range(runs):
            start = time.perf_counter()
            model.run(inputs)
            result.events.append(Event("run", run, None, "", start, time.perf_counter()))
        return result
    segments = [plan.segment.name for plan in model._schedule.segments]
    arrays = model._check(inputs)
    pool = device.create_query_pool(len(segments) + 1, label="pyvgf.debug profile")
    try:
        run_once = model._schedule.execution(timestamps=pool).prepared.run
        run_once(arrays)
        for run in range(runs):
            start = time.perf_counter()
            run_once(arrays)
            result.events.append(Event("run", run, None, "", start, time.perf_counter()))
            stamps = pool.results()
            for n, name in enumerate(segments):
                begin, end = stamps[n], stamps[n + 1]
                if begin is not None and end is not None:
                    result.events.append(Event("segment", run, n, name, begin, end))
    finally:
        pool.destroy()
    return result
