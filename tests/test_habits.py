"""The project's habits, checked with the suite: `ruff check` passes on the whole repository and
`mypy` on the packages pyproject.toml names (pyvgf/format, pyvgf/hal). Both are in the test extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["ruff", "check", "."], ["mypy"]], ids=["ruff", "mypy"])
def test_tool_passes(command: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(command)} failed:\n{proc.stdout}{proc.stderr}"
