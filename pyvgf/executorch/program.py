"""Read an ExecuTorch program (`.pte`) into plain objects, checking every index and byte range.

    [extended header] FlatBuffer (root Program, identifier "ET12") [data segments]

The FlatBuffer is read with pyvgf's own reader (`pyvgf.format.flatbuffers`), bounded by the
program size; delegate data and constant tensors are read-only views of the file, never copies.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ProgramFormatError
from ..format.flatbuffers import Budget, Cursor, FlatBufferError, Span
from ..format.read import snapshot
from . import schema
from .schema import DTYPES, InstructionKind, KernelTypes, ScalarType

_U32 = struct.Struct("<I")

VGF_BACKEND = "VgfBackend"
"""The backend id of ExecuTorch's Arm VGF delegates."""


@dataclass(frozen=True)
class TensorSpec:
    """A tensor value: element type, sizes, dim order, and where its data comes from."""

    scalar_type: ScalarType
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]
    constant: bool
    """True when the program holds its data (data_buffer_idx > 0 and no allocation)."""
    dynamic: bool = False
    name: str | None = None
    data_index: int = 0
    """data_buffer_idx: the constant's number in the constant buffer or segment."""
    allocation: tuple[int, int] | None = None
    """(memory id, byte offset) in the memory plan's buffers, for a planned tensor."""

    @property
    def dtype(self) -> np.dtype | None:
        """The numpy dtype, or None for an element type pyvgf does not run."""
        return DTYPES.get(self.scalar_type)

    @property
    def numel(self) -> int:
        return math.prod(self.sizes)

    def __str__(self) -> str:
        kind = self.dtype if self.dtype is not None else self.scalar_type.name
        return f"{kind}[{', '.join(map(str, self.sizes))}]"


@dataclass(frozen=True)
class TensorList:
    """A list of values by index; `optional` lists may hold indices of Null values."""

    items: tuple[int, ...]
    optional: bool = False


Value = int | bool | float | str | tuple | TensorSpec | TensorList | None
"""An EValue: Null is None; Int, Bool, Double, String as Python scalars; IntList (its items are
the indices of Int values, resolved at read time), DoubleList and BoolList as tuples; a Tensor
as its TensorSpec; TensorList and OptionalTensorList."""


@dataclass(frozen=True)
class Operator:
    name: str
    overload: str

    @property
    def qualified(self) -> str:
        """`name.overload`, as ExecuTorch's kernel registry names it (e.g. aten::add.out)."""
        return f"{self.name}.{self.overload}" if self.overload else self.name


@dataclass(frozen=True)
class KernelCall:
    op_index: int
    args: tuple[int, ...]


@dataclass(frozen=True)
class DelegateCall:
    delegate_index: int
    args: tuple[int, ...]


@dataclass(frozen=True)
class MoveCall:
    move_from: int
    move_to: int


@dataclass(frozen=True)
class JumpFalseCall:
    cond_value_index: int
    destination_instruction: int


@dataclass(frozen=True)
class FreeCall:
    value_index: int


Instruction = KernelCall | DelegateCall | MoveCall | JumpFalseCall | FreeCall


@dataclass(frozen=True)
class Delegate:
    """A backend delegate: its backend id, compile specs and the processed blob (a view)."""

    backend_id: str
    compile_specs: dict[str, bytes]
    data: np.ndarray = field(repr=False)
    location: str
    """"inline" (Program.backend_delegate_data) or "segment" (Program.segments)."""
    index: int


@dataclass(frozen=True)
class Method:
    """One execution plan: its values, inputs and outputs (value indices) and instructions."""

    name: str
    values: list[Value]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    instructions: list[Instruction]
    operators: list[Operator]
    delegates: list[Delegate]
    constants: dict[int, np.ndarray] = field(repr=False)
    """Read-only arrays of the constant tensors, by value index (logical layout)."""
    input_names: tuple[str | None, ...] = ()
    """Each input's keyword name where the method was exported with keyword arguments."""


@dataclass(frozen=True)
class Program:
    version: int
    methods: list[Method]
    extended_header: bool
    segments: list[tuple[int, int]]
    """(absolute offset, size) of each data segment."""
    size: int

    def method(self, name: str | None = None) -> Method:
        """The method named `name`; without a name, "forward" or the only method."""
        by_name = {m.name: m for m in self.methods}
        if name is None:
            if "forward" in by_name:
                return by_name["forward"]
            if len(self.methods) == 1:
                return self.methods[0]
            raise ProgramFormatError(f"the program has methods {sorted(by_name)}; name one", section="program")
        if name not in by_name:
            raise ProgramFormatError(f"no method {name!r} (the program has {sorted(by_name)})", section="program")
        return by_name[name]


def is_program(source: str | os.PathLike | bytes | bytearray | memoryview) -> bool:
    """True when `source` (a path or buffer) carries ExecuTorch's file identifier "ET12"."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        head = bytes(memoryview(source)[:8])
    else:
        try:
            with open(source, "rb") as f:
                head = f.read(8)
        except OSError:
            return False
    return len(head) == 8 and head[4:8] == schema.FILE_IDENTIFIER


def read(source: str | os.PathLike | bytes | bytearray | memoryview, *, mmap: bool = False) -> Program:
    """Read an ExecuTorch program (path or buffer). Raises ProgramFormatError naming the part
    and byte offset of anything malformed. A path is read into memory (`mmap=True` maps it, at
    the risks `pyvgf.format.read` names); a mutable buffer is copied."""
    data = snapshot(source, mmap)
    size = len(data)
    if size < 8 or bytes(data[4:8]) != schema.FILE_IDENTIFIER:
        found = bytes(data[4:8]) if size >= 8 else b""
        raise ProgramFormatError(f"file identifier {found!r} is not b'ET12' (not an ExecuTorch program)",
                                 section="program", offset=4)
    fb_size, base, extended = _extended_header(data, size)
    view = memoryview(data)
    cur = Cursor(view, 0, fb_size, Budget(4 * fb_size + 4096))
    try:
        (root,) = cur.unpack(_U32, 0)
        raw = schema.Program.parse_at(cur, root)
    except FlatBufferError as exc:
        raise ProgramFormatError(str(exc), section="program", offset=exc.offset) from None
    segments = _segments(raw, base, size)
    inline = [item["data"] for item in raw["backend_delegate_data"] or []]
    constants = _ConstantStore(raw, data, segments)
    methods = [_method(i, plan, data, inline, segments, constants)
               for i, plan in enumerate(raw["execution_plan"] or [])]
    if not methods:
        raise ProgramFormatError("the program has no execution plan", section="program")
    return Program(raw["version"], methods, extended, segments, size)


def _extended_header(data: np.ndarray, size: int) -> tuple[int, int, bool]:
    """(FlatBuffer size, segment base offset, present?) from the optional extended header."""
    if size < 8 + schema.EXTENDED_HEADER_MIN or bytes(data[8:12]) != schema.EXTENDED_HEADER_MAGIC:
        return size, 0, False
    head = bytes(data[8 : 8 + 32]).ljust(32, b"\0")
    h = schema.ExtendedHeader.parse(head)
    if h.length < schema.EXTENDED_HEADER_MIN:
        raise ProgramFormatError(f"extended header length {h.length} is under {schema.EXTENDED_HEADER_MIN}",
                                 section="extended header", offset=12)
    if h.length > 32 and 8 + h.length > size:
        raise ProgramFormatError(f"extended header of {h.length} bytes runs past the {size}-byte file",
                                 section="extended header", offset=12)
    if not 8 + h.length <= h.program_size <= size:
        raise ProgramFormatError(f"program size {h.program_size} is outside the {size}-byte file "
                                 f"(or inside its own header)", section="extended header", offset=16)
    if h.segment_base_offset and not h.program_size <= h.segment_base_offset <= size:
        raise ProgramFormatError(f"segment base offset {h.segment_base_offset} is not between the program's end "
                                 f"{h.program_size} and the file's end {size}", section="extended header", offset=24)
    return h.program_size, h.segment_base_offset, True


def _segments(raw: dict, base: int, size: int) -> list[tuple[int, int]]:
    out = []
    for i, seg in enumerate(raw["segments"] or []):
        start = base + seg["offset"]
        if seg["size"] == 0:
            out.append((min(start, size), 0))
            continue
        if not base or start > size or seg["size"] > size - start:
            raise ProgramFormatError(
                f"data segment {i} (offset {seg['offset']}, size {seg['size']}) lies outside the file"
                + ("" if base else " (the program has no segment base offset)"),
                section="segments")
        out.append((start, seg["size"]))
    return out


class _ConstantStore:
    """Where constant tensor number k's bytes start and how many are there."""

    def __init__(self, raw: dict, data: np.ndarray, segments: list[tuple[int, int]]):
        self.data = data
        self.buffers: list[Span] = [b["storage"] or Span(0, 0) for b in raw["constant_buffer"] or []]
        seg = raw["constant_segment"]
        self.offsets: list[int] = [] if seg is None else list(_ints(seg["offsets"]))
        self.segment: tuple[int, int] | None = None
        if self.offsets:
            index = seg["segment_index"]
            if index >= len(segments):
                raise ProgramFormatError(f"constant segment index {index} names no segment of {len(segments)}",
                                         section="constant segment")
            self.segment = segments[index]

    def get(self, idx: int, nbytes: int, where: str) -> np.ndarray:
        if self.buffers:
            if idx >= len(self.buffers):
                raise ProgramFormatError(f"{where}: constant buffer {idx} of {len(self.buffers)}", section="program")
            span = self.buffers[idx]
            start, avail = span.offset, span.size
        else:
            if self.segment is None or idx >= len(self.offsets):
                raise ProgramFormatError(f"{where}: constant {idx} is not in the constant segment "
                                         f"({len(self.offsets)} offsets)", section="constant segment")
            seg_start, seg_size = self.segment
            if self.offsets[idx] > seg_size:
                raise ProgramFormatError(f"{where}: constant {idx} offset {self.offsets[idx]} is past the "
                                         f"{seg_size}-byte segment", section="constant segment")
            start, avail = seg_start + self.offsets[idx], seg_size - self.offsets[idx]
        if nbytes > avail:
            raise ProgramFormatError(f"{where}: {nbytes} bytes of data wanted, {avail} there",
                                     section="constant segment" if self.segment else "program", offset=start)
        return self.data[start : start + nbytes]


def _ints(values: Any) -> tuple[int, ...]:
    return () if values is None else tuple(int(v) for v in values)


def _method(i: int, plan: dict, data: np.ndarray, inline: list[Span | None], segments: list[tuple[int, int]],
            constants: _ConstantStore) -> Method:
    name = plan["name"] or f"method_{i}"
    where = f"method {name!r}"
    values = [_value(k, v, where) for k, v in enumerate(plan["values"] or [])]
    values = [_int_list(k, v, values, where) if isinstance(v, _IntListRef) else v for k, v in enumerate(values)]
    count = len(values)

    def index(k: int, what: str) -> int:
        if not 0 <= k < count:
            raise ProgramFormatError(f"{where}: {what} names value {k} of {count}", section="program")
        return k

    operators = [Operator(op["name"] or "", op["overload"] or "") for op in plan["operators"] or []]
    delegates = [_delegate(d, k, where, data, inline, segments) for k, d in enumerate(plan["delegates"] or [])]
    chains = plan["chains"] or []
    if len(chains) > 1:
        raise ProgramFormatError(f"{where}: {len(chains)} chains (pyvgf runs programs of one chain)", section="program")
    instructions: list[Instruction] = []
    for n, ins in enumerate((chains[0]["instructions"] or []) if chains else []):
        what = f"instruction {n}"
        tag, body = ins["instr_args"]
        if body is None:
            raise ProgramFormatError(f"{where}: {what} is empty", section="program")
        if tag == InstructionKind.KERNEL_CALL:
            if not 0 <= body["op_index"] < len(operators):
                raise ProgramFormatError(f"{where}: {what} calls operator {body['op_index']} of {len(operators)}",
                                         section="program")
            instructions.append(KernelCall(body["op_index"], tuple(index(a, what) for a in _ints(body["args"]))))
        elif tag == InstructionKind.DELEGATE_CALL:
            if not 0 <= body["delegate_index"] < len(delegates):
                raise ProgramFormatError(f"{where}: {what} calls delegate {body['delegate_index']} of "
                                         f"{len(delegates)}", section="program")
            instructions.append(DelegateCall(body["delegate_index"],
                                             tuple(index(a, what) for a in _ints(body["args"]))))
        elif tag == InstructionKind.MOVE_CALL:
            instructions.append(MoveCall(index(body["move_from"], what), index(body["move_to"], what)))
        elif tag == InstructionKind.JUMP_FALSE_CALL:
            instructions.append(JumpFalseCall(index(body["cond_value_index"], what), body["destination_instruction"]))
        else:
            instructions.append(FreeCall(index(body["value_index"], what)))
    for k, v in enumerate(values):
        if isinstance(v, TensorList):
            for item in v.items:
                if item == -1 and v.optional:
                    continue
                index(item, f"tensor list {k}")
    buffers = _ints(plan["non_const_buffer_sizes"])
    for k, v in enumerate(values):
        if isinstance(v, TensorSpec) and v.allocation is not None and not v.constant:
            _check_planned(k, v, buffers, where)
    consts = {}
    for k, v in enumerate(values):
        if isinstance(v, TensorSpec) and v.constant:
            consts[k] = _constant(k, v, constants, where)
    return Method(
        name=name,
        values=values,
        inputs=tuple(index(k, "an input") for k in _ints(plan["inputs"])),
        outputs=tuple(index(k, "an output") for k in _ints(plan["outputs"])),
        instructions=instructions,
        operators=operators,
        delegates=delegates,
        constants=consts,
        input_names=_input_names(plan["container_meta_type"], len(_ints(plan["inputs"]))),
    )


def _input_names(meta: dict | None, count: int) -> tuple[str | None, ...]:
    """Keyword names of the inputs from the pytree spec of (args, kwargs) torch.export wrote:
    positional inputs have none. Metadata only: a spec pyvgf cannot follow gives no names."""
    none = (None,) * count
    try:
        args, kwargs = json.loads(meta["encoded_inp_str"])[1]["children_spec"]
        names: list[str | None] = [None] * _leaves(args)
        keys = json.loads(kwargs["context"]) if kwargs["type"] == "builtins.dict" else []
        for key, child in zip(keys, kwargs["children_spec"]):
            n = _leaves(child)
            names += [str(key)] if n == 1 else [f"{key}_{i}" for i in range(n)]
    except (TypeError, ValueError, KeyError, IndexError, RecursionError):
        return none
    return tuple(names) if len(names) == count else none


def _leaves(spec: dict) -> int:
    children = spec["children_spec"]
    return 1 if spec["type"] is None else sum(_leaves(c) for c in children)


@dataclass(frozen=True)
class _IntListRef:
    """An IntList as stored: the indices of its Int values (ExecuTorch boxes each item)."""

    items: tuple[int, ...]


def _int_list(k: int, ref: _IntListRef, values: list, where: str) -> tuple[int, ...]:
    out = []
    for i in ref.items:
        if not 0 <= i < len(values) or type(values[i]) is not int:
            raise ProgramFormatError(f"{where}: int list {k} names value {i}, which is not an Int", section="program")
        out.append(values[i])
    return tuple(out)


def _value(k: int, ev: dict, where: str) -> Value:
    tag, body = ev["val"]
    if body is None or tag == KernelTypes.NULL:
        return None
    if tag == KernelTypes.INT:
        return int(body["int_val"])
    if tag == KernelTypes.BOOL:
        return bool(body["bool_val"])
    if tag == KernelTypes.DOUBLE:
        return float(body["double_val"])
    if tag == KernelTypes.STRING:
        return body["string_val"] or ""
    if tag == KernelTypes.INT_LIST:
        return _IntListRef(_ints(body["items"]))
    if tag == KernelTypes.DOUBLE_LIST:
        return tuple(float(x) for x in (body["items"] if body["items"] is not None else ()))
    if tag == KernelTypes.BOOL_LIST:
        return tuple(bool(x) for x in (body["items"] if body["items"] is not None else ()))
    if tag in (KernelTypes.TENSOR_LIST, KernelTypes.OPTIONAL_TENSOR_LIST):
        return TensorList(_ints(body["items"]), tag == KernelTypes.OPTIONAL_TENSOR_LIST)
    return _tensor(k, body, where)


def _tensor(k: int, t: dict, where: str) -> TensorSpec:
    try:
        scalar_type = ScalarType(t["scalar_type"])
    except ValueError:
        raise ProgramFormatError(f"{where}: value {k} has unknown scalar type {t['scalar_type']}",
                                 section="program") from None
    sizes = _ints(t["sizes"])
    if any(s < 0 for s in sizes):
        raise ProgramFormatError(f"{where}: value {k} has negative sizes {list(sizes)}", section="program")
    dim_order = _ints(t["dim_order"]) or tuple(range(len(sizes)))
    if sorted(dim_order) != list(range(len(sizes))):
        raise ProgramFormatError(f"{where}: value {k} has dim order {list(dim_order)} for {len(sizes)} dims",
                                 section="program")
    if t["storage_offset"]:
        raise ProgramFormatError(f"{where}: value {k} has storage offset {t['storage_offset']} (ExecuTorch "
                                 "supports only 0)", section="program")
    extra = t["extra_tensor_info"] or {}
    constant = t["data_buffer_idx"] > 0 and t["allocation_info"] is None
    if constant and extra.get("location") == 1:
        raise ProgramFormatError(f"{where}: value {k} keeps its data outside the file "
                                 f"({extra.get('fully_qualified_name')!r}); pyvgf reads self-contained programs",
                                 section="program")
    alloc = t["allocation_info"]
    allocation = None if alloc is None else (
        alloc["memory_id"], alloc["memory_offset_low"] | alloc["memory_offset_high"] << 32)
    return TensorSpec(scalar_type, sizes, dim_order, constant, t["shape_dynamism"] != 0,
                      extra.get("fully_qualified_name"), t["data_buffer_idx"], allocation)


def _check_planned(k: int, spec: TensorSpec, buffers: tuple[int, ...], where: str) -> None:
    """A memory-planned tensor must fit its planned buffer: this bounds every planned shape."""
    memory, offset = spec.allocation
    if memory >= len(buffers):
        raise ProgramFormatError(f"{where}: value {k} is planned in memory {memory} of {len(buffers)}",
                                 section="program")
    itemsize = spec.dtype.itemsize if spec.dtype is not None else 1
    if offset + spec.numel * itemsize > buffers[memory]:
        raise ProgramFormatError(f"{where}: value {k} ({spec}, at offset {offset}) does not fit memory {memory} "
                                 f"of {buffers[memory]} bytes", section="program")


def _constant(k: int, spec: TensorSpec, store: _ConstantStore, where: str) -> np.ndarray:
    if spec.dtype is None:
        raise ProgramFormatError(f"{where}: constant value {k} has element type {spec.scalar_type.name}, "
                                 "which pyvgf does not run", section="program")
    count = spec.numel
    if count > store.data.size:
        raise ProgramFormatError(f"{where}: constant value {k} of sizes {list(spec.sizes)} is larger than the file",
                                 section="program")
    raw = store.get(spec.data_index, count * spec.dtype.itemsize, f"{where}: value {k}")
    stored = np.frombuffer(raw, dtype=spec.dtype.newbyteorder("<"), count=count)
    physical = stored.reshape([spec.sizes[d] for d in spec.dim_order])
    return physical.transpose(np.argsort(spec.dim_order))


def _delegate(d: dict, k: int, where: str, data: np.ndarray, inline: list[Span | None],
              segments: list[tuple[int, int]]) -> Delegate:
    ref = d["processed"]
    what = f"{where}: delegate {k}"
    if ref is None:
        raise ProgramFormatError(f"{what} has no processed data", section="program")
    index = ref["index"]
    if ref["location"] == schema.DATA_INLINE:
        if index >= len(inline):
            raise ProgramFormatError(f"{what} names inline data {index} of {len(inline)}", section="program")
        span = inline[index] or Span(0, 0)
        blob, location = data[span.offset : span.offset + span.size], "inline"
    elif ref["location"] == schema.DATA_SEGMENT:
        if index >= len(segments):
            raise ProgramFormatError(f"{what} names segment {index} of {len(segments)}", section="program")
        start, size = segments[index]
        blob, location = data[start : start + size], "segment"
    else:
        raise ProgramFormatError(f"{what} has unknown data location {ref['location']}", section="program")
    specs = {}
    for spec in d["compile_specs"] or []:
        specs[spec["key"] or ""] = b"" if spec["value"] is None else spec["value"].tobytes()
    return Delegate(d["id"] or "", specs, blob, location, index)
