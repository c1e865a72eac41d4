"""The worked example of docs/testing.md runs as written."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "testing.md").read_text(), re.DOTALL)


@pytest.mark.vulkan
def test_the_worked_example_passes(tmp_path):
    example, conftest = _blocks()[:2]
    (tmp_path / "test_my_backend.py").write_text(example)
    # the example as written, with a 3-example profile to keep the suite fast
    (tmp_path / "conftest.py").write_text(
        conftest + "from hypothesis import settings\n"
        "settings.register_profile('check', max_examples=3, deadline=None, derandomize=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_hypothesis_pytestplugin",
         "--hypothesis-profile=check", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout


def test_the_build_example_writes_a_vgf(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "build_example.py"
    script.write_text(_blocks()[-1])
    runpy.run_path(str(script))
    assert (tmp_path / "conv.vgf").read_bytes()[:4] == b"VGF1"
