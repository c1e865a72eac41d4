"""The VGF container as declarative `construct` schema, in file order.

    header (128 B) | module table | model sequence table | model resource table | constants

The header and the CONST00 constant layout are fixed-size structs; the four middle sections
are FlatBuffers tables (`pyvgf.format.flatbuffers`), declared slot by slot as in Arm's
`vgf.fbs` (plus `SegmentInfo.constant_bindings`, slot 9, from format 0.5).
See spec/vgf-container.md for the prose version.
"""

from __future__ import annotations

from construct import Array, Bytes, Int8ul, Int16ul, Int32sl, Int32ul, Int64ul, Struct, this

from .flatbuffers import Field, Ref, String, Table, Union, Vector, i64, u8, u32

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
    "reserved0" / Int16ul,
    "major" / Int8ul,
    "minor" / Int8ul,
    "patch" / Int8ul,
    "reserved1" / Int8ul,
    "reserved2" / Int32ul,
    "sections" / Array(4, SectionEntry),  # in the order of SECTIONS
    "reserved3" / Array(6, Int64ul),
)
assert Header.sizeof() == HEADER_SIZE

# --- section 1: module table ---------------------------------------------------------------

SPIRV = Table("SPIRV", Field(0, "words", Vector(u32, raw=True)))
GLSL = Table("GLSL", Field(0, "code", String()))
HLSL = Table("HLSL", Field(0, "code", String()))

Module = Table(
    "Module",
    Field(0, "type", u8, 0),
    Field(1, "name", String()),
    Field(2, "entry_point", String()),
    Union(3, "code", {1: SPIRV, 2: GLSL, 3: HLSL}),
)

ModuleTable = Table("ModuleTable", Field(0, "modules", Vector(Module)))

# --- section 2: model sequence table -------------------------------------------------------

BindingSlot = Table(
    "BindingSlot",
    Field(0, "binding", u32, 0),
    Field(1, "mrt_index", u32, 0),
)

DescriptorSetInfo = Table(
    "DescriptorSetInfo",
    Field(0, "bindings", Vector(BindingSlot)),
    Field(1, "set_index", u32, 0xFFFFFFFF),  # format 0.4.2; default: position in set_infos
)

PushConstantRange = Table(
    "PushConstantRange",
    Field(0, "stage_flags", u32, 0),
    Field(1, "offset", u32, 0),
    Field(2, "size", u32, 0),
)

GraphConstantBinding = Table(
    "GraphConstantBinding",
    Field(0, "graph_constant_id", u32, 0),
    Field(1, "constant_table_index", u32, 0),
)

SegmentInfo = Table(
    "SegmentInfo",
    Field(0, "type", u8, 0),
    Field(1, "name", String()),
    Field(2, "module_index", u32, 0),
    Field(3, "set_infos", Vector(DescriptorSetInfo)),
    Field(4, "inputs", Vector(BindingSlot)),
    Field(5, "outputs", Vector(BindingSlot)),
    Field(6, "constants", Vector(u32)),
    Field(7, "dispatch_shape", Vector(u32)),
    Field(8, "push_constant_ranges", Vector(PushConstantRange)),
    Field(9, "constant_bindings", Vector(GraphConstantBinding)),  # format 0.5
)

ModelSequenceTable = Table(
    "ModelSequenceTable",
    Field(0, "segments", Vector(SegmentInfo)),
    Field(1, "inputs", Vector(BindingSlot)),
    Field(2, "outputs", Vector(BindingSlot)),
    Field(3, "input_names", Vector(String())),
    Field(4, "output_names", Vector(String())),
)

# --- section 3: model resource table -------------------------------------------------------

Description = Table(
    "Description",
    Field(0, "shape", Vector(i64)),
    Field(1, "strides", Vector(i64)),
)

SamplerConfig = Table(
    "SamplerConfig",
    Field(0, "min_filter", u32, 0),
    Field(1, "mag_filter", u32, 0),
    Field(2, "address_mode_u", u32, 0),
    Field(3, "address_mode_v", u32, 0),
    Field(4, "border_color", u32, 0),
)

ModelResourceTableEntry = Table(
    "ModelResourceTableEntry",
    Field(0, "vk_descriptor_type", u32, 0),  # 0xFFFFFFFF (written) for constants
    Field(1, "vk_format", u32, 0),
    Field(2, "category", u8, 0),
    Field(3, "description", Description),
    Union(4, "extra_config", {1: SamplerConfig}),
    Field(6, "alias_group_id", u32, 0xFFFFFFFF),
)

ModelResourceTable = Table("ModelResourceTable", Field(0, "mrt_entry", Vector(ModelResourceTableEntry)))

# --- section 4: constants ------------------------------------------------------------------

CONST00 = b"CONST00\0"

ConstantMetaDataV00 = Struct(
    "mrt_index" / Int32ul,
    "sparsity_dimension" / Int32sl,  # -1: dense
    "size" / Int64ul,  # bytes, without padding
    "offset" / Int64ul,  # from the start of the payload
)

ConstantSectionV00 = Struct(
    "version" / Bytes(8),  # CONST00
    "count" / Int64ul,
    "metadata" / Array(this.count, ConstantMetaDataV00),
    # payload follows: each constant padded with zeros to a multiple of 8 bytes
)

ConstantData = Table(
    "ConstantData",
    Field(0, "mrt_index", u32, 0),
    Field(1, "sparsity_dimension", i64, 0),
    Field(2, "raw", Vector(u8, raw=True)),  # force_align: 8
)

ConstantSection = Table("ConstantSection", Field(0, "data", Vector(ConstantData)))
"""Legacy (format < 0.4) constants: a FlatBuffers root in section 4."""


# Each FlatBuffers section starts with a u32 offset to its root table.
ROOTS = {
    "module table": Ref(ModuleTable),
    "model sequence table": Ref(ModelSequenceTable),
    "model resource table": Ref(ModelResourceTable),
    "constants": Ref(ConstantSection),
}
