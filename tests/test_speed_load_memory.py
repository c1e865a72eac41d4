"""pyvgf.load never copies a model's constants: they stay in the memory-mapped file until used.

Measured as resident memory (/proc/self/statm) of a fresh process, on the fp32 MobileNetV2 of the
benchmark suite (14 MB of constants): loading adds less than 10% of the constant bytes; running
it touches the weights, and the same measure then sees them (so it is not blind to mapped pages).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "bench"))

from fixtures import model, vgf_from_mlir  # noqa: E402
from models import network  # noqa: E402

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
model = pyvgf.load(sys.argv[1])
loaded = resident()
model.run([np.zeros((1, 224, 224, 3), np.float32)])
ran = resident()
constants = sum(c.data.nbytes for c in read(sys.argv[1]).constants)
print(json.dumps({"load": loaded - before, "run": ran - before, "constants": constants}))
"""


@pytest.fixture(scope="module")
def mobilenet_vgf() -> Path:
    return vgf_from_mlir(network("mobilenet_v2_fp32").mlir)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_load_does_not_copy_constants(mobilenet_vgf: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(mobilenet_vgf), str(model("add_f32"))],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    grown = json.loads(proc.stdout)
    assert grown["constants"] > 10_000_000
    assert grown["load"] < 0.10 * grown["constants"], grown
    assert grown["run"] > 0.5 * grown["constants"], grown
