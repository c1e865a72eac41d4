"""What pyvgf.load costs in memory: one copy of the file by default, no copy of the constants
with mmap=True (they stay in the mapped file until used).

Measured as resident memory (/proc/self/statm) of a fresh process, on the fp32 MobileNetV2 of the
benchmark suite (14 MB of constants): by default loading adds the file's size (its in-memory
copy, of which the constants are views: tests/test_format_memory.py); with mmap=True
loading adds less than 10% of the constant bytes, and running touches the weights, which the
same measure then sees (so it is not blind to mapped pages).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.models import network  # tools/bench/models.py
from fixtures import ROOT, model, vgf_from_mlir  # tools/fixtures.py

_MEASURE = r"""
import json, sys
import numpy as np
import pyvgf
from pyvgf.format import read

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

# A first small model imports and warms up everything a load needs.
pyvgf.load(sys.argv[2]).run([np.ones((1, 4, 4, 8), np.float32)] * 2)
before = resident()
model = pyvgf.load(sys.argv[1], mmap=sys.argv[3] == "mmap")
loaded = resident()
model.run([np.zeros((1, 224, 224, 3), np.float32)])
ran = resident()
constants = sum(c.data.nbytes for c in read(sys.argv[1]).constants)
print(json.dumps({"load": loaded - before, "run": ran - before, "constants": constants}))
"""


@pytest.fixture(scope="module")
def mobilenet_vgf() -> Path:
    return vgf_from_mlir(network("mobilenet_v2_fp32").mlir)


def _grown(mobilenet_vgf: Path, mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(mobilenet_vgf), str(model("add_f32")), mode],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    grown = json.loads(proc.stdout)
    assert grown["constants"] > 10_000_000
    return grown


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_load_copies_the_file_once(mobilenet_vgf: Path) -> None:
    grown = _grown(mobilenet_vgf, "copy")
    size = mobilenet_vgf.stat().st_size
    assert 0.9 * size < grown["load"] < 1.3 * size, grown


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_load_with_mmap_does_not_copy_constants(mobilenet_vgf: Path) -> None:
    grown = _grown(mobilenet_vgf, "mmap")
    assert grown["load"] < 0.10 * grown["constants"], grown
    assert grown["run"] > 0.5 * grown["constants"], grown
