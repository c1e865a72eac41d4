"""Generated and modified object models: write -> read is lossless, and Arm's vgf_dump reads
what pyvgf writes and reports the same JSON as pyvgf's own dump."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvgf.format import (
    NO_INDEX,
    VGF,
    BindingSlot,
    Category,
    CodeType,
    Constant,
    ConstantBinding,
    DescriptorSetInfo,
    DescriptorType,
    Format,
    Header,
    ModelSequence,
    Module,
    ModuleType,
    PushConstantRange,
    Resource,
    SamplerConfig,
    Segment,
    read,
    write,
)
from pyvgf.format.dump import to_json
from support.format import same_model, vgf_dump_json

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
u32 = st.integers(0, 2**32 - 2)
small = st.integers(0, 64)


@st.composite
def modules(draw) -> Module:
    type_ = draw(st.sampled_from(ModuleType))
    code_type = draw(st.sampled_from([CodeType.SPIRV, CodeType.GLSL, CodeType.HLSL]))
    if draw(st.booleans()):
        code = None
    elif code_type == CodeType.SPIRV:
        code = np.array(draw(st.lists(st.integers(0, 2**32 - 1), max_size=12)), dtype=np.uint32)
    else:
        code = draw(st.text(alphabet="void main(){}; \n", max_size=40))
    return Module(type_, draw(names), draw(names), code_type, code)


@st.composite
def resources(draw) -> Resource:
    category = draw(st.sampled_from(Category))
    constant = category == Category.CONSTANT
    descriptor = DescriptorType.NONE if constant else draw(
        st.sampled_from([DescriptorType.TENSOR_ARM, DescriptorType.STORAGE_BUFFER, DescriptorType.SAMPLED_IMAGE])
    )
    shape = draw(st.lists(st.integers(-1, 9), max_size=4))
    return Resource(
        descriptor_type=int(descriptor),
        format=int(draw(st.sampled_from(Format))),
        category=category,
        shape=shape,
        strides=draw(st.sampled_from([[], [draw(st.integers(0, 99)) for _ in shape]])),
        sampler=None if constant or draw(st.booleans()) else SamplerConfig(*draw(st.tuples(*[st.integers(0, 4)] * 5))),
        alias_group_id=NO_INDEX if constant or draw(st.booleans()) else draw(st.integers(0, 9)),
    )


def slots(draw, n_res: int, unique: bool = False) -> list[BindingSlot]:
    bindings = draw(st.lists(small, max_size=4, unique=unique))
    return [BindingSlot(b, draw(st.integers(0, n_res - 1))) for b in bindings]


@st.composite
def vgfs(draw) -> VGF:
    version = draw(st.sampled_from([(0, 3, 0), (0, 4, 0), (0, 4, 2), (0, 4, 3), (0, 5, 0), (0, 5, 7)]))
    mods = draw(st.lists(modules(), min_size=1, max_size=3))
    res = draw(st.lists(resources(), min_size=1, max_size=6))
    constants = [
        Constant(
            i,
            np.frombuffer(draw(st.binary(min_size=1, max_size=24)), dtype=np.uint8),
            draw(st.integers(-1, 3)),
        )
        for i, r in enumerate(res)
        if r.category == Category.CONSTANT and draw(st.booleans())
    ]
    n_res, n_const = len(res), len(constants)
    segments = []
    for _ in range(draw(st.integers(0, 3))):
        module_index = draw(st.integers(0, len(mods) - 1))
        n_sets = draw(st.integers(0, 2))
        explicit = draw(st.booleans())
        set_infos = [
            DescriptorSetInfo(slots(draw, n_res, unique=True), set_index=(i + 3 if explicit else NO_INDEX))
            for i in range(n_sets)
        ]
        picked = draw(st.lists(st.integers(0, n_const - 1), max_size=3)) if n_const else []
        bindings = None
        if version >= (0, 5, 0):
            ids = draw(st.lists(st.integers(0, 99), min_size=len(picked), max_size=len(picked), unique=True))
            bindings = [ConstantBinding(g, c) for g, c in zip(ids, picked)]
        segments.append(
            Segment(
                type=mods[module_index].type,
                name=draw(names),
                module_index=module_index,
                set_infos=set_infos,
                inputs=slots(draw, n_res),
                outputs=slots(draw, n_res),
                constants=picked,
                dispatch_shape=draw(st.lists(small, min_size=3, max_size=3)),
                push_constant_ranges=[PushConstantRange(*draw(st.lists(small, min_size=3, max_size=3)))
                                      for _ in range(draw(st.integers(0, 2)))],
                constant_bindings=bindings,
            )
        )
    inputs, outputs = slots(draw, n_res), slots(draw, n_res)
    sequence = ModelSequence(
        segments=segments,
        inputs=inputs,
        outputs=outputs,
        input_names=[draw(names) for _ in inputs],
        output_names=[draw(names) for _ in outputs],
    )
    header = Header(version=version, vk_header_version=draw(st.integers(0, 65535)), legacy_magic=draw(st.booleans()))
    return VGF(header, mods, sequence, res, constants, legacy_constants=draw(st.booleans()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vgfs())
def test_write_read_is_lossless(vgf):
    data = write(vgf)
    back = read(data)
    assert same_model(back, vgf)
    assert write(back) == data


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(vgfs())
def test_vgf_dump_reads_what_we_write(tmp_path, vgf):
    path = tmp_path / "gen.vgf"
    path.write_bytes(write(vgf))
    assert vgf_dump_json(path) == to_json(vgf)


def test_modified_model_reads_back_in_vgf_dump(vgf_model, tmp_path):
    vgf = read(vgf_model("format_multi_io"))
    vgf.sequence.input_names = ["x", "y", "zeta"]
    vgf.sequence.output_names[0] = "out_abs"
    first_in = vgf.sequence.inputs[0].mrt_index
    vgf.resources[first_in].shape = [7]
    weights = np.arange(6, dtype=np.float32)
    vgf.resources.append(Resource(int(DescriptorType.NONE), int(Format.R32_SFLOAT), Category.CONSTANT, [2, 3]))
    vgf.constants.append(Constant(len(vgf.resources) - 1, weights.view(np.uint8)))
    segment = vgf.sequence.segments[0]
    segment.constants.append(len(vgf.constants) - 1)
    segment.constant_bindings.append(ConstantBinding(41, len(vgf.constants) - 1))
    path = tmp_path / "modified.vgf"
    path.write_bytes(write(vgf))
    ref = vgf_dump_json(path)
    assert ref == to_json(vgf)
    assert [x["name"] for x in ref["model_sequence"]["inputs"]] == ["x", "y", "zeta"]
    assert ref["model_sequence"]["outputs"][0]["name"] == "out_abs"
    assert ref["resources"][first_in]["shape"] == [7]
    assert ref["resources"][-1] == {
        "index": len(vgf.resources) - 1, "category": "CONSTANT", "vk_descriptor_type": "none",
        "vk_format": "VK_FORMAT_R32_SFLOAT", "shape": [2, 3], "stride": [],
    }
    assert ref["model_sequence"]["segments"][0]["constant_bindings"][-1] == {
        "graph_constant_id": 41, "constant_table_index": len(vgf.constants) - 1,
    }
    back = read(path)
    assert np.array_equal(back.constant_array(len(back.constants) - 1), weights.reshape(2, 3))


def test_inputs_are_not_modified_by_write(vgf_model):
    vgf = read(vgf_model("format_segments"))
    before = to_json(vgf)
    write(vgf)
    assert to_json(vgf) == before
