"""The project keeps its promises about set-up: the repository holds every file its tests and
tools need, and CI runs exactly the README's test command in a copy with nothing beside it,
then the suite once more on the core install (no fast extra)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_test_command() -> str:
    """The one-line command of the README's sh block that runs pytest."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    commands = [line for block in blocks for line in block.splitlines() if "pytest" in line]
    assert len(commands) == 1, f"the README should have one test command, found {commands}"
    return commands[0]


def test_ci_runs_the_readme_test_command():
    assert readme_test_command() in (ROOT / ".ci" / "run").read_text().splitlines()


def test_nothing_in_tests_or_tools_reads_the_folder_beside_the_checkout():
    """No path into the folder beside the checkout: as a relative or absolute path, a pathlib
    join or a string path starting with it (the name is spelled apart so this file passes)."""
    shared = "sha" + "red"
    outside = re.compile(
        rf"\.\./{shared}\b|/work/{shared}\b|/\s*[\"']{shared}[\"']|[\"']{shared}/"
    )
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("tests", "tools")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file() and path.suffix in {".py", ".md", ".txt", ".json", ".toml", ".mlir", ".sh", ""}
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if outside.search(line)
    ]
    assert not found, "files that read outside the repository:\n" + "\n".join(found)


def test_real_fixtures_are_in_the_repository_with_licence_and_provenance():
    real = ROOT / "tests" / "fixtures" / "real"
    assert sorted(p.name for p in real.glob("*.vgf")) == ["mobilenet_v2_int8.vgf", "vww4_int8.vgf"]
    assert "Apache License" in (real / "LICENSE").read_text()
    provenance = (real / "README.md").read_text()
    for vgf in real.glob("*.vgf"):
        assert f"| {vgf.name} | {vgf.stat().st_size} |" in provenance


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout: .ci/run copies its tracked files")
def test_ci_copies_the_checkout_where_nothing_is_beside_it(tmp_path):
    """.ci/run with stand-ins for apt-get, pip and python that record where they ran."""
    bin_dir, tmp = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    tmp.mkdir()
    record = tmp_path / "record.txt"
    for name in ("apt-get", "pip"):
        (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
    core_record = tmp_path / "core.txt"
    core_stub = f'#!/bin/sh\necho "$(basename "$0") $*" >> "{core_record}"\n'
    (bin_dir / "python").write_text(
        '#!/bin/sh\n'
        'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; for t in pip python; do\n'
        f"  printf '%s' '{core_stub}' > \"$3/bin/$t\"; chmod +x \"$3/bin/$t\"; done; exit 0; fi\n"
        'if [ "$1" = "-c" ]; then exit 0; fi\n'
        f'{{ echo "args $*"; echo "cwd $PWD"; ls -A ..; ls .git 2>&1 >/dev/null | head -1;'
        f' ls tests/fixtures/real; }} > "{record}"\n'
    )
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TMPDIR": str(tmp)}
    proc = subprocess.run([str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = record.read_text().splitlines()
    assert lines[0] == "args -m pytest"
    copy = Path(lines[1].removeprefix("cwd "))
    assert copy.parent.parent == tmp and lines[2] == copy.name, "something lies beside the copy"
    assert "No such file" in lines[3], "the copy should have no .git"
    assert {"mobilenet_v2_int8.vgf", "vww4_int8.vgf", "LICENSE", "README.md"} <= set(lines[4:])
    assert not copy.exists(), ".ci/run should remove its copy"
    core = core_record.read_text().splitlines()  # then the suite on the core install
    assert core[0].startswith("pip install -e .")
    assert core[-1] == "python -m pytest"


def test_fixture_tool_makes_a_real_vgf(vgf_model):
    data = vgf_model("add_f32").read_bytes()
    assert data[:4] == b"VGF1"
    assert (data[8], data[9]) == (0, 5)
