"""`pyvgf inspect`: summary, vgf_dump-equal JSON, SPIR-V and constant dumps."""

from __future__ import annotations

import json
import subprocess

import ml_dtypes
import numpy as np

from pyvgf.cli import main
from support.format import vgf_dump_json, vgf_lib_tool


def test_inspect_json_equals_vgf_dump(vgf_model, capsys):
    path = vgf_model("format_segments")
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == vgf_dump_json(path)


def test_inspect_all_lists_everything_after_the_summary(vgf_model, capsys):
    assert main(["inspect", str(vgf_model("format_const_dtypes")), "--all"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VGF ") and out.index("TOSA op") < out.index("constants (6, 960 bytes)")
    assert "constants (6, 960 bytes)" in out
    assert "bfloat16" in out and "int16" in out


def test_dump_spirv_and_constant_match_vgf_dump(vgf_model, tmp_path):
    path = vgf_model("format_const_dtypes")
    dump = vgf_lib_tool("vgf_dump")
    subprocess.run([dump, "-i", str(path), "--dump-spirv", "0", "-o", str(tmp_path / "ref.spv")], check=True)
    assert main(["inspect", str(path), "--dump-spirv", "0", "-o", str(tmp_path / "our.spv")]) == 0
    assert (tmp_path / "our.spv").read_bytes() == (tmp_path / "ref.spv").read_bytes()
    for i in (0, 3):
        subprocess.run([dump, "-i", str(path), "--dump-constant", str(i), "-o", str(tmp_path / "ref.npy")], check=True)
        assert main(["inspect", str(path), "--dump-constant", str(i), "-o", str(tmp_path / "our.npy")]) == 0
        ref, ours = np.load(tmp_path / "ref.npy"), np.load(tmp_path / "our.npy")
        assert ours.dtype == ref.dtype and np.array_equal(ours, ref)
        subprocess.run([dump, "-i", str(path), "--dump-constant", str(i), "-o", str(tmp_path / "ref.bin")], check=True)
        assert main(["inspect", str(path), "--dump-constant", str(i), "-o", str(tmp_path / "our.bin")]) == 0
        assert (tmp_path / "our.bin").read_bytes() == (tmp_path / "ref.bin").read_bytes()


def test_inspect_bad_file_fails_cleanly(tmp_path, capsys):
    bad = tmp_path / "bad.vgf"
    bad.write_bytes(b"not a vgf" * 20)
    assert main(["inspect", str(bad)]) == 1
    assert "bad magic" in capsys.readouterr().err


def test_dump_index_out_of_range(vgf_model, tmp_path, capsys):
    assert main(["inspect", str(vgf_model("format_one_op")), "--dump-constant", "0", "-o", str(tmp_path / "x")]) == 1
    assert "out of range" in capsys.readouterr().err


def test_dump_bfloat16_constant_keeps_its_bits(vgf_model, tmp_path, capsys):
    path = vgf_model("format_const_dtypes")
    assert main(["inspect", str(path), "--dump-constant", "4", "-o", str(tmp_path / "bf.npy")]) == 0
    assert "bit pattern as uint16" in capsys.readouterr().err
    bits = np.load(tmp_path / "bf.npy")
    assert bits.dtype == np.uint16 and (bits.view(ml_dtypes.bfloat16) == 2.5).all()


def _section(out: str, title: str) -> list[str]:
    """The indented lines under `title:` in inspect's summary."""
    lines = out.splitlines()
    start = lines.index(f"{title}:") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return [line.split() for line in lines[start:end]]


def test_inspect_summary_counts_each_tosa_op_as_the_graph_decoder_does(real_model, capsys):
    from collections import Counter

    from pyvgf.format import read
    from pyvgf.spirv import decode_graph

    assert main(["inspect", str(real_model)]) == 0
    out = capsys.readouterr().out
    counted = {op: int(n) for op, n in _section(out, "TOSA ops")}
    vgf = read(real_model)
    assert counted == Counter(node.op for m in vgf.modules for node in decode_graph(m.code).nodes)
    assert f"{sum(counted.values())} TOSA op(s)" in out.splitlines()[0]
    assert "(--all adds" in out and "resources (" not in out


def test_inspect_summary_shows_the_inputs_and_outputs_model_inputs_has(capsys):
    from importlib import resources

    import pyvgf

    example = str(resources.files("pyvgf") / "examples" / "tiny_convnet.vgf")
    assert main(["inspect", example]) == 0
    out = capsys.readouterr().out
    with pyvgf.load(example) as model:
        for title, infos in (("inputs", model.inputs), ("outputs", model.outputs)):
            expected = [[i.name, str(i.dtype), "x".join(map(str, i.shape))] for i in infos]
            assert _section(out, title) == expected
    assert _section(out, "segments") == [["[0]", "GRAPH", "graph_segment_0", "module", "0", "3", "TOSA", "op(s)"]]



def test_inspect_summary_of_an_unreadable_graph_module_says_why(tmp_path, capsys):
    import dataclasses
    from importlib import resources

    from pyvgf.format import read, write

    vgf = read(resources.files("pyvgf") / "examples" / "tiny_convnet.vgf")
    bad = np.array([0x07230203, 0x10000, 0, 5, 0, 99], dtype=np.uint32)  # header, then a 0-word instruction
    path = tmp_path / "bad_module.vgf"
    path.write_bytes(write(dataclasses.replace(vgf, modules=[dataclasses.replace(vgf.modules[0], code=bad)])))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "module 0  SPIR-V not readable: instruction word count 0" in out
    assert _section(out, "inputs")[0] == ["input_0", "float32", "1x8x8x3"]
