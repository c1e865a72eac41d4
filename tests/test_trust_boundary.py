"""Issue 15: malformed models are refused before any backend sees them, declared sizes are
checked against budgets, a file changed after load changes nothing, dropped models free their
device, and the CLI answers every error with one line."""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import pyvgf
from pyvgf import hal
from pyvgf.build import Graph
from pyvgf.errors import SpirvError, VGFError, VGFFormatError
from pyvgf.format import read, write
from pyvgf.spirv import decode, tables

BACKENDS = ["cpu", "vulkan"]
OPCODES = {name: code for code, (name, _) in tables.INSTRUCTIONS.items()}


def op(name: str, *operands: int) -> list[int]:
    return [(len(operands) + 1) << 16 | OPCODES[name], *operands]


def graph(shape=(2, 3), other=None) -> Graph:
    g = Graph()
    a, b = g.input("float32", shape), g.input("float32", other or shape)
    g.output(g.op("ADD", input1=a, input2=b, result=("float32", shape)))
    return g


def with_words(g: Graph, words) -> bytes:
    """The VGF of `g` with its module's SPIR-V replaced by `words`."""
    vgf = g.to_vgf()
    vgf.modules[0].code = np.asarray(words, dtype=np.uint32)
    return write(vgf)


def instruction(words, opname: str):
    return next(i for i in decode(words).instructions if i.opname == opname)


def add_globals(words, make) -> np.ndarray:
    """`words` with the instructions `make(first_new_id)` returns inserted before the graph
    entry point; `make` returns (instruction words, ids it used)."""
    words = [int(w) for w in words]
    new, used = make(words[3])
    at = instruction(words, "OpGraphEntryPointARM").offset
    words[3] += used
    return np.array(words[:at] + new + words[at:], dtype=np.uint32)


def tensor_decl(first: int, element_bits: int, shape: tuple[int, ...]) -> tuple[list[int], int, int]:
    """Declarations of an int type, the shape constants and a tensor type of `shape`:
    (words, tensor type id, next free id)."""
    i32, elem, array = first, first + 1, first + 2
    out = op("OpTypeInt", i32, 32, 0) + op("OpTypeInt", elem, element_bits, 0)
    nid = first + 3
    rank_id = nid
    out += op("OpConstant", i32, rank_id, len(shape))
    out += op("OpTypeArray", array, i32, rank_id)
    nid += 1
    dims = []
    for d in shape:
        out += op("OpConstant", i32, nid, d)
        dims.append(nid)
        nid += 1
    out += op("OpConstantComposite", array, nid, *dims)
    out += op("OpTypeTensorARM", nid + 1, elem, rank_id, nid)
    return out, nid + 1, nid + 2


def no_adapter(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("an adapter was requested for a model pyvgf should have refused")

    monkeypatch.setattr(hal, "request_adapter", refuse)


# -- item 1: validation before any backend -------------------------------------------------------


def _own_result():
    g = graph()
    words = [int(w) for w in g.to_spirv()]
    add = instruction(words, "OpExtInst")
    words[add.offset + 5] = add.result  # input1 := the ADD's own result
    return with_words(g, words), "not a value defined before it"


def _no_entry_point():
    g = graph()
    words = g.to_spirv()
    entry = instruction(words, "OpGraphEntryPointARM")
    count = int(words[entry.offset]) >> 16
    return with_words(g, np.delete(words, range(entry.offset, entry.offset + count))), "no graph entry point"


def _too_many_operands():
    g = graph()
    words = [int(w) for w in g.to_spirv()]
    add = instruction(words, "OpExtInst")
    count = words[add.offset] >> 16
    words[add.offset] += 1 << 16
    words.insert(add.offset + count, words[add.offset + 5])
    return with_words(g, words), "more than the 2 ADD takes"


def _mismatched_add():
    return graph((2, 3), (3, 2)).to_bytes(), "ADD"


def _graph_over_smaller_resources():
    return with_words(graph((2, 3)), graph((64, 64)).to_spirv()), "tensor<64x64 float32>"


def _bad_graph_constant_shape():
    g = Graph()
    a = g.input("float32", (1, 40))
    g.output(g.op("ADD", input1=a, input2=np.arange(40, dtype=np.float32).reshape(1, 40)))
    vgf = g.to_vgf()
    assert vgf.constants, "the builder should have made a graph constant"
    vgf.resources[vgf.constants[0].mrt_index].shape = [1, 4000]
    return write(vgf), "graph constant"


def _array_operand():
    """A RESCALE whose input_zp is an OpConstantNull of the array type tensor shapes use (the
    emulation layer took it and crashed: found by the fuzzing campaign, load-vulkan-7-1569)."""
    g = Graph()
    a = g.input("int32", (2, 3))
    g.output(g.op("RESCALE", input=a, multiplier=np.array([1 << 30], np.int32), shift=np.array([31], np.int8),
                  input_zp=np.zeros(1, np.int32), output_zp=np.array([-2], np.int8), scale32=True,
                  rounding_mode="SINGLE_ROUND", per_channel=False, input_unsigned=False, output_unsigned=False,
                  result=("int8", (2, 3))))
    words = [int(w) for w in g.to_spirv()]
    module = decode(words)
    null = next(i for i in module.instructions if i.opname == "OpConstantNull")
    ones = {c.result for c in module.instructions if c.opname == "OpConstant" and c.operands[0].value == 1}
    array = next(i for i in module.instructions if i.opname == "OpTypeArray" and i.operands[1].value in ones)
    words[null.offset + 1] = array.result
    return with_words(g, words), "OpTypeArray constant, not a tensor"


CASES = {
    "array-typed operand": _array_operand,
    "op reads its own result": _own_result,
    "no entry point": _no_entry_point,
    "too many operands": _too_many_operands,
    "ADD of [2,3] and [3,2]": _mismatched_add,
    "64x64 graph over 2x3 resources": _graph_over_smaller_resources,
    "graph constant over a wrong resource": _bad_graph_constant_shape,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_graphs_are_refused_before_any_adapter(case, backend, monkeypatch):
    data, match = CASES[case]()
    no_adapter(monkeypatch)
    with pytest.raises(VGFError, match=match) as info:
        pyvgf.load(data, backend=backend)
    assert "segment 0" in str(info.value)  # names the segment and module
    vgf = read(data)
    with pytest.raises(VGFError, match=match):  # a VGF object is checked the same way
        pyvgf.load(vgf, backend=backend)


def test_spirv_errors_name_the_instruction(monkeypatch):
    data, _ = _too_many_operands()
    no_adapter(monkeypatch)
    with pytest.raises(SpirvError, match=r"instruction \d+: OpExtInst TOSA.001000.1 ADD: .*\(word \d+\)") as info:
        pyvgf.load(data, backend="vulkan")
    assert info.value.word is not None and "graph_partition_0" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_tensors_within_the_device_limits(backend):
    """An intermediate of rank 9 is refused before any pipeline (the devices here take 8 at most)."""
    if backend == "vulkan":
        from support.vulkan import require_vulkan

        require_vulkan()
    g = Graph()
    a = g.input("float32", (1, 2))
    deep = g.op("RESHAPE", input1=a, shape=[1] * 8 + [2], result=("float32", (1,) * 8 + (2,)))
    g.output(g.op("RESHAPE", input1=deep, shape=[1, 2], result=("float32", (1, 2))))
    with pytest.raises(VGFError, match="beyond the device's tensor limits"):
        pyvgf.load(g.to_bytes(), backend=backend)


# -- item 3: budgets -----------------------------------------------------------------------------


def _null_of(shape, bits=8, replicate=False) -> bytes:
    g = graph()

    def make(first):
        decl, tensor, nid = tensor_decl(first, bits, shape)
        if replicate:
            decl += op("OpConstant", first + 1, nid, 7) + op("OpConstantCompositeReplicateEXT", tensor, nid + 1, nid)
            return decl, nid + 2 - first
        return decl + op("OpConstantNull", tensor, nid), nid + 1 - first

    return with_words(g, add_globals(g.to_spirv(), make))


@pytest.mark.parametrize("replicate", [False, True], ids=["null", "replicated"])
def test_unused_huge_broadcasts_stay_lazy(replicate):
    data = _null_of((1 << 15, 1 << 15), replicate=replicate)  # 1 GiB of int8, never made
    tracemalloc.start()
    try:
        model = pyvgf.load(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak
    a = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(model.run([a, a])[0], a + a)
    model.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tensor_over_the_memory_budget_is_refused(backend, monkeypatch):
    data = _null_of((1 << 20, 1 << 20))  # 2^40 elements: 1 TiB of int8, 4 TiB as int32
    no_adapter(monkeypatch)
    with pytest.raises(SpirvError, match="exceeds the memory budget"):
        pyvgf.load(data, backend=backend)
    monkeypatch.setenv("PYVGF_MEMORY_BUDGET", str(1 << 20))
    with pytest.raises(SpirvError, match="exceeds the memory budget"):
        pyvgf.load(_null_of((1024, 2048)), backend=backend)


def test_rank_above_the_limit_is_refused(monkeypatch):
    no_adapter(monkeypatch)
    with pytest.raises(SpirvError, match="rank 40 is outside"):
        pyvgf.load(_null_of((1,) * 40))


def test_composites_may_not_make_a_small_file_large(monkeypatch):
    """A composite of 64 references to one 2^24-element null would be 1 GiB once concrete."""
    g = graph()

    def make(first):
        row, row_type, nid = tensor_decl(first, 8, (1 << 24,))
        out = row + op("OpConstantNull", row_type, nid)
        null = nid
        more, big_type, nid = tensor_decl(nid + 1, 8, (64, 1 << 24))
        out += more + op("OpConstantComposite", big_type, nid, *[null] * 64)
        return out, nid + 1 - first

    no_adapter(monkeypatch)
    with pytest.raises(SpirvError, match="constant data concrete"):
        pyvgf.load(with_words(g, add_globals(g.to_spirv(), make)))


def test_resources_over_the_budget_are_refused(monkeypatch):
    vgf = graph((2, 3)).to_vgf()
    vgf.resources[0].shape = [1 << 30, 1 << 30]
    no_adapter(monkeypatch)
    with pytest.raises(VGFFormatError, match="memory budget"):
        pyvgf.load(vgf)


# -- item 2: the file may change after load ------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_file_rewritten_or_truncated_after_load_changes_nothing(backend, tmp_path):
    if backend == "vulkan":
        from support.vulkan import require_vulkan

        require_vulkan()
    g = Graph()
    a = g.input("float32", (1, 64))
    g.output(g.op("ADD", input1=a, input2=np.arange(64, dtype=np.float32).reshape(1, 64)))
    path = tmp_path / "model.vgf"
    path.write_bytes(g.to_bytes())
    x = np.ones((1, 64), np.float32)
    with pyvgf.load(path, backend=backend) as model:
        before = model.run([x])[0]
        with open(path, "r+b") as f:
            f.truncate(100)
        np.testing.assert_array_equal(model.run([x])[0], before)
        path.write_bytes(bytes(4096))
        np.testing.assert_array_equal(model.run([x])[0], before)


def test_a_vgf_object_changed_after_load_changes_nothing():
    g = Graph()
    a = g.input("float32", (1, 64))
    g.output(g.op("ADD", input1=a, input2=np.arange(64, dtype=np.float32).reshape(1, 64)))
    vgf = g.to_vgf()
    vgf.constants[0].data = vgf.constants[0].data.copy()  # a writable array the caller keeps
    x = np.ones((1, 64), np.float32)
    with pyvgf.load(vgf) as model:
        before = model.run([x])[0]
        vgf.constants[0].data[:] = 0
        vgf.resources[0].shape = [7]
        np.testing.assert_array_equal(model.run([x])[0], before)


# -- item 4: lifecycle ---------------------------------------------------------------------------

_CYCLES = r"""
import gc, sys
import numpy as np
import pyvgf

backend, cycles = sys.argv[1], int(sys.argv[2])
data = open("pyvgf/examples/tiny_convnet.vgf", "rb").read()

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

def cycle():
    model = pyvgf.load(data, backend=backend)  # never closed
    model.run([np.zeros(i.shape, i.dtype) for i in model.inputs])

marks = []
for i in range(cycles):
    cycle()
    if i + 1 in (cycles // 4, cycles):
        gc.collect()
        marks.append(resident())
print(marks[1] - marks[0])
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_dropped_models_free_their_device_objects(backend):
    if backend == "vulkan":
        from support.vulkan import require_vulkan

        require_vulkan()
    model = pyvgf.load(graph().to_bytes(), backend=backend)
    a = np.ones((2, 3), np.float32)
    model.run([a, a])
    device = model.device
    live = getattr(device, "live", None)
    del model
    gc.collect()
    assert device.destroyed and device.adapter.destroyed
    if live is not None:
        assert not {k: v for k, v in live.items() if v}, live


def test_dropped_hal_device_destroys_its_vulkan_objects():
    from support.vulkan import add_pipeline, require_vulkan

    require_vulkan()
    adapter = hal.request_adapter("vulkan")
    device = adapter.request_device()
    memory = device.allocate_memory(4096)
    tensor = device.create_tensor(100, (1, 4), memory=memory)
    tensor.create_view()
    device.create_buffer(256)
    device.queue.write_tensor(tensor, np.ones((1, 4), np.float32))
    pipeline, layout, set_layout = add_pipeline(device, read(graph((1, 4, 4, 8)).to_bytes()))
    device.queue.submit([device.create_command_encoder().finish()]).wait(30)
    live = device.live
    assert live["VkTensorARM"] == 1 and live["VkBuffer"] == 1 and live["VkPipeline"] == 1
    del tensor, pipeline, layout, set_layout
    del device, memory
    gc.collect()
    assert not {k: v for k, v in live.items() if v}, live
    adapter.destroy()


def _growth(backend: str, cycles: int) -> int:
    proc = subprocess.run([sys.executable, "-c", _CYCLES, backend, str(cycles)], capture_output=True, text=True,
                          timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1])


def test_200_unclosed_cpu_cycles_stay_flat():
    assert _growth("cpu", 200) < 8 << 20


@pytest.mark.slow
def test_200_unclosed_vulkan_cycles_stay_flat():
    from support.vulkan import require_vulkan

    require_vulkan()
    assert _growth("vulkan", 200) < 32 << 20


# -- item 5: the command line --------------------------------------------------------------------


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyvgf", *argv], capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("command", ["inspect", "run"])
def test_cli_errors_are_one_line(command, tmp_path):
    bad = tmp_path / "bad.vgf"
    bad.write_bytes(_too_many_operands()[0] if command == "run" else b"VGF" + bytes(200))
    extra = ["--random-inputs"] if command == "run" else []
    proc = _cli(command, str(bad), *extra)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    debug = _cli(command, str(bad), *extra, "--debug")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_cli_turns_memory_error_into_one_line(monkeypatch, capsys):
    from pyvgf import cli

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("pyvgf.format.read", exhausted)
    assert cli.main(["inspect", "x.vgf"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "pyvgf inspect: MemoryError"


def _compute_segments_vgf():
    """The converter-made model with a compute segment between two graphs; its compute module."""
    import fixtures  # tools/fixtures.py

    vgf = read(fixtures.model("runtime_segments"))
    (index,) = [i for i, m in enumerate(vgf.modules) if m.type.name == "COMPUTE"]
    return vgf, index


def _descriptor_set_512():
    vgf, index = _compute_segments_vgf()
    code = vgf.modules[index].code.copy()
    decoration = next(i for i in decode(code).instructions
                      if i.opname == "OpDecorate" and i.operands[1].value == 34)  # DescriptorSet
    code[decoration.offset + 3] = 512
    vgf.modules[index].code = code
    return write(vgf)


def _storage_buffer_over_a_tensor():
    from pyvgf.format.model import DescriptorType

    vgf, index = _compute_segments_vgf()
    segment = next(s for s in vgf.sequence.segments if s.module_index == index)
    vgf.resources[segment.set_infos[0].bindings[0].mrt_index].descriptor_type = DescriptorType.TENSOR_ARM
    return write(vgf)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("make", "match"), [
    (_descriptor_set_512, r"declares resource %\d+ at set 512 binding 0, which the segment does not bind"),
    (_storage_buffer_over_a_tensor, r"is a STORAGE_BUFFER, but resource \d+ bound there is a TENSOR_ARM"),
])
def test_a_compute_shader_must_match_its_segments_layout(make, match, backend, monkeypatch):
    """A compute module's resource variables against the segment's descriptor sets (lavapipe
    crashed on a shader declaring set 512: fuzz case load-vulkan-0-20497)."""
    data = make()
    no_adapter(monkeypatch)
    with pytest.raises(VGFFormatError, match=match) as info:
        pyvgf.load(data, backend=backend)
    assert "segment 1 ('compute_segment_0')" in str(info.value)


def _resource_shader(kind: str) -> np.ndarray:
    """A compute shader (SPIR-V 1.3, assembled word by word) declaring one resource at set 0
    binding 0: a tensor variable ("shaped": tensor<4xf32>; "unshaped": of no rank or shape), or
    a storage buffer whose struct holds a PhysicalStorageBuffer pointer to itself, declared
    ahead by OpTypeForwardPointer ("forward pointer", as GLSL's buffer_reference makes; with
    "undefined constant", also a uint[1] constant made of an OpUndef)."""
    (void, fn, f32, uint, c1, c4, array, shape, tensor, struct, fwd, pointer, var, main,
     label) = range(1, 16)

    def op(code: int, *operands: int) -> list[int]:
        return [code | (len(operands) + 1) << 16, *operands]

    physical = kind in ("forward pointer", "undefined constant")
    words = [0x07230203, 0x00010300, 0, 16, 0]
    words += op(17, 1) + op(17, 0x14E3 if physical else 0x104E)  # Shader, the resource's capability
    words += op(14, 0x14E4 if physical else 0, 1)  # OpMemoryModel (PhysicalStorageBuffer64 or Logical) GLSL450
    words += op(15, 5, main, int.from_bytes(b"main", "little"), 0)  # OpEntryPoint GLCompute
    words += op(16, main, 17, 1, 1, 1)  # OpExecutionMode LocalSize 1 1 1
    words += op(71, var, 34, 0) + op(71, var, 33, 0)  # DescriptorSet 0, Binding 0
    words += op(19, void) + op(33, fn, void) + op(22, f32, 32) + op(21, uint, 32, 0)
    if kind == "undefined constant":  # OpUndef among a constant array's constituents
        words[3] = 18
        words += op(43, uint, c1, 1) + op(28, array, uint, c1) + op(1, uint, 16) + op(44, array, 17, 16)
    if physical:
        words += op(39, fwd, 0x14E5)  # OpTypeForwardPointer PhysicalStorageBuffer
        words += op(30, struct, f32, fwd) + op(32, fwd, 0x14E5, struct)
        words += op(32, pointer, 12, struct) + op(59, pointer, var, 12)  # StorageBuffer
    else:
        words += op(43, uint, c1, 1) + op(43, uint, c4, 4) + op(28, array, uint, c1)
        words += op(44, array, shape, c4)  # OpConstantComposite [4]
        words += op(4163, tensor, f32, c1, shape) if kind == "shaped" else op(4163, tensor, f32)
        words += op(32, pointer, 0, tensor) + op(59, pointer, var, 0)  # UniformConstant
    words += op(54, void, main, 0, fn) + op(248, label) + op(253) + op(56)
    return np.array(words, np.uint32)


def _with_shader(kind: str):
    """The compute segments model with its shader replaced by _resource_shader(kind), which
    sees the storage buffer bound at set 0 binding 0."""
    vgf, index = _compute_segments_vgf()
    vgf.modules[index].code = _resource_shader(kind)
    return vgf


@pytest.mark.parametrize("kind", ["shaped", "unshaped"])
def test_a_compute_shaders_tensor_must_be_bound_to_a_tensor(kind):
    from pyvgf.runtime.check import check

    with pytest.raises(VGFFormatError, match=r"resource %13 at set 0 binding 0 is a TENSOR_ARM, but resource "
                                             r"\d+ bound there is a STORAGE_BUFFER"):
        check(_with_shader(kind))


@pytest.mark.parametrize("kind", ["forward pointer", "undefined constant"])
def test_a_compute_shader_may_declare_a_pointer_ahead_or_an_undefined_constant(kind):
    """OpTypeForwardPointer: a struct may hold the pointer before its OpTypePointer. OpUndef
    may be a constant composite's constituent (valid SPIR-V; pyvgf leaves its value open)."""
    from pyvgf.runtime.check import check

    vgf = _with_shader(kind)
    (index,) = [n for n, s in enumerate(vgf.sequence.segments) if s.type.name == "COMPUTE"]
    assert check(vgf).keys() >= {index - 1, index + 1}  # both graphs planned, the shader passed


def _local_size(x: int, y: int, z: int) -> bytes:
    vgf, index = _compute_segments_vgf()
    code = vgf.modules[index].code.copy()
    mode = next(i for i in decode(code).instructions if i.opname == "OpExecutionMode")
    code[mode.offset + 3 : mode.offset + 6] = (x, y, z)  # OpExecutionMode %main LocalSize x y z
    vgf.modules[index].code = code
    return write(vgf)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_workgroup_size_below_one_is_refused_at_load(backend, monkeypatch):
    """lavapipe crashed running a shader of LocalSize 1 4232 0 (fuzz case load-vulkan-0-53574)."""
    data = _local_size(1, 4232, 0)
    no_adapter(monkeypatch)
    with pytest.raises(SpirvError, match=r"workgroup size \(LocalSize\) \(1, 4232, 0\) has a dimension below 1"):
        pyvgf.load(data, backend=backend)


def test_a_workgroup_size_over_the_device_limits_is_refused():
    from pyvgf.errors import HalError
    from support.vulkan import require_vulkan

    require_vulkan()
    adapter = hal.request_adapter("vulkan")
    limit = adapter.limits.max_compute_work_group_size
    data = _local_size(1, limit[1] + 1, 1)
    with pytest.raises(HalError, match=r"workgroup size \(1, \d+, 1\) is outside the device's limits"):
        pyvgf.load(data, backend="vulkan")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_compute_pipeline_reads_the_module_decoded_at_load(backend, monkeypatch):
    """The check at load decodes the compute module, and its pipeline reads the workgroup size
    from that: nothing decodes the module's code again (the HAL decodes only what it is not
    given)."""
    import pyvgf.spirv
    from pyvgf.runtime.check import check
    from pyvgf.runtime.model import Model
    from pyvgf.spirv import Module

    if backend == "vulkan":
        from support.vulkan import require_vulkan

        require_vulkan()
    vgf, index = _compute_segments_vgf()
    (segment,) = [n for n, s in enumerate(vgf.sequence.segments) if s.module_index == index]
    plans = check(vgf)
    assert isinstance(plans[segment], Module)
    code = vgf.modules[index].code
    again = []
    real = pyvgf.spirv.decode
    monkeypatch.setattr(pyvgf.spirv, "decode", lambda words: again.append(np.array_equal(words, code)) or real(words))
    shaders = {vgf.modules[index].name: lambda resources, workgroups: None} if backend == "cpu" else None
    with Model(vgf, hal.request_adapter(backend).request_device(shaders=shaders), plans):
        pass
    assert not any(again)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_member_decoration_of_no_member_is_refused_at_load(backend, monkeypatch):
    """lavapipe aborted on OpMemberDecorate of member 4278190080 of a one-member struct (fuzz
    case load-vulkan-0-46061)."""
    vgf, index = _compute_segments_vgf()
    code = vgf.modules[index].code.copy()
    member = next(i for i in decode(code).instructions if i.opname == "OpMemberDecorate")
    code[member.offset + 2] = 0xFF000000
    vgf.modules[index].code = code
    no_adapter(monkeypatch)
    with pytest.raises(SpirvError, match=r"OpMemberDecorate: member 4278190080 of %\d+, a struct of 1 members"):
        pyvgf.load(write(vgf), backend=backend)
