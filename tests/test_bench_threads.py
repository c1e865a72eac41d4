"""tools/bench/threads.py times each model at each thread count in a process per checkout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="thread counts are the fast executor's")
from bench import threads  # tools/bench/threads.py

EXAMPLE = Path(__file__).resolve().parents[1] / "pyvgf" / "examples" / "tiny_convnet.vgf"


def test_each_model_at_each_count_in_each_checkout(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "tiny.vgf")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "tiny.npz", meta=np.array(json.dumps({"torch_net": "", "exact": False})),
             input_0=rng.random((1, 8, 8, 3), np.float32), input_1=rng.random((1, 8, 8, 4), np.float32))
    out = tmp_path / "threads.json"
    assert threads.main(["--models-dir", str(tmp_path), "--models", "tiny", "--threads", "2", "1",
                         "--runs", "3", "--rounds", "2", "--json", str(out)]) == 0
    found = json.loads(out.read_text())
    (medians,) = found["medians_ms"].values()  # the one checkout: this one
    assert set(medians) == {"tiny 2", "tiny 1"} and all(v > 0 for v in medians.values())
    (samples,) = found["samples_s"].values()
    assert all(len(v) == 2 * 3 for v in samples.values())  # two rounds of three runs
