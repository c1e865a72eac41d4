"""The project keeps its promises about set-up: CI runs exactly the README's test command."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    command = [line for line in ci if line and not line.startswith(("#", "set ", "cd "))]
    assert len(command) == 1, f".ci/run should run one command, found {command}"
    assert command[0] in (ROOT / "README.md").read_text().splitlines()


def test_fixture_tool_makes_a_real_vgf(vgf_model):
    data = vgf_model("add_f32").read_bytes()
    assert data[:4] == b"VGF1"
    assert (data[8], data[9]) == (0, 5)
