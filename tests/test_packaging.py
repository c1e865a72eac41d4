"""pyvgf as users install it: version, typing marker, metadata, what an installed copy offers,
and the README's Python examples run as written."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import pyvgf

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXAMPLE = ROOT / "pyvgf" / "examples" / "tiny_convnet.vgf"


def pyvgf_cli(*args: str, path: Path = ROOT, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run([sys.executable, "-m", "pyvgf", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def test_version_is_written_once_and_the_cli_prints_it():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pyvgf.__version__"}
    proc = pyvgf_cli("--version")
    assert (proc.returncode, proc.stdout) == (0, f"pyvgf {pyvgf.__version__}\n")


def test_metadata():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    tested = f"Programming Language :: Python :: {sys.version_info.major}.{sys.version_info.minor}"
    assert tested in project["classifiers"], "the Python running the tests is not among the classifiers"
    assert "Typing :: Typed" in project["classifiers"]
    assert project["urls"] and all(url.startswith("https://") for url in project["urls"].values())
    assert (ROOT / "pyvgf" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["pyvgf"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """What pip installs: the package folder alone (packages `pyvgf*` and their package data),
    in a site folder with no source tree around it."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(ROOT / "pyvgf", site / "pyvgf", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def test_an_installed_copy_runs_its_example_and_types(installed, tmp_path):
    proc = pyvgf_cli("run", "--example", path=installed, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "out " in proc.stdout
    assert (installed / "pyvgf" / "py.typed").exists()


def test_bench_from_an_installed_copy_says_where_it_runs(installed, tmp_path):
    proc = pyvgf_cli("bench", path=installed, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("pyvgf bench: the benchmark suite is part of a source checkout")
    assert proc.stderr.count("\n") == 1


def readme_python_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.parametrize("index", range(len(readme_python_examples())))
def test_readme_python_example_runs_as_written(index, tmp_path):
    """Each ```python block of the README, run as its own script beside a model.vgf (the
    bundled example, which has two inputs: names must come from model.inputs). A block for
    another environment (ExecuTorch's export) is skipped where its packages are missing."""
    code = readme_python_examples()[index]
    nodes = list(ast.walk(ast.parse(code)))
    imported = {a.name for n in nodes if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in nodes if isinstance(n, ast.ImportFrom) and n.module}
    packages = sorted({m.partition(".")[0] for m in imported})
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"README example {index} needs {', '.join(missing)}")
    shutil.copy(EXAMPLE, tmp_path / "model.vgf")
    (tmp_path / "example.py").write_text(code)
    proc = subprocess.run([sys.executable, "example.py"], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
