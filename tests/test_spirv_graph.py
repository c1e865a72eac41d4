"""The graph IR: interfaces, graph constants, evaluated SPIR-V constants, nodes, malformed graphs."""

from __future__ import annotations

import json
import subprocess

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvgf.errors import SpirvError
from pyvgf.format import Format, numpy_dtype
from pyvgf.spirv import Const, GraphConstant, Input, Result, decode, decode_graph, disassemble
from pyvgf.types import TensorType
from support.spirv import REAL_MODELS, SPIRV_MODELS, fixtures, inst, model_words, spirv_words, splice

OP_NOP, OP_EXT_INST_IMPORT, OP_EXT_INST, OP_TYPE_BOOL, OP_CONSTANT = 0, 11, 12, 20, 43
OP_NO_LINE, OP_SOURCE_CONTINUED = 317, 2
OP_CONSTANT_COMPOSITE, OP_DECORATE, OP_TYPE_TENSOR = 44, 71, 4163
OP_GRAPH_INPUT, OP_GRAPH_SET_OUTPUT, OP_GRAPH_END, OP_REPLICATE = 4184, 4185, 4186, 4461

F32 = np.dtype(np.float32)


def vgf_json(vgf) -> dict:
    out = subprocess.run([fixtures.tool("vgf_dump"), "-i", str(vgf)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def resource_type(doc: dict, mrt: int) -> TensorType:
    r = doc["resources"][mrt]
    return TensorType(numpy_dtype(Format[r["vk_format"].removeprefix("VK_FORMAT_")]), tuple(r["shape"]))


def graph_of(name: str):
    return decode_graph(model_words(name))


@pytest.mark.parametrize("vgf", [*SPIRV_MODELS, *REAL_MODELS], ids=str)
def test_interface_and_constants_match_vgf_dump(vgf):
    path = REAL_MODELS[vgf] if vgf in REAL_MODELS else fixtures.model(vgf)
    doc = vgf_json(path)
    graph = decode_graph(spirv_words(path))
    segment = doc["model_sequence"]["segments"][0]
    mrt_of = {b["binding"]: b["mrt_index"] for s in segment["descriptor_set_infos"] for b in s["bindings"]}
    for port in graph.inputs + graph.outputs:
        assert port.descriptor_set == 0
        assert port.type == resource_type(doc, mrt_of[port.binding])
    assert [p.binding for p in graph.inputs] == [s["binding"] for s in segment["inputs"]]
    assert [p.binding for p in graph.outputs] == [s["binding"] for s in segment["outputs"]]
    bindings = {b["graph_constant_id"]: b["constant_table_index"] for b in segment["constant_bindings"]}
    assert set(graph.constants) == set(bindings)
    for cid, t in graph.constants.items():
        assert t == resource_type(doc, doc["constants"][bindings[cid]]["mrt_index"])


@pytest.mark.parametrize("name", sorted(REAL_MODELS))
def test_real_models(name):
    graph = decode_graph(spirv_words(REAL_MODELS[name]))
    module = decode(spirv_words(REAL_MODELS[name]))
    ext = [i for i in module.instructions if i.opname == "OpExtInst"]
    assert [n.id for n in graph.nodes] == [i.result for i in ext]
    assert len(graph.nodes) == {"mobilenet_v2": 199, "vww4": 168}[name]
    assert graph.inputs[0].type.dtype == np.int8 and graph.outputs[0].type.dtype == np.int8
    ops = {n.op for n in graph.nodes}
    assert {"CONV2D", "DEPTHWISE_CONV2D", "RESCALE", "ADD", "AVG_POOL2D", "RESHAPE"} <= ops
    for node in graph.nodes:
        if node.op == "RESCALE":
            mult = node.operands["multiplier"]
            assert (isinstance(mult, (Const, GraphConstant)) and mult.value.dtype == np.int32
                    if isinstance(mult, Const) else True)
            assert isinstance(node.operands["scale32"], Const) and isinstance(node.operands["scale32"].value, bool)
        if node.op == "CONV2D":
            assert isinstance(node.operands["acc_type"].value, int)
            assert isinstance(node.operands["input_zp"], Const)
            assert node.operands["input_zp"].value.shape == (1,)


def test_conv_add_constants_and_operands():
    g = graph_of("spirv_conv_add")
    assert g.name == "graph_partition_0"
    assert [p.type.shape for p in g.inputs] == [(1, 4, 4, 8), (1, 4, 4, 2)]
    assert [p.binding for p in g.inputs + g.outputs] == [0, 1, 2, 3]
    assert g.constants == {0: TensorType(F32, (1, 4, 4, 8))}
    conv, add1, add2 = g.nodes
    assert (conv.op, add1.op, add2.op) == ("CONV2D", "ADD", "ADD")
    ops = conv.operands
    assert list(ops) == ["pad", "stride", "dilation", "acc_type", "local_bound", "input", "weight", "bias", "input_zp",
                         "weight_zp"]
    weight = ops["weight"].value
    assert weight.dtype == F32 and weight.shape == (2, 1, 1, 8)
    assert weight[0, 0, 0].tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert weight[1, 0, 0].tolist() == [0.5, -1.0, 1.5, -2.0, 0.25, 0.0, 1.0, -0.5]
    assert ops["bias"].value.tolist() == [0.5, -0.5]
    assert ops["input_zp"].value.tolist() == [0.0] and ops["input_zp"].value.dtype == F32  # OpConstantNull
    assert ops["pad"].value.tolist() == [0, 0, 0, 0] and ops["pad"].value.dtype == np.int32
    assert ops["stride"].value.tolist() == [1, 1]
    assert ops["acc_type"].value == 3 and ops["local_bound"].value is False
    assert ops["input"] == Input(ops["input"].id, 0, g.inputs[0].type)
    assert add1.operands["input1"] == Result(conv.id, conv.id, conv.result_type)
    assert add1.operands["input2"].index == 1
    assert add2.operands["input2"] == GraphConstant(add2.operands["input2"].id, 0, TensorType(F32, (1, 4, 4, 8)))
    assert g.results == [Result(add1.id, add1.id, add1.result_type), Result(add2.id, add2.id, add2.result_type)]


def test_constants_are_read_only():
    weight = graph_of("spirv_conv_add").nodes[0].operands["weight"].value
    with pytest.raises(ValueError):
        weight[0, 0, 0, 0] = 9


@pytest.mark.fast
@pytest.mark.parametrize("name", ["spirv_int8_conv_rescale", "interpreter_fuse_rescales"])
def test_constants_cannot_change_through_any_name(name):
    """No writeable array lies under a constant, so the cpu backend prepares what it derives
    from one (a RESCALE's factors, a weight's layout) once, at the first run, not every run."""
    from pyvgf.types import immutable

    arrays = [op.value for node in graph_of(name).nodes for op in node.operands.values()
              if isinstance(op, Const) and isinstance(op.value, np.ndarray)]
    assert arrays and all(immutable(a) for a in arrays)


def test_replicated_splat_and_negative_scalar():
    add, cast, clamp = graph_of("spirv_int_clamp").nodes
    splat = add.operands["input2"].value
    assert splat.dtype == np.int32 and splat.shape == (1, 2, 2, 4) and (splat == 3).all()
    assert clamp.operands["min_val"].value == -5  # OpConstant 251 of a signless 8-bit int
    assert clamp.operands["max_val"].value == 100
    assert cast.result_type == TensorType(np.dtype(np.int8), (1, 2, 2, 4))


def test_fp16_bf16_types_and_constants():
    g = graph_of("spirv_fp16_bf16")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert [p.type.dtype for p in g.inputs] == [np.dtype(np.float16), bf16]
    assert [p.type.dtype for p in g.outputs] == [F32, bf16, np.dtype(np.float16)]
    nodes = {n.op + str(i): n for i, n in enumerate(g.nodes)}
    k = nodes["ADD3"].operands["input2"].value
    assert k.dtype == bf16 and k.shape == (1, 3, 5)
    assert k[0].astype(np.float32).tolist() == [[0.5, 1, 1.5, 2, 2.5], [-0.5, -1, -1.5, -2, -2.5], [0.125, 3, 8, -4, 0]]
    mul = nodes["MUL4"].operands
    assert mul["input2"].value.dtype == np.float16 and (mul["input2"].value == 0.25).all()
    assert mul["shift"].value.dtype == np.int8 and mul["shift"].value.tolist() == [0]


def test_int8_conv_rescale():
    g = graph_of("spirv_int8_conv_rescale")
    conv, rescale = g.nodes
    assert g.constants == {0: TensorType(np.dtype(np.int8), (4, 3, 3, 3))}
    assert conv.operands["weight"] == GraphConstant(conv.operands["weight"].id, 0, g.constants[0])
    assert conv.operands["bias"].value.tolist() == [100, -200, 300, 0]
    assert conv.operands["input_zp"].value.tolist() == [-3] and conv.operands["input_zp"].value.dtype == np.int8
    assert conv.operands["pad"].value.tolist() == [1, 1, 1, 1]
    r = rescale.operands
    assert (r["scale32"].value, r["per_channel"].value, r["input_unsigned"].value) == (True, True, False)
    assert r["multiplier"].value.tolist() == [1073741824, 1518500250, 1276901417, 2147483647]
    assert r["shift"].value.tolist() == [38, 39, 37, 40]
    assert r["output_zp"].value.tolist() == [5]
    assert r["input"].node == conv.id
    assert [res.node for res in g.results] == [rescale.id, conv.id]  # one result feeds a node and an output


def test_layout_variadic_bool_and_many_outputs():
    g = graph_of("spirv_layout")
    assert len(g.inputs) == 3 and len(g.outputs) == 4
    concat = g.nodes[0]
    assert concat.op == "CONCAT" and concat.operands["axis"].value == 1
    assert [o.index for o in concat.operands["input1"]] == [0, 1, 2]
    greater = next(n for n in g.nodes if n.op == "GREATER")
    assert greater.result_type.dtype == np.bool_
    reshape = next(n for n in g.nodes if n.op == "RESHAPE")
    assert reshape.operands["shape"].value.tolist() == [5, 4]


def test_two_result_op():
    g = graph_of("spirv_rfft")
    (fft,) = g.nodes
    t = TensorType(F32, (1, 4, 5))
    assert fft.op == "RFFT2D" and fft.result_type == (t, t)
    assert [(r.node, r.element, r.type) for r in g.results] == [(fft.id, 0, t), (fft.id, 1, t)]


def test_int48_and_fp8():
    g = graph_of("spirv_int48_fp8")
    assert g.inputs[1].type.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert g.outputs[0].type.dtype == np.int64  # TOSA int48 is an i64 tensor in SPIR-V
    conv = g.nodes[0]
    assert conv.operands["bias"].value.tolist() == [7, -9]
    assert conv.operands["weight"].value[1, 0, 0].tolist() == [3, -4]


def test_entry_point_by_name():
    words = model_words("spirv_int_clamp")
    assert decode_graph(words, "graph_partition_0").name == "graph_partition_0"
    with pytest.raises(SpirvError, match=r"no graph entry point 'main' \(the module has \['graph_partition_0'\]\)"):
        decode_graph(words, "main")


# -- malformed graphs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def words() -> np.ndarray:
    return model_words("spirv_int_clamp")


def instruction(words, opname, nth=0):
    return [i for i in decode(words).instructions if i.opname == opname][nth]


def graph_error(words, word: int, match: str) -> SpirvError:
    with pytest.raises(SpirvError, match=match) as info:
        decode_graph(words)
    assert info.value.word == word
    return info.value


def test_cyclic_constant(words):
    comp = instruction(words, "OpConstantComposite")
    bad = words.copy()
    bad[comp.offset + 3] = comp.result  # first constituent: itself
    graph_error(bad, comp.offset, f"constituent %{comp.result} is not a constant defined before it")


def test_constant_used_before_definition(words):
    comp = instruction(words, "OpConstantComposite")
    later = instruction(words, "OpConstant", -1)
    bad = words.copy()
    bad[comp.offset + 3] = later.result
    graph_error(bad, comp.offset, "not a constant defined before it")


def test_node_refers_to_itself(words):
    add = instruction(words, "OpExtInst")
    bad = words.copy()
    bad[add.offset + 5] = add.result
    graph_error(bad, add.offset, f"input1 %{add.result} is not a value defined before it")


def test_node_refers_forward(words):
    add, cast, clamp = (instruction(words, "OpExtInst", i) for i in range(3))
    bad = words.copy()
    bad[add.offset + 5] = clamp.result
    graph_error(bad, add.offset, "not a value defined before it")


def test_output_never_set(words):
    out = instruction(words, "OpGraphSetOutputARM")
    head = instruction(words, "OpGraphARM")
    graph_error(splice(words, out.offset, 3, []), head.offset, r"outputs \[0\] are never set")


def test_output_set_twice(words):
    out = instruction(words, "OpGraphSetOutputARM")
    twice = splice(words, out.offset, 0, list(map(int, words[out.offset : out.offset + 3])))
    graph_error(twice, out.offset + 3, "output 0 is set twice")


def test_graph_without_end(words):
    head = instruction(words, "OpGraphARM")
    graph_error(words[:-1], head.offset, "has no OpGraphEndARM")


def test_unsupported_instruction_in_graph(words):
    end = instruction(words, "OpGraphEndARM")
    graph_error(splice(words, end.offset, 0, inst(OP_SOURCE_CONTINUED, 0x78)), end.offset,
                "OpSourceContinued is not supported in a graph")


def test_opnoline_ends_the_location_of_later_nodes(words):
    """OpLine/OpNoLine are debug information: a graph body may hold them (nodes take their
    location from them); an OpNoLine alone changes nothing else."""
    end = instruction(words, "OpGraphEndARM")
    graph = decode_graph(splice(words, end.offset, 0, inst(OP_NO_LINE)))
    assert [(n.op, n.location) for n in graph.nodes] == [(n.op, None) for n in decode_graph(words).nodes]


def test_op_nop_is_dropped_anywhere(words):
    """OpNop has no meaning (SPIR-V: it can be removed): the decoder drops it, even in a graph."""
    end = instruction(words, "OpGraphEndARM")
    graph = decode_graph(splice(words, end.offset, 0, inst(OP_NOP) * 3))
    assert [n.op for n in graph.nodes] == [n.op for n in decode_graph(words).nodes]


def test_missing_binding(words):
    dec = instruction(words, "OpDecorate")  # Binding of the input variable
    var = instruction(words, "OpVariable")
    bad = splice(words, dec.offset, 4, [])
    graph_error(bad, var.offset - 4, "has no Binding decoration")


def test_tensor_dimension_zero(words):
    tensor = instruction(words, "OpTypeTensorARM")
    shape = next(i for i in decode(words).instructions if i.result == tensor.operands[2].value)
    const = next(i for i in decode(words).instructions if i.result == shape.operands[0].value)
    bad = words.copy()
    bad[const.offset + 3] = 0
    graph_error(bad, tensor.offset, "dimension below 1")


def test_tensor_rank_differs_from_shape(words):
    tensor = instruction(words, "OpTypeTensorARM")
    shape = next(i for i in decode(words).instructions if i.result == tensor.operands[2].value)
    bad = words.copy()
    bad[tensor.offset + 3] = shape.operands[0].value  # Rank := the constant 1
    graph_error(bad, tensor.offset, "is not 1 integers")


def test_constant_with_wrong_word_count(words):
    const = instruction(words, "OpConstant")
    bad = splice(words, const.offset, 4,
                 [5 << 16 | OP_CONSTANT, *map(int, words[const.offset + 1 : const.offset + 4]), 0])
    graph_error(bad, const.offset, "a 32-bit value takes 1 words, found 2")


def test_composite_with_too_few_constituents(words):
    comp = instruction(words, "OpConstantComposite")
    count = len(comp.operands) + 3
    bad = splice(words, comp.offset, count, [(count - 1) << 16 | OP_CONSTANT_COMPOSITE,
                                             *map(int, words[comp.offset + 1 : comp.offset + count - 1])])
    graph_error(bad, comp.offset, "3 constituents for shape")


def test_replicate_of_the_wrong_type(words):
    rep = instruction(words, "OpConstantCompositeReplicateEXT")  # an int32 splat
    i8_tensor = instruction(words, "OpTypeTensorARM", 1)  # the int8 output type
    bad = words.copy()
    bad[rep.offset + 1] = i8_tensor.result
    graph_error(bad, rep.offset, "is int32, not int8")


def test_input_index_out_of_range(words):
    gin = instruction(words, "OpGraphInputARM")
    three = next(i for i in decode(words).instructions if i.opname == "OpConstant" and i.operands[0].value == 3)
    bad = words.copy()
    bad[gin.offset + 3] = three.result
    graph_error(bad, gin.offset, r"input index 3 outside 0..0")


def test_node_result_not_a_tensor(words):
    add = instruction(words, "OpExtInst")
    boolean = instruction(words, "OpTypeInt")
    bad = words.copy()
    bad[add.offset + 1] = boolean.result
    graph_error(bad, add.offset, "result type is scalar int32, not a shaped tensor")


def test_other_instruction_set(words):
    imp = instruction(words, "OpExtInstImport")
    from support.spirv import string_words

    name = string_words("GLSL.std.450")
    bad = splice(words, imp.offset, 2 + len(string_words("TOSA.001000.1")),
                 [(2 + len(name)) << 16 | OP_EXT_INST_IMPORT, imp.result, *name])
    add = instruction(bad, "OpExtInst")
    graph_error(bad, add.offset, "instruction set GLSL.std.450 is not supported")


def mutations():
    word = st.integers(0, 0xFFFFFFFF)
    small = st.integers(0, 300)
    return st.lists(
        st.one_of(
            st.tuples(st.just("set"), small, word),
            st.tuples(st.just("set"), small, small),
            st.tuples(st.just("cut"), small, st.integers(1, 8)),
            st.tuples(st.just("insert"), small, word),
        ),
        min_size=1,
        max_size=4,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["spirv_int_clamp", "spirv_conv_add", "spirv_rfft"]), edits=mutations())
def test_mutated_modules_raise_only_spirv_errors(name, edits):
    words = list(map(int, model_words(name)))
    for kind, at, value in edits:
        at %= len(words) + 1
        if kind == "set" and at < len(words):
            words[at] = value
        elif kind == "cut":
            del words[at : at + value]
        elif kind == "insert":
            words.insert(at, value)
    data = np.array(words, dtype=np.uint32)
    for fn in (decode_graph, disassemble):
        try:
            fn(data)
        except SpirvError as exc:
            assert exc.word is None or 0 <= exc.word <= len(words)


def test_several_entry_points_must_be_named(words):
    from support.spirv import string_words

    entry = instruction(words, "OpGraphEntryPointARM")
    name = string_words("second")
    interface = [op.value for op in entry.operands[2:]]
    second = [(2 + len(name) + len(interface)) << 16 | 4182, entry.num(0), *name, *interface]
    both = splice(words, entry.offset, 0, second)
    with pytest.raises(SpirvError, match=r"graph entry points \['second', 'graph_partition_0'\]: name one"):
        decode_graph(both)
    assert decode_graph(both, "second").name == "second"
    assert list(map(repr, decode_graph(both, "graph_partition_0").nodes)) == list(map(repr, decode_graph(words).nodes))


def test_interface_count_differs_from_the_graph_type(words):
    entry = instruction(words, "OpGraphEntryPointARM")
    count = int(words[entry.offset]) >> 16
    bad = splice(words, entry.offset, count,
                 [(count - 1) << 16 | 4182, *map(int, words[entry.offset + 1 : entry.offset + count - 1])])
    graph_error(bad, entry.offset, "1 interface variables for a graph of 1 inputs and 1 outputs")


def test_interface_variable_of_another_type(words):
    entry = instruction(words, "OpGraphEntryPointARM")
    first, second = entry.num(2), entry.num(3)  # the input and output variables (int32 / int8)
    bad = words.copy()
    bad[entry.offset + (int(words[entry.offset]) >> 16) - 1] = first  # the output slot: the input variable
    var = next(i for i in decode(words).instructions if i.result == first)
    graph_error(bad, var.offset,
                f"OpVariable %{first}: type pointer does not point to the graph's tensor type tensor<1x2x2x4 int8>")
    assert second != first
