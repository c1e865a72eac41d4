"""`pyvgf run`: inputs from .npy files or random, outputs to .npy, a summary on stdout."""

from __future__ import annotations

import numpy as np

import fixtures  # tools/fixtures.py
from pyvgf.cli import main


def _inputs(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, np.float32)
    paths = []
    for name, x in (("a", a), ("unused", np.zeros(4, np.int32)), ("b", b)):
        np.save(tmp_path / f"{name}.npy", x)
        paths.append(str(tmp_path / f"{name}.npy"))
    return a, b, paths


def test_run_writes_outputs_and_prints_a_summary(tmp_path, capsys):
    a, b, paths = _inputs(tmp_path)
    model = str(fixtures.model("runtime_multi_io"))
    args = ["run", model, "--output-dir", str(tmp_path / "out")]
    assert main(args + [arg for p in paths for arg in ("--input", p)]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"), a - b)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_1.npy"), a + b)
    out = capsys.readouterr().out
    assert "3 input(s), 2 output(s)" in out
    assert "out output_1: float32[2, 3]  min 0.5  max 5.5" in out


def test_inputs_by_name(tmp_path):
    a, b, paths = _inputs(tmp_path)
    named = [f"input_0={paths[0]}", f"input_1={paths[1]}", f"input_2={paths[2]}"]
    args = ["run", str(fixtures.model("runtime_multi_io")), "--output-dir", str(tmp_path)]
    assert main(args + [arg for n in named[::-1] for arg in ("--input", n)]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "output_1.npy"), a + b)


def test_random_inputs_are_seeded(tmp_path, capsys):
    model = str(fixtures.model("runtime_int32"))
    for run in ("one", "two"):
        assert main(["run", model, "--random-inputs", "--seed", "3", "--output-dir", str(tmp_path / run)]) == 0
    for name in ("output_0.npy", "output_1.npy"):
        np.testing.assert_array_equal(np.load(tmp_path / "one" / name), np.load(tmp_path / "two" / name))
    assert "in  input_0: int32[8]" in capsys.readouterr().out


def test_wrong_input_is_reported_not_raised(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros(3, np.float64))
    assert main(["run", str(fixtures.model("runtime_int32")), "--input", str(tmp_path / "x.npy"),
                 "--input", str(tmp_path / "x.npy")]) == 1
    assert "pyvgf run: input 'input_0': expected shape [8], got [3]" in capsys.readouterr().err


def test_example_runs(capsys):
    assert main(["run", "--example"]) == 0
    out = capsys.readouterr().out
    assert "example tiny_convnet.vgf on cpu: 2 input(s), 1 output(s)" in out
    assert "out output_0: float32[1, 8, 8, 4]" in out


def test_unknown_backend_is_reported(capsys):
    assert main(["run", "--example", "--backend", "metal"]) == 1
    assert "pyvgf run: unknown backend 'metal'" in capsys.readouterr().err
