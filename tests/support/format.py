"""Helpers shared by the tests/test_format_*.py modules."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

import fixtures  # tools/fixtures.py
from pyvgf.format import VGF
from pyvgf.format.dump import to_json

FORMAT_MODELS = [
    "format_one_op",
    "format_many_ops",
    "format_const_dtypes",
    "format_multi_io",
    "format_segments",
    "format_shaders",
    "format_segment_consts",
    "format_compute_sets",
    "format_compute_aliasing",
]


def vgf_lib_tool(name: str) -> str:
    """Path of a binary of Arm's VGF library wheel (`vgf_dump`, `vgf_updater`), called
    directly rather than through the wheel's Python launcher (saves a Python start per call)."""
    try:
        import vgf_lib
    except ImportError:
        return fixtures.tool(name)
    binary = Path(vgf_lib.__file__).parent / "binaries" / "bin" / name
    return str(binary) if binary.exists() else fixtures.tool(name)


def vgf_dump_json(path) -> dict:
    """What Arm's `vgf_dump -i PATH` prints, parsed."""
    proc = subprocess.run([vgf_lib_tool("vgf_dump"), "-i", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def payload(vgf: VGF) -> tuple:
    """Everything to_json leaves out: module code and constant bytes."""
    code = tuple(None if m.code is None else (m.code if isinstance(m.code, str) else np.asarray(m.code).tobytes())
                 for m in vgf.modules)
    return code, tuple(np.asarray(c.data).tobytes() for c in vgf.constants)


def same_model(a: VGF, b: VGF) -> bool:
    return (
        to_json(a) == to_json(b)
        and payload(a) == payload(b)
        and a.header == b.header
        and a.legacy_constants == b.legacy_constants
        and a.sequence == b.sequence
        and a.resources == b.resources
    )
