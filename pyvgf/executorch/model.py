"""`ProgramModel`: one method of an ExecuTorch program, ready to run on numpy arrays.

Planned once at load: every VGF delegate is read and loaded as a pyvgf `Model` on the chosen
backend, every kernel is looked up, every argument list is checked against the values it
names. A run walks the instructions in order over a fresh list of values (keyed by EValue
index, never by memory offset: ExecuTorch's memory plan lets values share bytes), so runs may
go on in several threads at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Self

import numpy as np

from ..errors import ModelInputError, ProgramError, VGFError
from ..format import VGF
from ..format import read as read_vgf
from ..runtime.model import Model, TensorInfo, _conform
from ..runtime.model import load as load_vgf
from . import kernels
from .program import (
    VGF_BACKEND,
    DelegateCall,
    FreeCall,
    KernelCall,
    Method,
    MoveCall,
    Program,
    TensorList,
    TensorSpec,
)
from .program import read as read_program


@dataclass(frozen=True)
class QuantParams:
    """How a float tensor at the method's boundary is quantized (the quantize kernel that
    takes an input, the dequantize kernel that makes an output). Per-channel parameters are
    arrays along `axis`; per-tensor ones are scalars and `axis` is None."""

    scale: float | np.ndarray
    zero_point: int | np.ndarray
    quant_min: int
    quant_max: int
    dtype: np.dtype
    axis: int | None = None


Step = Callable[[list], None]
View = tuple[int, int, TensorSpec, TensorSpec]
"""(view value, base value, base spec, view spec): a value planned at its base's bytes."""


class ProgramModel:
    """A method of an ExecuTorch program. Create with `pyvgf.load("model.pte")`; run with
    `run()`, like a VGF `Model`."""

    def __init__(self, program: Program, method: str | None = None, backend: str = "cpu", *,
                 shaders: Mapping[str, object] | None = None, adapter_options: Mapping[str, object] | None = None):
        self.program = program
        self.method: Method = program.method(method)
        self.backend = backend
        m = self.method
        names = m.input_names or (None,) * len(m.inputs)
        self.inputs: list[TensorInfo] = [_info(m, k, f"input_{i}", names[i]) for i, k in enumerate(m.inputs)]
        """The method's inputs, with the dtypes the program declares."""
        self.outputs: list[TensorInfo] = [_info(m, k, f"output_{i}") for i, k in enumerate(m.outputs)]
        """The method's outputs, in the order run() returns them."""
        self.delegate_vgfs: list[VGF | None] = []
        """Each delegate's VGF (None for a delegate of another backend)."""
        self._models: dict[int, Model] = {}
        try:
            for k, d in enumerate(m.delegates):
                if d.backend_id != VGF_BACKEND:
                    self.delegate_vgfs.append(None)
                    continue
                try:
                    vgf = read_vgf(memoryview(d.data))
                except VGFError as exc:
                    raise ProgramError(f"method {m.name!r}: delegate {k} ({VGF_BACKEND}, {d.location} data "
                                       f"{d.index}) is not a valid VGF: {exc}") from None
                self.delegate_vgfs.append(vgf)
            self._defined = set(m.constants) | {k for k, v in enumerate(m.values) if not isinstance(v, TensorSpec)}
            self._at: dict[tuple[int, int], int] = {}
            self._define(m.inputs)
            self._steps = [self._plan(n, ins, shaders, adapter_options) for n, ins in enumerate(m.instructions)]
            views = self._reads(m.outputs, f"method {m.name!r}: an output")
            if views:
                self._steps.append(_with_views(views, lambda env: None))
        except BaseException:
            self.close()
            raise
        self._initial: list = [_initial(m, k, v) for k, v in enumerate(m.values)]
        self.input_quantization: list[QuantParams | None] = [self._qparams(k, "quantize") for k in m.inputs]
        """For each input, how the program quantizes it on entry (None: used as it is)."""
        self.output_quantization: list[QuantParams | None] = [self._qparams(k, "dequantize") for k in m.outputs]
        """For each output, how the program dequantized it (None: computed as it is)."""

    @property
    def delegates(self) -> list[Model]:
        """The loaded VGF delegates (pyvgf `Model`s), in the program's delegate order."""
        return [self._models[k] for k in sorted(self._models)]

    # --- planning ----------------------------------------------------------------------------

    def _plan(self, n: int, ins, shaders, adapter_options) -> Step:
        m = self.method
        if isinstance(ins, KernelCall):
            return self._plan_kernel(n, ins)
        if isinstance(ins, DelegateCall):
            return self._plan_delegate(n, ins, shaders, adapter_options)
        if isinstance(ins, MoveCall):
            src, dst = ins.move_from, ins.move_to
            views = self._reads((src,), f"method {m.name!r}: instruction {n} (move)")
            self._define((dst,))
            return _with_views(views, lambda env: env.__setitem__(dst, env[src]))
        if isinstance(ins, FreeCall):
            return lambda env: None
        raise ProgramError(f"method {m.name!r}: instruction {n} is a {type(ins).__name__} "
                           "(control flow); pyvgf runs straight-line methods")

    def _define(self, keys) -> None:
        """Mark values as written, remembering which one last wrote each planned location."""
        for k in keys:
            self._defined.add(k)
            spec = self.method.values[k]
            if isinstance(spec, TensorSpec) and spec.allocation is not None:
                self._at[spec.allocation] = k

    def _reads(self, args, where: str) -> list[View]:
        """Check that every tensor in `args` is an input, a constant or an earlier result, or a
        view of one: ExecuTorch emits no instruction for a static view (view_copy of a
        contiguous tensor), it plans the view at its base's bytes. Returns the views to make
        before the instruction runs."""
        values = self.method.values
        views = []
        for a in args:
            items = values[a].items if isinstance(values[a], TensorList) else (a,)
            for k in items:
                if k == -1 or k in self._defined:
                    continue
                spec = values[k]
                base = self._at.get(spec.allocation) if isinstance(spec, TensorSpec) else None
                if base is None or not _same_bytes(values[base], spec):
                    raise ProgramError(f"{where} reads value {k} before any instruction writes it")
                views.append((k, base, values[base], spec))
                self._define((k,))
        return views

    def _plan_kernel(self, n: int, ins: KernelCall) -> Step:
        m = self.method
        name = m.operators[ins.op_index].qualified
        kernel = kernels.KERNELS.get(name)
        where = f"method {m.name!r}: instruction {n} ({name})"
        if kernel is None:
            raise ProgramError(f"{where}: pyvgf has no kernel {name}")
        if len(ins.args) < max(2 * kernel.outs, 1):
            raise ProgramError(f"{where}: {len(ins.args)} arguments, fewer than its out tensors need")
        if kernel.outs:
            inputs, outs = ins.args[: -2 * kernel.outs], ins.args[-kernel.outs :]
        else:  # one tensor-list out argument (listed again as the return value)
            dropped = 2 if len(ins.args) >= 2 and m.values[ins.args[-2]] == m.values[ins.args[-1]] else 1
            inputs, out_list = ins.args[:-dropped], m.values[ins.args[-1]]
            if not isinstance(out_list, TensorList):
                raise ProgramError(f"{where}: its last argument, value {ins.args[-1]}, is not a tensor list")
            outs = out_list.items
        specs = [_tensor_spec(m, k, where) for k in outs]
        views = self._reads(inputs, where)
        self._define(outs)
        fn = kernel.fn

        def step(env: list) -> None:
            try:
                with np.errstate(all="ignore"):  # IEEE results, as ExecuTorch's C++ kernels give
                    result = fn(*[_arg(env, a) for a in inputs])
            except (TypeError, ValueError, IndexError, AttributeError, ArithmeticError) as exc:
                raise ProgramError(f"{where}: {exc}") from None
            results = result if kernel.outs != 1 else (result,)
            if len(results) != len(outs):
                raise ProgramError(f"{where}: {len(results)} results for {len(outs)} out tensors")
            for k, spec, value in zip(outs, specs, results):
                env[k] = _fit(value, spec, where, k)

        return _with_views(views, step)

    def _plan_delegate(self, n: int, ins: DelegateCall, shaders, adapter_options) -> Step:
        m = self.method
        k = ins.delegate_index
        where = f"method {m.name!r}: instruction {n} (delegate {k})"
        if self.delegate_vgfs[k] is None:
            raise ProgramError(f"{where}: backend {m.delegates[k].backend_id!r} is not {VGF_BACKEND!r}; pyvgf runs "
                               "only VGF delegates")
        model = self._models.get(k)
        if model is None:
            model = self._models[k] = load_vgf(self.delegate_vgfs[k], self.backend, shaders=shaders,
                                                      adapter_options=adapter_options)
        n_in, n_out = len(model.inputs), len(model.outputs)
        if len(ins.args) != n_in + n_out:
            raise ProgramError(f"{where}: {len(ins.args)} arguments for a VGF of {n_in} inputs and {n_out} outputs")
        in_args, out_args = ins.args[:n_in], ins.args[n_in:]
        adapt = [_adapter(_tensor_spec(m, a, where), info, f"{where} input {i}")
                 for i, (a, info) in enumerate(zip(in_args, model.inputs))]
        out_specs = [_tensor_spec(m, a, where) for a in out_args]
        views = self._reads(in_args, where)
        self._define(out_args)

        def step(env: list) -> None:
            arrays = [fit(env[a]) for a, fit in zip(in_args, adapt)]
            try:
                results = model.run(arrays)
            except ModelInputError as exc:
                raise ProgramError(f"{where}: {exc}") from None
            for a, spec, value in zip(out_args, out_specs, results):
                env[a] = _fit(value, spec, where, a)

        return _with_views(views, step)

    def _qparams(self, value: int, kind: str) -> QuantParams | None:
        """The quantize kernel reading `value`, or the dequantize kernel writing it."""
        m = self.method
        for ins in m.instructions:
            if not isinstance(ins, KernelCall):
                continue
            name = m.operators[ins.op_index].name
            if name not in (f"quantized_decomposed::{kind}_per_tensor", f"quantized_decomposed::{kind}_per_channel"):
                continue
            if (ins.args[0] if kind == "quantize" else ins.args[-1]) != value:
                continue
            args = [self._initial[a] for a in ins.args]
            if name.endswith("per_tensor"):
                scale, zp, qmin, qmax, dtype = args[1:6]
                axis = None
            else:
                scale, zp, axis, qmin, qmax, dtype = args[1:7]
            qdtype = kernels.scalar_dtype(dtype)
            if isinstance(scale, np.ndarray) and axis is None:
                scale, zp = float(scale.reshape(())), int(zp.reshape(()))
            return QuantParams(scale, zp, qmin, qmax, qdtype, axis)
        return None

    # --- running -----------------------------------------------------------------------------

    def run(self, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | np.ndarray) -> list[np.ndarray]:
        """Run the method once; returns its outputs as new arrays, in `outputs` order.

        `inputs` is a list in `inputs` order, a dict by input name, or one array for a method
        with one input; each must have the input's shape and dtype. Never modifies `inputs`.
        """
        env = list(self._initial)
        for k, array in zip(self.method.inputs, self._check(inputs)):
            env[k] = array
        for step in self._steps:
            step(env)
        return [np.array(env[k]) for k in self.method.outputs]

    def __call__(self, inputs) -> list[np.ndarray]:
        return self.run(inputs)

    def _check(self, inputs) -> list[np.ndarray]:
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if isinstance(inputs, Mapping):
            names = [i.name for i in self.inputs]
            unknown = [k for k in inputs if k not in names]
            missing = [k for k in names if k not in inputs]
            if unknown or missing:
                raise ModelInputError(f"inputs by name: expected {names}; unknown {unknown}, missing {missing}")
            inputs = [inputs[k] for k in names]
        elif isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise ModelInputError(f"inputs must be a list or a dict of arrays, got {type(inputs).__name__}")
        if len(inputs) != len(self.inputs):
            raise ModelInputError(f"expected {len(self.inputs)} inputs "
                                  f"({', '.join(i.name for i in self.inputs)}), got {len(inputs)}")
        return [_conform(info, x) for info, x in zip(self.inputs, inputs)]

    def close(self) -> None:
        """Free every delegate's model and its device."""
        for model in self._models.values():
            model.close()
        self._models.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        ins = "; ".join(map(str, self.inputs))
        outs = "; ".join(map(str, self.outputs))
        return (f"<ProgramModel {self.method.name!r} on {self.backend}: {len(self._models)} VGF delegate(s), "
                f"{len(self._steps)} instruction(s); in: {ins}; out: {outs}>")


def _info(m: Method, k: int, default: str, keyword: str | None = None) -> TensorInfo:
    """An input's or output's TensorInfo, named by its keyword, else its tensor's name, else
    `default`."""
    value = m.values[k]
    if not isinstance(value, TensorSpec):
        raise ProgramError(f"method {m.name!r}: input/output value {k} is {value!r}, not a tensor")
    if value.dtype is None:
        raise ProgramError(f"method {m.name!r}: value {k} has element type {value.scalar_type.name}, "
                           "which pyvgf does not run")
    return TensorInfo(keyword or value.name or default, value.sizes, value.dtype, None)


def _tensor_spec(m: Method, k: int, where: str) -> TensorSpec:
    value = m.values[k]
    if not isinstance(value, TensorSpec) or value.dtype is None:
        raise ProgramError(f"{where}: value {k} ({value!r}) is not a tensor pyvgf runs")
    return value


def _initial(m: Method, k: int, value) -> object:
    """A value's content before a run: constants' data, scalars, lists; None for tensors
    that instructions or inputs fill in."""
    if isinstance(value, TensorSpec):
        return m.constants.get(k)
    return value


def _same_bytes(base: TensorSpec, view: TensorSpec) -> bool:
    return base.dtype == view.dtype and base.numel == view.numel


def _with_views(views: list[View], step: Step) -> Step:
    """`step`, after making each view from its base: the same bytes in the view's shape."""
    if not views:
        return step

    def run(env: list) -> None:
        for k, base, base_spec, spec in views:
            flat = np.transpose(env[base], base_spec.dim_order).reshape(-1)
            physical = flat.reshape([spec.sizes[d] for d in spec.dim_order])
            env[k] = np.transpose(physical, np.argsort(spec.dim_order))
        step(env)

    return run


def _arg(env: list, k: int) -> object:
    value = env[k]
    if isinstance(value, TensorList):
        return [env[i] if i != -1 else None for i in value.items]
    return value


def _fit(value: np.ndarray, spec: TensorSpec, where: str, k: int) -> np.ndarray:
    """A kernel's or delegate's result as the value the program declares (dtype, shape)."""
    array = np.asarray(value)
    if array.shape != spec.sizes and array.shape == tuple(spec.sizes[d] for d in spec.dim_order):
        array = np.transpose(array, np.argsort(spec.dim_order))
    if array.shape != spec.sizes:
        if spec.dynamic or array.size != spec.numel:
            raise ProgramError(f"{where}: result for value {k} has shape {list(array.shape)}, the program "
                               f"declares {list(spec.sizes)}")
        array = array.reshape(spec.sizes)
    return array.astype(spec.dtype, copy=False)


def _adapter(spec: TensorSpec, info: TensorInfo, where: str) -> Callable[[np.ndarray], np.ndarray]:
    """How a program tensor becomes a delegate input: as it is, or in the VGF's layout."""
    if not info.live:
        return lambda x: np.zeros(0)
    if info.shape == spec.sizes:
        return lambda x: x
    physical = tuple(spec.sizes[d] for d in spec.dim_order)
    if info.shape == physical:
        order = list(spec.dim_order)
        return lambda x: np.ascontiguousarray(np.transpose(x, order))
    if int(np.prod(info.shape, dtype=np.int64)) == spec.numel:
        shape = info.shape
        return lambda x: x.reshape(shape)
    raise ProgramError(f"{where}: the program passes {spec} to a VGF input of shape {list(info.shape)}")


def load(source: str | os.PathLike | bytes | Program, backend: str = "cpu", *, method: str | None = None,
         shaders: Mapping[str, object] | None = None, adapter_options: Mapping[str, object] | None = None,
         mmap: bool = False) -> ProgramModel:
    """Load an ExecuTorch program (path, bytes or `Program`) and plan `method` (default:
    "forward", or the only one) on `backend`; the other arguments are `pyvgf.load()`'s."""
    program = source if isinstance(source, Program) else read_program(source, mmap=mmap)
    return ProgramModel(program, method, backend, shaders=shaders, adapter_options=adapter_options)


def fuzz_target(data: bytes) -> None:
    """The fuzz campaign's .pte target (`pyvgf.testing.fuzz`, target "pte"): load the bytes as a
    program on the cpu backend and run its method once on zeros."""
    with load(data) as model:
        model.run([np.zeros(i.shape, i.dtype) for i in model.inputs])
