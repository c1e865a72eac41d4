"""`import pyvgf` stays light: heavy and optional packages load when first needed, not at import.

Guarded through the import graph (sys.modules in a fresh interpreter), never a wall time.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real" / "mobilenet_v2_int8.vgf"

HEAVY = ["ml_dtypes", "numba", "llvmlite", "scipy", "threadpoolctl", "vulkan", "cffi", "hypothesis"]
"""Packages that `import pyvgf` must not import (compilers, optional extras, test-only ones)."""


@functools.cache
def modules_after(code: str) -> frozenset[str]:
    """The top-level package names in sys.modules after running `code` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return frozenset(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("name", HEAVY)
def test_import_pyvgf_does_not_import(name):
    assert name not in modules_after("import pyvgf")


@pytest.mark.parametrize("name", HEAVY)
def test_reading_and_describing_a_model_does_not_import(name):
    code = f"import pyvgf\nfrom pyvgf.format.dump import summary\nsummary(pyvgf.format.read({str(REAL)!r}))"
    assert name not in modules_after(code)


def test_the_public_names_load_on_first_use():
    code = (
        "import pyvgf\nassert {'load', 'Model', 'TensorInfo', 'register_shader'} <= set(dir(pyvgf))\n"
        "from pyvgf import *\nfrom pyvgf.runtime import Model\nassert pyvgf.Model is Model\n"
        "assert callable(load) and pyvgf.format.read and pyvgf.hal.request_adapter\n"
    )
    assert "pyvgf" in modules_after(code)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        import pyvgf

        pyvgf.nonexistent  # noqa: B018
