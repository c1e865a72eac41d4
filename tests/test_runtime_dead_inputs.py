"""Inputs a converter dropped as dead keep their names (ExecuTorch's VGF files have them).

model-converter keeps every input bound, so the dead-input file is made from its output with
pyvgf.format: the unused middle input's binding slot removed, its name kept. With fewer slots
than names, a slot's binding is its model input's index, as ExecuTorch's VGF backend reads it.
"""

from __future__ import annotations

import numpy as np
import pytest

import pyvgf
from pyvgf import VGFFormatError
from pyvgf.format import read, write

A = np.arange(4, dtype=np.float32).reshape(1, 4)
C = np.full((1, 4), 10, np.float32)


@pytest.fixture(scope="module")
def dead_middle_input(vgf_model) -> bytes:
    vgf = read(vgf_model("runtime_unused_input"))
    assert [s.binding for s in vgf.sequence.inputs] == [0, 1, 2]
    del vgf.sequence.inputs[1]
    return write(vgf)


def test_converter_file_keeps_the_unused_input_live(vgf_model):
    with pyvgf.load(vgf_model("runtime_unused_input")) as model:
        assert [i.live for i in model.inputs] == [True, True, True]
        (out,) = model.run([A, np.zeros((1, 4), np.float32), C])
    np.testing.assert_array_equal(out, A + C)


def test_dead_input_keeps_its_name_and_position(dead_middle_input):
    with pyvgf.load(dead_middle_input) as model:
        assert [(i.name, i.live) for i in model.inputs] == [("input_0", True), ("input_1", False), ("input_2", True)]
        (by_name,) = model.run({"input_0": A, "input_2": C})
        (by_position,) = model.run([A, None, C])
    np.testing.assert_array_equal(by_name, A + C)
    np.testing.assert_array_equal(by_position, A + C)


def test_a_slot_naming_no_input_is_a_format_error(vgf_model):
    vgf = read(vgf_model("runtime_unused_input"))
    del vgf.sequence.inputs[0]
    vgf.sequence.inputs[0].binding = 7
    with pytest.raises(VGFFormatError, match="input binding 7 names no model input of 3"):
        pyvgf.load(write(vgf))


def test_slots_out_of_input_order(vgf_model):
    """Slots listed in another order than the inputs they bind still take the right arrays
    (runtime_multi_io returns a - b and a + b; its middle input is dead)."""
    vgf = read(vgf_model("runtime_multi_io"))
    del vgf.sequence.inputs[1]
    vgf.sequence.inputs.reverse()
    assert [s.binding for s in vgf.sequence.inputs] == [2, 0]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 10, np.float32)
    with pyvgf.load(write(vgf)) as model:
        for inputs in ([a, None, b], {"input_0": a, "input_2": b}):
            diff, total = model.run(inputs)
            np.testing.assert_array_equal(diff, a - b)
            np.testing.assert_array_equal(total, a + b)


def test_inspect_summary_shows_the_dead_input_as_unused(dead_middle_input, tmp_path, capsys):
    from pyvgf.cli import main

    path = tmp_path / "dead.vgf"
    path.write_bytes(dead_middle_input)
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[lines.index("inputs:") + 2] == "  input_1  unused by the model"
