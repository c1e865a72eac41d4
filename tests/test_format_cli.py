"""`pyvgf inspect`: summary, vgf_dump-equal JSON, SPIR-V and constant dumps."""

from __future__ import annotations

import json
import subprocess

import ml_dtypes
import numpy as np

from conftest_format import vgf_dump_json, vgf_lib_tool
from pyvgf.cli import main


def test_inspect_json_equals_vgf_dump(vgf_model, capsys):
    path = vgf_model("format_segments")
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == vgf_dump_json(path)


def test_inspect_summary(vgf_model, capsys):
    assert main(["inspect", str(vgf_model("format_const_dtypes"))]) == 0
    out = capsys.readouterr().out
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
