"""The VGF container as declarative `construct` schema, in file order.

    header (128 B) | module table | model sequence table | model resource table | constants

The header and the CONST00 constant layout are fixed-size structs; the four middle sections
are FlatBuffers tables (`pyvgf.format.flatbuffers`), declared slot by slot as in Arm's
`vgf.fbs` (plus `SegmentInfo.constant_bindings`, slot 9, from format 0.5).
See spec/vgf-container.md for the prose version.

Each section's schema is also its mapping to the object model (`pyvgf.format.model`): tables
whose fields the model names alike read as (and build from) the model's classes, enum fields
read as its enums, and adapters map the rest (a Module's code union, a Resource's description
and sampler, constants as views of the file, the header as `model.Header` and its section
table). Each root parses to what `VGF` holds for that section and builds back from it, and
the adapters refuse what the format forbids (VGFFormatError naming section and offset).

Left to read.py and write.py: placing the sections (the section table is known only once they
are built; construct builds front to back) and the order in which the model sequence table's
objects are created (model-converter's, which shares BindingSlot tables across segments;
see `pyvgf.format.write`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from construct import (
    Adapter,
    Array,
    Bytes,
    Const,
    Default,
    Int8ul,
    Int16ul,
    Int32sl,
    Int32ul,
    Int64ul,
    Rebuild,
    Struct,
    Tell,
    len_,
    this,
)

from ..errors import VGFFormatError
from . import flatbuffers as fb
from . import model
from .flatbuffers import (
    Cursor,
    Enum,
    Field,
    FlatBufferError,
    Ints,
    Ref,
    Sole,
    String,
    Table,
    Union,
    Vector,
    View,
    i64,
    u8,
    u32,
)

MAGIC = b"VGF1"
MAGIC_LEGACY = (0xF0E1D2C3).to_bytes(4, "little")
HEADER_SIZE = 128
MAJOR = 0
MAX_MINOR = 5
"""Arm's VGF library 0.11 decodes major 0, minor <= 5, any patch."""

SECTIONS = ("module table", "model sequence table", "model resource table", "constants")

# --- header ------------------------------------------------------------------------------

SectionEntry = Struct(
    "offset" / Int64ul,  # absolute, from the start of the file
    "size" / Int64ul,  # without trailing padding
)

Header = Struct(
    "magic" / Bytes(4),  # b"VGF1", or the legacy u32 0xF0E1D2C3
    "vk_header_version" / Int16ul,  # VK_HEADER_VERSION of the producer; informational
    "reserved0" / Default(Int16ul, 0),
    "major" / Int8ul,
    "minor" / Int8ul,
    "patch" / Int8ul,
    "reserved1" / Default(Int8ul, 0),
    "reserved2" / Default(Int32ul, 0),
    "sections" / Array(4, SectionEntry),  # in the order of SECTIONS
    "reserved3" / Default(Array(6, Int64ul), [0] * 6),
)
assert Header.sizeof() == HEADER_SIZE


class _FileHeader(Adapter):
    """The header <-> (`model.Header`, the section table: (offset, size) in the order of
    SECTIONS). Parsed with the parameter `size` (the file's): an unknown magic, a version newer
    than pyvgf reads or a section running past the end of the file is refused."""

    def _decode(self, h, context, path) -> tuple[model.Header, list[tuple[int, int]]]:
        if h.magic not in (MAGIC, MAGIC_LEGACY):
            raise VGFFormatError(f"bad magic {h.magic.hex()} (not a VGF file)", section="header", offset=0)
        version = (h.major, h.minor, h.patch)
        if h.major != MAJOR or h.minor > MAX_MINOR:
            raise VGFFormatError(
                f"format version {'.'.join(map(str, version))} is newer than pyvgf reads "
                f"({MAJOR}.{MAX_MINOR}.x at most)",
                section="header",
                offset=8,
            )
        size = context._params.size
        for i, (name, entry) in enumerate(zip(SECTIONS, h.sections)):
            if entry.offset > size or entry.size > size - entry.offset:
                raise VGFFormatError(
                    f"{name} (offset {entry.offset}, size {entry.size}) runs past the end of the {size}-byte file",
                    section="header",
                    offset=16 + 16 * i,
                )
        header = model.Header(version, h.vk_header_version, legacy_magic=h.magic == MAGIC_LEGACY)
        return header, [(entry.offset, entry.size) for entry in h.sections]

    def _encode(self, obj: tuple[model.Header, list[tuple[int, int]]], context, path) -> dict[str, Any]:
        header, sections = obj
        major, minor, patch = header.version
        return {
            "magic": MAGIC_LEGACY if header.legacy_magic else MAGIC,
            "vk_header_version": header.vk_header_version,
            "major": major,
            "minor": minor,
            "patch": patch,
            "sections": [{"offset": offset, "size": size} for offset, size in sections],
        }


FileHeader = _FileHeader(Header)


# --- the object model's shapes that differ from the tables' -------------------------------


def _no_words() -> np.ndarray:
    return np.frombuffer(b"", np.uint32)


def _no_bytes() -> np.ndarray:
    return np.frombuffer(b"", np.uint8)


def constant_bytes(data: np.ndarray) -> np.ndarray:
    """A constant's data as the flat uint8 array that is written (no copy when contiguous)."""
    return np.ascontiguousarray(data).reshape(-1).view(np.uint8)


class _Module(fb.Adapter):
    """Module table <-> `model.Module`: the union `code` is the module's code_type and code."""

    def _decode(self, obj: dict[str, Any], cur: Cursor, offset: int) -> model.Module:
        obj["code_type"], obj["code"] = obj["code"]
        return model.Module(**obj)

    def _encode(self, m: model.Module) -> dict[str, Any]:
        return {"type": m.type, "name": m.name, "entry_point": m.entry_point, "code": (m.code_type, m.code)}


class _Resource(fb.Adapter):
    """ModelResourceTableEntry <-> `model.Resource`: the Description's shape and strides and
    the SamplerConfig of `extra_config` are the resource's own fields."""

    def _decode(self, obj: dict[str, Any], cur: Cursor, offset: int) -> model.Resource:
        description = obj["description"]
        return model.Resource(
            descriptor_type=obj["vk_descriptor_type"],
            format=obj["vk_format"],
            category=obj["category"],
            shape=description.get("shape", []),
            strides=description.get("strides", []),
            sampler=obj["extra_config"][1],
            alias_group_id=obj["alias_group_id"],
        )

    def _encode(self, r: model.Resource) -> dict[str, Any]:
        return {
            "vk_descriptor_type": r.descriptor_type,
            "vk_format": r.format,
            "category": r.category,
            "description": {"shape": r.shape, "strides": r.strides},
            "extra_config": (0, None) if r.sampler is None else (1, r.sampler),
            "alias_group_id": r.alias_group_id,
        }


class _LegacyConstant(fb.Adapter):
    """ConstantData <-> `model.Constant` (its `raw` bytes are the constant's data)."""

    def _decode(self, obj: dict[str, Any], cur: Cursor, offset: int) -> model.Constant:
        if obj["sparsity_dimension"] < -1:
            raise FlatBufferError(f"ConstantData.sparsity_dimension {obj['sparsity_dimension']} is below -1", offset)
        return model.Constant(obj["mrt_index"], obj["raw"], obj["sparsity_dimension"])

    def _encode(self, c: model.Constant) -> dict[str, Any]:
        return {"mrt_index": c.mrt_index, "sparsity_dimension": c.sparsity_dimension, "raw": constant_bytes(c.data)}


# --- section 1: module table ---------------------------------------------------------------

SPIRV = Table("SPIRV", Field(0, "words", View(u32), _no_words))
GLSL = Table("GLSL", Field(0, "code", String(), str))
HLSL = Table("HLSL", Field(0, "code", String(), str))

Module = _Module(
    Table(
        "Module",
        Field(0, "type", Enum(u8, model.ModuleType), 0),
        Field(1, "name", String(), str),
        Field(2, "entry_point", String(), str),
        Union(3, "code", {model.CodeType.SPIRV: Sole(SPIRV), model.CodeType.GLSL: Sole(GLSL),
                          model.CodeType.HLSL: Sole(HLSL)}, tag=Enum(u8, model.CodeType)),
        order=("code", "name", "entry_point"),  # as Arm's encoder makes them (spec section 7)
    )
)

ModuleTable = Sole(Table("ModuleTable", Field(0, "modules", Vector(Module), list)))

# --- section 2: model sequence table -------------------------------------------------------

BindingSlot = Table(
    "BindingSlot",
    Field(0, "binding", u32, 0),
    Field(1, "mrt_index", u32, 0),
    model=model.BindingSlot,
)

DescriptorSetInfo = Table(
    "DescriptorSetInfo",
    Field(0, "bindings", Vector(BindingSlot), list),
    Field(1, "set_index", u32, model.NO_INDEX),  # format 0.4.2; default: position in set_infos
    model=model.DescriptorSetInfo,
)

PushConstantRange = Table(
    "PushConstantRange",
    Field(0, "stage_flags", u32, 0),
    Field(1, "offset", u32, 0),
    Field(2, "size", u32, 0),
    model=model.PushConstantRange,
)

GraphConstantBinding = Table(
    "GraphConstantBinding",
    Field(0, "graph_constant_id", u32, 0),
    Field(1, "constant_table_index", u32, 0),
    model=model.ConstantBinding,
)

SegmentInfo = Table(
    "SegmentInfo",
    Field(0, "type", Enum(u8, model.ModuleType), 0),
    Field(1, "name", String(), str),
    Field(2, "module_index", u32, 0),
    Field(3, "set_infos", Vector(DescriptorSetInfo), list),
    Field(4, "inputs", Vector(BindingSlot), list),
    Field(5, "outputs", Vector(BindingSlot), list),
    Field(6, "constants", Ints(u32), list),
    Field(7, "dispatch_shape", Ints(u32)),
    Field(8, "push_constant_ranges", Vector(PushConstantRange), list),
    Field(9, "constant_bindings", Vector(GraphConstantBinding)),  # format 0.5
    model=model.Segment,
)

ModelSequenceTable = Table(
    "ModelSequenceTable",
    Field(0, "segments", Vector(SegmentInfo), list),
    Field(1, "inputs", Vector(BindingSlot), list),
    Field(2, "outputs", Vector(BindingSlot), list),
    Field(3, "input_names", Vector(String()), list),
    Field(4, "output_names", Vector(String()), list),
    model=model.ModelSequence,
)

# --- section 3: model resource table -------------------------------------------------------

Description = Table(
    "Description",
    Field(0, "shape", Ints(i64), list),
    Field(1, "strides", Ints(i64), list),
)

SamplerConfig = Table(
    "SamplerConfig",
    Field(0, "min_filter", u32, 0),
    Field(1, "mag_filter", u32, 0),
    Field(2, "address_mode_u", u32, 0),
    Field(3, "address_mode_v", u32, 0),
    Field(4, "border_color", u32, 0),
    model=model.SamplerConfig,
)

ModelResourceTableEntry = _Resource(
    Table(
        "ModelResourceTableEntry",
        Field(0, "vk_descriptor_type", u32, 0),  # 0xFFFFFFFF (written) for constants
        Field(1, "vk_format", u32, 0),
        Field(2, "category", Enum(u8, model.Category), 0),
        Field(3, "description", Description, dict),  # absent: shape and strides empty
        Union(4, "extra_config", {1: SamplerConfig}),
        Field(6, "alias_group_id", u32, model.NO_INDEX),
    )
)

ModelResourceTable = Sole(Table("ModelResourceTable", Field(0, "mrt_entry", Vector(ModelResourceTableEntry), list)))

# --- section 4: constants ------------------------------------------------------------------

CONST00 = b"CONST00\0"

def padded(size: int) -> int:
    """The bytes a constant of `size` bytes takes in the CONST00 payload."""
    return size + -size % 8


ConstantMetaDataV00 = Struct(
    "mrt_index" / Int32ul,
    "sparsity_dimension" / Int32sl,  # -1: dense
    "size" / Int64ul,  # bytes, without padding
    "offset" / Int64ul,  # from the start of the payload
)


class _Count(Adapter):
    """CONST00's record count, refused (before any record is read) when more records than
    the section has room for are declared."""

    def _decode(self, count: int, context, path) -> int:
        lo, hi = context._params.bounds
        room = (hi - lo - 16) // 24
        if count > room:
            raise VGFFormatError(f"CONST00 declares {count} constants but has room for {room}",
                                 section="constants", offset=lo + 8)
        return count

    def _encode(self, count: int, context, path) -> int:
        return count


class _ConstantsV00(Adapter):
    """CONST00 <-> list[`model.Constant`]: a record's data is a view of the payload (of the
    parse's `array` parameter, the file); its offsets are the running sum of padded sizes."""

    def _decode(self, obj, context, path) -> list[model.Constant]:
        array, (_, end) = context._params.array, context._params.bounds
        payload, room = obj.payload, end - obj.payload
        records = payload - 24 * len(obj.metadata)
        out = []
        for i, meta in enumerate(obj.metadata):
            at = records + 24 * i
            if meta.offset > room or meta.size > room - meta.offset:
                raise VGFFormatError(
                    f"constant {i} (offset {meta.offset}, size {meta.size}) runs past the payload of {room} bytes",
                    section="constants",
                    offset=at,
                )
            if meta.sparsity_dimension < -1:
                raise VGFFormatError(f"constant {i} has sparsity dimension {meta.sparsity_dimension} (< -1)",
                                     section="constants", offset=at + 4)
            start = payload + meta.offset
            out.append(model.Constant(meta.mrt_index, array[start : start + meta.size], meta.sparsity_dimension))
        return out

    def _encode(self, constants: list[model.Constant], context, path) -> dict[str, Any]:
        metadata, offset = [], 0
        for c in constants:
            size = constant_bytes(c.data).size
            metadata.append({"mrt_index": c.mrt_index, "sparsity_dimension": c.sparsity_dimension,
                             "size": size, "offset": offset})
            offset += padded(size)
        return {"metadata": metadata}


ConstantSectionV00 = _ConstantsV00(
    Struct(
        "version" / Const(CONST00),
        "count" / Rebuild(_Count(Int64ul), len_(this.metadata)),
        "metadata" / Array(this.count, ConstantMetaDataV00),
        "payload" / Tell,  # each constant, padded with zeros to a multiple of 8 bytes (not built here)
    )
)
"""Parsed with the parameters `array` (the file as uint8) and `bounds` (the section)."""

ConstantData = _LegacyConstant(
    Table(
        "ConstantData",
        Field(0, "mrt_index", u32, 0),
        Field(1, "sparsity_dimension", i64, 0),
        Field(2, "raw", View(u8, align=8), _no_bytes),  # force_align: 8
    )
)

ConstantSection = Sole(Table("ConstantSection", Field(0, "data", Vector(ConstantData), list)))
"""Legacy (format < 0.4) constants: a FlatBuffers root in section 4."""


# Each FlatBuffers section starts with a u32 offset to its root table.
ROOTS = {
    "module table": Ref(ModuleTable),
    "model sequence table": Ref(ModelSequenceTable),
    "model resource table": Ref(ModelResourceTable),
    "constants": Ref(ConstantSection),
}
