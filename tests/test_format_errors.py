"""Malformed, hostile and inconsistent files raise VGFFormatError naming section and offset."""

from __future__ import annotations

import struct

import pytest

from pyvgf.errors import VGFFormatError
from pyvgf.format import (
    BindingSlot,
    Category,
    CodeType,
    ConstantBinding,
    read,
    schema,
    write,
)
from pyvgf.format.flatbuffers import Builder


@pytest.fixture
def data(vgf_model) -> bytes:
    return vgf_model("format_const_dtypes").read_bytes()


def section(data: bytes, i: int) -> tuple[int, int]:
    return struct.unpack_from("<QQ", data, 16 + 16 * i)


def patched(data: bytes, offset: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def error(data: bytes) -> VGFFormatError:
    with pytest.raises(VGFFormatError) as info:
        read(data)
    return info.value


def test_short_file_and_bad_magic(data):
    assert error(data[:100]).section == "header"
    assert "bad magic" in str(error(b"XXXX" + data[4:]))


def test_legacy_magic_accepted(data):
    vgf = read(patched(data, 0, "<I", 0xF0E1D2C3))
    assert vgf.header.legacy_magic
    assert write(vgf)[:4] == bytes.fromhex("c3d2e1f0")


@pytest.mark.parametrize("version", [(0, 5, 9), (0, 2, 0), (0, 0, 0), (0, 4, 3)])
def test_versions_arm_accepts(data, version):
    assert read(patched(data, 8, "<BBB", *version)).header.version == version


@pytest.mark.parametrize("version", [(0, 6, 0), (1, 0, 0)])
def test_newer_versions_refused(data, version):
    err = error(patched(data, 8, "<BBB", *version))
    assert "newer than pyvgf reads" in str(err) and err.offset == 8


@pytest.mark.parametrize("i", range(4))
def test_section_past_end(data, i):
    err = error(patched(data, 16 + 16 * i, "<Q", len(data) + 1))
    assert err.section == "header" and err.offset == 16 + 16 * i
    err = error(patched(data, 24 + 16 * i, "<Q", 2**64 - 1))
    assert "runs past the end" in str(err)


def test_truncated_everywhere_is_a_format_error(data):
    for n in range(0, len(data), 7):
        with pytest.raises(VGFFormatError):
            read(data[:n])


def test_root_offset_out_of_section(data):
    offset, _ = section(data, 0)
    err = error(patched(data, offset, "<I", 0xFFFFFFF0))
    assert err.section == "module table" and err.offset is not None


def test_absurd_vector_length(data):
    offset, _ = section(data, 2)
    root = offset + struct.unpack_from("<I", data, offset)[0]
    vector = root + 4 + struct.unpack_from("<I", data, root + 4)[0]
    err = error(patched(data, vector, "<I", 0x7FFFFFFF))
    assert err.section == "model resource table" and err.offset == vector
    assert "runs past the section end" in str(err)


def test_const00_count_and_entries(data):
    offset, _ = section(data, 3)
    assert "declares" in str(error(patched(data, offset + 8, "<Q", 10**9)))
    err = error(patched(data, offset + 16 + 8, "<Q", 10**6))
    assert err.section == "constants" and err.offset == offset + 16
    assert "sparsity" in str(error(patched(data, offset + 16 + 4, "<i", -2)))


def test_section_too_small(data):
    assert error(patched(data, 24, "<Q", 2)).section == "module table"
    assert error(patched(data, 72, "<Q", 4)).section == "constants"


def _with_module_table(data: bytes, **module) -> bytes:
    """`data` with its module table replaced by one module of raw field values, appended."""
    b = Builder()
    m = schema.Module.subcon.build_into(b, name=b.create_string("m"), **module)
    table = b.finish(schema.ModuleTable.subcon.build_into(b, modules=b.create_offset_vector([m])))
    header = schema.Header.parse(data)
    offset = len(data) + (-len(data) % 8)
    header.sections[0].offset, header.sections[0].size = offset, len(table)
    return schema.Header.build(header) + data[schema.HEADER_SIZE :] + bytes(offset - len(data)) + table


def test_unknown_enum_values_name_the_field(data):
    err = error(_with_module_table(data, type=7))
    assert str(err).startswith("Module.type has unknown value 7") and err.section == "module table"
    assert err.offset > section(data, 3)[0]  # in the appended table
    assert "Module.code_type has unknown value 9" in str(error(_with_module_table(data, code_type=9)))
    assert read(_with_module_table(data, type=1, code_type=2)).modules[0].code_type is CodeType.GLSL


def test_code_with_code_type_none_is_refused(vgf_model):
    vgf = read(vgf_model("format_segments"))
    vgf.modules[0].code_type = CodeType.NONE
    with pytest.raises(VGFFormatError, match="has code but code type NONE"):
        write(vgf)


def _invalid(vgf_model, mutate) -> str:
    vgf = read(vgf_model("format_segments"))
    mutate(vgf)
    with pytest.raises(VGFFormatError) as info:
        write(vgf)
    return str(info.value)


def test_cross_reference_errors(vgf_model):
    def module_index(v):
        v.sequence.segments[0].module_index = 9

    def mrt(v):
        v.sequence.inputs[0] = BindingSlot(0, 42)

    def dispatch(v):
        v.sequence.segments[1].dispatch_shape = [1, 1]

    def duplicate_binding(v):
        v.sequence.segments[2].set_infos[0].bindings[1].binding = 1

    def category(v):
        v.resources[0].category = Category.CONSTANT

    def constant_index(v):
        v.sequence.segments[0].constants = [3]

    def constant_binding(v):
        v.sequence.segments[0].constant_bindings = [ConstantBinding(5, 0)]

    def set_twice(v):
        infos = v.sequence.segments[2].set_infos
        infos.append(type(infos[0])([], set_index=0))

    assert "refers to module 9" in _invalid(vgf_model, module_index)
    assert "refers to resource 42" in _invalid(vgf_model, mrt)
    assert "dispatch_shape has 2 entries" in _invalid(vgf_model, dispatch)
    assert "binding number twice" in _invalid(vgf_model, duplicate_binding)
    assert "constants, and only constants" in _invalid(vgf_model, category)
    assert "refers to constant 3" in _invalid(vgf_model, constant_index)
    assert "refers to constant 0" in _invalid(vgf_model, constant_binding)
    assert "descriptor set 0 twice" in _invalid(vgf_model, set_twice)

