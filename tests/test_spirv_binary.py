"""The SPIR-V binary decoder: header, word counts, strings, ids, enums, and its error reports."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pyvgf.errors import SpirvError
from pyvgf.spirv import decode, tables
from pyvgf.spirv.binary import MAX_BOUND
from support.spirv import REAL_MODELS, ROOT, find, inst, model_words, offsets, spirv_words, splice, string_words

OP_NAME, OP_EXT_INST_IMPORT, OP_EXT_INST, OP_TYPE_INT, OP_CONSTANT = 5, 11, 12, 21, 43
OP_CAPABILITY, OP_DECORATE, OP_MEMORY_MODEL = 17, 71, 14


@pytest.fixture(scope="module")
def add() -> np.ndarray:
    return model_words("spirv_int_clamp")


def raises_at(words, word: int, match: str) -> SpirvError:
    with pytest.raises(SpirvError, match=match) as info:
        decode(words)
    assert info.value.word == word
    assert f"(word {word})" in str(info.value)
    return info.value


def test_tables_are_generated_from_the_installed_grammars():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_spirv_tables.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert tables.INSTRUCTIONS[4163][0] == "OpTypeTensorARM"
    assert tables.TOSA_INSTRUCTIONS[65][0] == "RESCALE" and len(tables.TOSA_INSTRUCTIONS) == 66


def test_header_and_instructions(add):
    m = decode(add)
    assert m.version == (1, 5)
    assert m.generator >> 16 == 0x16  # the MLIR SPIR-V serializer
    assert m.bound == int(add[3])
    assert list(m.ext_inst_sets.values()) == ["TOSA.001000.1"]
    assert [i.offset for i in m.instructions] == [pos for pos, _, _ in offsets(add)]
    names = {i.operands[0].value: i.operands[1].value for i in m.instructions if i.opname == "OpName"}
    assert sorted(names.values()) == ["graph_partition_0_arg_0", "graph_partition_0_res_0"]
    clamp = [i for i in m.instructions if i.opname == "OpExtInst"][-1]
    assert [(o.name, o.kind) for o in clamp.operands] == [
        ("Set", "IdRef"),
        ("Instruction", "LiteralExtInstInteger"),
        ("min_val", "IdRef"),
        ("max_val", "IdRef"),
        ("nan_mode", "IdRef"),
        ("input", "IdRef"),
    ]
    decorate = next(i for i in m.instructions if i.opname == "OpDecorate")
    assert [o.kind for o in decorate.operands] == ["IdRef", "Decoration", "LiteralInteger"]


def test_bytes_words_and_byte_order_decode_alike(add):
    as_words = decode(add)
    assert decode(add.astype("<u4").tobytes()) == as_words
    assert decode(add.astype(">u4").tobytes()) == as_words
    assert decode([int(w) for w in add]) == as_words
    assert decode(add.view(np.int32)) == as_words


def test_the_callers_words_are_not_modified(add):
    words = add.copy()
    decode(words)
    assert np.array_equal(words, add)


@pytest.mark.parametrize("name", sorted(REAL_MODELS))
def test_real_models_decode(name):
    m = decode(spirv_words(REAL_MODELS[name]))
    assert m.version == (1, 5)
    assert sum(i.opname == "OpGraphConstantARM" for i in m.instructions) == {"mobilenet_v2": 115, "vww4": 95}[name]


def test_context_dependent_numbers_take_the_type_width():
    m = decode(model_words("spirv_int48_fp8"))
    consts = [i.operands[0] for i in m.instructions if i.opname == "OpConstant"]
    assert (2**64 - 9, 2) in [(o.value, o.words) for o in consts]  # the int48 (i64) bias -9


# -- malformed modules -----------------------------------------------------------------------------


def test_truncated_header():
    raises_at(np.array([tables.MAGIC, 0x10500], np.uint32), 2, "truncated header")


def test_bad_magic(add):
    bad = add.copy()
    bad[0] = 0x12345678
    raises_at(bad, 0, "bad magic")


@pytest.mark.parametrize("version", [0x00020000, 0x00010700, 0x01010000, 0x00010001])
def test_unsupported_version(add, version):
    bad = add.copy()
    bad[1] = version
    raises_at(bad, 1, "version")


@pytest.mark.parametrize("bound", [0, MAX_BOUND + 1, 0xFFFFFFFF])
def test_bound_out_of_range(add, bound):
    bad = add.copy()
    bad[3] = bound
    raises_at(bad, 3, "id bound")


def test_bytes_not_whole_words(add):
    with pytest.raises(SpirvError, match="whole 32-bit words"):
        decode(add.tobytes()[:-1])


@pytest.mark.parametrize("data",
                         [np.zeros((2, 5), np.uint32), np.zeros(8, np.uint16), np.zeros(8, np.float32), [1, -1], ["a"]])
def test_words_of_the_wrong_kind(data):
    with pytest.raises(SpirvError):
        decode(data)


def test_zero_word_count(add):
    pos, _ = find(add, OP_MEMORY_MODEL)
    bad = add.copy()
    bad[pos] = OP_MEMORY_MODEL
    raises_at(bad, pos, "word count 0")


def test_truncated_last_instruction(add):
    last = offsets(add)[-2]  # OpGraphSetOutputARM, 3 words; cut its last word (and OpGraphEndARM)
    raises_at(add[: last[0] + 2], last[0], "declares 3 words, only 2 remain")


def test_word_count_past_the_end(add):
    pos, count = find(add, OP_CONSTANT)
    bad = add.copy()
    bad[pos] = (len(add) - pos + 1) << 16 | OP_CONSTANT
    raises_at(bad, pos, "only")


def test_unknown_opcode(add):
    pos, count = find(add, OP_MEMORY_MODEL)
    bad = add.copy()
    bad[pos] = count << 16 | 0xFFF0
    raises_at(bad, pos, "unknown opcode 65520")


def test_missing_operand(add):
    pos, count = find(add, OP_TYPE_INT)
    bad = splice(add, pos, count, inst(OP_TYPE_INT, int(add[pos + 1]), 8))  # no Signedness
    raises_at(bad, pos, "ends before operand Signedness")


def test_extra_words(add):
    pos, count = find(add, OP_MEMORY_MODEL)
    bad = splice(add, pos, count, inst(OP_MEMORY_MODEL, 0, 3, 7))
    raises_at(bad, pos, "1 words after its last operand")


def test_string_without_nul(add):
    pos, count = find(add, OP_NAME)
    bad = splice(add, pos, count, inst(OP_NAME, int(add[pos + 1]), int.from_bytes(b"abcd", "little")))
    raises_at(bad, pos, "no terminating NUL")


def test_string_not_utf8(add):
    pos, count = find(add, OP_NAME)
    bad = splice(add, pos, count, inst(OP_NAME, int(add[pos + 1]), int.from_bytes(b"\xff\xfe\0\0", "little")))
    raises_at(bad, pos, "not UTF-8")


def test_string_decodes_utf8(add):
    pos, count = find(add, OP_NAME)
    target = int(add[pos + 1])
    m = decode(splice(add, pos, count, inst(OP_NAME, target, *string_words("größe_✓"))))
    assert any(i.opname == "OpName" and i.operands[1].value == "größe_✓" for i in m.instructions)


@pytest.mark.parametrize("bad_id", [0, "bound", 0xFFFFFFFF])
def test_id_out_of_bound(add, bad_id):
    pos, count = find(add, OP_NAME)
    bad = add.copy()
    bad[pos + 1] = int(add[3]) if bad_id == "bound" else bad_id
    raises_at(bad, pos, "outside 1..")


def test_result_id_out_of_bound(add):
    pos, _ = find(add, OP_TYPE_INT)
    bad = add.copy()
    bad[pos + 1] = add[3]
    raises_at(bad, pos, "IdResult id .* is outside")


def test_id_defined_twice(add):
    first, _ = find(add, OP_TYPE_INT, 0)
    second, _ = find(add, OP_TYPE_INT, 1)
    bad = add.copy()
    bad[second + 1] = add[first + 1]
    raises_at(bad, second, "defined twice")


def test_unknown_enum_value(add):
    pos, _ = find(add, OP_CAPABILITY)
    bad = add.copy()
    bad[pos + 1] = 99999
    raises_at(bad, pos, "99999 is not a Capability value")


def test_enum_parameters_are_decoded(add):
    pos, count = find(add, OP_DECORATE)
    target = int(add[pos + 1])
    # ArrayStride 6 takes one literal; Block 2 takes none (then the literal is an extra word)
    assert decode(splice(add, pos, count, inst(OP_DECORATE, target, 6, 16)))
    raises_at(splice(add, pos, count, inst(OP_DECORATE, target, 2, 16)), pos, "after its last operand")


def test_unknown_tosa_instruction(add):
    pos, count = find(add, OP_EXT_INST)
    bad = add.copy()
    bad[pos + 4] = 66
    raises_at(bad, pos, "unknown TOSA.001000.1 instruction 66")


def test_missing_tosa_operand(add):
    pos, count = find(add, OP_EXT_INST)  # ADD input1 input2
    bad = splice(add, pos, count, [(count - 1) << 16 | OP_EXT_INST, *map(int, add[pos + 1 : pos + count - 1])])
    raises_at(bad, pos, "ADD: instruction ends before operand input2")


def embedded_modules(lib) -> list[np.ndarray]:
    """The SPIR-V modules compiled into a shared library: each magic word, up to the first word
    that cannot start an instruction."""
    data = lib.read_bytes()
    magic = tables.MAGIC.to_bytes(4, "little")
    out, pos = [], data.find(magic)
    while pos >= 0:
        words = np.frombuffer(data, dtype="<u4", count=(len(data) - pos) // 4, offset=pos)
        end = 5
        while end < len(words) and words[end] >> 16 and (int(words[end]) & 0xFFFF) in tables.INSTRUCTIONS:
            end += int(words[end]) >> 16
        if words[1] in (0x10000, 0x10300, 0x10500, 0x10600) and end <= len(words):
            out.append(words[:end])
        pos = data.find(magic, pos + 4)
    return out


def emulation_layer_shaders() -> list[np.ndarray]:
    emulation_layer = pytest.importorskip("emulation_layer")
    from pathlib import Path

    lib = Path(emulation_layer.__file__).parent / "deploy" / "lib" / "libVkLayer_Graph.so"
    if not lib.exists():
        pytest.skip(f"{lib} is missing")
    return embedded_modules(lib)


def test_compute_shaders_of_the_emulation_layer():
    """Real glslang output (tensor compute shaders): decoded, disassembled, and not graphs."""
    from pyvgf.spirv import decode_graph, disassemble

    shaders = emulation_layer_shaders()
    assert len(shaders) > 300
    for words in shaders[:: len(shaders) // 12]:
        m = decode(words)
        assert any(i.opname == "OpEntryPoint" for i in m.instructions)
        assert disassemble(words).count("\n") == 4 + len(m.instructions)
        with pytest.raises(SpirvError, match="no graph entry point"):
            decode_graph(words)


@pytest.mark.slow
def test_every_compute_shader_of_the_emulation_layer():
    for words in emulation_layer_shaders():
        decode(words)
