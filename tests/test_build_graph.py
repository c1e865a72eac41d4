"""pyvgf.build: built graphs against what model-converter makes of the same graph."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import pyvgf
from pyvgf.build import Graph
from pyvgf.build._grammar import opcode
from pyvgf.errors import TosaError
from pyvgf.format.model import Category
from pyvgf.spirv.graph import decode_graph
from pyvgf.testing import reference_run, tolerance
from support.build import canonical_graph, dump_spirv, instructions, vgf_dump_json, vgfpy_encode
from support.graphs import GRAPHS, build_conv_clamp, build_fft


def _resources(dump: dict) -> list[tuple]:
    return sorted(
        (r["category"], tuple(r["shape"]), r["vk_format"], r["vk_descriptor_type"]) for r in dump["resources"]
    )


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_built_file_is_what_vgf_dump_reads_from_model_converter(name, vgf_model):
    built = vgf_dump_json(vgfpy_encode(GRAPHS[name]().to_vgf()))
    theirs = vgf_dump_json(vgf_model(name))
    assert built["header"] == theirs["header"] == {"major": 0, "minor": 5, "patch": 0}
    assert _resources(built) == _resources(theirs)
    assert len(built["constants"]) == len(theirs["constants"])
    seq, ref = built["model_sequence"], theirs["model_sequence"]
    for side in ("inputs", "outputs"):
        assert [s["name"] for s in seq[side]] == [s["name"] for s in ref[side]]
        assert [s["binding"] for s in seq[side]] == [s["binding"] for s in ref[side]]
    (segment,), (their_segment,) = seq["segments"], ref["segments"]
    for key in ("type", "name", "module_index", "dispatch_shape", "push_constant_ranges"):
        assert segment[key] == their_segment[key]
    assert [len(d["bindings"]) for d in segment["descriptor_set_infos"]] == [
        len(d["bindings"]) for d in their_segment["descriptor_set_infos"]
    ]
    assert len(segment["constant_bindings"]) == len(their_segment["constant_bindings"])
    assert built["modules"] == theirs["modules"]


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_spirv_has_the_instructions_model_converter_emits(name, vgf_model):
    built = Counter(op for op, _ in instructions(GRAPHS[name]().to_spirv()))
    theirs = Counter(op for op, _ in instructions(np.frombuffer(dump_spirv(vgf_model(name)), "<u4")))
    for op in ("OpExtInst", "OpGraphInputARM", "OpGraphSetOutputARM", "OpVariable", "OpDecorate",
               "OpGraphConstantARM", "OpGraphARM", "OpGraphEntryPointARM", "OpGraphEndARM",
               "OpTypeGraphARM", "OpMemoryModel", "OpExtInstImport"):
        assert built[opcode(op)] == theirs[opcode(op)], op
    theirs_words = np.frombuffer(dump_spirv(vgf_model(name)), "<u4")
    assert {w[0] for op, w in instructions(GRAPHS[name]().to_spirv()) if op == opcode("OpCapability")} <= {
        w[0] for op, w in instructions(theirs_words) if op == opcode("OpCapability")
    }


def test_spirv_header_and_bound():
    words = build_conv_clamp().to_spirv()
    assert words[0] == 0x07230203 and words[1] == 0x00010500
    defined = [w[1] for op, w in instructions(words) if op in (opcode("OpConstant"), opcode("OpVariable"))]
    assert max(defined) < words[3]


def test_large_constants_go_to_the_constant_section():
    vgf = build_conv_clamp().to_vgf()
    (const,) = vgf.constants
    resource = vgf.resources[const.mrt_index]
    assert resource.category is Category.CONSTANT and resource.shape == [8, 3, 3, 4]
    assert const.data.tobytes() == np.full((8, 3, 3, 4), 0.5, np.float32).tobytes()
    (binding,) = vgf.sequence.segments[0].constant_bindings
    graph_constants = [w for op, w in instructions(vgf.modules[0].code) if op == opcode("OpGraphConstantARM")]
    assert [w[2] for w in graph_constants] == [binding.graph_constant_id]


def test_sixteen_elements_are_inlined_seventeen_are_not():
    for size, expected in ((16, 0), (17, 1)):
        g = Graph()
        x = g.input("float32", (size,))
        g.output(g.op("ADD", input1=x, input2=np.arange(size, dtype=np.float32)))
        assert len(g.to_vgf().constants) == expected


def test_constant_is_a_copy_of_the_callers_array():
    data = np.ones(32, np.float32)
    g = Graph()
    x = g.input("float32", (32,))
    g.output(g.op("ADD", input1=x, input2=data))
    data[:] = 5
    assert (g.to_vgf().constants[0].data.view(np.float32) == 1).all()
    assert data.flags.writeable


def test_the_mlir_of_a_built_graph_is_accepted_by_model_converter(tmp_path):
    import fixtures

    g = build_conv_clamp()
    theirs = vgf_dump_json(fixtures.vgf_from_mlir(g.to_mlir()))
    assert _resources(theirs) == _resources(vgf_dump_json(vgfpy_encode(g.to_vgf())))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda g, x: g.op("NOPE", input1=x), "not a TOSA.001000.1 operator"),
        (lambda g, x: g.op("ADD", input1=x), "operand 'input2' is missing"),
        (lambda g, x: g.op("ADD", input1=x, input2=x, bogus=1), "no operand 'bogus'"),
        (lambda g, x: g.op("CLAMP", input=x, min_val=0, max_val=1, nan_mode="SOMETIMES"), "is not one of"),
        (lambda g, x: g.op("ADD", input1=x, input2=Graph().input("float32", (2, 3))), "another graph"),
        (lambda g, x: g.op("ADD", input1=x, input2=np.zeros((4, 3), np.float32)), "do not broadcast"),
        (lambda g, x: g.op("TRANSPOSE", input1=x, perms=[1, 0]), "give the result type"),
        (lambda g, x: g.op("TRANSPOSE", input1=x, perms="ab", result=("float32", (3, 2))), "list of ints"),
        (lambda g, x: g.output(g.constant(np.zeros(3, np.float32))), "constant cannot be a graph output"),
        (lambda g, x: g.input("complex64", (2,)), "not supported"),
        (lambda g, x: g.input("float32", (0, 2)), "positive dimensions"),
        (lambda g, x: g.op("FFT2D", input_real=x, input_imag=x, inverse=False), r"rank 3 \[N, H, W\]"),
        (lambda g, x: g.op("RFFT2D", input_real=x, result=[("float32", (2, 2))]), "has 2 results, 1 given"),
        (lambda g, x: g.op("RFFT2D", input_real=x, result="float32"), "2 pairs"),
        (lambda g, x: g.op("CLAMP", input=g.input("int8", (2,)), min_val=-200, max_val=1), "not a i8 value"),
    ],
)
def test_bad_graphs_raise_tosa_errors(build, message):
    g = Graph()
    x = g.input("float32", (2, 3))
    with pytest.raises(TosaError, match=message):
        build(g, x)


def test_a_graph_without_outputs_is_refused():
    g = Graph()
    g.input("float32", (2,))
    with pytest.raises(TosaError, match="no outputs"):
        g.to_spirv()


def test_ops_with_two_results_are_the_graph_model_converter_makes(vgf_model):
    built, theirs = build_fft().to_bytes(), vgf_model("build_fft")
    assert canonical_graph(built) == canonical_graph(theirs)
    struct, extract = opcode("OpTypeStruct"), opcode("OpCompositeExtract")
    ours = [(op, w[2:]) for op, w in instructions(build_fft().to_spirv()) if op == extract]
    arm = [(op, w[2:]) for op, w in instructions(np.frombuffer(dump_spirv(theirs), "<u4")) if op == extract]
    assert [w[-1] for _, w in ours] == [w[-1] for _, w in arm] == [0, 1, 0, 1]  # every result, used or not
    assert sum(op == struct for op, _ in instructions(build_fft().to_spirv())) == 2


def test_ops_with_two_results_decode_and_run_as_the_reference_model_runs_them():
    g = build_fft()
    decoded = decode_graph(g.to_spirv())
    fft, add, rfft = decoded.nodes
    assert (fft.op, add.op, rfft.op) == ("FFT2D", "ADD", "RFFT2D")
    assert [t.shape for t in fft.result_type] == [(2, 4, 8)] * 2
    assert [t.shape for t in rfft.result_type] == [(2, 4, 5)] * 2
    assert add.operands["input1"].node == fft.id and add.operands["input1"].element == 1
    assert [(r.node, r.element) for r in decoded.results] == [(fft.id, 0), (add.id, None), (rfft.id, 1)]
    rng = np.random.default_rng(4)
    inputs = [rng.uniform(-4, 4, v.shape).astype(np.float32) for v in g.inputs]
    want = reference_run(g.to_mlir(), inputs)
    got = pyvgf.load(g.to_bytes(), backend="cpu").run(inputs)
    assert [a.shape for a in got] == [(2, 4, 8), (2, 4, 8), (2, 4, 5)]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tolerance(np.float32), atol=1e-5)


def test_fft_results_default_to_float32_of_the_tosa_shapes():
    g = Graph()
    x = g.input("float32", (1, 2, 8))
    re, im = g.op("RFFT2D", input_real=x)
    assert (re.shape, im.shape, re.dtype) == ((1, 2, 5), (1, 2, 5), np.float32)
    assert (re.node, re.element, im.element) == (im.node, 0, 1)
    given = g.op("FFT2D", input_real=x, input_imag=x, inverse=False, result=[("float32", (1, 2, 8))] * 2)
    assert [v.shape for v in given] == [(1, 2, 8)] * 2
