"""pyvgf.testing.pytest_plugin, run in a child pytest on a small test file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

USER_TESTS = '''
from hypothesis import given, settings, strategies as st

SEEN = []

def test_backend(vgf_backend):
    print("BACKEND", vgf_backend)

@given(st.integers())
def test_examples(n):
    SEEN.append(n)

def test_profile():
    print("EXAMPLES", settings().max_examples)
'''


def _pytest(tmp_path: Path, *args: str, ini: str = "") -> str:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["pyvgf.testing.pytest_plugin"]\n')
    (tmp_path / "pytest.ini").write_text(f"[pytest]\n{ini}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "_hypothesis_pytestplugin",
         str(tmp_path), *args],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _lines(out: str, prefix: str) -> list[str]:
    """The printed `PREFIX value` lines (pytest's progress dots may precede them)."""
    return [f"{prefix} {value}" for value in re.findall(rf"{prefix} (\S+)", out)]


def test_defaults_cpu_and_no_profile(tmp_path):
    out = _pytest(tmp_path)
    assert _lines(out, "BACKEND") == ["BACKEND cpu"]
    assert "3 passed" in out


def test_backends_and_profile_from_the_command_line(tmp_path):
    out = _pytest(tmp_path, "--vgf-backend", "cpu", "--vgf-backend", "vulkan", "--hypothesis-profile=long")
    assert _lines(out, "BACKEND") == ["BACKEND cpu", "BACKEND vulkan"]
    assert _lines(out, "EXAMPLES") == ["EXAMPLES 1000"]


def test_backends_and_profile_from_the_ini_file(tmp_path):
    out = _pytest(tmp_path, ini="vgf_backends = vulkan mine\nvgf_hypothesis_profile = fast")
    assert _lines(out, "BACKEND") == ["BACKEND vulkan", "BACKEND mine"]
    assert _lines(out, "EXAMPLES") == ["EXAMPLES 25"]


WITHOUT_HYPOTHESIS = '''
import importlib.abc
import sys

class NotInstalled(importlib.abc.MetaPathFinder):
    """hypothesis (and its pytest plugin) as if never installed."""

    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in ("hypothesis", "_hypothesis_pytestplugin", "_hypothesis_globals"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NotInstalled())
import pytest

sys.exit(pytest.main(sys.argv[1:]))
'''

UNRELATED_TESTS = '''
import sys

def test_unrelated():
    assert 1 + 1 == 2

def test_nothing_test_only_was_imported():
    assert "hypothesis" not in sys.modules
    assert "pyvgf.testing.pytest_plugin" in sys.modules
'''


def test_plugin_loads_where_hypothesis_is_not_installed(tmp_path):
    """A user's pytest run in an environment with pyvgf and pytest but no hypothesis: the
    pytest11 entry point (or -p) loads the plugin, and an unrelated test file passes."""
    (tmp_path / "test_unrelated.py").write_text(UNRELATED_TESTS)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_HYPOTHESIS, "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
         "-p", "pyvgf.testing.pytest_plugin", "--vgf-backend", "cpu", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_a_profile_without_hypothesis_is_a_usage_error(tmp_path):
    (tmp_path / "test_unrelated.py").write_text(UNRELATED_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nvgf_hypothesis_profile = fast\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_HYPOTHESIS, "-q", "-p", "pyvgf.testing.pytest_plugin", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "need hypothesis: pip install hypothesis" in proc.stderr
