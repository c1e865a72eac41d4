"""The numba-compiled loops work where numba can cache nothing (a read-only install)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.fast

_RUN = r"""
import numpy as np
from pyvgf.fast.compiled import depthwise_rows
x = np.ones((1, 4, 4, 3), np.float32)
acc = np.empty((1, 4, 4, 3), np.float32)
depthwise_rows(x, np.float32(0), np.ones((3, 3, 3), np.float32), 1, 1, 1, 1, 1, 1, 0, acc,
               False, np.empty(0, np.float32), np.float32(0), np.float32(0), False)
print(acc[0, :, :, 0].tolist())
"""


def test_compiled_loops_run_without_a_writable_cache(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "pyvgf", tmp_path / "pyvgf",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "pyvgf" / "fast" / "__pycache__").write_text("")  # a file: no cache folder
    unwritable = "/dev/null/cache"  # below a file: no folder can be made there, even by root
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NUMBA_CACHE_DIR": unwritable,
           "XDG_CACHE_HOME": unwritable, "HOME": unwritable}
    proc = subprocess.run([sys.executable, "-c", _RUN], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    corners, edges, inner = 4.0, 6.0, 9.0  # the taps of a 3x3 window inside a 4x4 input
    assert ast.literal_eval(proc.stdout) == [[corners, edges, edges, corners], [edges, inner, inner, edges],
                                 [edges, inner, inner, edges], [corners, edges, edges, corners]]


_STATUS = r"""
from pyvgf.fast.compiled import cache_status
import numpy as np
from pyvgf.fast.compiled import depthwise_rows
print(cache_status())
x = np.ones((1, 4, 4, 3), np.float32)
acc = np.empty((1, 4, 4, 3), np.float32)
depthwise_rows(x, np.float32(0), np.ones((3, 3, 3), np.float32), 1, 1, 1, 1, 1, 1, 0, acc,
               False, np.empty(0, np.float32), np.float32(0), np.float32(0), False)
print(cache_status())
"""


def test_compiled_loops_are_cached_under_the_user_cache_dir_when_the_package_is_read_only(
        tmp_path: Path) -> None:
    """A read-only install (no __pycache__ can be made beside the package's files) caches the
    compiled loops under $XDG_CACHE_HOME, and a second process finds them there."""
    shutil.copytree(ROOT / "pyvgf", tmp_path / "pyvgf",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "pyvgf" / "fast" / "__pycache__").write_text("")  # a file: no cache folder
    xdg = tmp_path / "xdg-cache"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "XDG_CACHE_HOME": str(xdg)}
    env.pop("NUMBA_CACHE_DIR", None)

    def statuses() -> list[tuple]:
        proc = subprocess.run([sys.executable, "-c", _STATUS], capture_output=True, text=True,
                              check=False, cwd=tmp_path, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return [ast.literal_eval(line) for line in proc.stdout.splitlines()]

    (path, cached, loops), (_, after, _) = statuses()
    assert Path(path).is_relative_to(xdg) and cached == 0 < after < loops
    (again, warm, _), _ = statuses()
    assert again == path and warm == after  # the second process loads what the first compiled
    assert any(Path(path).glob("compiled.depthwise_rows*.nbi"))
