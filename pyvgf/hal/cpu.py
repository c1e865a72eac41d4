"""The cpu backend: the HAL in numpy, with no GPU and no Vulkan.

Memory is a numpy byte array; tensors and buffers are views into it, so resources bound to the
same memory alias exactly as in Vulkan. Data graph pipelines run through a TOSA executor, whose
plan is built once when the pipeline is created: the fast one (pyvgf/fast/) where the `fast`
extra is installed, else the plain reference (pyvgf/tosa/), which the `reference` backend
always uses (`executor` names the adapter's); compute pipelines run the Python
stand-in registered for their module name. A command buffer is a list of steps that
`Queue.submit` runs in order, in the calling thread, each finished before the next starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np

from ..debug.watch import WATCHER
from ..errors import HalError, VGFError
from ..types import TensorType
from . import _classes as hal
from .shaders import find_shader

_ALIGNMENT = 16


_INSTRUCTIONS = {"avx512vnni": "AVX-512 VNNI", "avxvnni": "AVX-VNNI", "avx2": "AVX2"}
"""What `pyvgf doctor` calls the instruction sets of the fast executor's int8 tiles."""

EXECUTORS = {"fast": "pyvgf fast executor (numba)", "reference": "pyvgf numpy reference"}
"""The TOSA executors of the cpu backends, and the adapter name of each."""


def executor() -> str:
    """The executor `backend="cpu"` uses here: "fast" where the `fast` extra is installed,
    else "reference"."""
    from .. import fast

    return "fast" if fast.available() else "reference"


def report() -> str:
    """A plain-text report for `pyvgf doctor`: which executor backend="cpu" runs, and why."""
    import os
    from importlib.metadata import PackageNotFoundError, version

    from .. import fast

    def versions(names: tuple[str, ...]) -> str:
        found = []
        for name in names:
            try:
                found.append(f"{name} {version(name)}")
            except PackageNotFoundError:
                found.append(f"{name} (version unknown)")
        return ", ".join(found)

    lines = ["CPU backend", f"  numpy {np.__version__}"]
    if fast.available():
        lines.append(f"  executor: fast (pyvgf/fast/: {versions(fast.REQUIRES)}); "
                     f'backend="reference" runs the plain numpy reference')
        from ..fast.compiled import cache_status
        from ..fast.threads import SPIN_COUNT, layer

        path, cached, loops = cache_status()
        if path is None:
            lines.append("  compiled-loop cache: none (no writable folder: every process compiles "
                         "the loops at its first run)")
        else:
            state = "warm" if cached == loops else (
                "cold: until a compiler process has compiled the rest, the steps needing them "
                "run the reference")
            lines.append(f"  compiled-loop cache: {path} ({state}; {cached} of {loops} loops cached)")
        threads = fast.num_threads()
        running = {"tbb": "TBB (work stealing; idle threads yield, then sleep)",
                   "omp": f"GNU OpenMP (idle threads sleep after GOMP_SPINCOUNT="
                          f"{os.environ.get('GOMP_SPINCOUNT', SPIN_COUNT)} spins; pip install tbb "
                          f"shares the cores better)",
                   None: "none: the loops run on one thread"}[layer()]
        lines.append(f"  threads: {threads or 'one a core'} (pyvgf.set_num_threads, "
                     f"load(..., threads=N)), on {running}")
        from ..fast.blas import INT8, LIBRARY
        from ..fast.compiled import INT8_TILES

        lines.append("  GEMMs: " + ("Intel MKL (the mkl extra)" if LIBRARY == "mkl" else
                                    "SciPy's OpenBLAS (pip install 'pyvgf[mkl]' for MKL, faster on x86-64)"))
        int8 = [f"{_INSTRUCTIONS[INT8_TILES]}'s products (input channels in fours)"] if INT8_TILES else []
        int8 += ["MKL's int8 GEMM"] if INT8 else []
        lines.append("  int8 1x1 convolutions: " + (", else ".join(int8) or "the float GEMM"))
    else:
        lines.append(f"  executor: reference (plain numpy; {', '.join(fast.missing())} not "
                     f"installed: pip install 'pyvgf[fast]' for the fast executor)")
    return "\n".join(lines)


def request_adapter(threads: int | None = None) -> CpuAdapter:
    """The cpu adapter: the fast executor where it is installed, else the reference. `threads`:
    how many threads the fast executor's loops split over in its models' runs (None:
    `pyvgf.set_num_threads`'s count, else one a core); the reference runs on the caller's."""
    from ..fast import check_threads

    return _adapter("cpu", executor(), check_threads(threads))


def request_reference_adapter() -> CpuAdapter:
    """The reference adapter: the plain numpy interpreter of pyvgf/tosa/."""
    return _adapter("reference", "reference")


def _adapter(backend: str, executor: str, threads: int | None = None) -> CpuAdapter:
    return CpuAdapter(
        hal.AdapterInfo(backend=backend, name=EXECUTORS[executor], device_type="cpu",
                        driver="numpy " + np.__version__),
        hal.Limits(),
        frozenset({"VK_ARM_tensors", "VK_ARM_data_graph", "VK_ARM_data_graph_instruction_set_tosa"}),
        executor,
        threads,
    )


class CpuAdapter(hal.Adapter):
    def __init__(self, info, limits, features, executor: str = "reference",
                 threads: int | None = None):
        super().__init__(info, limits, features)
        self.executor = executor
        """The TOSA executor its data graph pipelines run on: "fast" or "reference"."""
        self.threads = threads
        """The fast executor's thread count for its runs (None: the process default)."""

    def _request_device(self, shaders, label):
        return CpuDevice(self, shaders, label)


def _round_up(n: int) -> int:
    return -(-n // _ALIGNMENT) * _ALIGNMENT


class CpuDevice(hal.Device):
    def _create_queue(self):
        return CpuQueue(self)

    def _allocate_memory(self, size, label, device_local):
        return CpuMemory(self, size, label)

    def _tensor_memory_requirements(self, description):
        return hal.MemoryRequirements(_round_up(description.nbytes), _ALIGNMENT)

    def _create_tensor(self, description, memory, offset, label, device_local):
        return CpuTensor(self, description, memory, offset, label)

    def _buffer_memory_requirements(self, size, usage):
        return hal.MemoryRequirements(_round_up(size), _ALIGNMENT)

    def _create_buffer(self, size, usage, memory, offset, label, device_local):
        return CpuBuffer(self, size, usage, memory, offset, label)

    def _create_data_graph_pipeline(self, module, entry_point, layout, resources, constants, label, plan):
        return CpuDataGraphPipeline(self, module, entry_point, layout, resources, constants, label, plan)

    def _create_data_graph_session(self, pipeline, label):
        return CpuDataGraphSession(self, pipeline, label)

    def _create_compute_pipeline(self, module, entry_point, layout, label):
        return CpuComputePipeline(self, module, entry_point, layout, label)

    def _create_command_encoder(self, label):
        return CpuCommandEncoder(self, label)

    def _prepare_run(self, command_buffer, inputs, outputs, label, keep_contents):
        lone = None if keep_contents else _in_place(command_buffer, inputs, outputs)
        if lone is None:
            return super()._prepare_run(command_buffer, inputs, outputs, label, keep_contents)
        return CpuPreparedRun(self, command_buffer, inputs, outputs, label, *lone)

    @property
    def timestamp_period(self) -> float:
        return 1e-9  # time.perf_counter_ns()

    def _create_query_pool(self, count, label):
        return CpuQueryPool(self, count, label)


class CpuMemory(hal.DeviceMemory):
    def __init__(self, device, size, label=""):
        super().__init__(device, size, label)
        self.bytes = np.zeros(size, np.uint8)

    def _destroy(self):
        del self.bytes


def _bytes_of(memory: CpuMemory | None, offset: int, size: int) -> tuple[np.ndarray, int]:
    """The byte array a resource lives in, and its offset there (own memory when none given)."""
    if memory is None:
        return np.zeros(_round_up(size), np.uint8), 0
    return memory.bytes, offset


class CpuTensor(hal.Tensor):
    def __init__(self, device, description, memory, offset, label=""):
        super().__init__(device, description, memory, offset, label)
        data, start = _bytes_of(memory, offset, description.nbytes)
        self._array: np.ndarray = np.ndarray(description.shape, description.dtype, buffer=data,
                                             offset=start, strides=description.byte_strides)

    def array(self) -> np.ndarray:
        """A writable typed view of the tensor's memory, with its shape and strides (one view,
        made when the tensor is: callers index it, never change it)."""
        self._check()
        return self._array

    def _destroy(self):
        del self._array


class CpuBuffer(hal.Buffer):
    def __init__(self, device, size, usage, memory, offset, label=""):
        super().__init__(device, size, usage, memory, offset, label)
        self._bytes, self._offset = _bytes_of(memory, offset, size)

    def array(self) -> np.ndarray:
        """A writable flat uint8 view of the buffer's memory."""
        self._check()
        return self._bytes[self._offset:self._offset + self.size]

    def _destroy(self):
        del self._bytes


def _view(resource: hal.TensorView | hal.Buffer) -> np.ndarray:
    return cast("CpuTensor | CpuBuffer", _owner(resource)).array()


def _owner(resource: hal.TensorView | hal.Buffer) -> hal.Tensor | hal.Buffer:
    """The tensor a view is of, or the buffer itself."""
    return resource.tensor if isinstance(resource, hal.TensorView) else resource


def _as(array: np.ndarray, ttype: TensorType | None) -> np.ndarray:
    """A tensor's memory seen as the graph's type (same bits; see CpuDataGraphPipeline)."""
    return array if ttype is None else array.view(ttype.dtype).reshape(ttype.shape)


class CpuDataGraphPipeline(hal.DataGraphPipeline):
    """Runs the plan the device made and checked (`pyvgf.hal.graphs.plan_graph`)."""

    def __init__(self, device, module, entry_point, layout, resources, constants, label="", plan=None):
        super().__init__(device, module, entry_point, layout, resources, constants, label)
        self.plan = plan
        self.graph = plan.graph
        self.port_types = hal.graph_views(self.label, (*self.graph.inputs, *self.graph.outputs), resources)
        """Per graph input then output: the type to view its tensor's memory as, where it differs
        from the tensor's own (a rank-0 graph tensor, or integers of the other signedness)."""


class CpuDataGraphSession(hal.DataGraphSession):
    """The interpreter keeps its temporaries per run, so a session needs no memory."""

    def _bind_point_requirements(self):
        return []

    def _memory_requirements(self, bind_point, object_index):
        raise HalError(f"{self} has no bind points")

    def _bind_memory(self, memory, offset, bind_point, object_index):
        raise HalError(f"{self} has no bind points")


class CpuQueryPool(hal.QueryPool):
    """Timestamps from time.perf_counter_ns(), -1 where none was written."""

    def __init__(self, device, count, label=""):
        super().__init__(device, count, label)
        self.ticks = np.full(count, -1, np.int64)

    def _results(self):
        return [None if t < 0 else t * 1e-9 for t in self.ticks.tolist()]


class CpuComputePipeline(hal.ComputePipeline):
    def __init__(self, device, module, entry_point, layout, label=""):
        super().__init__(device, module, entry_point, layout, label)
        self.shader = find_shader(module.name, device.shaders)


Step = Callable[[], None]


class CpuCommandEncoder(hal.CommandEncoder):
    def __init__(self, device, label=""):
        super().__init__(device, label)
        self._steps: list[Step] = []
        self._timed: list[CpuQueryPool] = []

    def _sets(self, point: hal.PipelineBindPoint) -> dict[int, hal.DescriptorSet]:
        return dict(self._state.sets.get(point, {}))

    def _bind_pipeline(self, point, pipeline):
        pass

    def _bind_descriptor_set(self, point, layout, index, descriptor_set):
        pass

    def _push_constants(self, layout, stages, offset, data):
        raise HalError("the cpu backend's Python shaders take no push constants")

    def _dispatch_data_graph(self, session):
        graph, sets = session.pipeline.graph, self._sets(hal.PipelineBindPoint.DATA_GRAPH)
        self._steps.append(_GraphDispatch(
            session.pipeline, [sets[p.descriptor_set].resources[p.binding] for p in graph.inputs],
            [sets[p.descriptor_set].resources[p.binding] for p in graph.outputs]))

    def _dispatch(self, x, y, z):
        pipeline = cast(CpuComputePipeline, self._state.pipelines[hal.PipelineBindPoint.COMPUTE])
        sets = self._sets(hal.PipelineBindPoint.COMPUTE)
        bound = {(i, b): res for i, s in sets.items() for b, res in s.resources.items()}

        def run() -> None:
            try:
                pipeline.shader({key: _view(res) for key, res in bound.items()}, (x, y, z))
            except VGFError:
                raise
            except Exception as exc:
                raise HalError(f"Python shader of compute module {pipeline.module.name!r} failed: "
                               f"{type(exc).__name__}: {exc}") from exc

        self._steps.append(run)

    def _copy_tensor(self, src, dst):
        def run() -> None:
            dst.array()[...] = src.array()

        self._steps.append(run)

    def _copy_buffer(self, src, dst, src_offset, dst_offset, size):
        def run() -> None:
            dst.array()[dst_offset:dst_offset + size] = src.array()[src_offset:src_offset + size]

        self._steps.append(run)

    def _barrier(self):
        pass  # steps run one after another; each one's writes are visible to the next

    def _write_timestamp(self, pool, index):
        if pool not in self._timed:  # each submission starts with the pool's queries reset
            self._timed.append(pool)
            self._steps.insert(0, lambda: pool.ticks.fill(-1))

        def run() -> None:
            pool.ticks[index] = time.perf_counter_ns()

        self._steps.append(run)

    def _finish(self):
        return CpuCommandBuffer(self.device, self._steps, self.label)


class _GraphDispatch:
    """A recorded data graph dispatch: the pipeline's plan run on the memory of the resources
    bound to the graph's input ports, its results written to those of its output ports."""

    def __init__(self, pipeline: CpuDataGraphPipeline, inputs: list[hal.TensorView | hal.Buffer],
                 outputs: list[hal.TensorView | hal.Buffer]):
        self.pipeline = pipeline
        self.inputs, self.outputs = inputs, outputs
        n = len(inputs)
        self.input_types, self.output_types = pipeline.port_types[:n], pipeline.port_types[n:]

    def __call__(self) -> None:
        results = self.run([_as(_view(v), t) for v, t in zip(self.inputs, self.input_types)])
        for view, value, t in zip(self.outputs, results, self.output_types):
            np.copyto(_as(_view(view), t), value, casting="no")

    def run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The graph's results (new arrays) from its inputs, each seen as the graph's type."""
        watcher = WATCHER.get()  # pyvgf.debug: capture or profile this run
        if watcher is None:
            return self.pipeline.plan.run(arrays)
        return watcher.graph(self.pipeline, arrays)


class CpuPreparedRun(hal.PreparedRun):
    """A run prepared with keep_contents=False whose command buffer is one data graph
    dispatch, its ports bound to the run's input and output tensors alone: the graph reads the
    run's arrays in place and its results are handed back as they are, never passing through
    the tensors (copies of 0.6 MB took about 60 us of MobileNetV2's 4-5 ms run)."""

    def __init__(self, device, command_buffer, inputs, outputs, label, dispatch: _GraphDispatch,
                 reads: tuple[int, ...], writes: tuple[int, ...]):
        super().__init__(device, command_buffer, inputs, outputs, label)
        self._dispatch = dispatch
        self._reads = reads
        """For each graph input: which of the run's arrays it reads."""
        self._writes = writes
        """For each output tensor: which of the graph's results it is."""

    def _run(self, arrays):
        dispatch = self._dispatch
        results = dispatch.run([_as(np.ascontiguousarray(arrays[i]), t)
                                for i, t in zip(self._reads, dispatch.input_types)])
        return [_as_tensor(results[k], cast(hal.Tensor, tensor))
                for k, tensor in zip(self._writes, self.outputs)]


def _in_place(command_buffer: CpuCommandBuffer, inputs: tuple[hal.Tensor | hal.Buffer, ...],
              outputs: tuple[hal.Tensor | hal.Buffer, ...]
              ) -> tuple[_GraphDispatch, tuple[int, ...], tuple[int, ...]] | None:
    """(the dispatch, its reads, its writes) for a CpuPreparedRun, where `command_buffer` is
    one data graph dispatch whose ports are bound to the tensors `inputs` and `outputs` alone,
    each once; else None."""
    steps = command_buffer.steps
    if len(steps) != 1 or not isinstance(steps[0], _GraphDispatch):
        return None
    dispatch = steps[0]
    if not all(isinstance(r, hal.Tensor) for r in (*inputs, *outputs)):
        return None  # (a port bound to a buffer then matches none of them either)
    reads = tuple(_only(_owner(r), inputs) for r in dispatch.inputs)
    ports = [_owner(r) for r in dispatch.outputs]
    writes = tuple(_only(t, ports) for t in outputs)
    if None in reads or None in writes or len(writes) != len(ports):
        return None
    return dispatch, reads, writes  # type: ignore[return-value]


def _only(item: object, among: Sequence[object]) -> int | None:
    """The index of `item` in `among` (by identity) where it is there exactly once; else None."""
    hits = [i for i, x in enumerate(among) if x is item]
    return hits[0] if len(hits) == 1 else None


def _as_tensor(value: np.ndarray, tensor: hal.Tensor) -> np.ndarray:
    """A graph's result, of its port's type, as what reading `tensor` would give: a
    C-contiguous array of the tensor's dtype and shape (the same bits; see `_as`)."""
    value = np.ascontiguousarray(value)
    if value.dtype == tensor.dtype and value.shape == tensor.shape:
        return value
    return value.view(tensor.dtype).reshape(tensor.shape)


class CpuCommandBuffer(hal.CommandBuffer):
    def __init__(self, device, steps: list[Step], label=""):
        super().__init__(device, label)
        self.steps = steps


class CpuFence(hal.Fence):
    def __init__(self, error: Exception | None):
        super().__init__("fence")
        self._error = error

    def _wait(self, timeout):
        if self._error is not None:
            raise self._error
        return True


class CpuQueue(hal.Queue):
    def _submit(self, command_buffers):
        try:
            for cb in command_buffers:
                for step in cb.steps:
                    step()
        except VGFError as exc:
            return CpuFence(exc)
        return CpuFence(None)

    def _write_tensor(self, tensor, data):
        tensor.array()[...] = data

    def _read_tensor(self, tensor):
        return np.array(tensor.array(), copy=True, order="C")

    def _write_buffer(self, buffer, data, offset):
        buffer.array()[offset:offset + data.size] = data

    def _read_buffer(self, buffer, offset, size):
        return buffer.array()[offset:offset + size].copy()

    def _wait_idle(self):
        pass  # submit returns once its work is done
