"""The disassembler: readable text with ids, names, enum names, constants and TOSA operands."""

from __future__ import annotations

import numpy as np
import pytest

from pyvgf.errors import SpirvError
from pyvgf.spirv import decode, disassemble
from support.spirv import REAL_MODELS, model_words, spirv_words


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_header_names_enums_and_tosa_operands():
    words = model_words("spirv_int_clamp")
    text = disassemble(words)
    got = lines(text)
    assert got[:4] == ["; SPIR-V 1.5", f"; Generator: {int(words[2]):#010x}", f"; Bound: {int(words[3])}",
                       "; Schema: 0"]
    module = decode(words)
    tosa = next(i.result for i in module.instructions if i.opname == "OpExtInstImport")
    assert f'%{tosa} = OpExtInstImport "TOSA.001000.1"' in got
    assert "OpCapability TensorsARM" in got and "OpMemoryModel Logical Vulkan" in got
    assert any(line.startswith("OpDecorate %") and line.endswith(" DescriptorSet 0") for line in got)
    assert any(line.endswith('UniformConstant  ; "graph_partition_0_arg_0"') for line in got)
    add, cast, clamp = (i for i in module.instructions if i.opname == "OpExtInst")
    ref = {o.name: o.value for o in clamp.operands}
    assert (
        f"%{clamp.result} = OpExtInst %{clamp.result_type} %{tosa} CLAMP min_val=%{ref['min_val']} "
        f"max_val=%{ref['max_val']} nan_mode=%{ref['nan_mode']} input=%{cast.result}"
    ) in got
    int8 = next(i.result for i in module.instructions if i.opname == "OpTypeInt" and i.operands[0].value == 8)
    assert f"%{ref['min_val']} = OpConstant %{int8} 251" in got
    assert got[-1] == "OpGraphEndARM"
    assert len(got) == 4 + len(module.instructions)


def test_float_constants_print_as_numbers():
    got = lines(disassemble(model_words("spirv_fp16_bf16")))
    assert any(line.endswith("OpTypeFloat 16 BFloat16KHR") for line in got)
    bf16 = next(line.split(" = ")[0] for line in got if line.endswith("OpTypeFloat 16 BFloat16KHR"))
    assert f"OpConstant {bf16} -2.5" in " ".join(got)
    assert any(line.endswith(" 0.25") and "OpConstant " in line for line in got)  # the fp16 splat value


def test_multi_result_op():
    got = lines(disassemble(model_words("spirv_rfft")))
    assert any(" RFFT2D local_bound=%" in line and " input_real=%" in line for line in got)
    assert sum("OpCompositeExtract" in line for line in got) == 2


@pytest.mark.parametrize("name", sorted(REAL_MODELS))
def test_real_models(name):
    words = spirv_words(REAL_MODELS[name])
    text = disassemble(words)
    assert text.count("\n") == 4 + len(decode(words).instructions)
    assert " CONV2D pad=%" in text and " RESCALE scale32=%" in text


def test_malformed_modules_raise_spirv_error():
    words = model_words("spirv_int_clamp")
    with pytest.raises(SpirvError) as info:
        disassemble(np.concatenate([words, np.array([0x0003_0015, 1], np.uint32)]))
    assert info.value.word == len(words)


def test_inspect_spirv_prints_the_disassembly(vgf_model, capsys):
    from pyvgf.cli import main
    from pyvgf.format import read

    path = vgf_model("add_f32")
    assert main(["inspect", str(path), "--spirv", "0"]) == 0
    printed = capsys.readouterr().out
    assert printed == disassemble(read(path).modules[0].code) + "\n"
    assert "ADD" in printed and "OpGraphARM" in printed
    assert main(["inspect", str(path), "--spirv", "1"]) == 1
    assert "module index 1 out of range" in capsys.readouterr().err
