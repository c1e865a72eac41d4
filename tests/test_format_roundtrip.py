"""Real files: our JSON equals vgf_dump's, and write(read(f)) reproduces f byte for byte."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from pyvgf.format import NO_INDEX, CodeType, DescriptorType, ModuleType, read, write
from pyvgf.format.dump import to_json
from support.format import FORMAT_MODELS, vgf_dump_json, vgf_lib_tool


@pytest.fixture(params=FORMAT_MODELS)
def made(request, vgf_model):
    return vgf_model(request.param)


def test_json_equals_vgf_dump(made):
    assert to_json(read(made)) == vgf_dump_json(made)


def test_json_equals_vgf_dump_real(real_model):
    assert to_json(read(real_model)) == vgf_dump_json(real_model)


def test_byte_identical_round_trip(made):
    data = made.read_bytes()
    assert write(read(made)) == data
    assert write(read(data)) == data


def test_byte_identical_round_trip_real(real_model):
    assert write(read(real_model)) == real_model.read_bytes()


def test_models_updated_by_vgf_updater(real_model, tmp_path):
    """Arm's vgf_updater rewrites the 0.3 models as 0.5 with CONST00: another producer."""
    updated = tmp_path / "updated.vgf"
    subprocess.run([vgf_lib_tool("vgf_updater"), "-i", str(real_model), "-o", str(updated)], check=True)
    vgf = read(updated)
    assert vgf.header.version == (0, 5, 0) and not vgf.legacy_constants
    assert to_json(vgf) == vgf_dump_json(updated)
    assert write(vgf) == updated.read_bytes()
    old = read(real_model)
    assert [c.data.tobytes() for c in vgf.constants] == [c.data.tobytes() for c in old.constants]


def test_real_models_are_legacy_0_3(real_model):
    vgf = read(real_model)
    assert vgf.header.version == (0, 3, 0)
    assert vgf.legacy_constants
    assert len(vgf.constants) > 90


def test_segments_model_has_compute_segment(vgf_model):
    vgf = read(vgf_model("format_segments"))
    types = [s.type.name for s in vgf.sequence.segments]
    assert types == ["GRAPH", "COMPUTE", "GRAPH"]
    assert vgf.sequence.segments[1].dispatch_shape == [2, 3, 4]
    assert vgf.modules[1].code is None


def test_glsl_and_hlsl_modules(vgf_model):
    vgf = read(vgf_model("format_shaders"))
    glsl, hlsl = vgf.modules[1], vgf.modules[2]
    assert (glsl.code_type, hlsl.code_type) == (CodeType.GLSL, CodeType.HLSL)
    assert "gl_GlobalInvocationID" in glsl.code and "SV_DispatchThreadID" in hlsl.code
    assert [s.dispatch_shape for s in vgf.sequence.segments[1:3]] == [[8, 1, 1], [8, 1, 1]]
    buffers = [r for r in vgf.resources if r.descriptor_type == DescriptorType.STORAGE_BUFFER]
    assert buffers and any(r.alias_group_id != NO_INDEX for r in buffers)


def test_constants_across_segments(vgf_model):
    vgf = read(vgf_model("format_segment_consts"))
    graph = [s for s in vgf.sequence.segments if s.type == ModuleType.GRAPH]
    assert [s.constants for s in graph] == [[0], [1, 2]]
    assert [[(b.graph_constant_id, b.constant_table_index) for b in s.graph_constants()] for s in graph] == [
        [(0, 0)],
        [(1, 1), (2, 2)],
    ]
    assert (vgf.constant_array(1) == 7).all() and (vgf.constant_array(2) == -2.0).all()


def test_constants_are_zero_copy_views(vgf_model):
    path = vgf_model("format_const_dtypes")
    vgf = read(path)
    expected = {0: (np.int8, 3), 1: (np.int16, 300), 2: (np.int32, 70000), 3: (np.float16, 1.5), 5: (np.float32, 0.25)}
    for i, (dtype, value) in expected.items():
        array = vgf.constant_array(i)
        assert array.dtype == dtype and array.shape == (4, 16)
        assert (array == value).all()
        assert not array.flags.writeable
        assert np.shares_memory(array, vgf.constants[i].data)
    bf16 = vgf.constant_array(4)
    assert bf16.dtype.name == "bfloat16" and (bf16.astype(np.float32) == 2.5).all()


def test_real_constants_share_the_mapped_file(real_model):
    vgf = read(real_model)
    base = vgf.constants[0].data.base
    assert all(c.data.base is base for c in vgf.constants)
    assert base.size == real_model.stat().st_size
    w = vgf.constant_array(0)
    assert w.dtype == np.int8 and w.size == vgf.constants[0].data.size


def test_constant_array_refuses_what_it_cannot_view(vgf_model):
    vgf = read(vgf_model("format_const_dtypes"))
    vgf.resources[0].shape = [-1, 16]
    with pytest.raises(ValueError, match="unknown dimension"):
        vgf.constant_array(0)
    vgf.resources[0].shape = [5, 16]
    with pytest.raises(ValueError, match="needs 80"):
        vgf.constant_array(0)
    vgf.resources[5].strides = [4, 16]
    strided = vgf.constant_array(5)
    assert strided.shape == (4, 16) and strided.strides == (4, 16) and strided[0, 0] == 0.25
