"""Run a `ScenarioPlan` on a HAL device, as scenario_runner runs the scenario on Vulkan.

Setup (everything that does not depend on data, done once): each dispatched VGF is planned by
the runtime's `Schedule` (pipelines, layouts; compute modules replaced by the scenario's shader
substitutions, its `substitutes`), memory is shared by each scenario memory group and each VGF alias group (both
may hold the same resource: they merge), the scenario's tensors and buffers and each VGF's
intermediate resources are created, and one command buffer records every command in order:
a VGF's segments with their bindings resolved through its model-sequence binding slots, compute
dispatches with their push constants, a full barrier after each dispatch with `implicit_barrier`
and for each `dispatch_barrier`. Then the `src` data is uploaded in file order, the command buffer
is submitted `repeat` times, and every `dst` is written as .npy (tensors in their format's dtype,
bfloat16 as `V2` bytes; buffers as int8 bytes), in file order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import hal
from ..errors import HalError, ScenarioError, VGFError
from ..format.model import NO_INDEX, VGF, ModuleType
from ..hal.graphs import planner_of
from ..limits import memory_budget
from ..runtime.check import check
from ..runtime.schedule import Schedule
from .parse import (
    BufferResource,
    DispatchBarrier,
    DispatchCompute,
    DispatchGraph,
    GraphResource,
    MarkBoundary,
    RawData,
    ScenarioPlan,
    ShaderResource,
    TensorResource,
    loads,
    parse,
)

_NPY_RAW = {"bfloat16": "V2", "float8_e4m3fn": "V1", "float8_e5m2": "u1"}
"""Formats scenario_runner writes as raw bytes, not as numpy floats (their npy dtype)."""


def _wrap(path: str, exc: VGFError) -> ScenarioError:
    if isinstance(exc, ScenarioError):
        return exc
    return ScenarioError(f"{type(exc).__name__}: {exc}", path=path)


def _npy(path: Path, where: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ScenarioError(f"{path} does not exist", path=where) from None
    except (OSError, ValueError, EOFError) as exc:
        raise ScenarioError(f"{path} is not a readable .npy file: {exc}", path=where) from None


@dataclass
class _Union:
    """Which resources share memory: union-find over keys, with each key's byte offset."""

    parent: dict = field(default_factory=dict)
    offset: dict = field(default_factory=dict)

    def add(self, key, offset: int = 0) -> None:
        self.parent.setdefault(key, key)
        self.offset.setdefault(key, offset)

    def find(self, key):
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, a, b) -> None:
        self.parent[self.find(a)] = self.find(b)

    def groups(self) -> list[list]:
        found: dict = {}
        for key in self.parent:
            found.setdefault(self.find(key), []).append(key)
        return list(found.values())


class ScenarioRun:
    """The HAL objects of one scenario on one device, set up once; `run()` submits them."""

    def __init__(self, plan: ScenarioPlan, device: hal.Device,
                 shaders: Mapping[str, hal.PythonShader] | None = None):
        self.plan = plan
        self.device = device
        self.local = device.prefers_device_local
        self.stand_ins = dict(shaders or {})
        self.schedules: dict[str, Schedule] = {}
        """The schedule of each dispatch_graph command, by its path (its shader substitutions
        are its own); commands of one graph with the same substitutions share one."""
        self.graphs: dict[str, Schedule] = {}
        """The first schedule of each graph resource: its intermediates' descriptions."""
        self.resources: dict[object, hal.Tensor | hal.Buffer] = {}
        """Scenario tensors and buffers by uid, VGF intermediates by (graph uid, MRT index)."""
        self._plan_graphs()
        self._create_resources()
        self.command_buffer = self._record()

    # -- setup

    def _shader_module(self, uid: str, target: str = "") -> hal.ShaderModule:
        shader = self.plan.resources[uid]
        assert isinstance(shader, ShaderResource)
        name = target if target and not self._has_stand_in(uid) else uid
        try:
            if shader.type == "spirv":
                raw = shader.src.read_bytes()
                if len(raw) % 4:
                    raise ScenarioError(f"{shader.src} holds {len(raw)} bytes, not whole SPIR-V words",
                                        path=f"{shader.path}.src")
                code = np.frombuffer(raw, "<u4")
            else:
                code = shader.src.read_text()
        except FileNotFoundError:
            raise ScenarioError(f"{shader.src} does not exist", path=f"{shader.path}.src") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"cannot read {shader.src}: {exc}", path=f"{shader.path}.src") from None
        try:
            return self.device.create_shader_module(code, name=name, language=shader.type, label=uid)
        except HalError as exc:
            raise _wrap(f"{shader.path}.src", exc) from None

    def _has_stand_in(self, name: str) -> bool:
        try:
            hal.find_shader(name, self.stand_ins)
        except HalError:
            return False
        return True

    def _plan_graphs(self) -> None:
        checked: dict[str, tuple[VGF, dict]] = {}
        shared: dict[tuple, Schedule] = {}
        for command in self.plan.commands:
            if not isinstance(command, DispatchGraph):
                continue
            graph = self.plan.resources[command.graph]
            assert isinstance(graph, GraphResource)
            if command.graph not in checked:
                checked[command.graph] = self._checked_vgf(graph, planner_of(self.device.adapter))
            vgf, plans = checked[command.graph]
            key = (command.graph, tuple(sorted(command.substitutions.items())))
            if key in shared:
                self.schedules[command.path] = shared[key]
                continue
            names = {m.name for m in vgf.modules if m.type == ModuleType.COMPUTE}
            for target in command.substitutions:
                if target not in names:
                    raise ScenarioError(f"target {target!r} is no compute module of {graph.src.name} "
                                        f"(it has {sorted(names)})", path=f"{command.path}.shader_substitutions")
            for target in command.push_constants:
                if target not in names:
                    raise ScenarioError(f"shader_target {target!r} is no compute module of {graph.src.name}",
                                        path=f"{command.path}.push_constants")
            modules = {t: self._shader_module(uid, t) for t, uid in command.substitutions.items()}
            try:
                schedule = Schedule(vgf, self.device, plans, substitutes=modules)
            except VGFError as exc:
                raise _wrap(command.path, exc) from None
            shared[key] = self.schedules[command.path] = schedule
            self.graphs.setdefault(command.graph, schedule)

    @staticmethod
    def _checked_vgf(graph: GraphResource, make_plan: Callable) -> tuple[VGF, dict]:
        """The VGF of a graph resource, checked whole (`runtime.check`), and what the check made
        of its segments (graph plans made by `make_plan`, the device's planner)."""
        from ..format import read

        where = f"{graph.path}.src"
        try:
            vgf = read(graph.src)
            return vgf, check(vgf, make_plan)
        except FileNotFoundError:
            raise ScenarioError(f"{graph.src} does not exist", path=where) from None
        except OSError as exc:
            raise ScenarioError(f"cannot read {graph.src}: {exc.strerror or exc}", path=where) from None
        except VGFError as exc:
            raise _wrap(where, exc) from None

    def _interface(self, command: DispatchGraph) -> dict[int, str]:
        """MRT index -> scenario uid of every model input and output the command binds."""
        vgf = self.schedules[command.path].vgf
        slots = {}
        for direction, entries in (("input", vgf.sequence.inputs), ("output", vgf.sequence.outputs)):
            for k, slot in enumerate(entries):
                slots.setdefault(slot.binding, (direction, k, slot.mrt_index))
        found: dict[int, str] = {}
        for b in command.bindings:
            if b.id not in slots:
                raise ScenarioError(f"binding id {b.id} is none of the VGF's input and output bindings "
                                    f"({sorted(slots)})", path=b.path)
            direction, k, mrt = slots[b.id]
            self._check_interface(self.schedules[command.path], mrt, b.resource, f"{direction} {k}", b.path)
            found[mrt] = b.resource
        for direction, entries in (("input", vgf.sequence.inputs), ("output", vgf.sequence.outputs)):
            for k, slot in enumerate(entries):
                if slot.mrt_index not in found:
                    raise ScenarioError(f"binds nothing to the VGF's {direction} {k} (binding id {slot.binding})",
                                        path=f"{command.path}.bindings")
        return found

    def _check_interface(self, schedule: Schedule, mrt: int, uid: str, what: str, where: str) -> None:
        given = self.plan.resources[uid]
        desc = schedule.descriptions[mrt]
        if schedule.is_tensor[mrt]:
            if not isinstance(given, TensorResource):
                raise ScenarioError(f"the VGF's {what} is a tensor, {uid!r} is not", path=where)
            if given.dims != desc.shape or given.format != desc.format:
                raise ScenarioError(f"the VGF's {what} is {desc}, tensor {uid!r} is "
                                    f"{hal.TensorDescription(given.format, given.dims)}", path=where)
        else:
            if not isinstance(given, BufferResource):
                raise ScenarioError(f"the VGF's {what} is a buffer, {uid!r} is not", path=where)
            if given.size != desc.nbytes:
                raise ScenarioError(f"the VGF's {what} is a buffer of {desc.nbytes} bytes, {uid!r} has "
                                    f"{given.size}", path=where)

    def _requirements(self, key) -> hal.MemoryRequirements:
        if isinstance(key, tuple):
            return self.graphs[key[0]].requirements[key[1]]
        r = self.plan.resources[key]
        if isinstance(r, TensorResource):
            return self.device.get_tensor_memory_requirements(self._description(r))
        return self.device.get_buffer_memory_requirements(r.size)

    def _description(self, r: TensorResource) -> hal.TensorDescription:
        tiling = hal.TensorTiling.OPTIMAL if r.tiling == "OPTIMAL" else hal.TensorTiling.LINEAR
        try:
            return self.device.tensor_description(r.format, r.dims, tiling=tiling)
        except HalError as exc:
            raise _wrap(r.path, exc) from None

    def _create_resources(self) -> None:
        union = _Union()
        groups: dict[str, str] = {}
        for uid, r in self.plan.resources.items():
            if isinstance(r, (TensorResource, BufferResource)):
                union.add(uid, r.memory_group.offset if r.memory_group else 0)
                if r.memory_group:
                    first = groups.setdefault(r.memory_group.id, uid)
                    union.join(uid, first)
        self.interfaces: dict[str, dict[int, str]] = {}
        for command in self.plan.commands:
            if not isinstance(command, DispatchGraph):
                continue
            interface = self.interfaces[command.path] = self._interface(command)
            schedule = self.schedules[command.path]
            alias: dict[int, object] = {}
            for mrt in schedule.used:
                group = schedule.vgf.resources[mrt].alias_group_id
                key = interface.get(mrt, (command.graph, mrt))
                union.add(key)
                if group != NO_INDEX:
                    union.join(key, alias.setdefault(group, key))
        groups_sizes = [(members, max(union.offset[k] + self._requirements(k).size for k in members))
                        for members in union.groups()]
        total, limit = sum(size for _, size in groups_sizes), memory_budget()
        if total > limit:
            members, size = max(groups_sizes, key=lambda g: g[1])
            raise ScenarioError(f"the scenario's resources need {total} bytes, more than pyvgf's memory budget "
                                f"({limit}, pyvgf.limits); the largest, {size} bytes, is here",
                                path=self._where(members[0]))
        for members, size in groups_sizes:
            memory = None
            try:
                if len(members) > 1 or union.offset[members[0]]:
                    memory = self.device.allocate_memory(size, label=f"memory of {members[0]!s}",
                                                         device_local=self.local)
                for key in members:
                    self.resources[key] = self._create(key, memory, union.offset[key])
            except MemoryError:
                raise ScenarioError(f"out of memory allocating {size} bytes", path=self._where(members[0])) from None

    def _where(self, key) -> str:
        """The JSON path of a resource key: the scenario resource, or the graph of an intermediate."""
        return self.plan.resources[key[0] if isinstance(key, tuple) else key].path

    def _create(self, key, memory: hal.DeviceMemory | None, offset: int) -> hal.Tensor | hal.Buffer:
        try:
            if isinstance(key, tuple):
                schedule = self.graphs[key[0]]
                desc = schedule.descriptions[key[1]]
                label = f"{key[0]} MRT {key[1]}"
                if schedule.is_tensor[key[1]]:
                    return self.device.create_tensor(desc.format, desc.shape, desc.strides, desc.usage, memory=memory,
                                                     memory_offset=offset, device_local=self.local, label=label)
                return self.device.create_buffer(desc.nbytes, memory=memory, memory_offset=offset,
                                                 device_local=self.local, label=label)
            r = self.plan.resources[key]
            if isinstance(r, TensorResource):
                d = self._description(r)
                return self.device.create_tensor(d.format, d.shape, usage=d.usage, tiling=d.tiling, memory=memory,
                                                 memory_offset=offset, device_local=self.local, label=key)
            return self.device.create_buffer(r.size, memory=memory, memory_offset=offset, device_local=self.local,
                                             label=key)
        except HalError as exc:
            raise _wrap(self._where(key), exc) from None

    # -- recording

    def _binding_view(self, key):
        res = self.resources[key]
        return res.create_view() if isinstance(res, hal.Tensor) else res

    def _push(self, encoder: hal.CommandEncoder, layout: hal.PipelineLayout, uid: str | None, where: str) -> None:
        if uid is None:
            return
        raw = self.plan.resources[uid]
        assert isinstance(raw, RawData)
        data = np.ascontiguousarray(_npy(raw.src, f"{raw.path}.src")).tobytes()
        try:
            encoder.push_constants(layout, hal.ShaderStage.COMPUTE, 0, data)
        except HalError as exc:
            raise _wrap(where, exc) from None

    def _record(self) -> hal.CommandBuffer:
        encoder = self.device.create_command_encoder(label=str(self.plan.file or "scenario"))
        for command in self.plan.commands:
            try:
                if isinstance(command, DispatchGraph):
                    self._record_graph(encoder, command)
                elif isinstance(command, DispatchCompute):
                    self._record_compute(encoder, command)
                elif isinstance(command, (DispatchBarrier, MarkBoundary)):
                    encoder.barrier()
            except HalError as exc:
                raise _wrap(command.path, exc) from None
        return encoder.finish()

    def _record_graph(self, encoder: hal.CommandEncoder, command: DispatchGraph) -> None:
        schedule = self.schedules[command.path]
        interface = self.interfaces[command.path]
        views = {}
        for plan in schedule.segments:
            graph = isinstance(plan.pipeline, hal.DataGraphPipeline)
            point = hal.PipelineBindPoint.DATA_GRAPH if graph else hal.PipelineBindPoint.COMPUTE
            encoder.bind_pipeline(plan.pipeline)
            for index, bindings in plan.sets.items():
                resources = {}
                for b, mrt in bindings.items():
                    key = interface.get(mrt, (command.graph, mrt))
                    if key not in views:
                        views[key] = self._binding_view(key)
                    resources[b] = views[key]
                dset = self.device.create_descriptor_set(plan.layout.set_layouts[index], resources)
                encoder.bind_descriptor_set(point, plan.layout, index, dset)
            if graph:
                encoder.dispatch_data_graph(self._session(plan.pipeline))
            else:
                module = schedule.vgf.modules[plan.segment.module_index].name
                self._push(encoder, plan.layout, command.push_constants.get(module), f"{command.path}.push_constants")
                encoder.dispatch(*plan.segment.dispatch_shape)
            if command.implicit_barrier:
                encoder.barrier()

    def _record_compute(self, encoder: hal.CommandEncoder, command: DispatchCompute) -> None:
        shader = self.plan.resources[command.shader]
        assert isinstance(shader, ShaderResource)
        sets: dict[int, dict[int, object]] = {}
        for b in command.bindings:
            sets.setdefault(b.set, {})[b.id] = b.resource
        layouts = []
        for index in range(max(sets, default=-1) + 1):
            bindings = [hal.DescriptorSetLayoutBinding(
                binding, hal.DescriptorType.TENSOR if isinstance(self.plan.resources[uid], TensorResource)
                else hal.DescriptorType.STORAGE_BUFFER) for binding, uid in sorted(sets.get(index, {}).items())]
            layouts.append(self.device.create_descriptor_set_layout(bindings))
        push_size = shader.push_constants_size
        if command.push_data is not None and not push_size:
            raw = self.plan.resources[command.push_data]
            push_size = _npy(raw.src, f"{raw.path}.src").nbytes
        ranges = [hal.PushConstantRange(hal.ShaderStage.COMPUTE, 0, push_size)] if push_size else []
        layout = self.device.create_pipeline_layout(layouts, ranges)
        module = self._shader_module(command.shader)
        pipeline = self.device.create_compute_pipeline(module, shader.entry, layout, label=command.shader)
        encoder.bind_pipeline(pipeline)
        for index, bindings in sets.items():
            dset = self.device.create_descriptor_set(layouts[index], {b: self._binding_view(uid)
                                                                      for b, uid in bindings.items()})
            encoder.bind_descriptor_set(hal.PipelineBindPoint.COMPUTE, layout, index, dset)
        self._push(encoder, layout, command.push_data, f"{command.path}.push_data_ref")
        encoder.dispatch(*command.range_nd)
        if command.implicit_barrier:
            encoder.barrier()

    def _session(self, pipeline: hal.DataGraphPipeline) -> hal.DataGraphSession:
        session = self.device.create_data_graph_session(pipeline)
        for req in session.bind_point_requirements:
            for i in range(req.num_objects):
                size = session.memory_requirements(req.bind_point, i).size
                if size:
                    session.bind_memory(self.device.allocate_memory(size, device_local=self.local), 0,
                                        req.bind_point, i)
        return session

    # -- running

    def upload(self) -> None:
        """Write each resource's `src` data, or zeros where it has none and shares no memory (in
        file order: a later one wins where memory is shared), as scenario_runner does."""
        queue = self.device.queue
        for uid, r in self.plan.resources.items():
            if not isinstance(r, (TensorResource, BufferResource)):
                continue
            res = self.resources[uid]
            where = f"{r.path}.src"
            nbytes = int(np.prod(res.shape)) * res.dtype.itemsize if isinstance(res, hal.Tensor) else res.size
            if r.src is not None:
                data = _npy(r.src, where)
                if isinstance(res, hal.Tensor) and data.shape != res.shape:
                    raise ScenarioError(f"{r.src} holds an array of shape {list(data.shape)}, tensor {uid!r} "
                                        f"is {res.description}", path=where)
                raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
                if raw.size != nbytes:
                    raise ScenarioError(f"{r.src} holds {raw.size} bytes of data, {uid!r} takes {nbytes}", path=where)
            elif res.memory is None:
                raw = np.zeros(nbytes, np.uint8)
            else:
                continue
            if isinstance(res, hal.Tensor):
                queue.write_tensor(res, raw.view(res.dtype).reshape(res.shape))
            else:
                queue.write_buffer(res, raw)

    def run(self, repeat: int = 1) -> list[tuple[float, float]]:
        """Submit the command buffer `repeat` times, each after the last finished; returns when
        each began and ended (submit to fence, `time.perf_counter()` seconds)."""
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            self.device.queue.submit([self.command_buffer]).wait()
            times.append((start, time.perf_counter()))
        return times

    def save(self) -> list[Path]:
        """Write every `dst` as scenario_runner does; returns the paths, in file order."""
        written = []
        queue = self.device.queue
        for r in self.plan.outputs():
            res = self.resources[r.uid]
            if isinstance(res, hal.Tensor):
                array = queue.read_tensor(res)
                raw = _NPY_RAW.get(array.dtype.name)
                if raw is not None:
                    array = array.view(raw)
            else:
                array = queue.read_buffer(res).view(np.int8)
            try:
                with open(r.dst, "wb") as f:
                    np.save(f, array, allow_pickle=False)
            except OSError as exc:
                raise ScenarioError(f"cannot write {r.dst}: {exc.strerror or exc}", path=f"{r.path}.dst") from None
            written.append(r.dst)
        return written


@dataclass(frozen=True)
class ScenarioResult:
    """What `run` did: the files written, the setup's seconds and each repeat's (start, end)."""

    outputs: list[Path]
    setup_s: float
    runs: list[tuple[float, float]]

    @property
    def repeat_s(self) -> list[float]:
        return [end - start for start, end in self.runs]


def run(plan: ScenarioPlan, backend: str = "cpu", *, repeat: int = 1, dry_run: bool = False,
        profiling_dump_path: str | Path | None = None, shaders: Mapping[str, hal.PythonShader] | None = None,
        adapter_options: Mapping[str, object] | None = None) -> ScenarioResult:
    """Run a scenario plan on `backend` as `scenario_runner --repeat N [--dry-run]` does: make the
    output folder, set up, upload the `src` data, run the commands `repeat` times, write each `dst`. `dry_run` sets
    everything up and runs and writes nothing. `shaders` are Python stand-ins for compute shaders
    on the cpu backend, by shader uid or VGF module name."""
    if repeat < 1:
        raise ScenarioError(f"the repeat count must be at least 1, got {repeat}")
    start = time.perf_counter()
    try:
        plan.output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScenarioError(f"cannot make the output folder {plan.output}: {exc.strerror or exc}") from None
    adapter = hal.request_adapter(backend, **(adapter_options or {}))
    try:
        device = adapter.request_device(shaders=shaders)
        try:
            scenario = ScenarioRun(plan, device, shaders)
            setup = time.perf_counter() - start
            times, outputs = [], []
            if not dry_run:
                scenario.upload()
                times = scenario.run(repeat)
                outputs = scenario.save()
        finally:
            device.destroy()
    finally:
        adapter.destroy()
    result = ScenarioResult(outputs, setup, times)
    if profiling_dump_path is not None:
        _write_profile(Path(profiling_dump_path), backend, result, dry_run)
    return result


def _write_profile(path: Path, backend: str, result: ScenarioResult, dry_run: bool) -> None:
    """pyvgf's profile (`pyvgf.debug.Profile`) as a Chrome trace: one "run" event per repeat."""
    from ..debug import Event, Profile

    events = [Event("run", i, None, "", start, end) for i, (start, end) in enumerate(result.runs)]
    note = f"scenario setup {result.setup_s * 1e3:.1f} ms before the runs; the commands are not timed one by one"
    profile = Profile(backend, len(events), events, note + ("; a dry run runs nothing" if dry_run else ""))
    try:
        profile.write_trace(path)
    except OSError as exc:
        raise ScenarioError(f"cannot write the profile {path}: {exc.strerror or exc}") from None


def fuzz_target(data: bytes) -> None:
    """Parse scenario JSON bytes and run them on the cpu backend, writing into a temporary folder
    (relative paths resolve there; a corpus names real files by absolute path). Returns, or
    raises a VGFError: the fuzz harness's (pyvgf.testing.fuzz) contract."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pyvgf-scenario-fuzz-") as folder:
        run(parse(loads(data), folder), "cpu")
