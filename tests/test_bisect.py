"""pyvgf.testing.bisect and `pyvgf bisect`: a backend that gets one operator wrong (a function
of tests/support/debug_backends.py) is caught at that operator, on converter-made and real int8 models,
against the cpu and the vulkan backends."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import fixtures  # tools/fixtures.py
import pyvgf
from pyvgf.build import Graph
from pyvgf.cli import main
from pyvgf.testing import bisect, reference_run
from support.debug_backends import failing, perturbed, wrong_clamp
from support.graphs import build_fft
from support.vulkan import require_vulkan


def _first(model, op: str) -> int:
    with pyvgf.load(model) as m:
        return next(i for i, n in enumerate(m._schedule.segments[0].pipeline.plan.graph.nodes) if n.op == op)


def _f32_input(model, seed=0):
    with pyvgf.load(model) as m:
        return [np.random.default_rng(seed).standard_normal(m.inputs[0].shape).astype(np.float32)]


@pytest.mark.parametrize("op", ["CLAMP", "DEPTHWISE_CONV2D"])
def test_the_perturbed_operator_is_named(op, tmp_path):
    """interpreter_fuse_f32 (model-converter): fused CONV2D/CLAMP chains on the cpu backend."""
    model = fixtures.model("interpreter_fuse_f32")
    inputs = _f32_input(model)
    culprit = bisect(model, inputs, backends=("cpu", perturbed(op)), out=tmp_path)
    assert culprit is not None
    assert (culprit.segment, culprit.op_index, culprit.op) == (0, _first(model, op), op)
    assert culprit.backends == ("cpu", f"wrong_{op.lower()}")
    assert culprit.max_error > 0.4  # every value moved by x * 0.25 + 0.5
    assert culprit.shapes["result"].startswith("tensor<1x20x20x")
    assert f"op {culprit.op_index} {op}" in str(culprit)


def test_the_reproducer_replays_the_disagreement(tmp_path):
    model = fixtures.model("interpreter_fuse_f32")
    culprit = bisect(model, _f32_input(model), backends=("cpu", wrong_clamp), out=tmp_path)
    folder = culprit.reproducer
    assert folder.parent == tmp_path
    assert {p.name for p in folder.iterdir()} == {"op.vgf", "op.mlir", "input_0.npy", "output_0.cpu.npy",
                                                 "output_0.wrong_clamp.npy", "culprit.json"}
    assert "tosa.clamp" in (folder / "op.mlir").read_text()
    x = np.load(folder / "input_0.npy")
    with pyvgf.load(folder / "op.vgf") as one:
        (got,) = one.run([x])
    np.testing.assert_array_equal(got, np.load(folder / "output_0.cpu.npy"))
    np.testing.assert_array_equal(got, np.clip(x, 0, 6))  # fed the conv's value, clamped alone
    assert not np.array_equal(got, np.load(folder / "output_0.wrong_clamp.npy"))
    # the reproducer's MLIR is valid TOSA: Arm's reference model gives the cpu backend's result
    (want,) = reference_run((folder / "op.mlir").read_text(), [x])
    np.testing.assert_array_equal(got, want)
    facts = json.loads((folder / "culprit.json").read_text())
    assert facts["op"] == "CLAMP" and facts["attributes"] == {"min_val": 0.0, "max_val": 6.0, "nan_mode": "PROPAGATE"}


def test_agreeing_backends_give_none():
    model = fixtures.model("interpreter_fuse_i8")
    with pyvgf.load(model) as m:
        x = np.random.default_rng(0).integers(-128, 128, m.inputs[0].shape).astype(np.int8)

    def own(blob, inputs):
        with pyvgf.load(blob) as m:
            return m.run(inputs)

    assert bisect(model, [x], backends=("cpu", own)) is None


def test_a_real_int8_model(tmp_path):
    model = fixtures.REAL_MODELS["vww4"]
    with pyvgf.load(model) as m:
        x = np.random.default_rng(3).integers(-128, 128, m.inputs[0].shape).astype(np.int8)
    culprit = bisect(model, [x], backends=("cpu", perturbed("DEPTHWISE_CONV2D")), out=tmp_path)
    assert (culprit.op, culprit.op_index) == ("DEPTHWISE_CONV2D", _first(model, "DEPTHWISE_CONV2D"))
    assert culprit.attributes["acc_type"] == "INT32" and culprit.max_error == 97
    assert culprit.shapes["weight"].endswith("(constant)")
    assert culprit.shapes["result"].endswith("xi32>")


def test_bisect_cli_exit_status(tmp_path, capsys):
    model = str(fixtures.model("interpreter_fuse_f32"))
    assert main(["bisect", model, "--backends", "cpu", "cpu", "--random-inputs", "--seed", "2"]) == 0
    assert "cpu and cpu agree" in capsys.readouterr().out
    args = ["bisect", model, "--backends", "cpu", "support.debug_backends:wrong_clamp", "--random-inputs",
            "--out", str(tmp_path)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert f"segment 0 op {_first(model, 'CLAMP')} CLAMP" in out and f"reproducer: {tmp_path}" in out
    assert main(["bisect", model, "--backends", "cpu", "no_such_module:fn", "--random-inputs"]) == 1
    assert "backend 'no_such_module:fn'" in capsys.readouterr().err


def _small_graph() -> bytes:
    g = Graph()
    x = g.input("float32", (1, 4, 4, 2))
    y = g.op("CLAMP", input=g.op("ADD", input1=x, input2=x), min_val=-1.0, max_val=1.0)
    g.output(g.op("MUL", input1=g.op("ABS", input1=y), input2=x, shift=np.zeros(1, np.int8)))
    return g.to_bytes()


def test_with_the_vulkan_backend():
    require_vulkan()
    model = _small_graph()
    x = [np.random.default_rng(0).standard_normal((1, 4, 4, 2)).astype(np.float32)]
    assert bisect(model, x, backends=("cpu", "vulkan")) is None
    culprit = bisect(model, x, backends=("vulkan", perturbed("ABS")))
    assert (culprit.op_index, culprit.op, culprit.backends) == (2, "ABS", ("vulkan", "wrong_abs"))


def test_a_backend_that_fails_on_an_operator_is_caught_there(tmp_path):
    model = _small_graph()
    x = [np.random.default_rng(0).standard_normal((1, 4, 4, 2)).astype(np.float32)]
    culprit = bisect(model, x, backends=("cpu", failing("ABS")), out=tmp_path)
    assert (culprit.op_index, culprit.op) == (2, "ABS")
    assert culprit.mismatch == "no_abs raised RuntimeError: this driver does not take ABS"
    assert np.isnan(culprit.max_error)
    files = {p.name for p in culprit.reproducer.iterdir()}
    assert {"output_0.cpu.npy", "error.no_abs.txt", "op.vgf"} <= files


def test_the_function_survives_an_import_of_its_module():
    """`pyvgf.testing.bisect` stays the function after its module is imported (as `pyvgf bisect`
    and pyvgf.distributed import it): the module's name is not the function's."""
    code = ("import pyvgf.testing.bisection, pyvgf.testing as t; from pyvgf.testing import bisect; "
            "assert callable(bisect) and t.bisect is bisect, bisect")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("op", "index"), [("FFT2D", 0), ("RFFT2D", 2)])
def test_an_operator_with_two_results_runs_alone(op, index, tmp_path):
    """build_fft: FFT2D (one result read by an ADD) and RFFT2D (one result unused)."""
    model = build_fft().to_bytes()
    inputs = [np.random.default_rng(2).standard_normal((2, 4, 8)).astype(np.float32) for _ in range(2)]
    culprit = bisect(model, inputs, backends=("cpu", perturbed(op)), out=tmp_path)
    assert (culprit.op_index, culprit.op) == (index, op)
    shape = "2x4x8" if op == "FFT2D" else "2x4x5"
    assert culprit.shapes["result"] == f"tensor<{shape}xf32>, tensor<{shape}xf32>"
    assert {"output_0.cpu.npy", "output_1.cpu.npy"} <= {p.name for p in culprit.reproducer.iterdir()}
    assert not culprit.skipped
