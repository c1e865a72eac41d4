"""The vulkan backend without its extra: one clear HalError naming the install command, from
the API and from the command line; and adapter options checked on every backend."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import pyvgf
from pyvgf import HalError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(resources.files("pyvgf") / "examples" / "tiny_convnet.vgf")
INSTALL = "pip install 'pyvgf[vulkan]'"


def without(packages: tuple[str, ...], code: str) -> subprocess.CompletedProcess:
    """Run `code` where `packages` cannot be imported (as if never installed)."""
    hide = "import sys\n" + "".join(f"sys.modules[{p!r}] = None\n" for p in packages)
    return subprocess.run([sys.executable, "-c", hide + code], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("missing", [("vulkan",), ("cffi",), ("vulkan", "cffi")], ids="+".join)
def test_load_on_vulkan_without_the_extra_names_the_install_command(missing):
    proc = without(missing, f"""
import pyvgf
try:
    pyvgf.load({EXAMPLE!r}, backend="vulkan")
except pyvgf.HalError as exc:
    print("HalError:", exc)
""")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("HalError: the vulkan backend needs the `")
    assert INSTALL in proc.stdout


@pytest.mark.parametrize("argv", [["doctor"], ["run", "--example", "--backend", "vulkan"]], ids=" ".join)
def test_cli_without_the_extra_says_so_in_one_line(argv):
    proc = without(("vulkan", "cffi"), f"from pyvgf.cli import main\nraise SystemExit(main({argv!r}))")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and INSTALL in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"pyvgf {argv[0]}: the vulkan backend needs the `")


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_unknown_adapter_option_is_a_hal_error(backend):
    with pytest.raises(HalError, match=f"backend '{backend}' does not take these options:.*no_such_option"):
        pyvgf.load(EXAMPLE, backend=backend, adapter_options={"no_such_option": 1})
