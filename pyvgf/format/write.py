"""Write a `VGF` to bytes laid out exactly as Arm's VGF encoder (vgf-lib) writes them.

The encoder keeps one FlatBuffers builder per section and creates objects in the order its
API is called; `write()` replays the calls model-converter makes (spec/vgf-container.md,
section 7). Sections follow the header, 8-byte aligned from format 0.4.3 on and packed
before; constants use CONST00 or, for legacy files, the FlatBuffers ConstantSection.
"""

from __future__ import annotations

import numpy as np

from ..errors import VGFFormatError
from . import schema as s
from .flatbuffers import Builder, i64, u8, u32
from .model import VGF, BindingSlot, Category, CodeType, Module, ModuleType, Segment
from .validate import validate

Chunks = list[bytes | memoryview]


def write(vgf: VGF) -> bytes:
    """Encode `vgf` (validated first) as a VGF file. Constant data is copied once, into the
    returned bytes."""
    validate(vgf)
    if vgf.header.version[0] != s.MAJOR or vgf.header.version[1] > s.MAX_MINOR:
        raise VGFFormatError(f"pyvgf cannot write format version {vgf.header.version}", section="header")
    sections: list[Chunks] = [
        [_module_table(vgf.modules)],
        [_sequence_table(vgf)],
        [_resource_table(vgf)],
        [_legacy_constants(vgf)] if vgf.legacy_constants else _constants_v00(vgf),
    ]
    align = 8 if vgf.header.version >= (0, 4, 3) else 1
    chunks: Chunks = []
    entries, pos = [], s.HEADER_SIZE
    for section in sections:
        padding = -pos % align
        chunks.append(bytes(padding))
        size = sum(len(c) for c in section)
        entries.append(dict(offset=pos + padding, size=size))
        chunks.extend(section)
        pos += padding + size
    major, minor, patch = vgf.header.version
    header = s.Header.build(
        dict(
            magic=s.MAGIC_LEGACY if vgf.header.legacy_magic else s.MAGIC,
            vk_header_version=vgf.header.vk_header_version,
            reserved0=0,
            major=major,
            minor=minor,
            patch=patch,
            reserved1=0,
            reserved2=0,
            sections=entries,
            reserved3=[0] * 6,
        )
    )
    return b"".join([header, *chunks])


def _module(b: Builder, m: Module) -> int:
    code = None
    if m.code is not None:
        if m.code_type == CodeType.SPIRV:
            words = b.create_scalar_vector(u32, np.asarray(m.code, dtype=np.uint32))
            code = s.SPIRV.build_into(b, words=words)
        elif m.code_type in (CodeType.GLSL, CodeType.HLSL):
            if not isinstance(m.code, str):
                raise VGFFormatError(f"module {m.name!r} has GLSL or HLSL code that is not a str",
                                     section="module table")
            table = s.GLSL if m.code_type == CodeType.GLSL else s.HLSL
            code = table.build_into(b, code=b.create_string(m.code))
        else:
            raise VGFFormatError(f"module {m.name!r} has code but code type NONE", section="module table")
    name = b.create_string(m.name)
    entry_point = b.create_string(m.entry_point)
    return s.Module.build_into(
        b, type=int(m.type), name=name, entry_point=entry_point, code_type=int(m.code_type), code=code
    )


def _module_table(modules: list[Module]) -> bytes:
    b = Builder()
    offsets = [_module(b, m) for m in modules]
    return b.finish(s.ModuleTable.build_into(b, modules=b.create_offset_vector(offsets)))


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
            self.made[key] = s.BindingSlot.build_into(self.builder, binding=slot.binding, mrt_index=slot.mrt_index)
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
    constants = b.create_scalar_vector(u32, seg.constants)
    bindings = None
    if seg.constant_bindings is not None:
        tables = [
            s.GraphConstantBinding.build_into(
                b, graph_constant_id=c.graph_constant_id, constant_table_index=c.constant_table_index
            )
            for c in seg.constant_bindings
        ]
        bindings = b.create_offset_vector(tables)
    dispatch = None if seg.dispatch_shape is None else b.create_scalar_vector(u32, seg.dispatch_shape)
    set_infos_vec = b.create_offset_vector(set_infos)
    inputs = slots.vector(LOGICAL, seg.inputs)
    outputs = slots.vector(LOGICAL, seg.outputs)
    push = b.create_offset_vector(
        [
            s.PushConstantRange.build_into(b, stage_flags=p.stage_flags, offset=p.offset, size=p.size)
            for p in seg.push_constant_ranges
        ]
    )
    return s.SegmentInfo.build_into(
        b,
        type=int(seg.type),
        name=b.create_string(seg.name),
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


def _resource_table(vgf: VGF) -> bytes:
    b = Builder()
    entries = []
    for r in vgf.resources:
        shape = b.create_scalar_vector(i64, r.shape)
        strides = b.create_scalar_vector(i64, r.strides)
        description = s.Description.build_into(b, shape=shape, strides=strides)
        extra_type, extra = 0, None
        if r.sampler is not None:
            extra_type = 1
            extra = s.SamplerConfig.build_into(
                b,
                min_filter=r.sampler.min_filter,
                mag_filter=r.sampler.mag_filter,
                address_mode_u=r.sampler.address_mode_u,
                address_mode_v=r.sampler.address_mode_v,
                border_color=r.sampler.border_color,
            )
        entries.append(
            s.ModelResourceTableEntry.build_into(
                b,
                vk_descriptor_type=int(r.descriptor_type),
                vk_format=int(r.format),
                category=int(r.category),
                description=description,
                extra_config_type=extra_type,
                extra_config=extra,
                alias_group_id=r.alias_group_id,
            )
        )
    return b.finish(s.ModelResourceTable.build_into(b, mrt_entry=b.create_offset_vector(entries)))


def _constant_bytes(data: np.ndarray) -> memoryview:
    return np.ascontiguousarray(data).reshape(-1).view(np.uint8).data


def _constants_v00(vgf: VGF) -> Chunks:
    metas, payload, offset = [], [], 0
    for c in vgf.constants:
        data = _constant_bytes(c.data)
        size = len(data)
        metas.append(dict(mrt_index=c.mrt_index, sparsity_dimension=c.sparsity_dimension, size=size, offset=offset))
        payload += [data, bytes(-size % 8)]
        offset += size + (-size % 8)
    head = s.ConstantSectionV00.build(dict(version=s.CONST00, count=len(metas), metadata=metas))
    return [head, *payload]


def _legacy_constants(vgf: VGF) -> bytes:
    b = Builder(1024 + sum(c.data.size + 64 for c in vgf.constants))
    tables = []
    for c in vgf.constants:
        data = np.frombuffer(_constant_bytes(c.data), dtype=np.uint8)
        b.force_vector_alignment(data.size, 1, 8)
        raw = b.create_scalar_vector(u8, data)
        tables.append(
            s.ConstantData.build_into(
                b, mrt_index=c.mrt_index, sparsity_dimension=c.sparsity_dimension, raw=raw
            )
        )
    return b.finish(s.ConstantSection.build_into(b, data=b.create_offset_vector(tables)))
