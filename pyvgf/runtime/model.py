"""`pyvgf.load()` and `Model`: a VGF ready to run on numpy arrays.

Thread safety: `Model.run()` may be called from any number of threads at once on the same
Model. The load-time schedule (pipelines, constants) is shared and never changes; each run in
flight takes an execution context (its own resources, descriptor sets, sessions and command
buffer) from a pool and returns it afterwards, so concurrent runs never share memory. The pool
grows to the largest number of runs ever in flight at once and is freed by `close()`.
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import hal
from ..elements import canonical, format_carries
from ..errors import HalError, ModelInputError, VGFFormatError
from ..format.model import VGF, BindingSlot, Format, numpy_dtype
from ..hal.cpu import executor as cpu_executor
from ..hal.graphs import planner
from .check import Checked, check
from .schedule import Execution, Schedule

if TYPE_CHECKING:
    from ..executorch.model import ProgramModel


@dataclass(frozen=True)
class TensorInfo:
    """One model input or output: its name, shape, numpy dtype and VkFormat.

    `live` is False for an input the converter dropped from the interface because the model
    never reads it: it keeps its name, `run()` accepts any value for it and ignores it, and its
    shape, dtype and format are None.
    """

    name: str
    shape: tuple[int, ...] | None
    dtype: np.dtype | None
    format: int | None
    live: bool = True

    def __str__(self) -> str:
        if not self.live:
            return f"{self.name}: unused"
        try:
            fmt = Format(self.format).name
        except ValueError:
            fmt = str(self.format)
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.shape))}] ({fmt})"


Inputs = Sequence[np.ndarray] | Mapping[str, np.ndarray] | np.ndarray


class Model:
    """A loaded VGF model. Create with `pyvgf.load()`; run with `run()`."""

    def __init__(self, vgf: VGF, device: hal.Device, plans: dict[int, Checked] | None = None):
        self.vgf = vgf
        self.device = device
        self.backend = device.adapter.info.backend
        self._schedule = Schedule(vgf, device, plans)
        names, slots, outputs = _interface(vgf)
        output_mrt = [m for _, m in outputs]
        self.inputs: list[TensorInfo] = [self._info(name, slots.get(i)) for i, name in enumerate(names)]
        """Every model input in order, the unused ones included (they have live=False)."""
        self.outputs: list[TensorInfo] = [self._info(name, m) for name, m in outputs]
        """Every model output, in the order run() returns them."""
        self._slot_inputs = list(slots)
        """The model input index of each input binding slot, in slot order (the order of the
        arrays an execution's prepared run takes); `_slot_infos` their TensorInfos."""
        self._slot_infos = [self.inputs[i] for i in self._slot_inputs]
        self._in_order = self._slot_inputs == list(range(len(self.inputs)))
        self._byte_outputs = [(k, info) for k, (m, info) in enumerate(zip(output_mrt, self.outputs))
                              if not self._schedule.is_tensor[m]]
        """Outputs held in buffers: the prepared run returns their bytes."""
        self._scalar_outputs = [k for k, (m, info) in enumerate(zip(output_mrt, self.outputs))
                                if self._schedule.is_tensor[m] and info.shape == ()]
        """Rank-0 tensor outputs: one-element tensors in Vulkan, returned as 0-d arrays."""
        self._bool_outputs = [k for k, info in enumerate(self.outputs) if info.dtype == np.bool_]
        """Bool outputs: a device may write any non-zero byte for true; returned as 0 / 1."""
        self._pool: list[Execution] = [self._schedule.execution()]
        self._lock = threading.Lock()
        self._release = weakref.finalize(self, _release, device)
        """Frees the device (and adapter) on close(), or when the model is dropped unclosed."""

    def _info(self, name: str, mrt: int | None) -> TensorInfo:
        if mrt is None:
            return TensorInfo(name, None, None, None, live=False)
        desc = self._schedule.descriptions[mrt]
        return TensorInfo(name, tuple(self.vgf.resources[mrt].shape), numpy_dtype(desc.format), desc.format)

    def run(self, inputs: Inputs) -> list[np.ndarray]:
        """Run the model once; returns the outputs as new arrays, in `outputs` order.

        `inputs` is a list in `inputs` order, a dict by input name, or one array for a model
        with one input. Each array must have the input's shape and dtype exactly; an int64 array
        is accepted for an int32 input (model-converter narrows int64 to int32) when every value
        fits, and an integer array of the input's width and the other signedness as its bits
        (see `pyvgf.elements.format_carries`). A rank-0 input or output is a 0-d array.
        Raises ModelInputError naming the input, expected vs got. Never modifies `inputs`.
        """
        arrays = self._check(inputs)
        execution = self._acquire()
        try:
            outputs = execution.prepared.run(arrays)
        finally:
            with self._lock:
                self._pool.append(execution)
        for k, info in self._byte_outputs:
            outputs[k] = outputs[k].view(info.dtype).reshape(info.shape)
        for k in self._scalar_outputs:
            outputs[k] = outputs[k].reshape(())
        for k in self._bool_outputs:
            outputs[k] = canonical(outputs[k])
        return outputs

    def __call__(self, inputs: Inputs) -> list[np.ndarray]:
        return self.run(inputs)

    def _acquire(self) -> Execution:
        with self._lock:
            if self._pool:
                return self._pool.pop()
        if self.device.destroyed:
            raise HalError("the model was closed")
        return self._schedule.execution()

    def _check(self, inputs: Inputs) -> list[np.ndarray]:
        """The live inputs, in input binding slot order, checked and converted (never in place)."""
        if isinstance(inputs, np.ndarray):
            given = self._by_position([inputs])
        elif isinstance(inputs, (list, tuple)):  # the usual case first: no ABC checks
            given = self._by_position(inputs)
        elif isinstance(inputs, Mapping):
            given = self._by_name(inputs)
        elif isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise ModelInputError(f"inputs must be a list or a dict of arrays, got {type(inputs).__name__}")
        else:
            given = self._by_position(inputs)
        return [_conform(info, x) for info, x in zip(self._slot_infos, given)]

    def _by_position(self, inputs: Sequence[object]) -> Sequence[object]:
        if len(inputs) != len(self.inputs):
            raise ModelInputError(f"expected {len(self.inputs)} inputs "
                                  f"({', '.join(i.name for i in self.inputs)}), got {len(inputs)}")
        return inputs if self._in_order else [inputs[i] for i in self._slot_inputs]

    def _by_name(self, inputs: Mapping[str, object]) -> list[object]:
        names = [info.name for info in self.inputs]
        unknown = [k for k in inputs if k not in names]
        missing = [info.name for info in self.inputs if info.live and info.name not in inputs]
        if unknown or missing:
            raise ModelInputError(f"inputs by name: expected {names}; unknown {unknown}, missing {missing}")
        return [inputs[info.name] for info in self._slot_infos]

    def close(self) -> None:
        """Free the device, everything the model created on it, and its adapter."""
        with self._lock:
            self._pool.clear()
        self._release()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        ins = "; ".join(map(str, self.inputs))
        outs = "; ".join(map(str, self.outputs))
        return f"<Model on {self.backend}: {len(self._schedule.segments)} segment(s); in: {ins}; out: {outs}>"


def interface(vgf: VGF) -> tuple[list[tuple[str, int | None]], list[tuple[str, int]]]:
    """The model inputs and outputs as `Model.inputs` and `Model.outputs` name them, without
    planning the model: (name, MRT index of its resource; None for an unused input)."""
    names, slots, outputs = _interface(vgf)
    return [(name, slots.get(i)) for i, name in enumerate(names)], outputs


def _interface(vgf: VGF) -> tuple[list[str], dict[int, int], list[tuple[str, int]]]:
    """Input names, input index -> MRT index in binding slot order, (output name, MRT index)."""
    seq = vgf.sequence
    names = list(seq.input_names) + [f"input_{i}" for i in range(len(seq.input_names), len(seq.inputs))]
    out_names = list(seq.output_names) + [f"output_{i}" for i in range(len(seq.output_names), len(seq.outputs))]
    return names, _input_slots(seq.inputs, len(names)), [(out_names[i], s.mrt_index) for i, s in enumerate(seq.outputs)]


def _release(device: hal.Device) -> None:
    device.destroy()
    device.adapter.destroy()


def _input_slots(slots: Sequence[BindingSlot], count: int) -> dict[int, int]:
    """Model input index -> MRT index of its binding slot, in slot order.

    A slot list as long as the input names maps by position. A shorter one means the converter
    dropped dead inputs; each remaining slot's binding is then the index of its model input, as
    ExecuTorch's VGF backend reads it.
    """
    if len(slots) == count:
        return {i: slot.mrt_index for i, slot in enumerate(slots)}
    if len(slots) > count:
        raise VGFFormatError(f"{len(slots)} input binding slots for {count} input names", section="model sequence")
    found: dict[int, int] = {}
    for slot in slots:
        if slot.binding >= count or slot.binding in found:
            raise VGFFormatError(
                f"input binding {slot.binding} names no model input of {count}, or one named twice "
                "(with dead inputs dropped, a slot's binding is its model input's index)",
                section="model sequence",
            )
        found[slot.binding] = slot.mrt_index
    return found


def _conform(info: TensorInfo, value: object) -> np.ndarray:
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if array.shape != info.shape:
        raise ModelInputError(f"input {info.name!r}: expected shape {list(info.shape)}, got {list(array.shape)}")
    if not array.shape:
        array = array.reshape(1)  # a rank-0 input is a one-element tensor in Vulkan
    if array.dtype == info.dtype:
        return array
    if format_carries(info.format, array.dtype):
        return array.view(info.dtype)  # integers of the other signedness: the same bits
    if info.dtype == np.int32 and array.dtype == np.int64:
        if array.size and (array.min() < -2**31 or array.max() >= 2**31):
            raise ModelInputError(f"input {info.name!r}: int64 values outside the int32 range the model "
                                  f"takes (model-converter narrowed this input to int32)")
        return array.astype(np.int32)
    raise ModelInputError(f"input {info.name!r}: expected dtype {info.dtype}, got {array.dtype}")


def load(source: str | os.PathLike | bytes | VGF, backend: str = "cpu", *,
         shaders: Mapping[str, hal.PythonShader] | None = None,
         adapter_options: Mapping[str, object] | None = None, mmap: bool = False,
         threads: int | None = None) -> Model | ProgramModel:
    """Load a VGF (path, bytes or `VGF` object) and plan it on `backend` ("cpu", "reference"
    or "vulkan").

    An ExecuTorch program (`.pte`, file identifier "ET12") loads as a `pyvgf.executorch.ProgramModel`
    of its "forward" method: its VGF delegates run on `backend`, the kernels between them in numpy.

    `shaders` maps compute module names to Python stand-ins for the cpu backend (see
    `pyvgf.register_shader`). `adapter_options` go to the backend's `request_adapter()` (the
    vulkan backend takes e.g. `device_index`, `validation`). `threads`: how many threads the
    cpu backend's fast executor splits this model's runs over (default: `pyvgf.set_num_threads`,
    else one a core). Everything that does not depend on input values happens here. The whole
    model is checked (`pyvgf.runtime.check`) before the backend is asked for an adapter, so no
    driver sees a model pyvgf rejects.

    A path is read into memory (`mmap=True` maps it instead: see `pyvgf.format.read` for what
    that risks); a `VGF` object is copied where it holds data its caller could still change, so
    the model never changes under a caller.
    """
    if threads is not None:
        adapter_options = {**(adapter_options or {}), "threads": threads}
    if isinstance(source, VGF):
        vgf = _private(source)
    else:
        from ..executorch.program import is_program
        from ..format import read

        if is_program(source):  # an ExecuTorch program: see pyvgf.executorch
            from ..executorch.model import load as load_program

            return load_program(source, backend, shaders=shaders, adapter_options=adapter_options, mmap=mmap)

        vgf = read(source, mmap=mmap)
    executor = cpu_executor() if backend == "cpu" else "reference"  # vulkan: the reference's checks
    plans = check(vgf, planner(executor, threads))
    adapter = hal.request_adapter(backend, **(adapter_options or {}))
    try:
        device = adapter.request_device(shaders=shaders)
        try:
            return Model(vgf, device, plans)
        except BaseException:
            device.destroy()
            raise
    except BaseException:
        adapter.destroy()
        raise


def _private(vgf: VGF) -> VGF:
    """A deep copy of `vgf` that shares only the arrays nothing can change (read from a file)."""
    from ..types import immutable

    memo: dict[int, object] = {}
    for array in (*(c.data for c in vgf.constants), *(m.code for m in vgf.modules)):
        if isinstance(array, np.ndarray) and immutable(array):
            memo[id(array)] = array
    return copy.deepcopy(vgf, memo)
