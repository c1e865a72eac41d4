"""Everything pyvgf checks in a model, once, at load, before any backend or driver sees it.

`check(vgf)` runs the container's cross-reference checks (`format.validate`), checks every
resource the sequence binds (no CONSTANT; alone and together within the memory budget of
`pyvgf.limits`), that compute segments have a dispatch shape, decodes every graph
segment's SPIR-V module and plans its graph (`spirv.decode_graph`: ids, types, operand counts
and kinds as TOSA.001000.1's grammar says, entry point and interface; `GraphPlan`: each op's
shape and type rules, constant folding), checks the graph's interface against the segment's
bindings and the model resource table and each graph constant against the constant bound to it,
and decodes each compute module's SPIR-V (structure, ids, operands, declarations; its pipeline
reads the workgroup size from what was decoded here). `pyvgf.load` runs it for every source
(path, bytes or VGF object) and backend before it requests an adapter; the schedule and the
backends then trust it. What it raises names the segment and module, and the SPIR-V word or
TOSA node at fault.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..elements import canonical, format_carries
from ..errors import SpirvError, TosaError, VGFError, VGFFormatError
from ..format.model import (
    NO_INDEX,
    VGF,
    Category,
    CodeType,
    DescriptorType,
    ModuleType,
    Resource,
    Segment,
    numpy_dtype,
)
from ..format.validate import validate
from ..limits import MAX_RANK, memory_budget
from ..spirv import Module, decode, decode_graph, local_size
from ..spirv.binary import enum_value
from ..spirv.declarations import BINDING, DESCRIPTOR_SET, Declarations, Pointer, is_tensor
from ..tosa.interpreter import GraphPlan
from ..types import TensorType, vulkan_shape

SEQUENCE = "model sequence table"


Checked = GraphPlan | Module
"""What `check` made of a segment's module: a graph segment's plan, a compute segment's decoded
SPIR-V."""


def check(vgf: VGF, make_plan: Callable = GraphPlan) -> dict[int, Checked]:
    """Check `vgf` whole; returns, by segment index, the plan of each graph segment, made by
    `make_plan` (see `pyvgf.hal.graphs.planner`), and the decoded SPIR-V of each compute
    segment that has SPIR-V (`Device.create_compute_pipeline` reads it)."""
    validate(vgf)
    _budget(vgf)
    plans: dict[int, Checked] = {}
    for n, seg in enumerate(vgf.sequence.segments):
        module = vgf.modules[seg.module_index]
        where = f"segment {n} ({seg.name!r}), module {seg.module_index} ({module.name!r})"
        if seg.type == ModuleType.COMPUTE and seg.dispatch_shape is None:
            raise VGFFormatError(f"{where} is a compute segment without a dispatch shape", section=SEQUENCE)
        if module.code_type != CodeType.SPIRV or module.code is None:
            if seg.type == ModuleType.GRAPH:
                raise VGFFormatError(f"{where} holds no SPIR-V code", section="module table")
            continue  # a compute shader's source, or none (the cpu backend runs a stand-in)
        try:
            if seg.type == ModuleType.GRAPH:
                plans[n] = _graph(vgf, seg, module.code, module.entry_point, make_plan)
            else:
                plans[n] = _compute(vgf, seg, module.code, module.entry_point)
        except VGFError as exc:
            raise _located(exc, where, module.code) from None
    return plans


def _instruction_index(code: np.ndarray, word: int) -> int | None:
    """The index of the instruction that starts at `word` (OpNop counted), if one does."""
    pos, index = 5, 0
    while pos < min(word, len(code)):
        count = int(code[pos]) >> 16
        if count == 0:
            return None
        pos += count
        index += 1
    return index if pos == word else None


def _located(exc: VGFError, where: str, code: np.ndarray) -> VGFError:
    """`exc` with `where` (and the instruction's index) in front of its message, of the same
    class and location."""
    if isinstance(exc, SpirvError):
        index = None if exc.word is None else _instruction_index(code, exc.word)
        at = "" if index is None else f", instruction {index}"
        located = SpirvError(f"{where}{at}: {exc}")
        located.word = exc.word
        return located
    if isinstance(exc, VGFFormatError):
        return VGFFormatError(f"{where}: {exc}", section=None)
    return type(exc)(f"{where}: {exc}") if isinstance(exc, TosaError) else exc


def _bytes(vgf: VGF, index: int) -> int:
    r = vgf.resources[index]
    if len(r.shape) > MAX_RANK:
        raise VGFFormatError(f"resource {index} has rank {len(r.shape)}, more than {MAX_RANK}",
                             section="model resource table")
    if any(d < 0 for d in r.shape):
        return 0  # dynamic: the schedule refuses it, naming the entry
    try:
        itemsize = numpy_dtype(r.format).itemsize
    except ValueError:
        itemsize = 1  # a format pyvgf has no dtype for: the backend names it
    return math.prod(r.shape) * itemsize


def _budget(vgf: VGF) -> None:
    """Every resource the sequence binds, alone and together, within the memory budget."""
    seq = vgf.sequence
    used = {s.mrt_index for s in (*seq.inputs, *seq.outputs)}
    for seg in seq.segments:
        used.update(s.mrt_index for info in seg.set_infos for s in info.bindings)
    budget = memory_budget()
    total = 0
    for index in sorted(used):
        if vgf.resources[index].category == Category.CONSTANT:
            raise VGFFormatError(f"the sequence binds resource {index}, a CONSTANT, as an input, output or "
                                 "segment binding", section=SEQUENCE)
        size = _bytes(vgf, index)
        if size > budget:
            raise VGFFormatError(f"resource {index} {vgf.resources[index].shape} takes {size} bytes, over the "
                                 f"memory budget of {budget} bytes (pyvgf.limits)", section="model resource table")
        total += size
    if total > budget:
        raise VGFFormatError(f"the resources the model binds take {total} bytes together, over the memory "
                             f"budget of {budget} bytes (pyvgf.limits)", section="model resource table")


def _bound(seg: Segment) -> dict[tuple[int, int], int]:
    """The resource index the segment binds at each (descriptor set, binding)."""
    bound: dict[tuple[int, int], int] = {}
    for position, info in enumerate(seg.set_infos):
        set_index = position if info.set_index == NO_INDEX else info.set_index
        for slot in info.bindings:
            bound[(set_index, slot.binding)] = slot.mrt_index
    return bound


_STORAGE_CLASSES = {enum_value("StorageClass", name): name
                    for name in ("UniformConstant", "Uniform", "PushConstant", "StorageBuffer")}
"""The storage classes of a shader's resource variables, by value."""


def _compute(vgf: VGF, seg: Segment, code: np.ndarray, entry_point: str) -> Module:
    """Decode a compute module (returned) and check its resource interface against the
    segment's pipeline layout, as Vulkan requires of every resource variable a shader declares
    (`spirv.declarations`): a descriptor at its set and binding, of its kind (a tensor variable
    a TENSOR_ARM resource, a storage buffer a STORAGE_BUFFER one), and a push constant range
    for a push constant block; and its workgroup size (LocalSize) at least 1 in each dimension.
    A driver given a shader that breaks this may crash (lavapipe does); the device's limits on
    the workgroup size are the HAL's to check."""
    module = decode(code)
    size = local_size(module, entry_point or None)
    if size is not None and min(size) < 1:
        raise SpirvError(f"the entry point's workgroup size (LocalSize) {size} has a dimension below 1")
    declared = Declarations(module, code.nbytes)
    bound = _bound(seg)
    for var, (pointer, inst) in declared.variables.items():
        storage = _STORAGE_CLASSES.get(inst.num(0))
        if storage is None:
            continue
        if storage == "PushConstant":
            if not seg.push_constant_ranges:
                raise VGFFormatError(f"the shader declares a push constant block (%{var}), but the segment has no "
                                     "push constant range", section=SEQUENCE)
            continue
        where = declared.decorations.get(var, {})
        if DESCRIPTOR_SET not in where or BINDING not in where:
            raise SpirvError(f"resource variable %{var} ({storage}) has no DescriptorSet and Binding decorations")
        key = (where[DESCRIPTOR_SET], where[BINDING])
        mrt = bound.get(key)
        if mrt is None:
            raise VGFFormatError(f"the shader declares resource %{var} at set {key[0]} binding {key[1]}, which the "
                                 "segment does not bind", section=SEQUENCE)
        if isinstance(pointer, Pointer) and is_tensor(pointer.pointee):
            want = DescriptorType.TENSOR_ARM
        elif storage == "StorageBuffer":
            want = DescriptorType.STORAGE_BUFFER
        else:
            continue  # images, samplers, uniform buffers: the layout's type is the driver's to check
        got = vgf.resources[mrt].descriptor_type
        if got != want:
            raise VGFFormatError(f"the shader's resource %{var} at set {key[0]} binding {key[1]} is a "
                                 f"{want.name}, but resource {mrt} bound there is {_descriptor_name(got)}",
                                 section=SEQUENCE)
    return module


def _descriptor_name(value: int) -> str:
    try:
        return f"a {DescriptorType(value).name}"
    except ValueError:
        return f"of descriptor type {value}"


def _graph(vgf: VGF, seg: Segment, code: np.ndarray, entry_point: str, make_plan: Callable) -> GraphPlan:
    graph = decode_graph(code, entry_point or None)
    bound = _bound(seg)
    for kind, ports in (("input", graph.inputs), ("output", graph.outputs)):
        for port in ports:
            key = (port.descriptor_set, port.binding)
            mrt = bound.get(key)
            if mrt is None:
                raise VGFFormatError(f"graph {kind} {port.index} is at set {key[0]} binding {key[1]}, which the "
                                     "segment does not bind", section=SEQUENCE)
            resource = vgf.resources[mrt]
            if resource.descriptor_type != DescriptorType.TENSOR_ARM:
                raise VGFFormatError(f"graph {kind} {port.index} is bound to resource {mrt}, which is not a "
                                     "tensor", section=SEQUENCE)
            if not _carries(resource, port.type):
                raise VGFFormatError(f"graph {kind} {port.index} (set {key[0]} binding {key[1]}) is {port.type}, "
                                     f"but resource {mrt} it is bound to is {_show(resource.format, resource.shape)}",
                                     section=SEQUENCE)
    table = {b.graph_constant_id: b.constant_table_index for b in seg.graph_constants()}
    arrays = {}
    for gid, ttype in graph.constants.items():
        index = table.get(gid)
        if index is None:
            raise VGFFormatError(f"the graph uses graph constant {gid}, which the segment does not bind",
                                 section=SEQUENCE)
        constant = vgf.constants[index]
        resource = vgf.resources[constant.mrt_index]
        if resource.category != Category.CONSTANT:
            raise VGFFormatError(f"constant {index} refers to resource {constant.mrt_index}, not a CONSTANT",
                                 section="constants")
        if not _carries(resource, ttype):
            raise VGFFormatError(f"graph constant {gid} is {ttype}, but constant {index} is "
                                 f"{_show(resource.format, resource.shape)}", section="constants")
        try:  # seen as the graph's type: a rank-0 constant, or integers of the other signedness
            arrays[gid] = canonical(vgf.constant_array(index).view(ttype.dtype).reshape(ttype.shape))
        except ValueError as exc:
            raise VGFFormatError(str(exc), section="constants") from None
    return make_plan(graph, arrays)


def _carries(resource: Resource, ttype: TensorType) -> bool:
    """Whether a resource can hold a graph tensor of `ttype`: the same Vulkan dimensions (a
    rank-0 resource is a one-element tensor) and a format that carries its element type
    (`pyvgf.elements.format_carries`), as `hal.binds` checks a tensor description."""
    return vulkan_shape(resource.shape) == vulkan_shape(ttype.shape) and format_carries(resource.format, ttype.dtype)


def _described(vk_format: int, shape: list[int]) -> tuple[np.dtype | None, tuple[int, ...]]:
    try:
        dtype = numpy_dtype(vk_format)
    except ValueError:
        dtype = None
    return dtype, tuple(shape)


def _show(vk_format: int, shape: list[int]) -> str:
    dtype, dims = _described(vk_format, shape)
    return f"tensor<{'x'.join(map(str, dims)) or 'scalar'} {dtype if dtype is not None else f'VkFormat {vk_format}'}>"
