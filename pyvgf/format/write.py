"""Write a `VGF` to bytes laid out exactly as Arm's VGF encoder (vgf-lib) writes them.

The encoder keeps one FlatBuffers builder per section and creates objects in the order its
API is called; `write()` replays the calls model-converter makes (spec/vgf-container.md,
section 7). Sections follow the header, 8-byte aligned from format 0.4.3 on and packed
before; constants use CONST00 or, for legacy files, the FlatBuffers ConstantSection.

The module table, the resource table and the legacy constants are built by their schema
(`root.build(builder, value)`: children in each table's declared order). The model sequence
table is assembled here: model-converter shares BindingSlot tables between segments and kinds
and makes them in an order that depends on the resources' categories and the segments' types
(`_slot_order`), and it makes a segment's children interleaved with its set-info vector;
neither is a property of one table, so the schema cannot state it. Its leaf tables and
vectors are still built by the schema (`SegmentInfo.build_field`, `BindingSlot.build`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..errors import VGFFormatError
from . import schema as s
from .flatbuffers import Adapter, Builder, Table
from .model import VGF, BindingSlot, Category, ModuleType, Segment
from .validate import validate

Chunks = list[bytes | memoryview]


def write(vgf: VGF) -> bytes:
    """Encode `vgf` (validated first) as a VGF file. Constant data is copied once, into the
    returned bytes."""
    validate(vgf)
    if vgf.header.version[0] != s.MAJOR or vgf.header.version[1] > s.MAX_MINOR:
        raise VGFFormatError(f"pyvgf cannot write format version {vgf.header.version}", section="header")
    sections: list[Chunks] = [
        [_section(s.ModuleTable, vgf.modules)],
        [_sequence_table(vgf)],
        [_section(s.ModelResourceTable, vgf.resources)],
        [_legacy_constants(vgf)] if vgf.legacy_constants else _constants_v00(vgf),
    ]
    align = 8 if vgf.header.version >= (0, 4, 3) else 1
    chunks: Chunks = []
    entries, pos = [], s.HEADER_SIZE
    for section in sections:
        padding = -pos % align
        chunks.append(bytes(padding))
        size = sum(len(c) for c in section)
        entries.append((pos + padding, size))
        chunks.extend(section)
        pos += padding + size
    header = s.FileHeader.build((vgf.header, entries))
    return b"".join([header, *chunks])


def _section(root: Adapter | Table, value: Any, initial_size: int = 1024) -> bytes:
    b = Builder(initial_size)
    return b.finish(root.build(b, value))


LOGICAL, DESCRIPTOR = 0, 1
"""Kinds of binding slot table model-converter makes: one *logical* slot per resource (its
global binding, used by segment and model inputs/outputs and graph descriptor sets), and
*descriptor* slots for a compute shader's own (set, binding) of a resource. A logical and a
descriptor slot with equal values are still two tables."""


class _Slots:
    """BindingSlot tables, one per (kind, binding, resource)."""

    def __init__(self, builder: Builder):
        self.builder = builder
        self.made: dict[tuple[int, int, int], int] = {}

    def __call__(self, kind: int, slot: BindingSlot) -> int:
        key = (kind, slot.binding, slot.mrt_index)
        if key not in self.made:
            self.made[key] = s.BindingSlot.build(self.builder, slot)
        return self.made[key]

    def vector(self, kind: int, slots: list[BindingSlot]) -> int:
        return self.builder.create_offset_vector([self(kind, x) for x in slots])


def _set_kind(seg: Segment) -> int:
    return DESCRIPTOR if seg.type == ModuleType.COMPUTE else LOGICAL


def _segment(b: Builder, slots: _Slots, seg: Segment) -> int:
    kind = _set_kind(seg)
    set_infos = [
        s.DescriptorSetInfo.build_into(b, bindings=slots.vector(kind, info.bindings), set_index=info.set_index)
        for info in seg.set_infos
    ]
    field = partial(s.SegmentInfo.build_field, b)
    constants = field("constants", seg.constants)
    bindings = field("constant_bindings", seg.constant_bindings)
    dispatch = field("dispatch_shape", seg.dispatch_shape)
    set_infos_vec = b.create_offset_vector(set_infos)
    inputs = slots.vector(LOGICAL, seg.inputs)
    outputs = slots.vector(LOGICAL, seg.outputs)
    push = field("push_constant_ranges", seg.push_constant_ranges)
    return s.SegmentInfo.build_into(
        b,
        type=seg.type,
        name=field("name", seg.name),
        module_index=seg.module_index,
        set_infos=set_infos_vec,
        inputs=inputs,
        outputs=outputs,
        constants=constants,
        dispatch_shape=dispatch,
        push_constant_ranges=push,
        constant_bindings=bindings,
    )


def _slot_order(vgf: VGF) -> list[tuple[int, BindingSlot]]:
    """Every binding slot table in model-converter's creation order.

    Its resource planner makes the logical slots of the model inputs, then attaches segment
    inputs and outputs (per segment, inputs first) in three passes: those of INPUT resources,
    of INTERMEDIATE ones, then (after the logical slots of the model outputs) of OUTPUT ones.
    Attaching makes the resource's logical slot if new and, for a compute segment, the
    descriptor slots of that resource in its descriptor sets."""
    seq = vgf.sequence
    made: dict[tuple[int, int, int], None] = {}

    def logical(slot: BindingSlot) -> None:
        made.setdefault((LOGICAL, slot.binding, slot.mrt_index))

    def attach(seg: Segment, slot: BindingSlot) -> None:
        logical(slot)
        if _set_kind(seg) == DESCRIPTOR:
            for info in seg.set_infos:
                for x in info.bindings:
                    if x.mrt_index == slot.mrt_index:
                        made.setdefault((DESCRIPTOR, x.binding, x.mrt_index))

    def attach_all(category: Category) -> None:
        for seg in seq.segments:
            for slot in seg.inputs + seg.outputs:
                if vgf.resources[slot.mrt_index].category == category:
                    attach(seg, slot)

    for slot in seq.inputs:
        logical(slot)
    attach_all(Category.INPUT)
    attach_all(Category.INTERMEDIATE)
    for slot in seq.outputs:
        logical(slot)
    attach_all(Category.OUTPUT)
    for seg in seq.segments:
        for info in seg.set_infos:
            for x in info.bindings:
                made.setdefault((_set_kind(seg), x.binding, x.mrt_index))
    return [(kind, BindingSlot(binding, mrt)) for kind, binding, mrt in made]


def _sequence_table(vgf: VGF) -> bytes:
    b = Builder()
    seq = vgf.sequence
    slots = _Slots(b)
    for kind, slot in _slot_order(vgf):
        slots(kind, slot)
    segments = [_segment(b, slots, seg) for seg in seq.segments]
    input_names = [b.create_string(n) for n in seq.input_names]
    output_names = [b.create_string(n) for n in seq.output_names]
    inputs = slots.vector(LOGICAL, seq.inputs)
    outputs = slots.vector(LOGICAL, seq.outputs)
    input_names_vec = b.create_offset_vector(input_names)
    output_names_vec = b.create_offset_vector(output_names)
    root = s.ModelSequenceTable.build_into(
        b,
        segments=b.create_offset_vector(segments),
        inputs=inputs,
        outputs=outputs,
        input_names=input_names_vec,
        output_names=output_names_vec,
    )
    return b.finish(root)


def _constants_v00(vgf: VGF) -> Chunks:
    payload: Chunks = []
    for c in vgf.constants:
        data = s.constant_bytes(c.data).data
        payload += [data, bytes(s.padded(len(data)) - len(data))]
    return [s.ConstantSectionV00.build(vgf.constants), *payload]


def _legacy_constants(vgf: VGF) -> bytes:
    return _section(s.ConstantSection, vgf.constants, 1024 + sum(c.data.size + 64 for c in vgf.constants))
